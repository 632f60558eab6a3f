// End-to-end tests of the `roofline` binary: output fields and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

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
  EXPECT_NE(r.out.find("h100-sxm,realistic,16,4096,4096,int4,fp16,fp16,"), std::string::npos) << r.out;
}

TEST(Cli, WeightOnlyFallbackIsSaid) {
  const CliRun r = roofline("gemv --hardware h100 --n 4096 --k 4096 --weights nvfp4 --act bf16 --json");
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
  const auto path = std::filesystem::temp_directory_path() / ("rl-hw-" + std::to_string(::getpid()) + ".json");
  auto doc = nlohmann::json::parse(slurp(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/hardware/gb10.json"));
  doc["memory"]["bandwidth_Bps"]["value"] = 546e9;
  std::ofstream(path) << doc.dump();
  const CliRun r = roofline("gemv --hardware gb10 --n 4096 --k 4096 --ideal --json --hardware-file " + path.string());
  std::filesystem::remove(path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NEAR(nlohmann::json::parse(r.out)["time_s"].get<double>(), 33'570'816 / 546e9, 1e-12);
}

TEST(Cli, BadInputExitsTwoWithOneLine) {
  expect_bad_input("gemv --hardware h9000 --n 4096 --k 4096", "unknown device 'h9000'");
  expect_bad_input("gemv --hardware gb10 --n 4096 --k 4096 --weights fp7", "unknown format 'fp7'");
  expect_bad_input("gemv --hardware gb10 --n 0 --k 4096", "--n");
  expect_bad_input("gemv --hardware gb10 --n -5 --k 4096", "-5");
  expect_bad_input("gemv --hardware gb10 --n abc --k 4096", "not a number");
  expect_bad_input("gemv --hardware gb10 --n nan --k 4096", "whole number");
  expect_bad_input("gemv --hardware gb10 --n inf --k 4096", "whole number");
  expect_bad_input("gemv --hardware gb10 --n 1e30 --k 4096", "whole number");
  expect_bad_input("gemv --hardware gb10 --n 4096.5 --k 4096", "whole number");
  expect_bad_input("gemm --hardware gb10 --n 4096 --k 4096", "--m");
  expect_bad_input("gemm --hardware a100 --m 1 --n 64 --k 64 --act fp8", "cannot compute in fp8");
  expect_bad_input("gemv --hardware gb10 --n 64 --k 64 --act q4_0", "storage-only");
  expect_bad_input("hardware show nope", "unknown device");
  expect_bad_input("gemv --hardware gb10 --n 64 --k 64 --hardware-file /nonexistent/x.json", "/nonexistent/x.json");
  expect_bad_input("", "subcommand");
  expect_bad_input("frobnicate", "frobnicate");
  expect_bad_input("formats --json --csv", "excludes");
}

TEST(Cli, BrokenHardwareFileNamesFileAndKey) {
  const auto path = std::filesystem::temp_directory_path() / ("rl-bad-" + std::to_string(::getpid()) + ".json");
  auto doc = nlohmann::json::parse(slurp(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/hardware/gb10.json"));
  doc["peaks"]["fp16"]["value"] = -62.5e12;
  std::ofstream(path) << doc.dump();
  expect_bad_input("hardware list --hardware-file " + path.string(), "peaks.fp16.value");
  std::filesystem::remove(path);
}

TEST(Cli, HelpAndVersionExitZero) {
  CliRun r = roofline("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("gemm"), std::string::npos);
  r = roofline("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("0."), std::string::npos);
}

}  // namespace
