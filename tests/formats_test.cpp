#include "roofline/formats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "roofline/error.h"

namespace roofline {
namespace {

TEST(Formats, TableIsInEnumOrderWithUniqueLowerCaseIds) {
  std::set<std::string_view> ids;
  int i = 0;
  for (const auto& f : all_formats()) {
    EXPECT_EQ(format_index(f.format), i++);
    EXPECT_TRUE(ids.insert(f.id).second) << f.id;
    for (char c : f.id) EXPECT_FALSE(c >= 'A' && c <= 'Z') << f.id;
    EXPECT_FALSE(f.source.empty()) << f.id;
  }
  EXPECT_EQ(i, kFormatCount);
  // DESIGN.md lists these 18 ids.
  for (const char* id :
       {"fp32", "tf32", "bf16", "fp16", "fp8", "fp8-e5m2", "mxfp8", "fp6", "mxfp6", "mxfp4",
        "nvfp4", "int8", "int4", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0"}) {
    EXPECT_TRUE(ids.count(id)) << id;
  }
}

// Bits per element including scales, from the block layouts:
//   mxfp8 = 8 + 8/32, mxfp6 = 6 + 8/32, mxfp4 = 4 + 8/32 (OCP MX: e8m0 per 32)
//   nvfp4 = 4 + 8/16 (ue4m3 per 16)
//   int4 g128 = 4 + (16-bit scale + 4-bit zero)/128 = 4.15625
//   q8_0 = 34 B * 8 / 32 = 8.5; q4_0 = 18 * 8 / 32 = 4.5; q4_K = 144 * 8 / 256 = 4.5
//   q5_K = 176 * 8 / 256 = 5.5; q6_K = 210 * 8 / 256 = 6.5625
TEST(Formats, BitsPerElementIncludeBlockScales) {
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kFp32), 32);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kTf32), 32);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kBf16), 16);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kFp16), 16);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kFp8), 8);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kFp8E5M2), 8);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kMxfp8), 8.25);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kFp6), 6);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kMxfp6), 6.25);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kMxfp4), 4.25);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kNvfp4), 4.5);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kInt8), 8);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kInt4), 4.15625);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kQ8_0), 8.5);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kQ6_K), 6.5625);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kQ5_K_M), 5.5);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kQ4_K_M), 4.5);
  EXPECT_DOUBLE_EQ(bits_per_element(Format::kQ4_0), 4.5);
}

TEST(Formats, BytesForCountsWholeBlocksAndTensorScales) {
  // 4096 x 4096 fp16 weights: 16,777,216 elements x 2 B.
  EXPECT_DOUBLE_EQ(bytes_for(Format::kFp16, 4096.0 * 4096), 33'554'432);
  // nvfp4: one block of 16 = 8 B of nibbles + 1 B scale, plus the 4 B fp32 tensor scale.
  EXPECT_DOUBLE_EQ(bytes_for(Format::kNvfp4, 16), 9 + 4);
  // mxfp4: 33 elements need 2 blocks of 17 B (16 B nibbles + 1 B e8m0).
  EXPECT_DOUBLE_EQ(bytes_for(Format::kMxfp4, 33), 34);
  // q8_0: 64 elements = 2 blocks of 34 B.
  EXPECT_DOUBLE_EQ(bytes_for(Format::kQ8_0, 64), 68);
  // int4 g128: 4096 x 4096 = 131,072 groups x 66.5 B = 8,716,288 B.
  EXPECT_DOUBLE_EQ(bytes_for(Format::kInt4, 4096.0 * 4096), 8'716'288);
  // fp8 carries one fp32 per-tensor scale.
  EXPECT_DOUBLE_EQ(bytes_for(Format::kFp8, 1000), 1004);
  EXPECT_DOUBLE_EQ(bytes_for(Format::kNvfp4, 0), 0);
}

// Largest finite values from the encodings (arXiv 2209.05433, OCP MX v1.0):
//   e4m3fn: exponent 1111 is usable except mantissa 111 (NaN): 1.75 x 2^(15-7) = 448
//   e5m2:   IEEE-style, top exponent reserved: 1.75 x 2^(30-15) = 57344
//   e3m2:   no Inf/NaN: 1.75 x 2^(7-3) = 28; e2m1: 1.5 x 2^(3-1) = 6
//   fp16:   (2 - 2^-10) x 2^15 = 65504
TEST(Formats, RangesMatchTheEncodings) {
  EXPECT_DOUBLE_EQ(format_info(Format::kFp8).max_finite, 1.75 * std::ldexp(1.0, 8));
  EXPECT_DOUBLE_EQ(format_info(Format::kFp8E5M2).max_finite, 1.75 * std::ldexp(1.0, 15));
  EXPECT_DOUBLE_EQ(format_info(Format::kFp6).max_finite, 1.75 * std::ldexp(1.0, 4));
  EXPECT_DOUBLE_EQ(format_info(Format::kNvfp4).max_finite, 1.5 * std::ldexp(1.0, 2));
  EXPECT_DOUBLE_EQ(format_info(Format::kFp16).max_finite, (2 - std::ldexp(1.0, -10)) * 32768);
  // Smallest subnormals: e4m3 2^(1-7-3) = 2^-9, e5m2 2^(1-15-2) = 2^-16, fp16 2^-24.
  EXPECT_DOUBLE_EQ(format_info(Format::kFp8).min_positive, std::ldexp(1.0, -9));
  EXPECT_DOUBLE_EQ(format_info(Format::kFp8E5M2).min_positive, std::ldexp(1.0, -16));
  EXPECT_DOUBLE_EQ(format_info(Format::kFp16).min_positive, std::ldexp(1.0, -24));
}

TEST(Formats, LlamaCppTypesAreStorageOnly) {
  for (Format f : {Format::kQ8_0, Format::kQ6_K, Format::kQ5_K_M, Format::kQ4_K_M, Format::kQ4_0}) {
    EXPECT_FALSE(format_info(f).compute_format) << format_id(f);
  }
  for (Format f : {Format::kFp16, Format::kFp8, Format::kNvfp4, Format::kInt4}) {
    EXPECT_TRUE(format_info(f).compute_format) << format_id(f);
  }
}

TEST(Formats, ParseAcceptsIdsAliasesAndAnyCase) {
  EXPECT_EQ(parse_format("nvfp4"), Format::kNvfp4);
  EXPECT_EQ(parse_format("NVFP4"), Format::kNvfp4);
  EXPECT_EQ(parse_format("fp8-e4m3"), Format::kFp8);
  EXPECT_EQ(parse_format("e5m2"), Format::kFp8E5M2);
  EXPECT_EQ(parse_format("Q4_K_M"), Format::kQ4_K_M);
  EXPECT_EQ(parse_format("int4-g128"), Format::kInt4);
}

TEST(Formats, ParseRejectsUnknownWithTheKnownList) {
  try {
    (void)parse_format("fp7");
    FAIL() << "expected NotFound";
  } catch (const NotFound& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("fp7"), std::string::npos);
    EXPECT_NE(what.find("nvfp4"), std::string::npos);
  }
  Format f{};
  EXPECT_FALSE(try_parse_format("", &f));
  EXPECT_FALSE(try_parse_format(std::string(10'000, 'x'), &f));
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// Issue 13 item 4: the names people write reach the same format.
TEST(Formats, NamesPeopleWriteParse) {
  for (const char* name :
       {"FP8 E4M3", "fp8_e4m3", "fp8-e4m3", "E4M3", "e4m3fn", "float8_e4m3fn", " fp8 "}) {
    EXPECT_EQ(parse_format(name), Format::kFp8) << name;
  }
  EXPECT_EQ(parse_format("FP8_E5M2"), Format::kFp8E5M2);
  EXPECT_EQ(parse_format("NVFP4"), Format::kNvfp4);
  EXPECT_EQ(parse_format("MXFP4"), Format::kMxfp4);
  EXPECT_EQ(parse_format("bfloat16"), Format::kBf16);
  EXPECT_EQ(parse_format("float16"), Format::kFp16);
  EXPECT_EQ(parse_format("Q4-K-M"), Format::kQ4_K_M);
  EXPECT_EQ(parse_format("q8 0"), Format::kQ8_0);
  EXPECT_THROW((void)parse_format("fp7"), NotFound);
  EXPECT_THROW((void)parse_format("   "), NotFound);
  EXPECT_THROW((void)parse_format("fp8--e4m3x"), NotFound);
}

}  // namespace
}  // namespace roofline
