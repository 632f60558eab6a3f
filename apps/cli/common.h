// The layer every command of `roofline` shares: the flags each takes (--json,
// --csv, --hardware-file), the scenario flags of the prediction commands,
// parsing of numbers given as text, and the JSON/table printers. A command
// lives in a file of its group (hardware.cpp, gemm.cpp, ...) that registers it
// through commands.h; nothing else needs to change to add one.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/model.h"
#include "roofline/roofline.h"
#include "roofline/workload.h"

namespace roofline::cli {

enum class Output { kTable, kJson, kCsv };

// Flags every command takes.
struct Common {
  bool json = false;
  bool csv = false;
  std::vector<std::string> hardware_files;

  [[nodiscard]] Output output() const {
    return json ? Output::kJson : (csv ? Output::kCsv : Output::kTable);
  }
};

// Adds --json (and --csv, excluding each other, when `with_csv`) and
// --hardware-file to `cmd`, bound to `c`.
void add_common(CLI::App* cmd, Common* c, bool with_csv);

// The built-in devices plus the --hardware-file ones.
[[nodiscard]] Registry load_registry(const Common& c);

// Columns of the terminal stdout is, else $COLUMNS, else 0 (no wrapping).
[[nodiscard]] std::size_t terminal_width();

// Prints `j` indented; text that is not UTF-8 (a name from a file) is replaced.
void print_json(const nlohmann::json& j);

// Prints each note as a "- " line.
void print_notes(const std::vector<std::string>& notes);

// A request length as the tables show it: "1024", or "819-1024" for a range from `min` (0: fixed).
[[nodiscard]] std::string length_range(std::int64_t min, std::int64_t length);

// Joins `v` with `sep` between items.
// A KV memory rule in words: "92% of the memory, weights and activations
// included" or "90% of what the weights and activations leave".
[[nodiscard]] std::string kv_memory_text(double share, bool of_free);

[[nodiscard]] std::string join(const std::vector<std::string>& v, std::string_view sep);

// Splits a comma-separated flag value ("1,8,64"). Throws InvalidArgument
// naming `flag` for an empty item or an empty list.
[[nodiscard]] std::vector<std::string> split_list(const std::string& flag, const std::string& text);

// Parses a GEMM dimension given as text: a whole number in [1, kMaxGemmDimension].
// Accepts "4096" and "4.096e3"; rejects NaN, fractions, hex, spaces and absurd sizes.
[[nodiscard]] std::int64_t parse_dimension(const std::string& flag, const std::string& text);

// A whole number in [lo, hi] given as text ("4096", "4.096e3"; "32k" is not accepted).
[[nodiscard]] std::int64_t parse_count(const std::string& flag, const std::string& text,
                                       std::int64_t lo, std::int64_t hi);

// A number in (0, 1].
[[nodiscard]] double parse_fraction(const std::string& flag, const std::string& text);

// A finite number >= 0.
[[nodiscard]] double parse_positive(const std::string& flag, const std::string& text);

// ---------------------------------------------------------------- scenarios

// The flags of the commands that predict a model on a device (predict,
// generate, kv, attention, recommend), as given, parsed by make_scenario.
struct ScenarioArgs {
  std::string model = "llama-3.1-8b";
  std::string hardware = "gb10";
  std::string phase = "decode";
  std::string batch = "1";
  std::string seq_len = "4096";
  std::string cached = "0";               // --cached (predict, generate and attention)
  std::string weights, experts, act, kv;  // act empty: the engine's for the weights, else bf16
  std::string strategy;
  std::string attention;
  std::string block_sparsity = "1";
  std::string tp = "1", pp = "1", attention_dp = "1", ep = "1";
  std::string draft_tokens = "0", acceptance;  // speculative decoding
  std::string engine = "roofline";
  std::string engine_build;            // the engine build's date (empty: the current build)
  std::string engine_version;          // the engine's release (empty: the current one)
  std::string cuda_graphs = "engine";  // GraphPolicy: engine, decode-only or off
  std::string moe_kernel;              // MoE kernel family (empty: the engine's measured blend)
  std::string kernel_file;             // GEMM efficiencies measured on the user's GPU
  bool ideal = false;
  bool per_op = false;
};

// Adds the scenario flags to `cmd` (--phase and --seq-len when `with_phase`).
void add_scenario_options(CLI::App* cmd, ScenarioArgs* a, bool with_phase);
// Adds --cached: tokens in the KV cache before the prompt.
void add_cached_option(CLI::App* cmd, ScenarioArgs* a);
// Adds --engine-version: the rules the engine's profile dates by release follow it.
void add_engine_version_option(CLI::App* cmd, ScenarioArgs* a);

// Builds the scenario; a strategy is resolved against the model and device
// (its notes say what fell back).
[[nodiscard]] Scenario make_scenario(const ScenarioArgs& a, const ModelSpec& m, const Device* d,
                                     std::vector<std::string>* notes = nullptr);

// The mode and engine of `a`, its kernel file's table (checked against
// `device` when given: a table measured on another device is an error) and,
// on `device`, what the engine's release (--engine-version) runs differently.
[[nodiscard]] ModelOptions make_options(const ScenarioArgs& a, const Device* device = nullptr);

}  // namespace roofline::cli
