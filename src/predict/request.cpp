#include "roofline/request.h"

#include <cmath>

#include "../common/strict_json.h"
#include "../model/model_document.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/strategy.h"

namespace roofline {

Scenario build_scenario(const ScenarioRequest& r, const ModelSpec& m, const Device* d,
                        std::vector<std::string>* notes) {
  Scenario s;
  s.phase = parse_phase(r.phase);
  s.batch = r.batch;
  s.seq_len = r.seq_len;
  s.cached = r.cached;
  if (!r.strategy.empty()) {
    if (!r.weights.empty() || !r.experts.empty() || !r.kv.empty() || !r.act.empty()) {
      throw InvalidArgument(
          "a strategy sets the formats; do not combine it with weights, experts, act or kv");
    }
    const Strategy st = load_strategy(r.strategy);
    if (d != nullptr) {
      ResolvedStrategy resolved = resolve(st, m, *d);
      s.precision = resolved.precision;
      if (notes) notes->insert(notes->end(), resolved.notes.begin(), resolved.notes.end());
    } else {
      s.precision.follow_release = false;
      s.precision.weights = st.weights;
      s.precision.experts = st.experts ? st.experts : std::optional<Format>(st.weights);
      s.precision.act = st.act;
      s.precision.kv = st.kv;
      s.precision.expert_act = st.expert_act;  // checked against the device when priced
    }
  } else {
    if (!r.weights.empty()) s.precision.weights = parse_format(r.weights);
    if (!r.experts.empty()) s.precision.experts = parse_format(r.experts);
    s.precision.act = r.act.empty() ? Format::kBf16 : parse_format(r.act);
    s.precision.kv = r.kv.empty() ? s.precision.act : parse_format(r.kv);
    // No activation format asked for: the engine's for these weights (fp8
    // checkpoints as W8A8 where the GPU computes fp8).
    if (r.act.empty() && r.engine != nullptr && d != nullptr)
      r.engine->apply_weight_activation(&s.precision, m.native_weights, *d);
  }
  if (!r.attention.empty()) s.attention = parse_attention_kernel(r.attention);
  if (!(r.block_sparsity > 0 && r.block_sparsity <= 1)) {
    throw InvalidArgument(
        "block sparsity must be in (0, 1] (the fraction of attention blocks computed)");
  }
  s.block_sparsity = r.block_sparsity;
  s.tp = r.tp;
  s.pp = r.pp;
  s.attention_dp = r.attention_dp;
  s.ep = r.ep;
  s.draft_tokens = r.draft_tokens;
  s.acceptance = draft_acceptance(m, r.draft_tokens, r.acceptance);
  validate(s, m);
  return s;
}

ModelSpec model_from_json(std::string_view text, const std::string& origin) {
  return model_from_document(detail::parse_json_text(text, origin, 4 << 20), origin);
}

ModelSpec model_from_document(const nlohmann::json& doc, const std::string& origin) {
  ModelSpec m = doc.is_object() && doc.contains("H") && !doc.contains("model_type")
                    ? detail::parse_short_form_document(doc, origin)
                    : detail::parse_hf_config_document(doc, origin);
  m.id = m.name = "custom";
  return m;
}

}  // namespace roofline
