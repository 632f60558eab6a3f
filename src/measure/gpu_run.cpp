#include "roofline/gpu_run.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "roofline/error.h"
#include "roofline/formats.h"
#include "roofline/roofline.h"
#include "strict_json.h"

namespace roofline::measure {
namespace {

using detail::StrictObject;
using nlohmann::json;

constexpr std::string_view kKernelTableSchema = "roofline-kernel-table-1";

double positive(StrictObject& o, std::string_view key) {
  const double v = o.non_negative(key);
  if (v <= 0) o.fail(key, "must be positive");
  return v;
}

std::int64_t integer(StrictObject& o, std::string_view key, std::int64_t lo, std::int64_t hi) {
  const double v = o.non_negative(key);
  if (v != std::floor(v) || v < static_cast<double>(lo) || v > static_cast<double>(hi)) {
    o.fail(key, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return static_cast<std::int64_t>(v);
}

double optional_number(StrictObject& o, std::string_view key) {
  return o.has(key) ? o.non_negative(key) : 0.0;
}

bool boolean(StrictObject& o, std::string_view key) {
  const json& v = o.required(key);
  if (!v.is_boolean()) o.fail(key, "expected true or false");
  return v.get<bool>();
}

std::string one_of(StrictObject& o, std::string_view key,
                   std::initializer_list<std::string_view> allowed) {
  std::string v = o.string(key);
  for (const auto a : allowed) {
    if (v == a) return v;
  }
  std::string list;
  for (const auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  o.fail(key, "must be one of " + list);
}

GpuDeviceLine parse_device(StrictObject& o) {
  GpuDeviceLine d;
  d.gpu = o.string("gpu");
  d.sm_count = integer(o, "sm_count", 1, 100000);
  d.compute_capability = o.string("compute_capability");
  d.memory_bytes = positive(o, "memory_bytes");
  d.l2_bytes = o.non_negative("l2_bytes");
  d.l2_flush_bytes = positive(o, "l2_flush_bytes");
  d.driver_version = integer(o, "driver_version", 0, 1000000);
  d.runtime_version = integer(o, "runtime_version", 0, 1000000);
  d.started_utc = o.optional_string("started_utc", "");
  return d;
}

GpuBandwidthLine parse_bandwidth(StrictObject& o) {
  GpuBandwidthLine b;
  b.bytes = positive(o, "bytes");
  b.memcpy_Bps = positive(o, "memcpy_Bps");
  b.copy_Bps = positive(o, "copy_Bps");
  b.read_Bps = positive(o, "read_Bps");
  for (const char* key : {"memcpy_p10_s", "memcpy_p90_s", "copy_median_s", "copy_p10_s",
                          "copy_p90_s", "read_median_s", "read_p10_s", "read_p90_s"}) {
    (void)positive(o, key);
  }
  (void)integer(o, "repetitions", 1, 1000000);
  b.sm_clock_mhz = optional_number(o, "sm_clock_mhz");
  (void)optional_number(o, "power_w");
  (void)optional_number(o, "temperature_c");
  return b;
}

GpuCase parse_case(StrictObject& o, const std::string& type) {
  GpuCase c;
  c.type = type;
  c.m = integer(o, "m", 1, 65536);
  c.n = integer(o, "n", 1, 65536);
  c.k = integer(o, "k", 1, 65536);
  c.precision = one_of(o, "precision", {"fp16", "bf16", "fp8", "nvfp4"});
  c.label = o.optional_string("label", "");
  if (o.has("error")) {
    c.error = o.string("error");
    if (c.error.empty()) o.fail("error", "must say why the case did not run");
    return c;
  }
  c.output = one_of(o, "output", {"fp16", "bf16"});
  c.kernel = one_of(o, "kernel", {"cublaslt", "gemv"});
  if ((c.kernel == "gemv") != (type == "gemv"))
    o.fail("kernel", "gemv rows run the GEMV kernel, gemm rows cuBLASLt");
  c.median_s = positive(o, "median_s");
  c.p10_s = positive(o, "p10_s");
  c.p90_s = positive(o, "p90_s");
  c.min_s = positive(o, "min_s");
  if (!(c.min_s <= c.p10_s && c.p10_s <= c.median_s && c.median_s <= c.p90_s)) {
    o.fail("median_s", "the times must be ordered min <= p10 <= median <= p90");
  }
  c.repetitions = integer(o, "repetitions", 1, 1000000);
  c.l2 = one_of(o, "l2", {"flushed", "warm"});
  c.flops = positive(o, "flops");
  c.bytes = positive(o, "bytes");
  (void)positive(o, "flops_per_s");
  (void)positive(o, "bandwidth_Bps");
  if (c.kernel == "gemv") {
    (void)integer(o, "warps_per_row", 1, 32);
    (void)integer(o, "blocks", 1, std::int64_t{1} << 31);
    c.copy_bandwidth_fraction = optional_number(o, "copy_bandwidth_fraction");
  } else {
    c.algorithm = integer(o, "algorithm", 0, 64);
    c.fast_accum = boolean(o, "fast_accum");
  }
  c.check = one_of(o, "check", {"passed", "failed"});
  const json& e = o.required("rel_error");
  if (e.is_null()) {
    c.rel_error = std::nan("");  // a non-finite output: the check cannot have passed
    if (c.check == "passed") o.fail("check", "a null rel_error cannot pass");
  } else {
    c.rel_error = o.non_negative("rel_error");
  }
  c.tolerance = positive(o, "tolerance");
  c.sm_clock_mhz = optional_number(o, "sm_clock_mhz");
  c.power_w = optional_number(o, "power_w");
  c.temperature_c = optional_number(o, "temperature_c");
  return c;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

}  // namespace

GpuRun parse_gpu_run(std::string_view text, const std::string& origin) {
  if (text.size() > kMaxGpuRunBytes) {
    throw ParseError(origin + ": " + std::to_string(text.size()) +
                     " bytes, more than the limit of " + std::to_string(kMaxGpuRunBytes));
  }
  GpuRun run;
  bool have_device = false;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const bool last_without_newline = end == std::string_view::npos;
    const std::string_view line =
        text.substr(pos, last_without_newline ? text.size() - pos : end - pos);
    pos = last_without_newline ? text.size() : end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = origin + ": line " + std::to_string(line_no);
    if (run.finished) throw ParseError(where + ": nothing may follow the \"done\" line");
    json value;
    try {
      value = detail::parse_json_text(line, where, kMaxGpuRunLineBytes);
    } catch (const ParseError&) {
      if (last_without_newline) {  // cut off by a timeout while it was written
        run.truncated = true;
        break;
      }
      throw;
    }
    StrictObject o(value, where, "");
    const std::string type =
        one_of(o, "type", {"device", "bandwidth", "gemm", "gemv", "skipped", "done"});
    if (!have_device && type != "device")
      o.fail("type", "the first line must be the \"device\" line");
    if (type == "device") {
      if (have_device) o.fail("type", "a second \"device\" line");
      run.device = parse_device(o);
      have_device = true;
    } else if (type == "bandwidth") {
      if (o.has("error")) {
        (void)o.string("error");
      } else {
        run.bandwidth = parse_bandwidth(o);
      }
    } else if (type == "gemm" || type == "gemv") {
      run.cases.push_back(parse_case(o, type));
    } else if (type == "skipped") {
      const std::string precision = o.string("precision");
      run.skipped.push_back(precision + ": " + o.string("reason"));
    } else {
      (void)integer(o, "cases", 0, 1000000);
      (void)integer(o, "failed", 0, 1000000);
      run.not_started = integer(o, "not_started", 0, 1000000);
      run.seconds = o.non_negative("seconds");
      run.finished = true;
    }
    o.finish();
  }
  if (!have_device)
    throw ParseError(origin + ": no \"device\" line: not the output of roofline-gpu suite");
  return run;
}

GpuRun load_gpu_run(const std::string& path) {
  return parse_gpu_run(detail::read_text_file(path, kMaxGpuRunBytes), path);
}

GpuComparison compare_gpu_run(const GpuRun& run, const Device& device,
                              const std::function<bool(const GpuCase&)>& include) {
  GpuComparison out;
  ModelOptions ideal;
  ideal.mode = Mode::kIdeal;
  std::vector<double> abs_errors, errors;
  for (const GpuCase& c : run.cases) {
    if (!c.passed() || (include && !include(c))) continue;
    const Format f = parse_format(c.precision);
    const GemmProblem problem{c.m, c.n, c.k, f, f};
    GpuComparisonRow row;
    row.measured = &c;
    try {
      row.predicted_s = predict_gemm(device, problem).time_s;
      const RooflineResult i = predict_gemm(device, problem, ideal);
      row.ideal_s = i.time_s;
      row.bound = std::string(bound_name(i.bound));
    } catch (const Unsupported&) {
      continue;  // a format the device has no peak for (nvfp4 before Blackwell)
    }
    row.error_pct = (row.predicted_s - c.median_s) / c.median_s * 100;
    row.efficiency = row.ideal_s / c.median_s;
    abs_errors.push_back(std::fabs(row.error_pct));
    errors.push_back(row.error_pct);
    out.rows.push_back(row);
  }
  if (out.rows.empty())
    throw Unsupported("no case of the run ran and passed its check on " + device.id);
  out.median_abs_error_pct = median_of(abs_errors);
  out.max_abs_error_pct = *std::max_element(abs_errors.begin(), abs_errors.end());
  out.median_signed_error_pct = median_of(errors);
  return out;
}

json kernel_table_json(const GpuRun& run, const Device& device, const std::string& run_source) {
  const GpuComparison c = compare_gpu_run(run, device);
  std::vector<double> clocks;
  std::set<std::string> l2;
  json entries = json::array();
  for (const GpuComparisonRow& r : c.rows) {
    const GpuCase& m = *r.measured;
    if (m.sm_clock_mhz > 0) clocks.push_back(m.sm_clock_mhz);
    l2.insert(m.l2);
    entries.push_back({{"op", m.type},
                       {"kernel", m.kernel},
                       {"precision", m.precision},
                       {"m", m.m},
                       {"n", m.n},
                       {"k", m.k},
                       {"time_s", m.median_s},
                       {"p10_s", m.p10_s},
                       {"p90_s", m.p90_s},
                       {"efficiency", r.efficiency},
                       {"bound", r.bound}});
  }
  const std::string date =
      run.device.started_utc.size() >= 10 ? run.device.started_utc.substr(0, 10) : "";
  json measured = {{"gpu", run.device.gpu},
                   {"date", date},
                   {"confidence", "measured"},
                   {"source", "run"},
                   {"driver_version", run.device.driver_version},
                   {"runtime_version", run.device.runtime_version},
                   {"l2", l2.size() == 1 ? *l2.begin() : std::string("mixed")},
                   {"sm_clock_mhz_median", median_of(clocks)}};
  json table = {
      {"schema", kKernelTableSchema},
      {"id", device.id + "-cublaslt"},
      {"device", device.id},
      {"library", "cublaslt"},
      {"sources",
       {{"run", run_source},
        {"method",
         std::string(
             "roofline-gpu suite (cuda/): medians of CUDA-event times, repetitions enqueued "
             "back to back, ") +
             (l2.size() == 1 && *l2.begin() == "flushed"
                  ? "each after an L2 flush of twice the L2"
                  : "operands left in L2 in some or all cases") +
             "; every result checked against a host reference. efficiency = the datasheet "
             "roofline's time / the measured median"}}},
      {"measured", measured},
      {"entries", entries}};
  if (run.bandwidth) {
    table["memory"] = {{"memcpy_Bps", run.bandwidth->memcpy_Bps},
                       {"copy_Bps", run.bandwidth->copy_Bps},
                       {"read_Bps", run.bandwidth->read_Bps},
                       {"datasheet_Bps", device.memory_bandwidth_Bps.value}};
  }
  return table;
}

KernelTable parse_kernel_table(std::string_view text, const std::string& origin) {
  const json doc = detail::parse_json_text(text, origin, kMaxGpuRunBytes);
  StrictObject o(doc, origin, "");
  KernelTable t;
  if (o.string("schema") != kKernelTableSchema)
    o.fail("schema", "expected " + std::string(kKernelTableSchema));
  t.id = o.string("id");
  t.device = o.string("device");
  t.library = one_of(o, "library", {"cublaslt"});
  const auto sources = detail::read_sources(o);
  StrictObject m = o.object("measured");
  t.gpu = m.string("gpu");
  t.date = m.string("date");
  t.confidence = one_of(m, "confidence", {"measured"});
  if (!sources.count(m.string("source"))) m.fail("source", "names no entry of \"sources\"");
  (void)integer(m, "driver_version", 0, 1000000);
  (void)integer(m, "runtime_version", 0, 1000000);
  t.l2 = one_of(m, "l2", {"flushed", "warm", "mixed"});
  (void)m.non_negative("sm_clock_mhz_median");
  m.finish();
  if (o.has("memory")) {
    StrictObject mem = o.object("memory");
    t.memcpy_Bps = positive(mem, "memcpy_Bps");
    t.copy_Bps = positive(mem, "copy_Bps");
    t.read_Bps = positive(mem, "read_Bps");
    (void)positive(mem, "datasheet_Bps");
    mem.finish();
  }
  const json& entries = o.required("entries");
  if (!entries.is_array() || entries.empty()) o.fail("entries", "expected a non-empty array");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    StrictObject e(entries[i], origin, "entries[" + std::to_string(i) + "]");
    KernelTableEntry x;
    x.op = one_of(e, "op", {"gemm", "gemv"});
    x.kernel = one_of(e, "kernel", {"cublaslt", "gemv"});
    x.precision = one_of(e, "precision", {"fp16", "bf16", "fp8", "nvfp4"});
    x.m = integer(e, "m", 1, 65536);
    x.n = integer(e, "n", 1, 65536);
    x.k = integer(e, "k", 1, 65536);
    x.time_s = positive(e, "time_s");
    x.p10_s = positive(e, "p10_s");
    x.p90_s = positive(e, "p90_s");
    x.efficiency = positive(e, "efficiency");
    // Above the roofline means a wrong datasheet figure or a cached operand.
    if (x.efficiency > 1.05) e.fail("efficiency", "above the roofline (more than 1.05)");
    x.bound = one_of(e, "bound", {"memory", "compute"});
    e.finish();
    t.entries.push_back(x);
  }
  o.finish();
  return t;
}

}  // namespace roofline::measure

namespace roofline::measure {

GemmTable kernel_file_table(std::string_view text, const std::string& origin) {
  constexpr std::size_t kMaxKernelFileBytes = std::size_t{8} << 20;
  const json doc = detail::parse_json_text(text, origin, kMaxKernelFileBytes);
  if (doc.is_object() && doc.contains("schema") && doc["schema"] == "roofline-gemm-efficiency-1")
    return parse_gemm_table(text, origin);
  const KernelTable k = parse_kernel_table(text, origin);
  std::vector<GemmMeasurement> rows;
  for (const KernelTableEntry& e : k.entries) {
    std::string key;
    if (e.precision == "bf16" || e.precision == "fp16") key = "bf16";
    if (e.precision == "fp8") key = "fp8";
    if (key.empty()) continue;
    rows.push_back({key, e.op + " " + e.kernel, static_cast<double>(e.m),
                    static_cast<double>(e.n) * static_cast<double>(e.k), e.time_s, e.efficiency});
  }
  return gemm_table_from_measurements(
      rows, k.device, "measured",
      origin + ": " + k.gpu + ", " + k.library + ", " + k.date + " (roofline calibrate --gpu)");
}

GemmTable load_kernel_file(const std::string& path) {
  return kernel_file_table(detail::read_text_file(path, std::size_t{8} << 20), path);
}

}  // namespace roofline::measure
