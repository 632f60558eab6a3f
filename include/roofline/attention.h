// Attention kernels: which device runs which, their measured efficiency, and
// the HBM traffic of each (the IO model of FlashAttention's Theorem 2).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "roofline/hardware.h"

namespace roofline {

enum class AttentionKernel : std::uint8_t { kNaive, kFa1, kFa2, kFa3, kFa4, kFlashDecoding };
inline constexpr int kAttentionKernelCount = 6;

enum class AttentionLoop {
  kUnfused,  // scores and probabilities round-trip through HBM
  kKvOuter,  // FA1: K/V blocks outer, Q/O re-read once per K/V block
  kQOuter,   // FA2+: Q blocks outer, K/V re-read once per Q block
};

struct AttentionKernelInfo {
  AttentionKernel kernel;
  std::string id;
  std::string name;
  std::vector<std::string> architectures;        // device architecture names it runs on
  std::vector<std::uint64_t> architecture_keys;  // architecture_key() of each
  AttentionLoop loop = AttentionLoop::kQOuter;
  bool split_kv = false;  // decode splits the KV sequence across blocks
  bool fp8 = false;       // computes attention in fp8
  Figure efficiency;      // achievable fraction of the tensor peak (NaN: device matmul fraction)
  std::vector<std::pair<std::string, Figure>> architecture_efficiency;  // overrides
  std::string citation;

  [[nodiscard]] bool runs_on(const Device& device) const;
  // The achievable fraction on `device` (NaN when the device's matmul fraction applies).
  [[nodiscard]] const Figure& efficiency_on(const Device& device) const;
};

// The embedded kernel catalog (data/kernels/attention.json).
[[nodiscard]] const std::vector<AttentionKernelInfo>& attention_kernels();
[[nodiscard]] const AttentionKernelInfo& attention_kernel_info(AttentionKernel k);
[[nodiscard]] std::string_view attention_kernel_id(AttentionKernel k);
// Parses an id ("fa2", "flash-decoding"); throws NotFound listing the ids.
[[nodiscard]] AttentionKernel parse_attention_kernel(std::string_view id);

// The best kernel the device runs for a phase: FA4 on Blackwell, FA3 on
// Hopper, else FA2, else unfused; decode always prefers Flash-Decoding.
[[nodiscard]] AttentionKernel default_attention_kernel(const Device& device, bool decode);

// Throws Unsupported naming the architectures the kernel needs.
void check_kernel_supported(AttentionKernel k, const Device& device);

}  // namespace roofline
