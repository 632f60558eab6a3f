#include "roofline/roofline.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "roofline/error.h"

namespace roofline {
namespace {

// Formats that Blackwell's kind::f8f6f4 / mxf8f6f4 MMAs take as mixed operands
// without converting one to the other (CUTLASS Blackwell functionality doc).
bool in_f8f6f4_family(Format f) noexcept {
  switch (f) {
    case Format::kFp8:
    case Format::kFp8E5M2:
    case Format::kMxfp8:
    case Format::kFp6:
    case Format::kMxfp6:
    case Format::kMxfp4:
    case Format::kNvfp4:
      return true;
    default:
      return false;
  }
}

double ceil_div(double a, double b) noexcept { return std::ceil(a / b); }

void check_dimension(std::string_view name, std::int64_t v) {
  if (v < 1 || v > kMaxGemmDimension) {
    throw InvalidArgument("gemm " + std::string(name) + " = " + std::to_string(v) +
                          " is out of range (1 to " + std::to_string(kMaxGemmDimension) + ")");
  }
}

}  // namespace

GemmTiling gemm_tiling(double m, double n, const ModelOptions& opt) noexcept {
  // The smallest power of two >= m, clamped to [min_tile_m, tile_m].
  const double m_pow2 =
      m >= opt.tile_m
          ? opt.tile_m
          : static_cast<double>(std::bit_ceil(static_cast<std::uint64_t>(std::ceil(m))));
  const double tile_m = std::clamp(m_pow2, static_cast<double>(std::max(opt.min_tile_m, 1)),
                                   static_cast<double>(opt.tile_m));
  const double m_tiles = ceil_div(m, tile_m);
  const double n_tiles = ceil_div(n, opt.tile_n);
  return {m_tiles * n_tiles, (m / (m_tiles * tile_m)) * (n / (n_tiles * opt.tile_n)), m_tiles};
}

double wave_efficiency(double tiles, double tile_fill, double k_depth, double sms,
                       const ModelOptions& opt) noexcept {
  if (tiles <= 0 || sms <= 0) return 1.0;
  if (tiles < sms) {
    // Skinny shapes split k across thread blocks (split-K / stream-K) to
    // occupy every SM, down to opt.min_split_k_depth of k per block. The
    // split tiles still fit in one wave.
    const double max_split = std::max(1.0, std::floor(k_depth / opt.min_split_k_depth));
    return tiles * std::min(std::floor(sms / tiles), max_split) / sms * tile_fill;
  }
  // Full waves and the last, partly filled one (one division: a hot path).
  const double in_waves = tiles / sms;
  return in_waves / std::ceil(in_waves) * tile_fill;
}

std::string_view mode_name(Mode m) noexcept { return m == Mode::kIdeal ? "ideal" : "realistic"; }
std::string_view bound_name(Bound b) noexcept { return b == Bound::kMemory ? "memory" : "compute"; }

void validate(const GemmProblem& p) {
  check_dimension("m", p.m);
  check_dimension("n", p.n);
  check_dimension("k", p.k);
}

ComputePlan plan_compute(const Device& device, Format weights, Format act) {
  if (!format_info(act).compute_format) {
    throw InvalidArgument("activation format " + std::string(format_id(act)) +
                          " is a storage-only format; activations need a compute format");
  }
  if (!device.computes(act)) {
    throw Unsupported(device.id + " cannot compute in " + std::string(format_id(act)) +
                      " (its tensor cores take: " +
                      [&] {
                        std::string s;
                        for (const auto& info : all_formats())
                          if (device.computes(info.format))
                            s += (s.empty() ? "" : ", ") + std::string(info.id);
                        return s;
                      }() +
                      ")");
  }
  ComputePlan plan{act, false};
  if (weights == act) return plan;
  if (in_f8f6f4_family(weights) && in_f8f6f4_family(act) && device.computes(weights)) {
    // Mixed operands run natively at the slower operand's rate.
    if (device.peak(weights) < device.peak(act)) plan.format = weights;
    return plan;
  }
  plan.weight_only = true;
  return plan;
}

RooflineResult predict_gemm(const Device& device, const GemmProblem& p, const ModelOptions& opt) {
  validate(p);
  const ComputePlan plan = plan_compute(device, p.weights, p.act);
  const FlopsPerSecond peak = device.peak(plan.format);
  if (std::isnan(peak)) {
    throw Unsupported(device.id + ": the " + std::string(format_id(plan.format)) +
                      " peak is not published; give it in a --hardware-file to predict");
  }
  const double m = static_cast<double>(p.m);
  const double n = static_cast<double>(p.n);
  const double k = static_cast<double>(p.k);

  RooflineResult r;
  r.mode = opt.mode;
  r.compute_format = plan.format;
  r.weight_only = plan.weight_only;
  r.output_format = held_activation_format(p.act);
  r.flops = 2.0 * m * n * k;
  r.bytes_read = bytes_for(p.weights, k * n) + bytes_for(p.act, m * k);
  r.bytes_written = bytes_for(r.output_format, m * n);
  r.bytes = r.bytes_read + r.bytes_written;
  r.ai = r.flops / r.bytes;
  r.peak_flops_per_s = peak;
  r.peak_bandwidth_Bps = device.memory_bandwidth_Bps.value;

  // Each thread block along m re-dequantizes the weights it loads.
  const GemmTiling tiling = gemm_tiling(m, n, opt);
  if (opt.mode == Mode::kRealistic) {
    r.matmul_fraction = device.matmul_fraction_for(plan.format).value;
    r.bandwidth_fraction = device.bandwidth_fraction.value;
    if (!device.is_cpu())
      r.wave_efficiency = wave_efficiency(tiling.tiles, tiling.fill, k, device.sm_count.value, opt);
    r.overhead_s = device.launch_overhead_s.value;
  }
  r.effective_flops_per_s = peak * r.matmul_fraction * r.wave_efficiency;
  r.effective_bandwidth_Bps = r.peak_bandwidth_Bps * r.bandwidth_fraction;

  r.compute_time_s = r.flops / r.effective_flops_per_s;
  if (plan.weight_only) {
    r.dequant_ops = k * n * tiling.m_tiles * opt.dequant_ops_per_element;
    r.compute_time_s += r.dequant_ops / device.peak(Format::kFp32);
  }
  r.memory_time_s = r.bytes / r.effective_bandwidth_Bps;
  r.bound = r.memory_time_s >= r.compute_time_s ? Bound::kMemory : Bound::kCompute;
  if (opt.mode == Mode::kRealistic && device.is_cpu() && p.m > 1) {
    // GotoBLAS-style CPU GEMMs alternate a memory-bound phase (stream a panel of
    // weights and pack it) and a compute-bound one (multiply the packed panel
    // out of cache) on the same cores, one after the other: the two sides add.
    r.packing_time_s = 2.0 * bytes_for(p.weights, k * n) / r.effective_bandwidth_Bps;
    r.time_s = r.memory_time_s + r.compute_time_s + r.packing_time_s + r.overhead_s;
  } else {
    r.time_s = std::max(r.memory_time_s, r.compute_time_s) + r.overhead_s;
  }
  // The device's ridge (without this shape's wave quantization).
  r.ridge_ai = peak * r.matmul_fraction / r.effective_bandwidth_Bps;
  r.attained_flops_per_s = r.flops / r.time_s;
  r.attained_bandwidth_Bps = r.bytes / r.time_s;
  return r;
}

}  // namespace roofline
