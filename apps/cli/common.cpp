#include "common.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>

#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/gpu_run.h"
#include "roofline/request.h"

namespace roofline::cli {
namespace {

// Decimal notation only: digits, an optional fraction and exponent ("4096",
// "4.096e3"). strtod alone would also take " 5" (leading space), "0x10" (hex),
// "inf" and "nan".
bool decimal_syntax(const std::string& text) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i > start;
  };
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  if (!digits()) return false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    digits();
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (!digits()) return false;
  }
  return i == text.size();
}

}  // namespace

void add_common(CLI::App* cmd, Common* c, bool with_csv) {
  auto* json = cmd->add_flag("--json", c->json, "Print JSON (SI units) instead of a table");
  if (with_csv) {
    auto* csv = cmd->add_flag("--csv", c->csv, "Print CSV instead of a table");
    json->excludes(csv);
  }
  cmd->add_option("--hardware-file", c->hardware_files,
                  "Extra device JSON file (adds or overrides by id); repeatable")
      ->type_name("FILE");
}

Registry load_registry(const Common& c) { return Registry::load(c.hardware_files); }

std::size_t terminal_width() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  if (const char* cols = std::getenv("COLUMNS")) {
    const long v = std::strtol(cols, nullptr, 10);
    if (v >= 40 && v <= 1000) return static_cast<std::size_t>(v);
  }
  return 0;
}

void print_json(const nlohmann::json& j) {
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

std::int64_t parse_dimension(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (!decimal_syntax(text) || end == text.c_str() || *end != '\0') {
    throw InvalidArgument(flag + ": '" + clip_utf8(text, 40) +
                          "' is not a whole number in decimal notation");
  }
  if (!std::isfinite(v) || v != std::floor(v) || v < 1 ||
      v > static_cast<double>(kMaxGemmDimension)) {
    throw InvalidArgument(fmt::format("{}: '{}' must be a whole number from 1 to {}", flag,
                                      clip_utf8(text, 40), kMaxGemmDimension));
  }
  return static_cast<std::int64_t>(v);
}

std::int64_t parse_count(const std::string& flag, const std::string& text, std::int64_t lo,
                         std::int64_t hi) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!decimal_syntax(text) || end == text.c_str() || *end != '\0') {
    throw InvalidArgument(flag + ": '" + clip_utf8(text, 40) +
                          "' is not a whole number in decimal notation");
  }
  if (!std::isfinite(v) || v != std::floor(v) || v < static_cast<double>(lo) ||
      v > static_cast<double>(hi)) {
    throw InvalidArgument(fmt::format("{}: '{}' must be a whole number from {} to {}", flag,
                                      clip_utf8(text, 40), lo, hi));
  }
  return static_cast<std::int64_t>(v);
}

double parse_fraction(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || !(v > 0 && v <= 1)) {
    throw InvalidArgument(flag + ": '" + clip_utf8(text, 40) + "' must be a number in (0, 1]");
  }
  return v;
}

double parse_positive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < 0) {
    throw InvalidArgument(flag + ": '" + clip_utf8(text, 40) + "' must be a number >= 0");
  }
  return v;
}

std::vector<std::string> split_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    if (item.empty()) throw InvalidArgument(flag + ": empty item in '" + clip_utf8(text, 80) + "'");
    out.push_back(item);
  }
  if (out.empty()) throw InvalidArgument(flag + ": give at least one value");
  return out;
}

std::string length_range(std::int64_t min, std::int64_t length) {
  return min != 0 && min != length ? fmt::format("{}-{}", min, length) : std::to_string(length);
}

std::string kv_memory_text(double share, bool of_free) {
  return fmt::format("{:.0f}% of {}", share * 100,
                     of_free ? "what the weights and activations leave"
                             : "the memory, weights and activations included");
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : std::string(sep)) + x;
  return s;
}

void print_notes(const std::vector<std::string>& notes) {
  for (const auto& n : notes) std::cout << "- " << n << "\n";
}

void add_scenario_options(CLI::App* cmd, ScenarioArgs* a, bool with_phase) {
  cmd->add_option("--model", a->model, "Preset id or alias, config.json, model directory or .gguf")
      ->capture_default_str()
      ->type_name("MODEL");
  cmd->add_option("--hardware", a->hardware, "Device id or alias")
      ->capture_default_str()
      ->type_name("ID");
  if (with_phase) {
    cmd->add_option("--phase", a->phase, "prefill or decode")->capture_default_str();
    cmd->add_option("--seq-len", a->seq_len,
                    "Prefill: prompt tokens per sequence; decode: tokens already cached")
        ->capture_default_str()
        ->type_name("INT");
  }
  cmd->add_option("--batch", a->batch, "Sequences in the batch")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--weights", a->weights, "Weight format (default: the checkpoint's native)")
      ->type_name("FMT");
  cmd->add_option("--experts", a->experts,
                  "Routed-expert weight format (default: --weights or native)")
      ->type_name("FMT");
  cmd->add_option("--act", a->act,
                  "Activation format (default: the engine's for the weights where it runs them "
                  "so, e.g. fp8 weights as W8A8 on Ada, Hopper and Blackwell in vLLM, SGLang and "
                  "TensorRT-LLM, roofline engines show; else bf16)")
      ->type_name("FMT");
  cmd->add_option("--kv", a->kv, "KV-cache format (default: --act)")->type_name("FMT");
  cmd->add_option("--strategy", a->strategy,
                  "Named precision plan (roofline strategies) or a plan .json file")
      ->type_name("NAME|FILE");
  cmd->add_option("--attention", a->attention,
                  "naive, fa1, fa2, fa3, fa4, flash-decoding (default: the device's best)")
      ->type_name("KERNEL");
  cmd->add_option("--block-sparsity", a->block_sparsity,
                  "Fraction of attention blocks computed, (0, 1]")
      ->capture_default_str()
      ->type_name("F");
  cmd->add_option("--tp", a->tp, "Tensor-parallel ranks")->capture_default_str()->type_name("INT");
  cmd->add_option("--pp", a->pp, "Pipeline stages")->capture_default_str()->type_name("INT");
  cmd->add_option("--attention-dp", a->attention_dp,
                  "Attention data-parallel groups within --tp (DeepSeek-style serving)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--ep", a->ep,
                  "Expert-parallel groups within --tp (MoE): each holds experts / ep whole; "
                  "with --attention-dp the tokens reach them by all-to-all")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--draft-tokens", a->draft_tokens,
                  "Speculative decoding: tokens a one-layer draft head (MTP, EAGLE) proposes a "
                  "step, verified at once")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--acceptance", a->acceptance,
                  "Speculative decoding: the chance each draft token is accepted (default: the "
                  "one yielding the model's measured tokens a step where published, roofline "
                  "model show; else 0.85, DeepSeek-V3's MTP)")
      ->type_name("F");
  cmd->add_option("--engine", a->engine,
                  "Serving engine: its launch and step costs and measured kernel efficiency "
                  "(roofline engines; roofline: the reference)")
      ->capture_default_str()
      ->type_name("ID");
  cmd->add_option("--engine-build", a->engine_build,
                  "The date of the engine's build (YYYY-MM-DD or YYYY-MM; default the current "
                  "one): the profile's rules dated by build follow it (llama.cpp before "
                  "2024-06-24 dequantized to F16 for cuBLAS above 32 rows; TensorRT-LLM before "
                  "2025-02-01 ran TensorRT engines, without Python dispatch)")
      ->type_name("DATE");
  cmd->add_option("--cuda-graphs", a->cuda_graphs,
                  "Which steps replay CUDA graphs: engine (its defaults), decode-only (vLLM's "
                  "cudagraph_mode FULL_DECODE_ONLY: steps with prompt tokens run without any "
                  "graph) or off (--enforce-eager, SGLang's --disable-cuda-graph); steps without "
                  "graphs pay the engine's eager launch per kernel")
      ->capture_default_str()
      ->type_name("MODE");
  cmd->add_option("--moe-kernel", a->moe_kernel,
                  "The MoE kernel family the deployment runs (triton, flashinfer-trtllm, "
                  "flashinfer-cutlass, marlin: vLLM's VLLM_USE_FLASHINFER_MOE_FP8, SGLang's "
                  "--moe-runner-backend); default: the engine's measured layers, whichever "
                  "kernels they ran. A family the engine's table lacks borrows another engine's "
                  "measurement on the same device (derived-moe-table)")
      ->type_name("FAMILY");
  cmd->add_option("--kernel-file", a->kernel_file,
                  "GEMM efficiencies measured on your GPU (the table of calibrate --gpu, or one "
                  "in the format of data/kernels/gemm): they price every GEMM of the formats "
                  "they cover, with the engine's other costs")
      ->type_name("FILE");
  cmd->add_flag("--ideal", a->ideal, "Datasheet peaks, no overheads (pure roofline)");
}

void add_cached_option(CLI::App* cmd, ScenarioArgs* a) {
  cmd->add_option("--cached", a->cached,
                  "Tokens already in the KV cache before the prompt (an earlier turn of the "
                  "chat, a prefix-cache hit, llama-bench's depth): the prompt attends over them")
      ->capture_default_str()
      ->type_name("INT");
}

void add_engine_version_option(CLI::App* cmd, ScenarioArgs* a) {
  cmd->add_option("--engine-version", a->engine_version,
                  "The engine's release (e.g. 0.11.0; default the current one): the rules its "
                  "profile dates by release follow it (vLLM's MoE kernel family and padded MoE "
                  "workspace, its Triton attention's sliding windows; roofline engines show)")
      ->type_name("TEXT");
}

Scenario make_scenario(const ScenarioArgs& a, const ModelSpec& m, const Device* d,
                       std::vector<std::string>* notes) {
  ScenarioRequest r;
  r.phase = a.phase;
  r.batch = parse_count("--batch", a.batch, 1, kMaxBatch);
  r.seq_len = parse_count("--seq-len", a.seq_len, 1, kMaxSeqLen);
  r.cached = parse_count("--cached", a.cached, 0, kMaxSeqLen);
  r.weights = a.weights;
  r.experts = a.experts;
  r.act = a.act;
  r.kv = a.kv;
  r.strategy = a.strategy;
  r.attention = a.attention;
  r.block_sparsity = parse_fraction("--block-sparsity", a.block_sparsity);
  r.tp = parse_count("--tp", a.tp, 1, kMaxParallel);
  r.pp = parse_count("--pp", a.pp, 1, kMaxParallel);
  r.attention_dp = parse_count("--attention-dp", a.attention_dp, 1, kMaxParallel);
  r.ep = parse_count("--ep", a.ep, 1, kMaxParallel);
  r.draft_tokens = parse_count("--draft-tokens", a.draft_tokens, 0, kMaxDraftTokens);
  if (!a.acceptance.empty()) r.acceptance = parse_positive("--acceptance", a.acceptance);
  r.engine = &EngineRegistry::built_in().get(a.engine);
  return build_scenario(r, m, d, notes);
}

ModelOptions make_options(const ScenarioArgs& a, const Device* device) {
  ModelOptions o;
  o.mode = a.ideal ? Mode::kIdeal : Mode::kRealistic;
  o.engine = &EngineRegistry::built_in().get(a.engine);  // its table is resolved per device
  if (!a.engine_build.empty()) o.engine_build = parse_build_date(a.engine_build, "--engine-build");
  o.graphs = parse_graph_policy(a.cuda_graphs, "--cuda-graphs");
  if (!a.moe_kernel.empty()) {
    o.moe_kernel = parse_moe_kernel(a.moe_kernel, "--moe-kernel");
    check_moe_kernel(o, device, "--moe-kernel");
  }
  if (!a.engine_version.empty()) {
    check_engine_version(a.engine_version, "--engine-version");
    if (device != nullptr) {
      o = with_engine_release(o, *device, a.engine_version,
                              parse_count("--tp", a.tp, 1, kMaxParallel),
                              EngineRegistry::built_in());
    }
  }
  if (!a.kernel_file.empty()) {
    if (a.ideal) throw InvalidArgument("--kernel-file: measured efficiencies have no ideal mode");
    // Loaded once per process; predictions keep a pointer to it.
    static std::map<std::string, GemmTable> tables;
    auto it = tables.find(a.kernel_file);
    if (it == tables.end())
      it = tables.emplace(a.kernel_file, measure::load_kernel_file(a.kernel_file)).first;
    if (device && !it->second.device.empty() && it->second.device != device->id) {
      throw InvalidArgument("--kernel-file: measured on " + it->second.device + ", not " +
                            device->id + " (predict on the device it measured)");
    }
    o.gemm_table = &it->second;
    o.gemm_table_source = EfficiencySource::kMeasuredTable;
  }
  return o;
}

}  // namespace roofline::cli
