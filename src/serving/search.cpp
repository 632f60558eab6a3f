#include "roofline/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "roofline/deadline.h"
#include "roofline/engine.h"
#include "roofline/error.h"

namespace roofline {
namespace {

constexpr std::int64_t kMaxGpus = 4096;
constexpr std::int64_t kMaxConcurrency = 4096;
constexpr std::size_t kRunnersUp = 3;

std::string time_text(double s) {
  return s < 1 ? fmt::format("{:.3g} ms", s * 1e3) : fmt::format("{:.3g} s", s);
}

std::string misses_of(const Deployment& d, const SearchSpec& spec) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  if (spec.ttft_max_s && d.serving.ttft_s > *spec.ttft_max_s)
    add("TTFT " + time_text(d.serving.ttft_s) + " > " + time_text(*spec.ttft_max_s));
  if (spec.tpot_max_s && d.serving.tpot_s > *spec.tpot_max_s)
    add("TPOT " + time_text(d.serving.tpot_s) + " > " + time_text(*spec.tpot_max_s));
  return out;
}

std::string name_of(const Deployment& d) {
  return fmt::format("{} at {}", deployment_name(d), d.concurrency);
}

// A layout of one replica.
struct Layout {
  ServingMode mode = ServingMode::kAggregated;
  std::int64_t tp = 1;                            // aggregated
  std::int64_t pw = 0, ptp = 0, dw = 0, dtp = 0;  // disaggregated
  std::int64_t attention_dp = 1;  // MoE: attention data parallel (disaggregated: the decode pool's)
  std::int64_t ep = 1;            // ... with expert parallelism
  std::int64_t prefill_attention_dp = 1, prefill_ep = 1;  // disaggregated MoE: the prefill pool's
  [[nodiscard]] std::int64_t gpus() const {
    return mode == ServingMode::kAggregated ? tp : pw * ptp + dw * dtp;
  }
};

constexpr std::int64_t kMaxWorkers = 4;

}  // namespace

std::string deployment_name(const Deployment& d) {
  const std::string engine =
      d.engine_version.empty() ? d.engine : d.engine + " " + d.engine_version;
  if (d.mode == ServingMode::kDisaggregated &&
      (d.attention_dp > 1 || d.ep > 1 || d.prefill_attention_dp > 1 || d.prefill_ep > 1)) {
    const auto pool = [](std::int64_t workers, std::int64_t tp, std::int64_t dp, std::int64_t ep) {
      return fmt::format("{}xTP{}{}{}", workers, tp, dp > 1 ? " DP-attention" : "",
                         ep > 1 ? fmt::format(" EP{}", ep) : "");
    };
    return fmt::format("{} {} {} + {} x{}", engine, format_id(d.weights),
                       pool(d.prefill_workers, d.prefill_tp, d.prefill_attention_dp, d.prefill_ep),
                       pool(d.decode_workers, d.decode_tp, d.attention_dp, d.ep), d.replicas);
  }
  if (d.mode == ServingMode::kAggregated) {
    return d.attention_dp > 1
               ? fmt::format("{} {} TP{} DP-attention{} x{}", engine, format_id(d.weights), d.tp,
                             d.ep > 1 ? fmt::format(" EP{}", d.ep) : "", d.replicas)
               : fmt::format("{} {} TP{} x{}", engine, format_id(d.weights), d.tp, d.replicas);
  }
  return fmt::format("{} {} {}xTP{}+{}xTP{} x{}", engine, format_id(d.weights), d.prefill_workers,
                     d.prefill_tp, d.decode_workers, d.decode_tp, d.replicas);
}

std::map<std::string, std::string> parse_engine_versions(std::string_view text,
                                                         const std::vector<std::string>& engines) {
  if (text.size() > 1000) throw InvalidArgument("engine versions: at most 1000 characters");
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    const std::size_t eq = item.find('=');
    std::string id, version;
    if (eq == std::string_view::npos) {
      if (engines.size() != 1) {
        throw InvalidArgument(fmt::format(
            "engine version \"{}\": name the engine (as vllm={}) unless the search runs exactly "
            "one engine",
            std::string(item), std::string(item)));
      }
      id = engines.front();
      version = std::string(item);
    } else {
      id = std::string(item.substr(0, eq));
      version = std::string(item.substr(eq + 1));
    }
    if (id.empty() || version.empty()) {
      throw InvalidArgument(
          fmt::format("engine version \"{}\": expected ENGINE=RELEASE (vllm=0.11.0) or one release",
                      std::string(item)));
    }
    if (!out.emplace(id, version).second)
      throw InvalidArgument(fmt::format("engine version: {} is given two releases", id));
  }
  return out;
}

void set_range_ratio(SearchSpec& spec, double ratio) {
  spec.isl_min = range_ratio_min(spec.isl, ratio);
  spec.osl_min = range_ratio_min(spec.osl, ratio);
}

SearchResult search_deployments(const ModelSpec& m, const Device& device, const SearchSpec& spec,
                                const std::function<void(std::int64_t, std::int64_t)>& progress) {
  if (spec.gpus < 1 || spec.gpus > kMaxGpus)
    throw InvalidArgument(fmt::format("gpus = {} is out of range (1 to {})", spec.gpus, kMaxGpus));
  if (spec.isl < 1 || spec.osl < 1 || spec.isl > kMaxSeqLen || spec.osl > kMaxSeqLen - spec.isl)
    throw InvalidArgument("isl and osl must be at least 1 (and isl + osl at most 2^30)");
  if (spec.isl_min < 0 || spec.isl_min > spec.isl || spec.osl_min < 0 || spec.osl_min > spec.osl)
    throw InvalidArgument("isl_min and osl_min must be from 0 (fixed) to isl and osl");
  for (const auto& t : {spec.ttft_max_s, spec.tpot_max_s}) {
    if (t && !(*t > 0 && std::isfinite(*t)))
      throw InvalidArgument("latency targets must be positive seconds");
  }
  if (spec.draft_tokens < 0 || spec.draft_tokens > kMaxDraftTokens) {
    throw InvalidArgument(fmt::format("draft tokens must be 0 to {}", kMaxDraftTokens));
  }
  check_prefix_reuse(spec.shared_prefix, spec.prompt_pool, shortest_length(spec.isl_min, spec.isl));
  const double acceptance = draft_acceptance(m, spec.draft_tokens, spec.acceptance);
  const EngineRegistry& registry = EngineRegistry::built_in();
  std::vector<const EngineProfile*> engines;
  if (spec.engines.empty()) {
    for (const auto& e : registry.engines()) {
      if (e.kind == "serving") engines.push_back(&e);
    }
  } else {
    for (const auto& id : spec.engines) engines.push_back(&registry.get(id));
  }
  for (const auto& release : spec.engine_versions) {
    const std::string& id = release.first;
    if (std::none_of(engines.begin(), engines.end(),
                     [&id](const EngineProfile* e) { return e->id == id; })) {
      std::string searched;
      for (const EngineProfile* e : engines) searched += (searched.empty() ? "" : ", ") + e->id;
      throw InvalidArgument(
          fmt::format("a release for {}, which the search does not run (engines: {})",
                      id.size() <= 64 ? id : id.substr(0, 64) + "...", searched));
    }
    check_engine_version(release.second, fmt::format("the release for {}", id));
  }
  std::vector<Format> weights = spec.weights;
  if (weights.empty()) {
    for (Format f : {Format::kBf16, Format::kFp8, Format::kNvfp4}) {
      if (device.computes(f)) weights.push_back(f);
    }
  }
  std::vector<std::int64_t> tps;
  for (std::int64_t tp = 1; tp <= spec.gpus; tp *= 2) {
    if (spec.gpus % tp == 0) tps.push_back(tp);
  }
  std::vector<ServingMode> modes = spec.modes;
  if (modes.empty()) {
    modes.push_back(ServingMode::kAggregated);
    if (spec.gpus >= 2) modes.push_back(ServingMode::kDisaggregated);
  }
  std::vector<Layout> layouts;
  for (ServingMode mode : modes) {
    if (mode == ServingMode::kAggregated) {
      for (std::int64_t tp : tps) {
        layouts.push_back({mode, tp, 0, 0, 0, 0, 1});
        // MoE models are served with data-parallel attention too (DeepSeek-style:
        // every rank its own sequences), the experts sliced over all the ranks or
        // spread whole over them (expert parallel: the tokens travel by all-to-all).
        if (m.moe && tp >= 2) {
          layouts.push_back({mode, tp, 0, 0, 0, 0, tp});
          if (m.moe->num_experts % tp == 0) layouts.push_back({mode, tp, 0, 0, 0, 0, tp, tp});
        }
      }
      continue;
    }
    // Workers of at most one 8-GPU node each. For MoE models each pool is
    // also tried with data-parallel attention and the experts spread whole
    // over its GPUs (the wide-EP layout of DeepSeek-style deployments).
    const auto wide_ok = [&](std::int64_t tp) {
      return m.moe && tp >= 2 && m.moe->num_experts % tp == 0;
    };
    for (std::int64_t ptp : tps) {
      for (std::int64_t dtp : tps) {
        if (ptp > kNvlinkDomainGpus || dtp > kNvlinkDomainGpus) continue;
        for (std::int64_t pw = 1; pw <= kMaxWorkers; ++pw) {
          for (std::int64_t dw = 1; dw <= kMaxWorkers; ++dw) {
            Layout l{mode, dtp, pw, ptp, dw, dtp, 1};
            if (l.gpus() > spec.gpus || spec.gpus % l.gpus() != 0) continue;
            for (bool wide_prefill : {false, true}) {
              if (wide_prefill && !wide_ok(ptp)) continue;
              for (bool wide_decode : {false, true}) {
                if (wide_decode && !wide_ok(dtp)) continue;
                l.prefill_attention_dp = l.prefill_ep = wide_prefill ? ptp : 1;
                l.attention_dp = l.ep = wide_decode ? dtp : 1;
                layouts.push_back(l);
              }
            }
          }
        }
      }
    }
  }
  std::vector<std::int64_t> concurrencies = spec.concurrencies;
  if (concurrencies.empty()) {
    for (std::int64_t c = 1; c <= kMaxConcurrency; c *= 2) concurrencies.push_back(c);
  }
  for (std::int64_t c : concurrencies) {
    if (c < 1 || c > kMaxBatch) throw InvalidArgument("concurrency must be 1 to 2^20");
  }

  SearchResult result;
  std::vector<Deployment> all;
  std::map<std::string, int> refusals;
  const std::int64_t total = static_cast<std::int64_t>(engines.size() * weights.size() *
                                                       layouts.size() * concurrencies.size());
  std::int64_t done = 0;
  for (const EngineProfile* e : engines) {
    ModelOptions o;
    o.engine = e;
    const auto release = spec.engine_versions.find(e->id);
    const std::string version = release == spec.engine_versions.end() ? "" : release->second;
    for (Format w : weights) {
      for (const Layout& l : layouts) {
        std::int64_t saturated = 0;  // a concurrency past which only queues grow
        for (std::int64_t c : concurrencies) {
          ++done;
          if (saturated > 0 && c > saturated) {
            ++result.skipped;
            continue;
          }
          if (progress && done % 16 == 0) progress(done, total);
          check_deadline("the deployment search");
          Deployment d;
          d.engine = e->id;
          d.engine_version = version;
          d.weights = w;
          d.tp = l.tp;
          d.attention_dp = l.attention_dp;
          d.ep = l.ep;
          d.mode = l.mode;
          d.replicas = spec.gpus / l.gpus();
          d.concurrency = c;
          try {
            ServingScenario s;
            s.isl = spec.isl;
            s.osl = spec.osl;
            s.isl_min = spec.isl_min;
            s.osl_min = spec.osl_min;
            s.concurrency = c;
            s.step.tp = l.tp;
            s.step.attention_dp = l.attention_dp;
            s.step.ep = l.ep;
            if (l.mode == ServingMode::kDisaggregated) {
              s.mode = l.mode;
              s.prefill_workers = d.prefill_workers = l.pw;
              s.prefill_tp = d.prefill_tp = l.ptp;
              s.decode_workers = d.decode_workers = l.dw;
              s.decode_tp = d.decode_tp = l.dtp;
              s.prefill_attention_dp = d.prefill_attention_dp = l.prefill_attention_dp;
              s.prefill_ep = d.prefill_ep = l.prefill_ep;
            }
            s.step.precision.weights = w;
            s.recipe = spec.recipe;
            s.engine_version = version;
            s.step.draft_tokens = spec.draft_tokens;
            s.shared_prefix = spec.shared_prefix;
            s.prompt_pool = spec.prompt_pool;
            s.step.acceptance = acceptance;
            // The engine's activations for these weights (W8A8, W4A4 where it
            // runs them so: EngineProfile::weight_activations, as predict
            // without --act); an engine without rules: the weights' format
            // where the device computes it.
            if (!e->apply_weight_activation(&s.step.precision, m.native_weights, device) &&
                e->weight_activations.empty() && (w == Format::kFp8 || w == Format::kNvfp4) &&
                device.computes(w)) {
              s.step.precision.act = w;
            }
            d.serving = predict_serving(m, device, s, o);
          } catch (const TimeLimit&) {
            throw;
          } catch (const Error& x) {
            ++result.refused;
            ++refusals[x.what()];
            continue;
          }
          ++result.evaluated;
          // Twice the requests that can run at once: more clients only wait
          // longer for the same throughput, so larger concurrencies are skipped.
          const bool aggregated = l.mode == ServingMode::kAggregated;
          const std::int64_t held =
              std::min(d.serving.max_concurrency_that_fits,
                       aggregated ? d.serving.max_running : d.serving.decode_max_running * l.dw);
          if (held > 0 && c >= 2 * held) saturated = c;
          d.tokens_per_s = d.serving.output_tokens_per_s * static_cast<double>(d.replicas);
          d.tokens_per_s_per_gpu = d.tokens_per_s / static_cast<double>(spec.gpus);
          d.tokens_per_s_per_user = d.serving.output_tokens_per_s_per_user;
          d.misses = misses_of(d, spec);
          d.meets_targets = d.misses.empty();
          all.push_back(std::move(d));
        }
      }
    }
  }
  if (progress) progress(total, total);

  // Pareto front: no other configuration is at least as good on both axes and
  // better on one.
  std::vector<const Deployment*> order;
  for (const auto& d : all) order.push_back(&d);
  std::sort(order.begin(), order.end(), [](const Deployment* a, const Deployment* b) {
    return a->tokens_per_s_per_user != b->tokens_per_s_per_user
               ? a->tokens_per_s_per_user > b->tokens_per_s_per_user
               : a->tokens_per_s_per_gpu > b->tokens_per_s_per_gpu;
  });
  double best_gpu = -1;
  for (const Deployment* d : order) {
    if (d->tokens_per_s_per_gpu > best_gpu) {
      result.front.push_back(*d);
      best_gpu = d->tokens_per_s_per_gpu;
    }
  }
  std::reverse(result.front.begin(), result.front.end());  // by tokens/s per user, ascending

  // The best meeting the targets, and why the next ones lost.
  std::vector<const Deployment*> ranked;
  for (const auto& d : all) ranked.push_back(&d);
  std::sort(ranked.begin(), ranked.end(), [](const Deployment* a, const Deployment* b) {
    if (a->meets_targets != b->meets_targets) return a->meets_targets;
    return a->tokens_per_s_per_gpu > b->tokens_per_s_per_gpu;
  });
  if (!ranked.empty() && ranked.front()->meets_targets) {
    result.best = *ranked.front();
    const Deployment& best = *result.best;
    for (std::size_t i = 1; i < ranked.size() && result.runners_up.size() < kRunnersUp; ++i) {
      const Deployment& d = *ranked[i];
      std::string why;
      if (!d.meets_targets) {
        why = d.misses;
      } else {
        why = fmt::format("{:.2g}% fewer tokens/s per GPU than {}",
                          (1 - d.tokens_per_s_per_gpu / best.tokens_per_s_per_gpu) * 100,
                          name_of(best));
      }
      result.runners_up.push_back({d, why});
    }
  } else {
    // Nothing meets the targets: the closest ones, with what they miss.
    for (std::size_t i = 0; i < ranked.size() && result.runners_up.size() < kRunnersUp; ++i) {
      result.runners_up.push_back({*ranked[i], ranked[i]->misses});
    }
  }
  for (const auto& [reason, n] : refusals) result.refusals.emplace_back(reason, n);
  std::sort(result.refusals.begin(), result.refusals.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return result;
}

}  // namespace roofline
