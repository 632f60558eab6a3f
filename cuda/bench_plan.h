// The host-side arithmetic of the CUDA benchmarks: what to run, how big the L2
// flush is, how the GEMV kernel is launched, how inputs are generated and
// results checked, and how a result line is written. No CUDA here, so that the
// tests check every piece of it on a machine without a GPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#if defined(__CUDACC__)
#define ROOFLINE_HD __host__ __device__
#else
#define ROOFLINE_HD
#endif

namespace roofline::gpu {

// ---------------------------------------------------------------- L2 flush

// The L2 is flushed before every timed repetition by writing a buffer this
// large: twice the L2 (H100/H200: 50-60 MB, B200: 126 MB), so that no line of
// the operands survives whatever the replacement policy, and never below
// 64 MiB (an L2 size the driver does not report counts as 128 MiB).
inline std::size_t l2_flush_bytes(std::size_t l2_bytes) {
  constexpr std::size_t kMin = std::size_t{64} << 20;
  constexpr std::size_t kUnknownL2 = std::size_t{128} << 20;
  const std::size_t l2 = l2_bytes == 0 ? kUnknownL2 : l2_bytes;
  const std::size_t bytes = std::max(2 * l2, kMin);
  return (bytes + 255) / 256 * 256;  // whole 16-byte vectors for every thread
}

// ---------------------------------------------------------------- GEMV launch

// y[n] = W[n][k] x[k] with 256-thread blocks (8 warps). Each output row gets
// `warps_per_row` warps that split k between them, so that a short matrix
// (n = 1024 on 132 SMs) still has enough warps loading to saturate HBM; each
// lane keeps kGemvUnroll independent 16-byte loads in flight.
inline constexpr int kGemvThreads = 256;
inline constexpr int kGemvWarps = kGemvThreads / 32;
inline constexpr int kGemvUnroll = 4;
// Resident warps per SM wanted for bandwidth: Little's law at ~5 TB/s and
// ~600 ns of DRAM latency needs ~3 MB in flight, ~23 KB per SM on 132 SMs:
// 12 warps x 32 lanes x 4 loads x 16 B = 24 KB. 16 leaves a margin.
inline constexpr int kGemvMinWarpsPerSm = 16;

struct GemvLaunch {
  int warps_per_row = 1;  // 1, 2, 4 or 8
  int rows_per_block = 8;
  std::int64_t blocks = 0;
};

inline GemvLaunch plan_gemv(std::int64_t n, std::int64_t k, int element_bytes, int sm_count) {
  const std::int64_t vectors = k * element_bytes / 16;  // 16-byte vectors per row
  GemvLaunch p;
  for (int s = 1; s <= kGemvWarps; s *= 2) {
    p.warps_per_row = s;
    // Stop when there are enough warps, or when a further split would leave a
    // warp less than one vector per lane.
    if (n * s >= static_cast<std::int64_t>(kGemvMinWarpsPerSm) * sm_count) break;
    if (vectors / (2 * s) < 32) break;
  }
  p.rows_per_block = kGemvWarps / p.warps_per_row;
  p.blocks = (n + p.rows_per_block - 1) / p.rows_per_block;
  return p;
}

// ---------------------------------------------------------------- inputs

// Inputs are generated on the GPU from a hash of (seed, index), and the host
// recomputes any element the same way, so the reference needs no copy of the
// operands. fp16, bf16 and fp8 e4m3 take the 15 values j/8 for j in -7..7, each
// exact in all three formats; their products are multiples of 1/64 and sums
// of up to 2^17 of them are exact in fp32, so a correct GEMM differs from the
// reference only by the rounding of its output.
ROOFLINE_HD inline std::uint32_t mix(std::uint32_t seed, std::uint64_t index) {
  std::uint64_t x = index * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull + 1;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return static_cast<std::uint32_t>(x >> 16);
}
ROOFLINE_HD inline float eighths_value(std::uint32_t seed, std::uint64_t index) {
  return static_cast<float>(static_cast<int>(mix(seed, index) % 15) - 7) * 0.125f;
}
// nvfp4 (e2m1) operands: a random 4-bit code per element, two per byte, the
// element with the even index in the low nibble.
ROOFLINE_HD inline std::uint8_t e2m1_code(std::uint32_t seed, std::uint64_t index) {
  return static_cast<std::uint8_t>(mix(seed, index) & 0xF);
}
inline float e2m1_value(std::uint8_t code) {
  static constexpr float kMagnitude[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};  // OCP MX
  return (code & 8 ? -1.f : 1.f) * kMagnitude[code & 7];
}

inline constexpr std::uint32_t kSeedA = 1, kSeedW = 2;

// ---------------------------------------------------------------- check

// Sampled output entries compared against the host reference.
inline constexpr int kCheckSamples = 256;

// (i, j) of sample s of an m x n result: strides coprime with any tile size,
// so that the samples land in many tiles and both halves of every dimension.
struct SampleIndex {
  std::int64_t i, j;
};
inline SampleIndex sample_index(int s, std::int64_t m, std::int64_t n) {
  return {(static_cast<std::int64_t>(s) * 7919 + s / 3) % m,
          (static_cast<std::int64_t>(s) * 104729 + 17 * s) % n};
}

// Largest accepted normwise error ||got - ref|| / ||ref|| over the samples.
// With the exact inputs above it measures the rounding of the output alone:
// at most the unit roundoff u per entry (fp16 2^-11, bf16 2^-8) and about
// u / sqrt(3) over many. fp16 outputs are allowed 2u, which a bf16-rounded
// result (~2^-9) already fails; bf16 outputs 4u, room for fp8's
// reduced-precision fast accumulation. A zero output scores 1, a result
// summed over half of k about 0.7, a transposed one about 1.4.
inline double output_tolerance(std::string_view output_format) {
  return output_format == "fp16" ? 2 * 0x1p-11 : 4 * 0x1p-8;
}

struct CheckResult {
  double rel_error = 0;  // NaN when any sampled output is not finite
  double tolerance = 0;
  bool passed = false;
};

inline CheckResult check_samples(const std::vector<double>& reference,
                                 const std::vector<double>& got, double tolerance) {
  CheckResult c;
  c.tolerance = tolerance;
  double diff = 0, norm = 0;
  bool finite = reference.size() == got.size() && !got.empty();
  for (std::size_t s = 0; finite && s < got.size(); ++s) {
    if (!std::isfinite(got[s])) finite = false;
    diff += (got[s] - reference[s]) * (got[s] - reference[s]);
    norm += reference[s] * reference[s];
  }
  if (!finite || norm == 0) {
    c.rel_error = std::nan("");
    return c;  // an unwritten (NaN-filled) output, or nothing to compare: fails
  }
  c.rel_error = std::sqrt(diff / norm);
  c.passed = c.rel_error <= tolerance;
  return c;
}

// ---------------------------------------------------------------- cases

struct Shape {
  std::int64_t m, n, k;
  const char* label;
};

// Weight matrices [n][k] of real layers: the GEMV cases (m = 1) and the GEMM
// families (every m in gemm_token_counts()).
inline std::vector<Shape> gemv_shapes() {
  return {{1, 1024, 4096, "Llama-3-8B k/v proj (8 MB fp16)"},
          {1, 3584, 3584, "Qwen2.5-7B q/o proj (24.5 MB)"},
          {1, 4096, 4096, "Llama-3-8B q/o proj (32 MB)"},
          {1, 14336, 4096, "Llama-3-8B gate/up (112 MB)"},
          {1, 4096, 14336, "Llama-3-8B down (112 MB)"},
          {1, 8192, 8192, "Llama-3-70B q/o proj (128 MB)"}};
}
inline std::vector<Shape> gemm_weight_shapes() {
  return {{0, 6144, 4096, "Llama-3-8B qkv"},      {0, 4096, 4096, "Llama-3-8B o proj"},
          {0, 28672, 4096, "Llama-3-8B gate+up"}, {0, 4096, 14336, "Llama-3-8B down"},
          {0, 10240, 8192, "Llama-3-70B qkv"},    {0, 57344, 8192, "Llama-3-70B gate+up"},
          {0, 8192, 28672, "Llama-3-70B down"}};
}
inline std::vector<std::int64_t> gemm_token_counts() {
  return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
}

// ---------------------------------------------------------------- output

// Percentile p in [0, 1] of `v` by linear interpolation between order
// statistics (the median is 0.5).
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// One JSON object on one line, built key by key: the backend's only output
// format, so it needs no JSON library. Numbers that are not finite are written
// as null (a NaN check error stays parseable), strings are escaped.
class JsonLine {
 public:
  JsonLine& add(std::string_view key, std::string_view value) {
    start(key);
    out_ += '"';
    for (const char ch : value) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += ch;
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out_ += buf;
      } else {
        out_ += ch;
      }
    }
    out_ += '"';
    return *this;
  }
  JsonLine& add(std::string_view key, const char* value) {
    return add(key, std::string_view(value));
  }
  JsonLine& add(std::string_view key, double value) {
    start(key);
    if (!std::isfinite(value)) {
      out_ += "null";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", value);
      out_ += buf;
    }
    return *this;
  }
  JsonLine& add(std::string_view key, std::int64_t value) {
    start(key);
    out_ += std::to_string(value);
    return *this;
  }
  JsonLine& add(std::string_view key, int value) {
    return add(key, static_cast<std::int64_t>(value));
  }
  JsonLine& add(std::string_view key, bool value) {
    start(key);
    out_ += value ? "true" : "false";
    return *this;
  }
  [[nodiscard]] std::string str() const { return out_ + "}"; }

 private:
  void start(std::string_view key) {
    out_ += out_.size() == 1 ? "\"" : ",\"";
    out_ += key;  // keys are this program's own identifiers
    out_ += "\":";
  }
  std::string out_ = "{";
};

}  // namespace roofline::gpu
