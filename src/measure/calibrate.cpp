#include "roofline/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "blas.h"
#include "roofline/error.h"
#include "roofline/predict.h"

namespace roofline::measure {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

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
  for (std::size_t i = 0; i < o.gemm_shapes.size(); ++i) {
    stage("gemm", static_cast<double>(i) / static_cast<double>(o.gemm_shapes.size()));
    c.gemms.push_back(measure_sgemm(o.gemm_shapes[i], o.gemm));
    if (!c.gemms.back().verified)
      throw Unsupported("SGEMM results did not verify against the reference");
  }
  stage("gemv", 0);
  c.gemv = measure_sgemm(o.gemv_shape, o.gemm);
  c.overhead = measure_sgemm(o.overhead_shape, o.gemm);
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

CompareReport compare_gemms(const Device& d, const std::vector<GemmShape>& shapes,
                            const GemmOptions& options, const Progress& progress) {
  CompareReport r;
  std::vector<double> errors;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (progress) progress("gemm", static_cast<double>(i) / static_cast<double>(shapes.size()));
    const GemmShape& s = shapes[i];
    const RooflineResult p =
        predict_gemm(d, GemmProblem{s.m, s.n, s.k, Format::kFp32, Format::kFp32});
    const GemmMeasurement m = measure_sgemm(s, options);
    if (!m.verified) throw Unsupported("SGEMM " + s.label + " did not verify");
    CompareCase c{s, p.time_s, m.median_time_s,
                  (p.time_s - m.median_time_s) / m.median_time_s * 100};
    errors.push_back(std::fabs(c.error_pct));
    r.max_abs_error_pct = std::max(r.max_abs_error_pct, errors.back());
    r.cases.push_back(c);
  }
  r.median_abs_error_pct = median(errors);
  return r;
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
