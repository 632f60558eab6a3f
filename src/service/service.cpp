#include "roofline/service.h"

#include <cmath>
#include <functional>
#include <string>
#include <string_view>

#include "../common/strict_json.h"
#include "roofline/deadline.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/predict.h"
#include "roofline/recommend.h"
#include "roofline/report.h"
#include "roofline/request.h"
#include "roofline/roofline.h"
#include "roofline/search.h"
#include "roofline/serving.h"
#include "roofline/strategy.h"
#include "roofline/sweep.h"

namespace roofline::service {
namespace {

using detail::StrictObject;
using nlohmann::json;

constexpr const char* kOrigin = "request";

StrictObject object_of(const json& request) {
  if (!request.is_object()) throw InvalidArgument("the request body must be a JSON object");
  // Requests built in memory (not through parse_request) are held to the same depth.
  detail::check_json_depth(request, kOrigin);
  return StrictObject(request, kOrigin, "");
}

// Type errors in requests are the caller's bad input (400), not parse errors of
// our files; so is anything the JSON library refuses (a wrong type deep in a
// config object, text that is not UTF-8). The work runs under the time limit.
template <typename Fn>
auto as_invalid(const Limits& limits, Fn&& fn) -> decltype(fn()) {
  const DeadlineScope deadline(limits.time_limit_s);
  try {
    return fn();
  } catch (const ParseError& e) {
    std::string what = e.what();
    const std::string prefix = std::string(kOrigin) + ": ";
    if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
    throw InvalidArgument(what);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    const auto close = what.find("] ");
    if (close != std::string::npos) what = what.substr(close + 2);
    throw InvalidArgument("malformed request: " + what);
  }
}

std::int64_t integer(StrictObject& o, std::string_view key, std::int64_t fallback, std::int64_t lo,
                     std::int64_t hi) {
  const json* v = o.optional(key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) o.fail(key, "expected a whole number");
  const double d = v->get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(lo) ||
      d > static_cast<double>(hi)) {
    throw InvalidArgument(std::string(key) + " must be a whole number from " + std::to_string(lo) +
                          " to " + std::to_string(hi));
  }
  return static_cast<std::int64_t>(d);
}

double number(StrictObject& o, std::string_view key, double fallback) {
  const json* v = o.optional(key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) o.fail(key, "expected a number");
  const double d = v->get<double>();
  if (!std::isfinite(d)) throw InvalidArgument(std::string(key) + " must be finite");
  return d;
}

std::string text(StrictObject& o, std::string_view key, std::string fallback) {
  const json* v = o.optional(key);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_string()) o.fail(key, "expected a string");
  std::string s = v->get<std::string>();
  if (s.size() > 256) throw InvalidArgument(std::string(key) + " is too long");
  return s;
}

bool flag(StrictObject& o, std::string_view key) {
  const json* v = o.optional(key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) o.fail(key, "expected true or false");
  return v->get<bool>();
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || s.find('\\') != std::string::npos ||
         s.ends_with(".json") || s.ends_with(".gguf") || s.ends_with(".safetensors") ||
         s.find("..") != std::string::npos;
}

std::string preset_ids() {
  std::string ids;
  for (const auto& p : ModelCatalog::built_in().presets()) ids += (ids.empty() ? "" : ", ") + p.id;
  return ids;
}

// A model given as a preset id or an object (the short form or a config.json);
// `key` names it in errors. Without allow_files a string is a preset id and
// nothing else: no name reaches the file system.
ModelSpec model_from_value(const json& v, const std::string& key, const Limits& limits) {
  if (v.is_object()) return model_from_document(v, key);
  if (!v.is_string())
    throw InvalidArgument(key + ": expected a preset id or an object (short form or config.json)");
  const std::string id = v.get<std::string>();
  if (limits.allow_files) return load_model(id);
  if (const ModelPreset* p = ModelCatalog::built_in().find(id)) return preset_model(*p);
  if (looks_like_path(id)) {
    throw InvalidArgument(key + " '" + clip_utf8(id, 64) +
                          "': files are not read here; give a preset id or a config object");
  }
  throw NotFound(key + " '" + clip_utf8(id, 64) + "' is not a preset (" + preset_ids() +
                 "); files are not read here: give a preset id or a config object");
}

// A named strategy; without allow_files only the built-in ones.
Strategy strategy_named(const std::string& name, const std::string& key, const Limits& limits) {
  if (limits.allow_files) return load_strategy(name);
  std::string names;
  for (const auto& s : built_in_strategies()) {
    if (s.name == name) return s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  if (looks_like_path(name)) {
    throw InvalidArgument(key + ": strategy files are not read here; give a strategy name (" +
                          names + ")");
  }
  throw NotFound(key + " '" + clip_utf8(name, 64) + "' is not a named strategy (" + names +
                 "); strategy files are not read here");
}

ModelSpec model_of(StrictObject& o, const Limits& limits) {
  return model_from_value(o.required("model"), "model", limits);
}

const Device& device_of(StrictObject& o, const Registry& registry) {
  return registry.get(text(o, "hardware", "gb10"));
}

// The serving engine of a request ("engine", default the reference); its
// tables are resolved per device when predicting.
const EngineProfile* engine_of(StrictObject& o) {
  return &EngineRegistry::built_in().get(clip_utf8(text(o, "engine", "roofline"), 64));
}

// `device`: the request's, when it names one (a MoE kernel is checked against it).
ModelOptions options_of(StrictObject& o, const Device* device = nullptr) {
  ModelOptions m;
  m.mode = flag(o, "ideal") ? Mode::kIdeal : Mode::kRealistic;
  m.engine = engine_of(o);
  if (const auto* b = o.optional("engine_build")) {
    if (!b->is_string()) o.fail("engine_build", "expected a date string (YYYY-MM-DD or YYYY-MM)");
    m.engine_build = parse_build_date(b->get<std::string>(), "engine_build");
  }
  if (const auto* g = o.optional("cuda_graphs")) {
    if (!g->is_string()) o.fail("cuda_graphs", "expected engine, decode-only or off");
    m.graphs = parse_graph_policy(g->get<std::string>(), "cuda_graphs");
  }
  if (const auto* k = o.optional("moe_kernel")) {
    if (!k->is_string())
      o.fail("moe_kernel", "expected triton, flashinfer-trtllm, flashinfer-cutlass or marlin");
    m.moe_kernel = parse_moe_kernel(k->get<std::string>(), "moe_kernel");
    check_moe_kernel(m, device, "moe_kernel");
  }
  return m;
}

// The request's "engine_version", checked (empty: absent, the current release).
std::string engine_version_of(StrictObject& o) {
  const auto* v = o.optional("engine_version");
  if (v == nullptr) return {};
  if (!v->is_string()) o.fail("engine_version", "expected a release string such as \"0.14.0\"");
  std::string version = v->get<std::string>();
  check_engine_version(version, "engine_version");
  return version;
}

// What the request's engine release runs differently on `device` at
// tensor-parallel size `tp` (no release: `opt` as it is).
ModelOptions with_release_of(StrictObject& o, ModelOptions opt, const Device& device,
                             std::int64_t tp) {
  const std::string version = engine_version_of(o);
  if (version.empty()) return opt;
  return with_engine_release(std::move(opt), device, version, tp, EngineRegistry::built_in());
}

ScenarioRequest scenario_of(StrictObject& o, const Limits& limits, bool with_phase) {
  ScenarioRequest r;
  if (with_phase) {
    r.phase = text(o, "phase", "decode");
    r.seq_len = integer(o, "seq_len", 4096, 1, kMaxSeqLen);
  }
  r.batch = integer(o, "batch", 1, 1, kMaxBatch);
  r.weights = text(o, "weights", "");
  r.experts = text(o, "experts", "");
  r.act = text(o, "act", "");
  r.kv = text(o, "kv", "");
  r.strategy = text(o, "strategy", "");
  // Checked here, so that build_scenario (which also reads files) only sees built-in names.
  if (!r.strategy.empty()) (void)strategy_named(r.strategy, "strategy", limits);
  r.attention = text(o, "attention", "");
  r.block_sparsity = number(o, "block_sparsity", 1.0);
  r.tp = integer(o, "tp", 1, 1, kMaxParallel);
  r.pp = integer(o, "pp", 1, 1, kMaxParallel);
  r.attention_dp = integer(o, "attention_dp", 1, 1, kMaxParallel);
  r.ep = integer(o, "ep", 1, 1, kMaxParallel);
  r.draft_tokens = integer(o, "draft_tokens", 0, 0, kMaxDraftTokens);
  if (o.has("acceptance")) r.acceptance = number(o, "acceptance", kDefaultDraftAcceptance);
  return r;
}

template <typename T, typename Fn>
std::vector<T> list_of(StrictObject& o, std::string_view key, std::vector<T> fallback,
                       Fn&& convert) {
  const json* v = o.optional(key);
  if (v == nullptr) return fallback;
  if (!v->is_array() || v->empty()) o.fail(key, "expected a non-empty array");
  if (v->size() > 10'000) throw InvalidArgument(std::string(key) + " has too many values");
  std::vector<T> out;
  for (const auto& item : *v) out.push_back(convert(item));
  return out;
}

using Progress = std::function<void(std::uint64_t, std::uint64_t)>;

// {"count", "rows": [...], stamp...} as text, the rows straight from `run`
// (a sweep in JSON format): no tree of values is built for it (100,000 rows
// are tens of MB as text, several times that as a DOM, whose many small
// blocks the allocator keeps). The deadline is checked between chunks.
template <typename Run>
std::string sweep_document(std::uint64_t rows, const Registry& registry, const Run& run) {
  std::string stamp_text = stamp(registry).dump();
  std::string out = "{\"count\":" + std::to_string(rows) + ",\"rows\":";
  run([&](std::string_view chunk) { out.append(chunk); },
      [&](std::uint64_t done, std::uint64_t total) {
        if (done < total)
          check_deadline("the sweep, after " + std::to_string(done) + " of " +
                         std::to_string(total) + " rows; ask for fewer");
      });
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (stamp_text.size() > 2) {
    out += ',';
    out.append(stamp_text, 1, std::string::npos);  // the stamp's members and its '}'
  } else {
    out += '}';
  }
  return out;
}

}  // namespace

json predict(const json& request, const Registry& registry, const Limits& limits) {
  return as_invalid(limits, [&] {
    StrictObject o = object_of(request);
    const ModelSpec m = model_of(o, limits);
    const Device& d = device_of(o, registry);
    ScenarioRequest sr = scenario_of(o, limits, true);
    sr.cached = integer(o, "cached", 0, 0, kMaxSeqLen);
    const ModelOptions opt = with_release_of(o, options_of(o, &d), d, sr.tp);
    sr.engine = opt.engine;
    const bool per_op = flag(o, "per_op");
    o.finish();
    std::vector<std::string> notes;
    const Scenario s = build_scenario(sr, m, &d, &notes);
    const Prediction p = roofline::predict(m, d, s, opt);
    return predict_document(m, d, s, p, per_op, notes, sr.strategy, registry);
  });
}

json generate(const json& request, const Registry& registry, const Limits& limits) {
  return as_invalid(limits, [&] {
    StrictObject o = object_of(request);
    const ModelSpec m = model_of(o, limits);
    const Device& d = device_of(o, registry);
    ScenarioRequest sr = scenario_of(o, limits, false);
    sr.phase = "prefill";  // generate() sets each pass's; checked as its prefill
    sr.cached = integer(o, "cached", 0, 0, kMaxSeqLen);
    const std::int64_t prompt = integer(o, "prompt", 512, 1, kMaxSeqLen);
    sr.seq_len = prompt;
    const std::int64_t gen = integer(o, "gen", 128, 1, kMaxSeqLen);
    const ModelOptions opt = with_release_of(o, options_of(o, &d), d, sr.tp);
    sr.engine = opt.engine;
    o.finish();
    const Scenario s = build_scenario(sr, m, &d);
    const GenerateResult g = roofline::generate(m, d, s, prompt, gen, opt);
    return generate_document(m, d, s, g, prompt, gen, opt.mode, registry);
  });
}

json search(const json& request, const Registry& registry, const Limits& limits) {
  return as_invalid(limits, [&] {
    StrictObject o = object_of(request);
    const ModelSpec m = model_of(o, limits);
    const Device& d = device_of(o, registry);
    SearchSpec spec;
    spec.gpus = integer(o, "gpus", 8, 1, kMaxParallel);
    spec.isl = integer(o, "isl", 1024, 1, kMaxSeqLen);
    spec.osl = integer(o, "osl", 256, 1, kMaxSeqLen);
    if (o.has("range_ratio")) set_range_ratio(spec, number(o, "range_ratio", 1));
    for (const char* key : {"ttft_max", "tpot_max"}) {
      if (!o.has(key)) continue;
      const double v = number(o, key, 0.0);
      if (!(v > 0)) o.fail(key, "must be positive seconds");
      (std::string_view(key) == "ttft_max" ? spec.ttft_max_s : spec.tpot_max_s) = v;
    }
    auto text_item = [](const json& v) {
      if (!v.is_string()) throw InvalidArgument("expected strings");
      return v.get<std::string>();
    };
    spec.engines = list_of<std::string>(o, "engines", {}, text_item);
    if (const auto* v = o.optional("engine_versions")) {
      if (!v->is_object() || v->size() > 16)
        o.fail("engine_versions", "expected at most 16 engine ids, each to a release string");
      for (const auto& [id, version] : v->items()) {
        if (!version.is_string())
          o.fail("engine_versions", "expected a release string such as \"0.11.0\" for " + id);
        spec.engine_versions.emplace(id, version.get<std::string>());
      }
    }
    for (const auto& w : list_of<std::string>(o, "weights", {}, text_item))
      spec.weights.push_back(parse_format(w));
    spec.concurrencies = list_of<std::int64_t>(o, "concurrencies", {}, [](const json& v) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > kMaxBatch)
        throw InvalidArgument("concurrencies: whole numbers from 1 to 2^20");
      return v.get<std::int64_t>();
    });
    for (const auto& x : list_of<std::string>(o, "modes", {}, text_item))
      spec.modes.push_back(parse_serving_mode(x));
    if (spec.modes.size() > 2) throw InvalidArgument("modes: at most agg and disagg");
    if (spec.concurrencies.size() > 64) throw InvalidArgument("concurrencies: at most 64");
    if (spec.engines.size() > 16 || spec.weights.size() > 16)
      throw InvalidArgument("engines and weights: at most 16 each");
    spec.draft_tokens = integer(o, "draft_tokens", 0, 0, kMaxDraftTokens);
    if (o.has("acceptance")) spec.acceptance = number(o, "acceptance", kDefaultDraftAcceptance);
    spec.recipe = parse_serving_recipe(text(o, "recipe", "engine"));
    spec.shared_prefix = integer(o, "shared_prefix", 0, 0, kMaxSeqLen);
    spec.prompt_pool = integer(o, "prompt_pool", 0, 0, kMaxPromptPool);
    o.finish();
    const SearchResult r = search_deployments(m, d, spec);
    return search_document(m, d, spec, r, registry);
  });
}

json serving(const json& request, const Registry& registry, const Limits& limits) {
  return as_invalid(limits, [&] {
    StrictObject o = object_of(request);
    if (o.has("batch")) o.fail("batch", "serving sets the batch from concurrency");
    const ModelSpec m = model_of(o, limits);
    const Device& d = device_of(o, registry);
    ScenarioRequest sr = scenario_of(o, limits, false);
    ServingScenario s;
    s.isl = integer(o, "isl", 1024, 1, kMaxSeqLen);
    s.osl = integer(o, "osl", 256, 1, kMaxSeqLen);
    if (o.has("range_ratio")) {
      if (o.has("isl_min") || o.has("osl_min"))
        o.fail("range_ratio", "gives isl_min and osl_min: not both");
      set_range_ratio(s, number(o, "range_ratio", 1));
    } else {
      s.isl_min = integer(o, "isl_min", 0, 0, s.isl);
      s.osl_min = integer(o, "osl_min", 0, 0, s.osl);
    }
    s.concurrency = integer(o, "concurrency", 1, 1, kMaxBatch);
    s.mode = parse_serving_mode(text(o, "mode", "agg"));
    s.replicas = integer(o, "dp", 1, 1, 1024);
    s.prefill_workers = integer(o, "prefill_workers", 1, 1, 1024);
    s.prefill_tp = integer(o, "prefill_tp", 1, 1, kMaxParallel);
    s.decode_workers = integer(o, "decode_workers", 1, 1, 1024);
    s.decode_tp = integer(o, "decode_tp", 1, 1, kMaxParallel);
    s.prefill_attention_dp = integer(o, "prefill_attention_dp", 1, 1, kMaxParallel);
    s.prefill_ep = integer(o, "prefill_ep", 1, 1, kMaxParallel);
    s.rounds = integer(o, "rounds", kDefaultRounds, 1, 1000);
    s.shared_prefix = integer(o, "shared_prefix", 0, 0, kMaxSeqLen);
    s.prompt_pool = integer(o, "prompt_pool", 0, 0, kMaxPromptPool);
    s.token_budget = integer(o, "token_budget", 0, 0, kMaxBatch);
    s.max_running = integer(o, "max_running", 0, 0, kMaxBatch);
    s.graph_capture_size = integer(o, "graph_capture_size", 0, 0, kMaxBatch);
    s.batch_wait_iters = integer(o, "batch_wait_iters", 0, 0, kMaxBatchWaitIters);
    s.batch_wait_ratio = number(o, "batch_wait_ratio", 0);
    s.scheduler_recv_interval = integer(o, "scheduler_recv_interval", 0, 0, kMaxRecvInterval);
    s.adp_balance = flag(o, "adp_balance");
    s.adp_timeout_iters = integer(o, "adp_timeout_iters", 50, 0, kMaxBatchWaitIters);
    s.adp_batching_wait_iters = integer(o, "adp_batching_wait_iters", 10, 0, kMaxBatchWaitIters);
    s.kv_memory_share = number(o, "kv_memory_share", 0);
    s.recipe = parse_serving_recipe(text(o, "recipe", "engine"));
    s.engine_version = text(o, "engine_version", "");
    s.overlap = parse_switch("overlap_scheduling", text(o, "overlap_scheduling", "engine"));
    s.chunked_prefill = parse_switch("chunked_prefill", text(o, "chunked_prefill", "engine"));
    s.prefill_batch = integer(o, "prefill_batch", 0, 0, kMaxBatch);
    s.decode_batch = integer(o, "decode_batch", 0, 0, kMaxBatch);
    const ModelOptions opt = options_of(o, &d);
    sr.engine = opt.engine;
    o.finish();
    if (opt.mode != Mode::kRealistic)
      throw InvalidArgument("serving: engines' costs have no ideal mode");
    // Disaggregated: the step is a decode worker's (its attention DP and EP divide its TP).
    if (s.mode == ServingMode::kDisaggregated) sr.tp = s.decode_tp;
    s.step = build_scenario(sr, m, &d);
    const ServingResult r = predict_serving(m, d, s, opt);
    return serving_document(m, d, s, r, opt, registry);
  });
}

json recommend(const json& request, const Registry& registry, const Limits& limits) {
  return as_invalid(limits, [&] {
    StrictObject o = object_of(request);
    const ModelSpec m = model_of(o, limits);
    const Device& d = device_of(o, registry);
    RecommendOptions r;
    r.phase = parse_phase(text(o, "phase", "decode"));
    r.seq_len = integer(o, "seq_len", 4096, 1, kMaxSeqLen);
    r.batch = integer(o, "batch", 1, 1, kMaxBatch);
    r.tp = integer(o, "tp", 1, 1, kMaxParallel);
    r.pp = integer(o, "pp", 1, 1, kMaxParallel);
    r.max_quality_loss_pct = number(o, "max_quality_loss", 3.0);
    if (o.has("memory_limit")) r.memory_limit_bytes = number(o, "memory_limit", 0);
    if (o.has("latency_target")) r.latency_target_s = number(o, "latency_target", 0);
    r.model_options = with_release_of(o, options_of(o, &d), d, r.tp);
    o.finish();
    json j = to_json(roofline::recommend(m, d, r));
    j["scenario"] = {{"model", m.id},
                     {"hardware", d.id},
                     {"phase", phase_name(r.phase)},
                     {"seq_len", r.seq_len},
                     {"batch", r.batch},
                     {"max_quality_loss_pct", r.max_quality_loss_pct}};
    j.update(stamp(registry));
    return j;
  });
}

json analyze(const json& request, const Registry& registry, const Limits& limits) {
  return as_invalid(limits, [&] {
    StrictObject o = object_of(request);
    const Device& d = device_of(o, registry);
    GemmProblem p;
    p.m = integer(o, "m", 1, 1, kMaxGemmDimension);
    p.n = integer(o, "n", 4096, 1, kMaxGemmDimension);
    p.k = integer(o, "k", 4096, 1, kMaxGemmDimension);
    p.weights = parse_format(text(o, "weights", "fp16"));
    p.act = parse_format(text(o, "act", "fp16"));
    ModelOptions opt;  // one GEMM on the device's roofline: no engine
    opt.mode = flag(o, "ideal") ? Mode::kIdeal : Mode::kRealistic;
    o.finish();
    check_deadline("the analysis");
    json j = to_json(d, p, predict_gemm(d, p, opt));
    j["measurement"] = nullptr;  // no GPU backend in this process
    j.update(stamp(registry));
    return j;
  });
}

std::string sweep_text(const json& request, const Registry& registry, const Limits& limits) {
  return as_invalid(limits, [&] {
    StrictObject o = object_of(request);
    SweepSpec spec;
    auto str = [](const json& v) {
      if (!v.is_string()) throw InvalidArgument("expected strings in the list");
      return v.get<std::string>();
    };
    // Pasted configs are named by their place in the list: "custom-2" is the second entry.
    std::size_t place = 0;
    spec.models = list_of<ModelSpec>(o, "models", {}, [&](const json& v) {
      ModelSpec m = model_from_value(v, "models", limits);
      ++place;
      if (v.is_object()) m.id = m.name = "custom-" + std::to_string(place);
      return m;
    });
    if (spec.models.empty()) spec.models.push_back(load_model("llama-3.1-8b"));
    for (const auto& id : list_of<std::string>(o, "hardware", {"gb10"}, str))
      spec.devices.push_back(&registry.get(id));
    spec.phases = list_of<Phase>(o, "phases", {Phase::kDecode},
                                 [&](const json& v) { return parse_phase(str(v)); });
    auto count = [](std::int64_t hi) {
      return [hi](const json& v) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > hi) {
          throw InvalidArgument("expected whole numbers from 1 to " + std::to_string(hi));
        }
        return v.get<std::int64_t>();
      };
    };
    spec.batches = list_of<std::int64_t>(o, "batches", {1}, count(kMaxBatch));
    spec.seq_lens = list_of<std::int64_t>(o, "seq_lens", {4096}, count(kMaxSeqLen));
    spec.weights = list_of<std::optional<Format>>(o, "weights", {std::nullopt}, [&](const json& v) {
      const std::string s = str(v);
      return s == "native" ? std::nullopt : std::optional<Format>(parse_format(s));
    });
    spec.acts = list_of<std::optional<Format>>(
        o, "acts", {std::nullopt}, [&](const json& v) { return parse_sweep_act(str(v)); });
    spec.strategies = list_of<Strategy>(o, "strategies", {}, [&](const json& v) {
      return strategy_named(str(v), "strategies", limits);
    });
    spec.options = options_of(o);
    spec.engine_version = engine_version_of(o);
    o.finish();
    const std::uint64_t rows = sweep_rows(spec, limits.max_sweep_rows);
    return sweep_document(
        rows, registry, [&](const std::function<void(std::string_view)>& sink, const Progress& p) {
          run_sweep(spec, SweepFormat::kJson, sink, p, 1);
        });
  });
}

json sweep(const json& request, const Registry& registry, const Limits& limits) {
  return json::parse(sweep_text(request, registry, limits));
}

std::string sweep_gemm_text(const json& request, const Registry& registry, const Limits& limits) {
  return as_invalid(limits, [&] {
    StrictObject o = object_of(request);
    GemmSweepSpec spec;
    auto str = [](const json& v) {
      if (!v.is_string()) throw InvalidArgument("expected strings in the list");
      return v.get<std::string>();
    };
    auto dimension = [](const char* key) {
      return [key](const json& v) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 1 ||
            v.get<std::int64_t>() > kMaxGemmDimension) {
          throw InvalidArgument(std::string(key) + ": expected whole numbers from 1 to " +
                                std::to_string(kMaxGemmDimension));
        }
        return v.get<std::int64_t>();
      };
    };
    for (const auto& id : list_of<std::string>(o, "hardware", {"gb10"}, str))
      spec.devices.push_back(&registry.get(id));
    spec.ms = list_of<std::int64_t>(o, "m", {1}, dimension("m"));
    spec.ns = list_of<std::int64_t>(o, "n", {4096}, dimension("n"));
    spec.ks = list_of<std::int64_t>(o, "k", {4096}, dimension("k"));
    spec.weights = list_of<Format>(o, "weights", {Format::kFp16},
                                   [&](const json& v) { return parse_format(str(v)); });
    spec.acts = list_of<Format>(o, "acts", {Format::kFp16},
                                [&](const json& v) { return parse_format(str(v)); });
    spec.options.mode = flag(o, "ideal") ? Mode::kIdeal : Mode::kRealistic;  // no engine
    o.finish();
    const std::uint64_t rows = sweep_rows(spec, limits.max_sweep_rows);
    return sweep_document(
        rows, registry, [&](const std::function<void(std::string_view)>& sink, const Progress& p) {
          run_sweep(spec, SweepFormat::kJson, sink, p, 1);
        });
  });
}

json sweep_gemm(const json& request, const Registry& registry, const Limits& limits) {
  return json::parse(sweep_gemm_text(request, registry, limits));
}

json parse_request(std::string_view body) {
  try {
    return detail::parse_json_text(body, kOrigin, body.size());
  } catch (const ParseError& e) {
    std::string what = e.what();
    const std::string prefix = std::string(kOrigin) + ": ";
    if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
    throw InvalidArgument("the body: " + what);
  }
}

json hardware_list(const Registry& registry) {
  json list = json::array();
  for (const auto& d : registry.devices()) list.push_back(to_json(d));
  json j = stamp(registry);
  j["devices"] = list;
  return j;
}

json model_list() {
  json list = json::array();
  for (const auto& p : ModelCatalog::built_in().presets()) {
    json m = to_json(preset_model(p));
    m["aliases"] = p.aliases;
    m["hf_repo"] = p.hf_repo;
    m["published_params"] = p.published_params;
    list.push_back(m);
  }
  return {{"version", std::string(version())}, {"models", list}};
}

json engine_list() {
  json list = json::array();
  for (const auto& e : EngineRegistry::built_in().engines()) list.push_back(to_json(e));
  return {{"version", std::string(version())}, {"engines", list}};
}

json strategy_list() {
  json list = json::array();
  for (const auto& s : built_in_strategies()) list.push_back(to_json(s));
  return {{"version", std::string(version())}, {"strategies", list}};
}

}  // namespace roofline::service
