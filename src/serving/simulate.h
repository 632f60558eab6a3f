// A discrete-event simulation of a closed-loop serving benchmark: C clients,
// each sending its next request when the last one finishes, against pools of
// engine instances that run one step (forward pass) at a time. Each step's
// contents follow the engine's scheduler: a token budget shared by decode
// tokens and prompt chunks, a cap on running requests, KV slots, chunked or
// whole prompts, and prefill-first or mixed steps. The steps' costs come from
// a cost function (predict() in serving.cpp), so the simulation itself knows
// nothing of models or devices.
//
// Runs of pure decoding (no prompt to start, nothing to admit) are advanced
// to the next completion in one move, so a simulation costs about one cost
// lookup per prompt chunk and per completion, not per step.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace roofline::detail {

// Seconds of one step: `decode` requests decoding at a mean context of
// `context` tokens beside `prefill` prompt tokens (decode 0: a prefill-only step).
using StepCost = std::function<double(std::int64_t decode, double context, std::int64_t prefill)>;

struct PoolSpec {
  enum class Role : std::uint8_t { kMixed, kPrefill, kDecode };
  Role role = Role::kMixed;
  std::int64_t instances = 1;
  std::int64_t kv_tokens = 1;  // tokens of KV cache one instance holds
  // Admission takes a request's whole length (isl + osl) at once and never
  // preempts (TensorRT-LLM's GUARANTEED_NO_EVICT); else it takes the prompt,
  // caches grow a token a step, and when they run out the newest running
  // request is preempted and later recomputed (vLLM, SGLang).
  bool reserve_whole = false;
  std::int64_t max_running = 1;  // the engine's cap on requests in flight
  // The cache is paged in blocks of this many tokens: a request's admission
  // takes whole blocks, and the last one's unused part stays with it while
  // it grows (1: token-granular).
  std::int64_t kv_block_tokens = 1;
  std::int64_t token_budget = 1;  // tokens a step may carry (decode tokens and chunks)
  bool chunked_prefill = true;    // prompts split across steps to fill the budget
  // Chunked prompts: the most tokens one request takes a step (an attention
  // data-parallel rank's share of the budget; 0: the budget's).
  std::int64_t chunk_cap = 0;
  bool prefill_first = false;  // a step with prompt work carries no decode tokens
  // Each step's batch is formed as the step before it starts (TensorRT-LLM's
  // and SGLang's overlap schedulers, vLLM's async scheduling): a request that
  // arrives during step n joins step n + 2, and one sent in reply to a
  // response at a step's end joins the step after next. Else a batch is
  // formed as its step starts.
  bool formed_a_step_ahead = false;
  // Batch waiting (TensorRT-LLM's batch_wait_timeout_iters and
  // batch_wait_max_tokens_ratio, mixed pools): a step that would carry prompt
  // chunks beside decode tokens leaves the chunks out, and counts a wait,
  // unless `wait_steps` such waits have passed or its tokens (the chunks, and
  // decode_tokens a decoding request) reach wait_ratio of the budget; taking
  // them resets the count. 0 waits: off.
  std::int64_t wait_steps = 0;
  double wait_ratio = 0;
  std::int64_t decode_tokens = 1;  // a decoding request's tokens in a step (1 + drafts)
  // SGLang's --scheduler-recv-interval N (mixed pools): the engine takes in new
  // requests only at a step whose predecessors since the last intake weigh N,
  // a decode step 1 and a step with prompt tokens 1,000 (so the step after a
  // prompt always takes them); an idle loop takes them at once. 0 or 1: every step.
  std::int64_t recv_interval = 0;
  // Attention data parallelism with TensorRT-LLM's balance (attention_dp_config
  // enable_balance, PyExecutor._balance_adp_requests; mixed pools): the
  // instance's `balance_groups` attention groups each hold whole requests (a
  // newcomer joins the group running the fewest), and a step takes prompt
  // chunks only when every group has a prompt to start and fewer decoding
  // requests than its share of max_running, or when some group has none
  // decoding, or when a count kept by every other step reaches
  // balance_timeout (it then starts again from 0). A step where every group
  // has a prompt and a decoding request first holds them balance_batching
  // steps more. 0 groups: off. Mixed steps only (not prefill-first).
  std::int64_t balance_groups = 0;
  std::int64_t balance_timeout = 0, balance_batching = 0;
  StepCost cost;
};

struct SimSpec {
  // Each request's prompt and output lengths, drawn uniformly from
  // [isl_min, isl] and [osl_min, osl] (a benchmark's random lengths, as
  // InferenceMAX and SGLang's bench_serving draw them) by a generator of fixed
  // seed, so a simulation is a pure function of its spec. 0: fixed at isl, osl.
  std::int64_t isl = 1, osl = 1, clients = 1, requests_per_client = 1;
  std::int64_t isl_min = 0, osl_min = 0;
  PoolSpec first;                  // kMixed (aggregated) or kPrefill
  std::optional<PoolSpec> decode;  // kDecode, with a kPrefill first pool
  double transfer_s = 0;           // a prompt's KV cache from prefill to decode
  // Output tokens a decode step yields per request (speculative decoding;
  // 1 without): a request needs ceil((osl - 1) / tokens_per_step) decode
  // steps after its first token, and its cache grows that much a step.
  double tokens_per_step = 1;
  // Tokens at the start of every prompt that the prefix cache already holds
  // (a shared system prompt): never computed, held once (the pools' kv_tokens
  // are what is left beside it). Below the shortest prompt.
  std::int64_t cached_prefix = 0;
  // Prompts drawn with replacement from this many distinct ones (a
  // benchmark's dataset: aiperf's synthetic one holds 100 by default), each
  // with its own length; 0: every prompt unique. An instance's prefix cache
  // keeps each prompt it has prefilled; a prompt it keeps is found with the
  // chance that its free KV cache holds every prompt kept (what LRU gives
  // under uniform popularity), and then computes only the tokens past its
  // last whole cache block. Aggregated pools only.
  std::int64_t prompt_pool = 0;
};

struct SimResult {
  // Per request, in completion order: time to first token, time per output
  // token after the first ((e2e - ttft) / (osl - 1); requests of one output
  // token have none, as benchmarks count it, unless every request has one:
  // then 0 each), e2e.
  std::vector<double> ttft_s, tpot_s, e2e_s;
  // Every gap between two streamed tokens of a request, as (seconds, how many
  // such gaps): a run's steps give their decoding requests one each.
  std::vector<std::pair<double, std::int64_t>> token_gaps;
  std::int64_t output_tokens = 0;  // the requests' output lengths summed
  double duration_s = 0;           // from the first arrival to the last completion
  std::int64_t steps = 0;
  // At the end, the largest KV cache an instance still holds and the
  // requests still admitted (both 0: every request gave back what it took).
  double kv_left = 0;
  std::int64_t running_left = 0;
  std::int64_t prompt_steps = 0;   // steps that carried prompt tokens
  double busy_s = 0;               // all instances' step time
  double prefill_added_s = 0;      // of busy_s, what prompt tokens added to the steps
  double prefill_pool_busy_s = 0;  // disaggregated: the prefill workers' step time
  double decoding_step_sum = 0;    // decode requests summed over steps (mean batch)
  std::int64_t decode_steps = 0;   // steps with decode tokens
  std::int64_t preemptions = 0;
  std::int64_t waited_steps = 0;        // steps that left their prompt chunks out (batch waiting)
  std::int64_t balance_held_steps = 0;  // steps that left them out for the attention-DP balance
  // Mean wait from arrival to the step that takes a request in (the step under
  // way, and with a receive interval the steps until the next intake).
  double recv_wait_s = 0;
  std::int64_t prompts = 0, prefix_hits = 0;  // requests sent; of them, found in the prefix cache
  double admit_wait_s = 0;                    // mean wait from arrival to admission (KV slot, cap)
  double chunk_wait_s = 0;                    // mean from admission to the first prompt chunk
};

// Throws InvalidArgument for an inconsistent spec (sizes < 1, a decode pool
// without a prefill pool, a KV cache that cannot hold one request).
[[nodiscard]] SimResult simulate_serving(const SimSpec& spec);

}  // namespace roofline::detail
