#include "roofline/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "roofline/engine.h"
#include "roofline/track_record.h"
#include "roofline/version.h"

namespace roofline {
namespace {

// An engine id's display name ("sglang": "SGLang"), or the id where none is registered.
std::string engine_display_name(const std::string& id) {
  const EngineProfile* e = EngineRegistry::built_in().find(id);
  return e ? e->name : id;
}

// Scales x by powers of 1000 and appends a prefix: (2.73e11, "B/s") -> "273 GB/s".
// Beyond the largest prefix (Y, 1e24) the number is written in scientific notation.
std::string si(double x, std::string_view unit) {
  if (std::isnan(x)) return "n/a";
  if (std::isinf(x)) return fmt::format("{}inf {}", x < 0 ? "-" : "", unit);
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E", "Z", "Y"};
  constexpr int kLargest = 8;
  if (std::fabs(x) >= 1e27) return fmt::format("{:.3g} {}", x, unit);
  int i = 0;
  double v = x;
  while (std::fabs(v) >= 1000.0 && i < kLargest) {
    v /= 1000.0;
    ++i;
  }
  const int decimals = std::fabs(v) >= 100 ? 0 : (std::fabs(v) >= 10 ? 1 : 2);
  return fmt::format("{:.{}f} {}{}", v, decimals, kPrefixes[i], unit);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Display width of UTF-8 text (counts code points, not bytes).
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string_view version() noexcept { return kVersionString; }

nlohmann::json stamp(const Registry& registry) {
  return {{"version", std::string(version())}, {"data_hash", registry.data_hash()}};
}

nlohmann::json to_json(const FormatInfo& f) {
  return {{"id", f.id},
          {"element", f.element},
          {"bits_per_element", bits_per_element(f.format)},
          {"block_elements", f.block_elements},
          {"block_bits", f.block_bits},
          {"tensor_scale_bits", f.tensor_scale_bits},
          {"scale", f.scale},
          {"max_finite", f.max_finite},
          {"min_positive", f.min_positive},
          {"compute_format", f.compute_format},
          {"source", f.source}};
}

nlohmann::json to_json(const Device& d, const Figure& f) {
  nlohmann::json j = {{"value", f.known() ? nlohmann::json(f.value) : nlohmann::json(nullptr)},
                      {"confidence", confidence_name(f.confidence)},
                      {"source", d.citation(f)}};
  if (!f.note.empty()) j["note"] = f.note;
  return j;
}

nlohmann::json to_json(const Device& d) {
  nlohmann::json peaks = nlohmann::json::object();
  nlohmann::json formats = nlohmann::json::array();
  nlohmann::json matmul = {{"default", to_json(d, d.matmul_fraction_default)}};
  for (const auto& info : all_formats()) {
    const auto& p = d.peaks[format_index(info.format)];
    if (p) {
      nlohmann::json pj = to_json(d, *p);
      pj["unit"] = compute_unit_name(p->unit);
      pj["accumulate"] = accumulate_name(p->accumulate);
      if (p->fp16_accumulate.known()) pj["fp16_accumulate"] = to_json(d, p->fp16_accumulate);
      peaks[std::string(info.id)] = pj;
      if (p->unit == ComputeUnit::kTensor) formats.push_back(info.id);
    }
    if (const auto& m = d.matmul_fraction[format_index(info.format)]) {
      matmul[std::string(info.id)] = to_json(d, *m);
    }
  }
  return {{"id", d.id},
          {"name", d.name},
          {"vendor", d.vendor},
          {"architecture", d.architecture},
          {"compute_capability", d.compute_capability},
          {"aliases", d.aliases},
          {"origin", d.origin},
          {"memory",
           {{"type", d.memory_type},
            {"capacity_bytes", to_json(d, d.memory_capacity_bytes)},
            {"bandwidth_Bps", to_json(d, d.memory_bandwidth_Bps)}}},
          {"bandwidth_Bps", d.memory_bandwidth_Bps.value},
          {"compute",
           {{"sm_count", to_json(d, d.sm_count)},
            {"l2_bytes", to_json(d, d.l2_bytes)},
            {"shared_memory_per_sm_bytes", to_json(d, d.shared_memory_per_sm_bytes)},
            {"boost_clock_hz", to_json(d, d.boost_clock_hz)},
            {"tdp_w", to_json(d, d.tdp_w)}}},
          {"interconnect",
           {{"name", d.interconnect_name},
            {"bandwidth_Bps", to_json(d, d.interconnect_bandwidth_Bps)}}},
          {"tensor_formats", formats},
          {"peaks", peaks},
          {"efficiency",
           {{"bandwidth_fraction", to_json(d, d.bandwidth_fraction)},
            {"matmul_fraction", matmul},
            {"launch_overhead_s", to_json(d, d.launch_overhead_s)}}},
          {"sources", d.sources}};
}

nlohmann::json to_json(const Device& d, const GemmProblem& p, const RooflineResult& r) {
  nlohmann::json figures = {
      {"peak_flops_per_s", to_json(d, *d.peaks[format_index(r.compute_format)])},
      {"bandwidth_Bps", to_json(d, d.memory_bandwidth_Bps)},
  };
  if (r.mode == Mode::kRealistic) {
    figures["matmul_fraction"] = to_json(d, d.matmul_fraction_for(r.compute_format));
    figures["bandwidth_fraction"] = to_json(d, d.bandwidth_fraction);
    figures["launch_overhead_s"] = to_json(d, d.launch_overhead_s);
    figures["sm_count"] = to_json(d, d.sm_count);
  }
  if (r.weight_only) figures["fp32_vector_peak_flops_per_s"] = to_json(d, *d.peaks[0]);
  return {{"device", {{"id", d.id}, {"name", d.name}}},
          {"mode", mode_name(r.mode)},
          {"m", p.m},
          {"n", p.n},
          {"k", p.k},
          {"weights", format_id(p.weights)},
          {"act", format_id(p.act)},
          {"compute_format", format_id(r.compute_format)},
          {"output_format", format_id(r.output_format)},
          {"weight_only", r.weight_only},
          {"time_s", r.time_s},
          {"memory_time_s", r.memory_time_s},
          {"compute_time_s", r.compute_time_s},
          {"overhead_s", r.overhead_s},
          {"packing_time_s", r.packing_time_s},
          {"flops", r.flops},
          {"dequant_ops", r.dequant_ops},
          {"bytes", r.bytes},
          {"bytes_read", r.bytes_read},
          {"bytes_written", r.bytes_written},
          {"ai", r.ai},
          {"ridge_ai", r.ridge_ai},
          {"bound", bound_name(r.bound)},
          {"attained_flops_per_s", r.attained_flops_per_s},
          {"attained_bandwidth_Bps", r.attained_bandwidth_Bps},
          {"peak_flops_per_s", r.peak_flops_per_s},
          {"peak_bandwidth_Bps", r.peak_bandwidth_Bps},
          {"effective_flops_per_s", r.effective_flops_per_s},
          {"effective_bandwidth_Bps", r.effective_bandwidth_Bps},
          {"matmul_fraction", r.matmul_fraction},
          {"bandwidth_fraction", r.bandwidth_fraction},
          {"wave_efficiency", r.wave_efficiency},
          {"figures", figures},
          {"notes", explain(d, p, r)}};
}

std::vector<std::string> explain(const Device& d, const GemmProblem& p, const RooflineResult& r) {
  std::vector<std::string> notes;
  const std::string w(format_id(p.weights));
  const std::string c(format_id(r.compute_format));
  if (r.weight_only) {
    notes.push_back(fmt::format(
        "{} weights are weight-only on {}: stored in {} ({:.4g} bits/element), converted to {} "
        "for the math at the {} rate; {} dequantization ops counted on the fp32 vector units",
        w, d.id, w, bits_per_element(p.weights), c, c, human_count(r.dequant_ops)));
  } else if (p.weights != p.act) {
    notes.push_back(
        fmt::format("mixed {} x {} operands run natively at the {} rate", w, format_id(p.act), c));
  }
  const auto& peak = *d.peaks[format_index(r.compute_format)];
  if (peak.fp16_accumulate.known()) {
    notes.push_back(fmt::format(
        "the {} peak {} is the FP32-accumulate rate that frameworks use; this device's tensor "
        "cores run FP16 accumulation at {}",
        c, human_rate(peak.value, "FLOP/s"), human_rate(peak.fp16_accumulate.value, "FLOP/s")));
  }
  if (r.mode == Mode::kIdeal) {
    notes.push_back(fmt::format("ideal mode: datasheet peaks ({} {}, {} memory), no overheads",
                                human_rate(r.peak_flops_per_s, "FLOP/s"), c,
                                human_rate(r.peak_bandwidth_Bps, "B/s")));
  } else {
    notes.push_back(fmt::format(
        "realistic mode: bandwidth x {:.3f} ({}), {} matmul x {:.3f} ({}), wave efficiency {:.3f} "
        "over {} SMs, {} launch overhead ({})",
        r.bandwidth_fraction, confidence_name(d.bandwidth_fraction.confidence), c,
        r.matmul_fraction, confidence_name(d.matmul_fraction_for(r.compute_format).confidence),
        r.wave_efficiency, d.sm_count.value, human_time(r.overhead_s),
        confidence_name(d.launch_overhead_s.confidence)));
  }
  if (r.packing_time_s > 0) {
    notes.push_back(fmt::format(
        "CPU BLAS packs the {} weights into a contiguous buffer first (read and written once "
        "more): {} before the math",
        human_bytes(bytes_for(p.weights, static_cast<double>(p.k) * static_cast<double>(p.n))),
        human_time(r.packing_time_s)));
  }
  const bool below = r.ai < r.ridge_ai;
  if (below == (r.bound == Bound::kMemory)) {
    notes.push_back(
        fmt::format("arithmetic intensity {:.3g} FLOP/B is {} the ridge at {:.3g} FLOP/B: {}-bound",
                    r.ai, below ? "below" : "above", r.ridge_ai, bound_name(r.bound)));
  } else {
    notes.push_back(fmt::format(
        "arithmetic intensity {:.3g} FLOP/B is {} the ridge at {:.3g} FLOP/B, but this shape is "
        "{}-bound: wave quantization and tile padding leave {:.0f}% of the compute idle",
        r.ai, below ? "below" : "above", r.ridge_ai, bound_name(r.bound),
        100 * (1 - r.wave_efficiency)));
  }
  return notes;
}

std::string human_time(Seconds s) {
  if (std::isnan(s)) return "n/a";
  if (s >= 1.0) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.4g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.4g} µs", s * 1e6);
  return fmt::format("{:.4g} ns", s * 1e9);
}

std::string human_bytes(Bytes b) { return si(b, "B"); }
std::string human_rate(double per_second, std::string_view unit) { return si(per_second, unit); }
std::string human_count(double x) { return si(x, ""); }

std::string Table::text() const { return text(0); }

std::string Table::text(std::size_t max_width) const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], display_width(row[i]));
  };
  widen(header_);
  for (const auto& row : rows_) widen(row);
  std::string out;
  // Where the last column starts, and how wide it may be.
  std::size_t indent = 0;
  for (std::size_t i = 0; i + 1 < width.size(); ++i) indent += width[i] + 2;
  const std::size_t last_width =
      max_width > indent ? std::max<std::size_t>(max_width - indent, 24) : std::size_t{24};
  auto wrap = [&](const std::string& text) {
    std::vector<std::string> lines(1);
    std::size_t used = 0, start = 0;
    while (start <= text.size()) {
      std::size_t end = text.find(' ', start);
      if (end == std::string::npos) end = text.size();
      const std::string word = text.substr(start, end - start);
      const std::size_t w = display_width(word);
      if (used > 0 && used + 1 + w > last_width) {
        lines.emplace_back();
        used = 0;
      }
      if (used > 0) {
        lines.back() += ' ';
        ++used;
      }
      lines.back() += word;
      used += w;
      start = end + 1;
    }
    return lines;
  };
  auto line = [&](const std::vector<std::string>& row) {
    std::string l;
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      const bool last = i + 1 == row.size();
      if (last && max_width > 0 && indent + display_width(row[i]) > max_width) {
        const auto parts = wrap(row[i]);
        l += parts[0];
        for (std::size_t k = 1; k < parts.size(); ++k)
          l += "\n" + std::string(indent, ' ') + parts[k];
        break;
      }
      l += row[i];
      if (!last) l += std::string(width[i] - display_width(row[i]) + 2, ' ');
    }
    out += l + "\n";
  };
  line(header_);
  std::vector<std::string> rule;
  for (std::size_t i = 0; i < width.size(); ++i) {
    const bool last = i + 1 == width.size();
    rule.emplace_back(last && max_width > 0 ? std::min(width[i], last_width) : width[i], '-');
  }
  line(rule);
  for (const auto& row : rows_) line(row);
  return out;
}

std::string Table::csv() const {
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + csv_field(row[i]);
    out += "\n";
  };
  line(header_);
  for (const auto& row : rows_) line(row);
  return out;
}

}  // namespace roofline

// ---------------------------------------------------------------- models and predictions

namespace roofline {

nlohmann::json to_json(const ModelSpec& m) {
  const ParamCounts p = count_parameters(m);
  nlohmann::json arch = {{"hidden", m.hidden},
                         {"layers", m.layers},
                         {"vocab", m.vocab},
                         {"heads", m.heads},
                         {"kv_heads", m.kv_heads},
                         {"head_dim", m.head_dim},
                         {"intermediate", m.intermediate},
                         {"gated_mlp", m.gated_mlp},
                         {"qkv_bias", m.qkv_bias},
                         {"qk_norm", m.qk_norm},
                         {"tie_embeddings", m.tie_embeddings},
                         {"attention", m.attention == AttentionKind::kMla ? "mla" : "gqa"},
                         {"sliding_window", m.sliding_window},
                         {"sliding_layers", m.sliding_layer_count()},
                         {"max_position", m.max_position},
                         {"kv_elements_per_token_per_layer", m.kv_elements_per_token_per_layer()}};
  if (m.attention == AttentionKind::kMla) {
    arch["mla"] = {{"q_lora_rank", m.mla.q_lora_rank},
                   {"kv_lora_rank", m.mla.kv_lora_rank},
                   {"qk_nope_head_dim", m.mla.qk_nope_head_dim},
                   {"qk_rope_head_dim", m.mla.qk_rope_head_dim},
                   {"v_head_dim", m.mla.v_head_dim}};
  }
  if (m.sparse_attention) {
    arch["sparse_attention"] = {{"kind", "deepseek_sparse"},
                                {"index_heads", m.sparse_attention->index_heads},
                                {"index_head_dim", m.sparse_attention->index_head_dim},
                                {"top_k", m.sparse_attention->top_k}};
  }
  if (m.linear_attention) {
    const auto& x = *m.linear_attention;
    arch["attention_output_gate"] = m.attention_output_gate;
    arch["linear_attention"] = {
        {"kind", "gated_deltanet"},
        {"layers", m.linear_layer_count()},
        {"key_heads", x.key_heads},
        {"value_heads", x.value_heads},
        {"key_head_dim", x.key_head_dim},
        {"value_head_dim", x.value_head_dim},
        {"conv_kernel", x.conv_kernel},
        {"state_format", format_id(x.state_format)},
        {"state_elements_per_sequence_per_layer", m.linear_state_elements()},
        {"conv_state_elements_per_sequence_per_layer", m.linear_conv_state_elements()}};
  }
  if (m.moe) {
    arch["moe"] = {{"num_experts", m.moe->num_experts},
                   {"top_k", m.moe->top_k},
                   {"expert_intermediate", m.moe->expert_intermediate},
                   {"num_shared_experts", m.moe->num_shared_experts},
                   {"moe_layers", m.moe_layer_count()}};
  }
  auto component = [&](double params, Format f) {
    return nlohmann::json{
        {"params", params}, {"bytes", bytes_for(f, params)}, {"format", format_id(f)}};
  };
  nlohmann::json components = {{"embedding", component(p.embedding, m.native_weights)},
                               {"attention", component(p.attention, m.native_weights)},
                               {"dense_mlp", component(p.dense_mlp, m.native_weights)},
                               {"routed_experts", component(p.routed_experts, m.native_experts)},
                               {"shared_experts", component(p.shared_experts, m.native_weights)},
                               {"router", component(p.router, Format::kBf16)},
                               {"norms", component(p.norms, Format::kBf16)},
                               {"lm_head", component(p.lm_head, m.native_weights)}};
  nlohmann::json j = {{"id", m.id},
                      {"name", m.name},
                      {"model_type", m.model_type},
                      {"origin", m.origin},
                      {"architecture", arch},
                      {"native_weights", format_id(m.native_weights)},
                      {"native_experts", format_id(m.native_experts)},
                      {"params", p.total},
                      {"active_params_per_token", p.active_per_token},
                      {"components", components},
                      {"notes", [&m] {  // the checkpoint's quantization first
                         auto all = m.quantization_notes;
                         all.insert(all.end(), m.notes.begin(), m.notes.end());
                         return all;
                       }()}};
  if (m.checkpoint) {
    const auto& c = *m.checkpoint;
    j["checkpoint"] = {{"path", c.path},
                       {"tensors", c.tensors},
                       {"total_bytes", c.total},
                       {"dominant_type", c.dominant_type},
                       {"embedding", c.embedding},
                       {"attention", c.attention},
                       {"dense_mlp", c.dense_mlp},
                       {"routed_experts", c.routed_experts},
                       {"shared_experts", c.shared_experts},
                       {"router", c.router},
                       {"norms", c.norms},
                       {"lm_head", c.lm_head},
                       {"other", c.other}};
  }
  return j;
}

nlohmann::json scenario_json(const ModelSpec& m, const Device& d, const Scenario& s,
                             const OpGraph& g) {
  return {{"model", m.id},
          {"hardware", d.id},
          {"phase", phase_name(s.phase)},
          {"batch", s.batch},
          {"seq_len", s.seq_len},
          {"cached", s.cached},
          {"weights", format_id(g.weights)},
          {"experts", format_id(g.experts)},
          {"act", format_id(s.precision.act)},
          {"kv", format_id(s.precision.kv)},
          {"attention", attention_kernel_id(g.attention)},
          {"block_sparsity", s.block_sparsity},
          {"tp", s.tp},
          {"pp", s.pp},
          {"draft_tokens", s.draft_tokens},
          {"acceptance", s.acceptance}};
}

nlohmann::json to_json(const MemoryEstimate& m) {
  return {{"weights_bytes", m.weights_bytes},
          {"kv_cache_bytes", m.kv_cache_bytes},
          {"activation_bytes", m.activation_bytes},
          {"total_bytes", m.total_bytes},
          {"capacity_bytes", m.capacity_bytes},
          {"kv_room_bytes", m.kv_rule_engine ? nlohmann::json(m.kv_room_bytes) : nlohmann::json()},
          {"fits", m.fits}};
}

std::string_view op_efficiency_source(const Op& op, const OpTiming& t) noexcept {
  // Attention priced apart from the catalog kernel: by a table, or by the
  // engine's own kernel figures (its sparse-MLA kernels).
  const bool priced_apart = (op.cls == OpClass::kAttention || op.kind == OpKind::kShortConv) &&
                            (t.source == EfficiencySource::kMeasuredAttentionTable ||
                             t.source == EfficiencySource::kDerivedAttentionTable ||
                             (op.engine_kernel && t.source == EfficiencySource::kEngine));
  return op.cls == OpClass::kMatmul || priced_apart ? efficiency_source_name(t.source)
                                                    : std::string_view();
}

// Which engine a prediction used, and where its GEMMs' efficiency came from.
nlohmann::json engine_json(const Prediction& p) {
  if (!p.engine) {
    return {{"id", "roofline"},         {"gemm_table", nullptr}, {"step_overhead_s", 0},
            {"latent_cache_cast_s", 0}, {"cuda_graphs", false},  {"past_captured_graphs", false},
            {"host_dispatch_s", 0},     {"host_wait_s", 0}};
  }
  nlohmann::json j = {
      {"id", p.engine->id},
      {"gemm_table", p.gemm_table ? nlohmann::json(p.gemm_table->id) : nlohmann::json(nullptr)},
      {"gemm_table_source", p.gemm_table
                                ? nlohmann::json(efficiency_source_name(p.gemm_table_source))
                                : nlohmann::json(nullptr)},
      {"step_overhead_s", p.engine_step_s},
      {"latent_cache_cast_s", p.latent_cache_cast_s},
      {"cuda_graphs", p.cuda_graphs},
      {"past_captured_graphs", p.past_captured_graphs},
      {"host_dispatch_s", p.host_dispatch_s},
      {"host_wait_s", p.host_wait_s}};
  // Only when a MoE table priced the MoE layers.
  if (p.moe_table) {
    j["moe_table"] = p.moe_table->id;
    j["moe_table_source"] = efficiency_source_name(p.moe_table_source);
  }
  // Only when an attention table priced the attention.
  if (p.attention_table) {
    j["attention_table"] = p.attention_table->id;
    j["attention_table_source"] = efficiency_source_name(p.attention_table_source);
  }
  // Only when the request named the engine's build (--engine-build).
  if (p.engine_build > 0) j["build"] = format_build_date(p.engine_build);
  // Only when the deployment turned the engine's graphs down (--cuda-graphs).
  if (p.graphs != GraphPolicy::kEngine)
    j["graph_policy"] = std::string(graph_policy_name(p.graphs));
  return j;
}

nlohmann::json engine_json(const GenerateResult& g) {
  nlohmann::json j = engine_json(g.prefill);
  j["latent_cache_cast_s"] = g.first_decode.latent_cache_cast_s;
  return j;
}

std::vector<TrackRecord> track_records(const EngineProfile* engine, const Device& d,
                                       std::initializer_list<MetricKind> kinds) {
  std::vector<TrackRecord> out;
  if (!engine) return out;
  for (const MetricKind k : kinds) {
    if (auto t = track_record_for(built_in_track_record(), engine->id, d, k)) out.push_back(*t);
  }
  return out;
}

std::vector<std::string> track_record_notes(const EngineProfile* engine, const Device& d,
                                            std::initializer_list<MetricKind> kinds) {
  std::vector<std::string> notes;
  if (!engine || engine->id == "roofline") return notes;
  for (const MetricKind k : kinds) {
    const auto t = track_record_for(built_in_track_record(), engine->id, d, k);
    notes.push_back(t ? track_record_note(*t) : no_track_record_note(engine->id, d, k));
  }
  return notes;
}

std::vector<TrackRecord> track_records(const Prediction& p, const Device& d, const Scenario& s) {
  return track_records(p.mode == Mode::kRealistic ? p.engine : nullptr, d,
                       {s.phase == Phase::kDecode ? MetricKind::kGeneration : MetricKind::kPrompt});
}

nlohmann::json to_json(const std::vector<TrackRecord>& records) {
  nlohmann::json a = nlohmann::json::array();
  for (const TrackRecord& t : records) a.push_back(to_json(t));
  return a;
}

nlohmann::json to_json(const ModelSpec& m, const Device& d, const Scenario& s, const Prediction& p,
                       bool per_op) {
  nlohmann::json j = {{"scenario", scenario_json(m, d, s, p.graph)},
                      {"mode", mode_name(p.mode)},
                      {"time_s", p.time_s},
                      {"tokens_per_s", p.tokens_per_s},
                      {"tokens_per_step", p.tokens_per_step},
                      {"bound", bound_name(p.bound)},
                      {"flops", p.flops},
                      {"bytes", p.bytes},
                      {"weight_bytes", p.weight_bytes},
                      {"activation_bytes", p.act_bytes},
                      {"kv_cache_bytes_read_written", p.kv_bytes},
                      {"memory_time_s", p.memory_time_s},
                      {"compute_time_s", p.compute_time_s},
                      {"overhead_s", p.overhead_s},
                      {"communication_s", p.communication_s},
                      {"memory", to_json(p.memory)},
                      {"engine", engine_json(p)},
                      {"notes", explain(m, d, s, p)},
                      {"track_record", to_json(track_records(p, d, s))}};
  if (p.graph.distinct_experts > 0) j["distinct_experts_per_layer"] = p.graph.distinct_experts;
  if (per_op) {
    nlohmann::json ops = nlohmann::json::array();
    for (int i = 0; i < p.graph.size; ++i) {
      const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
      const OpTiming& t = p.timings[static_cast<std::size_t>(i)];
      const std::string_view source = op_efficiency_source(op, t);
      ops.push_back(
          {{"name", op_name(op.kind)},
           {"kind", op_class_name(op.cls)},
           {"count", op.count},
           {"flops", op.count * op.flops},
           {"bytes", op.count * op.bytes()},
           {"weight_bytes", op.count * op.weight_bytes},
           {"activation_bytes", op.count * op.act_bytes},
           {"kv_cache_bytes", op.count * op.kv_bytes},
           {"ai", t.ai},
           {"bound", bound_name(t.bound)},
           {"time_s", t.time_s},
           {"memory_time_s", t.memory_time_s},
           {"compute_time_s", t.compute_time_s},
           {"overhead_s", t.overhead_s},
           {"compute_format", format_id(op.compute)},
           {"weight_only", op.weight_only},
           {"fused", op.launches == 0},
           {"efficiency_source", source.empty() ? nlohmann::json(nullptr) : nlohmann::json(source)},
           {"efficiency",
            t.efficiency > 0 ? nlohmann::json(t.efficiency) : nlohmann::json(nullptr)},
           {"moe_layer", op.moe_layer},
           {"sliding_layer", op.sliding_layer},
           {"linear_layer", op.linear_layer},
           {"draft_head", op.draft_head}});
    }
    j["ops"] = ops;
  }
  return j;
}

nlohmann::json to_json(const GenerateResult& g) {
  return {{"ttft_s", g.ttft_s},
          {"ttft_recomputed_s",
           g.ttft_recomputed_s > 0 ? nlohmann::json(g.ttft_recomputed_s) : nlohmann::json()},
          {"tpot_s", g.tpot_s},
          {"e2e_s", g.e2e_s},
          {"output_tokens_per_s", g.output_tokens_per_s},
          {"decode_tokens_per_s", g.decode_tokens_per_s},
          {"prefill",
           {{"time_s", g.prefill.time_s},
            {"bound", bound_name(g.prefill.bound)},
            {"tokens_per_s", g.prefill.tokens_per_s}}},
          {"first_decode",
           {{"time_s", g.first_decode.time_s}, {"bound", bound_name(g.first_decode.bound)}}},
          {"last_decode",
           {{"time_s", g.last_decode.time_s}, {"bound", bound_name(g.last_decode.bound)}}},
          {"peak_memory", to_json(g.peak_memory)}};
}

nlohmann::json to_json(const KvReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json j = {{"format", format_id(row.format)},
                        {"bytes_per_token", row.bytes_per_token},
                        {"total_bytes", row.total_bytes},
                        {"saving", row.saving},
                        {"crossover_context", row.crossover_context}};
    if (row.decode_step_s > 0) {
      j["decode_step_s"] = row.decode_step_s;
      j["speedup"] = row.speedup;
    }
    rows.push_back(std::move(j));
  }
  return {{"context", r.context},
          {"batch", r.batch},
          {"weight_bytes", r.weight_bytes},
          {"resident_weight_bytes", r.resident_weight_bytes},
          {"state_bytes_per_sequence", r.state_bytes_per_sequence},
          {"formats", rows}};
}

std::vector<std::string> explain(const ModelSpec& m, const Device& d, const Scenario& s,
                                 const Prediction& p) {
  std::vector<std::string> notes;
  // The largest contributors to the time.
  double attention = 0, weights_time = 0;
  for (int i = 0; i < p.graph.size; ++i) {
    const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
    const auto& timing = p.timings[static_cast<std::size_t>(i)];
    const double t = timing.time_s - timing.overhead_s;
    if (op.cls == OpClass::kAttention || op.kind == OpKind::kSoftmax) attention += t;
    if (op.cls == OpClass::kMatmul) weights_time += t;
  }
  notes.push_back(
      fmt::format("{}-bound: {:.0f}% of the time in weight matmuls, {:.0f}% in attention, "
                  "{:.0f}% in launch overhead",
                  bound_name(p.bound), 100 * weights_time / p.time_s, 100 * attention / p.time_s,
                  100 * p.overhead_s / p.time_s));
  if (s.phase == Phase::kDecode) {
    notes.push_back(fmt::format("a decode step streams {} of weights and {} of KV cache",
                                human_bytes(p.weight_bytes), human_bytes(p.kv_bytes)));
  } else if (s.cached > 0) {
    notes.push_back(fmt::format(
        "a prompt of {} tokens after {} cached: its queries attend over all {} ({:.0f}% of the "
        "pass in attention, {} of KV cache read and written); only its own tokens go through "
        "the weights",
        s.seq_len, s.cached, s.cached + s.seq_len, 100 * attention / p.time_s,
        human_bytes(p.kv_bytes)));
  }
  if (p.latent_cache_cast_s > 0 && p.engine && p.engine->latent_cache_cast) {
    const auto& cast = *p.engine->latent_cache_cast;
    notes.push_back(fmt::format(
        "{} of the step ({:.0f}%) converts {}'s whole fp8 KV pool ({} a GPU, the room it gives "
        "the cache) to bf16, at {:.3g} of the bandwidth: {}",
        human_time(p.latent_cache_cast_s), 100 * p.latent_cache_cast_s / p.time_s, p.engine->name,
        human_bytes(p.memory.kv_room_bytes), cast.bandwidth_efficiency.value, cast.kernel));
  }
  if (s.draft_tokens > 0) {
    double draft = 0;
    for (int i = 0; i < p.graph.size; ++i) {
      if (p.graph.ops[static_cast<std::size_t>(i)].draft_head)
        draft += p.timings[static_cast<std::size_t>(i)].time_s;
    }
    // Where the acceptance came from (past the last measured draft count, its
    // figure held).
    std::string origin;
    if (runs_at_measured_acceptance(m, s)) {
      const auto counts = static_cast<std::int64_t>(m.draft_tokens_per_step.size());
      origin = s.draft_tokens <= counts
                   ? fmt::format(
                         " (as measured for this model's own head; roofline model "
                         "show {} cites it)",
                         m.id)
                   : fmt::format(
                         " (held at the figure measured for this model's own head at "
                         "{} draft tokens; roofline model show {} cites it)",
                         counts, m.id);
    }
    notes.push_back(
        s.phase == Phase::kDecode
            ? fmt::format("speculative decoding: the draft head proposes {} tokens a sequence "
                          "({:.0f}% of the step), the model verifies {} at once; each draft "
                          "accepted at {:.3g} while the ones before it were: {:.3g} tokens a "
                          "sequence a step{}",
                          s.draft_tokens, 100 * draft / p.time_s, s.draft_tokens + 1, s.acceptance,
                          p.tokens_per_step, origin)
            : fmt::format("speculative decoding: the draft head runs over the prompt too, filling "
                          "its own KV cache ({:.0f}% of the pass)",
                          100 * draft / p.time_s));
  }
  if (p.graph.distinct_experts > 0 && s.ep > 1) {
    notes.push_back(fmt::format(
        "MoE, expert parallel over {} groups: the busiest touches {:.1f} of its {} experts per "
        "layer ({} tokens, uniform random routing; real routers are more skewed)",
        s.ep, p.graph.distinct_experts, m.moe->num_experts / s.ep, p.graph.tokens));
  } else if (p.graph.distinct_experts > 0) {
    notes.push_back(
        fmt::format("MoE: {:.1f} of {} experts touched per layer by {} tokens (uniform routing, an "
                    "upper bound)",
                    p.graph.distinct_experts, m.moe->num_experts, p.graph.tokens));
  }
  // The engine whose rules set the activations (also in ideal mode, where its
  // efficiencies are not applied).
  const EngineProfile* rules = p.engine ? p.engine : p.engine_not_applied;
  if (s.precision.act_from_engine && rules) {
    if (const auto* r = rules->weight_activation(p.graph.weights, d)) {
      notes.push_back(fmt::format(
          "{} activations: {} runs {} weights with them on {} ({}); the request named none "
          "(--act bf16 prices weight-only {}), KV cache {}",
          format_id(r->act), rules->name, format_id(r->weights), d.architecture, r->kernel,
          format_id(r->weights), format_id(s.precision.kv)));
    }
  }
  for (int i = 0; i < p.graph.size; ++i) {
    const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
    // (The engine's own dequantizing kernels say what they compute in below.)
    if (op.weight_only && op.kind != OpKind::kRouter &&
        p.timings[static_cast<std::size_t>(i)].source != EfficiencySource::kEngine) {
      const Format stored =
          op.moe_layer && op.kind != OpKind::kRouter ? p.graph.experts : p.graph.weights;
      const auto* r = rules ? rules->weight_activation(stored, d) : nullptr;
      notes.push_back(
          fmt::format("{} weights are weight-only on {}: dequantized to {} for the math{}",
                      format_id(stored), d.id, format_id(op.compute),
                      r ? fmt::format(" ({} runs them with {} activations here: --act {})",
                                      rules->name, format_id(r->act), format_id(r->act))
                        : std::string()));
      break;
    }
  }
  if (!p.memory.fits && p.memory.kv_rule_engine &&
      p.memory.total_bytes <= p.memory.capacity_bytes) {
    notes.push_back(fmt::format(
        "does not fit under {}'s KV memory rule: the KV cache needs {}, the rule leaves it {} "
        "beside {} of weights and activations",
        p.memory.kv_rule_engine->name, human_bytes(p.memory.kv_cache_bytes),
        human_bytes(std::max(p.memory.kv_room_bytes, 0.0)),
        human_bytes(p.memory.weights_bytes + p.memory.activation_bytes)));
  } else if (!p.memory.fits) {
    notes.push_back(fmt::format("does not fit: needs {} of {} on one device",
                                human_bytes(p.memory.total_bytes),
                                human_bytes(p.memory.capacity_bytes)));
  }
  if (p.engine_build > 0 && (!p.engine || (p.engine->dequant_gemm.cublas_before == 0 &&
                                           p.engine->launch_prefill_before == 0))) {
    notes.push_back(fmt::format("{} has no rules dated by build: the build of {} changes nothing",
                                p.engine ? p.engine->id : std::string("the reference engine"),
                                format_build_date(p.engine_build)));
  }
  // A graph policy where no engine prices launches by graph (the reference,
  // ideal mode): said, as an engine build without dated rules is.
  if (p.graphs != GraphPolicy::kEngine &&
      (p.mode == Mode::kIdeal || !p.engine || p.engine->id == "roofline")) {
    notes.push_back(
        fmt::format("CUDA graphs {}: {} prices no launch by graph, so it changes nothing",
                    graph_policy_name(p.graphs),
                    p.mode == Mode::kIdeal ? "ideal mode" : "the reference engine"));
  }
  if (p.mode == Mode::kRealistic && p.engine) {
    const EngineProfile& e = *p.engine;
    const bool decode = s.phase == Phase::kDecode;
    const EngineFigure& launch =
        e.launch_figure(p.cuda_graphs, p.graphs, p.engine_build, p.past_captured_graphs);
    int from_table = 0, from_moe_table = 0, from_dequant = 0, from_cublas = 0, matmuls = 0;
    int moe_layer_kinds = 0;
    int dequantized = 0;  // of from_dequant: an older build's dequantize-then-cuBLAS path
    const auto& q = e.dequant_gemm;
    const auto cublas_format = [&e](Format f) {
      return std::find(e.cublas_gemm.formats.begin(), e.cublas_gemm.formats.end(), f) !=
             e.cublas_gemm.formats.end();
    };
    for (int i = 0; i < p.graph.size; ++i) {
      const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
      if (op.cls != OpClass::kMatmul) continue;
      ++matmuls;
      const EfficiencySource src = p.timings[static_cast<std::size_t>(i)].source;
      from_table +=
          src == EfficiencySource::kMeasuredTable || src == EfficiencySource::kDerivedTable;
      const bool moe_priced =
          src == EfficiencySource::kMeasuredMoeTable || src == EfficiencySource::kDerivedMoeTable;
      from_moe_table += moe_priced;
      moe_layer_kinds += moe_priced && op.kind == OpKind::kDownProj;  // one a layer kind
      if (src == EfficiencySource::kEngine) {
        ++(cublas_format(op.weights) ? from_cublas : from_dequant);
        dequantized += q.dequantizes_for_cublas(p.engine_build, op.gemm_m, op.weights);
      }
    }
    std::string gemms = "GEMMs at the device's fractions (no measured tables for its kernels)";
    if (from_dequant + from_cublas > 0) {
      std::vector<std::string> parts;
      if (const auto it = e.dequant_gemm.architectures.find(d.architecture);
          from_dequant > dequantized && it != e.dequant_gemm.architectures.end()) {
        parts.push_back(fmt::format("{} as {} (dequantize, then multiply at {:.3g} of the {} peak)",
                                    from_dequant - dequantized, e.dequant_gemm.kernel,
                                    it->second.compute.value, format_id(e.dequant_gemm.peak)));
      }
      if (const auto it = e.cublas_gemm.compute.find(d.architecture);
          dequantized > 0 && it != e.cublas_gemm.compute.end()) {
        parts.push_back(fmt::format(
            "{} dequantized to F16 by a pass of their own, then {} at {:.3g} of the {} rate (a "
            "build of {}, before {}: {} rows and more went to cuBLAS; source {})",
            dequantized, e.cublas_gemm.kernel, it->second.value,
            e.cublas_gemm.fp16_accumulate ? "FP16-accumulate" : "datasheet",
            format_build_date(p.engine_build), format_build_date(q.cublas_before),
            static_cast<int>(q.cublas_above_rows) + 1, q.cublas_before_source));
      }
      if (const auto it = e.cublas_gemm.compute.find(d.architecture);
          from_cublas > 0 && it != e.cublas_gemm.compute.end()) {
        parts.push_back(fmt::format(
            "{} as {} (at {:.3g} of the {} rate{})", from_cublas, e.cublas_gemm.kernel,
            it->second.value, e.cublas_gemm.fp16_accumulate ? "FP16-accumulate" : "datasheet",
            it->second.confidence == Confidence::kDerived && !it->second.note.empty()
                ? "; " + it->second.note
                : ""));
      }
      gemms = fmt::format(
          "{} of {} matmul groups: {} (derived from published llama-bench runs, {}), the rest at "
          "the device's fractions",
          from_dequant + from_cublas, matmuls, fmt::join(parts, "; "), d.architecture);
    }
    if (p.gemm_table) {
      gemms = fmt::format("{} of {} matmul groups from the {} GEMM table ({}{})", from_table,
                          matmuls, p.gemm_table->id, efficiency_source_name(p.gemm_table_source),
                          p.gemm_table_source == EfficiencySource::kDerivedTable
                              ? ", the nearest measured device of this architecture"
                              : "");
      if (p.moe_table) {
        std::string by_shape =
            p.moe_layers_by_shape == 0 ? std::string()
            : p.moe_layers_by_shape >= moe_layer_kinds
                ? std::string("; each layer at its own measured shape and layout")
                : fmt::format(
                      "; {} of {} layer kinds at their own measured shape and layout, "
                      "the rest by the grid",
                      p.moe_layers_by_shape, moe_layer_kinds);
        if (p.moe_layers_by_shape > 0 && s.ep > 1) {
          by_shape += fmt::format(
              ", with expert parallelism the busiest rank's layer as the table measured it "
              "under its skewed routing ({}, the most loaded rank timed)",
              p.moe_table->routing_skew_distribution.empty()
                  ? std::string("a power law")
                  : p.moe_table->routing_skew_distribution);
        }
        gemms += fmt::format(
            ", {} MoE expert matmul groups priced as whole layers by the {} MoE table ({}{}{})",
            from_moe_table, p.moe_table->id, efficiency_source_name(p.moe_table_source),
            p.moe_table_source != EfficiencySource::kDerivedMoeTable ? ""
            : p.engine && p.moe_table->engine != p.engine->gemm_tables
                ? fmt::format(", {}'s layers of the same kernels standing in for {}'s, which are "
                              "not measured on {}",
                              engine_display_name(p.moe_table->engine), p.engine->name,
                              d.architecture)
            : p.moe_table->device == d.id
                ? ", the chosen kernels' layers measured inside another engine on this device"
                : ", the nearest measured device of this architecture",
            by_shape);
        if (const MoeKernelRelease* rule = p.moe_release) {
          gemms += rule->before_version.empty()
                       ? fmt::format(
                             "; every release runs {} experts on {} on {}, whose layers "
                             "price them",
                             rule->format, rule->family, d.architecture)
                       : fmt::format(
                             "; releases before {} ran {} experts on {} by default on "
                             "{}, whose layers price them",
                             rule->before_version, rule->format, rule->family, d.architecture);
          if (!rule->measured_as.empty()) {
            gemms += fmt::format(
                " (its {} layers where {}'s were not measured: the same kernel "
                "on another weight type)",
                rule->measured_as, rule->format);
          }
        }
        if (p.moe_layers_other_model > 0) {
          gemms += fmt::format(
              "; {} of {} layer kinds at the curve of the one model whose layers the kernels' "
              "entry measured, at the same layout and as many rows an expert",
              p.moe_layers_other_model, moe_layer_kinds);
        }
        if (p.padded_moe) {
          gemms += fmt::format(
              "; this release runs them through {}, whose padded workspace ({:.0f} rows a layer, "
              "computed whatever the tokens) sets the time of {} of {} layer kinds",
              p.padded_moe->kernel, p.moe_padded_rows, p.moe_layers_padded, moe_layer_kinds);
        }
      }
      if (from_table + from_moe_table < matmuls) gemms += ", the rest at the device's fractions";
    }
    if (p.attention_table) {
      std::set<std::string> kernels;
      for (int i = 0; i < p.graph.size; ++i) {
        const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
        const EfficiencySource src = p.timings[static_cast<std::size_t>(i)].source;
        if (src != EfficiencySource::kMeasuredAttentionTable &&
            src != EfficiencySource::kDerivedAttentionTable)
          continue;
        const bool linear = op.kind == OpKind::kDeltaRule || op.kind == OpKind::kShortConv;
        const auto* entry =
            linear
                ? p.attention_table->find_linear(op.prompt_attention, op.kind == OpKind::kShortConv)
                : p.attention_table->find(op.prompt_attention, op.latent_attention, op.weights);
        if (entry) kernels.insert(entry->kernel);
      }
      gemms += fmt::format(
          "; attention calls ({}) from the {} attention table ({}{}; a call holds the KV-cache "
          "write{})",
          fmt::join(kernels, ", "), p.attention_table->id,
          efficiency_source_name(p.attention_table_source),
          p.attention_table_source == EfficiencySource::kDerivedAttentionTable
              ? ", the nearest measured device of this architecture"
              : "",
          e.rope_in_attention ? " and RoPE" : "");
    }
    if (const auto* path = e.sparse_mla_path(m, s.precision.kv, d)) {
      bool absorbed_prompt = false, any = false;
      for (int i = 0; i < p.graph.size; ++i) {
        const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
        any |= op.engine_kernel;
        absorbed_prompt |= op.latent_attention && op.prompt_attention;
      }
      const bool prompts = s.phase == Phase::kPrefill || s.prefill_tokens > 0;
      if (any || prompts) {
        const EngineProfile::SparseMla& rule = *e.sparse_mla;
        // A rank's query heads (attention data parallelism splits the ranks).
        const double heads = static_cast<double>(m.heads) * static_cast<double>(s.attention_dp) /
                             static_cast<double>(s.tp);
        const double top_k = static_cast<double>(m.sparse_attention->top_k);
        const auto kernel = [heads, top_k](const EngineProfile::SparseMla::Kernel& k) {
          return fmt::format(
              "{:g} query heads a rank computed as {:g} over all {:g} top-k slots, at {:.3g} of "
              "the bf16 peak",
              heads, std::ceil(heads / k.head_tile.value) * k.head_tile.value, top_k,
              k.efficiency.value);
        };
        std::vector<std::string> parts;
        if (s.phase == Phase::kDecode) {
          parts.push_back(path->decode ? "decode tokens: " + kernel(*path->decode)
                                       : std::string("decode tokens on its dense-MLA attention"));
        }
        if (prompts && absorbed_prompt) {
          const bool on_decode = path->decode && heads < path->prompt_on_decode_kernel_below.value;
          parts.push_back(fmt::format("prompt tokens absorbed ({}/{} a head) on its {} kernel: {}",
                                      m.mla.kv_lora_rank + m.mla.qk_rope_head_dim,
                                      m.mla.kv_lora_rank, on_decode ? "decode" : "prefill",
                                      kernel(on_decode ? *path->decode : path->prompt)));
        } else if (prompts && rule.mha_prompts_up_to.known()) {
          parts.push_back(fmt::format("prompts of at most {:g} tokens expanded (MHA)",
                                      rule.mha_prompts_up_to.value));
        }
        if (!parts.empty())
          gemms += fmt::format("; sparse attention on {}: {}", rule.kernel, fmt::join(parts, "; "));
      }
    }
    if (const WindowMasking* rule = p.window_masking) {
      const bool split_kv = p.graph.window_masked_split_kv;
      gemms += fmt::format(
          "; {:g} sliding-window layers attend over the whole context: {}'s {} kernel masks the "
          "keys outside the window instead of skipping them in releases before {}",
          p.graph.window_masked_layers, rule->kernel,
          split_kv ? "split-KV decode" : "prompt and large-batch",
          split_kv ? rule->split_kv_before : rule->prompt_kernel_before);
    }
    if (e.allreduce_residual_rmsnorm && s.tp > 1 && s.attention_dp == 1) {
      gemms += "; residual adds and RMSNorms inside the all-reduce kernels";
    }
    if (e.activation_storage) {
      gemms += fmt::format("; activations between kernels in {} (its graph's tensors)",
                           format_id(*e.activation_storage));
    }
    if (e.gemm_copies) {
      int quantized = 0, converted = 0;
      for (int i = 0; i < p.graph.size; ++i) {
        const OpKind kind = p.graph.ops[static_cast<std::size_t>(i)].kind;
        quantized += kind == OpKind::kQuantizeInput;
        converted += kind == OpKind::kConvertInput;
      }
      if (quantized > 0) {
        gemms += fmt::format(
            "; {} GEMM groups read a q8_1 copy of their input, a kernel of "
            "its own (quantize_input)",
            quantized);
      }
      if (converted > 0) {
        gemms += fmt::format(
            "; {} GEMM groups read an F16 copy of their input and write F16, "
            "converted back after them (convert_input, convert_output)",
            converted);
      }
    }
    if (s.precision.expert_act && m.moe) {
      gemms += fmt::format("; {} experts with {} activations (the precision plan's)",
                           format_id(p.graph.experts), format_id(*s.precision.expert_act));
    } else if (const auto* rule = e.expert_activation(p.graph.experts, s.precision.act, d);
               rule && m.moe) {
      gemms += fmt::format("; {} experts with {} activations ({})", format_id(rule->weights),
                           format_id(rule->act), rule->kernel);
    }
    const bool host_dispatched = &launch == &e.launch_eager_s;
    const char* why_graphless = p.graphs == GraphPolicy::kOff ? "CUDA graphs off by the deployment"
                                : p.graphs == GraphPolicy::kDecodeOnly
                                    ? "CUDA graphs for decode steps only, by the deployment"
                                    : "more tokens a rank than the largest captured graph";
    notes.push_back(fmt::format(
        "engine {}: {}; {}{}{}", e.name, gemms,
        host_dispatched
            ? fmt::format("no graph ({}): the host issues each kernel in {} and runs ahead of "
                          "the GPU, {} of dispatch against the GPU's work{} ({})",
                          why_graphless, human_time(launch.value), human_time(p.host_dispatch_s),
                          p.host_wait_s > 0
                              ? fmt::format(", which waits {} for it", human_time(p.host_wait_s))
                              : std::string(", which hides it"),
                          launch.note.empty() ? e.citation(launch.source) : launch.note)
            : human_time(launch.known() ? launch.value : d.launch_overhead_s.value) +
                  " per kernel launch",
        host_dispatched ? ""
        : p.cuda_graphs ? " (CUDA graphs)"
        : &launch == &e.launch_prefill_before_s
            ? fmt::format(" (a build of {}, before {}: {}{})", format_build_date(p.engine_build),
                          format_build_date(e.launch_prefill_before),
                          launch.note.empty() ? e.citation(launch.source) : launch.note,
                          p.graphs != GraphPolicy::kEngine ? "; no graph by the deployment" : "")
        : p.graphs != GraphPolicy::kEngine
            ? fmt::format(" (no graph: CUDA graphs {} by the deployment)",
                          p.graphs == GraphPolicy::kOff ? "off" : "for decode steps only")
        : decode && e.decode_cuda_graphs ? " (eager: a step with prompt tokens, or a batch "
                                           "past the captured graphs)"
                                         : "",
        p.engine_step_s > 0
            ? fmt::format("; {} fixed host cost per step", human_time(p.engine_step_s))
            : std::string()));
  } else if (p.mode == Mode::kRealistic) {
    notes.push_back(
        fmt::format("realistic mode: bandwidth x {:.3f} ({}), matmul fractions per format, "
                    "{} per kernel launch",
                    d.bandwidth_fraction.value, confidence_name(d.bandwidth_fraction.confidence),
                    human_time(d.launch_overhead_s.value)));
  } else {
    notes.push_back(
        p.engine_not_applied
            ? fmt::format("ideal mode: datasheet peaks and bandwidth, no overheads; {}'s kernels "
                          "and costs are not applied (realistic mode applies them)",
                          p.engine_not_applied->name)
            : std::string("ideal mode: datasheet peaks and bandwidth, no overheads"));
  }
  if (const QuantizedRelease* r = followed_release(m, s.precision))
    notes.push_back(release_note(*r));
  if (p.file_mix && p.engine) {
    // The engine's file, not the checkpoint: what its layout stores otherwise.
    std::vector<std::string> roles;
    for (const FileMix::Role& r : p.file_mix->roles) {
      std::vector<std::string_view> ops;
      for (OpKind k : r.ops) ops.push_back(op_name(k));
      roles.push_back(fmt::format("{} in {}{}",
                                  r.non_expert ? "every weight but the routed experts"
                                               : fmt::format("{}", fmt::join(ops, ", ")),
                                  format_id(r.format),
                                  r.layers == FileMix::Layers::kUseMoreBits
                                      ? " in the layers llama.cpp's use_more_bits picks"
                                      : ""));
    }
    notes.push_back(fmt::format(
        "{}'s files for {}{}{}: {}; {} {} of weights on this GPU than the formats asked for",
        p.engine->name, format_id(p.file_mix->format), p.file_mix->experts ? " experts" : "",
        p.file_mix->note.empty() ? "" : ", " + p.file_mix->note, fmt::join(roles, "; "),
        human_bytes(std::abs(p.file_mix_bytes)), p.file_mix_bytes >= 0 ? "more" : "less"));
  }
  if (p.moe_padding_bytes > 0 && p.engine) {
    notes.push_back(fmt::format(
        "{} holds the routed experts padded to its MoE kernel's layout: {} more of weights on "
        "this GPU than the checkpoint's (in the memory estimate; the time streams the "
        "checkpoint's bytes)",
        p.engine->name, human_bytes(p.moe_padding_bytes)));
  }
  // The checkpoint's quantization, where the pass keeps its formats.
  if (p.graph.weights == m.native_weights || p.graph.experts == m.native_experts)
    notes.insert(notes.end(), m.quantization_notes.begin(), m.quantization_notes.end());
  for (const auto& n : m.notes) notes.push_back(n);
  for (auto& n : track_record_notes(
           p.mode == Mode::kRealistic ? p.engine : nullptr, d,
           {s.phase == Phase::kDecode ? MetricKind::kGeneration : MetricKind::kPrompt}))
    notes.push_back(std::move(n));
  return notes;
}

}  // namespace roofline

namespace roofline {

nlohmann::json to_json(const Candidate& c) {
  return {{"strategy", c.strategy},
          {"attention", attention_kernel_id(c.attention)},
          {"predicted_speedup", c.predicted_speedup},
          {"time_s", c.time_s},
          {"baseline_time_s", c.baseline_time_s},
          {"memory_saving", c.memory_saving},
          {"memory_bytes", c.memory_bytes},
          {"quality_loss_pct", c.quality.loss_pct},
          {"quality_quantified", c.quality.quantified},
          {"quality_basis", c.quality.basis},
          {"bound", bound_name(c.bound)},
          {"feasible", c.feasible},
          {"rejected_because", c.rejected_because},
          {"notes", c.notes},
          {"measured_sqnr_db",
           std::isnan(c.measured_sqnr_db) ? nlohmann::json() : nlohmann::json(c.measured_sqnr_db)},
          {"tensors_below_budget", c.tensors_below_budget}};
}

nlohmann::json to_json(const Recommendation& r) {
  nlohmann::json j = to_json(r.best);
  nlohmann::json alts = nlohmann::json::array();
  for (const auto& c : r.alternatives) alts.push_back(to_json(c));
  j["alternatives"] = alts;
  j["baseline"] = r.baseline;
  j["rationale"] = r.rationale;
  j["any_feasible"] = r.any_feasible;
  return j;
}

nlohmann::json to_json(const Strategy& s) {
  nlohmann::json ops = nlohmann::json::object();
  for (int i = 0; i < kOpKindCount; ++i) {
    const auto& o = s.ops[static_cast<std::size_t>(i)];
    if (!o.weights && !o.act) continue;
    nlohmann::json e = nlohmann::json::object();
    if (o.weights) e["weights"] = format_id(*o.weights);
    if (o.act) e["act"] = format_id(*o.act);
    ops[std::string(op_name(static_cast<OpKind>(i)))] = e;
  }
  nlohmann::json j = {
      {"name", s.name},          {"description", s.description}, {"weights", format_id(s.weights)},
      {"act", format_id(s.act)}, {"kv", format_id(s.kv)},        {"ops", ops},
      {"origin", s.origin}};
  if (s.experts) j["experts"] = format_id(*s.experts);
  if (s.expert_act) j["expert_act"] = format_id(*s.expert_act);
  return j;
}

nlohmann::json to_json(const Capacity& c) {
  nlohmann::json kv_memory = nullptr;
  if (c.kv_memory_engine) {
    kv_memory = {{"engine", c.kv_memory_engine->id},
                 {"share", c.kv_memory_share},
                 {"of", c.kv_memory_of_free ? "free" : "total"}};
  }
  return {{"max_batch", c.max_batch},
          {"max_context", c.max_context},
          {"max_context_by_memory", c.max_context_by_memory},
          {"context_window", c.context_window},
          {"kv_memory", kv_memory}};
}

nlohmann::json predict_document(const ModelSpec& m, const Device& d, const Scenario& s,
                                const Prediction& p, bool per_op,
                                const std::vector<std::string>& plan_notes,
                                const std::string& strategy, const Registry& registry) {
  nlohmann::json j = to_json(m, d, s, p, per_op);
  // The plan's notes first, as the CLI prints them: the track record closes the list.
  nlohmann::json notes = plan_notes;
  for (const auto& n : j["notes"]) notes.push_back(n);
  j["notes"] = std::move(notes);
  if (!strategy.empty()) j["strategy"] = strategy;
  j["capacity"] = to_json(capacity(m, d, s, p));
  j.update(stamp(registry));
  return j;
}

namespace {

nlohmann::json deployment_json(const Deployment& d) {
  nlohmann::json j = {{"engine", d.engine},
                      {"name", deployment_name(d)},
                      {"mode", d.mode == ServingMode::kAggregated ? "agg" : "disagg"},
                      {"weights", format_id(d.weights)},
                      {"tp", d.tp},
                      {"attention_dp", d.attention_dp},
                      {"ep", d.ep},
                      {"replicas", d.replicas},
                      {"concurrency_per_replica", d.concurrency},
                      {"ttft_s", d.serving.ttft_s},
                      {"tpot_s", d.serving.tpot_s},
                      {"output_tokens_per_s", d.tokens_per_s},
                      {"output_tokens_per_s_per_gpu", d.tokens_per_s_per_gpu},
                      {"output_tokens_per_s_per_user", d.tokens_per_s_per_user},
                      {"limited_by", d.serving.limited_by},
                      {"prefix_hit_rate", d.serving.prefix_hit_rate},
                      {"meets_targets", d.meets_targets},
                      {"misses", d.misses}};
  // The release asked for; null: the engine's current one.
  j["engine_version"] =
      d.engine_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.engine_version);
  if (d.mode == ServingMode::kDisaggregated) {
    j["prefill_workers"] = d.prefill_workers;
    j["prefill_tp"] = d.prefill_tp;
    j["prefill_attention_dp"] = d.prefill_attention_dp;
    j["prefill_ep"] = d.prefill_ep;
    j["decode_workers"] = d.decode_workers;
    j["decode_tp"] = d.decode_tp;
  }
  return j;
}

}  // namespace

namespace {

// The engines a search ranked or put on its front, the best's first, each once.
std::vector<const EngineProfile*> searched_engines(const SearchResult& r) {
  std::vector<const EngineProfile*> engines;
  const auto add = [&engines](const Deployment& x) {
    const EngineProfile* e = EngineRegistry::built_in().find(x.engine);
    if (e && std::find(engines.begin(), engines.end(), e) == engines.end()) engines.push_back(e);
  };
  if (r.best) add(*r.best);
  for (const auto& x : r.runners_up) add(x.deployment);
  for (const auto& x : r.front) add(x);
  return engines;
}

}  // namespace

std::vector<TrackRecord> search_track_records(const SearchResult& r, const Device& d) {
  std::vector<TrackRecord> records;
  for (const EngineProfile* e : searched_engines(r)) {
    const auto these = track_records(e, d, {MetricKind::kPrompt, MetricKind::kGeneration});
    records.insert(records.end(), these.begin(), these.end());
  }
  return records;
}

std::vector<std::string> search_track_record_notes(const SearchResult& r, const Device& d) {
  std::vector<std::string> notes;
  for (const EngineProfile* e : searched_engines(r)) {
    auto these = track_record_notes(e, d, {MetricKind::kPrompt, MetricKind::kGeneration});
    notes.insert(notes.end(), these.begin(), these.end());
  }
  return notes;
}

nlohmann::json search_document(const ModelSpec& m, const Device& d, const SearchSpec& spec,
                               const SearchResult& r, const Registry& registry) {
  nlohmann::json front = nlohmann::json::array(), runners = nlohmann::json::array(),
                 refusals = nlohmann::json::array();
  for (const auto& x : r.front) front.push_back(deployment_json(x));
  for (const auto& x : r.runners_up) {
    nlohmann::json j = deployment_json(x.deployment);
    j["why"] = x.why;
    runners.push_back(std::move(j));
  }
  for (const auto& [reason, n] : r.refusals) refusals.push_back({{"reason", reason}, {"n", n}});
  auto optional = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json out = {{"model", m.id},
                        {"hardware", d.id},
                        {"gpus", spec.gpus},
                        {"isl", spec.isl},
                        {"osl", spec.osl},
                        {"isl_min", shortest_length(spec.isl_min, spec.isl)},
                        {"osl_min", shortest_length(spec.osl_min, spec.osl)},
                        {"draft_tokens", spec.draft_tokens},
                        {"recipe", serving_recipe_name(spec.recipe)},
                        {"engine_versions", spec.engine_versions},
                        {"shared_prefix", spec.shared_prefix},
                        {"prompt_pool", spec.prompt_pool},
                        {"acceptance", optional(spec.acceptance)},
                        {"ttft_max_s", optional(spec.ttft_max_s)},
                        {"tpot_max_s", optional(spec.tpot_max_s)},
                        {"evaluated", r.evaluated},
                        {"refused", r.refused},
                        {"skipped", r.skipped},
                        {"front", front},
                        {"best", r.best ? deployment_json(*r.best) : nlohmann::json(nullptr)},
                        {"runners_up", runners},
                        {"refusals", refusals},
                        {"method", "the serving simulation per replica (docs/SERVING.md)"}};
  const std::vector<TrackRecord> records = search_track_records(r, d);
  out["track_record"] = to_json(records);
  out["notes"] = nlohmann::json::array();
  for (const auto& n : search_track_record_notes(r, d)) out["notes"].push_back(n);
  out.update(stamp(registry));
  return out;
}

namespace {

nlohmann::json spread_json(const Spread& x) {
  return {{"mean", x.mean}, {"p50", x.p50}, {"p90", x.p90}, {"p99", x.p99}};
}

}  // namespace

nlohmann::json serving_document(const ModelSpec& m, const Device& d, const ServingScenario& s,
                                const ServingResult& r, const ModelOptions& o,
                                const Registry& registry) {
  const nlohmann::json kv_memory = {
      {"share", r.kv_memory_share},
      {"of", r.kv_memory_of_free ? "free" : "total"},
      {"set", r.kv_memory_set},
      {"activation_bytes_per_gpu", r.kv_activation_bytes_per_gpu},
      {"profile_sampler",
       r.kv_profile_sampler_rows > 0
           ? nlohmann::json{{"rows", r.kv_profile_sampler_rows},
                            {"bytes_per_logit", r.kv_profile_sampler_bytes_per_logit}}
           : nlohmann::json(nullptr)}};
  // The engine's batch waiting as set (null: not set) and the steps that held prompts back.
  const nlohmann::json batch_wait = r.batch_wait_iters > 0 || r.batch_wait_ratio > 0
                                        ? nlohmann::json{{"iters", r.batch_wait_iters},
                                                         {"ratio", r.batch_wait_ratio},
                                                         {"waited_steps", r.waited_steps}}
                                        : nlohmann::json(nullptr);
  // The attention-DP balance as it ran (null: off) and the steps that held prompts back.
  const nlohmann::json adp_balance =
      r.adp_balance ? nlohmann::json{{"timeout_iters", r.adp_timeout_iters},
                                     {"batching_wait_iters", r.adp_batching_wait_iters},
                                     {"held_steps", r.balance_held_steps}}
                    : nlohmann::json(nullptr);
  nlohmann::json j = {{"model", m.id},
                      {"hardware", d.id},
                      {"engine", o.engine ? o.engine->id : std::string("roofline")},
                      {"isl", s.isl},
                      {"osl", s.osl},
                      {"isl_min", shortest_length(s.isl_min, s.isl)},
                      {"osl_min", shortest_length(s.osl_min, s.osl)},
                      {"concurrency", s.concurrency},
                      {"tp", s.step.tp},
                      {"pp", s.step.pp},
                      {"ep", s.step.ep},
                      {"attention_dp", s.step.attention_dp},
                      {"dp", s.replicas},
                      {"draft_tokens", s.step.draft_tokens},
                      {"acceptance", s.step.acceptance},
                      {"tokens_per_step", tokens_per_step(s.step)},
                      {"shared_prefix", s.shared_prefix},
                      {"prompt_pool", s.prompt_pool},
                      {"engine_version", s.engine_version},
                      {"overlap_scheduling", switch_name(s.overlap)},
                      {"chunked_prefill", switch_name(s.chunked_prefill)},
                      {"mode", s.mode == ServingMode::kAggregated ? "agg" : "disagg"},
                      {"weights", format_id(s.step.precision.weights.value_or(m.native_weights))},
                      {"act", format_id(s.step.precision.act)},
                      {"kv", format_id(s.step.precision.kv)},
                      {"ttft_s", r.ttft_s},
                      {"tpot_s", r.tpot_s},
                      {"e2e_s", r.e2e_s},
                      {"output_tokens_per_s", r.output_tokens_per_s},
                      {"output_tokens_per_s_per_gpu", r.output_tokens_per_s_per_gpu},
                      {"output_tokens_per_s_per_user", r.output_tokens_per_s_per_user},
                      {"gpus", r.gpus},
                      {"max_concurrency_that_fits", r.max_concurrency_that_fits},
                      {"kv_cache_tokens", r.kv_cache_tokens},
                      {"kv_cache_bytes_per_gpu", r.kv_cache_bytes_per_gpu},
                      {"kv_memory", kv_memory},
                      {"running", r.running},
                      {"queue_wait_s", r.queue_wait_s},
                      {"prompt_queue_wait_s", r.prompt_queue_wait_s},
                      {"plain_step_s", r.plain_step_s},
                      {"prompt_step_s", r.prompt_step_s},
                      {"prompts_per_step", r.prompts_per_step},
                      {"prompt_share", r.prompt_share},
                      {"ttft", spread_json(r.ttft)},
                      {"tpot", spread_json(r.tpot)},
                      {"itl", spread_json(r.itl)},
                      {"e2e", spread_json(r.e2e)},
                      {"requests", r.requests},
                      {"rounds", s.rounds},
                      {"steps", r.steps},
                      {"preemptions", r.preemptions},
                      {"prefix_hit_rate", r.prefix_hit_rate},
                      {"token_budget", r.token_budget},
                      {"max_running", r.max_running},
                      {"batch_wait", batch_wait},
                      {"adp_balance", adp_balance},
                      {"scheduler_recv_interval", r.scheduler_recv_interval},
                      {"recv_wait_s", r.recv_wait_s},
                      {"kv_block_tokens", r.kv_block_tokens},
                      {"formed_a_step_ahead", r.formed_a_step_ahead},
                      {"decode_formed_a_step_ahead", r.decode_formed_a_step_ahead},
                      {"decode_token_budget", r.decode_token_budget},
                      {"decode_max_running", r.decode_max_running},
                      {"recipe", serving_recipe_name(r.recipe)},
                      {"limited_by", r.limited_by},
                      {"method",
                       "a discrete-event simulation of the closed-loop benchmark against the "
                       "engine's scheduler (means and percentiles over the requests)"},
                      {"notes", r.notes}};
  const auto records = track_records(o.engine, d, {MetricKind::kPrompt, MetricKind::kGeneration});
  j["track_record"] = to_json(records);
  for (auto& n : track_record_notes(o.engine, d, {MetricKind::kPrompt, MetricKind::kGeneration}))
    j["notes"].push_back(std::move(n));
  if (s.mode == ServingMode::kDisaggregated) {
    j["prefill_workers"] = s.prefill_workers;
    j["prefill_tp"] = s.prefill_tp;
    j["prefill_attention_dp"] = s.prefill_attention_dp;
    j["prefill_ep"] = s.prefill_ep;
    j["decode_workers"] = s.decode_workers;
    j["decode_tp"] = s.decode_tp;
    j["kv_transfer_s"] = r.kv_transfer_s;
  }
  j.update(stamp(registry));
  return j;
}

nlohmann::json generate_document(const ModelSpec& m, const Device& d, const Scenario& s,
                                 const GenerateResult& g, std::int64_t prompt, std::int64_t gen,
                                 Mode mode, const Registry& registry) {
  nlohmann::json j = to_json(g);
  j["scenario"] = scenario_json(m, d, s, g.prefill.graph);
  j["scenario"].erase("phase");
  j["scenario"].erase("seq_len");
  j["scenario"]["prompt"] = prompt;
  j["scenario"]["gen"] = gen;
  j["mode"] = mode_name(mode);
  j["engine"] = engine_json(g);
  const auto records =
      track_records(g.prefill.mode == Mode::kRealistic ? g.prefill.engine : nullptr, d,
                    {MetricKind::kPrompt, MetricKind::kGeneration});
  j["track_record"] = to_json(records);
  j["notes"] = track_record_notes(g.prefill.mode == Mode::kRealistic ? g.prefill.engine : nullptr,
                                  d, {MetricKind::kPrompt, MetricKind::kGeneration});
  j.update(stamp(registry));
  return j;
}

}  // namespace roofline
