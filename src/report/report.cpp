#include "roofline/report.h"

#include <fmt/format.h>

#include <cmath>

#include "roofline/version.h"

namespace roofline {
namespace {

// Scales x by powers of 1000 and appends a prefix: (2.73e11, "B/s") -> "273 GB/s".
std::string si(double x, std::string_view unit) {
  if (std::isnan(x)) return "n/a";
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  double v = x;
  while (std::fabs(v) >= 1000.0 && i < 6) {
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
      pj["engine"] = engine_name(p->engine);
      pj["accumulate"] = accumulate_name(p->accumulate);
      peaks[std::string(info.id)] = pj;
      if (p->engine == Engine::kTensor) formats.push_back(info.id);
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
    notes.push_back(fmt::format("mixed {} x {} operands run natively at the {} rate", w,
                                format_id(p.act), c));
  }
  const auto& peak = *d.peaks[format_index(r.compute_format)];
  if (peak.accumulate == Accumulate::kFp32 && r.compute_format != Format::kFp32 &&
      peak.note.find("FP16 accumulate") != std::string::npos) {
    notes.push_back(fmt::format(
        "the {} peak {} is the FP32-accumulate rate that frameworks use; this device's tensor "
        "cores run FP16-accumulate at twice it",
        c, human_rate(peak.value, "FLOP/s")));
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
  const bool below = r.ai < r.ridge_ai;
  if (below == (r.bound == Bound::kMemory)) {
    notes.push_back(fmt::format("arithmetic intensity {:.3g} FLOP/B is {} the ridge at {:.3g} FLOP/B: {}-bound",
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

std::string Table::text() const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], display_width(row[i]));
  };
  widen(header_);
  for (const auto& row : rows_) widen(row);
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string l;
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      l += row[i];
      if (i + 1 < row.size()) l += std::string(width[i] - display_width(row[i]) + 2, ' ');
    }
    out += l + "\n";
  };
  line(header_);
  std::vector<std::string> rule;
  for (auto w : width) rule.emplace_back(w, '-');
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
