// Serving under load: time to first token and time per output token of C
// clients in a closed loop (each sends its next request when the last one
// finishes) against one engine instance with continuous batching.
//
// The model is the steady state, not a simulation (docs/SERVING.md says why):
//   - the requests whose KV cache fits run (kKvMemoryShare of the memory holds
//     weights and cache); the others wait for a slot;
//   - each running request is replaced once per osl steps, so every step
//     carries running / osl new prompts, each processed whole in one step
//     beside the decode tokens (the engines' token budgets hold them);
//   - a step costs the plain decode step of the running requests at their
//     mean context (isl + osl / 2) plus that share of what one prompt adds to
//     a step, both from predict() with the engine;
//   - TTFT is half a step of waiting plus the step that carries the prompt,
//     plus the wait behind other prompts (an M/D/1 queue of prompts, each
//     costing what it adds to a step), plus the wait for a KV slot Little's
//     law gives when the clients outnumber the slots.
//
// Example:
//   ServingScenario s;
//   s.isl = 1024; s.osl = 256; s.concurrency = 64; s.step.tp = 2;
//   ModelOptions o; o.engine = &EngineRegistry::built_in().get("vllm");
//   ServingResult r = predict_serving(model, registry.get("h200"), s, o);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "roofline/predict.h"

namespace roofline {

// The share of device memory serving engines give weights and KV cache
// (vLLM's gpu_memory_utilization and TensorRT-LLM's free_gpu_memory_fraction
// default to 0.9; SGLang's mem_fraction_static is about 0.88).
inline constexpr double kKvMemoryShare = 0.9;

struct ServingScenario {
  std::int64_t isl = 1024;       // prompt tokens per request
  std::int64_t osl = 256;        // output tokens per request
  std::int64_t concurrency = 1;  // clients, each with one request in flight
  // Formats, attention kernel and tensor parallelism of the decode step;
  // its batch, phase and context are set from the fields above.
  Scenario step;
};

struct ServingResult {
  double ttft_s = 0, tpot_s = 0, e2e_s = 0;
  double output_tokens_per_s = 0;  // all GPUs
  double output_tokens_per_s_per_gpu = 0;
  double output_tokens_per_s_per_user = 0;  // 1 / TPOT
  std::int64_t gpus = 1;
  std::int64_t max_concurrency_that_fits = 0;  // requests whose KV cache fits
  std::int64_t running = 0;                    // requests decoding at once
  double queue_wait_s = 0;                     // mean wait for a KV slot
  double prompt_queue_wait_s = 0;              // mean wait behind other prompts (in TTFT)
  double plain_step_s = 0;                     // decode step of the running requests alone
  double prompt_step_s = 0;                    // the same step carrying one whole prompt
  double prompts_per_step = 0;                 // running / osl
  double prompt_share = 0;                     // of each step's time, what the prompts add
  Bound bound = Bound::kMemory;                // of the plain step
  std::string limited_by;  // "kv_capacity", "prefill", "memory_bandwidth", "compute"
  std::vector<std::string> notes;
};

// Throws InvalidArgument for sizes out of range (isl, osl >= 1, concurrency
// 1 to 2^20), Unsupported when one request's KV cache does not fit.
[[nodiscard]] ServingResult predict_serving(const ModelSpec& model, const Device& device,
                                            const ServingScenario& s,
                                            const ModelOptions& options = {});

}  // namespace roofline
