// End-to-end tests of the `roofline` binary: output fields and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the CLI with `args` (shell-quoted by the caller), capturing both streams.
CliRun roofline(const std::string& args) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path();
  const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const std::string out = (dir / ("rl-out-" + tag)).string();
  const std::string err = (dir / ("rl-err-" + tag)).string();
  const std::string cmd = std::string("env -u ROOFLINE_DATA_DIR '") + ROOFLINE_CLI_PATH + "' " +
                          args + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

// A bad-input run: exit 2, nothing on stdout, one "error: " line on stderr.
void expect_bad_input(const std::string& args, const std::string& fragment) {
  const CliRun r = roofline(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << args << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << args << ": " << r.err;
  EXPECT_TRUE(r.out.empty()) << args;
}

TEST(Cli, GemvJsonGolden) {
  // 33,570,816 B / 273 GB/s = 122.97 us (derivation in roofline_test.cpp).
  const CliRun r = roofline("gemv --hardware gb10 --n 4096 --k 4096 --ideal --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["time_s"].get<double>(), 122.97e-6, 0.01e-6);
  EXPECT_EQ(j["bound"], "memory");
  EXPECT_EQ(j["m"], 1);
  EXPECT_EQ(j["mode"], "ideal");
  EXPECT_DOUBLE_EQ(j["bytes"].get<double>(), 33'570'816);
  EXPECT_FALSE(j["version"].get<std::string>().empty());
  EXPECT_EQ(j["data_hash"].get<std::string>().size(), 16u);
}

TEST(Cli, GemmTableAndCsv) {
  CliRun r = roofline("gemm --hardware h100 --m 4096 --n 4096 --k 4096 --weights bf16 --act bf16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("compute"), std::string::npos);
  EXPECT_NE(r.out.find("realistic mode"), std::string::npos);
  r = roofline("gemm --hardware h100 --m 16 --n 4096 --k 4096 --weights int4 --csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("device,mode,m,n,k,", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("h100-sxm,realistic,16,4096,4096,int4,fp16,fp16,"), std::string::npos)
      << r.out;
}

TEST(Cli, WeightOnlyFallbackIsSaid) {
  const CliRun r =
      roofline("gemv --hardware h100 --n 4096 --k 4096 --weights nvfp4 --act bf16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["weight_only"].get<bool>());
  EXPECT_NE(j["notes"][0].get<std::string>().find("weight-only"), std::string::npos);
}

TEST(Cli, HardwareListAndShow) {
  CliRun r = roofline("hardware list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto list = nlohmann::json::parse(r.out);
  EXPECT_GE(list["devices"].size(), 18u);
  r = roofline("hardware show b10 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto show = nlohmann::json::parse(r.out);
  EXPECT_EQ(show["device"]["id"], "gb10");
  EXPECT_DOUBLE_EQ(show["device"]["bandwidth_Bps"].get<double>(), 273e9);
  EXPECT_FALSE(show["device"]["sources"].empty());
  r = roofline("hardware show mi300x");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("confidence"), std::string::npos);
  r = roofline("hardware list --csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("id,name,", 0), 0u);
}

TEST(Cli, FormatsTable) {
  CliRun r = roofline("formats --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["formats"].size(), 18u);
  bool found = false;
  for (const auto& f : j["formats"]) {
    if (f["id"] == "nvfp4") {
      EXPECT_DOUBLE_EQ(f["bits_per_element"].get<double>(), 4.5);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  r = roofline("formats");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("storage-only"), std::string::npos);
}

TEST(Cli, HardwareFileOverrides) {
  const auto path =
      std::filesystem::temp_directory_path() / ("rl-hw-" + std::to_string(::getpid()) + ".json");
  auto doc =
      nlohmann::json::parse(slurp(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/hardware/gb10.json"));
  doc["memory"]["bandwidth_Bps"]["value"] = 546e9;
  std::ofstream(path) << doc.dump();
  const CliRun r = roofline(
      "gemv --hardware gb10 --n 4096 --k 4096 --ideal --json --hardware-file " + path.string());
  std::filesystem::remove(path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NEAR(nlohmann::json::parse(r.out)["time_s"].get<double>(), 33'570'816 / 546e9, 1e-12);
}

TEST(Cli, BadInputExitsTwoWithOneLine) {
  expect_bad_input("gemv --hardware h9000 --n 4096 --k 4096", "unknown device 'h9000'");
  expect_bad_input("gemv --hardware gb10 --n 4096 --k 4096 --weights fp7", "unknown format 'fp7'");
  expect_bad_input("gemv --hardware gb10 --n 0 --k 4096", "--n");
  expect_bad_input("gemv --hardware gb10 --n -5 --k 4096", "-5");
  expect_bad_input("gemv --hardware gb10 --n abc --k 4096", "not a whole number");
  expect_bad_input("gemv --hardware gb10 --n nan --k 4096", "whole number");
  expect_bad_input("gemv --hardware gb10 --n inf --k 4096", "whole number");
  expect_bad_input("gemv --hardware gb10 --n 1e30 --k 4096", "whole number");
  expect_bad_input("gemv --hardware gb10 --n 4096.5 --k 4096", "whole number");
  expect_bad_input("gemm --hardware gb10 --n 4096 --k 4096", "--m");
  expect_bad_input("gemm --hardware a100 --m 1 --n 64 --k 64 --act fp8", "cannot compute in fp8");
  expect_bad_input("gemv --hardware gb10 --n 64 --k 64 --act q4_0", "storage-only");
  expect_bad_input("hardware show nope", "unknown device");
  expect_bad_input("gemv --hardware gb10 --n 64 --k 64 --hardware-file /nonexistent/x.json",
                   "/nonexistent/x.json");
  expect_bad_input("", "subcommand");
  expect_bad_input("frobnicate", "frobnicate");
  expect_bad_input("formats --json --csv", "excludes");
}

TEST(Cli, BrokenHardwareFileNamesFileAndKey) {
  const auto path =
      std::filesystem::temp_directory_path() / ("rl-bad-" + std::to_string(::getpid()) + ".json");
  auto doc =
      nlohmann::json::parse(slurp(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/hardware/gb10.json"));
  doc["peaks"]["fp16"]["value"] = -62.5e12;
  std::ofstream(path) << doc.dump();
  expect_bad_input("hardware list --hardware-file " + path.string(), "peaks.fp16.value");
  std::filesystem::remove(path);
}

TEST(Cli, PredictJsonHasTheDesignFields) {
  const CliRun r = roofline(
      "predict --model llama-3.1-8b --hardware gb10 --phase decode --batch 1 --seq-len 4096 "
      "--per-op --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"time_s", "tokens_per_s", "bound", "flops", "bytes", "memory", "ops"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key :
       {"weights_bytes", "kv_cache_bytes", "activation_bytes", "total_bytes", "fits"}) {
    EXPECT_TRUE(j["memory"].contains(key)) << key;
  }
  ASSERT_EQ(j["ops"].size(), 20u);
  for (const char* key : {"name", "kind", "count", "flops", "bytes", "ai", "bound", "time_s"}) {
    EXPECT_TRUE(j["ops"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["bound"], "memory");
  EXPECT_EQ(j["scenario"]["attention"], "flash-decoding");
  EXPECT_TRUE(j["memory"]["fits"].get<bool>());
  EXPECT_GT(j["capacity"]["max_batch"].get<int>(), 1);
  // Per-op times add up to the total.
  double sum = 0;
  for (const auto& op : j["ops"]) sum += op["time_s"].get<double>();
  EXPECT_NEAR(sum, j["time_s"].get<double>(), 1e-9);
}

TEST(Cli, ShortFormModelFile) {
  const auto path =
      std::filesystem::temp_directory_path() / ("rl-short-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"H": 4096, "L": 32, "nh": 32, "nkv": 8, "dh": 128, "dff": 14336})";
  const CliRun r = roofline("predict --model " + path.string() + " --hardware b10 --json");
  std::filesystem::remove(path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["time_s"].get<double>(), 0);
}

TEST(Cli, GenerateKvAttentionModelValidate) {
  CliRun r = roofline(
      "generate --model llama-3.1-8b --hardware h100 --prompt 512 --gen 128 --batch 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_NEAR(j["e2e_s"].get<double>(), j["ttft_s"].get<double>() + 127 * j["tpot_s"].get<double>(),
              1e-9);

  r = roofline("kv --model llama-3.1-8b --seq-len 32768 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["formats"][0]["bytes_per_token"].get<double>(), 131'072);

  r = roofline(
      "attention --model llama-3.1-8b --hardware h100 --phase prefill --seq-len 8192 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["kernels"].size(), 6u);
  EXPECT_FALSE(j["kernels"][4]["supported"].get<bool>());  // fa4 needs Blackwell
  EXPECT_TRUE(j["kernels"][3]["supported"].get<bool>());   // fa3 runs on Hopper

  r = roofline("model show deepseek-v3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"]["attention"], "mla");
  EXPECT_NEAR(j["params"].get<double>() / 671e9, 1.0, 0.02);
  // NVIDIA's NVFP4 release and the operators it keeps in bf16, with the source.
  ASSERT_EQ(j["quantized_releases"].size(), 1u);
  EXPECT_EQ(j["quantized_releases"][0]["format"], "nvfp4");
  EXPECT_EQ(j["quantized_releases"][0]["kept_format"], "bf16");
  EXPECT_EQ(j["quantized_releases"][0]["kept_operators"].size(), 8u);
  EXPECT_FALSE(j["quantized_releases"][0]["source"].get<std::string>().empty());

  r = roofline("model list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["models"].size(), 25u);

  r = roofline("validate --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["median_abs_error_pct"].get<double>(), 0);
  EXPECT_EQ(j["evaluated"].get<int>(), static_cast<int>(j["cases"].size()));
  // Issue 11's four targets, the first the median above against its 10%.
  ASSERT_EQ(j["targets"].size(), 4u);
  EXPECT_EQ(j["targets"][0]["target"], "median |error|");
  EXPECT_DOUBLE_EQ(j["targets"][0]["value"].get<double>(), j["median_abs_error_pct"].get<double>());
  EXPECT_DOUBLE_EQ(j["targets"][0]["limit"].get<double>(), 10);
  EXPECT_EQ(j["targets"][0]["holds"].get<bool>(), j["median_abs_error_pct"].get<double>() <= 10);
  // The pure roofline is a reference, not a claim: no targets.
  r = roofline("validate --ideal --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["targets"].empty());
}

TEST(Cli, SweepStreamsCsv) {
  const CliRun r = roofline(
      "sweep --model llama-3.1-8b,qwen2.5-7b --hardware h100,gb10 --phase decode,prefill "
      "--batch 1,8,64 --seq-len 512,4096 --weights native,fp8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 2 * 2 * 2 * 3 * 2 * 2);
}

TEST(Cli, ModelAndScenarioBadInput) {
  expect_bad_input("predict --model gpt-5", "unknown model 'gpt-5'");
  expect_bad_input("predict --batch 0", "--batch");
  expect_bad_input("predict --seq-len nan", "--seq-len");
  expect_bad_input("predict --seq-len 1e30", "--seq-len");
  expect_bad_input("predict --tp 3", "does not divide");
  expect_bad_input("predict --phase sideways", "unknown phase");
  expect_bad_input("predict --attention fa9", "unknown attention kernel");
  expect_bad_input("predict --hardware a100 --attention fa3", "fa3 does not run on a100-80gb");
  expect_bad_input("predict --strategy turbo", "unknown strategy");
  expect_bad_input("predict --block-sparsity 0", "--block-sparsity");
  expect_bad_input("generate --gen 0", "--gen");
  expect_bad_input("sweep --batch 1,,2", "empty item");
  expect_bad_input("sweep --format xml", "--format");
  expect_bad_input("model show /nonexistent/config.json", "/nonexistent/config.json");
  const auto dir =
      std::filesystem::temp_directory_path() / ("rl-bad-model-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "deep.json") << std::string(100'000, '[');
  expect_bad_input("model show " + (dir / "deep.json").string(),
                   "JSON nests deeper than 64 levels");
  std::ofstream(dir / "falcon.json") << R"({"model_type": "falcon", "hidden_size": 4544})";
  expect_bad_input("model show " + (dir / "falcon.json").string(),
                   "model_type 'falcon' is not understood");
  std::ofstream(dir / "bad.gguf") << "GGUF\x03garbage";
  expect_bad_input("model show " + (dir / "bad.gguf").string(), "GGUF");
  std::ofstream(dir / "x.safetensors") << "12345678";
  expect_bad_input("model show " + (dir / "x.safetensors").string(), "config.json");
  std::filesystem::remove_all(dir);
}

TEST(Cli, RecommendJsonHasTheDesignFields) {
  const CliRun r =
      roofline("recommend --model llama-3-8b --hardware gb10 --phase decode --seq-len 4096 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"strategy", "attention", "predicted_speedup", "time_s", "baseline_time_s",
                          "memory_saving", "quality_loss_pct", "alternatives", "rationale"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["strategy"], "fp8_balanced");
  EXPECT_GE(j["alternatives"].size(), 7u);
  EXPECT_TRUE(j["alternatives"][0].contains("predicted_speedup"));
  EXPECT_FALSE(j["rationale"].empty());
}

TEST(Cli, StrategiesAndStrategyFlag) {
  CliRun r = roofline("strategies --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(nlohmann::json::parse(r.out)["strategies"].size(), 7u);
  r = roofline("predict --model llama-3.1-8b --hardware h100 --strategy nvfp4_blackwell --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool said = false;
  for (const auto& n : j["notes"])
    said = said || n.get<std::string>().find("weight-only") != std::string::npos;
  EXPECT_TRUE(said) << j["notes"].dump();
  const auto plan =
      std::filesystem::temp_directory_path() / ("rl-plan-" + std::to_string(::getpid()) + ".json");
  std::ofstream(plan)
      << R"({"name": "mine", "description": "d", "weights": "fp8", "act": "bf16", "kv": "fp8", "ops": {}})";
  r = roofline("generate --model llama-3.1-8b --hardware h100 --strategy " + plan.string() +
               " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ofstream(plan)
      << R"({"name": "mine", "description": "d", "weights": "fp8", "act": "bf16", "kv": "fp8", "ops": {"warp": {}}})";
  expect_bad_input("predict --strategy " + plan.string(), "unknown operator 'warp'");
  std::filesystem::remove(plan);
  expect_bad_input("predict --strategy fp8_balanced --weights int4", "a strategy sets the formats");
  expect_bad_input("recommend --max-quality-loss -3", "--max-quality-loss");
  expect_bad_input("recommend --weights fp8", "recommend chooses the formats");
  const CliRun tp = roofline("recommend --model llama-3.1-70b --hardware h100 --tp 4 --json");
  ASSERT_EQ(tp.exit_code, 0) << tp.err;
  // 70B in bf16 needs 141 GB; on 4 ranks each holds a quarter: the baseline fits.
  for (const auto& c : nlohmann::json::parse(tp.out)["alternatives"]) {
    if (c["strategy"] == "bf16_baseline") {
      EXPECT_TRUE(c["feasible"].get<bool>()) << c.dump();
    }
  }
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}

TEST(Cli, QuantizeCheckpoint) {
  const auto dir = std::filesystem::temp_directory_path() / ("rl-q-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // A 32 x 64 F32 tensor of small values (up to 0.05) with channel 3 at 1000x (up to 50, past 6.0).
  std::string data;
  for (int r = 0; r < 32; ++r) {
    for (int c = 0; c < 64; ++c) {
      const float v =
          static_cast<float>(((r * 64 + c) * 37 % 101) - 50) * 1e-3f * (c == 3 ? 1000.0f : 1.0f);
      data.append(reinterpret_cast<const char*>(&v), 4);
    }
  }
  nlohmann::json h;
  h["w"] = {{"dtype", "F32"}, {"shape", {32, 64}}, {"data_offsets", {0, data.size()}}};
  const std::string header = h.dump();
  std::ofstream(dir / "m.safetensors", std::ios::binary) << le64(header.size()) << header << data;
  CliRun r = roofline("quantize --checkpoint " + (dir / "m.safetensors").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tensors"].size(), 1u);
  EXPECT_EQ(j["tensors"][0]["outlier_channels"], nlohmann::json::array({3}));
  EXPECT_FALSE(j["tensors"][0]["errors"].empty());
  r = roofline("recommend --model llama-3-8b --hardware gb10 --checkpoint " +
               (dir / "m.safetensors").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["alternatives"][0].contains("measured_sqnr_db"));
  // A NaN in the data, a lying header, a missing file.
  std::string bad = data;
  const float nan = std::nanf("");
  std::memcpy(bad.data() + 40, &nan, 4);
  std::ofstream(dir / "nan.safetensors", std::ios::binary) << le64(header.size()) << header << bad;
  expect_bad_input("quantize --checkpoint " + (dir / "nan.safetensors").string(), "non-finite");
  std::ofstream(dir / "lie.safetensors", std::ios::binary) << le64(1ULL << 40) << header;
  expect_bad_input("quantize --checkpoint " + (dir / "lie.safetensors").string(), "header length");
  expect_bad_input("quantize --checkpoint " + (dir / "none.safetensors").string(),
                   "none.safetensors");
  std::filesystem::remove_all(dir);
}

TEST(Cli, MeasurementBadInput) {
  expect_bad_input("bench gemm --gpu", "no CUDA device");
  expect_bad_input("bench warp", "unknown benchmark 'warp'");
  expect_bad_input("bench stream --array-bytes -5", "--array-bytes");
  expect_bad_input("bench gemm --compare --repeats 0", "--repeats");  // before any calibration
  expect_bad_input("bench gemm --compare --repeats 101", "--repeats");
  expect_bad_input("calibrate --out /nonexistent/dir/host.json", "/nonexistent/dir/host.json");
}

TEST(Cli, HelpAndVersionExitZero) {
  CliRun r = roofline("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("gemm"), std::string::npos);
  r = roofline("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("0."), std::string::npos);
}

// ---------------------------------------------------------------- issue #10

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("rl-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// Item 7: wrong types in a config.json and names cut inside a UTF-8 character
// are bad input (exit 2), not "error: internal" (exit 1).
TEST(Cli, WrongTypesAndUtf8NamesAreBadInput) {
  const std::string path = temp_path("config.json");
  std::ofstream(path) << R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 10,
      "quantization_config": {"quant_method": 5}})";
  expect_bad_input("model show " + path, "quant_method");
  std::ofstream(path) << R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 10,
      "quantization_config": {"quant_method": "gptq", "bits": "4"}})";
  expect_bad_input("model show " + path, "bits");
  std::filesystem::remove(path);
  const std::string name = std::string(63, 'a') + "\xE2\x82\xAC";
  for (const char* flag : {"--model", "--hardware", "--strategy", "--weights"}) {
    const CliRun r = roofline(std::string("predict ") + flag + " '" + name + "' --json");
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_EQ(r.err.find("internal"), std::string::npos) << r.err;
  }
}

// Item 8: absurd thread counts and per-tensor state are refused before any
// allocation or output (they ended in std::bad_alloc, exit 1).
TEST(Cli, ThreadsAndTensorStateAreBoundedBeforeAllocating) {
  expect_bad_input("sweep --threads 4294967295", "--threads");
  expect_bad_input("sweep --threads 257", "0 to 256");
  // A [1, 1e9] F16 tensor: 2 GB of data in a sparse file (no disk is used).
  const std::string path = temp_path("wide.safetensors");
  const std::uint64_t bytes = 2'000'000'000;
  const std::string header =
      nlohmann::json{
          {"w", {{"dtype", "F16"}, {"shape", {1, 1'000'000'000}}, {"data_offsets", {0, bytes}}}}}
          .dump();
  {
    std::ofstream out(path, std::ios::binary);
    std::string len(8, '\0');
    for (int i = 0; i < 8; ++i)
      len[static_cast<std::size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
    out << len << header;
  }
  std::filesystem::resize_file(path, 8 + header.size() + bytes);
  expect_bad_input("quantize --checkpoint " + path, "more rows or columns than the");
  expect_bad_input("recommend --model llama-3.1-8b --checkpoint " + path, "more rows or columns");
  std::filesystem::remove(path);
}

// Item 9: a validation file must be a regular file of bounded size, named.
TEST(Cli, ValidationFilesAreCheckedBeforeReading) {
  expect_bad_input("validate --validation-file /dev/zero", "not a regular file");
  expect_bad_input("validate --validation-file " + std::filesystem::temp_directory_path().string(),
                   "not a regular file");
  expect_bad_input("validate --validation-file ''", "empty");
  expect_bad_input("validate --validation-file /nonexistent/v.json", "no such file");
}

// Item 10: hardware figures outside plausible ranges name the file, key and range.
TEST(Cli, ImplausibleHardwareFiguresAreRefused) {
  const std::string path = temp_path("hw.json");
  auto doc =
      nlohmann::json::parse(slurp(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/hardware/gb10.json"));
  doc["memory"]["bandwidth_Bps"]["value"] = 5e-324;
  std::ofstream(path) << doc.dump();
  expect_bad_input("gemv --hardware gb10 --n 64 --k 64 --hardware-file " + path,
                   path +
                       ": memory.bandwidth_Bps: value 4.94066e-324 is outside the plausible "
                       "range 1 GB/s to 100 TB/s");
  doc = nlohmann::json::parse(slurp(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/hardware/gb10.json"));
  doc["compute"]["sm_count"]["value"] = 1e308;
  std::ofstream(path) << doc.dump();
  expect_bad_input("gemv --hardware gb10 --n 64 --k 64 --hardware-file " + path,
                   "compute.sm_count");
  std::filesystem::remove(path);
}

// Item 12: dimensions are decimal numbers: no hex, no leading space.
TEST(Cli, DimensionsAreDecimal) {
  expect_bad_input("gemm --hardware gb10 --m 0x10 --n 64 --k 64", "--m: '0x10'");
  expect_bad_input("gemm --hardware gb10 --m ' 5' --n 64 --k 64", "--m: ' 5'");
  expect_bad_input("gemm --hardware gb10 --m inf --n 64 --k 64", "--m");
  const CliRun ok = roofline("gemm --hardware gb10 --m 1.6e1 --n 64 --k 64 --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["m"], 16);
}

}  // namespace

namespace {

TEST(CliEngines, ListShowAndPredict) {
  const CliRun list = roofline("engines");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const char* id :
       {"roofline", "vllm", "sglang", "trtllm", "llama.cpp", "ollama", "mlc", "gpt-fast"}) {
    EXPECT_NE(list.out.find(std::string("\n") + id + " "), std::string::npos) << id;
  }
  const CliRun show = roofline("engines show vllm --json");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto j = nlohmann::json::parse(show.out);
  EXPECT_EQ(j["id"], "vllm");
  EXPECT_TRUE(j["decode_cuda_graphs"].get<bool>());
  EXPECT_EQ(j["gemm_tables"].size(), 8u);  // measured on eight devices
  EXPECT_EQ(j["scheduler"]["pipeline"], "micro_batches");
  // The text names each scheduler choice with its source.
  const CliRun text = roofline("engines show trtllm");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* line :
       {"scheduler steps              mixed", "prompts                      whole",
        "KV admission                 whole request",
        "pipeline stages              a micro-batch per stage in flight"}) {
    EXPECT_NE(text.out.find(line), std::string::npos) << line;
  }
  // vLLM's MoE rules: the kernel family by release and the stand-in tables.
  const CliRun vllm = roofline("engines show vllm");
  ASSERT_EQ(vllm.exit_code, 0) << vllm.err;
  for (const char* line :
       {"MoE kernel by release        mxfp4 experts on marlin on hopper, releases before 0.12.0",
        "MoE kernel by release        mxfp4 experts on marlin on ampere, every release (priced "
        "by the family's int4 layers where mxfp4's were not measured)",
        "MoE layers on ampere         sglang's MoE tables stand in",
        "sliding windows by release   vLLM's Triton unified attention on ampere (attention-sink "
        "models) masks the keys outside a sliding window instead of skipping them: prompt kernel "
        "before 0.11.0, split-KV decode kernel before 0.14.0"}) {
    EXPECT_NE(vllm.out.find(line), std::string::npos) << line;
  }

  const CliRun p =
      roofline("predict --model llama-3.1-8b --hardware h200 --engine trtllm --json --per-op");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const auto pj = nlohmann::json::parse(p.out);
  EXPECT_EQ(pj["engine"]["id"], "trtllm");
  EXPECT_EQ(pj["engine"]["gemm_table"], "h200-trtllm");
  for (const auto& op : pj["ops"]) {
    if (op["kind"] == "matmul") {
      EXPECT_EQ(op["efficiency_source"], "measured-table") << op["name"];
    } else if (op["kind"] == "attention") {
      // The engine's attention table priced the call (and says so per op).
      EXPECT_EQ(op["efficiency_source"], "measured-attention-table") << op["name"];
    } else {
      EXPECT_TRUE(op["efficiency_source"].is_null()) << op["name"];
    }
  }

  // The per-op table names each op's source too, with the fraction a table gave.
  const CliRun table =
      roofline("predict --model llama-3.1-8b --hardware h200 --engine trtllm --per-op");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("efficiency from"), std::string::npos);
  EXPECT_NE(table.out.find("measured-table "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("measured-attention-table "), std::string::npos) << table.out;

  // Ideal mode leaves the engine's costs out, and says so rather than drop it unsaid.
  const CliRun ideal =
      roofline("predict --model llama-3.1-8b --hardware h200 --engine trtllm --ideal --json");
  ASSERT_EQ(ideal.exit_code, 0) << ideal.err;
  const auto ij = nlohmann::json::parse(ideal.out);
  EXPECT_EQ(ij["engine"]["id"], "roofline");
  EXPECT_EQ(ij["time_s"], nlohmann::json::parse(roofline("predict --model llama-3.1-8b "
                                                         "--hardware h200 --ideal --json")
                                                    .out)["time_s"]);
  EXPECT_NE(ij["notes"].dump().find("TensorRT-LLM's kernels and costs are not applied"),
            std::string::npos)
      << ij["notes"];

  // recommend lists the strategies an engine cannot run as rejected, and still recommends.
  const CliRun rec = roofline("recommend --model llama-3-8b --hardware gb10 --engine llama.cpp");
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  EXPECT_NE(rec.out.find("recommended"), std::string::npos);
  EXPECT_NE(rec.out.find("cannot run fp8"), std::string::npos) << rec.out;

  expect_bad_input("engines show nope", "unknown engine 'nope'");
  expect_bad_input("engines list", "engines: 'show ID'");
  expect_bad_input("predict --model llama-3.1-8b --hardware h200 --engine nope", "known: roofline");
  // An engine that cannot load the format says so.
  expect_bad_input("predict --model llama-3.1-8b --hardware h200 --engine trtllm --weights q4_k_m",
                   "TensorRT-LLM cannot run q4_k_m");
  expect_bad_input(
      "predict --model llama-3.1-8b --hardware h200 --engine llama.cpp --weights fp8 --act fp8",
      "cannot run fp8");
}

}  // namespace

namespace {

// Issue 13 item 7: `serve` finds the built web app beside its build tree
// without --web-dir (or says it found none).
TEST(CliServe, FindsTheWebAppWithoutWebDir) {
  const std::string err =
      (std::filesystem::temp_directory_path() / ("rl-serve-" + std::to_string(::getpid())))
          .string();
  const std::string cmd = std::string("timeout 2 '") + ROOFLINE_CLI_PATH + "' serve --port 0 2>" +
                          err + " >/dev/null </dev/null";
  (void)std::system(cmd.c_str());  // ended by timeout: the first line is what matters
  CliRun r;
  r.err = slurp(err);
  std::filesystem::remove(err);
  const bool built =
      std::filesystem::exists(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/../web/dist/index.html");
  if (built) {
    EXPECT_NE(r.err.find("the web app from"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("web/dist"), std::string::npos) << r.err;
  } else {
    EXPECT_NE(r.err.find("no web app found"), std::string::npos) << r.err;
  }
  expect_bad_input("serve --json", "--json");
}

}  // namespace

namespace {

// Issue 13 item 5: GEMM-shape sweeps.
TEST(CliSweepGemm, OneRowPerCombination) {
  const CliRun r = roofline(
      "sweep gemm --m 1,16,256 --n 4096 --k 4096,14336 --weights bf16,fp8 --act bf16 "
      "--hardware h100-sxm,gb10");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("hardware,mode,m,n,k,weights,act,compute_format,time_s,", 0), 0u);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 3 * 1 * 2 * 2 * 1 * 2);
  EXPECT_TRUE(r.err.empty()) << r.err;

  const CliRun j = roofline("sweep gemm --m 1,16 --hardware h100,a100 --act fp8 --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto rows = nlohmann::json::parse(j.out);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_GT(rows[0]["time_s"].get<double>(), 0);
  EXPECT_GT(rows[0]["attained_flops_per_s"].get<double>(), 0);
  // The A100 has no fp8 tensor cores: a row that says so, not a failure.
  EXPECT_NE(rows[2]["error"].get<std::string>().find("cannot compute in fp8"), std::string::npos);

  const CliRun l = roofline("sweep gemm --m 1,16 --format jsonl");
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(std::count(l.out.begin(), l.out.end(), '\n'), 2);
}

TEST(CliSweepGemm, RowsAreTheGemmCommandsCsv) {
  // The first 17 columns of a sweep row are `roofline gemm --csv`'s row (device named hardware).
  for (const char* shape :
       {"--hardware h100 --m 16 --n 4096 --k 4096 --weights int4 --act fp16",
        "--hardware gb10 --m 4096 --n 4096 --k 14336 --weights nvfp4 --act fp8 --ideal",
        "--hardware a100 --m 1 --n 128256 --k 4096 --weights bf16 --act bf16"}) {
    SCOPED_TRACE(shape);
    const CliRun g = roofline(std::string("gemm --csv ") + shape);
    const CliRun s = roofline(std::string("sweep gemm ") + shape);
    ASSERT_EQ(g.exit_code, 0) << g.err;
    ASSERT_EQ(s.exit_code, 0) << s.err;
    auto data_row = [](const std::string& text) {
      const std::size_t start = text.find('\n') + 1;
      return text.substr(start, text.find('\n', start) - start);
    };
    auto split = [](const std::string& line) {
      std::vector<std::string> out;
      std::string item;
      std::istringstream in(line);
      while (std::getline(in, item, ',')) out.push_back(item);
      return out;
    };
    const auto gemm_row = split(data_row(g.out));
    const auto sweep_row = split(data_row(s.out));
    ASSERT_EQ(gemm_row.size(), 17u);
    ASSERT_GE(sweep_row.size(), 17u);
    // The same values to 6 significant digits, written alike or not ("536871000" or "5.36871e+08").
    for (std::size_t i = 0; i < gemm_row.size(); ++i) {
      char* end = nullptr;
      const double v = std::strtod(gemm_row[i].c_str(), &end);
      if (end != gemm_row[i].c_str() && *end == '\0') {
        EXPECT_EQ(std::strtod(sweep_row[i].c_str(), nullptr), v) << i << ": " << sweep_row[i];
      } else {
        EXPECT_EQ(sweep_row[i], gemm_row[i]) << i;
      }
    }
  }
}

TEST(CliSweepGemm, BadInputIsOneLineAndExit2) {
  expect_bad_input("sweep gemm --weights fp7", "unknown format 'fp7'");
  expect_bad_input("sweep gemm --act q4_0", "storage-only");
  expect_bad_input("sweep gemm --m 0", "--m: '0' must be a whole number from 1 to 2147483647");
  expect_bad_input("sweep gemm --m=-16", "--m: '-16'");
  expect_bad_input("sweep gemm --n 1e12", "--n: '1e12'");
  expect_bad_input("sweep gemm --k 4096.5", "--k");
  expect_bad_input("sweep gemm --k 0x10", "decimal notation");
  expect_bad_input("sweep gemm --m 1,,2", "empty item");
  expect_bad_input("sweep gemm --hardware h9000", "unknown device 'h9000'");
  expect_bad_input("sweep gemm --format xml", "--format");
  expect_bad_input("sweep gemm --threads 257", "0 to 256");
  expect_bad_input("sweep gemm --model llama-3.1-8b", "--model");
  expect_bad_input("sweep --batch 8 gemm --m 1", "--batch came before it");
  // 1,000 x 1,000 x 100 shapes: 10^8 rows, refused before any is computed.
  std::string thousand, hundred;
  for (int i = 1; i <= 1000; ++i) thousand += (i > 1 ? "," : "") + std::to_string(i);
  for (int i = 1; i <= 100; ++i) hundred += (i > 1 ? "," : "") + std::to_string(i);
  expect_bad_input("sweep gemm --m " + thousand + " --n " + thousand + " --k " + hundred,
                   "more than 50000000 combinations");
}

}  // namespace

namespace {

// --kernel-file: your own GPU's measurements price the GEMMs they cover, on
// the device they were measured on only.
TEST(Cli, KernelFilesPriceTheGemmsTheyMeasured) {
  const std::string file = std::string(ROOFLINE_SOURCE_DATA_DIR) + "/kernels/h200-cublaslt.json";
  const CliRun r = roofline(
      "predict --model llama-3.1-8b --hardware h200 --batch 16 --engine vllm "
      "--per-op --json --kernel-file '" +
      file + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  int measured = 0;
  for (const auto& op : j["ops"]) {
    if (op["kind"] == "matmul" && op["efficiency_source"] == "measured-table") ++measured;
  }
  EXPECT_GT(measured, 0);
  expect_bad_input("predict --model llama-3.1-8b --hardware h100 --kernel-file '" + file + "'",
                   "measured on h200, not h100-sxm");
  expect_bad_input("predict --hardware h200 --kernel-file /nonexistent", "/nonexistent");
  expect_bad_input("predict --hardware h200 --ideal --kernel-file '" + file + "'", "ideal");
}

// --engine-build: an older build's path, named in the notes; a bad date is bad input.
TEST(Cli, EngineBuildDatesSelectTheBuildsPath) {
  const std::string q4 =
      "predict --model llama-3.1-8b --hardware a100 --engine llama.cpp --weights q4_k_m "
      "--act fp16 --phase prefill --seq-len 512 --json";
  const CliRun now = roofline(q4);
  const CliRun then = roofline(q4 + " --engine-build 2024-05");
  ASSERT_EQ(now.exit_code, 0) << now.err;
  ASSERT_EQ(then.exit_code, 0) << then.err;
  const auto a = nlohmann::json::parse(now.out), b = nlohmann::json::parse(then.out);
  EXPECT_GT(b["time_s"].get<double>(), a["time_s"].get<double>());
  EXPECT_NE(b.dump().find("dequantized to F16"), std::string::npos);
  EXPECT_EQ(a.dump().find("dequantized to F16"), std::string::npos);
  EXPECT_EQ(b["engine"]["build"], "2024-05-31");  // a month: its last day
  EXPECT_FALSE(a["engine"].contains("build"));
  expect_bad_input("predict --engine llama.cpp --engine-build 2024-13", "--engine-build");
  expect_bad_input("predict --engine llama.cpp --engine-build yesterday", "--engine-build");
  // The sweep's rows follow the build too: its one row is the dated prediction.
  const CliRun swept = roofline(
      "sweep --model llama-3.1-8b --hardware a100 --engine llama.cpp --weights q4_k_m --act fp16 "
      "--phase prefill --seq-len 512 --engine-build 2024-05 --format json");
  ASSERT_EQ(swept.exit_code, 0) << swept.err;
  const auto rows = nlohmann::json::parse(swept.out);
  ASSERT_EQ(rows.size(), 1u);
  constexpr double kSweepDigits = 1e-5;  // the sweep prints six significant digits
  EXPECT_NEAR(rows[0]["time_s"].get<double>(), b["time_s"].get<double>(),
              kSweepDigits * b["time_s"].get<double>());
  expect_bad_input("sweep --engine llama.cpp --engine-build 2024-02-30", "--engine-build");
}

// --engine-version: the rules an engine's profile dates by release follow it
// in predict as in serving (vLLM 0.11.0's Triton attention on an A100 masks
// gpt-oss's sliding windows in its split-KV kernel; 0.14.0 and the current
// release skip them); a malformed release is bad input.
TEST(Cli, EngineVersionSelectsTheReleasesRules) {
  const std::string decode =
      "predict --model gpt-oss-20b --hardware a100 --engine vllm --seq-len 32768 --json";
  const CliRun now = roofline(decode);
  const CliRun then = roofline(decode + " --engine-version 0.11.0");
  const CliRun fixed = roofline(decode + " --engine-version 0.14.0");
  ASSERT_EQ(now.exit_code, 0) << now.err;
  ASSERT_EQ(then.exit_code, 0) << then.err;
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  const auto a = nlohmann::json::parse(now.out), b = nlohmann::json::parse(then.out);
  EXPECT_GT(b["time_s"].get<double>(), a["time_s"].get<double>());
  EXPECT_EQ(nlohmann::json::parse(fixed.out)["time_s"], a["time_s"]);
  EXPECT_NE(b.dump().find("12 sliding-window layers attend over the whole context"),
            std::string::npos);
  EXPECT_EQ(a.dump().find("sliding-window layers attend"), std::string::npos);
  // generate's decode steps follow it too.
  const CliRun gen = roofline(
      "generate --model gpt-oss-20b --hardware a100 --engine vllm --prompt 16384 --gen 8 --json "
      "--engine-version 0.11.0");
  const CliRun gen_now = roofline(
      "generate --model gpt-oss-20b --hardware a100 --engine vllm --prompt 16384 --gen 8 --json");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  ASSERT_EQ(gen_now.exit_code, 0) << gen_now.err;
  EXPECT_GT(nlohmann::json::parse(gen.out)["tpot_s"].get<double>(),
            nlohmann::json::parse(gen_now.out)["tpot_s"].get<double>());
  expect_bad_input("predict --engine vllm --engine-version '0.11.0; rm'", "--engine-version");
  // The sweep's rows follow it too: its one row is the release's prediction above.
  const CliRun swept = roofline(
      "sweep --model gpt-oss-20b --hardware a100 --engine vllm --seq-len 32768 "
      "--engine-version 0.11.0 --format json");
  ASSERT_EQ(swept.exit_code, 0) << swept.err;
  const auto rows = nlohmann::json::parse(swept.out);
  ASSERT_EQ(rows.size(), 1u);
  constexpr double kSweepDigits = 1e-5;  // the sweep prints six significant digits
  EXPECT_NEAR(rows[0]["time_s"].get<double>(), b["time_s"].get<double>(),
              kSweepDigits * b["time_s"].get<double>());
  expect_bad_input("sweep --engine vllm --engine-version '0.11 beta'", "--engine-version");
}

// --cuda-graphs: a deployment that turns the engine's graphs down pays the
// eager launch in the steps it leaves without them; the JSON names the policy.
TEST(Cli, CudaGraphPoliciesPriceStepsWithoutGraphs) {
  const std::string prefill =
      "predict --model llama-3.1-8b --hardware h100 --engine vllm --weights fp8 --act fp8 "
      "--phase prefill --seq-len 256 --json";  // within the captured graphs (512 tokens)
  const CliRun engine = roofline(prefill);
  const CliRun decode_only = roofline(prefill + " --cuda-graphs decode-only");
  ASSERT_EQ(engine.exit_code, 0) << engine.err;
  ASSERT_EQ(decode_only.exit_code, 0) << decode_only.err;
  const auto a = nlohmann::json::parse(engine.out), b = nlohmann::json::parse(decode_only.out);
  EXPECT_GT(b["time_s"].get<double>(), a["time_s"].get<double>());
  EXPECT_EQ(b["engine"]["graph_policy"], "decode-only");
  EXPECT_FALSE(a["engine"].contains("graph_policy"));
  // Serving: with no graph at all, decode steps launch eagerly too.
  const std::string serving =
      "serving --model llama-3.1-8b --hardware h100 --engine vllm --weights fp8 --act fp8 "
      "--isl 512 --osl 64 --concurrency 4 --json";
  const CliRun graphed = roofline(serving), off = roofline(serving + " --cuda-graphs off");
  ASSERT_EQ(graphed.exit_code, 0) << graphed.err;
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const auto g = nlohmann::json::parse(graphed.out), o = nlohmann::json::parse(off.out);
  EXPECT_GT(o["tpot_s"].get<double>(), g["tpot_s"].get<double>());
  EXPECT_GT(o["ttft_s"].get<double>(), g["ttft_s"].get<double>());
  EXPECT_NE(o.dump().find("CUDA graphs off (the deployment's)"), std::string::npos);
  EXPECT_EQ(g.dump().find("the deployment's)"), std::string::npos);
  expect_bad_input("predict --engine vllm --cuda-graphs FULL_DECODE_ONLY", "--cuda-graphs");
  expect_bad_input("sweep --engine vllm --cuda-graphs none", "--cuda-graphs");
}

// --moe-kernel: the family's measured layers price the MoE; the text names the
// table and says where a borrowed measurement comes from.
TEST(Cli, MoeKernelFamiliesPriceTheLayersTheyMeasured) {
  const std::string decode =
      "predict --model minimax-m2 --hardware b200 --engine vllm --weights fp8 --act fp8 "
      "--tp 2 --ep 2 --batch 32 --seq-len 1500";
  const CliRun blend = roofline(decode + " --json");
  const CliRun triton = roofline(decode + " --moe-kernel triton --json");
  ASSERT_EQ(blend.exit_code, 0) << blend.err;
  ASSERT_EQ(triton.exit_code, 0) << triton.err;
  EXPECT_GT(nlohmann::json::parse(triton.out)["time_s"].get<double>(),
            nlohmann::json::parse(blend.out)["time_s"].get<double>());
  const CliRun text = roofline(decode + " --moe-kernel triton");
  EXPECT_NE(text.out.find("another engine on this device"), std::string::npos) << text.out;
  expect_bad_input(decode + " --moe-kernel cuda", "--moe-kernel");
  expect_bad_input(
      "predict --model minimax-m2 --hardware h200 --engine vllm --moe-kernel "
      "flashinfer-trtllm",
      "measured: ");
  expect_bad_input("predict --model minimax-m2 --hardware b200 --moe-kernel triton",
                   "no measured MoE layers");
}

}  // namespace

namespace {

// `validate --track-record` writes the snapshot predictions quote: byte for
// byte the shipped file (the command that rewrites it, data/validation).
TEST(Cli, ValidateTrackRecordIsTheShippedSnapshot) {
  const CliRun r = roofline("validate --track-record");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, slurp(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/validation/track-record.json"))
      << "rewrite it: roofline validate --track-record > data/validation/track-record.json";
  expect_bad_input("validate --track-record --ideal", "--track-record");
  expect_bad_input("validate --track-record --engine vllm", "--track-record");
  expect_bad_input("validate --track-record --serving", "--track-record");
}

// Predictions, generations and serving runs quote their engine's track record.
TEST(Cli, PredictionsQuoteTheirEnginesTrackRecord) {
  const CliRun p = roofline(
      "predict --model llama-3.1-70b --hardware mi300x --engine vllm --tp 8 --weights fp8");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("track record (roofline validate): vLLM on the AMD Instinct MI300X"),
            std::string::npos)
      << p.out;
  const CliRun g = roofline(
      "generate --model llama-3.1-8b --hardware h200 --engine vllm --prompt 512 --gen 64 --json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const auto gj = nlohmann::json::parse(g.out);
  ASSERT_EQ(gj["track_record"].size(), 2u);
  EXPECT_EQ(gj["track_record"][0]["kind"], "prompt");
  EXPECT_EQ(gj["track_record"][1]["kind"], "generation");
  EXPECT_EQ(gj["notes"].size(), 2u);
  const CliRun reference = roofline("predict --model llama-3.1-8b --hardware h200 --json");
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  EXPECT_TRUE(nlohmann::json::parse(reference.out)["track_record"].empty());
}

// Configurations the file measured twice, far apart, are listed in the text
// and the JSON of validate --serving and --decode-steps (validate.h
// measurement_conflicts: TPOTs 1.25x or more apart).
TEST(Cli, ValidateServingListsTheConfigurationsMeasuredTwiceApart) {
  const std::string header =
      "id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,"
      "moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,"
      "prefill_batch_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,"
      "prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size,decode_batch_size,"
      "decode_num_workers,decode_tp_size,decode_pp_size,decode_attention_dp_size,"
      "decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n";
  // One Llama-3.1-70B fp8 configuration on H200s at TP 2 and 16 clients,
  // measured on two releases at 10 and 20 ms; the same at TP 4 once.
  auto row = [](const std::string& id, const std::string& version, const std::string& tp,
                const std::string& tpot) {
    return id + ",vllm," + version + ",meta-llama/Llama-3.1-70B,h200_sxm,fp8,agg,1024,256,fp8," +
           "fp8,16," + tp + ",1,1,,,,,,,,,,,,,,,,,150.0," + tpot + "\n";
  };
  const std::string file = temp_path("conflicts.csv");
  {
    std::ofstream out(file);
    out << header << row("fast", "0.12.0", "2", "10.0") << row("slow", "0.13.0", "2", "20.0")
        << row("alone", "0.12.0", "4", "12.0");
  }
  const CliRun j = roofline("validate --serving '" + file + "' --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["conflicting_measurements"].size(), 1u);
  const auto& c = doc["conflicting_measurements"][0];
  EXPECT_EQ(c["ids"], nlohmann::json::parse(R"(["fast", "slow"])"));  // fastest first
  EXPECT_EQ(c["backend_versions"], nlohmann::json::parse(R"(["0.12.0", "0.13.0"])"));
  EXPECT_DOUBLE_EQ(c["ratio"].get<double>(), 2.0);
  // No one prediction p beats max(|p - 10| / 10, |p - 20| / 20): at best
  // p = 2 x 10 x 20 / 30, off by (20 - 10) / (10 + 20) = 33.3% from both.
  EXPECT_NEAR(c["floor_error_pct"].get<double>(), 100.0 / 3, 1e-9);
  EXPECT_TRUE(c["across_releases"].get<bool>());

  const CliRun text = roofline("validate --serving '" + file + "'");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("1 configurations were measured more than once with TPOTs 25% or more "
                          "apart (2 rows; 1 of them across engine releases): no one prediction "
                          "comes within 33.3%"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("2.00x  fast: 10.00 ms (0.12.0), 20.00 ms (0.13.0)"), std::string::npos)
      << text.out;

  // Issue 12's three targets over the aggregated rows, in the JSON and the text.
  ASSERT_EQ(doc["targets"].size(), 3u);
  EXPECT_EQ(doc["targets"][0]["target"], "aggregated TPOT: median |error|");
  EXPECT_DOUBLE_EQ(doc["targets"][2]["limit"].get<double>(), 20);
  EXPECT_NE(text.out.find("Issue 12's targets (aggregated rows)"), std::string::npos) << text.out;

  const CliRun steps = roofline("validate --decode-steps --serving-file '" + file + "' --json");
  ASSERT_EQ(steps.exit_code, 0) << steps.err;
  const auto steps_doc = nlohmann::json::parse(steps.out);
  EXPECT_EQ(steps_doc["conflicting_measurements"].size(), 1u);
  ASSERT_EQ(steps_doc["targets"].size(), 1u);
  EXPECT_DOUBLE_EQ(steps_doc["targets"][0]["limit"].get<double>(), 12);
  std::filesystem::remove(file);
}

// validate --serving fits each sweep measured at two or more prompt lengths to
// TTFT = fixed + per_token x isl (validate.h ttft_length_fits), in the text
// and the JSON.
TEST(Cli, ValidateServingFitsTtftAgainstPromptLength) {
  const std::string file = temp_path("lengths.csv");
  {
    std::ofstream out(file);
    out << "id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,"
           "moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,"
           "prefill_batch_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,"
           "prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size,decode_batch_size,"
           "decode_num_workers,decode_tp_size,decode_pp_size,decode_attention_dp_size,"
           "decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n";
    for (const auto& [isl, ttft] : {std::pair{"1024", "150.0"}, {"2048", "250.0"}}) {
      out << "len" << isl << ",vllm,0.12.0,meta-llama/Llama-3.1-70B,h200_sxm,fp8,agg," << isl
          << ",256,fp8,fp8,16,2,1,1,,,,,,,,,,,,,,,,," << ttft << ",10.0\n";
    }
  }
  const CliRun j = roofline("validate --serving '" + file + "' --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto fits = nlohmann::json::parse(j.out)["ttft_by_prompt_length"];
  ASSERT_EQ(fits["sweeps"].size(), 1u);
  const auto& f = fits["sweeps"][0];
  EXPECT_EQ(f["isl"], nlohmann::json::parse("[1024, 2048]"));
  // Through (1,024, 150 ms) and (2,048, 250 ms): 100 / 1,024 ms a token and
  // 150 - 100 = 50 ms fixed.
  EXPECT_NEAR(f["measured_per_token_s"].get<double>(), 0.1 / 1024, 1e-12);
  EXPECT_NEAR(f["measured_fixed_s"].get<double>(), 0.05, 1e-12);
  EXPECT_GT(f["predicted_per_token_s"].get<double>(), 0);  // a longer prompt costs more
  EXPECT_EQ(fits["groups"][0]["group"], "all");
  EXPECT_EQ(fits["groups"][0]["sweeps"], 1);

  const CliRun text = roofline("validate --serving '" + file + "'");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("TTFT against prompt length"), std::string::npos) << text.out;
  std::filesystem::remove(file);
}

TEST(Cli, ServingReportsTheIssuesFields) {
  const CliRun r = roofline(
      "serving --model llama-3.1-70b --hardware h200 --engine vllm --tp 2 --weights fp8 --act fp8 "
      "--isl 1024 --osl 256 --concurrency 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s",
                          "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_user", "gpus",
                          "max_concurrency_that_fits", "limited_by", "notes"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["gpus"], 2);
  // The cache that sized it: whole requests of 1,280 tokens within its tokens,
  // under vLLM's rule for the current release (0.92 of the whole memory).
  const std::int64_t fits = j["max_concurrency_that_fits"];
  const std::int64_t tokens = j["kv_cache_tokens"];
  EXPECT_GE(tokens, fits * 1280);
  EXPECT_LT(tokens, (fits + 1) * 1280);
  EXPECT_GT(j["kv_cache_bytes_per_gpu"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["kv_memory"]["share"].get<double>(), 0.92);
  EXPECT_EQ(j["kv_memory"]["of"], "total");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --batch 4", "--concurrency");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --isl 0", "--isl");
  expect_bad_input("serving --model llama-3.1-70b --hardware h100 --concurrency 1", "does not fit");
  expect_bad_input("validate --serving --decode-steps", "--serving");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --mode both", "mode");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --rounds 0", "--rounds");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --isl 512 --shared-prefix 512",
                   "shared prefix = 512 must be from 0 to the shortest prompt - 1 (511)");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --prompt-pool -1",
                   "--prompt-pool");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --prompt-pool 4 --mode disagg",
                   "prompt pool: modeled for aggregated serving only");
  expect_bad_input("validate --prompt-pool 100", "--prompt-pool: give it with --serving");
  expect_bad_input("search --model llama-3.1-8b --hardware h100 --isl 512 --shared-prefix 512",
                   "shared prefix = 512 must be from 0 to the shortest prompt - 1 (511)");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --range-ratio 1.5",
                   "range ratio = 1.5 must be from 0 to 1");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --range-ratio 0.8 --isl-min 3",
                   "excludes");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --isl 512 --isl-min 600",
                   "--isl-min");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --range-ratio nan",
                   "--range-ratio");
  expect_bad_input("serving --model llama-3.1-8b --hardware h200 --engine vllm --recipe dynamo",
                   "recipe must be engine, aiconfigurator or trtllm-bench");
  expect_bad_input("validate --recipe engine", "--recipe: give it with --serving");
  expect_bad_input("validate --rounds 20", "--rounds: give it with --serving");
  expect_bad_input("validate --serving --rounds 0", "--rounds");
  expect_bad_input("validate --serving --rounds 1001", "--rounds");
  // AIConfigurator's benchmark limits: 64 + 1024 + 1500 tokens a step, 64 running.
  const CliRun aic = roofline(
      "serving --model llama-3.1-70b --hardware h200 --engine vllm --tp 2 --weights fp8 --act fp8 "
      "--isl 1024 --osl 256 --concurrency 64 --rounds 2 --recipe aiconfigurator --json");
  ASSERT_EQ(aic.exit_code, 0) << aic.err;
  const auto k = nlohmann::json::parse(aic.out);
  EXPECT_EQ(k["token_budget"], 2588);
  EXPECT_EQ(k["max_running"], 64);
  EXPECT_EQ(k["recipe"], "aiconfigurator");
}

// TensorRT-LLM's attention-DP balance from the flags: the JSON's adp_balance
// and the table's row; another engine and bad counts exit 2 with a line.
TEST(Cli, ServingTakesTensorRtLlmsAttentionDpBalance) {
  const std::string base =
      "serving --model deepseek-v3 --hardware b200 --tp 8 --attention-dp 8 --ep 8 --weights fp8 "
      "--act fp8 --isl 1024 --osl 128 --concurrency 32 --rounds 2 ";
  const CliRun r = roofline(base +
                            "--engine trtllm --adp-balance --adp-timeout-iters 60 "
                            "--adp-batching-wait-iters 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["adp_balance"]["timeout_iters"], 60);
  EXPECT_EQ(j["adp_balance"]["batching_wait_iters"], 0);
  EXPECT_GT(j["adp_balance"]["held_steps"].get<std::int64_t>(), 0);
  const CliRun table = roofline(base + "--engine trtllm --adp-balance");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("(timeout 50 steps, batching wait 10)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("TP 8, attention DP 8, EP 8"), std::string::npos) << table.out;
  const CliRun plain = roofline(base + "--engine trtllm --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_TRUE(nlohmann::json::parse(plain.out)["adp_balance"].is_null());
  expect_bad_input(base + "--engine sglang --adp-balance", "SGLang has none");
  expect_bad_input(base + "--engine trtllm --adp-balance --adp-timeout-iters -1",
                   "--adp-timeout-iters");
  expect_bad_input(base + "--engine trtllm --adp-balance --adp-batching-wait-iters x",
                   "--adp-batching-wait-iters");
}

// TensorRT-LLM's batch waiting from the flags: the JSON's batch_wait and the
// table's row; other engines and bad values exit 2 with a line saying why.
TEST(Cli, ServingTakesTensorRtLlmsBatchWaiting) {
  const std::string base =
      "serving --model llama-3.1-70b --hardware h200 --tp 2 --weights fp8 --act fp8 --isl 1024 "
      "--osl 256 --concurrency 8 --rounds 2 --token-budget 16384 ";
  const CliRun r = roofline(base +
                            "--engine trtllm --batch-wait-iters 20 --batch-wait-ratio 0.9 "
                            "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["batch_wait"]["iters"], 20);
  EXPECT_DOUBLE_EQ(j["batch_wait"]["ratio"].get<double>(), 0.9);
  EXPECT_GT(j["batch_wait"]["waited_steps"].get<std::int64_t>(), 0);
  const CliRun table = roofline(base + "--engine trtllm --batch-wait-iters 20");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("held their prompts back (at most 20 in a row)"), std::string::npos)
      << table.out;
  const CliRun plain = roofline(base + "--engine trtllm --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_TRUE(nlohmann::json::parse(plain.out)["batch_wait"].is_null());
  expect_bad_input(base + "--engine vllm --batch-wait-iters 20", "vLLM has none");
  expect_bad_input(base + "--engine trtllm --batch-wait-iters 20 --batch-wait-ratio 1.5", "ratio");
  expect_bad_input(base + "--engine trtllm --batch-wait-iters -3", "--batch-wait-iters");
  expect_bad_input(base + "--engine trtllm --batch-wait-ratio nan", "--batch-wait-ratio");
  // SGLang's receive interval: the JSON's fields and the table's row.
  const CliRun recv = roofline(base +
                               "--engine sglang --range-ratio 0.5 --scheduler-recv-interval "
                               "30 --json");
  ASSERT_EQ(recv.exit_code, 0) << recv.err;
  const auto k = nlohmann::json::parse(recv.out);
  EXPECT_EQ(k["scheduler_recv_interval"], 30);
  EXPECT_GT(k["recv_wait_s"].get<double>(), 0);
  const CliRun recv_table = roofline(base + "--engine sglang --scheduler-recv-interval 30");
  ASSERT_EQ(recv_table.exit_code, 0) << recv_table.err;
  EXPECT_NE(recv_table.out.find("every 30 decode steps"), std::string::npos) << recv_table.out;
  expect_bad_input(base + "--engine trtllm --scheduler-recv-interval 30", "SGLang's");
  expect_bad_input(base + "--engine sglang --scheduler-recv-interval -1",
                   "--scheduler-recv-interval");
  // The deployment's KV memory share: the JSON says it was set, the table too.
  const CliRun share = roofline(base + "--engine vllm --kv-memory-share 0.8 --json");
  ASSERT_EQ(share.exit_code, 0) << share.err;
  const auto kv = nlohmann::json::parse(share.out)["kv_memory"];
  EXPECT_DOUBLE_EQ(kv["share"].get<double>(), 0.8);
  EXPECT_EQ(kv["set"], true);
  const CliRun share_table = roofline(base + "--engine vllm --kv-memory-share 0.8");
  ASSERT_EQ(share_table.exit_code, 0) << share_table.err;
  EXPECT_NE(share_table.out.find("80% of the memory, weights and activations included, as set"),
            std::string::npos)
      << share_table.out;
  expect_bad_input(base + "--engine vllm --kv-memory-share 1.5", "kv memory share");
  expect_bad_input(base + "--engine vllm --kv-memory-share nan", "--kv-memory-share");
}

// Speculative decoding from the flags: the step's tokens in the JSON, the
// draft head's ops named; acceptance only with draft tokens, within [0, 1].
TEST(Cli, DraftTokensPriceASpeculativeStep) {
  const CliRun r = roofline(
      "predict --model llama-3.1-8b --hardware h100 --batch 4 --seq-len 1024 --draft-tokens 2 "
      "--acceptance 0.5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["tokens_per_step"].get<double>(), 1.75);  // 1 + 0.5 + 0.25
  EXPECT_EQ(j["scenario"]["draft_tokens"], 2);
  const CliRun table =
      roofline("predict --model llama-3.1-8b --hardware h100 --draft-tokens 2 --per-op");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("lm_head [draft]"), std::string::npos);
  EXPECT_NE(table.out.find("speculative decoding"), std::string::npos);
  expect_bad_input("predict --model llama-3.1-8b --hardware h100 --acceptance 0.5", "draft tokens");
  expect_bad_input("predict --model llama-3.1-8b --hardware h100 --draft-tokens 2 --acceptance 2",
                   "acceptance");
  expect_bad_input("predict --model llama-3.1-8b --hardware h100 --draft-tokens 99",
                   "--draft-tokens");
}

// --requests N: every client sends its share, rounded up (100 over 8 clients:
// 13 rounds, 104 requests); disaggregated runs count both pools' GPUs.
TEST(Cli, ServingTakesTheBenchmarksRequestCountAndDisaggregation) {
  const CliRun r = roofline(
      "serving --model llama-3.1-8b --hardware h100 --engine vllm --isl 512 --osl 64 "
      "--concurrency 8 --requests 100 --mode disagg --prefill-tp 1 --decode-workers 2 "
      "--decode-tp 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rounds"], 13);
  EXPECT_EQ(j["requests"], 104);
  EXPECT_EQ(j["mode"], "disagg");
  EXPECT_EQ(j["gpus"], 3);
  for (const char* key : {"p50", "p90", "p99", "mean"}) EXPECT_TRUE(j["ttft"].contains(key)) << key;
  EXPECT_GT(j["kv_transfer_s"].get<double>(), 0);
  // Each pool's attention DP and EP divide its own TP; they belong to disaggregation.
  const CliRun wide = roofline(
      "serving --model deepseek-v3 --hardware h200 --engine sglang --weights fp8 --act fp8 "
      "--isl 1024 --osl 64 --concurrency 16 --rounds 2 --mode disagg --prefill-tp 8 "
      "--prefill-attention-dp 8 --prefill-ep 8 --decode-tp 8 --attention-dp 8 --ep 8");
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_NE(wide.out.find("1 prefill x TP 8, attention DP 8, EP 8, 1 decode x TP 8, attention "
                          "DP 8, EP 8"),
            std::string::npos)
      << wide.out;
  expect_bad_input(
      "serving --model deepseek-v3 --hardware h200 --mode disagg --prefill-tp 8 --decode-tp 8 "
      "--prefill-attention-dp 3",
      "prefill attention dp = 3 must divide");
  expect_bad_input("serving --model deepseek-v3 --hardware h200 --tp 8 --prefill-ep 8",
                   "--mode disagg");
}

}  // namespace

namespace {

TEST(Cli, SearchGivesTheFrontAndTheBest) {
  const CliRun r = roofline(
      "search --model llama-3.1-8b --hardware h100 --gpus 2 --tpot-max 0.02 --engines vllm,trtllm "
      "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"front", "best", "runners_up", "evaluated", "refused"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_FALSE(j["front"].empty());
  EXPECT_TRUE(j["best"]["meets_targets"].get<bool>());
  expect_bad_input("search --gpus 0", "--gpus");
  expect_bad_input("search --engines nope", "nope");
  expect_bad_input("search --tpot-max -1", "--tpot-max");
  expect_bad_input("search --weights fp9", "fp9");
}

// --engine-version names a release for some of the searched engines (a bare
// one when --engines names one): the deployments carry it in their names and
// the document lists it; a release for an engine not searched, a bare release
// over several engines and a malformed release are bad input.
TEST(Cli, SearchTakesEngineReleases) {
  const std::string base =
      "search --model llama-3.1-8b --hardware h100 --gpus 1 --weights fp8 --concurrency 4 --json ";
  const CliRun r = roofline(base + "--engines vllm,sglang --engine-version vllm=0.12.0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["engine_versions"], (nlohmann::json{{"vllm", "0.12.0"}}));
  int dated = 0;
  for (const auto& x : j["runners_up"]) {
    if (x["engine"] == "vllm") {
      EXPECT_EQ(x["engine_version"], "0.12.0");
      EXPECT_EQ(x["name"], "vllm 0.12.0 fp8 TP1 x1");
      ++dated;
    } else {
      EXPECT_TRUE(x["engine_version"].is_null());
    }
  }
  if (j["best"]["engine"] == "vllm") ++dated;
  EXPECT_EQ(dated, 1);
  const CliRun bare = roofline(base + "--engines vllm --engine-version 0.12.0");
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(nlohmann::json::parse(bare.out)["best"]["name"], "vllm 0.12.0 fp8 TP1 x1");
  expect_bad_input(base + "--engines vllm --engine-version trtllm=1.0.0", "does not run");
  expect_bad_input(base + "--engine-version 0.12.0", "name the engine");
  expect_bad_input(base + "--engines vllm --engine-version 0.12.0/x", "release");
}

// `--recipe trtllm-bench`: TensorRT-LLM's scheduler as `trtllm-bench
// throughput` tunes it (Llama 3.1 8B FP8 on an H100 SXM at 128/2048 and a
// share of 0.95: 640 requests and 2,048 tokens, derived in serving_test.cpp),
// a burst of every request at once; another engine is refused.
TEST(Cli, ServingRunsTrtllmBenchsTunedLimits) {
  const std::string base =
      "serving --model llama-3.1-8b --hardware h100-sxm --weights fp8 --kv fp8 --isl 128 "
      "--osl 2048 --concurrency 3000 --requests 3000 --recipe trtllm-bench --kv-memory-share "
      "0.95 ";
  const CliRun r = roofline(base + "--engine trtllm --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["recipe"], "trtllm-bench");
  EXPECT_EQ(j["max_running"], 640);
  EXPECT_EQ(j["token_budget"], 2048);
  EXPECT_EQ(j["chunked_prefill"], "engine");  // as asked: the recipe's own rule runs
  bool said = false;
  for (const auto& n : j["notes"])
    said |= n.get<std::string>().find("max_batch_size 640") != std::string::npos;
  EXPECT_TRUE(said);
  expect_bad_input(base + "--engine vllm", "give --engine trtllm");
  expect_bad_input(base + "--engine trtllm --mode disagg", "one aggregated instance");
}

}  // namespace
