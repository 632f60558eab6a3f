// libFuzzer target for every parser of untrusted input: Hugging Face
// config.json, the short form, safetensors headers, GGUF files, device files,
// uploaded .safetensors bodies (the quantization analysis), and the server's
// JSON requests (predict, generate, recommend, analyze, sweep, sweep/gemm, as the HTTP
// handlers call them), engine profiles, GEMM efficiency tables, roofline-gpu's
// JSON lines and kernel tables (selectors 12-15), serving runs (16), MoE
// tables (17), attention tables (18), published validation cases (19: `roofline validate
// FILE`), serving harness notes (20), the track-record snapshot (21). The first byte picks
// the parser; selector 11 builds
// hostile structures from a few parameter bytes (issue #10): deep nesting,
// long layer lists, overlapping tensors, oversized shapes, names cut around
// multi-byte UTF-8 characters, values of the wrong type. A typed roofline::Error
// is the expected answer to bad input; anything else (a crash, a sanitizer
// report, another exception, a giant allocation, a message that is not UTF-8)
// is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/checkpoint.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/gpu_run.h"
#include "roofline/hardware.h"
#include "roofline/model.h"
#include "roofline/quantize.h"
#include "roofline/service.h"
#include "roofline/track_record.h"
#include "roofline/validate.h"

namespace {

const roofline::Registry& registry() {
  static const roofline::Registry r = roofline::Registry::built_in();
  return r;
}

// The server's limits, with a smaller sweep cap so that each input stays fast.
roofline::service::Limits limits() {
  roofline::service::Limits l;
  l.max_sweep_rows = 2000;
  return l;
}

// Error messages answer requests as JSON: they must be valid UTF-8 (the
// strict encoder throws type_error 316 otherwise, which is not caught here).
void check_message(const roofline::Error& e) { (void)nlohmann::json(std::string(e.what())).dump(); }

void call(int which, const nlohmann::json& body) {
  namespace s = roofline::service;
  try {
    switch (which) {
      case 0:
        (void)s::predict(body, registry(), limits());
        break;
      case 1:
        (void)s::generate(body, registry(), limits());
        break;
      case 2:
        (void)s::recommend(body, registry(), limits());
        break;
      case 3:
        (void)s::analyze(body, registry(), limits());
        break;
      default:  // both sweeps: their keys overlap (hardware, weights)
        try {
          (void)s::sweep_gemm(body, registry(), limits());
        } catch (const roofline::Error& e) {
          check_message(e);
        }
        (void)s::sweep(body, registry(), limits());
        break;
    }
  } catch (const roofline::Error& e) {
    check_message(e);
  }
}

void request(int which, std::string_view input) {
  nlohmann::json body;
  try {
    body = roofline::service::parse_request(input);  // as the server parses bodies
  } catch (const roofline::Error& e) {
    // The message may quote the body's own bytes, which need not be UTF-8: the
    // server encodes it replacing them. Once parsed, every string is UTF-8.
    (void)nlohmann::json(std::string(e.what()))
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  call(which, body);
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * i));
  return s;
}

nlohmann::json small_llama() {
  return {{"model_type", "llama"},    {"hidden_size", 64}, {"num_hidden_layers", 2},
          {"num_attention_heads", 4}, {"vocab_size", 10},  {"intermediate_size", 64}};
}

// Hostile structures from parameter bytes: kind, a size n, then free bytes.
void structured(std::string_view input) {
  if (input.size() < 4) return;
  const auto byte = [&](std::size_t i) {
    return static_cast<std::uint8_t>(i < input.size() ? input[i] : 0);
  };
  const int kind = byte(0) % 7;
  const std::uint32_t n = byte(1) | (byte(2) << 8) | (byte(3) << 16);
  const std::string_view rest = input.substr(4);
  switch (kind) {
    case 0: {  // nesting around the limit and far past it
      const int depth = static_cast<int>(n % 100'000);
      const std::string nest = std::string(static_cast<std::size_t>(depth), '[') +
                               std::string(static_cast<std::size_t>(depth), ']');
      std::string cfg = small_llama().dump();
      cfg.pop_back();
      cfg += ", \"x\": " + nest + "}";
      try {
        (void)roofline::parse_hf_config(cfg, "fuzz");
      } catch (const roofline::Error&) {
      }
      request(static_cast<int>(n % 5), "{\"model\": " + cfg + "}");
      const std::string header = "{\"t\": " + nest + "}";
      try {
        (void)roofline::parse_safetensors(le64(header.size()) + header, "fuzz");
      } catch (const roofline::Error&) {
      }
      break;
    }
    case 1: {  // a layer list of any length against any layer count
      nlohmann::json cfg = {
          {"model_type", "qwen3_moe"}, {"hidden_size", 64},           {"num_attention_heads", 4},
          {"num_key_value_heads", 4},  {"vocab_size", 100},           {"num_experts", 4},
          {"num_experts_per_tok", 2},  {"moe_intermediate_size", 32}, {"intermediate_size", 64}};
      cfg["num_hidden_layers"] = 1 + byte(4) * 16;
      std::vector<int> layers(n % 200'000);
      for (std::size_t i = 0; i < layers.size(); ++i)
        layers[i] = byte(5 + i % 64) * static_cast<int>(1 + i % 3);
      cfg["mlp_only_layers"] = layers;
      call(static_cast<int>(n % 5), {{"model", cfg}});
      break;
    }
    case 2:    // tensors whose byte ranges overlap (or not), read by the analysis
    case 3: {  // shapes far larger than their data, or huge but consistent
      nlohmann::json h;
      const std::size_t count = 1 + n % 64;
      const std::uint64_t data = 4096;
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t begin = (byte(4 + 2 * i) * 16) % data;
        std::uint64_t rows = 1 + byte(5 + 2 * i) % 8, cols = 1 + byte(6 + i) % 32;
        if (kind == 3) cols = std::uint64_t{1} << (byte(7 + i) % 48);
        const std::uint64_t bytes =
            kind == 3 ? 2 * rows * cols : std::min(2 * rows * cols, data - begin);
        h["t" + std::to_string(i)] = {{"dtype", "F16"},
                                      {"shape", {rows, bytes / 2 / rows}},
                                      {"data_offsets", {begin, begin + bytes}}};
      }
      const std::string header = h.dump();
      std::string file = le64(header.size()) + header + std::string(data, '\x3c');
      roofline::QuantizeOptions o;
      o.max_rows_or_columns = 1 + n % 4096;
      o.max_tensors = 1 + n % 128;
      try {
        (void)roofline::quantize_bytes(file, "fuzz", o);
      } catch (const roofline::Error&) {
      }
      break;
    }
    case 4: {  // names cut anywhere around multi-byte characters
      static const char* kWide[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9D\x84\x9E"};
      std::string name(n % 300, 'a');
      name += kWide[byte(4) % 3];
      for (char c : rest)
        name += (c & 0x80) ? kWide[static_cast<unsigned char>(c) % 3] : std::string(1, c);
      static const char* kKeys[] = {"model", "hardware", "strategy",  "weights",
                                    "act",   "kv",       "attention", "phase"};
      nlohmann::json body = {{"model", "llama-3.1-8b"}};
      body[kKeys[byte(5) % 8]] = name;
      call(static_cast<int>(n % 5), body);
      break;
    }
    case 5: {  // a linear-attention hybrid (or its wrapper) with hostile values and layer lists
      const nlohmann::json values[] = {
          0, 1, 3, -2, 1e30, 65536, "4", nullptr, nlohmann::json::array(), true, 2.5};
      nlohmann::json cfg = {{"model_type", "qwen3_5_moe_text"},
                            {"hidden_size", 64},
                            {"num_hidden_layers", 4},
                            {"num_attention_heads", 4},
                            {"num_key_value_heads", 2},
                            {"vocab_size", 100},
                            {"num_experts", 8},
                            {"num_experts_per_tok", 2},
                            {"moe_intermediate_size", 32},
                            {"shared_expert_intermediate_size", 32},
                            {"full_attention_interval", 4},
                            {"linear_num_key_heads", 2},
                            {"linear_num_value_heads", 4},
                            {"linear_key_head_dim", 16},
                            {"linear_value_head_dim", 16},
                            {"linear_conv_kernel_dim", 4}};
      static const char* kKeys[] = {"linear_num_key_heads",    "linear_num_value_heads",
                                    "linear_key_head_dim",     "linear_conv_kernel_dim",
                                    "full_attention_interval", "mamba_ssm_dtype",
                                    "attn_output_gate",        "num_hidden_layers"};
      cfg[kKeys[byte(4) % 8]] = values[byte(5) % 11];
      if (byte(6) % 2) {
        std::vector<std::string> types(n % 10'000, "linear_attention");
        for (std::size_t i = 0; i < types.size(); ++i)
          if (byte(7 + i % 32) % 3 == 0) types[i] = i % 5 ? "full_attention" : "x";
        cfg["layer_types"] = types;
      }
      if (byte(7) % 2) cfg = {{"model_type", "qwen3_5_moe"}, {"text_config", cfg}};
      try {
        (void)roofline::parse_hf_config(cfg.dump(), "fuzz");
      } catch (const roofline::Error&) {
      }
      call(static_cast<int>(n % 5), {{"model", cfg}});
      break;
    }
    default: {  // values of the wrong type where a string or number is expected
      const nlohmann::json values[] = {
          5, "4", nullptr, nlohmann::json::array(), -1.5, true, nlohmann::json::object()};
      nlohmann::json cfg = small_llama();
      cfg["quantization_config"] = {{"quant_method", values[byte(4) % 7]},
                                    {"bits", values[byte(5) % 7]}};
      static const char* kKeys[] = {"hidden_size",         "num_hidden_layers", "torch_dtype",
                                    "tie_word_embeddings", "sliding_window",    "layer_types"};
      cfg[kKeys[byte(6) % 6]] = values[byte(7) % 7];
      try {
        (void)roofline::parse_hf_config(cfg.dump(), "fuzz");
      } catch (const roofline::Error&) {
      }
      call(static_cast<int>(n % 5), {{"model", cfg}});
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const int selector = data[0] % 22;
    switch (selector) {
      case 0:
        (void)roofline::parse_hf_config(input, "fuzz");
        break;
      case 1:
        (void)roofline::parse_short_form(input, "fuzz");
        break;
      case 2:
        (void)roofline::parse_safetensors(input, "fuzz");
        break;
      case 3:
        (void)roofline::parse_gguf(input, "fuzz");
        break;
      case 4:
        (void)roofline::parse_device(input, "fuzz");
        break;
      case 5:
        (void)roofline::quantize_bytes(input, "fuzz");
        break;
      case 11:
        structured(input);
        break;
      case 12:
        (void)roofline::parse_engine(input, "fuzz");
        break;
      case 13:
        (void)roofline::parse_gemm_table(input, "fuzz");
        break;
      case 14:
        (void)roofline::measure::parse_gpu_run(input, "fuzz");
        break;
      case 15:
        (void)roofline::measure::parse_kernel_table(input, "fuzz");
        break;
      case 16:
        (void)roofline::parse_serving_runs(input, "fuzz");
        break;
      case 17:
        (void)roofline::parse_moe_table(input, "fuzz");
        break;
      case 18:
        (void)roofline::parse_attention_table(input, "fuzz");
        break;
      case 19:
        (void)roofline::parse_validation(input, "fuzz");
        break;
      case 20:
        (void)roofline::parse_serving_harnesses(input, "fuzz");
        break;
      case 21:
        (void)roofline::parse_track_record(input, "fuzz");
        break;
      default:
        request(selector - 6, input);
        break;
    }
  } catch (const roofline::Error&) {
    // Bad input, reported as such.
  }
  return 0;
}
