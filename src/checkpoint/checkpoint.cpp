#include "roofline/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "../common/strict_json.h"
#include "roofline/error.h"

namespace roofline {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------- safetensors

// Bytes per element of the safetensors dtypes (safetensors format spec).
std::optional<double> safetensors_dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, double> kSizes = {
      {"F64", 8},  {"F32", 4},     {"F16", 2},     {"BF16", 2},    {"I64", 8}, {"I32", 4},
      {"I16", 2},  {"I8", 1},      {"U64", 8},     {"U32", 4},     {"U16", 2}, {"U8", 1},
      {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}, {"F4", 0.5}};
  auto it = kSizes.find(dtype);
  if (it == kSizes.end()) return std::nullopt;
  return it->second;
}

std::vector<TensorInfo> parse_safetensors_header(std::string_view header, std::uint64_t data_size,
                                                 const std::string& origin) {
  const json doc =
      detail::parse_json_text(header, origin + " (safetensors header)", kMaxSafetensorsHeaderBytes);
  if (!doc.is_object()) throw ParseError(origin + ": safetensors header is not a JSON object");
  std::vector<TensorInfo> tensors;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string where = origin + ": tensor '" + clip_utf8(it.key(), 80) + "'";
    const json& t = it.value();
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") ||
        !t.contains("data_offsets")) {
      throw ParseError(where + ": needs dtype, shape and data_offsets");
    }
    TensorInfo info;
    info.name = it.key();
    if (!t["dtype"].is_string()) throw ParseError(where + ": dtype must be a string");
    info.dtype = t["dtype"].get<std::string>();
    const auto& shape = t["shape"];
    if (!shape.is_array() || shape.size() > 8)
      throw ParseError(where + ": shape must be an array of at most 8 sizes");
    double elements = 1;
    for (const auto& d : shape) {
      if (!d.is_number_unsigned())
        throw ParseError(where + ": shape entries must be non-negative integers");
      info.shape.push_back(
          static_cast<std::int64_t>(std::min<std::uint64_t>(d.get<std::uint64_t>(), INT64_MAX)));
      elements *= static_cast<double>(d.get<std::uint64_t>());
    }
    const auto& off = t["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned()) {
      throw ParseError(where + ": data_offsets must be [begin, end]");
    }
    const std::uint64_t begin = off[0].get<std::uint64_t>();
    const std::uint64_t end = off[1].get<std::uint64_t>();
    if (begin > end || end > data_size) {
      throw ParseError(where + ": data_offsets [" + std::to_string(begin) + ", " +
                       std::to_string(end) + "] fall outside the " + std::to_string(data_size) +
                       "-byte data section");
    }
    info.bytes = static_cast<double>(end - begin);
    info.data_begin = begin;
    if (auto size = safetensors_dtype_bytes(info.dtype)) {
      if (std::fabs(elements * *size - info.bytes) > 0.5) {
        throw ParseError(where + ": " + std::to_string(end - begin) + " bytes do not match dtype " +
                         info.dtype + " and its shape");
      }
    } else {
      throw ParseError(where + ": dtype '" + clip_utf8(info.dtype, 16) +
                       "' is not a safetensors dtype");
    }
    tensors.push_back(std::move(info));
  }
  // No two tensors may share bytes (safetensors forbids it).
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : tensors) {
    if (t.bytes > 0) by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->data_begin < b->data_begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& a = *by_offset[i - 1];
    const TensorInfo& b = *by_offset[i];
    const auto a_end = a.data_begin + static_cast<std::uint64_t>(a.bytes);
    if (a_end > b.data_begin) {
      throw ParseError(origin + ": tensors '" + clip_utf8(a.name, 80) + "' and '" +
                       clip_utf8(b.name, 80) + "' overlap (bytes " + std::to_string(b.data_begin) +
                       " to " + std::to_string(a_end) +
                       " belong to both); safetensors tensors must not share bytes");
    }
  }
  return tensors;
}

std::uint64_t read_le64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint64_t file_size_of(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ParseError(path + ": cannot read: not a regular file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw ParseError(path + ": cannot read: " + ec.message());
  return size;
}

// ---------------------------------------------------------------- GGUF

// ggml tensor types: block size and bytes per block (ggml.c type_traits).
// The types the format table knows map to it; the rest are ggml's own.
struct GgmlType {
  int id;
  const char* name;
  int block;
  int block_bytes;
  std::optional<Format> format;
};
constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", 1, 4, Format::kFp32},         {1, "F16", 1, 2, Format::kFp16},
    {2, "q4_0", 32, 18, Format::kQ4_0},      {3, "q4_1", 32, 20, std::nullopt},
    {6, "q5_0", 32, 22, std::nullopt},       {7, "q5_1", 32, 24, std::nullopt},
    {8, "q8_0", 32, 34, Format::kQ8_0},      {9, "q8_1", 32, 36, std::nullopt},
    {10, "q2_K", 256, 84, std::nullopt},     {11, "q3_K", 256, 110, std::nullopt},
    {12, "q4_K", 256, 144, Format::kQ4_K_M}, {13, "q5_K", 256, 176, Format::kQ5_K_M},
    {14, "q6_K", 256, 210, Format::kQ6_K},   {15, "q8_K", 256, 292, std::nullopt},
    {16, "iq2_xxs", 256, 66, std::nullopt},  {17, "iq2_xs", 256, 74, std::nullopt},
    {18, "iq3_xxs", 256, 98, std::nullopt},  {19, "iq1_s", 256, 50, std::nullopt},
    {20, "iq4_nl", 32, 18, std::nullopt},    {21, "iq3_s", 256, 110, std::nullopt},
    {22, "iq2_s", 256, 82, std::nullopt},    {23, "iq4_xs", 256, 136, std::nullopt},
    {24, "I8", 1, 1, std::nullopt},          {25, "I16", 1, 2, std::nullopt},
    {26, "I32", 1, 4, std::nullopt},         {27, "I64", 1, 8, std::nullopt},
    {28, "F64", 1, 8, std::nullopt},         {29, "iq1_m", 256, 56, std::nullopt},
    {30, "BF16", 1, 2, Format::kBf16},       {34, "tq1_0", 256, 54, std::nullopt},
    {35, "tq2_0", 256, 66, std::nullopt},    {39, "mxfp4", 32, 17, Format::kMxfp4},
};

const GgmlType* ggml_type(std::uint32_t id) {
  for (const auto& t : kGgmlTypes) {
    if (static_cast<std::uint32_t>(t.id) == id) return &t;
  }
  return nullptr;
}

// Bytes of a tensor in a ggml type: whole blocks. Types the format table
// knows go through bytes_for(); the checks below pin the two tables together.
double ggml_bytes(const GgmlType& t, double elements) {
  if (t.format) return bytes_for(*t.format, elements);
  return std::ceil(elements / t.block) * t.block_bytes;
}

// Bounds-checked little-endian reader over a byte range.
class Reader {
 public:
  // `prefix_only`: the bytes are the first part of a larger file.
  Reader(std::string_view bytes, std::string origin, bool prefix_only)
      : bytes_(bytes), origin_(std::move(origin)), prefix_only_(prefix_only) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ParseError(origin_ + ": GGUF " + what + " (at byte " + std::to_string(pos_) + ")");
  }
  std::uint64_t remaining() const { return bytes_.size() - pos_; }
  void need(std::uint64_t n) const {
    if (n > remaining()) {
      fail(prefix_only_
               ? "header is larger than the " + std::to_string(kMaxGgufHeaderBytes) + "-byte limit"
               : std::string("is truncated"));
    }
  }
  template <typename T>
  T scalar() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view string() {
    const auto n = scalar<std::uint64_t>();
    if (n > kMaxGgufStringBytes) fail("string of " + std::to_string(n) + " bytes is too long");
    need(n);
    std::string_view s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  void skip(std::uint64_t n) {
    need(n);
    pos_ += n;
  }
  std::uint64_t pos() const { return pos_; }

 private:
  std::string_view bytes_;
  std::string origin_;
  bool prefix_only_;
  std::uint64_t pos_ = 0;
};

// A GGUF metadata value: numbers as double, strings, or an array length
// (and its items, for arrays of at most kMaxGgufArrayItems numbers: per-layer
// head counts and layer kinds).
constexpr std::uint64_t kMaxGgufArrayItems = 4096;
struct GgufValue {
  enum Kind { kNumber, kString, kArray, kBool } kind = kNumber;
  double number = 0;
  std::string text;
  std::uint64_t array_length = 0;
  std::vector<double> items;
};

std::uint64_t gguf_scalar_size(std::uint32_t type) {
  switch (type) {
    case 0:
    case 1:
    case 7:
      return 1;
    case 2:
    case 3:
      return 2;
    case 4:
    case 5:
    case 6:
      return 4;
    case 10:
    case 11:
    case 12:
      return 8;
    default:
      return 0;
  }
}

double read_gguf_number(Reader& r, std::uint32_t type) {
  switch (type) {
    case 0:
      return r.scalar<std::uint8_t>();
    case 1:
      return r.scalar<std::int8_t>();
    case 2:
      return r.scalar<std::uint16_t>();
    case 3:
      return r.scalar<std::int16_t>();
    case 4:
      return r.scalar<std::uint32_t>();
    case 5:
      return r.scalar<std::int32_t>();
    case 6:
      return r.scalar<float>();
    case 7:
      return r.scalar<std::uint8_t>() != 0;
    case 10:
      return static_cast<double>(r.scalar<std::uint64_t>());
    case 11:
      return static_cast<double>(r.scalar<std::int64_t>());
    case 12:
      return r.scalar<double>();
    default:
      r.fail("metadata type " + std::to_string(type) + " is unknown");
  }
}

GgufValue read_gguf_value(Reader& r, std::uint32_t type) {
  GgufValue v;
  if (type == 8) {
    v.kind = GgufValue::kString;
    v.text = clip_utf8(r.string(), 256);
    return v;
  }
  if (type == 9) {
    v.kind = GgufValue::kArray;
    const auto item_type = r.scalar<std::uint32_t>();
    const auto count = r.scalar<std::uint64_t>();
    v.array_length = count;
    if (item_type == 8) {
      // Each string needs at least its 8-byte length.
      if (count > r.remaining() / 8)
        r.fail("array of " + std::to_string(count) + " strings is longer than the file");
      for (std::uint64_t i = 0; i < count; ++i) (void)r.string();
    } else if (const auto size = gguf_scalar_size(item_type); size > 0) {
      if (count > r.remaining() / size)
        r.fail("array of " + std::to_string(count) + " items is longer than the file");
      if (count <= kMaxGgufArrayItems) {
        v.items.reserve(count);
        for (std::uint64_t i = 0; i < count; ++i) v.items.push_back(read_gguf_number(r, item_type));
      } else {
        r.skip(count * size);
      }
    } else {
      r.fail("array item type " + std::to_string(item_type) + " is not supported");
    }
    return v;
  }
  v.number = read_gguf_number(r, type);
  v.kind = type == 7 ? GgufValue::kBool : GgufValue::kNumber;
  return v;
}

}  // namespace

// ---------------------------------------------------------------- public

std::vector<TensorInfo> parse_safetensors(std::string_view bytes, const std::string& origin) {
  if (bytes.size() < 8)
    throw ParseError(origin + ": safetensors file is truncated (no header length)");
  const std::uint64_t n = read_le64(reinterpret_cast<const unsigned char*>(bytes.data()));
  if (n > kMaxSafetensorsHeaderBytes) {
    throw ParseError(origin + ": safetensors header length " + std::to_string(n) +
                     " is more than the " + std::to_string(kMaxSafetensorsHeaderBytes) +
                     "-byte limit");
  }
  if (n > bytes.size() - 8) {
    throw ParseError(origin + ": safetensors header length " + std::to_string(n) +
                     " runs past the end of the " + std::to_string(bytes.size()) + "-byte file");
  }
  return parse_safetensors_header(bytes.substr(8, n), bytes.size() - 8 - n, origin);
}

std::vector<TensorInfo> read_safetensors_header(const std::string& path) {
  const std::uint64_t size = file_size_of(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError(path + ": cannot open for reading");
  unsigned char len_bytes[8];
  if (size < 8 || !in.read(reinterpret_cast<char*>(len_bytes), 8)) {
    throw ParseError(path + ": safetensors file is truncated (no header length)");
  }
  const std::uint64_t n = read_le64(len_bytes);
  if (n > kMaxSafetensorsHeaderBytes) {
    throw ParseError(path + ": safetensors header length " + std::to_string(n) +
                     " is more than the " + std::to_string(kMaxSafetensorsHeaderBytes) +
                     "-byte limit");
  }
  if (n > size - 8) {
    throw ParseError(path + ": safetensors header length " + std::to_string(n) +
                     " runs past the end of the " + std::to_string(size) + "-byte file");
  }
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n)))
    throw ParseError(path + ": truncated header");
  return parse_safetensors_header(header, size - 8 - n, path);
}

std::vector<TensorInfo> read_safetensors_index(const std::string& path) {
  std::error_code ec;
  const auto size = file_size_of(path);
  if (size > (64 << 20)) throw ParseError(path + ": index file is too large");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  const json doc = detail::parse_json_text(buf.str(), path, 64 << 20);
  if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object()) {
    throw ParseError(path + ": expected an object with a \"weight_map\"");
  }
  std::vector<std::string> shards;
  for (const auto& [tensor, file] : doc["weight_map"].items()) {
    if (!file.is_string()) throw ParseError(path + ": weight_map values must be file names");
    const std::string f = file.get<std::string>();
    if (f.find('/') != std::string::npos || f.find("..") != std::string::npos) {
      throw ParseError(path + ": shard name '" + clip_utf8(f, 80) + "' must be a plain file name");
    }
    if (std::find(shards.begin(), shards.end(), f) == shards.end()) shards.push_back(f);
  }
  const auto dir = std::filesystem::path(path).parent_path();
  std::vector<TensorInfo> all;
  for (const auto& shard : shards) {
    auto part = read_safetensors_header((dir / shard).string());
    all.insert(all.end(), std::make_move_iterator(part.begin()),
               std::make_move_iterator(part.end()));
  }
  return all;
}

CheckpointBytes classify_tensors(const std::vector<TensorInfo>& tensors, const std::string& path) {
  CheckpointBytes c;
  c.path = path;
  std::map<std::string, double> by_type;
  auto has = [](const std::string& s, const char* part) {
    return s.find(part) != std::string::npos;
  };
  for (const auto& t : tensors) {
    const std::string& n = t.name;
    double* slot = &c.other;
    if (has(n, "embed_tokens") || n == "token_embd.weight" || has(n, "wte")) {
      slot = &c.embedding;
    } else if (n == "lm_head.weight" || n == "output.weight") {
      slot = &c.lm_head;
    } else if (has(n, "shared_expert") || has(n, "_shexp")) {
      slot = &c.shared_experts;
    } else if (has(n, ".experts.") || has(n, "_exps") || has(n, "block_sparse_moe.experts")) {
      slot = &c.routed_experts;
    } else if (has(n, "mlp.gate.") || has(n, "mlp.router") || has(n, "ffn_gate_inp") ||
               has(n, "block_sparse_moe.gate") || has(n, "exp_probs_b")) {
      slot = &c.router;
    } else if (has(n, "norm")) {
      slot = &c.norms;
    } else if (has(n, "self_attn") || has(n, ".attn_") || has(n, "attention") ||
               has(n, "linear_attn") || has(n, ".ssm_")) {  // Gated DeltaNet layers
      slot = &c.attention;
    } else if (has(n, ".mlp.") || has(n, ".ffn_")) {
      slot = &c.dense_mlp;
    }
    *slot += t.bytes;
    c.total += t.bytes;
    by_type[t.dtype] += t.bytes;
  }
  c.tensors = static_cast<std::int64_t>(tensors.size());
  double best = -1;
  for (const auto& [type, bytes] : by_type) {
    if (bytes > best) {
      best = bytes;
      c.dominant_type = type;
    }
  }
  return c;
}

ModelSpec load_model_directory(const std::string& dir) {
  const auto root = std::filesystem::path(dir);
  const auto config = root / "config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(config, ec)) {
    throw ParseError(dir + ": a model directory needs a config.json");
  }
  ModelSpec m = load_model(config.string());
  std::vector<TensorInfo> tensors;
  if (std::filesystem::is_regular_file(root / "model.safetensors.index.json", ec)) {
    tensors = read_safetensors_index((root / "model.safetensors.index.json").string());
  } else if (std::filesystem::is_regular_file(root / "model.safetensors", ec)) {
    tensors = read_safetensors_header((root / "model.safetensors").string());
  }
  m.id =
      root.filename().empty() ? root.parent_path().filename().string() : root.filename().string();
  m.name = m.id;
  m.origin = dir;
  if (!tensors.empty()) {
    m.checkpoint = classify_tensors(tensors, dir);
    if (m.checkpoint->other > 0) {
      m.notes.push_back("some checkpoint tensors were not recognized by name and count as 'other'");
    }
  } else {
    m.notes.push_back("no safetensors in the directory: weight bytes come from the format table");
  }
  return m;
}

ModelSpec parse_gguf(std::string_view bytes, const std::string& origin) {
  return parse_gguf_prefix(bytes, bytes.size(), origin);
}

ModelSpec parse_gguf_prefix(std::string_view bytes, std::uint64_t file_size,
                            const std::string& origin) {
  Reader r(bytes, origin, file_size > bytes.size());
  const auto magic = r.scalar<std::uint32_t>();
  if (magic != 0x46554747) r.fail("magic number is wrong: not a GGUF file");
  const auto version = r.scalar<std::uint32_t>();
  if (version < 2 || version > 3)
    r.fail("version " + std::to_string(version) + " is not supported (2, 3)");
  const auto n_tensors = r.scalar<std::uint64_t>();
  const auto n_kv = r.scalar<std::uint64_t>();
  if (n_tensors > kMaxGgufTensors)
    r.fail("tensor count " + std::to_string(n_tensors) + " is too large");
  if (n_kv > kMaxGgufMetadata) r.fail("metadata count " + std::to_string(n_kv) + " is too large");

  std::map<std::string, GgufValue> meta;
  std::uint64_t alignment = 32;
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    const std::string key(clip_utf8(r.string(), 256));
    const auto type = r.scalar<std::uint32_t>();
    GgufValue v = read_gguf_value(r, type);
    if (key == "general.alignment" && v.kind == GgufValue::kNumber) {
      alignment = static_cast<std::uint64_t>(v.number);
      if (alignment == 0 || alignment > (1 << 20) || (alignment & (alignment - 1)) != 0) {
        r.fail("general.alignment must be a power of two");
      }
    }
    meta[key] = std::move(v);
  }

  std::vector<TensorInfo> tensors;
  tensors.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(n_tensors, r.remaining() / 24)));
  std::vector<std::uint64_t> offsets;
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.name = clip_utf8(r.string(), 256);
    const auto n_dims = r.scalar<std::uint32_t>();
    if (n_dims > 8) r.fail("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions");
    double elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto dim = r.scalar<std::uint64_t>();
      if (dim > (1ULL << 40))
        r.fail("tensor '" + t.name + "' dimension " + std::to_string(dim) + " is absurd");
      t.shape.push_back(static_cast<std::int64_t>(dim));
      elements *= static_cast<double>(dim);
    }
    const auto type_id = r.scalar<std::uint32_t>();
    const GgmlType* type = ggml_type(type_id);
    if (type == nullptr)
      r.fail("tensor '" + t.name + "' has unknown ggml type " + std::to_string(type_id));
    t.dtype = type->name;
    t.bytes = ggml_bytes(*type, elements);
    offsets.push_back(r.scalar<std::uint64_t>());
    tensors.push_back(std::move(t));
  }
  // Tensor data starts at the next alignment boundary; every tensor must fit.
  const std::uint64_t data_start = (r.pos() + alignment - 1) / alignment * alignment;
  const double data_size = static_cast<double>(file_size) - static_cast<double>(data_start);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (static_cast<double>(offsets[i]) + tensors[i].bytes > data_size) {
      throw ParseError(origin + ": GGUF tensor '" + tensors[i].name + "' at offset " +
                       std::to_string(offsets[i]) + " runs past the end of the file");
    }
  }

  auto text = [&](const std::string& key) -> std::string {
    auto it = meta.find(key);
    return (it != meta.end() && it->second.kind == GgufValue::kString) ? it->second.text : "";
  };
  const std::string arch = text("general.architecture");
  auto number = [&](const std::string& key, bool required) -> double {
    auto it = meta.find(arch + "." + key);
    if (it == meta.end() || it->second.kind != GgufValue::kNumber) {
      if (required)
        throw ParseError(origin + ": GGUF metadata " + arch + "." + key +
                         " is missing or not a number");
      return 0;
    }
    return it->second.number;
  };

  // Translate to a config.json and reuse its validation.
  json cfg;
  static const std::map<std::string, std::string> kArch = {
      {"llama", "llama"},          {"qwen2", "qwen2"},           {"qwen3", "qwen3"},
      {"qwen3moe", "qwen3_moe"},   {"deepseek2", "deepseek_v3"}, {"gpt-oss", "gpt_oss"},
      {"qwen3next", "qwen3_next"}, {"qwen35", "qwen3_5_text"},   {"qwen35moe", "qwen3_5_moe_text"}};
  auto arch_it = kArch.find(arch);
  if (arch_it == kArch.end()) {
    throw Unsupported(origin + ": GGUF architecture '" + clip_utf8(arch, 40) +
                      "' is not understood (llama, qwen2, qwen3, qwen3moe, deepseek2, gpt-oss, "
                      "qwen3next, qwen35, qwen35moe)");
  }
  std::string model_type = arch_it->second;
  const double experts = number("expert_count", false);
  if (model_type == "llama" && experts > 0) model_type = "mixtral";
  // Gated DeltaNet hybrids (llama.cpp's qwen3next, qwen35, qwen35moe).
  const bool hybrid = arch == "qwen3next" || arch == "qwen35" || arch == "qwen35moe";
  // Arrays of numbers the file may give per layer.
  auto items = [&](const std::string& key) -> const std::vector<double>* {
    auto it = meta.find(arch + "." + key);
    return it != meta.end() && it->second.kind == GgufValue::kArray ? &it->second.items : nullptr;
  };
  cfg["model_type"] = model_type;
  cfg["hidden_size"] = number("embedding_length", true);
  // A multi-token-prediction block rides after the trunk (block_count counts it).
  const double blocks = number("block_count", true);
  const double draft_blocks = hybrid ? number("nextn_predict_layers", false) : 0;
  if (!(draft_blocks >= 0 && draft_blocks < blocks))
    throw ParseError(origin + ": GGUF metadata " + arch + ".nextn_predict_layers must be below " +
                     arch + ".block_count");
  cfg["num_hidden_layers"] = blocks - draft_blocks;
  cfg["num_attention_heads"] = number("attention.head_count", true);
  if (const auto* per_layer = items("attention.head_count_kv")) {
    // Per layer (0 in linear-attention layers): the softmax layers' count.
    double kv = 0;
    for (double v : *per_layer) kv = std::max(kv, v);
    if (!(kv >= 1))
      throw ParseError(origin + ": GGUF metadata " + arch +
                       ".attention.head_count_kv gives no layer a KV head (or has over " +
                       std::to_string(kMaxGgufArrayItems) + " entries)");
    cfg["num_key_value_heads"] = kv;
  } else {
    cfg["num_key_value_heads"] = meta.count(arch + ".attention.head_count_kv")
                                     ? number("attention.head_count_kv", true)
                                     : number("attention.head_count", true);
  }
  if (const double kl = number("attention.key_length", false);
      kl > 0 && model_type != "deepseek_v3") {
    cfg["head_dim"] = kl;
  }
  double vocab = number("vocab_size", false);
  if (vocab == 0) {
    auto it = meta.find("tokenizer.ggml.tokens");
    if (it != meta.end() && it->second.kind == GgufValue::kArray)
      vocab = static_cast<double>(it->second.array_length);
  }
  if (vocab == 0)
    throw ParseError(origin + ": GGUF has neither " + arch +
                     ".vocab_size nor tokenizer.ggml.tokens");
  cfg["vocab_size"] = vocab;
  cfg["max_position_embeddings"] = number("context_length", false);
  const double ffn = number("feed_forward_length", false);
  if (experts > 0) {
    if (model_type == "mixtral" || model_type == "gpt_oss") {
      cfg["num_local_experts"] = experts;
      cfg["intermediate_size"] = ffn > 0 ? ffn : number("expert_feed_forward_length", true);
    } else {
      cfg["num_experts"] = experts;
      cfg["n_routed_experts"] = experts;
      cfg["moe_intermediate_size"] = number("expert_feed_forward_length", true);
      if (ffn > 0) cfg["intermediate_size"] = ffn;
    }
    cfg["num_experts_per_tok"] = number("expert_used_count", true);
  } else {
    cfg["intermediate_size"] = number("feed_forward_length", true);
  }
  if (model_type == "deepseek_v3") {
    cfg["kv_lora_rank"] = number("attention.kv_lora_rank", true);
    cfg["q_lora_rank"] = number("attention.q_lora_rank", false);
    const double rope = number("rope.dimension_count", true);
    cfg["qk_rope_head_dim"] = rope;
    cfg["qk_nope_head_dim"] = number("attention.key_length", true) - rope;
    cfg["v_head_dim"] = number("attention.value_length", true);
    cfg["n_shared_experts"] = number("expert_shared_count", false);
    cfg["first_k_dense_replace"] = number("leading_dense_block_count", false);
  }
  if (hybrid) {
    // llama.cpp's SSM keys for the delta rule: conv_kernel the convolution's
    // window, group_count the key heads, time_step_rank the value heads,
    // state_size a key head's width, inner_size all value heads' width.
    cfg["linear_conv_kernel_dim"] = number("ssm.conv_kernel", true);
    const double key_heads = number("ssm.group_count", true);
    const double value_heads = number("ssm.time_step_rank", true);
    const double inner = number("ssm.inner_size", true);
    if (!(value_heads >= 1) || std::fmod(inner, value_heads) != 0)
      throw ParseError(origin + ": GGUF metadata " + arch + ".ssm.inner_size (" +
                       std::to_string(static_cast<std::int64_t>(inner)) +
                       ") is not a whole number of ssm.time_step_rank value heads");
    cfg["linear_num_key_heads"] = key_heads;
    cfg["linear_num_value_heads"] = value_heads;
    cfg["linear_key_head_dim"] = number("ssm.state_size", true);
    cfg["linear_value_head_dim"] = inner / value_heads;
    const std::int64_t layers = static_cast<std::int64_t>(blocks - draft_blocks);
    if (const auto* recurrent = items("attention.recurrent_layers");
        recurrent && static_cast<std::int64_t>(recurrent->size()) >= layers && layers > 0) {
      json types = json::array();
      for (std::int64_t l = 0; l < layers; ++l)
        types.push_back((*recurrent)[static_cast<std::size_t>(l)] != 0 ? "linear_attention"
                                                                       : "full_attention");
      cfg["layer_types"] = types;
    } else {
      // llama.cpp's default when the file gives no interval.
      const double every = number("full_attention_interval", false);
      cfg["full_attention_interval"] = every > 0 ? every : 4;
    }
    const double key_length = number("attention.key_length", true);
    if (const double rope = number("rope.dimension_count", false); rope > 0 && key_length > 0)
      cfg["partial_rotary_factor"] = rope / key_length;
    if (experts > 0)
      cfg["shared_expert_intermediate_size"] = number("expert_shared_feed_forward_length", false);
  }
  if (const double window = number("attention.sliding_window", false); window > 0) {
    cfg["sliding_window"] = window;
    cfg["use_sliding_window"] = true;
  }
  bool has_output = false;
  for (const auto& t : tensors) has_output = has_output || t.name == "output.weight";
  cfg["tie_word_embeddings"] = !has_output;

  ModelSpec m = parse_hf_config(cfg.dump(), origin);
  m.checkpoint = classify_tensors(tensors, origin);
  for (const auto& t : kGgmlTypes) {
    if (m.checkpoint->dominant_type == t.name && t.format) {
      m.native_weights = m.native_experts = *t.format;
    }
  }
  m.notes.erase(std::remove_if(m.notes.begin(), m.notes.end(),
                               [](const std::string& n) { return n.rfind("config keys", 0) == 0; }),
                m.notes.end());
  if (draft_blocks > 0) {
    m.notes.push_back("the file's " + std::to_string(static_cast<std::int64_t>(draft_blocks)) +
                      " multi-token-prediction block(s) count in its bytes; predictions run the " +
                      std::to_string(m.layers) +
                      " trunk layers (--draft-tokens adds a draft head)");
  }
  m.notes.push_back("from GGUF metadata (" + arch + "); exact bytes from " +
                    std::to_string(tensors.size()) + " tensor headers, mostly " +
                    m.checkpoint->dominant_type);
  const std::string name = text("general.name");
  m.name = name.empty() ? std::filesystem::path(origin).stem().string() : name;
  return m;
}

ModelSpec load_gguf(const std::string& path) {
  const std::uint64_t size = file_size_of(path);
  // Metadata and tensor infos sit at the front (a 256k-token vocabulary is a
  // few MB); read at most kMaxGgufHeaderBytes and check tensor extents
  // against the real file size.
  const std::uint64_t want = std::min<std::uint64_t>(size, kMaxGgufHeaderBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError(path + ": cannot open for reading");
  std::string head(want, '\0');
  if (!in.read(head.data(), static_cast<std::streamsize>(want)))
    throw ParseError(path + ": read failed");
  return parse_gguf_prefix(head, size, path);
}

}  // namespace roofline
