#include "roofline/numerics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <vector>

#include "roofline/error.h"
#include "roofline/formats.h"

namespace roofline::numerics {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---------------------------------------------------------------- helpers

// Deterministic N(0, 1) samples: 64-bit LCG (Knuth's MMIX constants) feeding
// Box-Muller. The same seed gives the same data on every platform.
std::vector<float> gaussian(std::size_t n, std::uint64_t seed = 12345) {
  std::uint64_t s = seed;
  auto uniform = [&s] {  // in (0, 1]
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return (static_cast<double>(s >> 11) + 1.0) * 0x1p-53;
  };
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double t = 2.0 * 3.14159265358979323846 * uniform();
    out[i] = static_cast<float>(r * std::cos(t));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(t));
  }
  return out;
}

double sqnr_of_mx(const std::vector<float>& x, MxElement e) {
  const MxTensor t = quantize_mx(x, e);
  std::vector<float> back(x.size());
  dequantize(t, back);
  return compare(x, back).sqnr_db;
}

double sqnr_of_round_trip(Format f, const std::vector<float>& x, std::size_t rows,
                          std::size_t cols) {
  std::vector<float> back(x.size());
  round_trip(f, x, rows, cols, back);
  return compare(x, back).sqnr_db;
}

// One small float format, for the generic exhaustive and rounding tests.
struct SmallFormat {
  const char* name;
  std::uint8_t (*encode)(float);
  float (*decode)(std::uint8_t);
  int bits;               // code width including the sign (8 for ue4m3: sign bit unused)
  std::uint8_t max_code;  // largest finite positive code
  bool has_sign;          // false for ue4m3
};

const SmallFormat kSmallFormats[] = {
    {"e4m3", encode_e4m3, decode_e4m3, 8, 0x7E, true},
    {"e5m2", encode_e5m2, decode_e5m2, 8, 0x7B, true},
    {"e3m2", encode_e3m2, decode_e3m2, 6, 0x1F, true},
    {"e2m3", encode_e2m3, decode_e2m3, 6, 0x1F, true},
    {"e2m1", encode_e2m1, decode_e2m1, 4, 0x07, true},
    {"ue4m3", encode_ue4m3, decode_ue4m3, 8, 0x7E, false},
};

// ---------------------------------------------------------------- element codecs

// Every code decodes and re-encodes to itself, except NaN codes (-> a NaN
// code) and e5m2 infinities (-> +-max under satfinite).
TEST(Numerics, EveryCodeOfEverySmallFormatRoundTrips) {
  for (const SmallFormat& f : kSmallFormats) {
    const int codes = f.has_sign ? 1 << f.bits : 128;
    const std::uint8_t sign_bit = static_cast<std::uint8_t>(1u << (f.bits - 1));
    for (int c = 0; c < codes; ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      const float v = f.decode(code);
      const std::uint8_t back = f.encode(v);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(f.decode(back))) << f.name << " code " << c;
      } else if (std::isinf(v)) {
        EXPECT_EQ(back, v > 0 ? f.max_code : f.max_code | sign_bit) << f.name << " code " << c;
      } else {
        EXPECT_EQ(back, code) << f.name << " code " << c << " value " << v;
      }
    }
  }
}

// Values from the OCP FP8 / MX tables (formats-and-quality.md section 1a).
TEST(Numerics, KnownElementValues) {
  EXPECT_EQ(decode_e4m3(0x7E), 448.0f);  // S.1111.110 = 1.75 * 2^(15-7)
  EXPECT_EQ(decode_e4m3(0xFE), -448.0f);
  EXPECT_EQ(decode_e4m3(0x08), 0x1p-6f);  // min normal: exponent field 1
  EXPECT_EQ(decode_e4m3(0x01), 0x1p-9f);  // min subnormal: 1/8 * 2^-6
  EXPECT_EQ(decode_e4m3(0x38), 1.0f);     // 0.0111.000
  EXPECT_TRUE(std::isnan(decode_e4m3(0x7F)));
  EXPECT_TRUE(std::isnan(decode_e4m3(0xFF)));
  EXPECT_EQ(decode_e5m2(0x7B), 57344.0f);  // 0.11110.11 = 1.75 * 2^15
  EXPECT_EQ(decode_e5m2(0x7C), kInf);
  EXPECT_EQ(decode_e5m2(0xFC), -kInf);
  EXPECT_EQ(decode_e5m2(0x01), 0x1p-16f);
  EXPECT_EQ(decode_e5m2(0x3C), 1.0f);  // 0.01111.00
  EXPECT_TRUE(std::isnan(decode_e5m2(0x7D)));
  EXPECT_EQ(decode_e3m2(0x1F), 28.0f);    // 0.111.11 = 1.75 * 2^(7-3)
  EXPECT_EQ(decode_e3m2(0x01), 0.0625f);  // 1/4 * 2^-2
  EXPECT_EQ(decode_e3m2(0x04), 0.25f);    // min normal
  EXPECT_EQ(decode_e2m3(0x1F), 7.5f);     // 0.11.111 = 1.875 * 2^2
  EXPECT_EQ(decode_e2m3(0x01), 0.125f);   // 1/8 * 2^0
  EXPECT_EQ(decode_e2m3(0x3F), -7.5f);
  const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(decode_e2m1(static_cast<std::uint8_t>(c)), e2m1[c]) << c;
    EXPECT_EQ(decode_e2m1(static_cast<std::uint8_t>(c | 8)), -e2m1[c]) << c;
  }
  // Decoders ignore bits above the code width.
  EXPECT_EQ(decode_e2m1(0xF7), 6.0f);
  EXPECT_EQ(decode_e2m1(0x1F), -6.0f);
  EXPECT_EQ(decode_e3m2(0xDF), 28.0f);
  EXPECT_EQ(decode_e3m2(0xFF), -28.0f);
  EXPECT_EQ(decode_ue4m3(0xFE), 448.0f);
  // The format table and the codecs agree on max finite and min positive.
  EXPECT_EQ(format_info(Format::kFp8).max_finite, decode_e4m3(0x7E));
  EXPECT_EQ(format_info(Format::kFp8).min_positive, decode_e4m3(0x01));
  EXPECT_EQ(format_info(Format::kFp8E5M2).max_finite, decode_e5m2(0x7B));
  EXPECT_EQ(format_info(Format::kFp8E5M2).min_positive, decode_e5m2(0x01));
  EXPECT_EQ(format_info(Format::kFp6).max_finite, decode_e3m2(0x1F));
  EXPECT_EQ(format_info(Format::kFp6).min_positive, decode_e3m2(0x01));
  EXPECT_EQ(format_info(Format::kMxfp4).max_finite, decode_e2m1(0x07));
  EXPECT_EQ(format_info(Format::kNvfp4).min_positive, decode_e2m1(0x01));
}

TEST(Numerics, SpecialInputsSaturateOrBecomeNaNCodes) {
  EXPECT_EQ(encode_e4m3(-0.0f), 0x80);
  EXPECT_EQ(encode_e4m3(kNaN), 0x7F);
  EXPECT_EQ(encode_e4m3(-kNaN), 0xFF);
  EXPECT_EQ(encode_e4m3(kInf), 0x7E);  // satfinite
  EXPECT_EQ(encode_e4m3(-kInf), 0xFE);
  EXPECT_EQ(encode_e4m3(464.0f), 0x7E);  // tie between 448 and the would-be 480
  EXPECT_EQ(encode_e4m3(479.0f), 0x7E);
  EXPECT_EQ(encode_e5m2(kInf), 0x7B);
  EXPECT_EQ(encode_e5m2(-kInf), 0xFB);
  EXPECT_EQ(encode_e5m2(61440.0f), 0x7B);  // tie between 57344 and the would-be 65536
  EXPECT_TRUE(std::isnan(decode_e5m2(encode_e5m2(kNaN))));
  EXPECT_EQ(encode_e5m2(-kNaN) & 0x80, 0x80);
  // fp6 / fp4 have no NaN: the scalar encoders give the max-magnitude code.
  EXPECT_EQ(encode_e2m1(kNaN), 0x07);
  EXPECT_EQ(encode_e2m1(-kNaN), 0x0F);
  EXPECT_EQ(encode_e3m2(kNaN), 0x1F);
  EXPECT_EQ(encode_e2m3(-kInf), 0x3F);
  for (const SmallFormat& f : kSmallFormats) {
    const std::uint8_t sign_bit = static_cast<std::uint8_t>(1u << (f.bits - 1));
    EXPECT_EQ(f.encode(1e9f), f.max_code) << f.name;
    EXPECT_EQ(f.encode(std::numeric_limits<float>::max()), f.max_code) << f.name;
    if (f.has_sign) {
      EXPECT_EQ(f.encode(-1e9f), f.max_code | sign_bit) << f.name;
    }
    EXPECT_EQ(f.encode(0x1p-149f), 0) << f.name;  // far below half the min subnormal
  }
  // ue4m3 drops the sign.
  EXPECT_EQ(encode_ue4m3(-2.0f), encode_ue4m3(2.0f));
  EXPECT_EQ(encode_ue4m3(kNaN), 0x7F);
}

// Midpoints between adjacent representable values round to the even code;
// one float ulp either side goes to the nearer value. Covers the subnormal /
// normal boundary, the tie between 0 and the min subnormal, and the tie above
// the max (which saturates).
TEST(Numerics, MidpointsRoundToEvenAndNeighboursToNearest) {
  for (const SmallFormat& f : kSmallFormats) {
    const std::uint8_t sign_bit = static_cast<std::uint8_t>(1u << (f.bits - 1));
    for (int c = 0; c < f.max_code; ++c) {
      const auto lo_code = static_cast<std::uint8_t>(c);
      const auto hi_code = static_cast<std::uint8_t>(c + 1);
      const float lo = f.decode(lo_code);
      const float hi = f.decode(hi_code);
      const float mid = (lo + hi) / 2;
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(lo) + hi) / 2) << "inexact midpoint";
      const std::uint8_t even = (lo_code & 1) == 0 ? lo_code : hi_code;
      EXPECT_EQ(f.encode(mid), even) << f.name << " mid " << mid;
      EXPECT_EQ(f.encode(std::nextafter(mid, hi)), hi_code) << f.name << " above " << mid;
      EXPECT_EQ(f.encode(std::nextafter(mid, lo)), lo_code) << f.name << " below " << mid;
      if (f.has_sign) {
        EXPECT_EQ(f.encode(-mid), even | sign_bit) << f.name << " -mid " << mid;
        EXPECT_EQ(f.encode(-std::nextafter(mid, hi)), hi_code | sign_bit) << f.name;
      }
    }
    // Above the max: the would-be next value is max + (max - previous) (same binade).
    const float max = f.decode(f.max_code);
    const float step = max - f.decode(static_cast<std::uint8_t>(f.max_code - 1));
    EXPECT_EQ(f.encode(max + step / 2), f.max_code) << f.name;
    EXPECT_EQ(f.encode(max + step), f.max_code) << f.name;
  }
}

// Independent reference: the nearest finite value by exhaustive search over
// the codes (ties to the even code; beyond the max the max is nearest, which
// is satfinite), on 2^16 random floats per format spread over 2^-24..2^24.
TEST(Numerics, EncodersMatchBruteForceNearest) {
  std::uint64_t s = 42;
  auto next = [&s] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(s >> 32);
  };
  for (const SmallFormat& f : kSmallFormats) {
    const std::uint8_t sign_bit = static_cast<std::uint8_t>(1u << (f.bits - 1));
    for (int n = 0; n < (1 << 16); ++n) {
      const std::uint32_t r = next();
      const int exponent = static_cast<int>(r % 49) - 24;
      const float mag = std::ldexp(1.0f + static_cast<float>(next() >> 9) * 0x1p-23f, exponent);
      const float x = (r & 0x8000'0000u) ? -mag : mag;
      std::uint8_t best = 0;
      double best_d = std::numeric_limits<double>::infinity();
      for (int c = 0; c <= f.max_code; ++c) {
        const double d =
            std::fabs(static_cast<double>(mag) - f.decode(static_cast<std::uint8_t>(c)));
        if (d < best_d || (d == best_d && (c & 1) == 0)) {
          best_d = d;
          best = static_cast<std::uint8_t>(c);
        }
      }
      if (f.has_sign && x < 0) best |= sign_bit;
      ASSERT_EQ(f.encode(x), best) << f.name << " x = " << x;
    }
  }
}

// Hand-derived e2m1 ties (values 0, 0.5, 1, 1.5, 2, 3, 4, 6 = codes 0..7).
TEST(Numerics, E2M1TiesGoToEvenCodes) {
  EXPECT_EQ(encode_e2m1(0.25f), 0);  // 0 | 0.5: code 0 even
  EXPECT_EQ(encode_e2m1(0.75f), 2);  // 0.5 | 1: code 2 (1.0) even
  EXPECT_EQ(encode_e2m1(1.25f), 2);  // 1 | 1.5 -> 1
  EXPECT_EQ(encode_e2m1(1.75f), 4);  // 1.5 | 2 -> 2
  EXPECT_EQ(encode_e2m1(2.5f), 4);   // 2 | 3 -> 2
  EXPECT_EQ(encode_e2m1(3.5f), 6);   // 3 | 4 -> 4
  EXPECT_EQ(encode_e2m1(5.0f), 6);   // 4 | 6 -> 4
  EXPECT_EQ(encode_e2m1(5.0001f), 7);
  EXPECT_EQ(encode_e2m1(-5.0f), 14);
  // e4m3 at the subnormal/normal boundary: 7/8 * 2^-6 | 2^-6 -> 2^-6 (code 8).
  EXPECT_EQ(encode_e4m3(7.5f * 0x1p-9f), 0x08);
  EXPECT_EQ(encode_e4m3(0x1p-10f), 0x00);  // 0 | 2^-9 -> 0
}

TEST(Numerics, E8M0RoundsTowardPlusInfinity) {
  for (int c = 0; c < 255; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    EXPECT_EQ(encode_e8m0(decode_e8m0(code)), code) << c;
    EXPECT_EQ(decode_e8m0(code), std::ldexp(1.0f, c - 127)) << c;
  }
  EXPECT_TRUE(std::isnan(decode_e8m0(0xFF)));
  EXPECT_EQ(encode_e8m0(3.0f), 129);   // -> 4 = 2^2
  EXPECT_EQ(encode_e8m0(0.75f), 127);  // -> 1
  EXPECT_EQ(encode_e8m0(std::nextafter(1.0f, 2.0f)), 128);
  EXPECT_EQ(encode_e8m0(8e-39f), 1);     // in (2^-127, 2^-126): -> 2^-126
  EXPECT_EQ(encode_e8m0(0x1p-130f), 0);  // below the smallest: 2^-127
  EXPECT_EQ(encode_e8m0(0.0f), 0);
  EXPECT_EQ(encode_e8m0(-1.0f), 0);
  EXPECT_EQ(encode_e8m0(0x1.8p127f), 0xFE);  // satfinite
  EXPECT_EQ(encode_e8m0(kInf), 0xFE);
  EXPECT_EQ(encode_e8m0(kNaN), 0xFF);
}

// ---------------------------------------------------------------- fp16 / bf16

TEST(Numerics, EveryHalfCodeRoundTrips) {
  for (std::uint32_t c = 0; c < 65536; ++c) {
    const auto h = static_cast<std::uint16_t>(c);
    const float v = half_to_float(h);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(v)))) << c;
      EXPECT_EQ(float_to_half(v) & 0x8000, h & 0x8000) << c;
    } else {
      ASSERT_EQ(float_to_half(v), h) << c << " value " << v;
    }
  }
}

TEST(Numerics, HalfRoundsToNearestEvenAndOverflowsToInf) {
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(half_to_float(0x0400), 0x1p-14f);
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);  // below the midpoint 65520
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // tie: 0x7BFF is odd -> Inf
  EXPECT_EQ(float_to_half(1e6f), 0x7C00);
  EXPECT_EQ(float_to_half(-kInf), 0xFC00);
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3C00);      // 1 | 1+2^-10: even
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3C02);  // 1+2^-10 | 1+2^-9: even
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);             // 0 | 2^-24: even
  EXPECT_EQ(float_to_half(3 * 0x1p-25f), 0x0002);         // 2^-24 | 2^-23: even
  EXPECT_EQ(float_to_half(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(kNaN) & 0x7E00, 0x7E00);  // quiet NaN
}

#if defined(__FLT16_MAX__)
// Cross-check against the compiler's own float -> _Float16 conversion (RNE)
// on a spread of 2^20 float bit patterns covering every exponent.
TEST(Numerics, HalfMatchesCompilerFloat16) {
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4093) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(b));
    if (std::isnan(x)) continue;
    const auto ref = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
    ASSERT_EQ(float_to_half(x), ref) << x;
  }
}
#endif

TEST(Numerics, Bf16RoundsToNearestEvenAndKeepsNaN) {
  for (std::uint32_t c = 0; c < 65536; ++c) {
    const auto b = static_cast<std::uint16_t>(c);
    const float v = bf16_to_float(b);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(v)))) << c;
    } else {
      ASSERT_EQ(float_to_bf16(v), b) << c;
    }
  }
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3F80);      // tie: 0x3F80 even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);  // tie: 0x3F82 even
  EXPECT_EQ(float_to_bf16(std::nextafter(1.0f + 0x1p-8f, 2.0f)), 0x3F81);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // overflows to Inf
  // A signalling NaN (quiet bit clear) comes back quiet, not as Inf.
  const std::uint16_t snan = float_to_bf16(std::bit_cast<float>(0x7F80'0001u));
  EXPECT_EQ(snan & 0x7FC0, 0x7FC0);
}

// ---------------------------------------------------------------- MX

// OCP MX example: amax 7 in MXFP4: shared_exp = floor(log2 7) - 2 = 0, X = 1,
// 7 / 1 = 7 saturates to 6.
TEST(Numerics, MxFp4ClipsBlockMaxSevenToSix) {
  std::vector<float> x(32, 0.0f);
  x[0] = 7.0f;
  x[1] = 1.0f;
  x[2] = -3.0f;
  const MxTensor t = quantize_mx(x, MxElement::kE2M1);
  ASSERT_EQ(t.scales.size(), 1u);
  EXPECT_EQ(t.scales[0], 127);  // 2^0
  EXPECT_EQ(t.codes[0], 0x07);  // 6
  EXPECT_EQ(t.codes[1], 0x02);  // 1
  EXPECT_EQ(t.codes[2], 0x0D);  // -3: sign | 101
  std::vector<float> back(32);
  dequantize(t, back);
  EXPECT_EQ(back[0], 6.0f);
  EXPECT_EQ(back[1], 1.0f);
  EXPECT_EQ(back[2], -3.0f);
}

// MXFP8 e4m3, amax 1: shared_exp = 0 - 8 = -8 (code 119), X = 2^-8.
// 0.3 / X = 76.8 lies in [64, 128) where the step is 8: -> 80 (code 0x6A:
// exponent 6 + 7 = 13, mantissa 010) -> 80 * 2^-8 = 0.3125.
TEST(Numerics, MxFp8HandExample) {
  std::vector<float> x = {1.0f, 0.3f, -0.5f};
  const MxTensor t = quantize_mx(x, MxElement::kE4M3);
  ASSERT_EQ(t.codes.size(), 32u);  // padded to one block
  EXPECT_EQ(t.scales[0], 119);
  EXPECT_EQ(t.codes[0], 0x78);  // 256 = 2^8: exponent 15
  EXPECT_EQ(t.codes[1], 0x6A);
  EXPECT_EQ(t.codes[2], 0xF0);  // -128: exponent 14
  for (std::size_t i = 3; i < 32; ++i) EXPECT_EQ(t.codes[i], 0) << i;
  std::vector<float> back(3);
  dequantize(t, back);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 0.3125f);
  EXPECT_EQ(back[2], -0.5f);
}

TEST(Numerics, MxAllZeroBlockDequantizesToZeros) {
  std::vector<float> x(64, 0.0f);
  for (std::size_t i = 32; i < 64; ++i) x[i] = static_cast<float>(i);
  for (MxElement e :
       {MxElement::kE4M3, MxElement::kE5M2, MxElement::kE3M2, MxElement::kE2M3, MxElement::kE2M1}) {
    const MxTensor t = quantize_mx(x, e);
    EXPECT_EQ(t.scales[0], 0);  // documented choice: 2^-127
    std::vector<float> back(64, 1.0f);
    dequantize(t, back);
    for (std::size_t i = 0; i < 32; ++i) EXPECT_EQ(back[i], 0.0f) << i;
  }
}

// The scale is the power of two that puts the block max in the top binade
// of the element: amax / X in [2^emax, 2^(emax+1)).
TEST(Numerics, MxScaleFollowsSharedExponentRule) {
  std::vector<float> x = gaussian(32 * 64);
  for (std::size_t b = 0; b < 64; ++b)
    for (std::size_t i = 0; i < 32; ++i)
      x[b * 32 + i] *= std::ldexp(1.0f, static_cast<int>(b) - 32);
  const struct {
    MxElement e;
    int emax;
  } kCases[] = {{MxElement::kE4M3, 8},
                {MxElement::kE5M2, 15},
                {MxElement::kE3M2, 4},
                {MxElement::kE2M3, 2},
                {MxElement::kE2M1, 2}};
  for (const auto& c : kCases) {
    const MxTensor t = quantize_mx(x, c.e);
    ASSERT_EQ(t.scales.size(), 64u);
    for (std::size_t b = 0; b < 64; ++b) {
      float amax = 0;
      for (std::size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
      const double ratio = amax / static_cast<double>(decode_e8m0(t.scales[b]));
      EXPECT_GE(ratio, std::ldexp(1.0, c.emax)) << b;
      EXPECT_LT(ratio, std::ldexp(1.0, c.emax + 1)) << b;
    }
  }
}

// SQNR on 64K N(0,1) samples (gaussian(1 << 16), seed 12345). Measured with
// this code: e4m3 30.63 dB, e5m2 25.37, e3m2 25.37, e2m3 30.91, e2m1 18.77
// (MXFP4), NVFP4 20.40. The SQNR follows the mantissa bits (~6 dB per bit;
// e5m2 = e3m2 and e4m3 ~ e2m3 because the MX scale keeps values out of the
// subnormals). Bounds sit about 1 dB below the measurements.
constexpr double kMinSqnrMxE4M3 = 29.5;
constexpr double kMinSqnrMxE5M2 = 24.5;
constexpr double kMinSqnrMxE3M2 = 24.5;
constexpr double kMinSqnrMxE2M3 = 30.0;
constexpr double kMinSqnrMxE2M1 = 18.0;
constexpr double kMinSqnrNvfp4 = 19.5;
// NVFP4's margin over MXFP4 on the same data (measured 1.63 dB).
constexpr double kMinNvfp4GainOverMxfp4Db = 1.0;

TEST(Numerics, MxSqnrOnGaussianData) {
  const std::vector<float> x = gaussian(1 << 16);
  EXPECT_GT(sqnr_of_mx(x, MxElement::kE4M3), kMinSqnrMxE4M3);
  EXPECT_GT(sqnr_of_mx(x, MxElement::kE5M2), kMinSqnrMxE5M2);
  EXPECT_GT(sqnr_of_mx(x, MxElement::kE3M2), kMinSqnrMxE3M2);
  EXPECT_GT(sqnr_of_mx(x, MxElement::kE2M3), kMinSqnrMxE2M3);
  EXPECT_GT(sqnr_of_mx(x, MxElement::kE2M1), kMinSqnrMxE2M1);
  // More mantissa bits always help on the same data.
  EXPECT_GT(sqnr_of_mx(x, MxElement::kE2M3), sqnr_of_mx(x, MxElement::kE3M2));
  EXPECT_GT(sqnr_of_mx(x, MxElement::kE3M2), sqnr_of_mx(x, MxElement::kE2M1));
}

TEST(Numerics, MxPadsThePartialLastBlock) {
  const std::vector<float> x = gaussian(40);
  const MxTensor t = quantize_mx(x, MxElement::kE2M3);
  EXPECT_EQ(t.size, 40u);
  EXPECT_EQ(t.codes.size(), 64u);
  EXPECT_EQ(t.scales.size(), 2u);
  for (std::size_t i = 40; i < 64; ++i) EXPECT_EQ(t.codes[i], 0) << i;
  std::vector<float> back(40);
  dequantize(t, back);
  EXPECT_GT(compare(x, back).sqnr_db, 29.0);  // measured 30.48 dB
  std::vector<float> wrong(41);
  EXPECT_THROW(dequantize(t, wrong), InvalidArgument);
  MxTensor broken = t;
  broken.scales.pop_back();
  EXPECT_THROW(dequantize(broken, back), InvalidArgument);
  EXPECT_TRUE(quantize_mx({}, MxElement::kE2M1).codes.empty());
}

// ---------------------------------------------------------------- NVFP4

TEST(Numerics, Nvfp4TensorAndBlockScales) {
  // amax 10: tensor_scale = 10 / 2688 in float.
  std::vector<float> x(32, 0.0f);
  x[0] = 10.0f;
  x[16] = 1.0f;
  const Nvfp4Tensor t = quantize_nvfp4(x);
  EXPECT_EQ(t.tensor_scale, 10.0f / 2688.0f);
  ASSERT_EQ(t.block_scales.size(), 2u);
  EXPECT_EQ(t.block_scales[0], encode_ue4m3(10.0f / 6.0f / t.tensor_scale));  // ~448
  EXPECT_EQ(t.block_scales[0], 0x7E);
  // 1 / 6 / (10/2688) = 44.8 -> ue4m3 step 4 in [32, 64): 44 = 1.375 * 2^5
  // (code 0x63: exponent field 5 + 7 = 12, mantissa 011)
  EXPECT_EQ(t.block_scales[1], 0x63);
  EXPECT_EQ(decode_ue4m3(0x63), 44.0f);
}

// Block amax 5 with tensor_scale 1 (tensor amax 2688): 5/6 = 0.833 -> ue4m3
// in [0.5, 1) has step 1/16: 13.33/16 -> 13/16 = 0.8125 (code 0x35: exponent
// 6, mantissa 101). 5 / 0.8125 = 6.15 saturates to 6 -> 4.875: the block max
// can clip because the block scale rounds down.
TEST(Numerics, Nvfp4BlockScaleRoundingCanClipTheMax) {
  std::vector<float> x(32, 0.0f);
  x[0] = 2688.0f;
  x[16] = 5.0f;
  x[17] = 0.8125f;
  const Nvfp4Tensor t = quantize_nvfp4(x);
  EXPECT_EQ(t.tensor_scale, 1.0f);
  EXPECT_EQ(t.block_scales[1], 0x35);
  EXPECT_EQ(t.codes[16], 0x07);
  EXPECT_EQ(t.codes[17], 0x02);
  std::vector<float> back(32);
  dequantize(t, back);
  EXPECT_EQ(back[0], 2688.0f);
  EXPECT_EQ(back[16], 4.875f);
  EXPECT_EQ(back[17], 0.8125f);
}

// With tensor amax 2688 (tensor_scale 1) and each block's amax = 6 * S for a
// ue4m3 value S, every e2m1 value times S comes back exactly.
TEST(Numerics, Nvfp4ExactForRepresentableValues) {
  const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  const float block_scale[4] = {448.0f, 1.0f, 0.5f, 0.0078125f};
  std::vector<float> x;
  for (float s : block_scale)
    for (int i = 0; i < 16; ++i) x.push_back((i % 2 ? -1.0f : 1.0f) * e2m1[i % 8] * s);
  for (std::size_t b = 0; b < 4; ++b) x[b * 16 + 7] = 6.0f * block_scale[b];
  const Nvfp4Tensor t = quantize_nvfp4(x);
  EXPECT_EQ(t.tensor_scale, 1.0f);
  std::vector<float> back(x.size());
  dequantize(t, back);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(back[i], x[i]) << i;
  // All zeros: tensor_scale 1, zero codes, zeros back.
  const std::vector<float> zeros(20, 0.0f);
  const Nvfp4Tensor z = quantize_nvfp4(zeros);
  EXPECT_EQ(z.tensor_scale, 1.0f);
  std::vector<float> zback(20, 1.0f);
  dequantize(z, zback);
  for (float v : zback) EXPECT_EQ(v, 0.0f);
}

// Every code follows the documented recipe, recomputed here with the scalar
// codecs, on blocks scaled by 2^-8..2^8: the ue4m3 scales then range from
// subnormal (with more rounding) to near 448.
TEST(Numerics, Nvfp4CodesFollowTheRecipe) {
  std::vector<float> x = gaussian(16 * 256 + 5, 4242);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] *= std::ldexp(1.0f, static_cast<int>((i / 16) % 17) - 8);
  for (std::size_t i = 112; i < 128; ++i) x[i] = 0.0f;  // block 7 is all zeros
  x[200] = -0.0f;
  const Nvfp4Tensor t = quantize_nvfp4(x);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  ASSERT_EQ(t.tensor_scale, amax / (448.0f * 6.0f));
  ASSERT_EQ(t.block_scales.size(), 257u);
  for (std::size_t b = 0; b < t.block_scales.size(); ++b) {
    float bmax = 0;
    for (std::size_t i = b * 16; i < std::min(x.size(), b * 16 + 16); ++i)
      bmax = std::max(bmax, std::fabs(x[i]));
    ASSERT_EQ(t.block_scales[b], encode_ue4m3(bmax / 6.0f / t.tensor_scale)) << b;
    const float s = decode_ue4m3(t.block_scales[b]) * t.tensor_scale;
    for (std::size_t i = b * 16; i < b * 16 + 16; ++i) {
      const float v = i < x.size() ? x[i] : 0.0f;
      const std::uint8_t want = s == 0.0f ? 0 : encode_e2m1(v / s);
      ASSERT_EQ(t.codes[i], want) << "element " << i << " block " << b;
    }
  }
  EXPECT_EQ(t.block_scales[7], 0);
  EXPECT_NE(t.block_scales[12], 0);
  EXPECT_EQ(t.codes[200], 0x08);  // -0.0 keeps its sign: e2m1 -0
}

// The block quantizers round e2m1 ties to even too. With scale 1 (NVFP4:
// tensor amax 2688 -> tensor_scale 1, block amax 6 -> ue4m3 1.0; MXFP4:
// block amax 6 -> shared_exp 2 - 2 = 0) the elements are the seven
// midpoints themselves: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2,
// 3.5 -> 4, 5 -> 4 (codes 0, 2, 2, 4, 4, 6, 6).
TEST(Numerics, BlockQuantizersRoundE2M1TiesToEven) {
  const float mids[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const std::uint8_t want[7] = {0, 2, 2, 4, 4, 6, 6};
  std::vector<float> x(64, 0.0f);
  x[0] = 6.0f;  // block max: scale 1 in both formats
  for (int i = 0; i < 7; ++i) {
    x[1 + i] = mids[i];
    x[8 + i] = -mids[i];
  }
  x[32] = 2688.0f;  // NVFP4 tensor max (a block of its own)
  const Nvfp4Tensor n = quantize_nvfp4(x);
  ASSERT_EQ(n.tensor_scale, 1.0f);
  ASSERT_EQ(n.block_scales[0], 0x38);  // 1.0
  const MxTensor m = quantize_mx(x, MxElement::kE2M1);
  ASSERT_EQ(m.scales[0], 127);  // 2^0
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(n.codes[1 + i], want[i]) << "nvfp4 " << mids[i];
    EXPECT_EQ(n.codes[8 + i], want[i] | 8) << "nvfp4 " << -mids[i];
    EXPECT_EQ(m.codes[1 + i], want[i]) << "mxfp4 " << mids[i];
    EXPECT_EQ(m.codes[8 + i], want[i] | 8) << "mxfp4 " << -mids[i];
  }
}

// NVIDIA's claim: 16-element blocks with fractional (e4m3) scales beat
// MXFP4's 32-element power-of-two scales. Measured: NVFP4 20.40 dB vs MXFP4
// 18.77 dB on 64K N(0,1) samples.
TEST(Numerics, Nvfp4BeatsMxfp4OnGaussianData) {
  const std::vector<float> x = gaussian(1 << 16);
  const Nvfp4Tensor t = quantize_nvfp4(x);
  std::vector<float> back(x.size());
  dequantize(t, back);
  const double nvfp4 = compare(x, back).sqnr_db;
  EXPECT_GT(nvfp4, kMinSqnrNvfp4);
  EXPECT_GT(nvfp4, sqnr_of_mx(x, MxElement::kE2M1) + kMinNvfp4GainOverMxfp4Db);
}

// ---------------------------------------------------------------- INT8

TEST(Numerics, Int8PerChannelBeatsPerTensorOnUnevenRows) {
  // Row 0 ~ N(0, 1e-3^2), row 1 ~ N(0, 1e3^2).
  const std::size_t cols = 256;
  std::vector<float> x = gaussian(2 * cols);
  for (std::size_t c = 0; c < cols; ++c) {
    x[c] *= 1e-3f;
    x[cols + c] *= 1e3f;
  }
  auto row0_sqnr = [&](Int8Granularity g) {
    const Int8Tensor t = quantize_int8(x, 2, cols, g);
    std::vector<float> back(x.size());
    dequantize(t, back);
    return compare(std::span(x).first(cols), std::span<const float>(back).first(cols)).sqnr_db;
  };
  const double per_tensor = row0_sqnr(Int8Granularity::kPerTensor);
  const double per_channel = row0_sqnr(Int8Granularity::kPerChannel);
  // Row 0 rounds to zeros under row 1's scale: measured 0.00 dB.
  EXPECT_LT(per_tensor, 1.0);
  // Uniform noise step^2 / 12 with step = 3 sigma / 127 (amax of 256 samples
  // ~ 3 sigma): 10 log10(12 * 127^2 / 9) = 43.3 dB; measured 42.22 dB.
  EXPECT_GT(per_channel, 40.0);
  EXPECT_EQ(row0_sqnr(Int8Granularity::kPerToken), per_channel);
  EXPECT_EQ(quantize_int8(x, 2, cols, Int8Granularity::kPerTensor).scales.size(), 1u);
  EXPECT_EQ(quantize_int8(x, 2, cols, Int8Granularity::kPerChannel).scales.size(), 2u);
}

// Integers times 0.25 with amax 127 * 0.25: scale = 31.75 / 127 = 0.25
// exactly, so every value comes back. Ties: 0.125 / 0.25 = 0.5 -> 0,
// 0.375 -> 1.5 -> 2, 0.625 -> 2.5 -> 2 (half to even).
TEST(Numerics, Int8ExactOnScaledIntegersAndTiesToEven) {
  std::vector<float> x;
  for (int q = -127; q <= 127; ++q) x.push_back(static_cast<float>(q) * 0.25f);
  const Int8Tensor t = quantize_int8(x, 1, x.size(), Int8Granularity::kPerTensor);
  EXPECT_EQ(t.scales[0], 0.25f);
  std::vector<float> back(x.size());
  dequantize(t, back);
  EXPECT_EQ(back, x);
  const std::vector<float> ties = {31.75f, 0.125f, 0.375f, 0.625f, -0.625f};
  const Int8Tensor tt = quantize_int8(ties, 1, 5, Int8Granularity::kPerToken);
  EXPECT_EQ(tt.q, (std::vector<std::int8_t>{127, 0, 2, 2, -2}));
}

// ---------------------------------------------------------------- INT4

TEST(Numerics, Int4GroupsFollowRowsOfAnyLength) {
  const std::size_t rows = 3, cols = 200;  // groups per row: 128 + 72
  std::vector<float> x = gaussian(rows * cols);
  // Row 0: first group amax 7 exactly, second group amax 0.7.
  for (std::size_t c = 0; c < cols; ++c)
    x[c] = std::clamp(x[c], -6.0f, 6.0f) * (c < 128 ? 1.0f : 0.1f);
  x[5] = 7.0f;
  x[150] = -0.7f;
  for (Int4Scheme s : {Int4Scheme::kSymmetric, Int4Scheme::kAsymmetric}) {
    const Int4Tensor t = quantize_int4(x, rows, cols, s);
    ASSERT_EQ(t.scales.size(), rows * 2);
    ASSERT_EQ(t.zeros.size(), rows * 2);
    ASSERT_EQ(t.q.size(), rows * cols);
    for (std::uint8_t q : t.q) EXPECT_LE(q, 15);
    std::vector<float> back(x.size());
    dequantize(t, back);
    // Measured 15.28 dB (symmetric: 15 levels over +-amax) and 19.00 dB
    // (asymmetric: 16 levels over [min, max]).
    EXPECT_GT(compare(x, back).sqnr_db, s == Int4Scheme::kSymmetric ? 14.5 : 18.0);
    if (s == Int4Scheme::kSymmetric) {
      EXPECT_EQ(t.scales[0], 1.0f);         // 7 / 7
      EXPECT_EQ(t.scales[1], 0.7f / 7.0f);  // the second group sees only its own 72 values
      EXPECT_EQ(t.zeros[0], 8);
    }
  }
}

// Symmetric: amax 7 -> scale 1; q = rne(v) + 8: 7 -> 15, -7 -> 1, 3.5 -> 4 -> 12 (even), 1 -> 9.
TEST(Numerics, Int4SymmetricHandExample) {
  const std::vector<float> x = {7.0f, -7.0f, 3.5f, 1.0f};
  const Int4Tensor t = quantize_int4(x, 1, 4, Int4Scheme::kSymmetric);
  EXPECT_EQ(t.q, (std::vector<std::uint8_t>{15, 1, 12, 9}));
  std::vector<float> back(4);
  dequantize(t, back);
  EXPECT_EQ(back, (std::vector<float>{7.0f, -7.0f, 4.0f, 1.0f}));
}

// Asymmetric on 16 evenly spaced values -2.5, -2, ..., 5: scale = 7.5 / 15 =
// 0.5, zero = rne(2.5 / 0.5) = 5, q = v / 0.5 + 5 = 0..15: exact.
TEST(Numerics, Int4AsymmetricExactOnSixteenEvenlySpacedValues) {
  std::vector<float> x;
  for (int i = 0; i < 16; ++i) x.push_back(-2.5f + 0.5f * static_cast<float>(i));
  const Int4Tensor t = quantize_int4(x, 1, 16, Int4Scheme::kAsymmetric);
  EXPECT_EQ(t.scales[0], 0.5f);
  EXPECT_EQ(t.zeros[0], 5);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(t.q[static_cast<std::size_t>(i)], i);
  std::vector<float> back(16);
  dequantize(t, back);
  EXPECT_EQ(back, x);
  // All-positive values: the range is extended to include 0, so zero = 0
  // and the values stay on the grid 0..15 * (15 / 15).
  std::vector<float> pos;
  for (int i = 1; i <= 15; ++i) pos.push_back(static_cast<float>(i));
  const Int4Tensor p = quantize_int4(pos, 1, 15, Int4Scheme::kAsymmetric);
  EXPECT_EQ(p.zeros[0], 0);
  std::vector<float> pback(15);
  dequantize(p, pback);
  EXPECT_EQ(pback, pos);
}

// ---------------------------------------------------------------- ggml

TEST(Numerics, GgmlBlockSizesMatchTheFormatTable) {
  EXPECT_EQ(kQ8_0BlockBytes * 8, static_cast<std::size_t>(format_info(Format::kQ8_0).block_bits));
  EXPECT_EQ(kQ4_0BlockBytes * 8, static_cast<std::size_t>(format_info(Format::kQ4_0).block_bits));
  EXPECT_EQ(kGgmlBlock, static_cast<std::size_t>(format_info(Format::kQ8_0).block_elements));
  EXPECT_EQ(kMxBlock, static_cast<std::size_t>(format_info(Format::kMxfp4).block_elements));
  EXPECT_EQ(kNvfp4Block, static_cast<std::size_t>(format_info(Format::kNvfp4).block_elements));
  const std::vector<float> x = gaussian(33);
  EXPECT_EQ(quantize_q8_0(std::span(x).first(32)).size(), 34u);
  EXPECT_EQ(quantize_q4_0(std::span(x).first(32)).size(), 18u);
  EXPECT_EQ(quantize_q8_0(x).size(), 68u);  // 33 elements: two blocks
  EXPECT_EQ(quantize_q4_0(x).size(), 36u);
}

// amax 127 -> d = 1 (fp16 0x3C00, bytes 00 3C), id = 1, qs = roundf(x):
// halves go away from zero (2.5 -> 3, -2.5 -> -3, 0.5 -> 1), unlike RNE.
TEST(Numerics, Q8_0BytesMatchGgml) {
  std::vector<float> x(32, 0.0f);
  const float head[] = {-127.0f, 127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.49f, 100.2f};
  std::copy(std::begin(head), std::end(head), x.begin());
  const std::vector<std::uint8_t> b = quantize_q8_0(x);
  ASSERT_EQ(b.size(), 34u);
  const std::uint8_t want[] = {0x00, 0x3C, 0x81, 0x7F, 0x03, 0xFD, 0x01, 0xFF, 0x01, 0x64};
  for (std::size_t i = 0; i < std::size(want); ++i) EXPECT_EQ(b[i], want[i]) << i;
  for (std::size_t i = std::size(want); i < 34; ++i) EXPECT_EQ(b[i], 0) << i;
  std::vector<float> back(32);
  dequantize_q8_0(b, back);
  EXPECT_EQ(back[3], -3.0f);
  EXPECT_EQ(back[7], 100.0f);
  // d = 16 / 127 = 0.1259843 = 2^-3 * (1 + 8.06 / 1024) -> fp16 0x3008 (bytes 08 30).
  std::vector<float> y(32);
  for (std::size_t j = 0; j < 32; ++j) y[j] = static_cast<float>(j) - 16.0f;
  const std::vector<std::uint8_t> c = quantize_q8_0(y);
  EXPECT_EQ(c[0], 0x08);
  EXPECT_EQ(c[1], 0x30);
  EXPECT_EQ(static_cast<std::int8_t>(c[2]), -127);  // -16 * 127 / 16
}

// x[j] = (j - 16) / 2: the largest magnitude is x[0] = -8, so d = -8 / -8 = 1
// (fp16 0x3C00), id = 1, q = min(15, (int)(x + 8.5)) = (j + 1) / 2 capped at
// 15: q[0..15] = 0 1 1 2 2 3 3 4 4 5 5 6 6 7 7 8, q[16..31] = 8 9 9 10 10 11
// 11 12 12 13 13 14 14 15 15 15. Byte j = q[j] | q[j + 16] << 4.
TEST(Numerics, Q4_0BytesMatchGgml) {
  std::vector<float> x(32);
  for (std::size_t j = 0; j < 32; ++j) x[j] = (static_cast<float>(j) - 16.0f) * 0.5f;
  const std::vector<std::uint8_t> b = quantize_q4_0(x);
  const std::vector<std::uint8_t> want = {0x00, 0x3C, 0x80, 0x91, 0x91, 0xA2, 0xA2, 0xB3, 0xB3,
                                          0xC4, 0xC4, 0xD5, 0xD5, 0xE6, 0xE6, 0xF7, 0xF7, 0xF8};
  EXPECT_EQ(b, want);
  std::vector<float> back(32);
  dequantize_q4_0(b, back);
  EXPECT_EQ(back[0], -8.0f);  // (0 - 8) * 1
  EXPECT_EQ(back[31], 7.0f);  // 7.5 clamps to 15 -> 7
  EXPECT_EQ(back[17], 1.0f);  // 0.5 -> (int)(9.0) = 9 -> 1 (ggml rounds half up here)
  // Ties in magnitude keep the first value: max = 3, d = 3 / -8 = -0.375
  // (fp16 0xB600: -1.5 * 2^-2). 3 * (1 / -0.375) + 8.5 = 0.5 -> 0;
  // -3 -> 16.5 -> 16 -> capped 15; 0 -> 8.
  std::vector<float> t(32, 0.0f);
  t[0] = 3.0f;
  t[1] = -3.0f;
  const std::vector<std::uint8_t> c = quantize_q4_0(t);
  EXPECT_EQ(c[0], 0x00);
  EXPECT_EQ(c[1], 0xB6);
  EXPECT_EQ(c[2], 0x80);  // q0 = 0, q16 = 8
  EXPECT_EQ(c[3], 0x8F);  // q1 = 15, q17 = 8
  EXPECT_EQ(c[4], 0x88);
}

TEST(Numerics, GgmlDequantizeChecksSizes) {
  const std::vector<float> x = gaussian(40);
  const std::vector<std::uint8_t> q8 = quantize_q8_0(x);
  std::vector<float> back(40);
  dequantize_q8_0(q8, back);
  EXPECT_GT(compare(x, back).sqnr_db, 44.0);  // measured 45.45 dB
  const std::vector<std::uint8_t> q4 = quantize_q4_0(x);
  dequantize_q4_0(q4, back);
  EXPECT_GT(compare(x, back).sqnr_db, 22.0);  // measured 22.93 dB
  std::vector<float> too_many(65);
  EXPECT_THROW(dequantize_q8_0(q8, too_many), InvalidArgument);
  EXPECT_THROW(dequantize_q4_0(q8, back), InvalidArgument);
}

// ---------------------------------------------------------------- round trip

// SQNR per format on an 8 x 200 N(0,1) tensor (rows not a multiple of any
// block; seed 777). Measured: fp32 inf, tf32 73.55, fp16 73.55 (both keep
// 10 mantissa bits), bf16 55.76, fp8 31.61, fp8-e5m2 25.41, mxfp8 30.18,
// fp6 25.41, mxfp6 25.22, mxfp4 18.57, nvfp4 20.64, int8 43.40, int4 20.02,
// q8_0 45.28, q4_0 21.33. Bounds sit about 1 dB below.
TEST(Numerics, RoundTripEveryFormatMeetsItsSqnr) {
  const std::size_t rows = 8, cols = 200;
  const std::vector<float> x = gaussian(rows * cols, 777);
  const struct {
    Format f;
    double min_db;
  } kCases[] = {
      {Format::kTf32, 72.5},  {Format::kFp16, 72.5},    {Format::kBf16, 54.5},
      {Format::kFp8, 30.5},   {Format::kFp8E5M2, 24.5}, {Format::kMxfp8, 29.0},
      {Format::kFp6, 24.5},   {Format::kMxfp6, 24.0},   {Format::kMxfp4, 17.5},
      {Format::kNvfp4, 19.5}, {Format::kInt8, 42.0},    {Format::kInt4, 19.0},
      {Format::kQ8_0, 44.0},  {Format::kQ4_0, 20.0},
  };
  for (const auto& c : kCases)
    EXPECT_GT(sqnr_of_round_trip(c.f, x, rows, cols), c.min_db) << format_id(c.f);
  EXPECT_EQ(sqnr_of_round_trip(Format::kFp32, x, rows, cols),
            std::numeric_limits<double>::infinity());
}

TEST(Numerics, RoundTripMatchesTheBlockQuantizers) {
  const std::size_t rows = 4, cols = 64;  // whole blocks: per-row == flat
  const std::vector<float> x = gaussian(rows * cols, 99);
  std::vector<float> rt(x.size()), direct(x.size());
  round_trip(Format::kMxfp4, x, rows, cols, rt);
  dequantize(quantize_mx(x, MxElement::kE2M1), direct);
  EXPECT_EQ(rt, direct);
  round_trip(Format::kMxfp6, x, rows, cols, rt);
  dequantize(quantize_mx(x, MxElement::kE3M2), direct);
  EXPECT_EQ(rt, direct);
  round_trip(Format::kNvfp4, x, rows, cols, rt);
  dequantize(quantize_nvfp4(x), direct);
  EXPECT_EQ(rt, direct);
  round_trip(Format::kQ4_0, x, rows, cols, rt);
  dequantize_q4_0(quantize_q4_0(x), direct);
  EXPECT_EQ(rt, direct);
  round_trip(Format::kInt8, x, rows, cols, rt);
  dequantize(quantize_int8(x, rows, cols, Int8Granularity::kPerChannel), direct);
  EXPECT_EQ(rt, direct);
  // fp8 per tensor: the max maps to 448 exactly and comes back exactly.
  std::vector<float> y = {0.1f, -3.0f, 2.0f};
  std::vector<float> out(3);
  round_trip(Format::kFp8, y, 1, 3, out);
  EXPECT_EQ(out[1], -3.0f);
  // tf32: 1 + 2^-11 is a tie -> 1; 1 + 3 * 2^-11 -> 1 + 2^-9.
  y = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-23f};
  round_trip(Format::kTf32, y, 1, 3, out);
  EXPECT_EQ(out, (std::vector<float>{1.0f, 1.0f + 0x1p-9f, 1.0f}));
}

TEST(Numerics, RoundTripRejectsBadInput) {
  std::vector<float> x(6, 1.0f), out(6);
  EXPECT_THROW(round_trip(Format::kFp8, x, 2, 2, out), InvalidArgument);  // 6 != 4
  std::vector<float> short_out(5);
  EXPECT_THROW(round_trip(Format::kFp8, x, 2, 3, short_out), InvalidArgument);
  EXPECT_THROW(round_trip(Format::kQ6_K, x, 2, 3, out), Unsupported);
  EXPECT_THROW(round_trip(Format::kQ5_K_M, x, 2, 3, out), Unsupported);
  EXPECT_THROW(round_trip(Format::kQ4_K_M, x, 2, 3, out), Unsupported);
  for (float bad : {kNaN, kInf, -kInf}) {
    x[4] = bad;
    for (const FormatInfo& info : all_formats())
      EXPECT_THROW(round_trip(info.format, x, 2, 3, out), InvalidArgument) << info.id;
  }
}

TEST(Numerics, BlockQuantizersRejectNaNAndInf) {
  for (float bad : {kNaN, kInf, -kInf}) {
    std::vector<float> x = gaussian(100);
    x[70] = bad;
    EXPECT_THROW((void)quantize_mx(x, MxElement::kE2M1), InvalidArgument);
    EXPECT_THROW((void)quantize_mx(x, MxElement::kE4M3), InvalidArgument);
    EXPECT_THROW((void)quantize_nvfp4(x), InvalidArgument);
    EXPECT_THROW((void)quantize_int8(x, 10, 10, Int8Granularity::kPerChannel), InvalidArgument);
    EXPECT_THROW((void)quantize_int8(x, 10, 10, Int8Granularity::kPerTensor), InvalidArgument);
    EXPECT_THROW((void)quantize_int4(x, 10, 10, Int4Scheme::kAsymmetric), InvalidArgument);
    EXPECT_THROW((void)quantize_q8_0(x), InvalidArgument);
    EXPECT_THROW((void)quantize_q4_0(x), InvalidArgument);
  }
  const std::vector<float> x = gaussian(100);
  EXPECT_THROW((void)quantize_int8(x, 10, 11, Int8Granularity::kPerToken), InvalidArgument);
  EXPECT_THROW((void)quantize_int4(x, 10, 9, Int4Scheme::kSymmetric), InvalidArgument);
  EXPECT_THROW((void)quantize_int4(x, 10, 10, Int4Scheme::kSymmetric, 0), InvalidArgument);
  std::vector<std::uint8_t> codes(100);
  EXPECT_THROW(encode_e4m3(x, std::span(codes).first(99)), InvalidArgument);
  const Int8Tensor t = quantize_int8(x, 10, 10, Int8Granularity::kPerChannel);
  std::vector<float> wrong(99);
  EXPECT_THROW(dequantize(t, wrong), InvalidArgument);
}

TEST(Numerics, BulkE4M3MatchesScalar) {
  std::vector<float> x = gaussian(1000);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] *= std::ldexp(1.0f, static_cast<int>(i % 40) - 20);
  x[3] = kNaN;
  x[4] = -kInf;
  std::vector<std::uint8_t> codes(x.size());
  encode_e4m3(x, codes);
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(codes[i], encode_e4m3(x[i])) << i;
  std::vector<float> back(x.size());
  decode_e4m3(codes, back);
  for (std::size_t i = 5; i < x.size(); ++i) ASSERT_EQ(back[i], decode_e4m3(codes[i])) << i;
}

// ---------------------------------------------------------------- metrics

// ref = [1, 2, 3, 4], approx = [1, 2, 3, 5]: error [0, 0, 0, -1].
//   mse = 1/4; sqnr = 10 log10(30 / 1) = 14.7712125 dB; max = 1;
//   cosine = 34 / (sqrt(30) * sqrt(39)) = 34 / sqrt(1170) = 0.993999...
TEST(Numerics, CompareHandExample) {
  constexpr double kTol = 1e-12;
  const std::vector<float> ref = {1, 2, 3, 4};
  const std::vector<float> approx = {1, 2, 3, 5};
  const ErrorMetrics m = compare(ref, approx);
  EXPECT_DOUBLE_EQ(m.mse, 0.25);
  EXPECT_NEAR(m.sqnr_db, 14.771212547196624, kTol);
  EXPECT_DOUBLE_EQ(m.max_abs, 1.0);
  EXPECT_NEAR(m.cosine, 34.0 / std::sqrt(1170.0), kTol);
  EXPECT_NEAR(m.cosine, 0.993999, 1e-6);
}

TEST(Numerics, CompareEdgeCases) {
  const std::vector<float> a = {1, -2, 3};
  const ErrorMetrics same = compare(a, a);
  EXPECT_EQ(same.sqnr_db, std::numeric_limits<double>::infinity());
  EXPECT_EQ(same.mse, 0.0);
  EXPECT_DOUBLE_EQ(same.cosine, 1.0);
  const std::vector<float> zeros(3, 0.0f);
  EXPECT_EQ(compare(zeros, a).sqnr_db, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(compare(zeros, zeros).cosine, 1.0);
  EXPECT_EQ(compare(zeros, zeros).sqnr_db, std::numeric_limits<double>::infinity());
  EXPECT_EQ(compare(a, zeros).cosine, 0.0);
  const std::vector<float> with_nan = {1, kNaN, 3};
  EXPECT_TRUE(std::isnan(compare(a, with_nan).max_abs));
  EXPECT_THROW((void)compare(a, std::vector<float>(2)), InvalidArgument);
}

}  // namespace
}  // namespace roofline::numerics
