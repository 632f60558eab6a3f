#include "gpu.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "roofline/error.h"
#include "roofline/gpu_run.h"
#include "roofline/hardware.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

using nlohmann::json;

// One line of progress on a terminal as each case ends.
void show_progress(const std::string& line, int* count) {
  if (!::isatty(STDERR_FILENO)) return;
  const json j = json::parse(line, nullptr, false);
  if (!j.is_object()) return;
  const std::string type = j.value("type", "");
  if (type != "gemm" && type != "gemv" && type != "bandwidth") return;
  ++*count;
  std::string what = type;
  if (type != "bandwidth") {
    what = fmt::format("{} {} {}x{}x{}", type, j.value("precision", "?"), j.value("m", 0),
                       j.value("n", 0), j.value("k", 0));
  }
  const double t =
      j.contains("median_s") && j["median_s"].is_number() ? j["median_s"].get<double>() : 0;
  std::cerr << fmt::format("\r[{}] {:<36} {:>10}   ", *count, what, t > 0 ? human_time(t) : "")
            << std::flush;
}

// Runs `roofline-gpu suite ...` and returns its output, reading it line by
// line as it comes. The program's own error line becomes this command's error.
std::string run_suite(const GpuCommand& c) {
  const std::string tool = gpu_tool_path();
  if (tool.empty()) {
    throw Unsupported(
        "no CUDA device: this build has no CUDA benchmark backend (roofline-gpu is built where "
        "nvcc is found "
        "and runs where a GPU is present); --results FILE reads a run saved on a GPU machine");
  }
  std::vector<std::string> args = {tool, "suite", c.what == "all" ? std::string("all") : c.what,
                                   "--l2", c.l2};
  if (c.quick) args.push_back("--quick");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw Unsupported(std::string("cannot start roofline-gpu: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) throw Unsupported(std::string("cannot start roofline-gpu: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  std::string out, err, pending;
  int shown = 0;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open = 2;
  char buf[1 << 16];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
      ::kill(pid, SIGKILL);  // never wait below for a child stuck on a full pipe
      break;
    }
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(f.fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(f.fd);
        f.fd = -1;
        --open;
        continue;
      }
      std::string& sink = f.fd == out_pipe[0] ? out : err;
      if (sink.size() + static_cast<std::size_t>(n) > measure::kMaxGpuRunBytes) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        throw Unsupported("roofline-gpu wrote more than the limit of its results; stopped");
      }
      if (&sink == &out) {
        pending.append(buf, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;
             pending.erase(0, nl + 1)) {
          show_progress(pending.substr(0, nl), &shown);
        }
      }
      sink.append(buf, static_cast<std::size_t>(n));
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (shown > 0) std::cerr << "\n";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = err.substr(0, err.find('\n'));
    if (why.rfind("error: ", 0) == 0) why = why.substr(7);
    if (why.empty())
      why = WIFEXITED(status) ? fmt::format("roofline-gpu exited with {}", WEXITSTATUS(status))
                              : std::string("roofline-gpu was killed");
    throw Unsupported(why.substr(0, 300));
  }
  return out;
}

measure::GpuRun load_run(const GpuCommand& c) {
  if (c.l2 != "flushed" && c.l2 != "warm") throw InvalidArgument("--l2 takes flushed or warm");
  if (!c.results_file.empty()) return measure::load_gpu_run(c.results_file);
  return measure::parse_gpu_run(run_suite(c), "roofline-gpu");
}

// The registry device of a run: --hardware, else the GPU's name ("NVIDIA H200" -> h200).
const Device& device_for(const Registry& reg, const measure::GpuRun& run,
                         const std::string& hardware) {
  if (!hardware.empty()) return reg.get(hardware);
  std::string id = run.device.gpu;
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  if (id.rfind("nvidia ", 0) == 0) id = id.substr(7);
  std::replace(id.begin(), id.end(), ' ', '-');
  try {
    return reg.get(id);
  } catch (const NotFound&) {
    throw InvalidArgument("the run's GPU '" + run.device.gpu.substr(0, 60) +
                          "' is not a registry id: name the device with --hardware ID");
  }
}

std::string percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.0f}%", 100 * fraction) : "-";
}

}  // namespace

std::string gpu_tool_path() {
  std::error_code ec;
  const auto tool =
      std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "roofline-gpu";
  return !ec && std::filesystem::exists(tool, ec) ? tool.string() : std::string();
}

void gpu_bench(const GpuCommand& c) {
  if (c.what != "all" && c.what != "bandwidth" && c.what != "gemv" && c.what != "gemm") {
    throw InvalidArgument("unknown GPU benchmark '" + c.what.substr(0, 20) +
                          "' (bandwidth, gemv, gemm, all)");
  }
  const measure::GpuRun run = load_run(c);
  const Registry reg = Registry::load(c.hardware_files);
  const Device* device = c.compare ? &device_for(reg, run, c.hardware) : nullptr;
  auto wanted = [&](const measure::GpuCase& x) { return c.what == "all" || c.what == x.type; };
  std::map<const measure::GpuCase*, measure::GpuComparisonRow> predicted;
  measure::GpuComparison comparison;  // over the cases shown
  const bool any = std::any_of(run.cases.begin(), run.cases.end(),
                               [&](const measure::GpuCase& x) { return x.passed() && wanted(x); });
  if (device && any) {
    comparison = measure::compare_gpu_run(run, *device, wanted);
    for (const auto& r : comparison.rows) predicted[r.measured] = r;
  }

  if (c.json) {
    json cases = json::array();
    for (const auto& x : run.cases) {
      if (!wanted(x)) continue;
      json j = {{"type", x.type},           {"m", x.m},        {"n", x.n}, {"k", x.k},
                {"precision", x.precision}, {"label", x.label}};
      if (!x.ran()) {
        j["error"] = x.error;
      } else {
        j.update({{"kernel", x.kernel},
                  {"median_s", x.median_s},
                  {"p10_s", x.p10_s},
                  {"p90_s", x.p90_s},
                  {"repetitions", x.repetitions},
                  {"l2", x.l2},
                  {"flops_per_s", x.flops / x.median_s},
                  {"bandwidth_Bps", x.bytes / x.median_s},
                  {"check", x.check},
                  {"rel_error", std::isfinite(x.rel_error) ? json(x.rel_error) : json(nullptr)},
                  {"sm_clock_mhz", x.sm_clock_mhz}});
        if (auto it = predicted.find(&x); it != predicted.end()) {
          j.update({{"predicted_s", it->second.predicted_s},
                    {"error_pct", it->second.error_pct},
                    {"roofline_efficiency", it->second.efficiency}});
        }
      }
      cases.push_back(j);
    }
    json doc = {{"gpu", run.device.gpu},
                {"compute_capability", run.device.compute_capability},
                {"finished", run.finished},
                {"cases", cases}};
    if (run.bandwidth) {
      doc["bandwidth"] = {{"memcpy_Bps", run.bandwidth->memcpy_Bps},
                          {"copy_Bps", run.bandwidth->copy_Bps},
                          {"read_Bps", run.bandwidth->read_Bps}};
    }
    if (device && !comparison.rows.empty()) {
      doc["compared_with"] = device->id;
      doc["median_abs_error_pct"] = comparison.median_abs_error_pct;
      doc["median_signed_error_pct"] = comparison.median_signed_error_pct;
      doc["max_abs_error_pct"] = comparison.max_abs_error_pct;
    }
    std::cout << doc.dump(2) << "\n";
    return;
  }

  std::cout << fmt::format("{} (compute capability {}, {} SMs, L2 {})\n", run.device.gpu,
                           run.device.compute_capability, run.device.sm_count,
                           human_bytes(run.device.l2_bytes));
  if (run.bandwidth && (c.what == "all" || c.what == "bandwidth" || c.what == "gemv")) {
    std::cout << fmt::format(
        "bandwidth: cudaMemcpy {}, copy kernel {}, read kernel {}{}\n",
        human_rate(run.bandwidth->memcpy_Bps, "B/s"), human_rate(run.bandwidth->copy_Bps, "B/s"),
        human_rate(run.bandwidth->read_Bps, "B/s"),
        device ? " (datasheet " + human_rate(device->memory_bandwidth_Bps.value, "B/s") + ")"
               : std::string());
  }
  std::vector<std::string> header = {"kind",     "format",  "m",       "n",   "k",
                                     "measured", "p10-p90", "TFLOP/s", "GB/s"};
  if (device) header.insert(header.end(), {"predicted", "error", "of roofline"});
  header.push_back("check");
  Table t(header);
  for (const auto& x : run.cases) {
    if (!wanted(x)) continue;
    std::vector<std::string> row = {x.type, x.precision, std::to_string(x.m), std::to_string(x.n),
                                    std::to_string(x.k)};
    if (!x.ran()) {
      row.insert(row.end(), {"-", "-", "-", "-"});
      if (device) row.insert(row.end(), {"-", "-", "-"});
      row.push_back("did not run: " + x.error.substr(0, 60));
      t.add_row(row);
      continue;
    }
    row.insert(row.end(), {human_time(x.median_s),
                           fmt::format("{:.0f}%", 100 * (x.p90_s - x.p10_s) / x.median_s),
                           fmt::format("{:.1f}", x.flops / x.median_s / 1e12),
                           fmt::format("{:.0f}", x.bytes / x.median_s / 1e9)});
    if (device) {
      if (auto it = predicted.find(&x); it != predicted.end()) {
        row.insert(row.end(),
                   {human_time(it->second.predicted_s),
                    fmt::format("{:+.1f}%", it->second.error_pct), percent(it->second.efficiency)});
      } else {
        row.insert(row.end(), {"-", "-", "-"});
      }
    }
    row.push_back(x.passed() ? "passed" : fmt::format("FAILED ({:.2g})", x.rel_error));
    t.add_row(row);
  }
  if (std::any_of(run.cases.begin(), run.cases.end(), wanted)) std::cout << t.text();
  for (const auto& s : run.skipped) std::cout << "skipped " << s << "\n";
  if (!run.finished) {
    std::cout << (run.truncated ? "the run was cut off: its last case is missing\n"
                                : "the run has no closing line: it did not finish\n");
  }
  if (run.not_started > 0)
    std::cout << run.not_started << " cases were left out by the suite's deadline\n";
  if (device && !comparison.rows.empty()) {
    std::cout << fmt::format(
        "against {} (realistic mode): median |error| {:.1f}%, median signed {:+.1f}%, max {:.1f}% "
        "over {} cases\n",
        device->id, comparison.median_abs_error_pct, comparison.median_signed_error_pct,
        comparison.max_abs_error_pct, comparison.rows.size());
  }
  for (const auto& x : run.cases) {
    if (x.ran() && wanted(x)) {
      std::cout << "p10-p90: the spread of the repetitions, relative to the median; L2 " << x.l2
                << " before each\n";
      break;
    }
  }
}

void gpu_calibrate(const GpuCommand& c) {
  if (c.out.empty()) throw InvalidArgument("calibrate --gpu needs --out FILE");
  // Fail on an unwritable place before minutes of measuring, without touching
  // an existing file: the table is written beside it and renamed at the end.
  const std::string tmp = c.out + ".tmp";
  {
    std::ofstream probe(tmp, std::ios::binary | std::ios::trunc);
    if (!probe) throw InvalidArgument("--out: cannot write beside '" + c.out.substr(0, 200) + "'");
  }
  std::filesystem::remove(tmp);
  const measure::GpuRun run = load_run(c);
  const Registry reg = Registry::load(c.hardware_files);
  const Device& device = device_for(reg, run, c.hardware);
  const std::string source =
      c.results_file.empty() ? std::string("measured by roofline calibrate --gpu on this machine")
                             : "roofline-gpu suite output " +
                                   std::filesystem::path(c.results_file).filename().string();
  const json table = measure::kernel_table_json(run, device, source);
  const measure::KernelTable back =
      measure::parse_kernel_table(table.dump(), c.out);  // it must load
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    file << table.dump(1) << "\n";
    if (!file) throw InvalidArgument("--out: writing '" + tmp.substr(0, 200) + "' failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, c.out, ec);
  if (ec)
    throw InvalidArgument("--out: cannot replace '" + c.out.substr(0, 200) + "': " + ec.message());
  if (c.json) {
    std::cout << table.dump(2) << "\n";
    return;
  }
  std::map<std::string, std::vector<double>> by_precision;
  for (const auto& e : back.entries) by_precision[e.op + " " + e.precision].push_back(e.efficiency);
  std::cout << fmt::format("wrote {}: {} kernel shapes measured on {} against {}'s roofline\n",
                           c.out, back.entries.size(), back.gpu, device.id);
  for (auto& [what, v] : by_precision) {
    std::sort(v.begin(), v.end());
    std::cout << fmt::format("  {:<12} efficiency {:>4} to {:>4}, median {}\n", what,
                             percent(v.front()), percent(v.back()), percent(v[v.size() / 2]));
  }
}

}  // namespace roofline::cli
