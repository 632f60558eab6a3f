// Measured fused-MoE layers. A serving engine runs a mixture-of-experts
// layer as one fused kernel family (routing, token permutation, the grouped
// GEMMs of the experts touched, the activation, the weighted sum back), whose
// time at small batches is mostly fixed cost: 20-80 us whatever its bytes. A
// MoE table (data/kernels/moe/<device>-<engine>.json, distilled by
// scripts/distill-kernel-tables from the layers measured inside vLLM, SGLang
// and TensorRT-LLM) gives, per expert format, the efficiency of the whole
// layer against its roofline over log2(tokens) x log2(expert weight bytes the
// layer streams), a factor over log2(tokens) x log2(expert slice width) for
// how much faster or slower layers of that width run than the grid's median
// over all shapes (narrow slices, as DeepSeek-V3 at TP 8 has, run slower),
// and the fastest layer measured (a latency floor).
//
// The layer's roofline (the same in the distillation and in predict()):
//   flops = 2 x token-expert pairs x (gate + up + down) x hidden x inter / tp
//   bytes = the weights of the experts touched + tokens x hidden x
//           (activation bits / 8 + 2) (the layer's input and 16-bit output)
//   time  = max(floor_s, max(flops / peak, bytes / bandwidth) / efficiency)
//   efficiency = min(1, grid(tokens, bytes) x width_correction(tokens, width))
// where width = inter / tp, the columns of each expert's gate and up slices.
// A layer whose shape and layout the source measured (hidden, inter, experts,
// top-k, the tp ranks of each expert-parallel group, ep groups: the entry's
// `shapes`) reads its own efficiency instead, linear in log2(tokens) over the
// points measured and held at their ends, `tokens` being the layer's whole
// batch. Where an entry measured one model only, another model's layer reads
// that model's curve at its layout (other_model_shape) rather than the grid.
//
// An expert-parallel shape (ep > 1) is the busiest rank's layer: the source's
// power-law routing (the routing_skew distribution) with the most loaded rank
// placed at rank 0, which it times, against the roofline of the busiest
// expert-parallel group as predictions count it (uniform routing:
// busiest_expert_group in workload.h). It carries the routing's skew, so
// the layer takes no routing_skew slowdown on top. A tensor-parallel shape
// (ep 1) is the balanced routing's whole layer, as the grid.
//
// Example:
//   const MoeTable* t = EngineRegistry::built_in().moe_table(device, vllm, &source);
//   if (const MoeTable::Entry* e = t ? t->find(Format::kFp8, Format::kFp8, false) : nullptr)
//     double eff = t->efficiency(*e, /*tokens=*/8, /*weight_bytes=*/44e6, /*width=*/2048);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "roofline/formats.h"
#include "roofline/units.h"

namespace roofline {

// Efficiency per expert format over log2(tokens) x log2(weight bytes), with a
// factor over log2(tokens) x log2(expert slice width), for one device and
// engine.
struct MoeTable {
  // A layer shape and layout as measured (see above): hidden size, each
  // expert's intermediate size, experts, top-k, tensor-parallel ranks per
  // expert group and expert-parallel groups.
  struct ShapeKey {
    std::int64_t hidden = 0, inter = 0, experts = 0, top_k = 0, tp = 1, ep = 1;
    friend bool operator<(const ShapeKey& a, const ShapeKey& b) noexcept {
      return std::tie(a.hidden, a.inter, a.experts, a.top_k, a.tp, a.ep) <
             std::tie(b.hidden, b.inter, b.experts, b.top_k, b.tp, b.ep);
    }
  };
  // Its efficiency at log2(tokens) = log2_tokens_from, +1, ... (on the grid's
  // token axis), each in (0, 1].
  struct Shape {
    ShapeKey key;
    int log2_tokens_from = 0;
    std::vector<float> efficiency;
  };
  struct Entry {
    std::string kernel;  // the kernel the engine ran most ("moe_torch_flow_cutlass", ...)
    // The kernel family of every layer read, where they share one a deployment
    // can choose (kMoeKernelFamilies); empty: several, or none such.
    std::string family;
    Seconds floor_s = 0;    // the fastest layer measured: a latency floor, > 0
    std::int64_t rows = 0;  // measured layers read (rows above the roofline included)
    std::int64_t rows_above_roofline = 0;  // left out of the grid
    std::vector<float> efficiency;         // row-major [log2 tokens][log2 weight bytes]
    std::vector<float> width_correction;   // row-major [log2 tokens][log2 expert width], > 0
    std::vector<Shape> shapes;             // sorted by key, each key once
  };
  std::string id;  // "<device>-<engine>"
  std::string device, engine, engine_version, confidence, citation;
  int log2_tokens0 = 0, log2_bytes0 = 0, token_points = 0, byte_points = 0;
  int log2_width0 = 0, width_points = 0;
  // bf16, fp8, fp8_block, nvfp4, int4 (W4A16), mxfp4 (W4A16), mxfp4_mxfp8 (W4A8)
  using Formats = std::map<std::string, Entry, std::less<>>;
  Formats formats;
  // Where a format's layers were measured on more than one kernel family a
  // deployment can choose (see kMoeKernelFamilies), each family's own entries
  // (family -> format -> entry); `formats` blends the families.
  std::map<std::string, Formats, std::less<>> kernels;
  // Serving routes unevenly: how much slower the layers measured under the
  // source's power-law routing (`routing_skew_distribution`) ran than under
  // its balanced routing, per log2_tokens point, held at 1 from below (empty:
  // not measured, no slowdown). The grids are balanced routing's.
  std::vector<float> routing_skew;
  std::string routing_skew_distribution;

  [[nodiscard]] const Entry* find(std::string_view format_key) const noexcept;
  // The entry of `family`'s own layers for a format key (see `kernels`), or
  // nullptr where the family measured none of that format.
  [[nodiscard]] const Entry* find_family(std::string_view family,
                                         std::string_view format_key) const noexcept;
  // Whether some format's layers were measured on the kernel `family`
  // (in `kernels`, or a format of that one family).
  [[nodiscard]] bool measures(std::string_view family) const noexcept;
  // The entry for an expert GEMM's formats (see moe_table_key), or nullptr.
  // FP8 experts take the block-scaled kernels' entry where the table has one:
  // FP8 MoE checkpoints are block-scaled (DeepSeek-V3, Qwen3 FP8; the source
  // measures DeepSeek-V3's and Kimi-K2's shapes only so), per-tensor FP8 else.
  [[nodiscard]] const Entry* find(Format weights, Format compute, bool weight_only) const noexcept;
  // The grid, bilinear in (log2 tokens, log2 weight bytes), times the width
  // factor, bilinear in (log2 tokens, log2 width), each held at its edges.
  // `width`: the columns of one expert's gate (or up) slice on the GPU. In
  // (0, 1].
  [[nodiscard]] double efficiency(const Entry& e, double tokens, Bytes weight_bytes,
                                  double width) const noexcept;
  // The measured shape `key` of entry `e`, or nullptr (a binary search).
  [[nodiscard]] static const Shape* find_shape(const Entry& e, const ShapeKey& key) noexcept;
  // Another model's measured curve for a layer of shape `key` the entry did
  // not measure, or nullptr. Where every shape of `e` is one model's (one
  // hidden, inter, experts and top-k, as a kernel family measured on a single
  // checkpoint is), its grid cannot tell weight bytes from slice width: each
  // tensor-parallel layout streams fewer bytes through narrower slices. That
  // model's curve at the same layout (tp, ep) prices `key` instead, read at
  // the tokens that give each expert as many rows: `*token_scale` =
  // (key top-k / key experts) / (its top-k / its experts), to multiply the
  // layer's tokens by. Entries of several models keep the grid.
  [[nodiscard]] static const Shape* other_model_shape(const Entry& e, const ShapeKey& key,
                                                      double* token_scale) noexcept;
  // A measured shape's efficiency at `tokens` (the layer's whole batch),
  // linear in log2 tokens between its points and held at its ends. In (0, 1].
  [[nodiscard]] static double shape_efficiency(const Shape& s, double tokens) noexcept;
  // The routing-skew slowdown at `tokens` (a layer's tokens before top-k),
  // linear in log2 tokens between the points and held at the edges; 1
  // without a measurement. At least 1.
  [[nodiscard]] double skew_slowdown(double tokens) const noexcept;
};

// The MoE kernel families a deployment can choose: vLLM's and SGLang's MoE
// backends (VLLM_USE_FLASHINFER_MOE_FP8, SGLang's --moe-runner-backend).
inline constexpr std::string_view kMoeKernelFamilies[] = {"triton", "flashinfer-trtllm",
                                                          "flashinfer-cutlass", "marlin"};

// The kMoeKernelFamilies element `name` spells (ASCII case ignored; '_' as
// '-'), in its static storage; InvalidArgument naming `what` and the families
// otherwise.
[[nodiscard]] std::string_view parse_moe_kernel(std::string_view name, std::string_view what);

// `table`'s entries with `family`'s own where `table` measures it, else
// another table's of the same device (`others`, in order: the first that
// measures the family for a format gives it), else `table`'s blended entry.
// The result's id names the family; `borrowed` (optional) is set when an
// entry came from another engine's table. An unknown family throws
// InvalidArgument.
[[nodiscard]] MoeTable with_moe_kernel(const MoeTable& table, std::string_view family,
                                       const std::vector<const MoeTable*>& others,
                                       bool* borrowed = nullptr);

// Strict: unknown or missing keys, a grid of the wrong size, efficiencies
// outside (0, 1], width factors outside (0, 8], a floor outside (0, 1] s, a
// routing skew (optional) that is not one slowdown in [1, 4] per log2_tokens
// point, shapes that are not sorted and distinct, hold a size outside its
// bounds, or points off the token axis are ParseErrors naming `origin` and
// the key.
[[nodiscard]] MoeTable parse_moe_table(std::string_view json_text, const std::string& origin);

// Whether `key` is a MoE table format key (bf16, fp8, fp8_block, nvfp4, int4,
// mxfp4, mxfp4_mxfp8).
[[nodiscard]] bool is_moe_table_key(std::string_view key) noexcept;

// The MoE table key of an expert GEMM's formats ("bf16", "fp8", "nvfp4",
// "int4", "mxfp4", "mxfp4_mxfp8"), or empty where no table measures such
// layers. `compute`: the format the math runs in (roofline.h plan_compute).
[[nodiscard]] std::string_view moe_table_key(Format weights, Format compute,
                                             bool weight_only) noexcept;

}  // namespace roofline
