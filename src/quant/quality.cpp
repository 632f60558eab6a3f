#include "roofline/quality.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "../common/embedded_data.h"
#include "../common/strict_json.h"
#include "roofline/error.h"

namespace roofline {
namespace {

using detail::StrictObject;

struct LinearResult {
  std::string model, family, metric, note, source;
  double params = 0;
  Format weights{}, act{};
  double loss_pct = 0;
};

struct KvResult {
  Format kv{};
  std::optional<double> loss_pct;
  std::string note, source;
};

struct QualityData {
  std::vector<LinearResult> linear;
  std::vector<KvResult> kv;
};

Format format_of(StrictObject& o, std::string_view key) {
  Format f{};
  const std::string text = o.string(key);
  if (!try_parse_format(text, &f)) o.fail(key, "unknown format '" + text + "'");
  return f;
}

std::string short_source(const std::string& citation) {
  return citation.substr(0, citation.find_first_of(":("));
}

const QualityData& data() {
  static const QualityData d = [] {
    QualityData q;
    const std::string origin = "built-in quality/published.json";
    std::string_view text;
    for (const auto& f : detail::embedded_files()) {
      if (f.name == "quality/published.json") text = f.text;
    }
    const auto doc_json = detail::parse_json_text(text, origin, 1 << 20);
    StrictObject doc(doc_json, origin, "");
    std::map<std::string, std::string> sources = detail::read_sources(doc);
    const auto& lin = doc.required("linear");
    for (std::size_t i = 0; i < lin.size(); ++i) {
      StrictObject o(lin[i], origin, "linear[" + std::to_string(i) + "]");
      LinearResult r;
      r.model = o.string("model");
      r.params = o.non_negative("params");
      r.family = o.string("family");
      r.weights = format_of(o, "weights");
      r.act = format_of(o, "act");
      r.metric = o.string("metric");
      const double base = o.non_negative("baseline");
      const double value = o.non_negative("value");
      if (r.metric == "wikitext2_ppl" || r.metric == "wikitext2_word_ppl") {
        r.loss_pct = (value / base - 1) * 100;
      } else if (r.metric == "ppl_ratio") {
        r.loss_pct = (value - 1) * 100;
      } else if (r.metric == "avg_accuracy") {
        r.loss_pct = (base - value) / base * 100;
      } else if (r.metric == "accuracy_drop_pct") {
        r.loss_pct = value;
      } else {
        o.fail("metric", "unknown metric '" + r.metric + "'");
      }
      const std::string key = o.string("source");
      if (!sources.count(key)) o.fail("source", "unknown source key");
      r.source = sources[key];
      r.note = o.string("note");
      o.finish();
      q.linear.push_back(std::move(r));
    }
    const auto& kv = doc.required("kv");
    for (std::size_t i = 0; i < kv.size(); ++i) {
      StrictObject o(kv[i], origin, "kv[" + std::to_string(i) + "]");
      KvResult r;
      r.kv = format_of(o, "kv");
      const auto& loss = o.required("loss_pct");
      if (!loss.is_null()) r.loss_pct = loss.get<double>();
      const std::string key = o.string("source");
      if (!sources.count(key)) o.fail("source", "unknown source key");
      r.source = sources[key];
      r.note = o.string("note");
      o.finish();
      q.kv.push_back(std::move(r));
    }
    doc.finish();
    return q;
  }();
  return d;
}

bool sixteen_bit(Format f) { return bits_per_element(f) >= 16; }

// Activations in 16 or 32 bits are one class for matching published results.
bool same_act_class(Format a, Format b) { return (sixteen_bit(a) && sixteen_bit(b)) || a == b; }

std::string family_of(const ModelSpec& m) {
  const std::string& id = m.id;
  if (id.rfind("llama-3", 0) == 0) return "llama-3";
  if (id.rfind("llama-2", 0) == 0) return "llama-2";
  if (id.rfind("deepseek", 0) == 0) return "deepseek-v3";
  return m.model_type;
}

}  // namespace

namespace {

// The published loss of `w` weights with `a` activations on a model like `m`
// (basis lines added to `q`; `q.quantified` cleared for a nearest-format
// stand-in). NaN when nothing published comes near.
double published_linear_loss(const ModelSpec& m, Format w, Format a, QualityEstimate& q) {
  const QualityData& d = data();
  std::vector<const LinearResult*> pool;
  for (const auto& r : d.linear) {
    if (r.weights == w && same_act_class(r.act, a)) pool.push_back(&r);
  }
  bool exact = true;
  if (pool.empty()) {
    exact = false;
    for (const auto& r : d.linear) {
      if (std::fabs(bits_per_element(r.weights) - bits_per_element(w)) < 0.75 &&
          same_act_class(r.act, a)) {
        pool.push_back(&r);
      }
    }
  }
  const char* stand_in = " [nearest format: no result for this exact pair]";
  if (pool.empty()) {
    // The same weights with other activations (W4A4 for W4A8, say): lower
    // activation precision loses at least as much, so it is an upper bound.
    for (const auto& r : d.linear) {
      if (r.weights == w) pool.push_back(&r);
    }
    stand_in = " [same weights, other activations: no result with these]";
  }
  if (pool.empty()) {
    q.quantified = false;
    q.basis.push_back(fmt::format("no published result for {} weights with {} activations",
                                  format_id(w), format_id(a)));
    return std::nan("");
  }
  if (!exact) q.quantified = false;
  const std::string family = family_of(m);
  const double params = count_parameters(m).total;
  bool family_known = false;
  for (const LinearResult* r : pool) family_known = family_known || r->family == family;
  double sum = 0;
  int n = 0;
  auto use = [&](const LinearResult* r) {
    sum += r->loss_pct;
    ++n;
    q.basis.push_back(fmt::format("{} {}: {:+.1f}% ({}, {})", r->model, r->note, r->loss_pct,
                                  r->metric, short_source(r->source)));
  };
  if (family_known) {
    // The same family, nearest in size (ties averaged: e.g. AWQ and GPTQ).
    auto distance = [&](const LinearResult* r) { return std::fabs(std::log(r->params / params)); };
    double best = 1e300;
    for (const LinearResult* r : pool) {
      if (r->family == family) best = std::min(best, distance(r));
    }
    for (const LinearResult* r : pool) {
      if (r->family == family && distance(r) <= best + 1e-9) use(r);
    }
  } else {
    // Unknown family: the worst published result among models within 2x in
    // size (sensitivity differs 2x between families of one size: Llama-3
    // against Llama-2 in llama.cpp PR 6936), else the nearest in size.
    const LinearResult* worst = nullptr;
    for (const LinearResult* r : pool) {
      if (std::fabs(std::log(r->params / params)) > std::log(2.0)) continue;
      if (!worst || r->loss_pct > worst->loss_pct) worst = r;
    }
    if (!worst) {
      for (const LinearResult* r : pool) {
        if (!worst ||
            std::fabs(std::log(r->params / params)) < std::fabs(std::log(worst->params / params)))
          worst = r;
      }
    }
    use(worst);
    q.basis.back() +=
        " [model family without published results: the most sensitive similar-size result]";
  }
  if (!exact) q.basis.back() += stand_in;
  return sum / n;
}

}  // namespace

QualityEstimate estimate_quality(const ModelSpec& m, const PrecisionPlan& plan) {
  QualityEstimate q;
  const QualityData& d = data();
  // The linear parameters by the format they are stored in. The checkpoint as
  // shipped is the reference: weights the plan leaves unset lose nothing, and
  // so do 16-bit ones. Per-operator formats move their kind's parameters.
  const ParamCounts p = count_parameters(m);
  const double linear = p.attention + p.dense_mlp + p.routed_experts + p.shared_experts;
  const std::optional<Format> w = plan.weights;
  const std::optional<Format> e = plan.experts ? plan.experts : plan.weights;
  std::map<Format, double> stored;  // quantized formats only
  auto add = [&](const std::optional<Format>& f, double params) {
    if (f && !sixteen_bit(*f) && params > 0) stored[*f] += params;
  };
  add(w, p.attention + p.dense_mlp + p.shared_experts);
  add(e, p.routed_experts);
  if (plan.has_op_overrides) {
    const LinearParameters lp = linear_parameters(m);
    for (int k = 0; k < kOpKindCount; ++k) {
      const auto& o = plan.ops[static_cast<std::size_t>(k)];
      if (!o.weights || k == static_cast<int>(OpKind::kLmHead)) continue;
      const double dense = lp.dense[static_cast<std::size_t>(k)];
      const double routed = lp.routed[static_cast<std::size_t>(k)];
      if (w && !sixteen_bit(*w)) stored[*w] -= dense;  // out of the plan's formats

      if (e && !sixteen_bit(*e)) stored[*e] -= routed;
      add(o.weights, dense + routed);
    }
  }
  double quantized = 0;
  for (auto& [f, params] : stored) {
    params = std::max(params, 0.0);
    quantized += params;
  }
  if (quantized > 0 && linear > 0) {
    for (const auto& [f, params] : stored) {
      if (params <= 0) continue;
      const double share = params / linear;
      const double loss = published_linear_loss(m, f, plan.act, q);
      if (std::isfinite(loss)) q.linear_loss_pct += loss * share;
      if (stored.size() > 1) {
        q.basis.push_back(
            fmt::format("{}: {:.0f}% of the linear weights", format_id(f), share * 100));
      }
    }
    if (stored.size() == 1 && quantized / linear < 0.999) {
      q.basis.push_back(fmt::format("scaled by the {:.0f}% of linear weights quantized",
                                    quantized / linear * 100));
    }
    const Format lm = plan.ops[static_cast<std::size_t>(OpKind::kLmHead)].weights.value_or(
        w.value_or(Format::kBf16));
    if (!sixteen_bit(lm) && m.vocab > 0 && p.lm_head + p.embedding > 0) {
      q.basis.push_back(
          "the LM head is quantized too; published results keep it in 16 bits, so the loss may "
          "be higher");
    }
  }
  if (!sixteen_bit(plan.kv)) {
    bool found = false;
    for (const auto& r : d.kv) {
      if (r.kv != plan.kv) continue;
      found = true;
      if (r.loss_pct) {
        q.kv_loss_pct = *r.loss_pct;
        q.basis.push_back(fmt::format("{} KV cache: up to {:.1f}% ({})", format_id(plan.kv),
                                      *r.loss_pct, r.note));
      } else {
        q.basis.push_back(fmt::format("{} KV cache: {}", format_id(plan.kv), r.note));
      }
    }
    if (!found) {
      q.quantified = false;
      q.basis.push_back(fmt::format("no published result for a {} KV cache", format_id(plan.kv)));
    }
  }
  q.loss_pct = q.linear_loss_pct + q.kv_loss_pct;
  if (q.basis.empty()) q.basis.push_back("16-bit weights, activations and KV cache: the reference");
  return q;
}

}  // namespace roofline
