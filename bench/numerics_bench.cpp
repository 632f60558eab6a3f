// Throughput of the number-format codecs, in elements per second
// (items_per_second), on 1<<20 N(0,1) floats. Target (numerics brief): fp8
// e4m3 encode and nvfp4 quantize >= 500 M elements/s on one core.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "roofline/numerics.h"

namespace {

namespace num = roofline::numerics;

constexpr std::size_t kElements = std::size_t{1} << 20;
constexpr std::size_t kCols = 1024;  // matrices are [kElements / kCols x kCols]

// Deterministic N(0, 1) data: 64-bit LCG + Box-Muller, as in numerics_test.
const std::vector<float>& input() {
  static const std::vector<float> data = [] {
    std::vector<float> out(kElements);
    std::uint64_t s = 12345;
    auto uniform = [&s] {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      return (static_cast<double>(s >> 11) + 1.0) * 0x1p-53;
    };
    for (std::size_t i = 0; i < kElements; i += 2) {
      const double r = std::sqrt(-2.0 * std::log(uniform()));
      const double t = 6.283185307179586 * uniform();
      out[i] = static_cast<float>(r * std::cos(t));
      out[i + 1] = static_cast<float>(r * std::sin(t));
    }
    return out;
  }();
  return data;
}

void set_items(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kElements));
}

void BM_EncodeE4M3(benchmark::State& state) {
  const std::vector<float>& x = input();
  std::vector<std::uint8_t> codes(x.size());
  for (auto _ : state) {
    num::encode_e4m3(x, codes);
    benchmark::DoNotOptimize(codes.data());
    benchmark::ClobberMemory();
  }
  set_items(state);
}
BENCHMARK(BM_EncodeE4M3);

// The scalar entry point, one out-of-line call per element, for comparison.
void BM_EncodeE4M3Scalar(benchmark::State& state) {
  const std::vector<float>& x = input();
  std::vector<std::uint8_t> codes(x.size());
  for (auto _ : state) {
    for (std::size_t i = 0; i < x.size(); ++i) codes[i] = num::encode_e4m3(x[i]);
    benchmark::DoNotOptimize(codes.data());
    benchmark::ClobberMemory();
  }
  set_items(state);
}
BENCHMARK(BM_EncodeE4M3Scalar);

void BM_QuantizeNvfp4(benchmark::State& state) {
  const std::vector<float>& x = input();
  for (auto _ : state) {
    num::Nvfp4Tensor t = num::quantize_nvfp4(x);
    benchmark::DoNotOptimize(t.codes.data());
  }
  set_items(state);
}
BENCHMARK(BM_QuantizeNvfp4);

void BM_QuantizeMxfp4(benchmark::State& state) {
  const std::vector<float>& x = input();
  for (auto _ : state) {
    num::MxTensor t = num::quantize_mx(x, num::MxElement::kE2M1);
    benchmark::DoNotOptimize(t.codes.data());
  }
  set_items(state);
}
BENCHMARK(BM_QuantizeMxfp4);

void BM_QuantizeInt8PerChannel(benchmark::State& state) {
  const std::vector<float>& x = input();
  for (auto _ : state) {
    num::Int8Tensor t =
        num::quantize_int8(x, kElements / kCols, kCols, num::Int8Granularity::kPerChannel);
    benchmark::DoNotOptimize(t.q.data());
  }
  set_items(state);
}
BENCHMARK(BM_QuantizeInt8PerChannel);

void BM_QuantizeQ4_0(benchmark::State& state) {
  const std::vector<float>& x = input();
  for (auto _ : state) {
    std::vector<std::uint8_t> blocks = num::quantize_q4_0(x);
    benchmark::DoNotOptimize(blocks.data());
  }
  set_items(state);
}
BENCHMARK(BM_QuantizeQ4_0);

}  // namespace
