// `roofline formats`: the number-format table.
#include "roofline/formats.h"

#include <fmt/format.h>

#include <iostream>
#include <string>

#include "commands.h"
#include "common.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

void cmd_formats(const Common& c) {
  if (c.output() == Output::kJson) {
    print_json(formats_document());
    return;
  }
  Table t({"id", "bits/elem", "element", "block", "scale", "max", "min>0", "kind"});
  for (const auto& f : all_formats()) {
    t.add_row({std::string(f.id), fmt::format("{:.5g}", bits_per_element(f.format)),
               std::string(f.element), std::to_string(f.block_elements), std::string(f.scale),
               fmt::format("{:.5g}", f.max_finite), fmt::format("{:.4g}", f.min_positive),
               f.compute_format ? "compute" : "storage-only"});
  }
  if (c.output() == Output::kCsv) {
    std::cout << t.csv();
  } else {
    std::cout << t.text()
              << "\nbits/elem includes block scales (whole blocks; per-tensor fp32 scales are "
                 "counted once per tensor). 'compute' formats run on some GPU's tensor cores; "
                 "whether a given device does is in 'roofline hardware show ID'.\n";
  }
}

}  // namespace

void register_formats(CLI::App& app, Common& common) {
  auto* formats = app.add_subcommand("formats", "The number-format table");
  add_common(formats, &common, true);
  formats->callback([&common] { cmd_formats(common); });
}

}  // namespace roofline::cli
