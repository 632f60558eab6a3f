// Shared by the translation units of the `roofline._roofline` extension:
// JSON documents as Python objects, and the arguments every function takes
// (model, hardware, engine) resolved once and cached where they are built in.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "roofline/engine.h"
#include "roofline/hardware.h"
#include "roofline/model.h"
#include "roofline/request.h"

namespace roofline::python {

namespace py = pybind11;

// A JSON value as the Python object json.loads would give for its text
// (dict, list, str, int, float, bool, None), built directly: non-finite
// numbers become None as in the text, invalid UTF-8 is replaced.
[[nodiscard]] py::object to_py(const nlohmann::json& j);

// The built-in devices, loaded once.
[[nodiscard]] const Registry& registry();

// A model: a preset id or alias (parsed once, then cached), a path (str or
// os.PathLike, read on every call: the file may change), or a dict (the
// original short form or a config.json). Throws InvalidArgument otherwise.
[[nodiscard]] std::shared_ptr<const ModelSpec> model_of(const py::handle& model);

// The preset a str names, else null (dicts and paths have none).
[[nodiscard]] const ModelPreset* preset_of(const py::handle& model);

// A device: an id or alias (cached), or an object with an `id` (Hardware).
[[nodiscard]] const Device& device_of(const py::handle& hardware);

// Realistic or ideal mode with a serving engine (its tables resolved per device).
// `engine_build`: the engine build's date (parse_build_date), or the current build;
// `cuda_graphs`: a graph policy (parse_graph_policy), "engine" its defaults;
// `moe_kernel`: a MoE kernel family (parse_moe_kernel), checked against
// `device` when given (check_moe_kernel), or the engine's measured blend.
[[nodiscard]] ModelOptions options_of(bool ideal, const std::string& engine,
                                      const std::optional<std::string>& engine_build = {},
                                      const std::string& cuda_graphs = "engine",
                                      const std::optional<std::string>& moe_kernel = {},
                                      const Device* device = nullptr);
// `o` with what the engine's release `version` runs differently on `device`
// at tensor-parallel size `tp` (none: unchanged); a malformed release is an
// InvalidArgument naming engine_version.
[[nodiscard]] ModelOptions with_release(ModelOptions o, const std::optional<std::string>& version,
                                        const Device& device, std::int64_t tp);

// The scenario flags as Python passes them (None: the CLI's empty default).
[[nodiscard]] ScenarioRequest request_of(
    std::string phase, std::int64_t batch, std::int64_t seq_len, std::optional<std::string> weights,
    std::optional<std::string> experts, std::optional<std::string> act,
    std::optional<std::string> kv, std::optional<std::string> strategy,
    std::optional<std::string> attention, double block_sparsity, std::int64_t tp, std::int64_t pp);

// Each part of the module.
void bind_results(py::module_& m);    // Prediction, Generation: predict(), generate()
void bind_documents(py::module_& m);  // the other commands' --json documents
void bind_sweep(py::module_& m);      // sweep_columns()

}  // namespace roofline::python
