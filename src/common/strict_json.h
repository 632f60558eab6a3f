// Strict reading of JSON documents against a schema expressed in code: every
// key must be read (unknown keys are errors), required keys must exist, and
// numbers must be finite. Errors name the origin and the key path.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

namespace roofline::detail {

// `s` with A-Z as a-z: ids and aliases compare case-insensitively.
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Deepest nesting of arrays and objects any JSON the project reads may have. Real
// documents (config.json, device and strategy files, requests) stay under 10;
// deeper input would make the recursive walks (copy, dump, comparison) of
// nlohmann::json overflow the stack, so it is refused before a DOM is built.
inline constexpr int kMaxJsonDepth = 64;

// Throws ParseError "<origin>: JSON nests deeper than 64 levels (at byte N)" when
// the text opens more than kMaxJsonDepth arrays/objects at once. A linear scan
// that needs no valid JSON (strings and escapes are skipped).
void check_json_depth(std::string_view text, const std::string& origin);
// The same over a value already built (iteratively, without recursion).
void check_json_depth(const nlohmann::json& value, const std::string& origin);

// The contents of a regular file of at most `max_bytes`. Throws ParseError
// "<path>: cannot read: ..." for anything else (a directory, a device such as
// /dev/zero, a FIFO, a missing file) before reading a byte.
std::string read_text_file(const std::string& path, std::size_t max_bytes);

// Parses text into JSON, rejecting documents over `max_bytes` or nested deeper
// than kMaxJsonDepth. Throws ParseError "<origin>: ...".
nlohmann::json parse_json_text(std::string_view text, const std::string& origin,
                               std::size_t max_bytes);

// A view of one JSON object that remembers which keys were read.
class StrictObject {
 public:
  // Throws ParseError if `value` is not an object.
  StrictObject(const nlohmann::json& value, std::string origin, std::string path);

  [[nodiscard]] bool has(std::string_view key) const;
  // The raw value; throws if missing.
  const nlohmann::json& required(std::string_view key);
  // nullptr if missing.
  const nlohmann::json* optional(std::string_view key);

  std::string string(std::string_view key);
  std::string optional_string(std::string_view key, std::string fallback);
  // A finite number >= 0. Throws on negative, non-finite or wrong type.
  double non_negative(std::string_view key);
  StrictObject object(std::string_view key);

  // Throws naming the first key that was never read.
  void finish() const;

  // Throws ParseError "<origin>: <path>.<key>: <message>".
  [[noreturn]] void fail(std::string_view key, std::string_view message) const;

  [[nodiscard]] const std::string& origin() const noexcept { return origin_; }
  [[nodiscard]] std::string path_of(std::string_view key) const;
  [[nodiscard]] const nlohmann::json& json() const noexcept { return value_; }

 private:
  const nlohmann::json& value_;
  std::string origin_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
};

// Reads doc["sources"]: an object of key -> citation string, every value a
// non-empty string. Data files cite their figures by these keys.
std::map<std::string, std::string> read_sources(StrictObject& doc);

}  // namespace roofline::detail
