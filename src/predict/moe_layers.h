// Internal to predict(): MoE layers priced as the fused kernels the serving
// engines run, from the engine's MoE table (roofline/moe_table.h). Defined
// here, in predict()'s translation unit, so that the compiler sees that the
// prediction's timings do not escape (which lets build_ops() write the graph
// in place).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "roofline/engine.h"
#include "roofline/model.h"
#include "roofline/moe_table.h"
#include "roofline/predict.h"

namespace roofline::detail {

// What predict() does to each op of its graph beyond pricing it on its own
// (bits of one byte an op): the ops a MoE table priced as whole layers
// (price_moe_layers), those an engine's measured attention call holds, those
// inside its all-reduce kernel and the fp8 GEMMs whose input arrives
// quantized (predict.cpp's mark_engine_ops).
enum OpMark : std::uint8_t {
  kMoePriced = 1,
  kHeld = 2,
  kInAllReduce = 4,
  kPrequantized = 8,
};
using OpMarks = std::array<std::uint8_t, kMaxOps>;

// A routed expert's GEMM (not a shared expert's, not the router).
inline bool routed_gemm(const Op& op) {
  return op.moe_layer && op.cls == OpClass::kMatmul &&
         (op.kind == OpKind::kGateProj || op.kind == OpKind::kUpProj ||
          op.kind == OpKind::kDownProj);
}

// Sets the timings of the routed-expert ops (gate, up, activation, down) of
// every MoE layer class of `g` whose expert format `options.moe_table`
// measured: the layer's expert work takes
//   max(floor_s, roofline time / efficiency at (tokens, expert weight bytes,
//       expert slice width))
// (realistic mode, an engine with a MoE table; roofline per moe_table.h),
// shared among its ops in proportion to their own datasheet times, which
// keeps each op's bound. Marks the ops it set kMoePriced (predict() leaves
// them as they are) and returns whether it set any: none when the table has
// no entry for the format. `*by_shape`
// counts the layer classes priced at their own measured shape.
//
// An engine release that pads its grouped GEMMs (opt.padded_moe, e.g. vLLM
// 0.11.1-0.12's DeepGEMM on Hopper) computes a workspace of
//   rows = round_up(tokens x top_k + local experts x (block - 1), block)
// whatever the tokens: the layer takes at least its two GEMMs over those rows
// (the kernel library's dense efficiency at that shape, opt.padded_moe_gemm)
// and the activation's pass over them. `*padded` counts the layer classes it
// set and the first one's rows.
struct MoePadding {
  std::int32_t layers = 0;
  double rows = 0;
};

// How price_moe_layers read the table, beyond the layers at their own shape.
struct MoeReadings {
  std::int32_t other_model = 0;  // layer classes at another model's curve (other_model_shape)
  std::int32_t by_release = 0;   // layer classes on the release's family (opt.moe_release)
};

inline double padded_moe_seconds(const Device& d, const PaddedMoeLayout& layout,
                                 const GemmTable& table, double tokens, double top_k,
                                 double local_experts, double width, double hidden, bool gated,
                                 double* rows_out) {
  const GemmTable::Entry* e = table.find(layout.gemm_format);
  if (e == nullptr) return 0;
  const double block = static_cast<double>(layout.block_rows);
  const double rows = std::ceil((tokens * top_k + local_experts * (block - 1)) / block) * block;
  *rows_out = rows;
  const double peak = d.peak(layout.format);
  const double bw = d.memory_bandwidth_Bps.value;
  // One GEMM of the workspace, against the table's roofline: the same bytes
  // the distiller counts (a 32-bit scale per 128 x 128 weight block, fp8
  // inputs, bf16 outputs).
  auto gemm = [&](double n, double k) {
    const double ideal = std::max(2 * rows * n * k / peak,
                                  (n * k * (1 + 4.0 / (128 * 128)) + rows * k + 2 * rows * n) / bw);
    const double eff = std::clamp(table.efficiency(*e, rows, n * k), 1e-4, 1.0);
    return std::max(e->floor_s, ideal / eff);
  };
  const double up_n = gated ? 2 * width : width;
  // The activation (and its fp8 quantization for the second GEMM) over every
  // row: the first GEMM's bf16 output read, fp8 rows and a 32-bit scale per
  // 128 written.
  const double act_bytes = rows * (up_n * 2 + width * (1 + 4.0 / 128));
  const double act = act_bytes / (bw * d.bandwidth_fraction.value);
  return gemm(up_n, hidden) + act + gemm(hidden, width);
}

// What the MoE table gives one layer class: its time (the expert work of one
// instance) and how it was read.
struct MoeLayerReading {
  const Op* first = nullptr;  // the class's first expert op (its gate or up)
  double flops = 0, weights = 0;
  bool found = false;  // an entry of the table priced it
  double layer_s = 0, ideal = 0;
  bool shape = false, other = false, by_release = false, padded = false;
  double padded_rows = 0;
};

// Whether two layer classes' first expert ops do the same work a layer: the
// fields a table reading depends on (with the classes' summed FLOPs and bytes).
inline bool same_expert_work(const Op& a, const Op& b) noexcept {
  return a.weights == b.weights && a.compute == b.compute && a.weight_only == b.weight_only &&
         a.gemm_m == b.gemm_m && a.gemm_groups == b.gemm_groups && a.gemm_k == b.gemm_k &&
         a.gemm_n == b.gemm_n && a.moe_ep == b.moe_ep && a.moe_tokens == b.moe_tokens;
}

// Reads `table` for the layer class whose first expert op is `first` (its
// matmuls' FLOPs and weight bytes a layer summed), as price_moe_layers prices it.
inline MoeLayerReading read_moe_layer(const ModelSpec& m, const Device& d, const ModelOptions& opt,
                                      const MoeTable& table, const Op& first, double flops,
                                      double weights, double peak, double scale) {
  MoeLayerReading r;
  r.first = &first;
  r.flops = flops;
  r.weights = weights;
  const MoeTable::Entry* e = table.find(first.weights, first.compute, first.weight_only);
  // A release that ran this format on another family than the table blends.
  if (opt.moe_release != nullptr &&
      moe_table_key(first.weights, first.compute, first.weight_only) == opt.moe_release->format) {
    const MoeKernelRelease& rule = *opt.moe_release;
    const MoeTable::Entry* own = table.find_family(rule.family, rule.format);
    // The family's kernel measured on another weight type stands in.
    if (own == nullptr && !rule.measured_as.empty())
      own = table.find_family(rule.family, rule.measured_as);
    if (own != nullptr) {
      e = own;
      r.by_release = true;
    }
  }
  if (e == nullptr) return r;
  r.found = true;
  const double bw = d.memory_bandwidth_Bps.value;
  const double tokens = first.gemm_m * first.gemm_groups / static_cast<double>(m.moe->top_k);
  const double hidden = first.gemm_k;
  const double act =
      bytes_for(first.compute, tokens * hidden) + bytes_for(Format::kBf16, tokens * hidden);
  r.ideal = std::max(flops / peak, (weights + act) / bw);
  const double width = first.gemm_n;  // one expert's gate (or up) slice: inter / (tp / ep)
  // The layer's own shape and layout where the source measured it, else the grid.
  const auto inter = m.moe->expert_intermediate;
  MoeTable::ShapeKey key;
  key.hidden = static_cast<std::int64_t>(first.gemm_k);
  key.inter = inter;
  key.experts = m.moe->num_experts;
  key.top_k = m.moe->top_k;
  key.tp =
      width > 0 ? static_cast<std::int64_t>(std::llround(static_cast<double>(inter) / width)) : 0;
  key.ep = static_cast<std::int64_t>(first.moe_ep);
  const MoeTable::Shape* shape = e->shapes.empty() ? nullptr : MoeTable::find_shape(*e, key);
  double token_scale = 1;
  const MoeTable::Shape* other =
      shape ? nullptr : MoeTable::other_model_shape(*e, key, &token_scale);
  r.shape = shape != nullptr;
  r.other = other != nullptr;
  const double measured = shape ? MoeTable::shape_efficiency(*shape, first.moe_tokens)
                          : other
                              ? MoeTable::shape_efficiency(*other, first.moe_tokens * token_scale)
                              : table.efficiency(*e, tokens, weights, width);
  const double eff = std::clamp(measured * scale, 1e-4, 1.0);
  // The grid's layers were routed evenly; serving's prompts crowd onto
  // the router's favourite experts (moe_table.h routing_skew).
  // An expert-parallel shape was measured on the busiest rank of a skewed
  // routing already (moe_table.h).
  const bool skew_measured = (shape || other) && first.moe_ep > 1;
  r.layer_s =
      std::max(e->floor_s, r.ideal / eff * (skew_measured ? 1.0 : table.skew_slowdown(tokens)));
  if (opt.padded_moe && opt.padded_moe_gemm && first.weights == opt.padded_moe->format &&
      !first.weight_only) {
    double rows = 0;
    const double pad =
        padded_moe_seconds(d, *opt.padded_moe, *opt.padded_moe_gemm, first.moe_tokens,
                           static_cast<double>(m.moe->top_k),
                           static_cast<double>(m.moe->num_experts) / std::max(first.moe_ep, 1.0),
                           width, hidden, m.gated_mlp, &rows);
    if (pad > r.layer_s) {
      r.layer_s = pad;
      r.padded = true;
      r.padded_rows = rows;
    }
  }
  return r;
}

inline bool price_moe_layers(const ModelSpec& m, const Device& d, const OpGraph& g,
                             const ModelOptions& opt, std::array<OpTiming, kMaxOps>* timings,
                             OpMarks* marks, std::int32_t* by_shape, MoePadding* padded,
                             MoeReadings* readings) {
  bool priced = false;
  const MoeTable* table = opt.moe_table;
  if (table == nullptr || opt.mode != Mode::kRealistic || !m.moe || m.moe->top_k <= 0)
    return priced;
  const double bw = d.memory_bandwidth_Bps.value;
  const double vector_peak = d.peak(Format::kFp32);
  double scale = 1;
  if (opt.engine && opt.engine->gemm_table_scale.known())
    scale = opt.engine->gemm_table_scale.value;
  MoeLayerReading read;  // the last class's
  for (int i = 0; i < g.size; ++i) {
    const Op& first = g.ops[static_cast<std::size_t>(i)];
    if (!routed_gemm(first) || first.kind == OpKind::kDownProj) continue;
    // One layer class's experts: gate (when gated), up, the activation, down.
    int last = i + 1;
    while (last < g.size) {
      const Op& op = g.ops[static_cast<std::size_t>(last)];
      if (op.kind == OpKind::kDownProj || !op.moe_layer ||
          (op.kind != OpKind::kUpProj && op.kind != OpKind::kActMul))
        break;
      ++last;
    }
    if (last >= g.size || !routed_gemm(g.ops[static_cast<std::size_t>(last)])) continue;
    const int begin = i;
    i = last;
    const double peak = d.peak(first.compute);
    if (!(peak > 0)) continue;

    // The layer's roofline, per instance (moe_table.h).
    double flops = 0, weights = 0, own_sum = 0;
    bool one_format = true;  // per-operator formats may split a layer's experts
    for (int k = begin; k <= last; ++k) {
      const Op& op = g.ops[static_cast<std::size_t>(k)];
      const double op_peak = op.cls == OpClass::kMatmul ? d.peak(op.compute) : vector_peak;
      own_sum += std::max(op.bytes() / bw, op.flops / op_peak);
      if (op.cls != OpClass::kMatmul) continue;
      one_format = one_format && op.weights == first.weights && op.compute == first.compute;
      flops += op.flops;
      weights += op.weight_bytes;
    }
    if (!one_format) continue;
    // A later class doing the same expert work (gpt-oss's sliding-window
    // layers after its full ones) takes the earlier class's reading.
    if (!(read.first != nullptr && same_expert_work(*read.first, first) && read.flops == flops &&
          read.weights == weights)) {
      read = read_moe_layer(m, d, opt, *table, first, flops, weights, peak, scale);
    }
    if (!read.found) continue;
    const double layer_s = read.layer_s, ideal = read.ideal;
    if (read.padded && padded->layers++ == 0) padded->rows = read.padded_rows;
    if (!(own_sum > 0) || !(layer_s > 0)) continue;
    if (read.shape) ++*by_shape;
    if (read.other) ++readings->other_model;
    if (read.by_release) ++readings->by_release;
    const double share = layer_s / own_sum;
    for (int k = begin; k <= last; ++k) {
      const Op& op = g.ops[static_cast<std::size_t>(k)];
      OpTiming& t = (*timings)[static_cast<std::size_t>(k)];
      const double op_peak = op.cls == OpClass::kMatmul ? d.peak(op.compute) : vector_peak;
      t = OpTiming{};
      t.memory_time_s = op.count * op.bytes() / bw * share;
      t.compute_time_s = op.count * op.flops / op_peak * share;
      t.bound = t.memory_time_s >= t.compute_time_s ? Bound::kMemory : Bound::kCompute;
      t.ai = op.bytes() > 0 ? op.flops / op.bytes() : 0;
      t.source = opt.moe_table_source;
      // Matmuls report the fraction of the layer's roofline the whole layer attains.
      t.efficiency = op.cls == OpClass::kMatmul ? ideal / layer_s : 0;
      (*marks)[static_cast<std::size_t>(k)] |= kMoePriced;
      priced = true;
    }
  }
  return priced;
}

}  // namespace roofline::detail
