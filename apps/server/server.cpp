#include "server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <thread>

#include "roofline/error.h"
#include "roofline/nvml.h"
#include "roofline/quantize.h"
#include "roofline/report.h"
#include "roofline/roofline.h"
#include "roofline/service.h"
#include "roofline/workload.h"
#include "subprocess.h"

namespace roofline::server {
namespace {

using nlohmann::json;

constexpr double kGpuMeasureTimeoutS = 60.0;
constexpr int kMaxStreams = 4;

// "name:port", "[::1]:port" or "name" -> the name.
std::string host_name(const std::string& host) {
  if (!host.empty() && host.front() == '[') return host.substr(0, host.find(']') + 1);
  return host.substr(0, host.find(':'));
}

bool is_loopback(const std::string& name) {
  return name == "127.0.0.1" || name == "localhost" || name == "::1" || name == "[::1]" ||
         name.rfind("127.", 0) == 0;
}

int status_of(const Error& e) {
  const std::string_view code = e.code();
  if (code == "not_found") return 404;
  if (code == "unsupported") return 422;
  if (code == "time_limit") return 503;
  return 400;
}

void send_json(httplib::Response& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

void send_error(httplib::Response& res, int status, std::string_view code,
                std::string_view message) {
  send_json(res, {{"error", {{"code", code}, {"message", message}}}}, status);
}

json nvml_json(const nvml::Status& s) {
  json gpus = json::array();
  for (const auto& g : s.gpus) {
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"utilization_pct", g.utilization_pct},
                    {"memory_utilization_pct", g.memory_utilization_pct},
                    {"memory_used_bytes", g.memory_used_bytes},
                    {"memory_total_bytes", g.memory_total_bytes},
                    {"power_w", g.power_w},
                    {"sm_clock_mhz", g.sm_clock_mhz},
                    {"memory_clock_mhz", g.memory_clock_mhz},
                    {"temperature_c", g.temperature_c}});
  }
  json j = {{"available", s.available}, {"gpus", gpus}};
  if (!s.available) j["message"] = s.message;
  return j;
}

// Request schemas for the OpenAPI document: the keys the service accepts (it
// rejects any other), their types, ranges and defaults, and an example.
json integer_schema(std::int64_t lo, std::int64_t hi, std::int64_t fallback, const char* what) {
  return {{"type", "integer"},
          {"minimum", lo},
          {"maximum", hi},
          {"default", fallback},
          {"description", what}};
}

json string_schema(const char* what, const char* fallback = nullptr) {
  json j = {{"type", "string"}, {"description", what}};
  if (fallback != nullptr) j["default"] = fallback;
  return j;
}

json model_schema() {
  return {{"oneOf",
           {{{"type", "string"}, {"description", "a preset id or alias (GET /api/models)"}},
            {{"type", "object"},
             {"description",
              "a Hugging Face config.json, or the short form {H, L, nh, nkv, dh, "
              "dff, vocab?}"}}}}};
}

json request_schemas() {
  const json formats = string_schema("a format id (GET /api/hardware lists each device's)");
  json scenario = {
      {"model", model_schema()},
      {"hardware", string_schema("a device id or alias (GET /api/hardware)", "gb10")},
      {"batch", integer_schema(1, kMaxBatch, 1, "sequences in flight")},
      {"weights", formats},
      {"experts", formats},
      {"act", string_schema("activation format", "bf16")},
      {"kv", formats},
      {"strategy", string_schema("a named precision plan (GET /api/strategies)")},
      {"attention", string_schema("attention kernel: naive, fa1, fa2, fa3, fa4, flash-decoding")},
      {"block_sparsity", {{"type", "number"}, {"default", 1.0}}},
      {"tp", integer_schema(1, kMaxParallel, 1, "tensor-parallel ways")},
      {"pp", integer_schema(1, kMaxParallel, 1, "pipeline stages")},
      {"ideal",
       {{"type", "boolean"}, {"default", false}, {"description", "datasheet peaks only"}}}};
  const json phase = {{"type", "string"}, {"enum", {"prefill", "decode"}}, {"default", "decode"}};
  const json seq_len = integer_schema(1, kMaxSeqLen, 4096, "context length in tokens");

  json predict = scenario;
  predict["phase"] = phase;
  predict["seq_len"] = seq_len;
  predict["per_op"] = {{"type", "boolean"}, {"default", false}};
  json generate = scenario;
  generate["prompt"] = integer_schema(1, kMaxSeqLen, 512, "prompt tokens");
  generate["gen"] = integer_schema(1, kMaxSeqLen, 128, "generated tokens");
  json recommend = {{"model", model_schema()},
                    {"hardware", scenario["hardware"]},
                    {"phase", phase},
                    {"seq_len", seq_len},
                    {"batch", scenario["batch"]},
                    {"tp", scenario["tp"]},
                    {"pp", scenario["pp"]},
                    {"max_quality_loss", {{"type", "number"}, {"default", 3.0}}},
                    {"memory_limit", {{"type", "number"}, {"description", "bytes"}}},
                    {"latency_target", {{"type", "number"}, {"description", "seconds"}}},
                    {"ideal", scenario["ideal"]}};
  json analyze = {{"hardware", scenario["hardware"]},
                  {"m", integer_schema(1, kMaxGemmDimension, 1, "rows (tokens)")},
                  {"n", integer_schema(1, kMaxGemmDimension, 4096, "output features")},
                  {"k", integer_schema(1, kMaxGemmDimension, 4096, "input features")},
                  {"weights", string_schema("weight format", "fp16")},
                  {"act", string_schema("activation format", "fp16")},
                  {"ideal", scenario["ideal"]},
                  {"measure",
                   {{"type", "boolean"},
                    {"default", false},
                    {"description",
                     "also run it on the GPU (POST /api/analyze, where the CUDA backend "
                     "roofline-gpu and a GPU are present; fp16, bf16, fp8, nvfp4 on Blackwell)"}}}};
  auto list = [](json item) { return json{{"type", "array"}, {"minItems", 1}, {"items", item}}; };
  json sweep = {{"models", list(model_schema())},
                {"hardware", list({{"type", "string"}})},
                {"phases", list(phase)},
                {"batches", list({{"type", "integer"}, {"minimum", 1}})},
                {"seq_lens", list({{"type", "integer"}, {"minimum", 1}})},
                {"weights", list({{"type", "string"}})},
                {"acts", list({{"type", "string"}})},
                {"strategies", list({{"type", "string"}})},
                {"ideal", scenario["ideal"]}};
  auto object = [](json properties, json example, bool model_required) {
    json j = {{"type", "object"},
              {"additionalProperties", false},
              {"properties", std::move(properties)},
              {"example", std::move(example)}};
    if (model_required) j["required"] = {"model"};
    return j;
  };
  return {
      {"predict", object(predict,
                         {{"model", "llama-3.1-8b"},
                          {"hardware", "gb10"},
                          {"phase", "decode"},
                          {"seq_len", 4096},
                          {"strategy", "fp8_balanced"}},
                         true)},
      {"generate",
       object(generate,
              {{"model", "llama-3.1-8b"}, {"hardware", "h100"}, {"prompt", 512}, {"gen", 128}},
              true)},
      {"recommend",
       object(recommend, {{"model", "llama-3-8b"}, {"hardware", "gb10"}, {"seq_len", 4096}}, true)},
      {"analyze",
       object(analyze, {{"hardware", "h100"}, {"m", 16}, {"n", 4096}, {"k", 4096}}, false)},
      {"sweep", object(sweep,
                       {{"models", {"llama-3.1-8b"}},
                        {"hardware", {"h100", "gb10"}},
                        {"batches", {1, 8, 64}},
                        {"seq_lens", {1024, 8192}}},
                       false)}};
}

// The OpenAPI 3 document of the endpoints below.
json openapi(bool public_only) {
  const json schemas = request_schemas();
  auto post = [&](const char* summary, const char* schema) {
    return json{
        {"post",
         {{"summary", summary},
          {"requestBody",
           {{"required", true},
            {"content",
             {{"application/json",
               {{"schema", {{"$ref", std::string("#/components/schemas/") + schema}}}}}}}}},
          {"responses",
           {{"200", {{"description", "the same JSON as the CLI's --json output"}}},
            {"400", {{"description", "invalid request: {\"error\": {\"code\", \"message\"}}"}}},
            {"404", {{"description", "unknown model, device, format or kernel"}}},
            {"413", {{"description", "body too large"}}},
            {"422", {{"description", "the device cannot do it (format, kernel)"}}},
            {"503", {{"description", "the request ran past its time limit"}}}}}}}};
  };
  auto get = [](const char* summary) {
    return json{
        {"get", {{"summary", summary}, {"responses", {{"200", {{"description", "JSON"}}}}}}}};
  };
  json paths = {
      {"/healthz", get("liveness")},
      {"/api/hardware", get("the device registry with sources")},
      {"/api/models", get("the model presets")},
      {"/api/strategies", get("the named precision strategies")},
      {"/api/predict", post("predict one forward pass (model, hardware, phase, batch, seq_len, "
                            "formats)",
                            "predict")},
      {"/api/generate", post("TTFT, TPOT and end-to-end time (prompt, gen)", "generate")},
      {"/api/recommend", post("ranked precision strategies with a rationale", "recommend")},
      {"/api/analyze",
       post("one GEMM: theory (and measurement where a GPU backend is present)", "analyze")},
      {"/api/sweep", post("every combination of lists, up to the row cap", "sweep")}};
  for (const char* p : {"/api/public/predict", "/api/public/generate", "/api/public/recommend",
                        "/api/public/analyze", "/api/public/sweep"}) {
    paths[p] = paths[std::string(p).replace(0, 11, "/api")];
  }
  for (const char* p : {"/api/public/hardware", "/api/public/models", "/api/public/strategies"}) {
    paths[p] = paths[std::string(p).replace(0, 11, "/api")];
  }
  if (!public_only) {
    paths["/api/quantize"] = {
        {"post",
         {{"summary", "per-tensor statistics, outliers and plan for an uploaded .safetensors body"},
          {"requestBody", {{"content", {{"application/octet-stream", json::object()}}}}},
          {"responses",
           {{"200", {{"description", "JSON"}}}, {"413", {{"description", "too large"}}}}}}}};
    paths["/api/nvml/status"] = get("GPU utilization, memory, power, clocks, temperature (NVML)");
    paths["/api/nvml/stream"] = get("the same as Server-Sent Events, one sample a second");
  }
  return {{"openapi", "3.0.3"},
          {"info",
           {{"title", "Roofline API"},
            {"version", std::string(version())},
            {"description",
             "Predict, explain and measure transformer inference on GPUs. Errors are "
             "{\"error\": {\"code\", \"message\"}}."}}},
          {"paths", paths},
          {"components", {{"schemas", schemas}}}};
}

const char* kDocsPage =
    R"(<!doctype html><html><head><meta charset="utf-8"><title>Roofline API</title>
<style>body{font:15px system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#222}
code{background:#f3f3f3;padding:.1rem .3rem;border-radius:3px}li{margin:.3rem 0}</style></head><body>
<h1>Roofline API</h1><p>The machine-readable description is <a href="/api/openapi.json">/api/openapi.json</a>.
Every POST takes and returns JSON; the fields are those of the <code>roofline</code> command's <code>--json</code>.</p>
<ul id="paths"></ul><script>fetch('/api/openapi.json').then(r=>r.json()).then(d=>{const ul=document.getElementById('paths');
for(const [p,ops] of Object.entries(d.paths)){for(const [m,o] of Object.entries(ops)){const li=document.createElement('li');
li.innerHTML='<code>'+m.toUpperCase()+' '+p+'</code> &mdash; '+o.summary;ul.appendChild(li);}}});</script></body></html>)";

}  // namespace

struct Server::Impl {
  Options options;
  Registry registry;
  httplib::Server http;
  service::Limits limits;
  int port = 0;

  std::mutex gpu_mutex;               // one GPU measurement at a time
  std::atomic<int> streams{0};        // open /api/nvml/stream responses
  std::atomic<bool> stopping{false};  // set by stop(): streams end

  enum class ListenState { kIdle, kEntering, kReturned };
  std::mutex state_mutex;
  ListenState listen_state = ListenState::kIdle;
  bool stop_requested = false;

  using Handler = std::function<json(const json&)>;

  void post(const std::string& path, const Handler& handler) {
    http.Post(path, [this, handler](const httplib::Request& req, httplib::Response& res) {
      if (req.body.size() > options.max_body_bytes) {
        send_error(res, 413, "payload_too_large",
                   "the body is larger than " + std::to_string(options.max_body_bytes) + " bytes");
        return;
      }
      json body;
      try {
        body = json::parse(req.body);
      } catch (const json::exception&) {
        send_error(res, 400, "invalid_json", "the body is not valid JSON");
        return;
      }
      try {
        send_json(res, handler(body));
      } catch (const Error& e) {
        send_error(res, status_of(e), e.code(), e.what());
      }
    });
  }

  // One GEMM on the GPU through roofline-gpu, one at a time; a reason instead where it cannot.
  json measure_gemm(const json& prediction) {
    auto unavailable = [](std::string reason) {
      return json{{"available", false}, {"reason", std::move(reason)}};
    };
    if (options.gpu_tool.empty()) {
      return unavailable(
          "no CUDA device: this server has no CUDA backend (roofline-gpu is built where nvcc is "
          "found and runs where a GPU is present)");
    }
    // The prediction carries the canonical format ids (aliases resolved).
    const std::string weights = prediction.at("weights").get<std::string>();
    const std::string act = prediction.at("act").get<std::string>();
    if (weights != act ||
        (weights != "fp16" && weights != "bf16" && weights != "fp8" && weights != "nvfp4")) {
      return unavailable(
          "the CUDA backend measures fp16, bf16, fp8 and (on Blackwell) nvfp4 GEMMs (weights = "
          "act)");
    }
    // One measurement at a time, and a busy GPU is said rather than waited for:
    // a queue of minute-long runs would hold every worker.
    std::unique_lock<std::mutex> lock(gpu_mutex, std::try_to_lock);
    if (!lock.owns_lock()) return unavailable("the GPU is busy with another measurement; retry");
    ProcessResult r;
    try {
      r = run_process(
          {options.gpu_tool, "one", std::to_string(prediction.at("m").get<std::int64_t>()),
           std::to_string(prediction.at("n").get<std::int64_t>()),
           std::to_string(prediction.at("k").get<std::int64_t>()), weights},
          kGpuMeasureTimeoutS);
    } catch (const Error&) {
      return unavailable("the CUDA backend could not be started");
    }
    if (r.timed_out) return unavailable("the GPU measurement ran past its time limit");
    if (r.exit_code != 0) {
      std::string why = r.err.substr(0, r.err.find('\n'));
      if (why.rfind("error: ", 0) == 0) why = why.substr(7);
      return unavailable(why.empty() ? "roofline-gpu failed" : why.substr(0, 300));
    }
    // Its answer is checked like any other input.
    const json out = json::parse(r.out, nullptr, false);
    auto number = [&](const char* key) {
      const auto it = out.find(key);
      if (it == out.end() || !it->is_number() || !std::isfinite(it->get<double>()) ||
          it->get<double>() < 0) {
        throw InvalidArgument(key);
      }
      return it->get<double>();
    };
    try {
      if (!out.is_object()) throw InvalidArgument("not an object");
      const double measured_s = number("measured_time_us") * 1e-6;
      if (measured_s <= 0) throw InvalidArgument("measured_time_us");
      const double predicted_s = prediction.at("time_s").get<double>();
      const std::string gpu = out.contains("gpu") && out["gpu"].is_string()
                                  ? out["gpu"].get<std::string>()
                                  : std::string("unknown GPU");
      const std::string predicted_for = prediction.at("device").at("name").get<std::string>();
      return {{"available", true},
              {"backend", "cuda"},
              {"gpu", gpu},
              {"time_s", measured_s},
              {"flops_per_s", number("measured_tflops") * 1e12},
              {"bandwidth_Bps", number("measured_bandwidth_gb_s") * 1e9},
              {"verified", out.value("verified", false)},
              // null: the output was not finite, a failed check rather than bad output.
              {"max_rel_error", out.contains("max_rel_error") && out["max_rel_error"].is_null()
                                    ? json(nullptr)
                                    : json(number("max_rel_error"))},
              {"l2", out.value("l2", "unknown")},
              {"repetitions", number("repetitions")},
              {"error_pct", (predicted_s - measured_s) / measured_s * 100},
              {"note", "measured on " + gpu + ", predicted for " + predicted_for +
                           ": the error means something only when they are the same device"}};
    } catch (const std::exception&) {
      return unavailable("roofline-gpu answered something that is not its JSON");
    }
  }

  // Browsers name the page a request comes from (Origin) and the name they
  // connected to (Host). A page on another site must not drive this server
  // (it could start GPU runs or uploads), and a loopback server must not answer
  // a foreign host name (DNS rebinding).
  bool refuse_foreign(const httplib::Request& req, httplib::Response& res) const {
    const std::string host = req.get_header_value("Host");
    if (is_loopback(options.host) && !host.empty() && !is_loopback(host_name(host))) {
      send_error(res, 403, "forbidden_host",
                 "this server listens on loopback and answers only loopback host names");
      return true;
    }
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty()) {
      const std::size_t scheme = origin.find("://");
      const std::string origin_host = scheme == std::string::npos ? "" : origin.substr(scheme + 3);
      if (origin_host != host) {
        send_error(res, 403, "cross_origin", "requests from other sites' pages are refused");
        return true;
      }
    }
    return false;
  }

  void routes() {
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return refuse_foreign(req, res) ? httplib::Server::HandlerResponse::Handled
                                      : httplib::Server::HandlerResponse::Unhandled;
    });
    limits.max_sweep_rows = options.max_sweep_rows;
    limits.time_limit_s = options.request_time_limit_s;
    limits.allow_files = false;
    http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      send_json(res, {{"status", "ok"}, {"version", std::string(version())}});
    });
    for (const std::string prefix : {"/api", "/api/public"}) {
      http.Get(prefix + "/hardware", [this](const httplib::Request&, httplib::Response& res) {
        send_json(res, service::hardware_list(registry));
      });
      http.Get(prefix + "/models", [](const httplib::Request&, httplib::Response& res) {
        send_json(res, service::model_list());
      });
      http.Get(prefix + "/strategies", [](const httplib::Request&, httplib::Response& res) {
        send_json(res, service::strategy_list());
      });
      post(prefix + "/predict",
           [this](const json& b) { return service::predict(b, registry, limits); });
      post(prefix + "/generate",
           [this](const json& b) { return service::generate(b, registry, limits); });
      post(prefix + "/recommend",
           [this](const json& b) { return service::recommend(b, registry, limits); });
      const bool may_measure = prefix == "/api" && !options.public_only;
      post(prefix + "/analyze", [this, may_measure](const json& b) {
        // "measure": true adds a measurement by the CUDA backend; the rest is the service's.
        json request = b;
        bool measure = false;
        if (request.is_object() && request.contains("measure")) {
          if (!request["measure"].is_boolean())
            throw InvalidArgument("measure: expected true or false");
          measure = request["measure"].get<bool>();
          request.erase("measure");
          if (measure && !may_measure)
            throw InvalidArgument(
                "measure: this endpoint predicts only; POST /api/analyze measures");
        }
        json j = service::analyze(request, registry, limits);
        if (measure) j["measurement"] = measure_gemm(j);
        return j;
      });
      post(prefix + "/sweep",
           [this](const json& b) { return service::sweep(b, registry, limits); });
    }
    http.Get("/api/openapi.json", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, openapi(options.public_only));
    });
    // Interactive docs (swagger-ui, copied into the built web app) where the app is
    // served; otherwise a plain page listing the endpoints.
    std::error_code ec;
    const bool swagger = !options.web_dir.empty() &&
                         std::filesystem::is_regular_file(
                             std::filesystem::path(options.web_dir) / "docs" / "index.html", ec);
    http.Get("/docs", [swagger](const httplib::Request&, httplib::Response& res) {
      if (swagger) {
        res.set_redirect("/docs/");
      } else {
        res.set_content(kDocsPage, "text/html");
      }
    });
    if (!options.public_only) {
      http.Post("/api/quantize", [this](const httplib::Request& req, httplib::Response& res) {
        try {
          const auto reports = quantize_bytes(req.body, "upload");
          json list = json::array();
          for (const auto& t : reports) {
            json j = {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
            if (!t.skipped.empty()) {
              j["skipped"] = t.skipped;
            } else {
              j.update({{"max_abs", t.max_abs},
                        {"rms", t.rms},
                        {"kurtosis", t.kurtosis},
                        {"outlier_channels", t.outlier_channels},
                        {"plan", format_id(t.plan.format)},
                        {"plan_bits_per_element", t.plan.bits_per_element},
                        {"plan_sqnr_db", t.plan.error.sqnr_db},
                        {"meets_budget", t.meets_budget}});
            }
            list.push_back(j);
          }
          send_json(res, {{"tensors", list}});
        } catch (const Error& e) {
          send_error(res, status_of(e), e.code(), e.what());
        }
      });
      http.Get("/api/nvml/status", [](const httplib::Request&, httplib::Response& res) {
        send_json(res, nvml_json(nvml::sample()));
      });
      http.Get("/api/nvml/stream", [this](const httplib::Request&, httplib::Response& res) {
        // Each open stream holds a worker, so their number is capped.
        if (streams.fetch_add(1) >= kMaxStreams) {
          streams.fetch_sub(1);
          send_error(
              res, 503, "busy",
              "too many open GPU streams (" + std::to_string(kMaxStreams) + "); retry later");
          return;
        }
        const auto start = std::chrono::steady_clock::now();
        const int limit = options.stream_seconds;
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider(
            "text/event-stream",
            [this, start, limit](size_t, httplib::DataSink& sink) {
              const nvml::Status s = nvml::sample();
              const std::string event = "data: " + nvml_json(s).dump() + "\n\n";
              if (!sink.write(event.data(), event.size())) return false;
              // Without NVML there is nothing to stream: one event, then close. A
              // stopping server closes its streams too.
              if (!s.available || stopping.load() ||
                  std::chrono::steady_clock::now() - start > std::chrono::seconds(limit)) {
                sink.done();
                return true;
              }
              for (int tick = 0; tick < 10 && !stopping.load(); ++tick)
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
              return true;
            },
            [this](bool) { streams.fetch_sub(1); });
      });
    }
    if (!options.web_dir.empty()) {
      if (!std::filesystem::is_directory(options.web_dir, ec)) {
        throw InvalidArgument("web app directory '" + options.web_dir +
                              "' does not exist (build it with make serve)");
      }
      http.set_mount_point("/", options.web_dir);
    } else {
      http.Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(
            "<!doctype html><title>Roofline</title><p>The web app is not built into this server. "
            "The API is under <a href=\"/docs\">/docs</a>.</p>",
            "text/html");
      });
    }
    http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return;
      const char* code = res.status == 404   ? "not_found"
                         : res.status == 413 ? "payload_too_large"
                         : res.status == 405 ? "method_not_allowed"
                                             : "error";
      send_error(res, res.status, code, res.status == 404 ? "no such endpoint" : "request refused");
    });
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "internal error";
          try {
            if (ep) std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          }
          send_error(res, 500, "internal", what);
        });
  }
};

Server::Server(Options options, Registry registry) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->registry = std::move(registry);
  const int threads = std::max(1, impl_->options.threads);
  impl_->http.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  // The larger of the two limits; JSON endpoints check their own.
  impl_->http.set_payload_max_length(
      std::max(impl_->options.max_body_bytes, impl_->options.max_upload_bytes));
  impl_->http.set_read_timeout(impl_->options.timeout_s, 0);
  // Keep-alive connections each hold a worker while open: many requests per
  // connection, but a short idle time so that a quiet client frees its worker.
  impl_->http.set_keep_alive_max_count(100);
  impl_->http.set_keep_alive_timeout(2);
  // Headers and body go out in separate writes; without TCP_NODELAY, Nagle's
  // algorithm holds the body until the client's delayed ACK (~40 ms a request).
  impl_->http.set_tcp_nodelay(true);
  impl_->http.set_write_timeout(impl_->options.timeout_s, 0);
  impl_->routes();
}

Server::~Server() { stop(); }

int Server::bind() {
  const auto& o = impl_->options;
  if (o.port == 0) {
    impl_->port = impl_->http.bind_to_any_port(o.host);
  } else {
    impl_->port = impl_->http.bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (impl_->port < 0)
    throw InvalidArgument("cannot listen on " + o.host + ":" + std::to_string(o.port));
  return impl_->port;
}

// httplib 0.11's stop() does nothing until listen has marked itself running, so a stop
// that arrives while another thread is on its way into listen() would be lost and that
// thread would serve forever. The listen state below closes that window.
void Server::listen() {
  {
    std::lock_guard<std::mutex> lock(impl_->state_mutex);
    if (impl_->stop_requested) return;
    impl_->listen_state = Impl::ListenState::kEntering;
  }
  impl_->http.listen_after_bind();
  std::lock_guard<std::mutex> lock(impl_->state_mutex);
  impl_->listen_state = Impl::ListenState::kReturned;
}

void Server::stop() {
  impl_->stopping.store(true);
  Impl::ListenState state;
  {
    std::lock_guard<std::mutex> lock(impl_->state_mutex);
    impl_->stop_requested = true;
    state = impl_->listen_state;
  }
  if (state != Impl::ListenState::kEntering) return;
  // listen_after_bind sets its running flag first thing; wait for it (or for its return).
  for (;;) {
    if (impl_->http.is_running()) {
      impl_->http.stop();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(impl_->state_mutex);
      if (impl_->listen_state == Impl::ListenState::kReturned) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace roofline::server
