// The serving model: the steady state of continuous batching built from
// predict() (roofline/serving.h).
#include "roofline/serving.h"

#include <gtest/gtest.h>

#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/search.h"
#include "roofline/validate.h"

namespace roofline {
namespace {

const Registry& devices() {
  static const Registry r = Registry::built_in();
  return r;
}

ServingScenario llama70b_on_two_h200(std::int64_t concurrency) {
  ServingScenario s;
  s.isl = 1024;
  s.osl = 256;
  s.concurrency = concurrency;
  s.step.tp = 2;
  s.step.precision.weights = Format::kFp8;
  s.step.precision.act = Format::kFp8;
  return s;
}

ModelOptions vllm() {
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("vllm");
  return o;
}

// TPOT is the plain decode step plus running / osl of what one prompt adds to
// a step; the rest follows by Little's law over the closed loop.
TEST(Serving, StepsAndRatesComposeFromPredictions) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  const ServingScenario s = llama70b_on_two_h200(64);
  const ServingResult r = predict_serving(m, d, s, vllm());
  ASSERT_EQ(r.running, 64);  // 64 requests of 1,280 tokens fit easily
  Scenario step = s.step;
  step.batch = 64;
  step.seq_len = 1024 + 128;
  const double plain = predict(m, d, step, vllm()).time_s;
  step.prefill_tokens = 1024;
  step.prefill_prompt = 1024;
  const double with_prompt = predict(m, d, step, vllm()).time_s;
  constexpr double kRelative = 1e-12;
  EXPECT_NEAR(r.plain_step_s, plain, kRelative * plain);
  EXPECT_NEAR(r.prompt_step_s, with_prompt, kRelative * with_prompt);
  const double tpot = plain + 64.0 / 256 * (with_prompt - plain);
  EXPECT_NEAR(r.tpot_s, tpot, kRelative * tpot);
  EXPECT_NEAR(r.output_tokens_per_s_per_user, 1 / tpot, kRelative / tpot);
  // TTFT: half a step, the step carrying the prompt, the wait behind others.
  EXPECT_NEAR(r.ttft_s, 0.5 * tpot + with_prompt + r.prompt_queue_wait_s, kRelative);
  EXPECT_GE(r.prompt_queue_wait_s, 0);
  EXPECT_DOUBLE_EQ(r.queue_wait_s, 0);  // every client's request fits
  EXPECT_NEAR(r.e2e_s, r.ttft_s + 255 * tpot, kRelative);
  // Little's law: 64 requests in flight, each for e2e seconds, 256 tokens each.
  EXPECT_NEAR(r.output_tokens_per_s, 64 / r.e2e_s * 256, 1e-9 * r.output_tokens_per_s);
  EXPECT_EQ(r.gpus, 2);
  EXPECT_NEAR(r.output_tokens_per_s_per_gpu, r.output_tokens_per_s / 2, 1e-9);
  EXPECT_FALSE(r.notes.empty());
}

// Past the KV capacity, the extra clients wait for a slot: the throughput
// stays that of the requests that fit, and the wait goes into TTFT.
TEST(Serving, ClientsBeyondTheKvCapacityQueue) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  const ServingResult at_fit = predict_serving(m, d, llama70b_on_two_h200(1), vllm());
  const std::int64_t fit = at_fit.max_concurrency_that_fits;
  ASSERT_GT(fit, 1);
  const ServingResult full = predict_serving(m, d, llama70b_on_two_h200(fit), vllm());
  const ServingResult over = predict_serving(m, d, llama70b_on_two_h200(2 * fit), vllm());
  EXPECT_EQ(over.running, fit);
  EXPECT_EQ(over.limited_by, "kv_capacity");
  EXPECT_NEAR(over.output_tokens_per_s, full.output_tokens_per_s, 1e-9 * full.output_tokens_per_s);
  EXPECT_NEAR(over.tpot_s, full.tpot_s, 1e-12);
  // Twice the clients at the same rate: each cycle takes twice as long, and
  // the difference is the wait for a slot.
  EXPECT_NEAR(over.queue_wait_s, full.e2e_s, 1e-9 * full.e2e_s);
  EXPECT_NEAR(over.ttft_s, full.ttft_s + over.queue_wait_s, 1e-9);
}

TEST(Serving, BadSizesAndModelsThatDoNotFitAreRefused) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(4);
  s.isl = 0;
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
  s = llama70b_on_two_h200(0);
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
  // 70B in bf16 (141 GB) on one 80 GB H100 leaves no room for any KV cache.
  ServingScenario big;
  big.step.tp = 1;
  EXPECT_THROW((void)predict_serving(m, devices().get("h100"), big, vllm()), Unsupported);
}

TEST(Serving, EveryRowOfTheDevelopmentSetIsPredictedOrRefused) {
  const DecodeStepReport r = validate_serving(built_in_serving_runs(), devices());
  EXPECT_EQ(r.predicted + r.refused, 2101);  // 1,502 aggregated + 599 disaggregated
  ASSERT_FALSE(r.ttft_groups.empty());
  EXPECT_EQ(r.ttft_groups[0].group, "all");
  EXPECT_EQ(r.ttft_groups[0].rows, r.predicted);
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// The search predicts each configuration with the serving model, keeps the
// Pareto front, and picks the most tokens/s per GPU that meets the targets.
TEST(Search, FrontAndBestFollowFromTheServingModel) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  SearchSpec spec;
  spec.gpus = 4;
  spec.isl = 1024;
  spec.osl = 256;
  spec.tpot_max_s = 0.03;
  spec.engines = {"vllm"};
  spec.weights = {Format::kFp8};
  spec.concurrencies = {1, 8, 64};
  const SearchResult r = search_deployments(m, d, spec);
  // TP 1, 2, 4 (fp8 70B fits one H200) x 3 concurrencies.
  EXPECT_EQ(r.evaluated + r.refused, 9);
  ASSERT_FALSE(r.front.empty());
  // Each front point is what predict_serving gives one replica, times the replicas.
  for (const Deployment& x : r.front) {
    ServingScenario s;
    s.isl = 1024;
    s.osl = 256;
    s.concurrency = x.concurrency;
    s.step.tp = x.tp;
    s.step.precision.weights = Format::kFp8;
    s.step.precision.act = Format::kFp8;
    const ServingResult one = predict_serving(m, d, s, vllm());
    EXPECT_NEAR(x.tokens_per_s, one.output_tokens_per_s * static_cast<double>(4 / x.tp),
                1e-9 * x.tokens_per_s);
    EXPECT_NEAR(x.tokens_per_s_per_gpu, x.tokens_per_s / 4, 1e-9 * x.tokens_per_s);
  }
  // No front point dominates another; ascending per user, descending per GPU.
  for (std::size_t i = 1; i < r.front.size(); ++i) {
    EXPECT_GT(r.front[i].tokens_per_s_per_user, r.front[i - 1].tokens_per_s_per_user);
    EXPECT_LT(r.front[i].tokens_per_s_per_gpu, r.front[i - 1].tokens_per_s_per_gpu);
  }
  ASSERT_TRUE(r.best.has_value());
  EXPECT_TRUE(r.best->meets_targets);
  EXPECT_LE(r.best->serving.tpot_s, 0.03);
  for (const auto& x : r.runners_up) {
    EXPECT_TRUE(!x.deployment.meets_targets ||
                x.deployment.tokens_per_s_per_gpu <= r.best->tokens_per_s_per_gpu);
    EXPECT_FALSE(x.why.empty());
  }
}

TEST(Search, BadSpecsAreRefused) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h100");
  SearchSpec spec;
  spec.gpus = 0;
  EXPECT_THROW((void)search_deployments(m, d, spec), InvalidArgument);
  spec = {};
  spec.engines = {"nope"};
  EXPECT_THROW((void)search_deployments(m, d, spec), NotFound);
  spec = {};
  spec.tpot_max_s = -1;
  EXPECT_THROW((void)search_deployments(m, d, spec), InvalidArgument);
}

}  // namespace
}  // namespace roofline
