// The commands other than predict and generate: each returns the document the
// CLI prints with --json (report.h builds both), as Python objects. Where the
// CLI wraps a list or a device in a stamped envelope ({"version", "formats":
// [...]}), the function returns what is inside.
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "roofline/error.h"
#include "roofline/predict.h"
#include "roofline/quantize.h"
#include "roofline/recommend.h"
#include "roofline/report.h"
#include "roofline/roofline.h"
#include "roofline/search.h"
#include "roofline/serving.h"
#include "roofline/strategy.h"
#include "roofline/validate.h"

namespace roofline::python {
namespace {

// A scenario as kv(), attention() and capacity() take it.
struct Resolved {
  std::shared_ptr<const ModelSpec> model;
  const Device* device;
  Scenario scenario;
  ModelOptions options;
};

// The arguments after model and hardware, keyword-only, with the defaults of
// ScenarioRequest (the CLI's flags).
auto scenario_args() {
  const ScenarioRequest d;
  return std::make_tuple(
      py::kw_only(), py::arg("phase") = d.phase, py::arg("batch") = d.batch,
      py::arg("seq_len") = d.seq_len, py::arg("weights") = py::none(),
      py::arg("experts") = py::none(), py::arg("act") = py::none(), py::arg("kv") = py::none(),
      py::arg("strategy") = py::none(), py::arg("attention") = py::none(),
      py::arg("block_sparsity") = d.block_sparsity, py::arg("tp") = d.tp, py::arg("pp") = d.pp,
      py::arg("attention_dp") = d.attention_dp, py::arg("ep") = d.ep, py::arg("ideal") = false,
      py::arg("engine") = "roofline", py::arg("engine_build") = py::none(),
      py::arg("cuda_graphs") = "engine", py::arg("moe_kernel") = py::none(),
      py::arg("cached") = d.cached, py::arg("engine_version") = py::none());
}

// Wraps f(const Resolved&) as a function of (model, hardware, scenario_args()...).
template <typename F>
auto with_scenario(F f) {
  return [f](const py::object& model, const py::object& hardware, std::string phase,
             std::int64_t batch, std::int64_t seq_len, std::optional<std::string> weights,
             std::optional<std::string> experts, std::optional<std::string> act,
             std::optional<std::string> kv, std::optional<std::string> strategy,
             std::optional<std::string> attention, double block_sparsity, std::int64_t tp,
             std::int64_t pp, std::int64_t attention_dp, std::int64_t ep, bool ideal,
             const std::string& engine, const std::optional<std::string>& engine_build,
             const std::string& cuda_graphs, const std::optional<std::string>& moe_kernel,
             std::int64_t cached, const std::optional<std::string>& engine_version) {
    ScenarioRequest r = request_of(
        std::move(phase), batch, seq_len, std::move(weights), std::move(experts), std::move(act),
        std::move(kv), std::move(strategy), std::move(attention), block_sparsity, tp, pp);
    r.attention_dp = attention_dp;
    r.ep = ep;
    r.cached = cached;
    const Device* device = &device_of(hardware);
    Resolved x{model_of(model),
               device,
               {},
               options_of(ideal, engine, engine_build, cuda_graphs, moe_kernel, device)};
    x.options = with_release(std::move(x.options), engine_version, *device, tp);
    r.engine = x.options.engine;
    x.scenario = build_scenario(r, *x.model, x.device);
    return f(x);
  };
}

template <typename F>
void def_scenario(py::module_& m, const char* name, F f, const char* doc) {
  std::apply(
      [&](auto... args) {
        m.def(name, with_scenario(f), py::arg("model"), py::arg("hardware"), args..., doc);
      },
      scenario_args());
}

}  // namespace

void bind_documents(py::module_& m) {
  // ------------------------------------------------------------ devices, formats
  m.def(
      "hardware", [](const py::object& id) { return to_py(to_json(device_of(id))); }, py::arg("id"),
      "Every figure of one device with its source (the \"device\" of roofline hardware show "
      "--json)");
  m.def(
      "hardware_ids",
      [] {
        std::vector<std::string> ids;
        for (const auto& d : registry().devices()) ids.push_back(d.id);
        return ids;
      },
      "The device ids");
  m.def(
      "hardware_list", [] { return to_py(hardware_list_document(registry()).at("devices")); },
      "The devices with their key figures (the \"devices\" of roofline hardware list --json)");
  m.def(
      "formats", [] { return to_py(formats_document().at("formats")); },
      "The number-format table (the \"formats\" of roofline formats --json)");
  m.def(
      "canonical_format",
      [](const std::string& name) { return std::string(format_id(parse_format(name))); },
      py::arg("name"),
      "The format id a name means (\"FP8 E4M3\", \"fp8_e4m3\", \"E4M3\" -> \"fp8\"); raises "
      "NotFound for unknown names");

  // ------------------------------------------------------------ models, plans, engines
  m.def(
      "models", [] { return to_py(model_list_document().at("models")); },
      "The model presets (the \"models\" of roofline model list --json)");
  m.def(
      "model",
      [](const py::object& model) {
        return to_py(model_document(*model_of(model), preset_of(model)));
      },
      py::arg("model"),
      "Architecture, parameters and bytes of a model: a preset id, a path or a dict (roofline "
      "model show --json)");
  m.def(
      "strategies", [] { return to_py(strategies_document().at("strategies")); },
      "The named precision plans (the \"strategies\" of roofline strategies --json)");
  m.def(
      "engines", [] { return to_py(engines_document()); },
      "The serving engines, each with its sourced figures (roofline engines --json)");
  m.def(
      "engine",
      [](const std::string& id) { return to_py(to_json(EngineRegistry::built_in().get(id))); },
      py::arg("id"), "One serving engine (roofline engines show ID --json)");

  // ------------------------------------------------------------ predictions
  m.def(
      "gemm",
      [](const py::object& hardware, std::int64_t mm, std::int64_t n, std::int64_t k,
         const std::string& weights, const std::string& act, bool ideal) {
        const Device& d = device_of(hardware);
        const GemmProblem p{mm, n, k, parse_format(weights), parse_format(act)};
        ModelOptions o;  // as the CLI's gemm: the reference engine
        o.mode = ideal ? Mode::kIdeal : Mode::kRealistic;
        nlohmann::json j = to_json(d, p, predict_gemm(d, p, o));
        j.update(stamp(registry()));
        return to_py(j);
      },
      py::arg("hardware"), py::arg("m"), py::arg("n"), py::arg("k"), py::kw_only(),
      py::arg("weights") = "fp16", py::arg("act") = "fp16", py::arg("ideal") = false,
      "One GEMM C[m,n] = A[m,k] B[k,n] (roofline gemm --json)");

  def_scenario(
      m, "kv",
      [](const Resolved& x) {
        const KvReport r = kv_report(*x.model, *x.device, x.scenario, x.options);
        return to_py(kv_document(*x.model, *x.device, r, registry()));
      },
      "KV-cache bytes per format, the decode step with each, and the context where reading it "
      "outweighs the weights (roofline kv --json)");
  def_scenario(
      m, "attention",
      [](const Resolved& x) {
        const auto rows = compare_attention(*x.model, *x.device, x.scenario, x.options);
        return to_py(attention_document(*x.model, *x.device, x.scenario, rows, registry()));
      },
      "Every attention kernel side by side (roofline attention --json)");
  def_scenario(
      m, "capacity",
      [](const Resolved& x) {
        // As predict's: the engine's KV memory rule in realistic mode only.
        const EngineProfile* engine =
            x.options.mode == Mode::kRealistic ? x.options.engine : nullptr;
        return to_py(to_json(capacity(*x.model, *x.device, x.scenario, engine, x.options.moe_kernel,
                                      x.options.moe_release)));
      },
      "The largest batch at this context and context at this batch that fit (the \"capacity\" "
      "of roofline predict --json)");

  const ServingScenario serving_defaults;
  m.def(
      "serving",
      [](const py::object& model, const py::object& hardware, std::int64_t isl, std::int64_t osl,
         std::int64_t concurrency, std::optional<std::string> weights,
         std::optional<std::string> experts, std::optional<std::string> act,
         std::optional<std::string> kv, std::optional<std::string> strategy,
         std::optional<std::string> attention, std::int64_t tp, std::int64_t pp,
         std::int64_t attention_dp, std::int64_t ep, const std::string& engine,
         const std::string& mode, std::int64_t dp, std::int64_t prefill_workers,
         std::int64_t prefill_tp, std::int64_t decode_workers, std::int64_t decode_tp,
         std::int64_t prefill_attention_dp, std::int64_t prefill_ep, std::int64_t rounds,
         std::int64_t token_budget, std::int64_t max_running, std::int64_t draft_tokens,
         std::optional<double> acceptance, std::int64_t shared_prefix, const std::string& recipe,
         std::int64_t prefill_batch, std::int64_t decode_batch, std::int64_t isl_min,
         std::int64_t osl_min, std::optional<double> range_ratio, const std::string& engine_version,
         std::int64_t prompt_pool, std::optional<std::string> engine_build,
         std::int64_t batch_wait_iters, double batch_wait_ratio,
         std::int64_t scheduler_recv_interval, double kv_memory_share,
         const std::string& cuda_graphs, bool adp_balance, std::int64_t adp_timeout_iters,
         std::int64_t adp_batching_wait_iters, const std::optional<std::string>& moe_kernel,
         const std::string& overlap_scheduling, const std::string& chunked_prefill,
         std::int64_t graph_capture_size) {
        const ScenarioRequest defaults;
        ScenarioRequest r =
            request_of(defaults.phase, defaults.batch, defaults.seq_len, std::move(weights),
                       std::move(experts), std::move(act), std::move(kv), std::move(strategy),
                       std::move(attention), defaults.block_sparsity, tp, pp);
        r.attention_dp = attention_dp;
        r.ep = ep;
        r.draft_tokens = draft_tokens;
        r.acceptance = acceptance;
        const auto spec = model_of(model);
        const Device& d = device_of(hardware);
        ServingScenario s;
        s.isl = isl;
        s.osl = osl;
        if (range_ratio) {
          if (isl_min != 0 || osl_min != 0)
            throw InvalidArgument("range_ratio gives isl_min and osl_min: not both");
          set_range_ratio(s, *range_ratio);
        } else {
          s.isl_min = isl_min;
          s.osl_min = osl_min;
        }
        s.concurrency = concurrency;
        s.mode = parse_serving_mode(mode);
        s.replicas = dp;
        s.prefill_workers = prefill_workers;
        s.prefill_tp = prefill_tp;
        s.decode_workers = decode_workers;
        s.decode_tp = decode_tp;
        s.prefill_attention_dp = prefill_attention_dp;
        s.prefill_ep = prefill_ep;
        s.rounds = rounds;
        s.shared_prefix = shared_prefix;
        s.prompt_pool = prompt_pool;
        s.token_budget = token_budget;
        s.max_running = max_running;
        s.graph_capture_size = graph_capture_size;
        s.batch_wait_iters = batch_wait_iters;
        s.batch_wait_ratio = batch_wait_ratio;
        s.scheduler_recv_interval = scheduler_recv_interval;
        s.adp_balance = adp_balance;
        s.adp_timeout_iters = adp_timeout_iters;
        s.adp_batching_wait_iters = adp_batching_wait_iters;
        s.kv_memory_share = kv_memory_share;
        s.recipe = parse_serving_recipe(recipe);
        s.prefill_batch = prefill_batch;
        s.decode_batch = decode_batch;
        s.engine_version = engine_version;
        s.overlap = parse_switch("overlap_scheduling", overlap_scheduling);
        s.chunked_prefill = parse_switch("chunked_prefill", chunked_prefill);
        // Disaggregated: the step is a decode worker's (attention DP and EP divide its TP).
        if (s.mode == ServingMode::kDisaggregated) r.tp = decode_tp;
        const ModelOptions o = options_of(false, engine, engine_build, cuda_graphs, moe_kernel, &d);
        r.engine = o.engine;
        s.step = build_scenario(r, *spec, &d);
        const ServingResult res = predict_serving(*spec, d, s, o);
        return to_py(serving_document(*spec, d, s, res, o, registry()));
      },
      py::arg("model"), py::arg("hardware"), py::kw_only(), py::arg("isl") = serving_defaults.isl,
      py::arg("osl") = serving_defaults.osl, py::arg("concurrency") = serving_defaults.concurrency,
      py::arg("weights") = py::none(), py::arg("experts") = py::none(), py::arg("act") = py::none(),
      py::arg("kv") = py::none(), py::arg("strategy") = py::none(),
      py::arg("attention") = py::none(), py::arg("tp") = 1, py::arg("pp") = 1,
      py::arg("attention_dp") = 1, py::arg("ep") = 1, py::arg("engine") = "roofline",
      py::arg("mode") = "agg", py::arg("dp") = serving_defaults.replicas,
      py::arg("prefill_workers") = serving_defaults.prefill_workers,
      py::arg("prefill_tp") = serving_defaults.prefill_tp,
      py::arg("decode_workers") = serving_defaults.decode_workers,
      py::arg("decode_tp") = serving_defaults.decode_tp,
      py::arg("prefill_attention_dp") = serving_defaults.prefill_attention_dp,
      py::arg("prefill_ep") = serving_defaults.prefill_ep,
      py::arg("rounds") = serving_defaults.rounds, py::arg("token_budget") = 0,
      py::arg("max_running") = 0, py::arg("draft_tokens") = 0, py::arg("acceptance") = py::none(),
      py::arg("shared_prefix") = serving_defaults.shared_prefix, py::arg("recipe") = "engine",
      py::arg("prefill_batch") = 0, py::arg("decode_batch") = 0, py::arg("isl_min") = 0,
      py::arg("osl_min") = 0, py::arg("range_ratio") = py::none(), py::arg("engine_version") = "",
      py::arg("prompt_pool") = serving_defaults.prompt_pool, py::arg("engine_build") = py::none(),
      py::arg("batch_wait_iters") = 0, py::arg("batch_wait_ratio") = 0.0,
      py::arg("scheduler_recv_interval") = 0, py::arg("kv_memory_share") = 0.0,
      py::arg("cuda_graphs") = "engine", py::arg("adp_balance") = false,
      py::arg("adp_timeout_iters") = serving_defaults.adp_timeout_iters,
      py::arg("adp_batching_wait_iters") = serving_defaults.adp_batching_wait_iters,
      py::arg("moe_kernel") = py::none(), py::arg("overlap_scheduling") = "engine",
      py::arg("chunked_prefill") = "engine", py::arg("graph_capture_size") = 0,
      "TTFT, TPOT and tokens/s of `concurrency` clients in a closed loop, simulated against the "
      "engine's scheduler; mode \"disagg\" with prefill and decode workers; isl_min / osl_min "
      "(or range_ratio) draw random lengths; prompt_pool draws prompts from that many distinct "
      "ones (the prefix cache skips repeats); engine_version dates the engine's behaviour "
      "and overlap_scheduling / chunked_prefill (engine, on, off) override its batches formed "
      "a step ahead and its prompts split across steps; "
      "batch_wait_iters / batch_wait_ratio hold prompts back for fuller steps (TensorRT-LLM's "
      "batch waiting); adp_balance / adp_timeout_iters / adp_batching_wait_iters hold prompts "
      "until every attention data-parallel rank has one (TensorRT-LLM's attention-DP balance); "
      "scheduler_recv_interval takes requests in every N decode steps (SGLang's); "
      "kv_memory_share sets the KV cache's memory share under the engine's rule; cuda_graphs "
      "(engine, decode-only or off) which steps replay CUDA graphs and graph_capture_size the "
      "largest step (tokens) they cover (vLLM's --max-cudagraph-capture-size; 0: the engine's); "
      "moe_kernel the MoE kernel family (triton, flashinfer-trtllm, flashinfer-cutlass, marlin); "
      "recipe engine, aiconfigurator or trtllm-bench (TensorRT-LLM's `trtllm-bench throughput` "
      "limits; with rounds=1 and every request a client for its burst) "
      "(roofline serving --json)");

  const SearchSpec search_defaults;
  m.def(
      "search",
      [](const py::object& model, const py::object& hardware, std::int64_t gpus, std::int64_t isl,
         std::int64_t osl, std::optional<double> ttft_max, std::optional<double> tpot_max,
         const std::vector<std::string>& engines, const std::vector<std::string>& weights,
         const std::vector<std::int64_t>& concurrencies, const std::vector<std::string>& modes,
         std::int64_t draft_tokens, std::optional<double> acceptance, const std::string& recipe,
         std::optional<double> range_ratio, std::int64_t shared_prefix, std::int64_t prompt_pool,
         const std::map<std::string, std::string>& engine_versions) {
        const auto spec_model = model_of(model);
        const Device& d = device_of(hardware);
        SearchSpec spec;
        spec.gpus = gpus;
        spec.isl = isl;
        spec.osl = osl;
        if (range_ratio) set_range_ratio(spec, *range_ratio);
        spec.ttft_max_s = ttft_max;
        spec.tpot_max_s = tpot_max;
        spec.engines = engines;
        spec.engine_versions = engine_versions;
        for (const auto& w : weights) spec.weights.push_back(parse_format(w));
        spec.concurrencies = concurrencies;
        for (const auto& x : modes) spec.modes.push_back(parse_serving_mode(x));
        spec.draft_tokens = draft_tokens;
        spec.acceptance = acceptance;
        spec.recipe = parse_serving_recipe(recipe);
        spec.shared_prefix = shared_prefix;
        spec.prompt_pool = prompt_pool;
        const SearchResult r = search_deployments(*spec_model, d, spec);
        return to_py(search_document(*spec_model, d, spec, r, registry()));
      },
      py::arg("model"), py::arg("hardware"), py::kw_only(), py::arg("gpus") = search_defaults.gpus,
      py::arg("isl") = search_defaults.isl, py::arg("osl") = search_defaults.osl,
      py::arg("ttft_max") = py::none(), py::arg("tpot_max") = py::none(),
      py::arg("engines") = std::vector<std::string>{},
      py::arg("weights") = std::vector<std::string>{},
      py::arg("concurrencies") = std::vector<std::int64_t>{},
      py::arg("modes") = std::vector<std::string>{}, py::arg("draft_tokens") = 0,
      py::arg("acceptance") = py::none(), py::arg("recipe") = "engine",
      py::arg("range_ratio") = py::none(), py::arg("shared_prefix") = 0, py::arg("prompt_pool") = 0,
      py::arg("engine_versions") = std::map<std::string, std::string>{},
      "The deployment search: the Pareto front of tokens/s per GPU against per user and the "
      "best configuration meeting the targets; engine_versions a release for some of the "
      "searched engines ({\"vllm\": \"0.11.0\"}) (roofline search --json)");

  const RecommendOptions r;  // the defaults, as the CLI's flags have them
  m.def(
      "recommend",
      [](const py::object& model, const py::object& hardware, const std::string& phase,
         std::int64_t seq_len, std::int64_t batch, std::int64_t tp, std::int64_t pp,
         double max_quality_loss, std::optional<double> memory_limit,
         std::optional<double> latency_target, bool ideal, const std::string& engine,
         const std::vector<std::string>& strategy_files, std::optional<std::string> checkpoint,
         double budget_sqnr_db, std::optional<std::string> engine_build,
         const std::string& cuda_graphs, const std::optional<std::string>& moe_kernel,
         const std::optional<std::string>& engine_version) {
        const auto ms = model_of(model);
        const Device& d = device_of(hardware);
        RecommendOptions o;
        o.phase = parse_phase(phase);
        o.seq_len = seq_len;
        o.batch = batch;
        o.tp = tp;
        o.pp = pp;
        o.max_quality_loss_pct = max_quality_loss;
        o.memory_limit_bytes = memory_limit;
        o.latency_target_s = latency_target;
        o.model_options = options_of(ideal, engine, engine_build, cuda_graphs, moe_kernel, &d);
        o.model_options = with_release(std::move(o.model_options), engine_version, d, tp);
        if (!strategy_files.empty()) {
          o.strategies = built_in_strategies();
          for (const auto& f : strategy_files) o.strategies.push_back(load_strategy(f));
        }
        if (checkpoint) {
          QuantizeOptions q;
          q.budget_sqnr_db = budget_sqnr_db;
          o.checkpoint_budget_sqnr_db = budget_sqnr_db;
          py::gil_scoped_release release;
          o.checkpoint_reports = quantize_checkpoint(*checkpoint, q);
        }
        return to_py(recommend_document(*ms, d, o, recommend(*ms, d, o), registry()));
      },
      py::arg("model"), py::arg("hardware"), py::kw_only(),
      py::arg("phase") = std::string(phase_name(r.phase)), py::arg("seq_len") = r.seq_len,
      py::arg("batch") = r.batch, py::arg("tp") = r.tp, py::arg("pp") = r.pp,
      py::arg("max_quality_loss") = r.max_quality_loss_pct, py::arg("memory_limit") = py::none(),
      py::arg("latency_target") = py::none(), py::arg("ideal") = false,
      py::arg("engine") = "roofline", py::arg("strategy_files") = std::vector<std::string>{},
      py::arg("checkpoint") = py::none(), py::arg("budget_sqnr_db") = r.checkpoint_budget_sqnr_db,
      py::arg("engine_build") = py::none(), py::arg("cuda_graphs") = "engine",
      py::arg("moe_kernel") = py::none(), py::arg("engine_version") = py::none(),
      "Precision strategies and attention kernels ranked for a model and device (roofline "
      "recommend --json)");

  m.def(
      "validate",
      [](std::optional<std::string> validation_file, bool ideal, const std::string& engine) {
        const std::vector<ValidationCase> cases =
            validation_file ? load_validation(*validation_file) : built_in_validation();
        ModelOptions o;
        o.mode = ideal ? Mode::kIdeal : Mode::kRealistic;
        ValidationReport report;
        {
          py::gil_scoped_release release;
          report = validate_cases(cases, registry(), o, engine);
        }
        return to_py(validation_document(report, o.mode, registry()));
      },
      py::kw_only(), py::arg("validation_file") = py::none(), py::arg("ideal") = false,
      py::arg("engine") = "case",
      "Predictions against published measurements (roofline validate --json); engine: \"case\" "
      "for each case's own framework (the default), or an id for every case");

  m.def(
      "validate_serving",
      [](std::optional<std::string> file, const std::string& engine, const std::string& recipe,
         std::int64_t rounds, std::int64_t prompt_pool) {
        const ServingRecipe r = parse_serving_recipe(recipe);
        const std::vector<ServingRun> runs =
            file ? load_serving_runs(*file) : built_in_serving_runs();
        DecodeStepReport report;
        {
          py::gil_scoped_release release;
          report = validate_serving(runs, registry(), engine, r, rounds, prompt_pool);
        }
        return to_py(serving_validation_document(report, r, rounds, registry()));
      },
      py::kw_only(), py::arg("file") = py::none(), py::arg("engine") = "case",
      py::arg("recipe") = "aiconfigurator", py::arg("rounds") = kDefaultRounds,
      py::arg("prompt_pool") = 0,
      "The serving model against measured TTFT and TPOT (roofline validate --serving [FILE] "
      "--json): the built-in development set, or a CSV in its format; recipe: aiconfigurator, "
      "engine or trtllm-bench; rounds: requests each simulated client sends; prompt_pool: the "
      "distinct prompts "
      "each benchmark drew from (0: every prompt unique)");

  m.def(
      "validate_decode_steps",
      [](std::optional<std::string> file, const std::string& engine, bool prefill_share,
         bool leave_one_out) {
        if (leave_one_out && engine != "case")
          throw InvalidArgument("leave_one_out: predicts with each run's own engine (no engine)");
        const std::vector<ServingRun> runs =
            file ? load_serving_runs(*file) : built_in_serving_runs();
        DecodeStepReport report;
        std::vector<ErrorStats> held_out;
        {
          py::gil_scoped_release release;
          report = validate_decode_steps(runs, registry(), {}, engine, nullptr, prefill_share);
          if (leave_one_out) held_out = leave_one_device_out(runs, registry(), prefill_share);
        }
        return to_py(decode_steps_document(report, prefill_share, held_out, registry()));
      },
      py::kw_only(), py::arg("file") = py::none(), py::arg("engine") = "case",
      py::arg("prefill_share") = false, py::arg("leave_one_out") = false,
      "Decode steps against measured serving TPOT (roofline validate --decode-steps "
      "[--serving-file FILE] --json)");

  const QuantizeOptions q;
  m.def(
      "quantize",
      [](const std::string& checkpoint, double budget_sqnr_db) {
        QuantizeOptions o;
        o.budget_sqnr_db = budget_sqnr_db;
        std::vector<TensorReport> reports;
        {
          py::gil_scoped_release release;
          reports = quantize_checkpoint(checkpoint, o);
        }
        return to_py(quantize_document(checkpoint, o.budget_sqnr_db, reports));
      },
      py::arg("checkpoint"), py::arg("budget_sqnr_db") = q.budget_sqnr_db,
      "Per-tensor statistics, outliers, error per format and a plan for a .safetensors file "
      "(roofline quantize --json)");
}

}  // namespace roofline::python
