// `roofline bench` and `roofline calibrate`: measure this machine (or its GPU
// through the CUDA backend, gpu.h) and compare with the predictions.
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>

#include "commands.h"
#include "common.h"
#include "gpu.h"
#include "roofline/calibrate.h"
#include "roofline/error.h"
#include "roofline/measure.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

struct BenchArgs {
  std::string array_bytes = "0";
  std::string threads = "0";
  bool compare = false;
  std::string repeats = std::to_string(measure::CompareOptions{}.repeats);  // --compare: rounds
  bool gpu = false;
  std::string hardware = "host";
  // GPU only:
  std::string results;  // a saved roofline-gpu run instead of running now
  std::string l2 = "flushed";
  bool quick = false;
};

measure::Progress stderr_progress() {
  auto last = std::make_shared<std::string>();
  return [last](std::string_view stage, double fraction) {
    const std::string line = fmt::format("{} {:.0f}%", stage, fraction * 100);
    if (line == *last) return;
    *last = line;
    std::cerr << "\r" << line << "   " << std::flush;
    if (stage == "done" || fraction >= 1) std::cerr << "\n";
  };
}

// The host profile: from --hardware-file (id "host") when given, else measured now.
Device host_profile(const Common& c, const BenchArgs& a, bool* calibrated_now) {
  if (!c.hardware_files.empty()) {
    *calibrated_now = false;
    return load_registry(c).get(a.hardware);
  }
  *calibrated_now = true;
  std::cerr << "no --hardware-file: calibrating this machine first (roofline calibrate --out FILE "
               "saves it)\n";
  const measure::Calibration cal = measure::calibrate({}, stderr_progress());
  std::cerr << "\n";
  return parse_device(measure::host_device_json(cal, "now").dump(), "calibration");
}

// GPU benchmarks run in `roofline-gpu` (apps/cli/gpu.cpp).
GpuCommand gpu_command(const Common& c, const BenchArgs& a) {
  GpuCommand g;
  g.results_file = a.results;
  g.compare = a.compare;
  g.hardware = a.hardware == "host" ? std::string() : a.hardware;
  g.hardware_files = c.hardware_files;
  g.l2 = a.l2;
  g.quick = a.quick;
  g.json = c.output() == Output::kJson;
  return g;
}

void cmd_bench(const Common& c, const std::string& what, const BenchArgs& a) {
  if (a.gpu || !a.results.empty()) {
    GpuCommand g = gpu_command(c, a);
    g.what = what;
    gpu_bench(g);
    return;
  }
  const int threads =
      static_cast<int>(parse_count("--threads", a.threads, 0, measure::kMaxThreads));
  if (what == "stream") {
    measure::StreamOptions o;
    o.array_bytes = static_cast<std::size_t>(
        parse_count("--array-bytes", a.array_bytes, 0, std::int64_t{64} << 30));
    o.threads = threads;
    const measure::StreamReport r = measure::run_stream(o, stderr_progress());
    std::cerr << "\n";
    if (c.output() == Output::kJson) {
      nlohmann::json k = nlohmann::json::array();
      for (const auto& x : r.kernels) {
        k.push_back({{"name", x.name},
                     {"bandwidth_Bps", x.bandwidth_Bps},
                     {"best_Bps", x.best_Bps},
                     {"median_time_s", x.median_time_s},
                     {"bytes_per_iteration", x.bytes_per_iteration}});
      }
      print_json({{"bandwidth_Bps", r.bandwidth_Bps},
                  {"best_kernel", r.best_kernel},
                  {"kernels", k},
                  {"array_bytes", r.array_bytes},
                  {"threads", r.threads},
                  {"verified", r.verified}});
      return;
    }
    Table t({"kernel", "bandwidth (median)", "best", "bytes/element"});
    for (const auto& x : r.kernels) {
      t.add_row({x.name, human_rate(x.bandwidth_Bps, "B/s"), human_rate(x.best_Bps, "B/s"),
                 fmt::format("{}", x.bytes_per_iteration)});
    }
    std::cout << t.text()
              << fmt::format("\nbest sustained: {} ({}), {} threads, arrays of {} each, {}\n",
                             human_rate(r.bandwidth_Bps, "B/s"), r.best_kernel, r.threads,
                             human_bytes(static_cast<double>(r.array_bytes)),
                             r.verified ? "verified" : "NOT VERIFIED");
    return;
  }
  if (what == "peak") {
    measure::PeakOptions o;
    o.threads = threads;
    const measure::PeakReport r = measure::run_peak(o);
    if (c.output() == Output::kJson) {
      print_json({{"fp32_flops_per_s", r.fp32_flops_per_s},
                  {"fp64_flops_per_s", r.fp64_flops_per_s},
                  {"isa", r.isa},
                  {"threads", r.threads},
                  {"vector_bits", r.vector_bits}});
      return;
    }
    std::cout << fmt::format("fp32 {}, fp64 {} ({}, {}-bit vectors, {} threads)\n",
                             human_rate(r.fp32_flops_per_s, "FLOP/s"),
                             human_rate(r.fp64_flops_per_s, "FLOP/s"), r.isa, r.vector_bits,
                             r.threads);
    return;
  }
  if (what == "gemm" || what == "gemv") {
    const auto shapes =
        what == "gemm" ? measure::default_gemm_shapes() : measure::default_gemv_shapes();
    measure::GemmOptions o;
    o.threads = threads;
    if (a.compare) {
      measure::CompareOptions co;
      co.gemm = o;
      co.repeats =
          static_cast<int>(parse_count("--repeats", a.repeats, 1, measure::kMaxCompareRepeats));
      bool calibrated_now = false;
      const Device host = host_profile(c, a, &calibrated_now);
      const measure::CompareReport r = measure::compare_gemms(host, shapes, co, stderr_progress());
      std::cerr << "\n";
      if (c.output() == Output::kJson) {
        nlohmann::json j = measure::to_json(r);
        j["device"] = host.id;
        j["calibrated_now"] = calibrated_now;
        print_json(j);
        return;
      }
      std::cout << measure::compare_table(r).text() << "\n"
                << measure::compare_summary(r) << " ("
                << (calibrated_now ? "freshly calibrated" : "given") << " profile)\n";
      return;
    }
    measure::WeightPool pool;  // cold weights for every shape, made once
    o.pool = &pool;
    nlohmann::json rows = nlohmann::json::array();
    Table t({"shape", "label", "time", "GFLOP/s", "GB/s", "verified"});
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      stderr_progress()(what, static_cast<double>(i) / static_cast<double>(shapes.size()));
      const measure::GemmMeasurement m = measure::measure_sgemm(shapes[i], o);
      rows.push_back({{"m", m.shape.m},
                      {"n", m.shape.n},
                      {"k", m.shape.k},
                      {"label", m.shape.label},
                      {"median_time_s", m.median_time_s},
                      {"flops_per_s", m.flops_per_s},
                      {"bandwidth_Bps", m.bandwidth_Bps},
                      {"max_rel_error", m.max_rel_error},
                      {"verified", m.verified}});
      t.add_row({fmt::format("{}x{}x{}", m.shape.m, m.shape.n, m.shape.k), m.shape.label,
                 human_time(m.median_time_s), fmt::format("{:.1f}", m.flops_per_s / 1e9),
                 fmt::format("{:.1f}", m.bandwidth_Bps / 1e9), m.verified ? "yes" : "NO"});
    }
    std::cerr << "\n";
    if (c.output() == Output::kJson) {
      print_json({{"shapes", rows}, {"openblas_threads", measure::openblas_threads()}});
    } else {
      std::cout << t.text();
    }
    return;
  }
  if (what == "layer") {
    bool calibrated_now = false;
    const Device host = host_profile(c, a, &calibrated_now);
    const measure::LayerReport r = measure::run_decoder_layer(host, {});
    const auto& g = r.config;
    if (c.output() == Output::kJson) {
      print_json({{"config",
                   {{"hidden", g.hidden},
                    {"heads", g.heads},
                    {"kv_heads", g.kv_heads},
                    {"head_dim", g.head_dim},
                    {"intermediate", g.intermediate},
                    {"context", g.context}}},
                  {"measured_s", r.measured_s},
                  {"predicted_s", r.predicted_s},
                  {"error_pct", r.error_pct},
                  {"weight_bytes", r.weight_bytes},
                  {"kv_bytes", r.kv_bytes}});
      return;
    }
    std::cout << fmt::format(
        "decoder layer decode step (hidden {}, {} heads / {} KV, intermediate {}, context {}, "
        "fp32):\n"
        "measured {}, predicted {} ({:+.1f}%); weights {}, KV cache {}\n",
        g.hidden, g.heads, g.kv_heads, g.intermediate, g.context, human_time(r.measured_s),
        human_time(r.predicted_s), r.error_pct, human_bytes(r.weight_bytes),
        human_bytes(r.kv_bytes));
    return;
  }
  throw InvalidArgument("unknown benchmark '" + clip_utf8(what, 20) +
                        "' (stream, peak, gemm, gemv, layer)");
}

void cmd_calibrate(const Common& c, const std::string& out, const BenchArgs& a) {
  if (a.gpu || !a.results.empty()) {
    GpuCommand g = gpu_command(c, a);
    g.out = out;
    gpu_calibrate(g);
    return;
  }
  // Fail on an unwritable path before spending seconds measuring.
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  if (!file) throw InvalidArgument("--out: cannot write '" + out + "'");
  const measure::Calibration cal = measure::calibrate({}, stderr_progress());
  std::cerr << "\n";
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const nlohmann::json doc = measure::host_device_json(cal, date);
  (void)parse_device(doc.dump(), "calibration");  // the profile must load like any device file
  file << doc.dump(2) << "\n";
  if (!file) throw InvalidArgument("--out: writing '" + out + "' failed");
  if (c.output() == Output::kJson) {
    print_json(doc);
    return;
  }
  std::cout << fmt::format(
      "wrote {}: bandwidth {} (STREAM {}), fp32 peak {} ({}), SGEMM at {:.0f}% of peak, "
      "SGEMV at {:.0f}% of STREAM, {} per call\nuse it with --hardware-file {} --hardware host\n",
      out, human_rate(cal.stream.bandwidth_Bps, "B/s"), cal.stream.best_kernel,
      human_rate(cal.peak.fp32_flops_per_s, "FLOP/s"), cal.peak.isa, 100 * cal.matmul_fraction,
      100 * cal.bandwidth_fraction, human_time(cal.overhead.median_time_s), out);
}

}  // namespace

void register_bench(CLI::App& app, Common& common) {
  auto bench_args = std::make_shared<BenchArgs>();
  auto bench_what = std::make_shared<std::string>();
  auto* bench_cmd =
      app.add_subcommand("bench", "Measure this machine: stream, peak, gemm, gemv, layer");
  bench_cmd->add_option("what", *bench_what, "stream, peak, gemm, gemv or layer")->required();
  bench_cmd
      ->add_option("--array-bytes", bench_args->array_bytes,
                   "STREAM: bytes per array (0: 4x the last-level cache)")
      ->capture_default_str();
  bench_cmd->add_option("--threads", bench_args->threads, "Threads (0: all cores)")
      ->capture_default_str();
  bench_cmd->add_flag("--compare", bench_args->compare,
                      "gemm/gemv: predict each shape with the host profile and compare");
  bench_cmd
      ->add_option("--repeats", bench_args->repeats,
                   "--compare: rounds over the shapes, the machine probed before each GEMM")
      ->capture_default_str();
  bench_cmd->add_flag("--gpu", bench_args->gpu,
                      "Run on the GPU through the CUDA backend (what: bandwidth, gemv, gemm, all)");
  bench_cmd
      ->add_option("--results", bench_args->results,
                   "GPU: read a saved `roofline-gpu suite` run instead of running now")
      ->type_name("FILE");
  bench_cmd->add_option("--l2", bench_args->l2, "GPU: flushed (before each repetition) or warm")
      ->capture_default_str();
  bench_cmd->add_flag("--quick", bench_args->quick, "GPU: a small subset of the shapes");
  bench_cmd
      ->add_option("--hardware", bench_args->hardware,
                   "Profile id for --compare (with --hardware-file)")
      ->capture_default_str();
  add_common(bench_cmd, &common, false);
  bench_cmd->callback(
      [&common, bench_args, bench_what] { cmd_bench(common, *bench_what, *bench_args); });

  auto* calibrate_cmd =
      app.add_subcommand("calibrate", "Measure this machine and write a device profile (id host)");
  auto calibrate_out = std::make_shared<std::string>();
  calibrate_cmd->add_option("--out", *calibrate_out, "Profile file to write")
      ->required()
      ->type_name("FILE");
  auto calibrate_args = std::make_shared<BenchArgs>();
  calibrate_args->hardware = "";
  calibrate_cmd->add_flag(
      "--gpu", calibrate_args->gpu,
      "Measure the GPU (CUDA backend) and write a kernel table (data/kernels format)");
  calibrate_cmd
      ->add_option("--results", calibrate_args->results,
                   "GPU: make the table from a saved `roofline-gpu suite` run")
      ->type_name("FILE");
  calibrate_cmd->add_option(
      "--hardware", calibrate_args->hardware,
      "GPU: the registry device the efficiencies are against (default: the GPU's name)");
  calibrate_cmd->add_option("--l2", calibrate_args->l2, "GPU: flushed or warm")
      ->capture_default_str();
  calibrate_cmd->add_flag("--quick", calibrate_args->quick, "GPU: a small subset of the shapes");
  add_common(calibrate_cmd, &common, false);
  calibrate_cmd->callback([&common, calibrate_out, calibrate_args] {
    cmd_calibrate(common, *calibrate_out, *calibrate_args);
  });
}

}  // namespace roofline::cli
