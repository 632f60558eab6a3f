// Internal: the model parsers over a JSON document already parsed (a request
// body carries the config as an object; parsing its text again would double
// the work on the largest inputs).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "roofline/model.h"

namespace roofline::detail {

// parse_hf_config and parse_short_form, from the document.
[[nodiscard]] ModelSpec parse_hf_config_document(nlohmann::json doc, const std::string& origin);
[[nodiscard]] ModelSpec parse_short_form_document(const nlohmann::json& doc,
                                                  const std::string& origin);

}  // namespace roofline::detail
