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
  return fmt::format("{} {} TP{} x{} at {}", d.engine, format_id(d.weights), d.tp, d.replicas,
                     d.concurrency);
}

}  // namespace

SearchResult search_deployments(const ModelSpec& m, const Device& device, const SearchSpec& spec,
                                const std::function<void(std::int64_t, std::int64_t)>& progress) {
  if (spec.gpus < 1 || spec.gpus > kMaxGpus)
    throw InvalidArgument(fmt::format("gpus = {} is out of range (1 to {})", spec.gpus, kMaxGpus));
  if (spec.isl < 1 || spec.osl < 1 || spec.isl > kMaxSeqLen || spec.osl > kMaxSeqLen - spec.isl)
    throw InvalidArgument("isl and osl must be at least 1 (and isl + osl at most 2^30)");
  for (const auto& t : {spec.ttft_max_s, spec.tpot_max_s}) {
    if (t && !(*t > 0 && std::isfinite(*t)))
      throw InvalidArgument("latency targets must be positive seconds");
  }
  const EngineRegistry& registry = EngineRegistry::built_in();
  std::vector<const EngineProfile*> engines;
  if (spec.engines.empty()) {
    for (const auto& e : registry.engines()) {
      if (e.kind == "serving") engines.push_back(&e);
    }
  } else {
    for (const auto& id : spec.engines) engines.push_back(&registry.get(id));
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
                                                       tps.size() * concurrencies.size());
  std::int64_t done = 0;
  for (const EngineProfile* e : engines) {
    ModelOptions o;
    o.engine = e;
    for (Format w : weights) {
      for (std::int64_t tp : tps) {
        for (std::int64_t c : concurrencies) {
          ++done;
          if (progress && done % 64 == 0) progress(done, total);
          check_deadline("the deployment search");
          Deployment d;
          d.engine = e->id;
          d.weights = w;
          d.tp = tp;
          d.replicas = spec.gpus / tp;
          d.concurrency = c;
          try {
            ServingScenario s;
            s.isl = spec.isl;
            s.osl = spec.osl;
            s.concurrency = c;
            s.step.tp = tp;
            s.step.precision.weights = w;
            // W8A8 and W4A4: activations in the weights' format where computed.
            if (w == Format::kFp8 || w == Format::kNvfp4) s.step.precision.act = w;
            d.serving = predict_serving(m, device, s, o);
          } catch (const TimeLimit&) {
            throw;
          } catch (const Error& x) {
            ++result.refused;
            ++refusals[x.what()];
            continue;
          }
          ++result.evaluated;
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
        why = fmt::format("{:.0f}% fewer tokens/s per GPU than {}",
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
