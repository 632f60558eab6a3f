// The roofline core: work (FLOPs, bytes) on a device in given formats ->
// time, which side bounds it, and the figures used. Pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "roofline/formats.h"
#include "roofline/hardware.h"
#include "roofline/units.h"

namespace roofline {

enum class Mode {
  kIdeal,      // datasheet peaks: the pure roofline
  kRealistic,  // achievable fractions, wave quantization, launch overhead
};
enum class Bound { kMemory, kCompute };

// Where a matmul's efficiency came from (reported per operator).
enum class EfficiencySource : std::uint8_t {
  kDevice,         // the device file's achievable fractions (realistic mode)
  kMeasuredTable,  // a GEMM table measured on this device inside the engine's stack
  kDerivedTable,   // a table of a related device (same architecture)
  kIdeal,          // ideal mode: datasheet peaks
  // A MoE layer's expert work (gate, up, activation, down) priced as one
  // fused layer by a MoE table (roofline/moe_table.h) of this device, or of a
  // related device of the same architecture.
  kMeasuredMoeTable,
  kDerivedMoeTable,
  // The engine profile's own kernel figures, derived from published runs
  // (llama.cpp's dequantizing GEMMs).
  kEngine,
  // An attention call priced by an attention table
  // (roofline/attention_table.h) of this device, or of a related device of
  // the same architecture.
  kMeasuredAttentionTable,
  kDerivedAttentionTable,
};
[[nodiscard]] std::string_view efficiency_source_name(EfficiencySource s) noexcept;

struct EngineProfile;  // roofline/engine.h
struct FileMix;        // roofline/engine.h
struct GemmTable;
struct MoeTable;          // roofline/moe_table.h
struct CommTable;         // roofline/comm_table.h
struct AttentionTable;    // roofline/attention_table.h
struct PaddedMoeLayout;   // roofline/engine.h
struct MoeKernelRelease;  // roofline/engine.h
struct MoeWeightPadding;  // roofline/engine.h
struct WindowMasking;     // roofline/engine.h

[[nodiscard]] std::string_view mode_name(Mode m) noexcept;
[[nodiscard]] std::string_view bound_name(Bound b) noexcept;

// Which steps replay CUDA graphs, where a deployment sets it apart from its
// engine's defaults (vLLM's cudagraph_mode and --enforce-eager, SGLang's
// --disable-cuda-graph, TensorRT-LLM without cuda_graph_config).
enum class GraphPolicy : std::uint8_t {
  kEngine,      // the engine's defaults
  kDecodeOnly,  // decode steps replay whole graphs; every other step runs with none
  kOff,         // no graphs: every step eager
};

// Modeling constants of the realistic mode and of weight dequantization.
// Defaults are documented here once; the CLI and bindings read them from here.
struct ModelOptions {
  Mode mode = Mode::kRealistic;
  // Output tile of one thread block, for wave quantization: a GEMM with T
  // tiles on S SMs runs ceil(T/S) waves. 128x128 is the common cuBLAS/CUTLASS
  // tile for large problems; for small m the tile shrinks to the next power of
  // two of m, down to min_tile_m (the smallest tensor-core MMA has 16 rows).
  int tile_m = 128;
  int tile_n = 128;
  int min_tile_m = 16;
  // When a GEMM has fewer tiles than SMs, libraries split k across blocks
  // (cuBLAS split-K, CUTLASS stream-K); each block keeps at least this much k.
  double min_split_k_depth = 256;
  // Vector operations to dequantize one weight element (unpack, convert,
  // scale, zero point), each time a thread block loads it. Runs on the fp32
  // vector units. Applies in both modes: it is work, not an inefficiency.
  double dequant_ops_per_element = 4.0;
  // Fixed latency of one collective (all-reduce, send) in realistic mode:
  // the 5 us base term of GenZ's collective model (collective_times.py).
  double collective_latency_s = 5e-6;
  // The serving engine (roofline/engine.h; null: the reference, today's
  // realistic mode) and its GEMM table for the device, resolved once by
  // with_engine(). Realistic mode only.
  const EngineProfile* engine = nullptr;
  const GemmTable* gemm_table = nullptr;
  EfficiencySource gemm_table_source = EfficiencySource::kDevice;
  // The engine's MoE table for the device (kMeasuredMoeTable or
  // kDerivedMoeTable), resolved with the GEMM table: prices MoE layers whose
  // expert format it measured.
  const MoeTable* moe_table = nullptr;
  EfficiencySource moe_table_source = EfficiencySource::kMeasuredMoeTable;
  // The MoE kernel family the deployment chose (one of kMoeKernelFamilies in
  // roofline/moe_table.h, its own storage; empty: the engine's measured
  // blend): with_engine() resolves moe_table with it.
  std::string_view moe_kernel;
  // The engine release's padded grouped MoE layout on the device and the
  // dense GEMM table of its kernel library (with_engine_release; null: none).
  const PaddedMoeLayout* padded_moe = nullptr;
  const GemmTable* padded_moe_gemm = nullptr;
  // The engine release's default MoE kernel family for one expert format
  // where it differs from the table's blend (with_engine_release; null: none,
  // or the deployment chose its own, moe_kernel).
  const MoeKernelRelease* moe_release = nullptr;
  // The engine release's attention kernels that compute an attention-sink
  // model's sliding-window layers over the whole context on the device
  // (with_engine_release; null: none do), and which of them: the kernel of
  // steps with prompt tokens and large decode batches, the split-KV one.
  const WindowMasking* window_masking = nullptr;
  bool window_masked_prompt_kernel = false;
  bool window_masked_split_kv = false;
  // The engine's measured all-reduce latencies for the device (null or empty:
  // the interconnect's bandwidth and collective_latency_s price them).
  const CommTable* comm_table = nullptr;
  // The engine's measured attention calls for the device (null or empty:
  // the attention kernel's catalog efficiency prices them).
  const AttentionTable* attention_table = nullptr;
  EfficiencySource attention_table_source = EfficiencySource::kMeasuredAttentionTable;
  // The largest decode batch the deployment captured CUDA graphs for (0: the
  // engine's default, EngineProfile::replays_graphs).
  std::int64_t graph_max_batch = 0;
  // The KV cache's share of memory under the engine's rule where the
  // deployment sets its own (ServingScenario::kv_memory_share; 0: the
  // engine's current default): sizes the pool a decode step may cast whole.
  double kv_memory_share = 0;
  // The date of the engine's build as yyyymmdd (parse_build_date; 0: the
  // current build): a profile's rules dated by build follow it.
  std::int32_t engine_build = 0;
  // Which steps replay CUDA graphs (the engine's defaults unless the
  // deployment turns them down): steps without graphs pay the engine's eager
  // launch (EngineProfile::launch_figure).
  GraphPolicy graphs = GraphPolicy::kEngine;
};

// One GEMM: C[m x n] = A[m x k] * B[k x n]. A holds activations, B weights.
// (A GEMV is m = 1.) Dimensions must be in [1, kMaxGemmDimension].
struct GemmProblem {
  std::int64_t m = 1;
  std::int64_t n = 1;
  std::int64_t k = 1;
  Format weights = Format::kFp16;  // B's storage format
  Format act = Format::kFp16;      // A's format and the math format when weights differ
};

// cuBLAS takes int32 dimensions; anything larger is not a real GEMM.
inline constexpr std::int64_t kMaxGemmDimension = 2147483647;

struct RooflineResult {
  Mode mode = Mode::kRealistic;
  // max(memory, compute) + overhead; on a CPU in realistic mode with m > 1,
  // memory + compute + packing + overhead (the BLAS does not overlap them).
  Seconds time_s = 0;
  Seconds memory_time_s = 0;   // bytes / effective bandwidth
  Seconds compute_time_s = 0;  // flops / effective peak (+ dequantization)
  Seconds overhead_s = 0;      // launch overhead (realistic mode only)
  // CPU BLAS only (realistic mode, m > 1): GotoBLAS-style GEMMs copy the weight
  // operand into a packed buffer before the math, one more read and one write of
  // its bytes, and multiply each packed panel only after packing it, so neither
  // the copy nor the weight stream overlaps the math. GEMVs (m = 1) do not pack.
  Seconds packing_time_s = 0;
  Flops flops = 0;        // 2 per multiply-add of the math itself
  Flops dequant_ops = 0;  // vector ops spent dequantizing weights
  Bytes bytes_read = 0;
  Bytes bytes_written = 0;
  Bytes bytes = 0;            // read + written
  FlopsPerByte ai = 0;        // flops / bytes
  FlopsPerByte ridge_ai = 0;  // peak x matmul fraction / effective bandwidth (device-wide)
  Bound bound = Bound::kMemory;
  FlopsPerSecond attained_flops_per_s = 0;  // flops / time_s
  BytesPerSecond attained_bandwidth_Bps = 0;
  // Figures used.
  Format compute_format = Format::kFp16;  // the format the math runs in
  Format output_format = Format::kFp16;
  bool weight_only = false;                  // weights converted to compute_format before the math
  FlopsPerSecond peak_flops_per_s = 0;       // datasheet dense peak of compute_format
  BytesPerSecond peak_bandwidth_Bps = 0;     // datasheet bandwidth
  double matmul_fraction = 1;                // 1 in ideal mode
  double bandwidth_fraction = 1;             // 1 in ideal mode
  double wave_efficiency = 1;                // tiles / (waves x SMs) x tile fill; 1 in ideal mode
  FlopsPerSecond effective_flops_per_s = 0;  // peak x matmul fraction x wave efficiency
  BytesPerSecond effective_bandwidth_Bps = 0;
};

// Validates a GEMM problem. Throws InvalidArgument naming the bad field.
void validate(const GemmProblem& problem);

// Predicts one GEMM. Throws InvalidArgument for bad dimensions or a
// storage-only activation format, Unsupported when the device cannot compute
// the activation format or its peak is unpublished. A weight format the device
// cannot compute is weight-only: bytes shrink, math runs in `act`, and the
// dequantization work is counted.
[[nodiscard]] RooflineResult predict_gemm(const Device& device, const GemmProblem& problem,
                                          const ModelOptions& options = {});

// Fraction of the SMs doing useful work for a tiled GEMM of `tiles` output
// tiles with `tile_fill` useful work per padded tile, splitting k (of depth
// `k_depth`) across blocks when there are fewer tiles than SMs.
[[nodiscard]] double wave_efficiency(double tiles, double tile_fill, double k_depth, double sms,
                                     const ModelOptions& options) noexcept;

// Thread-block tiles and tile fill of an m x n output (tile m shrinks for small m).
struct GemmTiling {
  double tiles;
  double fill;
  double m_tiles;
};
[[nodiscard]] GemmTiling gemm_tiling(double m, double n, const ModelOptions& options) noexcept;

// The format the math of (weights, act) runs in on `device`, and whether the
// weights are converted to it first. Throws like predict_gemm.
struct ComputePlan {
  Format format;
  bool weight_only;
};
[[nodiscard]] ComputePlan plan_compute(const Device& device, Format weights, Format act);

}  // namespace roofline
