#include "roofline/serving.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "roofline/deadline.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "simulate.h"

namespace roofline {
namespace {

// A step's cost from predict(), remembered on a grid: exact below 64
// requests or prompt tokens, then 32 points an octave (2% apart), context 16
// an octave; linear between grid points. A simulation asks for thousands of
// steps but meets few distinct grid points.
class StepCostGrid {
 public:
  // `rank_chunk`: with attention data parallelism and chunked prompts, the
  // prompt tokens one rank takes a step (Scenario::prefill_chunk; 0: whole).
  // `isl`: the tokens a prompt computes; `cached`: a prefix every prompt
  // shares before them, held in the cache, which they attend over.
  StepCostGrid(const ModelSpec& m, const Device& d, const Scenario& base, const ModelOptions& o,
               std::int64_t isl, std::int64_t rank_chunk, std::int64_t cached)
      : m_(m), d_(d), base_(base), o_(o), isl_(isl), rank_chunk_(rank_chunk), cached_(cached) {
    base_.phase = Phase::kDecode;
    clear_prompt_share(base_);
  }

  double operator()(std::int64_t decode, double context, std::int64_t prefill) {
    const Axis n = decode > 0 ? axis(static_cast<double>(decode), 32, 64) : Axis{0, 0, 0};
    const Axis p = prefill > 0 ? axis(static_cast<double>(prefill), 32, 64) : Axis{0, 0, 0};
    // A prefill-only step's one decoding token (predict() needs a batch) at
    // the prompts' whole length.
    const double whole = static_cast<double>(isl_ + cached_);
    const Axis c = decode > 0 ? axis(std::max(1.0, context), 16, 0) : Axis{whole, whole, 0};
    double t = 0;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        for (int k = 0; k < 2; ++k) {
          const double w = (i ? n.w : 1 - n.w) * (j ? p.w : 1 - p.w) * (k ? c.w : 1 - c.w);
          if (w == 0) continue;
          t += w * at(static_cast<std::int64_t>(i ? n.hi : n.lo),
                      static_cast<std::int64_t>(j ? p.hi : p.lo),
                      static_cast<std::int64_t>(k ? c.hi : c.lo));
        }
      }
    }
    return t;
  }

  std::int64_t rank_chunk() const noexcept { return rank_chunk_; }

  // The whole prediction of a step (at() keeps its time).
  Prediction step(std::int64_t decode, std::int64_t prefill, std::int64_t context) const {
    Scenario s = base_;
    s.batch = std::max<std::int64_t>(decode, 1);  // a prefill-only step: one token's decode
    s.seq_len = context;
    s.prefill_tokens = prefill;
    s.prefill_prompt = prefill > 0 ? isl_ : 0;
    s.prefill_cached = prefill > 0 ? cached_ : 0;
    s.prefill_chunk = prefill > 0 ? rank_chunk_ : 0;
    return predict(m_, d_, s, o_);
  }

  double at(std::int64_t decode, std::int64_t prefill, std::int64_t context) {
    const Key key{decode, prefill, context};
    const auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    const Prediction pred = step(decode, prefill, context);
    // A prefill-only step has no decode tokens: no decode-step cast of the
    // KV pool (EngineProfile::latent_cache_cast).
    const double t = pred.time_s - (decode > 0 ? 0 : pred.latent_cache_cast_s);
    cache_.emplace(key, t);
    return t;
  }

 private:
  struct Axis {
    double lo = 0, hi = 0, w = 0;  // value = lo + w (hi - lo)
  };
  // Grid points around v: integers up to `exact`, then `per_octave` points
  // an octave (rounded to integers).
  static Axis axis(double v, int per_octave, double exact) {
    if (v <= exact) return {v, v, 0};
    const double x = std::log2(v) * per_octave;
    const double lo = std::round(std::exp2(std::floor(x) / per_octave));
    const double hi = std::round(std::exp2((std::floor(x) + 1) / per_octave));
    if (hi <= lo) return {lo, lo, 0};
    return {lo, hi, std::clamp((v - lo) / (hi - lo), 0.0, 1.0)};
  }
  struct Key {
    std::int64_t decode, prefill, context;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      std::uint64_t h = static_cast<std::uint64_t>(k.decode) * 0x9E3779B97F4A7C15ULL;
      h ^= static_cast<std::uint64_t>(k.prefill) + 0x7F4A7C15ULL + (h << 6) + (h >> 2);
      h ^= static_cast<std::uint64_t>(k.context) + 0x94D049BBULL + (h << 6) + (h >> 2);
      return static_cast<std::size_t>(h);
    }
  };
  const ModelSpec& m_;
  const Device& d_;
  Scenario base_;
  const ModelOptions& o_;
  std::int64_t isl_, rank_chunk_, cached_;
  std::unordered_map<Key, double, KeyHash> cache_;
};

// How much memory the engine gives its KV cache: a share of the device's
// memory or of what the weights leave (EngineScheduler::kv_memory), the
// share the recipe's deployments set where they set one.
struct KvMemoryRule {
  const EngineScheduler* scheduler;
  double share;
  std::string_view version;  // the engine's release ("" the current one)
  [[nodiscard]] std::string describe() const {
    return scheduler->kv_memory_of_free
               ? fmt::format("{:.0f}% of the memory the weights and activations leave", share * 100)
               : fmt::format("{:.0f}% of memory for weights and cache", share * 100);
  }
};

// The KV cache one instance of `base` holds beside its weights, in tokens
// (a request of `tokens` tokens sets the bytes per token: sliding-window
// layers hold less than a token's full share); Unsupported when not even
// one such request fits.
struct KvCapacity {
  std::int64_t tokens = 0;
  double request_bytes = 0;     // per GPU, one request of `tokens` tokens
  double room_bytes = 0;        // per GPU, the whole cache
  double activation_bytes = 0;  // per GPU, what the rule subtracted for activations
  // The engine's profiling pass where its sampler set that: rows and bytes a logit.
  std::int64_t sampler_rows = 0;
  double sampler_bytes_per_logit = 0;
};

// The profiling pass's sampler as `rule` runs it for a pool of `budget`
// tokens and `running` requests, where it sets the pass's peak: its rows and
// bytes a logit (none otherwise).
std::pair<std::int64_t, double> pass_sampler(const KvMemoryRule& rule, const ModelSpec& m,
                                             const Device& d, const Scenario& base,
                                             std::int64_t budget, std::int64_t running,
                                             double activations) {
  const EngineScheduler& sched = *rule.scheduler;
  const double per_logit = sched.kv_profile_sampler_bytes(rule.version);
  if (!sched.kv_profile_pass() || !(per_logit > 0)) return {0, 0};
  const std::int64_t rows = sched.kv_profile_pass_rows(budget, running);
  // The sampler's working set is the pass's peak, and the pass what was subtracted.
  const double forward = profile_pass_activation_bytes(m, d, base, budget, 1, 0);
  const double pass = profile_pass_activation_bytes(m, d, base, budget, rows, per_logit);
  if (pass > forward && pass >= activations) return {rows, per_logit};
  return {0, 0};
}

KvCapacity kv_capacity(const ModelSpec& m, const Device& d, const Scenario& base,
                       std::int64_t tokens, const KvMemoryRule& rule, std::int64_t budget,
                       std::int64_t running, const EngineProfile* engine,
                       std::string_view moe_kernel, const MoeKernelRelease* release) {
  Scenario one = base;
  one.phase = Phase::kDecode;
  clear_prompt_share(one);
  one.batch = 1;
  one.seq_len = tokens;
  MemoryEstimate mem = estimate_memory(m, d, one);
  mem.weights_bytes += engine_file_mix_bytes(engine, m, d, one);  // the engine's files
  mem.weights_bytes += engine_moe_padding_bytes(engine, m, d, one, moe_kernel, release);
  // The pool's own budget and request limit set the engine's profiling pass.
  const double activations = kv_sizing_activation_bytes(
      *rule.scheduler, m, d, base, mem.activation_bytes, budget, running, rule.version);
  const double room =
      rule.scheduler->kv_room_bytes(rule.share, mem.capacity_bytes, mem.weights_bytes, activations);
  const auto [rows, per_logit] = pass_sampler(rule, m, d, base, budget, running, activations);
  if (!(mem.kv_cache_bytes > 0) || room < mem.kv_cache_bytes) {
    throw Unsupported(fmt::format(
        "one request of {} tokens does not fit at TP {}: weights {:.1f} GB, KV cache {:.2f} GB "
        "per request, activations {:.2f} GB{}, {} ({:.0f} GB a GPU)",
        tokens, base.tp, mem.weights_bytes / 1e9, mem.kv_cache_bytes / 1e9, activations / 1e9,
        rows > 0 ? fmt::format(" (the engine's memory-profiling pass samples {} rows of {} logits; "
                               "a lower --max-running shrinks it)",
                               rows, m.vocab)
                 : std::string(),
        rule.describe(), mem.capacity_bytes / 1e9));
  }
  const double per_token = mem.kv_cache_bytes / static_cast<double>(tokens);
  return {static_cast<std::int64_t>(std::min(std::floor(room / per_token), 1e15)),
          mem.kv_cache_bytes,
          room,
          activations,
          rows,
          per_logit};
}

Spread spread(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  // Nearest rank, selected rather than sorted (tens of thousands of requests
  // per configuration in a search): the highest rank first, then each lower
  // one within the part below it.
  const auto index = [&](double q) {
    const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return std::clamp<std::size_t>(i, 1, v.size()) - 1;
  };
  auto end = v.end();
  for (const auto& [q, out] : {std::pair{0.99, &s.p99}, {0.9, &s.p90}, {0.5, &s.p50}}) {
    const auto at = v.begin() + static_cast<std::ptrdiff_t>(index(q));
    std::nth_element(v.begin(), at, end);
    *out = *at;
    end = at + 1;
  }
  return s;
}

// The value at cumulative weight `rank` (1-based) of v[lo, hi), reordering
// that range: selection by halves, linear on the whole (gaps come as (value,
// count) pairs, one pair a run of steps, so sorting every simulation's would
// cost more than the simulation).
double weighted_select(std::vector<std::pair<double, std::int64_t>>& v, std::size_t lo,
                       std::size_t hi, std::int64_t rank) {
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const auto begin = v.begin();
    std::nth_element(begin + static_cast<std::ptrdiff_t>(lo),
                     begin + static_cast<std::ptrdiff_t>(mid),
                     begin + static_cast<std::ptrdiff_t>(hi));
    std::int64_t below = 0;
    for (std::size_t i = lo; i < mid; ++i) below += v[i].second;
    if (rank <= below) {
      hi = mid;
    } else if (rank <= below + v[mid].second) {
      return v[mid].first;
    } else {
      rank -= below + v[mid].second;
      lo = mid + 1;
    }
  }
  return v[lo].first;
}

// Mean and nearest-rank percentiles of values that come with counts.
Spread weighted_spread(std::vector<std::pair<double, std::int64_t>> v) {
  Spread s;
  double sum = 0;
  std::int64_t count = 0;
  for (const auto& [x, n] : v) {
    sum += x * static_cast<double>(n);
    count += n;
  }
  if (count == 0) return s;
  s.mean = sum / static_cast<double>(count);
  for (const auto& [q, out] : {std::pair{0.5, &s.p50}, {0.9, &s.p90}, {0.99, &s.p99}}) {
    const auto rank = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(std::ceil(q * static_cast<double>(count))), 1, count);
    *out = weighted_select(v, 0, v.size(), rank);
  }
  return s;
}

// A pool's scheduler limits and the decode batches its graphs cover.
struct PoolLimits {
  std::int64_t budget = 1, cap = 1;
  bool prefill_first = false;
  bool a_step_ahead = false;  // batches formed a step ahead (the engine's overlap scheduling)
  std::int64_t graph_max_batch = 0;  // 0: the engine's own
};

std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

// The limits AIConfigurator's generator sets for the engine's benchmark
// deployments (EngineScheduler::AiConfigurator, from data/engines): a worker
// rank of batch size bs runs bs requests with graphs up to bs, and a budget
// of its prompt part plus its decode tokens in whole blocks. With attention
// data parallelism each of a worker's `ranks` groups takes these limits.
PoolLimits aiconfigurator_limits(const EngineProfile& engine, detail::PoolSpec::Role role,
                                 std::int64_t bs, std::int64_t ranks, std::int64_t isl,
                                 const PoolLimits& defaults) {
  using Role = detail::PoolSpec::Role;
  const auto& x = engine.scheduler.aiconfigurator;
  if (!x.known) {
    throw Unsupported("the aiconfigurator recipe has no limits for the " + engine.name +
                      " engine (its profile gives none)");
  }
  PoolLimits l = defaults;
  l.cap = bs * ranks;
  l.graph_max_batch = bs;
  if (x.mixed_steps && role == Role::kMixed) l.prefill_first = false;
  if (role == Role::kPrefill && !x.prefill_workers_ahead) l.a_step_ahead = false;
  const auto block = static_cast<std::int64_t>(x.block_tokens.value);
  std::int64_t prompt = isl + static_cast<std::int64_t>(x.prompt_headroom.value);
  // SGLang divides its chunk size among the attention data-parallel ranks
  // (server_args' _handle_data_parallelism: chunked_prefill_size // dp_size).
  if (x.prompt_within_chunk) prompt = std::min(prompt, defaults.budget / ranks);
  if (role == Role::kDecode) {
    if (x.decode_budget_is_batch) l.budget = ranks * round_up(bs, block);
  } else {
    l.budget = ranks * round_up(prompt + (role == Role::kMixed ? bs : 0), block);
  }
  return l;
}

}  // namespace

ServingRecipe parse_serving_recipe(const std::string& text) {
  if (text == "engine") return ServingRecipe::kEngineDefaults;
  if (text == "aiconfigurator") return ServingRecipe::kAiConfigurator;
  if (text == "trtllm-bench") return ServingRecipe::kBenchmarkTuning;
  throw InvalidArgument("recipe must be engine, aiconfigurator or trtllm-bench, not '" +
                        text.substr(0, 20) + "'");
}

std::string_view serving_recipe_name(ServingRecipe r) noexcept {
  switch (r) {
    case ServingRecipe::kAiConfigurator:
      return "aiconfigurator";
    case ServingRecipe::kBenchmarkTuning:
      return "trtllm-bench";
    case ServingRecipe::kEngineDefaults:
      break;
  }
  return "engine";
}

namespace {

using Tuning = EngineScheduler::BenchmarkTuning;

// Rounded up to the step of the first tier `v` is below, then at least `least`.
std::int64_t tuned_round(double v, const std::vector<Tuning::Tier>& tiers, double least) {
  for (const Tuning::Tier& t : tiers) {
    if (t.below == 0 || v < t.below)
      return static_cast<std::int64_t>(std::max(least, t.step * std::ceil(v / t.step)));
  }
  return static_cast<std::int64_t>(least);  // unreachable: the last tier is open
}

// A format's bytes in the heuristic's table, or null.
const Tuning::FormatBytes* tuned_format(const Tuning& t, Format f) {
  for (const auto& x : t.bytes_per_weight) {
    if (x.format == f) return &x;
  }
  return nullptr;
}

}  // namespace

BenchmarkLimits benchmark_limits(const EngineProfile& engine, const ModelSpec& m, const Device& d,
                                 const Scenario& step, double isl, double osl, double kv_share) {
  const Tuning& t = engine.scheduler.benchmark_tuning;
  if (!t.known) {
    throw Unsupported("the trtllm-bench recipe is TensorRT-LLM's own benchmark: " + engine.name +
                      " has none (give --engine trtllm)");
  }
  if (!(isl >= 1 && osl >= 1 && kv_share > 0 && kv_share <= 1))
    throw InvalidArgument("trtllm-bench's tuning needs mean lengths of at least 1 and a share");
  BenchmarkLimits b;
  const Format weights = step.precision.weights.value_or(m.native_weights);
  const Tuning::FormatBytes* w = tuned_format(t, weights);
  if (w == nullptr) {
    b.max_batch_size = engine.scheduler.running_on(d);
    b.max_num_tokens = engine.scheduler.budget_on(d);
    return b;
  }
  b.tuned = true;
  constexpr double kGiB = 1073741824.0;
  const double gpus = static_cast<double>(step.tp * step.pp);
  b.memory_gib = d.memory_capacity_bytes.value / kGiB * gpus;
  // The checkpoint's elements as its safetensors files count them: the
  // decoder's linear layers stored as the format packs them, the rest whole.
  const ParamCounts p = count_parameters(m);
  const double unquantized = p.embedding + p.lm_head + p.norms + p.router;
  const double elements = unquantized + (p.total - unquantized) * w->stored_elements_per_weight;
  b.checkpoint_gib = elements * w->bytes_per_element / kGiB;
  // A token's cache as its config gives it, at least one KV head a rank.
  const Tuning::FormatBytes* kv = tuned_format(t, step.precision.kv);
  const double kv_bytes = kv ? kv->bytes_per_element : 2;
  const auto attention_layers = static_cast<double>(
      m.layers - std::count(m.linear_layers.begin(), m.linear_layers.end(), std::uint8_t{1}));
  b.kv_gib_per_token = 2 * attention_layers *
                       static_cast<double>(std::max(step.tp, m.kv_heads) * m.head_dim) * kv_bytes /
                       kGiB;
  b.cache_gib = (b.memory_gib - b.checkpoint_gib) * kv_share;
  b.requests = b.cache_gib / (b.kv_gib_per_token * (isl + osl));
  if (b.memory_gib < b.checkpoint_gib || !(b.requests >= 1)) {
    throw Unsupported(
        fmt::format("trtllm-bench's tuning leaves no room: {:.1f} GiB of checkpoint in {:.1f} GiB "
                    "on {} GPU(s), "
                    "{:.2f} requests of {:.0f} tokens in its cache estimate",
                    b.checkpoint_gib, b.memory_gib, step.tp * step.pp, b.requests, isl + osl));
  }
  const double raw_batch = std::min(b.requests, t.batch_cap.value) / static_cast<double>(step.pp);
  const double raw_tokens = std::min(raw_batch * (1 + isl / osl), t.tokens_cap.value);
  b.max_batch_size = tuned_round(raw_batch, t.batch_tiers, t.min_batch.value);
  b.max_num_tokens = tuned_round(raw_tokens, t.token_tiers, t.min_tokens.value);
  return b;
}

DeploymentSwitch parse_switch(std::string_view what, const std::string& text) {
  if (text == "engine") return DeploymentSwitch::kEngine;
  if (text == "on") return DeploymentSwitch::kOn;
  if (text == "off") return DeploymentSwitch::kOff;
  throw InvalidArgument(
      fmt::format("{} must be engine, on or off, not '{}'", what, text.substr(0, 20)));
}

std::string_view switch_name(DeploymentSwitch s) noexcept {
  return s == DeploymentSwitch::kOn ? "on" : s == DeploymentSwitch::kOff ? "off" : "engine";
}

std::int64_t range_ratio_min(std::int64_t length, double ratio) {
  if (!(ratio >= 0 && ratio <= 1)) {
    throw InvalidArgument(fmt::format("range ratio = {} must be from 0 to 1", ratio));
  }
  return std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::floor(ratio * static_cast<double>(length))));
}

void check_prefix_reuse(std::int64_t shared_prefix, std::int64_t prompt_pool,
                        std::int64_t shortest_prompt) {
  if (shared_prefix < 0 || shared_prefix >= shortest_prompt) {
    throw InvalidArgument(fmt::format(
        "shared prefix = {} must be from 0 to the shortest prompt - 1 ({}): a prompt computes a "
        "token at least",
        shared_prefix, shortest_prompt - 1));
  }
  if (prompt_pool < 0 || prompt_pool > kMaxPromptPool) {
    throw InvalidArgument(fmt::format("prompt pool = {} must be from 0 (every prompt unique) to {}",
                                      prompt_pool, kMaxPromptPool));
  }
}

void set_range_ratio(ServingScenario& s, double ratio) {
  s.isl_min = range_ratio_min(s.isl, ratio);
  s.osl_min = range_ratio_min(s.osl, ratio);
}

ServingMode parse_serving_mode(const std::string& text) {
  if (text == "agg") return ServingMode::kAggregated;
  if (text == "disagg") return ServingMode::kDisaggregated;
  throw InvalidArgument("mode must be agg or disagg, not '" + text.substr(0, 20) + "'");
}

ServingResult predict_serving(const ModelSpec& m, const Device& d, const ServingScenario& in,
                              const ModelOptions& o) {
  check_deadline("serving prediction");
  auto check = [](const char* name, std::int64_t v, std::int64_t hi) {
    if (v < 1 || v > hi) {
      throw InvalidArgument(fmt::format("{} = {} is out of range (1 to {})", name, v, hi));
    }
  };
  check("isl", in.isl, kMaxSeqLen);
  check("osl", in.osl, kMaxSeqLen - in.isl);
  if (in.isl_min != 0) check("isl_min", in.isl_min, in.isl);
  if (in.osl_min != 0) check("osl_min", in.osl_min, in.osl);
  // The requests' lengths drawn: their mean prices the steps, the longest sizes the KV cache.
  const std::int64_t shortest_prompt = shortest_length(in.isl_min, in.isl);
  const std::int64_t shortest_output = shortest_length(in.osl_min, in.osl);
  const std::int64_t mean_isl = (shortest_prompt + in.isl + 1) / 2;
  const std::int64_t mean_osl = (shortest_output + in.osl + 1) / 2;
  check("concurrency", in.concurrency, kMaxBatch);
  check("rounds", in.rounds, kMaxRounds);
  check("replicas", in.replicas, 1024);
  if (in.replicas > 1) {
    if (in.mode == ServingMode::kDisaggregated)
      throw InvalidArgument(
          "replicas: aggregated serving only (disaggregated layouts count workers)");
    // Replicas serve apart: simulate the busiest (the clients spread evenly,
    // the first ones one more) and add up the throughput client by client.
    ServingScenario one = in;
    one.replicas = 1;
    one.concurrency = (in.concurrency + in.replicas - 1) / in.replicas;
    ServingResult r = predict_serving(m, d, one, o);
    const double clients =
        static_cast<double>(in.concurrency) / static_cast<double>(one.concurrency);
    r.gpus *= in.replicas;
    r.output_tokens_per_s *= clients;
    r.output_tokens_per_s_per_gpu = r.output_tokens_per_s / static_cast<double>(r.gpus);
    r.max_concurrency_that_fits *= in.replicas;
    r.notes.push_back(fmt::format(
        "{} replicas of {} GPUs each; {} clients in the busiest replica, whose times these are",
        in.replicas, r.gpus / in.replicas, one.concurrency));
    return r;
  }
  if (in.concurrency * in.rounds > kMaxSimulatedRequests) {
    throw InvalidArgument(
        fmt::format("{} clients x {} rounds = {} requests is too many to simulate (at most {})",
                    in.concurrency, in.rounds, in.concurrency * in.rounds, kMaxSimulatedRequests));
  }
  check_prefix_reuse(in.shared_prefix, in.prompt_pool, shortest_prompt);
  if (in.prompt_pool > 0 && in.mode == ServingMode::kDisaggregated) {
    throw InvalidArgument(
        "prompt pool: modeled for aggregated serving only (a disaggregated prefill worker's cache "
        "and the decode worker's transfer of a cached prompt are not)");
  }
  if (in.token_budget != 0) check("token budget", in.token_budget, kMaxBatch);
  if (in.max_running != 0) check("max running", in.max_running, kMaxBatch);
  if (in.graph_capture_size != 0) check("graph capture size", in.graph_capture_size, kMaxBatch);
  const bool disagg = in.mode == ServingMode::kDisaggregated;
  if (disagg) {
    check("prefill workers", in.prefill_workers, 1024);
    check("decode workers", in.decode_workers, 1024);
    check("prefill tp", in.prefill_tp, kMaxParallel);
    check("decode tp", in.decode_tp, kMaxParallel);
    const auto divides = [](const char* name, std::int64_t v, std::int64_t tp) {
      if (v < 1 || v > tp || tp % v != 0) {
        throw InvalidArgument(
            fmt::format("{} = {} must divide the prefill workers' tp ({})", name, v, tp));
      }
    };
    divides("prefill attention dp", in.prefill_attention_dp, in.prefill_tp);
    divides("prefill ep", in.prefill_ep, in.prefill_tp);
  } else if (in.prefill_attention_dp != 1 || in.prefill_ep != 1) {
    throw InvalidArgument(
        "prefill attention dp and prefill ep set the prefill workers of disaggregated serving; "
        "aggregated serving takes attention dp and ep");
  }

  // The scheduler: the engine's, else the reference's generic one.
  const EngineProfile& reference = EngineRegistry::built_in().get("roofline");
  const EngineProfile* engine = o.engine && o.engine->scheduler.known ? o.engine : &reference;
  const EngineScheduler& sched = engine->scheduler;
  if (in.step.attention_dp < 1 || in.prefill_attention_dp < 1) {
    throw InvalidArgument("attention dp must be at least 1");
  }
  check_engine_version(in.engine_version, "engine version");
  if (in.batch_wait_iters < 0 || in.batch_wait_iters > kMaxBatchWaitIters ||
      !(in.batch_wait_ratio >= 0 && in.batch_wait_ratio <= 1)) {
    throw InvalidArgument(fmt::format(
        "batch wait: {} steps and a ratio of {} are out of range (0 to {} steps, a ratio from 0 "
        "to 1)",
        in.batch_wait_iters, in.batch_wait_ratio, kMaxBatchWaitIters));
  }
  const bool batch_wait_asked = in.batch_wait_iters > 0 || in.batch_wait_ratio > 0;
  if (batch_wait_asked && !sched.batch_wait) {
    throw InvalidArgument(fmt::format(
        "batch waiting (--batch-wait-iters, --batch-wait-ratio) is TensorRT-LLM's scheduler "
        "setting; {} has none",
        o.engine ? o.engine->name : std::string("the reference engine")));
  }
  if (in.adp_timeout_iters < 0 || in.adp_timeout_iters > kMaxBatchWaitIters ||
      in.adp_batching_wait_iters < 0 || in.adp_batching_wait_iters > kMaxBatchWaitIters) {
    throw InvalidArgument(fmt::format(
        "attention-DP balance: a timeout of {} steps and a batching wait of {} are out of range "
        "(0 to {} steps each)",
        in.adp_timeout_iters, in.adp_batching_wait_iters, kMaxBatchWaitIters));
  }
  if (in.adp_balance && !sched.adp_balance) {
    throw InvalidArgument(fmt::format(
        "attention-DP balance (--adp-balance) is TensorRT-LLM's scheduler setting; {} has none",
        o.engine ? o.engine->name : std::string("the reference engine")));
  }
  // Balanced over the ranks of an aggregated instance (a prefill worker has no
  // decode requests, so the engine never holds its prompts; a decode worker
  // starts none).
  const bool balance_on =
      in.adp_balance && in.mode == ServingMode::kAggregated && in.step.attention_dp > 1;
  if (in.scheduler_recv_interval < 0 || in.scheduler_recv_interval > kMaxRecvInterval) {
    throw InvalidArgument(fmt::format("scheduler recv interval = {} is out of range (0 to {})",
                                      in.scheduler_recv_interval, kMaxRecvInterval));
  }
  if (!(in.kv_memory_share >= 0 && in.kv_memory_share <= 1)) {
    throw InvalidArgument(
        fmt::format("kv memory share = {} is out of range (a share from 0 to 1; 0: the engine's)",
                    in.kv_memory_share));
  }
  const bool recv_interval_on = in.scheduler_recv_interval > 1;
  if (recv_interval_on) {
    if (!sched.recv_interval) {
      throw InvalidArgument(fmt::format(
          "a receive interval (--scheduler-recv-interval) is SGLang's scheduler setting; {} has "
          "none",
          o.engine ? o.engine->name : std::string("the reference engine")));
    }
    if (in.mode != ServingMode::kAggregated || in.step.attention_dp > 1) {
      throw InvalidArgument(
          "a receive interval is modeled for aggregated serving without attention data "
          "parallelism");
    }
  }
  // The engine waits only where a step mixes prompts and decode tokens, and
  // TensorRT-LLM skips it under attention data parallelism.
  const bool batch_wait_on =
      in.batch_wait_iters > 0 && in.mode == ServingMode::kAggregated && in.step.attention_dp == 1;
  if (in.prefill_batch != 0) check("prefill batch", in.prefill_batch, kMaxBatch);
  if (in.decode_batch != 0) check("decode batch", in.decode_batch, kMaxBatch);
  if ((in.prefill_batch != 0 || in.decode_batch != 0) &&
      in.recipe != ServingRecipe::kAiConfigurator) {
    throw InvalidArgument(
        "prefill and decode batch sizes set a deployment's limits: give them with the "
        "aiconfigurator recipe");
  }
  if (in.prefill_batch != 0 && in.mode != ServingMode::kDisaggregated) {
    throw InvalidArgument("prefill batch: disaggregated serving only (its prefill workers)");
  }
  // AIConfigurator's deployments may turn the engine's prefix cache off.
  const bool prefix_cache = in.recipe == ServingRecipe::kAiConfigurator &&
                                    sched.aiconfigurator.known && sched.aiconfigurator.prefix_cache
                                ? *sched.aiconfigurator.prefix_cache
                                : sched.prefix_cache;
  const bool overlap = in.overlap == DeploymentSwitch::kEngine
                           ? sched.a_step_ahead(in.step.pp, in.engine_version)
                           : in.overlap == DeploymentSwitch::kOn &&
                                 (in.step.pp == 1 || sched.ahead_with_pipeline_parallel);
  // trtllm-bench: one aggregated instance, its scheduler sized by the
  // benchmark's heuristic with the run's KV share (its own default unless set).
  const bool bench = in.recipe == ServingRecipe::kBenchmarkTuning;
  BenchmarkLimits bench_limits;
  double bench_share = 0;
  if (bench) {
    if (engine == &reference) {
      throw Unsupported(
          "the trtllm-bench recipe is TensorRT-LLM's own benchmark: give --engine trtllm");
    }
    if (in.mode != ServingMode::kAggregated) {
      throw InvalidArgument(
          "the trtllm-bench recipe runs one aggregated instance (trtllm-bench throughput)");
    }
    bench_share =
        in.kv_memory_share > 0 ? in.kv_memory_share : sched.benchmark_tuning.kv_memory.value;
    bench_limits = benchmark_limits(*engine, m, d, in.step, static_cast<double>(mean_isl),
                                    static_cast<double>(mean_osl), bench_share);
  }
  const bool chunked =
      in.chunked_prefill == DeploymentSwitch::kEngine
          ? (bench ? sched.benchmark_tuning.chunked_prefill : sched.chunked_prefill)
          : in.chunked_prefill == DeploymentSwitch::kOn;
  PoolLimits defaults{sched.budget_on(d), sched.running_on(d), sched.prefill_first, overlap, 0};
  if (bench) {
    defaults.cap = bench_limits.max_batch_size;
    defaults.budget = bench_limits.token_budget(chunked, in.isl);
    defaults.graph_max_batch = bench_limits.max_batch_size;
  }
  // Each pool's limits: the recipe's, then what the caller set.
  const auto limits = [&](detail::PoolSpec::Role role, std::int64_t bs, std::int64_t ranks) {
    PoolLimits l = defaults;
    if (in.recipe == ServingRecipe::kAiConfigurator) {
      if (engine == &reference) {
        throw Unsupported(
            "the aiconfigurator recipe sets a serving engine's limits: give --engine trtllm, "
            "vllm or sglang");
      }
      l = aiconfigurator_limits(*engine, role, bs, ranks, in.isl, defaults);
    }
    if (in.token_budget) l.budget = in.token_budget;
    if (in.max_running) l.cap = in.max_running;
    if (in.graph_capture_size) l.graph_max_batch = in.graph_capture_size;
    return l;
  };
  const auto per_rank = [](std::int64_t clients, std::int64_t ranks) {
    return (clients + ranks - 1) / ranks;
  };
  const std::int64_t decode_ranks = in.step.attention_dp;
  const PoolLimits first_limits =
      disagg ? limits(detail::PoolSpec::Role::kPrefill, in.prefill_batch ? in.prefill_batch : 1,
                      in.prefill_attention_dp)
             : limits(detail::PoolSpec::Role::kMixed,
                      in.decode_batch ? in.decode_batch : per_rank(in.concurrency, decode_ranks),
                      decode_ranks);
  const PoolLimits decode_limits = limits(
      detail::PoolSpec::Role::kDecode,
      in.decode_batch
          ? in.decode_batch
          : per_rank(in.concurrency, std::max<std::int64_t>(in.decode_workers, 1) * decode_ranks),
      decode_ranks);

  ServingResult r;
  r.mode = in.mode;
  r.recipe = in.recipe;
  r.token_budget = first_limits.budget;
  r.max_running = first_limits.cap;
  r.formed_a_step_ahead = first_limits.a_step_ahead;
  r.decode_formed_a_step_ahead = disagg && decode_limits.a_step_ahead;
  if (disagg) {
    r.decode_token_budget = decode_limits.budget;
    r.decode_max_running = decode_limits.cap;
  }
  Scenario base = in.step;
  base.phase = Phase::kDecode;
  clear_prompt_share(base);

  // Pipeline stages with micro-batches: each instance runs one lane per stage,
  // each lane a batch whose step passes every stage in turn (predict() with
  // pp prices that whole pass), the lanes' steps staggered a stage apart. The
  // lanes split the instance's KV cache and running cap; as many as the cache
  // holds requests of `one_request` tokens.
  const std::int64_t stages = sched.pipeline_micro_batches ? base.pp : 1;
  // The cache's paging: a request holds whole blocks.
  const std::int64_t block =
      sched.kv_block_tokens.known() ? static_cast<std::int64_t>(sched.kv_block_tokens.value) : 1;
  r.kv_block_tokens = block;
  const auto in_blocks = [block](std::int64_t tokens) {
    return (tokens + block - 1) / block * block;
  };
  std::int64_t lanes_used = 1;
  const auto pool = [&](detail::PoolSpec::Role role, std::int64_t instances, std::int64_t kv_tokens,
                        std::int64_t one_request, const PoolLimits& l, StepCostGrid& grid) {
    const std::int64_t lanes =
        std::clamp<std::int64_t>(kv_tokens / in_blocks(one_request), 1, stages);
    lanes_used = std::max(lanes_used, lanes);
    detail::PoolSpec p;
    p.role = role;
    p.instances = instances * lanes;
    p.kv_tokens = kv_tokens / lanes;
    p.reserve_whole = sched.reserve_whole;
    p.kv_block_tokens = block;
    p.max_running = sched.running_cap_per_micro_batch ? l.cap : (l.cap + lanes - 1) / lanes;
    p.token_budget = l.budget;
    p.chunked_prefill = chunked;
    p.chunk_cap = grid.rank_chunk();  // a request's chunk is at most its rank's share
    p.prefill_first = l.prefill_first;
    p.formed_a_step_ahead = l.a_step_ahead;
    if (batch_wait_on && role == detail::PoolSpec::Role::kMixed) {
      p.wait_steps = in.batch_wait_iters;
      p.wait_ratio = in.batch_wait_ratio;
      p.decode_tokens = 1 + in.step.draft_tokens;
    }
    if (recv_interval_on && role == detail::PoolSpec::Role::kMixed)
      p.recv_interval = in.scheduler_recv_interval;
    if (balance_on && role == detail::PoolSpec::Role::kMixed) {
      p.balance_groups = in.step.attention_dp;
      p.balance_timeout = in.adp_timeout_iters;
      p.balance_batching = in.adp_batching_wait_iters;
    }
    p.cost = [&grid](std::int64_t n, double ctx, std::int64_t prefill) {
      return grid(n, ctx, prefill);
    };
    return p;
  };

  detail::SimSpec spec;
  spec.isl = in.isl;
  spec.osl = in.osl;
  spec.isl_min = in.isl_min;
  spec.osl_min = in.osl_min;
  spec.clients = in.concurrency;
  spec.requests_per_client = in.rounds;
  spec.tokens_per_step = tokens_per_step(in.step);
  spec.cached_prefix = in.shared_prefix;
  spec.prompt_pool = prefix_cache ? in.prompt_pool : 0;
  const std::int64_t own_prompt = in.isl - in.shared_prefix;  // computed and held per request
  Scenario decode_base = base;
  Scenario prefill_base = base;
  if (disagg) {
    decode_base.tp = in.decode_tp;
    prefill_base.tp = in.prefill_tp;
    prefill_base.attention_dp = in.prefill_attention_dp;
    prefill_base.ep = in.prefill_ep;
    r.gpus = (in.prefill_workers * in.prefill_tp + in.decode_workers * in.decode_tp) * base.pp;
  } else {
    r.gpus = base.tp * base.pp;
  }
  const double engine_share =
      bench ? sched.benchmark_tuning.kv_memory.value
            : sched.kv_memory_share(in.engine_version, in.recipe == ServingRecipe::kAiConfigurator);
  const KvMemoryRule kv_rule{&sched, in.kv_memory_share > 0 ? in.kv_memory_share : engine_share,
                             in.engine_version};
  const PoolLimits& held_by = disagg ? decode_limits : first_limits;  // the pool holding the cache
  // The engine's files, as predict() streams them (realistic mode).
  const EngineProfile* files = o.mode == Mode::kRealistic ? o.engine : nullptr;
  // The MoE kernel the release ran, where the deployment chose none (its layout's padding).
  const MoeKernelRelease* moe_release = files != nullptr && o.moe_kernel.empty()
                                            ? files->moe_kernel_release(in.engine_version, d)
                                            : nullptr;
  const KvCapacity decode_kv =
      kv_capacity(m, d, decode_base, in.isl + in.osl, kv_rule, held_by.budget, held_by.cap, files,
                  o.moe_kernel, moe_release);
  r.kv_cache_tokens = decode_kv.tokens;
  r.kv_cache_bytes_per_gpu = decode_kv.room_bytes;
  r.kv_activation_bytes_per_gpu = decode_kv.activation_bytes;
  r.kv_profile_sampler_rows = decode_kv.sampler_rows;
  r.kv_profile_sampler_bytes_per_logit = decode_kv.sampler_bytes_per_logit;
  if (decode_kv.sampler_rows > 0) {
    r.notes.push_back(fmt::format(
        "KV memory: {}'s memory-profiling pass holds {:.1f} GB a GPU, subtracted with the weights: "
        "its sampler over {} rows (one a request it may run) of {} logits, {:.3g} bytes a logit on "
        "{} in {}; a lower --max-running shrinks it",
        engine->name, decode_kv.activation_bytes / 1e9, decode_kv.sampler_rows, m.vocab,
        decode_kv.sampler_bytes_per_logit,
        sched.kv_profile_flashinfer(in.engine_version)
            ? "FlashInfer's sampling kernels"
            : "its sort path (PyTorch's top-k and top-p)",
        in.engine_version.empty() ? std::string("the current release")
                                  : "release " + in.engine_version));
  }
  r.kv_memory_share = kv_rule.share;
  r.kv_memory_of_free = sched.kv_memory_of_free;
  r.kv_memory_set = in.kv_memory_share > 0;
  if (in.kv_memory_share > 0) {
    r.notes.push_back(fmt::format(
        "KV memory as the deployment sets it: {} (the engine's default {:.0f}%), {:.1f} GB of "
        "cache a GPU, {} tokens an instance",
        kv_rule.describe(), engine_share * 100, decode_kv.room_bytes / 1e9, decode_kv.tokens));
  }
  // The shared prefix's cache is held once an instance, beside the requests'.
  const std::int64_t decode_room = std::max<std::int64_t>(decode_kv.tokens - in.shared_prefix, 0);
  const std::int64_t per_instance = decode_room / in_blocks(own_prompt + in.osl);
  r.max_concurrency_that_fits = per_instance * (disagg ? in.decode_workers : 1);
  // What the engine's release runs differently, at each pool's TP (vLLM
  // 0.11.1-0.12's padded MoE on Hopper, off at TP 8 from 0.12.0).
  const auto release_options = [&](const Scenario& pool_step) {
    return with_engine_release(o, d, in.engine_version, pool_step.tp, EngineRegistry::built_in());
  };
  ModelOptions first_options = release_options(prefill_base);
  ModelOptions decode_options = release_options(decode_base);
  first_options.graph_max_batch = first_limits.graph_max_batch;
  decode_options.graph_max_batch = decode_limits.graph_max_batch;
  // A pool cast whole each step is the one this rule sizes.
  first_options.kv_memory_share = decode_options.kv_memory_share = kv_rule.share;
  // With attention data parallelism and chunked prompts, each rank takes its
  // share of the first pool's budget a step (SGLang divides its chunk size by
  // the DP size); 0: unchunked prompts go whole. A decode worker starts none.
  const std::int64_t first_chunk =
      chunked && prefill_base.attention_dp > 1
          ? std::max<std::int64_t>(1, first_limits.budget / prefill_base.attention_dp)
          : 0;
  // A step's prompt tokens attend as prompts of the mean length: the tokens
  // each computes after the shared prefix, over the prefix too.
  const std::int64_t own_mean = mean_isl - in.shared_prefix;
  StepCostGrid first_grid(m, d, prefill_base, first_options, own_mean, first_chunk,
                          in.shared_prefix);
  StepCostGrid decode_grid(m, d, decode_base, decode_options, own_mean, disagg ? 0 : first_chunk,
                           in.shared_prefix);
  if (!disagg) {
    spec.first = pool(detail::PoolSpec::Role::kMixed, 1, decode_room, own_prompt + in.osl,
                      first_limits, first_grid);
  } else {
    const KvCapacity prefill_kv =
        kv_capacity(m, d, prefill_base, in.isl, kv_rule, first_limits.budget, first_limits.cap,
                    files, o.moe_kernel, moe_release);
    // Each decode GPU receives its shard of the prompt's cache, in parallel.
    const double link = r.gpus <= d.domain_gpus() && d.interconnect_bandwidth_Bps.value > 0
                            ? d.interconnect_bandwidth_Bps.value
                            : kNodeLinkBps;
    // The decode worker holds the shared prefix already: the rest moves.
    // A prompt of the mean length (random lengths: each moves its own, about this).
    r.kv_transfer_s = decode_kv.request_bytes * static_cast<double>(own_mean) /
                      static_cast<double>(in.isl + in.osl) / link;
    spec.transfer_s = r.kv_transfer_s;
    spec.first = pool(detail::PoolSpec::Role::kPrefill, in.prefill_workers,
                      std::max<std::int64_t>(prefill_kv.tokens - in.shared_prefix, 0), own_prompt,
                      first_limits, first_grid);
    spec.decode = pool(detail::PoolSpec::Role::kDecode, in.decode_workers, decode_room,
                       own_prompt + in.osl, decode_limits, decode_grid);
  }

  const detail::SimResult sim = detail::simulate_serving(spec);
  r.requests = static_cast<std::int64_t>(sim.e2e_s.size());
  r.steps = sim.steps;
  r.ttft = spread(sim.ttft_s);
  r.tpot = spread(sim.tpot_s);
  r.e2e = spread(sim.e2e_s);
  r.itl = weighted_spread(sim.token_gaps);
  r.ttft_s = r.ttft.mean;
  r.tpot_s = r.tpot.mean;
  r.e2e_s = r.e2e.mean;
  r.queue_wait_s = sim.admit_wait_s;
  r.prompt_queue_wait_s = sim.chunk_wait_s;
  r.output_tokens_per_s =
      sim.duration_s > 0 ? static_cast<double>(sim.output_tokens) / sim.duration_s : 0;
  r.output_tokens_per_s_per_gpu = r.output_tokens_per_s / static_cast<double>(r.gpus);
  r.output_tokens_per_s_per_user = r.tpot_s > 0 ? 1 / r.tpot_s : 0;
  r.prompts_per_step =
      sim.steps > 0 ? static_cast<double>(r.requests) / static_cast<double>(sim.steps) : 0;
  // Disaggregated decode steps carry no prompts: nothing interferes.
  r.prompt_share = !disagg && sim.busy_s > 0 ? sim.prefill_added_s / sim.busy_s : 0;
  const double prefill_utilization =
      disagg && sim.duration_s > 0
          ? sim.prefill_pool_busy_s / (sim.duration_s * static_cast<double>(in.prefill_workers))
          : 0;
  r.running = sim.decode_steps > 0
                  ? std::max<std::int64_t>(1, std::llround(sim.decoding_step_sum /
                                                           static_cast<double>(sim.decode_steps)))
                  : 1;

  // The decode step of the mean batch, alone and with one whole prompt.
  const std::int64_t mean_context = mean_isl + mean_osl / 2;
  r.plain_step_s = decode_grid.at(r.running, 0, mean_context);
  r.prompt_step_s = (disagg ? first_grid : decode_grid).at(r.running, own_mean, mean_context);
  Scenario plain = decode_base;
  plain.batch = r.running;
  plain.seq_len = mean_context;
  r.bound = predict(m, d, plain, decode_options).bound;

  r.preemptions = sim.preemptions;
  r.batch_wait_iters = in.batch_wait_iters;
  r.batch_wait_ratio = in.batch_wait_ratio;
  r.waited_steps = sim.waited_steps;
  r.adp_balance = balance_on;
  if (balance_on) {
    r.adp_timeout_iters = in.adp_timeout_iters;
    r.adp_batching_wait_iters = in.adp_batching_wait_iters;
  }
  r.balance_held_steps = sim.balance_held_steps;
  r.scheduler_recv_interval = in.scheduler_recv_interval;
  r.recv_wait_s = sim.recv_wait_s;
  r.prefix_hit_rate =
      sim.prompts > 0 ? static_cast<double>(sim.prefix_hits) / static_cast<double>(sim.prompts) : 0;
  const std::int64_t workers = disagg ? in.decode_workers : 1;
  // Requests an instance runs at once: the cap, or each micro-batch's cap
  // times the micro-batches where the engine caps each one.
  const std::int64_t cap = (disagg ? decode_limits.cap : first_limits.cap) *
                           (sched.running_cap_per_micro_batch ? lanes_used : 1);
  if (in.concurrency > r.max_concurrency_that_fits || in.concurrency > cap * workers ||
      sim.preemptions > 0) {
    r.limited_by = "kv_capacity";
    r.notes.push_back(fmt::format(
        "KV capacity: {} whole requests fit ({}), the engine runs at most {} an instance; {} "
        "clients waited {:.3g} s on average to be admitted{}",
        r.max_concurrency_that_fits, kv_rule.describe(), cap, in.concurrency, r.queue_wait_s,
        sim.preemptions > 0
            ? fmt::format(", and {} requests were preempted and recomputed", sim.preemptions)
            : std::string()));
  } else if (r.prompt_share >= 0.5 || prefill_utilization >= 0.8) {
    r.limited_by = "prefill";
  } else {
    r.limited_by = r.bound == Bound::kMemory ? "memory_bandwidth" : "compute";
  }
  r.notes.push_back(fmt::format(
      "simulated {} requests ({} clients x {} rounds, all starting together) over {} steps; "
      "{} scheduler{}: {} steps, {}-token budget, {} prompts, at most {} running{}{}",
      r.requests, in.concurrency, in.rounds, r.steps,
      engine == &reference ? std::string("generic") : engine->name,
      in.recipe == ServingRecipe::kAiConfigurator ? " with AIConfigurator's benchmark limits"
      : bench                                     ? " with trtllm-bench's tuned limits"
                                                  : "",
      first_limits.prefill_first ? "prefill-first" : "mixed", first_limits.budget,
      chunked ? "chunked" : "whole", first_limits.cap,
      disagg ? fmt::format(" a prefill worker; a decode worker {}-token budget, at most {} running",
                           decode_limits.budget, decode_limits.cap)
             : std::string(),
      r.formed_a_step_ahead || r.decode_formed_a_step_ahead
          ? fmt::format("; batches formed a step ahead{} (overlap scheduling: a newcomer waits a "
                        "step more)",
                        r.formed_a_step_ahead ? "" : " on decode workers")
          : std::string()));
  if (bench) {
    const std::string_view source = sched.benchmark_tuning.source;
    r.notes.push_back(
        bench_limits.tuned
            ? fmt::format(
                  "trtllm-bench's tuning (source {} in `roofline engines show {}`): ({:.1f} GiB of "
                  "memory - {:.1f} GiB of checkpoint) x {:.2f} holds {:.0f} requests of {} + {} "
                  "tokens at {:.3g} MiB a token; max_batch_size {}, max_num_tokens {}{}",
                  source, engine->id, bench_limits.memory_gib, bench_limits.checkpoint_gib,
                  bench_share, bench_limits.requests, mean_isl, mean_osl,
                  bench_limits.kv_gib_per_token * 1024, bench_limits.max_batch_size,
                  bench_limits.max_num_tokens,
                  first_limits.budget > bench_limits.max_num_tokens
                      ? fmt::format(" (raised to {}: without chunked prefill a step holds the "
                                    "longest prompt and a full batch)",
                                    first_limits.budget)
                      : std::string())
            : fmt::format("trtllm-bench's tuning (source {}): {} weights are not a format it "
                          "tunes, so the engine's defaults apply ({} requests, {} tokens)",
                          source, format_id(in.step.precision.weights.value_or(m.native_weights)),
                          bench_limits.max_batch_size, bench_limits.max_num_tokens));
  }
  if (shortest_prompt != in.isl || shortest_output != in.osl) {
    r.notes.push_back(fmt::format(
        "random lengths: each request's prompt uniform on {} to {} tokens (mean {}) and its output "
        "on {} to {} (mean {}); the KV capacity counts requests of the longest",
        shortest_prompt, in.isl, mean_isl, shortest_output, in.osl, mean_osl));
  }
  if (!o.engine || !o.engine->scheduler.known) {
    r.notes.push_back(
        fmt::format("{} has no scheduler profile: the reference's generic one is used",
                    o.engine ? o.engine->name : std::string("the reference engine")));
  }
  const double admit_pct = r.ttft_s > 0 ? 100 * r.queue_wait_s / r.ttft_s : 0;
  const double chunk_pct = r.ttft_s > 0 ? 100 * r.prompt_queue_wait_s / r.ttft_s : 0;
  if (disagg) {
    r.notes.push_back(fmt::format(
        "the prefill workers are busy {:.0f}% of the time; of TTFT, {:.0f}% is the wait to be "
        "admitted by a decode worker, {:.0f}% the wait for a prefill step",
        prefill_utilization * 100, admit_pct, chunk_pct));
  } else {
    r.notes.push_back(fmt::format(
        "prefill interference: prompt tokens take {:.0f}% of the steps' time; of TTFT, {:.0f}% is "
        "the wait to be admitted (the step under way{}{}), {:.0f}% the wait behind other "
        "prompts{}",
        r.prompt_share * 100, admit_pct, r.limited_by == "kv_capacity" ? ", and a KV slot" : "",
        recv_interval_on ? ", and the receive interval" : "", chunk_pct,
        batch_wait_on ? " or held back by batch waiting" : ""));
  }
  if (disagg) {
    const auto parallel = [](std::int64_t dp, std::int64_t ep) {
      return (dp > 1 ? fmt::format(" attention DP {}", dp) : std::string()) +
             (ep > 1 ? fmt::format(" EP {}", ep) : std::string());
    };
    r.notes.push_back(fmt::format(
        "disaggregated: {} prefill worker(s) at TP {}{}, {} decode worker(s) at TP {}{}; a "
        "prompt's KV cache moves in {:.3g} ms; the first token comes from the prefill worker",
        in.prefill_workers, in.prefill_tp, parallel(in.prefill_attention_dp, in.prefill_ep),
        in.decode_workers, in.decode_tp, parallel(decode_base.attention_dp, decode_base.ep),
        r.kv_transfer_s * 1e3));
  }
  if (base.pp > 1 && lanes_used > 1) {
    r.notes.push_back(fmt::format(
        "pipeline parallel ({} stages): {} micro-batches in flight an instance, each with its "
        "share of the KV cache and {}; a micro-batch's step passes every stage in turn "
        "({} scheduler; source {} in `roofline engines show {}`)",
        base.pp, lanes_used,
        sched.running_cap_per_micro_batch
            ? fmt::format("up to {} running (the cap is each micro-batch's: source {})",
                          first_limits.cap, sched.running_cap_source)
            : std::string("its share of the running cap"),
        engine == &reference ? std::string("generic") : engine->name, sched.pipeline_source,
        engine->id));
  } else if (base.pp > 1) {
    r.notes.push_back(fmt::format(
        "pipeline parallel ({} stages): one batch at a time, each step passing every stage in "
        "turn ({})",
        base.pp,
        sched.pipeline_micro_batches ? "the KV cache holds one request too few for a second "
                                       "micro-batch"
                                     : "the engine keeps no micro-batches in flight"));
  }
  if (in.shared_prefix > 0) {
    r.notes.push_back(fmt::format(
        "shared prefix: the first {} tokens of every prompt come from the prefix cache (held once "
        "an instance); each prompt computes its other {}, attending to all {}",
        in.shared_prefix, own_prompt, in.isl));
  }
  if (in.prompt_pool > 0 && !prefix_cache) {
    r.notes.push_back(fmt::format(
        "prompt pool of {}: {} keeps no prefix cache, so every prompt is computed", in.prompt_pool,
        sched.prefix_cache
            ? "AIConfigurator's deployment of " + engine->name + " (source " +
                  sched.aiconfigurator.source + " in `roofline engines show " + engine->id + "`)"
            : "the " + (engine == &reference ? std::string("generic") : engine->name) +
                  " scheduler"));
  } else if (in.prompt_pool > 0) {
    r.notes.push_back(fmt::format(
        "prompt pool: each prompt drawn with replacement from {} (its length fixed per prompt); "
        "{:.0f}% of the requests found theirs in the prefix cache and computed only the tokens "
        "past its last whole {}-token block (source {} in `roofline engines show {}`); a kept "
        "prompt is "
        "found with the chance that the free KV cache holds every prompt kept, and its blocks are "
        "the cache's, not the request's",
        in.prompt_pool, r.prefix_hit_rate * 100, r.kv_block_tokens, sched.prefix_cache_source,
        engine->id));
  }
  if (batch_wait_on) {
    r.notes.push_back(fmt::format(
        "batch waiting ({}'s batch_wait_timeout_iters {}, batch_wait_max_tokens_ratio {:g}; "
        "source {} in `roofline engines show {}`): {} of {} steps held their prompts back for "
        "a fuller step, at most {} in a row, until a step's tokens reach {:.0f} of its {}-token "
        "budget",
        engine->name, in.batch_wait_iters, in.batch_wait_ratio, sched.batch_wait_source, engine->id,
        r.waited_steps, r.steps, in.batch_wait_iters,
        in.batch_wait_ratio * static_cast<double>(first_limits.budget), first_limits.budget));
  } else if (batch_wait_asked) {
    r.notes.push_back(
        in.mode == ServingMode::kDisaggregated
            ? "batch waiting has no effect on disaggregated workers: a prefill worker's steps "
              "carry no decode tokens, a decode worker's no prompts"
        : in.step.attention_dp > 1 ? "batch waiting is off under attention data parallelism: " +
                                         engine->name + " skips it there"
                                   : "batch waiting: with 0 steps to wait " + engine->name +
                                         " never holds prompts back, whatever the ratio");
  }
  if (balance_on) {
    r.notes.push_back(fmt::format(
        "attention-DP balance ({}'s attention_dp_config: enable_balance, timeout_iters {}, "
        "batching_wait_iters {}; source {} in `roofline engines show {}`): {} of {} steps held "
        "their prompts back until each of the {} ranks had one, or a count of such steps "
        "reached {}",
        engine->name, in.adp_timeout_iters, in.adp_batching_wait_iters, sched.adp_balance_source,
        engine->id, r.balance_held_steps, r.steps, in.step.attention_dp, in.adp_timeout_iters));
  } else if (!in.adp_balance &&
             (in.adp_timeout_iters != ServingScenario{}.adp_timeout_iters ||
              in.adp_batching_wait_iters != ServingScenario{}.adp_batching_wait_iters)) {
    r.notes.push_back(
        "the attention-DP balance's timeout and batching wait take effect with the balance "
        "(--adp-balance); without it prompts are never held for it");
  } else if (in.adp_balance) {
    r.notes.push_back(in.mode == ServingMode::kDisaggregated
                          ? "attention-DP balance has no effect on disaggregated workers: a "
                            "prefill worker has no decode requests to wait beside, a decode "
                            "worker no prompts"
                          : "attention-DP balance has no effect without attention data "
                            "parallelism (--attention-dp 1): one rank has nothing to balance");
  }
  if (recv_interval_on) {
    r.notes.push_back(fmt::format(
        "receive interval ({}'s --scheduler-recv-interval {}; source {} in `roofline engines "
        "show {}`): new requests are taken in every {} decode steps, or at once after a step "
        "with prompt tokens or when idle; a request waited {:.3g} ms on average from its "
        "arrival to the step that took it in",
        engine->name, in.scheduler_recv_interval, sched.recv_interval_source, engine->id,
        in.scheduler_recv_interval, r.recv_wait_s * 1e3));
  }
  // Steps with prompt tokens that find no CUDA graph (vLLM past its largest
  // captured size): the host's dispatch against the GPU's work, for a step of
  // the pool's budget or one mean prompt, beside the mean decode batch.
  if (o.engine != nullptr && o.engine->launch_eager_s.known()) {
    const std::int64_t prompt_tokens = std::min(own_mean, first_limits.budget);
    const Prediction prompt_step = (disagg ? first_grid : decode_grid)
                                       .step(disagg ? 1 : r.running, prompt_tokens, mean_context);
    if (prompt_step.host_dispatch_s > 0) {
      const std::int64_t captured =
          o.engine->captured_size(d, prefill_base.tp, first_options.graph_max_batch);
      r.notes.push_back(fmt::format(
          "steps with prompt tokens run without a CUDA graph ({}): the host issues each kernel "
          "in {:.3g} us and runs ahead of the GPU; a step of {} prompt tokens{} takes {:.3g} ms "
          "of dispatch against {:.3g} ms of GPU work{}",
          prompt_step.past_captured_graphs && o.graphs == GraphPolicy::kEngine
              ? fmt::format("{} runs any step past its largest captured graph, {} tokens, without "
                            "one",
                            o.engine->name, captured)
              : std::string("the deployment's CUDA graph setting"),
          o.engine->launch_eager_s.value * 1e6, prompt_tokens,
          disagg ? std::string() : fmt::format(" beside {} decoding", r.running),
          prompt_step.host_dispatch_s * 1e3, (prompt_step.time_s - prompt_step.host_wait_s) * 1e3,
          prompt_step.host_wait_s > 0
              ? fmt::format(": the GPU waits {:.3g} ms a step", prompt_step.host_wait_s * 1e3)
              : std::string(", which hides it")));
    }
  }
  // The profile predict() priced the steps with (the scheduler's fallback is
  // the reference, whose launches the device prices whatever the policy).
  if (o.graphs != GraphPolicy::kEngine && o.engine != nullptr && o.engine->id != "roofline") {
    const EngineFigure& eager = o.engine->launch_figure(false, o.graphs, o.engine_build);
    r.notes.push_back(fmt::format(
        "CUDA graphs {} (the deployment's): {} launch without graphs, {:.3g} us a kernel{}",
        o.graphs == GraphPolicy::kOff ? "off" : "for decode steps only",
        o.graphs == GraphPolicy::kOff ? "every step's kernels" : "steps with prompt tokens",
        (eager.known() ? eager.value : d.launch_overhead_s.value) * 1e6,
        &eager == &o.engine->launch_eager_s
            ? " of host dispatch, which the GPU waits for where it outlasts the step's work"
            : ""));
  }
  if (base.draft_tokens > 0) {
    r.notes.push_back(fmt::format(
        "speculative decoding: each decode step drafts {} tokens a request and verifies {} at "
        "once, yielding {:.3g} (acceptance {:.3g}{}); TPOT is the step over that",
        base.draft_tokens, base.draft_tokens + 1, spec.tokens_per_step, base.acceptance,
        runs_at_measured_acceptance(m, base) ? ", from the model's measured tokens a step" : ""));
  }
  // The MoE kernel's padded expert layout, held beside the weights.
  if (const MoeWeightPadding* pad =
          engine_moe_padding(files, m, d, decode_base, o.moe_kernel, moe_release)) {
    r.notes.push_back(fmt::format(
        "MoE layout: {} holds the {} experts padded for its {} kernel (each slice rounded up to "
        "{} rows, the hidden size to {}), {:.2f} GB a GPU beyond the checkpoint's, which the KV "
        "cache gives up",
        o.engine->name, pad->format, pad->family, pad->intermediate_multiple, pad->hidden_multiple,
        engine_moe_padding_bytes(files, m, d, decode_base, o.moe_kernel, moe_release) / 1e9));
  }
  // A release that ran the experts on another kernel family than the table blends.
  if (decode_options.moe_release != nullptr) {
    const Prediction decode_step =
        decode_grid.step(std::max<std::int64_t>(r.running, 1), 0, mean_context);
    if (const MoeKernelRelease* rule = decode_step.moe_release) {
      r.notes.push_back(
          rule->before_version.empty()
              ? fmt::format(
                    "MoE kernels: every {} release runs {} experts on {} on {}, whose "
                    "measured layers{} price them",
                    o.engine->name, rule->format, rule->family, d.architecture,
                    rule->measured_as.empty() ? "" : " (of " + rule->measured_as + " weights)")
              : fmt::format("MoE kernels: {} releases before {} ran {} experts on {} by default "
                            "on {} (release {}), whose measured layers price them",
                            o.engine->name, rule->before_version, rule->format, rule->family,
                            d.architecture, in.engine_version));
    }
  }
  // A release whose attention kernels compute a sliding window's masked tiles.
  if (const WindowMasking* rule = decode_options.window_masking;
      rule && m.attention_sinks && m.sliding_window > 0) {
    std::string kernels;
    if (decode_options.window_masked_prompt_kernel)
      kernels = "its kernel of prompt tokens and large batches (before " +
                rule->prompt_kernel_before + ")";
    if (decode_options.window_masked_split_kv) {
      kernels += std::string(kernels.empty() ? "" : " and ") +
                 "its split-KV kernel of small decode batches (before " + rule->split_kv_before +
                 ")";
    }
    r.notes.push_back(fmt::format(
        "sliding windows: {} {} runs this model's attention sinks on {} on {}, and {} masks "
        "the keys outside the window instead of skipping them, so the sliding-window layers "
        "of those steps attend over the whole context",
        o.engine->name, in.engine_version, rule->kernel, d.architecture, kernels));
  }
  r.notes.push_back(fmt::format("the decode step of {} requests is {}-bound ({:.3g} ms alone)",
                                r.running, r.bound == Bound::kMemory ? "memory" : "compute",
                                r.plain_step_s * 1e3));
  return r;
}

}  // namespace roofline
