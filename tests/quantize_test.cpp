#include "roofline/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "roofline/error.h"

namespace roofline {
namespace {

// A [rows x cols] Gaussian tensor (sigma 0.02, like trained weights), fixed seed.
std::vector<float> gaussian(std::int64_t rows, std::int64_t cols, unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (auto& x : v) x = dist(rng);
  return v;
}

TEST(Quantize, FindsExactlyThePlantedOutlierChannels) {
  const std::int64_t rows = 256, cols = 512;
  auto w = gaussian(rows, cols);
  // Channels 7, 100 and 301 carry values 50x larger (max/RMS ~ 150 against the 20 threshold).
  for (std::int64_t c : {7, 100, 301}) {
    for (std::int64_t r = 0; r < rows; ++r) w[static_cast<std::size_t>(r * cols + c)] *= 50;
  }
  const TensorReport t = analyze_tensor("w", w, rows, cols);
  EXPECT_EQ(t.outlier_channels, (std::vector<std::int64_t>{7, 100, 301}));
  EXPECT_TRUE(t.outlier_tokens.empty() || t.outlier_tokens.size() < static_cast<std::size_t>(rows));
  // Keeping them in bf16 helps the 4-bit formats a lot.
  double plain = 0, kept = 0;
  for (const auto& e : t.errors) {
    if (e.format != Format::kInt4) continue;
    (e.outliers_kept ? kept : plain) = e.error.sqnr_db;
  }
  EXPECT_GT(kept, plain + 3);
}

TEST(Quantize, NoOutliersInAPlainGaussian) {
  const auto w = gaussian(128, 256, 11);
  const TensorReport t = analyze_tensor("w", w, 128, 256);
  EXPECT_TRUE(t.outlier_channels.empty());
  // Pearson kurtosis of a Gaussian is 3; 32k samples land within 0.1.
  EXPECT_NEAR(t.kurtosis, 3.0, 0.1);
  EXPECT_NEAR(t.rms, 0.02, 0.001);
}

// LLM.int8()'s absolute threshold: an activation feature reaching 6.0 is an outlier.
TEST(Quantize, MagnitudeThresholdFlagsActivationFeatures) {
  const std::int64_t tokens = 64, hidden = 128;
  std::vector<float> x(static_cast<std::size_t>(tokens * hidden), 0.5f);
  for (std::int64_t t = 0; t < tokens; t += 4) x[static_cast<std::size_t>(t * hidden + 42)] = 6.5f;
  QuantizeOptions o;
  o.ratio_threshold = 1e9;  // only the magnitude rule
  const TensorReport r = analyze_tensor("x", x, tokens, hidden, o);
  EXPECT_EQ(r.outlier_channels, (std::vector<std::int64_t>{42}));
  EXPECT_EQ(r.outlier_tokens.size(), 16u);
}

TEST(Quantize, PlanIsTheCheapestFormatMeetingTheBudget) {
  const auto w = gaussian(128, 256, 3);
  QuantizeOptions tight;
  tight.budget_sqnr_db = 35;
  QuantizeOptions loose;
  loose.budget_sqnr_db = 15;
  const TensorReport a = analyze_tensor("w", w, 128, 256, tight);
  const TensorReport b = analyze_tensor("w", w, 128, 256, loose);
  EXPECT_TRUE(a.meets_budget);
  EXPECT_TRUE(b.meets_budget);
  EXPECT_GE(a.plan.error.sqnr_db, 35);
  EXPECT_GE(b.plan.error.sqnr_db, 15);
  EXPECT_LT(b.plan.bits_per_element, a.plan.bits_per_element);
  // Nothing cheaper than the plan meets the budget.
  for (const auto& e : b.errors) {
    if (e.bits_per_element < b.plan.bits_per_element - 1e-9) {
      EXPECT_LT(e.error.sqnr_db, 15);
    }
  }
}

// Rows with very different scales (per-token activations): a static per-tensor
// scale wastes range on small rows; per-token scales do not.
TEST(Quantize, PerTokenScalesWhenRowsDiffer) {
  const std::int64_t rows = 64, cols = 256;
  auto x = gaussian(rows, cols, 5);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float scale = std::pow(2.0f, static_cast<float>(r % 8));
    for (std::int64_t c = 0; c < cols; ++c) x[static_cast<std::size_t>(r * cols + c)] *= scale;
  }
  const TensorReport t = analyze_tensor("x", x, rows, cols);
  EXPECT_TRUE(t.needs_per_token_scales);
  EXPECT_GT(t.sqnr_per_token_db, t.sqnr_static_db + 3);
}

// SmoothQuant Eq. 4 with alpha 0.5: s = sqrt(max|X| / max|W|).
TEST(Quantize, SmoothQuantScales) {
  const std::vector<float> act = {16, 1, 0};
  const std::vector<float> wt = {1, 4, 2};
  const auto s = smoothquant_scales(act, wt, 0.5);
  EXPECT_FLOAT_EQ(s[0], 4.0f);
  EXPECT_FLOAT_EQ(s[1], 0.5f);
  EXPECT_FLOAT_EQ(s[2], 1.0f);  // a zero channel is left alone
  EXPECT_THROW((void)smoothquant_scales(act, wt, 1.5), InvalidArgument);
}

TEST(Quantize, RejectsNonFiniteTensors) {
  auto w = gaussian(4, 8);
  w[5] = std::nanf("");
  EXPECT_THROW((void)analyze_tensor("w", w, 4, 8), InvalidArgument);
  EXPECT_THROW((void)analyze_tensor("w", w, 3, 8), InvalidArgument);
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}

// A real file through the memory-mapped path: BF16 and F32 tensors, a 1-D norm.
TEST(Quantize, StreamsASafetensorsFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("rl-quant-" + std::to_string(::getpid()) + ".safetensors");
  const std::int64_t rows = 64, cols = 128;
  auto w = gaussian(rows, cols, 9);
  for (std::int64_t r = 0; r < rows; ++r) w[static_cast<std::size_t>(r * cols + 5)] *= 60;
  std::string data;
  for (float f : w) {  // bf16: the top half of the float (exact for this test's purpose)
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    const std::uint16_t b = static_cast<std::uint16_t>(u >> 16);
    data.append(reinterpret_cast<const char*>(&b), 2);
  }
  const std::size_t bf16_bytes = data.size();
  for (int i = 0; i < 16; ++i) {
    const float f = 1.0f;
    data.append(reinterpret_cast<const char*>(&f), 4);
  }
  nlohmann::json h;
  h["model.layers.0.mlp.down_proj.weight"] = {
      {"dtype", "BF16"}, {"shape", {rows, cols}}, {"data_offsets", {0, bf16_bytes}}};
  h["model.norm.weight"] = {
      {"dtype", "F32"}, {"shape", {16}}, {"data_offsets", {bf16_bytes, bf16_bytes + 64}}};
  const std::string header = h.dump();
  std::ofstream(path, std::ios::binary) << le64(header.size()) << header << data;
  QuantizeOptions o;
  o.chunk_elements = 1000;  // many chunks
  std::size_t calls = 0;
  const auto reports =
      quantize_checkpoint(path.string(), o, [&](std::size_t, std::size_t) { ++calls; });
  std::filesystem::remove(path);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(calls, 2u);
  const TensorReport* down = nullptr;
  for (const auto& r : reports) {
    if (r.name == "model.norm.weight") {
      EXPECT_FALSE(r.skipped.empty());
    }
    if (r.name == "model.layers.0.mlp.down_proj.weight") down = &r;
  }
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->outlier_channels, (std::vector<std::int64_t>{5}));
  EXPECT_EQ(down->rows, rows);
  EXPECT_THROW((void)quantize_checkpoint("/nonexistent.safetensors"), ParseError);
}

// Issue #10, items 4 and 8: per-tensor state is bounded before it is allocated
// (a [1, 30M] tensor took 48 bytes per column), the outliers listed are capped
// and all counted, and the tensor count is capped.
TEST(Quantize, StateAndListsAreBounded) {
  QuantizeOptions o;
  o.max_rows_or_columns = 1000;
  std::vector<float> wide(2000, 1.0f);
  try {
    (void)analyze_tensor("wide", wide, 1, 2000, o);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("more rows or columns than the 1000"), std::string::npos)
        << e.what();
  }
  std::vector<float> all_outliers(4 * 300, 100.0f);  // every column >= 6: an outlier
  o.max_listed_outliers = 10;
  const TensorReport t = analyze_tensor("w", all_outliers, 4, 300, o);
  EXPECT_EQ(t.outlier_channel_count, 300);
  EXPECT_EQ(t.outlier_channels.size(), 10u);
  EXPECT_EQ(t.outlier_channels.back(), 9);
  EXPECT_EQ(t.outlier_token_count, 4);

  nlohmann::json h;
  std::string data(3 * 8, '\0');
  for (int i = 0; i < 3; ++i) {
    h["t" + std::to_string(i)] = {
        {"dtype", "F16"}, {"shape", {2, 2}}, {"data_offsets", {8 * i, 8 * i + 8}}};
  }
  const std::string header = h.dump();
  const std::string file = le64(header.size()) + header + data;
  QuantizeOptions few;
  few.max_tensors = 2;
  EXPECT_THROW((void)quantize_bytes(file, "x", few), InvalidArgument);
  EXPECT_EQ(quantize_bytes(file, "x").size(), 3u);
}

}  // namespace
}  // namespace roofline
