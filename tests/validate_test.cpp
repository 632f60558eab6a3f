#include "roofline/validate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "roofline/error.h"

namespace roofline {
namespace {

TEST(Validate, BuiltInCasesAllHaveSourcesAndEvaluate) {
  const auto cases = built_in_validation();
  ASSERT_GE(cases.size(), 20u);
  const Registry reg = Registry::built_in();
  const ValidationReport r = validate_cases(cases, reg);
  EXPECT_EQ(r.evaluated, static_cast<int>(cases.size()));
  for (const auto& row : r.rows) {
    EXPECT_TRUE(row.error.empty()) << row.c.id << ": " << row.error;
    EXPECT_FALSE(row.c.source.empty()) << row.c.id;
    EXPECT_GT(row.predicted, 0) << row.c.id;
  }
  EXPECT_GT(r.max_abs_error_pct, 0);
  EXPECT_LE(r.median_abs_error_pct, r.max_abs_error_pct);
}

// The realistic mode must be closer to measurements than the pure roofline:
// the achievable fractions and overheads are there for that reason.
TEST(Validate, RealisticModeBeatsThePureRoofline) {
  const auto cases = built_in_validation();
  const Registry reg = Registry::built_in();
  ModelOptions ideal;
  ideal.mode = Mode::kIdeal;
  EXPECT_LT(validate_cases(cases, reg).median_abs_error_pct,
            validate_cases(cases, reg, ideal).median_abs_error_pct);
}

nlohmann::json one_case() {
  return nlohmann::json::parse(
      R"({"sources": {"s": "a paper"}, "cases": [{"id": "X", "hardware": "h100",
      "model": "llama-3.1-8b", "framework": "f", "weights": "bf16", "act": "bf16", "kv": "bf16", "batch": 1,
      "prompt": 1, "gen": 128, "metric": "decode_tokens_per_s", "value": 150, "source": "s"}]})");
}

// A single case: the error is (predicted - measured) / measured.
TEST(Validate, ErrorIsRelativeToTheMeasurement) {
  const auto cases = parse_validation(one_case().dump(), "v.json");
  const Registry reg = Registry::built_in();
  const ValidationReport r = validate_cases(cases, reg);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_NEAR(r.rows[0].error_pct, (r.rows[0].predicted - 150) / 150 * 100, 1e-9);
  EXPECT_DOUBLE_EQ(r.median_abs_error_pct, std::fabs(r.rows[0].error_pct));
}

TEST(Validate, SchemaIsStrict) {
  auto doc = one_case();
  doc["cases"][0]["colour"] = "red";
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
  doc = one_case();
  doc["cases"][0]["metric"] = "vibes";
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
  doc = one_case();
  doc["cases"][0]["source"] = "nowhere";
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
  doc = one_case();
  doc["cases"][0]["value"] = -1;
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
  doc = one_case();
  doc["cases"][0].erase("batch");
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
}

TEST(Validate, UnknownDevicesBecomeRowErrors) {
  auto doc = one_case();
  doc["cases"][0]["hardware"] = "h9000";
  const Registry reg = Registry::built_in();
  const ValidationReport r = validate_cases(parse_validation(doc.dump(), "v.json"), reg);
  EXPECT_EQ(r.evaluated, 0);
  EXPECT_NE(r.rows[0].error.find("h9000"), std::string::npos);
}

}  // namespace
}  // namespace roofline
