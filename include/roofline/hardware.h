// The hardware registry: devices loaded from JSON data files, each figure with
// its source and confidence. Built-in files are embedded at build time; users
// add or override devices from files or a data directory.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/formats.h"
#include "roofline/units.h"

namespace roofline {

// How a figure is known. kUnknown is only used with a missing (NaN) value.
enum class Confidence { kVendor, kDerived, kMeasured, kUnknown };

[[nodiscard]] std::string_view confidence_name(Confidence c) noexcept;

// A 64-bit FNV-1a hash of an architecture name: cheap equality in hot paths.
[[nodiscard]] constexpr std::uint64_t architecture_key(std::string_view name) noexcept {
  std::uint64_t h = 14695981039346656037ULL;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

// One sourced number. `value` is NaN when the figure is not published.
// Between nodes: one 400 Gb/s NIC per GPU (NVIDIA ConnectX-7 on HGX
// H100/H200/B200 systems), 50 GB/s. A device's NVLink domain is the GPUs of
// one HGX baseboard, 8, unless its file says otherwise (NVL72: 72).
inline constexpr double kNodeLinkBps = 50e9;
inline constexpr std::int64_t kNvlinkDomainGpus = 8;

struct Figure {
  double value = std::nan("");
  Confidence confidence = Confidence::kUnknown;
  std::string source;  // key into Device::sources
  std::string note;    // alternatives, caveats; may be empty

  [[nodiscard]] bool known() const noexcept { return !std::isnan(value); }
};

// Which units compute a format: the tensor (matrix) cores or the vector (SIMT) units.
enum class ComputeUnit { kTensor, kVector };
enum class Accumulate { kFp32, kFp16, kInt32 };

[[nodiscard]] std::string_view compute_unit_name(ComputeUnit u) noexcept;
[[nodiscard]] std::string_view accumulate_name(Accumulate a) noexcept;

// Dense (no 2:4 sparsity) peak rate for one compute format.
struct PeakFigure : Figure {
  ComputeUnit unit = ComputeUnit::kTensor;
  Accumulate accumulate = Accumulate::kFp32;
  // An FP32-accumulate tensor peak's rate with FP16 accumulation, where the
  // part runs that faster (GeForce cards: twice the FP32-accumulate rate);
  // unknown where both run alike. A kernel that accumulates in FP16 (cuBLAS
  // with CUBLAS_COMPUTE_16F) reaches for it.
  Figure fp16_accumulate;
};

struct Device {
  std::string id;                              // canonical id, e.g. "h100-sxm"
  std::string name;                            // marketing name
  std::string vendor;                          // "nvidia", "amd"
  std::string architecture;                    // "hopper", "blackwell-consumer", ...
  std::uint64_t architecture_key = 0;          // architecture_key(architecture), set on load
  std::string compute_capability;              // "sm_90", "gfx942"
  std::vector<std::string> aliases;            // other ids that resolve to this device
  std::map<std::string, std::string> sources;  // key -> citation
  std::string origin;                          // "built-in" or the file it came from

  std::string memory_type;
  Figure memory_capacity_bytes;
  Figure memory_bandwidth_Bps;
  Figure sm_count;  // SMs (NVIDIA) or CUs (AMD)
  Figure l2_bytes;
  Figure shared_memory_per_sm_bytes;  // on-chip SRAM a kernel tiles into (FlashAttention's M)
  Figure boost_clock_hz;
  Figure tdp_w;
  std::string interconnect_name;
  Figure interconnect_bandwidth_Bps;
  Figure nvlink_domain_gpus;  // GPUs one NVLink domain joins (unknown: kNvlinkDomainGpus)
  [[nodiscard]] std::int64_t domain_gpus() const noexcept {
    return nvlink_domain_gpus.known() ? static_cast<std::int64_t>(nvlink_domain_gpus.value)
                                      : kNvlinkDomainGpus;
  }

  // Dense peak per format; engaged only for formats the device computes on.
  // A peak may be engaged but unknown (value NaN): supported, rate unpublished.
  std::array<std::optional<PeakFigure>, kFormatCount> peaks;

  // Realistic-mode figures.
  Figure bandwidth_fraction;  // achievable / datasheet bandwidth
  Figure matmul_fraction_default;
  std::array<std::optional<Figure>, kFormatCount> matmul_fraction;  // per format, when measured
  Figure launch_overhead_s;                                         // fixed cost per kernel

  // A CPU profile (from `roofline calibrate`): no SM waves or tensor-core tiles.
  [[nodiscard]] bool is_cpu() const noexcept {
    return architecture_key == roofline::architecture_key("cpu");
  }
  // True when the tensor (or vector) units compute on `f` natively.
  [[nodiscard]] bool computes(Format f) const noexcept {
    return peaks[format_index(f)].has_value();
  }
  // Dense peak in FLOP/s for `f`; NaN when unsupported or unpublished.
  [[nodiscard]] FlopsPerSecond peak(Format f) const noexcept {
    const auto& p = peaks[format_index(f)];
    return p ? p->value : std::nan("");
  }
  // The tensor rate for `f` with FP16 accumulation: the peak's fp16_accumulate
  // figure where the device gives one, else its dense peak (NaN: unsupported).
  [[nodiscard]] FlopsPerSecond peak_fp16_accumulate(Format f) const noexcept {
    const auto& p = peaks[format_index(f)];
    if (!p) return std::nan("");
    return p->fp16_accumulate.known() ? p->fp16_accumulate.value : p->value;
  }
  // The measured matmul fraction for `f`, or the device default.
  [[nodiscard]] const Figure& matmul_fraction_for(Format f) const noexcept {
    const auto& m = matmul_fraction[format_index(f)];
    return m ? *m : matmul_fraction_default;
  }
  // Citation text for a figure's source key ("" if missing).
  [[nodiscard]] std::string citation(const Figure& f) const;
};

// Parses and validates one device document. `origin` names the file in errors.
// Throws ParseError naming the origin and the offending key: unknown or missing
// keys, wrong types, negative or non-finite numbers, unknown source keys,
// formats that are not in the format table.
[[nodiscard]] Device parse_device(std::string_view json_text, const std::string& origin);

// A set of devices with id and alias lookup. Loading later devices with an id
// already present replaces the earlier one (user overrides).
class Registry {
 public:
  // The devices embedded at build time.
  [[nodiscard]] static Registry built_in();

  // Built-in devices, then every *.json in $ROOFLINE_DATA_DIR/hardware (if the
  // variable is set), then each of `extra_files` in order.
  [[nodiscard]] static Registry load(const std::vector<std::string>& extra_files);

  // Adds or replaces a device. Throws InvalidArgument if one of its aliases
  // already names a different device.
  void add(Device device);

  // Reads a device file from disk and adds it. Throws ParseError.
  void add_file(const std::string& path);

  // Looks up an id or alias, case-insensitive. Throws NotFound listing ids.
  [[nodiscard]] const Device& get(std::string_view id_or_alias) const;
  [[nodiscard]] const Device* find(std::string_view id_or_alias) const noexcept;

  [[nodiscard]] const std::vector<Device>& devices() const noexcept { return devices_; }

  // FNV-1a over the text of every loaded device document, hex: stamps results.
  [[nodiscard]] const std::string& data_hash() const noexcept { return data_hash_; }

 private:
  void add_text(std::string_view text, const std::string& origin);

  std::vector<Device> devices_;
  std::map<std::string, std::size_t> index_;  // lower-case id/alias -> devices_ index
  std::uint64_t hash_state_ = 14695981039346656037ULL;
  std::string data_hash_;
};

// Name of the environment variable pointing at an extra data directory.
inline constexpr const char* kDataDirEnv = "ROOFLINE_DATA_DIR";

}  // namespace roofline
