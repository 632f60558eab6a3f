// The `roofline._roofline` extension: thin pybind11 wrappers over the C++
// library. Every function returns what the CLI prints with --json, as Python
// objects built directly (no JSON text): predict() and generate() as result
// objects with the document's fields (results.cpp), the other commands as
// dicts (documents.cpp), a sweep as NumPy columns (sweep_columns.cpp). Errors
// become the library's exception types.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "roofline/error.h"
#include "roofline/numerics.h"
#include "roofline/quantize.h"
#include "roofline/report.h"
#include "roofline/sweep.h"
#if defined(ROOFLINE_HAVE_CUDA)
#include "gpu_bench.h"
#endif

namespace py = pybind11;
using namespace roofline;
using roofline::python::to_py;

namespace {

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

  // GEMM-shape sweeps: the rows of `roofline sweep gemm --format json`.
  m.def(
      "sweep_gemm",
      [](const std::vector<std::int64_t>& ms, const std::vector<std::int64_t>& ns,
         const std::vector<std::int64_t>& ks, const std::vector<std::string>& weights,
         const std::vector<std::string>& acts, const std::vector<py::object>& hardware,
         bool ideal) {
        GemmSweepSpec spec;
        for (const auto& x : hardware) spec.devices.push_back(&roofline::python::device_of(x));
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
        return to_py(nlohmann::json::parse(out));
      },
      py::arg("m"), py::arg("n"), py::arg("k"),
      py::arg("weights") = std::vector<std::string>{"fp16"},
      py::arg("acts") = std::vector<std::string>{"fp16"},
      py::arg("hardware") = std::vector<std::string>{"gb10"}, py::arg("ideal") = false);

  roofline::python::bind_results(m);
  roofline::python::bind_documents(m);
  roofline::python::bind_sweep(m);
}
