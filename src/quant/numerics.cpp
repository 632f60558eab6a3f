#include "roofline/numerics.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "roofline/error.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#ifdef __FAST_MATH__
#error \
    "numerics.cpp relies on IEEE float semantics (RNE additions); do not build it with -ffast-math"
#endif

namespace roofline::numerics {
namespace {

constexpr std::uint32_t kAbsMask = 0x7FFF'FFFFu;
constexpr std::int32_t kInfBits = 0x7F80'0000;

inline std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
inline float float_of(std::uint32_t b) { return std::bit_cast<float>(b); }

// Exact 2^e for e in [-149, 127].
constexpr float pow2f(int e) {
  return e >= -126 ? std::bit_cast<float>(static_cast<std::uint32_t>(e + 127) << 23)
                   : std::bit_cast<float>(1u << (e + 149));
}

// ---------------------------------------------------------------- minifloats

enum class Special {
  kNone,  // no Inf, no NaN (fp6, fp4)
  kFn,    // all-ones code is NaN, no Inf (e4m3fn)
  kIeee,  // all-ones exponent: Inf and NaNs (e5m2)
};

// A small float: sign above E exponent bits above M mantissa bits, bias B.
template <int E, int M, int B, Special S>
struct MiniFloat {
  static constexpr int kExpBits = E;
  static constexpr int kManBits = M;
  static constexpr int kBias = B;
  static constexpr Special kSpecial = S;
  static constexpr std::uint32_t kManMask = (1u << M) - 1;
  static constexpr std::uint32_t kExpAllOnes = (1u << E) - 1;
  // Largest finite magnitude code, and the magnitude code written for NaN.
  static constexpr std::uint32_t kMaxCode = S == Special::kNone ? (1u << (E + M)) - 1
                                            : S == Special::kFn
                                                ? (1u << (E + M)) - 2
                                                : ((kExpAllOnes - 1) << M) | kManMask;
  static constexpr std::uint32_t kNanCode = S == Special::kNone ? kMaxCode
                                            : S == Special::kFn
                                                ? (1u << (E + M)) - 1
                                                : (kExpAllOnes << M) | (1u << (M - 1));
  // float32 bit patterns of the largest finite value and of the smallest normal.
  static constexpr std::int32_t kMaxBits = static_cast<std::int32_t>(
      (((kMaxCode >> M) - B + 127) << 23) | ((kMaxCode & kManMask) << (23 - M)));
  static constexpr std::int32_t kMinNormalBits = (1 - B + 127) << 23;
  // Adding this to a magnitude below the smallest normal leaves a float whose
  // ulp is the format's subnormal step 2^(1-B-M): the FPU's RNE addition does
  // the rounding, and the low mantissa bits are the code.
  static constexpr float kMagic = pow2f(24 - B - M);
};

using E4M3 = MiniFloat<4, 3, 7, Special::kFn>;
using E5M2 = MiniFloat<5, 2, 15, Special::kIeee>;
using E3M2 = MiniFloat<3, 2, 3, Special::kNone>;
using E2M3 = MiniFloat<2, 3, 1, Special::kNone>;
using E2M1 = MiniFloat<2, 1, 1, Special::kNone>;

static_assert(E4M3::kMaxCode == 0x7E && E4M3::kNanCode == 0x7F);
static_assert(E5M2::kMaxCode == 0x7B && E5M2::kNanCode == 0x7E);
static_assert(std::bit_cast<float>(E4M3::kMaxBits) == 448.0f);
static_assert(std::bit_cast<float>(E5M2::kMaxBits) == 57344.0f);
static_assert(std::bit_cast<float>(E3M2::kMaxBits) == 28.0f);
static_assert(std::bit_cast<float>(E2M3::kMaxBits) == 7.5f);
static_assert(std::bit_cast<float>(E2M1::kMaxBits) == 6.0f);

// Branch-free so that loops over it vectorize. Saturates (satfinite).
template <class F>
inline std::uint32_t encode_mini(float x) {
  const std::uint32_t bits = bits_of(x);
  const std::uint32_t sign = (bits >> 31) << (F::kExpBits + F::kManBits);
  const auto a = static_cast<std::int32_t>(bits & kAbsMask);
  const std::int32_t ac = a < F::kMaxBits ? a : F::kMaxBits;
  // Normal range: rebias the exponent, then RNE on the dropped mantissa bits.
  constexpr int kShift = 23 - F::kManBits;
  const std::int32_t t = ac - ((127 - F::kBias) << 23);
  const std::int32_t normal = (t + ((1 << (kShift - 1)) - 1) + ((t >> kShift) & 1)) >> kShift;
  // Subnormal range (rounding up into the smallest normal gives its code).
  const auto sub = static_cast<std::int32_t>(
      bits_of(float_of(static_cast<std::uint32_t>(ac)) + F::kMagic) - bits_of(F::kMagic));
  // Selects with masks, not ?:, so that GCC keeps the float add unconditional
  // (with -ftrapping-math it will not if-convert a conditional one).
  const std::int32_t is_sub = -static_cast<std::int32_t>(ac < F::kMinNormalBits);
  const std::int32_t is_nan = -static_cast<std::int32_t>(a > kInfBits);
  std::int32_t mag = (sub & is_sub) | (normal & ~is_sub);
  mag = (static_cast<std::int32_t>(F::kNanCode) & is_nan) | (mag & ~is_nan);
  return static_cast<std::uint32_t>(mag) | sign;
}

// e2m1 by comparison with the seven midpoints 0.25, 0.75, 1.25, 1.75, 2.5,
// 3.5 and 5: at a midpoint, > keeps the lower code and >= takes the upper
// one, whichever is even (so this is RNE), and everything above 5 gives 6
// (satfinite). Fewer vector operations than encode_mini<E2M1>. NaN gives 0:
// callers handle it.
inline std::uint32_t encode_e2m1_no_nan(float x) {
  const std::uint32_t bits = bits_of(x);
  const float q = float_of(bits & kAbsMask);
  const std::uint32_t code =
      static_cast<std::uint32_t>(q > 0.25f) + static_cast<std::uint32_t>(q >= 0.75f) +
      static_cast<std::uint32_t>(q > 1.25f) + static_cast<std::uint32_t>(q >= 1.75f) +
      static_cast<std::uint32_t>(q > 2.5f) + static_cast<std::uint32_t>(q >= 3.5f) +
      static_cast<std::uint32_t>(q > 5.0f);
  return code | ((bits >> 31) << 3);
}

template <class F>
constexpr float decode_mini_slow(std::uint32_t code) {
  const bool negative = (code >> (F::kExpBits + F::kManBits)) & 1;
  const std::uint32_t e = (code >> F::kManBits) & F::kExpAllOnes;
  const std::uint32_t m = code & F::kManMask;
  float mag = 0;
  if (F::kSpecial == Special::kIeee && e == F::kExpAllOnes) {
    mag = m == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (F::kSpecial == Special::kFn && e == F::kExpAllOnes && m == F::kManMask) {
    mag = std::numeric_limits<float>::quiet_NaN();
  } else if (e == 0) {
    mag = static_cast<float>(m) * pow2f(1 - F::kBias - F::kManBits);
  } else {
    mag = std::bit_cast<float>(((e - F::kBias + 127) << 23) | (m << (23 - F::kManBits)));
  }
  return negative ? -mag : mag;
}

template <class F>
constexpr auto make_table() {
  std::array<float, std::size_t{1} << (1 + F::kExpBits + F::kManBits)> t{};
  for (std::uint32_t c = 0; c < t.size(); ++c) t[c] = decode_mini_slow<F>(c);
  return t;
}

constexpr auto kE4M3Table = make_table<E4M3>();
constexpr auto kE5M2Table = make_table<E5M2>();
constexpr auto kE3M2Table = make_table<E3M2>();
constexpr auto kE2M3Table = make_table<E2M3>();
constexpr auto kE2M1Table = make_table<E2M1>();
static_assert(kE4M3Table[0x7E] == 448.0f && kE4M3Table[0x01] == 0x1p-9f);
static_assert(kE2M1Table[7] == 6.0f && kE2M1Table[5] == 3.0f && kE2M1Table[1] == 0.5f);

template <class F>
constexpr const auto& table() {
  if constexpr (std::is_same_v<F, E4M3>)
    return kE4M3Table;
  else if constexpr (std::is_same_v<F, E5M2>)
    return kE5M2Table;
  else if constexpr (std::is_same_v<F, E3M2>)
    return kE3M2Table;
  else if constexpr (std::is_same_v<F, E2M3>)
    return kE2M3Table;
  else
    return kE2M1Table;
}

template <class F>
inline float decode_mini(std::uint32_t code) {
  const auto& t = table<F>();
  return t[code & (t.size() - 1)];
}

// 16 e2m1 codes of x / s (kDivide) or x * s, ANDed with mask (0 for a zero
// NVFP4 block scale). REQUIRES: s > 0, x finite.
#if defined(__SSE2__)
// SSE2 (every x86-64): the seven midpoint comparisons of encode_e2m1_no_nan
// on 4 x 4 quotients, each mask narrowed to bytes with saturating packs
// (-1 stays -1) and subtracted, so one 16-byte store writes the block.
template <bool kDivide>
inline void e2m1_encode_16(const float* x, float s, std::uint8_t mask, std::uint8_t* y) {
  const __m128 scale = _mm_set1_ps(s);
  const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7FFF'FFFF));
  __m128 q[4];
  __m128i negative[4];
  for (int k = 0; k < 4; ++k) {
    const __m128 v = _mm_loadu_ps(x + 4 * k);
    const __m128 d = kDivide ? _mm_div_ps(v, scale) : _mm_mul_ps(v, scale);
    q[k] = _mm_and_ps(d, abs_mask);
    negative[k] = _mm_srai_epi32(_mm_castps_si128(d), 31);
  }
  auto narrow = [](__m128i a, __m128i b, __m128i c, __m128i d) {
    return _mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
  };
  auto greater = [&](float t) {
    const __m128 v = _mm_set1_ps(t);
    return narrow(_mm_castps_si128(_mm_cmpgt_ps(q[0], v)), _mm_castps_si128(_mm_cmpgt_ps(q[1], v)),
                  _mm_castps_si128(_mm_cmpgt_ps(q[2], v)), _mm_castps_si128(_mm_cmpgt_ps(q[3], v)));
  };
  auto greater_equal = [&](float t) {
    const __m128 v = _mm_set1_ps(t);
    return narrow(_mm_castps_si128(_mm_cmpge_ps(q[0], v)), _mm_castps_si128(_mm_cmpge_ps(q[1], v)),
                  _mm_castps_si128(_mm_cmpge_ps(q[2], v)), _mm_castps_si128(_mm_cmpge_ps(q[3], v)));
  };
  __m128i code = _mm_setzero_si128();
  code = _mm_sub_epi8(code, greater(0.25f));
  code = _mm_sub_epi8(code, greater_equal(0.75f));
  code = _mm_sub_epi8(code, greater(1.25f));
  code = _mm_sub_epi8(code, greater_equal(1.75f));
  code = _mm_sub_epi8(code, greater(2.5f));
  code = _mm_sub_epi8(code, greater_equal(3.5f));
  code = _mm_sub_epi8(code, greater(5.0f));
  const __m128i sign =
      _mm_and_si128(narrow(negative[0], negative[1], negative[2], negative[3]), _mm_set1_epi8(8));
  code = _mm_and_si128(_mm_or_si128(code, sign), _mm_set1_epi8(static_cast<char>(mask)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), code);
}
#else
template <bool kDivide>
inline void e2m1_encode_16(const float* x, float s, std::uint8_t mask, std::uint8_t* y) {
  for (std::size_t i = 0; i < 16; ++i)
    y[i] = static_cast<std::uint8_t>(encode_e2m1_no_nan(kDivide ? x[i] / s : x[i] * s)) & mask;
}
#endif

// ---------------------------------------------------------------- helpers

// Largest |x| as float bits; >= kInfBits means NaN or Inf is present.
inline std::int32_t amax_bits(const float* x, std::size_t n) {
  std::int32_t m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto a = static_cast<std::int32_t>(bits_of(x[i]) & kAbsMask);
    m = a > m ? a : m;
  }
  return m;
}

void require_finite_amax(std::int32_t amax, const char* what) {
  if (amax >= kInfBits) throw InvalidArgument(std::string(what) + ": input holds NaN or infinity");
}

// Throws unless every value is finite; returns max |x|.
float checked_amax(std::span<const float> in, const char* what) {
  const std::int32_t m = amax_bits(in.data(), in.size());
  require_finite_amax(m, what);
  return float_of(static_cast<std::uint32_t>(m));
}

void require_size(std::size_t got, std::size_t want, const char* what) {
  if (got != want)
    throw InvalidArgument(std::string(what) + ": size " + std::to_string(got) + ", expected " +
                          std::to_string(want));
}

std::size_t checked_product(std::size_t rows, std::size_t cols, const char* what) {
  if (cols != 0 && rows > std::numeric_limits<std::size_t>::max() / cols)
    throw InvalidArgument(std::string(what) + ": rows * cols overflows");
  return rows * cols;
}

constexpr std::size_t blocks_of(std::size_t n, std::size_t block) {
  return (n + block - 1) / block;
}

// RNE of |x| <= 2^22 through the FPU's rounding (adding 1.5 * 2^23 leaves an
// ulp of 1).
inline float rne_small(float x) {
  constexpr float kRound = 0x1.8p23f;
  return (x + kRound) - kRound;
}

inline float clampf(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

// ---------------------------------------------------------------- MX

template <class F>
constexpr int mx_emax() {
  if constexpr (std::is_same_v<F, E4M3>)
    return 8;
  else if constexpr (std::is_same_v<F, E5M2>)
    return 15;
  else if constexpr (std::is_same_v<F, E3M2>)
    return 4;
  else
    return 2;  // E2M3, E2M1
}

// floor(log2(x)) from the bits of a finite x > 0; very negative for 0.
inline int floor_log2_bits(std::int32_t bits) {
  if (bits >= 0x0080'0000) return (bits >> 23) - 127;
  if (bits == 0) return -1000;
  return 31 - std::countl_zero(static_cast<std::uint32_t>(bits)) - 149;
}

// One full block of 32 finite values -> 32 codes; returns the e8m0 scale code.
template <class F>
std::uint8_t mx_block(const float* in, std::uint8_t* codes) {
  const std::int32_t amax = amax_bits(in, kMxBlock);
  require_finite_amax(amax, "quantize_mx");
  const int shared = std::clamp(floor_log2_bits(amax) - mx_emax<F>(), -127, 127);
  const float inv = pow2f(-shared);         // v / 2^shared, exactly (same real value, one rounding)
  if constexpr (std::is_same_v<F, E2M1>) {  // one e2m1 rounding everywhere (inputs are finite)
    e2m1_encode_16<false>(in, inv, 0xFF, codes);
    e2m1_encode_16<false>(in + 16, inv, 0xFF, codes + 16);
  } else {
    for (std::size_t i = 0; i < kMxBlock; ++i)
      codes[i] = static_cast<std::uint8_t>(encode_mini<F>(in[i] * inv));
  }
  return static_cast<std::uint8_t>(shared + 127);
}

template <class F>
void mx_decode_block(const std::uint8_t* codes, std::uint8_t scale, float* out, std::size_t n) {
  const float s = decode_e8m0(scale);
  for (std::size_t i = 0; i < n; ++i) out[i] = decode_mini<F>(codes[i]) * s;
}

// Quantizes n finite values as ceil(n / 32) MX blocks (the last one zero-padded).
template <class F>
void mx_quantize_span(const float* in, std::size_t n, std::uint8_t* codes, std::uint8_t* scales) {
  const std::size_t full = n / kMxBlock;
  for (std::size_t b = 0; b < full; ++b)
    scales[b] = mx_block<F>(in + b * kMxBlock, codes + b * kMxBlock);
  if (const std::size_t rest = n - full * kMxBlock; rest != 0) {
    std::array<float, kMxBlock> pad{};
    std::copy_n(in + full * kMxBlock, rest, pad.begin());
    scales[full] = mx_block<F>(pad.data(), codes + full * kMxBlock);
  }
}

template <class F>
void mx_round_trip_row(const float* in, std::size_t n, float* out) {
  std::array<std::uint8_t, kMxBlock> codes{};
  for (std::size_t i = 0; i < n; i += kMxBlock) {
    const std::size_t len = std::min(kMxBlock, n - i);
    std::uint8_t scale = 0;
    mx_quantize_span<F>(in + i, len, codes.data(), &scale);
    mx_decode_block<F>(codes.data(), scale, out + i, len);
  }
}

template <class Fn>
decltype(auto) with_mx_element(MxElement e, Fn&& fn) {
  switch (e) {
    case MxElement::kE4M3:
      return fn(E4M3{});
    case MxElement::kE5M2:
      return fn(E5M2{});
    case MxElement::kE3M2:
      return fn(E3M2{});
    case MxElement::kE2M3:
      return fn(E2M3{});
    case MxElement::kE2M1:
      return fn(E2M1{});
  }
  throw InvalidArgument("unknown MxElement " + std::to_string(static_cast<int>(e)));
}

// ---------------------------------------------------------------- NVFP4

// A tensor scale that underflows to 0 (amax below ~2^-138) would make 0 / 0
// block scales; it is kept at the smallest subnormal instead.
float nvfp4_tensor_scale(float amax) {
  if (amax == 0.0f) return 1.0f;
  const float s = amax / (448.0f * 6.0f);
  return s == 0.0f ? std::numeric_limits<float>::denorm_min() : s;
}

// Value of a non-negative, non-NaN e4m3 code (0x00..0x7E), branch-free so
// that loops over blocks vectorize (the table lookup would not).
inline float ue4m3_value(std::int32_t code) {
  const std::int32_t e = code >> 3;
  const std::int32_t m = code & 7;
  const std::int32_t normal = ((e + 120) << 23) | (m << 20);
  const auto sub = static_cast<std::int32_t>(bits_of(static_cast<float>(m) * 0x1p-9f));
  const std::int32_t is_sub = -static_cast<std::int32_t>(e == 0);
  return float_of(static_cast<std::uint32_t>((sub & is_sub) | (normal & ~is_sub)));
}

// Max |x| of each block of 16 (the last one zero-padded) of n finite values.
void nvfp4_block_amax(const float* in, std::size_t n, float* amax) {
  const std::size_t full = n / kNvfp4Block;
  for (std::size_t b = 0; b < full; ++b) {
    const float* x = in + b * kNvfp4Block;
    float m = 0.0f;
    for (std::size_t i = 0; i < kNvfp4Block; ++i) {
      const float a = std::fabs(x[i]);
      m = a > m ? a : m;
    }
    amax[b] = m;
  }
  if (full * kNvfp4Block < n)
    amax[full] = float_of(
        static_cast<std::uint32_t>(amax_bits(in + full * kNvfp4Block, n - full * kNvfp4Block)));
}

// NVFP4 for ceil(n / 16) blocks of finite values (the last one zero-padded),
// given each block's max |x|. Works in chunks of 64 blocks: first the scales
// of the chunk (a loop that vectorizes across blocks, so no element waits on
// a per-block chain of divisions), then the elements.
void nvfp4_blocks(const float* in, std::size_t n, const float* block_amax, float tensor_scale,
                  std::uint8_t* codes, std::uint8_t* scales) {
  constexpr std::size_t kChunk = 64;
  std::array<float, kChunk> divisor{};
  std::array<std::uint8_t, kChunk> keep{};
  const std::size_t blocks = blocks_of(n, kNvfp4Block);
  for (std::size_t b0 = 0; b0 < blocks; b0 += kChunk) {
    const std::size_t nb = std::min(kChunk, blocks - b0);
    for (std::size_t b = 0; b < nb; ++b) {
      // amax >= 0, so this is encode_ue4m3 (the sign bit stays 0).
      const auto code =
          static_cast<std::int32_t>(encode_mini<E4M3>(block_amax[b0 + b] / 6.0f / tensor_scale));
      scales[b0 + b] = static_cast<std::uint8_t>(code);
      const float s = ue4m3_value(code) * tensor_scale;
      keep[b] = s == 0.0f ? 0x00 : 0xFF;  // a zero scale gives zero codes
      divisor[b] = s == 0.0f ? 1.0f : s;  // and no 0 / 0
    }
    for (std::size_t b = 0; b < nb; ++b) {
      const std::size_t first = (b0 + b) * kNvfp4Block;
      if (first + kNvfp4Block <= n) {
        e2m1_encode_16<true>(in + first, divisor[b], keep[b], codes + first);
      } else {
        std::array<float, kNvfp4Block> pad{};
        std::copy(in + first, in + n, pad.begin());
        e2m1_encode_16<true>(pad.data(), divisor[b], keep[b], codes + first);
      }
    }
  }
}

void nvfp4_decode_block(const std::uint8_t* codes, std::uint8_t scale_code, float tensor_scale,
                        float* out, std::size_t n) {
  const float s = decode_ue4m3(scale_code);
  for (std::size_t i = 0; i < n; ++i) out[i] = decode_mini<E2M1>(codes[i]) * s * tensor_scale;
}

// ---------------------------------------------------------------- INT8 / INT4

void int8_row(const float* in, std::size_t n, float scale, std::int8_t* q) {
  for (std::size_t i = 0; i < n; ++i)
    q[i] = static_cast<std::int8_t>(rne_small(clampf(in[i] / scale, -127.0f, 127.0f)));
}

float int8_scale(float amax) { return amax == 0.0f ? 1.0f : amax / 127.0f; }

// One int4 group of n values: writes q, returns {scale, zero}.
struct Int4Group {
  float scale;
  std::uint8_t zero;
};

Int4Group int4_group(const float* in, std::size_t n, bool symmetric, std::uint8_t* q) {
  if (symmetric) {
    const float amax = float_of(static_cast<std::uint32_t>(amax_bits(in, n)));
    const float scale = amax == 0.0f ? 1.0f : amax / 7.0f;
    for (std::size_t i = 0; i < n; ++i)
      q[i] = static_cast<std::uint8_t>(rne_small(clampf(in[i] / scale, -8.0f, 7.0f)) + 8.0f);
    return {scale, 8};
  }
  float lo = 0.0f, hi = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    lo = std::min(lo, in[i]);
    hi = std::max(hi, in[i]);
  }
  // In double: hi - lo may exceed the float range.
  const double range = static_cast<double>(hi) - static_cast<double>(lo);
  const float scale = range == 0.0 ? 1.0f : static_cast<float>(range / 15.0);
  const float zero = clampf(rne_small(clampf(-lo / scale, -1e6f, 1e6f)), 0.0f, 15.0f);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = rne_small(clampf(in[i] / scale, -1e6f, 1e6f)) + zero;
    q[i] = static_cast<std::uint8_t>(clampf(v, 0.0f, 15.0f));
  }
  return {scale, static_cast<std::uint8_t>(zero)};
}

// ---------------------------------------------------------------- ggml

void put_half(std::uint8_t* p, float d) {
  const std::uint16_t h = float_to_half(d);
  p[0] = static_cast<std::uint8_t>(h & 0xFF);
  p[1] = static_cast<std::uint8_t>(h >> 8);
}

float get_half(const std::uint8_t* p) {
  return half_to_float(static_cast<std::uint16_t>(p[0] | (p[1] << 8)));
}

// quantize_row_q8_0_ref for one block of 32.
void q8_0_block(const float* x, std::uint8_t* y) {
  float amax = 0.0f;
  for (std::size_t j = 0; j < kGgmlBlock; ++j) {
    const float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;  // ggml's MAX(amax, fabsf(v))
  }
  const float d = amax / ((1 << 7) - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(y, d);
  for (std::size_t j = 0; j < kGgmlBlock; ++j)
    y[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(x[j] * id)));
}

// quantize_row_q4_0_ref for one block of 32.
void q4_0_block(const float* x, std::uint8_t* y) {
  float amax = 0.0f;
  float max = 0.0f;
  for (std::size_t j = 0; j < kGgmlBlock; ++j) {
    const float v = x[j];
    if (amax < std::fabs(v)) {
      amax = std::fabs(v);
      max = v;
    }
  }
  const float d = max / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_half(y, d);
  constexpr std::size_t kHalf = kGgmlBlock / 2;
  for (std::size_t j = 0; j < kHalf; ++j) {
    const float x0 = x[j] * id;
    const float x1 = x[kHalf + j] * id;
    const int xi0 = std::min(15, static_cast<int>(x0 + 8.5f));
    const int xi1 = std::min(15, static_cast<int>(x1 + 8.5f));
    y[2 + j] = static_cast<std::uint8_t>(xi0 | (xi1 << 4));
  }
}

static_assert(kQ8_0BlockBytes == 2 + kGgmlBlock, "block_q8_0: fp16 d + 32 int8");
static_assert(kQ4_0BlockBytes == 2 + kGgmlBlock / 2, "block_q4_0: fp16 d + 16 bytes of nibbles");

using BlockFn = void (*)(const float*, std::uint8_t*);

void ggml_quantize_span(const float* in, std::size_t n, std::size_t block_bytes, BlockFn fn,
                        std::uint8_t* out) {
  const std::size_t full = n / kGgmlBlock;
  for (std::size_t b = 0; b < full; ++b) fn(in + b * kGgmlBlock, out + b * block_bytes);
  if (const std::size_t rest = n - full * kGgmlBlock; rest != 0) {
    std::array<float, kGgmlBlock> pad{};
    std::copy_n(in + full * kGgmlBlock, rest, pad.begin());
    fn(pad.data(), out + full * block_bytes);
  }
}

void q8_0_decode(const std::uint8_t* blocks, float* out, std::size_t n) {
  for (std::size_t b = 0; b * kGgmlBlock < n; ++b) {
    const std::uint8_t* y = blocks + b * kQ8_0BlockBytes;
    const float d = get_half(y);
    const std::size_t len = std::min(kGgmlBlock, n - b * kGgmlBlock);
    for (std::size_t j = 0; j < len; ++j)
      out[b * kGgmlBlock + j] = static_cast<float>(static_cast<std::int8_t>(y[2 + j])) * d;
  }
}

void q4_0_decode(const std::uint8_t* blocks, float* out, std::size_t n) {
  constexpr std::size_t kHalf = kGgmlBlock / 2;
  for (std::size_t b = 0; b * kGgmlBlock < n; ++b) {
    const std::uint8_t* y = blocks + b * kQ4_0BlockBytes;
    const float d = get_half(y);
    std::array<float, kGgmlBlock> v{};
    for (std::size_t j = 0; j < kHalf; ++j) {
      v[j] = static_cast<float>((y[2 + j] & 0x0F) - 8) * d;
      v[j + kHalf] = static_cast<float>((y[2 + j] >> 4) - 8) * d;
    }
    std::copy_n(v.begin(), std::min(kGgmlBlock, n - b * kGgmlBlock), out + b * kGgmlBlock);
  }
}

// Per-tensor scaled minifloat: s = amax / max_finite, out = decode(encode(v / s)) * s.
template <class F>
void scaled_round_trip(std::span<const float> in, float amax, std::span<float> out) {
  float s = amax == 0.0f ? 1.0f : amax / float_of(static_cast<std::uint32_t>(F::kMaxBits));
  if (s == 0.0f)
    s = std::numeric_limits<float>::denorm_min();  // amax so small the scale underflows
  for (std::size_t i = 0; i < in.size(); ++i)
    out[i] = decode_mini<F>(encode_mini<F>(in[i] / s)) * s;
}

}  // namespace

// ---------------------------------------------------------------- elements

std::uint8_t encode_e4m3(float x) noexcept {
  return static_cast<std::uint8_t>(encode_mini<E4M3>(x));
}
float decode_e4m3(std::uint8_t code) noexcept { return decode_mini<E4M3>(code); }

void encode_e4m3(std::span<const float> in, std::span<std::uint8_t> out) {
  require_size(out.size(), in.size(), "encode_e4m3: output");
  const float* src = in.data();
  std::uint8_t* dst = out.data();
  for (std::size_t i = 0; i < in.size(); ++i)
    dst[i] = static_cast<std::uint8_t>(encode_mini<E4M3>(src[i]));
}

void decode_e4m3(std::span<const std::uint8_t> in, std::span<float> out) {
  require_size(out.size(), in.size(), "decode_e4m3: output");
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = kE4M3Table[in[i]];
}

std::uint8_t encode_e5m2(float x) noexcept {
  return static_cast<std::uint8_t>(encode_mini<E5M2>(x));
}
float decode_e5m2(std::uint8_t code) noexcept { return decode_mini<E5M2>(code); }
std::uint8_t encode_e2m3(float x) noexcept {
  return static_cast<std::uint8_t>(encode_mini<E2M3>(x));
}
float decode_e2m3(std::uint8_t code) noexcept { return decode_mini<E2M3>(code); }
std::uint8_t encode_e3m2(float x) noexcept {
  return static_cast<std::uint8_t>(encode_mini<E3M2>(x));
}
float decode_e3m2(std::uint8_t code) noexcept { return decode_mini<E3M2>(code); }
std::uint8_t encode_e2m1(float x) noexcept {
  // The comparison form used by NVFP4 (so the exhaustive tests cover it); NaN -> +-6.
  const std::uint32_t code =
      std::isnan(x) ? (E2M1::kMaxCode | ((bits_of(x) >> 31) << 3)) : encode_e2m1_no_nan(x);
  return static_cast<std::uint8_t>(code);
}
float decode_e2m1(std::uint8_t code) noexcept { return decode_mini<E2M1>(code); }

std::uint8_t encode_e8m0(float x) noexcept {
  const std::uint32_t bits = bits_of(x);
  if ((bits & kAbsMask) > static_cast<std::uint32_t>(kInfBits)) return 0xFF;  // NaN
  if ((bits >> 31) != 0 || bits <= 0x0040'0000u) return 0x00;  // <= 2^-127, 0, negative
  if (bits >= 0x7F00'0000u) return 0xFE;                       // >= 2^127, +Inf
  const std::uint32_t e = bits >> 23;
  if (e == 0) return 0x01;  // subnormal in (2^-127, 2^-126): up to 2^-126
  return static_cast<std::uint8_t>(e + ((bits & 0x007F'FFFFu) != 0 ? 1 : 0));
}

float decode_e8m0(std::uint8_t code) noexcept {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return pow2f(static_cast<int>(code) - 127);
}

std::uint8_t encode_ue4m3(float x) noexcept {
  return static_cast<std::uint8_t>(encode_mini<E4M3>(std::fabs(x)) & 0x7F);
}
float decode_ue4m3(std::uint8_t code) noexcept { return kE4M3Table[code & 0x7F]; }

std::uint16_t float_to_half(float x) noexcept {
  const std::uint32_t bits = bits_of(x);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000);
  const std::uint32_t a = bits & kAbsMask;
  if (a > static_cast<std::uint32_t>(kInfBits))  // NaN: quiet, keep the top payload bits
    return static_cast<std::uint16_t>(sign | 0x7E00 | ((a >> 13) & 0x3FF));
  std::uint32_t h = 0;
  if (a < 0x3880'0000u) {           // below 2^-14: subnormal (or zero), RNE by the FPU
    constexpr float kMagic = 0.5f;  // ulp 2^-24
    h = bits_of(float_of(a) + kMagic) - bits_of(kMagic);
  } else {
    const std::uint32_t t = a - (112u << 23);  // rebias 127 -> 15
    h = (t + 0x0FFF + ((t >> 13) & 1)) >> 13;
    h = std::min(h, 0x7C00u);  // overflow (and Inf) -> Inf
  }
  return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t e = (h >> 10) & 0x1F;
  const std::uint32_t m = h & 0x3FF;
  if (e == 0x1F) return float_of(sign | 0x7F80'0000u | (m << 13));
  if (e == 0) {
    const float mag = static_cast<float>(m) * 0x1p-24f;
    return float_of(sign | bits_of(mag));
  }
  return float_of(sign | ((e + 112) << 23) | (m << 13));
}

std::uint16_t float_to_bf16(float x) noexcept {
  const std::uint32_t bits = bits_of(x);
  if ((bits & kAbsMask) > static_cast<std::uint32_t>(kInfBits))
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040);
  return static_cast<std::uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

float bf16_to_float(std::uint16_t b) noexcept {
  return float_of(static_cast<std::uint32_t>(b) << 16);
}

// ---------------------------------------------------------------- MX

MxTensor quantize_mx(std::span<const float> in, MxElement element) {
  MxTensor t;
  t.element = element;
  t.size = in.size();
  const std::size_t blocks = blocks_of(in.size(), kMxBlock);
  t.codes.assign(blocks * kMxBlock, 0);
  t.scales.assign(blocks, 0);
  with_mx_element(element, [&]<class F>(F) {
    mx_quantize_span<F>(in.data(), in.size(), t.codes.data(), t.scales.data());
  });
  return t;
}

void dequantize(const MxTensor& t, std::span<float> out) {
  require_size(out.size(), t.size, "dequantize(MxTensor): output");
  const std::size_t blocks = blocks_of(t.size, kMxBlock);
  require_size(t.codes.size(), blocks * kMxBlock, "dequantize(MxTensor): codes");
  require_size(t.scales.size(), blocks, "dequantize(MxTensor): scales");
  with_mx_element(t.element, [&]<class F>(F) {
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t i = b * kMxBlock;
      mx_decode_block<F>(t.codes.data() + i, t.scales[b], out.data() + i,
                         std::min(kMxBlock, t.size - i));
    }
  });
}

// ---------------------------------------------------------------- NVFP4

Nvfp4Tensor quantize_nvfp4(std::span<const float> in) {
  Nvfp4Tensor t;
  t.size = in.size();
  const std::size_t blocks = blocks_of(in.size(), kNvfp4Block);
  // One pass for the block maxima, which also give the tensor max and the
  // NaN / Inf check (their bit patterns compare above every finite value).
  std::vector<float> amax(blocks);
  const std::size_t full = in.size() / kNvfp4Block;
  std::int32_t tensor_amax = 0;
  for (std::size_t b = 0; b < full; ++b) {
    const std::int32_t m = amax_bits(in.data() + b * kNvfp4Block, kNvfp4Block);
    amax[b] = float_of(static_cast<std::uint32_t>(m));
    tensor_amax = std::max(tensor_amax, m);
  }
  if (full < blocks) {
    const std::int32_t m =
        amax_bits(in.data() + full * kNvfp4Block, in.size() - full * kNvfp4Block);
    amax[full] = float_of(static_cast<std::uint32_t>(m));
    tensor_amax = std::max(tensor_amax, m);
  }
  require_finite_amax(tensor_amax, "quantize_nvfp4");
  t.tensor_scale = nvfp4_tensor_scale(float_of(static_cast<std::uint32_t>(tensor_amax)));
  t.codes.resize(blocks * kNvfp4Block);
  t.block_scales.resize(blocks);
  nvfp4_blocks(in.data(), in.size(), amax.data(), t.tensor_scale, t.codes.data(),
               t.block_scales.data());
  return t;
}

void dequantize(const Nvfp4Tensor& t, std::span<float> out) {
  require_size(out.size(), t.size, "dequantize(Nvfp4Tensor): output");
  const std::size_t blocks = blocks_of(t.size, kNvfp4Block);
  require_size(t.codes.size(), blocks * kNvfp4Block, "dequantize(Nvfp4Tensor): codes");
  require_size(t.block_scales.size(), blocks, "dequantize(Nvfp4Tensor): block_scales");
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t i = b * kNvfp4Block;
    nvfp4_decode_block(t.codes.data() + i, t.block_scales[b], t.tensor_scale, out.data() + i,
                       std::min(kNvfp4Block, t.size - i));
  }
}

// ---------------------------------------------------------------- INT8

Int8Tensor quantize_int8(std::span<const float> in, std::size_t rows, std::size_t cols,
                         Int8Granularity granularity) {
  require_size(in.size(), checked_product(rows, cols, "quantize_int8"), "quantize_int8: input");
  Int8Tensor t;
  t.rows = rows;
  t.cols = cols;
  t.q.resize(in.size());
  if (granularity == Int8Granularity::kPerTensor) {
    t.scales.push_back(int8_scale(checked_amax(in, "quantize_int8")));
    int8_row(in.data(), in.size(), t.scales[0], t.q.data());
    return t;
  }
  checked_amax(in, "quantize_int8");
  t.scales.resize(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = in.data() + r * cols;
    t.scales[r] = int8_scale(float_of(static_cast<std::uint32_t>(amax_bits(row, cols))));
    int8_row(row, cols, t.scales[r], t.q.data() + r * cols);
  }
  return t;
}

void dequantize(const Int8Tensor& t, std::span<float> out) {
  const std::size_t n = checked_product(t.rows, t.cols, "dequantize(Int8Tensor)");
  require_size(out.size(), n, "dequantize(Int8Tensor): output");
  require_size(t.q.size(), n, "dequantize(Int8Tensor): q");
  if (t.scales.size() == 1) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(t.q[i]) * t.scales[0];
    return;
  }
  require_size(t.scales.size(), t.rows, "dequantize(Int8Tensor): scales");
  for (std::size_t r = 0; r < t.rows; ++r)
    for (std::size_t c = 0; c < t.cols; ++c)
      out[r * t.cols + c] = static_cast<float>(t.q[r * t.cols + c]) * t.scales[r];
}

// ---------------------------------------------------------------- INT4

Int4Tensor quantize_int4(std::span<const float> in, std::size_t rows, std::size_t cols,
                         Int4Scheme scheme, int group) {
  require_size(in.size(), checked_product(rows, cols, "quantize_int4"), "quantize_int4: input");
  if (group < 1)
    throw InvalidArgument("quantize_int4: group must be >= 1, got " + std::to_string(group));
  checked_amax(in, "quantize_int4");
  Int4Tensor t;
  t.rows = rows;
  t.cols = cols;
  t.symmetric = scheme == Int4Scheme::kSymmetric;
  t.group = group;
  const auto g = static_cast<std::size_t>(group);
  const std::size_t groups_per_row = blocks_of(cols, g);
  t.q.resize(in.size());
  t.scales.resize(rows * groups_per_row);
  t.zeros.resize(rows * groups_per_row);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t k = 0; k < groups_per_row; ++k) {
      const std::size_t i = r * cols + k * g;
      const Int4Group res =
          int4_group(in.data() + i, std::min(g, cols - k * g), t.symmetric, t.q.data() + i);
      t.scales[r * groups_per_row + k] = res.scale;
      t.zeros[r * groups_per_row + k] = res.zero;
    }
  }
  return t;
}

void dequantize(const Int4Tensor& t, std::span<float> out) {
  const std::size_t n = checked_product(t.rows, t.cols, "dequantize(Int4Tensor)");
  require_size(out.size(), n, "dequantize(Int4Tensor): output");
  require_size(t.q.size(), n, "dequantize(Int4Tensor): q");
  if (t.group < 1) throw InvalidArgument("dequantize(Int4Tensor): group must be >= 1");
  const auto g = static_cast<std::size_t>(t.group);
  const std::size_t groups_per_row = blocks_of(t.cols, g);
  require_size(t.scales.size(), t.rows * groups_per_row, "dequantize(Int4Tensor): scales");
  require_size(t.zeros.size(), t.rows * groups_per_row, "dequantize(Int4Tensor): zeros");
  for (std::size_t r = 0; r < t.rows; ++r) {
    for (std::size_t c = 0; c < t.cols; ++c) {
      const std::size_t k = r * groups_per_row + c / g;
      const std::size_t i = r * t.cols + c;
      out[i] =
          static_cast<float>(static_cast<int>(t.q[i]) - static_cast<int>(t.zeros[k])) * t.scales[k];
    }
  }
}

// ---------------------------------------------------------------- ggml

std::vector<std::uint8_t> quantize_q8_0(std::span<const float> in) {
  checked_amax(in, "quantize_q8_0");
  std::vector<std::uint8_t> out(blocks_of(in.size(), kGgmlBlock) * kQ8_0BlockBytes);
  ggml_quantize_span(in.data(), in.size(), kQ8_0BlockBytes, q8_0_block, out.data());
  return out;
}

std::vector<std::uint8_t> quantize_q4_0(std::span<const float> in) {
  checked_amax(in, "quantize_q4_0");
  std::vector<std::uint8_t> out(blocks_of(in.size(), kGgmlBlock) * kQ4_0BlockBytes);
  ggml_quantize_span(in.data(), in.size(), kQ4_0BlockBytes, q4_0_block, out.data());
  return out;
}

void dequantize_q8_0(std::span<const std::uint8_t> blocks, std::span<float> out) {
  require_size(blocks.size(), blocks_of(out.size(), kGgmlBlock) * kQ8_0BlockBytes,
               "dequantize_q8_0: blocks");
  q8_0_decode(blocks.data(), out.data(), out.size());
}

void dequantize_q4_0(std::span<const std::uint8_t> blocks, std::span<float> out) {
  require_size(blocks.size(), blocks_of(out.size(), kGgmlBlock) * kQ4_0BlockBytes,
               "dequantize_q4_0: blocks");
  q4_0_decode(blocks.data(), out.data(), out.size());
}

// ---------------------------------------------------------------- round trip

void round_trip(Format f, std::span<const float> in, std::size_t rows, std::size_t cols,
                std::span<float> out) {
  require_size(in.size(), checked_product(rows, cols, "round_trip"), "round_trip: input");
  require_size(out.size(), in.size(), "round_trip: output");
  const float amax = checked_amax(in, "round_trip");
  const std::size_t n = in.size();
  auto per_row = [&](auto&& fn) {
    for (std::size_t r = 0; r < rows; ++r) fn(in.data() + r * cols, out.data() + r * cols);
  };
  switch (f) {
    case Format::kFp32:
      std::copy(in.begin(), in.end(), out.begin());
      return;
    case Format::kTf32:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t b = bits_of(in[i]);
        out[i] = float_of((b + 0x0FFF + ((b >> 13) & 1)) & ~0x1FFFu);
      }
      return;
    case Format::kBf16:
      for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_float(float_to_bf16(in[i]));
      return;
    case Format::kFp16:
      for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(float_to_half(in[i]));
      return;
    case Format::kFp8:
      scaled_round_trip<E4M3>(in, amax, out);
      return;
    case Format::kFp8E5M2:
      scaled_round_trip<E5M2>(in, amax, out);
      return;
    case Format::kFp6:
      scaled_round_trip<E3M2>(in, amax, out);
      return;
    case Format::kMxfp8:
      per_row([&](const float* x, float* y) { mx_round_trip_row<E4M3>(x, cols, y); });
      return;
    case Format::kMxfp6:
      per_row([&](const float* x, float* y) { mx_round_trip_row<E3M2>(x, cols, y); });
      return;
    case Format::kMxfp4:
      per_row([&](const float* x, float* y) { mx_round_trip_row<E2M1>(x, cols, y); });
      return;
    case Format::kNvfp4: {
      const float ts = nvfp4_tensor_scale(amax);
      const std::size_t blocks = blocks_of(cols, kNvfp4Block);
      std::vector<float> block_amax(blocks);
      std::vector<std::uint8_t> codes(blocks * kNvfp4Block), scales(blocks);
      per_row([&](const float* x, float* y) {
        nvfp4_block_amax(x, cols, block_amax.data());
        nvfp4_blocks(x, cols, block_amax.data(), ts, codes.data(), scales.data());
        for (std::size_t b = 0; b < blocks; ++b)
          nvfp4_decode_block(codes.data() + b * kNvfp4Block, scales[b], ts, y + b * kNvfp4Block,
                             std::min(kNvfp4Block, cols - b * kNvfp4Block));
      });
      return;
    }
    case Format::kInt8: {
      const Int8Tensor t = quantize_int8(in, rows, cols, Int8Granularity::kPerChannel);
      dequantize(t, out);
      return;
    }
    case Format::kInt4: {
      const Int4Tensor t =
          quantize_int4(in, rows, cols, Int4Scheme::kAsymmetric, kInt4DefaultGroup);
      dequantize(t, out);
      return;
    }
    case Format::kQ8_0:
    case Format::kQ4_0: {
      const bool q8 = f == Format::kQ8_0;
      const std::size_t bytes = q8 ? kQ8_0BlockBytes : kQ4_0BlockBytes;
      std::vector<std::uint8_t> buf(blocks_of(cols, kGgmlBlock) * bytes);
      per_row([&](const float* x, float* y) {
        ggml_quantize_span(x, cols, bytes, q8 ? q8_0_block : q4_0_block, buf.data());
        if (q8)
          q8_0_decode(buf.data(), y, cols);
        else
          q4_0_decode(buf.data(), y, cols);
      });
      return;
    }
    case Format::kQ6_K:
    case Format::kQ5_K_M:
    case Format::kQ4_K_M:
      throw Unsupported(std::string(format_id(f)) + ": round trip not implemented");
  }
  throw InvalidArgument("round_trip: unknown format " + std::to_string(static_cast<int>(f)));
}

// ---------------------------------------------------------------- metrics

ErrorMetrics compare(std::span<const float> reference, std::span<const float> approx) {
  require_size(approx.size(), reference.size(), "compare: approx");
  double sig = 0, err = 0, max_abs = 0, dot = 0, norm_a = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double r = reference[i];
    const double a = approx[i];
    const double d = r - a;
    sig += r * r;
    err += d * d;
    dot += r * a;
    norm_a += a * a;
    const double ad = std::fabs(d);
    if (ad > max_abs || std::isnan(ad)) max_abs = ad;  // a NaN sticks
  }
  ErrorMetrics m;
  m.mse = reference.empty() ? 0.0 : err / static_cast<double>(reference.size());
  m.max_abs = max_abs;
  if (err == 0)
    m.sqnr_db = std::numeric_limits<double>::infinity();
  else if (sig == 0)
    m.sqnr_db = -std::numeric_limits<double>::infinity();
  else
    m.sqnr_db = 10.0 * std::log10(sig / err);
  if (sig == 0 && norm_a == 0)
    m.cosine = 1.0;
  else if (sig == 0 || norm_a == 0)
    m.cosine = 0.0;
  else
    m.cosine = dot / (std::sqrt(sig) * std::sqrt(norm_a));
  return m;
}

}  // namespace roofline::numerics
