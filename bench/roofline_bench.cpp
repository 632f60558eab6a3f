// Speed of the roofline core. Target (issue 2): one GEMM prediction < 50 ns.
#include <benchmark/benchmark.h>

#include "roofline/hardware.h"
#include "roofline/roofline.h"

namespace {

const roofline::Registry& registry() {
  static const roofline::Registry r = roofline::Registry::built_in();
  return r;
}

void BM_PredictGemvRealistic(benchmark::State& state) {
  const auto& device = registry().get("gb10");
  roofline::GemmProblem p{1, 4096, 4096, roofline::Format::kFp16, roofline::Format::kFp16};
  for (auto _ : state) {
    benchmark::DoNotOptimize(p);
    auto r = roofline::predict_gemm(device, p);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PredictGemvRealistic);

void BM_PredictGemmIdeal(benchmark::State& state) {
  const auto& device = registry().get("h100");
  roofline::GemmProblem p{4096, 4096, 4096, roofline::Format::kBf16, roofline::Format::kBf16};
  roofline::ModelOptions opt;
  opt.mode = roofline::Mode::kIdeal;
  for (auto _ : state) {
    benchmark::DoNotOptimize(p);
    auto r = roofline::predict_gemm(device, p, opt);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PredictGemmIdeal);

void BM_PredictGemmWeightOnly(benchmark::State& state) {
  const auto& device = registry().get("h100");
  roofline::GemmProblem p{16, 4096, 4096, roofline::Format::kInt4, roofline::Format::kFp16};
  for (auto _ : state) {
    benchmark::DoNotOptimize(p);
    auto r = roofline::predict_gemm(device, p);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PredictGemmWeightOnly);

void BM_LoadBuiltInRegistry(benchmark::State& state) {
  for (auto _ : state) {
    auto r = roofline::Registry::built_in();
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_LoadBuiltInRegistry)->Unit(benchmark::kMicrosecond);

}  // namespace
