#include "gpu_bench.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "roofline/error.h"

namespace roofline::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Unsupported(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Unsupported(std::string(what) + ": cuBLASLt status " + std::to_string(s));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

template <typename T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(std::size_t n) { check(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Events {
  cudaEvent_t start{}, stop{};
  Events() {
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  template <typename F>
  std::vector<double> time(F&& f, int repetitions) {
    f();  // warm-up
    check(cudaDeviceSynchronize(), "warm-up");
    std::vector<double> t;
    for (int i = 0; i < repetitions; ++i) {
      check(cudaEventRecord(start), "cudaEventRecord");
      f();
      check(cudaEventRecord(stop), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      t.push_back(ms * 1e-3);
    }
    return t;
  }
};

// y[n] = W[n,k] x[k]: one warp per output row, 16-byte loads, fp32 accumulate.
template <typename T>
__global__ void gemv_kernel(const T* __restrict__ w, const T* __restrict__ x, T* __restrict__ y, int n, int k) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= n) return;
  constexpr int kVec = 16 / sizeof(T);
  const T* wr = w + static_cast<std::size_t>(row) * k;
  float acc = 0.f;
  for (int c = lane * kVec; c + kVec <= k; c += 32 * kVec) {
    const uint4 wv = *reinterpret_cast<const uint4*>(wr + c);
    const uint4 xv = *reinterpret_cast<const uint4*>(x + c);
    const T* wa = reinterpret_cast<const T*>(&wv);
    const T* xa = reinterpret_cast<const T*>(&xv);
#pragma unroll
    for (int i = 0; i < kVec; ++i) acc += static_cast<float>(wa[i]) * static_cast<float>(xa[i]);
  }
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffff, acc, off);
  if (lane == 0) y[row] = static_cast<T>(acc);
}

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

__global__ void read_kernel(const float4* __restrict__ in, float* __restrict__ sink, std::size_t n) {
  float acc = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 v = in[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) sink[0] = acc;  // keeps the loads alive
}

template <typename T>
T from_float(float f);
template <>
__half from_float<__half>(float f) { return __float2half(f); }
template <>
__nv_bfloat16 from_float<__nv_bfloat16>(float f) { return __float2bfloat16(f); }
template <>
__nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float f) { return __nv_fp8_e4m3(f); }

template <typename T>
float to_float(T v) { return static_cast<float>(v); }

template <typename T>
std::vector<T> random_matrix(std::size_t n, unsigned seed, std::vector<float>* host) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<T> out(n);
  host->resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = from_float<T>(u(rng));
    (*host)[i] = to_float(out[i]);
  }
  return out;
}

// Outputs are 16-bit roundings of fp32 accumulations: ~2^-8 relative.
constexpr double kVerifyTolerance = 1e-2;

// Largest |C - reference| / sum_p |A[i,p] W[p,j]| over 64 sampled entries of the
// row-major result c [m x n], the reference computed in double from the decoded
// inputs: a is row-major [m][k], w(p, j) reads the weight at (p, j).
template <typename TOut, typename WeightAt>
double sampled_error(std::int64_t m, std::int64_t n, std::int64_t k, const std::vector<float>& a, WeightAt w,
                     const std::vector<TOut>& c) {
  double worst = 0;
  for (int s = 0; s < 64; ++s) {
    const std::int64_t i = (s * 7919) % m, j = (s * 104729) % n;
    double ref = 0, mag = 0;
    for (std::int64_t p = 0; p < k; ++p) {
      const double prod = static_cast<double>(a[i * k + p]) * w(p, j);
      ref += prod;
      mag += std::fabs(prod);
    }
    const double got = to_float(c[static_cast<std::size_t>(i * n + j)]);
    worst = std::max(worst, std::fabs(got - ref) / std::max(mag, 1e-30));
  }
  return worst;
}

// The record of an m x n x k product timed `times`, moving `bytes` compulsory bytes.
GemmResult gemm_result(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& precision,
                       const std::vector<double>& times, double bytes, double worst) {
  GemmResult r;
  r.m = m;
  r.n = n;
  r.k = k;
  r.precision = precision;
  r.median_time_s = median(times);
  r.repetitions = static_cast<int>(times.size());
  r.flops_per_s = 2.0 * m * n * k / r.median_time_s;
  r.bandwidth_Bps = bytes / r.median_time_s;
  r.max_rel_error = worst;
  r.verified = worst < kVerifyTolerance;  // false on NaN
  return r;
}

// One cuBLASLt product for a row-major C[m,n] = A[m,k] W[k,n], through the
// column-major API as C^T[n,m] = op(W^T)[n,k] A^T[k,m]: its handle, descriptor
// and layouts, destroyed together.
class LtMatmul {
 public:
  // w_transposed: W is stored as W^T row-major [n][k] (the TN layout fp8 and
  // nvfp4 require); otherwise W is row-major [k][n].
  LtMatmul(std::int64_t m, std::int64_t n, std::int64_t k, cudaDataType_t in, cudaDataType_t out, bool w_transposed) {
    check(cublasLtCreate(&lt_), "cublasLtCreate");
    check(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
    set(CUBLASLT_MATMUL_DESC_TRANSA, w_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, "TRANSA");
    set(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, "TRANSB");
    if (w_transposed) {
      check(cublasLtMatrixLayoutCreate(&w_, in, k, n, k), "layout W");
    } else {
      check(cublasLtMatrixLayoutCreate(&w_, in, n, k, n), "layout W");
    }
    check(cublasLtMatrixLayoutCreate(&a_, in, k, m, k), "layout A");
    check(cublasLtMatrixLayoutCreate(&c_, out, n, m, n), "layout C");
  }
  ~LtMatmul() {
    if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
    if (c_) cublasLtMatrixLayoutDestroy(c_);
    if (a_) cublasLtMatrixLayoutDestroy(a_);
    if (w_) cublasLtMatrixLayoutDestroy(w_);
    if (op_) cublasLtMatmulDescDestroy(op_);
    if (lt_) cublasLtDestroy(lt_);
  }
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  template <typename T>
  void set(cublasLtMatmulDescAttributes_t attribute, const T& value, const char* what) {
    check(cublasLtMatmulDescSetAttribute(op_, attribute, &value, sizeof value), what);
  }

  // Times `repetitions` products after a warm-up, with cuBLASLt's first algorithm.
  std::vector<double> time(const void* w, const void* a, void* c, int repetitions, const std::string& what) {
    std::size_t workspace_bytes = 32 << 20;
    DeviceBuffer<char> workspace(workspace_bytes);
    check(cublasLtMatmulPreferenceCreate(&pref_), "PreferenceCreate");
    check(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                               sizeof workspace_bytes),
          "workspace");
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(lt_, op_, w_, a_, c_, c_, pref_, 1, &heuristic, &found), "AlgoGetHeuristic");
    if (found == 0) throw Unsupported("cuBLASLt has no algorithm for " + what + " on this device");
    const float alpha = 1.f, beta = 0.f;
    Events ev;
    return ev.time(
        [&] {
          check(cublasLtMatmul(lt_, op_, &alpha, w, w_, a, a_, &beta, c, c_, c, c_, &heuristic.algo, workspace.p,
                               workspace_bytes, nullptr),
                "cublasLtMatmul");
        },
        repetitions);
  }

 private:
  cublasLtHandle_t lt_{};
  cublasLtMatmulDesc_t op_{};
  cublasLtMatrixLayout_t w_{}, a_{}, c_{};
  cublasLtMatmulPreference_t pref_{};
};

// fp16, bf16 and fp8 (e4m3, which needs the TN layout: W stored as W^T).
template <typename TIn, typename TOut>
GemmResult lt_gemm(std::int64_t m, std::int64_t n, std::int64_t k, cudaDataType_t in_type, cudaDataType_t out_type,
                   const char* name, int repetitions) {
  const bool w_transposed = in_type == CUDA_R_8F_E4M3;
  std::vector<float> ha, hw;
  const auto a = random_matrix<TIn>(static_cast<std::size_t>(m * k), 1, &ha);
  const auto w = random_matrix<TIn>(static_cast<std::size_t>(k * n), 2, &hw);
  DeviceBuffer<TIn> da(a.size()), dw(w.size());
  DeviceBuffer<TOut> dc(static_cast<std::size_t>(m * n));
  check(cudaMemcpy(da.p, a.data(), a.size() * sizeof(TIn), cudaMemcpyHostToDevice), "copy A");
  check(cudaMemcpy(dw.p, w.data(), w.size() * sizeof(TIn), cudaMemcpyHostToDevice), "copy W");
  LtMatmul mm(m, n, k, in_type, out_type, w_transposed);
  const auto times = mm.time(dw.p, da.p, dc.p, repetitions, name);
  std::vector<TOut> c(static_cast<std::size_t>(m * n));
  check(cudaMemcpy(c.data(), dc.p, c.size() * sizeof(TOut), cudaMemcpyDeviceToHost), "copy C");
  const double worst = sampled_error(
      m, n, k, ha, [&](std::int64_t p, std::int64_t j) { return hw[w_transposed ? j * k + p : p * n + j]; }, c);
  return gemm_result(m, n, k, name, times, sizeof(TIn) * (m * k + k * n) + sizeof(TOut) * m * n, worst);
}

// e2m1 magnitudes by code (bits 2..0); bit 3 is the sign (OCP MX spec, FP4 E2M1).
constexpr float kE2m1[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};

// `count` random e2m1 values packed two per byte, and their decoded values.
// Which nibble holds the first element does not matter to the check in
// lt_gemm_nvfp4: both operands are packed alike along k, so a swapped order
// pairs up the same products.
std::vector<std::uint8_t> random_e2m1(std::size_t count, unsigned seed, std::vector<float>* host) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(0, 15);
  std::vector<std::uint8_t> packed(count / 2, 0);
  host->resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const int c = code(rng);
    (*host)[i] = (c & 8 ? -1.f : 1.f) * kE2m1[c & 7];
    packed[i / 2] = static_cast<std::uint8_t>(packed[i / 2] | (c << (4 * (i % 2))));
  }
  return packed;
}

std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

// NVFP4: e2m1 values with a ue4m3 scale per 16 along k (cuBLASLt's VEC16_UE4M3
// mode), on Blackwell's FP4 tensor cores, TN layout as for fp8. Every block
// scale is 1.0 (ue4m3 code 0x38), so the result does not depend on how
// cuBLASLt tiles the scale buffers (128 rows by 4 blocks), only their size;
// the timing does not depend on the values.
GemmResult lt_gemm_nvfp4(std::int64_t m, std::int64_t n, std::int64_t k, int repetitions) {
  const DeviceInfo info = device_info();
  if (info.major < 10) {
    throw Unsupported("nvfp4 GEMMs run on Blackwell's FP4 tensor cores (compute capability 10.x or 12.x); " +
                      info.name + " is " + std::to_string(info.major) + "." + std::to_string(info.minor));
  }
  if (k % 32 != 0 || n % 32 != 0) throw InvalidArgument("nvfp4 GEMMs need n and k to be multiples of 32");
  std::vector<float> ha, hw;
  const auto a = random_e2m1(static_cast<std::size_t>(m * k), 1, &ha);  // A row-major [m][k]
  const auto w = random_e2m1(static_cast<std::size_t>(n * k), 2, &hw);  // W^T row-major [n][k]
  const std::size_t a_scales = static_cast<std::size_t>(round_up(m, 128) * round_up(k / 16, 4));
  const std::size_t w_scales = static_cast<std::size_t>(round_up(n, 128) * round_up(k / 16, 4));
  const std::vector<std::uint8_t> ones_a(a_scales, 0x38), ones_w(w_scales, 0x38);
  DeviceBuffer<std::uint8_t> da(a.size()), dw(w.size()), dsa(a_scales), dsw(w_scales);
  DeviceBuffer<__nv_bfloat16> dc(static_cast<std::size_t>(m * n));
  check(cudaMemcpy(da.p, a.data(), a.size(), cudaMemcpyHostToDevice), "copy A");
  check(cudaMemcpy(dw.p, w.data(), w.size(), cudaMemcpyHostToDevice), "copy W");
  check(cudaMemcpy(dsa.p, ones_a.data(), a_scales, cudaMemcpyHostToDevice), "copy A scales");
  check(cudaMemcpy(dsw.p, ones_w.data(), w_scales, cudaMemcpyHostToDevice), "copy W scales");

  LtMatmul mm(m, n, k, CUDA_R_4F_E2M1, CUDA_R_16BF, true);
  const std::int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
  mm.set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode, "A scale mode");
  mm.set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode, "B scale mode");
  // cuBLASLt's A is the weights (W^T), its B the activations (A^T).
  mm.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(dsw.p), "A scales");
  mm.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(dsa.p), "B scales");
  const auto times = mm.time(dw.p, da.p, dc.p, repetitions, "nvfp4 at this shape");
  std::vector<__nv_bfloat16> c(static_cast<std::size_t>(m * n));
  check(cudaMemcpy(c.data(), dc.p, c.size() * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost), "copy C");
  // The inputs are exact in e2m1 and the scales are 1: the reference is exact in double.
  const double worst =
      sampled_error(m, n, k, ha, [&](std::int64_t p, std::int64_t j) { return hw[j * k + p]; }, c);
  // Compulsory bytes: half a byte per value, one scale byte per 16 values, bf16 out.
  return gemm_result(m, n, k, "nvfp4", times, (m * k + k * n) * (0.5 + 1.0 / 16) + 2.0 * m * n, worst);
}

template <typename T>
GemmResult gemv(std::int64_t n, std::int64_t k, const char* name, int repetitions) {
  if (k % (16 / sizeof(T)) != 0) throw InvalidArgument("the GEMV kernel needs k to be a multiple of 8");
  std::vector<float> hw, hx;
  const auto w = random_matrix<T>(static_cast<std::size_t>(n * k), 3, &hw);
  const auto x = random_matrix<T>(static_cast<std::size_t>(k), 4, &hx);
  DeviceBuffer<T> dw(w.size()), dx(x.size()), dy(static_cast<std::size_t>(n));
  check(cudaMemcpy(dw.p, w.data(), w.size() * sizeof(T), cudaMemcpyHostToDevice), "copy W");
  check(cudaMemcpy(dx.p, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice), "copy x");
  constexpr int kThreads = 256;
  const int rows_per_block = kThreads / 32;
  const int blocks = static_cast<int>((n + rows_per_block - 1) / rows_per_block);
  Events ev;
  const auto times = ev.time(
      [&] {
        gemv_kernel<T><<<blocks, kThreads>>>(dw.p, dx.p, dy.p, static_cast<int>(n), static_cast<int>(k));
        check(cudaGetLastError(), "gemv kernel");
      },
      repetitions);
  std::vector<T> y(static_cast<std::size_t>(n));
  check(cudaMemcpy(y.data(), dy.p, y.size() * sizeof(T), cudaMemcpyDeviceToHost), "copy y");
  // y = W x is the 1 x n product x^T W^T.
  const double worst =
      sampled_error(1, n, k, hx, [&](std::int64_t p, std::int64_t j) { return hw[j * k + p]; }, y);
  return gemm_result(1, n, k, name, times, sizeof(T) * (n * k + k + n), worst);
}

}  // namespace

DeviceInfo device_info() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    throw Unsupported(std::string("no CUDA device: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "none found"));
  }
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  return {p.name, p.multiProcessorCount, p.major, p.minor, static_cast<double>(p.totalGlobalMem)};
}

GemmResult gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& precision, int repetitions) {
  (void)device_info();
  if (m < 1 || n < 1 || k < 1 || m > 65536 || n > 65536 || k > 65536 || repetitions < 1 || repetitions > 10000) {
    throw InvalidArgument("GPU GEMM: m, n, k must be 1 to 65536");
  }
  if (m == 1 && precision == "fp16") return gemv<__half>(n, k, "fp16", repetitions);
  if (m == 1 && precision == "bf16") return gemv<__nv_bfloat16>(n, k, "bf16", repetitions);
  if (precision == "fp16") return lt_gemm<__half, __half>(m, n, k, CUDA_R_16F, CUDA_R_16F, "fp16", repetitions);
  if (precision == "bf16") return lt_gemm<__nv_bfloat16, __nv_bfloat16>(m, n, k, CUDA_R_16BF, CUDA_R_16BF, "bf16", repetitions);
  if (precision == "fp8") return lt_gemm<__nv_fp8_e4m3, __nv_bfloat16>(m, n, k, CUDA_R_8F_E4M3, CUDA_R_16BF, "fp8", repetitions);
  if (precision == "nvfp4") return lt_gemm_nvfp4(m, n, k, repetitions);
  throw InvalidArgument("GPU GEMM precision '" + precision + "' is not one of fp16, bf16, fp8, nvfp4");
}

BandwidthResult bandwidth(double bytes, int repetitions) {
  (void)device_info();
  if (!(bytes >= 1e6 && bytes <= 64e9)) throw InvalidArgument("bandwidth test size must be 1 MB to 64 GB");
  const std::size_t n = static_cast<std::size_t>(bytes) / sizeof(float4);
  DeviceBuffer<float4> a(n), b(n);
  DeviceBuffer<float> sink(1);
  check(cudaMemset(a.p, 0, n * sizeof(float4)), "cudaMemset");
  Events ev;
  const double moved = 2.0 * static_cast<double>(n * sizeof(float4));
  BandwidthResult r;
  r.bytes = static_cast<double>(n * sizeof(float4));
  r.copy_Bps = moved / median(ev.time([&] { check(cudaMemcpy(b.p, a.p, n * sizeof(float4), cudaMemcpyDeviceToDevice), "memcpy"); }, repetitions));
  const int blocks = device_info().sm_count * 8;
  r.kernel_Bps = moved / median(ev.time([&] { copy_kernel<<<blocks, 512>>>(a.p, b.p, n); }, repetitions));
  r.read_Bps = r.bytes / median(ev.time([&] { read_kernel<<<blocks, 512>>>(a.p, sink.p, n); }, repetitions));
  return r;
}

}  // namespace roofline::cuda
