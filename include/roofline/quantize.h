// Dynamic quantization analysis: statistics per channel and per token,
// outlier detection, SmoothQuant migration, error per format, and the
// cheapest format and granularity that meets an error budget. Reads real
// F32/F16/BF16 tensors from a memory-mapped safetensors file in bounded chunks.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/formats.h"
#include "roofline/numerics.h"

namespace roofline {

struct QuantizeOptions {
  // Smallest acceptable signal-to-quantization-noise ratio. 25 dB sits between
  // what 8-bit formats reach on weights (~30-40 dB, published as lossless) and
  // what 4-bit group formats reach (~18-22 dB, measurably lossy on small models).
  double budget_sqnr_db = 25.0;
  // LLM.int8() (arXiv 2208.07339): a feature of magnitude >= 6.0 is an outlier.
  double magnitude_threshold = 6.0;
  // A channel whose max |x| exceeds this multiple of the tensor's RMS is an
  // outlier. No published threshold exists; formats-and-quality.md derives
  // 10-20; 20 flags fewer false positives on Gaussian-like weights.
  double ratio_threshold = 20.0;
  // Errors are measured on evenly spaced rows up to this many elements
  // (statistics always use every element).
  std::size_t max_sample_elements = 1 << 20;
  // Tensors converted to float this many elements at a time.
  std::size_t chunk_elements = 1 << 22;
  // Per-tensor state is one float per row and per column of the 2-D view; a
  // tensor with more rows or columns than this is refused (InvalidArgument)
  // before anything is allocated. 4M floats = 16 MB; real weights have under 1M.
  std::int64_t max_rows_or_columns = std::int64_t{1} << 22;
  // Outlier channels and tokens listed per tensor; the counts are always complete.
  std::size_t max_listed_outliers = 256;
  // Tensors per file; more is refused (InvalidArgument) before any is analyzed.
  std::size_t max_tensors = 1 << 16;
};

struct FormatError {
  Format format;
  double bits_per_element = 0;  // including outlier channels kept in bf16
  bool outliers_kept = false;   // outlier channels kept in bf16
  numerics::ErrorMetrics error;
};

struct TensorReport {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::int64_t rows = 0, cols = 0;  // 2-D view: [rows x cols], channels are columns
  double max_abs = 0;
  double rms = 0;
  double kurtosis = 0;                         // Pearson (3 for a Gaussian)
  std::vector<std::int64_t> outlier_channels;  // columns flagged (the first max_listed_outliers)
  std::vector<std::int64_t> outlier_tokens;    // rows flagged (activation dumps; the same cap)
  std::int64_t outlier_channel_count = 0;      // every column flagged
  std::int64_t outlier_token_count = 0;        // every row flagged
  double max_channel_ratio = 0;                // largest channel max |x| / tensor RMS
  std::vector<FormatError> errors;             // per candidate format
  std::int64_t sampled_rows = 0;
  // The plan: the cheapest candidate meeting the budget (bf16 when none does).
  FormatError plan{Format::kBf16, 16, false, {}};
  bool meets_budget = false;
  // Activations: a static per-tensor int8 scale against per-token runtime scales.
  double sqnr_static_db = 0;
  double sqnr_per_token_db = 0;
  bool needs_per_token_scales = false;  // static loses more than 3 dB
  std::string skipped;                  // why a tensor was not analyzed (dtype, 1-D)
};

// Analyzes one tensor given as rows x cols floats. Throws InvalidArgument on
// NaN/Inf or a size mismatch.
[[nodiscard]] TensorReport analyze_tensor(std::string name, std::span<const float> data,
                                          std::int64_t rows, std::int64_t cols,
                                          const QuantizeOptions& options = {});

// Streams every tensor of a .safetensors file (memory-mapped; memory bounded
// by the chunk and sample sizes, not the file). `progress` gets (tensors done,
// total). Throws ParseError for bad headers.
[[nodiscard]] std::vector<TensorReport> quantize_checkpoint(
    const std::string& path, const QuantizeOptions& options = {},
    const std::function<void(std::size_t, std::size_t)>& progress = {});

// The same over a safetensors file already in memory (an upload). `release`
// (optional) is told which byte ranges have been consumed.
[[nodiscard]] std::vector<TensorReport> quantize_bytes(
    std::string_view bytes, const std::string& origin, const QuantizeOptions& options = {},
    const std::function<void(std::size_t, std::size_t)>& progress = {},
    const std::function<void(std::size_t, std::size_t)>& release = {});

// SmoothQuant (arXiv 2211.10438, Eq. 4): s_j = max|X_j|^alpha / max|W_j|^(1-alpha)
// per input channel j; returns s. Activations are divided by s and weight
// columns multiplied by it. Channels with zero maxima get s = 1.
[[nodiscard]] std::vector<float> smoothquant_scales(std::span<const float> act_channel_max,
                                                    std::span<const float> weight_channel_max,
                                                    double alpha);

// The candidate formats, cheapest first.
[[nodiscard]] std::span<const Format> quantize_candidates() noexcept;

}  // namespace roofline
