#include "roofline/hardware.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../common/embedded_data.h"
#include "../common/strict_json.h"
#include "roofline/error.h"

namespace roofline {
namespace {

using detail::StrictObject;

// A device file is a few kilobytes; anything far larger is not one.
constexpr std::size_t kMaxDeviceFileBytes = 1 << 20;

Confidence parse_confidence(StrictObject& obj) {
  const std::string text = obj.string("confidence");
  if (text == "vendor") return Confidence::kVendor;
  if (text == "derived") return Confidence::kDerived;
  if (text == "measured") return Confidence::kMeasured;
  if (text == "unknown") return Confidence::kUnknown;
  obj.fail("confidence", "must be one of vendor, derived, measured, unknown (got '" + text + "')");
}

// Reads the common figure keys; the caller finishes the object.
void read_figure_fields(StrictObject& obj, const std::map<std::string, std::string>& sources,
                        Figure* out) {
  const auto& v = obj.required("value");
  out->confidence = parse_confidence(obj);
  if (v.is_null()) {
    if (out->confidence != Confidence::kUnknown) {
      obj.fail("value", "null is only allowed with confidence \"unknown\"");
    }
    out->value = std::nan("");
  } else {
    out->value = obj.non_negative("value");
    if (out->confidence == Confidence::kUnknown) {
      obj.fail("confidence", "\"unknown\" requires \"value\": null");
    }
  }
  out->source = obj.string("source");
  if (sources.find(out->source) == sources.end()) {
    obj.fail("source", "'" + out->source + "' is not a key of \"sources\"");
  }
  out->note = obj.optional_string("note", "");
}

Figure read_figure(StrictObject& parent, std::string_view key,
                   const std::map<std::string, std::string>& sources) {
  StrictObject obj = parent.object(key);
  Figure f;
  read_figure_fields(obj, sources, &f);
  obj.finish();
  return f;
}

// A figure that must be published and positive (used in arithmetic).
Figure read_positive_figure(StrictObject& parent, std::string_view key,
                            const std::map<std::string, std::string>& sources) {
  Figure f = read_figure(parent, key, sources);
  if (!f.known() || f.value <= 0) parent.fail(key, "value must be a positive number");
  return f;
}

// Plausible ranges: wide enough for every CPU and GPU there is or will soon be,
// narrow enough that a typo (or 5e-324, or 1e308) cannot make every later
// time zero, infinite or NaN.
struct Range {
  double lo, hi;
  const char* text;  // the range in words, for the message
};
constexpr Range kCapacityRange{1e6, 1e15, "1 MB to 1 PB"};
constexpr Range kBandwidthRange{1e9, 1e14, "1 GB/s to 100 TB/s"};
constexpr Range kLinkRange{0, 1e14, "0 to 100 TB/s"};
constexpr Range kSmRange{1, 1e5, "1 to 100,000"};
constexpr Range kDomainRange{1, 1024, "1 to 1,024 GPUs"};
constexpr Range kL2Range{0, 1e10, "0 to 10 GB"};
constexpr Range kSharedRange{1, 1e8, "1 B to 100 MB"};
constexpr Range kClockRange{1e6, 1e11, "1 MHz to 100 GHz"};
constexpr Range kPowerRange{0, 1e5, "0 to 100 kW"};
constexpr Range kPeakRange{1e8, 1e18, "0.1 GFLOP/s to 1 EFLOP/s"};
constexpr Range kOverheadRange{0, 0.1, "0 to 0.1 s"};

void check_range(StrictObject& parent, std::string_view key, const Figure& f, Range r) {
  if (f.known() && (f.value < r.lo || f.value > r.hi)) {
    char value[32];
    std::snprintf(value, sizeof value, "%.6g", f.value);
    parent.fail(key, std::string("value ") + value + " is outside the plausible range " + r.text);
  }
}

Figure read_figure(StrictObject& parent, std::string_view key,
                   const std::map<std::string, std::string>& sources, Range r) {
  Figure f = read_figure(parent, key, sources);
  check_range(parent, key, f, r);
  return f;
}

Figure read_positive_figure(StrictObject& parent, std::string_view key,
                            const std::map<std::string, std::string>& sources, Range r) {
  Figure f = read_positive_figure(parent, key, sources);
  check_range(parent, key, f, r);
  return f;
}

Figure read_fraction(StrictObject& parent, std::string_view key,
                     const std::map<std::string, std::string>& sources) {
  Figure f = read_positive_figure(parent, key, sources);
  if (f.value > 1.0) parent.fail(key, "a fraction of peak must be in (0, 1]");
  return f;
}

PeakFigure read_peak(StrictObject& peaks, std::string_view key,
                     const std::map<std::string, std::string>& sources) {
  StrictObject obj = peaks.object(key);
  PeakFigure p;
  read_figure_fields(obj, sources, &p);
  if (p.known() && p.value <= 0) obj.fail("value", "a peak must be positive");
  check_range(obj, "value", p, kPeakRange);
  const std::string unit = obj.string("unit");
  if (unit == "tensor") {
    p.unit = ComputeUnit::kTensor;
  } else if (unit == "vector") {
    p.unit = ComputeUnit::kVector;
  } else {
    obj.fail("unit", "must be \"tensor\" or \"vector\"");
  }
  const std::string acc = obj.string("accumulate");
  if (acc == "fp32") {
    p.accumulate = Accumulate::kFp32;
  } else if (acc == "fp16") {
    p.accumulate = Accumulate::kFp16;
  } else if (acc == "int32") {
    p.accumulate = Accumulate::kInt32;
  } else {
    obj.fail("accumulate", "must be \"fp32\", \"fp16\" or \"int32\"");
  }
  if (obj.has("fp16_accumulate")) {
    if (p.unit != ComputeUnit::kTensor || p.accumulate != Accumulate::kFp32 || !p.known())
      obj.fail("fp16_accumulate", "only a published FP32-accumulate tensor peak has one");
    // The tensor instructions that take an FP16 accumulator: FP16 and FP8 inputs.
    if (key != "fp16" && key != "fp8" && key != "fp8-e5m2")
      obj.fail("fp16_accumulate", "only fp16 and fp8 inputs accumulate in FP16");
    p.fp16_accumulate = read_positive_figure(obj, "fp16_accumulate", sources);
    // GeForce parts run FP16 accumulation at twice the FP32-accumulate rate.
    if (p.fp16_accumulate.value < p.value || p.fp16_accumulate.value > 4 * p.value)
      obj.fail("fp16_accumulate", "must be 1 to 4 times the peak's value");
  }
  obj.finish();
  return p;
}

Format format_key(StrictObject& obj, const std::string& key) {
  Format f{};
  if (!try_parse_format(key, &f) || format_id(f) != key) {
    obj.fail(key, "not a format id of the format table");
  }
  return f;
}

std::string device_id_text(StrictObject& doc, std::string_view key) {
  std::string id = doc.string(key);
  if (id.empty() || id.size() > 64) doc.fail(key, "must be 1 to 64 characters");
  for (char c : id) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) doc.fail(key, "'" + id + "' may use only a-z, 0-9, '-', '_' and '.'");
  }
  return id;
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ParseError(path + ": cannot read: not a regular file");
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw ParseError(path + ": cannot read: " + ec.message());
  if (size > kMaxDeviceFileBytes) {
    throw ParseError(path + ": " + std::to_string(size) + " bytes is too large for a device file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError(path + ": cannot open for reading");
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

std::string_view confidence_name(Confidence c) noexcept {
  switch (c) {
    case Confidence::kVendor:
      return "vendor";
    case Confidence::kDerived:
      return "derived";
    case Confidence::kMeasured:
      return "measured";
    case Confidence::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view compute_unit_name(ComputeUnit u) noexcept {
  return u == ComputeUnit::kTensor ? "tensor" : "vector";
}

std::string_view accumulate_name(Accumulate a) noexcept {
  switch (a) {
    case Accumulate::kFp32:
      return "fp32";
    case Accumulate::kFp16:
      return "fp16";
    case Accumulate::kInt32:
      return "int32";
  }
  return "fp32";
}

std::string Device::citation(const Figure& f) const {
  auto it = sources.find(f.source);
  return it == sources.end() ? std::string() : it->second;
}

Device parse_device(std::string_view json_text, const std::string& origin) {
  const nlohmann::json doc_json = detail::parse_json_text(json_text, origin, kMaxDeviceFileBytes);
  StrictObject doc(doc_json, origin, "");
  Device d;
  d.origin = origin;
  d.id = device_id_text(doc, "id");
  d.name = doc.string("name");
  d.vendor = doc.string("vendor");
  d.architecture = doc.string("architecture");
  d.architecture_key = architecture_key(d.architecture);
  d.compute_capability = doc.string("compute_capability");

  const auto& aliases = doc.required("aliases");
  if (!aliases.is_array()) doc.fail("aliases", "expected an array of strings");
  for (const auto& a : aliases) {
    if (!a.is_string() || a.get<std::string>().empty()) {
      doc.fail("aliases", "expected an array of non-empty strings");
    }
    d.aliases.push_back(detail::ascii_lower(a.get<std::string>()));
  }

  d.sources = detail::read_sources(doc);
  if (d.sources.empty()) doc.fail("sources", "at least one source is required");

  StrictObject memory = doc.object("memory");
  d.memory_type = memory.string("type");
  d.memory_capacity_bytes =
      read_positive_figure(memory, "capacity_bytes", d.sources, kCapacityRange);
  d.memory_bandwidth_Bps =
      read_positive_figure(memory, "bandwidth_Bps", d.sources, kBandwidthRange);
  memory.finish();

  StrictObject compute = doc.object("compute");
  d.sm_count = read_positive_figure(compute, "sm_count", d.sources, kSmRange);
  d.l2_bytes = read_figure(compute, "l2_bytes", d.sources, kL2Range);
  d.shared_memory_per_sm_bytes =
      read_positive_figure(compute, "shared_memory_per_sm_bytes", d.sources, kSharedRange);
  d.boost_clock_hz = read_figure(compute, "boost_clock_hz", d.sources, kClockRange);
  d.tdp_w = read_figure(compute, "tdp_w", d.sources, kPowerRange);
  compute.finish();

  StrictObject link = doc.object("interconnect");
  d.interconnect_name = link.string("name");
  d.interconnect_bandwidth_Bps = read_figure(link, "bandwidth_Bps", d.sources, kLinkRange);
  if (link.has("domain_gpus")) {
    d.nvlink_domain_gpus = read_figure(link, "domain_gpus", d.sources, kDomainRange);
    if (d.nvlink_domain_gpus.value != std::floor(d.nvlink_domain_gpus.value))
      link.fail("domain_gpus", "must be a whole number of GPUs");
  }
  link.finish();

  StrictObject peaks = doc.object("peaks");
  for (auto it = peaks.json().begin(); it != peaks.json().end(); ++it) {
    const Format f = format_key(peaks, it.key());
    if (!format_info(f).compute_format) {
      peaks.fail(it.key(), "is a storage-only format; no device computes on it");
    }
    d.peaks[format_index(f)] = read_peak(peaks, it.key(), d.sources);
  }
  peaks.finish();
  if (!d.computes(Format::kFp32) || !d.peaks[format_index(Format::kFp32)]->known()) {
    doc.fail("peaks", "the fp32 (vector) peak is required: weight dequantization runs on it");
  }

  StrictObject eff = doc.object("efficiency");
  d.bandwidth_fraction = read_fraction(eff, "bandwidth_fraction", d.sources);
  StrictObject mm = eff.object("matmul_fraction");
  d.matmul_fraction_default = read_fraction(mm, "default", d.sources);
  for (auto it = mm.json().begin(); it != mm.json().end(); ++it) {
    if (it.key() == "default") continue;
    const Format f = format_key(mm, it.key());
    if (!d.computes(f)) mm.fail(it.key(), "has a matmul fraction but no peak");
    d.matmul_fraction[format_index(f)] = read_fraction(mm, it.key(), d.sources);
  }
  mm.finish();
  d.launch_overhead_s = read_figure(eff, "launch_overhead_s", d.sources, kOverheadRange);
  if (!d.launch_overhead_s.known()) eff.fail("launch_overhead_s", "value is required");
  eff.finish();

  doc.finish();
  return d;
}

// ---------------------------------------------------------------------------

Registry Registry::built_in() {
  Registry r;
  for (const auto& file : detail::embedded_files()) {
    if (file.name.rfind("hardware/", 0) == 0)
      r.add_text(file.text, "built-in " + std::string(file.name));
  }
  return r;
}

Registry Registry::load(const std::vector<std::string>& extra_files) {
  Registry r = built_in();
  if (const char* dir = std::getenv(kDataDirEnv); dir != nullptr && *dir != '\0') {
    const std::filesystem::path hw = std::filesystem::path(dir) / "hardware";
    std::error_code ec;
    if (std::filesystem::is_directory(hw, ec)) {
      std::vector<std::string> files;
      for (const auto& entry : std::filesystem::directory_iterator(hw, ec)) {
        if (entry.path().extension() == ".json") files.push_back(entry.path().string());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) r.add_file(f);
    }
  }
  for (const auto& f : extra_files) r.add_file(f);
  return r;
}

void Registry::add_file(const std::string& path) { add_text(read_file(path), path); }

void Registry::add_text(std::string_view text, const std::string& origin) {
  add(parse_device(text, origin));
  for (unsigned char c : text) {
    hash_state_ ^= c;
    hash_state_ *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash_state_));
  data_hash_ = buf;
}

void Registry::add(Device device) {
  const std::string id = detail::ascii_lower(device.id);
  std::size_t slot = devices_.size();
  if (auto it = index_.find(id); it != index_.end() && devices_[it->second].id == device.id) {
    slot = it->second;  // override: drop the old device's aliases
    for (auto i = index_.begin(); i != index_.end();) {
      i = (i->second == slot) ? index_.erase(i) : std::next(i);
    }
  }
  std::vector<std::string> names{id};
  names.insert(names.end(), device.aliases.begin(), device.aliases.end());
  for (const auto& name : names) {
    auto it = index_.find(name);
    if (it != index_.end() && it->second != slot) {
      throw InvalidArgument(device.origin + ": '" + name + "' already names device '" +
                            devices_[it->second].id + "'");
    }
  }
  for (const auto& name : names) index_[name] = slot;
  if (slot == devices_.size()) {
    devices_.push_back(std::move(device));
  } else {
    devices_[slot] = std::move(device);
  }
}

const Device* Registry::find(std::string_view id_or_alias) const noexcept {
  if (id_or_alias.size() > 128) return nullptr;
  auto it = index_.find(detail::ascii_lower(id_or_alias));
  return it == index_.end() ? nullptr : &devices_[it->second];
}

const Device& Registry::get(std::string_view id_or_alias) const {
  if (const Device* d = find(id_or_alias)) return *d;
  std::string ids;
  for (const auto& d : devices_) ids += (ids.empty() ? "" : ", ") + d.id;
  throw NotFound("unknown device '" + clip_utf8(id_or_alias, 64) + "' (known: " + ids +
                 "; aliases in 'roofline hardware list')");
}

}  // namespace roofline
