// libFuzzer target for every parser of untrusted input: Hugging Face
// config.json, the short form, safetensors headers, GGUF files and device
// files. The first byte picks the parser. A typed roofline::Error is the
// expected answer to bad input; anything else (a crash, a sanitizer report,
// another exception, a giant allocation) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "roofline/checkpoint.h"
#include "roofline/error.h"
#include "roofline/hardware.h"
#include "roofline/model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 5) {
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
    }
  } catch (const roofline::Error&) {
    // Bad input, reported as such.
  }
  return 0;
}
