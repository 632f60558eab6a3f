#include "kernel_table.h"

namespace roofline::detail {

KernelTableHeader read_kernel_table_header(StrictObject& o, std::string_view schema) {
  if (o.string("schema") != schema) o.fail("schema", "expected " + std::string(schema));
  KernelTableHeader h;
  h.device = o.string("device");
  h.engine = o.string("engine");
  if (h.device.empty() || h.engine.empty()) o.fail("device", "device and engine must be named");
  h.id = h.device + "-" + h.engine;
  h.engine_version = o.string("engine_version");
  h.sources = read_sources(o);
  h.confidence = o.string("confidence");
  if (h.confidence != "measured" && h.confidence != "derived")
    o.fail("confidence", "must be measured or derived");
  h.citation = cited_source(o, h);
  (void)o.string("method");
  return h;
}

std::string cited_source(StrictObject& o, const KernelTableHeader& h) {
  const auto cited = h.sources.find(o.string("source"));
  if (cited == h.sources.end()) o.fail("source", "names no entry of \"sources\"");
  return cited->second;
}

void read_log2_axis(StrictObject& o, std::string_view key, int largest, int* first, int* points) {
  const nlohmann::json& a = o.required(key);
  if (!a.is_array() || a.size() < 2 || a.size() > 64)
    o.fail(key, "expected 2 to 64 consecutive integers");
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number_integer() || a[i].get<int>() < 0 || a[i].get<int>() > largest ||
        a[i].get<int>() != a[0].get<int>() + static_cast<int>(i)) {
      o.fail(key, "expected consecutive integers from 0 to " + std::to_string(largest));
    }
  }
  *first = a[0].get<int>();
  *points = static_cast<int>(a.size());
}

}  // namespace roofline::detail
