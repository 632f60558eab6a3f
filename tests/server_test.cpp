// The HTTP API against a started server: status codes, fields, malformed,
// oversized and hostile bodies.
#include "../apps/server/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "roofline/validate.h"

namespace roofline::server {
namespace {

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Options o;
    o.port = 0;
    o.max_body_bytes = 64 << 10;
    o.max_sweep_rows = 1000;
    o.threads = 4;
    server_ = new Server(o, Registry::built_in());
    port_ = server_->bind();
    thread_ = new std::thread([] { server_->listen(); });
    Options p = o;
    p.public_only = true;
    public_ = new Server(p, Registry::built_in());
    public_port_ = public_->bind();
    public_thread_ = new std::thread([] { public_->listen(); });
  }
  static void TearDownTestSuite() {
    server_->stop();
    public_->stop();
    thread_->join();
    public_thread_->join();
    delete thread_;
    delete public_thread_;
    delete server_;
    delete public_;
  }
  static httplib::Client client(bool pub = false) {
    httplib::Client c("127.0.0.1", pub ? public_port_ : port_);
    c.set_connection_timeout(10, 0);
    c.set_read_timeout(30, 0);
    return c;
  }
  static nlohmann::json post(const std::string& path, const std::string& body, int expected) {
    auto c = client();
    auto res = c.Post(path.c_str(), body, "application/json");
    EXPECT_TRUE(res) << path;
    if (!res) return {};
    EXPECT_EQ(res->status, expected)
        << path << " " << body.substr(0, 200) << " -> " << res->body.substr(0, 300);
    return nlohmann::json::parse(res->body, nullptr, false);
  }
  static void expect_error(const std::string& path, const std::string& body, int status,
                           const std::string& code) {
    const auto j = post(path, body, status);
    ASSERT_TRUE(j.contains("error")) << j.dump();
    EXPECT_EQ(j["error"]["code"], code) << j.dump();
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
  }

  static inline Server* server_ = nullptr;
  static inline Server* public_ = nullptr;
  static inline std::thread* thread_ = nullptr;
  static inline std::thread* public_thread_ = nullptr;
  static inline int port_ = 0;
  static inline int public_port_ = 0;
};

TEST_F(ServerTest, HealthAndLists) {
  auto c = client();
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto hw = c.Get("/api/hardware");
  ASSERT_TRUE(hw);
  EXPECT_GE(nlohmann::json::parse(hw->body)["devices"].size(), 18u);
  auto models = c.Get("/api/public/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(nlohmann::json::parse(models->body)["models"].size(), 25u);
  auto api = c.Get("/api/openapi.json");
  ASSERT_TRUE(api);
  const auto doc = nlohmann::json::parse(api->body);
  EXPECT_EQ(doc["openapi"], "3.0.3");
  EXPECT_TRUE(doc["paths"].contains("/api/predict"));
  auto docs = c.Get("/docs");
  ASSERT_TRUE(docs);
  EXPECT_NE(docs->body.find("/api/openapi.json"), std::string::npos);
}

TEST_F(ServerTest, PredictReturnsTheCliFields) {
  const auto j = post(
      "/api/predict",
      R"({"model": "llama-3.1-8b", "hardware": "gb10", "phase": "decode", "batch": 1, "seq_len": 4096, "per_op": true})",
      200);
  for (const char* key :
       {"time_s", "tokens_per_s", "bound", "flops", "bytes", "memory", "ops", "capacity"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["ops"].size(), 20u);
  // The short form works as a model object.
  const auto s = post(
      "/api/public/predict",
      R"({"model": {"H": 4096, "L": 32, "nh": 32, "nkv": 8, "dh": 128, "dff": 14336}, "hardware": "h100"})",
      200);
  EXPECT_GT(s["time_s"].get<double>(), 0);
}

// The serving model and the deployment search over HTTP: the CLI's documents,
// bad input as 4xx JSON.
TEST_F(ServerTest, ServingAndSearch) {
  auto v = post("/api/serving",
                R"({"model": "llama-3.1-70b", "hardware": "h200", "engine": "vllm", "tp": 2,
                    "weights": "fp8", "act": "fp8", "isl": 1024, "osl": 256, "concurrency": 64})",
                200);
  EXPECT_GT(v["tpot_s"].get<double>(), 0);
  EXPECT_EQ(v["gpus"], 2);
  // Expert parallelism with attention DP on the decode workers of a disaggregated
  // layout: they divide the decode workers' TP; EP on a dense model is a 400.
  auto e = post("/api/serving",
                R"({"model": "deepseek-v3", "hardware": "h200", "engine": "sglang",
                    "weights": "fp8", "act": "fp8", "mode": "disagg", "prefill_tp": 8,
                    "decode_tp": 8, "attention_dp": 8, "ep": 8, "isl": 1024, "osl": 64,
                    "concurrency": 16, "rounds": 2})",
                200);
  EXPECT_EQ(e["ep"], 8);
  EXPECT_EQ(e["gpus"], 16);
  EXPECT_EQ(e["prefill_attention_dp"], 1);
  // The prefill workers' own attention DP and EP, dividing their TP.
  auto p = post("/api/serving",
                R"({"model": "deepseek-v3", "hardware": "h200", "engine": "sglang",
                    "weights": "fp8", "act": "fp8", "mode": "disagg", "prefill_tp": 8,
                    "prefill_attention_dp": 8, "prefill_ep": 8, "decode_tp": 8, "isl": 1024,
                    "osl": 64, "concurrency": 16, "rounds": 2})",
                200);
  EXPECT_EQ(p["prefill_attention_dp"], 8);
  EXPECT_EQ(p["prefill_ep"], 8);
  EXPECT_NE(p["ttft_s"], e["ttft_s"]);
  expect_error("/api/serving",
               R"({"model": "deepseek-v3", "hardware": "h200", "mode": "disagg", "prefill_tp": 8,
                   "decode_tp": 8, "prefill_ep": 3})",
               400, "invalid_argument");
  expect_error("/api/serving",
               R"({"model": "deepseek-v3", "hardware": "h200", "tp": 8, "prefill_ep": 8})", 400,
               "invalid_argument");
  // AIConfigurator's benchmark limits: a decode worker's batch of 8 and one prompt a
  // prefill worker; an unknown recipe is a 400, the recipe without an engine a 422.
  auto aic = post("/api/serving",
                  R"({"model": "deepseek-v3", "hardware": "h200", "engine": "sglang",
                      "weights": "fp8", "act": "fp8", "mode": "disagg", "prefill_tp": 8,
                      "decode_tp": 8, "isl": 1024, "osl": 64, "concurrency": 16, "rounds": 2,
                      "recipe": "aiconfigurator", "decode_batch": 8})",
                  200);
  EXPECT_EQ(aic["recipe"], "aiconfigurator");
  EXPECT_EQ(aic["max_running"], 1);
  EXPECT_EQ(aic["decode_max_running"], 8);
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm",
                   "recipe": "dynamo"})",
               400, "invalid_argument");
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "recipe": "aiconfigurator"})", 422,
               "unsupported");
  // Speculative decoding: the step yields more tokens; bad acceptances are 400s.
  auto sp = post("/api/serving",
                 R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm", "isl": 512,
                     "osl": 64, "concurrency": 4, "rounds": 2, "draft_tokens": 3})",
                 200);
  auto plain = post("/api/serving",
                    R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm", "isl": 512,
                        "osl": 64, "concurrency": 4, "rounds": 2})",
                    200);
  EXPECT_LT(sp["tpot_s"].get<double>(), plain["tpot_s"].get<double>());
  auto prefix = post("/api/serving",
                     R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm", "isl": 512,
                         "osl": 64, "concurrency": 4, "rounds": 2, "shared_prefix": 384})",
                     200);
  EXPECT_EQ(prefix["shared_prefix"], 384);
  EXPECT_LT(prefix["ttft_s"].get<double>(), plain["ttft_s"].get<double>());
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "isl": 512, "shared_prefix": 512})",
               400, "invalid_argument");
  // TensorRT-LLM's batch waiting: prompts held back for fuller steps; another
  // engine or a ratio past 1 is a 400.
  auto waited = post("/api/serving",
                     R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "trtllm",
                         "isl": 512, "osl": 64, "concurrency": 4, "rounds": 2,
                         "batch_wait_iters": 10, "batch_wait_ratio": 0.9})",
                     200);
  EXPECT_EQ(waited["batch_wait"]["iters"], 10);
  EXPECT_GT(waited["batch_wait"]["waited_steps"].get<std::int64_t>(), 0);
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm",
                   "batch_wait_iters": 10})",
               400, "invalid_argument");
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "trtllm",
                   "batch_wait_iters": 10, "batch_wait_ratio": 2})",
               400, "invalid_argument");
  // TensorRT-LLM's attention-DP balance; another engine or a bad count is a 400.
  auto balanced = post("/api/serving",
                       R"({"model": "deepseek-v3", "hardware": "b200", "engine": "trtllm",
                           "tp": 8, "attention_dp": 8, "ep": 8, "weights": "fp8", "act": "fp8",
                           "isl": 1024, "osl": 128, "concurrency": 32, "rounds": 2,
                           "adp_balance": true, "adp_timeout_iters": 60,
                           "adp_batching_wait_iters": 0})",
                       200);
  EXPECT_EQ(balanced["adp_balance"]["timeout_iters"], 60);
  EXPECT_GT(balanced["adp_balance"]["held_steps"].get<std::int64_t>(), 0);
  expect_error("/api/serving",
               R"({"model": "deepseek-v3", "hardware": "b200", "engine": "vllm", "tp": 8,
                   "attention_dp": 8, "ep": 8, "adp_balance": true})",
               400, "invalid_argument");
  expect_error("/api/serving",
               R"({"model": "deepseek-v3", "hardware": "b200", "engine": "trtllm", "tp": 8,
                   "attention_dp": 8, "ep": 8, "adp_balance": "yes"})",
               400, "invalid_argument");
  expect_error("/api/serving",
               R"({"model": "deepseek-v3", "hardware": "b200", "engine": "trtllm", "tp": 8,
                   "attention_dp": 8, "ep": 8, "adp_balance": true, "adp_timeout_iters": -1})",
               400, "invalid_argument");
  // SGLang's receive interval; another engine is a 400.
  auto recv = post("/api/serving",
                   R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "sglang",
                       "isl": 512, "osl": 64, "concurrency": 8, "rounds": 2,
                       "scheduler_recv_interval": 10})",
                   200);
  EXPECT_EQ(recv["scheduler_recv_interval"], 10);
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm",
                   "scheduler_recv_interval": 10})",
               400, "invalid_argument");
  // The deployment's KV memory share; one past 1, or of the wrong type, is a 400.
  auto share = post("/api/serving",
                    R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm",
                        "isl": 512, "osl": 64, "concurrency": 4, "rounds": 1,
                        "kv_memory_share": 0.5})",
                    200);
  EXPECT_DOUBLE_EQ(share["kv_memory"]["share"].get<double>(), 0.5);
  EXPECT_EQ(share["kv_memory"]["set"], true);
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "kv_memory_share": 1.5})", 400,
               "invalid_argument");
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "kv_memory_share": "0.5"})", 400,
               "invalid_argument");
  // A prompt pool: repeats found in the prefix cache; bad pools and disaggregated ones are 400s.
  auto pooled = post("/api/serving",
                     R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm", "isl": 512,
                         "osl": 64, "concurrency": 4, "rounds": 4, "prompt_pool": 2})",
                     200);
  EXPECT_EQ(pooled["prompt_pool"], 2);
  EXPECT_GT(pooled["prefix_hit_rate"].get<double>(), 0.5);
  EXPECT_EQ(plain["prefix_hit_rate"], 0);
  for (const char* bad : {R"("prompt_pool": -1)", R"("prompt_pool": "100")",
                          R"("prompt_pool": 1.5)", R"("prompt_pool": 1e300)"}) {
    expect_error("/api/serving",
                 std::string(R"({"model": "llama-3.1-8b", "hardware": "h100", )") + bad + "}", 400,
                 "invalid_argument");
  }
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "mode": "disagg",
                   "prompt_pool": 4})",
               400, "invalid_argument");
  // Random lengths: InferenceMAX's range ratio, or the shortest lengths; not both.
  auto ranged = post("/api/serving",
                     R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm", "isl": 512,
                         "osl": 64, "concurrency": 4, "rounds": 2, "range_ratio": 0.8})",
                     200);
  EXPECT_EQ(ranged["isl_min"], 409);
  EXPECT_EQ(ranged["osl_min"], 51);
  EXPECT_EQ(plain["isl_min"], 512);
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "range_ratio": 0.8,
                   "isl_min": 100})",
               400, "invalid_argument");
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "isl": 512, "isl_min": 513})", 400,
               "invalid_argument");
  expect_error("/api/serving", R"({"model": "llama-3.1-8b", "hardware": "h100", "range_ratio": 2})",
               400, "invalid_argument");
  // The engine's release dates its behaviour: vLLM before 0.14.0 forms each batch as
  // its step starts. Not a string, too long, or other characters: 400s.
  auto dated = post("/api/serving",
                    R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm", "isl": 512,
                        "osl": 64, "concurrency": 4, "rounds": 2, "engine_version": "0.12.0"})",
                    200);
  EXPECT_EQ(dated["engine_version"], "0.12.0");
  EXPECT_FALSE(dated["formed_a_step_ahead"].get<bool>());
  EXPECT_TRUE(plain["formed_a_step_ahead"].get<bool>());
  EXPECT_LT(dated["ttft_s"].get<double>(), plain["ttft_s"].get<double>());
  // A deployment that turned async scheduling on in that release forms them ahead.
  auto opted = post("/api/serving",
                    R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm", "isl": 512,
                        "osl": 64, "concurrency": 4, "rounds": 2, "engine_version": "0.12.0",
                        "overlap_scheduling": "on"})",
                    200);
  EXPECT_EQ(opted["overlap_scheduling"], "on");
  EXPECT_TRUE(opted["formed_a_step_ahead"].get<bool>());
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "overlap_scheduling": "maybe"})",
               400, "invalid_argument");
  expect_error("/api/serving",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "chunked_prefill": 1})", 400,
               "invalid_argument");
  for (const char* bad : {R"("engine_version": 14)", R"("engine_version": "0.14.0; rm -rf")",
                          R"("engine_version": "0123456789012345678901234567890123456789x")"}) {
    expect_error(
        "/api/serving",
        std::string(R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm", )") + bad +
            "}",
        400, "invalid_argument");
  }
  expect_error("/api/predict",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "draft_tokens": 2,
                   "acceptance": 1.5})",
               400, "invalid_argument");
  expect_error("/api/predict",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "acceptance": 0.5})", 400,
               "invalid_argument");
  // An engine build's date: a date string, or a 400.
  const auto may_2024 = post("/api/predict",
                             R"({"model": "llama-3.1-8b", "hardware": "a100", "engine": "llama.cpp",
               "weights": "q4_k_m", "act": "fp16", "phase": "prefill", "seq_len": 512,
               "engine_build": "2024-05"})",
                             200);
  const auto current = post("/api/predict",
                            R"({"model": "llama-3.1-8b", "hardware": "a100", "engine": "llama.cpp",
               "weights": "q4_k_m", "act": "fp16", "phase": "prefill", "seq_len": 512})",
                            200);
  EXPECT_GT(may_2024["time_s"].get<double>(), current["time_s"].get<double>());
  // The sweep takes the build too: its one row is the dated prediction above.
  const auto swept = post("/api/sweep",
                          R"({"models": ["llama-3.1-8b"], "hardware": ["a100"],
               "engine": "llama.cpp", "weights": ["q4_k_m"], "acts": ["fp16"],
               "phases": ["prefill"], "seq_lens": [512], "engine_build": "2024-05"})",
                          200);
  ASSERT_EQ(swept["rows"].size(), 1u);
  constexpr double kSweepDigits = 1e-5;  // sweep rows carry six significant digits
  EXPECT_NEAR(swept["rows"][0]["time_s"].get<double>(), may_2024["time_s"].get<double>(),
              kSweepDigits * may_2024["time_s"].get<double>());
  expect_error(
      "/api/sweep",
      R"({"models": ["llama-3.1-8b"], "hardware": ["a100"], "engine_build": "2024-02-30"})", 400,
      "invalid_argument");
  expect_error("/api/predict",
               R"({"model": "llama-3.1-8b", "hardware": "h100", "engine_build": "2024-13"})", 400,
               "invalid_argument");
  for (const char* bad : {"202405", "null", "[\"2024-05\"]"}) {
    const auto j = post("/api/predict",
                        std::string(R"({"model": "llama-3.1-8b", "hardware": "h100", )") +
                            "\"engine_build\": " + bad + "}",
                        400);
    EXPECT_TRUE(j.contains("error")) << bad;
  }
  // An engine release: the rules its profile dates by release follow it (vLLM
  // 0.11.0's Triton attention masks gpt-oss's sliding windows on an A100).
  const std::string long_decode =
      R"({"model": "gpt-oss-20b", "hardware": "a100", "engine": "vllm", "seq_len": 32768)";
  const auto v011 = post("/api/predict", long_decode + R"(, "engine_version": "0.11.0"})", 200);
  const auto latest = post("/api/predict", long_decode + "}", 200);
  EXPECT_GT(v011["time_s"].get<double>(), latest["time_s"].get<double>());
  EXPECT_NE(v011.dump().find("sliding-window layers attend over the whole context"),
            std::string::npos);
  for (const char* bad : {"\"0.11.0 beta!\"", "11", "null"}) {
    const auto j = post("/api/predict", long_decode + ", \"engine_version\": " + bad + "}", 400);
    EXPECT_TRUE(j.contains("error")) << bad;
  }
  // The sweep's one row is the release's prediction.
  const auto swept_release = post("/api/sweep",
                                  R"({"models": ["gpt-oss-20b"], "hardware": ["a100"],
               "engine": "vllm", "seq_lens": [32768], "engine_version": "0.11.0"})",
                                  200);
  ASSERT_EQ(swept_release["rows"].size(), 1u);
  EXPECT_NEAR(swept_release["rows"][0]["time_s"].get<double>(), v011["time_s"].get<double>(),
              1e-5 * v011["time_s"].get<double>());  // the sweep's six significant digits
  expect_error("/api/sweep",
               R"({"models": ["gpt-oss-20b"], "hardware": ["a100"], "engine_version": 11})", 400,
               "invalid_argument");
  // No act: the engine's for the weights. vLLM runs fp8 weights W8A8 on an H100
  // (the cache keeps 16 bits); asked for, bf16 stays, and the note says what vLLM runs.
  const auto w8a8 = post("/api/predict",
                         R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm",
               "weights": "fp8"})",
                         200);
  EXPECT_EQ(w8a8["scenario"]["act"], "fp8");
  EXPECT_EQ(w8a8["scenario"]["kv"], "bf16");
  EXPECT_NE(w8a8["notes"].dump().find("fp8 activations: vLLM runs fp8 weights with them"),
            std::string::npos)
      << w8a8["notes"].dump();
  const auto w8a16 = post("/api/predict",
                          R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm",
               "weights": "fp8", "act": "bf16"})",
                          200);
  EXPECT_EQ(w8a16["scenario"]["act"], "bf16");
  EXPECT_NE(w8a16["notes"].dump().find("vLLM runs them with fp8 activations here"),
            std::string::npos)
      << w8a16["notes"].dump();
  EXPECT_EQ(post("/api/predict", R"({"model": "llama-3.1-8b", "hardware": "a100", "engine": "vllm",
               "weights": "fp8"})",
                 200)["scenario"]["act"],
            "bf16");  // Ampere: weight-only fp8 (vLLM's FP8 Marlin)
  // A prompt after cached tokens: echoed, slower than the prompt alone; a decode
  // step's depth is its seq_len (400); generate takes them as an earlier turn.
  const auto follow_up = post("/api/predict",
                              R"({"model": "llama-3.1-8b", "hardware": "h100",
               "phase": "prefill", "seq_len": 1024, "cached": 8192})",
                              200);
  const auto first_turn = post("/api/predict",
                               R"({"model": "llama-3.1-8b", "hardware": "h100",
               "phase": "prefill", "seq_len": 1024})",
                               200);
  EXPECT_EQ(follow_up["scenario"]["cached"], 8192);
  EXPECT_NE(follow_up["notes"].dump().find("a prompt of 1024 tokens after 8192 cached"),
            std::string::npos)
      << follow_up["notes"].dump();
  EXPECT_GT(follow_up["time_s"].get<double>(), first_turn["time_s"].get<double>());
  expect_error("/api/predict", R"({"model": "llama-3.1-8b", "phase": "decode", "cached": 64})", 400,
               "invalid_argument");
  expect_error("/api/predict", R"({"model": "llama-3.1-8b", "phase": "prefill", "cached": -1})",
               400, "invalid_argument");
  const auto turn = post("/api/generate",
                         R"({"model": "llama-3.1-8b", "hardware": "h100", "prompt": 1024,
               "gen": 16, "cached": 8192})",
                         200);
  EXPECT_DOUBLE_EQ(turn["ttft_s"].get<double>(), follow_up["time_s"].get<double>());
  EXPECT_GT(turn["ttft_recomputed_s"].get<double>(), turn["ttft_s"].get<double>());
  EXPECT_TRUE(post("/api/generate", R"({"model": "llama-3.1-8b", "prompt": 64, "gen": 2})",
                   200)["ttft_recomputed_s"]
                  .is_null());
  // Past the longest context with the prompt (and what it generates): a 400.
  expect_error("/api/generate",
               R"({"model": "llama-3.1-8b", "prompt": 1024, "gen": 16, "cached": 1073741000})", 400,
               "invalid_argument");
  expect_error("/api/generate",
               R"({"model": "llama-3.1-8b", "prompt": 1024, "gen": 16, "cached": 1073740790})", 400,
               "invalid_argument");
  // A graph policy: one of three names, or a 400; without graphs a step costs
  // more (a prompt within vLLM's captured graphs, 512 tokens).
  const auto eager_prefill = post("/api/predict",
                                  R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm",
               "phase": "prefill", "seq_len": 256, "cuda_graphs": "off"})",
                                  200);
  const auto piecewise_prefill = post("/api/predict",
                                      R"({"model": "llama-3.1-8b", "hardware": "h100",
               "engine": "vllm", "phase": "prefill", "seq_len": 256})",
                                      200);
  EXPECT_GT(eager_prefill["time_s"].get<double>(), piecewise_prefill["time_s"].get<double>());
  EXPECT_EQ(eager_prefill["engine"]["graph_policy"], "off");
  const auto eager_serving = post("/api/serving",
                                  R"({"model": "llama-3.1-8b", "hardware": "h100", "engine": "vllm",
               "isl": 512, "osl": 64, "concurrency": 4, "cuda_graphs": "off"})",
                                  200);
  EXPECT_NE(eager_serving.dump().find("CUDA graphs off (the deployment's)"), std::string::npos);
  for (const char* bad : {"\"none\"", "false", "[\"off\"]"}) {
    const std::string body = std::string(R"({"model": "llama-3.1-8b", "hardware": "h100", )") +
                             "\"cuda_graphs\": " + bad + "}";
    expect_error("/api/serving", body, 400, "invalid_argument");
    EXPECT_NE(post("/api/serving", body, 400).dump().find("cuda_graphs"), std::string::npos) << bad;
  }
  // A MoE kernel family: Triton's measured layers price vLLM's MoE on B200 (slower than
  // FlashInfer's, its default there); unknown names, unmeasured families and engines
  // without MoE tables are 400s.
  const std::string minimax =
      R"({"model": "minimax-m2", "hardware": "b200", "engine": "vllm", "weights": "fp8",
          "act": "fp8", "tp": 2, "ep": 2, "batch": 32, "seq_len": 1500)";
  const auto flashinfer = post("/api/predict", minimax + "}", 200);
  const auto triton = post("/api/predict", minimax + R"(, "moe_kernel": "triton"})", 200);
  EXPECT_GT(triton["time_s"].get<double>(), flashinfer["time_s"].get<double>());
  for (const char* bad : {R"("cuda")", "1", R"("flashinfer-trtllm", "hardware": "h200")"}) {
    expect_error("/api/predict", minimax + R"(, "moe_kernel": )" + bad + "}", 400,
                 "invalid_argument");
  }
  expect_error("/api/serving",
               R"({"model": "minimax-m2", "hardware": "b200", "moe_kernel": "triton"})", 400,
               "invalid_argument");
  expect_error("/api/serving", R"({"model": "llama-3.1-8b", "hardware": "h100", "tp": 2, "ep": 2})",
               400, "invalid_argument");
  expect_error("/api/serving", R"({"model": "llama-3.1-8b", "hardware": "h100", "batch": 4})", 400,
               "invalid_argument");
  expect_error("/api/serving", R"({"model": "llama-3.1-70b", "hardware": "h100"})", 422,
               "unsupported");
  auto f = post("/api/search",
                R"({"model": "llama-3.1-8b", "hardware": "h100", "gpus": 2, "tpot_max": 0.02,
                    "engines": ["vllm"], "concurrencies": [1, 16, 128]})",
                200);
  EXPECT_FALSE(f["front"].empty());
  EXPECT_TRUE(f["best"]["meets_targets"].get<bool>());
  expect_error("/api/search", R"({"model": "llama-3.1-8b", "hardware": "h100", "gpus": 0})", 400,
               "invalid_argument");
  expect_error("/api/search", R"({"model": "llama-3.1-8b", "engines": ["nope"]})", 404,
               "not_found");
  expect_error("/api/search", R"({"model": "llama-3.1-8b", "concurrencies": [0]})", 400,
               "invalid_argument");
  // A release for one of the searched engines: its deployments carry it.
  const std::string one_vllm =
      R"({"model": "llama-3.1-8b", "hardware": "h100", "gpus": 1, "engines": ["vllm"],
          "weights": ["fp8"], "concurrencies": [4], "engine_versions": )";
  const auto release = post("/api/search", one_vllm + R"({"vllm": "0.12.0"}})", 200);
  EXPECT_EQ(release["engine_versions"]["vllm"], "0.12.0");
  EXPECT_EQ(release["best"]["engine_version"], "0.12.0");
  for (const char* bad : {R"({"trtllm": "1.0.0"})", R"({"vllm": 12})", R"(["vllm"])",
                          R"({"vllm": "0.12.0; rm -rf"})"}) {
    expect_error("/api/search", one_vllm + bad + "}", 400, "invalid_argument");
  }
}

TEST_F(ServerTest, GenerateRecommendAnalyzeSweep) {
  auto g = post("/api/generate",
                R"({"model": "llama-3.1-8b", "hardware": "h100", "prompt": 512, "gen": 64})", 200);
  EXPECT_GT(g["ttft_s"].get<double>(), 0);
  auto r = post("/api/recommend", R"({"model": "llama-3-8b", "hardware": "gb10", "seq_len": 4096})",
                200);
  EXPECT_EQ(r["strategy"], "fp8_balanced");
  auto a = post("/api/analyze",
                R"({"hardware": "gb10", "m": 1, "n": 4096, "k": 4096, "ideal": true})", 200);
  EXPECT_NEAR(a["time_s"].get<double>(), 33'570'816 / 273e9, 1e-9);
  auto s =
      post("/api/sweep",
           R"({"models": ["llama-3.1-8b"], "hardware": ["h100", "gb10"], "batches": [1, 8]})", 200);
  EXPECT_EQ(s["count"], 4);
  EXPECT_EQ(s["rows"].size(), 4u);
}

TEST_F(ServerTest, BadRequestsAreJsonErrors) {
  expect_error("/api/predict", "{not json", 400, "invalid_json");
  expect_error("/api/predict", "[1, 2]", 400, "invalid_argument");
  expect_error("/api/predict", R"({"model": "llama-3.1-8b", "colour": "red"})", 400,
               "invalid_argument");
  expect_error("/api/predict", R"({"model": "gpt-5"})", 404, "not_found");
  expect_error("/api/predict", R"({"model": "llama-3.1-8b", "hardware": "h9000"})", 404,
               "not_found");
  expect_error("/api/predict", R"({"model": "llama-3.1-8b", "batch": -1})", 400,
               "invalid_argument");
  expect_error("/api/predict", R"({"model": "llama-3.1-8b", "batch": 1e300})", 400,
               "invalid_argument");
  expect_error("/api/predict", R"({"model": "llama-3.1-8b", "seq_len": "long"})", 400,
               "invalid_argument");
  expect_error("/api/predict",
               R"({"model": "llama-3.1-8b", "hardware": "a100", "attention": "fa3"})", 422,
               "unsupported");
  // No file is read on the server's behalf.
  expect_error("/api/predict", R"({"model": "../../etc/passwd"})", 400, "invalid_argument");
  expect_error("/api/predict", R"({"model": "/etc/hostname"})", 400, "invalid_argument");
  expect_error("/api/predict", R"({"model": "llama-3.1-8b", "strategy": "/tmp/x.json"})", 400,
               "invalid_argument");
  // Deep nesting and an oversized body.
  expect_error("/api/predict", std::string(20'000, '['), 400, "invalid_json");
  expect_error("/api/predict", "{\"model\": \"" + std::string(100'000, 'x') + "\"}", 413,
               "payload_too_large");
  // The sweep cap.
  expect_error(
      "/api/sweep",
      R"({"batches": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32],
      "seq_lens": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34]})",
      400, "invalid_argument");
  auto c = client();
  auto missing = c.Get("/api/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(nlohmann::json::parse(missing->body)["error"]["code"], "not_found");
}

TEST_F(ServerTest, NvmlAndPublicOnly) {
  auto c = client();
  auto nv = c.Get("/api/nvml/status");
  ASSERT_TRUE(nv);
  EXPECT_EQ(nv->status, 200);
  const auto j = nlohmann::json::parse(nv->body);
  EXPECT_TRUE(j.contains("available"));
  if (!j["available"].get<bool>()) {
    EXPECT_NE(j["message"].get<std::string>().find("NVML not available"), std::string::npos);
    auto stream = c.Get("/api/nvml/stream");  // one event, then closed
    ASSERT_TRUE(stream);
    EXPECT_EQ(stream->body.rfind("data: {", 0), 0u);
  }
  auto pub = client(true);
  auto q = pub.Post("/api/quantize", "x", "application/octet-stream");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->status, 404);
  auto n = pub.Get("/api/nvml/status");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->status, 404);
  auto p = pub.Post("/api/public/predict", R"({"model": "llama-3.1-8b"})", "application/json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 200);
}

TEST_F(ServerTest, QuantizeUpload) { expect_error("/api/quantize", "garbage", 400, "parse_error"); }

TEST_F(ServerTest, OpenApiExamplesAreAcceptedAndItsKeysAreTheServicesKeys) {
  auto c = client();
  auto doc = c.Get("/api/openapi.json");
  ASSERT_TRUE(doc);
  const auto j = nlohmann::json::parse(doc->body);
  const auto& schemas = j["components"]["schemas"];
  for (const char* name : {"predict", "generate", "recommend", "analyze", "sweep"}) {
    SCOPED_TRACE(name);
    const auto& schema = schemas.at(name);
    // The documented example works as it stands.
    auto r = post(std::string("/api/") + name, schema["example"].dump(), 200);
    EXPECT_FALSE(r.contains("error"));
    // Every documented key is one the service knows: with an invalid value it is
    // refused for that value, never as an unknown key.
    for (const auto& [key, property] : schema["properties"].items()) {
      nlohmann::json body = schema["example"];
      body[key] = nlohmann::json::array();  // an empty list is wrong for every key
      auto bad = post(std::string("/api/") + name, body.dump(), 400);
      ASSERT_TRUE(bad.contains("error")) << key;
      EXPECT_EQ(bad["error"]["message"].get<std::string>().find("unknown key"), std::string::npos)
          << key << ": " << bad["error"]["message"];
    }
  }
}

TEST_F(ServerTest, AnalyzeMeasuresOnlyWhereAGpuBackendIs) {
  // This fixture's server has no roofline-gpu: the measurement says why not.
  auto a = post("/api/analyze", R"({"hardware": "h100", "m": 16, "measure": true})", 200);
  EXPECT_FALSE(a["measurement"]["available"].get<bool>());
  EXPECT_NE(a["measurement"]["reason"].get<std::string>().find("no CUDA device"),
            std::string::npos);
  EXPECT_GT(a["time_s"].get<double>(), 0);  // the prediction is there regardless
  expect_error("/api/analyze", R"({"measure": 1})", 400, "invalid_argument");
  auto c = client(true);
  auto pub = c.Post("/api/public/analyze", R"({"measure": true})", "application/json");
  ASSERT_TRUE(pub);
  EXPECT_EQ(pub->status, 400);
}

TEST_F(ServerTest, OtherSitesAndForeignHostNamesAreRefused) {
  auto c = client();
  // A page on another site (browsers always send Origin on cross-site POSTs).
  auto cross = c.Post("/api/predict", {{"Origin", "http://evil.example"}},
                      R"({"model": "llama-3.1-8b"})", "text/plain");
  ASSERT_TRUE(cross);
  EXPECT_EQ(cross->status, 403);
  EXPECT_EQ(nlohmann::json::parse(cross->body)["error"]["code"], "cross_origin");
  // DNS rebinding: a foreign name resolved to this loopback server.
  auto rebound = c.Get("/api/nvml/status", {{"Host", "evil.example"}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 403);
  EXPECT_EQ(nlohmann::json::parse(rebound->body)["error"]["code"], "forbidden_host");
  // The app's own page: Origin names this server.
  const std::string self = "http://127.0.0.1:" + std::to_string(port_);
  auto same = c.Post("/api/predict", {{"Origin", self}}, R"({"model": "llama-3.1-8b"})",
                     "application/json");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 200);
  auto local = c.Get("/healthz", {{"Host", "localhost:" + std::to_string(port_)}});
  ASSERT_TRUE(local);
  EXPECT_EQ(local->status, 200);
}

TEST_F(ServerTest, SweepTakesAConfigObjectAsAModel) {
  // The short form of Llama-3.1-8B (the original description's keys), with its
  // vocabulary: the same weights as the preset, so the same bytes per row.
  const std::string short_form =
      R"({"H": 4096, "L": 32, "nh": 32, "nkv": 8, "dh": 128, "dff": 14336, "vocab": 128256})";
  auto s = post("/api/sweep",
                R"({"models": [)" + short_form +
                    R"(, "llama-3.1-8b"], "hardware": ["h100"], "seq_lens": [1024, 4096]})",
                200);
  ASSERT_EQ(s["rows"].size(), 4u);
  EXPECT_EQ(s["rows"][0]["weight_bytes"], s["rows"][2]["weight_bytes"]);
  EXPECT_EQ(s["rows"][0]["model"], "custom-1");  // named by its place in the list
  EXPECT_EQ(s["rows"][2]["model"], "llama-3.1-8b");
  expect_error("/api/sweep", R"({"models": [{"H": -1}]})", 400, "invalid_argument");
  expect_error("/api/sweep", R"({"models": []})", 400, "invalid_argument");
}

// Issue 13 item 5: GEMM-shape sweeps (this fixture caps sweeps at 1,000 rows).
TEST_F(ServerTest, SweepGemm) {
  auto s = post("/api/sweep/gemm",
                R"({"hardware": ["h100", "a100"], "m": [1, 16, 4096], "n": [4096],
                    "k": [4096, 14336], "weights": ["bf16", "fp8"], "acts": ["bf16"],
                    "ideal": true})",
                200);
  EXPECT_EQ(s["count"], 2 * 3 * 2 * 2);
  ASSERT_EQ(s["rows"].size(), 24u);
  EXPECT_FALSE(s["version"].get<std::string>().empty());
  EXPECT_EQ(s["data_hash"].get<std::string>().size(), 16u);
  // The H100's 4096^3 bf16 row: 2 * 4096^3 FLOPs at 989.4 TFLOP/s = 138.911 us, compute bound
  // (derivation in sweep_test.cpp).
  const auto& big = s["rows"][8];
  EXPECT_EQ(big["hardware"], "h100-sxm");
  EXPECT_EQ(big["m"], 4096);
  EXPECT_EQ(big["k"], 4096);
  EXPECT_EQ(big["weights"], "bf16");
  EXPECT_EQ(big["bound"], "compute");
  EXPECT_NEAR(big["time_s"].get<double>(), 138.911e-6, 0.001e-6);
  // Defaults: gb10, 1 x 4096 x 4096, fp16; the public mirror answers the same.
  auto d = post("/api/public/sweep/gemm", "{}", 200);
  ASSERT_EQ(d["rows"].size(), 1u);
  EXPECT_EQ(d["rows"][0]["hardware"], "gb10");
  EXPECT_EQ(d["rows"][0]["act"], "fp16");
  // A format the device cannot compute is a row with an error, not a failed request.
  auto e = post("/api/sweep/gemm", R"({"hardware": ["a100"], "acts": ["fp8"]})", 200);
  EXPECT_NE(e["rows"][0]["error"].get<std::string>().find("cannot compute in fp8"),
            std::string::npos);

  expect_error("/api/sweep/gemm", "[1]", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"m": [0]})", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"m": [-16]})", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"n": [4096.5]})", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"k": [1e300]})", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"k": [18446744073709551615]})", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"k": ["4096"]})", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"m": []})", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"m": 16})", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"acts": ["q4_0"]})", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"weights": ["fp7"]})", 404, "not_found");
  expect_error("/api/sweep/gemm", R"({"hardware": ["h9000"]})", 404, "not_found");
  expect_error("/api/sweep/gemm", R"({"model": "llama-3.1-8b"})", 400, "invalid_argument");
  expect_error("/api/sweep/gemm", R"({"ideal": "yes"})", 400, "invalid_argument");
  // Past the row cap (1,001 rows here), refused before any row is computed.
  nlohmann::json ms = nlohmann::json::array();
  for (int i = 1; i <= 1001; ++i) ms.push_back(i);
  expect_error("/api/sweep/gemm", nlohmann::json({{"m", ms}}).dump(), 400, "invalid_argument");
  const auto over = post("/api/sweep/gemm", nlohmann::json({{"m", ms}}).dump(), 400);
  EXPECT_NE(over["error"]["message"].get<std::string>().find("more than 1000"), std::string::npos);
  auto c = client();
  auto get = c.Get("/api/sweep/gemm");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
}

TEST_F(ServerTest, SweepGemmOpenApiExampleWorks) {
  auto c = client();
  auto doc = c.Get("/api/openapi.json");
  ASSERT_TRUE(doc);
  const auto j = nlohmann::json::parse(doc->body);
  ASSERT_TRUE(j["paths"].contains("/api/sweep/gemm"));
  ASSERT_TRUE(j["paths"].contains("/api/public/sweep/gemm"));
  const auto& schema = j["components"]["schemas"].at("sweep_gemm");
  auto r = post("/api/sweep/gemm", schema["example"].dump(), 200);
  EXPECT_EQ(r["count"], 2 * 3 * 1 * 2 * 2 * 1);
  for (const auto& [key, property] : schema["properties"].items()) {
    nlohmann::json body = schema["example"];
    body[key] = nlohmann::json::array();  // an empty list is wrong for every key
    auto bad = post("/api/sweep/gemm", body.dump(), 400);
    ASSERT_TRUE(bad.contains("error")) << key;
    EXPECT_EQ(bad["error"]["message"].get<std::string>().find("unknown key"), std::string::npos)
        << key << ": " << bad["error"]["message"];
  }
}

// A server started on its own, with options the shared fixture does not use.
struct OwnServer {
  explicit OwnServer(Options o) : server(o, Registry::built_in()) {
    port = server.bind();
    thread = std::thread([this] { server.listen(); });
  }
  ~OwnServer() {
    server.stop();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(10, 0);
    c.set_read_timeout(30, 0);
    return c;
  }
  Server server;
  int port = 0;
  std::thread thread;
};

TEST(ServerGpu, AnalyzeReadsTheBackendsAnswer) {
  // A stand-in for roofline-gpu that answers as `roofline-gpu one M N K fp16`
  // does, with a measured 100 us: the error is (predicted - 100 us) / 100 us.
  const auto tool =
      std::filesystem::temp_directory_path() / ("roofline-fake-gpu-" + std::to_string(::getpid()));
  std::ofstream(tool)
      << "#!/bin/sh\n"
         "[ \"$1 $5\" = \"one fp16\" ] || { echo \"error: bad args $*\" >&2; exit 2; }\n"
         "echo '{\"gpu\": \"Fake GPU\", \"measured_time_us\": 100, \"measured_bandwidth_gb_s\": "
         "1000, "
         "\"measured_tflops\": 10, \"max_rel_error\": 0.001, \"verified\": true, "
         "\"repetitions\": 20}'\n";
  std::filesystem::permissions(tool, std::filesystem::perms::owner_all);
  Options o;
  o.port = 0;
  o.gpu_tool = tool.string();
  {
    OwnServer s(o);
    auto c = s.client();
    auto r = c.Post("/api/analyze", R"({"hardware": "h100", "m": 16, "measure": true})",
                    "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto j = nlohmann::json::parse(r->body);
    const auto& m = j["measurement"];
    ASSERT_TRUE(m["available"].get<bool>()) << m.dump();
    EXPECT_DOUBLE_EQ(m["time_s"].get<double>(), 100e-6);
    EXPECT_DOUBLE_EQ(m["flops_per_s"].get<double>(), 10e12);
    EXPECT_EQ(m["gpu"], "Fake GPU");
    EXPECT_NE(m["note"].get<std::string>().find("predicted for NVIDIA H100"), std::string::npos);
    EXPECT_NEAR(m["error_pct"].get<double>(), (j["time_s"].get<double>() - 100e-6) / 100e-6 * 100,
                1e-9);
    // Formats the backend does not measure are said, not run.
    auto int4 = c.Post("/api/analyze", R"({"m": 16, "weights": "int4", "measure": true})",
                       "application/json");
    ASSERT_TRUE(int4);
    EXPECT_FALSE(nlohmann::json::parse(int4->body)["measurement"]["available"].get<bool>());
    // A failing backend's first stderr line is the reason.
    auto bf16 =
        c.Post("/api/analyze", R"({"m": 16, "weights": "bf16", "act": "bf16", "measure": true})",
               "application/json");
    ASSERT_TRUE(bf16);
    EXPECT_EQ(nlohmann::json::parse(bf16->body)["measurement"]["reason"].get<std::string>().rfind(
                  "bad args one", 0),
              0u);
  }
  // An answer missing its figures is not trusted (nor crashed on).
  std::ofstream(tool) << "#!/bin/sh\necho '{\"measured_time_us\": 100}'\n";
  {
    OwnServer s(o);
    auto c = s.client();
    auto r = c.Post("/api/analyze", R"({"m": 16, "measure": true})", "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    const auto m = nlohmann::json::parse(r->body)["measurement"];
    EXPECT_FALSE(m["available"].get<bool>());
    EXPECT_NE(m["reason"].get<std::string>().find("not its JSON"), std::string::npos);
  }
  std::filesystem::remove(tool);
}

TEST(ServerLifecycle, StopRightAfterStartingIsNotLost) {
  // httplib ignores a stop() that arrives before its listen loop runs; the
  // server must not (a join here would hang).
  for (int i = 0; i < 20; ++i) {
    Options o;
    o.port = 0;
    o.threads = 1;
    OwnServer s(o);
  }
}

TEST(ServerLimits, LongSweepsStopAtTheTimeLimit) {
  Options o;
  o.port = 0;
  o.request_time_limit_s = 0.0;  // any sweep past its first chunk of rows is too long
  o.max_sweep_rows = 1'000'000;
  OwnServer s(o);
  nlohmann::json seq_lens = nlohmann::json::array();
  for (int i = 1; i <= 200; ++i) seq_lens.push_back(i * 64);
  const nlohmann::json body = {{"batches", {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}},
                               {"seq_lens", seq_lens},
                               {"hardware", {"h100", "gb10", "b200", "a100"}}};  // 8,000 rows
  auto c = s.client();
  auto small = c.Post("/api/sweep", R"({"batches": [1, 2]})", "application/json");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200);  // one chunk: finished before the limit is looked at
  nlohmann::json big = body;
  big["models"] = {"llama-3.1-8b", "qwen3-8b"};  // 16,000 rows, two chunks
  auto r = c.Post("/api/sweep", big.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "time_limit");
}

TEST(ServerLimits, LongGemmSweepsStopAtTheTimeLimit) {
  Options o;
  o.port = 0;
  o.request_time_limit_s = 0.0;  // any sweep past its first chunk of rows is too long
  o.max_sweep_rows = 1'000'000;
  OwnServer s(o);
  nlohmann::json ms = nlohmann::json::array();
  for (int i = 1; i <= 10'000; ++i) ms.push_back(i);  // 10,000 rows: two chunks of 8,192
  auto c = s.client();
  auto small = c.Post("/api/sweep/gemm", R"({"m": [1, 2]})", "application/json");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200);
  auto r = c.Post("/api/sweep/gemm", nlohmann::json({{"m", ms}}).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "time_limit");
}

TEST(ServerWebApp, ServesTheAppAndLocalSwaggerDocs) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("roofline-web-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir / "docs");
  std::ofstream(dir / "index.html") << "<!doctype html><title>app</title>";
  std::ofstream(dir / "docs" / "index.html") << "<!doctype html><title>swagger</title>";
  {
    Options o;
    o.port = 0;
    o.web_dir = dir.string();
    OwnServer s(o);
    auto c = s.client();
    auto app = c.Get("/");
    ASSERT_TRUE(app);
    EXPECT_EQ(app->status, 200);
    EXPECT_NE(app->body.find("<title>app</title>"), std::string::npos);
    auto docs = c.Get("/docs");
    ASSERT_TRUE(docs);
    EXPECT_EQ(docs->status, 302);
    EXPECT_EQ(docs->get_header_value("Location"), "/docs/");
    auto swagger = c.Get("/docs/");
    ASSERT_TRUE(swagger);
    EXPECT_NE(swagger->body.find("swagger"), std::string::npos);
    auto escape = c.Get("/../CMakeLists.txt");
    ASSERT_TRUE(escape);
    EXPECT_NE(escape->status, 200);
  }
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------- issue #10

// A raw connection, for requests httplib's client will not send (trickled
// headers, foreign Host names, unknown methods). Every wait is bounded.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  bool connected() const { return connected_; }
  bool send(const std::string& s) {
    return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
  }
  // What arrives until the server closes or `seconds` pass without a byte.
  std::string read_all(int seconds = 30) {
    std::string out;
    char buf[4096];
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, seconds * 1000) <= 0) break;
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
};

std::string deep_model_body(int depth) {
  return R"({"model": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 10, "x": )" +
         std::string(depth, '[') + std::string(depth, ']') + "}}";
}

// Item 1: a 120 KB body nested 60,000 deep killed the server (recursive copy
// and dump); now every endpoint answers 400 with the depth, and lives on.
TEST(ServerLimits, DeeplyNestedBodiesAreRefusedAndTheServerLives) {
  Options o;
  o.port = 0;
  OwnServer s(o);
  auto c = s.client();
  auto post = [&](const std::string& path, const std::string& body, int status) {
    auto r = c.Post(path.c_str(), body, "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return nlohmann::json();
    EXPECT_EQ(r->status, status) << path << " " << r->body.substr(0, 300);
    return nlohmann::json::parse(r->body, nullptr, false);
  };
  for (const char* path : {"/api/public/predict", "/api/public/generate", "/api/public/recommend",
                           "/api/public/sweep", "/api/public/analyze", "/api/analyze"}) {
    const auto j = post(path, deep_model_body(60'000), 400);
    EXPECT_EQ(j["error"]["code"], "invalid_json") << path;
    EXPECT_NE(j.dump().find("64 levels"), std::string::npos) << j.dump();
  }
  // 64 levels are fine: the body, "model", then 62 arrays.
  const auto ok = post("/api/predict", deep_model_body(62), 200);
  EXPECT_GT(ok.value("time_s", 0.0), 0);
  const auto deep = post("/api/predict", deep_model_body(63), 400);
  EXPECT_NE(deep.dump().find("64 levels"), std::string::npos);
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// Item 2: a layer list longer than the layers is refused at once (500k entries
// cost 42 s), and every endpoint, not only sweeps, has the time limit.
TEST_F(ServerTest, LayerListsAreBoundedByTheLayerCount) {
  nlohmann::json cfg = {
      {"model_type", "qwen3_moe"}, {"hidden_size", 64},        {"num_hidden_layers", 4096},
      {"num_attention_heads", 4},  {"num_key_value_heads", 4}, {"vocab_size", 100},
      {"num_experts", 4},          {"num_experts_per_tok", 2}, {"moe_intermediate_size", 32},
      {"intermediate_size", 64}};
  cfg["mlp_only_layers"] = std::vector<int>(20'000, 7);
  const auto j = post("/api/predict", nlohmann::json{{"model", cfg}}.dump(), 400);
  EXPECT_NE(j.dump().find("20000 entries for 4096 layers"), std::string::npos) << j.dump();
}

TEST(ServerLimits, EveryEndpointHasTheTimeLimit) {
  Options o;
  o.port = 0;
  o.request_time_limit_s = 0.0;  // past before the work starts
  OwnServer s(o);
  auto c = s.client();
  for (const auto& [path, body] : std::vector<std::pair<std::string, std::string>>{
           {"/api/predict", R"({"model": "llama-3.1-8b"})"},
           {"/api/generate", R"({"model": "llama-3.1-8b"})"},
           {"/api/recommend", R"({"model": "llama-3.1-8b"})"},
           {"/api/analyze", R"({"hardware": "h100"})"}}) {
    auto r = c.Post(path.c_str(), body, "application/json");
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 503) << path << " " << r->body;
    EXPECT_EQ(nlohmann::json::parse(r->body, nullptr, false)["error"]["code"], "time_limit");
  }
}

// Item 3: the Host is parsed as an address, never by prefix.
TEST_F(ServerTest, HostNamesAreParsedAsAddresses) {
  auto status_for = [](const std::string& host) {
    RawConnection r(port_);
    EXPECT_TRUE(r.connected());
    r.send("GET /healthz HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
    const std::string answer = r.read_all();
    return answer.substr(0, answer.find("\r\n"));
  };
  for (const char* foreign : {"127.0.0.1.evil.com", "127.attacker.net", "localhost.evil.com",
                              "127.0.0.1:80:x", "127.0.0.1:abc", "[::1].evil.com", "0x7f.0.0.1"}) {
    EXPECT_EQ(status_for(foreign), "HTTP/1.1 403 Forbidden") << foreign;
  }
  for (const char* loopback : {"127.0.0.1", "127.0.0.1:8000", "127.1.2.3", "localhost:80",
                               "LOCALHOST", "[::1]", "[::1]:8000"}) {
    EXPECT_EQ(status_for(loopback), "HTTP/1.1 200 OK") << loopback;
  }
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * i));
  return s;
}

std::string safetensors_body(const nlohmann::json& header, const std::string& data) {
  const std::string h = header.dump();
  return le64(h.size()) + h + data;
}

// Item 4: an upload's work and answer are bounded by its bytes: overlapping
// tensors are refused, outliers listed are capped (and counted), tensors capped.
TEST(ServerLimits, QuantizeUploadsCannotMultiplyWork) {
  Options o;
  o.port = 0;
  o.max_upload_tensors = 3;
  OwnServer s(o);
  auto c = s.client();
  nlohmann::json overlap;
  for (int i = 0; i < 40; ++i) {
    overlap["t" + std::to_string(i)] = {
        {"dtype", "F16"}, {"shape", {64, 64}}, {"data_offsets", {0, 8192}}};
  }
  auto r = c.Post("/api/quantize", safetensors_body(overlap, std::string(8192, '\0')),
                  "application/octet-stream");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("overlap"), std::string::npos) << r->body;

  // 1,000 columns of 100.0 (F16 0x5640): every one an outlier; 64 listed.
  std::string data;
  for (int i = 0; i < 2 * 1000; ++i) data += std::string("\x40\x56", 2);
  nlohmann::json wide = {
      {"w", {{"dtype", "F16"}, {"shape", {2, 1000}}, {"data_offsets", {0, data.size()}}}}};
  r = c.Post("/api/quantize", safetensors_body(wide, data), "application/octet-stream");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto t = nlohmann::json::parse(r->body)["tensors"][0];
  EXPECT_EQ(t["outlier_channel_count"], 1000);
  EXPECT_EQ(t["outlier_channels"].size(), 64u);
  EXPECT_LT(r->body.size(), 2000u);

  nlohmann::json many;
  for (int i = 0; i < 4; ++i) {
    many["t" + std::to_string(i)] = {
        {"dtype", "F16"}, {"shape", {2, 2}}, {"data_offsets", {8 * i, 8 * i + 8}}};
  }
  r = c.Post("/api/quantize", safetensors_body(many, std::string(32, '\0')),
             "application/octet-stream");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("more than the 3"), std::string::npos) << r->body;
}

// Item 5: clients trickling header lines, or announcing a body they never send,
// are cut off by the whole-request deadline and cannot take every worker.
TEST(ServerLimits, SlowClientsCannotHoldTheWorkers) {
  Options o;
  o.port = 0;
  o.threads = 8;                   // 6 per client address
  o.request_read_timeout_s = 2.0;  // the whole request, however it trickles
  OwnServer s(o);
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(std::make_unique<RawConnection>(s.port));
    ASSERT_TRUE(slow.back()->connected());
    slow.back()->send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // never finished
  }
  RawConnection silent(s.port);
  silent.send(
      "POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: 1000\r\n\r\n");  // and nothing more
  // Trickling one header line each to the first few keeps them busy reading.
  for (int i = 0; i < 4; ++i) slow[static_cast<std::size_t>(i)]->send("X-Slow: 1\r\n");
  // The server still answers: a new connection takes a slow one's place.
  auto c = s.client();
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  // The silent body ends at the deadline (not "never": the read is bounded).
  silent.read_all(30);
  EXPECT_TRUE(silent.closed());
  for (auto& r : slow) {
    r->read_all(30);
    EXPECT_TRUE(r->closed());
  }
}

// Item 5: a client at its connection cap loses its oldest connection that is
// not running a request. The two below are still sending their headers; with
// read timeouts of a minute, only the eviction can close the first in time.
TEST(ServerLimits, ConnectionsPerClientAreCapped) {
  Options o;
  o.port = 0;
  o.max_connections_per_client = 2;
  o.timeout_s = 60;
  o.request_read_timeout_s = 60;
  OwnServer s(o);
  RawConnection a(s.port), b(s.port);
  ASSERT_TRUE(a.connected() && b.connected());
  a.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  b.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  // Both are counted once workers take them up, which on a loaded machine
  // can come after a third connection is made: wait for it (at most 20 s).
  for (int i = 0; i < 2000 && s.server.connections_of("127.0.0.1") < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(s.server.connections_of("127.0.0.1"), 2u);
  // The third connection of this address is answered...
  auto c = s.client();
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  // ...and the older unfinished one gave way (within 30 s, not the minute).
  // Which of the two is older depends on which a worker took up first, which
  // on a loaded machine need not be the first one connected.
  for (int i = 0; i < 30 && !a.closed() && !b.closed(); ++i) {
    a.read_all(1);
    if (!a.closed()) b.read_all(1);
  }
  EXPECT_NE(a.closed(), b.closed()) << "exactly one connection gives way";
  // The other one still finishes its request.
  RawConnection& other = a.closed() ? b : a;
  other.send("Connection: close\r\n\r\n");
  const std::string answer = other.read_all(10);
  EXPECT_NE(answer.find("200"), std::string::npos) << answer;
}

// Item 6: over HTTP a model is a preset or a config object and a strategy a
// built-in name; names without '/' no longer reach the working directory.
TEST(ServerLimits, NamesNeverReachTheFileSystem) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("roofline-cwd-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json")
      << R"({"H": 64, "L": 2, "nh": 4, "nkv": 4, "dh": 16, "dff": 64})";
  std::ofstream(dir / "secret") << "Zsecret";
  std::ofstream(dir / "creds") << R"({"name": "creds"})";
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  {
    Options o;
    o.port = 0;
    OwnServer s(o);
    auto c = s.client();
    for (const char* body :
         {R"({"model": "."})", R"({"model": "secret"})", R"({"model": "config.json"})",
          R"({"model": "llama-3.1-8b", "strategy": "creds"})"}) {
      auto r = c.Post("/api/predict", body, "application/json");
      ASSERT_TRUE(r);
      EXPECT_TRUE(r->status == 400 || r->status == 404) << body << " " << r->body;
      EXPECT_EQ(r->body.find("Zsecret"), std::string::npos);
      EXPECT_EQ(r->body.find("'Z'"), std::string::npos);
      EXPECT_EQ(r->body.find("parse_error"), std::string::npos) << r->body;
    }
    auto sweep = c.Post("/api/sweep", R"({"strategies": ["creds"]})", "application/json");
    ASSERT_TRUE(sweep);
    EXPECT_EQ(sweep->status, 404) << sweep->body;
  }
  std::filesystem::current_path(previous);
  std::filesystem::remove_all(dir);
}

// Item 7: a name cut inside a UTF-8 character, or a value of the wrong type,
// is a 4xx with a JSON body, never a 500.
TEST_F(ServerTest, BadTextAndTypesAreClientErrors) {
  const std::string name = std::string(63, 'a') + "\xE2\x82\xAC";
  for (const char* key : {"model", "hardware", "strategy", "weights", "attention"}) {
    nlohmann::json body = {{"model", "llama-3.1-8b"}};
    body[key] = name;
    auto c = client();
    auto r = c.Post("/api/predict", body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_GE(r->status, 400) << key;
    EXPECT_LT(r->status, 500) << key << " " << r->body;
    EXPECT_FALSE(nlohmann::json::parse(r->body, nullptr, false).is_discarded()) << r->body;
  }
  nlohmann::json cfg = {{"model_type", "llama"},
                        {"hidden_size", 64},
                        {"num_hidden_layers", 2},
                        {"num_attention_heads", 4},
                        {"intermediate_size", 64},
                        {"vocab_size", 10},
                        {"quantization_config", {{"quant_method", 5}}}};
  expect_error("/api/predict", nlohmann::json{{"model", cfg}}.dump(), 400, "invalid_argument");
  cfg["quantization_config"] = {{"quant_method", "gptq"}, {"bits", "4"}};
  expect_error("/api/predict", nlohmann::json{{"model", cfg}}.dump(), 400, "invalid_argument");
}

// Item 11: the 1 MB limit of JSON endpoints is applied to the announced length,
// before a body is read (it was read, up to 64 MB, and then refused).
TEST_F(ServerTest, OversizedJsonBodiesAreRefusedBeforeTheyAreRead) {
  RawConnection r(port_);
  r.send(
      "POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: 50000000\r\n\r\n");  // no body follows
  const std::string answer = r.read_all();
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("payload_too_large"), std::string::npos);
}

// Item 12: methods an endpoint does not take are 405 with Allow.
TEST_F(ServerTest, OtherMethodsAre405WithAllow) {
  auto first_lines = [](const std::string& request) {
    RawConnection r(port_);
    r.send(request);
    return r.read_all();
  };
  std::string a = first_lines("PATCH /api/predict HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(a.rfind("HTTP/1.1 405", 0), 0u) << a;
  EXPECT_NE(a.find("Allow: POST"), std::string::npos) << a;
  a = first_lines("GET /api/predict HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(a.rfind("HTTP/1.1 405", 0), 0u) << a;
  EXPECT_NE(a.find("Allow: POST"), std::string::npos) << a;
  a = first_lines("POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(a.rfind("HTTP/1.1 405", 0), 0u) << a;
  EXPECT_NE(a.find("Allow: GET, HEAD"), std::string::npos) << a;
  a = first_lines("TRACE / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(a.rfind("HTTP/1.1 405", 0), 0u) << a;
  a = first_lines("BREW /api/predict HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(a.rfind("HTTP/1.1 405", 0), 0u) << a;
  EXPECT_NE(a.find("Allow: "), std::string::npos) << a;
  EXPECT_NE(a.find("method_not_allowed"), std::string::npos) << a;
}

// Item 12: a NUL in the path is refused, not cut to another file.
TEST(ServerWebApp, PathsWithNulAreRefused) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("roofline-nul-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "index.html") << "<!doctype html><title>app</title>";
  {
    Options o;
    o.port = 0;
    o.web_dir = dir.string();
    OwnServer s(o);
    RawConnection r(s.port);
    r.send("GET /index.html%00.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    const std::string answer = r.read_all();
    EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer.substr(0, 200);
    EXPECT_EQ(answer.find("<title>app</title>"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

// A JSON body labelled as a form (what curl -d sends) is still JSON, at any
// size up to the limit (httplib refused forms past 8 KB with 413).
TEST_F(ServerTest, BodiesAreJsonWhateverTheirLabel) {
  auto c = client();
  const std::string body = R"({"model": "llama-3.1-8b", "hardware": "h100", "weights": ")" +
                           std::string(200, ' ') + R"(fp8"})";
  nlohmann::json padded = nlohmann::json::parse(body);
  std::string big = padded.dump();
  big.insert(1, std::string(20'000, ' '));  // whitespace: 20 KB, still the same request
  auto r = c.Post("/api/predict", big, "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;  // parsed as JSON: the padded format name is unknown
  EXPECT_NE(r->body.find("unknown format"), std::string::npos) << r->body;
}

// The Accuracy page's data: every built-in published case predicted with its
// own engine, the same document as `roofline validate --json`.
TEST_F(ServerTest, ValidationListsEveryPublishedCaseWithItsError) {
  auto c = client();
  const auto r = c.Get("/api/validation");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto doc = nlohmann::json::parse(r->body);
  const auto& cases = doc["cases"];
  ASSERT_EQ(cases.size(), built_in_validation().size());
  std::vector<double> abs_errors;
  for (const auto& k : cases) {
    const double measured = k["measured"], predicted = k["predicted"];
    ASSERT_GT(measured, 0) << k["id"];
    ASSERT_TRUE(std::isfinite(predicted)) << k["id"];
    // The error is (predicted - measured) / measured in percent, as the CLI reports it.
    EXPECT_NEAR(k["error_pct"].get<double>(), (predicted - measured) / measured * 100, 1e-9)
        << k["id"];
    EXPECT_FALSE(k["source"].get<std::string>().empty()) << k["id"];
    abs_errors.push_back(std::abs(k["error_pct"].get<double>()));
  }
  // The "all" group's median is the median of the cases' |error|.
  const auto& all = doc["groups"][0];
  ASSERT_EQ(all["group"], "all");
  EXPECT_EQ(all["rows"], static_cast<int>(cases.size()));
  EXPECT_DOUBLE_EQ(all["median_abs_error_pct"].get<double>(), percentile(abs_errors, 0.5));
  bool by_engine = false;
  for (const auto& g : doc["groups"]) by_engine |= g["group"] == "engine=vllm";
  EXPECT_TRUE(by_engine);
  // Computed once: the public path and a second request get the same bytes.
  const auto again = c.Get("/api/public/validation");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, r->body);
  EXPECT_EQ(c.Post("/api/validation", "{}", "application/json")->status, 405);
}

// The Accuracy page's serving section: every run of the development set
// predicted or refused with its reason, as `roofline validate --serving --json`.
TEST_F(ServerTest, ServingValidationPredictsOrRefusesEveryRun) {
  auto c = client();
  c.set_read_timeout(120, 0);  // the first request simulates 2,101 runs
  const auto r = c.Get("/api/validation/serving");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 500);
  const auto doc = nlohmann::json::parse(r->body);
  const auto& rows = doc["rows"];
  ASSERT_EQ(rows.size(), built_in_serving_runs().size());
  int predicted = 0, refused = 0;
  for (const auto& row : rows) {
    if (row.contains("refused")) {
      EXPECT_FALSE(row["refused"].get<std::string>().empty()) << row["id"];
      ++refused;
      continue;
    }
    ++predicted;
    const double measured = row["measured_tpot_ms"], got = row["predicted_tpot_ms"];
    ASSERT_GT(measured, 0) << row["id"];
    EXPECT_NEAR(row["tpot_error_pct"].get<double>(), (got - measured) / measured * 100, 1e-9)
        << row["id"];
  }
  EXPECT_EQ(doc["predicted"], predicted);
  EXPECT_EQ(doc["refused"], refused);
  ASSERT_EQ(doc["tpot_groups"][0]["group"], "all");
  EXPECT_EQ(doc["tpot_groups"][0]["rows"], predicted);
  EXPECT_EQ(doc["ttft_groups"][0]["rows"], predicted);
  const auto again = c.Get("/api/public/validation/serving");  // kept: the same bytes at once
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, r->body);
}

TEST_F(ServerTest, EnginesAreListedAndTakenByPredictions) {
  auto c = client();
  const auto list = c.Get("/api/engines");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->status, 200);
  const auto engines = nlohmann::json::parse(list->body)["engines"];
  ASSERT_GE(engines.size(), 8u);
  EXPECT_EQ(engines[0]["id"], "roofline");
  const auto p = post(
      "/api/predict",
      R"({"model": "llama-3.1-8b", "hardware": "h200", "engine": "sglang", "per_op": true})", 200);
  EXPECT_EQ(p["engine"]["id"], "sglang");
  EXPECT_EQ(p["engine"]["gemm_table"], "h200-sglang");
  const auto g = post("/api/generate",
                      R"({"model": "llama-3.1-8b", "hardware": "h200", "engine": "vllm"})", 200);
  EXPECT_EQ(g["engine"]["id"], "vllm");
  const auto unknown = post("/api/predict", R"({"model": "llama-3.1-8b", "engine": "nope"})", 404);
  EXPECT_NE(unknown.dump().find("unknown engine"), std::string::npos);
  (void)post("/api/predict",
             R"({"model": "llama-3.1-8b", "engine": "trtllm", "weights": "q4_k_m"})", 422);
}

}  // namespace
}  // namespace roofline::server
