// Measured attention calls. A serving engine's attention call (FlashAttention-3,
// FlashInfer, TensorRT-LLM's fused MHA / XQA, FlashMLA) is priced by its
// bytes or FLOPs only at large shapes: a decode call at short contexts and
// large batches pays per query head and per sequence far more than the bytes
// say (600 us for 256 sequences of 32 query and 8 KV heads at 2 cached tokens
// inside TensorRT-LLM on an H200, where the bytes take under 1 us), and a
// prompt of 1,024 tokens reaches a third of the tensor peak. An attention
// table (data/kernels/attention/<device>-<engine>.json, distilled by
// scripts/distill-kernel-tables from the calls measured inside vLLM, SGLang
// and TensorRT-LLM) gives, per phase (decode, prefill), attention kind (GQA or
// MHA, MLA's latent) and KV-cache format, the call's efficiency against its
// roofline over three log2 axes:
//   streams = sequences x KV heads on the GPU (MLA decode: sequences)
//   group   = query heads per KV head (MLA decode: query heads on the GPU)
//   span    = tokens attended x the key's head dim (MLA decode: x 576)
// and the fastest call measured (a latency floor). Keyed so, a table carries
// over to head layouts the source did not measure (held-out head layouts came
// back within a median of 2-7% in the distillation's check).
//
// Gated DeltaNet's kernels (Qwen3-Next, Qwen3.5: the short convolution and the
// delta rule, for prompts and for decode steps) have entries of their own on
// the same axes: streams = sequences x value heads on the GPU, group = value
// heads per key head, span = tokens a sequence x key head dim; their roofline
// is the op graph's own (bytes over the bandwidth, FLOPs over the op's compute
// format's peak).
//
// The call's roofline (the same in the distillation and in predict()):
//   decode:  bytes = the K/V (MLA: latent) cache read + 16-bit queries and outputs
//            flops = 2 x sequences x query heads x tokens x (key dim + value dim)
//   prefill: flops = the causal pairs' 2 x (key dim + value dim) per query head
//   time = max(floor_s, max(flops / bf16 peak, bytes / bandwidth) / efficiency)
// The collectors time the whole call, which also writes the new tokens' K/V
// to the cache (and, in TensorRT-LLM, applies RoPE): predict() counts those
// ops inside it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/formats.h"
#include "roofline/units.h"

namespace roofline {

struct AttentionTable {
  struct Entry {
    std::string key;             // "decode_gqa_bf16", ...
    std::string kernel;          // the kernel the engine ran most ("fa3", "trtllm_mha", ...)
    std::string engine_version;  // the engine version measured (MLA may differ)
    std::string citation;        // the entry's source
    Seconds floor_s = 0;         // the fastest call measured, > 0
    std::int64_t rows = 0;       // measured calls read
    double fit_median_error = 0, fit_p90_error = 0;  // the table's rows predicted back
    std::vector<float> efficiency;      // [log2 streams][log2 group][log2 span], row-major
    std::vector<float> log_efficiency;  // its natural logarithms (what is interpolated)
  };
  std::string id;  // "<device>-<engine>"
  std::string device, engine, engine_version, confidence, citation;
  int log2_streams0 = 0, stream_points = 0;
  int log2_group0 = 0, group_points = 0;
  int log2_span0 = 0, span_points = 0;
  // decode_gqa_bf16, decode_gqa_fp8, decode_mla_bf16, decode_mla_fp8,
  // prefill_gqa_bf16, prefill_gqa_fp8, decode_gdn, decode_gdn_conv,
  // prefill_gdn, prefill_gdn_conv, in the file's order
  std::vector<Entry> entries;
  // entries' index per [prefill][mla][16-bit cache] (-1: none), for a lookup
  // per attention op without comparing strings.
  std::int8_t slot[2][2][2] = {{{-1, -1}, {-1, -1}}, {{-1, -1}, {-1, -1}}};
  // Gated DeltaNet's entries per [prefill][short convolution] (-1: none).
  std::int8_t linear_slot[2][2] = {{-1, -1}, {-1, -1}};

  [[nodiscard]] const Entry* find(std::string_view key) const noexcept;
  // The entry for a prompt's (`prefill`) or a decode step's attention, over
  // MLA's latent or not, with a KV cache in `kv` (bf16 and fp16 share one),
  // or nullptr where the table has none.
  [[nodiscard]] const Entry* find(bool prefill, bool mla, Format kv) const noexcept;
  // Gated DeltaNet's delta rule or short convolution (`conv`) for prompts or
  // decode steps, or nullptr.
  [[nodiscard]] const Entry* find_linear(bool prefill, bool conv) const noexcept;
  // Trilinear in (log2 streams, log2 group, log2 span) over the logarithm of
  // the efficiency, held at the grid's edges: where the kernel's time stays
  // flat (its floor) the efficiency grows as the bytes do, and geometric
  // interpolation keeps the time flat between grid points. In (0, 1].
  [[nodiscard]] double efficiency(const Entry& e, double streams, double group,
                                  double span) const noexcept;
};

// Strict: unknown or missing keys, a grid of the wrong size, efficiencies
// outside (0, 1], a floor outside (0, 1] s are ParseErrors naming `origin`
// and the key.
[[nodiscard]] AttentionTable parse_attention_table(std::string_view json_text,
                                                   const std::string& origin);

}  // namespace roofline
