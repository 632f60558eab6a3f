// The one table of number formats. Every byte count in the project goes
// through bytes_for(); nothing else multiplies element counts by sizes.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>

#include "roofline/units.h"

namespace roofline {

// Order matters: it indexes per-format arrays (device peaks, efficiencies).
enum class Format : std::uint8_t {
  kFp32,
  kTf32,
  kBf16,
  kFp16,
  kFp8,      // fp8 e4m3 (OCP / NVIDIA "e4m3fn": max 448, no infinity)
  kFp8E5M2,  // fp8 e5m2 (IEEE-style, max 57344)
  kMxfp8,    // OCP MX: e4m3 elements, e8m0 scale per 32
  kFp6,      // fp6 e3m2 elements with one fp32 scale per tensor
  kMxfp6,    // OCP MX: e3m2 elements, e8m0 scale per 32
  kMxfp4,    // OCP MX: e2m1 elements, e8m0 scale per 32
  kNvfp4,    // e2m1 elements, ue4m3 scale per 16, fp32 scale per tensor
  kInt8,     // int8 with one fp32 scale per tensor
  kInt4,     // int4, group 128, fp16 scale + packed 4-bit zero per group
  kQ8_0,     // llama.cpp block_q8_0
  kQ6_K,     // llama.cpp block_q6_K
  kQ5_K_M,   // llama.cpp block_q5_K (the _M mix is a per-model choice)
  kQ4_K_M,   // llama.cpp block_q4_K (the _M mix is a per-model choice)
  kQ4_0,     // llama.cpp block_q4_0
};

inline constexpr int kFormatCount = static_cast<int>(Format::kQ4_0) + 1;

// Index for per-format arrays.
[[nodiscard]] constexpr int format_index(Format f) noexcept { return static_cast<int>(f); }

// Static description of one format. Bits include every scale and zero point.
struct FormatInfo {
  Format format;
  std::string_view id;       // canonical lower-case id, e.g. "nvfp4"
  std::string_view element;  // element encoding, e.g. "e2m1", "int4"
  int block_elements;        // elements that share one block scale (1: none)
  int block_bits;            // storage bits of one block, scales included
  int tensor_scale_bits;     // bits of one per-tensor scale (0: none)
  std::string_view scale;    // human description of the scaling
  double max_finite;         // largest element magnitude before any scaling
  double min_positive;       // smallest positive element before scaling
  // True when some GPU's tensor cores compute on it directly; false for
  // storage-only formats that are always dequantized before the math.
  bool compute_format;
  std::string_view source;  // where the layout is defined
};

namespace detail {
// The table itself (defined in formats.cpp); use the functions below.
extern const std::array<FormatInfo, kFormatCount> kFormatTable;
}  // namespace detail

// The whole table, in Format order.
[[nodiscard]] std::span<const FormatInfo> all_formats() noexcept;

[[nodiscard]] inline const FormatInfo& format_info(Format f) noexcept {
  return detail::kFormatTable[static_cast<std::size_t>(f)];
}

[[nodiscard]] inline std::string_view format_id(Format f) noexcept { return format_info(f).id; }

// Bits per element including block scales (nvfp4: 4.5, mxfp4: 4.25, q8_0: 8.5).
[[nodiscard]] double bits_per_element(Format f) noexcept;

// The format activations of format `act` are written and held in between
// kernels: `act` when it has 16 bits or more, else bf16 (low-precision GEMMs
// accumulate wide and emit 16-bit outputs; an fp8 or FP4 input is a copy the
// kernel before the GEMM, or the GEMM itself, quantizes).
[[nodiscard]] inline Format held_activation_format(Format act) noexcept {
  return bits_per_element(act) >= 16 ? act : Format::kBf16;
}

// Storage bytes of one tensor of `elements` values in format `f`: whole
// blocks (a partial block is stored whole) plus the per-tensor scale.
// REQUIRES: elements >= 0 and finite.
[[nodiscard]] inline Bytes bytes_for(Format f, double elements) noexcept {
  const FormatInfo& info = format_info(f);
  const double blocks =
      info.block_elements == 1 ? elements : std::ceil(elements / info.block_elements);
  return (blocks * info.block_bits + (elements > 0 ? info.tensor_scale_bits : 0)) * 0.125;
}

// Bytes of `elements` values at `bits` an element, for a format outside the
// table: an engine's private copy of a tensor (ggml's q8_1 GEMM inputs,
// EngineProfile::gemm_copies), whose bits its profile gives.
[[nodiscard]] inline Bytes bytes_for_bits(double bits, double elements) noexcept {
  return elements * bits * 0.125;
}

// Parses a format id, case-insensitive, with spaces, '_' and '-' alike ("FP8
// E4M3", "fp8_e4m3", "E4M3" and "float8_e4m3fn" are fp8; "NVFP4", "Q4-K-M",
// "bfloat16"); "e5m2" is fp8-e5m2, "int4-g128" int4.
// Throws NotFound naming the known ids.
[[nodiscard]] Format parse_format(std::string_view text);

// Parses without throwing; false if unknown.
[[nodiscard]] bool try_parse_format(std::string_view text, Format* out) noexcept;

}  // namespace roofline
