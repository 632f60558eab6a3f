// Measurements on the host CPU: sustained memory bandwidth (STREAM), peak
// fused multiply-add throughput, and fp32 GEMM/GEMV through OpenBLAS. These
// give the "measured" figures a roofline for the host is drawn from.
//
// Every function here runs real work on all cores for a fraction of a second
// to tens of seconds; none prints. Bad options throw roofline::InvalidArgument,
// a machine that cannot start the requested threads throws
// roofline::Unsupported, and allocation failure surfaces as std::bad_alloc.
//
// Example:
//   roofline::measure::StreamReport s = roofline::measure::run_stream({});
//   roofline::measure::PeakReport p = roofline::measure::run_peak({});
//   double ridge_flops_per_byte = p.fp32_flops_per_s / s.bandwidth_Bps;
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/units.h"

namespace roofline::measure {

// Most threads any measurement accepts: more is a mistake, not a machine.
inline constexpr int kMaxThreads = 4096;

// ---------------------------------------------------------------------------
// STREAM (McCalpin): copy, scale, add and triad over three double arrays.

// The last-level cache size in bytes of CPU 0, read from
// /sys/devices/system/cpu/cpu0/cache/index*/ (the largest level-3 data or
// unified cache, else level 2). Returns 0 when sysfs does not say.
[[nodiscard]] std::size_t last_level_cache_bytes() noexcept;

// The cache size run_stream assumes when last_level_cache_bytes() is 0.
inline constexpr std::size_t kStreamFallbackCacheBytes = std::size_t{32} << 20;
// Smallest default array: STREAM's rule is 4x the last-level cache, and never
// below this so that timer resolution does not matter.
inline constexpr std::size_t kStreamMinDefaultArrayBytes = std::size_t{64} << 20;
// Bounds on an explicit StreamOptions::array_bytes.
inline constexpr std::size_t kStreamMinArrayBytes = std::size_t{1} << 20;
inline constexpr std::size_t kStreamMaxArrayBytes = std::size_t{64} << 30;
// The kernels multiply the values by 15 per repetition (a = b + 3c with
// c = 4a, b = 3a); doubles overflow after ~260 repetitions, so cap well below.
inline constexpr int kStreamMaxRepetitions = 200;
// checkSTREAMresults' epsilon for doubles: the average absolute error of each
// array, relative to the expected value, must be below this.
inline constexpr double kStreamVerifyTolerance = 1e-13;

struct StreamOptions {
  // Bytes of EACH of the three arrays (rounded down to whole doubles).
  // 0: max(4 x last-level cache, 64 MiB), where an unknown cache counts as
  // kStreamFallbackCacheBytes, and at most 1/8 of physical memory per array.
  // Otherwise must be in [kStreamMinArrayBytes, kStreamMaxArrayBytes] and the
  // three arrays must fit in half of physical memory (when it is known).
  std::size_t array_bytes = 0;
  // Worker threads, each owning a contiguous slice of every array that it
  // initializes itself (first touch). 0: std::thread::hardware_concurrency().
  int threads = 0;
  // Timed repetitions of each kernel after one untimed warm-up; the median is
  // reported. Must be in [1, kStreamMaxRepetitions].
  int repetitions = 10;
};

struct StreamKernelResult {
  std::string name;              // "copy", "scale", "add" or "triad"
  BytesPerSecond bandwidth_Bps;  // bytes moved / median time over repetitions
  BytesPerSecond best_Bps;       // bytes moved / fastest repetition
  Seconds median_time_s;         // median time of one pass over the arrays
  // Bytes counted per loop iteration (one element), as STREAM counts them:
  // copy and scale touch 2 arrays x 8 B = 16, add and triad 3 x 8 B = 24.
  // Write-allocate traffic is not counted.
  Bytes bytes_per_iteration;
};

struct StreamReport {
  std::vector<StreamKernelResult> kernels;  // copy, scale, add, triad in that order
  BytesPerSecond bandwidth_Bps;             // the highest kernel bandwidth_Bps (a median)
  std::string best_kernel;                  // the kernel that had it
  std::size_t array_bytes;                  // bytes of each array actually used
  int threads;                              // threads actually used
  bool verified;  // the arrays hold the expected values afterwards (kStreamVerifyTolerance)
};

// Runs STREAM with `options`. `progress`, when set, is called from the calling
// thread between timed passes with a stage name ("allocate", "measure",
// "verify", "done") and the overall fraction done in [0, 1]; an exception it
// throws stops the run and propagates. Throws InvalidArgument on bad options.
[[nodiscard]] StreamReport run_stream(
    const StreamOptions& options,
    const std::function<void(std::string_view stage, double fraction)>& progress = {});

// ---------------------------------------------------------------------------
// Peak floating-point throughput: independent chains of fused multiply-adds on
// the widest vector ISA the CPU supports, chosen at run time.

struct PeakOptions {
  // Threads, each running the same kernel. 0: std::thread::hardware_concurrency().
  int threads = 0;
  // Approximate seconds spent per precision (fp32, then fp64), in (0, 60].
  double seconds = 0.2;
};

struct PeakReport {
  FlopsPerSecond fp32_flops_per_s;  // all threads together; 2 FLOP per FMA per lane
  FlopsPerSecond fp64_flops_per_s;
  // The ISA the kernels ran on: "avx512f", "avx2+fma", "sse2" (x86 without FMA:
  // separate multiply and add, still 2 FLOP), "neon", or "generic".
  std::string isa;
  int threads;
  int vector_bits;  // width of one vector register of that ISA
};

// Measures peak fp32 and fp64 FLOP/s: per precision, a short single-thread
// calibration, then on all threads one warm-up pass and five timed passes,
// fp32 and fp64 passes alternating so that other load on the machine falls on
// both alike; the median pass is reported. Throws InvalidArgument on bad
// options.
[[nodiscard]] PeakReport run_peak(const PeakOptions& options);

// ---------------------------------------------------------------------------
// fp32 GEMM / GEMV through OpenBLAS.

// One problem: C[m x n] = A[m x k] * B[k x n], all row-major fp32. A holds
// activations (m tokens), B weights. m == 1 is a GEMV.
struct GemmShape {
  std::int64_t m;
  std::int64_t n;
  std::int64_t k;
  std::string label;  // where the shape comes from, e.g. "Llama-3-8B gate/up"
};

// Bounds measure_sgemm accepts: each dimension in [1, kMaxMeasuredGemmDimension]
// and A, B and C together at most kMaxMeasuredGemmBytes of fp32.
inline constexpr std::int64_t kMaxMeasuredGemmDimension = 65536;
inline constexpr double kMaxMeasuredGemmBytes = 2.0 * 1024 * 1024 * 1024;
// Sampled output entries checked against a double-precision reference.
inline constexpr int kGemmVerifySamples = 64;
// Largest accepted |C - reference| / sum_p |A[i,p] * B[p,j]| of a sampled
// entry. fp32 dot products of length k err by at most ~k * 2^-24 of that sum
// in the worst case and ~sqrt(k) * 2^-24 typically; 1e-3 covers k = 16384 in
// the worst case while catching any wrong index or missing term.
inline constexpr double kGemmVerifyTolerance = 1e-3;
// Adaptive repetitions: enough timed calls for about this long per shape,
// at least kGemmMinRepetitions and at most kGemmMaxAdaptiveRepetitions.
inline constexpr Seconds kGemmTargetSeconds = 0.2;
inline constexpr int kGemmMinRepetitions = 3;
inline constexpr int kGemmMaxAdaptiveRepetitions = 10000;
// Most explicit repetitions accepted.
inline constexpr int kGemmMaxRepetitions = 1000000;

// Prefill-style GEMMs (m = 16, 128, 512 tokens) from Llama-3-8B (hidden 4096,
// intermediate 14336, k/v 1024) and Qwen2.5-7B (hidden 3584), without the
// largest combinations, so that the set runs in roughly 10-20 s on 2 cores.
[[nodiscard]] std::vector<GemmShape> default_gemm_shapes();
// Decode GEMVs (m = 1) of the same layers.
[[nodiscard]] std::vector<GemmShape> default_gemv_shapes();

// Smallest WeightPool made by default (when the cache size is tiny or unknown).
inline constexpr std::size_t kWeightPoolMinBytes = std::size_t{64} << 20;

// Memory that cold-weight measurements cycle their weight operand through, so
// that no call finds its weights in the cache: a model's layers stream theirs
// from memory, and a benchmark that reuses one small B measures the cache
// instead. Filled with uniform values in [-1, 1) once when made (about half a
// second per GB on a VM, page faults included), then reused by every
// measurement given it. Not thread-safe: one measurement at a time.
class WeightPool {
 public:
  // bytes = 0: twice the last-level cache (kStreamFallbackCacheBytes when sysfs
  // does not say), at least kWeightPoolMinBytes. The size is then capped at a
  // quarter of physical memory (when known). Throws InvalidArgument when an
  // explicit size is above kMaxMeasuredGemmBytes.
  explicit WeightPool(std::size_t bytes = 0);
  [[nodiscard]] std::size_t floats() const noexcept { return floats_; }

  // The next `count` floats after the previous window (on a cache line of its
  // own), or the first `count` when they do not fit before the end: a cursor
  // shared by every measurement given this pool walks it, so that a window was
  // last read at least (pool - count) bytes of weight traffic ago. Throws
  // InvalidArgument when count is 0 or more than floats().
  [[nodiscard]] float* next(std::size_t count);

 private:
  static constexpr std::size_t kFloatsPerCacheLine = 16;
  std::unique_ptr<float[]> data_;
  std::size_t floats_ = 0;
  std::size_t cursor_ = 0;
};

struct GemmOptions {
  // Timed calls after one warm-up call. 0: adaptive (kGemmTargetSeconds).
  // Must be in [0, kGemmMaxRepetitions].
  int repetitions = 0;
  // OpenBLAS threads for this measurement (restored afterwards). 0: leave
  // OpenBLAS's setting. Must be in [0, kMaxThreads].
  int threads = 0;
  // true: every call takes its weights (B) from the next window of a
  // WeightPool (WeightPool::next), so that with the default pool (twice the
  // last-level cache) no call finds weights of up to a cache's size in the
  // cache. Weights larger than the pool get their own buffer (they stream from
  // memory anyway). false: every call reads the same B (cache-warm when it fits).
  bool cold_weights = true;
  // The pool cold calls cycle through; null: measure_sgemm makes a default one
  // for the call (seconds per call on a VM: pass one pool to many calls).
  WeightPool* pool = nullptr;
};

struct GemmMeasurement {
  GemmShape shape;
  Seconds median_time_s;  // median of the timed calls
  Seconds min_time_s;
  Flops flops;                   // 2 m n k
  Bytes bytes;                   // fp32 compulsory traffic: 4 (m k + k n + m n)
  FlopsPerSecond flops_per_s;    // flops / median_time_s
  BytesPerSecond bandwidth_Bps;  // bytes / median_time_s
  int repetitions;               // timed calls
  int weight_copies;             // windows of B the pool holds (1: one buffer, warm or too large)
  // Largest |C - reference| / sum_p |A[i,p] * B[p,j]| over kGemmVerifySamples
  // sampled entries, the reference computed in double precision.
  double max_rel_error;
  bool verified;  // max_rel_error <= kGemmVerifyTolerance (false on NaN)
};

// Measures cblas_sgemm (row-major, no transposes) on random inputs in
// [-1, 1], or cblas_sgemv when m == 1, and checks the result. Throws
// InvalidArgument when the shape is outside the bounds above or an option is
// out of range; allocates m k + k n + m n floats.
[[nodiscard]] GemmMeasurement measure_sgemm(const GemmShape& shape,
                                            const GemmOptions& options = {});

// Measures several shapes as measure_sgemm does, in alternation call by call
// (one warm-up call of each, then s0, s1, ..., s0, s1, ...), so that every
// series sees the same seconds of a machine whose load comes and goes. Each
// shape gets the same number of timed calls: options.repetitions, or (0)
// enough rounds for about kGemmTargetSeconds per shape in all, at least
// kGemmMinRepetitions. Empty for no shapes; throws like measure_sgemm.
[[nodiscard]] std::vector<GemmMeasurement> measure_sgemms_interleaved(
    const std::vector<GemmShape>& shapes, const GemmOptions& options = {});

// The number of threads OpenBLAS currently uses.
[[nodiscard]] int openblas_threads();

// Sets OpenBLAS's thread count (n >= 1).
void set_blas_threads(int n);

}  // namespace roofline::measure
