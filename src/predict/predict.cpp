#include "roofline/predict.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "moe_layers.h"
#include "roofline/deadline.h"
#include "roofline/engine.h"
#include "roofline/error.h"

namespace roofline {
namespace {

FlopsPerSecond checked_peak(const Device& d, Format f) {
  const double p = d.peak(f);
  if (std::isnan(p)) {
    throw Unsupported(d.id + ": no published " + std::string(format_id(f)) +
                      " peak; give one in a --hardware-file to predict with it");
  }
  return p;
}

// What a collective of more GPUs than one NVLink domain adds, per instance:
// the part that crosses the nodes' NICs (kNodeLinkBps each GPU, all in
// parallel), with a latency per step. A hierarchical all-reduce reduces
// within each node, all-reduces its node's 1 / domain share over the nodes
// (2 (nodes - 1) / nodes of it crosses a NIC; NCCL's double binary trees
// take 2 log2(nodes) steps, "Massively Scale Your Deep Learning Training
// with NCCL 2.4", NVIDIA Technical Blog, 2019) and gathers within the node;
// an all-to-all sends (nodes - 1) / nodes of each GPU's buffer to other
// nodes in one step. The within-node part is the table's (its largest GPU
// count) or the NVLink formula's. 16-bit elements.
double across_nodes(const Device& d, const Op& op, double step_latency_s) {
  const double domain = static_cast<double>(d.domain_gpus());
  if (!(op.ranks > domain) || op.message_elements <= 0) return 0;
  const double nodes = std::ceil(op.ranks / domain);
  const double bytes = 2 * op.message_elements;
  if (op.kind == OpKind::kAllToAll)
    return (nodes - 1) / nodes * bytes / kNodeLinkBps + step_latency_s;
  return 2 * (nodes - 1) / nodes * bytes / domain / kNodeLinkBps +
         2 * std::ceil(std::log2(nodes)) * step_latency_s;
}

// The engine's dequantizing GEMM figures for this matmul on `d`, or nullptr:
// block-quantized weights, more rows than the engine's matrix-vector kernels
// take, and figures for the device's architecture.
const EngineProfile::DequantGemm::Figures* dequant_figures(const Device& d, const Op& op,
                                                           const ModelOptions& opt) {
  if (!opt.engine || opt.engine->dequant_gemm.architectures.empty() ||
      !(op.gemm_m > opt.engine->gemv_max_m.value))
    return nullptr;
  const auto& q = opt.engine->dequant_gemm;
  if (std::find(q.formats.begin(), q.formats.end(), op.weights) == q.formats.end()) return nullptr;
  const auto it = q.architectures.find(d.architecture);
  return it == q.architectures.end() ? nullptr : &it->second;
}

// What one prediction has looked up in the GEMM table: the entry of the
// last format triple asked for, and the efficiencies of the shapes seen (a
// fused kernel's GEMMs, and each layer class's attention projections, ask
// for the same ones).
struct TableMemo {
  bool fp8 = false;  // the last entry found is the table's fp8 one
  // The engine reads this pass's fp8 latent cache through a bf16 copy
  // (EngineProfile::latent_cache_cast): its decode attention is the bf16 kernel's.
  bool latent_bf16_copy = false;
  struct Shape {
    double m, nk, efficiency;
    double mk, fp8_scale_s;  // fp8_scale's argument and answer (NaN: not asked)
  };
  // Direct-mapped on the shape's bits: one comparison a lookup. A slot holds
  // a shape when its entry is set (only those are cleared up front).
  std::array<const GemmTable::Entry*, 32> slot_entry{};
  std::array<Shape, 32> shapes;
  double last_m = std::nan(""), last_log2_m = 0;  // the ops of a pass share their rows
  // The last attention call's efficiency: its two ops (scores, values) share it.
  const AttentionTable::Entry* attention_entry = nullptr;
  double attention_key[3] = {}, attention_efficiency = 0;

  double attention(const AttentionTable& table, const AttentionTable::Entry& e, const Op& op) {
    if (attention_entry != &e || attention_key[0] != op.gemm_m || attention_key[1] != op.gemm_n ||
        attention_key[2] != op.gemm_k) {
      attention_entry = &e;
      attention_key[0] = op.gemm_m;
      attention_key[1] = op.gemm_n;
      attention_key[2] = op.gemm_k;
      attention_efficiency = table.efficiency(e, op.gemm_m, op.gemm_n, op.gemm_k);
    }
    return attention_efficiency;
  }

  // The format triples asked for so far (a pass mixes a few: fp8 linears,
  // a bf16 router or indexer) and their entries, so no lookup by key repeats.
  struct Triple {
    Format weights, compute;
    bool weight_only, fp8;
    const GemmTable::Entry* entry;
  };
  std::array<Triple, 4> triples;
  int triple_count = 0, triple_last = 0;

  const GemmTable::Entry* find(const GemmTable& table, const Op& op) {
    const auto same = [&op](const Triple& t) {
      return t.weights == op.weights && t.compute == op.compute && t.weight_only == op.weight_only;
    };
    if (triple_count > 0 && same(triples[static_cast<std::size_t>(triple_last)])) {
      fp8 = triples[static_cast<std::size_t>(triple_last)].fp8;
      return triples[static_cast<std::size_t>(triple_last)].entry;
    }
    for (int i = 0; i < triple_count; ++i) {
      if (same(triples[static_cast<std::size_t>(i)])) {
        triple_last = i;
        fp8 = triples[static_cast<std::size_t>(i)].fp8;
        return triples[static_cast<std::size_t>(i)].entry;
      }
    }
    const std::string_view key = gemm_table_key(op.weights, op.compute, op.weight_only);
    const Triple t{op.weights, op.compute, op.weight_only, key == "fp8", table.find(key)};
    // Past four triples the oldest slot is reused (no pass has been seen to need more).
    triple_last = triple_count < static_cast<int>(triples.size()) ? triple_count++ : 0;
    triples[static_cast<std::size_t>(triple_last)] = t;
    fp8 = t.fp8;
    return t.entry;
  }

  Shape& shape(const GemmTable& table, const GemmTable::Entry& e, double m, double nk) {
    const std::uint64_t bits =
        std::bit_cast<std::uint64_t>(m) * 0x9E3779B97F4A7C15ULL ^ std::bit_cast<std::uint64_t>(nk);
    const auto slot = static_cast<std::size_t>((bits * 0xBF58476D1CE4E5B9ULL) >> 59);
    Shape& x = shapes[slot];
    if (slot_entry[slot] != &e || x.m != m || x.nk != nk) {
      slot_entry[slot] = &e;
      if (!(m == last_m)) {
        last_m = m;
        last_log2_m = std::log2(std::max(m, 1.0));
      }
      x = {m, nk, table.efficiency_log2(e, last_log2_m, std::log2(std::max(nk, 1.0))), std::nan(""),
           0};
    }
    return x;
  }
  static double fp8_scale(const GemmTable& table, Shape& x, double mk) {
    if (!(x.mk == mk)) {
      x.mk = mk;
      x.fp8_scale_s = table.fp8_dynamic_scale(mk);
    }
    return x.fp8_scale_s;
  }
};

// A matmul the engine's measured GEMM table prices: its efficiency against
// the datasheet roofline at this shape, on both sides of the roofline alike
// (the table's latencies include dequantization and activation scaling).
// False when the table has no entry for the op's formats. Out of line: the
// common path (no engine) stays small.
[[gnu::noinline]] bool table_timing(const Device& d, const Op& op, const ModelOptions& opt,
                                    double kernel_n, double rate, bool prequantized,
                                    TableMemo* memo, OpTiming* out) {
  const GemmTable::Entry* e = memo->find(*opt.gemm_table, op);
  if (e == nullptr) return false;
  OpTiming& t = *out;
  TableMemo::Shape& shape =
      memo->shape(*opt.gemm_table, *e, op.gemm_m, kernel_n * op.gemm_k * op.gemm_groups);
  double eff = shape.efficiency;
  if (opt.engine && opt.engine->gemm_table_scale.known()) eff *= opt.engine->gemm_table_scale.value;
  eff = std::clamp(eff, 1e-4, 1.0);
  const double memory_roofline_s = op.count * op.bytes() / d.memory_bandwidth_Bps.value;
  const double compute_roofline_s = op.count * op.flops / rate;
  const double slowdown = 1 / eff;  // one division, not two
  t.memory_time_s = memory_roofline_s * slowdown;
  t.compute_time_s = compute_roofline_s * slowdown;
  // No call is faster than the fastest the engine was measured at (a shape
  // below the grid would otherwise shrink with its bytes).
  const double share = kernel_n > 0 ? std::min(1.0, op.gemm_n / kernel_n) : 1.0;
  const double floor = op.count * e->floor_s * share;
  if (std::max(t.memory_time_s, t.compute_time_s) < floor) {
    (t.memory_time_s >= t.compute_time_s ? t.memory_time_s : t.compute_time_s) = floor;
  }
  if (memo->fp8) {
    // The fp8 rows include computing a dynamic activation scale; a per-tensor
    // fp8 checkpoint carries static input scales and skips it (AIConfigurator
    // prices its fp8_static mode so). Never below the roofline itself.
    // An input the kernel before wrote in fp8 skips the static quantize
    // kernel the rows still hold too.
    double& longer = t.memory_time_s >= t.compute_time_s ? t.memory_time_s : t.compute_time_s;
    const double mk = op.gemm_m * op.gemm_k * op.gemm_groups;
    const double skipped = TableMemo::fp8_scale(*opt.gemm_table, shape, mk) +
                           (prequantized ? opt.gemm_table->fp8_static_quantize(mk) : 0);
    longer = std::max(std::max(memory_roofline_s, compute_roofline_s),
                      longer - op.count * share * skipped);
  }
  t.bound = t.memory_time_s >= t.compute_time_s ? Bound::kMemory : Bound::kCompute;
  t.ai = op.bytes() > 0 ? op.flops / op.bytes() : 0;
  t.source = e->borrowed_from.empty() ? opt.gemm_table_source : EfficiencySource::kDerivedTable;
  t.efficiency = eff;
  return true;
}

// The engine's cuBLAS figure for this matmul's architecture, or nullptr.
const EngineFigure* cublas_architecture_figure(const Device& d, const ModelOptions& opt) {
  const auto& c = opt.engine->cublas_gemm.compute;
  const auto it = c.find(d.architecture);
  return it == c.end() ? nullptr : &it->second;
}

// A block-quantized matmul of a build that predates the engine's quantized
// GEMM kernels for its rows (DequantGemm::cublas_before): a kernel writes the
// weights out in F16 (reading them quantized), then cuBLAS multiplies as for
// F16 weights. The pass and the GEMM run one after the other: both sides
// carry the pass.
bool dequantize_then_cublas(const Device& d, const Op& op, const ModelOptions& opt, OpTiming* out) {
  if (!opt.engine->dequant_gemm.dequantizes_for_cublas(opt.engine_build, op.gemm_m, op.weights))
    return false;
  const EngineFigure* f = cublas_architecture_figure(d, opt);
  const double rate = opt.engine->cublas_gemm.fp16_accumulate
                          ? d.peak_fp16_accumulate(Format::kFp16)
                          : checked_peak(d, Format::kFp16);
  if (f == nullptr || !(rate > 0)) return false;
  const double bw = d.memory_bandwidth_Bps.value * d.bandwidth_fraction.value;
  const double f16_weights = bytes_for(Format::kFp16, op.gemm_n * op.gemm_k * op.gemm_groups);
  const double pass = op.count * (op.weight_bytes + f16_weights) / bw;
  const double gemm_memory = op.count * (f16_weights + op.act_bytes) / bw;
  const double gemm_compute = op.count * op.flops / (rate * f->value);
  OpTiming& t = *out;
  t.memory_time_s = pass + gemm_memory;
  t.compute_time_s = pass + gemm_compute;
  t.bound = gemm_memory >= gemm_compute ? Bound::kMemory : Bound::kCompute;
  t.ai = op.bytes() > 0 ? op.flops / op.bytes() : 0;
  t.source = EfficiencySource::kEngine;
  t.efficiency = f->value;
  return true;
}

// A matmul the engine's dequantizing GEMM figures price (dequantize, then
// multiply: the two sides add, the longer carrying the sum). False when no
// figures apply (dequant_figures).
[[gnu::noinline]] bool dequant_timing(const Device& d, const Op& op, const ModelOptions& opt,
                                      OpTiming* out) {
  // An older build's path needs no MMQ figures (Hopper has none).
  if (dequantize_then_cublas(d, op, opt, out)) return true;
  const auto* q = dequant_figures(d, op, opt);
  if (q == nullptr) return false;
  OpTiming& t = *out;
  const double peak = checked_peak(d, opt.engine->dequant_gemm.peak);
  const double stream = op.count * q->stream.value * op.bytes() / d.memory_bandwidth_Bps.value;
  const double math = op.count * op.flops / (peak * q->compute.value);
  t.memory_time_s = stream >= math ? stream + math : stream;
  t.compute_time_s = stream >= math ? math : stream + math;
  t.bound = stream >= math ? Bound::kMemory : Bound::kCompute;
  t.ai = op.bytes() > 0 ? op.flops / op.bytes() : 0;
  t.source = EfficiencySource::kEngine;
  t.efficiency = q->compute.value;
  return true;
}

// The engine's cuBLAS figure for this matmul on `d`, or nullptr: 16-bit
// weights of its formats (the engine converts the activations to them), more
// rows than its matrix-vector kernels take, and a figure for the device's
// architecture.
const EngineFigure* cublas_figure(const Device& d, const Op& op, const ModelOptions& opt) {
  if (!opt.engine || opt.engine->cublas_gemm.compute.empty() || op.weight_only ||
      !(op.gemm_m > opt.engine->gemv_max_m.value))
    return nullptr;
  const auto& c = opt.engine->cublas_gemm;
  if (std::find(c.formats.begin(), c.formats.end(), op.weights) == c.formats.end()) return nullptr;
  return cublas_architecture_figure(d, opt);
}

// A matmul the engine's cuBLAS figure prices: the math at its share of the
// FP16-accumulate rate (or the format's peak), the bytes at the device's
// achievable bandwidth, the longer of the two. False when no figure applies.
[[gnu::noinline]] bool cublas_timing(const Device& d, const Op& op, const ModelOptions& opt,
                                     OpTiming* out) {
  const EngineFigure* f = cublas_figure(d, op, opt);
  if (f == nullptr) return false;
  const double peak = opt.engine->cublas_gemm.fp16_accumulate ? d.peak_fp16_accumulate(op.weights)
                                                              : checked_peak(d, op.weights);
  if (!(peak > 0)) return false;
  OpTiming& t = *out;
  t.memory_time_s =
      op.count * op.bytes() / (d.memory_bandwidth_Bps.value * d.bandwidth_fraction.value);
  t.compute_time_s = op.count * op.flops / (peak * f->value);
  t.bound = t.memory_time_s >= t.compute_time_s ? Bound::kMemory : Bound::kCompute;
  t.ai = op.bytes() > 0 ? op.flops / op.bytes() : 0;
  t.source = EfficiencySource::kEngine;
  t.efficiency = f->value;
  return true;
}

// An attention the engine's attention table prices (its whole call: scores,
// softmax, values): the op's part of the call's roofline at the datasheet
// bandwidth and bf16 peak over the table's efficiency, and its share of the
// call's floor. The roofline is the table's (attention_table.h): a decode
// step's op reads its bytes; a prompt's reads Q, K, V and writes O once in
// 16 bits, 4 x streams x span x (group + 1) bytes for the call (the graph's
// bytes count FlashAttention's K/V re-reads, which the table's efficiency
// already holds); after cached tokens, Q and O over the prompt's own share of
// the span. False when the table has no entry for it.
[[gnu::noinline]] bool attention_table_timing(const Device& d, const Op& op,
                                              const ModelOptions& opt, TableMemo* memo,
                                              OpTiming* out) {
  if (op.gemm_m <= 0 || opt.attention_table == nullptr || op.engine_kernel) return false;
  const AttentionTable& table = *opt.attention_table;
  // An fp8 latent cache the engine's kernel cannot read: the kernel attends
  // over the layer's bf16 copy (the cast itself is priced per step, predict()).
  const bool bf16_copy = memo->latent_bf16_copy && op.latent_attention && !op.prompt_attention;
  const AttentionTable::Entry* e =
      table.find(op.prompt_attention, op.latent_attention, bf16_copy ? Format::kBf16 : op.weights);
  if (e == nullptr) return false;
  const double eff = memo->attention(table, *e, op);
  OpTiming& t = *out;
  // A prompt after cached tokens reads and writes Q and O over its own tokens only.
  const double bytes = op.prompt_attention ? 4 * op.gemm_m * op.gemm_k *
                                                 (op.gemm_n * op.query_share + 1) * op.gemm_groups
                                           : op.bytes() + (bf16_copy ? op.kv_bytes : 0);
  t.memory_time_s = op.count * bytes / (d.memory_bandwidth_Bps.value * eff);
  t.compute_time_s = op.count * op.flops / (checked_peak(d, Format::kBf16) * eff);
  t.bound = t.memory_time_s >= t.compute_time_s ? Bound::kMemory : Bound::kCompute;
  double& longer = t.bound == Bound::kMemory ? t.memory_time_s : t.compute_time_s;
  longer = std::max(longer, op.count * e->floor_s * op.gemm_groups);
  t.ai = op.bytes() > 0 ? op.flops / op.bytes() : 0;
  t.source = opt.attention_table_source;
  t.efficiency = eff;
  return true;
}

// A Gated DeltaNet kernel (the delta rule or the short convolution, for
// prompts or decode steps) the engine's attention table prices: the op's own
// roofline (its bytes at the datasheet bandwidth, its FLOPs at its compute
// format's peak) over the table's efficiency at its shape, and the call's
// floor. False when the table has no entry for it.
[[gnu::noinline]] bool linear_attention_table_timing(const Device& d, const Op& op,
                                                     const ModelOptions& opt, OpTiming* out) {
  if (op.gemm_m <= 0 || opt.attention_table == nullptr) return false;
  const AttentionTable& table = *opt.attention_table;
  const AttentionTable::Entry* e =
      table.find_linear(op.prompt_attention, op.kind == OpKind::kShortConv);
  if (e == nullptr) return false;
  const double eff = table.efficiency(*e, op.gemm_m, op.gemm_n, op.gemm_k);
  const double peak =
      op.compute == Format::kFp32 ? d.peak(Format::kFp32) : checked_peak(d, op.compute);
  OpTiming& t = *out;
  t.memory_time_s = op.count * op.bytes() / (d.memory_bandwidth_Bps.value * eff);
  t.compute_time_s = op.count * op.flops / (peak * eff);
  t.bound = t.memory_time_s >= t.compute_time_s ? Bound::kMemory : Bound::kCompute;
  double& longer = t.bound == Bound::kMemory ? t.memory_time_s : t.compute_time_s;
  longer = std::max(longer, op.count * e->floor_s);
  t.ai = op.bytes() > 0 ? op.flops / op.bytes() : 0;
  t.source = opt.attention_table_source;
  t.efficiency = eff;
  return true;
}

// One op on its own (no fusion): memory and compute time of all instances.
// `kernel_n`: for a matmul in a fused kernel
// (QKV, gate+up), the output width of the whole kernel, which sets the
// efficiency a GEMM table gives it; the op takes its width's share of the
// kernel's one latency floor. Inlined into predict()'s kernel loop, which
// calls it for every op (the call itself cost 2% of a prediction).
[[gnu::always_inline]] inline void evaluate_op(const Device& d, const Op& op,
                                               const ModelOptions& opt, double kernel_n,
                                               bool fp8_prequantized, TableMemo* memo,
                                               OpTiming& t) {
  const bool realistic = opt.mode == Mode::kRealistic;
  double bw = d.memory_bandwidth_Bps.value * (realistic ? d.bandwidth_fraction.value : 1.0);
  t = OpTiming{};
  double compute = 0;
  switch (op.cls) {
    case OpClass::kMatmul: {
      double rate = checked_peak(d, op.compute);
      t.source = realistic ? EfficiencySource::kDevice : EfficiencySource::kIdeal;
      if (realistic && opt.gemm_table &&
          table_timing(d, op, opt, kernel_n, rate, fp8_prequantized, memo, &t))
        return;
      if (realistic) {
        rate *= d.matmul_fraction_for(op.compute).value * op.wave_efficiency;
        // The engine's own matrix-vector kernel: bytes in flight per SM bound it.
        if (opt.engine && opt.engine->gemv_bandwidth_per_sm_Bps.known() &&
            op.gemm_m <= opt.engine->gemv_max_m.value && d.sm_count.known() &&
            d.sm_count.value > 0) {
          bw = std::min(bw, d.sm_count.value * opt.engine->gemv_bandwidth_per_sm_Bps.value);
        }
        // The engine's own 16-bit GEMV, and the weight-only ones relative to it.
        if (opt.engine && !opt.engine->gemv_stream.empty() &&
            op.gemm_m <= opt.engine->gemv_max_m.value) {
          const auto it = opt.engine->gemv_stream.find(d.architecture);
          if (it != opt.engine->gemv_stream.end()) bw *= it->second.value;
        }
        if (opt.engine && op.weight_only) {
          const auto it = opt.engine->weight_only_stream.find(op.weights);
          if (it != opt.engine->weight_only_stream.end()) bw *= it->second.value;
        }
        if (opt.engine && (dequant_timing(d, op, opt, &t) || cublas_timing(d, op, opt, &t))) return;
      }
      compute = op.flops / rate + op.vector_ops / d.peak(Format::kFp32);
      break;
    }
    case OpClass::kAttention: {
      if (realistic &&
          (op.kind == OpKind::kDeltaRule ? linear_attention_table_timing(d, op, opt, &t)
                                         : attention_table_timing(d, op, opt, memo, &t)))
        return;
      double rate = checked_peak(d, op.compute);
      if (realistic) {
        const double eff = std::isnan(op.kernel_efficiency) || op.kernel_efficiency <= 0
                               ? d.matmul_fraction_for(op.compute).value
                               : op.kernel_efficiency;
        rate *= eff;
        if (op.engine_kernel) {
          t.source = EfficiencySource::kEngine;
          t.efficiency = eff;
        }
        // Too few blocks to occupy every SM leave bandwidth unused.
        if (op.parallel_blocks > 0) bw *= std::min(1.0, op.parallel_blocks / d.sm_count.value);
      }
      compute = op.flops / rate;
      break;
    }
    case OpClass::kElementwise:
      if (realistic && op.kind == OpKind::kShortConv &&
          linear_attention_table_timing(d, op, opt, &t))
        return;
      [[fallthrough]];
    case OpClass::kMemory:
      compute = op.flops / d.peak(Format::kFp32);
      break;
    case OpClass::kCommunication: {
      t.bound = Bound::kMemory;
      const double across = across_nodes(d, op, realistic ? opt.collective_latency_s : 0);
      // The engine's measured collective at this message size and GPU count.
      const CommTable* table = realistic && op.ranks > 1 ? opt.comm_table : nullptr;
      const auto gpus = static_cast<std::int64_t>(op.ranks);
      if (table && op.kind == OpKind::kAllToAll && !table->alltoall_s.empty()) {
        t.source = EfficiencySource::kMeasuredTable;
        t.time_s = op.count * (table->alltoall_latency(gpus, op.message_elements) + across);
      } else if (table && op.kind == OpKind::kAllReduce && !table->latency_s.empty()) {
        t.source = EfficiencySource::kMeasuredTable;
        t.time_s = op.count * (table->latency(gpus, op.message_elements) + across);
      } else {
        // The interconnect figure is bidirectional; a ring uses one direction.
        const double link =
            d.interconnect_bandwidth_Bps.known() ? d.interconnect_bandwidth_Bps.value / 2 : 0;
        if (link <= 0) throw Unsupported(d.id + ": interconnect bandwidth is not published");
        t.time_s =
            op.count * (op.bytes() / link + (realistic ? opt.collective_latency_s : 0) + across);
      }
      t.memory_time_s = t.time_s;
      return;
    }
  }
  t.memory_time_s = op.count * op.bytes() / bw;
  t.compute_time_s = op.count * compute;
  t.bound = t.memory_time_s >= t.compute_time_s ? Bound::kMemory : Bound::kCompute;
  t.ai = op.bytes() > 0 ? op.flops / op.bytes() : 0;
  return;
}

double max_ctx(const Scenario& s) {
  return s.phase == Phase::kDecode ? static_cast<double>(s.seq_len) + 1
                                   : static_cast<double>(s.cached + s.seq_len);
}

}  // namespace

Bytes weight_memory(const ModelSpec& m, const Scenario& s) {
  const double tp = static_cast<double>(s.tp);
  const double pp = static_cast<double>(s.pp);
  const Format w = s.precision.weights.value_or(m.native_weights);
  const Format e = s.precision.experts.value_or(s.precision.weights.value_or(m.native_experts));
  if (m.checkpoint && !s.precision.weights && !s.precision.experts) {
    const auto& c = *m.checkpoint;
    return ((c.total - c.norms) / tp + c.norms) / pp;
  }
  const ParamCounts p = count_parameters(m);
  // An operator's own format: the plan's per-operator one, else the one its
  // quantized release keeps it in (unset: the plan's weights).
  const QuantizedRelease* release = followed_release(m, s.precision);
  const auto own_format = [&](OpKind k) -> std::optional<Format> {
    const auto& o = s.precision.ops[static_cast<std::size_t>(k)];
    if (o.weights) return o.weights;
    if (release && release_keeps(*release, k)) return release->kept_format;
    return std::nullopt;
  };
  // A plan may keep the LM head in another format (strategies keep it in bf16).
  const Format lm = own_format(OpKind::kLmHead).value_or(w);
  double split = bytes_for(w, p.attention + p.dense_mlp + p.shared_experts) +
                 bytes_for(lm, p.lm_head) + bytes_for(e, p.routed_experts) +
                 bytes_for(m.native_weights, p.embedding);
  // The sparse-attention indexer is held whole on every rank.
  const double indexer = m.indexer_parameters();
  const Format indexer_format = own_format(OpKind::kIndexerProj).value_or(w);
  double attention = bytes_for(w, p.attention - indexer);
  if (s.precision.has_op_overrides || release != nullptr) {
    // Per-operator formats (a plan with the FFN in another format, a
    // release's bf16 attention): the kinds' parameters move from the plan's
    // formats to theirs, as build_ops moves their bytes. The LM head is
    // counted above, the indexer below.
    const LinearParameters lp = linear_parameters(m);
    for (int k = 0; k < kOpKindCount; ++k) {
      const auto kind = static_cast<OpKind>(k);
      const std::optional<Format> f = own_format(kind);
      if (!f || kind == OpKind::kLmHead) continue;
      const double dense = lp.dense[static_cast<std::size_t>(k)];
      const double routed = lp.routed[static_cast<std::size_t>(k)];
      split +=
          bytes_for(*f, dense) - bytes_for(w, dense) + bytes_for(*f, routed) - bytes_for(e, routed);
      if (is_attention_projection(kind) && kind != OpKind::kIndexerProj)
        attention += bytes_for(*f, dense) - bytes_for(w, dense);
    }
  }
  split -= bytes_for(indexer_format, indexer);
  const double replicated =
      bytes_for(Format::kBf16, p.norms + p.router) + bytes_for(indexer_format, indexer);
  // Attention data parallelism: attention weights split over tp / attention_dp.
  const double attention_copies = static_cast<double>(s.attention_dp) - 1;
  return (split / tp + attention_copies * attention / tp + replicated) / pp;
}

namespace {

// Activations of one layer at a time, plus logits, for one pass of `s`.
double activation_bytes(const ModelSpec& m, const Device& d, const Scenario& s) {
  const double tp = static_cast<double>(s.tp);
  const double B = static_cast<double>(s.batch);
  const double ctx = max_ctx(s);
  // Tokens a sequence in this pass (a speculative step verifies draft_tokens + 1).
  const double T = s.phase == Phase::kDecode ? 1 + static_cast<double>(s.draft_tokens)
                                             : static_cast<double>(s.seq_len);
  const double N = B * T;
  const double H = static_cast<double>(m.hidden);
  double widest = std::max(2 * static_cast<double>(m.intermediate) / tp,
                           (static_cast<double>(m.heads) + 2 * static_cast<double>(m.kv_heads)) *
                               static_cast<double>(m.head_dim) / tp);
  if (m.moe) {
    widest =
        std::max(widest, 2 * static_cast<double>(m.moe->top_k * m.moe->expert_intermediate) / tp);
  }
  // Held in 16 bits where the GEMMs' inputs are narrower (workload.cpp's `stored`).
  const Format held = held_activation_format(s.precision.act);
  double act = bytes_for(held, N * (2 * H + widest));
  const AttentionKernel kernel =
      s.attention ? *s.attention : default_attention_kernel(d, s.phase == Phase::kDecode);
  if (kernel == AttentionKernel::kNaive) {
    act += bytes_for(held, B * static_cast<double>(m.heads) / tp * T * ctx);
  }
  // Logits: the last position of each sequence, every verified one in a speculative step.
  const double logit_rows = s.phase == Phase::kDecode ? N : B;
  act += bytes_for(Format::kFp32, logit_rows * static_cast<double>(m.vocab) / tp);
  return act;
}

}  // namespace

Bytes profile_pass_activation_bytes(const ModelSpec& m, const Device& d, const Scenario& s,
                                    std::int64_t tokens, std::int64_t sampler_rows,
                                    double sampler_bytes_per_logit) {
  Scenario pass = s;
  pass.phase = Phase::kPrefill;
  pass.batch = 1;
  pass.seq_len = std::max<std::int64_t>(tokens, 1);
  pass.draft_tokens = 0;
  pass.cached = 0;  // the engine's pass is a prompt of its own, from an empty cache
  clear_prompt_share(pass);
  const double rows = static_cast<double>(std::max<std::int64_t>(sampler_rows, 1));
  const double forward = activation_bytes(m, d, pass);
  if (sampler_bytes_per_logit > 0) {
    // The sampler's logits are whole on the rank that sizes the cache (rank
    // 0 gathers them; every rank takes the fewest blocks any has); the
    // forward's hidden states (16-bit, whole on every rank) stay alive through it.
    const double sampler =
        rows * static_cast<double>(m.vocab) * sampler_bytes_per_logit +
        bytes_for(Format::kBf16, static_cast<double>(pass.seq_len) * static_cast<double>(m.hidden));
    return std::max(forward, sampler);
  }
  // One row of logits is the forward's; the sampler holds one a sequence.
  return forward + bytes_for(Format::kFp32,
                             (rows - 1) * static_cast<double>(m.vocab) / static_cast<double>(s.tp));
}

Bytes kv_sizing_activation_bytes(const EngineScheduler& rule, const ModelSpec& m, const Device& d,
                                 const Scenario& s, Bytes at_hand, std::int64_t budget,
                                 std::int64_t running, std::string_view version) {
  if (!rule.kv_profile_pass()) return at_hand;
  return std::max(at_hand, profile_pass_activation_bytes(m, d, s, budget,
                                                         rule.kv_profile_pass_rows(budget, running),
                                                         rule.kv_profile_sampler_bytes(version)));
}

MemoryEstimate estimate_memory(const ModelSpec& m, const Device& d, const Scenario& s) {
  MemoryEstimate mem;
  const double tp = static_cast<double>(s.tp);
  const double pp = static_cast<double>(s.pp);
  const double B = static_cast<double>(s.batch);
  const double ctx = max_ctx(s);
  mem.weights_bytes = weight_memory(m, s);

  // KV cache: per layer, the attended tokens (capped by a sliding window).
  // With attention data parallelism a rank holds its group's sequences.
  const double dp = static_cast<double>(s.attention_dp);
  const double attention_tp = tp / dp;
  double per_token_layer = static_cast<double>(m.kv_elements_per_token_per_layer()) / dp;
  if (m.attention == AttentionKind::kGqa) {
    per_token_layer = 2 * std::max(1.0, static_cast<double>(m.kv_heads) / attention_tp) *
                      static_cast<double>(m.head_dim) / dp;
  }
  const double sliding = static_cast<double>(m.sliding_layer_count());
  const double full = static_cast<double>(m.full_attention_layer_count());
  const double window_ctx =
      m.sliding_window > 0 ? std::min(ctx, static_cast<double>(m.sliding_window)) : ctx;
  const double kv_elems = B * per_token_layer * (full * ctx + sliding * window_ctx) / pp;
  mem.kv_cache_bytes = bytes_for(s.precision.kv, kv_elems);
  if (m.sparse_attention && m.attention == AttentionKind::kMla && s.precision.kv == Format::kFp8) {
    // An fp8 latent cache of sparse attention is FlashMLA's "FP8 with scale"
    // layout (its README; vLLM's fp8_ds_mla; what SGLang's flashmla_kv reads): the NoPE
    // part in fp8 with an fp32 scale every 128 values, the RoPE part in bf16.
    const double nope = static_cast<double>(m.mla.kv_lora_rank);
    const double rope = static_cast<double>(m.mla.qk_rope_head_dim);
    mem.kv_cache_bytes = kv_elems / (nope + rope) * (nope + std::ceil(nope / 128) * 4 + 2 * rope);
  }
  if (m.sparse_attention) {
    // The indexer's cache: an fp8 key and its fp32 scale a token and layer,
    // whole on every rank.
    mem.kv_cache_bytes += B / dp * static_cast<double>(m.layers) / pp * ctx *
                          (static_cast<double>(m.sparse_attention->index_head_dim) + 4);
  }
  // Linear-attention layers hold a fixed state a sequence, whatever its
  // length: the delta rule's matrices and the convolution's window, heads
  // split over the attention ranks. Counted with the KV cache (engines keep
  // both in one pool of sequence slots).
  mem.kv_cache_bytes += B / dp * m.linear_state_bytes() / attention_tp / pp;
  if (s.draft_tokens > 0) {
    // The draft head: one more layer of the model's last kind, with its own
    // KV cache (a full-attention layer's), at the model's mean bytes a parameter.
    const ParamCounts pc = count_parameters(m);
    const double layers = static_cast<double>(m.layers);
    double layer = pc.attention / layers + pc.norms / layers;
    const double moe_layers = static_cast<double>(m.moe_layer_count());
    if (m.moe && m.is_moe_layer(m.layers - 1) && moe_layers > 0) {
      layer += (pc.routed_experts + pc.shared_experts + pc.router) / moe_layers;
    } else if (layers > moe_layers) {
      layer += pc.dense_mlp / (layers - moe_layers);
    }
    const QuantizedRelease* release = followed_release(m, s.precision);
    if (release && release->draft_head_kept) {
      // The release keeps its MTP layer whole (NVIDIA's keep it in bf16).
      mem.weights_bytes += bytes_for(release->kept_format, layer) / tp / pp;
    } else if (pc.total > 0) {
      mem.weights_bytes *= 1 + layer / pc.total;
    }
    mem.kv_cache_bytes += bytes_for(s.precision.kv, B * per_token_layer * ctx);
  }

  mem.activation_bytes = activation_bytes(m, d, s);
  mem.total_bytes = mem.weights_bytes + mem.kv_cache_bytes + mem.activation_bytes;
  mem.capacity_bytes = d.memory_capacity_bytes.value;
  mem.fits = mem.total_bytes <= mem.capacity_bytes;
  return mem;
}

namespace {

// `options` with the engine's GEMM, MoE and all-reduce tables for `d` when the caller named the
// engine without resolving it (a sweep spans devices): memoized per thread,
// since a sweep asks for the same pair row after row.
const ModelOptions& resolved(const ModelOptions& options, const Device& d, ModelOptions* scratch) {
  // A table the caller gave (a kernel file, leave-one-out) is kept; the other
  // is the engine's.
  if (options.engine == nullptr || options.mode != Mode::kRealistic ||
      (options.gemm_table != nullptr && options.moe_table != nullptr &&
       options.comm_table != nullptr && options.attention_table != nullptr)) {
    return options;
  }
  struct Memo {
    const EngineProfile* engine = nullptr;
    std::string device;
    std::string_view moe_kernel;
    ModelOptions resolved;
  };
  thread_local Memo memo;
  if (memo.engine != options.engine || memo.device != d.id ||
      memo.moe_kernel != options.moe_kernel) {
    memo.engine = options.engine;
    memo.device = d.id;
    memo.moe_kernel = options.moe_kernel;
    ModelOptions base;
    base.moe_kernel = options.moe_kernel;
    memo.resolved = with_engine(base, d, options.engine);
  }
  *scratch = options;
  scratch->engine = memo.resolved.engine;
  if (options.gemm_table == nullptr) {
    scratch->gemm_table = memo.resolved.gemm_table;
    scratch->gemm_table_source = memo.resolved.gemm_table_source;
  }
  if (options.moe_table == nullptr) {
    scratch->moe_table = memo.resolved.moe_table;
    scratch->moe_table_source = memo.resolved.moe_table_source;
  }
  // A kernel family every release runs (no release named one).
  if (options.moe_release == nullptr && options.moe_kernel.empty())
    scratch->moe_release = memo.resolved.moe_release;
  if (options.comm_table == nullptr) scratch->comm_table = memo.resolved.comm_table;
  if (options.attention_table == nullptr) {
    scratch->attention_table = memo.resolved.attention_table;
    scratch->attention_table_source = memo.resolved.attention_table_source;
  }
  return *scratch;
}

// The graph fuses Q/K/V (MLA: q_a and kv_a) and gate/up into one GEMM each; an
// engine that runs them as separate GEMMs (llama.cpp's GGUF tensors, gpt-fast's
// w1/w3) launches each and reads its input again.
void apply_engine_fusions(const EngineProfile& e, OpGraph* g) {
  auto fuses = [&](std::string_view what) {
    return std::find(e.fusions.begin(), e.fusions.end(), what) != e.fusions.end();
  };
  const bool qkv = fuses("qkv"), gate_up = fuses("gate_up");
  if (qkv && gate_up) return;  // the graph's own fusions
  for (int i = 0; i < g->size; ++i) {
    Op& op = g->ops[static_cast<std::size_t>(i)];
    if (op.cls != OpClass::kMatmul || op.launches != 0) continue;
    const bool split =
        ((op.kind == OpKind::kKProj || op.kind == OpKind::kVProj || op.kind == OpKind::kKvAProj) &&
         !qkv) ||
        (op.kind == OpKind::kUpProj && !gate_up);
    if (!split) continue;
    op.launches = 1;
    op.act_bytes += bytes_for(op.compute, op.gemm_m * op.gemm_k);
  }
}

// Vector operations per element of a quantized copy (q8_1): the absolute
// value and the block's max, the scale, the rounding (the block's sum, which
// q8_1 also stores, rides along) = 4. A plain conversion: 1.
constexpr double kQuantizeOps = 4;
constexpr double kConvertOps = 1;

// The engine's copies around its GEMMs (EngineProfile::gemm_copies), as ops
// of their own next to each GEMM that makes them: a quantized GEMM's input
// quantized (quantize_input), a cuBLAS GEMM's input converted to F16
// (convert_input) and its F16 output converted back (convert_output); the
// GEMM then reads the copy and, through cuBLAS, writes F16. After the
// fusions pass (every GEMM of such an engine its own kernel). Routers stay
// out: ggml keeps them in F32, which no copy serves.
void apply_gemm_copies(const EngineProfile& e, const ModelOptions& opt, Format stored, OpGraph* g) {
  const EngineProfile::GemmCopies& c = *e.gemm_copies;
  const auto& quantized = c.quantized_formats;
  const auto& cublas = c.cublas_formats;
  auto has = [](const std::vector<Format>& v, Format f) {
    return std::find(v.begin(), v.end(), f) != v.end();
  };
  auto insert_at = [g](int at, const Op& op) {
    if (g->size >= kMaxOps) throw InvalidArgument("model has too many operator groups");
    std::copy_backward(g->ops.begin() + at, g->ops.begin() + g->size, g->ops.begin() + g->size + 1);
    g->ops[static_cast<std::size_t>(at)] = op;
    ++g->size;
  };
  // A copy kernel over `elements`, reading `read` and writing `write` bytes,
  // in the GEMM's layer.
  auto copy_of = [](const Op& gemm, OpKind kind, double elements, double ops, double read,
                    double write) {
    Op op = gemm;  // its count and layer flags
    clear_work(op, kind, OpClass::kElementwise, Format::kFp32);
    op.flops = elements * ops;
    op.act_bytes = read + write;
    return op;
  };
  for (int i = 0; i < g->size; ++i) {
    Op& gemm = g->ops[static_cast<std::size_t>(i)];
    if (gemm.cls != OpClass::kMatmul || gemm.kind == OpKind::kRouter || gemm.launches == 0)
      continue;
    const bool legacy =
        e.dequant_gemm.dequantizes_for_cublas(opt.engine_build, gemm.gemm_m, gemm.weights);
    const bool to_f16 = legacy || (has(cublas, gemm.weights) && gemm.gemm_m > e.gemv_max_m.value);
    const bool to_q8 = !legacy && has(quantized, gemm.weights);
    if (!to_f16 && !to_q8) continue;
    const double in = gemm.gemm_m * gemm.gemm_groups * gemm.gemm_k;
    const double out = gemm.gemm_m * gemm.gemm_groups * gemm.gemm_n;
    const double out_bytes = bytes_for(stored, out);
    const Op before = gemm;
    if (to_q8) {
      // An MoE layer's gate and up quantize each token once for all its
      // experts (ggml's mul_mat_id); every other GEMM its own rows.
      const bool shared_input = gemm.moe_layer && gemm.moe_tokens > 0 &&
                                (gemm.kind == OpKind::kGateProj || gemm.kind == OpKind::kUpProj);
      const double quantized_elements = shared_input ? gemm.moe_tokens * gemm.gemm_k : in;
      const double bits = c.quantized_input_bits.value;
      gemm.act_bytes = bytes_for_bits(bits, in) + out_bytes;
      insert_at(i, copy_of(before, OpKind::kQuantizeInput, quantized_elements, kQuantizeOps,
                           bytes_for(stored, quantized_elements),
                           bytes_for_bits(bits, quantized_elements)));
      ++i;  // the GEMM
    } else {
      gemm.act_bytes = bytes_for(Format::kFp16, in) + bytes_for(Format::kFp16, out);
      insert_at(i, copy_of(before, OpKind::kConvertInput, in, kConvertOps, bytes_for(stored, in),
                           bytes_for(Format::kFp16, in)));
      ++i;  // the GEMM
      insert_at(i + 1, copy_of(before, OpKind::kConvertOutput, out, kConvertOps,
                               bytes_for(Format::kFp16, out), out_bytes));
      ++i;  // the conversion after it
    }
  }
}

// Whether the engine's all-reduce fusion applies to this pass: the fusion,
// tensor parallelism without attention data parallelism, and an all-reduce.
bool all_reduce_fused(const EngineProfile& e, const Scenario& s, const OpGraph& g) {
  if (!e.allreduce_residual_rmsnorm || s.tp <= 1 || s.attention_dp != 1) return false;
  for (int i = 0; i < g.size; ++i) {
    if (g.ops[static_cast<std::size_t>(i)].kind == OpKind::kAllReduce) return true;
  }
  return false;
}

// Marks the ops the engine treats apart from their own pricing, in one pass
// over the graph (predict's kernel loop reads them):
//
// kHeld: work an attention table's measured call holds besides the
// attention. The collectors time the engine's whole decode-attention call,
// which writes the step's new K/V to the cache (vLLM's do_kv_cache_update,
// SGLang's save_kv_cache, TensorRT-LLM's attention op) and, in an engine that
// applies RoPE inside its attention op (fusion "rope_in_attention"), RoPE.
// None unless the table prices the graph's decode attention.
//
// kInAllReduce: ops that run inside an all-reduce kernel. An engine with the
// fusion "allreduce_residual_rmsnorm" (TensorRT-LLM's
// AllReduceFusionOp.RESIDUAL_RMS_NORM) adds the residual and applies the next
// RMSNorm in the all-reduce that ends the attention block (the MLP's norm)
// and the one that ends the MLP or MoE block (the next layer's input norm),
// when the layers are tensor-parallel without attention data parallelism.
// They keep their bytes and lose their launch. Qwen3-MoE leaves the second
// fusion off with pipeline stages.
//
// kPrequantized: per-tensor fp8 GEMMs whose input the kernel before them
// writes in fp8 (EngineProfile::Fp8Prequantized): the engine's listed ops
// always, the ones after an all-reduce where the all-reduce fusion applies.
// Not for checkpoints that ship fp8 (block-scaled: their per-group
// activation scales are computed, not static) nor MLA, whose attention
// module the source does not cover.
void mark_engine_ops(const EngineProfile& e, const ModelOptions& opt, const ModelSpec& m,
                     const Scenario& s, const OpGraph& g, detail::OpMarks* marks) {
  bool held = false;
  if (opt.attention_table != nullptr && !opt.attention_table->entries.empty()) {
    for (int i = 0; i < g.size && !held; ++i) {
      const Op& op = g.ops[static_cast<std::size_t>(i)];
      held = op.cls == OpClass::kAttention && op.kind != OpKind::kDeltaRule && op.gemm_m > 0 &&
             opt.attention_table->find(op.prompt_attention, op.latent_attention, op.weights) !=
                 nullptr;
    }
  }
  const bool fused_reduce = all_reduce_fused(e, s, g);
  const auto& pq = e.fp8_prequantized;
  const bool prequantize = !(pq.ops.empty() && pq.with_allreduce_fusion.empty()) &&
                           m.native_weights != Format::kFp8 && m.attention != AttentionKind::kMla;
  if (!held && !fused_reduce && !prequantize) return;
  const auto listed = [](const std::vector<OpKind>& kinds, OpKind k) {
    return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
  };
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    std::uint8_t& mark = (*marks)[static_cast<std::size_t>(i)];
    if (held &&
        (op.kind == OpKind::kKvCacheWrite || (e.rope_in_attention && op.kind == OpKind::kRope)))
      mark |= detail::kHeld;
    if (fused_reduce &&
        (op.kind == OpKind::kAttnResidual || (op.kind == OpKind::kAttnNorm && s.pp == 1)))
      mark |= detail::kInAllReduce;
    if (prequantize && op.cls == OpClass::kMatmul && op.weights == Format::kFp8 &&
        op.compute == Format::kFp8 && !op.weight_only &&
        (listed(pq.ops, op.kind) || (fused_reduce && listed(pq.with_allreduce_fusion, op.kind))))
      mark |= detail::kPrequantized;
  }
}

// The engine's files keep some tensors of a requested format in another one
// (llama.cpp Q4_K_M: Q6_K LM head and, in half the layers, V and down
// projections): their streamed bytes follow the file. Returns the change in
// weight bytes on this rank, for the memory estimate; `*applied` is the mix.
double apply_engine_file_mix(const EngineProfile& e, const ModelSpec& m, const PrecisionPlan& plan,
                             OpGraph* g, const FileMix** applied) {
  const FileMix* mix = e.file_mix(g->weights, g->experts, m.moe.has_value());
  *applied = mix;
  if (mix == nullptr) return 0;
  // The kinds some role names, and whether a role takes every non-expert
  // linear: an op neither covers is passed over without the roles' lists.
  static_assert(kOpKindCount <= 64, "OpKind no longer fits a 64-bit mask");
  std::uint64_t named_kinds = 0;
  bool non_expert_role = false;
  for (const FileMix::Role& r : mix->roles) {
    for (const OpKind k : r.ops) named_kinds |= std::uint64_t{1} << static_cast<unsigned>(k);
    non_expert_role = non_expert_role || r.non_expert;
  }
  double delta = 0;
  for (int i = 0; i < g->size; ++i) {
    Op& op = g->ops[static_cast<std::size_t>(i)];
    if (op.cls != OpClass::kMatmul || op.kind == OpKind::kRouter) continue;
    // A format the plan names for this operator is the plan's, not the file's.
    if (plan.has_op_overrides && plan.ops[static_cast<std::size_t>(op.kind)].weights) continue;
    const bool expert =
        op.moe_layer && (op.kind == OpKind::kGateProj || op.kind == OpKind::kUpProj ||
                         op.kind == OpKind::kDownProj);
    if ((named_kinds >> static_cast<unsigned>(op.kind) & 1) == 0 && !(non_expert_role && !expert))
      continue;
    // Only tensors stored in the format the mix describes.
    if (op.weights != (mix->experts && expert ? g->experts : g->weights)) continue;
    for (const FileMix::Role& r : mix->roles) {
      const bool named = std::find(r.ops.begin(), r.ops.end(), op.kind) != r.ops.end();
      if (!named && !(r.non_expert && !expert)) continue;
      const double share = FileMix::layer_share(r.layers, m.layers);
      const double elements = op.gemm_n * op.gemm_k * op.gemm_groups;
      const double change =
          share * (bytes_for(r.format, elements) - bytes_for(op.weights, elements));
      op.weight_bytes += change;
      delta += op.count * change;
      if (share >= 0.5) op.weights = r.format;
      if (share >= 0.5 && bits_per_element(r.format) >= 16) {
        // A tensor the files keep unquantized (the serving engines' 16-bit LM
        // head): its GEMM reads a 16-bit input and multiplies in 16 bits.
        const double inputs = op.gemm_m * op.gemm_k * op.gemm_groups;
        if (bits_per_element(op.compute) < 16)
          op.act_bytes += bytes_for(r.format, inputs) - bytes_for(op.compute, inputs);
        op.compute = r.format;
        op.weight_only = false;
        op.vector_ops = 0;
      }
      break;
    }
  }
  return delta;
}

// An engine that runs an MoE layer's shared experts on a second stream beside
// its routed experts (EngineProfile::SharedExpertsStream) overlaps the two:
// the pair takes the longer of them, or the time their bytes take together at
// the achievable bandwidth, whichever is longer. The shared experts' ops keep
// what shows beyond the routed ones, their parts in proportion. Returns the
// time saved.
double overlap_shared_experts(const Device& d, const OpGraph& g, double max_tokens,
                              std::array<OpTiming, kMaxOps>* timings) {
  auto routed = [](const Op& op) {
    return op.moe_layer && (op.kind == OpKind::kGateProj || op.kind == OpKind::kUpProj ||
                            op.kind == OpKind::kActMul || op.kind == OpKind::kDownProj);
  };
  auto shared = [](const Op& op) {
    return op.moe_layer && (op.kind == OpKind::kSharedGateProj ||
                            op.kind == OpKind::kSharedUpProj || op.kind == OpKind::kSharedDownProj);
  };
  const double bandwidth = d.memory_bandwidth_Bps.value * d.bandwidth_fraction.value;
  double saved = 0;
  int i = 0;
  while (i < g.size) {
    if (!routed(g.ops[static_cast<std::size_t>(i)])) {
      ++i;
      continue;
    }
    const int r0 = i;
    while (i < g.size && routed(g.ops[static_cast<std::size_t>(i)])) ++i;
    const int s0 = i;
    while (i < g.size && shared(g.ops[static_cast<std::size_t>(i)])) ++i;
    if (i == s0 || g.ops[static_cast<std::size_t>(s0)].gemm_m > max_tokens) continue;
    double routed_s = 0, shared_s = 0, bytes = 0;
    for (int k = r0; k < i; ++k) {
      const Op& op = g.ops[static_cast<std::size_t>(k)];
      (k < s0 ? routed_s : shared_s) += (*timings)[static_cast<std::size_t>(k)].time_s;
      bytes += op.count * op.bytes();
    }
    const double together = std::max({routed_s, shared_s, bytes / bandwidth});
    const double shown = together - routed_s;  // of the shared experts' time
    if (!(shared_s > 0) || shown >= shared_s) continue;
    const double keep = shown / shared_s;
    for (int k = s0; k < i; ++k) {
      OpTiming& t = (*timings)[static_cast<std::size_t>(k)];
      t.time_s *= keep;
      t.overhead_s *= keep;
    }
    saved += shared_s - shown;
  }
  return saved;
}

// Throws Unsupported when the engine cannot load one of the formats.
void check_engine_formats(const EngineProfile& e, const OpGraph& g, const Scenario& s) {
  for (const Format f : {g.weights, g.experts, s.precision.act, s.precision.kv}) {
    if (!e.runs(f)) {
      throw Unsupported(e.name + " cannot run " + std::string(format_id(f)) +
                        " (`roofline engines show " + e.id + "` lists the formats it cannot run)");
    }
  }
}

// The serving engine's rule for its KV cache's memory (EngineScheduler::kv_memory),
// or null: none for no engine, for one without a scheduler profile, and for the
// reference, whose generic scheduler is no engine's rule (predictions take the
// reference as no engine at all).
const EngineScheduler* kv_memory_rule(const EngineProfile* engine) noexcept {
  return engine && engine->kind != "reference" && engine->scheduler.known ? &engine->scheduler
                                                                          : nullptr;
}

// Under the engine's rule (its current release's share, or `share` where the
// deployment sets one), the KV cache fits when it is within the room the rule
// leaves it beside the weights and activations.
void apply_kv_memory_rule(const EngineProfile* engine, double share, const ModelSpec& m,
                          const Device& d, const Scenario& s, MemoryEstimate* mem) {
  const EngineScheduler* rule = kv_memory_rule(engine);
  if (rule == nullptr) return;
  mem->kv_rule_engine = engine;
  const double activations = kv_sizing_activation_bytes(*rule, m, d, s, mem->activation_bytes,
                                                        rule->budget_on(d), rule->running_on(d));
  mem->kv_room_bytes = rule->kv_room_bytes(share > 0 ? share : rule->kv_memory_share(""),
                                           mem->capacity_bytes, mem->weights_bytes, activations);
  mem->fits = mem->kv_cache_bytes <= mem->kv_room_bytes;  // a cache >= 0: the room too
}

}  // namespace

Bytes engine_file_mix_bytes(const EngineProfile* engine, const ModelSpec& m, const Device& d,
                            const Scenario& s) {
  if (engine == nullptr || m.checkpoint || engine->file_mixes.empty()) return 0;
  const Format w = s.precision.weights.value_or(m.native_weights);
  const Format e = s.precision.experts.value_or(s.precision.weights.value_or(m.native_experts));
  if (engine->file_mix(w, e, m.moe.has_value()) == nullptr) return 0;
  ModelOptions o;
  o.engine = engine;
  OpGraph g;
  build_ops(m, d, s, o, &g);
  const FileMix* applied = nullptr;
  return apply_engine_file_mix(*engine, m, s.precision, &g, &applied);
}

const MoeWeightPadding* engine_moe_padding(const EngineProfile* engine, const ModelSpec& m,
                                           const Device& d, const Scenario& s,
                                           std::string_view moe_kernel,
                                           const MoeKernelRelease* release) {
  if (engine == nullptr || !m.moe || engine->moe_weight_padding.empty()) return nullptr;
  const std::string_view format =
      format_id(s.precision.experts.value_or(s.precision.weights.value_or(m.native_experts)));
  const std::string_view chosen = !moe_kernel.empty() ? moe_kernel
                                  : release != nullptr && release->format == format
                                      ? std::string_view(release->family)
                                      : std::string_view();
  return engine->moe_padding(format, chosen, d);
}

Bytes engine_moe_padding_bytes(const EngineProfile* engine, const ModelSpec& m, const Device& d,
                               const Scenario& s, std::string_view moe_kernel,
                               const MoeKernelRelease* release) {
  const MoeWeightPadding* pad = engine_moe_padding(engine, m, d, s, moe_kernel, release);
  if (pad == nullptr) return 0;
  const Format experts =
      s.precision.experts.value_or(s.precision.weights.value_or(m.native_experts));
  // One rank's experts: experts / ep of them, each slice inter / (tp / ep) wide.
  const double ep = static_cast<double>(std::max<std::int64_t>(s.ep, 1));
  const double slice_tp = std::max(1.0, static_cast<double>(s.tp) / ep);
  const double inter = std::ceil(static_cast<double>(m.moe->expert_intermediate) / slice_tp);
  const double hidden = static_cast<double>(m.hidden);
  const auto up = [](double v, std::int64_t k) {
    return std::ceil(v / static_cast<double>(k)) * static_cast<double>(k);
  };
  // Gate, up and down (3 inter x hidden), and the biases (2 inter + hidden) where
  // the experts carry them.
  const auto expert = [&](double i, double h) {
    return bytes_for(experts, 3 * i * h) + (m.moe->expert_bias ? (2 * i + h) * 2 : 0.0);
  };
  const double extra =
      expert(up(inter, pad->intermediate_multiple), up(hidden, pad->hidden_multiple)) -
      expert(inter, hidden);
  const double experts_on_rank = static_cast<double>(m.moe->num_experts) / ep;
  return extra * experts_on_rank * static_cast<double>(m.moe_layer_count()) /
         static_cast<double>(s.pp);
}

Prediction predict(const ModelSpec& m, const Device& d, const Scenario& s,
                   const ModelOptions& given) {
  check_deadline("prediction");
  ModelOptions scratch;
  const ModelOptions& opt = resolved(given, d, &scratch);
  Prediction p;
  p.mode = opt.mode;
  build_ops(m, d, s, opt, &p.graph);
  const bool realistic = opt.mode == Mode::kRealistic;
  const bool decode = s.phase == Phase::kDecode;
  const EngineProfile* engine = realistic ? opt.engine : nullptr;  // null for the reference
  double file_mix_bytes = 0;
  if (engine) {
    check_engine_formats(*engine, p.graph, s);
    apply_engine_fusions(*engine, &p.graph);
    if (!m.checkpoint) {
      file_mix_bytes = apply_engine_file_mix(*engine, m, s.precision, &p.graph, &p.file_mix);
      p.file_mix_bytes = file_mix_bytes;
    }
    if (engine->gemm_copies && !d.is_cpu()) {
      apply_gemm_copies(*engine, opt, stored_activation_format(opt, s.precision.act), &p.graph);
    }
  }
  double launch = realistic ? d.launch_overhead_s.value : 0;
  // A step with no graph at all (EngineProfile::launch_eager_s): the host
  // issues its kernels at `host_launch` each while the GPU runs them, each
  // kernel followed by `launch` of GPU-side gap.
  double host_launch = 0;
  if (engine) {
    // Graphs cover decode-only steps up to the captured batch (the busiest
    // attention data-parallel rank's share of the sequences); steps with
    // prompt tokens and larger batches launch eagerly or piecewise, and
    // piecewise only up to the captured size in tokens.
    const std::int64_t rank_batch = (s.batch + s.attention_dp - 1) / s.attention_dp;
    p.cuda_graphs =
        decode && opt.graphs != GraphPolicy::kOff &&
        engine->replays_graphs(d, s.tp, rank_batch, s.prefill_tokens > 0, opt.graph_max_batch);
    const auto rank_tokens =
        static_cast<std::int64_t>(std::ceil(p.graph.tokens / static_cast<double>(s.attention_dp)));
    p.past_captured_graphs =
        !p.cuda_graphs && engine->past_captured_graphs(d, s.tp, rank_tokens, opt.graph_max_batch);
    const EngineFigure& l =
        engine->launch_figure(p.cuda_graphs, opt.graphs, opt.engine_build, p.past_captured_graphs);
    if (&l == &engine->launch_eager_s && realistic) {
      host_launch = l.value;
      launch = engine->launch_decode_s.known() ? engine->launch_decode_s.value : 0;
    } else if (l.known()) {
      launch = l.value;
    }
  }
  p.engine = engine;
  if (!realistic && opt.engine && opt.engine->id != "roofline") p.engine_not_applied = opt.engine;
  p.engine_build = opt.engine_build;
  p.graphs = opt.graphs;
  p.gemm_table = engine ? opt.gemm_table : nullptr;
  p.gemm_table_source = opt.gemm_table_source;
  // MoE layers the engine's MoE table prices: their expert ops' timings are set here.
  detail::MoePadding padding;
  detail::MoeReadings readings;
  detail::OpMarks marks{};
  const bool moe_priced =
      engine && detail::price_moe_layers(m, d, p.graph, opt, &p.timings, &marks,
                                         &p.moe_layers_by_shape, &padding, &readings);
  if (moe_priced) {
    p.moe_table = opt.moe_table;
    p.moe_table_source = opt.moe_table_source;
    p.moe_layers_other_model = readings.other_model;
    if (readings.by_release > 0) p.moe_release = opt.moe_release;
  }
  if (padding.layers > 0) {
    p.padded_moe = opt.padded_moe;
    p.moe_layers_padded = padding.layers;
    p.moe_padded_rows = padding.rows;
  }
  if (p.graph.window_masked_layers > 0) p.window_masking = opt.window_masking;
  if (engine) mark_engine_ops(*engine, opt, m, s, p.graph, &marks);
  double memory_bound_time = 0, compute_bound_time = 0;
  // The totals, summed in locals (the compiler keeps them in registers, where
  // p's fields would round-trip through memory every op).
  double total_s = 0, overhead_s = 0, memory_s = 0, compute_s = 0, flops = 0, weight_bytes = 0,
         act_bytes = 0, kv_bytes = 0, communication_s = 0, kernels = 0;
  TableMemo memo;
  p.memory = estimate_memory(m, d, s);
  p.moe_padding_bytes = engine_moe_padding_bytes(engine, m, d, s, opt.moe_kernel, opt.moe_release);
  if (const double layout = file_mix_bytes + p.moe_padding_bytes; layout != 0) {
    p.memory.weights_bytes += layout;
    p.memory.total_bytes += layout;
    p.memory.fits = p.memory.total_bytes <= p.memory.capacity_bytes;
  }
  apply_kv_memory_rule(engine, opt.kv_memory_share, m, d, s, &p.memory);
  // A decode step over an fp8 latent cache the engine's kernel cannot read:
  // the pool the memory rule sizes is cast whole (no rule, no pool: no cast).
  const EngineProfile::LatentCacheCast* cast =
      engine && decode && p.memory.kv_room_bytes > 0
          ? engine->casts_latent_cache(m, s.precision.kv, d)
          : nullptr;
  memo.latent_bf16_copy = cast != nullptr;

  const int n = p.graph.size;
  int i = 0;
  while (i < n) {
    // A kernel: this op and the ops fused into it (launches == 0).
    int j = i + 1;
    while (j < n && p.graph.ops[static_cast<std::size_t>(j)].launches == 0) ++j;
    double mem = 0, comp = 0, standalone = 0;
    bool table_attention = false;
    // The matmuls of one kernel that share its rows and depth are one GEMM of
    // their summed width (a fused QKV or gate+up).
    const Op& first = p.graph.ops[static_cast<std::size_t>(i)];
    auto same_gemm = [&](const Op& op) {
      return op.cls == OpClass::kMatmul && first.cls == OpClass::kMatmul &&
             op.gemm_m == first.gemm_m && op.gemm_k == first.gemm_k &&
             op.gemm_groups == first.gemm_groups;
    };
    const bool single = j == i + 1;  // most kernels: one op, its own width
    double kernel_n = 0;
    for (int k = i; k < j && !single; ++k) {
      const Op& op = p.graph.ops[static_cast<std::size_t>(k)];
      if (same_gemm(op)) kernel_n += op.gemm_n;
    }
    for (int k = i; k < j; ++k) {
      const Op& op = p.graph.ops[static_cast<std::size_t>(k)];
      OpTiming& t = p.timings[static_cast<std::size_t>(k)];
      const std::uint8_t mark = marks[static_cast<std::size_t>(k)];
      if (mark & detail::kHeld) {
        t = OpTiming{};  // in the attention call's measured time
      } else if (!(mark & detail::kMoePriced)) {
        evaluate_op(d, op, opt, !single && same_gemm(op) ? kernel_n : op.gemm_n,
                    (mark & detail::kPrequantized) != 0, &memo, t);
      }
      if (op.cls == OpClass::kCommunication) communication_s += t.time_s;
      // A table-priced attention call's measured time holds its softmax (the
      // call's first op prices it).
      if (op.cls == OpClass::kAttention && op.kind != OpKind::kDeltaRule) {
        table_attention |= t.source == EfficiencySource::kMeasuredAttentionTable ||
                           t.source == EfficiencySource::kDerivedAttentionTable;
      } else if (table_attention) {
        t.memory_time_s = t.compute_time_s = 0;
      }
      mem += t.memory_time_s;
      comp += t.compute_time_s;
      standalone += std::max(t.memory_time_s, t.compute_time_s);
    }
    // Each op's share of its kernel's time: its standalone time scaled by the
    // kernel's over their sum (1 for a kernel of one op: no division).
    const double scale = single ? 1.0 : (standalone > 0 ? std::max(mem, comp) / standalone : 0.0);
    for (int k = i; k < j; ++k) {
      const Op& op = p.graph.ops[static_cast<std::size_t>(k)];
      OpTiming& t = p.timings[static_cast<std::size_t>(k)];
      const double own = std::max(t.memory_time_s, t.compute_time_s);
      const double launched =
          op.cls == OpClass::kCommunication ||
                  (marks[static_cast<std::size_t>(k)] & (detail::kHeld | detail::kInAllReduce)) != 0
              ? 0
              : op.count * op.launches;
      kernels += launched;
      t.overhead_s = launched * launch;
      t.time_s = own * scale + t.overhead_s;
      total_s += t.time_s;
      overhead_s += t.overhead_s;
      memory_s += t.memory_time_s;
      compute_s += t.compute_time_s;
      flops += op.count * op.flops;
      weight_bytes += op.count * op.weight_bytes;
      act_bytes += op.count * op.act_bytes;
      kv_bytes += op.count * op.kv_bytes;
      (t.bound == Bound::kMemory ? memory_bound_time : compute_bound_time) +=
          t.time_s - t.overhead_s;
    }
    if (table_attention) {
      p.attention_table = opt.attention_table;
      p.attention_table_source = opt.attention_table_source;
    }
    i = j;
  }
  p.time_s = total_s;
  p.overhead_s = overhead_s;
  p.memory_time_s = memory_s;
  p.compute_time_s = compute_s;
  p.flops = flops;
  p.weight_bytes = weight_bytes;
  p.act_bytes = act_bytes;
  p.kv_bytes = kv_bytes;
  p.communication_s = communication_s;
  if (engine && engine->shared_experts_stream.on &&
      (p.cuda_graphs || !engine->shared_experts_stream.graphs_only)) {
    const EngineFigure& limit = engine->shared_experts_stream.max_tokens;
    const double saved = overlap_shared_experts(
        d, p.graph, limit.known() ? limit.value : std::numeric_limits<double>::infinity(),
        &p.timings);
    if (saved > 0) {
      p.time_s -= saved;
      p.overhead_s = 0;
      for (int k = 0; k < p.graph.size; ++k)
        p.overhead_s += p.timings[static_cast<std::size_t>(k)].overhead_s;
    }
  }
  if (host_launch > 0) {
    // The GPU idles where the host's dispatch outlasts its work.
    p.host_dispatch_s = kernels * host_launch;
    p.host_wait_s = std::max(0.0, p.host_dispatch_s - p.time_s);
    p.time_s += p.host_wait_s;
    p.overhead_s += p.host_wait_s;
  }
  if (engine && engine->step_overhead_s.known()) {
    // Per forward pass of a pipeline stage: scheduling, sampling, host work not hidden.
    p.engine_step_s = engine->step_overhead_s.value;
    p.time_s += p.engine_step_s;
    p.overhead_s += p.engine_step_s;
  }
  if (cast) {
    // Every layer's share of the pool (all slots) from fp8 to bf16, one byte
    // read and two written an element, on each pipeline stage in turn.
    const double moved = 3 * p.memory.kv_room_bytes * static_cast<double>(s.pp);
    p.latent_cache_cast_s =
        moved / (d.memory_bandwidth_Bps.value * cast->bandwidth_efficiency.value);
    p.time_s += p.latent_cache_cast_s;
    p.memory_time_s += p.latent_cache_cast_s;
    p.kv_bytes += moved;
    memory_bound_time += p.latent_cache_cast_s;
  }
  p.bytes = p.weight_bytes + p.act_bytes + p.kv_bytes;
  p.bound = memory_bound_time >= compute_bound_time ? Bound::kMemory : Bound::kCompute;
  p.tokens_per_step = decode ? tokens_per_step(s) : 1;
  const double tokens = decode ? static_cast<double>(s.batch) * p.tokens_per_step : p.graph.tokens;
  p.tokens_per_s = tokens / p.time_s;
  return p;
}

GenerateResult generate(const ModelSpec& m, const Device& d, Scenario s, std::int64_t prompt,
                        std::int64_t gen, const ModelOptions& opt) {
  if (prompt < 1 || prompt > kMaxSeqLen)
    throw InvalidArgument("prompt must be 1 to " + std::to_string(kMaxSeqLen) + " tokens");
  if (prompt == kMaxSeqLen) {
    throw InvalidArgument("prompt " + std::to_string(prompt) +
                          " leaves no room for generated tokens (prompt + gen is at most " +
                          std::to_string(kMaxSeqLen) + ")");
  }
  if (gen < 1 || gen > kMaxSeqLen - prompt) {
    throw InvalidArgument("gen must be 1 to " + std::to_string(kMaxSeqLen - prompt) +
                          " tokens (prompt + gen is at most " + std::to_string(kMaxSeqLen) + ")");
  }
  // Tokens cached before the prompt (an earlier turn): the prompt attends over
  // them, and every decode step after it.
  const std::int64_t cached = s.cached;
  if (cached < 0 || cached > kMaxSeqLen - prompt - gen) {
    throw InvalidArgument("cached tokens must be 0 to " +
                          std::to_string(std::max<std::int64_t>(kMaxSeqLen - prompt - gen, 0)) +
                          " (cached + prompt + gen is at most " + std::to_string(kMaxSeqLen) + ")");
  }
  GenerateResult g;
  s.phase = Phase::kPrefill;
  s.seq_len = prompt;
  g.prefill = predict(m, d, s, opt);
  g.ttft_s = g.prefill.time_s;
  if (cached > 0) {
    Scenario whole = s;
    whole.seq_len = cached + prompt;
    whole.cached = 0;
    g.ttft_recomputed_s = predict(m, d, whole, opt).time_s;
  }

  // gen - 1 decode steps over cached contexts (cached +) prompt .. prompt + gen - 2.
  const std::int64_t steps = gen - 1;
  s.phase = Phase::kDecode;
  s.cached = 0;
  double decode_total = 0;
  if (steps > 0) {
    const std::int64_t first = cached + prompt, last = first + steps - 1;
    auto step_time = [&](std::int64_t ctx, Prediction* keep) {
      s.seq_len = ctx;
      Prediction p = predict(m, d, s, opt);
      const double t = p.time_s;
      if (keep) *keep = std::move(p);
      return t;
    };
    const double t_first = step_time(first, &g.first_decode);
    const double t_last = steps > 1 ? step_time(last, &g.last_decode) : t_first;
    if (steps == 1) g.last_decode = g.first_decode;
    constexpr std::int64_t kExactSteps = 16;
    if (steps <= kExactSteps) {
      decode_total = t_first + (steps > 1 ? t_last : 0);
      for (std::int64_t c = first + 1; c < last; ++c) decode_total += step_time(c, nullptr);
    } else {
      // The step time is piecewise linear in the context (KV bytes and
      // attention FLOPs grow linearly); sum it over 8 linear segments.
      constexpr int kSegments = 8;
      std::int64_t prev = first;
      double prev_t = t_first;
      for (int k = 1; k <= kSegments; ++k) {
        const std::int64_t x = first + (last - first) * k / kSegments;
        const double tx = (k == kSegments) ? t_last : step_time(x, nullptr);
        decode_total += static_cast<double>(x - prev) * (prev_t + tx) / 2;
        prev = x;
        prev_t = tx;
      }
      decode_total += t_last;
    }
    // Speculative steps each yield tokens_per_step tokens a sequence: the
    // contexts above pass that many at a time.
    decode_total /= tokens_per_step(s);
    g.tpot_s = decode_total / static_cast<double>(steps);
  }
  g.e2e_s = g.ttft_s + decode_total;
  g.output_tokens_per_s = static_cast<double>(s.batch * gen) / g.e2e_s;
  g.decode_tokens_per_s = g.tpot_s > 0 ? static_cast<double>(s.batch) / g.tpot_s : 0;
  s.seq_len = cached + prompt + gen - 1;
  g.peak_memory = estimate_memory(m, d, s);
  return g;
}

KvReport kv_report(const ModelSpec& m, const Device& d, const Scenario& s) {
  KvReport r;
  r.context = s.seq_len;
  r.batch = s.batch;
  Scenario whole = s;
  whole.tp = 1;
  whole.pp = 1;
  whole.phase = Phase::kDecode;
  r.resident_weight_bytes = weight_memory(m, whole);
  // What a decode step streams: not the embedding table (one row per token),
  // and for MoE only the experts the batch touches.
  const OpGraph step = build_ops(m, d, whole);
  for (int i = 0; i < step.size; ++i) {
    const Op& op = step.ops[static_cast<std::size_t>(i)];
    r.weight_bytes += op.count * op.weight_bytes;
  }
  r.state_bytes_per_sequence = m.linear_state_bytes();
  const double per_token_layer = static_cast<double>(m.kv_elements_per_token_per_layer());
  // Layers with a KV cache (linear-attention layers keep a fixed state instead).
  const double layers = static_cast<double>(m.layers - m.linear_layer_count());
  const double sliding = static_cast<double>(m.sliding_layer_count());
  const double ctx = static_cast<double>(s.seq_len);
  const double window_ctx =
      m.sliding_window > 0 ? std::min(ctx, static_cast<double>(m.sliding_window)) : ctx;
  const double elems_at_ctx = per_token_layer * ((layers - sliding) * ctx + sliding * window_ctx);
  const double base = bytes_for(Format::kBf16, elems_at_ctx);
  for (Format f : {Format::kBf16, Format::kFp8, Format::kInt8, Format::kQ8_0, Format::kNvfp4,
                   Format::kMxfp4, Format::kInt4, Format::kQ4_0}) {
    KvFormatRow row;
    row.format = f;
    row.bytes_per_token = bytes_for(f, per_token_layer * layers);
    row.total_bytes = static_cast<double>(s.batch) * bytes_for(f, elems_at_ctx);
    row.saving = 1 - bytes_for(f, elems_at_ctx) / base;
    // Reading B contexts of c tokens (full-attention layers grow; sliding ones stop at the window).
    const double full_per_token = bits_per_element(f) / 8 * per_token_layer * (layers - sliding);
    const double fixed =
        bits_per_element(f) / 8 * per_token_layer * sliding * static_cast<double>(m.sliding_window);
    const double per_seq = r.weight_bytes / static_cast<double>(s.batch) - fixed;
    row.crossover_context = full_per_token > 0 && per_seq > 0 ? per_seq / full_per_token : 0;
    r.rows.push_back(row);
  }
  return r;
}

KvReport kv_report(const ModelSpec& m, const Device& d, Scenario s, const ModelOptions& opt) {
  s.phase = Phase::kDecode;
  KvReport r = kv_report(m, d, s);
  for (auto& row : r.rows) {
    s.precision.kv = row.format;
    row.decode_step_s = predict(m, d, s, opt).time_s;
    row.speedup = r.rows.front().decode_step_s / row.decode_step_s;
  }
  return r;
}

std::vector<AttentionComparisonRow> compare_attention(const ModelSpec& m, const Device& d,
                                                      Scenario s, const ModelOptions& opt) {
  std::vector<AttentionComparisonRow> rows;
  double baseline = 0;
  for (const auto& k : attention_kernels()) {
    AttentionComparisonRow row;
    row.kernel = &k;
    row.supported = k.runs_on(d);
    if (row.supported) {
      s.attention = k.kernel;
      const Prediction p = predict(m, d, s, opt);
      for (int i = 0; i < p.graph.size; ++i) {
        const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
        if (op.kind == OpKind::kQkMatmul || op.kind == OpKind::kSoftmax ||
            op.kind == OpKind::kSvMatmul) {
          row.attention_time_s += p.timings[static_cast<std::size_t>(i)].time_s;
          row.attention_bytes += op.count * op.bytes();
        }
      }
      row.time_s = p.time_s;
      if (baseline == 0) baseline = p.time_s;
      row.speedup_vs_first = baseline / p.time_s;
    }
    rows.push_back(row);
  }
  return rows;
}

namespace {

// Capacity with `layout` bytes held beside the weights the formats give (the
// engine's files and its MoE kernel's padded experts).
Capacity capacity_holding(const ModelSpec& m, const Device& d, const Scenario& base,
                          const EngineProfile* engine, double layout) {
  Capacity c;
  c.capacity_bytes = d.memory_capacity_bytes.value;
  if (const EngineScheduler* rule = kv_memory_rule(engine)) {
    c.kv_memory_engine = engine;
    c.kv_memory_share = rule->kv_memory_share("");
    c.kv_memory_of_free = rule->kv_memory_of_free;
  }
  Scenario s = base;
  // A prompt after cached tokens holds them too: the context is their sum.
  s.cached = 0;
  const std::int64_t context = base.seq_len + (base.phase == Phase::kPrefill ? base.cached : 0);
  auto fits = [&](std::int64_t batch, std::int64_t ctx) {
    s.batch = batch;
    s.seq_len = ctx;
    MemoryEstimate mem = estimate_memory(m, d, s);
    if (layout != 0) {
      mem.weights_bytes += layout;
      mem.total_bytes += layout;
      mem.fits = mem.total_bytes <= mem.capacity_bytes;
    }
    apply_kv_memory_rule(engine, 0, m, d, s, &mem);
    return mem.fits;
  };
  auto search = [](std::int64_t hi, auto ok) {
    std::int64_t lo = 0;  // ok(lo) holds (or lo is 0)
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo + 1) / 2;
      if (ok(mid))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  };
  c.max_batch = search(kMaxBatch, [&](std::int64_t b) { return fits(b, context); });
  c.max_context_by_memory =
      search(kMaxSeqLen, [&](std::int64_t ctx) { return fits(base.batch, ctx); });
  // A context past the model's window fits in memory but is not one the model
  // was trained for: the window caps it (a prediction at a longer context is
  // still made when asked for).
  c.context_window = m.max_position;
  c.max_context = c.context_window > 0 ? std::min(c.max_context_by_memory, c.context_window)
                                       : c.max_context_by_memory;
  return c;
}

}  // namespace

Capacity capacity(const ModelSpec& m, const Device& d, const Scenario& base,
                  const EngineProfile* engine, std::string_view moe_kernel,
                  const MoeKernelRelease* release) {
  // The engine's files hold the weights predict() streams (a 16-bit LM head).
  return capacity_holding(m, d, base, engine,
                          engine_file_mix_bytes(engine, m, d, base) +
                              engine_moe_padding_bytes(engine, m, d, base, moe_kernel, release));
}

Capacity capacity(const ModelSpec& m, const Device& d, const Scenario& base, const Prediction& p) {
  return capacity_holding(m, d, base, p.engine, p.file_mix_bytes + p.moe_padding_bytes);
}

}  // namespace roofline
