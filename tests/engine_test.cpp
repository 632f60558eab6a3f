// Engine profiles and the measured GEMM efficiency tables: loading, lookup,
// interpolation, and what they change in a prediction.
#include "roofline/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "roofline/error.h"
#include "roofline/gpu_run.h"
#include "roofline/model.h"
#include "roofline/predict.h"
#include "roofline/validate.h"

namespace roofline {
namespace {

const Registry& devices() {
  static const Registry r = Registry::built_in();
  return r;
}

TEST(Engines, BuiltInProfilesLoad) {
  const EngineRegistry& e = EngineRegistry::built_in();
  ASSERT_FALSE(e.engines().empty());
  EXPECT_EQ(e.engines().front().id, "roofline");  // the reference first
  EXPECT_EQ(e.get("roofline").kind, "reference");
  EXPECT_EQ(e.get("VLLM").id, "vllm");  // ids are case-insensitive
  try {
    (void)e.get("nope");
    FAIL();
  } catch (const NotFound& x) {
    EXPECT_NE(std::string(x.what()).find("known: roofline"), std::string::npos) << x.what();
  }
  // A name cut for the message is cut on a character boundary.
  try {
    (void)e.get(std::string(39, 'x') + "\xe2\x82\xac");
    FAIL();
  } catch (const NotFound& x) {
    EXPECT_EQ(std::string(x.what()).find("\xe2\x82'"), std::string::npos) << x.what();
  }
  std::set<std::string> ids;
  for (const auto& p : e.engines()) {
    EXPECT_TRUE(ids.insert(p.id).second) << p.id;
    // Every figure cites a source of its own file.
    for (const EngineFigure* f :
         {&p.launch_decode_s, &p.launch_prefill_s, &p.step_overhead_s, &p.gemm_table_scale}) {
      if (f->known()) {
        EXPECT_FALSE(p.citation(f->source).empty()) << p.id;
      }
    }
  }
}

TEST(GemmTables, EveryMeasuredDeviceEngineLoads) {
  const EngineRegistry& e = EngineRegistry::built_in();
  // 8 registry devices x 3 engines of ../shared/reference/measured-kernels.
  EXPECT_EQ(e.gemm_tables().size(), 24u);
  for (const auto& t : e.gemm_tables()) {
    EXPECT_NE(devices().find(t.device), nullptr) << t.id;
    ASSERT_NE(t.find("bf16"), nullptr) << t.id;
    EXPECT_NE(t.citation.find("Apache-2.0"), std::string::npos);
  }
}

TEST(GemmTables, InterpolatesInLogSpaceAndHoldsTheEdges) {
  // A 3 x 3 grid over log2 m = 0..2 and log2 nk = 20..22.
  const char* doc = R"({"schema":"roofline-gemm-efficiency-1","device":"h200","engine":"vllm",
    "engine_version":"t","sources":{"s":"test"},"confidence":"measured","source":"s","method":"m",
    "log2_m":[0,1,2],"log2_nk":[20,21,22],
    "formats":{"bf16":{"kernel":"k","rows":9,"capped_rows":0,"floor_s":1e-6,
      "efficiency":[[0.1,0.2,0.4],[0.2,0.4,0.8],[0.3,0.6,1.0]]}}})";
  const GemmTable t = parse_gemm_table(doc, "t");
  const GemmTable::Entry& e = *t.find("bf16");
  constexpr double kFloat = 1e-7;  // the grid is stored as floats
  EXPECT_NEAR(t.efficiency(e, 1, 1 << 20), 0.1, kFloat);
  EXPECT_NEAR(t.efficiency(e, 4, 1 << 22), 1.0, kFloat);
  // Halfway in log2 m (m = sqrt 2) at the middle column: (0.2 + 0.4) / 2.
  EXPECT_NEAR(t.efficiency(e, std::sqrt(2.0), 1 << 21), 0.3, 1e-6);
  // Both halfway: the mean of the four corners (0.1 + 0.2 + 0.2 + 0.4) / 4.
  EXPECT_NEAR(t.efficiency(e, std::sqrt(2.0), std::pow(2.0, 20.5)), 0.225, 1e-6);
  // Held outside the grid, never extrapolated.
  EXPECT_NEAR(t.efficiency(e, 1e6, 1e12), 1.0, kFloat);
  EXPECT_NEAR(t.efficiency(e, 0.5, 10), 0.1, kFloat);

  // Strict.
  std::string bad = doc;
  bad.replace(bad.find("0.4],[0.2"), 3, "1.4");
  EXPECT_THROW((void)parse_gemm_table(bad, "t"), ParseError);
  bad = doc;
  bad.replace(bad.find("[0.3,0.6,1.0]"), 13, "[0.3,0.6]");
  EXPECT_THROW((void)parse_gemm_table(bad, "t"), ParseError);
  bad = doc;
  bad.insert(1, R"("extra":1,)");
  EXPECT_THROW((void)parse_gemm_table(bad, "t"), ParseError);
}

TEST(GemmTables, DevicesWithoutTablesBorrowTheirArchitecturesNearest) {
  const EngineRegistry& e = EngineRegistry::built_in();
  const EngineProfile& vllm = e.get("vllm");
  EfficiencySource source{};
  const GemmTable* own = e.gemm_table(devices().get("h200"), vllm, &source);
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->id, "h200-vllm");
  EXPECT_EQ(source, EfficiencySource::kMeasuredTable);
  // H100 PCIe (Hopper, 2.0 TB/s): the Hopper table closest in bandwidth is H100 SXM's (3.35).
  const GemmTable* pcie = e.gemm_table(devices().get("h100-pcie"), vllm, &source);
  ASSERT_NE(pcie, nullptr);
  EXPECT_EQ(pcie->device, "h100-sxm");
  EXPECT_EQ(source, EfficiencySource::kDerivedTable);
  // RTX 4090 (Ada) -> L40S; no AMD table.
  EXPECT_EQ(e.gemm_table(devices().get("rtx-4090"), vllm, &source)->device, "l40s");
  EXPECT_EQ(e.gemm_table(devices().get("mi300x"), vllm, &source), nullptr);
  // The reference engine has no tables.
  EXPECT_EQ(e.gemm_table(devices().get("h200"), e.get("roofline"), &source), nullptr);
}

TEST(GemmTables, TableKeysFollowTheKernelsFormats) {
  EXPECT_EQ(gemm_table_key(Format::kBf16, Format::kBf16, false), "bf16");
  EXPECT_EQ(gemm_table_key(Format::kFp16, Format::kFp16, false), "bf16");
  EXPECT_EQ(gemm_table_key(Format::kFp8, Format::kFp8, false), "fp8");
  EXPECT_EQ(gemm_table_key(Format::kInt4, Format::kBf16, true), "int4");
  EXPECT_EQ(gemm_table_key(Format::kInt8, Format::kBf16, true), "int8_wo");
  EXPECT_EQ(gemm_table_key(Format::kMxfp4, Format::kBf16, true), "");
  EXPECT_EQ(gemm_table_key(Format::kQ4_K_M, Format::kBf16, true), "");
}

// A decode step of Llama-3.1-8B on H200 in bf16 with vLLM: every projection
// takes the table's efficiency, the matmuls of one fused kernel (QKV, gate+up)
// one efficiency for the whole kernel, and every launch vLLM's 2 µs.
TEST(EnginePrediction, TablesSetEachMatmulsTimeAndSayWhere) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("h200");
  Scenario s;
  s.phase = Phase::kDecode;
  s.batch = 1;
  s.seq_len = 1024;
  const Prediction reference = predict(m, d, s);
  const ModelOptions o = with_engine({}, d, &EngineRegistry::built_in().get("vllm"));
  ASSERT_NE(o.gemm_table, nullptr);
  const Prediction engine = predict(m, d, s, o);
  EXPECT_NE(engine.time_s, reference.time_s);
  EXPECT_EQ(engine.engine->id, "vllm");
  double launches = 0;
  double efficiency[kOpKindCount] = {};
  for (int i = 0; i < engine.graph.size; ++i) {
    const Op& op = engine.graph.ops[static_cast<std::size_t>(i)];
    launches += op.count * op.launches;
    efficiency[static_cast<int>(op.kind)] = engine.timings[static_cast<std::size_t>(i)].efficiency;
  }
  EXPECT_NEAR(engine.overhead_s, launches * 2e-6, 1e-12);
  auto eff = [&](OpKind k) { return efficiency[static_cast<int>(k)]; };
  EXPECT_EQ(eff(OpKind::kQProj), eff(OpKind::kKProj));
  EXPECT_EQ(eff(OpKind::kQProj), eff(OpKind::kVProj));
  EXPECT_EQ(eff(OpKind::kGateProj), eff(OpKind::kUpProj));
  // The fused QKV (6144 x 4096) reads closer to the bandwidth than the o
  // projection alone (4096 x 4096) in vLLM's H200 table at one token.
  EXPECT_GT(eff(OpKind::kQProj), eff(OpKind::kOProj));
  int from_table = 0;
  for (int i = 0; i < engine.graph.size; ++i) {
    const Op& op = engine.graph.ops[static_cast<std::size_t>(i)];
    const OpTiming& t = engine.timings[static_cast<std::size_t>(i)];
    if (op.cls != OpClass::kMatmul) continue;
    EXPECT_EQ(t.source, EfficiencySource::kMeasuredTable) << op_name(op.kind);
    EXPECT_GT(t.efficiency, 0);
    EXPECT_LE(t.efficiency, 1);
    // time = ideal / efficiency: memory-bound at one token.
    EXPECT_NEAR(t.memory_time_s * t.efficiency * d.memory_bandwidth_Bps.value,
                op.count * op.bytes(), 1e-6 * op.count * op.bytes());
    ++from_table;
  }
  EXPECT_GE(from_table, 5);  // q, k, v (or fused qkv), o, gate, up, down, lm_head
  for (int i = 0; i < reference.graph.size; ++i) {
    if (reference.graph.ops[static_cast<std::size_t>(i)].cls == OpClass::kMatmul) {
      EXPECT_EQ(reference.timings[static_cast<std::size_t>(i)].source, EfficiencySource::kDevice);
    }
  }
  // Ideal mode ignores the engine.
  ModelOptions ideal = o;
  ideal.mode = Mode::kIdeal;
  ModelOptions plain;
  plain.mode = Mode::kIdeal;
  EXPECT_DOUBLE_EQ(predict(m, d, s, ideal).time_s, predict(m, d, s, plain).time_s);
}

// llama.cpp runs Q, K, V and gate, up as separate GEMMs (its profile lists no
// qkv or gate_up fusion): each is launched, on top of the reference's kernels.
TEST(EnginePrediction, EnginesThatDoNotFuseLaunchEachGemm) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("rtx-4090");
  Scenario s;
  s.seq_len = 512;
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("llama.cpp");
  const Prediction p = predict(m, d, s, o);
  const Prediction reference = predict(m, d, s);
  double launches = 0, reference_launches = 0;
  for (int i = 0; i < p.graph.size; ++i) {
    launches += p.graph.ops[static_cast<std::size_t>(i)].count *
                p.graph.ops[static_cast<std::size_t>(i)].launches;
  }
  for (int i = 0; i < reference.graph.size; ++i) {
    const Op& op = reference.graph.ops[static_cast<std::size_t>(i)];
    reference_launches += op.count * op.launches;
  }
  // K, V and up become kernels of their own: 3 more per layer, 32 layers.
  EXPECT_DOUBLE_EQ(launches, reference_launches + 3 * 32);
  // And the fixed host cost per step is in the time.
  EXPECT_DOUBLE_EQ(p.engine_step_s, 3.5e-4);
}

// MLA decode absorbs W_UK and W_UV per head: one batched GEMM of the step's
// tokens per head, each with its own weights. Its measured efficiency is looked
// up at that shape (m = tokens, n k over all heads), not at m = tokens x heads
// with one head's weights, which priced 1 MB of weights as a tiny GEMM.
TEST(EnginePrediction, MlaAbsorptionIsABatchedGemmPerHead) {
  const ModelSpec m = load_model("deepseek-v3");
  Scenario s;
  s.batch = 4;
  s.seq_len = 1024;
  s.tp = 8;
  s.precision.weights = Format::kFp8;
  s.precision.act = Format::kFp8;
  const Prediction p = predict(m, devices().get("b200"), s);
  int seen = 0;
  for (int i = 0; i < p.graph.size; ++i) {
    const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
    if (op.kind != OpKind::kKAbsorb && op.kind != OpKind::kVAbsorb) continue;
    ++seen;
    // 128 heads / TP 8 = 16 per rank; kv_lora_rank 512 x 128 (qk_nope = v_head = 128).
    EXPECT_EQ(op.gemm_m, 4);
    EXPECT_EQ(op.gemm_groups, 16);
    // fp8: 1 byte a weight and one fp32 per-tensor scale.
    EXPECT_DOUBLE_EQ(op.weight_bytes, 16.0 * 512 * 128 + 4);
    EXPECT_DOUBLE_EQ(op.flops, 2.0 * 4 * 16 * 512 * 128);
  }
  EXPECT_EQ(seen, 4);  // both absorptions, dense and MoE layer groups
}

// llama.cpp's matrix-vector kernels stream at most 7.27 GB/s per SM (derived
// from one H100 PCIe measurement): below the device's fraction on HBM parts,
// above it on GDDR ones, and not at all for GEMMs of more than 8 rows.
TEST(EnginePrediction, EngineMatrixVectorKernelsAreBoundPerSm) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const EngineProfile& llama = EngineRegistry::built_in().get("llama.cpp");
  ASSERT_TRUE(llama.gemv_bandwidth_per_sm_Bps.known());
  const double per_sm = llama.gemv_bandwidth_per_sm_Bps.value;
  ModelOptions o;
  o.engine = &llama;
  auto down_proj_seconds_per_byte = [&](const Device& d, std::int64_t batch) {
    Scenario s;
    s.batch = batch;
    s.seq_len = 512;
    s.precision.weights = Format::kQ8_0;
    s.precision.act = Format::kFp16;
    s.precision.kv = Format::kFp16;
    const Prediction p = predict(m, d, s, o);
    for (int i = 0; i < p.graph.size; ++i) {
      const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
      if (op.kind == OpKind::kDownProj)
        return p.timings[static_cast<std::size_t>(i)].memory_time_s / (op.count * op.bytes());
    }
    return 0.0;
  };
  constexpr double kRelative = 1e-9;
  // A100 80GB: 108 SMs x 7.27 GB/s = 785 GB/s, below 2,039 GB/s x 0.834 = 1,700.
  const Device& a100 = devices().get("a100-80gb");
  EXPECT_NEAR(down_proj_seconds_per_byte(a100, 1), 1 / (108 * per_sm), kRelative / (108 * per_sm));
  // At 16 rows MMQ or cuBLAS runs: the device's fraction again.
  const double a100_bw = a100.memory_bandwidth_Bps.value * a100.bandwidth_fraction.value;
  EXPECT_NEAR(down_proj_seconds_per_byte(a100, 16), 1 / a100_bw, kRelative / a100_bw);
  // RTX 4090: 128 SMs x 7.27 = 931 GB/s, above its own 1,008 GB/s x fraction.
  const Device& rtx = devices().get("rtx-4090");
  const double rtx_bw = rtx.memory_bandwidth_Bps.value * rtx.bandwidth_fraction.value;
  ASSERT_LT(rtx_bw, 128 * per_sm);
  EXPECT_NEAR(down_proj_seconds_per_byte(rtx, 1), 1 / rtx_bw, kRelative / rtx_bw);
}

// llama.cpp's files keep parts of a Q4_K_M model in Q6_K, so a prediction
// streams the file's bytes, and the memory estimate holds the same weights.
TEST(EnginePrediction, FileMixesStreamTheEnginesFileBytes) {
  // use_more_bits(i, 32): layers 0-3, 28-31 and 6, 9, ..., 27 (8): 16 of 32.
  EXPECT_DOUBLE_EQ(FileMix::layer_share(FileMix::Layers::kUseMoreBits, 32), 0.5);
  // n = 80: 10 + 10 + every third of the 60 between (20): 40 of 80.
  EXPECT_DOUBLE_EQ(FileMix::layer_share(FileMix::Layers::kUseMoreBits, 80), 0.5);
  EXPECT_DOUBLE_EQ(FileMix::layer_share(FileMix::Layers::kAll, 32), 1.0);

  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = devices().get("rtx-4090");
  Scenario s;
  s.seq_len = 512;
  s.precision.weights = Format::kQ4_K_M;
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("llama.cpp");
  const Prediction file = predict(m, d, s, o);
  const Prediction plain = predict(m, d, s);
  // Q6_K is 210 B / 256 (6.5625 bits), Q4_K 144 B / 256 (4.5): 2.0625 bits more for
  //   lm_head   128256 x 4096               = 525.3 M  x 1   -> 135.4 MB
  //   down_proj 32 x 14336 x 4096           = 1879.0 M x 1/2 -> 242.2 MB
  //   v_proj    32 x 1024 x 4096            = 134.2 M  x 1/2 ->  17.3 MB
  constexpr double kExpectedExtraBytes =
      (525.336576e6 + 0.5 * 1879.048192e6 + 0.5 * 134.217728e6) * 2.0625 / 8;  // 394.9 MB
  constexpr double kByteTolerance = 1e-9;  // relative: exact arithmetic
  EXPECT_NEAR(file.weight_bytes - plain.weight_bytes, kExpectedExtraBytes,
              kByteTolerance * kExpectedExtraBytes);
  EXPECT_NEAR(file.memory.weights_bytes - plain.memory.weights_bytes, kExpectedExtraBytes,
              kByteTolerance * kExpectedExtraBytes);
  // The real file: Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf is 4.92 GB (4.58 GiB,
  // bartowski/Meta-Llama-3.1-8B-Instruct-GGUF); its token embeddings (Q4_K,
  // 296 MB) are not streamed, the rest is: 4.62 GB. Within 2%.
  constexpr double kFileStreamedBytes = 4.92e9 - 128256.0 * 4096 * 4.5 / 8;
  constexpr double kFileTolerance = 0.02;
  EXPECT_NEAR(file.weight_bytes, kFileStreamedBytes, kFileTolerance * kFileStreamedBytes);

  // gpt-oss in llama.cpp: the non-expert weights are Q8_0 (MXFP4_MOE files).
  const ModelSpec oss = load_model("gpt-oss-20b");
  Scenario so;
  const Prediction oss_file = predict(oss, devices().get("gb10"), so, o);
  for (int i = 0; i < oss_file.graph.size; ++i) {
    const Op& op = oss_file.graph.ops[static_cast<std::size_t>(i)];
    if (op.cls != OpClass::kMatmul || op.kind == OpKind::kRouter) continue;
    const bool expert =
        op.moe_layer && (op.kind == OpKind::kGateProj || op.kind == OpKind::kUpProj ||
                         op.kind == OpKind::kDownProj);
    EXPECT_EQ(op.weights, expert ? Format::kMxfp4 : Format::kQ8_0) << op_name(op.kind);
  }
  // Engines without mixes (vLLM keeps gpt-oss's non-expert weights in BF16) change nothing.
  ModelOptions v;
  v.engine = &EngineRegistry::built_in().get("vllm");
  EXPECT_DOUBLE_EQ(predict(oss, devices().get("gb10"), so, v).weight_bytes,
                   predict(oss, devices().get("gb10"), so).weight_bytes);
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// The document a validation source cites: its text up to the first '@'
// (commit), ',' or " (": "pytorch-labs/gpt-fast README.md", ...
std::string cited_document(const std::string& citation) {
  std::size_t end = citation.size();
  for (const char* stop : {"@", ",", " ("}) end = std::min(end, citation.find(stop));
  return citation.substr(0, end);
}

// Calibration and validation stay apart: no figure a prediction uses (an
// engine's costs and table factors, a GEMM table, a device's achievable
// fractions) cites a document that a validation case's measurement comes from.
TEST(CalibrationIsNotValidation, NoFigureCitesAValidationSource) {
  std::set<std::string> documents;
  for (const ValidationCase& c : built_in_validation()) documents.insert(cited_document(c.source));
  ASSERT_GE(documents.size(), 5u);
  std::vector<std::pair<std::string, std::string>> used;  // (what, citation)
  const EngineRegistry& e = EngineRegistry::built_in();
  for (const auto& p : e.engines()) {
    for (const EngineFigure* f :
         {&p.launch_decode_s, &p.launch_prefill_s, &p.step_overhead_s, &p.gemm_table_scale}) {
      if (f->known()) used.emplace_back(p.id, p.citation(f->source));
    }
  }
  for (const auto& t : e.gemm_tables()) used.emplace_back(t.id, t.citation);
  for (const Device& d : devices().devices()) {
    for (const Figure* f :
         {&d.bandwidth_fraction, &d.matmul_fraction_default, &d.launch_overhead_s}) {
      if (f->known()) used.emplace_back(d.id, d.citation(*f));
    }
    for (const auto& m : d.matmul_fraction) {
      if (m) used.emplace_back(d.id, d.citation(*m));
    }
  }
  ASSERT_GT(used.size(), 50u);
  for (const auto& [what, citation] : used) {
    for (const std::string& doc : documents) {
      EXPECT_EQ(citation.find(doc), std::string::npos)
          << what << " cites validation source '" << doc << "'";
    }
  }
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// Your own measurements become a table like the engines' (issue #11 item 4).
TEST(KernelFile, MeasurementsMakeAGridOfCellMedians) {
  // Cell (log2 m = 0, log2 nk = 20): 0.2, 0.4, 0.9 -> median 0.4; cell (2, 22): 0.6.
  const std::vector<GemmMeasurement> rows = {
      {"bf16", "k", 1, 1 << 20, 3e-6, 0.2}, {"bf16", "k", 1, 1 << 20, 2e-6, 0.4},
      {"bf16", "k", 1, 1 << 20, 4e-6, 0.9}, {"bf16", "k", 4, 1 << 22, 5e-6, 0.6},
      {"bf16", "k", 4, 1 << 22, 5e-6, 1.3},  // above the roofline: capped at 1
      {"", "k", 1, 1, 1e-6, 0.5},            // no format: skipped
  };
  const GemmTable t = gemm_table_from_measurements(rows, "h200", "measured", "test");
  EXPECT_EQ(t.log2_m0, 0);
  EXPECT_EQ(t.m_points, 3);  // log2 m 0..2
  EXPECT_EQ(t.log2_nk0, 20);
  EXPECT_EQ(t.nk_points, 3);  // log2 nk 20..22
  const GemmTable::Entry* e = t.find("bf16");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->rows, 5);
  EXPECT_EQ(e->capped_rows, 1);
  EXPECT_DOUBLE_EQ(e->floor_s, 2e-6);
  constexpr double kFloat = 1e-6;  // cells are stored as float
  EXPECT_NEAR(t.efficiency(*e, 1, 1 << 20), 0.4, kFloat);
  EXPECT_NEAR(t.efficiency(*e, 4, 1 << 22), (0.6 + 1.0) / 2, kFloat);  // median of 0.6 and 1
  // (0, 22) is empty: the nearest cell of its row, (0, 20).
  EXPECT_NEAR(t.efficiency(*e, 1, 1 << 22), 0.4, kFloat);
  // Round trip through the file format.
  const GemmTable back = parse_gemm_table(to_json(t).dump(), "round trip");
  EXPECT_EQ(back.m_points, t.m_points);
  EXPECT_NEAR(back.efficiency(*back.find("bf16"), 4, 1 << 22), 0.8, kFloat);
  EXPECT_THROW((void)gemm_table_from_measurements({}, "h200", "measured", "t"), Unsupported);
}

TEST(KernelFile, TheH200RunDrivesPredictions) {
  const GemmTable t = measure::load_kernel_file(std::string(ROOFLINE_SOURCE_DATA_DIR) +
                                                "/kernels/h200-cublaslt.json");
  EXPECT_EQ(t.device, "h200");
  ASSERT_NE(t.find("bf16"), nullptr);
  ASSERT_NE(t.find("fp8"), nullptr);
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario s;
  s.batch = 16;
  s.seq_len = 1024;
  ModelOptions o;
  o.gemm_table = &t;
  o.gemm_table_source = EfficiencySource::kMeasuredTable;
  o.engine = &EngineRegistry::built_in().get("vllm");
  const Prediction p = predict(m, devices().get("h200"), s, o);
  for (int i = 0; i < p.graph.size; ++i) {
    const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
    if (op.kind != OpKind::kOProj) continue;
    const OpTiming& timing = p.timings[static_cast<std::size_t>(i)];
    EXPECT_EQ(timing.source, EfficiencySource::kMeasuredTable);
    EXPECT_DOUBLE_EQ(timing.efficiency, t.efficiency(*t.find("bf16"), 16, 4096.0 * 4096));
  }
  // Neither format: an error naming the file.
  EXPECT_THROW((void)measure::kernel_file_table("{\"schema\": 1}", "x"), ParseError);
  EXPECT_THROW((void)measure::kernel_file_table("[]", "x"), ParseError);
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// Leave-one-out validation predicts a device without its own tables.
TEST(GemmTables, HoldingOutADeviceBorrowsItsArchitecturesNearest) {
  const EngineRegistry& all = EngineRegistry::built_in();
  const EngineProfile& vllm = all.get("vllm");
  const Device& h200 = devices().get("h200");
  const ModelOptions own = with_engine({}, h200, &vllm, all);
  ASSERT_NE(own.gemm_table, nullptr);
  EXPECT_EQ(own.gemm_table->device, "h200");
  EXPECT_EQ(own.gemm_table_source, EfficiencySource::kMeasuredTable);
  const EngineRegistry held_out = all.without_tables_of("h200");
  const ModelOptions borrowed = with_engine({}, h200, &vllm, held_out);
  ASSERT_NE(borrowed.gemm_table, nullptr);
  EXPECT_EQ(borrowed.gemm_table->device, "h100-sxm");  // Hopper, nearest in bandwidth
  EXPECT_EQ(borrowed.gemm_table_source, EfficiencySource::kDerivedTable);
  // No related table left: an empty one, so predict() falls back to the
  // device's fractions instead of resolving the built-in table again.
  EngineRegistry none = held_out.without_tables_of("h100-sxm");
  const ModelOptions bare = with_engine({}, h200, &vllm, none);
  ASSERT_NE(bare.gemm_table, nullptr);
  EXPECT_TRUE(bare.gemm_table->formats.empty());
  Scenario s;
  const Prediction p = predict(load_model("llama-3.1-8b"), h200, s, bare);
  for (int i = 0; i < p.graph.size; ++i) {
    if (p.graph.ops[static_cast<std::size_t>(i)].cls == OpClass::kMatmul)
      EXPECT_EQ(p.timings[static_cast<std::size_t>(i)].source, EfficiencySource::kDevice);
  }
  // The decode-step rows of a held-out device are all predicted again.
  const auto groups = leave_one_device_out(built_in_serving_runs(), devices());
  ASSERT_FALSE(groups.empty());
  for (std::size_t i = 0; i + 1 < groups.size(); i += 2) {
    EXPECT_EQ(groups[i].group.substr(0, 9), "with-own=");
    EXPECT_EQ(groups[i + 1].group.substr(0, 9), "held-out=");
    EXPECT_EQ(groups[i].rows, groups[i + 1].rows);
  }
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// A measured table's fastest call is a floor on every call it prices.
TEST(GemmTables, NoCallIsFasterThanTheMeasuredFloor) {
  constexpr double kFloor = 1e-3;  // far above any decode GEMM of this model
  const GemmTable t = gemm_table_from_measurements(
      {{"bf16", "k", 1, 1 << 20, kFloor, 0.5}, {"bf16", "k", 4096, 1 << 26, 2e-3, 0.8}}, "h200",
      "measured", "test");
  ModelOptions o;
  o.gemm_table = &t;
  o.gemm_table_source = EfficiencySource::kMeasuredTable;
  o.engine = &EngineRegistry::built_in().get("vllm");
  Scenario s;
  const Prediction p = predict(load_model("llama-3.1-8b"), devices().get("h200"), s, o);
  int priced = 0;
  for (int i = 0; i < p.graph.size; ++i) {
    const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
    const OpTiming& timing = p.timings[static_cast<std::size_t>(i)];
    if (timing.source != EfficiencySource::kMeasuredTable) continue;
    ++priced;
    EXPECT_DOUBLE_EQ(std::max(timing.memory_time_s, timing.compute_time_s), op.count * kFloor)
        << op_name(op.kind);
  }
  EXPECT_GT(priced, 0);
}

}  // namespace
}  // namespace roofline
