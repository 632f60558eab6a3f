#include "roofline/formats.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string>

#include "roofline/error.h"

namespace roofline {
namespace {

constexpr double kFp32Max = 3.4028234663852886e38;  // (2 - 2^-23) * 2^127
constexpr double kTf32Max = 3.4011621342146535e38;  // (2 - 2^-10) * 2^127
constexpr double kBf16Max = 3.3895313892515355e38;  // (2 - 2^-7) * 2^127

// Block sizes and bits follow the definitions cited in `source`. The llama.cpp
// block sizes are the sizeof() of ggml's block structs:
//   block_q8_0 = fp16 d + 32 x int8                         = 34 B / 32
//   block_q4_0 = fp16 d + 16 B of nibbles                    = 18 B / 32
//   block_q4_K = fp16 d, dmin + 12 B scales + 128 B nibbles  = 144 B / 256
//   block_q5_K = q4_K + 32 B high bits                       = 176 B / 256
//   block_q6_K = 128 B low + 64 B high + 16 B scales + fp16  = 210 B / 256
}  // namespace

extern const std::array<FormatInfo, kFormatCount> detail::kFormatTable;
constexpr std::array<FormatInfo, kFormatCount> detail::kFormatTable{{
    {Format::kFp32, "fp32", "e8m23", 1, 32, 0, "none", kFp32Max, 0x1p-149, true,
     "IEEE 754 binary32"},
    {Format::kTf32, "tf32", "e8m10", 1, 32, 0, "none (stored as fp32)", kTf32Max, 0x1p-126, true,
     "CUDA __nv_tf32: 1 sign, 8 exponent, 10 mantissa bits in a 32-bit container"},
    {Format::kBf16, "bf16", "e8m7", 1, 16, 0, "none", kBf16Max, 0x1p-133, true, "bfloat16"},
    {Format::kFp16, "fp16", "e5m10", 1, 16, 0, "none", 65504.0, 0x1p-24, true, "IEEE 754 binary16"},
    {Format::kFp8, "fp8", "e4m3", 1, 8, 32, "fp32 per tensor", 448.0, 0x1p-9, true,
     "OCP OFP8 / arXiv 2209.05433 Table 1 (e4m3fn: no infinity, NaN = S.1111.111)"},
    {Format::kFp8E5M2, "fp8-e5m2", "e5m2", 1, 8, 32, "fp32 per tensor", 57344.0, 0x1p-16, true,
     "OCP OFP8 / arXiv 2209.05433 Table 1"},
    {Format::kMxfp8, "mxfp8", "e4m3", 32, 32 * 8 + 8, 0, "e8m0 per 32 elements", 448.0, 0x1p-9,
     true, "OCP Microscaling Formats v1.0"},
    {Format::kFp6, "fp6", "e3m2", 1, 6, 32, "fp32 per tensor", 28.0, 0.0625, true,
     "OCP Microscaling Formats v1.0 (FP6 E3M2 element)"},
    {Format::kMxfp6, "mxfp6", "e3m2", 32, 32 * 6 + 8, 0, "e8m0 per 32 elements", 28.0, 0.0625, true,
     "OCP Microscaling Formats v1.0"},
    {Format::kMxfp4, "mxfp4", "e2m1", 32, 32 * 4 + 8, 0, "e8m0 per 32 elements", 6.0, 0.5, true,
     "OCP Microscaling Formats v1.0"},
    {Format::kNvfp4, "nvfp4", "e2m1", 16, 16 * 4 + 8, 32, "ue4m3 per 16 elements + fp32 per tensor",
     6.0, 0.5, true,
     "NVIDIA, 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference' (2025)"},
    {Format::kInt8, "int8", "int8", 1, 8, 32,
     "fp32 per tensor (per-channel scales, 32 bits a row, are not counted)", 127.0, 1.0, true,
     "two's complement, symmetric"},
    {Format::kInt4, "int4", "int4", 128, 128 * 4 + 16 + 4, 0,
     "fp16 scale + 4-bit zero point per 128 elements", 7.0, 1.0, true,
     "GPTQ/AWQ group-128 layout (AutoGPTQ qzeros): 4 + 20/128 bits"},
    {Format::kQ8_0, "q8_0", "int8", 32, 34 * 8, 0, "fp16 scale per 32 elements", 127.0, 1.0, false,
     "ggml-common.h block_q8_0"},
    {Format::kQ6_K, "q6_k", "int6", 256, 210 * 8, 0,
     "int8 scale per 16 + fp16 scale per 256 elements", 31.0, 1.0, false,
     "ggml-common.h block_q6_K"},
    {Format::kQ5_K_M, "q5_k_m", "uint5", 256, 176 * 8, 0,
     "6-bit scale and min per 32 + fp16 pair per 256 elements", 31.0, 1.0, false,
     "ggml-common.h block_q5_K (the _M file mix keeps some tensors in q6_k)"},
    {Format::kQ4_K_M, "q4_k_m", "uint4", 256, 144 * 8, 0,
     "6-bit scale and min per 32 + fp16 pair per 256 elements", 15.0, 1.0, false,
     "ggml-common.h block_q4_K (the _M file mix keeps some tensors in q6_k)"},
    {Format::kQ4_0, "q4_0", "int4", 32, 18 * 8, 0, "fp16 scale per 32 elements", 8.0, 1.0, false,
     "ggml-common.h block_q4_0"},
}};

namespace {

constexpr const auto& kFormats = detail::kFormatTable;

constexpr bool table_in_enum_order() {
  for (int i = 0; i < kFormatCount; ++i)
    if (static_cast<int>(kFormats[i].format) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kFormats must be listed in Format order");
static_assert(kFormats[format_index(Format::kNvfp4)].block_bits == 72, "nvfp4: 16 x 4 + 8 bits");
static_assert(kFormats[format_index(Format::kQ8_0)].block_bits == 272, "q8_0: 34 bytes / 32");

struct Alias {
  std::string_view text;
  Format format;
};
constexpr Alias kAliases[] = {
    {"fp8-e4m3", Format::kFp8},
    {"e4m3", Format::kFp8},
    {"e5m2", Format::kFp8E5M2},
    {"int4-g128", Format::kInt4},
    {"q4_k", Format::kQ4_K_M},
    {"q5_k", Format::kQ5_K_M},
    // The names frameworks print (PyTorch dtypes, OCP spellings).
    {"bfloat16", Format::kBf16},
    {"float16", Format::kFp16},
    {"half", Format::kFp16},
    {"float32", Format::kFp32},
    {"e4m3fn", Format::kFp8},
    {"float8-e4m3fn", Format::kFp8},
    {"float8-e4m3", Format::kFp8},
    {"float8-e5m2", Format::kFp8E5M2},
};

// `lower` with spaces and underscores as '-' (or with spaces and '-' as '_'
// for llama.cpp's ids): "FP8 E4M3", "fp8_e4m3" and "Q4-K-M" reach their ids.
std::string with_separator(std::string lower, char sep) {
  for (char& c : lower) {
    if (c == ' ' || c == '_' || c == '-') c = sep;
  }
  return lower;
}

}  // namespace

std::span<const FormatInfo> all_formats() noexcept { return kFormats; }

double bits_per_element(Format f) noexcept {
  const FormatInfo& info = format_info(f);
  return static_cast<double>(info.block_bits) / info.block_elements;
}

bool try_parse_format(std::string_view text, Format* out) noexcept {
  if (text.size() > 32) return false;
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // Leading and trailing spaces are not part of a name.
  const auto first = lower.find_first_not_of(' ');
  if (first == std::string::npos) return false;
  lower = lower.substr(first, lower.find_last_not_of(' ') - first + 1);
  for (const std::string& name : {lower, with_separator(lower, '-'), with_separator(lower, '_')}) {
    for (const FormatInfo& info : kFormats) {
      if (info.id == name) {
        *out = info.format;
        return true;
      }
    }
    for (const Alias& alias : kAliases) {
      if (alias.text == name) {
        *out = alias.format;
        return true;
      }
    }
  }
  return false;
}

Format parse_format(std::string_view text) {
  Format f{};
  if (try_parse_format(text, &f)) return f;
  std::string known;
  for (const FormatInfo& info : kFormats) {
    if (!known.empty()) known += ", ";
    known += info.id;
  }
  std::string shown(clip_utf8(text, 40));
  throw NotFound("unknown format '" + shown + "' (known: " + known + ")");
}

}  // namespace roofline
