#include "roofline/serving.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "roofline/deadline.h"
#include "roofline/error.h"

namespace roofline {

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
  check("concurrency", in.concurrency, kMaxBatch);

  ServingResult r;
  r.gpus = in.step.tp * in.step.pp;
  Scenario s = in.step;
  s.phase = Phase::kDecode;
  s.prefill_tokens = s.prefill_prompt = 0;

  // How many requests' KV cache (at their full length) fits beside the weights.
  Scenario one = s;
  one.batch = 1;
  one.seq_len = in.isl + in.osl;
  const MemoryEstimate mem = estimate_memory(m, d, one);
  const double room =
      kKvMemoryShare * mem.capacity_bytes - mem.weights_bytes - mem.activation_bytes;
  const double fit = mem.kv_cache_bytes > 0 ? std::floor(room / mem.kv_cache_bytes) : 0;
  if (fit < 1) {
    throw Unsupported(fmt::format(
        "one request of {} tokens does not fit: weights {:.1f} GB, KV cache {:.2f} GB per request, "
        "{:.0f}% of {:.0f} GB for both",
        in.isl + in.osl, mem.weights_bytes / 1e9, mem.kv_cache_bytes / 1e9, kKvMemoryShare * 100,
        mem.capacity_bytes / 1e9));
  }
  r.max_concurrency_that_fits = static_cast<std::int64_t>(std::min(fit, double(kMaxBatch)));
  r.running = std::min(in.concurrency, r.max_concurrency_that_fits);

  // The mean step: the running requests' decode at their mean context, and
  // running / osl whole prompts.
  s.batch = r.running;
  s.seq_len = in.isl + in.osl / 2;
  const Prediction plain = predict(m, d, s, o);
  Scenario with = s;
  with.prefill_tokens = in.isl;
  with.prefill_prompt = in.isl;
  const Prediction prompt = predict(m, d, with, o);
  r.plain_step_s = plain.time_s;
  r.prompt_step_s = prompt.time_s;
  r.bound = plain.bound;
  r.prompts_per_step = static_cast<double>(r.running) / static_cast<double>(in.osl);
  const double added = std::max(0.0, prompt.time_s - plain.time_s);
  r.tpot_s = plain.time_s + r.prompts_per_step * added;
  r.prompt_share = r.tpot_s > 0 ? r.prompts_per_step * added / r.tpot_s : 0;

  // A prompt waits for the step under way (half of one on average), then the
  // step that carries it gives its first token. Prompts also wait for each
  // other: they arrive at the request rate and each costs `added` of step
  // time, a queue with one server; taken as M/D/1 (Poisson arrivals, fixed
  // service), W = rho x added / (2 (1 - rho)), rho = rate x added. Solved with
  // the request rate, which depends on TTFT, by a few fixed-point rounds.
  const double decode_time = static_cast<double>(in.osl - 1) * r.tpot_s;
  double prompt_wait = 0, requests_per_s = 0, ttft_service = 0, service = 0;
  for (int round = 0; round < 8; ++round) {
    ttft_service = 0.5 * r.tpot_s + r.prompt_step_s + prompt_wait;
    service = ttft_service + decode_time;
    // Little's law over the closed loop: the running requests complete at
    // running / service per second; all clients cycle at that rate.
    requests_per_s = static_cast<double>(r.running) / service;
    const double rho = std::min(0.95, requests_per_s * added);
    prompt_wait = rho * added / (2 * (1 - rho));
  }
  r.prompt_queue_wait_s = prompt_wait;
  const double cycle = static_cast<double>(in.concurrency) / requests_per_s;
  r.queue_wait_s = std::max(0.0, cycle - service);
  r.ttft_s = r.queue_wait_s + ttft_service;
  r.e2e_s = r.ttft_s + static_cast<double>(in.osl - 1) * r.tpot_s;
  r.output_tokens_per_s = requests_per_s * static_cast<double>(in.osl);
  r.output_tokens_per_s_per_gpu = r.output_tokens_per_s / static_cast<double>(r.gpus);
  r.output_tokens_per_s_per_user = 1 / r.tpot_s;

  if (in.concurrency > r.max_concurrency_that_fits) {
    r.limited_by = "kv_capacity";
    r.notes.push_back(fmt::format(
        "KV capacity: {} of {} requests fit ({:.0f}% of memory for weights and cache); the "
        "others wait {:.3g} s for a slot",
        r.max_concurrency_that_fits, in.concurrency, kKvMemoryShare * 100, r.queue_wait_s));
  } else if (r.prompt_share >= 0.5) {
    r.limited_by = "prefill";
  } else {
    r.limited_by = r.bound == Bound::kMemory ? "memory_bandwidth" : "compute";
  }
  r.notes.push_back(
      fmt::format("prefill interference: {:.2f} new prompts a step take {:.0f}% of its {:.3g} ms",
                  r.prompts_per_step, r.prompt_share * 100, r.tpot_s * 1e3));
  r.notes.push_back(fmt::format("the plain decode step of {} requests is {}-bound ({:.3g} ms)",
                                r.running, r.bound == Bound::kMemory ? "memory" : "compute",
                                r.plain_step_s * 1e3));
  r.notes.push_back(
      "steady state of continuous batching (mean values; no percentiles): see docs/SERVING.md");
  return r;
}

}  // namespace roofline
