// Speed of whole-model prediction (issue 3 targets): predict totals for
// llama-3.1-8b decode < 1 us; with the per-operator breakdown < 5 us;
// generate P=512 G=128 < 20 us.
#include <benchmark/benchmark.h>

#include "roofline/engine.h"
#include "roofline/predict.h"
#include "roofline/report.h"
#include "roofline/search.h"
#include "roofline/serving.h"
#include "roofline/workload.h"

namespace {

const roofline::Registry& registry() {
  static const roofline::Registry r = roofline::Registry::built_in();
  return r;
}

const roofline::ModelSpec& llama() {
  static const roofline::ModelSpec m = roofline::load_model("llama-3.1-8b");
  return m;
}

roofline::Scenario decode_4k() {
  roofline::Scenario s;
  s.phase = roofline::Phase::kDecode;
  s.batch = 1;
  s.seq_len = 4096;
  return s;
}

void BM_PredictDecodeTotals(benchmark::State& state) {
  const auto& d = registry().get("gb10");
  const auto s = decode_4k();
  for (auto _ : state) {
    const auto p = roofline::predict(llama(), d, s);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PredictDecodeTotals);

// With an engine (issue 11 target: at most 2 us): vLLM's measured GEMM table
// for the H200 sets every matmul, plus its launch costs. The table is
// resolved once, as front ends do, and the prediction is timed.
void BM_PredictDecodeWithEngine(benchmark::State& state) {
  const auto& d = registry().get("h200");
  const auto s = decode_4k();
  const roofline::ModelOptions o =
      roofline::with_engine({}, d, &roofline::EngineRegistry::built_in().get("vllm"));
  for (auto _ : state) {
    const auto p = roofline::predict(llama(), d, s, o);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PredictDecodeWithEngine);

// llama.cpp's prompt (the same 2 us target): Llama 3 8B Q4_K_M, 512 tokens on
// an RTX 4090, its GEMMs priced by the MMQ figures and ggml's q8_1 copies of
// their inputs added to the graph (EngineProfile::gemm_copies).
void BM_PredictPrefillLlamaCpp(benchmark::State& state) {
  const auto& d = registry().get("rtx-4090");
  roofline::Scenario s;
  s.phase = roofline::Phase::kPrefill;
  s.seq_len = 512;
  s.precision.weights = roofline::Format::kQ4_K_M;
  s.precision.act = roofline::Format::kFp16;
  s.precision.kv = roofline::Format::kFp16;
  const roofline::ModelOptions o =
      roofline::with_engine({}, d, &roofline::EngineRegistry::built_in().get("llama.cpp"));
  for (auto _ : state) {
    const auto p = roofline::predict(llama(), d, s, o);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PredictPrefillLlamaCpp);

// A MoE model with an engine (the same 2 us target): gpt-oss-120b decode at
// batch 64 on the H200 with vLLM, whose MoE table prices the MoE layers.
void BM_PredictMoeDecodeWithEngine(benchmark::State& state) {
  static const auto m = roofline::load_model("gpt-oss-120b");
  const auto& d = registry().get("h200");
  auto s = decode_4k();
  s.batch = 64;
  const roofline::ModelOptions o =
      roofline::with_engine({}, d, &roofline::EngineRegistry::built_in().get("vllm"));
  for (auto _ : state) {
    const auto p = roofline::predict(m, d, s, o);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PredictMoeDecodeWithEngine);

// Expert parallelism (the same target): Qwen3-235B fp8 at TP 4 / EP 4 on H100
// with TensorRT-LLM, whose MoE table measured that layout's busiest rank.
void BM_PredictMoeDecodeExpertParallel(benchmark::State& state) {
  static const auto m = roofline::load_model("qwen3-235b-a22b");
  const auto& d = registry().get("h100-sxm");
  auto s = decode_4k();
  s.batch = 4;
  s.tp = 4;
  s.ep = 4;
  s.precision.weights = roofline::Format::kFp8;
  s.precision.act = roofline::Format::kFp8;
  const roofline::ModelOptions o =
      roofline::with_engine({}, d, &roofline::EngineRegistry::built_in().get("trtllm"));
  for (auto _ : state) {
    const auto p = roofline::predict(m, d, s, o);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PredictMoeDecodeExpertParallel);

// A release's layout and a padded MoE workspace (the same target): DeepSeek-R1
// as NVIDIA's NVFP4 release ships it (bf16 attention) at TP 8 on B200 with
// TensorRT-LLM, and Qwen3-235B fp8 at TP 2 on H200 with vLLM 0.12.0, whose
// DeepGEMM MoE computes a padded workspace.
void BM_PredictMoeDecodeNvfp4Release(benchmark::State& state) {
  static const auto m = roofline::load_model("deepseek-r1");
  const auto& d = registry().get("b200");
  auto s = decode_4k();
  s.batch = 16;
  s.tp = 8;
  s.precision.weights = roofline::Format::kNvfp4;
  s.precision.act = roofline::Format::kNvfp4;
  const roofline::ModelOptions o =
      roofline::with_engine({}, d, &roofline::EngineRegistry::built_in().get("trtllm"));
  for (auto _ : state) {
    const auto p = roofline::predict(m, d, s, o);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PredictMoeDecodeNvfp4Release);

void BM_PredictMoeDecodePaddedWorkspace(benchmark::State& state) {
  static const auto m = roofline::load_model("qwen3-235b-a22b");
  const auto& d = registry().get("h200");
  const auto& reg = roofline::EngineRegistry::built_in();
  auto s = decode_4k();
  s.batch = 16;
  s.tp = 2;
  s.precision.weights = roofline::Format::kFp8;
  s.precision.act = roofline::Format::kFp8;
  const roofline::ModelOptions o = roofline::with_engine_release(
      roofline::with_engine({}, d, &reg.get("vllm"), reg), d, "0.12.0", s.tp, reg);
  for (auto _ : state) {
    const auto p = roofline::predict(m, d, s, o);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PredictMoeDecodePaddedWorkspace);

// A release's MoE kernel family read at another checkpoint's measured curve:
// gpt-oss-120b decoding 16 sequences on H100 with vLLM 0.11.0 (Marlin MXFP4).
void BM_PredictMoeDecodeReleaseFamily(benchmark::State& state) {
  static const auto m = roofline::load_model("gpt-oss-120b");
  const auto& d = registry().get("h100-sxm");
  const auto& reg = roofline::EngineRegistry::built_in();
  auto s = decode_4k();
  s.batch = 16;
  const roofline::ModelOptions o = roofline::with_engine_release(
      roofline::with_engine({}, d, &reg.get("vllm"), reg), d, "0.11.0", s.tp, reg);
  for (auto _ : state) {
    const auto p = roofline::predict(m, d, s, o);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PredictMoeDecodeReleaseFamily);

// The newer attention kinds with an engine: Qwen3.5-397B-A17B (Gated DeltaNet
// in 45 of 60 layers) and DeepSeek-V3.2 (the sparse-attention indexer), decode
// at batch 64 over 4K tokens at TP 8 on the B200 with SGLang, fp8 W8A8.
void attention_kind_bench(benchmark::State& state, const char* model) {
  const auto m = roofline::load_model(model);
  const auto& d = registry().get("b200");
  auto s = decode_4k();
  s.batch = 64;
  s.tp = 8;
  s.precision.weights = roofline::Format::kFp8;
  s.precision.act = roofline::Format::kFp8;  // W8A8, as SGLang serves fp8 checkpoints
  const roofline::ModelOptions o =
      roofline::with_engine({}, d, &roofline::EngineRegistry::built_in().get("sglang"));
  for (auto _ : state) {
    const auto p = roofline::predict(m, d, s, o);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK_CAPTURE(attention_kind_bench, linear_qwen35, "qwen3.5-397b-a17b");
BENCHMARK_CAPTURE(attention_kind_bench, sparse_deepseek_v32, "deepseek-v3.2");
BENCHMARK_CAPTURE(attention_kind_bench, dense_deepseek_v3, "deepseek-v3");

// DeepSeek-V3.2 on the engine's FlashMLA sparse kernels (vLLM at TP 8 on the
// H200, fp8 cache: 16 heads a rank padded to 64), the same decode step.
void BM_PredictSparseMlaDecodeVllm(benchmark::State& state) {
  static const auto m = roofline::load_model("deepseek-v3.2");
  const auto& d = registry().get("h200");
  auto s = decode_4k();
  s.batch = 64;
  s.tp = 8;
  s.precision.weights = roofline::Format::kFp8;
  s.precision.act = roofline::Format::kFp8;
  s.precision.kv = roofline::Format::kFp8;
  const roofline::ModelOptions o =
      roofline::with_engine({}, d, &roofline::EngineRegistry::built_in().get("vllm"));
  for (auto _ : state) {
    const auto p = roofline::predict(m, d, s, o);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PredictSparseMlaDecodeVllm);

// The graph alone for the same DeepSeek-V3.2 step: what predict() spends
// before it prices an op (the rest of the attention_kind_bench time).
void BM_BuildOpsDeepSeekV32(benchmark::State& state) {
  static const auto m = roofline::load_model("deepseek-v3.2");
  const auto& d = registry().get("b200");
  auto s = decode_4k();
  s.batch = 64;
  s.tp = 8;
  s.precision.weights = roofline::Format::kFp8;
  s.precision.act = roofline::Format::kFp8;
  const roofline::ModelOptions o =
      roofline::with_engine({}, d, &roofline::EngineRegistry::built_in().get("sglang"));
  static roofline::OpGraph g;  // static: the graph's fixed array stays off the stack
  for (auto _ : state) {
    roofline::build_ops(m, d, s, o, &g);
    benchmark::DoNotOptimize(g.size);
  }
}
BENCHMARK(BM_BuildOpsDeepSeekV32);

// The serving simulation (docs/SERVING.md): 640 requests (64 clients x 10
// rounds) through vLLM's scheduler, its steps priced by predict() on a grid;
// the budget is 50 ms. Llama 3.1 70B fp8 on H200s: one instance of TP
// 2, or (disaggregated) one prefill and one decode worker of TP 2.
void serving_bench(benchmark::State& state, roofline::ServingMode mode) {
  static const auto m = roofline::load_model("llama-3.1-70b");
  const auto& d = registry().get("h200");
  roofline::ServingScenario s;
  s.isl = 1024;
  s.osl = 256;
  s.concurrency = 64;
  s.mode = mode;
  s.prefill_tp = s.decode_tp = s.step.tp = 2;
  s.step.precision.weights = roofline::Format::kFp8;
  s.step.precision.act = roofline::Format::kFp8;
  const roofline::ModelOptions o =
      roofline::with_engine({}, d, &roofline::EngineRegistry::built_in().get("vllm"));
  for (auto _ : state) {
    const auto r = roofline::predict_serving(m, d, s, o);
    benchmark::DoNotOptimize(r.tpot_s);
  }
}
void BM_PredictServing(benchmark::State& state) {
  serving_bench(state, roofline::ServingMode::kAggregated);
}
BENCHMARK(BM_PredictServing)->Unit(benchmark::kMillisecond);
void BM_PredictServingDisaggregated(benchmark::State& state) {
  serving_bench(state, roofline::ServingMode::kDisaggregated);
}
BENCHMARK(BM_PredictServingDisaggregated)->Unit(benchmark::kMillisecond);

// The deployment search's default space for that model on 8 H200s: 3 engines
// x 2 formats x (4 aggregated TP sizes and the disaggregated layouts of 8
// GPUs) x 13 concurrencies, less those that do not fit or only queue.
void BM_SearchDeployments(benchmark::State& state) {
  static const auto m = roofline::load_model("llama-3.1-70b");
  const auto& d = registry().get("h200");
  roofline::SearchSpec spec;
  spec.gpus = 8;
  spec.tpot_max_s = 0.03;
  for (auto _ : state) {
    const auto r = roofline::search_deployments(m, d, spec);
    benchmark::DoNotOptimize(r.evaluated);
  }
}
BENCHMARK(BM_SearchDeployments)->Unit(benchmark::kMillisecond);

// Resolving the engine and its table for a device (once per request).
void BM_ResolveEngine(benchmark::State& state) {
  const auto& d = registry().get("h100-pcie");  // a derived table: the longest search
  const auto& vllm = roofline::EngineRegistry::built_in().get("vllm");
  for (auto _ : state) {
    const auto o = roofline::with_engine({}, d, &vllm);
    benchmark::DoNotOptimize(o.gemm_table);
  }
}
BENCHMARK(BM_ResolveEngine);

// The breakdown as rows a front end prints: name, kind, bound, time per op.
void BM_PredictDecodePerOp(benchmark::State& state) {
  const auto& d = registry().get("gb10");
  const auto s = decode_4k();
  struct Row {
    std::string_view name, kind, bound;
    double flops, bytes, time_s, share;
  };
  std::vector<Row> rows;
  rows.reserve(roofline::kMaxOps);
  for (auto _ : state) {
    const auto p = roofline::predict(llama(), d, s);
    rows.clear();
    for (int i = 0; i < p.graph.size; ++i) {
      const auto& op = p.graph.ops[static_cast<std::size_t>(i)];
      const auto& t = p.timings[static_cast<std::size_t>(i)];
      rows.push_back({roofline::op_name(op.kind), roofline::op_class_name(op.cls),
                      roofline::bound_name(t.bound), op.count * op.flops, op.count * op.bytes(),
                      t.time_s, t.time_s / p.time_s});
    }
    benchmark::DoNotOptimize(rows.data());
  }
}
BENCHMARK(BM_PredictDecodePerOp);

void BM_PredictPrefillMoe(benchmark::State& state) {
  static const auto m = roofline::load_model("deepseek-v3");
  const auto& d = registry().get("b200");
  roofline::Scenario s;
  s.phase = roofline::Phase::kPrefill;
  s.seq_len = 4096;
  s.tp = 8;
  for (auto _ : state) {
    const auto p = roofline::predict(m, d, s);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PredictPrefillMoe);

void BM_Generate512x128(benchmark::State& state) {
  const auto& d = registry().get("gb10");
  const auto s = decode_4k();
  for (auto _ : state) {
    const auto g = roofline::generate(llama(), d, s, 512, 128);
    benchmark::DoNotOptimize(g.e2e_s);
  }
}
BENCHMARK(BM_Generate512x128)->Unit(benchmark::kMicrosecond);

void BM_PredictJsonPerOp(benchmark::State& state) {
  const auto& d = registry().get("gb10");
  const auto s = decode_4k();
  for (auto _ : state) {
    const auto p = roofline::predict(llama(), d, s);
    auto j = roofline::to_json(llama(), d, s, p, true);
    benchmark::DoNotOptimize(j);
  }
}
BENCHMARK(BM_PredictJsonPerOp)->Unit(benchmark::kMicrosecond);

}  // namespace
