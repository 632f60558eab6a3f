// Requests as front ends receive them (ids and format names as text), turned
// into library structs with the same validation and messages everywhere:
// the CLI, the server and the Python bindings call these.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/model.h"
#include "roofline/workload.h"

namespace roofline {

struct ScenarioRequest {
  std::string phase = "decode";
  std::int64_t batch = 1;
  std::int64_t seq_len = 4096;
  std::int64_t cached = 0;  // prefill: tokens in the KV cache before the prompt
  std::string weights;      // empty: the checkpoint's native formats
  std::string experts;      // empty: weights, else native
  // Empty: the engine's activations for the weights where it runs them so
  // (EngineProfile::weight_activations: fp8 weights as W8A8), else bf16.
  std::string act;
  std::string kv;         // empty: the activation format (bf16 when the engine set it)
  std::string strategy;   // a built-in name or a plan file; exclusive with the formats above
  std::string attention;  // empty: the device's best kernel
  double block_sparsity = 1.0;
  std::int64_t tp = 1;
  std::int64_t pp = 1;
  std::int64_t attention_dp = 1;  // attention data-parallel groups within tp
  std::int64_t ep = 1;            // expert-parallel groups within tp (MoE models)
  // Speculative decoding: draft tokens a step and each one's acceptance
  // (unset: the model's measured one, else kDefaultDraftAcceptance;
  // draft_acceptance).
  std::int64_t draft_tokens = 0;
  std::optional<double> acceptance;
  // The serving engine (ModelOptions::engine), whose rules set what the
  // request leaves unset; null: none.
  const EngineProfile* engine = nullptr;
};

// Builds and validates the scenario. A strategy is resolved against `device`
// (when given) and its fallback notes appended to `notes`. Throws
// InvalidArgument / NotFound / ParseError with the message front ends show.
[[nodiscard]] Scenario build_scenario(const ScenarioRequest& request, const ModelSpec& model,
                                      const Device* device,
                                      std::vector<std::string>* notes = nullptr);

// A model given as JSON: the original short form {"H", "L", ...} or a Hugging
// Face config.json document. `origin` names it in errors.
[[nodiscard]] ModelSpec model_from_json(std::string_view json_text, const std::string& origin);
// The same from the document (a request body's object; its size is the body's).
[[nodiscard]] ModelSpec model_from_document(const nlohmann::json& doc, const std::string& origin);

}  // namespace roofline
