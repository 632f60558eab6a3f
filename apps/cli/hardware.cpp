// `roofline hardware list | show ID`: the device registry.
#include "roofline/hardware.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "roofline/formats.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

std::string peak_text(const Device& d, Format f) {
  const auto& p = d.peaks[format_index(f)];
  if (!p) return "-";
  if (!p->known()) return "?";
  return fmt::format("{:.5g}", p->value / 1e12);
}

std::string tensor_formats(const Device& d) {
  std::string s;
  for (const auto& info : all_formats()) {
    const auto& p = d.peaks[format_index(info.format)];
    if (p && p->unit == ComputeUnit::kTensor) s += (s.empty() ? "" : " ") + std::string(info.id);
  }
  return s;
}

void cmd_hardware_list(const Common& c) {
  const Registry reg = load_registry(c);
  if (c.output() == Output::kJson) {
    print_json(hardware_list_document(reg));
    return;
  }
  // People get a compact table; CSV carries every column.
  const bool wide = c.output() == Output::kCsv;
  std::vector<std::string> header = {"id"};
  if (wide) header.push_back("name");
  for (const char* h : {"memory", "bandwidth", "fp16", "fp8", "nvfp4", "int8", "int4"})
    header.push_back(h);
  if (wide) header.push_back("tensor formats");
  header.push_back("aliases");
  Table t(header);
  for (const auto& d : reg.devices()) {
    std::vector<std::string> row = {d.id};
    if (wide) row.push_back(d.name);
    for (std::string cell :
         {human_bytes(d.memory_capacity_bytes.value),
          human_rate(d.memory_bandwidth_Bps.value, "B/s"), peak_text(d, Format::kFp16),
          peak_text(d, Format::kFp8), peak_text(d, Format::kNvfp4), peak_text(d, Format::kInt8),
          peak_text(d, Format::kInt4)}) {
      row.push_back(std::move(cell));
    }
    if (wide) row.push_back(tensor_formats(d));
    row.push_back(join(d.aliases, " "));
    t.add_row(std::move(row));
  }
  if (c.output() == Output::kCsv) {
    std::cout << t.csv();
  } else {
    std::cout << t.text()
              << "\nPeaks are dense tensor TFLOP/s (TOPS for int); '-' = no tensor support, "
                 "'?' = supported, rate unpublished.\n'roofline hardware show ID' gives every "
                 "figure with its source.\n";
  }
}

void cmd_hardware_show(const Common& c, const std::string& id) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(id);
  if (c.output() == Output::kJson) {
    print_json(hardware_document(d, reg));
    return;
  }
  auto row = [&](Table& t, const std::string& name, const Figure& f, const std::string& shown) {
    t.add_row({name, f.known() ? shown : "not published",
               std::string(confidence_name(f.confidence)),
               d.citation(f) + (f.note.empty() ? "" : " [" + f.note + "]")});
  };
  std::cout << d.name << " (" << d.id << "), " << d.architecture << " " << d.compute_capability
            << "\naliases: " << join(d.aliases, ", ") << "\norigin: " << d.origin << "\n\n";
  Table t({"figure", "value", "confidence", "source"});
  row(t, "memory", d.memory_capacity_bytes,
      human_bytes(d.memory_capacity_bytes.value) + " " + d.memory_type);
  row(t, "bandwidth", d.memory_bandwidth_Bps, human_rate(d.memory_bandwidth_Bps.value, "B/s"));
  row(t, "SMs / CUs", d.sm_count, fmt::format("{}", d.sm_count.value));
  row(t, "L2 cache", d.l2_bytes, human_bytes(d.l2_bytes.value));
  row(t, "shared memory / SM", d.shared_memory_per_sm_bytes,
      human_bytes(d.shared_memory_per_sm_bytes.value));
  row(t, "boost clock", d.boost_clock_hz, human_rate(d.boost_clock_hz.value, "Hz"));
  row(t, "TDP", d.tdp_w, fmt::format("{} W", d.tdp_w.value));
  row(t, "interconnect", d.interconnect_bandwidth_Bps,
      d.interconnect_name + " " + human_rate(d.interconnect_bandwidth_Bps.value, "B/s"));
  for (const auto& info : all_formats()) {
    const auto& p = d.peaks[format_index(info.format)];
    if (!p) continue;
    row(t,
        fmt::format("peak {} ({}, {} acc)", info.id, compute_unit_name(p->unit),
                    accumulate_name(p->accumulate)),
        *p, human_rate(p->value, "FLOP/s"));
    if (p->fp16_accumulate.known()) {
      row(t, fmt::format("peak {} ({}, fp16 acc)", info.id, compute_unit_name(p->unit)),
          p->fp16_accumulate, human_rate(p->fp16_accumulate.value, "FLOP/s"));
    }
  }
  row(t, "achievable bandwidth", d.bandwidth_fraction,
      fmt::format("{:.1f}%", 100 * d.bandwidth_fraction.value));
  row(t, "matmul fraction (default)", d.matmul_fraction_default,
      fmt::format("{:.1f}%", 100 * d.matmul_fraction_default.value));
  for (const auto& info : all_formats()) {
    if (const auto& m = d.matmul_fraction[format_index(info.format)]) {
      row(t, fmt::format("matmul fraction {}", info.id), *m,
          fmt::format("{:.1f}%", 100 * m->value));
    }
  }
  row(t, "launch overhead", d.launch_overhead_s, human_time(d.launch_overhead_s.value));
  std::cout << (c.output() == Output::kCsv ? t.csv() : t.text(terminal_width()));
}

}  // namespace

void register_hardware(CLI::App& app, Common& common) {
  auto* hardware = app.add_subcommand("hardware", "The device registry");
  hardware->require_subcommand(1);
  auto* hw_list = hardware->add_subcommand("list", "List devices with key figures");
  add_common(hw_list, &common, true);
  hw_list->callback([&common] { cmd_hardware_list(common); });
  auto* hw_show = hardware->add_subcommand("show", "Every figure of one device, with sources");
  auto show_id = std::make_shared<std::string>();
  hw_show->add_option("id", *show_id, "Device id or alias")->required();
  add_common(hw_show, &common, true);
  hw_show->callback([&common, show_id] { cmd_hardware_show(common, *show_id); });
}

}  // namespace roofline::cli
