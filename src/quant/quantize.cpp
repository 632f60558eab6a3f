#include "roofline/quantize.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "roofline/checkpoint.h"
#include "roofline/deadline.h"
#include "roofline/error.h"

namespace roofline {
namespace {

constexpr Format kCandidates[] = {Format::kInt4,  Format::kMxfp4, Format::kNvfp4, Format::kQ4_0,
                                  Format::kFp6,   Format::kMxfp6, Format::kFp8,   Format::kInt8,
                                  Format::kMxfp8, Format::kQ8_0,  Format::kBf16};

// Running moments of one channel (or of the whole tensor).
struct Moments {
  double n = 0, sum = 0, sum2 = 0, sum3 = 0, sum4 = 0, max_abs = 0;
  void add(double x) {
    const double x2 = x * x;
    n += 1;
    sum += x;
    sum2 += x2;
    sum3 += x2 * x;
    sum4 += x2 * x2;
    max_abs = std::max(max_abs, std::fabs(x));
  }
  double rms() const { return n > 0 ? std::sqrt(sum2 / n) : 0; }
  // Pearson kurtosis from raw moments, centered.
  double kurtosis() const {
    if (n < 2) return 0;
    const double m = sum / n;
    const double var = sum2 / n - m * m;
    if (var <= 0) return 0;
    const double m4 = sum4 / n - 4 * m * sum3 / n + 6 * m * m * sum2 / n - 3 * m * m * m * m;
    return m4 / (var * var);
  }
};

// Streaming statistics over rows of a [rows x cols] tensor: moments of the
// whole tensor and the largest magnitude of each column and each row (one
// float each: the only per-channel figure the report uses).
struct Stats {
  Moments all;
  std::vector<float> column_max;
  std::vector<float> row_max;
  Stats(std::int64_t rows, std::int64_t cols) : column_max(static_cast<std::size_t>(cols), 0.0f) {
    row_max.reserve(static_cast<std::size_t>(rows));
  }
  void add_rows(const float* data, std::int64_t rows, std::int64_t cols) {
    for (std::int64_t r = 0; r < rows; ++r) {
      float rmax = 0;
      for (std::int64_t c = 0; c < cols; ++c) {
        const float x = data[r * cols + c];
        if (!std::isfinite(x))
          throw InvalidArgument("tensor holds a non-finite value (NaN or Inf)");
        all.add(x);
        const float a = std::fabs(x);
        float& m = column_max[static_cast<std::size_t>(c)];
        m = std::max(m, a);
        rmax = std::max(rmax, a);
      }
      row_max.push_back(rmax);
    }
  }
};

// Refuses a 2-D view whose per-row or per-column state would pass the budget.
void check_state(const std::string& name, std::int64_t rows, std::int64_t cols,
                 const QuantizeOptions& o) {
  if (rows > o.max_rows_or_columns || cols > o.max_rows_or_columns) {
    throw InvalidArgument(
        "tensor '" + clip_utf8(name, 80) + "': its 2-D view [" + std::to_string(rows) + " x " +
        std::to_string(cols) + "] has more rows or columns than the " +
        std::to_string(o.max_rows_or_columns) + " the analysis keeps statistics for");
  }
}

double sqnr_of(const numerics::ErrorMetrics& e) { return e.sqnr_db; }

void finish_report(TensorReport& t, const Stats& s, const std::vector<float>& sample,
                   std::int64_t sample_rows, const QuantizeOptions& o) {
  t.max_abs = s.all.max_abs;
  t.rms = s.all.rms();
  t.kurtosis = s.all.kurtosis();
  t.sampled_rows = sample_rows;
  auto outlier = [&](double m) {
    return m >= o.magnitude_threshold || (t.rms > 0 && m / t.rms > o.ratio_threshold);
  };
  for (std::size_t c = 0; c < s.column_max.size(); ++c) {
    const double m = s.column_max[c];
    t.max_channel_ratio = std::max(t.max_channel_ratio, t.rms > 0 ? m / t.rms : 0);
    if (!outlier(m)) continue;
    if (t.outlier_channels.size() < o.max_listed_outliers)
      t.outlier_channels.push_back(static_cast<std::int64_t>(c));
    ++t.outlier_channel_count;
  }
  for (std::size_t r = 0; r < s.row_max.size(); ++r) {
    if (!outlier(s.row_max[r])) continue;
    if (t.outlier_tokens.size() < o.max_listed_outliers)
      t.outlier_tokens.push_back(static_cast<std::int64_t>(r));
    ++t.outlier_token_count;
  }
  // Error per candidate on the sample, plainly and with outlier channels kept in bf16.
  const std::size_t rows = static_cast<std::size_t>(sample_rows),
                    cols = static_cast<std::size_t>(t.cols);
  std::vector<float> back(sample.size()), inliers(sample);
  const double outlier_fraction =
      static_cast<double>(t.outlier_channel_count) / static_cast<double>(t.cols);
  std::vector<std::size_t> outlier_columns;  // every flagged column (at most cols)
  if (t.outlier_channel_count > 0) {
    for (std::size_t c = 0; c < s.column_max.size(); ++c) {
      if (outlier(s.column_max[c])) outlier_columns.push_back(c);
    }
  }
  for (std::size_t c : outlier_columns) {
    for (std::size_t r = 0; r < rows; ++r) inliers[r * cols + c] = 0;
  }
  for (Format f : kCandidates) {
    FormatError plain{f, bits_per_element(f), false, {}};
    numerics::round_trip(f, sample, rows, cols, back);
    plain.error = numerics::compare(sample, back);
    t.errors.push_back(plain);
    if (!outlier_columns.empty() && f != Format::kBf16) {
      FormatError kept{
          f, bits_per_element(f) * (1 - outlier_fraction) + 16 * outlier_fraction, true, {}};
      numerics::round_trip(f, inliers, rows, cols, back);
      for (std::size_t c : outlier_columns) {  // outliers restored from bf16
        for (std::size_t r = 0; r < rows; ++r) {
          const std::size_t i = r * cols + c;
          back[i] = numerics::bf16_to_float(numerics::float_to_bf16(sample[i]));
        }
      }
      kept.error = numerics::compare(sample, back);
      t.errors.push_back(kept);
    }
  }
  // The cheapest candidate that meets the budget.
  const FormatError* best = nullptr;
  for (const auto& e : t.errors) {
    if (sqnr_of(e.error) < o.budget_sqnr_db) continue;
    if (!best || e.bits_per_element < best->bits_per_element - 1e-9 ||
        (std::fabs(e.bits_per_element - best->bits_per_element) < 1e-9 &&
         e.error.sqnr_db > best->error.sqnr_db)) {
      best = &e;
    }
  }
  t.meets_budget = best != nullptr;
  t.plan = best ? *best : t.errors.back();
  // Static per-tensor against per-token int8 scales (activations).
  numerics::Int8Tensor st =
      numerics::quantize_int8(sample, rows, cols, numerics::Int8Granularity::kPerTensor);
  numerics::dequantize(st, back);
  t.sqnr_static_db = numerics::compare(sample, back).sqnr_db;
  numerics::Int8Tensor pt =
      numerics::quantize_int8(sample, rows, cols, numerics::Int8Granularity::kPerToken);
  numerics::dequantize(pt, back);
  t.sqnr_per_token_db = numerics::compare(sample, back).sqnr_db;
  t.needs_per_token_scales = t.sqnr_per_token_db - t.sqnr_static_db > 3.0;
}

// Every `stride`-th row goes into the error sample.
std::int64_t sample_stride(std::int64_t rows, std::int64_t cols, std::size_t max_elements) {
  const std::int64_t max_rows = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(max_elements) / std::max<std::int64_t>(cols, 1));
  return std::max<std::int64_t>(1, (rows + max_rows - 1) / max_rows);
}

class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw ParseError(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw ParseError(path + ": not a regular file");
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (data_ == MAP_FAILED) {
        ::close(fd_);
        throw ParseError(path + ": cannot map: " + std::strerror(errno));
      }
      ::madvise(data_, size_, MADV_SEQUENTIAL);
    }
  }
  ~MappedFile() {
    if (data_ && data_ != MAP_FAILED) ::munmap(data_, size_);
    if (fd_ >= 0) ::close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const unsigned char* data() const { return static_cast<const unsigned char*>(data_); }
  std::size_t size() const { return size_; }
  // Drops pages already read so resident memory stays bounded on huge files.
  void release(std::size_t begin, std::size_t end) const {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    begin = begin / page * page;
    if (end > begin)
      ::madvise(data_ != nullptr ? static_cast<char*>(data_) + begin : nullptr, end - begin,
                MADV_DONTNEED);
  }

 private:
  int fd_ = -1;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

float load_element(const unsigned char* p, const std::string& dtype) {
  if (dtype == "F32") {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return dtype == "F16" ? numerics::half_to_float(h) : numerics::bf16_to_float(h);
}

}  // namespace

std::span<const Format> quantize_candidates() noexcept { return kCandidates; }

TensorReport analyze_tensor(std::string name, std::span<const float> data, std::int64_t rows,
                            std::int64_t cols, const QuantizeOptions& o) {
  if (rows < 1 || cols < 1 ||
      static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) != data.size()) {
    throw InvalidArgument("tensor '" + name + "': shape does not match its data");
  }
  TensorReport t;
  t.name = std::move(name);
  t.dtype = "F32";
  t.shape = {rows, cols};
  t.rows = rows;
  t.cols = cols;
  check_state(t.name, rows, cols, o);
  Stats s(rows, cols);
  s.add_rows(data.data(), rows, cols);
  const std::int64_t stride = sample_stride(rows, cols, o.max_sample_elements);
  std::vector<float> sample;
  std::int64_t sample_rows = 0;
  for (std::int64_t r = 0; r < rows; r += stride, ++sample_rows) {
    sample.insert(sample.end(), data.begin() + r * cols, data.begin() + (r + 1) * cols);
  }
  finish_report(t, s, sample, sample_rows, o);
  return t;
}

std::vector<TensorReport> quantize_checkpoint(
    const std::string& path, const QuantizeOptions& o,
    const std::function<void(std::size_t, std::size_t)>& progress) {
  const MappedFile file(path);
  return quantize_bytes(std::string_view(reinterpret_cast<const char*>(file.data()), file.size()),
                        path, o, progress,
                        [&](std::size_t begin, std::size_t end) { file.release(begin, end); });
}

std::vector<TensorReport> quantize_bytes(
    std::string_view bytes, const std::string& path, const QuantizeOptions& o,
    const std::function<void(std::size_t, std::size_t)>& progress,
    const std::function<void(std::size_t, std::size_t)>& release) {
  if (!(o.budget_sqnr_db > -1000 && o.budget_sqnr_db < 1000))
    throw InvalidArgument("SQNR budget must be a finite number of dB");
  struct View {
    const unsigned char* p;
    std::size_t n;
    const unsigned char* data() const { return p; }
    std::size_t size() const { return n; }
  } file{reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()};
  const std::vector<TensorInfo> tensors = parse_safetensors(
      std::string_view(reinterpret_cast<const char*>(file.data()), file.size()), path);
  if (tensors.size() > o.max_tensors) {
    throw InvalidArgument(path + ": " + std::to_string(tensors.size()) +
                          " tensors is more than the " + std::to_string(o.max_tensors) +
                          " analyzed per file");
  }
  std::uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | file.data()[i];
  const std::size_t data_start = 8 + static_cast<std::size_t>(header);

  std::vector<TensorReport> reports;
  std::size_t done = 0;
  for (const TensorInfo& info : tensors) {
    TensorReport t;
    t.name = info.name;
    t.dtype = info.dtype;
    t.shape = info.shape;
    const bool floating = info.dtype == "F32" || info.dtype == "F16" || info.dtype == "BF16";
    if (!floating) {
      t.skipped = "dtype " + info.dtype + " is not a floating-point tensor";
    } else if (info.shape.size() < 2) {
      t.skipped = "1-D tensors (norms, biases) stay in 16 bits";
    } else if (info.bytes == 0) {
      t.skipped = "empty tensor";
    } else {
      // The elements fit the data (parse_safetensors checked), so the product does not overflow.
      t.cols = info.shape.back();
      t.rows = 1;
      for (std::size_t i = 0; i + 1 < info.shape.size(); ++i) t.rows *= info.shape[i];
    }
    if (t.skipped.empty() && (t.rows < 1 || t.cols < 1)) t.skipped = "empty tensor";
    if (t.skipped.empty()) {
      try {
        check_state(info.name, t.rows, t.cols, o);
      } catch (const InvalidArgument& e) {
        throw InvalidArgument(path + ": " + e.what());
      }
      const std::size_t elem = info.dtype == "F32" ? 4 : 2;
      const std::size_t begin = data_start + static_cast<std::size_t>(info.data_begin);
      const unsigned char* base = file.data() + begin;
      Stats s(t.rows, t.cols);
      const std::int64_t stride = sample_stride(t.rows, t.cols, o.max_sample_elements);
      const std::int64_t rows_per_chunk =
          std::max<std::int64_t>(1, static_cast<std::int64_t>(o.chunk_elements) / t.cols);
      std::vector<float> chunk;
      std::vector<float> sample;
      std::int64_t sample_rows = 0;
      for (std::int64_t r0 = 0; r0 < t.rows; r0 += rows_per_chunk) {
        check_deadline("the quantization analysis");
        const std::int64_t n = std::min(rows_per_chunk, t.rows - r0);
        chunk.resize(static_cast<std::size_t>(n * t.cols));
        const unsigned char* p = base + static_cast<std::size_t>(r0 * t.cols) * elem;
        for (std::size_t i = 0; i < chunk.size(); ++i)
          chunk[i] = load_element(p + i * elem, info.dtype);
        try {
          s.add_rows(chunk.data(), n, t.cols);
        } catch (const InvalidArgument& e) {
          throw InvalidArgument(path + ": tensor '" + info.name + "': " + e.what());
        }
        for (std::int64_t r = r0; r < r0 + n; ++r) {
          if (r % stride != 0) continue;
          sample.insert(sample.end(), chunk.begin() + (r - r0) * t.cols,
                        chunk.begin() + (r - r0 + 1) * t.cols);
          ++sample_rows;
        }
        if (release) {
          release(begin + static_cast<std::size_t>(r0 * t.cols) * elem,
                  begin + static_cast<std::size_t>((r0 + n) * t.cols) * elem);
        }
      }
      finish_report(t, s, sample, sample_rows, o);
    }
    reports.push_back(std::move(t));
    if (progress) progress(++done, tensors.size());
  }
  return reports;
}

std::vector<float> smoothquant_scales(std::span<const float> act_max,
                                      std::span<const float> weight_max, double alpha) {
  if (act_max.size() != weight_max.size())
    throw InvalidArgument("SmoothQuant: activation and weight channel counts differ");
  if (!(alpha >= 0 && alpha <= 1)) throw InvalidArgument("SmoothQuant alpha must be in [0, 1]");
  std::vector<float> s(act_max.size());
  for (std::size_t j = 0; j < s.size(); ++j) {
    const double a = std::fabs(act_max[j]), w = std::fabs(weight_max[j]);
    if (!std::isfinite(a) || !std::isfinite(w))
      throw InvalidArgument("SmoothQuant: non-finite channel maximum");
    s[j] =
        (a > 0 && w > 0) ? static_cast<float>(std::pow(a, alpha) / std::pow(w, 1 - alpha)) : 1.0f;
  }
  return s;
}

}  // namespace roofline
