#include "roofline/comm_table.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "roofline/error.h"
#include "strict_json.h"

namespace roofline {
namespace {

using detail::StrictObject;
using nlohmann::json;

constexpr std::string_view kCommTableSchema = "roofline-allreduce-latency-1";
constexpr int kMaxPoints = 64;

}  // namespace

Seconds CommTable::latency(std::int64_t gpus, double elements) const noexcept {
  if (latency_s.empty() || points < 1) return 0;
  // The measured GPU count nearest below, else the smallest one.
  auto it = latency_s.upper_bound(gpus);
  if (it != latency_s.begin()) --it;
  const std::vector<double>& v = it->second;
  const double x = std::log2(std::max(elements, 1.0)) - log2_elements0;
  if (x <= 0) return v.front();
  const double last = static_cast<double>(points - 1);
  if (x >= last) return v.back() * std::exp2(x - last);
  const auto i = static_cast<std::size_t>(x);
  const double f = x - static_cast<double>(i);
  return v[i] + f * (v[i + 1] - v[i]);
}

CommTable parse_comm_table(std::string_view text, const std::string& origin) {
  const json doc = detail::parse_json_text(text, origin, std::size_t{1} << 20);
  StrictObject o(doc, origin, "");
  if (o.string("schema") != kCommTableSchema)
    o.fail("schema", "expected " + std::string(kCommTableSchema));
  CommTable t;
  t.device = o.string("device");
  t.engine = o.string("engine");
  if (t.device.empty() || t.engine.empty()) o.fail("device", "device and engine must be named");
  t.id = t.device + "-" + t.engine;
  t.engine_version = o.string("engine_version");
  const auto sources = detail::read_sources(o);
  t.confidence = o.string("confidence");
  if (t.confidence != "measured" && t.confidence != "derived")
    o.fail("confidence", "must be measured or derived");
  const std::string source = o.string("source");
  const auto cited = sources.find(source);
  if (cited == sources.end()) o.fail("source", "names no entry of \"sources\"");
  t.citation = cited->second;
  (void)o.string("method");
  const json& axis = o.required("log2_elements");
  if (!axis.is_array() || axis.size() < 2 || axis.size() > kMaxPoints)
    o.fail("log2_elements", "expected 2 to 64 consecutive whole numbers");
  for (std::size_t i = 0; i < axis.size(); ++i) {
    if (!axis[i].is_number_integer() || axis[i].get<int>() < 0 || axis[i].get<int>() > 40 ||
        (i > 0 && axis[i].get<int>() != axis[i - 1].get<int>() + 1)) {
      o.fail("log2_elements", "expected consecutive whole numbers from 0 to 40");
    }
  }
  t.log2_elements0 = axis[0].get<int>();
  t.points = static_cast<int>(axis.size());
  StrictObject lat = o.object("latency_s");
  for (auto it = lat.json().begin(); it != lat.json().end(); ++it) {
    std::int64_t gpus = 0;
    try {
      std::size_t used = 0;
      gpus = std::stoll(it.key(), &used);
      if (used != it.key().size()) gpus = 0;
    } catch (const std::exception&) {
      gpus = 0;
    }
    if (gpus < 2 || gpus > 1024) lat.fail(it.key(), "is not a GPU count from 2 to 1024");
    const json& row = it.value();
    if (!row.is_array() || row.size() != axis.size())
      lat.fail(it.key(), "expected one latency per log2_elements point");
    std::vector<double> v;
    for (const auto& x : row) {
      if (!x.is_number() || !(x.get<double>() > 0) || !(x.get<double>() < 10))
        lat.fail(it.key(), "latencies must be positive seconds below 10");
      v.push_back(x.get<double>());
    }
    t.latency_s.emplace(gpus, std::move(v));
  }
  if (t.latency_s.empty()) lat.fail("", "no GPU count measured");
  o.finish();
  return t;
}

}  // namespace roofline
