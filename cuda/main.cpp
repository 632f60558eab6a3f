// roofline-gpu: the CUDA benchmarks, a separate program so that the main
// `roofline` binary does not load the CUDA libraries at every start.
//   roofline-gpu gemm|gemv|bandwidth [--compare --hardware ID] [--hardware-file FILE]...
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu_bench.h"
#include "roofline/calibrate.h"
#include "roofline/error.h"
#include "roofline/hardware.h"
#include "roofline/roofline.h"

using namespace roofline;

int main(int argc, char** argv) {
  try {
    if (argc < 2)
      throw InvalidArgument("usage: roofline-gpu gemm|gemv|bandwidth [--compare --hardware ID]");
    const std::string what = argv[1];
    // `probe`: exit 0 when a GPU is usable, else the reason. `one M N K PRECISION`: one GEMM.
    if (what == "probe") {
      const cuda::DeviceInfo info = cuda::device_info();
      std::cout << nlohmann::json{{"name", info.name}, {"sm_count", info.sm_count}}.dump() << "\n";
      return 0;
    }
    if (what == "one") {
      if (argc != 6) throw InvalidArgument("usage: roofline-gpu one M N K fp16|bf16|fp8|nvfp4");
      const cuda::GemmResult r =
          cuda::gemm(std::stoll(argv[2]), std::stoll(argv[3]), std::stoll(argv[4]), argv[5]);
      std::cout << nlohmann::json{{"gpu", cuda::device_info().name},
                                  {"measured_time_us", r.median_time_s * 1e6},
                                  {"measured_bandwidth_gb_s", r.bandwidth_Bps / 1e9},
                                  {"measured_tflops", r.flops_per_s / 1e12},
                                  {"max_rel_error", r.max_rel_error},
                                  {"verified", r.verified},
                                  {"repetitions", r.repetitions}}
                       .dump()
                << "\n";
      return 0;
    }
    bool compare = false;
    std::string hardware = "h200";
    std::vector<std::string> hardware_files;
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--compare") {
        compare = true;
      } else if (arg == "--hardware" && i + 1 < argc) {
        hardware = argv[++i];
      } else if (arg == "--hardware-file" && i + 1 < argc) {
        hardware_files.push_back(argv[++i]);
      } else {
        throw InvalidArgument("unknown argument '" + arg + "'");
      }
    }

    const cuda::DeviceInfo info = cuda::device_info();
    const roofline::Registry reg = roofline::Registry::load(hardware_files);
    const roofline::Device* device = compare ? &reg.get(hardware) : nullptr;
    nlohmann::json out = {{"gpu",
                           {{"name", info.name},
                            {"sm_count", info.sm_count},
                            {"compute_capability", fmt::format("{}.{}", info.major, info.minor)},
                            {"memory_bytes", info.memory_bytes}}}};
    if (what == "bandwidth") {
      const cuda::BandwidthResult b = cuda::bandwidth();
      out["bandwidth"] = {{"bytes", b.bytes},
                          {"copy_Bps", b.copy_Bps},
                          {"kernel_Bps", b.kernel_Bps},
                          {"read_Bps", b.read_Bps}};
      if (device) out["bandwidth"]["datasheet_Bps"] = device->memory_bandwidth_Bps.value;
    } else if (what == "gemm" || what == "gemv") {
      std::vector<measure::GemmShape> shapes =
          what == "gemm" ? measure::default_gemm_shapes() : measure::default_gemv_shapes();
      if (what == "gemm") {
        for (std::int64_t m : {2048, 8192})
          shapes.push_back({m, 8192, 8192, "square-ish " + std::to_string(m)});
      }
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& s : shapes) {
        for (const char* prec : {"fp16", "bf16", "fp8", "nvfp4"}) {
          if (s.m == 1 && std::string(prec) != "fp16" && std::string(prec) != "bf16")
            continue;  // the GEMV kernel is 16-bit
          if (std::string(prec) == "nvfp4" && info.major < 10) continue;  // Blackwell only
          nlohmann::json row = {
              {"m", s.m}, {"n", s.n}, {"k", s.k}, {"label", s.label}, {"precision", prec}};
          try {
            const cuda::GemmResult r = cuda::gemm(s.m, s.n, s.k, prec);
            row.update({{"measured_s", r.median_time_s},
                        {"flops_per_s", r.flops_per_s},
                        {"bandwidth_Bps", r.bandwidth_Bps},
                        {"max_rel_error", r.max_rel_error},
                        {"verified", r.verified}});
            if (device) {
              const Format f = parse_format(prec);
              const RooflineResult p = predict_gemm(*device, GemmProblem{s.m, s.n, s.k, f, f});
              row["predicted_s"] = p.time_s;
              row["error_pct"] = (p.time_s - r.median_time_s) / r.median_time_s * 100;
            }
          } catch (const Error& e) {
            row["error"] = e.what();
          }
          rows.push_back(row);
        }
      }
      out["cases"] = rows;
    } else {
      throw InvalidArgument("unknown GPU benchmark '" + what.substr(0, 20) +
                            "' (gemm, gemv, bandwidth)");
    }
    if (device) out["compared_with"] = device->id;
    std::cout << out.dump(2) << "\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 1;
  }
}
