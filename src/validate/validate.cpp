#include "roofline/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "../common/embedded_data.h"
#include "../common/strict_json.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/track_record.h"

namespace roofline {
namespace {

using detail::StrictObject;

// The most GPUs a case may name (tp): far beyond any single deployment, and
// small enough that nothing sized by it grows unbounded.
constexpr std::int64_t kMaxCaseGpus = 1024;

bool serving_metric(std::string_view metric) { return metric.rfind("serving_", 0) == 0; }

// An optional whole number in [1, max]; `fallback` when the key is absent.
std::int64_t optional_positive(StrictObject& obj, std::string_view key, std::int64_t fallback,
                               std::int64_t max) {
  const auto* v = obj.optional(key);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer() || v->get<std::int64_t>() < 1 || v->get<std::int64_t>() > max)
    obj.fail(key, "expected a whole number from 1 to " + std::to_string(max));
  return v->get<std::int64_t>();
}

std::int64_t optional_count(StrictObject& obj, std::string_view key) {
  const auto& v = obj.required(key);
  if (v.is_null()) return 0;
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
    obj.fail(key, "expected a whole number >= 0 or null");
  return v.get<std::int64_t>();
}

// "" or a release as engines name them: a digit first, then letters, digits
// and . + _ - ("0.11.0", "1.2.0rc6.post2"), no two dots running, at most 40.
bool is_release(const std::string& v) {
  if (v.empty()) return true;
  if (v.size() > 40 || !std::isdigit(static_cast<unsigned char>(v.front())) || v.back() == '.')
    return false;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '_' ||
                    c == '-' || (c == '.' && v[i - 1] != '.');
    if (!ok) return false;
  }
  return true;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double predict_case(const ValidationCase& c, const Registry& registry, ModelOptions opt,
                    const EngineProfile* engine, const EngineRegistry* tables = nullptr) {
  const Device& d = registry.get(c.hardware);
  if (engine) opt.engine = engine;  // predict resolves its table for the device
  if (engine && tables) opt = with_engine(opt, d, engine, *tables);
  opt.engine_build = c.engine_build;
  const ModelSpec m = load_model(c.model);
  Scenario s;
  s.batch = c.batch;
  s.tp = c.tp;
  s.pp = c.pp;
  s.ep = c.ep;
  s.attention_dp = c.attention_dp;
  const Format w = parse_format(c.weights);
  // The model's own format means "the checkpoint as shipped" (gpt-oss: mxfp4
  // experts with bf16 attention).
  if (w != m.native_weights && w != m.native_experts) s.precision.weights = w;
  s.precision.act = parse_format(c.act);
  s.precision.kv = parse_format(c.kv);
  const std::int64_t prompt = std::max<std::int64_t>(c.prompt, 1);
  const std::string& k = c.metric;
  if (serving_metric(k)) {
    // A closed-loop benchmark of `batch` clients against one instance with
    // the engine's own settings (public benchmarks run engines as shipped).
    ServingScenario ss;
    ss.isl = c.prompt;
    ss.osl = c.gen;
    ss.isl_min = c.prompt_min;
    ss.osl_min = c.gen_min;
    ss.token_budget = c.token_budget;
    ss.max_running = c.max_running;
    ss.engine_version = c.engine_version;
    ss.overlap = c.overlap;
    ss.chunked_prefill = c.chunked_prefill;
    ss.recipe = c.recipe;
    ss.kv_memory_share = c.kv_memory_share;
    const EngineProfile* runs = engine ? engine : opt.engine;
    if (c.recipe == ServingRecipe::kBenchmarkTuning &&
        (runs == nullptr || !runs->scheduler.benchmark_tuning.known)) {
      // Another engine than the benchmark's runs the case (validate
      // --engine): the limits trtllm-bench set are the run's, set explicitly.
      const EngineProfile& bench = EngineRegistry::built_in().get("trtllm");
      const auto& tuning = bench.scheduler.benchmark_tuning;
      // The dataset's mean lengths, as the simulation draws them.
      const auto mean = [](std::int64_t min, std::int64_t length) {
        return static_cast<double>((shortest_length(min, length) + length + 1) / 2);
      };
      const BenchmarkLimits l =
          benchmark_limits(bench, m, d, s, mean(c.prompt_min, c.prompt), mean(c.gen_min, c.gen),
                           c.kv_memory_share > 0 ? c.kv_memory_share : tuning.kv_memory.value);
      ss.recipe = ServingRecipe::kEngineDefaults;
      ss.max_running = c.max_running > 0 ? c.max_running : l.max_batch_size;
      if (ss.chunked_prefill == DeploymentSwitch::kEngine)
        ss.chunked_prefill =
            tuning.chunked_prefill ? DeploymentSwitch::kOn : DeploymentSwitch::kOff;
      ss.token_budget = c.token_budget > 0
                            ? c.token_budget
                            : l.token_budget(ss.chunked_prefill == DeploymentSwitch::kOn, c.prompt);
    }
    ss.concurrency = c.batch;
    ss.step = s;
    if (c.requests > 0)
      ss.rounds = std::clamp<std::int64_t>((c.requests + c.batch - 1) / c.batch, 1, kMaxRounds);
    const ServingResult r = predict_serving(m, d, ss, opt);
    if (k == "serving_ttft_s") return r.ttft.mean;
    if (k == "serving_tpot_s") return r.tpot.mean;
    // LLMPerf's inter-token latency of a request: the time from sending it to
    // its last token (the TTFT included) over the tokens streamed. With every
    // output gen tokens long (the parser requires it), the median over the
    // requests is the median end-to-end time over gen.
    if (k == "serving_itl_llmperf_p50_s") return r.e2e.p50 / static_cast<double>(c.gen);
    if (k == "serving_itl_p50_s") return r.itl.p50;
    if (k == "serving_output_tokens_per_s") return r.output_tokens_per_s;
    return k == "serving_ttft_p50_s" ? r.ttft.p50 : r.tpot.p50;
  }
  if (k == "prefill_tokens_per_s" || k == "ttft_s") {
    s.phase = Phase::kPrefill;
    s.seq_len = prompt;
    s.cached = c.cached;
    const Prediction p = predict(m, d, s, opt);
    return k == "ttft_s" ? p.time_s : static_cast<double>(c.batch * prompt) / p.time_s;
  }
  const std::int64_t gen = std::max<std::int64_t>(c.gen, 1);
  // gen decode steps over contexts prompt .. prompt + gen - 1: generate gen + 1 tokens.
  const GenerateResult g = generate(m, d, s, prompt, gen + 1, opt);
  if (k == "decode_tokens_per_s" || k == "decode_total_tokens_per_s") return g.decode_tokens_per_s;
  const GenerateResult full = generate(m, d, s, prompt, gen, opt);
  if (k == "e2e_s") return full.e2e_s;
  // Per GPU of the instance, as TensorRT-LLM's throughput tables give it
  // (output tokens x batch / total latency / TP).
  if (k == "output_tokens_per_s_per_gpu")
    return full.output_tokens_per_s / static_cast<double>(s.tp * s.pp);
  return full.output_tokens_per_s;
}

}  // namespace

constexpr std::size_t kMaxValidationBytes = 16 << 20;

std::vector<ValidationCase> load_validation(const std::string& path) {
  return parse_validation(detail::read_text_file(path, kMaxValidationBytes), path);
}

std::vector<ValidationCase> parse_validation(std::string_view text, const std::string& origin) {
  const auto doc_json = detail::parse_json_text(text, origin, kMaxValidationBytes);
  StrictObject doc(doc_json, origin, "");
  std::map<std::string, std::string> sources = detail::read_sources(doc);
  const auto& list = doc.required("cases");
  if (!list.is_array()) doc.fail("cases", "expected an array");
  std::vector<ValidationCase> cases;
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject o(list[i], origin, "cases[" + std::to_string(i) + "]");
    ValidationCase c;
    c.id = o.string("id");
    c.hardware = o.string("hardware");
    c.model = o.string("model");
    c.framework = o.string("framework");
    c.weights = o.string("weights");
    c.act = o.string("act");
    c.kv = o.string("kv");
    const auto& batch = o.required("batch");
    if (!batch.is_number_integer() || batch.get<std::int64_t>() < 1)
      o.fail("batch", "expected a whole number >= 1");
    c.batch = batch.get<std::int64_t>();
    c.prompt = optional_count(o, "prompt");
    c.gen = optional_count(o, "gen");
    c.tp = optional_positive(o, "tp", 1, kMaxCaseGpus);
    c.pp = optional_positive(o, "pp", 1, kMaxCaseGpus / c.tp);
    c.ep = optional_positive(o, "ep", 1, c.tp);
    if (c.tp % c.ep != 0) o.fail("ep", "must divide tp (" + std::to_string(c.tp) + ")");
    c.metric = o.string("metric");
    try {
      (void)metric_kind(c.metric);  // the one list of metrics (roofline/track_record.h)
    } catch (const InvalidArgument&) {
      o.fail("metric", "'" + c.metric + "' is not a known metric");
    }
    if (serving_metric(c.metric)) {
      c.requests = optional_positive(o, "requests", 0, kMaxSimulatedRequests);
      if (c.prompt < 1 || c.prompt >= kMaxSeqLen)
        o.fail("prompt", "a serving case needs its input length (1 to 2^30 - 1 tokens)");
      if (c.gen < 2 || c.gen > kMaxSeqLen - c.prompt)
        o.fail("gen",
               "a serving case needs its output length (at least 2 tokens: TPOT spans them)");
      if (c.requests > 0 && c.requests < c.batch)
        o.fail("requests", "fewer requests than clients (batch)");
      c.attention_dp = optional_positive(o, "attention_dp", 1, c.tp);
      if (c.tp % c.attention_dp != 0)
        o.fail("attention_dp", "must divide tp (" + std::to_string(c.tp) + ")");
      c.prompt_min = optional_positive(o, "prompt_min", 0, c.prompt);
      c.gen_min = optional_positive(o, "gen_min", 0, c.gen);
      if (c.metric == "serving_itl_llmperf_p50_s" && c.gen_min > 0 && c.gen_min < c.gen)
        o.fail("gen_min",
               "LLMPerf's inter-token latency is predicted for outputs of one length (gen)");
      c.token_budget = optional_positive(o, "token_budget", 0, kMaxBatch);
      c.max_running = optional_positive(o, "max_running", 0, kMaxBatch);
      c.engine_version = o.optional_string("engine_version", "");
      if (!is_release(c.engine_version))
        o.fail("engine_version", "expected a release of up to 40 characters such as \"0.11.0\"");
      if (o.optional("recipe") != nullptr) {
        const std::string v = o.string("recipe");
        if (v != "engine" && v != "trtllm-bench")
          o.fail("recipe", "expected \"engine\" or \"trtllm-bench\"");
        c.recipe = parse_serving_recipe(v);
      }
      if (o.optional("kv_memory_share") != nullptr) {
        c.kv_memory_share = o.non_negative("kv_memory_share");
        if (c.kv_memory_share < 0.05 || c.kv_memory_share > 1)
          o.fail("kv_memory_share", "expected a share from 0.05 to 1");
      }
      for (const auto& [key, field] : {std::pair{"overlap_scheduling", &c.overlap},
                                       std::pair{"chunked_prefill", &c.chunked_prefill}}) {
        if (o.optional(key) == nullptr) continue;
        const std::string v = o.string(key);
        if (v != "on" && v != "off") o.fail(key, "expected \"on\" or \"off\"");
        *field = parse_switch(key, v);
      }
    } else {
      for (const char* key : {"requests", "attention_dp", "prompt_min", "gen_min", "token_budget",
                              "max_running", "engine_version", "overlap_scheduling",
                              "chunked_prefill", "recipe", "kv_memory_share"}) {
        if (o.optional(key) != nullptr)
          o.fail(key, "only serving cases (metrics serving_*) have it");
      }
    }
    if (o.optional("cached") != nullptr) {
      if (c.metric != "prefill_tokens_per_s" && c.metric != "ttft_s")
        o.fail("cached", "only a prefill's metrics (prefill_tokens_per_s, ttft_s) have it");
      c.cached =
          optional_positive(o, "cached", 0, kMaxSeqLen - std::max<std::int64_t>(c.prompt, 1));
    }
    c.value = o.non_negative("value");
    if (c.value <= 0) o.fail("value", "must be positive");
    if (o.optional("engine_build") != nullptr) {
      try {
        c.engine_build = parse_build_date(o.string("engine_build"), "engine_build");
      } catch (const InvalidArgument& x) {
        o.fail("engine_build", x.what());
      }
    }
    const std::string key = o.string("source");
    if (!sources.count(key)) o.fail("source", "'" + key + "' is not a key of \"sources\"");
    c.source = sources[key];
    c.source_key = key;
    c.note = o.optional_string("note", "");
    o.finish();
    cases.push_back(std::move(c));
  }
  doc.finish();
  return cases;
}

std::vector<ValidationCase> built_in_validation() {
  for (const auto& f : detail::embedded_files()) {
    if (f.name == "validation/published.json")
      return parse_validation(f.text, "built-in validation/published.json");
  }
  return {};
}

std::string engine_of_framework(std::string_view framework) {
  std::string f(framework);
  std::transform(f.begin(), f.end(), f.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (f == "tensorrt-llm" || f == "trt-llm") f = "trtllm";
  if (f == "mlc-llm") f = "mlc";
  return EngineRegistry::built_in().find(f) ? f : std::string("roofline");
}

ValidationReport validate_cases(const std::vector<ValidationCase>& cases, const Registry& registry,
                                const ModelOptions& opt, const std::string& engine) {
  ValidationReport r;
  std::vector<double> abs_errors, signed_errors, optimism;
  std::map<std::string, std::vector<double>> groups;
  const EngineRegistry& engines = EngineRegistry::built_in();
  const EngineProfile* fixed = engine.empty() || engine == "case" ? nullptr : &engines.get(engine);
  for (const auto& c : cases) {
    ValidationRow row;
    row.c = c;
    const EngineProfile* profile =
        engine == "case" ? &engines.get(engine_of_framework(c.framework)) : fixed;
    row.engine = opt.mode == Mode::kIdeal ? std::string("none (ideal)")
                 : profile                ? profile->id
                 : opt.engine             ? opt.engine->id
                                          : std::string("roofline");
    try {
      row.predicted = predict_case(c, registry, opt, profile);
      row.error_pct = (row.predicted - c.value) / c.value * 100;
      abs_errors.push_back(std::fabs(row.error_pct));
      signed_errors.push_back(row.error_pct);
      optimism.push_back(optimism_pct(c.metric, row.error_pct));
      if (optimism.back() > 0) ++r.optimistic;
      groups["engine=" + row.engine].push_back(row.error_pct);
      groups["metric=" + c.metric].push_back(row.error_pct);
      if (!c.source_key.empty()) groups["source=" + c.source_key].push_back(row.error_pct);
    } catch (const Error& e) {
      row.error = e.what();
    }
    r.rows.push_back(std::move(row));
  }
  r.evaluated = static_cast<int>(abs_errors.size());
  r.median_abs_error_pct = median(abs_errors);
  r.median_signed_error_pct = median(signed_errors);
  r.median_optimism_pct = median(optimism);
  for (double e : abs_errors) {
    r.max_abs_error_pct = std::max(r.max_abs_error_pct, e);
    r.mean_abs_error_pct += e / static_cast<double>(abs_errors.size());
  }
  r.groups.push_back(error_stats("all", signed_errors));
  for (const auto& [g, errors] : groups) r.groups.push_back(error_stats(g, errors));
  return r;
}

namespace {

// Issue 11's bounds for the published cases.
constexpr double kMedianLimitPct = 10;
constexpr double kCaseLimitPct = 35;
constexpr double kEngineMedianLimitPct = 15;
constexpr double kFamilyBiasLimitPct = 5;
// The worst cases or groups a miss names (the rest are counted).
constexpr std::size_t kNamed = 5;

// The first kNamed of `n` misses, worst first, `name(i)` each, then a count
// of the rest: "a, b, c, d, e and 3 more".
template <typename Name>
std::string name_worst(std::size_t n, Name name) {
  std::string out;
  for (std::size_t i = 0; i < n && i < kNamed; ++i) {
    if (i > 0) out += ", ";
    out += name(i);
  }
  if (n > kNamed) out += fmt::format(" and {} more", n - kNamed);
  return out;
}

// "a 23.7%, b 16.1%": groups past `limit` in `pick`'s figure, worst first.
std::string worst_groups(std::vector<ErrorStats> groups, double (*pick)(const ErrorStats&),
                         double limit, const char* format) {
  std::erase_if(groups, [&](const ErrorStats& g) { return !(pick(g) > limit); });
  std::sort(groups.begin(), groups.end(),
            [&](const ErrorStats& a, const ErrorStats& b) { return pick(a) > pick(b); });
  return name_worst(groups.size(), [&](std::size_t i) {
    const ErrorStats& g = groups[i];
    return g.group + " " +
           fmt::format(fmt::runtime(format), g.median_signed_pct, g.median_abs_pct, g.rows);
  });
}

}  // namespace

std::vector<TargetCheck> published_targets(const ValidationReport& r) {
  if (r.evaluated == 0) return {};
  std::vector<TargetCheck> out;
  out.push_back({"median |error|", r.median_abs_error_pct, kMedianLimitPct,
                 r.median_abs_error_pct <= kMedianLimitPct, ""});
  if (!out.back().holds)
    out.back().misses = fmt::format("signed median {:+.1f}%", r.median_signed_error_pct);

  std::vector<const ValidationRow*> past;
  for (const ValidationRow& row : r.rows) {
    if (row.error.empty() && std::fabs(row.error_pct) > kCaseLimitPct) past.push_back(&row);
  }
  std::sort(past.begin(), past.end(), [](const ValidationRow* a, const ValidationRow* b) {
    return std::fabs(a->error_pct) > std::fabs(b->error_pct);
  });
  out.push_back({fmt::format("cases past {:.0f}%", kCaseLimitPct), static_cast<double>(past.size()),
                 0, past.empty(),
                 name_worst(past.size(),
                            [&](std::size_t i) {
                              return fmt::format("{} {:+.0f}%", past[i]->c.id, past[i]->error_pct);
                            }),
                 /*count=*/true});

  // The engines' figures are the report's "engine=" groups.
  std::vector<ErrorStats> engine_stats, family_stats;
  constexpr std::string_view kEnginePrefix = "engine=";
  for (const ErrorStats& g : r.groups) {
    if (g.group.rfind(kEnginePrefix, 0) == 0) {
      engine_stats.push_back(g);
      engine_stats.back().group.erase(0, kEnginePrefix.size());
    }
  }
  std::map<std::string, std::vector<double>> families;
  for (const ValidationRow& row : r.rows) {
    if (row.error.empty()) families[row.engine + " x " + row.c.metric].push_back(row.error_pct);
  }
  for (const auto& [f, errors] : families) {
    if (errors.size() >= static_cast<std::size_t>(kMinFamilyCases))
      family_stats.push_back(error_stats(f, errors));
  }
  double worst_engine = 0, worst_bias = 0;
  for (const ErrorStats& g : engine_stats) worst_engine = std::max(worst_engine, g.median_abs_pct);
  for (const ErrorStats& g : family_stats)
    worst_bias = std::max(worst_bias, std::fabs(g.median_signed_pct));
  out.push_back({"worst engine's median |error|", worst_engine, kEngineMedianLimitPct,
                 worst_engine <= kEngineMedianLimitPct,
                 worst_groups(
                     engine_stats, [](const ErrorStats& g) { return g.median_abs_pct; },
                     kEngineMedianLimitPct, "{1:.1f}% ({2} cases)")});
  out.push_back(
      {"worst family's |signed median|", worst_bias, kFamilyBiasLimitPct,
       worst_bias <= kFamilyBiasLimitPct,
       worst_groups(
           family_stats, [](const ErrorStats& g) { return std::fabs(g.median_signed_pct); },
           kFamilyBiasLimitPct, "{0:+.1f}% ({2} cases)")});
  return out;
}

std::vector<ErrorStats> leave_one_device_out_cases(const std::vector<ValidationCase>& cases,
                                                   const Registry& registry) {
  const EngineRegistry& all = EngineRegistry::built_in();
  std::map<std::string, std::vector<const ValidationCase*>> by_device;
  for (const auto& c : cases) {
    const Device* d = registry.find(c.hardware);
    if (!d) continue;
    const bool measured = std::any_of(all.gemm_tables().begin(), all.gemm_tables().end(),
                                      [&id = d->id](const GemmTable& t) { return t.device == id; });
    if (measured) by_device[d->id].push_back(&c);
  }
  std::vector<ErrorStats> out;
  for (const auto& [device, subset] : by_device) {
    const EngineRegistry held_out = all.without_tables_of(device);
    std::vector<double> own, held;
    for (const ValidationCase* c : subset) {
      const EngineProfile& e = all.get(engine_of_framework(c->framework));
      if (e.kind == "reference") continue;  // no tables to leave out
      try {
        const double with = predict_case(*c, registry, {}, &e, &all);
        const double without = predict_case(*c, registry, {}, &e, &held_out);
        own.push_back((with - c->value) / c->value * 100);
        held.push_back((without - c->value) / c->value * 100);
      } catch (const Error&) {
        // Refused either way: neither counts.
      }
    }
    if (own.empty()) continue;
    out.push_back(error_stats("with-own=" + device, own));
    out.push_back(error_stats("held-out=" + device, held));
  }
  return out;
}

}  // namespace roofline
