#include "roofline/sweep.h"

#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "roofline/error.h"

namespace roofline {
namespace {

const Registry& registry() {
  static const Registry r = Registry::built_in();
  return r;
}

SweepSpec small_spec() {
  SweepSpec s;
  s.models = {load_model("llama-3.1-8b"), load_model("mixtral-8x7b")};
  s.devices = {&registry().get("h100"), &registry().get("a100")};
  s.phases = {Phase::kDecode, Phase::kPrefill};
  s.batches = {1, 8};
  s.seq_lens = {512, 4096};
  s.weights = {std::nullopt, Format::kFp8};
  s.acts = {Format::kBf16, Format::kFp8};
  return s;
}

std::string run(const SweepSpec& s, SweepFormat f, unsigned threads) {
  std::string out;
  run_sweep(
      s, f, [&](std::string_view chunk) { out.append(chunk); }, {}, threads);
  return out;
}

TEST(Sweep, OneRowPerCombinationInOrder) {
  const SweepSpec s = small_spec();
  EXPECT_EQ(sweep_rows(s), 2u * 2 * 2 * 2 * 2 * 2 * 2);
  const std::string csv = run(s, SweepFormat::kCsv, 2);
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("model,hardware,phase,batch,seq_len,", 0), 0u);
  int rows = 0, errors = 0;
  std::string first;
  while (std::getline(in, line)) {
    if (rows == 0) first = line;
    ++rows;
    // fp8 activations on the A100 (no fp8 tensor cores) are error rows, not failures.
    if (line.find("a100-80gb") != std::string::npos &&
        line.find(",fp8,fp8,") != std::string::npos) {
      EXPECT_NE(line.find("cannot compute in fp8"), std::string::npos) << line;
      ++errors;
    }
  }
  EXPECT_EQ(rows, 128);
  EXPECT_EQ(errors, 32);  // A100 rows with fp8 activations: 2 models x 2 phases x 2 batches x 2
                          // lengths x 2 weights
  // The first row is the first element of every list.
  EXPECT_EQ(first.rfind("llama-3.1-8b,h100-sxm,decode,1,512,native,bf16,bf16,auto,1,,", 0), 0u)
      << first;
}

TEST(Sweep, ThreadCountDoesNotChangeTheOutput) {
  const SweepSpec s = small_spec();
  EXPECT_EQ(run(s, SweepFormat::kCsv, 1), run(s, SweepFormat::kCsv, 2));
  EXPECT_EQ(run(s, SweepFormat::kJsonLines, 1), run(s, SweepFormat::kJsonLines, 3));
}

TEST(Sweep, JsonIsOneValidArray) {
  const auto j = nlohmann::json::parse(run(small_spec(), SweepFormat::kJson, 2));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 128u);
  EXPECT_EQ(j[0]["model"], "llama-3.1-8b");
  EXPECT_GT(j[0]["time_s"].get<double>(), 0);
  int errors = 0;
  for (const auto& row : j) errors += row.contains("error");
  EXPECT_EQ(errors, 32);
}

TEST(Sweep, RowsMatchSinglePredictions) {
  SweepSpec s = small_spec();
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 2));
  Scenario sc;
  sc.phase = Phase::kPrefill;
  sc.batch = 8;
  sc.seq_len = 4096;
  const Prediction p = predict(s.models[1], registry().get("h100"), sc);
  bool found = false;
  for (const auto& row : j) {
    if (row["model"] == "mixtral-8x7b" && row["hardware"] == "h100-sxm" &&
        row["phase"] == "prefill" && row["batch"] == 8 && row["seq_len"] == 4096 &&
        row["weights"] == "native" && row["act"] == "bf16") {
      EXPECT_NEAR(row["time_s"].get<double>(), p.time_s, p.time_s * 1e-5);  // 6 significant digits
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Sweep, StrategiesReplaceTheFormatLists) {
  SweepSpec s = small_spec();
  s.strategies = {load_strategy("fp8_balanced"), load_strategy("nvfp4_blackwell")};
  EXPECT_EQ(sweep_rows(s),
            2u * 2 * 2 * 2 * 2 * 2);  // models, devices, phases, batches, lengths, strategies
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 2));
  ASSERT_EQ(j.size(), 64u);
  int fallbacks = 0;
  for (const auto& row : j) {
    EXPECT_FALSE(row.contains("error")) << row.dump();  // strategies fall back instead of failing
    if (row["strategy"] == "nvfp4_blackwell" && row["hardware"] == "a100-80gb")
      fallbacks += row["act"] == "bf16";
  }
  EXPECT_EQ(fallbacks, 16);
}

// visit_sweep gives the rows of run_sweep as values: each row once, whatever
// the thread count, with the text rows' numbers (to their 6 digits) and errors.
TEST(Sweep, VisitedRowsAreTheTextRows) {
  const SweepSpec s = small_spec();
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 2));
  for (unsigned threads : {1u, 3u}) {
    std::vector<int> seen(j.size(), 0);
    std::vector<double> time(j.size(), -1);
    std::vector<std::string> error(j.size());
    std::mutex m;
    visit_sweep(
        s,
        [&](std::uint64_t i, const SweepPoint& pt, const Prediction* p, std::string_view why) {
          const std::lock_guard<std::mutex> lock(m);
          ++seen[i];
          EXPECT_EQ(j[i]["model"], s.models[pt.model].id);
          EXPECT_EQ(j[i]["hardware"], s.devices[pt.device]->id);
          EXPECT_EQ(j[i]["batch"], pt.scenario.batch);
          EXPECT_EQ(j[i]["seq_len"], pt.scenario.seq_len);
          EXPECT_EQ(j[i]["act"], format_id(pt.scenario.precision.act));
          EXPECT_EQ((p == nullptr), !why.empty());
          if (p) time[i] = p->time_s;
          error[i] = why;
        },
        threads);
    for (std::size_t i = 0; i < j.size(); ++i) {
      EXPECT_EQ(seen[i], 1) << i;
      if (j[i].contains("error")) {
        EXPECT_EQ(error[i], j[i]["error"].get<std::string>());
      } else {
        EXPECT_NEAR(time[i], j[i]["time_s"].get<double>(), time[i] * 1e-5) << i;
      }
    }
  }
}

TEST(Sweep, WhatTheVisitorThrowsReachesTheCaller) {
  const SweepSpec s = small_spec();
  EXPECT_THROW(visit_sweep(
                   s,
                   [](std::uint64_t i, const SweepPoint&, const Prediction*, std::string_view) {
                     if (i == 5) throw InvalidArgument("stop");
                   },
                   2),
               InvalidArgument);
  EXPECT_THROW(visit_sweep(s, {}, kMaxSweepThreads + 1), InvalidArgument);
  EXPECT_THROW(visit_sweep(s, {}, 1, 10), InvalidArgument);  // more rows than allowed
}

TEST(Sweep, SizeIsCapped) {
  SweepSpec s = small_spec();
  s.batches.assign(10'000, 1);
  s.seq_lens.assign(10'000, 1);
  EXPECT_THROW((void)sweep_rows(s), InvalidArgument);
  s.batches.clear();
  EXPECT_THROW((void)sweep_rows(s), InvalidArgument);
}

}  // namespace
}  // namespace roofline
