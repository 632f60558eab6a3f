// Number formats bit by bit: element codecs (fp8, fp6, fp4, e8m0, ue4m3,
// fp16, bf16), block quantizers (OCP MX, NVFP4, INT8, group-wise INT4,
// llama.cpp q8_0 / q4_0), a round trip for every Format of the table, and
// error metrics. The definitions follow shared/reference/formats-and-quality.md
// sections 1a-1c.
//
// Conventions, for everything below:
//  - Rounding is round-to-nearest, ties to even (RNE), computed from the
//    float32 bit pattern (one rounding, never double rounding), except where a
//    function says otherwise (e8m0: toward +infinity; q8_0 / q4_0: ggml's).
//  - Encoders saturate: a finite value (or an infinity) beyond the largest
//    finite value of the format gives that largest value with the input's
//    sign, like PTX cvt.rn.satfinite. No encoder produces an infinity,
//    except float_to_half / float_to_bf16 (IEEE overflow).
//  - Codes are returned in the low bits of a byte (6 bits for fp6, 4 for
//    fp4); the sign is the top bit of the code. Decoders ignore higher bits.
//  - Scalar codecs are noexcept. Block quantizers check their input once per
//    tensor and throw roofline::InvalidArgument on NaN or infinity; sizes that
//    do not match throw InvalidArgument too.
//  - Block formats pad a last partial block with zeros.
//
// Example:
//   std::vector<float> w = ...;
//   auto t = roofline::numerics::quantize_mx(w, roofline::numerics::MxElement::kE2M1);
//   std::vector<float> back(w.size());
//   roofline::numerics::dequantize(t, back);
//   double db = roofline::numerics::compare(w, back).sqnr_db;
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "roofline/formats.h"

namespace roofline::numerics {

// ---------------------------------------------------------------- elements

// FP8 E4M3 (OCP "e4m3fn"): bias 7, max 448 (0x7E), min normal 2^-6 (0x08),
// min subnormal 2^-9 (0x01), no infinity, NaN = 0x7F / 0xFF.
// encode: NaN -> 0x7F with the input's sign bit; +-Inf and |x| > 448 -> +-448;
// -0.0 -> 0x80.
[[nodiscard]] std::uint8_t encode_e4m3(float x) noexcept;
[[nodiscard]] float decode_e4m3(std::uint8_t code) noexcept;

// Bulk e4m3 encode / decode: out[i] = encode_e4m3(in[i]) (resp. decode).
// Throws InvalidArgument if out.size() != in.size(). NaN is allowed (as above).
void encode_e4m3(std::span<const float> in, std::span<std::uint8_t> out);
void decode_e4m3(std::span<const std::uint8_t> in, std::span<float> out);

// FP8 E5M2: bias 15, max 57344 (0x7B), min subnormal 2^-16, IEEE infinity
// (0x7C / 0xFC) and NaNs (0x7D..0x7F with either sign).
// encode (satfinite): +-Inf and finite overflow -> +-57344; NaN -> 0x7E (the
// quiet NaN) with the input's sign bit.
[[nodiscard]] std::uint8_t encode_e5m2(float x) noexcept;
[[nodiscard]] float decode_e5m2(std::uint8_t code) noexcept;

// FP6 E2M3 (OCP MX): bias 1, max 7.5, min normal 1, min subnormal 0.125.
// FP6 E3M2 (OCP MX): bias 3, max 28, min normal 0.25, min subnormal 0.0625.
// FP4 E2M1: bias 1, magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6} (codes 0..7).
// These formats have no NaN and no infinity: the scalar encoders map NaN
// (and +-Inf) to the largest-magnitude code with the input's sign; the block
// quantizers reject NaN and infinities before encoding.
[[nodiscard]] std::uint8_t encode_e2m3(float x) noexcept;
[[nodiscard]] float decode_e2m3(std::uint8_t code) noexcept;
[[nodiscard]] std::uint8_t encode_e3m2(float x) noexcept;
[[nodiscard]] float decode_e3m2(std::uint8_t code) noexcept;
[[nodiscard]] std::uint8_t encode_e2m1(float x) noexcept;
[[nodiscard]] float decode_e2m1(std::uint8_t code) noexcept;

// E8M0 (the MX shared scale): code c in 0..254 is 2^(c-127); 0xFF is NaN.
// encode rounds toward +infinity (CUDA cudaRoundPosInf) with satfinite:
// positive powers of two are exact, other values go to the next power of two
// up; x >= 2^127 and +Inf -> 0xFE; x <= 2^-127, zero and negative values ->
// 0x00 (the format has no zero and no sign); NaN -> 0xFF.
[[nodiscard]] std::uint8_t encode_e8m0(float x) noexcept;
[[nodiscard]] float decode_e8m0(std::uint8_t code) noexcept;

// UE4M3 (the NVFP4 block scale): e4m3 with the sign bit forced to 0, codes
// 0x00..0x7E, max 448; 0x7F is NaN. encode takes the magnitude |x| (the sign
// is dropped), RNE, saturating at 448; NaN -> 0x7F. decode ignores bit 7.
[[nodiscard]] std::uint8_t encode_ue4m3(float x) noexcept;
[[nodiscard]] float decode_ue4m3(std::uint8_t code) noexcept;

// IEEE binary16: RNE, overflow (|x| >= 65520) to +-Inf, subnormals down to
// 2^-24, NaN stays NaN (quiet, top payload bits kept).
[[nodiscard]] std::uint16_t float_to_half(float x) noexcept;
[[nodiscard]] float half_to_float(std::uint16_t h) noexcept;

// bfloat16 (the top 16 bits of a float32): RNE, overflow to +-Inf, NaN stays
// NaN (quiet bit set).
[[nodiscard]] std::uint16_t float_to_bf16(float x) noexcept;
[[nodiscard]] float bf16_to_float(std::uint16_t b) noexcept;

// ---------------------------------------------------------------- OCP MX

// Element type of an MX block (OCP Microscaling v1.0: blocks of 32, one
// e8m0 scale per block). MXFP8 = kE4M3 or kE5M2, MXFP6 = kE3M2 or kE2M3,
// MXFP4 = kE2M1.
enum class MxElement { kE4M3, kE5M2, kE3M2, kE2M3, kE2M1 };

inline constexpr std::size_t kMxBlock = 32;

struct MxTensor {
  MxElement element = MxElement::kE4M3;
  std::size_t size = 0;              // number of real (unpadded) elements
  std::vector<std::uint8_t> codes;   // one element code per byte, blocks * 32 (padding = 0)
  std::vector<std::uint8_t> scales;  // one e8m0 code per block
};

// Quantizes `in` to MX, in blocks of 32 consecutive elements. Scale rule of
// arXiv 2310.10537 Algorithm 1: shared_exp = floor(log2(max|v|)) - emax_elem
// (emax 8 for E4M3, 15 for E5M2, 4 for E3M2, 2 for E2M3 and E2M1), clamped to
// [-127, 127]; X = 2^shared_exp; element = encode(v / X), saturating, so the
// block maximum may clip (amax 7 in MXFP4 -> 6). An all-zero block has
// shared_exp clamped to -127 (scale code 0x00, as in the microxcaling
// reference) and all-zero codes; it dequantizes to zeros.
// Throws InvalidArgument if `in` holds NaN or an infinity.
[[nodiscard]] MxTensor quantize_mx(std::span<const float> in, MxElement element);

// out[i] = decode(codes[i]) * 2^(scale_code - 127).
// Throws InvalidArgument if out.size() != t.size or the vectors do not hold
// ceil(size / 32) blocks.
void dequantize(const MxTensor& t, std::span<float> out);

// ---------------------------------------------------------------- NVFP4

inline constexpr std::size_t kNvfp4Block = 16;

struct Nvfp4Tensor {
  std::size_t size = 0;                    // number of real (unpadded) elements
  float tensor_scale = 1.0f;               // fp32 per-tensor ("global") scale
  std::vector<std::uint8_t> codes;         // one e2m1 code per byte, blocks * 16 (padding = 0)
  std::vector<std::uint8_t> block_scales;  // one ue4m3 code per block of 16
};

// NVFP4 two-level recipe as in ModelOpt / TRT-LLM, in float32 arithmetic:
//   tensor_scale = amax(tensor) / (448 * 6)      (1 if amax is 0)
//   block_code   = encode_ue4m3(amax(block) / 6 / tensor_scale)   (RNE, clamp 448)
//   s            = decode_ue4m3(block_code) * tensor_scale
//   element      = encode_e2m1(v / s)            (0 if s is 0)
// Throws InvalidArgument if `in` holds NaN or an infinity.
[[nodiscard]] Nvfp4Tensor quantize_nvfp4(std::span<const float> in);

// out[i] = decode_e2m1(code) * decode_ue4m3(block_code) * tensor_scale, in
// that order (the first product is exact).
// Throws InvalidArgument on size mismatch (as for MX).
void dequantize(const Nvfp4Tensor& t, std::span<float> out);

// ---------------------------------------------------------------- INT8

// Which values share one int8 scale. Rows are those of a row-major
// [rows x cols] matrix. kPerChannel: one scale per OUTPUT channel, i.e. per
// row of an [out x in] weight. kPerToken: one scale per row of an activation
// [tokens x hidden]. Both are "per row"; the two names say which tensor.
enum class Int8Granularity { kPerTensor, kPerChannel, kPerToken };

struct Int8Tensor {
  std::size_t rows = 0, cols = 0;
  std::vector<std::int8_t> q;  // rows * cols, row-major
  std::vector<float> scales;   // 1 (per tensor) or rows (per channel / token)
};

// Symmetric int8: scale = amax / 127 (1 if amax is 0),
// q = clamp(rne(v / scale), -127, 127).
// Throws InvalidArgument if in.size() != rows * cols or `in` holds NaN/Inf.
[[nodiscard]] Int8Tensor quantize_int8(std::span<const float> in, std::size_t rows,
                                       std::size_t cols, Int8Granularity granularity);

// out[i] = q[i] * scale. Throws InvalidArgument on size mismatch.
void dequantize(const Int8Tensor& t, std::span<float> out);

// ---------------------------------------------------------------- INT4

enum class Int4Scheme { kSymmetric, kAsymmetric };

inline constexpr int kInt4DefaultGroup = 128;

struct Int4Tensor {
  std::size_t rows = 0, cols = 0;
  bool symmetric = false;
  int group = kInt4DefaultGroup;
  std::vector<std::uint8_t> q;      // rows * cols unsigned codes 0..15, row-major, one per byte
  std::vector<float> scales;        // rows * ceil(cols / group), row-major
  std::vector<std::uint8_t> zeros;  // same shape as scales; 8 for every group when symmetric
};

// Group-wise int4 along each row: groups of `group` consecutive elements of
// one row (groups never cross rows; the last group of a row may be shorter).
// Dequantization is (q - zero) * scale for both schemes.
//  symmetric:  scale = amax / 7 (1 if 0), q = clamp(rne(v / scale), -8, 7) + 8,
//              zero = 8 (the offset-binary storage GPTQ uses).
//  asymmetric: lo = min(min(v), 0), hi = max(max(v), 0) (the range always
//              contains 0, as in AutoGPTQ, so 0 and the zero point are exact),
//              scale = (hi - lo) / 15 (1 if 0), zero = clamp(rne(-lo / scale), 0, 15),
//              q = clamp(rne(v / scale) + zero, 0, 15).
// Scales are kept as float32; real GPTQ / AWQ checkpoints store fp16 scales.
// Throws InvalidArgument if in.size() != rows * cols, group < 1, or `in`
// holds NaN/Inf.
[[nodiscard]] Int4Tensor quantize_int4(std::span<const float> in, std::size_t rows,
                                       std::size_t cols, Int4Scheme scheme,
                                       int group = kInt4DefaultGroup);

// out[i] = (q - zero) * scale. Throws InvalidArgument on size mismatch.
void dequantize(const Int4Tensor& t, std::span<float> out);

// ---------------------------------------------------------------- llama.cpp

inline constexpr std::size_t kGgmlBlock = 32;
inline constexpr std::size_t kQ8_0BlockBytes = 34;  // fp16 d + 32 x int8
inline constexpr std::size_t kQ4_0BlockBytes = 18;  // fp16 d + 16 bytes of nibbles

// Raw ggml block bytes, bit-exact to ggml-quants.c quantize_row_q8_0_ref:
// per block of 32, d = amax / 127 (fp16, little-endian, bytes 0-1),
// qs[j] = roundf(x[j] * (1 / d)) (half away from zero; 0 when d is 0).
// Returns ceil(in.size() / 32) * 34 bytes (last block zero-padded).
// Throws InvalidArgument if `in` holds NaN/Inf.
[[nodiscard]] std::vector<std::uint8_t> quantize_q8_0(std::span<const float> in);

// Bit-exact to quantize_row_q4_0_ref: per block of 32, max = the value of
// largest magnitude (signed, first one on ties), d = max / -8, id = 1/d (0 if
// d is 0), q = min(15, (int8)(x * id + 8.5f)); byte j holds element j in its
// low nibble and element j + 16 in its high nibble; d as fp16 in bytes 0-1.
// Returns ceil(in.size() / 32) * 18 bytes. Throws as quantize_q8_0.
[[nodiscard]] std::vector<std::uint8_t> quantize_q4_0(std::span<const float> in);

// ggml's dequantize_row_q8_0 / _q4_0: q * d and (q - 8) * d. `out.size()` is
// the number of real elements; throws InvalidArgument unless
// blocks.size() == ceil(out.size() / 32) * block bytes.
void dequantize_q8_0(std::span<const std::uint8_t> blocks, std::span<float> out);
void dequantize_q4_0(std::span<const std::uint8_t> blocks, std::span<float> out);

// ---------------------------------------------------------------- round trip

// out = dequantize(quantize(in)) in format `f`, for a row-major [rows x cols]
// tensor. Blocks run along rows and never cross a row (a row whose length is
// not a multiple of the block is padded, as kernels and ggml do).
//   fp32: identity. tf32: mantissa rounded to 10 bits (RNE). bf16, fp16:
//   convert and back (fp16 overflows to Inf beyond 65504).
//   fp8, fp8-e5m2, fp6 (e3m2): one fp32 scale per tensor, amax / max_finite
//   (1 if amax is 0), so values use the full range; element = encode(v / s).
//   mxfp8 (e4m3), mxfp6 (e3m2), mxfp4: quantize_mx. nvfp4: quantize_nvfp4
//   (one tensor scale over the whole tensor).
//   int8: per channel (one scale per row). int4: group 128, asymmetric.
//   q8_0, q4_0: the ggml blocks.
// Throws Unsupported for q6_k, q5_k_m and q4_k_m ("round trip not
// implemented"); InvalidArgument if in.size() != rows * cols,
// out.size() != in.size(), or `in` holds NaN/Inf.
void round_trip(Format f, std::span<const float> in, std::size_t rows, std::size_t cols,
                std::span<float> out);

// ---------------------------------------------------------------- metrics

struct ErrorMetrics {
  double mse = 0;      // mean of (ref - approx)^2 (0 for empty inputs)
  double sqnr_db = 0;  // 10 log10(sum ref^2 / sum (ref - approx)^2); +inf if the
                       // error is exactly 0, -inf if ref is all zeros and the error is not
  double max_abs = 0;  // max |ref - approx|
  double cosine = 1;   // dot / (|ref| |approx|); 1 if both are zero vectors, 0 if only one is
};

// Accumulates in double. NaN or Inf in `approx` propagate into the metrics.
// Throws InvalidArgument if the sizes differ.
[[nodiscard]] ErrorMetrics compare(std::span<const float> reference, std::span<const float> approx);

}  // namespace roofline::numerics
