#include "roofline/sweep.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <thread>

#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/formats.h"

namespace roofline {
namespace {

constexpr std::uint64_t kRowsPerChunk = 8192;

struct Index {
  std::size_t model, device, phase, batch, seq, weights, act, kv, attention, tp, strategy;
};

// Sizes of the precision dimensions: the strategies replace weights, acts and kvs.
struct Dims {
  std::size_t weights, acts, kvs, strategies;
};
Dims dims_of(const SweepSpec& s) {
  if (!s.strategies.empty()) return {1, 1, 1, s.strategies.size()};
  return {s.weights.size(), s.acts.size(), s.kvs.size(), 1};
}

Index decode_index(const SweepSpec& s, std::uint64_t i) {
  const Dims dims = dims_of(s);
  Index x{};
  auto take = [&i](std::size_t n) {
    const std::size_t r = static_cast<std::size_t>(i % n);
    i /= n;
    return r;
  };
  // The last list varies fastest.
  x.tp = take(s.tps.size());
  x.attention = take(s.attentions.size());
  x.kv = take(dims.kvs);
  x.act = take(dims.acts);
  x.weights = take(dims.weights);
  x.strategy = take(dims.strategies);
  x.seq = take(s.seq_lens.size());
  x.batch = take(s.batches.size());
  x.phase = take(s.phases.size());
  x.device = take(s.devices.size());
  x.model = take(s.models.size());
  return x;
}

constexpr const char* kCsvHeader =
    "model,hardware,phase,batch,seq_len,weights,act,kv,attention,tp,strategy,time_s,tokens_per_s,"
    "bound,flops,"
    "bytes,weight_bytes,kv_cache_bytes,memory_total_bytes,fits,error\n";

void append(fmt::memory_buffer& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

// A double to 6 significant digits, printed in the shortest form that reads
// back to the rounded value: the same digits as "{:.6g}" at a fraction of the
// cost (fmt's shortest-form printer is much faster than its precision path).
// Rounding is exact: the integer numerator and the power of ten are exact
// doubles, so one correctly rounded multiply or divide gives the nearest
// double to the 6-digit decimal.
void append_g6(fmt::memory_buffer& out, double x) {
  if (x == 0 || !std::isfinite(x)) {
    fmt::format_to(fmt::appender(out), "{}", x);
    return;
  }
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const int e = static_cast<int>(std::floor(std::log10(std::fabs(x))));
  const int shift = 5 - e;  // digits to keep after the decimal point
  double r;
  if (shift >= 0 && shift <= 22) {
    r = std::round(x * kPow10[shift]) / kPow10[shift];
  } else if (shift < 0 && -shift <= 22) {
    r = std::round(x / kPow10[-shift]) * kPow10[-shift];
  } else {
    fmt::format_to(fmt::appender(out), "{:.6g}", x);
    return;
  }
  fmt::format_to(fmt::appender(out), FMT_COMPILE("{}"), r);
}

// CSV fields here are ids and numbers; only error messages need quoting.
void append_quoted(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

void append_json_string(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      fmt::format_to(fmt::appender(out), "\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

// Resolved once a sweep: the strategies' plans per (strategy, model, device)
// and, where the spec names an engine release, the options per (device,
// tensor-parallel size) that release runs with.
struct Plans {
  std::vector<PrecisionPlan> precision;
  std::vector<ModelOptions> release;  // empty: spec.options on every row
};
std::size_t plan_slot(const SweepSpec& s, std::size_t st, std::size_t m, std::size_t d) {
  return (st * s.models.size() + m) * s.devices.size() + d;
}

Plans resolve_plans(const SweepSpec& s) {
  Plans plans;
  plans.precision.resize(s.strategies.size() * s.models.size() * s.devices.size());
  for (std::size_t st = 0; st < s.strategies.size(); ++st) {
    for (std::size_t m = 0; m < s.models.size(); ++m) {
      for (std::size_t d = 0; d < s.devices.size(); ++d) {
        plans.precision[plan_slot(s, st, m, d)] =
            resolve(s.strategies[st], s.models[m], *s.devices[d]).precision;
      }
    }
  }
  if (!s.engine_version.empty()) {
    check_engine_version(s.engine_version, "engine version");
    plans.release.reserve(s.devices.size() * s.tps.size());
    for (const Device* d : s.devices) {
      for (std::int64_t tp : s.tps) {
        plans.release.push_back(
            with_engine_release(s.options, *d, s.engine_version, tp, EngineRegistry::built_in()));
      }
    }
  }
  return plans;
}

}  // namespace

std::optional<Format> parse_sweep_act(std::string_view text) {
  if (text == "engine") return std::nullopt;
  return parse_format(text);
}

namespace {

// The scenario of row i (and which model, device and strategy it takes).
SweepPoint point_of(const SweepSpec& s, const Plans& plans, std::uint64_t i) {
  const Index x = decode_index(s, i);
  SweepPoint pt;
  pt.model = x.model;
  pt.device = x.device;
  pt.strategy = x.strategy;
  Scenario& sc = pt.scenario;
  sc.phase = s.phases[x.phase];
  sc.batch = s.batches[x.batch];
  sc.seq_len = s.seq_lens[x.seq];
  if (!s.strategies.empty()) {
    sc.precision = plans.precision[plan_slot(s, x.strategy, x.model, x.device)];
  } else {
    sc.precision.weights = s.weights[x.weights];
    const std::optional<Format> act = s.acts[x.act];
    sc.precision.act = act.value_or(Format::kBf16);
    sc.precision.kv = s.kvs[x.kv].value_or(sc.precision.act);
    if (!act && s.options.engine) {
      s.options.engine->apply_weight_activation(&sc.precision, s.models[x.model].native_weights,
                                                *s.devices[x.device]);
    }
  }
  sc.attention = s.attentions[x.attention];
  sc.tp = s.tps[x.tp];
  pt.options = plans.release.empty() ? &s.options : &plans.release[x.device * s.tps.size() + x.tp];
  return pt;
}

void format_row(const SweepSpec& s, const Plans& plans, std::uint64_t i, SweepFormat f,
                fmt::memory_buffer& out) {
  const SweepPoint pt = point_of(s, plans, i);
  const ModelSpec& m = s.models[pt.model];
  const Device& d = *s.devices[pt.device];
  const Scenario& sc = pt.scenario;
  const std::string_view strategy =
      s.strategies.empty() ? std::string_view() : std::string_view(s.strategies[pt.strategy].name);
  const std::string_view weights =
      sc.precision.weights ? format_id(*sc.precision.weights) : std::string_view("native");
  const std::string_view attention =
      sc.attention ? attention_kernel_id(*sc.attention) : std::string_view("auto");
  auto out_it = fmt::appender(out);
  const bool csv = f == SweepFormat::kCsv;
  if (csv) {
    fmt::format_to(out_it, FMT_COMPILE("{},{},{},{},{},{},{},{},{},{},{},"), m.id, d.id,
                   phase_name(sc.phase), sc.batch, sc.seq_len, weights, format_id(sc.precision.act),
                   format_id(sc.precision.kv), attention, sc.tp, strategy);
  } else {
    append(out, "{\"model\":");
    append_json_string(out, m.id);
    fmt::format_to(
        out_it,
        FMT_COMPILE(
            ",\"hardware\":\"{}\",\"phase\":\"{}\",\"batch\":{},\"seq_len\":{},\"weights\":\"{}\","
            "\"act\":\"{}\",\"kv\":\"{}\",\"attention\":\"{}\",\"tp\":{},\"strategy\":\"{}\""),
        d.id, phase_name(sc.phase), sc.batch, sc.seq_len, weights, format_id(sc.precision.act),
        format_id(sc.precision.kv), attention, sc.tp, strategy);
  }
  try {
    const Prediction p = predict(m, d, sc, *pt.options);
    if (csv) {
      append_g6(out, p.time_s);
      out.push_back(',');
      append_g6(out, p.tokens_per_s);
      out.push_back(',');
      append(out, bound_name(p.bound));
      for (double v : {p.flops, p.bytes, p.weight_bytes, p.kv_bytes, p.memory.total_bytes}) {
        out.push_back(',');
        append_g6(out, v);
      }
      append(out, p.memory.fits ? ",true,\n" : ",false,\n");
    } else {
      fmt::format_to(out_it,
                     ",\"time_s\":{:.6g},\"tokens_per_s\":{:.6g},\"bound\":\"{}\",\"flops\":{:.6g},"
                     "\"bytes\":{:.6g},\"weight_bytes\":{:.6g},\"kv_cache_bytes\":{:.6g},"
                     "\"memory_total_bytes\":{:.6g},\"fits\":{}}}",
                     p.time_s, p.tokens_per_s, bound_name(p.bound), p.flops, p.bytes,
                     p.weight_bytes, p.kv_bytes, p.memory.total_bytes,
                     p.memory.fits ? "true" : "false");
    }
  } catch (const Error& e) {
    if (csv) {
      append(out, ",,,,,,,,,");
      append_quoted(out, e.what());
      out.push_back('\n');
    } else {
      append(out, ",\"error\":");
      append_json_string(out, e.what());
      out.push_back('}');
    }
  }
}

// ---------------------------------------------------------------- GEMM sweeps

struct GemmIndex {
  std::size_t device, m, n, k, weights, act;
};

GemmIndex decode_gemm_index(const GemmSweepSpec& s, std::uint64_t i) {
  GemmIndex x{};
  auto take = [&i](std::size_t n) {
    const std::size_t r = static_cast<std::size_t>(i % n);
    i /= n;
    return r;
  };
  // The last list varies fastest, in the order of the columns.
  x.act = take(s.acts.size());
  x.weights = take(s.weights.size());
  x.k = take(s.ks.size());
  x.n = take(s.ns.size());
  x.m = take(s.ms.size());
  x.device = take(s.devices.size());
  return x;
}

// The columns of `roofline gemm --csv` (device named hardware, as in every
// sweep), then the attained rates, the bytes' split and whether the weights
// are dequantized.
constexpr const char* kGemmCsvHeader =
    "hardware,mode,m,n,k,weights,act,compute_format,time_s,memory_time_s,compute_time_s,"
    "overhead_s,flops,bytes,ai,ridge_ai,bound,attained_flops_per_s,attained_bandwidth_Bps,"
    "bytes_read,bytes_written,weight_only,error\n";

void format_gemm_row(const GemmSweepSpec& s, std::uint64_t i, SweepFormat f,
                     fmt::memory_buffer& out) {
  const GemmIndex x = decode_gemm_index(s, i);
  const Device& d = *s.devices[x.device];
  GemmProblem p;
  p.m = s.ms[x.m];
  p.n = s.ns[x.n];
  p.k = s.ks[x.k];
  p.weights = s.weights[x.weights];
  p.act = s.acts[x.act];
  const std::string_view mode = mode_name(s.options.mode);
  auto out_it = fmt::appender(out);
  const bool csv = f == SweepFormat::kCsv;
  if (csv) {
    fmt::format_to(out_it, FMT_COMPILE("{},{},{},{},{},{},{},"), d.id, mode, p.m, p.n, p.k,
                   format_id(p.weights), format_id(p.act));
  } else {
    append(out, "{\"hardware\":");
    append_json_string(out, d.id);
    fmt::format_to(out_it,
                   FMT_COMPILE(",\"mode\":\"{}\",\"m\":{},\"n\":{},\"k\":{},\"weights\":\"{}\","
                               "\"act\":\"{}\""),
                   mode, p.m, p.n, p.k, format_id(p.weights), format_id(p.act));
  }
  try {
    const RooflineResult r = predict_gemm(d, p, s.options);
    if (csv) {
      append(out, format_id(r.compute_format));
      for (double v : {r.time_s, r.memory_time_s, r.compute_time_s, r.overhead_s, r.flops, r.bytes,
                       r.ai, r.ridge_ai}) {
        out.push_back(',');
        append_g6(out, v);
      }
      out.push_back(',');
      append(out, bound_name(r.bound));
      for (double v :
           {r.attained_flops_per_s, r.attained_bandwidth_Bps, r.bytes_read, r.bytes_written}) {
        out.push_back(',');
        append_g6(out, v);
      }
      append(out, r.weight_only ? ",true,\n" : ",false,\n");
    } else {
      fmt::format_to(
          out_it,
          ",\"compute_format\":\"{}\",\"time_s\":{:.6g},\"memory_time_s\":{:.6g},"
          "\"compute_time_s\":{:.6g},\"overhead_s\":{:.6g},\"flops\":{:.6g},\"bytes\":{:.6g},"
          "\"ai\":{:.6g},\"ridge_ai\":{:.6g},\"bound\":\"{}\",\"attained_flops_per_s\":{:.6g},"
          "\"attained_bandwidth_Bps\":{:.6g},\"bytes_read\":{:.6g},\"bytes_written\":{:.6g},"
          "\"weight_only\":{}}}",
          format_id(r.compute_format), r.time_s, r.memory_time_s, r.compute_time_s, r.overhead_s,
          r.flops, r.bytes, r.ai, r.ridge_ai, bound_name(r.bound), r.attained_flops_per_s,
          r.attained_bandwidth_Bps, r.bytes_read, r.bytes_written,
          r.weight_only ? "true" : "false");
    }
  } catch (const Error& e) {
    if (csv) {
      append(out, ",,,,,,,,,,,,,,,");
      append_quoted(out, e.what());
      out.push_back('\n');
    } else {
      append(out, ",\"error\":");
      append_json_string(out, e.what());
      out.push_back('}');
    }
  }
}

// ---------------------------------------------------------------- the row loop

void check_threads(unsigned threads) {
  if (threads > kMaxSweepThreads) {
    throw InvalidArgument("a sweep runs on 1 to " + std::to_string(kMaxSweepThreads) +
                          " threads (0: all cores), not " + std::to_string(threads));
  }
}

// Writes rows [0, total) through `row(i, buffer)` on `threads` threads (0: all
// cores), in order, in chunks, framed as `f` asks.
template <typename RowFn>
void run_rows(std::uint64_t total, SweepFormat f, const char* csv_header, const RowFn& row,
              const std::function<void(std::string_view)>& sink,
              const std::function<void(std::uint64_t, std::uint64_t)>& progress, unsigned threads) {
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxSweepThreads);
  if (f == SweepFormat::kCsv) sink(csv_header);
  if (f == SweepFormat::kJson) sink("[\n");
  std::vector<fmt::memory_buffer> buffers(threads);
  std::uint64_t done = 0;
  while (done < total) {
    const std::uint64_t batch_rows = std::min<std::uint64_t>(total - done, kRowsPerChunk * threads);
    const std::uint64_t per_thread = (batch_rows + threads - 1) / threads;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      const std::uint64_t begin = done + t * per_thread;
      const std::uint64_t end = std::min(done + batch_rows, begin + per_thread);
      buffers[t].clear();
      if (begin >= end) continue;
      pool.emplace_back([&, t, begin, end] {
        fmt::memory_buffer& out = buffers[t];
        out.reserve((end - begin) * 200);
        for (std::uint64_t i = begin; i < end; ++i) {
          row(i, out);
          if (f == SweepFormat::kJson)
            append(out, (i + 1 < total) ? ",\n" : "\n");
          else if (f == SweepFormat::kJsonLines)
            out.push_back('\n');
        }
      });
    }
    for (auto& th : pool) th.join();
    for (const auto& b : buffers) {
      if (b.size() > 0) sink(std::string_view(b.data(), b.size()));
    }
    done += batch_rows;
    if (progress) progress(done, total);
  }
  if (f == SweepFormat::kJson) sink("]\n");
}

}  // namespace

std::uint64_t sweep_rows(const SweepSpec& s, std::uint64_t max_rows) {
  const Dims dims = dims_of(s);
  const std::size_t sizes[] = {s.models.size(),     s.devices.size(),  s.phases.size(),
                               s.batches.size(),    s.seq_lens.size(), dims.weights,
                               dims.acts,           dims.kvs,          dims.strategies,
                               s.attentions.size(), s.tps.size()};
  std::uint64_t rows = 1;
  for (std::size_t n : sizes) {
    if (n == 0) throw InvalidArgument("every sweep list needs at least one value");
    if (rows > max_rows / n) {
      throw InvalidArgument("the sweep has more than " + std::to_string(max_rows) +
                            " combinations");
    }
    rows *= n;
  }
  return rows;
}

void run_sweep(const SweepSpec& s, SweepFormat f, const std::function<void(std::string_view)>& sink,
               const std::function<void(std::uint64_t, std::uint64_t)>& progress,
               unsigned threads) {
  check_threads(threads);
  const std::uint64_t total = sweep_rows(s);
  const Plans plans = resolve_plans(s);
  run_rows(
      total, f, kCsvHeader,
      [&](std::uint64_t i, fmt::memory_buffer& out) { format_row(s, plans, i, f, out); }, sink,
      progress, threads);
}

std::uint64_t sweep_rows(const GemmSweepSpec& s, std::uint64_t max_rows) {
  const std::size_t sizes[] = {s.devices.size(), s.ms.size(),      s.ns.size(),
                               s.ks.size(),      s.weights.size(), s.acts.size()};
  std::uint64_t rows = 1;
  for (std::size_t n : sizes) {
    if (n == 0) throw InvalidArgument("every sweep list needs at least one value");
    if (rows > max_rows / n) {
      throw InvalidArgument("the sweep has more than " + std::to_string(max_rows) +
                            " combinations");
    }
    rows *= n;
  }
  // Bad on every device: refused before any row is written.
  for (const auto* list : {&s.ms, &s.ns, &s.ks}) {
    const char* name = list == &s.ms ? "m" : (list == &s.ns ? "n" : "k");
    for (std::int64_t v : *list) {
      if (v < 1 || v > kMaxGemmDimension) {
        throw InvalidArgument(
            fmt::format("{}: {} is not a GEMM dimension (1 to {})", name, v, kMaxGemmDimension));
      }
    }
  }
  for (Format a : s.acts) {
    if (!format_info(a).compute_format) {
      throw InvalidArgument("activation format " + std::string(format_id(a)) +
                            " is a storage-only format; activations need a compute format");
    }
  }
  for (const Device* d : s.devices) {
    if (d == nullptr) throw InvalidArgument("a sweep device is missing");
  }
  return rows;
}

void run_sweep(const GemmSweepSpec& s, SweepFormat f,
               const std::function<void(std::string_view)>& sink,
               const std::function<void(std::uint64_t, std::uint64_t)>& progress,
               unsigned threads) {
  check_threads(threads);
  const std::uint64_t total = sweep_rows(s);
  run_rows(
      total, f, kGemmCsvHeader,
      [&](std::uint64_t i, fmt::memory_buffer& out) { format_gemm_row(s, i, f, out); }, sink,
      progress, threads);
}

void visit_sweep(const SweepSpec& s, const SweepVisitor& visit, unsigned threads,
                 std::uint64_t max_rows) {
  check_threads(threads);
  const std::uint64_t total = sweep_rows(s, max_rows);
  const Plans plans = resolve_plans(s);
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxSweepThreads);
  threads = static_cast<unsigned>(std::min<std::uint64_t>(threads, total));
  const std::uint64_t per_thread = (total + threads - 1) / threads;
  std::vector<std::exception_ptr> failures(threads);
  auto work = [&](unsigned t) {
    try {
      const std::uint64_t end = std::min(total, (t + 1) * per_thread);
      for (std::uint64_t i = t * per_thread; i < end; ++i) {
        const SweepPoint pt = point_of(s, plans, i);
        bool predicted = false;
        try {
          const Prediction p =
              predict(s.models[pt.model], *s.devices[pt.device], pt.scenario, *pt.options);
          predicted = true;
          visit(i, pt, &p, {});
        } catch (const Error& e) {
          if (predicted) throw;  // from `visit`: not the row's error
          visit(i, pt, nullptr, e.what());
        }
      }
    } catch (...) {
      failures[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  for (const auto& f : failures) {
    if (f) std::rethrow_exception(f);
  }
}

}  // namespace roofline
