#include "roofline/recommend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "roofline/deadline.h"
#include "roofline/error.h"
#include "roofline/report.h"

namespace roofline {
namespace {

Scenario scenario_for(const RecommendOptions& o, const PrecisionPlan& plan) {
  Scenario s;
  s.phase = o.phase;
  s.seq_len = o.seq_len;
  s.batch = o.batch;
  s.tp = o.tp;
  s.pp = o.pp;
  s.precision = plan;
  return s;
}

// The fastest attention kernel the device runs for this plan.
Prediction best_kernel(const ModelSpec& m, const Device& d, Scenario s, const ModelOptions& opt) {
  std::optional<Prediction> best;
  for (const auto& k : attention_kernels()) {
    if (!k.runs_on(d)) continue;
    s.attention = k.kernel;
    Prediction p = predict(m, d, s, opt);
    if (!best || p.time_s < best->time_s) best = std::move(p);
  }
  if (!best) throw Unsupported(d.id + ": no attention kernel runs on " + d.architecture);
  return std::move(*best);
}

double attention_share(const Prediction& p) {
  double t = 0;
  for (int i = 0; i < p.graph.size; ++i) {
    const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
    if (op.cls == OpClass::kAttention || op.kind == OpKind::kSoftmax)
      t += p.timings[static_cast<std::size_t>(i)].time_s;
  }
  return t / p.time_s;
}

}  // namespace

Recommendation recommend(const ModelSpec& m, const Device& d, const RecommendOptions& o) {
  if (!(o.max_quality_loss_pct >= 0) || !std::isfinite(o.max_quality_loss_pct)) {
    throw InvalidArgument("max quality loss must be a percentage >= 0");
  }
  if (o.memory_limit_bytes &&
      !(*o.memory_limit_bytes > 0 && std::isfinite(*o.memory_limit_bytes))) {
    throw InvalidArgument("memory limit must be a positive number of bytes");
  }
  if (o.latency_target_s && !(*o.latency_target_s > 0 && std::isfinite(*o.latency_target_s))) {
    throw InvalidArgument("latency target must be a positive number of seconds");
  }
  const std::vector<Strategy>& strategies =
      o.strategies.empty() ? built_in_strategies() : o.strategies;
  Recommendation rec;
  // The 16-bit reference: the checkpoint's own 16-bit type, else bf16.
  rec.baseline = m.native_weights == Format::kFp16 ? "fp16_baseline" : "bf16_baseline";
  const Strategy base_strategy = load_strategy(rec.baseline);
  const ResolvedStrategy base_plan = resolve(base_strategy, m, d);
  const Prediction base = best_kernel(m, d, scenario_for(o, base_plan.precision), o.model_options);
  const double limit = o.memory_limit_bytes.value_or(d.memory_capacity_bytes.value);

  std::vector<Candidate> all;
  for (const Strategy& st : strategies) {
    check_deadline("the recommendation");
    const ResolvedStrategy plan = resolve(st, m, d);
    Prediction p;
    try {
      p = best_kernel(m, d, scenario_for(o, plan.precision), o.model_options);
    } catch (const Unsupported& e) {
      // The engine cannot load this plan's formats: listed, rejected, not fatal.
      Candidate c;
      c.strategy = st.name;
      c.time_s = c.predicted_speedup = c.memory_bytes = c.memory_saving = std::nan("");
      c.baseline_time_s = base.time_s;
      c.quality = estimate_quality(m, plan.precision);
      c.notes = plan.notes;
      c.rejected_because.push_back(e.what());
      c.feasible = false;
      all.push_back(std::move(c));
      continue;
    }
    Candidate c;
    c.strategy = st.name;
    c.attention = p.graph.attention;
    c.time_s = p.time_s;
    c.baseline_time_s = base.time_s;
    c.predicted_speedup = base.time_s / p.time_s;
    c.memory_bytes = p.memory.total_bytes;
    c.memory_saving = 1 - p.memory.total_bytes / base.memory.total_bytes;
    c.quality = estimate_quality(m, plan.precision);
    c.notes = plan.notes;
    c.bound = p.bound;
    c.weight_bytes = p.weight_bytes;
    c.kv_bytes = p.kv_bytes;
    if (c.quality.loss_pct > o.max_quality_loss_pct + 1e-9) {
      c.rejected_because.push_back(
          fmt::format("estimated quality loss {:.1f}% exceeds the {:.1f}% allowed",
                      c.quality.loss_pct, o.max_quality_loss_pct));
    }
    if (c.memory_bytes > limit) {
      c.rejected_because.push_back(fmt::format("needs {} of memory, more than the {} available",
                                               human_bytes(c.memory_bytes), human_bytes(limit)));
    }
    if (o.latency_target_s && c.time_s > *o.latency_target_s) {
      c.rejected_because.push_back(fmt::format("takes {}, over the {} target", human_time(c.time_s),
                                               human_time(*o.latency_target_s)));
    }
    if (!o.checkpoint_reports.empty()) {
      const Format w = plan.precision.weights.value_or(m.native_weights);
      double sum = 0;
      for (const auto& t : o.checkpoint_reports) {
        for (const auto& e : t.errors) {
          if (e.format != w || e.outliers_kept || !std::isfinite(e.error.sqnr_db)) continue;
          sum += e.error.sqnr_db;
          ++c.measured_tensors;
          c.tensors_below_budget += e.error.sqnr_db < o.checkpoint_budget_sqnr_db;
        }
      }
      if (c.measured_tensors > 0) {
        c.measured_sqnr_db = sum / c.measured_tensors;
        c.quality.basis.push_back(
            fmt::format("measured on the checkpoint: {} weights keep {:.1f} dB SQNR on average; {} "
                        "of {} tensors fall below "
                        "{:.0f} dB",
                        format_id(w), c.measured_sqnr_db, c.tensors_below_budget,
                        c.measured_tensors, o.checkpoint_budget_sqnr_db));
      }
    }
    c.feasible = c.rejected_because.empty();
    all.push_back(std::move(c));
  }
  // Fastest feasible first; near-ties go to the smaller quality loss. Sorting
  // by time, then bubbling within tie windows, keeps the order well defined.
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    if (a.feasible != b.feasible) return a.feasible;
    return a.time_s < b.time_s;
  });
  for (std::size_t i = 1; i < all.size(); ++i) {
    for (std::size_t j = i; j > 0; --j) {
      Candidate& x = all[j - 1];
      Candidate& y = all[j];
      const bool tie = x.feasible == y.feasible && y.time_s <= x.time_s * (1 + o.time_tie_fraction);
      if (!tie || y.quality.loss_pct >= x.quality.loss_pct) break;
      std::swap(x, y);
    }
  }
  rec.any_feasible = all.front().feasible;
  rec.best = all.front();
  rec.alternatives = all;

  // Why, in plain words.
  auto& why = rec.rationale;
  const double ai = base.flops / base.bytes;
  if (o.phase == Phase::kDecode) {
    why.push_back(
        fmt::format("Decode at {} tokens of context, batch {}, on {} is {}-bound: each step reads "
                    "{} of weights and {} of KV "
                    "cache (16-bit), at {:.2g} FLOP per byte; so bytes, not FLOPs, set the time, "
                    "and fewer bits per weight "
                    "pay off almost one for one.",
                    o.seq_len, o.batch, d.name, bound_name(base.bound),
                    human_bytes(base.weight_bytes), human_bytes(base.kv_bytes), ai));
  } else {
    why.push_back(fmt::format(
        "Prefill of {} tokens, batch {}, on {} is {}-bound ({:.3g} FLOP per byte): lower-precision "
        "formats help "
        "when the tensor cores compute them natively, which doubles or quadruples the peak.",
        o.seq_len, o.batch, d.name, bound_name(base.bound), ai));
  }
  const double kv_share = base.kv_bytes / std::max(base.bytes, 1.0);
  if (o.phase == Phase::kDecode) {
    if (kv_share > 0.5) {
      why.push_back(fmt::format(
          "At this context the KV cache is {:.0f}% of the bytes a step reads: its format matters "
          "as much as the weights'.",
          kv_share * 100));
    } else {
      why.push_back(fmt::format(
          "The KV cache is {:.0f}% of the bytes a step reads at this context; the weight format "
          "matters more.",
          kv_share * 100));
    }
  }
  const Candidate& b = rec.best;
  if (b.feasible) {
    why.push_back(fmt::format(
        "Recommended: {} with {} attention: {} per {} vs {} for {} ({:.2f}x), {:.0f}% less memory, "
        "estimated quality loss {:.1f}%.",
        b.strategy, attention_kernel_id(b.attention), human_time(b.time_s),
        o.phase == Phase::kDecode ? "step" : "prefill", human_time(b.baseline_time_s), rec.baseline,
        b.predicted_speedup, b.memory_saving * 100, b.quality.loss_pct));
    std::string basis;
    for (const auto& line : b.quality.basis) basis += (basis.empty() ? "" : "; ") + line;
    why.push_back("Quality basis: " + basis + ".");
  } else {
    why.push_back(
        "No strategy meets every constraint; the list is ordered by time, each with what it "
        "misses.");
  }
  for (const std::string& n : b.notes) why.push_back(n + ".");
  for (const Candidate& c : all) {
    if (!c.feasible && c.time_s < b.time_s) {
      why.push_back(fmt::format("{} would be faster ({:.2f}x) but {}.", c.strategy,
                                c.predicted_speedup, c.rejected_because.front()));
    }
  }
  const double attn = attention_share(base);
  const auto& kinfo = attention_kernel_info(b.attention);
  why.push_back(fmt::format(
      "Attention is {:.0f}% of the 16-bit time; {} is the fastest attention kernel that runs on "
      "{} ({}).",
      attn * 100, kinfo.id, d.id, d.architecture));
  return rec;
}

}  // namespace roofline
