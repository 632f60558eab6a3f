#include "roofline/report.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace roofline {
namespace {

const Registry& registry() {
  static const Registry r = Registry::built_in();
  return r;
}

TEST(Report, GemmJsonHasTheDesignFields) {
  const Device& d = registry().get("gb10");
  const GemmProblem p{1, 4096, 4096, Format::kFp16, Format::kFp16};
  const auto j = to_json(d, p, predict_gemm(d, p));
  // DESIGN.md: gemm fields other tools depend on.
  for (const char* key :
       {"time_s", "flops", "bytes", "ai", "ridge_ai", "bound", "memory_time_s", "compute_time_s"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["bound"], "memory");
  EXPECT_EQ(j["mode"], "realistic");
  EXPECT_EQ(j["device"]["id"], "gb10");
  EXPECT_EQ(j["figures"]["bandwidth_Bps"]["confidence"], "vendor");
  EXPECT_FALSE(j["figures"]["bandwidth_fraction"]["source"].get<std::string>().empty());
  EXPECT_GE(j["notes"].size(), 2u);
}

TEST(Report, WeightOnlyIsExplained) {
  const Device& d = registry().get("h100");
  const GemmProblem p{1, 4096, 4096, Format::kNvfp4, Format::kBf16};
  const auto notes = explain(d, p, predict_gemm(d, p));
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("weight-only"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("bf16"), std::string::npos) << notes[0];
}

TEST(Report, DeviceJsonCarriesSourcesForEveryPeak) {
  const auto j = to_json(registry().get("rtx-4090"));
  EXPECT_EQ(j["id"], "rtx-4090");
  EXPECT_DOUBLE_EQ(j["bandwidth_Bps"].get<double>(), 1.008e12);
  EXPECT_EQ(j["peaks"]["fp16"]["accumulate"], "fp32");
  for (const auto& [format, peak] : j["peaks"].items()) {
    EXPECT_FALSE(peak["source"].get<std::string>().empty()) << format;
  }
}

TEST(Report, HumanUnits) {
  EXPECT_EQ(human_time(122.97e-6), "123 µs");
  EXPECT_EQ(human_time(1.5e-3), "1.5 ms");
  EXPECT_EQ(human_rate(273e9, "B/s"), "273 GB/s");
  EXPECT_EQ(human_rate(62.5e12, "FLOP/s"), "62.5 TFLOP/s");
  EXPECT_EQ(human_bytes(33'570'816), "33.6 MB");
}

// A note about the checkpoint's own quantization belongs to passes that keep
// its formats: DeepSeek-V3's fp8 note under its fp8 weights, not under NVFP4
// weights (NVIDIA's release); the model document keeps it.
TEST(Report, CheckpointQuantizationNotesOnlyWhereItsFormatsRun) {
  const ModelSpec m = load_model("deepseek-v3");
  ASSERT_FALSE(m.quantization_notes.empty());
  const std::string& fp8_note = m.quantization_notes.front();
  EXPECT_EQ(fp8_note.rfind("fp8 checkpoint:", 0), 0u);
  const Device& d = registry().get("b200");
  auto says = [&](const Scenario& s) {
    const auto notes = explain(m, d, s, predict(m, d, s));
    return std::find(notes.begin(), notes.end(), fp8_note) != notes.end();
  };
  Scenario native;
  native.tp = 8;
  EXPECT_TRUE(says(native));
  Scenario fp4 = native;
  fp4.precision.weights = Format::kNvfp4;
  EXPECT_FALSE(says(fp4));
  const auto doc = to_json(m);
  EXPECT_NE(doc["notes"].dump().find("fp8 checkpoint:"), std::string::npos);
}

TEST(Report, TableCsvQuotesFields) {
  Table t({"a", "b"});
  t.add_row({"x,y", "say \"hi\""});
  EXPECT_EQ(t.csv(), "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n");
  const std::string text = t.text();
  EXPECT_NE(text.find("x,y"), std::string::npos);
  EXPECT_NE(text.find("---"), std::string::npos);
}

// Issue #10, item 12: past E (1e18) come Z and Y, then scientific notation.
TEST(Report, LargeCountsHaveValidUnits) {
  EXPECT_EQ(human_rate(2.5e21, "FLOP"), "2.50 ZFLOP");
  EXPECT_EQ(human_rate(3e24, "FLOP"), "3.00 YFLOP");
  EXPECT_EQ(human_rate(4.2e30, "FLOP"), "4.2e+30 FLOP");
  EXPECT_EQ(human_count(999e18), "999 E");
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// Issue 13 item 8: a long last column wraps at spaces to the width given,
// continuation lines indented to the column; no width: one line a row.
TEST(Table, WrapsTheLastColumnToTheWidth) {
  Table t({"a", "source"});
  t.add_row({"x", "one two three four five six seven eight nine ten eleven twelve thirteen"});
  const std::string wrapped = t.text(40);
  std::size_t lines = 0, longest = 0, start = 0;
  for (std::size_t end; (end = wrapped.find('\n', start)) != std::string::npos; start = end + 1) {
    ++lines;
    longest = std::max(longest, end - start);
    if (lines > 3) {
      EXPECT_EQ(wrapped.compare(start, 3, "   "), 0) << wrapped;  // indented to the column
    }
  }
  // The column starts at 3 ("a" and two spaces); 40 - 3 = 37 columns is more than the 24 minimum.
  EXPECT_LE(longest, 40u) << wrapped;
  EXPECT_GE(lines, 4u);  // header, rule, and the row over two or more lines
  EXPECT_EQ(t.text(0), t.text());
  const std::string plain = t.text();
  EXPECT_EQ(std::count(plain.begin(), plain.end(), '\n'), 3);
}

}  // namespace
}  // namespace roofline
