#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu_bench.h"
#include "roofline/error.h"

namespace roofline::gpu {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Unsupported(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw Unsupported(std::string(what) + ": " + cublasLtGetStatusName(s));
  }
}
// A kernel launch reports a bad configuration at once and a fault at the next
// synchronisation: both are checked, never read as a (absurd) time.
void check_launch(const char* what) { check(cudaGetLastError(), what); }

// Owns one handle of a C API and destroys it once; a class holding several
// frees the ones already made when a later one fails in its constructor.
template <typename H, auto Destroy>
class Owner {
 public:
  Owner() = default;
  ~Owner() {
    if (h_) Destroy(h_);
  }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
  H* out() { return &h_; }
  H get() const { return h_; }

 private:
  H h_{};
};

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    check(cudaMalloc(&p_, std::max<std::size_t>(count, 1) * sizeof(T)), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return p_; }
  std::size_t count() const { return count_; }

 private:
  T* p_ = nullptr;
  std::size_t count_;
};

using Event = Owner<cudaEvent_t, cudaEventDestroy>;

// ---------------------------------------------------------------- kernels

__global__ void flush_kernel(float4* __restrict__ buffer, std::size_t count, float value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    buffer[i] = make_float4(value, value, value, value);
  }
}

// Holds the GPU for `cycles` SM clocks, so that the host can enqueue the next
// repetition behind it: a timed launch never waits for the host.
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

template <typename T>
__device__ T from_float(float v);
template <>
__device__ __half from_float<__half>(float v) {
  return __float2half(v);
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) {
  return __nv_fp8_e4m3(v);
}

template <typename T>
__global__ void fill_eighths(T* __restrict__ p, std::size_t count, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = from_float<T>(eighths_value(seed, i));
  }
}

__global__ void fill_e2m1(std::uint8_t* __restrict__ p, std::size_t bytes, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = static_cast<std::uint8_t>(e2m1_code(seed, 2 * i) | (e2m1_code(seed, 2 * i + 1) << 4));
  }
}

__global__ void fill_bytes(std::uint8_t* __restrict__ p, std::size_t bytes, std::uint8_t value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = value;
  }
}

// The sampled entries of a row-major [m][n] result, as floats.
template <typename T>
__global__ void gather(const T* __restrict__ c, const std::int64_t* __restrict__ index, float* out,
                       int count) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < count) out[s] = static_cast<float>(c[index[s]]);
}

// y[n] = W[n][k] x[k]; launch as in plan_gemv(). Warp `part` of a row sums the
// part-th slice of its 16-byte vectors, kGemvUnroll loads in flight per lane.
template <typename T>
__global__ void gemv_kernel(const T* __restrict__ w, const T* __restrict__ x, T* __restrict__ y,
                            int n, int k, int warps_per_row) {
  constexpr int kVec = 16 / sizeof(T);
  __shared__ float partial[kGemvWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int rows_per_block = kGemvWarps / warps_per_row;
  const int row = blockIdx.x * rows_per_block + warp / warps_per_row;
  const int part = warp % warps_per_row;
  float acc = 0.f;
  if (row < n) {
    const int vectors = k / kVec;
    const int per_part = (vectors + warps_per_row - 1) / warps_per_row;
    const int begin = part * per_part, end = min(vectors, begin + per_part);
    const uint4* wr = reinterpret_cast<const uint4*>(w + static_cast<std::size_t>(row) * k);
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    auto dot = [&](const uint4& a, const uint4& b) {
      const T* pa = reinterpret_cast<const T*>(&a);
      const T* pb = reinterpret_cast<const T*>(&b);
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc += static_cast<float>(pa[e]) * static_cast<float>(pb[e]);
    };
    int v = begin + lane;
    for (; v + 32 * (kGemvUnroll - 1) < end; v += 32 * kGemvUnroll) {
      uint4 wv[kGemvUnroll], xx[kGemvUnroll];
#pragma unroll
      for (int u = 0; u < kGemvUnroll; ++u) wv[u] = __ldcs(wr + v + 32 * u);  // streamed once
#pragma unroll
      for (int u = 0; u < kGemvUnroll; ++u) xx[u] = xv[v + 32 * u];
#pragma unroll
      for (int u = 0; u < kGemvUnroll; ++u) dot(wv[u], xx[u]);
    }
    for (; v < end; v += 32) dot(__ldcs(wr + v), xv[v]);
  }
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (warps_per_row == 1) {
    if (lane == 0 && row < n) y[row] = static_cast<T>(acc);
    return;
  }
  if (lane == 0) partial[warp] = acc;
  __syncthreads();
  if (lane == 0 && part == 0 && row < n) {
    float sum = 0.f;
    for (int p = 0; p < warps_per_row; ++p) sum += partial[warp + p];
    y[row] = static_cast<T>(sum);
  }
}

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out,
                            std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

// Four independent loads per iteration; the sum is written only when it takes
// an impossible value, which keeps the loads alive.
__global__ void read_kernel(const float4* __restrict__ in, float* __restrict__ sink,
                            std::size_t count) {
  float acc = 0.f;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < count; i += 4 * stride) {
    const float4 a = __ldcs(in + i), b = __ldcs(in + i + stride), c = __ldcs(in + i + 2 * stride),
                 d = __ldcs(in + i + 3 * stride);
    acc += a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w + c.x + c.y + c.z + c.w + d.x + d.y + d.z +
           d.w;
  }
  for (; i < count; i += stride) {
    const float4 a = in[i];
    acc += a.x + a.y + a.z + a.w;
  }
  if (acc == -1234.5f) sink[0] = acc;
}

int grid_for(int sm_count) { return sm_count * 8; }

// ---------------------------------------------------------------- timing

// Times an operation: a short warm-up, then repetitions each preceded (outside
// its event pair) by an L2 flush or a spin that gives the host a head start,
// all enqueued back to back and synchronised once.
class Timer {
 public:
  explicit Timer(const DeviceInfo& info)
      : sm_count_(info.sm_count), flush_(l2_flush_bytes(info.l2_bytes) / sizeof(float4)) {
    // A head start of ~30 us at 2 GHz: longer than the host needs to enqueue
    // one repetition (a flush or spin, two event records, one launch).
    spin_cycles_ = 60000;
    Event a, b;
    check(cudaEventCreate(a.out()), "cudaEventCreate");
    check(cudaEventCreate(b.out()), "cudaEventCreate");
    flush(0.f);
    check(cudaEventRecord(a.get()), "cudaEventRecord");
    flush(1.f);
    check(cudaEventRecord(b.get()), "cudaEventRecord");
    check(cudaEventSynchronize(b.get()), "flush");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a.get(), b.get()), "cudaEventElapsedTime");
    flush_s_ = ms * 1e-3;
  }

  template <typename Op>
  Timing run(Op&& op, const TimingOptions& o) {
    // First call (library set-up), then an estimate over 5 back-to-back calls.
    op();
    check(cudaDeviceSynchronize(), "first call");
    Event a, b;
    check(cudaEventCreate(a.out()), "cudaEventCreate");
    check(cudaEventCreate(b.out()), "cudaEventCreate");
    spin();
    check(cudaEventRecord(a.get()), "cudaEventRecord");
    for (int i = 0; i < 5; ++i) op();
    check(cudaEventRecord(b.get()), "cudaEventRecord");
    check(cudaEventSynchronize(b.get()), "estimate");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a.get(), b.get()), "cudaEventElapsedTime");
    const double estimate_s = std::max(ms * 1e-3 / 5, 1e-6);
    const long warmup = std::clamp(static_cast<long>(o.warmup_s / estimate_s), 1L, 20000L);
    for (long i = 0; i < warmup; ++i) op();

    const double per_rep = estimate_s + (o.flush_l2 ? flush_s_ : 15e-6);
    const int reps =
        std::clamp(static_cast<int>(o.target_s / per_rep), o.min_repetitions, o.max_repetitions);
    std::vector<Event> start(reps), stop(reps);
    for (int r = 0; r < reps; ++r) {
      check(cudaEventCreate(start[r].out()), "cudaEventCreate");
      check(cudaEventCreate(stop[r].out()), "cudaEventCreate");
    }
    for (int r = 0; r < reps; ++r) {
      if (o.flush_l2) {
        flush(static_cast<float>(r));
      } else {
        spin();
      }
      check(cudaEventRecord(start[r].get()), "cudaEventRecord");
      op();
      check(cudaEventRecord(stop[r].get()), "cudaEventRecord");
    }
    check(cudaDeviceSynchronize(), "timed repetitions");
    std::vector<double> t(reps);
    for (int r = 0; r < reps; ++r) {
      check(cudaEventElapsedTime(&ms, start[r].get(), stop[r].get()), "cudaEventElapsedTime");
      t[r] = ms * 1e-3;
    }
    Timing timing;
    timing.repetitions = reps;
    timing.l2_flushed = o.flush_l2;
    timing.median_s = percentile(t, 0.5);
    timing.p10_s = percentile(t, 0.1);
    timing.p90_s = percentile(t, 0.9);
    timing.min_s = *std::min_element(t.begin(), t.end());
    return timing;
  }

 private:
  void flush(float value) {
    flush_kernel<<<grid_for(sm_count_), 512>>>(flush_.get(), flush_.count(), value);
    check_launch("L2 flush kernel");
  }
  void spin() {
    spin_kernel<<<1, 32>>>(spin_cycles_);
    check_launch("spin kernel");
  }

  int sm_count_;
  DeviceBuffer<float4> flush_;
  double flush_s_ = 0;
  long long spin_cycles_ = 0;
};

// ---------------------------------------------------------------- checking

// The reference of sample s: sum over p of A(i, p) W(j, p), A row-major [m][k]
// and W row-major [n][k], each element decoded by `value(seed, index)`.
template <typename Value>
std::vector<double> reference_samples(std::int64_t m, std::int64_t n, std::int64_t k, Value value) {
  std::vector<double> ref(kCheckSamples);
  for (int s = 0; s < kCheckSamples; ++s) {
    const SampleIndex at = sample_index(s, m, n);
    double sum = 0;
    for (std::int64_t p = 0; p < k; ++p) {
      sum += static_cast<double>(value(kSeedA, at.i * k + p)) * value(kSeedW, at.j * k + p);
    }
    ref[s] = sum;
  }
  return ref;
}

template <typename TOut>
std::vector<double> gather_samples(const TOut* c, std::int64_t m, std::int64_t n) {
  std::vector<std::int64_t> index(kCheckSamples);
  for (int s = 0; s < kCheckSamples; ++s) {
    const SampleIndex at = sample_index(s, m, n);
    index[s] = at.i * n + at.j;
  }
  DeviceBuffer<std::int64_t> d_index(index.size());
  DeviceBuffer<float> d_out(index.size());
  check(cudaMemcpy(d_index.get(), index.data(), index.size() * sizeof(std::int64_t),
                   cudaMemcpyHostToDevice),
        "copy sample indices");
  gather<TOut><<<(kCheckSamples + 255) / 256, 256>>>(c, d_index.get(), d_out.get(), kCheckSamples);
  check_launch("gather kernel");
  std::vector<float> got(index.size());
  check(cudaMemcpy(got.data(), d_out.get(), got.size() * sizeof(float), cudaMemcpyDeviceToHost),
        "copy samples");
  return {got.begin(), got.end()};
}

// Fills with 0xFF bytes: NaN in fp16 and bf16, so an output the GEMM never
// wrote fails the check.
void fill_nan(void* p, std::size_t bytes) { check(cudaMemset(p, 0xFF, bytes), "cudaMemset"); }

template <typename T>
void fill_inputs(T* p, std::size_t count, std::uint32_t seed, int sm_count) {
  fill_eighths<T><<<grid_for(sm_count), 256>>>(p, count, seed);
  check_launch("fill kernel");
}

// ---------------------------------------------------------------- cuBLASLt

// One cuBLASLt product C[m,n] = A[m,k] W^T, W stored row-major [n][k], through
// the column-major API as C^T[n,m] = W[n,k] A^T[k,m]: cuBLASLt's A is W
// (column-major [k][n], transposed), its B is A^T (column-major [k][m]).
class LtGemm {
 public:
  LtGemm(std::int64_t m, std::int64_t n, std::int64_t k, cudaDataType_t in, cudaDataType_t out) {
    check(cublasLtCreate(lt_.out()), "cublasLtCreate");
    check(cublasLtMatmulDescCreate(op_.out(), CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "cublasLtMatmulDescCreate");
    set(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, "TRANSA");
    set(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, "TRANSB");
    check(cublasLtMatrixLayoutCreate(w_.out(), in, k, n, k), "layout W");
    check(cublasLtMatrixLayoutCreate(a_.out(), in, k, m, k), "layout A");
    check(cublasLtMatrixLayoutCreate(c_.out(), out, n, m, n), "layout C");
  }

  template <typename T>
  void set(cublasLtMatmulDescAttributes_t attribute, const T& value, const char* what) {
    check(cublasLtMatmulDescSetAttribute(op_.get(), attribute, &value, sizeof value), what);
  }

  // Asks the heuristic for several algorithms and keeps the first that runs:
  // "not supported" from the heuristic means no algorithm, not a failure.
  void choose(const void* w, const void* a, void* c, const std::string& what) {
    Owner<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
    check(cublasLtMatmulPreferenceCreate(pref.out()), "cublasLtMatmulPreferenceCreate");
    std::size_t bytes = workspace_.count();
    check(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &bytes, sizeof bytes),
          "workspace preference");
    cublasLtMatmulHeuristicResult_t found[kAlgorithms] = {};
    int count = 0;
    const cublasStatus_t s =
        cublasLtMatmulAlgoGetHeuristic(lt_.get(), op_.get(), w_.get(), a_.get(), c_.get(), c_.get(),
                                       pref.get(), kAlgorithms, found, &count);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || (s == CUBLAS_STATUS_SUCCESS && count == 0)) {
      throw Unsupported("cuBLASLt has no algorithm for " + what + " on this device");
    }
    check(s, "cublasLtMatmulAlgoGetHeuristic");
    std::string last;
    for (int i = 0; i < count; ++i) {
      if (found[i].state != CUBLAS_STATUS_SUCCESS) continue;
      algo_ = found[i].algo;
      const cublasStatus_t r = launch(w, a, c);
      if (r == CUBLAS_STATUS_SUCCESS && cudaDeviceSynchronize() == cudaSuccess) {
        index_ = i;
        return;
      }
      last = cublasLtGetStatusName(r);
      (void)cudaGetLastError();
    }
    throw Unsupported("no cuBLASLt algorithm ran for " + what +
                      (last.empty() ? "" : " (last: " + last + ")"));
  }

  void run(const void* w, const void* a, void* c) { check(launch(w, a, c), "cublasLtMatmul"); }
  int algorithm_index() const { return index_; }

 private:
  static constexpr int kAlgorithms = 8;
  cublasStatus_t launch(const void* w, const void* a, void* c) {
    const float alpha = 1.f, beta = 0.f;
    return cublasLtMatmul(lt_.get(), op_.get(), &alpha, w, w_.get(), a, a_.get(), &beta, c,
                          c_.get(), c, c_.get(), &algo_, workspace_.get(), workspace_.count(),
                          nullptr);
  }

  Owner<cublasLtHandle_t, cublasLtDestroy> lt_;
  Owner<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> op_;
  Owner<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> w_, a_, c_;
  DeviceBuffer<char> workspace_{std::size_t{32} << 20};
  cublasLtMatmulAlgo_t algo_{};
  int index_ = -1;
};

GemmResult result_base(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& precision,
                       const char* output, const char* kernel, double in_bytes_per_element) {
  GemmResult r;
  r.m = m;
  r.n = n;
  r.k = k;
  r.precision = precision;
  r.output = output;
  r.kernel = kernel;
  r.flops = 2.0 * static_cast<double>(m) * n * k;
  r.bytes =
      in_bytes_per_element * static_cast<double>(m * k + n * k) + 2.0 * static_cast<double>(m * n);
  return r;
}

template <typename TIn, typename TOut>
GemmResult lt_gemm(std::int64_t m, std::int64_t n, std::int64_t k, cudaDataType_t in_type,
                   cudaDataType_t out_type, const std::string& precision, const char* output,
                   const DeviceInfo& info, const TimingOptions& o) {
  GemmResult r = result_base(m, n, k, precision, output, "cublaslt", sizeof(TIn));
  DeviceBuffer<TIn> a(static_cast<std::size_t>(m * k)), w(static_cast<std::size_t>(n * k));
  DeviceBuffer<TOut> c(static_cast<std::size_t>(m * n));
  fill_inputs(a.get(), a.count(), kSeedA, info.sm_count);
  fill_inputs(w.get(), w.count(), kSeedW, info.sm_count);
  fill_nan(c.get(), c.count() * sizeof(TOut));
  LtGemm mm(m, n, k, in_type, out_type);
  if (in_type == CUDA_R_8F_E4M3) {
    // As the serving engines run fp8 on Hopper (their tolerance allows for it).
    const std::int8_t fast = 1;
    mm.set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast, "fast accumulation");
    r.fast_accum = true;
  }
  mm.choose(w.get(), a.get(), c.get(), precision + " at this shape");
  r.algorithm = mm.algorithm_index();
  fill_nan(c.get(), c.count() * sizeof(TOut));
  Timer timer(info);
  r.timing = timer.run([&] { mm.run(w.get(), a.get(), c.get()); }, o);
  r.check = check_samples(reference_samples(m, n, k, eighths_value), gather_samples(c.get(), m, n),
                          output_tolerance(output));
  return r;
}

std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

// NVFP4: e2m1 values with a ue4m3 scale per 16 along k (cuBLASLt's
// VEC16_UE4M3 mode) on Blackwell's FP4 tensor cores. Every block scale is 1.0
// (ue4m3 code 0x38), so the result does not depend on how cuBLASLt tiles the
// scale buffers (128 rows by 4 blocks), only on their size.
GemmResult lt_gemm_nvfp4(std::int64_t m, std::int64_t n, std::int64_t k, const DeviceInfo& info,
                         const TimingOptions& o) {
  if (info.major < 10) {
    throw Unsupported(
        "nvfp4 GEMMs run on Blackwell's FP4 tensor cores (compute capability 10.x or 12.x); " +
        info.name + " is " + std::to_string(info.major) + "." + std::to_string(info.minor));
  }
  if (k % 32 != 0 || n % 32 != 0)
    throw InvalidArgument("nvfp4 GEMMs need n and k to be multiples of 32");
  GemmResult r = result_base(m, n, k, "nvfp4", "bf16", "cublaslt", 0.5 + 1.0 / 16);
  const auto a_scales = static_cast<std::size_t>(round_up(m, 128) * round_up(k / 16, 4));
  const auto w_scales = static_cast<std::size_t>(round_up(n, 128) * round_up(k / 16, 4));
  DeviceBuffer<std::uint8_t> a(static_cast<std::size_t>(m * k / 2)),
      w(static_cast<std::size_t>(n * k / 2));
  DeviceBuffer<std::uint8_t> sa(a_scales), sw(w_scales);
  DeviceBuffer<__nv_bfloat16> c(static_cast<std::size_t>(m * n));
  fill_e2m1<<<grid_for(info.sm_count), 256>>>(a.get(), a.count(), kSeedA);
  fill_e2m1<<<grid_for(info.sm_count), 256>>>(w.get(), w.count(), kSeedW);
  fill_bytes<<<grid_for(info.sm_count), 256>>>(sa.get(), a_scales, 0x38);
  fill_bytes<<<grid_for(info.sm_count), 256>>>(sw.get(), w_scales, 0x38);
  check_launch("fill kernels");
  fill_nan(c.get(), c.count() * sizeof(__nv_bfloat16));

  LtGemm mm(m, n, k, CUDA_R_4F_E2M1, CUDA_R_16BF);
  const std::int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
  mm.set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode, "A scale mode");
  mm.set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode, "B scale mode");
  mm.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(sw.get()), "A scales");
  mm.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(sa.get()), "B scales");
  mm.choose(w.get(), a.get(), c.get(), "nvfp4 at this shape");
  r.algorithm = mm.algorithm_index();
  fill_nan(c.get(), c.count() * sizeof(__nv_bfloat16));
  Timer timer(info);
  r.timing = timer.run([&] { mm.run(w.get(), a.get(), c.get()); }, o);
  auto value = [](std::uint32_t seed, std::uint64_t index) {
    return e2m1_value(e2m1_code(seed, index));
  };
  r.check = check_samples(reference_samples(m, n, k, value), gather_samples(c.get(), m, n),
                          output_tolerance("bf16"));
  return r;
}

template <typename T>
GemmResult gemv(std::int64_t n, std::int64_t k, const std::string& precision,
                const DeviceInfo& info, const TimingOptions& o) {
  if (k % (16 / sizeof(T)) != 0)
    throw InvalidArgument("the GEMV kernel needs k to be a multiple of 8");
  GemmResult r = result_base(1, n, k, precision, precision.c_str(), "gemv", sizeof(T));
  r.launch = plan_gemv(n, k, sizeof(T), info.sm_count);
  DeviceBuffer<T> w(static_cast<std::size_t>(n * k)), x(static_cast<std::size_t>(k)),
      y(static_cast<std::size_t>(n));
  fill_inputs(x.get(), x.count(), kSeedA, info.sm_count);
  fill_inputs(w.get(), w.count(), kSeedW, info.sm_count);
  fill_nan(y.get(), y.count() * sizeof(T));
  Timer timer(info);
  const GemvLaunch l = r.launch;
  r.timing = timer.run(
      [&] {
        gemv_kernel<T><<<static_cast<unsigned>(l.blocks), kGemvThreads>>>(
            w.get(), x.get(), y.get(), static_cast<int>(n), static_cast<int>(k), l.warps_per_row);
        check_launch("gemv kernel");
      },
      o);
  r.check = check_samples(reference_samples(1, n, k, eighths_value), gather_samples(y.get(), 1, n),
                          output_tolerance(precision));
  return r;
}

}  // namespace

DeviceInfo device_info() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    // The runtime's text for a missing driver ("CUDA driver version is
    // insufficient...") misleads on a machine without a GPU.
    throw Unsupported(e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || count == 0
                          ? std::string("no CUDA device")
                          : std::string("no CUDA device: ") + cudaGetErrorString(e));
  }
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  DeviceInfo info{p.name, p.multiProcessorCount, p.major, p.minor,
                  static_cast<double>(p.totalGlobalMem)};
  int l2 = 0;
  if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0) == cudaSuccess && l2 > 0)
    info.l2_bytes = l2;
  (void)cudaDriverGetVersion(&info.driver_version);
  (void)cudaRuntimeGetVersion(&info.runtime_version);
  return info;
}

void warm_up_clocks(double seconds) {
  const DeviceInfo info = device_info();
  constexpr std::int64_t kSize = 4096;
  DeviceBuffer<__nv_bfloat16> a(kSize * kSize), w(kSize * kSize), c(kSize * kSize);
  fill_inputs(a.get(), a.count(), kSeedA, info.sm_count);
  fill_inputs(w.get(), w.count(), kSeedW, info.sm_count);
  LtGemm mm(kSize, kSize, kSize, CUDA_R_16BF, CUDA_R_16BF);
  mm.choose(w.get(), a.get(), c.get(), "the warm-up GEMM");
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 10; ++i) mm.run(w.get(), a.get(), c.get());
    check(cudaDeviceSynchronize(), "warm-up");
  }
}

GemmResult gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& precision,
                const TimingOptions& o, bool gemv_kernel) {
  const DeviceInfo info = device_info();
  if (m < 1 || n < 1 || k < 1 || m > 65536 || n > 65536 || k > 65536) {
    throw InvalidArgument("GPU GEMM: m, n, k must be 1 to 65536");
  }
  if (gemv_kernel && m == 1 && precision == "fp16") return gemv<__half>(n, k, "fp16", info, o);
  if (gemv_kernel && m == 1 && precision == "bf16")
    return gemv<__nv_bfloat16>(n, k, "bf16", info, o);
  if (precision == "fp16")
    return lt_gemm<__half, __half>(m, n, k, CUDA_R_16F, CUDA_R_16F, "fp16", "fp16", info, o);
  if (precision == "bf16") {
    return lt_gemm<__nv_bfloat16, __nv_bfloat16>(m, n, k, CUDA_R_16BF, CUDA_R_16BF, "bf16", "bf16",
                                                 info, o);
  }
  if (precision == "fp8") {
    if (k % 16 != 0 || n % 16 != 0)
      throw InvalidArgument("fp8 GEMMs need n and k to be multiples of 16");
    return lt_gemm<__nv_fp8_e4m3, __nv_bfloat16>(m, n, k, CUDA_R_8F_E4M3, CUDA_R_16BF, "fp8",
                                                 "bf16", info, o);
  }
  if (precision == "nvfp4") return lt_gemm_nvfp4(m, n, k, info, o);
  throw InvalidArgument("GPU GEMM precision '" + precision.substr(0, 16) +
                        "' is not one of fp16, bf16, fp8, nvfp4");
}

BandwidthResult bandwidth(double bytes, const TimingOptions& o) {
  const DeviceInfo info = device_info();
  if (!(bytes >= 1e6 && bytes <= 64e9))
    throw InvalidArgument("bandwidth test size must be 1 MB to 64 GB");
  const std::size_t n = static_cast<std::size_t>(bytes) / sizeof(float4);
  DeviceBuffer<float4> a(n), b(n);
  DeviceBuffer<float> sink(1);
  check(cudaMemset(a.get(), 0, n * sizeof(float4)), "cudaMemset");
  BandwidthResult r;
  r.bytes = static_cast<double>(n * sizeof(float4));
  Timer timer(info);
  // The buffers are many times the L2: no flush needed, a spin gives the head start.
  TimingOptions big = o;
  big.flush_l2 = false;
  r.memcpy_timing = timer.run(
      [&] {
        check(cudaMemcpyAsync(b.get(), a.get(), n * sizeof(float4), cudaMemcpyDeviceToDevice),
              "memcpy");
      },
      big);
  r.copy_timing = timer.run(
      [&] {
        copy_kernel<<<grid_for(info.sm_count), 512>>>(a.get(), b.get(), n);
        check_launch("copy kernel");
      },
      big);
  r.read_timing = timer.run(
      [&] {
        read_kernel<<<grid_for(info.sm_count), 512>>>(a.get(), sink.get(), n);
        check_launch("read kernel");
      },
      big);
  r.memcpy_Bps = 2 * r.bytes / r.memcpy_timing.median_s;
  r.copy_Bps = 2 * r.bytes / r.copy_timing.median_s;
  r.read_Bps = r.bytes / r.read_timing.median_s;
  return r;
}

}  // namespace roofline::gpu
