// Sweeps: every combination of models, devices, phases, batches, lengths and
// formats, one prediction per row, computed on all cores and streamed in order.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/predict.h"
#include "roofline/strategy.h"

namespace roofline {

struct SweepSpec {
  std::vector<ModelSpec> models;
  std::vector<const Device*> devices;  // owned by the registry
  std::vector<Phase> phases = {Phase::kDecode};
  std::vector<std::int64_t> batches = {1};
  std::vector<std::int64_t> seq_lens = {4096};
  std::vector<std::optional<Format>> weights = {std::nullopt};  // nullopt: native
  std::vector<Format> acts = {Format::kBf16};
  std::vector<std::optional<Format>> kvs = {std::nullopt};  // nullopt: the act format
  std::vector<std::optional<AttentionKernel>> attentions = {std::nullopt};
  std::vector<std::int64_t> tps = {1};
  // Named precision plans. When given, each replaces the weights x acts x kvs
  // lists (resolved per model and device, as predict --strategy does).
  std::vector<Strategy> strategies;
  ModelOptions options;
};

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

}  // namespace roofline
