#include <cmath>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "bindings.h"
#include "roofline/error.h"

namespace roofline::python {
namespace {

// Caches keyed by the text a caller passed; bounded, since any number of
// spellings ("H100", "h100 ") may reach them.
constexpr std::size_t kMaxCached = 256;

// Lookups by string_view without building a std::string.
struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};
template <typename V>
using TextMap = std::unordered_map<std::string, V, TextHash, std::equal_to<>>;

py::str text(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

std::string_view utf8_of(const py::handle& s) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(s.ptr(), &size);
  if (!data) throw py::error_already_set();
  return {data, static_cast<std::size_t>(size)};
}

}  // namespace

py::object to_py(const nlohmann::json& j) {
  using T = nlohmann::json::value_t;
  switch (j.type()) {
    case T::object: {
      py::dict d;
      for (const auto& [key, value] : j.items()) d[text(key)] = to_py(value);
      return std::move(d);
    }
    case T::array: {
      py::list l(j.size());
      std::size_t i = 0;
      for (const auto& value : j) l[i++] = to_py(value);
      return std::move(l);
    }
    case T::string:
      return text(j.get_ref<const std::string&>());
    case T::boolean:
      return py::bool_(j.get<bool>());
    case T::number_integer:
      return py::int_(j.get<std::int64_t>());
    case T::number_unsigned:
      return py::int_(j.get<std::uint64_t>());
    case T::number_float: {
      const double v = j.get<double>();
      if (!std::isfinite(v)) return py::none();  // as nlohmann writes it: null
      return py::float_(v);
    }
    default:
      return py::none();
  }
}

const Registry& registry() {
  static const Registry r = Registry::load({});
  return r;
}

const ModelPreset* preset_of(const py::handle& model) {
  if (!py::isinstance<py::str>(model)) return nullptr;
  return ModelCatalog::built_in().find(utf8_of(model));
}

std::shared_ptr<const ModelSpec> model_of(const py::handle& model) {
  if (py::isinstance<py::str>(model)) {
    static TextMap<std::shared_ptr<const ModelSpec>> presets;
    const std::string_view key = utf8_of(model);
    if (auto it = presets.find(key); it != presets.end()) return it->second;
    if (const ModelPreset* p = ModelCatalog::built_in().find(key)) {
      auto m = std::make_shared<const ModelSpec>(preset_model(*p));
      if (presets.size() < kMaxCached) presets.emplace(key, m);
      return m;
    }
    return std::make_shared<const ModelSpec>(load_model(key));
  }
  if (py::hasattr(model, "__fspath__")) {
    const py::object path = model.attr("__fspath__")();
    if (!py::isinstance<py::str>(path)) throw InvalidArgument("model paths must be text");
    return std::make_shared<const ModelSpec>(load_model(utf8_of(path)));
  }
  if (py::isinstance<py::dict>(model)) {
    static auto* dumps = new py::object(py::module_::import("json").attr("dumps"));
    const py::str text_of = (*dumps)(model);
    return std::make_shared<const ModelSpec>(
        model_from_json(std::string(utf8_of(text_of)), "model_config"));
  }
  throw InvalidArgument(
      "model must be a preset id, a path, or a dict (the short form or a config.json)");
}

const Device& device_of(const py::handle& hardware) {
  if (py::isinstance<py::str>(hardware)) {
    static TextMap<const Device*> devices;
    const std::string_view key = utf8_of(hardware);
    if (auto it = devices.find(key); it != devices.end()) return *it->second;
    const Device& d = registry().get(key);
    if (devices.size() < kMaxCached) devices.emplace(key, &d);
    return d;
  }
  if (py::hasattr(hardware, "id")) {
    const py::object id = hardware.attr("id");
    if (py::isinstance<py::str>(id)) return device_of(id);
  }
  throw InvalidArgument("hardware must be a device id or alias, or a Hardware object");
}

ModelOptions options_of(bool ideal, const std::string& engine,
                        const std::optional<std::string>& engine_build,
                        const std::string& cuda_graphs,
                        const std::optional<std::string>& moe_kernel, const Device* device) {
  ModelOptions o;
  o.mode = ideal ? Mode::kIdeal : Mode::kRealistic;
  o.engine = &EngineRegistry::built_in().get(engine);  // its tables are resolved per device
  if (engine_build) o.engine_build = parse_build_date(*engine_build, "engine_build");
  o.graphs = parse_graph_policy(cuda_graphs, "cuda_graphs");
  if (moe_kernel) {
    o.moe_kernel = parse_moe_kernel(*moe_kernel, "moe_kernel");
    check_moe_kernel(o, device, "moe_kernel");
  }
  return o;
}

ModelOptions with_release(ModelOptions o, const std::optional<std::string>& version,
                          const Device& device, std::int64_t tp) {
  if (!version) return o;
  check_engine_version(*version, "engine_version");
  return with_engine_release(std::move(o), device, *version, tp, EngineRegistry::built_in());
}

}  // namespace roofline::python
