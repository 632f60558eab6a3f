#include "server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "roofline/deadline.h"
#include "roofline/error.h"
#include "roofline/nvml.h"
#include "roofline/quantize.h"
#include "roofline/report.h"
#include "roofline/roofline.h"
#include "roofline/service.h"
#include "roofline/serving.h"
#include "roofline/validate.h"
#include "roofline/workload.h"
#include "subprocess.h"

namespace roofline::server {
namespace {

using nlohmann::json;

constexpr double kGpuMeasureTimeoutS = 60.0;
constexpr int kMaxStreams = 4;

// The host part of a Host header ("name", "name:port", "[v6]" or "[v6]:port");
// nullopt when the rest is not a port number.
std::optional<std::string> host_name(const std::string& host) {
  std::string name, rest;
  if (!host.empty() && host.front() == '[') {
    const std::size_t close = host.find(']');
    if (close == std::string::npos) return std::nullopt;
    name = host.substr(1, close - 1);
    rest = host.substr(close + 1);
  } else {
    const std::size_t colon = host.find(':');
    name = host.substr(0, colon);
    rest = colon == std::string::npos ? "" : host.substr(colon);
  }
  if (!rest.empty()) {
    if (rest.size() < 2 || rest.size() > 6 || rest.front() != ':' ||
        !std::all_of(rest.begin() + 1, rest.end(), [](unsigned char c) { return std::isdigit(c); }))
      return std::nullopt;
  }
  return name;
}

// A loopback name, parsed as an address: 127.0.0.0/8, ::1 (and ::ffff:127.x.y.z),
// or exactly "localhost". Never by prefix: 127.0.0.1.evil.com is a DNS name
// anyone can point at 127.0.0.1, which is what DNS rebinding does.
bool is_loopback(std::string name) {
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']')
    name = name.substr(1, name.size() - 2);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, name.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, name.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
  }
  return false;
}

int status_of(const Error& e) {
  const std::string_view code = e.code();
  if (code == "not_found") return 404;
  if (code == "unsupported") return 422;
  if (code == "time_limit") return 503;
  return 400;
}

// Text that is not UTF-8 (a name from a request or a file) is replaced, never
// thrown about: the encoder's exception would turn a 4xx into a 500.
std::string encode(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(encode(j), "application/json");
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

// A share from 0 to 1, 0 by default (the engine's own).
json share_schema(const char* what) {
  return {
      {"type", "number"}, {"minimum", 0}, {"maximum", 1}, {"default", 0}, {"description", what}};
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
      {"attention_dp",
       integer_schema(1, kMaxParallel, 1, "attention data-parallel groups within tp")},
      {"ep", integer_schema(1, kMaxParallel, 1, "expert-parallel groups within tp (MoE models)")},
      {"draft_tokens",
       integer_schema(0, kMaxDraftTokens, 0,
                      "speculative decoding: tokens a one-layer draft head (MTP, EAGLE) proposes "
                      "a step")},
      {"acceptance",
       {{"type", "number"},
        {"minimum", 0},
        {"maximum", 1},
        {"description",
         "speculative decoding: the chance each draft token is accepted (unset: the one "
         "yielding the model's measured tokens a step where published, GET /api/models: "
         "draft_tokens_per_step; else 0.85)"}}},
      {"ideal", {{"type", "boolean"}, {"default", false}, {"description", "datasheet peaks only"}}},
      {"engine", string_schema("a serving engine (GET /api/engines): its launch and step costs and "
                               "measured kernel efficiency",
                               "roofline")},
      {"engine_build",
       {{"type", "string"},
        {"maxLength", 10},
        {"description",
         "the date of the engine's build, YYYY-MM-DD or YYYY-MM: the profile's rules dated by "
         "build follow it (llama.cpp before 2024-06-24 dequantized to F16 for cuBLAS above 32 "
         "rows; TensorRT-LLM before 2025-02-01 ran TensorRT engines, without Python dispatch); "
         "absent: the current build"}}},
      {"engine_version",
       {{"type", "string"},
        {"maxLength", 40},
        {"description",
         "the engine's release, e.g. 0.11.0: the rules its profile dates by release follow it "
         "(vLLM's MoE kernel family and padded MoE workspace, its Triton attention's sliding "
         "windows; GET /api/engines); absent: the current release"}}},
      {"cuda_graphs",
       {{"type", "string"},
        {"enum", {"engine", "decode-only", "off"}},
        {"default", "engine"},
        {"description",
         "which steps replay CUDA graphs: the engine's defaults, decode steps only (vLLM's "
         "FULL_DECODE_ONLY) or none (--enforce-eager); steps without graphs pay the engine's "
         "eager launch per kernel"}}},
      {"moe_kernel",
       {{"type", "string"},
        {"enum", {"triton", "flashinfer-trtllm", "flashinfer-cutlass", "marlin"}},
        {"description",
         "the MoE kernel family the deployment runs (vLLM's VLLM_USE_FLASHINFER_MOE_FP8, "
         "SGLang's --moe-runner-backend); absent: the engine's measured layers, whichever "
         "kernels they ran; a family the engine's table lacks borrows another engine's "
         "measurement on the same device"}}}};
  const json phase = {{"type", "string"}, {"enum", {"prefill", "decode"}}, {"default", "decode"}};
  const json seq_len = integer_schema(1, kMaxSeqLen, 4096, "context length in tokens");

  json predict = scenario;
  predict["phase"] = phase;
  predict["seq_len"] = seq_len;
  predict["per_op"] = {{"type", "boolean"}, {"default", false}};
  const json cached = integer_schema(
      0, kMaxSeqLen, 0,
      "tokens in the KV cache before the prompt (an earlier turn, a prefix-cache hit)");
  predict["cached"] = cached;
  json generate = scenario;
  generate["prompt"] = integer_schema(1, kMaxSeqLen, 512, "prompt tokens");
  generate["gen"] = integer_schema(1, kMaxSeqLen, 128, "generated tokens");
  generate["cached"] = cached;
  json serving = scenario;
  serving.erase("batch");
  serving["isl"] = integer_schema(1, kMaxSeqLen, 1024, "prompt tokens per request");
  serving["osl"] = integer_schema(1, kMaxSeqLen, 256, "output tokens per request");
  serving["concurrency"] =
      integer_schema(1, kMaxBatch, 1, "clients, each with one request in flight");
  serving["mode"] = {{"type", "string"},
                     {"enum", {"agg", "disagg"}},
                     {"default", "agg"},
                     {"description", "one pool, or prefill and decode workers"}};
  serving["dp"] = integer_schema(1, 1024, 1, "agg: data-parallel replicas the clients spread over");
  serving["prefill_workers"] = integer_schema(1, 1024, 1, "disagg: prefill workers");
  serving["prefill_tp"] = integer_schema(1, kMaxParallel, 1, "disagg: GPUs per prefill worker");
  serving["prefill_attention_dp"] = integer_schema(
      1, kMaxParallel, 1,
      "disagg: the prefill workers' attention data-parallel groups within prefill_tp (the decode "
      "workers take attention_dp within decode_tp)");
  serving["prefill_ep"] = integer_schema(
      1, kMaxParallel, 1,
      "disagg: the prefill workers' expert-parallel groups within prefill_tp (the decode workers "
      "take ep within decode_tp)");
  serving["decode_workers"] = integer_schema(1, 1024, 1, "disagg: decode workers");
  serving["decode_tp"] = integer_schema(1, kMaxParallel, 1, "disagg: GPUs per decode worker");
  serving["isl_min"] = integer_schema(
      0, kMaxSeqLen, 0,
      "random lengths: each prompt uniform from isl_min to isl (0: every prompt isl)");
  serving["osl_min"] = integer_schema(
      0, kMaxSeqLen, 0,
      "random lengths: each output uniform from osl_min to osl (0: every output osl)");
  serving["range_ratio"] = {
      {"type", "number"},
      {"minimum", 0},
      {"maximum", 1},
      {"description",
       "random lengths as InferenceMAX and SGLang's bench_serving draw them: each uniform from "
       "floor(range_ratio x length) to the length (instead of isl_min and osl_min)"}};
  serving["engine_version"] = {
      {"type", "string"},
      {"maxLength", 40},
      {"description",
       "the engine's release (e.g. 0.12.0): behaviour its profile dates by release follows it "
       "(vLLM's async scheduling from 0.14.0); empty: the current release"}};
  serving["rounds"] = integer_schema(1, 1000, kDefaultRounds, "requests each client sends");
  serving["shared_prefix"] = integer_schema(
      0, kMaxSeqLen, 0,
      "tokens at the start of every prompt kept by the prefix cache (held once an instance, never "
      "computed again); below isl");
  serving["prompt_pool"] = integer_schema(
      0, kMaxPromptPool, 0,
      "distinct prompts each request's is drawn from, with replacement (a benchmark's dataset); "
      "a prompt the prefix cache holds skips its prefill. 0: every prompt unique");
  serving["token_budget"] =
      integer_schema(0, kMaxBatch, 0, "tokens a step may carry (0: the engine's default)");
  serving["max_running"] =
      integer_schema(0, kMaxBatch, 0, "requests an instance runs (0: the engine's default)");
  serving["batch_wait_iters"] = integer_schema(
      0, kMaxBatchWaitIters, 0,
      "TensorRT-LLM's batch_wait_timeout_iters: steps a prompt beside decode tokens may be held "
      "back for a fuller step (0: off; aggregated, without attention DP)");
  serving["adp_balance"] = {
      {"type", "boolean"},
      {"default", false},
      {"description",
       "TensorRT-LLM's attention-DP balance (attention_dp_config enable_balance): prompts wait "
       "until every attention data-parallel rank has one (aggregated, attention_dp above 1)"}};
  serving["adp_timeout_iters"] = integer_schema(
      0, kMaxBatchWaitIters, 50,
      "with adp_balance (timeout_iters): the count of steps without a prompt on every rank that "
      "releases the held prompts");
  serving["adp_batching_wait_iters"] = integer_schema(
      0, kMaxBatchWaitIters, 10,
      "with adp_balance (batching_wait_iters): steps prompts on every rank are held more while "
      "every rank decodes");
  serving["scheduler_recv_interval"] = integer_schema(
      0, kMaxRecvInterval, 0,
      "SGLang's --scheduler-recv-interval: new requests taken in every N decode steps (at once "
      "after a prompt step or when idle; 0 or 1: every step; aggregated, without attention DP)");
  serving["batch_wait_ratio"] = share_schema(
      "TensorRT-LLM's batch_wait_max_tokens_ratio: a held step takes its prompts once its tokens "
      "reach this share of the token budget");
  serving["kv_memory_share"] = share_schema(
      "the KV cache's memory share under the engine's rule: of the whole memory (vLLM's "
      "gpu_memory_utilization, SGLang's mem_fraction_static) or of what the weights leave "
      "(TensorRT-LLM's free_gpu_memory_fraction); 0: the engine's");
  serving["recipe"] = {
      {"type", "string"},
      {"enum", {"engine", "aiconfigurator", "trtllm-bench"}},
      {"default", "engine"},
      {"description",
       "engine settings: the engine's defaults, the limits AIConfigurator's generator sets for "
       "benchmark deployments, or the max_batch_size and max_num_tokens TensorRT-LLM's "
       "trtllm-bench tunes (engine trtllm, aggregated; with requests = concurrency for its "
       "burst)"}};
  const json string_list = {{"type", "array"}, {"items", {{"type", "string"}}}};
  json search = {
      {"model", model_schema()},
      {"hardware", scenario["hardware"]},
      {"gpus", integer_schema(1, kMaxParallel, 8, "GPUs to deploy on")},
      {"isl", serving["isl"]},
      {"osl", serving["osl"]},
      {"range_ratio", serving["range_ratio"]},
      {"ttft_max", {{"type", "number"}, {"description", "TTFT target, seconds"}}},
      {"tpot_max", {{"type", "number"}, {"description", "TPOT target, seconds"}}},
      {"engines", string_list},
      {"engine_versions",
       {{"type", "object"},
        {"maxProperties", 16},
        {"additionalProperties", {{"type", "string"}, {"maxLength", 40}}},
        {"description",
         "a release for some of the searched engines, e.g. {\"vllm\": \"0.11.0\"}: their "
         "configurations run what that release runs; an engine not named runs its current "
         "release"}}},
      {"weights", string_list},
      {"modes",
       {{"type", "array"},
        {"maxItems", 2},
        {"items", {{"type", "string"}, {"enum", {"agg", "disagg"}}}}}},
      {"concurrencies",
       {{"type", "array"}, {"maxItems", 64}, {"items", {{"type", "integer"}, {"minimum", 1}}}}},
      {"draft_tokens", scenario["draft_tokens"]},
      {"acceptance", scenario["acceptance"]},
      {"shared_prefix", serving["shared_prefix"]},
      {"prompt_pool", serving["prompt_pool"]},
      {"recipe", serving["recipe"]}};
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
                    {"ideal", scenario["ideal"]},
                    {"engine", scenario["engine"]},
                    {"engine_build", scenario["engine_build"]},
                    {"engine_version", scenario["engine_version"]},
                    {"cuda_graphs", scenario["cuda_graphs"]},
                    {"moe_kernel", scenario["moe_kernel"]}};
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
                {"ideal", scenario["ideal"]},
                {"engine", scenario["engine"]},
                {"engine_build", scenario["engine_build"]},
                {"engine_version", scenario["engine_version"]},
                {"cuda_graphs", scenario["cuda_graphs"]},
                {"moe_kernel", scenario["moe_kernel"]}};
  // A list with its default and what its items are.
  auto listed = [&](json item, const char* what, json fallback) {
    json j = list(std::move(item));
    j["description"] = what;
    j["default"] = std::move(fallback);
    return j;
  };
  const json dimension = {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxGemmDimension}};
  json sweep_gemm = {{"hardware", listed({{"type", "string"}}, "device ids or aliases", {"gb10"})},
                     {"m", listed(dimension, "rows of A and C (tokens)", {1})},
                     {"n", listed(dimension, "columns of B and C (output features)", {4096})},
                     {"k", listed(dimension, "reduction dimensions (input features)", {4096})},
                     {"weights", listed({{"type", "string"}}, "weight (B) formats", {"fp16"})},
                     {"acts", listed({{"type", "string"}}, "activation (A, C) formats", {"fp16"})},
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
      {"search",
       object(search,
              {{"model", "llama-3.1-70b"}, {"hardware", "h200"}, {"gpus", 8}, {"tpot_max", 0.03}},
              true)},
      {"serving", object(serving,
                         {{"model", "llama-3.1-70b"},
                          {"hardware", "h200"},
                          {"engine", "vllm"},
                          {"tp", 2},
                          {"weights", "fp8"},
                          {"act", "fp8"},
                          {"isl", 1024},
                          {"osl", 256},
                          {"concurrency", 64}},
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
                       false)},
      {"sweep_gemm", object(sweep_gemm,
                            {{"hardware", {"h100", "gb10"}},
                             {"m", {1, 16, 256}},
                             {"n", {4096}},
                             {"k", {4096, 14336}},
                             {"weights", {"bf16", "fp8"}},
                             {"acts", {"bf16"}}},
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
            {"405", {{"description", "not a POST (the Allow header says what is)"}}},
            {"411", {{"description", "no Content-Length (chunked bodies are refused)"}}},
            {"413", {{"description", "body too large (judged by Content-Length, unread)"}}},
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
      {"/api/engines", get("the serving engines with their sourced figures")},
      {"/api/validation", get("the published cases, each predicted with its own engine: "
                              "measured, predicted and error, with the statistics by engine "
                              "and metric (roofline validate --json)")},
      {"/api/validation/serving",
       get("the serving model against the development set's measured TTFT and TPOT: each run "
           "predicted or refused with its reason, the errors by engine, device, model and mode "
           "(roofline validate --serving --json; computed once, a few seconds)")},
      {"/api/predict", post("predict one forward pass (model, hardware, phase, batch, seq_len, "
                            "formats)",
                            "predict")},
      {"/api/generate", post("TTFT, TPOT and end-to-end time (prompt, gen)", "generate")},
      {"/api/search", post("the deployment search: engine x format x TP x replicas x concurrency "
                           "on N GPUs, the Pareto front and the best meeting the targets",
                           "search")},
      {"/api/serving", post("TTFT, TPOT and tokens/s of C clients under continuous batching "
                            "(isl, osl, concurrency, engine, tp, formats)",
                            "serving")},
      {"/api/recommend", post("ranked precision strategies with a rationale", "recommend")},
      {"/api/analyze",
       post("one GEMM: theory (and measurement where a GPU backend is present)", "analyze")},
      {"/api/sweep", post("every combination of lists, up to the row cap", "sweep")},
      {"/api/sweep/gemm", post("every combination of GEMM shapes (m, n, k), formats and devices, "
                               "one GEMM roofline each, up to the row cap",
                               "sweep_gemm")}};
  for (const char* p : {"/api/public/predict", "/api/public/generate", "/api/public/serving",
                        "/api/public/search", "/api/public/recommend", "/api/public/analyze",
                        "/api/public/sweep", "/api/public/sweep/gemm"}) {
    paths[p] = paths[std::string(p).replace(0, 11, "/api")];
  }
  for (const char* p :
       {"/api/public/hardware", "/api/public/models", "/api/public/strategies",
        "/api/public/engines", "/api/public/validation", "/api/public/validation/serving"}) {
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

// ---------------------------------------------------------------- connections

// What the request being handled on this worker needs refused before its body
// is read (size, method, path), and whether its connection must close after
// the answer (the unread body would otherwise be taken for the next request).
struct Refusal {
  int status = 0;
  std::string code, message, allow;
};
thread_local std::optional<Refusal> t_refusal;
thread_local bool t_close_after = false;
thread_local bool t_trim_after = false;  // a large answer: give freed memory back

// A socket stream whose reads share one deadline per request: a client that
// trickles its header lines or body, or announces a body it never sends, is
// cut off when the deadline passes, however often single bytes arrive.
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int sock, time_t read_timeout_s, time_t write_timeout_s)
      : sock_(sock),
        read_timeout_ms_(read_timeout_s * 1000),
        write_timeout_ms_(write_timeout_s * 1000) {}

  void start_request(std::chrono::steady_clock::time_point deadline) { deadline_ = deadline; }
  bool has_buffered() const { return pos_ < len_; }

  bool is_readable() const override { return has_buffered() || wait(POLLIN, read_wait_ms()); }
  bool is_writable() const override { return wait(POLLOUT, static_cast<int>(write_timeout_ms_)); }

  ssize_t read(char* ptr, size_t size) override {
    if (!has_buffered()) {
      if (!wait(POLLIN, read_wait_ms())) return -1;
      if (size >= sizeof(buffer_)) return receive(ptr, size);
      const ssize_t n = receive(buffer_, sizeof(buffer_));
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<std::size_t>(n);
    }
    const std::size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buffer_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address(::getsockname, ip, port);
  }
  socket_t socket() const override { return sock_; }

  // Waits until the socket is readable or the time runs out.
  bool wait(short events, int timeout_ms) const {
    if (timeout_ms <= 0) return false;
    pollfd p{sock_, events, 0};
    int r;
    do {
      r = ::poll(&p, 1, timeout_ms);
    } while (r < 0 && errno == EINTR);
    return r > 0;
  }

  static void address(int (*get)(int, sockaddr*, socklen_t*), int sock, std::string& ip,
                      int& port) {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    ip.clear();
    port = -1;
    if (get(sock, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

 private:
  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    address(get, sock_, ip, port);
  }
  int read_wait_ms() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline_ - std::chrono::steady_clock::now())
                          .count();
    return static_cast<int>(std::clamp<long long>(left, 0, read_timeout_ms_));
  }
  ssize_t receive(char* ptr, std::size_t size) {
    ssize_t n;
    do {
      n = ::recv(sock_, ptr, size, 0);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  int sock_;
  long long read_timeout_ms_, write_timeout_ms_;
  std::chrono::steady_clock::time_point deadline_{};
  char buffer_[4096];
  std::size_t pos_ = 0, len_ = 0;
};

// httplib's server with its connection loop replaced: each request is read
// under a whole-request deadline, and each client address holds at most
// `per_client` connections. A client at its cap that opens another loses its
// oldest connection that is not running a request (an idle keep-alive or a
// stalled upload: its own), or is answered 503 when all are busy. Workers are
// thereby never all held by one address.
class GuardedServer final : public httplib::Server {
 public:
  GuardedServer(double request_read_s, int per_client)
      : request_read_s_(request_read_s), per_client_(std::max(1, per_client)) {}

  // Called for each request once its headers are read, before its body (may
  // mark it for refusal).
  std::function<void(httplib::Request&)> screen;

  // Connections of `peer` a worker has taken up (and not evicted).
  std::size_t connections_of(const std::string& peer) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = clients_.find(peer);
    if (it == clients_.end()) return 0;
    return static_cast<std::size_t>(std::count_if(it->second.begin(), it->second.end(),
                                                  [](const Connection* c) { return !c->evicted; }));
  }

  // Marks the connection of the request being handled on this worker as busy
  // (past its headers: not evicted for the same client's new connections).
  void mark_busy() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (t_connection != nullptr) t_connection->busy = true;
  }

 private:
  struct Connection {
    int fd;
    std::string peer;
    bool busy = false;
    bool evicted = false;
  };
  static inline thread_local Connection* t_connection = nullptr;

  bool process_and_close_socket(socket_t sock) override {
    int one = 1;
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::string peer;
    int port = 0;
    DeadlineStream::address(::getpeername, sock, peer, port);
    Connection self{sock, peer};
    t_close_after = false;
    std::list<Connection*>::iterator place;
    if (!admit(&self, &place)) {
      refuse_busy(sock);
      ::shutdown(sock, SHUT_RDWR);
      ::close(sock);
      return true;
    }
    {
      t_connection = &self;
      serve(sock, self);
      t_connection = nullptr;
      std::lock_guard<std::mutex> lock(mutex_);
      auto& list = clients_[peer];
      list.erase(place);
      if (list.empty()) clients_.erase(peer);
      changed_.notify_all();
    }
    // Under no lock: the socket is no longer listed, so no eviction can reach it.
    if (t_close_after) {
      linger_close(sock);
    } else {
      ::shutdown(sock, SHUT_RDWR);
      ::close(sock);
    }
    return true;
  }

  // Closing a socket with unread input makes the kernel reset the connection,
  // and a client still sending a refused body then never sees the answer: stop
  // sending, read and drop what arrives for a moment (bounded), then close.
  static void linger_close(socket_t sock) {
    ::shutdown(sock, SHUT_WR);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    char sink[16384];
    std::size_t dropped = 0;
    while (dropped < (16u << 20)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            until - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) break;
      pollfd p{sock, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      const ssize_t n = ::recv(sock, sink, sizeof(sink), 0);
      if (n <= 0) break;
      dropped += static_cast<std::size_t>(n);
    }
    ::close(sock);
  }

  bool admit(Connection* self, std::list<Connection*>::iterator* place) {
    std::unique_lock<std::mutex> lock(mutex_);
    // A connection whose answer was just written stays busy until its worker
    // runs again: a client's next request may arrive first, so wait a moment
    // (bounded) for one to become idle or close before refusing.
    const auto until = std::chrono::steady_clock::now() + kAdmissionWait;
    for (;;) {
      auto& list = clients_[self->peer];
      std::size_t live = 0;
      for (const Connection* c : list) live += !c->evicted;
      if (live < static_cast<std::size_t>(per_client_)) break;
      // The oldest idle or still-reading connection of this client gives way.
      auto victim = std::find_if(list.begin(), list.end(),
                                 [](const Connection* c) { return !c->busy && !c->evicted; });
      if (victim != list.end()) {
        (*victim)->evicted = true;
        ::shutdown((*victim)->fd, SHUT_RDWR);
        break;
      }
      if (changed_.wait_until(lock, until) == std::cv_status::timeout) {
        if (clients_[self->peer].empty()) clients_.erase(self->peer);
        return false;
      }
    }
    auto& list = clients_[self->peer];
    *place = list.insert(list.end(), self);
    return true;
  }

  void serve(socket_t sock, Connection& self) {
    DeadlineStream stream(sock, read_timeout_sec_, write_timeout_sec_);
    for (std::size_t count = keep_alive_max_count_; count > 0; --count) {
      if (svr_sock_ == INVALID_SOCKET) return;
      // Idle between requests: at most the keep-alive time, ended early by stop().
      if (!stream.has_buffered()) {
        bool readable = false;
        for (time_t waited = 0; waited < keep_alive_timeout_sec_ * 10 && !readable; ++waited) {
          if (svr_sock_ == INVALID_SOCKET) return;
          readable = stream.wait(POLLIN, 100);
        }
        if (!readable) return;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (self.evicted) return;
        self.busy = false;
      }
      stream.start_request(std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(request_read_s_)));
      t_refusal.reset();
      t_close_after = false;
      t_trim_after = false;
      bool connection_closed = false;
      const bool ok = process_request(stream, count == 1, connection_closed, screen);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        self.busy = false;  // idle again: may give way to this client's next connection
        changed_.notify_all();
      }
      if (t_trim_after) ::malloc_trim(0);
      if (!ok || connection_closed || t_close_after) return;
    }
  }

  static void refuse_busy(socket_t sock) {
    const std::string body =
        encode({{"error",
                 {{"code", "too_many_connections"},
                  {"message", "this address has too many connections running requests; retry"}}}});
    const std::string head =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n";
    const std::string all = head + body;
    (void)::send(sock, all.data(), all.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  double request_read_s_;
  int per_client_;
  std::mutex mutex_;
  std::condition_variable changed_;  // a connection became idle or closed
  static constexpr std::chrono::milliseconds kAdmissionWait{250};
  std::map<std::string, std::list<Connection*>> clients_;
};

}  // namespace

struct Server::Impl {
  Options options;
  Registry registry;
  std::unique_ptr<GuardedServer> http;
  std::map<std::string, std::string> allowed;  // endpoint path -> its methods (Allow)
  service::Limits limits;
  int port = 0;

  std::mutex gpu_mutex;               // one GPU measurement at a time
  std::atomic<int> streams{0};        // open /api/nvml/stream responses
  std::atomic<bool> stopping{false};  // set by stop(): streams end
  // The published cases' validation: a pure function of the built-in data and
  // the registry, computed by the first request that asks (0.1-0.2 s) and kept.
  std::once_flag validation_once;
  json validation_cache;
  // The same for the development set's serving runs (2,101 rows: 2-4 s once).
  std::once_flag serving_validation_once;
  json serving_validation_cache;

  enum class ListenState { kIdle, kEntering, kReturned };
  std::mutex state_mutex;
  ListenState listen_state = ListenState::kIdle;
  bool stop_requested = false;

  using Handler = std::function<json(const json&)>;
  using TextHandler = std::function<std::string(const json&)>;

  void post(const std::string& path, const Handler& handler) {
    post_text(path, [handler](const json& b) { return encode(handler(b)); });
  }

  // A JSON endpoint whose handler writes its own document text.
  void post_text(const std::string& path, const TextHandler& handler) {
    allowed[path] = "POST";
    http->Post(path, [this, handler](const httplib::Request& req, httplib::Response& res) {
      // screen() refused larger bodies from their Content-Length; this holds whatever else.
      if (req.body.size() > options.max_body_bytes) {
        send_error(res, 413, "payload_too_large",
                   "the body is larger than " + std::to_string(options.max_body_bytes) + " bytes");
        return;
      }
      if (req.body.size() > (256 << 10)) t_trim_after = true;
      json body;
      try {
        body = service::parse_request(req.body);
      } catch (const Error& e) {
        send_error(res, 400, "invalid_json", e.what());
        return;
      }
      try {
        std::string text = handler(body);
        if (text.size() > (1 << 20)) t_trim_after = true;
        res.status = 200;
        res.body = std::move(text);  // set_content would copy it
        res.set_header("Content-Type", "application/json");
      } catch (const Error& e) {
        send_error(res, status_of(e), e.code(), e.what());
      } catch (const json::exception& e) {
        send_error(res, 400, "invalid_request", e.what());
      }
    });
  }

  void get(const std::string& path, const httplib::Server::Handler& handler) {
    allowed[path] = "GET, HEAD";
    http->Get(path, handler);
  }

  // Before a request's body is read: its path, method and announced size.
  // A refusal closes the connection (the unread body must not be taken for
  // the next request).
  void screen(httplib::Request& req) const {
    auto refuse = [&](int status, const char* code, std::string message, std::string allow = "") {
      t_refusal = Refusal{status, code, std::move(message), std::move(allow)};
      t_close_after = true;
      req.headers.erase("Connection");
      req.set_header("Connection", "close");
    };
    if (std::any_of(req.path.begin(), req.path.end(),
                    [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
      return refuse(400, "bad_path", "the path holds a control character (%00 and the like)");
    }
    const auto it = allowed.find(req.path);
    const bool known = it != allowed.end();
    const std::string allow = known ? it->second : "GET, HEAD";
    const bool is_post = req.method == "POST";
    const bool is_get = req.method == "GET" || req.method == "HEAD";
    const bool ok = known ? (allow == "POST" ? is_post : is_get) : (is_get || is_post);
    if (!ok) {
      return refuse(
          405, "method_not_allowed",
          clip_utf8(req.method, 16) + " is not allowed on this path (Allow: " + allow + ")", allow);
    }
    const bool has_length = req.has_header("Content-Length");
    if (req.has_header("Transfer-Encoding")) {
      return refuse(411, "length_required", "send the body with a Content-Length, not chunked");
    }
    if (!has_length) {
      if (is_post) return refuse(411, "length_required", "a POST needs a Content-Length");
      return;
    }
    const std::string length = req.get_header_value("Content-Length");
    if (length.empty() || length.size() > 19 ||
        !std::all_of(length.begin(), length.end(),
                     [](unsigned char c) { return std::isdigit(c); })) {
      return refuse(400, "bad_length", "Content-Length is not a number");
    }
    const std::uint64_t n = std::stoull(length);
    if (is_get) {
      if (n > 0) t_close_after = true;  // a GET's body is not read
      return;
    }
    const bool upload = req.path == "/api/quantize";
    // Every POST body here is JSON or a .safetensors file, whatever it is labelled
    // (curl -d says form-urlencoded): httplib must not parse it as a form or as
    // multipart parts, which it would (and refuse forms past 8 KB).
    req.headers.erase("Content-Type");
    req.set_header("Content-Type", upload ? "application/octet-stream" : "application/json");
    const std::size_t limit = upload ? options.max_upload_bytes : options.max_body_bytes;
    if (n > limit) {
      return refuse(413, "payload_too_large",
                    "the body is " + length + " bytes, more than the " + std::to_string(limit) +
                        " this endpoint takes");
    }
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
      return unavailable(why.empty() ? "roofline-gpu failed" : clip_utf8(why, 300));
    }
    // Its answer is checked like any other input.
    json out;
    try {
      out = service::parse_request(r.out);  // bounded depth, like every JSON read here
    } catch (const Error&) {
      return unavailable("roofline-gpu answered something that is not its JSON");
    }
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
    const std::optional<std::string> name = host_name(host);
    if (is_loopback(options.host) && !host.empty() && (!name || !is_loopback(*name))) {
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

  // GET /api/validation: the built-in published cases, each predicted with its
  // own engine on this registry's devices (the document of roofline validate
  // --json). A throw leaves the flag unset: the next request tries again.
  const json& validation() {
    std::call_once(validation_once, [this] {
      const ValidationReport r = validate_cases(built_in_validation(), registry, {}, "case");
      validation_cache = validation_document(r, Mode::kRealistic, registry);
    });
    return validation_cache;
  }

  // GET /api/validation/serving: the serving model against the development
  // set's measured TTFT and TPOT (the document of roofline validate --serving
  // --json: each run's own engine, AIConfigurator's recipe, 10 rounds).
  const json& serving_validation() {
    std::call_once(serving_validation_once, [this] {
      const ServingRecipe recipe = ServingRecipe::kAiConfigurator;
      const DecodeStepReport r =
          validate_serving(built_in_serving_runs(), registry, "case", recipe, kDefaultRounds);
      serving_validation_cache = serving_validation_document(r, recipe, kDefaultRounds, registry);
    });
    return serving_validation_cache;
  }

  void routes() {
    http->screen = [this](httplib::Request& req) { screen(req); };
    http->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      http->mark_busy();
      if (t_refusal) {
        if (!t_refusal->allow.empty()) res.set_header("Allow", t_refusal->allow);
        send_error(res, t_refusal->status, t_refusal->code, t_refusal->message);
        return httplib::Server::HandlerResponse::Handled;
      }
      return refuse_foreign(req, res) ? httplib::Server::HandlerResponse::Handled
                                      : httplib::Server::HandlerResponse::Unhandled;
    });
    limits.max_sweep_rows = options.max_sweep_rows;
    limits.time_limit_s = options.request_time_limit_s;
    limits.allow_files = false;
    get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      send_json(res, {{"status", "ok"}, {"version", std::string(version())}});
    });
    for (const std::string prefix : {"/api", "/api/public"}) {
      get(prefix + "/hardware", [this](const httplib::Request&, httplib::Response& res) {
        send_json(res, service::hardware_list(registry));
      });
      get(prefix + "/models", [](const httplib::Request&, httplib::Response& res) {
        send_json(res, service::model_list());
      });
      get(prefix + "/strategies", [](const httplib::Request&, httplib::Response& res) {
        send_json(res, service::strategy_list());
      });
      get(prefix + "/engines", [](const httplib::Request&, httplib::Response& res) {
        send_json(res, service::engine_list());
      });
      get(prefix + "/validation", [this](const httplib::Request&, httplib::Response& res) {
        send_json(res, validation());
      });
      get(prefix + "/validation/serving", [this](const httplib::Request&, httplib::Response& res) {
        send_json(res, serving_validation());
      });
      post(prefix + "/predict",
           [this](const json& b) { return service::predict(b, registry, limits); });
      post(prefix + "/generate",
           [this](const json& b) { return service::generate(b, registry, limits); });
      post(prefix + "/serving",
           [this](const json& b) { return service::serving(b, registry, limits); });
      post(prefix + "/search", [this](const json& b) {
        service::Limits search_limits = limits;
        search_limits.time_limit_s = options.search_time_limit_s;
        return service::search(b, registry, search_limits);
      });
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
      post_text(prefix + "/sweep",
                [this](const json& b) { return service::sweep_text(b, registry, limits); });
      post_text(prefix + "/sweep/gemm",
                [this](const json& b) { return service::sweep_gemm_text(b, registry, limits); });
    }
    get("/api/openapi.json", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, openapi(options.public_only));
    });
    // Interactive docs (swagger-ui, copied into the built web app) where the app is
    // served; otherwise a plain page listing the endpoints.
    std::error_code ec;
    const bool swagger = !options.web_dir.empty() &&
                         std::filesystem::is_regular_file(
                             std::filesystem::path(options.web_dir) / "docs" / "index.html", ec);
    get("/docs", [swagger](const httplib::Request&, httplib::Response& res) {
      if (swagger) {
        res.set_redirect("/docs/");
      } else {
        res.set_content(kDocsPage, "text/html");
      }
    });
    if (!options.public_only) {
      allowed["/api/quantize"] = "POST";
      http->Post("/api/quantize", [this](const httplib::Request& req, httplib::Response& res) {
        t_trim_after = true;
        try {
          const DeadlineScope deadline(options.upload_time_limit_s);
          QuantizeOptions qo;
          qo.max_tensors = options.max_upload_tensors;
          qo.max_listed_outliers = options.max_listed_outliers;
          const auto reports = quantize_bytes(req.body, "upload", qo);
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
                        {"outlier_channel_count", t.outlier_channel_count},
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
      get("/api/nvml/status", [](const httplib::Request&, httplib::Response& res) {
        send_json(res, nvml_json(nvml::sample()));
      });
      get("/api/nvml/stream", [this](const httplib::Request&, httplib::Response& res) {
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
      http->set_mount_point("/", options.web_dir);
    } else {
      get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(
            "<!doctype html><title>Roofline</title><p>The web app is not built into this server. "
            "The API is under <a href=\"/docs\">/docs</a>.</p>",
            "text/html");
      });
    }
    http->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      // A method httplib does not know fails its request line (400): 405 with
      // the methods there are. Its headers are unread, so the connection closes.
      static const char* kKnown[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                     "CONNECT", "OPTIONS", "TRACE", "PATCH"};
      if (res.status == 400 && res.body.empty() && !req.method.empty() &&
          std::none_of(std::begin(kKnown), std::end(kKnown),
                       [&](const char* m) { return req.method == m; })) {
        t_close_after = true;
        res.status = 405;
        res.set_header("Allow", "GET, HEAD, POST");
        send_error(res, 405, "method_not_allowed",
                   "unknown method " + clip_utf8(req.method, 16) + " (Allow: GET, HEAD, POST)");
        return;
      }
      if (!res.body.empty()) return;
      const char* code = res.status == 404   ? "not_found"
                         : res.status == 413 ? "payload_too_large"
                         : res.status == 405 ? "method_not_allowed"
                                             : "error";
      send_error(res, res.status, code, res.status == 404 ? "no such endpoint" : "request refused");
    });
    http->set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "internal error";
          int status = 500;
          std::string code = "internal";
          try {
            if (ep) std::rethrow_exception(ep);
          } catch (const json::exception& e) {
            // Malformed input that slipped past the typed checks is still bad input.
            status = 400;
            code = "invalid_request";
            what = e.what();
          } catch (const std::exception& e) {
            what = e.what();
          }
          send_error(res, status, code, what);
        });
  }
};

Server::Server(Options options, Registry registry) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->registry = std::move(registry);
  const int threads = std::max(1, impl_->options.threads);
  // A quarter of the workers stay out of any one address's reach.
  const int per_client = impl_->options.max_connections_per_client > 0
                             ? impl_->options.max_connections_per_client
                             : std::max(1, threads - threads / 4);
  impl_->http = std::make_unique<GuardedServer>(impl_->options.request_read_timeout_s, per_client);
  // Blocks of 256 KB and more (bodies, sweep text, upload statistics) are
  // mapped and unmapped on their own, so a large request gives its memory back
  // when it ends (glibc otherwise raises this threshold to the largest block
  // freed, up to 32 MB, and keeps such blocks in its heaps).
  ::mallopt(M_MMAP_THRESHOLD, 256 << 10);
  impl_->http->new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  // The larger of the two limits; JSON endpoints check their own.
  impl_->http->set_payload_max_length(
      std::max(impl_->options.max_body_bytes, impl_->options.max_upload_bytes));
  impl_->http->set_read_timeout(impl_->options.timeout_s, 0);
  // Keep-alive connections each hold a worker while open: many requests per
  // connection, but a short idle time so that a quiet client frees its worker.
  impl_->http->set_keep_alive_max_count(100);
  impl_->http->set_keep_alive_timeout(2);
  // Headers and body go out in separate writes; without TCP_NODELAY, Nagle's
  // algorithm holds the body until the client's delayed ACK (~40 ms a request).
  impl_->http->set_tcp_nodelay(true);
  impl_->http->set_write_timeout(impl_->options.timeout_s, 0);
  impl_->routes();
}

Server::~Server() { stop(); }

int Server::bind() {
  const auto& o = impl_->options;
  if (o.port == 0) {
    impl_->port = impl_->http->bind_to_any_port(o.host);
  } else {
    impl_->port = impl_->http->bind_to_port(o.host, o.port) ? o.port : -1;
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
  impl_->http->listen_after_bind();
  std::lock_guard<std::mutex> lock(impl_->state_mutex);
  impl_->listen_state = Impl::ListenState::kReturned;
}

std::size_t Server::connections_of(const std::string& address) const {
  return impl_->http ? impl_->http->connections_of(address) : 0;
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
    if (impl_->http->is_running()) {
      impl_->http->stop();
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
