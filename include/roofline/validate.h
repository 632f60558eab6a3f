// Predictions against published measurements (data/validation).
#pragma once

#include <string>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/predict.h"

namespace roofline {

// One published measurement and its configuration.
struct ValidationCase {
  std::string id;
  std::string hardware;
  std::string model;
  std::string framework;
  std::string weights;  // format id; the model's native format means "as shipped"
  std::string act;
  std::string kv;
  std::int64_t batch = 1;
  std::int64_t prompt = 0;  // 0: not stated
  std::int64_t gen = 0;     // 0: not stated or not generated
  std::string metric;       // decode_tokens_per_s, decode_total_tokens_per_s,
                            // prefill_tokens_per_s, ttft_s, e2e_s, output_tokens_per_s
  double value = 0;
  std::string source;  // citation text
  std::string note;
};

struct ValidationRow {
  ValidationCase c;
  std::string engine;  // the engine it was predicted with ("roofline": the reference)
  double predicted = 0;
  double error_pct = 0;  // (predicted - measured) / measured x 100
  std::string error;     // non-empty when the case could not be predicted
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  double median_abs_error_pct = 0;
  double mean_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  double median_signed_error_pct = 0;
  int evaluated = 0;
};

// Loads and validates a measurement file (schema in data/validation/published.json).
// Throws ParseError naming the file and key.
[[nodiscard]] std::vector<ValidationCase> parse_validation(std::string_view json_text,
                                                           const std::string& origin);
// The embedded measurements.
[[nodiscard]] std::vector<ValidationCase> built_in_validation();
// A validation file: a regular file of at most 16 MB (checked before reading),
// then parse_validation. Throws ParseError naming the file otherwise (a
// directory, a device, an empty name).
[[nodiscard]] std::vector<ValidationCase> load_validation(const std::string& path);

// The engine id a case's "framework" names ("tensorrt-llm" -> "trtllm"), or
// "roofline" where no profile matches.
[[nodiscard]] std::string engine_of_framework(std::string_view framework);

// Predicts every case on `registry`'s devices and compares. `engine`: an
// engine id for every case, "case" for each case's own framework, or empty
// for `options` as given (the reference engine unless options.engine is set).
[[nodiscard]] ValidationReport validate_cases(const std::vector<ValidationCase>& cases,
                                              const Registry& registry,
                                              const ModelOptions& options = {},
                                              const std::string& engine = "");

}  // namespace roofline
