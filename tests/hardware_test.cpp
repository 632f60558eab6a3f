#include "roofline/hardware.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "roofline/error.h"

namespace roofline {
namespace {

const Registry& registry() {
  static const Registry r = Registry::built_in();
  return r;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A valid device document to break one key at a time.
nlohmann::json base_device() {
  return nlohmann::json::parse(
      read_text(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/hardware/h100-sxm.json"));
}

// Expects parse_device to fail with a message containing every fragment.
void expect_parse_error(const nlohmann::json& doc, std::initializer_list<std::string> fragments) {
  try {
    (void)parse_device(doc.dump(), "test.json");
    FAIL() << "expected ParseError for " << doc.dump().substr(0, 200);
  } catch (const ParseError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("test.json: ", 0), 0u) << what;
    for (const auto& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
  }
}

TEST(Registry, HasEveryRequiredDevice) {
  for (const char* id : {"gb10", "b200", "gb200", "b300", "h100-sxm", "h100-pcie", "h200", "h20",
                         "a100-80gb", "a100-40gb", "l40s", "l4", "rtx-4090", "rtx-5090",
                         "rtx-pro-6000", "mi300x", "mi325x", "mi355x"}) {
    EXPECT_NE(registry().find(id), nullptr) << id;
  }
}

TEST(Registry, AliasesResolveCaseInsensitively) {
  EXPECT_EQ(registry().get("b10").id, "gb10");
  EXPECT_EQ(registry().get("DGX-Spark").id, "gb10");
  EXPECT_EQ(registry().get("spark").id, "gb10");
  EXPECT_EQ(registry().get("h100").id, "h100-sxm");
  EXPECT_EQ(registry().get("a100").id, "a100-80gb");
  EXPECT_EQ(registry().get("4090").id, "rtx-4090");
  EXPECT_EQ(registry().get("5090").id, "rtx-5090");
}

TEST(Registry, UnknownDeviceIsNotFoundListingIds) {
  try {
    (void)registry().get("h9000");
    FAIL();
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find("gb10"), std::string::npos);
  }
  EXPECT_EQ(registry().find(std::string(100'000, 'a')), nullptr);
}

TEST(Registry, EveryFigureHasACitedSource) {
  for (const Device& d : registry().devices()) {
    std::vector<const Figure*> figures = {&d.memory_capacity_bytes,
                                          &d.memory_bandwidth_Bps,
                                          &d.sm_count,
                                          &d.l2_bytes,
                                          &d.boost_clock_hz,
                                          &d.tdp_w,
                                          &d.interconnect_bandwidth_Bps,
                                          &d.bandwidth_fraction,
                                          &d.matmul_fraction_default,
                                          &d.launch_overhead_s};
    for (const auto& p : d.peaks)
      if (p) figures.push_back(&*p);
    for (const auto& m : d.matmul_fraction)
      if (m) figures.push_back(&*m);
    for (const Figure* f : figures) {
      EXPECT_FALSE(d.citation(*f).empty()) << d.id << " source " << f->source;
      EXPECT_EQ(f->known(), f->confidence != Confidence::kUnknown) << d.id;
    }
    EXPECT_TRUE(d.memory_bandwidth_Bps.known()) << d.id;
    EXPECT_GT(d.sm_count.value, 0) << d.id;
  }
}

// The original product sheet's errors (hardware-specs.md section 1a) must not come back.
TEST(Registry, OriginalSheetErrorsAreCorrected) {
  const Device& gb10 = registry().get("gb10");
  EXPECT_DOUBLE_EQ(gb10.memory_bandwidth_Bps.value, 273e9);  // not 287
  EXPECT_DOUBLE_EQ(gb10.peak(Format::kNvfp4), 500e12);       // 1 PFLOP is the sparse figure
  EXPECT_FALSE(gb10.computes(Format::kInt4));                // no INT4 tensor rate on sm_12x
  const Device& h100 = registry().get("h100-sxm");
  EXPECT_DOUBLE_EQ(h100.peak(Format::kFp16), 989.4e12);   // 133.8 is the vector rate
  EXPECT_DOUBLE_EQ(h100.peak(Format::kInt8), 1978.9e12);  // 3,958 is sparse
  const Device& b200 = registry().get("b200");
  EXPECT_DOUBLE_EQ(b200.peak(Format::kFp16), 2250e12);  // not 180
  EXPECT_DOUBLE_EQ(b200.peak(Format::kNvfp4), 9000e12);
  const Device& a100 = registry().get("a100-80gb");
  EXPECT_DOUBLE_EQ(a100.peak(Format::kInt8), 624e12);  // 624 is INT8, not INT4
  EXPECT_DOUBLE_EQ(a100.peak(Format::kInt4), 1248e12);
  EXPECT_FALSE(a100.computes(Format::kFp8));
}

TEST(Registry, NoInt4OrFp4OnHopperAndNoInt4OnBlackwell) {
  for (const char* id : {"h100-sxm", "h100-pcie", "h200", "h20"}) {
    const Device& d = registry().get(id);
    EXPECT_FALSE(d.computes(Format::kInt4)) << id;
    EXPECT_FALSE(d.computes(Format::kNvfp4)) << id;
    EXPECT_FALSE(d.computes(Format::kMxfp4)) << id;
    EXPECT_TRUE(d.computes(Format::kFp8)) << id;
  }
  for (const char* id : {"b200", "gb200", "b300", "gb10", "rtx-5090", "rtx-pro-6000"}) {
    const Device& d = registry().get(id);
    EXPECT_FALSE(d.computes(Format::kInt4)) << id;
    EXPECT_TRUE(d.computes(Format::kNvfp4)) << id;
  }
}

TEST(Registry, ConsumerTensorRatesAreFp32Accumulate) {
  // RTX 4090: 165.2 TF with FP32 accumulate, 330.3 with FP16 accumulate.
  const auto& p4090 = *registry().get("rtx-4090").peaks[format_index(Format::kFp16)];
  EXPECT_DOUBLE_EQ(p4090.value, 165.2e12);
  EXPECT_EQ(p4090.accumulate, Accumulate::kFp32);
  const auto& p5090 = *registry().get("rtx-5090").peaks[format_index(Format::kBf16)];
  EXPECT_DOUBLE_EQ(p5090.value, 209.5e12);
  EXPECT_EQ(p5090.accumulate, Accumulate::kFp32);
  // Their FP16-accumulate rates are figures of their own (FP16 and FP8
  // inputs; BF16 accumulates in FP32 only); a datacenter part runs both alike.
  EXPECT_DOUBLE_EQ(registry().get("rtx-4090").peak_fp16_accumulate(Format::kFp16), 330.3e12);
  EXPECT_DOUBLE_EQ(registry().get("rtx-4090").peak_fp16_accumulate(Format::kFp8), 660.6e12);
  EXPECT_DOUBLE_EQ(registry().get("rtx-4090").peak_fp16_accumulate(Format::kBf16), 165.2e12);
  EXPECT_DOUBLE_EQ(registry().get("rtx-5090").peak_fp16_accumulate(Format::kFp16), 419e12);
  const Device& h100 = registry().get("h100-sxm");
  EXPECT_DOUBLE_EQ(h100.peak_fp16_accumulate(Format::kFp16), h100.peak(Format::kFp16));
  EXPECT_TRUE(std::isnan(h100.peak_fp16_accumulate(Format::kNvfp4)));
}

// An FP16-accumulate rate belongs to a published FP32-accumulate tensor peak
// and runs 1 to 4 times it.
TEST(DeviceFile, Fp16AccumulateRatesAreChecked) {
  auto doc = base_device();
  const double fp16 = doc["peaks"]["fp16"]["value"].get<double>();
  doc["peaks"]["fp16"]["fp16_accumulate"] = {
      {"value", 2 * fp16}, {"confidence", "vendor"}, {"source", doc["peaks"]["fp16"]["source"]}};
  EXPECT_DOUBLE_EQ(parse_device(doc.dump(), "test.json").peak_fp16_accumulate(Format::kFp16),
                   2 * fp16);
  auto bad = doc;
  bad["peaks"]["fp16"]["fp16_accumulate"]["value"] = fp16 / 2;
  expect_parse_error(bad, {"peaks.fp16.fp16_accumulate", "1 to 4 times"});
  bad = doc;
  bad["peaks"]["fp16"]["fp16_accumulate"]["source"] = "nowhere";
  expect_parse_error(bad, {"fp16_accumulate", "nowhere"});
  bad = doc;
  bad["peaks"]["fp16"]["accumulate"] = "fp16";
  expect_parse_error(bad, {"peaks.fp16.fp16_accumulate", "FP32-accumulate tensor peak"});
  bad = doc;
  bad["peaks"]["fp32"]["fp16_accumulate"] = doc["peaks"]["fp16"]["fp16_accumulate"];
  expect_parse_error(bad, {"peaks.fp32.fp16_accumulate"});
  bad = doc;
  bad["peaks"]["bf16"]["fp16_accumulate"] = doc["peaks"]["fp16"]["fp16_accumulate"];
  expect_parse_error(bad, {"peaks.bf16.fp16_accumulate", "fp16 and fp8 inputs"});
}

TEST(Registry, FractionsAreWithinZeroAndOne) {
  for (const Device& d : registry().devices()) {
    EXPECT_GT(d.bandwidth_fraction.value, 0.3) << d.id;
    EXPECT_LE(d.bandwidth_fraction.value, 1.0) << d.id;
    EXPECT_GT(d.matmul_fraction_default.value, 0.3) << d.id;
    EXPECT_LE(d.matmul_fraction_default.value, 1.0) << d.id;
  }
}

TEST(Registry, DataHashIsStable) {
  EXPECT_EQ(Registry::built_in().data_hash(), registry().data_hash());
  EXPECT_EQ(registry().data_hash().size(), 16u);
}

TEST(DeviceFile, BaseDocumentParses) {
  const Device d = parse_device(base_device().dump(), "test.json");
  EXPECT_EQ(d.id, "h100-sxm");
  EXPECT_EQ(d.origin, "test.json");
}

TEST(DeviceFile, UnknownKeysAreErrors) {
  auto doc = base_device();
  doc["colour"] = "green";
  expect_parse_error(doc, {"colour", "unknown key"});
  doc = base_device();
  doc["memory"]["bandwidth_Bps"]["units"] = "GB/s";
  expect_parse_error(doc, {"memory.bandwidth_Bps.units", "unknown key"});
}

TEST(DeviceFile, MissingKeysAreErrors) {
  auto doc = base_device();
  doc["memory"].erase("bandwidth_Bps");
  expect_parse_error(doc, {"memory.bandwidth_Bps", "required key is missing"});
  doc = base_device();
  doc["peaks"]["fp16"].erase("source");
  expect_parse_error(doc, {"peaks.fp16.source", "missing"});
  doc = base_device();
  doc.erase("efficiency");
  expect_parse_error(doc, {"efficiency"});
}

TEST(DeviceFile, BadNumbersAreErrors) {
  auto doc = base_device();
  doc["memory"]["bandwidth_Bps"]["value"] = -1;
  expect_parse_error(doc, {"memory.bandwidth_Bps.value", "negative"});
  doc = base_device();
  doc["memory"]["bandwidth_Bps"]["value"] = "3.35 TB/s";
  expect_parse_error(doc, {"memory.bandwidth_Bps.value", "number"});
  doc = base_device();
  doc["efficiency"]["bandwidth_fraction"]["value"] = 1.5;
  expect_parse_error(doc, {"efficiency.bandwidth_fraction", "(0, 1]"});
  doc = base_device();
  doc["memory"]["bandwidth_Bps"]["value"] = 0;
  expect_parse_error(doc, {"memory.bandwidth_Bps", "positive"});
  // JSON has no NaN or infinity literals; overflowing numbers fail to parse.
  std::string text = base_device().dump();
  const auto pos = text.find("3350000000000.0");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 15, "1e999");
  EXPECT_THROW((void)parse_device(text, "test.json"), ParseError);
}

TEST(DeviceFile, NullOnlyWithUnknownConfidence) {
  auto doc = base_device();
  doc["compute"]["l2_bytes"]["value"] = nullptr;
  expect_parse_error(doc, {"compute.l2_bytes.value", "unknown"});
  doc["compute"]["l2_bytes"]["confidence"] = "unknown";
  EXPECT_FALSE(parse_device(doc.dump(), "test.json").l2_bytes.known());
  doc = base_device();
  doc["peaks"]["fp16"]["confidence"] = "guess";
  expect_parse_error(doc, {"peaks.fp16.confidence", "vendor, derived, measured, unknown"});
}

TEST(DeviceFile, SourcesMustBeDeclared) {
  auto doc = base_device();
  doc["peaks"]["fp16"]["source"] = "a-blog";
  expect_parse_error(doc, {"peaks.fp16.source", "a-blog", "not a key"});
}

TEST(DeviceFile, PeakFormatsMustBeComputeFormats) {
  auto doc = base_device();
  doc["peaks"]["fp7"] = doc["peaks"]["fp16"];
  expect_parse_error(doc, {"peaks.fp7", "not a format id"});
  doc = base_device();
  doc["peaks"]["q4_0"] = doc["peaks"]["fp16"];
  expect_parse_error(doc, {"peaks.q4_0", "storage-only"});
  doc = base_device();
  doc["peaks"]["fp16"]["unit"] = "magic";
  expect_parse_error(doc, {"peaks.fp16.unit"});
  doc = base_device();
  doc["efficiency"]["matmul_fraction"]["nvfp4"] = doc["efficiency"]["matmul_fraction"]["fp8"];
  expect_parse_error(doc, {"matmul_fraction.nvfp4", "no peak"});
}

TEST(DeviceFile, MalformedDocumentsAreOneLineErrors) {
  EXPECT_THROW((void)parse_device("", "x.json"), ParseError);
  EXPECT_THROW((void)parse_device("{", "x.json"), ParseError);
  EXPECT_THROW((void)parse_device("[1, 2]", "x.json"), ParseError);
  EXPECT_THROW((void)parse_device(std::string(200'000, '['), "x.json"), ParseError);
  EXPECT_THROW((void)parse_device(std::string(2 << 20, ' '), "x.json"), ParseError);
  auto doc = base_device();
  doc["id"] = "H100 SXM";
  expect_parse_error(doc, {"id", "a-z"});
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("roofline-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  static inline int counter_ = 0;
};

TEST(RegistryFiles, UserFileOverridesById) {
  TempDir dir;
  auto doc = base_device();
  doc["memory"]["bandwidth_Bps"]["value"] = 3.0e12;
  doc["aliases"] = {"my-h100"};
  const std::string path = dir.write("h100.json", doc.dump());
  const Registry r = Registry::load({path});
  EXPECT_EQ(r.devices().size(), registry().devices().size());
  EXPECT_DOUBLE_EQ(r.get("h100-sxm").memory_bandwidth_Bps.value, 3.0e12);
  EXPECT_EQ(r.get("my-h100").id, "h100-sxm");
  EXPECT_EQ(r.find("h100-sxm5"), nullptr);  // the replaced device's aliases are gone
  EXPECT_EQ(r.get("h100-sxm").origin, path);
  EXPECT_NE(r.data_hash(), registry().data_hash());
}

TEST(RegistryFiles, UserFileAddsADevice) {
  TempDir dir;
  auto doc = base_device();
  doc["id"] = "my-gpu";
  doc["aliases"] = nlohmann::json::array();
  const Registry r = Registry::load({dir.write("mine.json", doc.dump())});
  EXPECT_EQ(r.devices().size(), registry().devices().size() + 1);
  EXPECT_EQ(r.get("my-gpu").name, "NVIDIA H100 SXM5 80GB");
}

TEST(RegistryFiles, AliasClashIsAnError) {
  TempDir dir;
  auto doc = base_device();
  doc["id"] = "my-gpu";
  doc["aliases"] = {"spark"};
  EXPECT_THROW((void)Registry::load({dir.write("mine.json", doc.dump())}), InvalidArgument);
}

TEST(RegistryFiles, UnreadableFilesAreParseErrors) {
  TempDir dir;
  EXPECT_THROW((void)Registry::load({(dir.path() / "missing.json").string()}), ParseError);
  EXPECT_THROW((void)Registry::load({dir.path().string()}), ParseError);  // a directory
  EXPECT_THROW((void)Registry::load({dir.write("bad.json", "{\"id\": ")}), ParseError);
}

TEST(RegistryFiles, DataDirEnvironmentVariableAddsDevices) {
  TempDir dir;
  auto doc = base_device();
  doc["id"] = "env-gpu";
  doc["aliases"] = nlohmann::json::array();
  dir.write("hardware/env-gpu.json", doc.dump());
  ::setenv(kDataDirEnv, dir.path().c_str(), 1);
  const Registry r = Registry::load({});
  ::unsetenv(kDataDirEnv);
  EXPECT_EQ(r.get("env-gpu").id, "env-gpu");
}

// Issue #10, item 10: figures outside a plausible range name the file, the key
// and the range (5e-324 B/s made every time infinite, 1e308 SMs every time 0).
TEST(DeviceFile, FiguresOutsidePlausibleRangesAreErrors) {
  auto doc = base_device();
  doc["memory"]["bandwidth_Bps"]["value"] = 5e-324;
  expect_parse_error(doc, {"test.json", "memory.bandwidth_Bps", "1 GB/s to 100 TB/s"});
  doc = base_device();
  doc["memory"]["bandwidth_Bps"]["value"] = 1e15;
  expect_parse_error(doc, {"memory.bandwidth_Bps", "1 GB/s to 100 TB/s"});
  doc = base_device();
  doc["compute"]["sm_count"]["value"] = 1e308;
  expect_parse_error(doc, {"compute.sm_count", "1 to 100,000"});
  doc = base_device();
  doc["efficiency"]["launch_overhead_s"]["value"] = 1e308;
  expect_parse_error(doc, {"efficiency.launch_overhead_s", "0 to 0.1 s"});
  doc = base_device();
  doc["peaks"]["fp32"]["value"] = 5e-324;
  expect_parse_error(doc, {"peaks.fp32.value", "GFLOP/s"});
  doc = base_device();
  doc["memory"]["capacity_bytes"]["value"] = 1e30;
  expect_parse_error(doc, {"memory.capacity_bytes"});
}

}  // namespace
}  // namespace roofline
