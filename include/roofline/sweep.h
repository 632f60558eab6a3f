// Sweeps: every combination of models, devices, phases, batches, lengths and
// formats, one prediction per row, computed on all cores and streamed in order;
// and GEMM-shape sweeps: every combination of devices, m, n, k and formats, one
// GEMM roofline (predict_gemm) per row.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/predict.h"
#include "roofline/roofline.h"
#include "roofline/strategy.h"

namespace roofline {

struct SweepSpec {
  std::vector<ModelSpec> models;
  std::vector<const Device*> devices;  // owned by the registry
  std::vector<Phase> phases = {Phase::kDecode};
  std::vector<std::int64_t> batches = {1};
  std::vector<std::int64_t> seq_lens = {4096};
  std::vector<std::optional<Format>> weights = {std::nullopt};  // nullopt: native
  // nullopt ("engine"): the engine's for the row's weights on its device
  // (EngineProfile::weight_activations, as predict without --act), else bf16.
  std::vector<std::optional<Format>> acts = {std::nullopt};
  // nullopt: the act format (16 bits when the engine set it).
  std::vector<std::optional<Format>> kvs = {std::nullopt};
  std::vector<std::optional<AttentionKernel>> attentions = {std::nullopt};
  std::vector<std::int64_t> tps = {1};
  // Named precision plans. When given, each replaces the weights x acts x kvs
  // lists (resolved per model and device, as predict --strategy does).
  std::vector<Strategy> strategies;
  ModelOptions options;
  // The engine's release (empty: the current one): each device and
  // tensor-parallel size runs what that release runs differently there
  // (with_engine_release). Checked by check_engine_version.
  std::string engine_version;
};

// An entry of a sweep's activation list: "engine" (the engine's for the
// weights, else bf16) or a format id.
[[nodiscard]] std::optional<Format> parse_sweep_act(std::string_view text);

enum class SweepFormat { kCsv, kJsonLines, kJson };

// More rows than this is refused: a sweep is for tables, not for filling disks.
inline constexpr std::uint64_t kMaxSweepRows = 50'000'000;

// Number of rows (the product of the list sizes). Throws InvalidArgument when
// a list is empty or the product exceeds `max_rows`.
[[nodiscard]] std::uint64_t sweep_rows(const SweepSpec& spec,
                                       std::uint64_t max_rows = kMaxSweepRows);

// Most worker threads a sweep runs on (more gain nothing and cost memory).
inline constexpr unsigned kMaxSweepThreads = 256;

// Runs the sweep on `threads` threads (0: all cores; more than kMaxSweepThreads:
// InvalidArgument, before anything is written). `sink` receives the
// output in row order, in chunks; `progress` (optional) is called after each
// batch with rows done and total. A combination that cannot be predicted
// (format the device lacks, model that does not divide by tp) becomes a row
// with an error message, not a failure.
void run_sweep(const SweepSpec& spec, SweepFormat format,
               const std::function<void(std::string_view)>& sink,
               const std::function<void(std::uint64_t, std::uint64_t)>& progress = {},
               unsigned threads = 0);

// One row of a sweep: the entries of the spec's lists it combines and its scenario.
struct SweepPoint {
  std::size_t model = 0;     // index into spec.models
  std::size_t device = 0;    // index into spec.devices
  std::size_t strategy = 0;  // index into spec.strategies (0 when there are none)
  Scenario scenario;         // the formats resolved (a strategy's plan), phase, batch, ...
  // The options the row runs with: spec.options, or those of the spec's
  // engine release on the row's device and tensor-parallel size.
  const ModelOptions* options = nullptr;
};

// Called once per row: `prediction` is null when the combination cannot be
// predicted, and `error` then says why (the row's error message).
using SweepVisitor = std::function<void(std::uint64_t row, const SweepPoint& point,
                                        const Prediction* prediction, std::string_view error)>;

// The rows of run_sweep as values instead of text, for callers that fill
// columns (the Python bindings): `visit` is called from `threads` threads at
// once (0: all cores), each row exactly once, in no particular order. Throws
// InvalidArgument (list sizes, `max_rows`, threads) before any row is visited;
// an exception `visit` throws is rethrown once every thread has stopped.
void visit_sweep(const SweepSpec& spec, const SweepVisitor& visit, unsigned threads = 0,
                 std::uint64_t max_rows = kMaxSweepRows);

// ---------------------------------------------------------------- GEMM sweeps

// One GEMM C[m x n] = A[m x k] B[k x n] per combination of the lists, with the
// figures `roofline gemm` gives for one (predict_gemm). Rows run through the
// lists in this order, the last varying fastest: devices, ms, ns, ks, weights,
// acts. Defaults are those of POST /api/analyze.
struct GemmSweepSpec {
  std::vector<const Device*> devices;  // owned by the registry
  std::vector<std::int64_t> ms = {1};  // each in [1, kMaxGemmDimension]
  std::vector<std::int64_t> ns = {4096};
  std::vector<std::int64_t> ks = {4096};
  std::vector<Format> weights = {Format::kFp16};  // B's storage format
  std::vector<Format> acts = {Format::kFp16};     // compute formats only
  // The mode and realistic-mode constants; no engine (one GEMM on the device's
  // roofline, as `roofline gemm`).
  ModelOptions options;
};

// Number of rows (the product of the list sizes). Throws InvalidArgument,
// before any work, when a list is empty, the product exceeds `max_rows`, a
// dimension is outside [1, kMaxGemmDimension] or an activation format is
// storage-only (bad on every device).
[[nodiscard]] std::uint64_t sweep_rows(const GemmSweepSpec& spec,
                                       std::uint64_t max_rows = kMaxSweepRows);

// Runs the GEMM sweep as run_sweep above runs a model sweep (threads, sink,
// progress, the three formats). CSV columns, and JSON keys in the same order:
//   hardware, mode, m, n, k, weights, act, compute_format, time_s,
//   memory_time_s, compute_time_s, overhead_s, flops, bytes, ai, ridge_ai,
//   bound, attained_flops_per_s, attained_bandwidth_Bps, bytes_read,
//   bytes_written, weight_only, error
// (the first seventeen are `roofline gemm --csv`'s, device named hardware).
// Numbers have 6 significant digits. A combination the device cannot compute
// (fp8 activations on an A100, an unpublished peak) is a row whose `error`
// says why; JSON rows then carry only the inputs and `error`.
void run_sweep(const GemmSweepSpec& spec, SweepFormat format,
               const std::function<void(std::string_view)>& sink,
               const std::function<void(std::uint64_t, std::uint64_t)>& progress = {},
               unsigned threads = 0);

}  // namespace roofline
