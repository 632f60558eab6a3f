// sweep_columns(): a sweep as NumPy columns, filled in place by the sweep's
// threads with the GIL released (no text, no per-row Python objects). Text
// columns come back as integer codes into a list of categories, which the
// Python side turns into pandas Categoricals or object arrays.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings.h"
#include "roofline/error.h"
#include "roofline/sweep.h"

namespace roofline::python {
namespace {

using Code = std::int32_t;  // -1: missing (None)

// A text column: a code per row into `names`.
struct Categorical {
  std::string column;
  std::vector<std::string> names;
  py::array_t<Code> codes;
  Code* data = nullptr;
};

// Codes for a list whose entries may repeat ("h100" and "h100-sxm" are one device).
std::vector<Code> dedup(const std::vector<std::string>& entries, std::vector<std::string>* names) {
  std::vector<Code> codes;
  for (const auto& e : entries) {
    Code c = 0;
    while (c < static_cast<Code>(names->size()) && (*names)[static_cast<std::size_t>(c)] != e) ++c;
    if (c == static_cast<Code>(names->size())) names->push_back(e);
    codes.push_back(c);
  }
  return codes;
}

// Keeps the categories some row uses, in their order, and renumbers the codes.
void compact(Categorical* c, std::size_t rows) {
  std::vector<char> used(c->names.size(), 0);
  for (std::size_t i = 0; i < rows; ++i) {
    if (c->data[i] >= 0) used[static_cast<std::size_t>(c->data[i])] = 1;
  }
  std::vector<Code> remap(c->names.size(), -1);
  std::vector<std::string> kept;
  for (std::size_t k = 0; k < c->names.size(); ++k) {
    if (!used[k]) continue;
    remap[k] = static_cast<Code>(kept.size());
    kept.push_back(std::move(c->names[k]));
  }
  c->names = std::move(kept);
  for (std::size_t i = 0; i < rows; ++i) {
    if (c->data[i] >= 0) c->data[i] = remap[static_cast<std::size_t>(c->data[i])];
  }
}

template <typename T>
std::vector<T> checked(const std::vector<T>& values, const char* name, T lo, T hi) {
  if (values.empty()) throw InvalidArgument(std::string(name) + ": give at least one value");
  for (T v : values) {
    if (v < lo || v > hi) {
      throw InvalidArgument(std::string(name) + ": " + std::to_string(v) +
                            " must be a whole number from " + std::to_string(lo) + " to " +
                            std::to_string(hi));
    }
  }
  return values;
}

}  // namespace

void bind_sweep(py::module_& m) {
  const SweepSpec d;  // the defaults, as the CLI's flags have them
  std::vector<std::string> default_phases, default_weights, default_acts;
  for (Phase p : d.phases) default_phases.emplace_back(phase_name(p));
  for (const auto& w : d.weights) default_weights.emplace_back(w ? format_id(*w) : "native");
  for (const auto& a : d.acts) default_acts.emplace_back(a ? format_id(*a) : "engine");
  m.def(
      "sweep_columns",
      [](const std::vector<py::object>& models, const std::vector<py::object>& hardware,
         const std::vector<std::string>& phases, const std::vector<std::int64_t>& batches,
         const std::vector<std::int64_t>& seq_lens, const std::vector<std::string>& weights,
         const std::vector<std::string>& acts, const std::optional<std::vector<std::string>>& kvs,
         const std::optional<std::vector<std::string>>& attentions,
         const std::vector<std::int64_t>& tps, const std::vector<std::string>& strategies,
         bool ideal, const std::string& engine, const std::optional<std::string>& engine_build,
         const std::string& cuda_graphs, const std::optional<std::string>& moe_kernel,
         const std::optional<std::string>& engine_version, unsigned threads,
         std::uint64_t max_rows) {
        SweepSpec spec;
        std::vector<std::string> model_ids, device_ids, strategy_names;
        for (const auto& x : models) {
          spec.models.push_back(*model_of(x));
          model_ids.push_back(spec.models.back().id);
        }
        for (const auto& x : hardware) {
          spec.devices.push_back(&device_of(x));
          device_ids.push_back(spec.devices.back()->id);
        }
        spec.phases.clear();
        for (const auto& x : phases) spec.phases.push_back(parse_phase(x));
        spec.batches = checked<std::int64_t>(batches, "batches", 1, kMaxBatch);
        spec.seq_lens = checked<std::int64_t>(seq_lens, "seq_lens", 1, kMaxSeqLen);
        spec.tps = checked<std::int64_t>(tps, "tps", 1, kMaxParallel);
        spec.weights.clear();
        for (const auto& x : weights)
          spec.weights.push_back(x == "native" ? std::nullopt
                                               : std::optional<Format>(parse_format(x)));
        spec.acts.clear();
        for (const auto& x : acts) spec.acts.push_back(parse_sweep_act(x));
        if (kvs) {
          spec.kvs.clear();
          for (const auto& x : *kvs) spec.kvs.push_back(parse_format(x));
        }
        if (attentions) {
          spec.attentions.clear();
          for (const auto& x : *attentions) {
            spec.attentions.push_back(
                x == "auto" ? std::nullopt
                            : std::optional<AttentionKernel>(parse_attention_kernel(x)));
          }
        }
        if (!strategies.empty()) {
          const SweepSpec defaults;
          if (weights.size() != 1 || weights[0] != "native" || spec.acts != defaults.acts || kvs) {
            throw InvalidArgument(
                "strategies set the formats; do not combine them with weights, acts or kvs");
          }
          for (const auto& x : strategies) {
            spec.strategies.push_back(load_strategy(x));
            strategy_names.push_back(spec.strategies.back().name);
          }
        } else {
          strategy_names.push_back("");  // as the CSV's strategy column: empty
        }
        spec.options = options_of(ideal, engine, engine_build, cuda_graphs, moe_kernel);
        if (engine_version) {
          check_engine_version(*engine_version, "engine_version");
          spec.engine_version = *engine_version;
        }
        const std::uint64_t rows = sweep_rows(spec, max_rows);
        const auto n = static_cast<py::ssize_t>(rows);

        // Text columns, with every category a row can take.
        auto categorical = [n](const char* column, std::vector<std::string> names) {
          Categorical c{column, std::move(names), py::array_t<Code>(n)};
          c.data = c.codes.mutable_data();
          return c;
        };
        std::vector<std::string> model_names, device_names, strategy_categories;
        const std::vector<Code> model_code = dedup(model_ids, &model_names);
        const std::vector<Code> device_code = dedup(device_ids, &device_names);
        const std::vector<Code> strategy_code = dedup(strategy_names, &strategy_categories);
        std::vector<std::string> format_names, weight_names = {"native"},
                                               attention_names = {"auto"};
        for (const auto& f : all_formats()) {
          format_names.emplace_back(f.id);
          weight_names.emplace_back(f.id);
        }
        for (int k = 0; k < kAttentionKernelCount; ++k)
          attention_names.emplace_back(attention_kernel_id(static_cast<AttentionKernel>(k)));
        enum Text {
          kModel,
          kHardware,
          kPhase,
          kWeights,
          kAct,
          kKv,
          kAttention,
          kStrategy,
          kBound,
          kError,
          kTextColumns
        };
        std::vector<Categorical> text;
        text.push_back(categorical("model", model_names));
        text.push_back(categorical("hardware", device_names));
        text.push_back(categorical("phase", {std::string(phase_name(Phase::kPrefill)),
                                             std::string(phase_name(Phase::kDecode))}));
        text.push_back(categorical("weights", weight_names));
        text.push_back(categorical("act", format_names));
        text.push_back(categorical("kv", format_names));
        text.push_back(categorical("attention", attention_names));
        text.push_back(categorical("strategy", strategy_categories));
        text.push_back(categorical("bound", {std::string(bound_name(Bound::kMemory)),
                                             std::string(bound_name(Bound::kCompute))}));
        text.push_back(categorical("error", {}));

        // Number columns.
        py::array_t<std::int64_t> batch(n), seq_len(n), tp(n);
        enum Number { kTime, kTokens, kFlops, kBytes, kWeightBytes, kKvBytes, kMemory, kNumbers };
        const char* number_names[] = {
            "time_s",         "tokens_per_s",      "flops", "bytes", "weight_bytes",
            "kv_cache_bytes", "memory_total_bytes"};
        std::vector<py::array_t<double>> numbers;
        std::vector<double*> number_data;
        for (int k = 0; k < kNumbers; ++k) {
          numbers.emplace_back(n);
          number_data.push_back(numbers.back().mutable_data());
        }
        py::array_t<bool> fits(n);
        std::int64_t* batch_data = batch.mutable_data();
        std::int64_t* seq_data = seq_len.mutable_data();
        std::int64_t* tp_data = tp.mutable_data();
        bool* fits_data = fits.mutable_data();

        std::mutex errors_mutex;
        std::unordered_map<std::string, Code> error_codes;
        std::vector<std::string>& error_names = text[kError].names;
        {
          py::gil_scoped_release release;
          visit_sweep(
              spec,
              [&](std::uint64_t i, const SweepPoint& pt, const Prediction* p,
                  std::string_view error) {
                const Scenario& sc = pt.scenario;
                text[kModel].data[i] = model_code[pt.model];
                text[kHardware].data[i] = device_code[pt.device];
                text[kPhase].data[i] = static_cast<Code>(sc.phase);
                text[kWeights].data[i] =
                    sc.precision.weights ? 1 + format_index(*sc.precision.weights) : 0;
                text[kAct].data[i] = format_index(sc.precision.act);
                text[kKv].data[i] = format_index(sc.precision.kv);
                text[kAttention].data[i] = sc.attention ? 1 + static_cast<Code>(*sc.attention) : 0;
                text[kStrategy].data[i] = strategy_code[pt.strategy];
                batch_data[i] = sc.batch;
                seq_data[i] = sc.seq_len;
                tp_data[i] = sc.tp;
                if (p) {
                  text[kBound].data[i] = static_cast<Code>(p->bound);
                  text[kError].data[i] = -1;
                  const double values[] = {
                      p->time_s,   p->tokens_per_s,      p->flops, p->bytes, p->weight_bytes,
                      p->kv_bytes, p->memory.total_bytes};
                  for (int k = 0; k < kNumbers; ++k)
                    number_data[static_cast<std::size_t>(k)][i] = values[k];
                  fits_data[i] = p->memory.fits;
                  return;
                }
                text[kBound].data[i] = -1;
                for (int k = 0; k < kNumbers; ++k)
                  number_data[static_cast<std::size_t>(k)][i] = std::nan("");
                fits_data[i] = false;
                const std::lock_guard<std::mutex> lock(errors_mutex);
                auto [it, added] = error_codes.try_emplace(std::string(error),
                                                           static_cast<Code>(error_names.size()));
                if (added) error_names.emplace_back(error);
                text[kError].data[i] = it->second;
              },
              threads, max_rows);
          for (auto& c : text) compact(&c, rows);
        }

        py::dict columns, categories;
        auto put_text = [&](Text k) {
          columns[text[k].column.c_str()] = text[k].codes;
          categories[text[k].column.c_str()] = text[k].names;
        };
        for (Text k : {kModel, kHardware, kPhase}) put_text(k);
        columns["batch"] = batch;
        columns["seq_len"] = seq_len;
        for (Text k : {kWeights, kAct, kKv, kAttention}) put_text(k);
        columns["tp"] = tp;
        put_text(kStrategy);
        columns[number_names[kTime]] = numbers[kTime];
        columns[number_names[kTokens]] = numbers[kTokens];
        put_text(kBound);
        for (int k = kFlops; k < kNumbers; ++k) columns[number_names[k]] = numbers[k];
        columns["fits"] = fits;
        put_text(kError);
        py::dict out;
        out["rows"] = rows;
        out["columns"] = columns;
        out["categories"] = categories;
        return out;
      },
      py::arg("models"), py::arg("hardware"), py::kw_only(), py::arg("phases") = default_phases,
      py::arg("batches") = d.batches, py::arg("seq_lens") = d.seq_lens,
      py::arg("weights") = default_weights, py::arg("acts") = default_acts,
      py::arg("kvs") = py::none(), py::arg("attentions") = py::none(), py::arg("tps") = d.tps,
      py::arg("strategies") = std::vector<std::string>{}, py::arg("ideal") = false,
      py::arg("engine") = "roofline", py::arg("engine_build") = py::none(),
      py::arg("cuda_graphs") = "engine", py::arg("moe_kernel") = py::none(),
      py::arg("engine_version") = py::none(), py::arg("threads") = 0u,
      py::arg("max_rows") = kMaxSweepRows,
      R"(Every combination of the lists (the last varies fastest), one row each, as
columns: {"rows": N, "columns": {name: array}, "categories": {name: [str]}}, the
columns in the order of `roofline sweep`'s CSV; text columns are int32 codes
into their categories (-1: none). roofline.sweep() wraps it.)");
}

}  // namespace roofline::python
