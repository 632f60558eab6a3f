// The serving model: a simulation of a closed-loop benchmark against engine
// schedulers, its steps priced by predict() (roofline/serving.h).
#include "roofline/serving.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>

#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/report.h"
#include "roofline/search.h"
#include "roofline/validate.h"
#include "serving/simulate.h"

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

// Whether one of the result's notes holds `text`.
bool notes_say(const ServingResult& r, std::string_view text) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// Options that run the named engine's profile.
ModelOptions with_engine(std::string_view id) {
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get(id);
  return o;
}

ModelOptions vllm() { return with_engine("vllm"); }

// The simulation alone, with a step cost simple enough to follow by hand:
// 1 ms a step plus 1 us per prompt token, whatever the decode batch.
namespace sim = roofline::detail;
constexpr double kStep = 1e-3, kPerToken = 1e-6;
constexpr double kExact = 1e-12;  // sums of a few doubles

sim::PoolSpec simple_pool(sim::PoolSpec::Role role = sim::PoolSpec::Role::kMixed) {
  sim::PoolSpec p;
  p.role = role;
  p.kv_tokens = 1 << 20;
  p.max_running = 1 << 10;
  p.token_budget = 1 << 12;
  p.cost = [](std::int64_t, double, std::int64_t prefill) {
    return kStep + kPerToken * static_cast<double>(prefill);
  };
  return p;
}

sim::SimSpec simple_spec(std::int64_t clients, std::int64_t rounds) {
  sim::SimSpec s;
  s.isl = 100;
  s.osl = 10;
  s.clients = clients;
  s.requests_per_client = rounds;
  s.first = simple_pool();
  return s;
}

// One client: its prompt takes one step (1 ms + 100 us), then nine decode steps.
TEST(ServingSimulation, OneClientPrefillsThenDecodes) {
  const sim::SimResult r = sim::simulate_serving(simple_spec(1, 3));
  ASSERT_EQ(r.ttft_s.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(r.ttft_s[i], kStep + 100 * kPerToken, kExact);
    EXPECT_NEAR(r.tpot_s[i], kStep, kExact);
    EXPECT_NEAR(r.e2e_s[i], kStep + 100 * kPerToken + 9 * kStep, kExact);
  }
  EXPECT_NEAR(r.duration_s, 3 * r.e2e_s[0], kExact);
  EXPECT_EQ(r.steps, 30);
  EXPECT_EQ(r.prompt_steps, 3);
  EXPECT_EQ(r.preemptions, 0);
}

// A burst of clients: the engine starts on the first request to arrive, alone
// (1 ms + 100 us); the other three share the next step (1 ms + 300 us), and
// the two groups keep apart in the second round (the first group's prompt
// again alone, 2.1 ms after its client sent it: it waits out a decode step).
TEST(ServingSimulation, TheFirstOfABurstRunsAloneAndTheGroupsKeepApart) {
  const sim::SimResult r = sim::simulate_serving(simple_spec(4, 2));
  ASSERT_EQ(r.ttft_s.size(), 8u);
  std::vector<double> ttft = r.ttft_s;
  std::sort(ttft.begin(), ttft.end());
  EXPECT_NEAR(ttft[0], kStep + 100 * kPerToken, kExact);
  EXPECT_NEAR(ttft[1], 2 * kStep + 100 * kPerToken, kExact);
  for (std::size_t i = 2; i < 8; ++i)
    EXPECT_NEAR(ttft[i], 2 * kStep + 400 * kPerToken, kExact) << i;
}

// Batches formed a step ahead (overlap scheduling), one client: the step after
// a request's last still holds it (formed before its completion was known),
// so each later request's prompt runs one decode step (1 ms) after the reply
// arrives: TTFTs 1.1, 2.1, 2.1 ms; each request adds that step (10 + 1 each).
TEST(ServingSimulation, ABatchFormedAheadHoldsTheFinishedRequestOneStepMore) {
  sim::SimSpec s = simple_spec(1, 3);
  s.first.formed_a_step_ahead = true;
  const sim::SimResult r = sim::simulate_serving(s);
  ASSERT_EQ(r.ttft_s.size(), 3u);
  EXPECT_NEAR(r.ttft_s[0], kStep + 100 * kPerToken, kExact);
  EXPECT_NEAR(r.ttft_s[1], 2 * kStep + 100 * kPerToken, kExact);
  EXPECT_NEAR(r.ttft_s[2], 2 * kStep + 100 * kPerToken, kExact);
  for (double t : r.tpot_s) EXPECT_NEAR(t, kStep, kExact);
  EXPECT_EQ(r.steps, 33);
  EXPECT_EQ(r.kv_left, 0);
  EXPECT_EQ(r.running_left, 0);
}

// Two clients, batches formed a step ahead. The burst at t = 0 is no reply:
// request B still joins step 2 (1.1-2.2 ms) beside A's first decode token, as
// without overlap. A finishes with step 10 (at 10.2 ms); step 11 (B's last
// decode, A riding along) was formed at 9.2 ms and step 12 (B riding alone)
// at 10.2 ms, as A's reply A' arrived: A' waits for step 13 (12.2-13.3 ms),
// TTFT 3.1 ms against 2.1 ms when each batch is formed as its step starts; B'
// (sent at 11.2 ms) joins step 14 beside A's decode, 14.4 ms: TTFT 3.2 ms.
TEST(ServingSimulation, AReplyMissesTheBatchFormedAsItArrives) {
  sim::SimSpec s = simple_spec(2, 2);
  const sim::SimResult now = sim::simulate_serving(s);
  s.first.formed_a_step_ahead = true;
  const sim::SimResult ahead = sim::simulate_serving(s);
  ASSERT_EQ(now.ttft_s.size(), 4u);
  ASSERT_EQ(ahead.ttft_s.size(), 4u);
  const double prompt = kStep + 100 * kPerToken;  // 1.1 ms
  const double mixed = kStep + 100 * kPerToken;   // a prompt beside decode tokens
  EXPECT_NEAR(now.ttft_s[0], prompt, kExact);
  EXPECT_NEAR(now.ttft_s[1], prompt + mixed, kExact);
  EXPECT_NEAR(now.ttft_s[2], kStep + prompt, kExact);
  EXPECT_NEAR(now.ttft_s[3], prompt + mixed, kExact);
  EXPECT_NEAR(ahead.ttft_s[0], prompt, kExact);
  EXPECT_NEAR(ahead.ttft_s[1], prompt + mixed, kExact);
  EXPECT_NEAR(ahead.ttft_s[2], 2 * kStep + prompt, kExact);
  EXPECT_NEAR(ahead.ttft_s[3], kStep + prompt + mixed, kExact);
  EXPECT_EQ(ahead.kv_left, 0);
  EXPECT_EQ(ahead.running_left, 0);
}

// A 250-token budget shared with decode tokens: step 1 is the first prompt
// alone; step 2 carries its decode token and 249 prompt tokens (prompts 2
// and 3 and 49 of prompt 4); step 3 three decode tokens and prompt 4's last 51.
TEST(ServingSimulation, ChunkedPromptsShareTheBudgetWithDecodeTokens) {
  sim::SimSpec s = simple_spec(4, 1);
  s.first.token_budget = 250;
  const sim::SimResult r = sim::simulate_serving(s);
  std::vector<double> ttft = r.ttft_s;
  std::sort(ttft.begin(), ttft.end());
  const double step1 = kStep + 100 * kPerToken, step2 = kStep + 249 * kPerToken,
               step3 = kStep + 51 * kPerToken;
  EXPECT_NEAR(ttft[0], step1, kExact);
  EXPECT_NEAR(ttft[1], step1 + step2, kExact);
  EXPECT_NEAR(ttft[2], step1 + step2, kExact);
  EXPECT_NEAR(ttft[3], step1 + step2 + step3, kExact);
}

// The gaps between streamed tokens (vLLM's ITL), the same budget: request 1's
// first gap is step 2 (1 ms + 249 us, beside the prompts), requests 1-3 then
// wait out step 3 (1 ms + 51 us, beside prompt 4's last chunk), and every
// other gap is a plain 1 ms step: 9 gaps a request, 36 in all.
TEST(ServingSimulation, TokenGapsAreTheStepsEachRequestWaitedOut) {
  sim::SimSpec s = simple_spec(4, 1);
  s.first.token_budget = 250;
  const sim::SimResult r = sim::simulate_serving(s);
  const auto ns = [](double t) { return std::llround(t * 1e9); };
  std::map<long long, std::int64_t> gaps;  // by the nanosecond
  std::int64_t count = 0;
  for (const auto& [gap, n] : r.token_gaps) {
    gaps[ns(gap)] += n;
    count += n;
  }
  EXPECT_EQ(count, 4 * 9);
  EXPECT_EQ(gaps[ns(kStep + 249 * kPerToken)], 1);
  EXPECT_EQ(gaps[ns(kStep + 51 * kPerToken)], 3);
  EXPECT_EQ(gaps[ns(kStep)], 32);
  EXPECT_EQ(gaps.size(), 3u);
}

// One client: its nine decode steps are its nine gaps, 1 ms each.
TEST(ServingSimulation, OneClientsGapsAreItsDecodeSteps) {
  const sim::SimResult r = sim::simulate_serving(simple_spec(1, 3));
  std::int64_t count = 0;
  for (const auto& [gap, n] : r.token_gaps) {
    EXPECT_NEAR(gap, kStep, kExact);
    count += n;
  }
  EXPECT_EQ(count, 3 * 9);
}

// Prefill-first (SGLang): steps 2 and 3 carry prompt work and no decode
// tokens, so the first request decodes two steps later than with mixed steps,
// and requests 2 and 3 one step later.
TEST(ServingSimulation, PrefillFirstPausesDecoding) {
  sim::SimSpec mixed = simple_spec(4, 1);
  mixed.first.token_budget = 250;
  sim::SimSpec first = mixed;
  first.first.prefill_first = true;
  const sim::SimResult a = sim::simulate_serving(mixed), b = sim::simulate_serving(first);
  std::vector<double> ea = a.e2e_s, eb = b.e2e_s;
  std::sort(ea.begin(), ea.end());
  std::sort(eb.begin(), eb.end());
  EXPECT_NEAR(eb[0] - ea[0], 2 * kStep, kExact);
  EXPECT_NEAR(eb[1] - ea[1], kStep, kExact);
  EXPECT_NEAR(eb[2] - ea[2], kStep, kExact);
}

// Whole-length admission (TensorRT-LLM): a cache for two whole requests runs
// two at a time; the others wait for a whole request to finish.
TEST(ServingSimulation, WholeRequestReservationQueuesTheRest) {
  sim::SimSpec s = simple_spec(4, 1);
  s.first.kv_tokens = 2 * (100 + 10);
  s.first.reserve_whole = true;
  const sim::SimResult r = sim::simulate_serving(s);
  std::vector<double> ttft = r.ttft_s, e2e = r.e2e_s;
  std::sort(ttft.begin(), ttft.end());
  std::sort(e2e.begin(), e2e.end());
  EXPECT_GT(ttft[2], e2e[0]);  // the third is admitted only when the first finishes
  EXPECT_GT(r.admit_wait_s, 0);
  EXPECT_LE(r.decoding_step_sum / static_cast<double>(r.decode_steps), 2.0 + kExact);
  EXPECT_EQ(r.preemptions, 0);
}

// A paged cache holds whole blocks: with room for two requests of 110 tokens
// (220), blocks of 32 tokens round each to 128, so one runs at a time; with
// blocks of 2 (110 is whole) two still run together.
TEST(ServingSimulation, PagedCachesHoldWholeBlocks) {
  auto most_decoding = [](std::int64_t block) {
    sim::SimSpec s = simple_spec(4, 1);
    s.first.kv_tokens = 2 * (100 + 10);
    s.first.reserve_whole = true;
    s.first.kv_block_tokens = block;
    const sim::SimResult r = sim::simulate_serving(s);
    EXPECT_EQ(r.e2e_s.size(), 4u);
    return r.decoding_step_sum / static_cast<double>(r.decode_steps);
  };
  EXPECT_GT(most_decoding(2), 1.0 + kExact);  // two at once for part of the run
  EXPECT_NEAR(most_decoding(32), 1.0, kExact);
  // On-demand admission takes the prompt's blocks: 100 tokens in blocks of
  // 64 take 128, so four prompts no longer fit in 420 tokens at once and
  // fewer run together than token-granular (which preempts instead).
  sim::SimSpec s = simple_spec(4, 1);
  s.first.kv_tokens = 420;
  s.first.kv_block_tokens = 64;
  const sim::SimResult r = sim::simulate_serving(s);
  EXPECT_EQ(r.e2e_s.size(), 4u);
  EXPECT_GT(r.admit_wait_s, 0);
  // A block larger than the cache's room for one request is refused.
  s.first.kv_tokens = 150;
  s.first.kv_block_tokens = 128;  // 110 tokens take 128: fits; 256 would not
  EXPECT_NO_THROW((void)sim::simulate_serving(s));
  s.first.kv_tokens = 120;
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
  s.first.kv_block_tokens = 0;
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
}

// Every request gives back the cache it took, whatever the pool's block:
// aggregated with preemptions, and disaggregated, where the prefill worker
// (blocks of 64: a 100-token prompt takes 128) and the decode worker (blocks
// of 16: 101 tokens take 112) round the same request differently.
TEST(ServingSimulation, PoolsEndEmpty) {
  for (std::int64_t block : {1, 16, 64})
    for (bool ahead : {false, true}) {
      sim::SimSpec mixed = simple_spec(4, 3);
      mixed.first.kv_tokens = 520;  // preempts: four prompts fit, not their growth
      mixed.first.kv_block_tokens = block;
      mixed.first.formed_a_step_ahead = ahead;
      const sim::SimResult a = sim::simulate_serving(mixed);
      EXPECT_EQ(a.e2e_s.size(), 12u);
      EXPECT_NEAR(a.kv_left, 0, 1e-9) << block;
      EXPECT_EQ(a.running_left, 0);

      sim::SimSpec split = simple_spec(6, 3);
      split.first = simple_pool(sim::PoolSpec::Role::kPrefill);
      split.first.kv_block_tokens = 64;
      split.decode = simple_pool(sim::PoolSpec::Role::kDecode);
      split.decode->kv_tokens = 3 * 112;  // three requests at once: queueing and preemption
      split.decode->kv_block_tokens = block == 1 ? 16 : block;
      split.decode->formed_a_step_ahead = ahead;
      const sim::SimResult b = sim::simulate_serving(split);
      EXPECT_EQ(b.e2e_s.size(), 18u);
      EXPECT_NEAR(b.kv_left, 0, 1e-9) << block;
      EXPECT_EQ(b.running_left, 0);
    }
}

// On-demand admission (vLLM): all four prompts fit, but not their growth;
// the newest requests are preempted and recomputed, and every one finishes.
TEST(ServingSimulation, OnDemandCachesPreemptAndRecompute) {
  sim::SimSpec s = simple_spec(4, 2);
  s.first.kv_tokens = 420;  // four prompts (400) and a few tokens each
  const sim::SimResult r = sim::simulate_serving(s);
  EXPECT_EQ(r.e2e_s.size(), 8u);
  EXPECT_GT(r.preemptions, 0);
  for (double tpot : r.tpot_s) EXPECT_GE(tpot, kStep - kExact);
}

// Disaggregated: the prefill worker gives the first token; the cache moves in
// 5 ms and the request joins the decode worker's next step. A second client
// arriving mid-run joins at once rather than after the run of decode steps.
TEST(ServingSimulation, DisaggregatedPrefillHandsOverToDecode) {
  constexpr double kTransfer = 5e-3;
  sim::SimSpec s = simple_spec(2, 4);
  s.first = simple_pool(sim::PoolSpec::Role::kPrefill);
  s.decode = simple_pool(sim::PoolSpec::Role::kDecode);
  s.transfer_s = kTransfer;
  const sim::SimResult r = sim::simulate_serving(s);
  ASSERT_EQ(r.e2e_s.size(), 8u);
  for (std::size_t i = 0; i < r.e2e_s.size(); ++i) {
    // Nine decode steps after the handoff, plus at most one step's wait to join.
    const double after_first = r.e2e_s[i] - r.ttft_s[i];
    EXPECT_GE(after_first, kTransfer + 9 * kStep - kExact);
    EXPECT_LE(after_first, kTransfer + 10 * kStep + kExact);
  }
}

// Speculative decoding: each decode step yields 4 tokens, so the 9 tokens
// after the prefill's take ceil(9 / 4) = 3 steps (the last one's surplus
// dropped); TPOT is their time over the 9 tokens.
TEST(ServingSimulation, SpeculativeStepsYieldSeveralTokens) {
  sim::SimSpec s = simple_spec(1, 2);
  s.tokens_per_step = 4;
  const sim::SimResult r = sim::simulate_serving(s);
  ASSERT_EQ(r.tpot_s.size(), 2u);
  EXPECT_NEAR(r.ttft_s[0], kStep + 100 * kPerToken, kExact);
  EXPECT_NEAR(r.e2e_s[0], kStep + 100 * kPerToken + 3 * kStep, kExact);
  EXPECT_NEAR(r.tpot_s[0], 3 * kStep / 9, kExact);
  EXPECT_EQ(r.steps, 2 * 4);
  // 3.19 tokens a step (3 drafts at 0.85) also take 3 steps for 9 tokens.
  s.tokens_per_step = 3.186625;
  EXPECT_EQ(sim::simulate_serving(s).steps, 2 * 4);
  s.tokens_per_step = 0.5;
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
}

// A cached prefix of 60 of the 100 prompt tokens: the prompt step computes
// 40 (1 ms + 40 us), and a request holds 40 + 10 tokens, so a pool of 100
// (beside the prefix) runs two at once without preempting; without the
// prefix one request (110 tokens) does not fit it.
TEST(ServingSimulation, ACachedPrefixIsNeitherComputedNorHeldPerRequest) {
  sim::SimSpec s = simple_spec(1, 1);
  s.cached_prefix = 60;
  const sim::SimResult one = sim::simulate_serving(s);
  EXPECT_NEAR(one.ttft_s[0], kStep + 40 * kPerToken, kExact);
  sim::SimSpec two = simple_spec(2, 3);
  two.cached_prefix = 60;
  two.first.kv_tokens = 100;
  const sim::SimResult r = sim::simulate_serving(two);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_EQ(r.e2e_s.size(), 6u);
  two.cached_prefix = 0;
  EXPECT_THROW((void)sim::simulate_serving(two), InvalidArgument);
  two.cached_prefix = 100;  // the whole prompt: nothing left to compute
  EXPECT_THROW((void)sim::simulate_serving(two), InvalidArgument);
}

// A pool of one prompt, one client: the first request computes its 100
// tokens (TTFT 1 ms + 100 us); the prefix cache keeps them, so each later
// request finds them (the free cache holds the kept prompt: chance 1) and
// computes only the token past the last whole block: with 16-token blocks,
// 100 - 6 x 16 = 4 tokens (TTFT 1 ms + 4 us), and it holds only those.
TEST(ServingSimulation, APromptFoundInThePrefixCacheComputesItsLastBlock) {
  sim::SimSpec s = simple_spec(1, 4);
  s.first.kv_block_tokens = 16;
  s.prompt_pool = 1;
  const sim::SimResult r = sim::simulate_serving(s);
  ASSERT_EQ(r.ttft_s.size(), 4u);
  EXPECT_EQ(r.prompts, 4);
  EXPECT_EQ(r.prefix_hits, 3);
  EXPECT_NEAR(r.ttft_s[0], kStep + 100 * kPerToken, kExact);
  for (std::size_t i = 1; i < 4; ++i) EXPECT_NEAR(r.ttft_s[i], kStep + 4 * kPerToken, kExact);
  EXPECT_EQ(r.kv_left, 0);  // what the requests took they gave back
  // Token-granular caches share all but the last token.
  s.first.kv_block_tokens = 1;
  const sim::SimResult one = sim::simulate_serving(s);
  EXPECT_NEAR(one.ttft_s[3], kStep + 1 * kPerToken, kExact);
  // Without a pool nothing is found: every prompt is computed.
  s.prompt_pool = 0;
  const sim::SimResult none = sim::simulate_serving(s);
  EXPECT_EQ(none.prefix_hits, 0);
  for (double t : none.ttft_s) EXPECT_NEAR(t, kStep + 100 * kPerToken, kExact);
}

// A kept prompt is found with the chance that the free cache holds every kept
// prompt: 64 clients over a pool of 100 prompts of 100 tokens (10,000 tokens
// once all are kept) find fewer in a cache of 6,000 tokens (what the running
// requests leave holds about half the kept prompts) than in one of 2^20,
// where every kept prompt is found; a pool larger than the 1,280 requests
// sent finds fewer still. Disaggregated pools are refused.
TEST(ServingSimulation, ASmallCacheFindsFewerKeptPrompts) {
  sim::SimSpec s = simple_spec(64, 20);
  s.prompt_pool = 100;
  const sim::SimResult ample = sim::simulate_serving(s);
  s.first.kv_tokens = 6000;
  const sim::SimResult small = sim::simulate_serving(s);
  EXPECT_GT(ample.prefix_hits, 64 * 20 / 2);  // 100 prompts seen early, most draws repeat
  EXPECT_LT(small.prefix_hits, ample.prefix_hits);
  EXPECT_GT(small.prefix_hits, 0);
  s.prompt_pool = 100000;
  const sim::SimResult sparse = sim::simulate_serving(s);
  EXPECT_LT(sparse.prefix_hits, small.prefix_hits);
  s = simple_spec(1, 1);
  s.prompt_pool = 1;
  s.first = simple_pool(sim::PoolSpec::Role::kPrefill);
  s.decode = simple_pool(sim::PoolSpec::Role::kDecode);
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
  s = simple_spec(1, 1);
  s.prompt_pool = -1;
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
}

// Random lengths: one client, so each request runs alone and its times show
// its lengths: TTFT = 1 ms + 1 us a prompt token, e2e - TTFT = 1 ms for each
// output token after the first. Every length falls in its range, they vary,
// the sum of outputs is counted, and the same spec draws the same requests.
TEST(ServingSimulation, RandomLengthsStayInTheirRanges) {
  sim::SimSpec s = simple_spec(1, 40);
  s.isl_min = 50;
  s.osl_min = 5;
  const sim::SimResult r = sim::simulate_serving(s);
  ASSERT_EQ(r.ttft_s.size(), 40u);
  ASSERT_EQ(r.tpot_s.size(), 40u);
  std::int64_t outputs = 0;
  std::vector<std::int64_t> prompts;
  for (std::size_t i = 0; i < r.ttft_s.size(); ++i) {
    const double prompt = (r.ttft_s[i] - kStep) / kPerToken;
    EXPECT_NEAR(prompt, std::round(prompt), 1e-6) << i;
    EXPECT_GE(std::llround(prompt), 50);
    EXPECT_LE(std::llround(prompt), 100);
    prompts.push_back(std::llround(prompt));
    const double decode_steps = (r.e2e_s[i] - r.ttft_s[i]) / kStep;
    EXPECT_NEAR(decode_steps, std::round(decode_steps), 1e-6) << i;
    EXPECT_GE(std::llround(decode_steps) + 1, 5);
    EXPECT_LE(std::llround(decode_steps) + 1, 10);
    outputs += std::llround(decode_steps) + 1;
    EXPECT_NEAR(r.tpot_s[i], kStep, kExact);
  }
  EXPECT_EQ(r.output_tokens, outputs);
  std::sort(prompts.begin(), prompts.end());
  EXPECT_GT(prompts.back() - prompts.front(), 25);  // 40 draws from 51 values spread out
  const sim::SimResult again = sim::simulate_serving(s);
  EXPECT_EQ(again.ttft_s, r.ttft_s);
  EXPECT_EQ(again.e2e_s, r.e2e_s);
  // A range of one value is the fixed length.
  sim::SimSpec fixed = simple_spec(4, 3), same = fixed;
  same.isl_min = same.isl;
  same.osl_min = same.osl;
  EXPECT_EQ(sim::simulate_serving(same).ttft_s, sim::simulate_serving(fixed).ttft_s);
  EXPECT_EQ(sim::simulate_serving(fixed).output_tokens, 12 * 10);
  // Requests of one output token have no TPOT, unless all have one.
  sim::SimSpec one = simple_spec(1, 30);
  one.osl = 2;
  one.osl_min = 1;
  const sim::SimResult mixed = sim::simulate_serving(one);
  EXPECT_LT(mixed.tpot_s.size(), 30u);
  EXPECT_GT(mixed.tpot_s.size(), 0u);
  EXPECT_EQ(mixed.output_tokens,
            static_cast<std::int64_t>(30 + mixed.tpot_s.size()));  // 1 each, 2 with a TPOT
  // Out of range: above the longest, or a cached prefix as long as the shortest prompt.
  s.isl_min = 101;
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
  s.isl_min = 50;
  s.osl_min = 11;
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
  s.osl_min = 5;
  s.cached_prefix = 50;
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
}

TEST(ServingSimulation, InconsistentSpecsAreRefused) {
  sim::SimSpec s = simple_spec(1, 1);
  s.first.kv_tokens = 50;  // less than one request
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
  s = simple_spec(1, 1);
  s.decode = simple_pool(sim::PoolSpec::Role::kDecode);  // the first pool is not a prefill pool
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
  s = simple_spec(0, 1);
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
  // Batch waiting: a ratio past 1, or on a pool whose steps never mix prompts
  // and decode tokens.
  s = simple_spec(1, 1);
  s.first.wait_steps = 3;
  s.first.wait_ratio = 1.5;
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
  s = simple_spec(1, 1);
  s.first = simple_pool(sim::PoolSpec::Role::kPrefill);
  s.first.wait_steps = 3;
  s.decode = simple_pool(sim::PoolSpec::Role::kDecode);
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
}

// Batch waiting (TensorRT-LLM's batch_wait_timeout_iters 3, a ratio of the
// whole 4,096-token budget, which 101 tokens never reach). Two clients: A's
// prompt runs alone (0-1.1 ms, no decode tokens beside it: no wait); B's
// 100 tokens then wait three decode steps of A (1.1-4.1 ms) and go with the
// fourth (4.1-5.2 ms): B's TTFT 5.2 ms, 2.2 ms without waiting. A decodes
// through the wait, so its end stays at 10.2 ms (1.1 + 3 + 1.1 + 5); B's
// moves from 11.2 to 14.2 ms (its first token plus nine 1 ms steps).
TEST(ServingSimulation, BatchWaitingHoldsPromptsBesideDecodeTokens) {
  sim::SimSpec s = simple_spec(2, 1);
  const sim::SimResult plain = sim::simulate_serving(s);
  s.first.wait_steps = 3;
  s.first.wait_ratio = 1.0;
  const sim::SimResult waited = sim::simulate_serving(s);
  const auto sorted = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  const std::vector<double> ttft = sorted(waited.ttft_s), e2e = sorted(waited.e2e_s);
  ASSERT_EQ(ttft.size(), 2u);
  EXPECT_NEAR(sorted(plain.ttft_s)[1], 2 * (kStep + 100 * kPerToken), kExact);
  EXPECT_NEAR(ttft[0], kStep + 100 * kPerToken, kExact);
  EXPECT_NEAR(ttft[1], 3 * kStep + 2 * (kStep + 100 * kPerToken), kExact);
  EXPECT_NEAR(e2e[0], 10.2e-3, kExact);
  EXPECT_NEAR(e2e[1], 14.2e-3, kExact);
  EXPECT_NEAR(sorted(plain.e2e_s)[1], 11.2e-3, kExact);
  EXPECT_EQ(waited.waited_steps, 3);
  EXPECT_EQ(plain.waited_steps, 0);
  EXPECT_EQ(waited.kv_left, 0);
  EXPECT_EQ(waited.running_left, 0);
}

// A step whose tokens reach the ratio of the budget takes its prompts at
// once. The threshold 0.102 x 1,000 = 102 tokens: B's 100 prompt tokens and
// A's one decode token (101) wait; with three draft tokens a decoding
// request puts 4 tokens in the step (104) and B goes at once (TTFT 2.2 ms).
TEST(ServingSimulation, BatchWaitingEndsWhenTheStepIsFullEnough) {
  sim::SimSpec s = simple_spec(2, 1);
  s.first.token_budget = 1000;
  s.first.wait_steps = 3;
  s.first.wait_ratio = 0.102;
  const sim::SimResult waited = sim::simulate_serving(s);
  s.first.decode_tokens = 4;
  const sim::SimResult full = sim::simulate_serving(s);
  EXPECT_EQ(waited.waited_steps, 3);
  EXPECT_EQ(full.waited_steps, 0);
  EXPECT_NEAR(*std::max_element(full.ttft_s.begin(), full.ttft_s.end()),
              2 * (kStep + 100 * kPerToken), kExact);
}

// A chunk cap (an attention-DP rank's share of the budget): one client's
// 100-token prompt goes 30, 30, 30 and 10 tokens a step, so its first token
// comes after four steps (4 x 1 ms + 100 x 1 us), not one.
TEST(ServingSimulation, AChunkCapSpreadsAPromptOverSteps) {
  sim::SimSpec s = simple_spec(1, 1);
  s.first.chunk_cap = 30;
  const sim::SimResult r = sim::simulate_serving(s);
  ASSERT_EQ(r.ttft_s.size(), 1u);
  EXPECT_NEAR(r.ttft_s[0], 4 * kStep + 100 * kPerToken, kExact);
  EXPECT_EQ(r.prompt_steps, 4);
  s.first.chunk_cap = -1;
  EXPECT_THROW((void)sim::simulate_serving(s), InvalidArgument);
}

// Attention-DP balance over 2 groups: with a timeout of 0 steps the count
// reaches it at once, so nothing is ever held (the same run as without). With
// a timeout, a prompt on one group waits while the other has none, at most
// the timeout's steps (each at most a step with every prompt of the run, 8
// x 100 tokens: 1.8 ms), and every request still completes.
TEST(ServingSimulation, AttentionDpBalanceHoldsPromptsUntilEveryGroupHasOne) {
  sim::SimSpec s = simple_spec(8, 6);
  s.osl_min = 2;  // lengths drawn from 2 to 10: completions spread out
  const sim::SimResult plain = sim::simulate_serving(s);
  s.first.balance_groups = 2;
  const sim::SimResult at_once = sim::simulate_serving(s);
  EXPECT_EQ(at_once.ttft_s, plain.ttft_s);
  EXPECT_EQ(at_once.e2e_s, plain.e2e_s);
  EXPECT_EQ(at_once.balance_held_steps, 0);
  EXPECT_EQ(plain.balance_held_steps, 0);

  constexpr std::int64_t kTimeout = 6;
  s.first.balance_timeout = kTimeout;
  const sim::SimResult held = sim::simulate_serving(s);
  EXPECT_GT(held.balance_held_steps, 0);
  EXPECT_LT(held.balance_held_steps, held.steps);
  const auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  EXPECT_EQ(held.ttft_s.size(), plain.ttft_s.size());
  EXPECT_GT(mean(held.ttft_s), mean(plain.ttft_s));
  const double longest_step = kStep + 8 * 100 * kPerToken;
  EXPECT_LT(*std::max_element(held.ttft_s.begin(), held.ttft_s.end()),
            *std::max_element(plain.ttft_s.begin(), plain.ttft_s.end()) + kTimeout * longest_step);
  EXPECT_EQ(held.kv_left, 0);
  EXPECT_EQ(held.running_left, 0);

  // A longer timeout never holds them less.
  s.first.balance_timeout = 4 * kTimeout;
  EXPECT_GE(mean(sim::simulate_serving(s).ttft_s), mean(held.ttft_s));

  // The batching wait holds prompts that every group has, while every group
  // decodes, some steps more.
  s.first.balance_timeout = kTimeout;
  s.first.balance_batching = 3;
  EXPECT_GT(sim::simulate_serving(s).balance_held_steps, held.balance_held_steps);

  // Only a pool that mixes prompts and decode tokens balances them.
  sim::SimSpec bad = simple_spec(1, 1);
  bad.first = simple_pool(sim::PoolSpec::Role::kPrefill);
  bad.first.balance_groups = 2;
  bad.decode = simple_pool(sim::PoolSpec::Role::kDecode);
  EXPECT_THROW((void)sim::simulate_serving(bad), InvalidArgument);
  bad = simple_spec(1, 1);
  bad.first.balance_groups = 2;
  bad.first.balance_timeout = -1;
  EXPECT_THROW((void)sim::simulate_serving(bad), InvalidArgument);
}

// One client on the real model: its first token is exactly the step that
// carries its prompt, and each later token a decode step of one request
// between the prompt's context and the last token's. vLLM forms each batch a
// step ahead (async scheduling), so the step after the first request's last
// still holds it: the second request's prompt waits that one decode step at
// the finished request's 1,024 + 256 tokens, and the mean TTFT of the two is
// the prompt step plus half of it.
TEST(Serving, OneClientIsThePromptStepThenDecodeSteps) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(1);
  s.rounds = 2;
  const ServingResult r = predict_serving(m, d, s, vllm());
  Scenario step = s.step;
  step.phase = Phase::kDecode;
  step.batch = 1;
  step.seq_len = 1024;
  step.prefill_tokens = 1024;  // a grid point (2^10): no interpolation
  step.prefill_prompt = 1024;
  const double prompt = predict(m, d, step, vllm()).time_s;
  step.prefill_tokens = step.prefill_prompt = 0;
  step.seq_len = 1024 + 256;
  const double held = predict(m, d, step, vllm()).time_s;
  constexpr double kGrid = 1e-3;  // the context grid interpolates within 0.1%
  EXPECT_NEAR(r.ttft_s, prompt + held / 2, 1e-9 * prompt + kGrid * held);
  EXPECT_GT(r.ttft.p99, prompt + 0.9 * held);
  step.seq_len = 1025;
  const double early = predict(m, d, step, vllm()).time_s;
  step.seq_len = 1024 + 256;
  const double late = predict(m, d, step, vllm()).time_s;
  EXPECT_GE(r.tpot_s, early * (1 - 1e-3));  // the context grid interpolates within 0.1%
  EXPECT_LE(r.tpot_s, late * (1 + 1e-3));
  EXPECT_EQ(r.requests, 2);
  EXPECT_EQ(r.gpus, 2);
  EXPECT_NEAR(r.output_tokens_per_s, 2 * 256 / (2 * r.e2e_s), 1e-9 * r.output_tokens_per_s);
  EXPECT_EQ(r.token_budget, 8192);  // vLLM on an H200 (141 GB)
  EXPECT_EQ(r.max_running, 1024);
}

// vLLM's ITL pools every gap between two tokens of every request. With every
// output 256 tokens and one token a step, each request's TPOT is its 255 gaps'
// mean, so the gaps' mean is the requests' mean TPOT (160 requests, 40,800
// gaps); the few gaps a prompt beside the decode tokens stretches lift the
// mean above the median.
TEST(Serving, ItlPoolsEveryGapBetweenTokens) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const ServingResult r =
      predict_serving(m, devices().get("h200"), llama70b_on_two_h200(16), vllm());
  constexpr double kSum = 1e-9;  // sums of tens of thousands of doubles
  EXPECT_NEAR(r.itl.mean, r.tpot.mean, kSum * r.tpot.mean);
  EXPECT_LT(r.itl.p50, r.itl.mean);
  EXPECT_LE(r.itl.p50, r.itl.p90);
  EXPECT_LE(r.itl.p90, r.itl.p99);
  EXPECT_GT(r.itl.p50, 0);
}

// One client with 3 draft tokens at acceptance 0.85 (3.186625 tokens a step):
// the 255 tokens after the first take ceil(255 / 3.186625) = 81 steps of the
// speculative step (verification and draft passes), so TPOT is 81 steps over
// 255 tokens, each step priced between its first and last context.
TEST(Serving, SpeculativeStepsSetTpot) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(1);
  s.rounds = 1;
  s.step.draft_tokens = 3;
  s.step.acceptance = 0.85;
  const ServingResult r = predict_serving(m, d, s, vllm());
  Scenario step = s.step;
  step.phase = Phase::kDecode;
  step.batch = 1;
  step.seq_len = 1025;
  const double early = predict(m, d, step, vllm()).time_s;
  step.seq_len = 1024 + 256;
  const double late = predict(m, d, step, vllm()).time_s;
  constexpr double kGrid = 1e-3;  // the context grid interpolates within 0.1%
  EXPECT_GE(r.tpot_s, 81 * early / 255 * (1 - kGrid));
  EXPECT_LE(r.tpot_s, 81 * late / 255 * (1 + kGrid));
  const bool said = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("speculative decoding: each decode step drafts 3 tokens") != std::string::npos;
  });
  EXPECT_TRUE(said);
}

// A shared prefix of 1,024 of 2,048 prompt tokens: one client's TTFT is one
// step computing the other 1,024 (a grid point, 2^10), which attend over the
// cached prefix and causally over themselves; the cache holds the prefix once,
// so (cache - 1,024) / (1,024 + 256) requests fit.
TEST(Serving, ASharedPrefixShortensPromptsAndSavesCache) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(1);
  s.isl = 2048;
  s.rounds = 1;  // one request: no step ahead to wait (see the test above)
  s.shared_prefix = 1024;
  const ServingResult r = predict_serving(m, d, s, vllm());
  Scenario step = s.step;
  step.phase = Phase::kDecode;
  step.batch = 1;
  step.seq_len = 2048;
  step.prefill_tokens = 1024;
  step.prefill_prompt = 1024;
  step.prefill_cached = 1024;
  const double prompt = predict(m, d, step, vllm()).time_s;
  EXPECT_NEAR(r.ttft_s, prompt, 1e-9 * prompt);
  // Its attention: 1,024 x 1,024 pairs over the prefix and 1,024 x 1,025 / 2
  // causal ones a head (64 heads / TP 2 = 32 a rank), 128 dims, 80 layers.
  const Prediction priced = predict(m, d, step, vllm());
  double qk = 0;
  for (int i = 0; i < priced.graph.size; ++i) {
    const Op& op = priced.graph.ops[static_cast<std::size_t>(i)];
    if (op.kind == OpKind::kQkMatmul) qk += op.count * op.flops;
  }
  const double decode_pairs = 32.0 * 2049;  // the step's one decoding token over 2,049
  EXPECT_DOUBLE_EQ(qk, 80 * 2 * 128 * (32.0 * (1024.0 * 1024 + 1024.0 * 1025 / 2) + decode_pairs));
  ServingScenario whole = s;
  whole.shared_prefix = 0;
  const ServingResult w = predict_serving(m, d, whole, vllm());
  EXPECT_LT(r.ttft_s, w.ttft_s);
  // Whole requests of 2,304 tokens fit w.max_concurrency_that_fits times in
  // the cache (floor); with the prefix, each takes 1,280 beside 1,024 once.
  const std::int64_t cache_tokens_at_least = w.max_concurrency_that_fits * (2048 + 256);
  EXPECT_GE(r.max_concurrency_that_fits, (cache_tokens_at_least - 1024) / (1024 + 256));
  EXPECT_LE(r.max_concurrency_that_fits,
            (cache_tokens_at_least + 2048 + 256 - 1024) / (1024 + 256));
  s.shared_prefix = 2048;
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
  s.shared_prefix = -1;
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
}

// A prompt pool on the real model: with vLLM's prefix cache (on by
// default), 4 clients x 10 rounds over 5 prompts find most of them cached
// (the 5 prompts are prefilled within the first rounds), so TTFT falls and
// the hit rate is reported; the reference engine's generic scheduler has one
// too. A scheduler whose profile says it keeps none computes every prompt;
// disaggregated serving and pools out of range are refused.
TEST(Serving, APromptPoolSkipsTheCachedPrefills) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(4);
  const ServingResult unique = predict_serving(m, d, s, vllm());
  EXPECT_EQ(unique.prefix_hit_rate, 0);
  s.prompt_pool = 5;
  const ServingResult pooled = predict_serving(m, d, s, vllm());
  EXPECT_GT(pooled.prefix_hit_rate, 0.7);  // at most 5 of the 40 miss, plus first-round ties
  EXPECT_LE(pooled.prefix_hit_rate, 1.0);
  EXPECT_LT(pooled.ttft_s, 0.8 * unique.ttft_s);
  EXPECT_LE(pooled.tpot_s, unique.tpot_s * (1 + 1e-9));  // fewer prompt tokens share the steps
  EngineProfile no_cache = EngineRegistry::built_in().get("vllm");
  no_cache.scheduler.prefix_cache = false;
  ModelOptions o;
  o.engine = &no_cache;
  const ServingResult computed = predict_serving(m, d, s, o);
  EXPECT_EQ(computed.prefix_hit_rate, 0);
  EXPECT_NEAR(computed.ttft_s, unique.ttft_s, 1e-12);
  // TensorRT-LLM keeps KV blocks for reuse by default, but AIConfigurator's
  // deployment template turns that off.
  const ModelOptions trtllm = with_engine("trtllm");
  EXPECT_GT(predict_serving(m, d, s, trtllm).prefix_hit_rate, 0.7);
  ServingScenario deployed = s;
  deployed.recipe = ServingRecipe::kAiConfigurator;
  const ServingResult off = predict_serving(m, d, deployed, trtllm);
  EXPECT_EQ(off.prefix_hit_rate, 0);
  EXPECT_TRUE(std::any_of(off.notes.begin(), off.notes.end(), [](const std::string& n) {
    return n.find("keeps no prefix cache") != std::string::npos;
  }));
  deployed.prompt_pool = 0;
  EXPECT_NEAR(predict_serving(m, d, deployed, trtllm).ttft_s, off.ttft_s, 1e-12);
  s.prompt_pool = kMaxPromptPool + 1;
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
  s.prompt_pool = 5;
  s.mode = ServingMode::kDisaggregated;
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
}

// SGLang on Hopper casts its whole fp8 latent pool every decode step
// (EngineProfile::latent_cache_cast), not in a prefill worker's prompt-only
// steps: one client of DeepSeek-V3, disaggregated at TP 8 + TP 8 on H200. Its
// first token comes from the prefill worker after the wait for the decode
// worker's step; the prefill step itself costs what it does with a bf16 cache.
TEST(Serving, APrefillWorkersStepsCastNoLatentPool) {
  const ModelSpec m = load_model("deepseek-v3");
  const Device& d = devices().get("h200");
  const ModelOptions o = with_engine("sglang");
  auto run = [&](Format kv) {
    ServingScenario s;
    s.isl = 1024;
    s.osl = 64;
    s.concurrency = 1;
    s.mode = ServingMode::kDisaggregated;
    s.prefill_tp = s.decode_tp = s.step.tp = 8;
    s.step.precision.weights = s.step.precision.act = Format::kFp8;
    s.step.precision.kv = kv;
    return predict_serving(m, d, s, o);
  };
  const ServingResult fp8 = run(Format::kFp8), bf16 = run(Format::kBf16);
  Scenario step;
  step.batch = 1;
  step.seq_len = 1024;
  step.tp = 8;
  step.precision.weights = step.precision.act = step.precision.kv = Format::kFp8;
  const double cast = predict(m, d, step, o).latent_cache_cast_s;
  ASSERT_GT(cast, 0.1);                             // the pool of 42.8 GB: over 100 ms
  EXPECT_GT(fp8.tpot_s, bf16.tpot_s + 0.9 * cast);  // each decode step pays it
  // The prefill step (TTFT less the wait to be admitted) within 5% of the
  // bf16 cache's (its KV transfer and cache write differ a little), where the
  // cast would add 100% or more.
  constexpr double kPrefillTolerance = 0.05;
  const double fp8_prefill = fp8.ttft_s - fp8.queue_wait_s;
  const double bf16_prefill = bf16.ttft_s - bf16.queue_wait_s;
  EXPECT_NEAR(fp8_prefill, bf16_prefill, kPrefillTolerance * bf16_prefill);
}

// Past the KV capacity, the extra clients wait: TTFT grows by about a whole
// request while the throughput stays that of the requests that fit.
TEST(Serving, ClientsBeyondTheKvCapacityQueue) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  const ServingResult at_one = predict_serving(m, d, llama70b_on_two_h200(1), vllm());
  const std::int64_t fit = at_one.max_concurrency_that_fits;
  ASSERT_GT(fit, 1);
  const ServingResult full = predict_serving(m, d, llama70b_on_two_h200(fit), vllm());
  const ServingResult over = predict_serving(m, d, llama70b_on_two_h200(2 * fit), vllm());
  EXPECT_EQ(over.limited_by, "kv_capacity");
  EXPECT_GT(over.ttft_s, full.ttft_s + 0.5 * full.e2e_s);
  // The same cache serves the same number of tokens a second, within 10%
  // (the admission pattern differs).
  constexpr double kThroughputTolerance = 0.10;
  EXPECT_NEAR(over.output_tokens_per_s, full.output_tokens_per_s,
              kThroughputTolerance * full.output_tokens_per_s);
}

// Each engine gives its KV cache the memory its own rule does: vLLM 90% of
// the whole memory for weights, its profiling pass's activations and cache
// (2.0 GB here in release 0.11.0: 1,024 sampled rows of 128,256 logits at
// 14 bytes a logit on its FlashInfer sampler, beside 8,192 tokens of bf16
// hidden states), TensorRT-LLM 90% of what the weights and activations leave
// (80% in AIConfigurator's deployments). Llama-3.1-70B in fp8 (fp8 cache, the
// LM head in bf16 as both engines' files keep it) on one H100 (85.5 GB) leaves
// little room, and there the rules differ most: requests of 1,280 tokens
// (whole blocks of 16 and 32 tokens) fit floor(room / bytes a token / 1,280)
// times, about 10 times under vLLM's rule and 49 under TensorRT-LLM's
// (10.5 GB, after its own profiling pass). On the sort path (releases 0.11.1
// to 0.19) the pass takes 5.6 GB and not one request fits.
TEST(Serving, EachEngineSizesItsKvCacheByItsOwnRule) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h100");
  ServingScenario s = llama70b_on_two_h200(1);
  s.step.tp = 1;
  s.step.precision.kv = Format::kFp8;
  Scenario one = s.step;
  one.phase = Phase::kDecode;
  one.batch = 1;
  one.seq_len = s.isl + s.osl;
  MemoryEstimate mem = estimate_memory(m, d, one);
  // Both engines' fp8 files keep the LM head in bf16: 128,256 x 8,192 x 1 B
  // (and the fp8 scale's 4) more than the plan's fp8.
  mem.weights_bytes += 128256.0 * 8192 - 4;
  const double per_token = mem.kv_cache_bytes / static_cast<double>(s.isl + s.osl);
  const auto fits = [&](double room) {
    return static_cast<std::int64_t>(std::floor(room / per_token)) / (s.isl + s.osl);
  };
  // vLLM subtracts its profiling pass: its budget (8,192 tokens on an H100) and
  // a sampled row a request up to its limit (1,024), at its release's sampler
  // path's bytes a logit; TensorRT-LLM one request of its max_num_tokens
  // (8,192) and its one row.
  const EngineScheduler& rule = EngineRegistry::built_in().get("vllm").scheduler;
  const double profiled =
      profile_pass_activation_bytes(m, d, one, 8192, 1024, rule.kv_profile_sampler_bytes("0.11.0"));
  const double left =
      mem.capacity_bytes - mem.weights_bytes - profile_pass_activation_bytes(m, d, one, 8192, 1);
  // vLLM's releases before 0.20.0 (the default rose to 0.92 after them).
  s.engine_version = "0.11.0";
  const std::int64_t vllm_fit = fits(0.9 * mem.capacity_bytes - mem.weights_bytes - profiled);
  const std::int64_t trt_fit = fits(0.9 * left);
  ASSERT_GT(vllm_fit, 0);
  EXPECT_GT(trt_fit, 2 * vllm_fit);  // the same 0.9: a handful of requests against 49
  const ModelOptions trtllm = with_engine("trtllm");
  EXPECT_EQ(predict_serving(m, d, s, vllm()).max_concurrency_that_fits, vllm_fit);
  EXPECT_EQ(predict_serving(m, d, s, trtllm).max_concurrency_that_fits, trt_fit);
  s.recipe = ServingRecipe::kAiConfigurator;
  // AIConfigurator's deployments: 80% of what its smaller budget leaves (1 + 1,024 +
  // 1,500 tokens in whole 32-token blocks: 2,528).
  const ServingResult trt_recipe = predict_serving(m, d, s, trtllm);
  ASSERT_EQ(trt_recipe.token_budget, 2528);
  EXPECT_EQ(trt_recipe.max_concurrency_that_fits,
            fits(0.8 * (mem.capacity_bytes - mem.weights_bytes -
                        profile_pass_activation_bytes(m, d, one, 2528, 1))));
  // The recipe sets no share for vLLM, but its smaller budget (one request of
  // 1,024 + 1 + 1,500 tokens) makes a smaller profiling pass: a larger cache.
  const ServingResult recipe = predict_serving(m, d, s, vllm());
  ASSERT_EQ(recipe.token_budget, 2525);
  const double recipe_pass = profile_pass_activation_bytes(
      m, d, one, recipe.token_budget, recipe.max_running, rule.kv_profile_sampler_bytes("0.11.0"));
  EXPECT_EQ(recipe.max_concurrency_that_fits,
            fits(0.9 * mem.capacity_bytes - mem.weights_bytes - recipe_pass));
  EXPECT_GT(recipe.max_concurrency_that_fits, vllm_fit);
  // The current vLLM release: 0.92 of the whole memory, its sampler on
  // FlashInfer's kernels again (the same pass as 0.11.0's).
  s.engine_version.clear();
  s.recipe = ServingRecipe::kEngineDefaults;
  const double current_pass =
      profile_pass_activation_bytes(m, d, one, 8192, 1024, rule.kv_profile_sampler_bytes(""));
  EXPECT_DOUBLE_EQ(current_pass, profiled);
  EXPECT_EQ(predict_serving(m, d, s, vllm()).max_concurrency_that_fits,
            fits(0.92 * mem.capacity_bytes - mem.weights_bytes - current_pass));
  // On the sort path the pass leaves no room for one request.
  s.engine_version = "0.19.0";
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), Unsupported);
  // Past the fit, the note says which rule sized the cache.
  s.concurrency = trt_fit + 8;
  s.recipe = ServingRecipe::kEngineDefaults;
  const ServingResult over = predict_serving(m, d, s, trtllm);
  EXPECT_TRUE(std::any_of(over.notes.begin(), over.notes.end(), [](const std::string& n) {
    return n.find("90% of the memory the weights and activations leave") != std::string::npos;
  }));
}

// A receive interval (SGLang's --scheduler-recv-interval): the engine takes
// new requests in only at a step whose predecessors since the last intake
// weigh N (a decode step 1, a step with prompt tokens 1,000), or at once from
// an idle loop. Three clients of 100 + 10 tokens meet no delay at N = 3: B and
// C arrive during A's prompt step (weight 1,000: taken in after it), and A's
// second request arrives as B and C take their last step, after which the
// loop is idle and takes it at once; so every TTFT equals the plain run's.
// Sixteen clients of random lengths do wait: never more than N decode steps
// of 1 ms each, and none at N = 1.
TEST(ServingSimulation, AReceiveIntervalTakesRequestsInEveryNDecodeSteps) {
  sim::SimSpec s = simple_spec(3, 2);
  const sim::SimResult plain = sim::simulate_serving(s);
  s.first.recv_interval = 3;
  const sim::SimResult three = sim::simulate_serving(s);
  ASSERT_EQ(three.ttft_s.size(), plain.ttft_s.size());
  for (std::size_t i = 0; i < plain.ttft_s.size(); ++i)
    EXPECT_NEAR(three.ttft_s[i], plain.ttft_s[i], kExact) << i;
  // Each waits only for the step under way: B and C 1.1 ms (A's prompt), A's
  // reply 1 ms (B's and C's last step), B's and C's replies 1.1 ms (A's
  // second prompt): 5.4 ms over 6 requests, with or without the interval.
  EXPECT_NEAR(plain.recv_wait_s, 5.4e-3 / 6, kExact);
  EXPECT_NEAR(three.recv_wait_s, plain.recv_wait_s, kExact);

  sim::SimSpec many = simple_spec(16, 4);
  many.osl_min = 5;  // finishing apart, replies arrive during decode runs
  const sim::SimResult every = sim::simulate_serving(many);
  many.first.recv_interval = 1;
  const sim::SimResult one = sim::simulate_serving(many);
  EXPECT_EQ(one.ttft_s, every.ttft_s);  // 1: every step, as without
  many.first.recv_interval = 30;
  const sim::SimResult thirty = sim::simulate_serving(many);
  EXPECT_GT(thirty.recv_wait_s, every.recv_wait_s);
  EXPECT_LE(thirty.recv_wait_s, 30 * kStep + kStep + 1600 * kPerToken);  // 30 decode steps, and
                                                                         // the step under way
  const auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  EXPECT_GT(mean(thirty.ttft_s), mean(every.ttft_s));
  EXPECT_EQ(thirty.kv_left, 0);
  EXPECT_EQ(thirty.running_left, 0);
  // Only a pool that mixes prompts and decode tokens takes an interval.
  sim::SimSpec apart = simple_spec(1, 1);
  apart.first = simple_pool(sim::PoolSpec::Role::kPrefill);
  apart.first.recv_interval = 3;
  apart.decode = simple_pool(sim::PoolSpec::Role::kDecode);
  EXPECT_THROW((void)sim::simulate_serving(apart), InvalidArgument);
}

// SGLang's receive interval on the real model (InferenceX's Qwen3.5 setting:
// 30 steps from 16 clients): each request waits for an intake, at most 30
// decode steps of the largest batch (each shorter than a step carrying a
// prompt); the note says so. Other engines, disaggregated layouts and
// attention data parallelism refuse it.
TEST(Serving, SglangsReceiveIntervalDelaysTheIntake) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(16);
  s.rounds = 4;
  s.isl_min = 512;  // random lengths: replies arrive while others decode
  s.osl_min = 128;
  const ModelOptions sglang = with_engine("sglang");
  const ServingResult plain = predict_serving(m, d, s, sglang);
  ServingScenario slow = s;
  slow.scheduler_recv_interval = 30;
  const ServingResult held = predict_serving(m, d, slow, sglang);
  EXPECT_GT(held.recv_wait_s, plain.recv_wait_s);
  EXPECT_LT(held.recv_wait_s, 31 * held.prompt_step_s);
  EXPECT_GT(held.ttft_s, plain.ttft_s);
  EXPECT_TRUE(std::any_of(held.notes.begin(), held.notes.end(), [](const std::string& n) {
    return n.find("--scheduler-recv-interval 30") != std::string::npos;
  }));
  const nlohmann::json doc = serving_document(m, d, slow, held, sglang, devices());
  EXPECT_EQ(doc["scheduler_recv_interval"], 30);
  EXPECT_GT(doc["recv_wait_s"].get<double>(), 0);
  ServingScenario one = s;
  one.scheduler_recv_interval = 1;  // every step: as without
  EXPECT_DOUBLE_EQ(predict_serving(m, d, one, sglang).ttft_s, plain.ttft_s);
  EXPECT_THROW((void)predict_serving(m, d, slow, vllm()), InvalidArgument);
  ServingScenario dis = slow;
  dis.mode = ServingMode::kDisaggregated;
  dis.prefill_tp = dis.decode_tp = 2;
  EXPECT_THROW((void)predict_serving(m, d, dis, sglang), InvalidArgument);
  ServingScenario bad = slow;
  bad.scheduler_recv_interval = kMaxRecvInterval + 1;
  EXPECT_THROW((void)predict_serving(m, d, bad, sglang), InvalidArgument);
}

// gpt-oss-120b on one H100 with vLLM 0.10.2: the release ran its MXFP4
// experts on Marlin, which holds them padded (5,507,776,512 bytes more on one
// GPU; EnginePrediction.VllmHoldsMxfp4ExpertsPaddedForItsKernel derives it),
// so the KV cache has that much less room than the same release given
// Triton's kernel (unpadded), the activations and sampler pass being the same.
TEST(Serving, AMoeKernelsPaddedLayoutTakesItsBytesFromTheKvCache) {
  const ModelSpec m = load_model("gpt-oss-120b");
  const Device& d = devices().get("h100-sxm");
  ServingScenario s;
  s.isl = 32000;
  s.osl = 100;
  s.concurrency = 4;
  s.rounds = 1;
  s.engine_version = "0.10.2";
  const ModelOptions o = vllm();
  const ServingResult old = predict_serving(m, d, s, o);
  ModelOptions triton = o;
  triton.moe_kernel = "triton";
  const ServingResult now = predict_serving(m, d, s, triton);
  constexpr double kPadding = 5507776512.0;
  constexpr double kRounding = 1e-9;  // relative, of the bytes
  EXPECT_NEAR(now.kv_cache_bytes_per_gpu - old.kv_cache_bytes_per_gpu, kPadding,
              kRounding * now.kv_cache_bytes_per_gpu);
  EXPECT_LT(old.max_concurrency_that_fits, now.max_concurrency_that_fits);
  const auto says = [](const ServingResult& r, std::string_view text) {
    return std::any_of(r.notes.begin(), r.notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(says(old, "padded for its marlin kernel"));
  EXPECT_TRUE(says(old, "5.51 GB a GPU beyond the checkpoint's"));
  EXPECT_FALSE(says(now, "padded for its"));
}

// The deployment's KV memory share replaces the engine's under the engine's
// rule. vLLM's is of the whole memory: two shares' caches differ by the
// shares' difference of a GPU's memory (weights and activations the same).
// TensorRT-LLM's is of what the weights and activations leave: the cache
// scales with the share. Shares outside [0, 1] are refused; one too small for
// a request is Unsupported.
TEST(Serving, TheDeploymentsKvMemoryShareSizesTheCache) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(8);
  s.rounds = 1;
  auto cache = [&](const ModelOptions& o, double share) {
    ServingScenario set = s;
    set.kv_memory_share = share;
    return predict_serving(m, d, set, o);
  };
  const ServingResult v80 = cache(vllm(), 0.8), v90 = cache(vllm(), 0.9);
  EXPECT_TRUE(v80.kv_memory_set);
  EXPECT_DOUBLE_EQ(v80.kv_memory_share, 0.8);
  EXPECT_FALSE(v80.kv_memory_of_free);
  constexpr double kRounding = 1e-9;  // relative, of the bytes
  const double capacity = d.memory_capacity_bytes.value;
  EXPECT_NEAR(v90.kv_cache_bytes_per_gpu - v80.kv_cache_bytes_per_gpu, 0.1 * capacity,
              kRounding * capacity);
  EXPECT_GT(v90.kv_cache_tokens, v80.kv_cache_tokens);
  EXPECT_TRUE(std::any_of(v80.notes.begin(), v80.notes.end(), [](const std::string& n) {
    return n.find("KV memory as the deployment sets it: 80%") != std::string::npos;
  }));
  const ServingResult engine_default = predict_serving(m, d, s, vllm());
  EXPECT_FALSE(engine_default.kv_memory_set);
  EXPECT_DOUBLE_EQ(engine_default.kv_memory_share, 0.92);  // vLLM's current default
  const ModelOptions trtllm = with_engine("trtllm");
  const ServingResult t40 = cache(trtllm, 0.4), t80 = cache(trtllm, 0.8);
  EXPECT_TRUE(t40.kv_memory_of_free);
  EXPECT_NEAR(t80.kv_cache_bytes_per_gpu, 2 * t40.kv_cache_bytes_per_gpu,
              kRounding * t80.kv_cache_bytes_per_gpu);
  const nlohmann::json doc = serving_document(m, d, s, t40, trtllm, devices());
  EXPECT_EQ(doc["kv_memory"]["of"], "free");
  EXPECT_EQ(doc["kv_memory"]["set"], true);
  EXPECT_THROW((void)cache(vllm(), 1.5), InvalidArgument);
  EXPECT_THROW((void)cache(vllm(), -0.1), InvalidArgument);
  EXPECT_THROW((void)cache(vllm(), std::nan("")), InvalidArgument);
  EXPECT_THROW((void)cache(vllm(), 0.2), Unsupported);  // 30 GB: not the 35 GB of weights
}

// SGLang on Hopper casts the whole fp8 latent pool each decode step: the pool
// the deployment's share sizes, so a larger share makes every step dearer.
TEST(Serving, ALargerKvShareCastsALargerLatentPool) {
  const ModelSpec m = load_model("deepseek-v3");
  const Device& d = devices().get("h200");
  const ModelOptions sglang = with_engine("sglang");
  ServingScenario s;
  s.isl = 1024;
  s.osl = 32;
  s.concurrency = 1;
  s.rounds = 1;
  s.step.tp = 8;
  s.step.precision.weights = s.step.precision.act = s.step.precision.kv = Format::kFp8;
  s.kv_memory_share = 0.8;
  const ServingResult small = predict_serving(m, d, s, sglang);
  s.kv_memory_share = 0.95;
  const ServingResult large = predict_serving(m, d, s, sglang);
  EXPECT_GT(large.kv_cache_bytes_per_gpu, small.kv_cache_bytes_per_gpu);
  EXPECT_GT(large.plain_step_s, small.plain_step_s);
}

// TensorRT-LLM's batch waiting on the real model (InferenceX's Llama-3.1-70B
// setting: 20 steps, 0.9 of a 16,384-token budget): 8 clients never fill
// 14,746 tokens of a step (8 prompts of 1,024 and 8 decode tokens at most), so
// a prompt beside decode tokens waits 20 steps, each decode-only and so
// shorter than a step carrying a prompt. Without steps to wait the engine never holds a prompt,
// whatever the ratio; engines without the setting refuse it; disaggregated workers and attention
// data parallelism leave it off, and say so.
TEST(Serving, TensorRtLlmsBatchWaitingHoldsPromptsForAFullerStep) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(8);
  s.rounds = 4;
  s.token_budget = 16384;
  const ModelOptions trtllm = with_engine("trtllm");
  const ServingResult plain = predict_serving(m, d, s, trtllm);
  ServingScenario wait = s;
  wait.batch_wait_iters = 20;
  wait.batch_wait_ratio = 0.9;
  const ServingResult held = predict_serving(m, d, wait, trtllm);
  EXPECT_EQ(plain.waited_steps, 0);
  EXPECT_GT(held.waited_steps, 0);
  EXPECT_LT(held.waited_steps, held.steps);
  EXPECT_GT(held.ttft_s, plain.ttft_s + 3 * plain.plain_step_s);
  EXPECT_LT(held.ttft.p99, plain.ttft.p99 + 20 * held.prompt_step_s);
  EXPECT_TRUE(std::any_of(held.notes.begin(), held.notes.end(), [](const std::string& n) {
    return n.find("batch_wait_timeout_iters 20") != std::string::npos;
  }));
  const nlohmann::json doc = serving_document(m, d, wait, held, trtllm, devices());
  EXPECT_EQ(doc["batch_wait"]["iters"], 20);
  EXPECT_EQ(doc["batch_wait"]["waited_steps"], held.waited_steps);
  EXPECT_TRUE(serving_document(m, d, s, plain, trtllm, devices())["batch_wait"].is_null());

  ServingScenario ratio_only = s;
  ratio_only.batch_wait_ratio = 0.9;
  const ServingResult never = predict_serving(m, d, ratio_only, trtllm);
  EXPECT_EQ(never.waited_steps, 0);
  EXPECT_DOUBLE_EQ(never.ttft_s, plain.ttft_s);
  EXPECT_TRUE(std::any_of(never.notes.begin(), never.notes.end(), [](const std::string& n) {
    return n.find("never holds prompts back") != std::string::npos;
  }));

  ServingScenario dis = wait;
  dis.mode = ServingMode::kDisaggregated;
  dis.prefill_tp = dis.decode_tp = 2;
  const ServingResult apart = predict_serving(m, d, dis, trtllm);
  EXPECT_EQ(apart.waited_steps, 0);
  EXPECT_TRUE(std::any_of(apart.notes.begin(), apart.notes.end(), [](const std::string& n) {
    return n.find("no effect on disaggregated workers") != std::string::npos;
  }));

  EXPECT_THROW((void)predict_serving(m, d, wait, vllm()), InvalidArgument);  // not vLLM's
  ServingScenario bad = wait;
  bad.batch_wait_ratio = 1.5;
  EXPECT_THROW((void)predict_serving(m, d, bad, trtllm), InvalidArgument);
  bad = wait;
  bad.batch_wait_iters = kMaxBatchWaitIters + 1;
  EXPECT_THROW((void)predict_serving(m, d, bad, trtllm), InvalidArgument);
  bad.batch_wait_iters = -1;
  EXPECT_THROW((void)predict_serving(m, d, bad, trtllm), InvalidArgument);
}

// TensorRT-LLM's attention-DP balance (InferenceX's DeepSeek-R1 scripts:
// enable_balance, timeout_iters 60, batching_wait_iters 0) on DeepSeek-V3
// over 8 B200 with attention DP 8: 64 clients of 1,024/256 tokens. Prompts
// that arrive one at a time wait for the count, so TTFT grows; the steps that
// held prompts are counted and noted. Engines without the setting refuse it;
// without attention DP, or on disaggregated workers, it changes nothing and
// says so.
TEST(Serving, TensorRtLlmsAttentionDpBalanceHoldsPrompts) {
  const ModelSpec m = load_model("deepseek-v3");
  const Device& d = devices().get("b200");
  ServingScenario s;
  s.isl = 1024;
  s.osl = 256;
  s.concurrency = 64;
  s.rounds = 3;
  s.step.tp = 8;
  s.step.attention_dp = 8;
  s.step.ep = 8;
  s.step.precision.weights = Format::kFp8;
  s.step.precision.act = Format::kFp8;
  const ModelOptions trtllm = with_engine("trtllm");
  const ServingResult plain = predict_serving(m, d, s, trtllm);
  ServingScenario balanced = s;
  balanced.adp_balance = true;
  balanced.adp_timeout_iters = 60;
  balanced.adp_batching_wait_iters = 0;
  const ServingResult held = predict_serving(m, d, balanced, trtllm);
  EXPECT_FALSE(plain.adp_balance);
  EXPECT_EQ(plain.balance_held_steps, 0);
  EXPECT_TRUE(held.adp_balance);
  EXPECT_GT(held.balance_held_steps, 0);
  EXPECT_GT(held.ttft_s, plain.ttft_s);
  EXPECT_TRUE(std::any_of(held.notes.begin(), held.notes.end(), [](const std::string& n) {
    return n.find("attention-DP balance") != std::string::npos &&
           n.find("timeout_iters 60") != std::string::npos;
  }));
  const nlohmann::json doc = serving_document(m, d, balanced, held, trtllm, devices());
  EXPECT_EQ(doc["adp_balance"]["timeout_iters"], 60);
  EXPECT_EQ(doc["adp_balance"]["batching_wait_iters"], 0);
  EXPECT_EQ(doc["adp_balance"]["held_steps"], held.balance_held_steps);
  EXPECT_TRUE(serving_document(m, d, s, plain, trtllm, devices())["adp_balance"].is_null());

  // Nothing to balance on one rank: the run is the plain one, with a note.
  ServingScenario one_rank = balanced;
  one_rank.step.attention_dp = 1;
  ServingScenario one_rank_plain = s;
  one_rank_plain.step.attention_dp = 1;
  const ServingResult lone = predict_serving(m, d, one_rank, trtllm);
  EXPECT_DOUBLE_EQ(lone.ttft_s, predict_serving(m, d, one_rank_plain, trtllm).ttft_s);
  EXPECT_FALSE(lone.adp_balance);
  EXPECT_TRUE(std::any_of(lone.notes.begin(), lone.notes.end(), [](const std::string& n) {
    return n.find("without attention data parallelism") != std::string::npos;
  }));

  // Its counts alone change nothing, and say so.
  ServingScenario counts_only = s;
  counts_only.adp_timeout_iters = 60;
  const ServingResult unset = predict_serving(m, d, counts_only, trtllm);
  EXPECT_DOUBLE_EQ(unset.ttft_s, plain.ttft_s);
  EXPECT_TRUE(std::any_of(unset.notes.begin(), unset.notes.end(), [](const std::string& n) {
    return n.find("take effect with the balance") != std::string::npos;
  }));

  EXPECT_THROW((void)predict_serving(m, d, balanced, with_engine("sglang")), InvalidArgument);
  ServingScenario bad = balanced;
  bad.adp_timeout_iters = kMaxBatchWaitIters + 1;
  EXPECT_THROW((void)predict_serving(m, d, bad, trtllm), InvalidArgument);
  bad = balanced;
  bad.adp_batching_wait_iters = -1;
  EXPECT_THROW((void)predict_serving(m, d, bad, trtllm), InvalidArgument);
}

// The engines' schedulers follow their profiles and the device's memory.
TEST(Serving, EngineSchedulersFollowTheirDefaults) {
  const EngineRegistry& e = EngineRegistry::built_in();
  const EngineScheduler& vllm_s = e.get("vllm").scheduler;
  const EngineScheduler& sglang_s = e.get("sglang").scheduler;
  const EngineScheduler& trt = e.get("trtllm").scheduler;
  EXPECT_EQ(vllm_s.budget_on(devices().get("h200")), 8192);
  EXPECT_EQ(vllm_s.budget_on(devices().get("a100-80gb")), 2048);  // A100s keep the small default
  EXPECT_EQ(vllm_s.running_on(devices().get("a100-80gb")), 256);
  EXPECT_EQ(sglang_s.budget_on(devices().get("b200")), 16384);
  EXPECT_EQ(sglang_s.budget_on(devices().get("h100")), 8192);
  EXPECT_TRUE(sglang_s.prefill_first);
  EXPECT_FALSE(trt.chunked_prefill);
  EXPECT_TRUE(trt.reserve_whole);
  EXPECT_FALSE(vllm_s.reserve_whole);
  for (const EngineScheduler* x : {&vllm_s, &sglang_s, &trt}) {
    EXPECT_TRUE(x->pipeline_micro_batches);
  }
}

// Overlap scheduling as a deployment sets it: vLLM's current release forms
// each batch a step ahead, 0.12.0 only with --async-scheduling, and never
// under pipeline stages. Forming the batch ahead makes a newcomer wait a step
// more, so its TTFT is longer.
TEST(Serving, OverlapSchedulingIsTheDeploymentsChoice) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(4);
  s.osl = 64;
  s.rounds = 2;
  const ServingResult current = predict_serving(m, d, s, vllm());
  s.overlap = DeploymentSwitch::kOff;
  const ServingResult off = predict_serving(m, d, s, vllm());
  EXPECT_TRUE(current.formed_a_step_ahead);
  EXPECT_FALSE(off.formed_a_step_ahead);
  EXPECT_GT(current.ttft_s, off.ttft_s);
  s.engine_version = "0.12.0";
  s.overlap = DeploymentSwitch::kEngine;
  EXPECT_FALSE(predict_serving(m, d, s, vllm()).formed_a_step_ahead);
  s.overlap = DeploymentSwitch::kOn;
  EXPECT_TRUE(predict_serving(m, d, s, vllm()).formed_a_step_ahead);
  s.step.tp = 1;
  s.step.pp = 2;
  EXPECT_FALSE(predict_serving(m, d, s, vllm()).formed_a_step_ahead);
  EXPECT_EQ(parse_switch("overlap scheduling", "on"), DeploymentSwitch::kOn);
  EXPECT_EQ(switch_name(DeploymentSwitch::kOff), "off");
  EXPECT_THROW((void)parse_switch("overlap scheduling", "async"), InvalidArgument);
}

// Chunked prefill as a deployment sets it: TensorRT-LLM runs whole prompts
// unless --enable_chunked_prefill, so prompts of 12,000 tokens (past its
// 8,192-token budget) go whole in one step each; chunked, each takes two
// steps (8,192 tokens, then the rest beside the decode tokens).
TEST(Serving, ChunkedPrefillIsTheDeploymentsChoice) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(2);
  s.isl = 12000;
  s.osl = 32;
  s.rounds = 2;
  const ModelOptions trtllm = with_engine("trtllm");
  const ServingResult whole = predict_serving(m, d, s, trtllm);
  s.chunked_prefill = DeploymentSwitch::kOn;
  const ServingResult chunked = predict_serving(m, d, s, trtllm);
  EXPECT_GT(chunked.steps, whole.steps);
  EXPECT_TRUE(notes_say(whole, "whole prompts"));
  EXPECT_TRUE(notes_say(chunked, "chunked prompts"));
  // vLLM chunks by default; off, it does as TensorRT-LLM's default does.
  s.chunked_prefill = DeploymentSwitch::kOff;
  EXPECT_TRUE(notes_say(predict_serving(m, d, s, vllm()), "whole prompts"));
  EXPECT_THROW((void)parse_switch("chunked prefill", "yes"), InvalidArgument);
}

// AIConfigurator's benchmark deployments (its generator's
// rule_plugin/benchmark/*.rule): a worker runs its batch size of requests
// with a token budget of batch + isl + 1500 (TensorRT-LLM: rounded up to its
// 32-token blocks), graphs up to the batch; SGLang mixes its chunks with
// decode tokens. 16 clients, 1,024-token prompts: 16 + 1024 + 1500 = 2,540
// tokens (TensorRT-LLM 2,560).
TEST(Serving, TheAiConfiguratorRecipeSetsEachEnginesLimits) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(16);
  s.rounds = 2;
  s.recipe = ServingRecipe::kAiConfigurator;
  const auto run = [&](const char* engine, const ServingScenario& x) {
    const ModelOptions o = with_engine(engine);
    return predict_serving(m, d, x, o);
  };
  const ServingResult trt = run("trtllm", s);
  EXPECT_EQ(trt.token_budget, 2560);
  EXPECT_EQ(trt.max_running, 16);
  EXPECT_EQ(trt.recipe, ServingRecipe::kAiConfigurator);
  const ServingResult v = run("vllm", s);
  EXPECT_EQ(v.token_budget, 2540);
  EXPECT_EQ(v.max_running, 16);
  const ServingResult sg = run("sglang", s);
  EXPECT_EQ(sg.token_budget, 2540);  // max-prefill-tokens 2,524 and the 16 decode tokens
  bool mixed = false;
  for (const auto& n : sg.notes) mixed |= n.find("mixed steps") != std::string::npos;
  EXPECT_TRUE(mixed);  // enable_mixed_chunk: prefill-first no more
  // The engine's own defaults otherwise.
  ServingScenario own = s;
  own.recipe = ServingRecipe::kEngineDefaults;
  EXPECT_EQ(run("vllm", own).token_budget, 8192);
  // What the caller sets wins.
  ServingScenario set = s;
  set.token_budget = 4096;
  EXPECT_EQ(run("vllm", set).token_budget, 4096);

  // Disaggregated, with attention data parallelism 4 in the prefill worker and
  // 2 in the decode worker: a prefill rank takes one prompt of up to 1,024 +
  // 1,500 tokens (2,528 in 32-token blocks), a decode rank its batch of 8.
  ServingScenario dis = s;
  dis.mode = ServingMode::kDisaggregated;
  dis.prefill_tp = 4;
  dis.prefill_attention_dp = 4;
  dis.decode_tp = 2;
  dis.step.attention_dp = 2;
  const ServingResult dt = run("trtllm", dis);
  EXPECT_EQ(dt.token_budget, 4 * 2528);
  EXPECT_EQ(dt.max_running, 4);
  EXPECT_EQ(dt.decode_max_running, 16);
  EXPECT_EQ(dt.decode_token_budget, 2 * 32);  // 8 a rank, rounded up to a block
  dis.decode_batch = 4;                       // the deployment's own batch size a decode rank
  EXPECT_EQ(run("trtllm", dis).decode_max_running, 8);

  // Only the serving engines have such settings, and batch sizes only with them.
  EXPECT_THROW((void)predict_serving(m, d, s, {}), Unsupported);
  ServingScenario loose = own;
  loose.decode_batch = 8;
  EXPECT_THROW((void)run("vllm", loose), InvalidArgument);
  ServingScenario agg_prefill = s;
  agg_prefill.prefill_batch = 2;  // aggregated: no prefill workers
  EXPECT_THROW((void)run("vllm", agg_prefill), InvalidArgument);
  EXPECT_EQ(parse_serving_recipe("aiconfigurator"), ServingRecipe::kAiConfigurator);
  EXPECT_THROW((void)parse_serving_recipe("dynamo"), InvalidArgument);
}

// trtllm-bench's heuristic (tensorrt_llm/bench/build/tuning.py), by hand for
// Llama 3.1 8B FP8 (8,030,261,248 elements, 32 layers, 8 KV heads of 128,
// FP8 KV) on one H100 SXM (NVML's 81,559 MiB = 79.6475 GiB) at a share of 0.95:
//   checkpoint 8,030,261,248 x 1 byte = 7.4787 GiB; a token 2 x 32 x 8 x 128
//   x 1 = 65,536 bytes; cache (79.6475 - 7.4787) x 0.95 = 68.5604 GiB.
//   128/2048: 68.5604 GiB / (2,176 x 65,536 bytes) = 516.2 requests, rounded
//     up to 128s: max_batch_size 640; 516.2 x (1 + 128/2048) = 548.5 tokens,
//     held at the 2,048 minimum.
//   128/128: 4,387.9 requests, capped at 4,096 (a multiple of 256); 4,096 x 2 =
//     8,192 tokens (a multiple of 1,024).
//   20000/2000: 51.1 requests, held at the 64 minimum; 561.6 tokens -> 2,048.
//   Two pipeline stages: memory 159.295 GiB, 1,085.9 requests, halved to
//     543.0 a stage: 640.
TEST(Serving, TrtllmBenchTunesItsLimitsFromTheMemoryTheCheckpointLeaves) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h100-sxm");
  const EngineProfile& trt = EngineRegistry::built_in().get("trtllm");
  Scenario step;
  step.precision.weights = Format::kFp8;
  step.precision.act = Format::kFp8;
  step.precision.kv = Format::kFp8;
  constexpr double kByHand = 1e-3;  // the hand figures' rounding, relative
  const BenchmarkLimits a = benchmark_limits(trt, m, d, step, 128, 2048, 0.95);
  EXPECT_TRUE(a.tuned);
  EXPECT_NEAR(a.memory_gib, 79.6475, kByHand * 79.6475);
  EXPECT_NEAR(a.checkpoint_gib, 7.4787, kByHand * 7.4787);
  EXPECT_NEAR(a.requests, 516.2, kByHand * 516.2);
  EXPECT_EQ(a.max_batch_size, 640);
  EXPECT_EQ(a.max_num_tokens, 2048);
  const BenchmarkLimits b = benchmark_limits(trt, m, d, step, 128, 128, 0.95);
  EXPECT_NEAR(b.requests, 4387.9, kByHand * 4387.9);
  EXPECT_EQ(b.max_batch_size, 4096);
  EXPECT_EQ(b.max_num_tokens, 8192);
  const BenchmarkLimits c = benchmark_limits(trt, m, d, step, 20000, 2000, 0.95);
  EXPECT_EQ(c.max_batch_size, 64);
  EXPECT_EQ(c.max_num_tokens, 2048);
  Scenario two_stages = step;
  two_stages.pp = 2;
  const BenchmarkLimits p = benchmark_limits(trt, m, d, two_stages, 128, 2048, 0.95);
  EXPECT_NEAR(p.requests, 1085.9, kByHand * 1085.9);
  EXPECT_EQ(p.max_batch_size, 640);

  // NVFP4 files hold two values a byte and an 8-bit scale a 16-value block,
  // and the heuristic prices each element at half a byte: Llama 3.3 70B's
  // 2,102,665,216 embedding, head and norm elements and 68,451,041,280
  // quantized ones count (2.1027e9 + 0.5625 x 68.451e9) x 0.5 bytes = 18.909 GiB.
  const ModelSpec big = load_model("llama-3.1-70b");
  Scenario fp4 = step;
  fp4.precision.weights = Format::kNvfp4;
  fp4.precision.act = Format::kNvfp4;
  const BenchmarkLimits f =
      benchmark_limits(trt, big, devices().get("b200"), fp4, 1000, 1000, 0.95);
  EXPECT_NEAR(f.checkpoint_gib, 18.909, kByHand * 18.909);

  // Formats it does not tune get the engine's defaults (trtllm-serve's 2,048
  // requests and 8,192 tokens); a checkpoint past the memory, or another
  // engine, is refused.
  Scenario awq = step;
  awq.precision.weights = Format::kInt4;
  const BenchmarkLimits u = benchmark_limits(trt, m, d, awq, 128, 2048, 0.95);
  EXPECT_FALSE(u.tuned);
  EXPECT_EQ(u.max_batch_size, 2048);
  EXPECT_EQ(u.max_num_tokens, 8192);
  EXPECT_THROW((void)benchmark_limits(trt, load_model("llama-3.1-405b"), d, step, 128, 2048, 0.95),
               Unsupported);
  EXPECT_THROW(
      (void)benchmark_limits(EngineRegistry::built_in().get("vllm"), m, d, step, 128, 2048, 0.95),
      Unsupported);
  EXPECT_THROW((void)benchmark_limits(trt, m, d, step, 0, 2048, 0.95), InvalidArgument);
}

// The recipe runs the engine as `trtllm-bench throughput` does: the tuned
// limits, whole prompts (its chunked context is off by default, so the budget
// holds the longest prompt beside a full batch), graphs up to the batch and
// its 0.90 KV share unless the run sets one (then the heuristic takes it too).
TEST(Serving, TheTrtllmBenchRecipeRunsTheEngineAsItsBenchmarkDoes) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h100-sxm");
  ServingScenario s;
  s.isl = 128;
  s.osl = 2048;
  s.concurrency = 3000;
  s.rounds = 1;
  s.step.precision.weights = Format::kFp8;
  s.step.precision.act = Format::kFp8;
  s.step.precision.kv = Format::kFp8;
  s.recipe = ServingRecipe::kBenchmarkTuning;
  s.kv_memory_share = 0.95;
  const ModelOptions trt = with_engine("trtllm");
  const ServingResult r = predict_serving(m, d, s, trt);
  EXPECT_EQ(r.max_running, 640);    // the hand derivation above
  EXPECT_EQ(r.token_budget, 2048);  // above 128 + 640
  EXPECT_DOUBLE_EQ(r.kv_memory_share, 0.95);
  EXPECT_EQ(r.recipe, ServingRecipe::kBenchmarkTuning);
  EXPECT_TRUE(notes_say(r, "trtllm-bench's tuning"));
  EXPECT_TRUE(notes_say(r, "whole prompts"));
  // A burst: every output token over the time to the last one.
  EXPECT_EQ(r.requests, 3000);
  EXPECT_GT(r.output_tokens_per_s, 0);
  // 20000/2000: 64 requests, and a budget raised to 20,000 + 64 tokens.
  ServingScenario longer = s;
  longer.isl = 20000;
  longer.osl = 2000;
  longer.concurrency = 100;
  const ServingResult l = predict_serving(m, d, longer, trt);
  EXPECT_EQ(l.max_running, 64);
  EXPECT_EQ(l.token_budget, 20064);
  EXPECT_TRUE(notes_say(l, "raised to 20064"));
  // Its own share unless set: 0.90.
  ServingScenario own = s;
  own.kv_memory_share = 0;
  EXPECT_DOUBLE_EQ(predict_serving(m, d, own, trt).kv_memory_share, 0.9);
  // What the run sets wins.
  ServingScenario set = s;
  set.max_running = 256;
  EXPECT_EQ(predict_serving(m, d, set, trt).max_running, 256);
  // TensorRT-LLM's own benchmark only, aggregated.
  EXPECT_THROW((void)predict_serving(m, d, s, with_engine("vllm")), Unsupported);
  EXPECT_THROW((void)predict_serving(m, d, s, {}), Unsupported);
  ServingScenario dis = s;
  dis.mode = ServingMode::kDisaggregated;
  EXPECT_THROW((void)predict_serving(m, d, dis, trt), InvalidArgument);
  EXPECT_EQ(parse_serving_recipe("trtllm-bench"), ServingRecipe::kBenchmarkTuning);
  EXPECT_EQ(serving_recipe_name(ServingRecipe::kBenchmarkTuning), "trtllm-bench");
}

// TensorRT-LLM's PyTorch executor admits pp x max_batch_size requests, each
// micro-batch up to max_batch_size (model_engine.py get_max_num_sequences);
// vLLM caps the instance. Two stages, 64 clients and a cap of 16: TensorRT-LLM
// runs 16 in each micro-batch, vLLM 8.
TEST(Serving, TensorRtLlmCapsEachMicroBatch) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h100");
  ServingScenario s;
  s.isl = 128;
  s.osl = 512;
  s.concurrency = 64;
  s.step.pp = 2;
  s.max_running = 16;
  const ServingResult trt = predict_serving(m, d, s, with_engine("trtllm"));
  const ServingResult v = predict_serving(m, d, s, with_engine("vllm"));
  EXPECT_EQ(trt.running, 16);
  EXPECT_EQ(v.running, 8);
  EXPECT_TRUE(notes_say(trt, "the cap is each micro-batch's"));
  // 64 clients wait for the 32 (16) requests the instance runs at once.
  EXPECT_TRUE(notes_say(trt, "the engine runs at most 32 an instance"));
  EXPECT_TRUE(notes_say(v, "the engine runs at most 16 an instance"));
  EXPECT_TRUE(EngineRegistry::built_in().get("trtllm").scheduler.running_cap_per_micro_batch);
  EXPECT_FALSE(EngineRegistry::built_in().get("vllm").scheduler.running_cap_per_micro_batch);
}

// The deployment's graph sizes replace the engine's: TensorRT-LLM captures up
// to 128 by default, a deployment that captured 256 replays batch 200.
TEST(Serving, ADeploymentsGraphSizesReplaceTheEngines) {
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario step;
  step.batch = 200;
  step.seq_len = 1024;
  ModelOptions o = with_engine("trtllm");
  EXPECT_FALSE(predict(m, devices().get("h200"), step, o).cuda_graphs);
  o.graph_max_batch = 256;
  EXPECT_TRUE(predict(m, devices().get("h200"), step, o).cuda_graphs);
  step.prefill_tokens = 512;  // a prompt riding along: eager whatever the sizes
  step.prefill_prompt = 1024;
  EXPECT_FALSE(predict(m, devices().get("h200"), step, o).cuda_graphs);
}

// Pipeline stages with micro-batches: the instance runs one batch per stage,
// each passing every stage in turn. While the KV cache and the running cap do
// not bind, a P-stage instance of C clients serves as P one-batch pipelines
// of C / P clients each would. On a memory-bound decode that gains little (a
// batch of 32 costs little more than one of 16); prompts, which cost by the
// token, gain nearly P times.
TEST(Serving, PipelineStagesKeepMicroBatchesInFlight) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h100");
  ServingScenario s;
  s.isl = 128;
  s.osl = 512;
  s.concurrency = 32;
  s.step.pp = 2;
  const ModelOptions micro = vllm();
  EngineProfile one_batch_profile = *micro.engine;
  one_batch_profile.scheduler.pipeline_micro_batches = false;
  ModelOptions one_batch;
  one_batch.engine = &one_batch_profile;
  const ServingResult a = predict_serving(m, d, s, micro);
  const ServingResult b = predict_serving(m, d, s, one_batch);
  ServingScenario halves = s;  // two one-batch pipelines, 16 clients each
  halves.replicas = 2;
  const ServingResult c = predict_serving(m, d, halves, one_batch);
  constexpr double kSameSimulation = 1e-9;  // the same steps, summed in another order
  EXPECT_NEAR(a.tpot_s, c.tpot_s, kSameSimulation * c.tpot_s);
  EXPECT_NEAR(a.ttft_s, c.ttft_s, kSameSimulation * c.ttft_s);
  EXPECT_NEAR(a.output_tokens_per_s, c.output_tokens_per_s,
              kSameSimulation * c.output_tokens_per_s);
  EXPECT_EQ(a.running, 16);
  EXPECT_EQ(b.running, 32);
  EXPECT_EQ(a.gpus, 2);
  EXPECT_EQ(a.max_concurrency_that_fits, b.max_concurrency_that_fits);
  // Memory-bound decode: more tokens and shorter steps, but well under 2x.
  EXPECT_GT(a.output_tokens_per_s, b.output_tokens_per_s);
  EXPECT_LT(a.output_tokens_per_s, 1.5 * b.output_tokens_per_s);
  EXPECT_LT(a.tpot_s, b.tpot_s);
  // Long prompts and one output token: each step is a prompt, compute-bound,
  // so the second stage's idle half comes back.
  s.isl = 4096;
  s.osl = 1;
  constexpr double kComputeBoundGain = 1.7;
  EXPECT_GT(predict_serving(m, d, s, micro).output_tokens_per_s,
            kComputeBoundGain * predict_serving(m, d, s, one_batch).output_tokens_per_s);
  EXPECT_TRUE(notes_say(a, "2 micro-batches in flight"));
  EXPECT_TRUE(notes_say(b, "one batch at a time"));
  // Without stages nothing changes: one lane.
  s.step.pp = 1;
  EXPECT_DOUBLE_EQ(predict_serving(m, d, s, micro).tpot_s,
                   predict_serving(m, d, s, one_batch).tpot_s);
}

// Disaggregated: GPUs of both pools count; the prompt's cache crosses the
// link at the node's per-GPU network rate beyond one NVLink domain.
TEST(Serving, DisaggregatedCountsBothPools) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(16);
  s.mode = ServingMode::kDisaggregated;
  s.prefill_workers = 2;
  s.prefill_tp = 2;
  s.decode_workers = 1;
  s.decode_tp = 4;
  const ServingResult r = predict_serving(m, d, s, vllm());
  EXPECT_EQ(r.gpus, 2 * 2 + 4);
  // A bf16 KV cache: 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes =
  // 327,680 bytes a token, a quarter on each decode GPU, over the device's
  // NVLink (8 GPUs: one NVLink domain). The bytes a token come from the
  // memory estimate of a whole request, which holds its next token too
  // (1,281 tokens for 1,280): 1,024 prompt tokens' share of that.
  const double shard = 327680.0 / 4 * 1281 * 1024 / 1280;
  EXPECT_NEAR(r.kv_transfer_s, shard / d.interconnect_bandwidth_Bps.value, 1e-9);
  EXPECT_GT(r.ttft_s, 0);
  EXPECT_EQ(r.requests, 16 * kDefaultRounds);
}

// The prefill workers' own attention DP and EP: their steps are priced with
// them (DeepSeek-V3's prompts on 8 GPUs: the experts spread whole, the
// tokens moved by all-to-all), the decode workers keep theirs; each divides
// its own pool's TP.
TEST(Serving, DisaggregatedPoolsTakeTheirOwnParallelism) {
  const ModelSpec m = load_model("deepseek-v3");
  const Device& d = devices().get("h200");
  ServingScenario s;
  s.isl = 1024;
  s.osl = 64;
  s.concurrency = 16;
  s.rounds = 2;
  s.mode = ServingMode::kDisaggregated;
  s.prefill_tp = s.decode_tp = s.step.tp = 8;
  s.step.precision.weights = s.step.precision.act = Format::kFp8;
  const ModelOptions o = with_engine("sglang");
  const ServingResult plain = predict_serving(m, d, s, o);
  ServingScenario wide = s;
  wide.prefill_attention_dp = wide.prefill_ep = 8;
  const ServingResult r = predict_serving(m, d, wide, o);
  EXPECT_NE(r.ttft_s, plain.ttft_s);
  // A lone prompt's step on the prefill workers is what predict() gives with their parallelism.
  Scenario prompt = s.step;
  prompt.phase = Phase::kDecode;
  prompt.batch = 1;
  prompt.seq_len = s.isl;
  prompt.prefill_tokens = prompt.prefill_prompt = s.isl;
  Scenario wide_prompt = prompt;
  wide_prompt.attention_dp = wide_prompt.ep = 8;
  const double plain_step = predict(m, d, prompt, o).time_s;
  const double wide_step = predict(m, d, wide_prompt, o).time_s;
  ASSERT_NE(plain_step, wide_step);
  // The first request of the first burst runs alone: its TTFT is one prompt step.
  EXPECT_GE(r.ttft.p99, wide_step);
  // The decode workers are the same: their cache, and what crosses to them.
  EXPECT_EQ(r.max_concurrency_that_fits, plain.max_concurrency_that_fits);
  EXPECT_DOUBLE_EQ(r.kv_transfer_s, plain.kv_transfer_s);
  const bool named = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("TP 8 attention DP 8 EP 8, 1 decode worker(s) at TP 8;") != std::string::npos;
  });
  EXPECT_TRUE(named);
  wide.prefill_ep = 3;
  EXPECT_THROW((void)predict_serving(m, d, wide, o), InvalidArgument);
  wide.prefill_ep = 16;  // more than the pool's TP
  EXPECT_THROW((void)predict_serving(m, d, wide, o), InvalidArgument);
  ServingScenario agg = s;
  agg.mode = ServingMode::kAggregated;
  agg.prefill_ep = 8;  // aggregated serving has no prefill pool
  EXPECT_THROW((void)predict_serving(m, d, agg, o), InvalidArgument);
}

// InferenceMAX's and SGLang bench_serving's range ratio: [int(R L), L].
TEST(Serving, RangeRatiosSetTheShortestLengths) {
  ServingScenario s;
  s.isl = 1024;
  s.osl = 8192;
  set_range_ratio(s, 0.8);
  EXPECT_EQ(s.isl_min, 819);  // int(0.8 x 1024)
  EXPECT_EQ(s.osl_min, 6553);
  set_range_ratio(s, 1);
  EXPECT_EQ(s.isl_min, 1024);
  set_range_ratio(s, 0);  // bench_serving's default: from 1 (a prompt has a token)
  EXPECT_EQ(s.isl_min, 1);
  EXPECT_EQ(s.osl_min, 1);
  EXPECT_THROW(set_range_ratio(s, 1.5), InvalidArgument);
  EXPECT_THROW(set_range_ratio(s, -0.1), InvalidArgument);
  EXPECT_THROW(set_range_ratio(s, std::nan("")), InvalidArgument);
}

// One client with prompts of 512 to 1024 tokens: each TTFT is one prompt
// step, so the mean lies between the two lengths' steps and the requests
// differ; the output counts follow the drawn lengths (their throughput is the
// outputs over the run, not requests x osl).
TEST(Serving, RandomPromptsSpreadTheFirstTokens) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(1);
  s.rounds = 20;
  s.isl_min = 512;
  const ServingResult r = predict_serving(m, d, s, vllm());
  Scenario step = s.step;
  step.phase = Phase::kDecode;
  step.batch = 1;
  step.seq_len = 512;
  step.prefill_tokens = step.prefill_prompt = 512;
  const double shortest = predict(m, d, step, vllm()).time_s;
  step.seq_len = step.prefill_tokens = step.prefill_prompt = 1024;
  const double longest = predict(m, d, step, vllm()).time_s;
  EXPECT_GT(r.ttft.mean, shortest);
  EXPECT_LT(r.ttft.mean, longest);
  EXPECT_LT(r.ttft.p50, r.ttft.p99);
  EXPECT_EQ(r.requests, 20);
  ServingScenario fixed = llama70b_on_two_h200(1);
  fixed.rounds = 20;
  const ServingResult f = predict_serving(m, d, fixed, vllm());
  EXPECT_LT(r.ttft.mean, f.ttft.mean);  // shorter prompts on average
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(),
                          [](const std::string& n) { return n.rfind("random lengths", 0) == 0; }));
  s.isl_min = 2048;  // above isl
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
  s.isl_min = 512;
  s.shared_prefix = 600;  // longer than the shortest prompt
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
}

TEST(Serving, BadSizesAndModelsThatDoNotFitAreRefused) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario s = llama70b_on_two_h200(4);
  s.isl = 0;
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
  s = llama70b_on_two_h200(0);
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
  s = llama70b_on_two_h200(1 << 20);  // 2^20 clients x 10 rounds: too many to simulate
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
  s = llama70b_on_two_h200(4);
  s.rounds = 0;
  EXPECT_THROW((void)predict_serving(m, d, s, vllm()), InvalidArgument);
  // 70B in bf16 (141 GB) on one 80 GB H100 leaves no room for any KV cache.
  ServingScenario big;
  big.step.tp = 1;
  EXPECT_THROW((void)predict_serving(m, devices().get("h100"), big, vllm()), Unsupported);
}

TEST(Serving, EveryRowOfTheDevelopmentSetIsPredictedOrRefused) {
  const DecodeStepReport r = validate_serving(built_in_serving_runs(), devices());
  EXPECT_EQ(r.predicted + r.refused, 2101);  // 1,502 aggregated + 599 disaggregated
  int disaggregated = 0;
  for (const DecodeStepRow& row : r.rows)
    disaggregated += row.run.mode == "disagg" && row.refused.empty();
  // 106 disaggregated rows give their worker counts; those without attention
  // data parallelism (26) are predicted.
  EXPECT_GE(disaggregated, 20);
  ASSERT_FALSE(r.ttft_groups.empty());
  EXPECT_EQ(r.ttft_groups[0].group, "all");
  EXPECT_EQ(r.ttft_groups[0].rows, r.predicted);
}

// vLLM runs a step past its largest captured graph (512 tokens) without one:
// a serving result says so where its prompt steps are that long, with the
// host's dispatch against the GPU's work of such a step, and not where they
// fit the graphs or for an engine whose prompt steps always run eagerly.
TEST(Serving, NotesSayWhenPromptStepsFindNoGraph) {
  const ModelSpec m = load_model("gpt-oss-120b");
  const Device& d = devices().get("h200");
  ServingScenario s;
  s.isl = 1024;
  s.osl = 64;
  s.concurrency = 4;
  s.rounds = 2;
  s.step.tp = 8;
  const std::string_view said = "steps with prompt tokens run without a CUDA graph";
  const ServingResult past = predict_serving(m, d, s, vllm());
  EXPECT_TRUE(notes_say(past, said));
  EXPECT_TRUE(notes_say(past, "largest captured graph, 512 tokens"));
  // A short prompt at TP 8 leaves the GPU waiting for the host.
  EXPECT_TRUE(notes_say(past, "the GPU waits"));
  s.isl = 256;
  EXPECT_FALSE(notes_say(predict_serving(m, d, s, vllm()), said));
  s.isl = 1024;
  EXPECT_FALSE(notes_say(predict_serving(m, d, s, with_engine("sglang")), said));
  // A deployment that captures graphs up to 2,048 tokens (InferenceX's
  // --max-cudagraph-capture-size) replays graph pieces for these steps, whose
  // host work the GPU's hides: the first tokens come sooner.
  ServingScenario captured = s;
  captured.graph_capture_size = 2048;
  const ServingResult pieces = predict_serving(m, d, captured, vllm());
  EXPECT_FALSE(notes_say(pieces, said));
  EXPECT_LT(pieces.ttft_s, past.ttft_s);
  captured.graph_capture_size = -1;
  EXPECT_THROW((void)predict_serving(m, d, captured, vllm()), InvalidArgument);
}

// vLLM sizes its cache after a profiling pass whose sampler takes every row
// it may run (vllm.json, profile_pass.sampler): Qwen3-32B in bf16 on one H100,
// with the engine's 1,024 rows of 151,936 logits. Release 0.14.0 samples on
// the sort path, 42.2 bytes a logit: 1,024 x 151,936 x 42.2 = 6.57 GB, beside
// the 8,192-token pass's hidden states (8,192 x 5,120 x 2 = 83.9 MB): 6.65
// GB, far above the forward's peak, so the note and the JSON name it. 0.11.0
// samples on FlashInfer (14 bytes: 2.26 GB): a larger cache. With 64 rows the
// forward's peak stands and nothing is said.
TEST(Serving, NotesSayWhenTheProfilingPassSamplerSizesTheCache) {
  const ModelSpec m = load_model("qwen3-32b");
  const Device& d = devices().get("h100");
  ServingScenario s;
  s.isl = 1024;
  s.osl = 128;
  s.concurrency = 8;
  s.rounds = 1;
  s.engine_version = "0.14.0";
  constexpr double kBytesTolerance = 1.0;  // the sums are exact to a byte
  const double hidden = 8192.0 * 5120 * 2;
  const ServingResult sort = predict_serving(m, d, s, vllm());
  EXPECT_EQ(sort.kv_profile_sampler_rows, 1024);
  EXPECT_DOUBLE_EQ(sort.kv_profile_sampler_bytes_per_logit, 42.2);
  EXPECT_NEAR(sort.kv_activation_bytes_per_gpu, 1024.0 * 151936 * 42.2 + hidden, kBytesTolerance);
  EXPECT_TRUE(notes_say(sort, "memory-profiling pass holds 6.6 GB a GPU"));
  EXPECT_TRUE(notes_say(sort, "its sort path"));
  s.engine_version = "0.11.0";
  const ServingResult flashinfer = predict_serving(m, d, s, vllm());
  EXPECT_NEAR(flashinfer.kv_activation_bytes_per_gpu, 1024.0 * 151936 * 14 + hidden,
              kBytesTolerance);
  EXPECT_TRUE(notes_say(flashinfer, "FlashInfer's sampling kernels in release 0.11.0"));
  // Both releases give 0.9 of the memory: the smaller pass leaves the larger cache.
  EXPECT_NEAR(flashinfer.kv_cache_bytes_per_gpu - sort.kv_cache_bytes_per_gpu,
              sort.kv_activation_bytes_per_gpu - flashinfer.kv_activation_bytes_per_gpu, 1e3);
  EXPECT_GT(flashinfer.max_concurrency_that_fits, sort.max_concurrency_that_fits);
  s.max_running = 64;
  const ServingResult few = predict_serving(m, d, s, vllm());
  EXPECT_EQ(few.kv_profile_sampler_rows, 0);
  EXPECT_FALSE(notes_say(few, "memory-profiling pass"));
  // TensorRT-LLM's pass samples one row: no note.
  EXPECT_FALSE(notes_say(predict_serving(m, d, s, with_engine("trtllm")), "memory-profiling pass"));
}

// vLLM's Triton attention masked gpt-oss's sliding windows before its
// releases learned to skip them (data/engines/vllm.json window_masking): a
// served 0.11.0 deployment on an A100 says which of its kernels still did;
// 0.14.0 and the current release say nothing. (What the masking costs a step:
// EnginePrediction.TritonAttentionMasksSlidingWindowsBeforeItsReleases.)
TEST(Serving, NotesSayWhichKernelsMaskASlidingWindow) {
  const ModelSpec m = load_model("gpt-oss-20b");
  const Device& d = devices().get("a100-80gb");
  ServingScenario s;
  s.isl = 16384;
  s.osl = 256;
  s.concurrency = 2;
  s.rounds = 1;
  s.engine_version = "0.11.0";
  const ServingResult masked = predict_serving(m, d, s, vllm());
  EXPECT_TRUE(notes_say(masked,
                        "sliding windows: vLLM 0.11.0 runs this model's attention sinks on "
                        "vLLM's Triton unified attention on ampere, and its split-KV kernel of "
                        "small decode batches (before 0.14.0) masks the keys outside the window"));
  EXPECT_FALSE(notes_say(masked, "prompt tokens and large batches"));
  s.engine_version = "0.10.2";
  EXPECT_TRUE(notes_say(predict_serving(m, d, s, vllm()),
                        "its kernel of prompt tokens and large batches (before 0.11.0) and its "
                        "split-KV kernel"));
  s.engine_version = "0.14.0";
  const ServingResult skipped = predict_serving(m, d, s, vllm());
  EXPECT_FALSE(notes_say(skipped, "sliding windows:"));
  s.engine_version.clear();
  EXPECT_FALSE(notes_say(predict_serving(m, d, s, vllm()), "sliding windows:"));
}

// A harness note's graph policy reaches the simulated deployment: InferenceX's
// B200 vLLM Llama-3.1-70B scripts (cudagraph_mode FULL_DECODE_ONLY) run their
// steps with prompt tokens without graphs, and the formats say so. Their
// prompts (1,024 tokens and more) pass the deployments' largest captured
// graph (AIConfigurator's --cudagraph-capture-sizes 1 to the batch size), so
// under the engine's piecewise default they find no graph either: the TTFT is
// the same. With graphs off, the decode steps lose theirs too.
TEST(Serving, AHarnessNotesGraphPolicyReachesTheSimulation) {
  std::vector<ServingRun> noted;
  for (const ServingRun& r : built_in_serving_runs()) {
    if (r.graphs == GraphPolicy::kDecodeOnly && r.concurrency <= 8 && r.tp >= 4) noted.push_back(r);
  }
  ASSERT_GE(noted.size(), 4u);
  std::vector<ServingRun> plain = noted, off = noted;
  for (ServingRun& r : plain) r.graphs = GraphPolicy::kEngine;
  for (ServingRun& r : off) r.graphs = GraphPolicy::kOff;
  const DecodeStepReport with = validate_serving(noted, devices());
  const DecodeStepReport without = validate_serving(plain, devices());
  const DecodeStepReport none = validate_serving(off, devices());
  ASSERT_EQ(with.rows.size(), without.rows.size());
  ASSERT_EQ(with.rows.size(), none.rows.size());
  for (std::size_t i = 0; i < with.rows.size(); ++i) {
    ASSERT_TRUE(with.rows[i].refused.empty()) << noted[i].id;
    ASSERT_GT(noted[i].isl, noted[i].concurrency);
    EXPECT_DOUBLE_EQ(with.rows[i].predicted_ttft_ms, without.rows[i].predicted_ttft_ms)
        << noted[i].id;
    EXPECT_GT(none.rows[i].predicted_ms, with.rows[i].predicted_ms) << noted[i].id;
    EXPECT_NE(with.rows[i].formats.find("CUDA graphs decode-only"), std::string::npos)
        << with.rows[i].formats;
    EXPECT_EQ(without.rows[i].formats.find("CUDA graphs"), std::string::npos);
  }
}

// The benchmark's length (validate --serving --rounds): every client starts
// together, so the first round's prompts queue behind each other; where the KV
// cache holds every client's request, later rounds do not queue so, and the
// longer the benchmark, the less that first round weighs in the mean TTFT.
// (Where it does not, a backlog builds up and longer runs wait longer.)
TEST(Serving, ValidationFollowsTheBenchmarksLength) {
  // Aggregated H200 vLLM Llama-3.1-70B rows with 1,024-token prompts at
  // concurrency 32 and above (2,048 tokens of fp8 KV cache a request).
  std::vector<ServingRun> runs;
  for (const ServingRun& r : built_in_serving_runs()) {
    if (r.backend == "vllm" && r.system == "h200_sxm" && r.mode == "agg" && r.isl == 1024 &&
        r.osl == 1024 && r.concurrency >= 32 &&
        r.model_path.find("Llama-3.1-70B") != std::string::npos)
      runs.push_back(r);
  }
  ASSERT_GE(runs.size(), 3u);
  const DecodeStepReport one =
      validate_serving(runs, devices(), "case", ServingRecipe::kAiConfigurator, 1);
  const DecodeStepReport twenty =
      validate_serving(runs, devices(), "case", ServingRecipe::kAiConfigurator, 20);
  ASSERT_EQ(one.rows.size(), twenty.rows.size());
  int compared = 0;
  for (std::size_t i = 0; i < one.rows.size(); ++i) {
    if (!one.rows[i].refused.empty() || !twenty.rows[i].refused.empty()) continue;
    ++compared;
    EXPECT_GT(one.rows[i].predicted_ttft_ms, twenty.rows[i].predicted_ttft_ms) << runs[i].id;
  }
  EXPECT_GE(compared, 3);
  EXPECT_THROW((void)validate_serving(runs, devices(), "case", ServingRecipe::kAiConfigurator, 0),
               InvalidArgument);
  EXPECT_THROW((void)validate_serving(runs, devices(), "case", ServingRecipe::kAiConfigurator,
                                      kMaxRounds + 1),
               InvalidArgument);
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
  spec.modes = {ServingMode::kAggregated};
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

// The serving scenario of one disaggregated fp8 (W8A8) deployment of a search,
// to predict it again directly.
ServingScenario disaggregated_fp8(const Deployment& x, const SearchSpec& spec,
                                  std::int64_t concurrency) {
  ServingScenario s;
  s.isl = spec.isl;
  s.osl = spec.osl;
  s.concurrency = concurrency;
  s.mode = ServingMode::kDisaggregated;
  s.prefill_workers = x.prefill_workers;
  s.prefill_tp = x.prefill_tp;
  s.prefill_attention_dp = x.prefill_attention_dp;
  s.prefill_ep = x.prefill_ep;
  s.decode_workers = x.decode_workers;
  s.decode_tp = s.step.tp = x.decode_tp;
  s.step.attention_dp = x.attention_dp;
  s.step.ep = x.ep;
  s.step.precision.weights = s.step.precision.act = Format::kFp8;
  return s;
}

// Disaggregated layouts on 4 GPUs: units of 2 (1xTP1 + 1xTP1) and of 4
// (1+3, 2+2, 3+1 workers of TP1; 2xTP1 + 1xTP2; 1xTP2 + 2xTP1; 1xTP2 +
// 1xTP2): 7 layouts, each the simulation of one unit times its replicas.
TEST(Search, DisaggregatedLayoutsFillTheGpus) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h200");
  SearchSpec spec;
  spec.gpus = 4;
  spec.engines = {"vllm"};
  spec.weights = {Format::kFp8};
  spec.concurrencies = {8};
  spec.modes = {ServingMode::kDisaggregated};
  const SearchResult r = search_deployments(m, d, spec);
  EXPECT_EQ(r.evaluated + r.refused + r.skipped, 7);
  ASSERT_FALSE(r.front.empty());
  for (const Deployment& x : r.front) {
    ASSERT_EQ(x.mode, ServingMode::kDisaggregated);
    const std::int64_t unit = x.prefill_workers * x.prefill_tp + x.decode_workers * x.decode_tp;
    EXPECT_EQ(x.replicas * unit, 4);
    const ServingResult one = predict_serving(m, d, disaggregated_fp8(x, spec, 8), vllm());
    EXPECT_NEAR(x.tokens_per_s, one.output_tokens_per_s * static_cast<double>(x.replicas),
                1e-9 * x.tokens_per_s);
  }
  // One GPU has no room for two pools: aggregated only by default.
  spec.gpus = 1;
  spec.modes.clear();
  const SearchResult single = search_deployments(m, d, spec);
  for (const Deployment& x : single.front) EXPECT_EQ(x.mode, ServingMode::kAggregated);
}

// A MoE model is also searched with data-parallel attention over each
// aggregated TP size of 2 or more, with the experts sliced or spread whole
// (EP = TP where it divides the 128 experts): TP 1, TP 2, TP 2 with DP
// attention, and TP 2 with DP attention and EP 2.
TEST(Search, MoeModelsAlsoTryDataParallelAttention) {
  const ModelSpec m = load_model("qwen3-30b-a3b");
  const Device& d = devices().get("h100");
  SearchSpec spec;
  spec.gpus = 2;
  spec.engines = {"vllm"};
  spec.weights = {Format::kFp8};
  spec.concurrencies = {64};
  spec.modes = {ServingMode::kAggregated};
  const SearchResult r = search_deployments(m, d, spec);
  EXPECT_EQ(r.evaluated + r.refused + r.skipped, 4);
  bool dp_seen = false, ep_seen = false;
  auto look = [&](const Deployment& x) {
    dp_seen |= x.attention_dp > 1;
    ep_seen |= x.ep > 1;
    if (x.attention_dp > 1) {
      EXPECT_EQ(x.attention_dp, x.tp);
      EXPECT_NE(deployment_name(x).find("DP-attention"), std::string::npos);
    }
    if (x.ep > 1) {
      EXPECT_EQ(x.ep, x.tp);
      EXPECT_NE(deployment_name(x).find("EP2"), std::string::npos);
    }
  };
  for (const Deployment& x : r.front) look(x);
  if (r.best) look(*r.best);
  for (const auto& x : r.runners_up) look(x.deployment);
  EXPECT_TRUE(dp_seen);
  EXPECT_TRUE(ep_seen);
}

// A MoE model's disaggregated pools are also tried with data-parallel
// attention and EP over their TP. On 4 GPUs: the 4 units of TP-1 workers
// alone; 2xTP1 + 1xTP2 and 1xTP2 + 2xTP1 twice (the TP-2 pool plain or
// wide); 1xTP2 + 1xTP2 four times (each pool either way): 12 layouts.
TEST(Search, MoeDisaggregatedPoolsAlsoTryWideExpertParallelism) {
  const ModelSpec m = load_model("qwen3-30b-a3b");
  const Device& d = devices().get("h100");
  SearchSpec spec;
  spec.gpus = 4;
  spec.engines = {"vllm"};
  spec.weights = {Format::kFp8};
  spec.concurrencies = {64};
  spec.modes = {ServingMode::kDisaggregated};
  const SearchResult r = search_deployments(m, d, spec);
  EXPECT_EQ(r.evaluated + r.refused + r.skipped, 12);
  std::vector<const Deployment*> seen;
  for (const Deployment& x : r.front) seen.push_back(&x);
  for (const auto& x : r.runners_up) seen.push_back(&x.deployment);
  for (const Deployment* x : seen) {
    EXPECT_TRUE(x->prefill_ep == 1 || x->prefill_ep == x->prefill_tp);
    EXPECT_EQ(x->prefill_attention_dp, x->prefill_ep);
    EXPECT_TRUE(x->ep == 1 || x->ep == x->decode_tp);
    const ServingResult one = predict_serving(m, d, disaggregated_fp8(*x, spec, 64), vllm());
    EXPECT_NEAR(x->tokens_per_s, one.output_tokens_per_s * static_cast<double>(x->replicas),
                1e-9 * x->tokens_per_s)
        << deployment_name(*x);
  }
  Deployment wide;
  wide.engine = "sglang";
  wide.weights = Format::kFp8;
  wide.mode = ServingMode::kDisaggregated;
  wide.prefill_workers = 1;
  wide.prefill_tp = wide.prefill_attention_dp = wide.prefill_ep = 8;
  wide.decode_workers = 2;
  wide.decode_tp = wide.attention_dp = wide.ep = 8;
  EXPECT_EQ(deployment_name(wide), "sglang fp8 1xTP8 DP-attention EP8 + 2xTP8 DP-attention EP8 x1");
}

// Speculative decoding in every configuration: the same layouts, each with
// the serving model's speculative steps, so a configuration's TPOT is the
// one predict_serving gives with those draft tokens.
// The smallest search: 4 clients of Llama-3.1-8B on one H100, vLLM, fp8.
SearchSpec one_h100_vllm_fp8() {
  SearchSpec spec;
  spec.gpus = 1;
  spec.engines = {"vllm"};
  spec.weights = {Format::kFp8};
  spec.concurrencies = {4};
  return spec;
}

// Each engine runs the weights with its own activations, as predict does
// without --act: vLLM's fp8 on an A100 is weight-only (FP8 Marlin), priced
// rather than refused; on an H100 it is W8A8 (the weights' format).
TEST(Search, EachEngineRunsTheWeightsWithItsActivations) {
  const ModelSpec m = load_model("llama-3.1-8b");
  SearchSpec spec = one_h100_vllm_fp8();
  ServingScenario s;
  s.isl = spec.isl;
  s.osl = spec.osl;
  s.concurrency = 4;
  s.step.precision.weights = Format::kFp8;
  for (const char* id : {"a100", "h100"}) {
    const Device& d = devices().get(id);
    const SearchResult r = search_deployments(m, d, spec);
    EXPECT_EQ(r.refused, 0) << id;
    ASSERT_TRUE(r.best) << id;
    s.step.precision.act = d.computes(Format::kFp8) ? Format::kFp8 : Format::kBf16;
    s.step.precision.kv = Format::kBf16;
    EXPECT_DOUBLE_EQ(r.best->serving.tpot_s, predict_serving(m, d, s, vllm()).tpot_s) << id;
  }
}

TEST(Search, DraftTokensApplyToEveryConfiguration) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h100");
  SearchSpec spec = one_h100_vllm_fp8();
  const SearchResult plain = search_deployments(m, d, spec);
  spec.draft_tokens = 3;
  const SearchResult drafted = search_deployments(m, d, spec);
  EXPECT_EQ(drafted.evaluated, plain.evaluated);
  ASSERT_TRUE(plain.best && drafted.best);
  ServingScenario s;
  s.isl = spec.isl;
  s.osl = spec.osl;
  s.concurrency = 4;
  s.step.precision.weights = s.step.precision.act = Format::kFp8;
  s.step.draft_tokens = 3;
  s.step.acceptance = kDefaultDraftAcceptance;
  EXPECT_DOUBLE_EQ(drafted.best->serving.tpot_s, predict_serving(m, d, s, vllm()).tpot_s);
  EXPECT_LT(drafted.best->serving.tpot_s, plain.best->serving.tpot_s);
  spec.draft_tokens = 0;
  spec.acceptance = 0.7;  // without draft tokens
  EXPECT_THROW((void)search_deployments(m, d, spec), InvalidArgument);
}

// Prefix reuse applies to every configuration: the best one is what
// predict_serving gives with the same shared prefix and prompt pool, and its
// TTFT falls; on 2 GPUs, disaggregated layouts are refused with the pool's
// reason while aggregated ones still run.
TEST(Search, PrefixReuseAppliesToEveryConfiguration) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h100");
  SearchSpec spec = one_h100_vllm_fp8();
  const SearchResult plain = search_deployments(m, d, spec);
  spec.shared_prefix = 256;
  spec.prompt_pool = 2;
  const SearchResult reused = search_deployments(m, d, spec);
  ASSERT_TRUE(plain.best && reused.best);
  ServingScenario s;
  s.isl = spec.isl;
  s.osl = spec.osl;
  s.concurrency = 4;
  s.step.precision.weights = s.step.precision.act = Format::kFp8;
  s.shared_prefix = 256;
  s.prompt_pool = 2;
  const ServingResult direct = predict_serving(m, d, s, vllm());
  EXPECT_DOUBLE_EQ(reused.best->serving.ttft_s, direct.ttft_s);
  EXPECT_GT(reused.best->serving.prefix_hit_rate, 0);
  EXPECT_LT(reused.best->serving.ttft_s, plain.best->serving.ttft_s);
  spec.gpus = 2;
  const SearchResult two = search_deployments(m, d, spec);
  EXPECT_GT(two.evaluated, 0);
  EXPECT_TRUE(std::any_of(two.refusals.begin(), two.refusals.end(), [](const auto& r) {
    return r.first.find("prompt pool: modeled for aggregated serving only") != std::string::npos;
  }));
  spec.prompt_pool = -1;
  EXPECT_THROW((void)search_deployments(m, d, spec), InvalidArgument);
}

// The recipe applies to every configuration: each is what predict_serving
// gives with it (vLLM: 4 + 1024 + 1500 tokens a step, 4 running).
TEST(Search, TheRecipeAppliesToEveryConfiguration) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h100");
  SearchSpec spec = one_h100_vllm_fp8();
  spec.recipe = ServingRecipe::kAiConfigurator;
  const SearchResult r = search_deployments(m, d, spec);
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->serving.recipe, ServingRecipe::kAiConfigurator);
  EXPECT_EQ(r.best->serving.token_budget, 4 + 1024 + 1500);
  EXPECT_EQ(r.best->serving.max_running, 4);
  ServingScenario s;
  s.isl = spec.isl;
  s.osl = spec.osl;
  s.concurrency = 4;
  s.step.precision.weights = s.step.precision.act = Format::kFp8;
  s.recipe = ServingRecipe::kAiConfigurator;
  EXPECT_DOUBLE_EQ(r.best->serving.ttft_s, predict_serving(m, d, s, vllm()).ttft_s);
}

// Random lengths reach every configuration: the best is the serving
// simulation of its deployment with the same ranges.
TEST(Search, RandomLengthsApplyToEveryConfiguration) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h100");
  SearchSpec spec = one_h100_vllm_fp8();
  set_range_ratio(spec, 0.8);
  const SearchResult r = search_deployments(m, d, spec);
  ASSERT_TRUE(r.best);
  ServingScenario s;
  s.isl = spec.isl;
  s.osl = spec.osl;
  s.isl_min = 819;  // int(0.8 x 1024)
  s.osl_min = 204;  // int(0.8 x 256)
  s.concurrency = r.best->concurrency;
  s.step.precision.weights = s.step.precision.act = Format::kFp8;
  EXPECT_DOUBLE_EQ(r.best->serving.ttft_s, predict_serving(m, d, s, vllm()).ttft_s);
  spec.isl_min = spec.isl + 1;
  EXPECT_THROW((void)search_deployments(m, d, spec), InvalidArgument);
}

// A release named for one engine reaches each of its configurations and no
// other engine's: vLLM 0.12.0 forms each batch as its step starts (no async
// scheduling before 0.14.0), so its best is predict_serving at that release
// and its TPOT is not the current release's; SGLang's deployments are the
// same as in a search without releases. The names carry the release.
TEST(Search, AnEngineReleaseReachesThatEnginesConfigurations) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h100");
  SearchSpec spec = one_h100_vllm_fp8();
  spec.engines = {"vllm", "sglang"};
  const SearchResult current = search_deployments(m, d, spec);
  spec.engine_versions = {{"vllm", "0.12.0"}};
  const SearchResult dated = search_deployments(m, d, spec);
  ASSERT_EQ(dated.evaluated, 2);  // each engine at TP 1, concurrency 4
  ASSERT_EQ(current.evaluated, 2);
  ServingScenario s;
  s.isl = spec.isl;
  s.osl = spec.osl;
  s.concurrency = 4;
  s.step.precision.weights = s.step.precision.act = Format::kFp8;
  const auto find = [](const SearchResult& r, const std::string& engine) -> const Deployment* {
    if (r.best && r.best->engine == engine) return &*r.best;
    for (const auto& x : r.runners_up) {
      if (x.deployment.engine == engine) return &x.deployment;
    }
    return nullptr;
  };
  const Deployment* vllm_now = find(current, "vllm");
  const Deployment* vllm_then = find(dated, "vllm");
  ASSERT_NE(vllm_now, nullptr);
  ASSERT_NE(vllm_then, nullptr);
  EXPECT_EQ(vllm_then->engine_version, "0.12.0");
  EXPECT_EQ(deployment_name(*vllm_then), "vllm 0.12.0 fp8 TP1 x1");
  EXPECT_EQ(deployment_name(*vllm_now), "vllm fp8 TP1 x1");
  s.engine_version = "0.12.0";
  EXPECT_DOUBLE_EQ(vllm_then->serving.tpot_s, predict_serving(m, d, s, vllm()).tpot_s);
  EXPECT_NE(vllm_then->serving.tpot_s, vllm_now->serving.tpot_s);
  const Deployment* sglang_now = find(current, "sglang");
  const Deployment* sglang_then = find(dated, "sglang");
  ASSERT_NE(sglang_now, nullptr);
  ASSERT_NE(sglang_then, nullptr);
  EXPECT_EQ(sglang_then->engine_version, "");
  EXPECT_DOUBLE_EQ(sglang_then->serving.tpot_s, sglang_now->serving.tpot_s);
  EXPECT_DOUBLE_EQ(sglang_then->serving.ttft_s, sglang_now->serving.ttft_s);

  // A release for an engine the search does not run, or one check_engine_version refuses.
  spec.engine_versions = {{"trtllm", "1.0.0"}};
  EXPECT_THROW((void)search_deployments(m, d, spec), InvalidArgument);
  spec.engine_versions = {{"vllm", "0.12.0; rm"}};
  EXPECT_THROW((void)search_deployments(m, d, spec), InvalidArgument);
}

// Releases as the command line names them.
TEST(Search, EngineVersionsParseAsTheCommandLineNamesThem) {
  using Versions = std::map<std::string, std::string>;
  EXPECT_EQ(parse_engine_versions("vllm=0.11.0,sglang=0.5.6", {}),
            (Versions{{"vllm", "0.11.0"}, {"sglang", "0.5.6"}}));
  EXPECT_EQ(parse_engine_versions("0.11.0", {"vllm"}), (Versions{{"vllm", "0.11.0"}}));
  EXPECT_THROW((void)parse_engine_versions("0.11.0", {}), InvalidArgument);  // which engine?
  EXPECT_THROW((void)parse_engine_versions("0.11.0", {"vllm", "sglang"}), InvalidArgument);
  EXPECT_THROW((void)parse_engine_versions("vllm=", {}), InvalidArgument);
  EXPECT_THROW((void)parse_engine_versions("=0.11.0", {}), InvalidArgument);
  EXPECT_THROW((void)parse_engine_versions("vllm=0.11.0,", {}), InvalidArgument);
  EXPECT_THROW((void)parse_engine_versions("vllm=0.11.0,vllm=0.12.0", {}), InvalidArgument);
  EXPECT_THROW((void)parse_engine_versions(std::string(1001, 'a'), {"vllm"}), InvalidArgument);
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

namespace roofline {
namespace {

// Data-parallel replicas serve apart: 10 clients over 2 replicas put 5 in
// each, so the times are one instance's with 5 clients, and the throughput
// is both instances' on twice the GPUs; an uneven split takes the busiest
// (7 clients over 2: 4), counting tokens client by client.
TEST(ServingReplicas, ClientsSpreadOverIndependentInstances) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = devices().get("h200");
  ServingScenario one = llama70b_on_two_h200(5);
  ServingScenario two = llama70b_on_two_h200(10);
  two.replicas = 2;
  const ServingResult a = predict_serving(m, d, one, vllm());
  const ServingResult b = predict_serving(m, d, two, vllm());
  EXPECT_DOUBLE_EQ(b.tpot_s, a.tpot_s);
  EXPECT_DOUBLE_EQ(b.ttft_s, a.ttft_s);
  EXPECT_EQ(b.gpus, 2 * a.gpus);
  EXPECT_DOUBLE_EQ(b.output_tokens_per_s, 2 * a.output_tokens_per_s);
  EXPECT_DOUBLE_EQ(b.output_tokens_per_s_per_gpu, a.output_tokens_per_s_per_gpu);
  EXPECT_EQ(b.max_concurrency_that_fits, 2 * a.max_concurrency_that_fits);

  ServingScenario odd = llama70b_on_two_h200(7);
  odd.replicas = 2;
  const ServingResult c = predict_serving(m, d, odd, vllm());
  const ServingResult four = predict_serving(m, d, llama70b_on_two_h200(4), vllm());
  EXPECT_DOUBLE_EQ(c.tpot_s, four.tpot_s);
  EXPECT_DOUBLE_EQ(c.output_tokens_per_s, four.output_tokens_per_s * 7 / 4);

  ServingScenario disagg = two;
  disagg.mode = ServingMode::kDisaggregated;
  EXPECT_THROW((void)predict_serving(m, d, disagg, vllm()), InvalidArgument);
}

}  // namespace
}  // namespace roofline
