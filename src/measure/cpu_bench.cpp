// Host CPU measurements: STREAM, FMA peak, OpenBLAS sgemm/sgemv.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "blas.h"
#include "roofline/error.h"
#include "roofline/measure.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ROOFLINE_MEASURE_X86 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define ROOFLINE_MEASURE_NEON 1
#endif

namespace roofline::measure {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Seconds one call of f takes.
template <class F>
double time_call(F&& f) {
  const auto start = Clock::now();
  f();
  return seconds_between(start, Clock::now());
}

double median(std::vector<double> v) {
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lower + upper);
}

int resolve_threads(int requested, const char* what) {
  if (requested < 0 || requested > kMaxThreads) {
    throw InvalidArgument(std::string(what) + ": threads must be in [0, " +
                          std::to_string(kMaxThreads) + "], got " + std::to_string(requested));
  }
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min<unsigned>(hw, kMaxThreads));
}

// A reusable barrier for a team of `count` threads: the last to arrive runs
// on_phase() (which timestamps the phase) and then releases the others.
// A mutex and condition variable rather than std::barrier and std::latch: in
// libstdc++ 12 those sit on its header-only atomic-wait implementation, whose
// waiters can miss a notification (races fixed when later GCC releases moved it
// into the library), and a CI run hung in this suite with them. A phase is timed from the
// last arrival, so the waiters' wake-up (tens of microseconds) counts in it; the timed
// phases here last milliseconds, so that costs at most a few percent.
template <class OnPhase>
class PhaseBarrier {
 public:
  PhaseBarrier(int count, OnPhase on_phase) : count_(count), on_phase_(std::move(on_phase)) {}

  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t phase = phase_;
    if (++arrived_ == count_) {
      on_phase_();
      arrived_ = 0;
      ++phase_;
      lock.unlock();
      released_.notify_all();
      return;
    }
    released_.wait(lock, [&] { return phase_ != phase; });
  }

 private:
  const int count_;
  OnPhase on_phase_;
  std::mutex mutex_;
  std::condition_variable released_;
  int arrived_ = 0;
  std::uint64_t phase_ = 0;
};

// Runs body(t) for t in [0, threads): t = 0 on the calling thread, the others on
// new threads. body must not throw (the teams synchronize on barriers, and a
// missing participant would hang the rest). If a thread cannot be started, the
// ones already started are released without running body.
template <class Body>
void run_team(int threads, Body&& body) {
  std::mutex mutex;
  std::condition_variable opened;
  enum class Gate { kClosed, kGo, kCancelled } gate = Gate::kClosed;
  auto open = [&](Gate to) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      gate = to;
    }
    opened.notify_all();
  };
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads - 1));
  try {
    for (int t = 1; t < threads; ++t) {
      workers.emplace_back([&, t] {
        {
          std::unique_lock<std::mutex> lock(mutex);
          opened.wait(lock, [&] { return gate != Gate::kClosed; });
          if (gate == Gate::kCancelled) return;
        }
        body(t);
      });
    }
  } catch (const std::exception& e) {  // system_error, or bad_alloc for a thread's state
    open(Gate::kCancelled);
    for (auto& w : workers) w.join();
    throw Unsupported("cannot start " + std::to_string(threads) + " threads: " + e.what());
  }
  open(Gate::kGo);
  body(0);
  for (auto& w : workers) w.join();
}

std::size_t physical_memory_bytes() noexcept {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
}

// "32768K", "1M", "1024" -> bytes; 0 when malformed.
std::size_t parse_cache_size(std::string s) noexcept {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  std::size_t value = 0;
  std::size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    value = value * 10 + static_cast<std::size_t>(s[i] - '0');
    if (value > (std::size_t{1} << 40)) return 0;
  }
  if (i == 0) return 0;
  const std::string_view suffix = std::string_view(s).substr(i);
  if (suffix.empty()) return value;
  if (suffix == "K") return value << 10;
  if (suffix == "M") return value << 20;
  if (suffix == "G") return value << 30;
  return 0;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

// ---------------------------------------------------------------------------
// STREAM

constexpr double kStreamScalar = 3.0;  // STREAM's scalar
constexpr int kStreamKernelCount = 4;
constexpr const char* kStreamKernelNames[kStreamKernelCount] = {"copy", "scale", "add", "triad"};
// STREAM's byte counting: arrays touched per element, 8 B each.
constexpr double kStreamBytesPerIteration[kStreamKernelCount] = {16, 16, 24, 24};
// Slices start on 64-byte boundaries so that no cache line is shared by threads.
constexpr std::size_t kStreamSliceAlignElements = 8;
constexpr std::size_t kStreamMinElementsPerThread = 8 * kStreamSliceAlignElements;
// Progress fractions: measuring spans [start, verify].
constexpr double kStreamProgressMeasureStart = 0.05;
constexpr double kStreamProgressVerify = 0.95;

void stream_copy(double* __restrict c, const double* __restrict a, std::size_t lo, std::size_t hi) {
  for (std::size_t j = lo; j < hi; ++j) c[j] = a[j];
}
void stream_scale(double* __restrict b, const double* __restrict c, std::size_t lo,
                  std::size_t hi) {
  for (std::size_t j = lo; j < hi; ++j) b[j] = kStreamScalar * c[j];
}
void stream_add(double* __restrict c, const double* __restrict a, const double* __restrict b,
                std::size_t lo, std::size_t hi) {
  for (std::size_t j = lo; j < hi; ++j) c[j] = a[j] + b[j];
}
void stream_triad(double* __restrict a, const double* __restrict b, const double* __restrict c,
                  std::size_t lo, std::size_t hi) {
  for (std::size_t j = lo; j < hi; ++j) a[j] = b[j] + kStreamScalar * c[j];
}

std::size_t resolve_stream_array_bytes(std::size_t requested) {
  const std::size_t phys = physical_memory_bytes();
  if (requested == 0) {
    std::size_t llc = last_level_cache_bytes();
    if (llc == 0) llc = kStreamFallbackCacheBytes;
    std::size_t bytes = std::max(4 * llc, kStreamMinDefaultArrayBytes);
    bytes = std::min(bytes, kStreamMaxArrayBytes);
    if (phys > 0) bytes = std::min(bytes, phys / 8);
    return std::max(bytes, kStreamMinArrayBytes);
  }
  if (requested < kStreamMinArrayBytes || requested > kStreamMaxArrayBytes) {
    throw InvalidArgument(
        "stream: array_bytes must be 0 or in [" + std::to_string(kStreamMinArrayBytes) + ", " +
        std::to_string(kStreamMaxArrayBytes) + "], got " + std::to_string(requested));
  }
  if (phys > 0 && 3 * requested > phys / 2) {
    throw InvalidArgument("stream: 3 arrays of " + std::to_string(requested) +
                          " bytes exceed half of physical memory (" + std::to_string(phys) +
                          " bytes)");
  }
  return requested;
}

// Average absolute error of x against `expected`, relative to it (checkSTREAMresults).
double average_relative_error(const double* x, std::size_t n, double expected) {
  double sum = 0.0;
  for (std::size_t j = 0; j < n; ++j) sum += std::fabs(x[j] - expected);
  return std::fabs(sum / static_cast<double>(n) / expected);
}

// ---------------------------------------------------------------------------
// FMA peak kernels. Each runs `iters` rounds of one FMA on every accumulator
// (acc = acc * kMul + kAdd, which converges to 1 and never goes denormal) and
// returns the sum of the accumulators so the work cannot be removed.

using PeakKernel = double (*)(std::int64_t iters);

constexpr float kMul32 = 0.999999f;
constexpr float kAdd32 = 1e-6f;
constexpr double kMul64 = 0.999999;
constexpr double kAdd64 = 1e-6;

struct PeakIsa {
  const char* name;
  int vector_bits;
  int accumulators;  // independent vector chains per kernel
  PeakKernel f32;
  PeakKernel f64;
};

#if defined(ROOFLINE_MEASURE_X86)
// 32 zmm registers: 16 chains cover 2 FMA ports x 4-cycle latency twice over.
constexpr int kAccAvx512 = 16;
// 16 ymm registers, 2 hold the constants: 12 chains cover 2 ports x 5 cycles.
constexpr int kAccAvx2 = 12;

__attribute__((target("avx512f"))) double peak_f32_avx512(std::int64_t iters) {
  __m512 acc[kAccAvx512];
  for (int j = 0; j < kAccAvx512; ++j) acc[j] = _mm512_set1_ps(0.01f * static_cast<float>(j));
  const __m512 x = _mm512_set1_ps(kMul32);
  const __m512 y = _mm512_set1_ps(kAdd32);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAccAvx512; ++j) acc[j] = _mm512_fmadd_ps(acc[j], x, y);
  }
  __m512 s = acc[0];
  for (int j = 1; j < kAccAvx512; ++j) s = _mm512_add_ps(s, acc[j]);
  alignas(64) float lanes[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside it
  _mm512_store_ps(lanes, s);
  double total = 0.0;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx512f"))) double peak_f64_avx512(std::int64_t iters) {
  __m512d acc[kAccAvx512];
  for (int j = 0; j < kAccAvx512; ++j) acc[j] = _mm512_set1_pd(0.01 * j);
  const __m512d x = _mm512_set1_pd(kMul64);
  const __m512d y = _mm512_set1_pd(kAdd64);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAccAvx512; ++j) acc[j] = _mm512_fmadd_pd(acc[j], x, y);
  }
  __m512d s = acc[0];
  for (int j = 1; j < kAccAvx512; ++j) s = _mm512_add_pd(s, acc[j]);
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, s);
  double total = 0.0;
  for (double v : lanes) total += v;
  return total;
}

__attribute__((target("avx2,fma"))) double peak_f32_avx2(std::int64_t iters) {
  __m256 acc[kAccAvx2];
  for (int j = 0; j < kAccAvx2; ++j) acc[j] = _mm256_set1_ps(0.01f * static_cast<float>(j));
  const __m256 x = _mm256_set1_ps(kMul32);
  const __m256 y = _mm256_set1_ps(kAdd32);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAccAvx2; ++j) acc[j] = _mm256_fmadd_ps(acc[j], x, y);
  }
  __m256 s = acc[0];
  for (int j = 1; j < kAccAvx2; ++j) s = _mm256_add_ps(s, acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  double total = 0.0;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx2,fma"))) double peak_f64_avx2(std::int64_t iters) {
  __m256d acc[kAccAvx2];
  for (int j = 0; j < kAccAvx2; ++j) acc[j] = _mm256_set1_pd(0.01 * j);
  const __m256d x = _mm256_set1_pd(kMul64);
  const __m256d y = _mm256_set1_pd(kAdd64);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAccAvx2; ++j) acc[j] = _mm256_fmadd_pd(acc[j], x, y);
  }
  __m256d s = acc[0];
  for (int j = 1; j < kAccAvx2; ++j) s = _mm256_add_pd(s, acc[j]);
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif  // ROOFLINE_MEASURE_X86

#if defined(ROOFLINE_MEASURE_NEON)
// 32 registers; 16 chains cover 4 FMA pipes x 4-cycle latency.
constexpr int kAccNeon = 16;

double peak_f32_neon(std::int64_t iters) {
  float32x4_t acc[kAccNeon];
  for (int j = 0; j < kAccNeon; ++j) acc[j] = vdupq_n_f32(0.01f * static_cast<float>(j));
  const float32x4_t x = vdupq_n_f32(kMul32);
  const float32x4_t y = vdupq_n_f32(kAdd32);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAccNeon; ++j) acc[j] = vfmaq_f32(y, acc[j], x);  // y + acc * x
  }
  float32x4_t s = acc[0];
  for (int j = 1; j < kAccNeon; ++j) s = vaddq_f32(s, acc[j]);
  return static_cast<double>(vaddvq_f32(s));
}

double peak_f64_neon(std::int64_t iters) {
  float64x2_t acc[kAccNeon];
  for (int j = 0; j < kAccNeon; ++j) acc[j] = vdupq_n_f64(0.01 * j);
  const float64x2_t x = vdupq_n_f64(kMul64);
  const float64x2_t y = vdupq_n_f64(kAdd64);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAccNeon; ++j) acc[j] = vfmaq_f64(y, acc[j], x);
  }
  float64x2_t s = acc[0];
  for (int j = 1; j < kAccNeon; ++j) s = vaddq_f64(s, acc[j]);
  return vaddvq_f64(s);
}
#endif  // ROOFLINE_MEASURE_NEON

#if !defined(ROOFLINE_MEASURE_NEON)
// Portable fallback: 128-bit GCC vector extensions with a multiply and an add
// (SSE2 on x86-64; whatever the compiler makes of it elsewhere).
constexpr int kAccGeneric = 12;
using V4f = float __attribute__((vector_size(16)));
using V2d = double __attribute__((vector_size(16)));

double peak_f32_generic(std::int64_t iters) {
  V4f acc[kAccGeneric];
  for (int j = 0; j < kAccGeneric; ++j) acc[j] = V4f{} + 0.01f * static_cast<float>(j);
  const V4f x = V4f{} + kMul32;
  const V4f y = V4f{} + kAdd32;
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAccGeneric; ++j) acc[j] = acc[j] * x + y;
  }
  double total = 0.0;
  for (int j = 0; j < kAccGeneric; ++j) {
    for (int l = 0; l < 4; ++l) total += acc[j][l];
  }
  return total;
}

double peak_f64_generic(std::int64_t iters) {
  V2d acc[kAccGeneric];
  for (int j = 0; j < kAccGeneric; ++j) acc[j] = V2d{} + 0.01 * j;
  const V2d x = V2d{} + kMul64;
  const V2d y = V2d{} + kAdd64;
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAccGeneric; ++j) acc[j] = acc[j] * x + y;
  }
  double total = 0.0;
  for (int j = 0; j < kAccGeneric; ++j) total += acc[j][0] + acc[j][1];
  return total;
}
#endif  // !ROOFLINE_MEASURE_NEON

PeakIsa select_peak_isa() {
#if defined(ROOFLINE_MEASURE_X86)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    return {"avx512f", 512, kAccAvx512, peak_f32_avx512, peak_f64_avx512};
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {"avx2+fma", 256, kAccAvx2, peak_f32_avx2, peak_f64_avx2};
  }
  return {"sse2", 128, kAccGeneric, peak_f32_generic, peak_f64_generic};
#elif defined(ROOFLINE_MEASURE_NEON)
  return {"neon", 128, kAccNeon, peak_f32_neon, peak_f64_neon};
#else
  return {"generic", 128, kAccGeneric, peak_f32_generic, peak_f64_generic};
#endif
}

// Keeps the kernels' results observable.
std::atomic<double> g_peak_sink{0.0};

// Single-thread calibration: a kernel is run on growing counts until one run
// takes at least this long, which also warms the core up.
constexpr double kPeakCalibrationSeconds = 0.01;
// Timed passes per precision after one warm-up pass of each; the median is
// reported. fp32 and fp64 passes alternate so that load from other processes
// falls on both alike.
constexpr int kPeakTimedPasses = 5;

// Iterations of `kernel` per second on one thread.
double calibrate_peak(PeakKernel kernel, double& sink) {
  std::int64_t iters = 256;
  double t = 0.0;
  for (;;) {
    t = time_call([&] { sink += kernel(iters); });
    if (t >= kPeakCalibrationSeconds || iters >= (std::int64_t{1} << 40)) break;
    iters *= 4;
  }
  return static_cast<double>(iters) / std::max(t, 1e-9);
}

struct PeakRates {
  double fp32_flops_per_s;
  double fp64_flops_per_s;
};

// FLOP/s of the two kernels on `threads` threads, about `seconds` each.
PeakRates measure_peak(const PeakIsa& isa, int threads, double seconds) {
  // 2 FLOP per FMA (or multiply-add pair) per lane, one per accumulator per iteration.
  const double flops_per_iter[2] = {2.0 * isa.accumulators * (isa.vector_bits / 32),
                                    2.0 * isa.accumulators * (isa.vector_bits / 64)};
  const PeakKernel kernels[2] = {isa.f32, isa.f64};
  double sink = 0.0;
  std::int64_t pass_iters[2];
  for (int prec = 0; prec < 2; ++prec) {
    const double iters_per_s = calibrate_peak(kernels[prec], sink);
    pass_iters[prec] = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(iters_per_s * seconds / (kPeakTimedPasses + 1)));
  }

  constexpr int kPasses = 2 * (kPeakTimedPasses + 1);  // pass p runs precision p % 2
  std::vector<Clock::time_point> stamps(2 * kPasses);
  std::size_t stamp_count = 0;
  auto on_phase = [&]() noexcept { stamps[stamp_count++] = Clock::now(); };
  PhaseBarrier sync(threads, on_phase);
  std::vector<double> sinks(static_cast<std::size_t>(threads), 0.0);
  run_team(threads, [&](int tid) noexcept {
    double local = 0.0;
    for (int p = 0; p < kPasses; ++p) {
      sync.arrive_and_wait();
      local += kernels[p % 2](pass_iters[p % 2]);
      sync.arrive_and_wait();
    }
    sinks[static_cast<std::size_t>(tid)] = local;
  });
  for (double v : sinks) sink += v;
  g_peak_sink.store(sink, std::memory_order_relaxed);

  double rates[2];
  for (int prec = 0; prec < 2; ++prec) {
    std::vector<double> times;
    for (int p = 2 + prec; p < kPasses; p += 2) {  // passes 0 and 1 are the warm-ups
      const auto i = 2 * static_cast<std::size_t>(p);
      times.push_back(seconds_between(stamps[i], stamps[i + 1]));
    }
    const double flops = flops_per_iter[prec] * static_cast<double>(pass_iters[prec]) * threads;
    rates[prec] = flops / std::max(median(times), 1e-12);
  }
  return {rates[0], rates[1]};
}

// ---------------------------------------------------------------------------
// GEMM

void validate_gemm_shape(const GemmShape& s) {
  auto in_range = [](std::int64_t d) { return d >= 1 && d <= kMaxMeasuredGemmDimension; };
  if (!in_range(s.m) || !in_range(s.n) || !in_range(s.k)) {
    throw InvalidArgument("sgemm: m, n, k must be in [1, " +
                          std::to_string(kMaxMeasuredGemmDimension) +
                          "], got m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                          " k=" + std::to_string(s.k));
  }
  const double bytes = 4.0 * (static_cast<double>(s.m) * static_cast<double>(s.k) +
                              static_cast<double>(s.k) * static_cast<double>(s.n) +
                              static_cast<double>(s.m) * static_cast<double>(s.n));
  if (bytes > kMaxMeasuredGemmBytes) {
    throw InvalidArgument("sgemm: A, B and C take " + std::to_string(bytes) +
                          " bytes, more than the limit of " +
                          std::to_string(kMaxMeasuredGemmBytes));
  }
}

// Sets OpenBLAS's thread count for a scope and restores it.
class OpenblasThreadsScope {
 public:
  explicit OpenblasThreadsScope(int threads) : previous_(blas::api().get_num_threads()) {
    if (threads > 0) {
      blas::api().set_num_threads(threads);
      active_ = true;
    }
  }
  ~OpenblasThreadsScope() {
    if (active_) blas::api().set_num_threads(previous_);
  }
  OpenblasThreadsScope(const OpenblasThreadsScope&) = delete;
  OpenblasThreadsScope& operator=(const OpenblasThreadsScope&) = delete;

 private:
  int previous_;
  bool active_ = false;
};

// splitmix64: deterministic inputs, cheap enough for hundreds of MB.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float next_signed_unit() {
    return static_cast<float>(next() >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }

 private:
  std::uint64_t state_;
};

void fill_uniform(float* v, std::size_t count, std::uint64_t seed) {
  SplitMix64 rng(seed);
  for (std::size_t i = 0; i < count; ++i) v[i] = rng.next_signed_unit();
}

// Sampled rows x sampled columns = kGemmVerifySamples entries; the first and
// last row and column are always among them.
constexpr int kGemmVerifyRows = 8;
constexpr int kGemmVerifyCols = kGemmVerifySamples / kGemmVerifyRows;
static_assert(kGemmVerifyRows * kGemmVerifyCols == kGemmVerifySamples);

std::vector<std::int64_t> sample_indices(std::int64_t extent, int count, SplitMix64& rng) {
  std::vector<std::int64_t> idx;
  idx.push_back(0);
  idx.push_back(extent - 1);
  while (static_cast<int>(idx.size()) < count) {
    idx.push_back(static_cast<std::int64_t>(rng.next() % static_cast<std::uint64_t>(extent)));
  }
  return idx;
}

double max_sampled_error(const GemmShape& s, const float* a, const float* b, const float* c) {
  SplitMix64 rng(0x5EED'CAFEULL);
  const auto rows = sample_indices(s.m, kGemmVerifyRows, rng);
  const auto cols = sample_indices(s.n, kGemmVerifyCols, rng);
  const auto n = static_cast<std::size_t>(s.n);
  const auto k = static_cast<std::size_t>(s.k);
  double worst = 0.0;
  std::vector<double> dot(rows.size());
  std::vector<double> magnitude(rows.size());
  for (std::int64_t j64 : cols) {
    const auto j = static_cast<std::size_t>(j64);
    std::fill(dot.begin(), dot.end(), 0.0);
    std::fill(magnitude.begin(), magnitude.end(), 0.0);
    for (std::size_t p = 0; p < k; ++p) {  // one pass down B's column j for all rows
      const double bv = b[p * n + j];
      for (std::size_t r = 0; r < rows.size(); ++r) {
        const double term = static_cast<double>(a[static_cast<std::size_t>(rows[r]) * k + p]) * bv;
        dot[r] += term;
        magnitude[r] += std::fabs(term);
      }
    }
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const double got = c[static_cast<std::size_t>(rows[r]) * n + j];
      const double err = std::fabs(got - dot[r]) / (magnitude[r] > 0.0 ? magnitude[r] : 1.0);
      if (!std::isfinite(err)) return std::numeric_limits<double>::infinity();
      worst = std::max(worst, err);
    }
  }
  return worst;
}

}  // namespace

// ---------------------------------------------------------------------------

std::size_t last_level_cache_bytes() noexcept {
  try {
    std::size_t best_size = 0;
    int best_level = 0;
    const std::string base = "/sys/devices/system/cpu/cpu0/cache/index";
    for (int i = 0; i < 16; ++i) {
      const std::string dir = base + std::to_string(i) + "/";
      const std::string level_text = read_first_line(dir + "level");
      if (level_text.empty()) continue;
      const std::string type = read_first_line(dir + "type");
      if (type == "Instruction") continue;
      const int level = std::atoi(level_text.c_str());
      if (level != 2 && level != 3) continue;
      const std::size_t size = parse_cache_size(read_first_line(dir + "size"));
      if (size == 0) continue;
      if (level > best_level || (level == best_level && size > best_size)) {
        best_level = level;
        best_size = size;
      }
    }
    return best_size;
  } catch (...) {
    return 0;
  }
}

StreamReport run_stream(const StreamOptions& options,
                        const std::function<void(std::string_view, double)>& progress) {
  const int threads_requested = resolve_threads(options.threads, "stream");
  if (options.repetitions < 1 || options.repetitions > kStreamMaxRepetitions) {
    throw InvalidArgument("stream: repetitions must be in [1, " +
                          std::to_string(kStreamMaxRepetitions) + "], got " +
                          std::to_string(options.repetitions));
  }
  const std::size_t n = resolve_stream_array_bytes(options.array_bytes) / sizeof(double);
  // Every thread gets at least kStreamMinElementsPerThread elements.
  const int threads = static_cast<int>(std::min<std::size_t>(
      static_cast<std::size_t>(threads_requested), n / kStreamMinElementsPerThread));
  const int iterations = options.repetitions + 1;  // the first one is the warm-up

  if (progress) progress("allocate", 0.0);
  // Uninitialized: each thread touches its own slice first.
  const auto a_owner = std::make_unique_for_overwrite<double[]>(n);
  const auto b_owner = std::make_unique_for_overwrite<double[]>(n);
  const auto c_owner = std::make_unique_for_overwrite<double[]>(n);
  double* const a = a_owner.get();
  double* const b = b_owner.get();
  double* const c = c_owner.get();

  auto slice_begin = [&](int t) {
    if (t >= threads) return n;
    const std::size_t raw = n / static_cast<std::size_t>(threads) * static_cast<std::size_t>(t);
    return raw / kStreamSliceAlignElements * kStreamSliceAlignElements;
  };

  // Barrier phases: init done, then (start, end) per kernel per iteration.
  std::vector<Clock::time_point> stamps(1 + 2 * kStreamKernelCount *
                                                static_cast<std::size_t>(iterations));
  std::size_t stamp_count = 0;
  auto on_phase = [&]() noexcept { stamps[stamp_count++] = Clock::now(); };
  PhaseBarrier sync(threads, on_phase);
  std::atomic<bool> stop{false};
  std::exception_ptr progress_error;

  run_team(threads, [&](int t) noexcept {
    const std::size_t lo = slice_begin(t);
    const std::size_t hi = slice_begin(t + 1);
    for (std::size_t j = lo; j < hi; ++j) {
      a[j] = 1.0;
      b[j] = 2.0;
      c[j] = 0.0;
    }
    for (std::size_t j = lo; j < hi; ++j) a[j] = 2.0 * a[j];  // as STREAM does
    sync.arrive_and_wait();
    for (int it = 0; it < iterations; ++it) {
      for (int kernel = 0; kernel < kStreamKernelCount; ++kernel) {
        sync.arrive_and_wait();
        if (stop.load(std::memory_order_relaxed)) return;
        switch (kernel) {
          case 0:
            stream_copy(c, a, lo, hi);
            break;
          case 1:
            stream_scale(b, c, lo, hi);
            break;
          case 2:
            stream_add(c, a, b, lo, hi);
            break;
          default:
            stream_triad(a, b, c, lo, hi);
            break;
        }
        sync.arrive_and_wait();
      }
      if (t == 0 && progress) {
        try {
          const double done = static_cast<double>(it + 1) / iterations;
          progress("measure",
                   std::min(kStreamProgressVerify,
                            kStreamProgressMeasureStart +
                                (kStreamProgressVerify - kStreamProgressMeasureStart) * done));
        } catch (...) {
          progress_error = std::current_exception();
          stop.store(true, std::memory_order_relaxed);
        }
      }
    }
  });
  if (progress_error) std::rethrow_exception(progress_error);

  StreamReport report{};
  report.array_bytes = n * sizeof(double);
  report.threads = threads;
  report.bandwidth_Bps = 0.0;
  for (int kernel = 0; kernel < kStreamKernelCount; ++kernel) {
    std::vector<double> times;
    for (int it = 1; it < iterations; ++it) {
      const std::size_t start = 1 + 2 * (static_cast<std::size_t>(it) * kStreamKernelCount +
                                         static_cast<std::size_t>(kernel));
      times.push_back(std::max(seconds_between(stamps[start], stamps[start + 1]), 1e-12));
    }
    StreamKernelResult r;
    r.name = kStreamKernelNames[kernel];
    r.bytes_per_iteration = kStreamBytesPerIteration[kernel];
    const double bytes = r.bytes_per_iteration * static_cast<double>(n);
    r.median_time_s = median(times);
    r.bandwidth_Bps = bytes / r.median_time_s;
    r.best_Bps = bytes / *std::min_element(times.begin(), times.end());
    if (r.bandwidth_Bps > report.bandwidth_Bps) {
      report.bandwidth_Bps = r.bandwidth_Bps;
      report.best_kernel = r.name;
    }
    report.kernels.push_back(std::move(r));
  }

  if (progress) progress("verify", kStreamProgressVerify);
  // checkSTREAMresults: replay the kernels on scalars.
  double aj = 1.0;
  double bj = 2.0;
  double cj = 0.0;
  aj = 2.0 * aj;
  for (int it = 0; it < iterations; ++it) {
    cj = aj;
    bj = kStreamScalar * cj;
    cj = aj + bj;
    aj = bj + kStreamScalar * cj;
  }
  report.verified = average_relative_error(a, n, aj) <= kStreamVerifyTolerance &&
                    average_relative_error(b, n, bj) <= kStreamVerifyTolerance &&
                    average_relative_error(c, n, cj) <= kStreamVerifyTolerance;
  if (progress) progress("done", 1.0);
  return report;
}

PeakReport run_peak(const PeakOptions& options) {
  const int threads = resolve_threads(options.threads, "peak");
  if (!(options.seconds > 0.0 && options.seconds <= 60.0)) {
    throw InvalidArgument("peak: seconds must be in (0, 60], got " +
                          std::to_string(options.seconds));
  }
  const PeakIsa isa = select_peak_isa();
  const PeakRates rates = measure_peak(isa, threads, options.seconds);
  PeakReport report{};
  report.isa = isa.name;
  report.vector_bits = isa.vector_bits;
  report.threads = threads;
  report.fp32_flops_per_s = rates.fp32_flops_per_s;
  report.fp64_flops_per_s = rates.fp64_flops_per_s;
  return report;
}

std::vector<GemmShape> default_gemm_shapes() {
  std::vector<GemmShape> shapes;
  for (std::int64_t m : {16, 128}) {
    shapes.push_back({m, 4096, 4096, "Llama-3-8B q/o proj"});
    shapes.push_back({m, 1024, 4096, "Llama-3-8B k/v proj"});
    shapes.push_back({m, 14336, 4096, "Llama-3-8B gate/up"});
    shapes.push_back({m, 4096, 14336, "Llama-3-8B down"});
    shapes.push_back({m, 3584, 3584, "Qwen2.5-7B q/o proj"});
  }
  // m = 512 only for the smaller layers: gate/up and down would take seconds each.
  shapes.push_back({512, 4096, 4096, "Llama-3-8B q/o proj"});
  shapes.push_back({512, 1024, 4096, "Llama-3-8B k/v proj"});
  return shapes;
}

std::vector<GemmShape> default_gemv_shapes() {
  return {
      {1, 4096, 4096, "Llama-3-8B q/o proj"}, {1, 1024, 4096, "Llama-3-8B k/v proj"},
      {1, 14336, 4096, "Llama-3-8B gate/up"}, {1, 4096, 14336, "Llama-3-8B down"},
      {1, 3584, 3584, "Qwen2.5-7B q/o proj"},
  };
}

WeightPool::WeightPool(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(kMaxMeasuredGemmBytes)) {
    throw InvalidArgument("weight pool: " + std::to_string(bytes) +
                          " bytes is more than the limit of " +
                          std::to_string(kMaxMeasuredGemmBytes));
  }
  if (bytes == 0) {
    std::size_t llc = last_level_cache_bytes();
    if (llc == 0) llc = kStreamFallbackCacheBytes;
    bytes = std::max(2 * llc, kWeightPoolMinBytes);
    bytes = std::min(bytes, static_cast<std::size_t>(kMaxMeasuredGemmBytes));
  }
  const std::size_t phys = physical_memory_bytes();
  if (phys > 0) bytes = std::min(bytes, phys / 4);
  floats_ = std::max<std::size_t>(1, bytes / sizeof(float));
  data_ = std::make_unique_for_overwrite<float[]>(floats_);
  fill_uniform(data_.get(), floats_, 2);
}

float* WeightPool::next(std::size_t count) {
  if (count == 0 || count > floats_) {
    throw InvalidArgument("weight pool: a window of " + std::to_string(count) +
                          " floats does not fit in " + std::to_string(floats_));
  }
  if (cursor_ + count > floats_) cursor_ = 0;
  float* window = data_.get() + cursor_;
  // The next window starts on a cache line of its own.
  cursor_ = (cursor_ + count + kFloatsPerCacheLine - 1) / kFloatsPerCacheLine * kFloatsPerCacheLine;
  return window;
}

namespace {

// One shape under measurement: its buffers and its call.
class SgemmCase {
 public:
  SgemmCase(const GemmShape& shape, const GemmOptions& options, WeightPool* pool)
      : shape_(shape),
        m_(static_cast<std::size_t>(shape.m)),
        n_(static_cast<std::size_t>(shape.n)),
        k_(static_cast<std::size_t>(shape.k)),
        a_(std::make_unique_for_overwrite<float[]>(m_ * k_)),
        // C is zeroed: OpenBLAS need not read it with beta = 0, but garbage
        // there must never pass for a result.
        c_(m_ * n_) {
    fill_uniform(a_.get(), m_ * k_, 1);
    const std::size_t weights = k_ * n_;
    if (options.cold_weights && pool != nullptr && pool->floats() >= weights) {
      pool_ = pool;
      copies_ = static_cast<int>(std::min<std::size_t>(pool->floats() / weights, 1 << 30));
    } else {
      b_owner_ = std::make_unique_for_overwrite<float[]>(weights);
      fill_uniform(b_owner_.get(), weights, 2);
      b_ = b_owner_.get();
    }
  }

  // One call, on the next weights of the pool when cold.
  void call() {
    if (pool_ != nullptr) b_ = pool_->next(k_ * n_);
    const auto bm = static_cast<blasint>(shape_.m);
    const auto bn = static_cast<blasint>(shape_.n);
    const auto bk = static_cast<blasint>(shape_.k);
    if (shape_.m == 1) {
      // c[j] = sum_p a[p] * b[p][j]: y = B^T x with B row-major k x n.
      blas::api().sgemv(CblasRowMajor, CblasTrans, bk, bn, 1.0f, b_, bn, a_.get(), 1, 0.0f,
                        c_.data(), 1);
    } else {
      blas::api().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bm, bn, bk, 1.0f, a_.get(), bk,
                        b_, bn, 0.0f, c_.data(), bn);
    }
  }

  // The statistics of `times` (seconds of each timed call), verified against
  // the B of the latest call.
  [[nodiscard]] GemmMeasurement result(const std::vector<double>& times) const {
    GemmMeasurement r{};
    r.shape = shape_;
    r.repetitions = static_cast<int>(times.size());
    r.weight_copies = copies_;
    r.median_time_s = median(times);
    r.min_time_s = *std::min_element(times.begin(), times.end());
    const double dm = static_cast<double>(shape_.m);
    const double dn = static_cast<double>(shape_.n);
    const double dk = static_cast<double>(shape_.k);
    r.flops = 2.0 * dm * dn * dk;
    r.bytes = 4.0 * (dm * dk + dk * dn + dm * dn);
    r.flops_per_s = r.flops / r.median_time_s;
    r.bandwidth_Bps = r.bytes / r.median_time_s;
    r.max_rel_error = max_sampled_error(shape_, a_.get(), b_, c_.data());
    r.verified = r.max_rel_error <= kGemmVerifyTolerance;
    return r;
  }

 private:
  GemmShape shape_;
  std::size_t m_, n_, k_;
  std::unique_ptr<float[]> a_;
  std::vector<float> c_;
  std::unique_ptr<float[]> b_owner_;
  WeightPool* pool_ = nullptr;
  float* b_ = nullptr;  // the B of the latest call
  int copies_ = 1;
};

}  // namespace

std::vector<GemmMeasurement> measure_sgemms_interleaved(const std::vector<GemmShape>& shapes,
                                                        const GemmOptions& options) {
  for (const GemmShape& s : shapes) validate_gemm_shape(s);
  if (options.repetitions < 0 || options.repetitions > kGemmMaxRepetitions) {
    throw InvalidArgument("sgemm: repetitions must be in [0, " +
                          std::to_string(kGemmMaxRepetitions) + "], got " +
                          std::to_string(options.repetitions));
  }
  if (options.threads < 0 || options.threads > kMaxThreads) {
    throw InvalidArgument("sgemm: threads must be in [0, " + std::to_string(kMaxThreads) +
                          "], got " + std::to_string(options.threads));
  }
  if (shapes.empty()) return {};
  const OpenblasThreadsScope threads_scope(options.threads);
  std::unique_ptr<WeightPool> own_pool;
  WeightPool* pool = options.pool;
  if (options.cold_weights && pool == nullptr) {
    own_pool = std::make_unique<WeightPool>();
    pool = own_pool.get();
  }
  std::vector<std::unique_ptr<SgemmCase>> cases;
  for (const GemmShape& s : shapes) cases.push_back(std::make_unique<SgemmCase>(s, options, pool));
  auto round = [&] {
    for (auto& c : cases) c->call();
  };

  // Warm-up: page faults, OpenBLAS thread start. It overestimates a round, so
  // a second round is timed for the estimate unless the warm-up alone shows
  // that the minimum repetitions will do.
  const double target = kGemmTargetSeconds * static_cast<double>(cases.size());
  const double warm_up = time_call(round);
  int repetitions = options.repetitions;
  if (repetitions == 0) {
    const double estimate = warm_up >= target ? warm_up : std::max(time_call(round), 1e-9);
    const double wanted = std::ceil(target / estimate);
    repetitions = static_cast<int>(std::clamp(wanted, static_cast<double>(kGemmMinRepetitions),
                                              static_cast<double>(kGemmMaxAdaptiveRepetitions)));
  }
  std::vector<std::vector<double>> times(cases.size());
  for (auto& t : times) t.reserve(static_cast<std::size_t>(repetitions));
  for (int rep = 0; rep < repetitions; ++rep) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      times[i].push_back(std::max(time_call([&] { cases[i]->call(); }), 1e-12));
    }
  }
  std::vector<GemmMeasurement> results;
  for (std::size_t i = 0; i < cases.size(); ++i) results.push_back(cases[i]->result(times[i]));
  return results;
}

GemmMeasurement measure_sgemm(const GemmShape& shape, const GemmOptions& options) {
  return measure_sgemms_interleaved({shape}, options).front();
}

int openblas_threads() { return blas::api().get_num_threads(); }

}  // namespace roofline::measure

namespace roofline::measure {

void set_blas_threads(int n) { blas::api().set_num_threads(std::max(1, n)); }  // loads OpenBLAS

}  // namespace roofline::measure
