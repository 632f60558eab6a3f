#include "roofline/calibrate.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>

#include "blas.h"
#include "roofline/error.h"
#include "roofline/predict.h"

namespace roofline::measure {
namespace {

double median(const std::vector<double>& v) { return v.empty() ? 0 : percentile(v, 0.5); }

nlohmann::json figure(double value, const char* source, const std::string& note = "") {
  nlohmann::json f = {{"value", value}, {"confidence", "measured"}, {"source", source}};
  if (!note.empty()) f["note"] = note;
  return f;
}

// FLOP/s of a measured SGEMM's math alone. The realistic CPU model adds the
// weight stream (all of the GEMM's bytes) and the BLAS packing copy of the
// weights (one more read and one write of k n fp32 values) to the math, all at
// the effective bandwidth (roofline.cpp), so the calibrated rate must leave
// them out or they would be counted twice. A shape whose traffic would be half
// its time or more is not a measurement of the math: its rate is taken as measured.
double math_flops_per_s(const GemmMeasurement& g, double effective_Bps) {
  const double packing_bytes =
      2.0 * 4.0 * static_cast<double>(g.shape.k) * static_cast<double>(g.shape.n);
  const double traffic_s = (g.bytes + packing_bytes) / effective_Bps;
  const double math_s = g.median_time_s - traffic_s;
  return math_s > 0.5 * g.median_time_s ? g.flops / math_s : g.flops_per_s;
}

void check_figure(double v, const char* what) {
  if (!(std::isfinite(v) && v > 0))
    throw InvalidArgument(std::string("host figures: ") + what + " must be positive and finite");
}

}  // namespace

Calibration calibrate(const CalibrationOptions& o, const Progress& progress) {
  Calibration c;
  auto stage = [&](std::string_view name, double f) {
    if (progress) progress(name, f);
  };
  stage("stream", 0);
  c.stream = run_stream(o.stream, [&](std::string_view, double f) { stage("stream", f); });
  if (!c.stream.verified)
    throw Unsupported("STREAM results did not verify; the machine is not measuring correctly");
  stage("peak", 0);
  c.peak = run_peak(o.peak);
  // One pool of cold weights for every GEMM and the GEMV (making one costs seconds).
  std::unique_ptr<WeightPool> pool;
  GemmOptions gemm = o.gemm;
  if (gemm.cold_weights && gemm.pool == nullptr) {
    stage("weights", 0);
    pool = std::make_unique<WeightPool>();
    gemm.pool = pool.get();
  }
  for (std::size_t i = 0; i < o.gemm_shapes.size(); ++i) {
    stage("gemm", static_cast<double>(i) / static_cast<double>(o.gemm_shapes.size()));
    c.gemms.push_back(measure_sgemm(o.gemm_shapes[i], gemm));
    if (!c.gemms.back().verified)
      throw Unsupported("SGEMM results did not verify against the reference");
  }
  stage("gemv", 0);
  c.gemv = measure_sgemm(o.gemv_shape, gemm);
  // The per-call overhead is the call itself, not a cache miss on its 16 kB of weights.
  GemmOptions warm = gemm;
  warm.cold_weights = false;
  c.overhead = measure_sgemm(o.overhead_shape, warm);
  c.bandwidth_fraction = std::min(1.0, c.gemv.bandwidth_Bps / c.stream.bandwidth_Bps);
  const double effective_Bps = c.stream.bandwidth_Bps * c.bandwidth_fraction;
  double best = 0;
  for (const auto& g : c.gemms) best = std::max(best, math_flops_per_s(g, effective_Bps));
  c.matmul_fraction = std::min(1.0, best / c.peak.fp32_flops_per_s);
  stage("done", 1);
  return c;
}

nlohmann::json host_device_json(const Calibration& c, const std::string& date) {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  const double memory =
      pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 1e9;
  const long l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  const long llc = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  std::string best_gemm;
  double best = 0;
  for (const auto& g : c.gemms) {
    const double rate = math_flops_per_s(g, c.stream.bandwidth_Bps * c.bandwidth_fraction);
    if (rate > best) {
      best = rate;
      best_gemm = g.shape.label;
    }
  }
  const std::string how = "roofline calibrate on " + date;
  nlohmann::json doc = {
      {"id", "host"},
      {"name",
       "This machine (CPU, " + c.peak.isa + ", " + std::to_string(c.peak.threads) + " threads)"},
      {"vendor", "cpu"},
      {"architecture", "cpu"},
      {"compute_capability", c.peak.isa},
      {"aliases", nlohmann::json::array({"cpu", "this-machine"})},
      {"sources",
       {{"calibrate",
         how + ": STREAM copy/scale/add/triad, FMA peak kernels, OpenBLAS SGEMM/SGEMV"},
        {"sysconf", "sysconf(3) on this machine: physical pages, cache sizes, online processors"}}},
      {"memory",
       {{"type", "system memory"},
        {"capacity_bytes", figure(memory, "sysconf")},
        {"bandwidth_Bps",
         figure(c.stream.bandwidth_Bps, "calibrate",
                "STREAM " + c.stream.best_kernel + " (the best sustained kernel), " +
                    std::to_string(c.stream.threads) + " threads")}}},
      {"compute",
       {{"sm_count", figure(c.peak.threads, "sysconf", "cores used (threads of the measurement)")},
        {"l2_bytes",
         figure(llc > 0 ? static_cast<double>(llc) : (l2 > 0 ? static_cast<double>(l2) : 1e6),
                "sysconf", "last-level cache")},
        {"shared_memory_per_sm_bytes", figure(l2 > 0 ? static_cast<double>(l2) : 1 << 20, "sysconf",
                                              "L2 per core: the on-chip tile memory")},
        {"boost_clock_hz", {{"value", nullptr}, {"confidence", "unknown"}, {"source", "sysconf"}}},
        {"tdp_w", {{"value", nullptr}, {"confidence", "unknown"}, {"source", "sysconf"}}}}},
      {"interconnect",
       {{"name", "none"},
        {"bandwidth_Bps", {{"value", nullptr}, {"confidence", "unknown"}, {"source", "sysconf"}}}}},
      {"peaks",
       {{"fp32",
         {{"value", c.peak.fp32_flops_per_s},
          {"unit", "vector"},
          {"accumulate", "fp32"},
          {"confidence", "measured"},
          {"source", "calibrate"},
          {"note", "FMA throughput kernels on " + c.peak.isa + "; fp64 " +
                       std::to_string(c.peak.fp64_flops_per_s / 1e9) + " GFLOP/s"}}}}},
      {"efficiency",
       {{"bandwidth_fraction", figure(c.bandwidth_fraction, "calibrate",
                                      "SGEMV " + c.gemv.shape.label + " bandwidth / STREAM")},
        {"matmul_fraction",
         {{"default",
           figure(c.matmul_fraction, "calibrate",
                  "best SGEMM (" + best_gemm + "), its packing copy left out, / FMA peak")}}},
        {"launch_overhead_s", figure(c.overhead.median_time_s, "calibrate",
                                     "median time of a " + c.overhead.shape.label +
                                         " call (call and threading overhead)")}}}};
  return doc;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) throw InvalidArgument("percentile of no samples");
  if (!(q >= 0 && q <= 1)) throw InvalidArgument("percentile: q must be in [0, 1]");
  for (double x : v) {
    if (!std::isfinite(x)) throw InvalidArgument("percentile: a sample is not finite");
  }
  std::sort(v.begin(), v.end());
  const double h = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

Spread spread_of(const std::vector<double>& v) {
  Spread s;
  s.median = percentile(v, 0.5);
  s.p10 = percentile(v, 0.1);
  s.p90 = percentile(v, 0.9);
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  s.count = static_cast<int>(v.size());
  return s;
}

HostFigures host_figures(const GemmMeasurement& gemv, const GemmMeasurement& gemm) {
  HostFigures f;
  f.bandwidth_Bps = gemv.bandwidth_Bps;
  check_figure(f.bandwidth_Bps, "bandwidth");
  f.matmul_flops_per_s = math_flops_per_s(gemm, f.bandwidth_Bps);
  check_figure(f.matmul_flops_per_s, "matmul rate");
  return f;
}

Device with_host_figures(const Device& profile, const HostFigures& f) {
  check_figure(f.bandwidth_Bps, "bandwidth");
  check_figure(f.matmul_flops_per_s, "matmul rate");
  const double peak = profile.peak(Format::kFp32);
  const double bandwidth = profile.memory_bandwidth_Bps.value;
  if (!(std::isfinite(peak) && peak > 0 && std::isfinite(bandwidth) && bandwidth > 0)) {
    throw InvalidArgument(profile.id + ": a CPU profile needs an fp32 peak and a bandwidth");
  }
  Device d = profile;
  const std::string note = "measured in this run, right before the GEMM";
  d.bandwidth_fraction.value = f.bandwidth_Bps / bandwidth;
  d.bandwidth_fraction.confidence = Confidence::kMeasured;
  d.bandwidth_fraction.note = note;
  d.matmul_fraction_default.value = f.matmul_flops_per_s / peak;
  d.matmul_fraction_default.confidence = Confidence::kMeasured;
  d.matmul_fraction_default.note = note;
  d.matmul_fraction[format_index(Format::kFp32)].reset();  // the default now speaks for fp32
  return d;
}

std::vector<CompareStep> interleaved_schedule(std::size_t shapes, int repeats) {
  if (repeats < 1 || repeats > kMaxCompareRepeats) {
    throw InvalidArgument("compare: repeats must be in [1, " + std::to_string(kMaxCompareRepeats) +
                          "], got " + std::to_string(repeats));
  }
  std::vector<CompareStep> steps;
  steps.reserve(shapes * static_cast<std::size_t>(repeats));
  for (int r = 0; r < repeats; ++r) {
    for (std::size_t i = 0; i < shapes; ++i) {
      steps.push_back({r, (static_cast<std::size_t>(r) + i) % shapes});
    }
  }
  return steps;
}

CompareReport compare_gemms(const Device& d, const std::vector<GemmShape>& shapes,
                            const CompareOptions& o, const Progress& progress,
                            const GemmMeasurer& measure) {
  const std::vector<CompareStep> steps = interleaved_schedule(shapes.size(), o.repeats);
  const GemmMeasurer run = measure ? measure : GemmMeasurer(measure_sgemms_interleaved);
  GemmOptions gemm = o.gemm;
  std::unique_ptr<WeightPool> pool;
  if (!measure && gemm.cold_weights && gemm.pool == nullptr && !steps.empty()) {
    if (progress) progress("weights", 0);
    pool = std::make_unique<WeightPool>();
    gemm.pool = pool.get();
  }
  auto measured_ok = [&](const std::vector<GemmShape>& together) {
    std::vector<GemmMeasurement> ms = run(together, gemm);
    if (ms.size() != together.size()) throw Unsupported("compare: a measurement is missing");
    for (const GemmMeasurement& m : ms) {
      if (!m.verified) throw Unsupported("SGEMM " + m.shape.label + " did not verify");
    }
    return ms;
  };

  CompareReport r;
  r.repeats = o.repeats;
  r.interleaved = o.interleave;
  r.cases.resize(shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) r.cases[i].shape = shapes[i];
  std::vector<double> probe_bw, probe_rate;
  // [round][shape] |error|, for the per-round medians.
  std::vector<std::vector<double>> round_abs(static_cast<std::size_t>(o.repeats));
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (progress) progress("gemm", static_cast<double>(i) / static_cast<double>(steps.size()));
    const CompareStep& step = steps[i];
    const GemmShape& s = shapes[step.shape];
    Device now = d;
    double measured = 0;
    if (o.interleave) {
      // The probes and the shape call by call, over the same seconds.
      const auto ms = measured_ok({o.bandwidth_probe, o.matmul_probe, s});
      const HostFigures f = host_figures(ms[0], ms[1]);
      probe_bw.push_back(f.bandwidth_Bps);
      probe_rate.push_back(f.matmul_flops_per_s);
      now = with_host_figures(d, f);
      measured = ms[2].median_time_s;
    } else {
      measured = measured_ok({s}).front().median_time_s;
    }
    const double predicted =
        predict_gemm(now, GemmProblem{s.m, s.n, s.k, Format::kFp32, Format::kFp32}).time_s;
    const double error = (predicted - measured) / measured * 100;
    CompareCase& c = r.cases[step.shape];
    c.predicted_per_round_s.push_back(predicted);
    c.measured_per_round_s.push_back(measured);
    c.errors_pct.push_back(error);
    round_abs[static_cast<std::size_t>(step.round)].push_back(std::fabs(error));
  }
  if (progress) progress("done", 1);
  if (shapes.empty()) return r;

  // Each round ran every shape once, so each case's vectors are in round order.
  std::vector<double> abs_errors;
  for (CompareCase& c : r.cases) {
    c.predicted_s = median(c.predicted_per_round_s);
    c.measured_s = median(c.measured_per_round_s);
    c.error_spread_pct = spread_of(c.errors_pct);
    c.error_pct = c.error_spread_pct.median;
    abs_errors.push_back(std::fabs(c.error_pct));
  }
  r.median_abs_error_pct = median(abs_errors);
  r.max_abs_error_pct = *std::max_element(abs_errors.begin(), abs_errors.end());
  std::vector<double> round_medians;
  for (const auto& errors : round_abs) round_medians.push_back(median(errors));
  r.round_median_abs_error_pct = spread_of(round_medians);
  if (!probe_bw.empty()) {
    r.probe_bandwidth_Bps = spread_of(probe_bw);
    r.probe_matmul_flops_per_s = spread_of(probe_rate);
  }
  return r;
}

namespace {

nlohmann::json spread_json(const Spread& s) {
  return {{"median", s.median}, {"p10", s.p10}, {"p90", s.p90},
          {"min", s.min},       {"max", s.max}, {"count", s.count}};
}

}  // namespace

nlohmann::json to_json(const CompareReport& r) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& x : r.cases) {
    cases.push_back({{"m", x.shape.m},
                     {"n", x.shape.n},
                     {"k", x.shape.k},
                     {"label", x.shape.label},
                     {"predicted_s", x.predicted_s},
                     {"measured_s", x.measured_s},
                     {"error_pct", x.error_pct},
                     {"error_spread_pct", spread_json(x.error_spread_pct)},
                     {"errors_pct", x.errors_pct}});
  }
  nlohmann::json j = {{"cases", cases},
                      {"repeats", r.repeats},
                      {"interleaved", r.interleaved},
                      {"median_abs_error_pct", r.median_abs_error_pct},
                      {"max_abs_error_pct", r.max_abs_error_pct},
                      {"round_median_abs_error_pct", spread_json(r.round_median_abs_error_pct)}};
  if (r.probe_bandwidth_Bps.count > 0) {
    j["probe_bandwidth_Bps"] = spread_json(r.probe_bandwidth_Bps);
    j["probe_matmul_flops_per_s"] = spread_json(r.probe_matmul_flops_per_s);
  }
  return j;
}

Table compare_table(const CompareReport& r) {
  Table t({"shape", "label", "predicted", "measured", "error", "p10..p90", "min..max"});
  for (const auto& x : r.cases) {
    const Spread& e = x.error_spread_pct;
    t.add_row({std::to_string(x.shape.m) + "x" + std::to_string(x.shape.n) + "x" +
                   std::to_string(x.shape.k),
               x.shape.label, human_time(x.predicted_s), human_time(x.measured_s),
               fmt::format("{:+.1f}%", x.error_pct), fmt::format("{:+.1f}..{:+.1f}%", e.p10, e.p90),
               fmt::format("{:+.1f}..{:+.1f}%", e.min, e.max)});
  }
  return t;
}

std::string compare_summary(const CompareReport& r) {
  const Spread& rounds = r.round_median_abs_error_pct;
  std::string line = fmt::format(
      "median |error| {:.1f}%, max {:.1f}% ({} shapes, median of {} round{}); per round the "
      "median |error| ran {:.1f}..{:.1f}%",
      r.median_abs_error_pct, r.max_abs_error_pct, r.cases.size(), r.repeats,
      r.repeats == 1 ? "" : "s", rounds.min, rounds.max);
  if (r.interleaved && r.probe_bandwidth_Bps.count > 0) {
    line += fmt::format("; probed before each GEMM: bandwidth {}..{}, matmul {}..{}",
                        human_rate(r.probe_bandwidth_Bps.min, "B/s"),
                        human_rate(r.probe_bandwidth_Bps.max, "B/s"),
                        human_rate(r.probe_matmul_flops_per_s.min, "FLOP/s"),
                        human_rate(r.probe_matmul_flops_per_s.max, "FLOP/s"));
  } else {
    line += "; the profile's figures as given";
  }
  return line;
}

LayerReport run_decoder_layer(const Device& d, const LayerConfig& cfg) {
  if (cfg.hidden < 1 || cfg.hidden > 16384 || cfg.heads < 1 || cfg.kv_heads < 1 ||
      cfg.heads % cfg.kv_heads != 0 || cfg.head_dim < 1 || cfg.head_dim > 1024 ||
      cfg.intermediate < 1 || cfg.intermediate > 65536 || cfg.context < 1 ||
      cfg.context > 1 << 20 || cfg.repetitions < 1 || cfg.repetitions > 10000) {
    throw InvalidArgument("decoder layer: configuration out of range");
  }
  const auto H = static_cast<std::size_t>(cfg.hidden), nh = static_cast<std::size_t>(cfg.heads),
             nkv = static_cast<std::size_t>(cfg.kv_heads),
             dh = static_cast<std::size_t>(cfg.head_dim),
             I = static_cast<std::size_t>(cfg.intermediate),
             L = static_cast<std::size_t>(cfg.context);
  const double bytes = 4.0 * (static_cast<double>(H * nh * dh * 2 + H * nkv * dh * 2 + 3 * H * I) +
                              2.0 * L * nkv * dh);
  if (bytes > 4e9) throw InvalidArgument("decoder layer: more than 4 GB of weights and cache");
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  auto fill = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    return v;
  };
  const auto wq = fill(nh * dh * H), wk = fill(nkv * dh * H), wv = fill(nkv * dh * H),
             wo = fill(H * nh * dh);
  const auto wg = fill(I * H), wu = fill(I * H), wd = fill(H * I);
  const auto kc = fill(nkv * L * dh), vc = fill(nkv * L * dh);  // [kv head][token][dim]
  const auto norm = fill(H);
  std::vector<float> x = fill(H), h(H), q(nh * dh), k(nkv * dh), v(nkv * dh), att(nh * dh),
                     scores(L), o(H), g(I), up(I);
  auto rmsnorm = [&](const std::vector<float>& in, std::vector<float>& out) {
    double ss = 0;
    for (float f : in) ss += static_cast<double>(f) * f;
    const float inv =
        static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(in.size()) + 1e-6));
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = in[i] * inv * norm[i];
  };
  const blas::Api& blas_api = blas::api();
  auto step = [&] {
    rmsnorm(x, h);
    blas_api.sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(nh * dh), static_cast<int>(H), 1.f,
                   wq.data(), static_cast<int>(H), h.data(), 1, 0.f, q.data(), 1);
    blas_api.sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(nkv * dh), static_cast<int>(H),
                   1.f, wk.data(), static_cast<int>(H), h.data(), 1, 0.f, k.data(), 1);
    blas_api.sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(nkv * dh), static_cast<int>(H),
                   1.f, wv.data(), static_cast<int>(H), h.data(), 1, 0.f, v.data(), 1);
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    for (std::size_t head = 0; head < nh; ++head) {
      const std::size_t kvh = head / (nh / nkv);
      const float* K = kc.data() + kvh * L * dh;
      const float* V = vc.data() + kvh * L * dh;
      blas_api.sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(L), static_cast<int>(dh), scale,
                     K, static_cast<int>(dh), q.data() + head * dh, 1, 0.f, scores.data(), 1);
      const float mx = *std::max_element(scores.begin(), scores.end());
      double sum = 0;
      for (auto& s : scores) {
        s = std::exp(s - mx);
        sum += s;
      }
      for (auto& s : scores) s = static_cast<float>(s / sum);
      blas_api.sgemv(CblasRowMajor, CblasTrans, static_cast<int>(L), static_cast<int>(dh), 1.f, V,
                     static_cast<int>(dh), scores.data(), 1, 0.f, att.data() + head * dh, 1);
    }
    blas_api.sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(H), static_cast<int>(nh * dh), 1.f,
                   wo.data(), static_cast<int>(nh * dh), att.data(), 1, 0.f, o.data(), 1);
    for (std::size_t i = 0; i < H; ++i) x[i] += o[i] * 1e-3f;
    rmsnorm(x, h);
    blas_api.sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(I), static_cast<int>(H), 1.f,
                   wg.data(), static_cast<int>(H), h.data(), 1, 0.f, g.data(), 1);
    blas_api.sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(I), static_cast<int>(H), 1.f,
                   wu.data(), static_cast<int>(H), h.data(), 1, 0.f, up.data(), 1);
    for (std::size_t i = 0; i < I; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * up[i];
    blas_api.sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(H), static_cast<int>(I), 1.f,
                   wd.data(), static_cast<int>(I), g.data(), 1, 0.f, o.data(), 1);
    for (std::size_t i = 0; i < H; ++i) x[i] += o[i] * 1e-3f;
  };
  step();  // warm-up
  std::vector<double> times;
  for (int r = 0; r < cfg.repetitions; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  for (float f : x) {
    if (!std::isfinite(f)) throw Unsupported("decoder layer produced non-finite values");
  }

  // The same layer through the model: one layer, no vocabulary, fp32, decode
  // over `context` cached tokens (the measured step attends over exactly
  // `context` tokens, so predict with context - 1 cached plus the new one).
  ModelSpec m;
  m.id = m.name = "decoder-layer";
  m.origin = "bench";
  m.model_type = "short-form";
  m.hidden = cfg.hidden;
  m.layers = 1;
  m.heads = cfg.heads;
  m.kv_heads = cfg.kv_heads;
  m.head_dim = cfg.head_dim;
  m.intermediate = cfg.intermediate;
  validate(m);
  Scenario s;
  s.phase = Phase::kDecode;
  s.seq_len = std::max<std::int64_t>(1, cfg.context - 1);
  s.precision.weights = Format::kFp32;
  s.precision.act = Format::kFp32;
  s.precision.kv = Format::kFp32;
  s.attention = AttentionKernel::kNaive;
  const Prediction p = predict(m, d, s);
  LayerReport r;
  r.config = cfg;
  r.measured_s = median(times);
  r.predicted_s = p.time_s;
  r.error_pct = (r.predicted_s - r.measured_s) / r.measured_s * 100;
  r.weight_bytes = p.weight_bytes;
  r.kv_bytes = p.kv_bytes;
  return r;
}

}  // namespace roofline::measure
