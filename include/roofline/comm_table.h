// Measured all-reduce latencies. At decode's message sizes (a few hundred
// KB) an all-reduce costs mostly its synchronization, 3-8 us on NVLink,
// which no bandwidth figure carries; a step of an 80-layer model at TP 8 runs
// 160 of them. A comm table (data/kernels/comm/<device>-<engine>.json,
// distilled by scripts/distill-kernel-tables from the all-reduces measured
// inside vLLM, SGLang and TensorRT-LLM, CUDA-graph variants) gives the
// latency per GPU count on a grid of log2(message elements, bf16).
//
// Example:
//   const CommTable* t = EngineRegistry::built_in().comm_table(device, vllm, nullptr);
//   if (t) double s = t->latency(/*gpus=*/8, /*elements=*/16 * 8192);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/units.h"

namespace roofline {

struct CommTable {
  std::string id;  // "<device>-<engine>"
  std::string device, engine, engine_version, confidence, citation;
  int log2_elements0 = 0, points = 0;
  std::map<std::int64_t, std::vector<double>> latency_s;  // GPU count -> per grid point

  // NCCL's all-to-all on the device ("alltoall", optional): per GPU count
  // on its own grid of log2(elements a rank sends, 16-bit); empty when not measured.
  int alltoall_log2_elements0 = 0, alltoall_points = 0;
  std::map<std::int64_t, std::vector<double>> alltoall_s;
  std::string alltoall_citation;

  // One all-reduce of `elements` bf16 elements over `gpus` GPUs: the measured
  // GPU count nearest below (the nearest above when none is below), linear
  // in log2(elements) between grid points, the smallest size's latency below
  // the grid, and the largest's scaled by size above it (bandwidth-bound).
  [[nodiscard]] Seconds latency(std::int64_t gpus, double elements) const noexcept;
  // One all-to-all in which each of `gpus` GPUs sends `elements` 16-bit
  // elements in all, read the same way; 0 when not measured.
  [[nodiscard]] Seconds alltoall_latency(std::int64_t gpus, double elements) const noexcept;
};

// Strict: unknown or missing keys, a grid of the wrong length, latencies that
// are not positive and finite are errors naming `origin` and the key.
[[nodiscard]] CommTable parse_comm_table(std::string_view json_text, const std::string& origin);

}  // namespace roofline
