#include "strict_json.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "roofline/error.h"

namespace roofline::detail {
namespace {

[[noreturn]] void too_deep(const std::string& origin, std::string_view where) {
  throw ParseError(origin + ": JSON nests deeper than " + std::to_string(kMaxJsonDepth) +
                   " levels" + std::string(where));
}

}  // namespace

void check_json_depth(std::string_view text, const std::string& origin) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) too_deep(origin, " (at byte " + std::to_string(i) + ")");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

void check_json_depth(const nlohmann::json& value, const std::string& origin) {
  std::vector<std::pair<const nlohmann::json*, int>> todo{{&value, 1}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    if (depth > kMaxJsonDepth) too_deep(origin, "");
    for (const auto& child : *v) {
      if (child.is_structured()) todo.emplace_back(&child, depth + 1);
    }
  }
}

std::string read_text_file(const std::string& path, std::size_t max_bytes) {
  if (path.empty()) throw ParseError("cannot read a file with an empty name");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ParseError(path + ": cannot read: " +
                     (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file"));
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw ParseError(path + ": cannot read: " + ec.message());
  if (size > max_bytes) {
    throw ParseError(path + ": " + std::to_string(size) + " bytes is more than the " +
                     std::to_string(max_bytes) + "-byte limit for this kind of file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError(path + ": cannot open for reading");
  // Read at most the limit even if the file grew since it was measured.
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

nlohmann::json parse_json_text(std::string_view text, const std::string& origin,
                               std::size_t max_bytes) {
  if (text.size() > max_bytes) {
    throw ParseError(origin + ": document is " + std::to_string(text.size()) +
                     " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  check_json_depth(text, origin);
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    // nlohmann messages start with "[json.exception.parse_error.101] ".
    std::string what = e.what();
    const auto close = what.find("] ");
    if (close != std::string::npos) what = what.substr(close + 2);
    throw ParseError(origin + ": invalid JSON: " + what);
  }
}

StrictObject::StrictObject(const nlohmann::json& value, std::string origin, std::string path)
    : value_(value), origin_(std::move(origin)), path_(std::move(path)) {
  if (!value_.is_object()) {
    throw ParseError(origin_ + ": " + (path_.empty() ? std::string("document") : path_) +
                     ": expected a JSON object");
  }
}

std::string StrictObject::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void StrictObject::fail(std::string_view key, std::string_view message) const {
  throw ParseError(origin_ + ": " + path_of(key) + ": " + std::string(message));
}

bool StrictObject::has(std::string_view key) const { return value_.contains(key); }

const nlohmann::json& StrictObject::required(std::string_view key) {
  auto it = value_.find(key);
  if (it == value_.end()) fail(key, "required key is missing");
  read_.emplace(key);
  return *it;
}

const nlohmann::json* StrictObject::optional(std::string_view key) {
  auto it = value_.find(key);
  if (it == value_.end()) return nullptr;
  read_.emplace(key);
  return &*it;
}

std::string StrictObject::string(std::string_view key) {
  const auto& v = required(key);
  if (!v.is_string()) fail(key, "expected a string");
  return v.get<std::string>();
}

std::string StrictObject::optional_string(std::string_view key, std::string fallback) {
  const auto* v = optional(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) fail(key, "expected a string");
  return v->get<std::string>();
}

double StrictObject::non_negative(std::string_view key) {
  const auto& v = required(key);
  if (!v.is_number()) fail(key, "expected a number");
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail(key, "must be finite");
  if (x < 0) fail(key, "must not be negative");
  return x;
}

StrictObject StrictObject::object(std::string_view key) {
  return StrictObject(required(key), origin_, path_of(key));
}

void StrictObject::finish() const {
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (read_.find(it.key()) == read_.end()) fail(it.key(), "unknown key");
  }
}

std::map<std::string, std::string> read_sources(StrictObject& doc) {
  std::map<std::string, std::string> sources;
  StrictObject src = doc.object("sources");
  for (auto it = src.json().begin(); it != src.json().end(); ++it) {
    std::string citation = src.string(it.key());
    if (citation.empty()) src.fail(it.key(), "a source must be a non-empty citation string");
    sources[it.key()] = std::move(citation);
  }
  src.finish();
  return sources;
}

}  // namespace roofline::detail
