// predict() and generate() return result objects instead of documents: the
// C++ result is kept, the common fields are read from it directly (a call
// costs a few microseconds, not the tens a JSON document takes), and the
// whole document of `roofline predict --json` is built only when asked for
// (to_dict(), or a field such as notes that only the document has).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "roofline/predict.h"
#include "roofline/report.h"

namespace roofline::python {
namespace {

py::str text_of(std::string_view s) { return py::str(s.data(), s.size()); }

struct PredictionResult {
  std::shared_ptr<const ModelSpec> model;
  const Device* device;  // the registry's, alive for the process
  Scenario scenario;
  std::vector<std::string> plan_notes;
  std::string strategy;
  bool per_op;
  Prediction p;

  [[nodiscard]] nlohmann::json document() const {
    return predict_document(*model, *device, scenario, p, per_op, plan_notes, strategy, registry());
  }
};

struct GenerationResult {
  std::shared_ptr<const ModelSpec> model;
  const Device* device;
  Scenario scenario;
  std::int64_t prompt;
  std::int64_t gen;
  Mode mode;
  GenerateResult g;

  [[nodiscard]] nlohmann::json document() const {
    return generate_document(*model, *device, scenario, g, prompt, gen, mode, registry());
  }
};

// One key of a result's document. `get` reads it from the C++ result (or
// from the document, for the fields only the document has); `present` says
// whether the document has the key (null: always).
template <typename R>
struct Field {
  const char* name;
  std::function<py::object(const R&)> get;
  std::function<bool(const R&)> present;  // empty: always
};

template <typename R>
std::function<py::object(const R&)> from_document(const char* key) {
  return [key](const R& r) { return to_py(r.document().at(key)); };
}

// The read-only mapping protocol over the document's keys, and one attribute
// per field; `dict(result)` and `result["time_s"]` work as on the document.
template <typename R>
void bind_mapping(py::class_<R>& cls, const std::vector<Field<R>>& fields) {
  const auto table = std::make_shared<std::vector<Field<R>>>(fields);
  for (const auto& f : *table) cls.def_property_readonly(f.name, f.get);
  auto keys = [](const R& r) {
    const nlohmann::json doc = r.document();
    py::list out;
    for (const auto& [key, value] : doc.items()) out.append(py::str(key));
    return out;
  };
  auto lookup = [table](const R& r, const std::string& key) -> std::optional<py::object> {
    for (const auto& f : *table) {
      if (key != f.name) continue;
      if (f.present && !f.present(r)) return std::nullopt;
      return f.get(r);
    }
    const nlohmann::json doc = r.document();
    const auto it = doc.find(key);
    if (it == doc.end()) return std::nullopt;
    return to_py(*it);
  };
  cls.def("__getitem__", [lookup](const R& r, const std::string& key) {
    if (auto v = lookup(r, key)) return *v;
    throw py::key_error(key);
  });
  cls.def(
      "get",
      [lookup](const R& r, const std::string& key, py::object fallback) {
        if (auto v = lookup(r, key)) return *v;
        return fallback;
      },
      py::arg("key"), py::arg("default") = py::none());
  cls.def("__contains__", [table](const R& r, const std::string& key) {
    for (const auto& f : *table) {
      if (key == f.name) return !f.present || f.present(r);
    }
    return r.document().contains(key);
  });
  cls.def("keys", keys, "The document's keys");
  cls.def("__iter__", [keys](const R& r) { return py::iter(keys(r)); });
  cls.def("__len__", [](const R& r) { return r.document().size(); });
  cls.def(
      "to_dict", [](const R& r) { return to_py(r.document()); },
      "The whole document: what the CLI prints with --json, as a dict");
  cls.def("items", [](const R& r) { return to_py(r.document()).attr("items")(); });
  cls.def("values", [](const R& r) { return to_py(r.document()).attr("values")(); });
}

std::vector<Field<PredictionResult>> prediction_fields() {
  using R = PredictionResult;
  return {
      {"time_s", [](const R& r) { return py::float_(r.p.time_s); }},
      {"tokens_per_s", [](const R& r) { return py::float_(r.p.tokens_per_s); }},
      {"tokens_per_step", [](const R& r) { return py::float_(r.p.tokens_per_step); }},
      {"bound", [](const R& r) { return text_of(bound_name(r.p.bound)); }},
      {"flops", [](const R& r) { return py::float_(r.p.flops); }},
      {"bytes", [](const R& r) { return py::float_(r.p.bytes); }},
      {"weight_bytes", [](const R& r) { return py::float_(r.p.weight_bytes); }},
      {"activation_bytes", [](const R& r) { return py::float_(r.p.act_bytes); }},
      {"kv_cache_bytes_read_written", [](const R& r) { return py::float_(r.p.kv_bytes); }},
      {"memory_time_s", [](const R& r) { return py::float_(r.p.memory_time_s); }},
      {"compute_time_s", [](const R& r) { return py::float_(r.p.compute_time_s); }},
      {"overhead_s", [](const R& r) { return py::float_(r.p.overhead_s); }},
      {"communication_s", [](const R& r) { return py::float_(r.p.communication_s); }},
      {"mode", [](const R& r) { return text_of(mode_name(r.p.mode)); }},
      {"memory", [](const R& r) { return to_py(to_json(r.p.memory)); }},
      {"scenario",
       [](const R& r) { return to_py(scenario_json(*r.model, *r.device, r.scenario, r.p.graph)); }},
      {"engine", [](const R& r) { return to_py(engine_json(r.p)); }},
      {"capacity",
       [](const R& r) { return to_py(to_json(capacity(*r.model, *r.device, r.scenario, r.p))); }},
      {"version", [](const R&) { return py::str(std::string(version())); }},
      {"data_hash", [](const R&) { return py::str(registry().data_hash()); }},
      {"strategy",
       [](const R& r) -> py::object {
         if (r.strategy.empty()) return py::none();
         return py::str(r.strategy);
       },
       [](const R& r) { return !r.strategy.empty(); }},
      {"distinct_experts_per_layer",
       [](const R& r) -> py::object {
         if (r.p.graph.distinct_experts <= 0) return py::none();
         return py::float_(r.p.graph.distinct_experts);
       },
       [](const R& r) { return r.p.graph.distinct_experts > 0; }},
      {"notes", from_document<R>("notes")},
      {"track_record", from_document<R>("track_record")},
      // Always there as an attribute; in the document only with per_op (--per-op).
      {"ops",
       [](const R& r) {
         return to_py(to_json(*r.model, *r.device, r.scenario, r.p, true).at("ops"));
       },
       [](const R& r) { return r.per_op; }},
  };
}

std::vector<Field<GenerationResult>> generation_fields() {
  using R = GenerationResult;
  return {
      {"ttft_s", [](const R& r) { return py::float_(r.g.ttft_s); }},
      {"ttft_recomputed_s",
       [](const R& r) -> py::object {
         if (r.g.ttft_recomputed_s > 0) return py::float_(r.g.ttft_recomputed_s);
         return py::none();
       }},
      {"tpot_s", [](const R& r) { return py::float_(r.g.tpot_s); }},
      {"e2e_s", [](const R& r) { return py::float_(r.g.e2e_s); }},
      {"output_tokens_per_s", [](const R& r) { return py::float_(r.g.output_tokens_per_s); }},
      {"decode_tokens_per_s", [](const R& r) { return py::float_(r.g.decode_tokens_per_s); }},
      {"mode", [](const R& r) { return text_of(mode_name(r.mode)); }},
      {"peak_memory", [](const R& r) { return to_py(to_json(r.g.peak_memory)); }},
      {"engine", [](const R& r) { return to_py(engine_json(r.g)); }},
      {"version", [](const R&) { return py::str(std::string(version())); }},
      {"data_hash", [](const R&) { return py::str(registry().data_hash()); }},
      {"prefill", from_document<R>("prefill")},
      {"first_decode", from_document<R>("first_decode")},
      {"last_decode", from_document<R>("last_decode")},
      {"scenario", from_document<R>("scenario")},
      {"track_record", from_document<R>("track_record")},
      {"notes", from_document<R>("notes")},
  };
}

}  // namespace

ScenarioRequest request_of(std::string phase, std::int64_t batch, std::int64_t seq_len,
                           std::optional<std::string> weights, std::optional<std::string> experts,
                           std::optional<std::string> act, std::optional<std::string> kv,
                           std::optional<std::string> strategy,
                           std::optional<std::string> attention, double block_sparsity,
                           std::int64_t tp, std::int64_t pp) {
  ScenarioRequest r;
  r.phase = std::move(phase);
  r.batch = batch;
  r.seq_len = seq_len;
  r.weights = weights.value_or("");
  r.experts = experts.value_or("");
  r.act = act.value_or("");  // empty: the engine's for the weights, else bf16
  r.kv = kv.value_or("");
  r.strategy = strategy.value_or("");
  r.attention = attention.value_or("");
  r.block_sparsity = block_sparsity;
  r.tp = tp;
  r.pp = pp;
  return r;
}

void bind_results(py::module_& m) {
  py::class_<PredictionResult> prediction(m, "Prediction",
                                          R"(One forward pass, as predict() returns it.

Every key of the `roofline predict --json` document is an attribute and an item
(p.time_s == p["time_s"]); to_dict() gives the whole document. SI units.)");
  bind_mapping(prediction, prediction_fields());
  prediction.def("__repr__", [](const PredictionResult& r) {
    return fmt::format(
        "<Prediction {} on {}, {} batch {} seq_len {}: time_s={:.6g} tokens_per_s={:.6g} "
        "bound='{}'>",
        r.model->id, r.device->id, phase_name(r.scenario.phase), r.scenario.batch,
        r.scenario.seq_len, r.p.time_s, r.p.tokens_per_s, bound_name(r.p.bound));
  });

  py::class_<GenerationResult> generation(m, "Generation",
                                          R"(A generation, as generate() returns it.

Every key of the `roofline generate --json` document is an attribute and an
item (g.ttft_s == g["ttft_s"]); to_dict() gives the whole document. SI units.)");
  bind_mapping(generation, generation_fields());
  generation.def("__repr__", [](const GenerationResult& r) {
    return fmt::format(
        "<Generation {} on {}, batch {} prompt {} gen {}: ttft_s={:.6g} tpot_s={:.6g} "
        "e2e_s={:.6g}>",
        r.model->id, r.device->id, r.scenario.batch, r.prompt, r.gen, r.g.ttft_s, r.g.tpot_s,
        r.g.e2e_s);
  });

  const ScenarioRequest d;  // the defaults, as the CLI's flags have them
  m.def(
      "predict",
      [](const py::object& model, const py::object& hardware, std::string phase, std::int64_t batch,
         std::int64_t seq_len, std::optional<std::string> weights,
         std::optional<std::string> experts, std::optional<std::string> act,
         std::optional<std::string> kv, std::optional<std::string> strategy,
         std::optional<std::string> attention, double block_sparsity, std::int64_t tp,
         std::int64_t pp, std::int64_t attention_dp, std::int64_t ep, std::int64_t draft_tokens,
         std::optional<double> acceptance, bool ideal, const std::string& engine, bool per_op,
         std::optional<std::string> engine_build, const std::string& cuda_graphs,
         const std::optional<std::string>& moe_kernel, std::int64_t cached,
         const std::optional<std::string>& engine_version) {
        auto ms = model_of(model);
        const Device& dev = device_of(hardware);
        const ModelOptions options =
            with_release(options_of(ideal, engine, engine_build, cuda_graphs, moe_kernel, &dev),
                         engine_version, dev, tp);
        std::vector<std::string> notes;
        ScenarioRequest r = request_of(std::move(phase), batch, seq_len, std::move(weights),
                                       std::move(experts), std::move(act), std::move(kv), strategy,
                                       std::move(attention), block_sparsity, tp, pp);
        r.attention_dp = attention_dp;
        r.ep = ep;
        r.draft_tokens = draft_tokens;
        r.acceptance = acceptance;
        r.cached = cached;
        r.engine = options.engine;
        const Scenario s = build_scenario(r, *ms, &dev, &notes);
        // Aggregate initialization from predict()'s result: built in place, not copied.
        return std::unique_ptr<PredictionResult>(
            new PredictionResult{ms, &dev, s, std::move(notes), strategy.value_or(""), per_op,
                                 predict(*ms, dev, s, options)});
      },
      py::arg("model"), py::arg("hardware"), py::kw_only(), py::arg("phase") = d.phase,
      py::arg("batch") = d.batch, py::arg("seq_len") = d.seq_len, py::arg("weights") = py::none(),
      py::arg("experts") = py::none(), py::arg("act") = py::none(), py::arg("kv") = py::none(),
      py::arg("strategy") = py::none(), py::arg("attention") = py::none(),
      py::arg("block_sparsity") = d.block_sparsity, py::arg("tp") = d.tp, py::arg("pp") = d.pp,
      py::arg("attention_dp") = d.attention_dp, py::arg("ep") = d.ep,
      py::arg("draft_tokens") = d.draft_tokens, py::arg("acceptance") = py::none(),
      py::arg("ideal") = false, py::arg("engine") = "roofline", py::arg("per_op") = false,
      py::arg("engine_build") = py::none(), py::arg("cuda_graphs") = "engine",
      py::arg("moe_kernel") = py::none(), py::arg("cached") = d.cached,
      py::arg("engine_version") = py::none(),
      R"(One forward pass: a prefill of seq_len tokens per sequence, or one decode step
over seq_len cached tokens (roofline predict). cached: a prefill's tokens already
in the KV cache before the prompt (--cached). engine_build: the engine build's
date, "YYYY-MM-DD" or "YYYY-MM" (--engine-build). cuda_graphs: "engine",
"decode-only" or "off" (--cuda-graphs). moe_kernel: the MoE kernel family
(--moe-kernel). engine_version: the engine's release, e.g. "0.11.0"
(--engine-version). Returns a Prediction.)");

  m.def(
      "generate",
      [](const py::object& model, const py::object& hardware, std::int64_t prompt, std::int64_t gen,
         std::int64_t batch, std::optional<std::string> weights, std::optional<std::string> experts,
         std::optional<std::string> act, std::optional<std::string> kv,
         std::optional<std::string> strategy, std::optional<std::string> attention,
         double block_sparsity, std::int64_t tp, std::int64_t pp, std::int64_t attention_dp,
         std::int64_t ep, std::int64_t draft_tokens, std::optional<double> acceptance, bool ideal,
         const std::string& engine, std::optional<std::string> engine_build,
         const std::string& cuda_graphs, const std::optional<std::string>& moe_kernel,
         std::int64_t cached, const std::optional<std::string>& engine_version) {
        auto ms = model_of(model);
        const Device& dev = device_of(hardware);
        const ModelOptions options =
            with_release(options_of(ideal, engine, engine_build, cuda_graphs, moe_kernel, &dev),
                         engine_version, dev, tp);
        // generate() sets each pass's phase; the scenario is checked as its prefill
        // (a prompt out of range is generate()'s to refuse, with its message).
        ScenarioRequest r =
            request_of("prefill", batch, std::clamp<std::int64_t>(prompt, 1, kMaxSeqLen),
                       std::move(weights), std::move(experts), std::move(act), std::move(kv),
                       std::move(strategy), std::move(attention), block_sparsity, tp, pp);
        r.attention_dp = attention_dp;
        r.ep = ep;
        r.draft_tokens = draft_tokens;
        r.acceptance = acceptance;
        r.cached = cached;
        r.engine = options.engine;
        const Scenario s = build_scenario(r, *ms, &dev);
        return std::unique_ptr<GenerationResult>(new GenerationResult{
            ms, &dev, s, prompt, gen, options.mode, generate(*ms, dev, s, prompt, gen, options)});
      },
      py::arg("model"), py::arg("hardware"), py::kw_only(), py::arg("prompt") = 512,
      py::arg("gen") = 128, py::arg("batch") = d.batch, py::arg("weights") = py::none(),
      py::arg("experts") = py::none(), py::arg("act") = py::none(), py::arg("kv") = py::none(),
      py::arg("strategy") = py::none(), py::arg("attention") = py::none(),
      py::arg("block_sparsity") = d.block_sparsity, py::arg("tp") = d.tp, py::arg("pp") = d.pp,
      py::arg("attention_dp") = d.attention_dp, py::arg("ep") = d.ep,
      py::arg("draft_tokens") = d.draft_tokens, py::arg("acceptance") = py::none(),
      py::arg("ideal") = false, py::arg("engine") = "roofline",
      py::arg("engine_build") = py::none(), py::arg("cuda_graphs") = "engine",
      py::arg("moe_kernel") = py::none(), py::arg("cached") = d.cached,
      py::arg("engine_version") = py::none(),
      R"(Prefill of `prompt` tokens then `gen` decode steps: TTFT, TPOT, end to end
(roofline generate). engine_build: the engine build's date (--engine-build);
cuda_graphs: "engine", "decode-only" or "off" (--cuda-graphs); moe_kernel: the
MoE kernel family (--moe-kernel); cached: tokens in the KV cache before the
prompt, an earlier turn (--cached); engine_version: the engine's release
(--engine-version). Returns a Generation.)");
}

}  // namespace roofline::python
