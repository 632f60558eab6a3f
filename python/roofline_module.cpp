// The `roofline._roofline` extension: thin pybind11 wrappers over the C++
// library. Every function returns the same JSON documents the CLI prints,
// as Python objects; errors become the library's exception types.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/numerics.h"
#include "roofline/predict.h"
#include "roofline/quantize.h"
#include "roofline/recommend.h"
#include "roofline/report.h"
#include "roofline/request.h"
#include "roofline/sweep.h"
#if defined(ROOFLINE_HAVE_CUDA)
#include "gpu_bench.h"
#endif

namespace py = pybind11;
using namespace roofline;

namespace {

// json.loads, kept for the life of the process (never destroyed: destroying a
// Python object after the interpreter finalizes would crash at exit).
py::object& json_loads() {
  static auto* loads = new py::object(py::module_::import("json").attr("loads"));
  return *loads;
}

py::object to_py(const nlohmann::json& j) { return json_loads()(j.dump()); }

const Registry& registry() {
  static const Registry r = Registry::load({});
  return r;
}

// A model given as a preset id or path (str) or as a dict (short form or config.json).
ModelSpec model_of(const py::object& model) {
  if (py::isinstance<py::str>(model)) return load_model(model.cast<std::string>());
  if (py::isinstance<py::dict>(model)) {
    const std::string text = py::module_::import("json").attr("dumps")(model).cast<std::string>();
    return model_from_json(text, "model_config");
  }
  throw InvalidArgument("model must be a preset id, a path, or a dict (short form or config.json)");
}

ScenarioRequest request_of(const std::string& phase, std::int64_t batch, std::int64_t seq_len,
                           const std::optional<std::string>& weights,
                           const std::optional<std::string>& experts, const std::string& act,
                           const std::optional<std::string>& kv,
                           const std::optional<std::string>& strategy,
                           const std::optional<std::string>& attention, double block_sparsity,
                           std::int64_t tp, std::int64_t pp) {
  ScenarioRequest r;
  r.phase = phase;
  r.batch = batch;
  r.seq_len = seq_len;
  r.weights = weights.value_or("");
  r.experts = experts.value_or("");
  r.act = act;
  r.kv = kv.value_or("");
  r.strategy = strategy.value_or("");
  r.attention = attention.value_or("");
  r.block_sparsity = block_sparsity;
  r.tp = tp;
  r.pp = pp;
  return r;
}

ModelOptions options_of(bool ideal, const std::string& engine = "roofline") {
  ModelOptions o;
  o.mode = ideal ? Mode::kIdeal : Mode::kRealistic;
  o.engine = &EngineRegistry::built_in().get(engine);  // tables resolved per device
  return o;
}

std::vector<float> floats_of(const py::array_t<float, py::array::c_style | py::array::forcecast>& a,
                             std::size_t* rows, std::size_t* cols) {
  if (a.ndim() == 1) {
    *rows = 1;
    *cols = static_cast<std::size_t>(a.shape(0));
  } else if (a.ndim() == 2) {
    *rows = static_cast<std::size_t>(a.shape(0));
    *cols = static_cast<std::size_t>(a.shape(1));
  } else {
    throw InvalidArgument("expected a 1-D or 2-D array");
  }
  return std::vector<float>(a.data(), a.data() + a.size());
}

}  // namespace

PYBIND11_MODULE(_roofline, m) {
  m.doc() = "C++ core of the roofline toolkit";
  // Every error is a RooflineError, and also the built-in exception Python code
  // would catch for it (ValueError for bad input, LookupError for unknown ids).
  static py::exception<Error> base(m, "RooflineError", PyExc_RuntimeError);
  auto also = [](PyObject* builtin) {
    return py::make_tuple(py::handle(base.ptr()), py::handle(builtin));
  };
  static py::exception<InvalidArgument> invalid(m, "InvalidArgument", also(PyExc_ValueError));
  static py::exception<NotFound> not_found(m, "NotFound", also(PyExc_LookupError));
  static py::exception<Unsupported> unsupported(m, "Unsupported", base.ptr());
  static py::exception<ParseError> parse(m, "ParseError", also(PyExc_ValueError));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidArgument& e) {
      invalid(e.what());
    } catch (const NotFound& e) {
      not_found(e.what());
    } catch (const Unsupported& e) {
      unsupported(e.what());
    } catch (const ParseError& e) {
      parse(e.what());
    } catch (const Error& e) {
      base(e.what());
    }
  });

  m.def("version", [] { return std::string(version()); });
  m.def(
      "cuda_available",
      [] {
#if defined(ROOFLINE_HAVE_CUDA)
        try {
          (void)cuda::device_info();
          return true;
        } catch (const Error&) {
          return false;
        }
#else
        return false;
#endif
      },
      "True when this build has the CUDA backend and a GPU is present");
  m.def("cuda_status", []() -> std::string {
#if defined(ROOFLINE_HAVE_CUDA)
    try {
      return "CUDA device: " + cuda::device_info().name;
    } catch (const Error& e) {
      return e.what();
    }
#else
    return "no CUDA device: this build of roofline has no CUDA benchmark backend (it is built where nvcc "
           "is found and runs where a GPU is present)";
#endif
  });
#if defined(ROOFLINE_HAVE_CUDA)
  m.def(
      "gpu_gemm",
      [](std::int64_t mm, std::int64_t n, std::int64_t k, const std::string& precision) {
        const cuda::GemmResult r = cuda::gemm(mm, n, k, precision);
        py::dict d;
        d["measured_time_us"] = r.median_time_s * 1e6;
        d["measured_bandwidth_gb_s"] = r.bandwidth_Bps / 1e9;
        d["measured_tflops"] = r.flops_per_s / 1e12;
        d["max_rel_error"] = r.max_rel_error;
        d["verified"] = r.verified;
        d["repetitions"] = r.repetitions;
        return d;
      },
      py::arg("m"), py::arg("n"), py::arg("k"), py::arg("precision"));
#endif

  m.def(
      "hardware", [](const std::string& id) { return to_py(to_json(registry().get(id))); },
      py::arg("id"));
  m.def("hardware_ids", [] {
    std::vector<std::string> ids;
    for (const auto& d : registry().devices()) ids.push_back(d.id);
    return ids;
  });
  m.def("formats", [] {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : all_formats()) list.push_back(to_json(f));
    return to_py(list);
  });
  m.def("models", [] {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : ModelCatalog::built_in().presets())
      list.push_back(to_json(preset_model(p)));
    return to_py(list);
  });
  m.def(
      "model", [](const py::object& model) { return to_py(to_json(model_of(model))); },
      py::arg("model"));

  m.def(
      "gemm",
      [](const std::string& hardware, std::int64_t mm, std::int64_t n, std::int64_t k,
         const std::string& weights, const std::string& act, bool ideal) {
        const Device& d = registry().get(hardware);
        GemmProblem p{mm, n, k, parse_format(weights), parse_format(act)};
        nlohmann::json j = to_json(d, p, predict_gemm(d, p, options_of(ideal)));
        j.update(stamp(registry()));
        return to_py(j);
      },
      py::arg("hardware"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("weights") = "fp16",
      py::arg("act") = "fp16", py::arg("ideal") = false);

  m.def(
      "predict",
      [](const py::object& model, const std::string& hardware, const std::string& phase,
         std::int64_t batch, std::int64_t seq_len, const std::optional<std::string>& weights,
         const std::optional<std::string>& experts, const std::string& act,
         const std::optional<std::string>& kv, const std::optional<std::string>& strategy,
         const std::optional<std::string>& attention, double block_sparsity, std::int64_t tp,
         std::int64_t pp, bool ideal, bool per_op, const std::string& engine) {
        const ModelSpec ms = model_of(model);
        const Device& d = registry().get(hardware);
        std::vector<std::string> notes;
        const Scenario s =
            build_scenario(request_of(phase, batch, seq_len, weights, experts, act, kv, strategy,
                                      attention, block_sparsity, tp, pp),
                           ms, &d, &notes);
        const Prediction p = predict(ms, d, s, options_of(ideal, engine));
        return to_py(
            predict_document(ms, d, s, p, per_op, notes, strategy.value_or(""), registry()));
      },
      py::arg("model"), py::arg("hardware"), py::arg("phase") = "decode", py::arg("batch") = 1,
      py::arg("seq_len") = 4096, py::arg("weights") = py::none(), py::arg("experts") = py::none(),
      py::arg("act") = "bf16", py::arg("kv") = py::none(), py::arg("strategy") = py::none(),
      py::arg("attention") = py::none(), py::arg("block_sparsity") = 1.0, py::arg("tp") = 1,
      py::arg("pp") = 1, py::arg("ideal") = false, py::arg("per_op") = false,
      py::arg("engine") = "roofline");

  m.def(
      "generate",
      [](const py::object& model, const std::string& hardware, std::int64_t prompt,
         std::int64_t gen, std::int64_t batch, const std::optional<std::string>& weights,
         const std::string& act, const std::optional<std::string>& kv,
         const std::optional<std::string>& strategy, std::int64_t tp, bool ideal,
         const std::string& engine) {
        const ModelSpec ms = model_of(model);
        const Device& d = registry().get(hardware);
        const Scenario s = build_scenario(request_of("decode", batch, 1, weights, std::nullopt, act,
                                                     kv, strategy, std::nullopt, 1.0, tp, 1),
                                          ms, &d);
        const GenerateResult g = generate(ms, d, s, prompt, gen, options_of(ideal, engine));
        return to_py(
            generate_document(ms, d, s, g, prompt, gen, options_of(ideal).mode, registry()));
      },
      py::arg("model"), py::arg("hardware"), py::arg("prompt") = 512, py::arg("gen") = 128,
      py::arg("batch") = 1, py::arg("weights") = py::none(), py::arg("act") = "bf16",
      py::arg("kv") = py::none(), py::arg("strategy") = py::none(), py::arg("tp") = 1,
      py::arg("ideal") = false, py::arg("engine") = "roofline");

  m.def(
      "recommend",
      [](const py::object& model, const std::string& hardware, const std::string& phase,
         std::int64_t seq_len, std::int64_t batch, double max_quality_loss,
         std::optional<double> memory_limit, std::optional<double> latency_target, bool ideal,
         const std::string& engine) {
        const ModelSpec ms = model_of(model);
        const Device& d = registry().get(hardware);
        RecommendOptions o;
        o.phase = parse_phase(phase);
        o.seq_len = seq_len;
        o.batch = batch;
        o.max_quality_loss_pct = max_quality_loss;
        o.memory_limit_bytes = memory_limit;
        o.latency_target_s = latency_target;
        o.model_options = options_of(ideal, engine);
        nlohmann::json j = to_json(recommend(ms, d, o));
        j.update(stamp(registry()));
        return to_py(j);
      },
      py::arg("model"), py::arg("hardware"), py::arg("phase") = "decode", py::arg("seq_len") = 4096,
      py::arg("batch") = 1, py::arg("max_quality_loss") = 3.0, py::arg("memory_limit") = py::none(),
      py::arg("latency_target") = py::none(), py::arg("ideal") = false,
      py::arg("engine") = "roofline");

  m.def(
      "sweep",
      [](const std::vector<std::string>& models, const std::vector<std::string>& hardware,
         const std::vector<std::string>& phases, const std::vector<std::int64_t>& batches,
         const std::vector<std::int64_t>& seq_lens, const std::vector<std::string>& weights,
         const std::vector<std::string>& acts, const std::vector<std::string>& strategies,
         bool ideal, const std::string& engine) {
        SweepSpec spec;
        for (const auto& x : strategies) spec.strategies.push_back(load_strategy(x));
        for (const auto& x : models) spec.models.push_back(load_model(x));
        for (const auto& x : hardware) spec.devices.push_back(&registry().get(x));
        spec.phases.clear();
        for (const auto& x : phases) spec.phases.push_back(parse_phase(x));
        spec.batches = batches;
        spec.seq_lens = seq_lens;
        spec.weights.clear();
        for (const auto& x : weights)
          spec.weights.push_back(x == "native" ? std::nullopt
                                               : std::optional<Format>(parse_format(x)));
        spec.acts.clear();
        for (const auto& x : acts) spec.acts.push_back(parse_format(x));
        spec.options = options_of(ideal, engine);
        for (auto b : batches)
          if (b < 1 || b > kMaxBatch) throw InvalidArgument("batch out of range");
        for (auto s : seq_lens)
          if (s < 1 || s > kMaxSeqLen) throw InvalidArgument("seq_len out of range");
        if (sweep_rows(spec, 1'000'000) == 0) return py::list();
        std::string out;
        {
          py::gil_scoped_release release;
          run_sweep(spec, SweepFormat::kJson, [&](std::string_view chunk) { out.append(chunk); });
        }
        return py::list(json_loads()(out));
      },
      py::arg("models"), py::arg("hardware"),
      py::arg("phases") = std::vector<std::string>{"decode"},
      py::arg("batches") = std::vector<std::int64_t>{1},
      py::arg("seq_lens") = std::vector<std::int64_t>{4096},
      py::arg("weights") = std::vector<std::string>{"native"},
      py::arg("acts") = std::vector<std::string>{"bf16"},
      py::arg("strategies") = std::vector<std::string>{}, py::arg("ideal") = false,
      py::arg("engine") = "roofline");

  // GEMM-shape sweeps: the rows of `roofline sweep gemm --format json`.
  m.def(
      "sweep_gemm",
      [](const std::vector<std::int64_t>& ms, const std::vector<std::int64_t>& ns,
         const std::vector<std::int64_t>& ks, const std::vector<std::string>& weights,
         const std::vector<std::string>& acts, const std::vector<std::string>& hardware,
         bool ideal) {
        GemmSweepSpec spec;
        for (const auto& x : hardware) spec.devices.push_back(&registry().get(x));
        spec.ms = ms;
        spec.ns = ns;
        spec.ks = ks;
        spec.weights.clear();
        for (const auto& x : weights) spec.weights.push_back(parse_format(x));
        spec.acts.clear();
        for (const auto& x : acts) spec.acts.push_back(parse_format(x));
        spec.options.mode = ideal ? Mode::kIdeal : Mode::kRealistic;
        (void)sweep_rows(spec, 1'000'000);  // the checks and the cap, before any work
        std::string out;
        {
          py::gil_scoped_release release;
          run_sweep(spec, SweepFormat::kJson, [&](std::string_view chunk) { out.append(chunk); });
        }
        return py::list(json_loads()(out));
      },
      py::arg("m"), py::arg("n"), py::arg("k"),
      py::arg("weights") = std::vector<std::string>{"fp16"},
      py::arg("acts") = std::vector<std::string>{"fp16"},
      py::arg("hardware") = std::vector<std::string>{"gb10"}, py::arg("ideal") = false);

  m.def(
      "canonical_format",
      [](const std::string& name) { return std::string(format_id(parse_format(name))); },
      "The format id a name means (\"FP8 E4M3\" -> \"fp8\"); raises for unknown names");

  m.def(
      "engines",
      [] {
        nlohmann::json all = nlohmann::json::array();
        for (const auto& e : EngineRegistry::built_in().engines()) all.push_back(to_json(e));
        return to_py(all);
      },
      "The serving engines, each with its sourced figures (roofline engines --json)");

  m.def(
      "quantize_checkpoint",
      [](const std::string& path, double budget) {
        QuantizeOptions o;
        o.budget_sqnr_db = budget;
        std::vector<TensorReport> reports;
        {
          py::gil_scoped_release release;
          reports = quantize_checkpoint(path, o);
        }
        nlohmann::json list = nlohmann::json::array();
        for (const auto& t : reports) {
          nlohmann::json j = {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
          if (!t.skipped.empty()) {
            j["skipped"] = t.skipped;
          } else {
            nlohmann::json errors = nlohmann::json::array();
            for (const auto& e : t.errors) {
              errors.push_back({{"format", format_id(e.format)},
                                {"bits_per_element", e.bits_per_element},
                                {"outliers_kept", e.outliers_kept},
                                {"sqnr_db", e.error.sqnr_db},
                                {"mse", e.error.mse},
                                {"max_abs_error", e.error.max_abs},
                                {"cosine", e.error.cosine}});
            }
            j.update({{"max_abs", t.max_abs},
                      {"rms", t.rms},
                      {"kurtosis", t.kurtosis},
                      {"outlier_channels", t.outlier_channels},
                      {"outlier_channel_count", t.outlier_channel_count},
                      {"errors", errors},
                      {"plan", format_id(t.plan.format)},
                      {"plan_outliers_kept", t.plan.outliers_kept},
                      {"plan_bits_per_element", t.plan.bits_per_element},
                      {"plan_sqnr_db", t.plan.error.sqnr_db},
                      {"meets_budget", t.meets_budget},
                      {"needs_per_token_scales", t.needs_per_token_scales}});
          }
          list.push_back(j);
        }
        return to_py(list);
      },
      py::arg("checkpoint"), py::arg("budget_sqnr_db") = 25.0);

  m.def(
      "quantize_array",
      [](const py::array_t<float, py::array::c_style | py::array::forcecast>& a,
         const std::string& format) {
        std::size_t rows = 0, cols = 0;
        const std::vector<float> in = floats_of(a, &rows, &cols);
        std::vector<float> out(in.size());
        numerics::round_trip(parse_format(format), in, rows, cols, out);
        const numerics::ErrorMetrics e = numerics::compare(in, out);
        py::array_t<float> result(a.ndim() == 1
                                      ? std::vector<py::ssize_t>{static_cast<py::ssize_t>(cols)}
                                      : std::vector<py::ssize_t>{static_cast<py::ssize_t>(rows),
                                                                 static_cast<py::ssize_t>(cols)});
        std::copy(out.begin(), out.end(), result.mutable_data());
        py::dict metrics;
        metrics["mse"] = e.mse;
        metrics["sqnr_db"] = e.sqnr_db;
        metrics["max_abs_error"] = e.max_abs;
        metrics["cosine"] = e.cosine;
        return py::make_tuple(result, metrics);
      },
      py::arg("array"), py::arg("format"),
      "Quantize and dequantize an array; returns (array, error metrics)");

  m.def(
      "analyze_array",
      [](const py::array_t<float, py::array::c_style | py::array::forcecast>& a, double budget) {
        std::size_t rows = 0, cols = 0;
        const std::vector<float> in = floats_of(a, &rows, &cols);
        QuantizeOptions o;
        o.budget_sqnr_db = budget;
        const TensorReport t = analyze_tensor("array", in, static_cast<std::int64_t>(rows),
                                              static_cast<std::int64_t>(cols), o);
        py::dict d;
        d["max_abs"] = t.max_abs;
        d["rms"] = t.rms;
        d["kurtosis"] = t.kurtosis;
        d["outlier_channels"] = t.outlier_channels;
        d["outlier_tokens"] = t.outlier_tokens;
        d["outlier_channel_count"] = t.outlier_channel_count;
        d["outlier_token_count"] = t.outlier_token_count;
        d["plan"] = std::string(format_id(t.plan.format));
        d["plan_outliers_kept"] = t.plan.outliers_kept;
        d["plan_bits_per_element"] = t.plan.bits_per_element;
        d["plan_sqnr_db"] = t.plan.error.sqnr_db;
        d["meets_budget"] = t.meets_budget;
        d["needs_per_token_scales"] = t.needs_per_token_scales;
        return d;
      },
      py::arg("array"), py::arg("budget_sqnr_db") = 25.0);
}
