// JSON in, JSON out: the request handling shared by the HTTP server and the
// CLI's JSON mode. Requests use the CLI's flag names as keys (seq_len for
// --seq-len); unknown keys, wrong types and out-of-range values are errors
// (InvalidArgument / NotFound / Unsupported / ParseError) with the same
// messages everywhere. Responses are the documents the CLI prints with --json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "roofline/hardware.h"

namespace roofline::service {

// Limits for untrusted callers (the server); the CLI passes its own.
// Every call runs under a DeadlineScope of time_limit_s (roofline/deadline.h).
struct Limits {
  std::uint64_t max_sweep_rows = 100'000;
  // Model and strategy names that are not built in are read as files. Off for
  // the server: there a model is a preset id or a config object, a strategy a
  // built-in name, and nothing reaches its file system.
  bool allow_files = false;
  double time_limit_s = 5.0;  // work past this is abandoned with TimeLimit
};

// {"model", "hardware", "phase"?, "batch"?, "seq_len"?, "weights"?, "experts"?,
//  "act"?, "kv"?, "strategy"?, "attention"?, "block_sparsity"?, "tp"?, "pp"?,
//  "ideal"?, "per_op"?}; "model" is a preset id or an object (the short form
// or a config.json).
[[nodiscard]] nlohmann::json predict(const nlohmann::json& request, const Registry& registry,
                                     const Limits& limits);
// As predict, with "prompt" and "gen" instead of phase and seq_len.
// POST /api/search: model, hardware, gpus, isl, osl, ttft_max, tpot_max,
// engines, weights, concurrencies (lists); the deployment search.
[[nodiscard]] nlohmann::json search(const nlohmann::json& request, const Registry& registry,
                                    const Limits& limits);
// POST /api/serving: model, hardware and the scenario's formats, tp, engine,
// plus isl, osl and concurrency (no batch: it follows from the concurrency),
// mode ("agg" or "disagg" with prefill_workers, prefill_tp, decode_workers,
// decode_tp), rounds, token_budget and max_running (0: the engine's).
[[nodiscard]] nlohmann::json serving(const nlohmann::json& request, const Registry& registry,
                                     const Limits& limits);
[[nodiscard]] nlohmann::json generate(const nlohmann::json& request, const Registry& registry,
                                      const Limits& limits);
// {"model", "hardware", "phase"?, "seq_len"?, "batch"?, "max_quality_loss"?,
//  "memory_limit"?, "latency_target"?, "ideal"?}
[[nodiscard]] nlohmann::json recommend(const nlohmann::json& request, const Registry& registry,
                                       const Limits& limits);
// {"hardware", "m", "n", "k", "weights"?, "act"?, "ideal"?}
[[nodiscard]] nlohmann::json analyze(const nlohmann::json& request, const Registry& registry,
                                     const Limits& limits);
// Lists: {"models": [...], "hardware": [...], "phases"?, "batches"?, "seq_lens"?,
// "weights"?, "acts"?, "strategies"?, "ideal"?}; returns {"rows": [...], "count"}.
[[nodiscard]] nlohmann::json sweep(const nlohmann::json& request, const Registry& registry,
                                   const Limits& limits);
// The same document as JSON text, written row by row without building a tree
// of values (what the server sends: a large sweep costs its text, once).
[[nodiscard]] std::string sweep_text(const nlohmann::json& request, const Registry& registry,
                                     const Limits& limits);

// GEMM-shape sweeps (roofline/sweep.h's GemmSweepSpec): lists {"hardware"?,
// "m"?, "n"?, "k"?, "weights"?, "acts"?} and "ideal"?; defaults gb10, m 1, n and
// k 4096, fp16 weights and activations. Returns {"count", "rows": [...], stamp}
// with the row fields of `roofline sweep gemm --format json`; the row cap is
// max_sweep_rows, checked before any row is computed.
[[nodiscard]] nlohmann::json sweep_gemm(const nlohmann::json& request, const Registry& registry,
                                        const Limits& limits);
// The same document as JSON text, written row by row (what the server sends).
[[nodiscard]] std::string sweep_gemm_text(const nlohmann::json& request, const Registry& registry,
                                          const Limits& limits);

// Parses a request body. Throws InvalidArgument when it is not JSON or nests
// deeper than 64 levels (checked on the text, before any value is built).
[[nodiscard]] nlohmann::json parse_request(std::string_view body);

[[nodiscard]] nlohmann::json hardware_list(const Registry& registry);
[[nodiscard]] nlohmann::json model_list();
[[nodiscard]] nlohmann::json strategy_list();
// GET /api/engines: every serving engine with its sourced figures.
[[nodiscard]] nlohmann::json engine_list();

}  // namespace roofline::service
