// `roofline validate --decode-steps`: one decode step at batch = concurrency
// against the TPOT of measured serving runs (aggregated rows).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/serving.h"
#include "roofline/validate.h"

namespace roofline::cli {

enum class DecodeStepsOutput { kTable, kJson, kCsv };

// Error statistics by group as a text table (report.h has them as JSON).
[[nodiscard]] std::string error_groups_table(const std::vector<ErrorStats>& groups);
// The issues' acceptance targets a check reports, as a text table headed by
// `title` ("" when there are none).
[[nodiscard]] std::string targets_table(const std::string& title,
                                        const std::vector<TargetCheck>& targets);

// `file` empty: the built-in development set. `engine`: "case" or an engine id.
// `leave_one_out`: also each measured device's rows without its own tables.
void decode_steps_command(const Registry& registry, const std::string& file,
                          const std::string& engine, DecodeStepsOutput output,
                          bool leave_one_out = false, bool prefill_share = false);

// `validate --serving [FILE]`: the serving model's TTFT and TPOT against every
// row (aggregated; disaggregated rows refused with the reason), each client of
// the simulated benchmark sending `rounds` requests.
void serving_validation_command(const Registry& registry, const std::string& file,
                                const std::string& engine, ServingRecipe recipe,
                                DecodeStepsOutput output, std::int64_t rounds = kDefaultRounds,
                                std::int64_t prompt_pool = 0);

}  // namespace roofline::cli
