// libFuzzer target for every parser of untrusted input: Hugging Face
// config.json, the short form, safetensors headers, GGUF files, device files,
// uploaded .safetensors bodies (the quantization analysis), and the server's
// JSON requests (predict, generate, recommend, analyze, sweep, as the HTTP
// handlers call them). The first byte picks the parser. A typed roofline::Error is the
// expected answer to bad input; anything else (a crash, a sanitizer report,
// another exception, a giant allocation) is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "roofline/checkpoint.h"
#include "roofline/error.h"
#include "roofline/hardware.h"
#include "roofline/model.h"
#include "roofline/quantize.h"
#include "roofline/service.h"

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

void request(int which, std::string_view input) {
  const nlohmann::json body = nlohmann::json::parse(input, nullptr, false);
  if (body.is_discarded()) return;  // the server answers invalid_json before any of this
  namespace s = roofline::service;
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
    default:
      (void)s::sweep(body, registry(), limits());
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 11) {
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
      default:
        request(data[0] % 11 - 6, input);
        break;
    }
  } catch (const roofline::Error&) {
    // Bad input, reported as such.
  }
  return 0;
}
