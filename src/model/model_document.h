// Internal: the model parsers over a JSON document already parsed (a request
// body carries the config as an object; parsing its text again would double
// the work on the largest inputs).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "roofline/model.h"

namespace roofline::detail {

// parse_hf_config and parse_short_form, from the document.
[[nodiscard]] ModelSpec parse_hf_config_document(nlohmann::json doc, const std::string& origin);
[[nodiscard]] ModelSpec parse_short_form_document(const nlohmann::json& doc,
                                                  const std::string& origin);

// A preset's "draft_acceptance" object of models/index.json: the measured
// tokens a step by draft count (ModelPreset::draft_tokens_per_step) and their
// source. Throws ParseError naming the field and `where`.
struct DraftAcceptance {
  std::vector<double> tokens_per_step;
  std::string source;
};
[[nodiscard]] DraftAcceptance parse_draft_acceptance(const nlohmann::json& object,
                                                     const std::string& origin,
                                                     const std::string& where);

// A preset's "quantized_releases" list of models/index.json (ModelSpec::
// releases). Throws ParseError naming the field and `where`.
[[nodiscard]] std::vector<QuantizedRelease> parse_quantized_releases(const nlohmann::json& list,
                                                                     const std::string& origin,
                                                                     const std::string& where);

}  // namespace roofline::detail
