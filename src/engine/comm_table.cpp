#include "roofline/comm_table.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernel_table.h"
#include "roofline/error.h"
#include "strict_json.h"

namespace roofline {
namespace {

using detail::StrictObject;
using nlohmann::json;

constexpr std::string_view kCommTableSchema = "roofline-allreduce-latency-1";

}  // namespace

namespace {

Seconds grid_latency(const std::map<std::int64_t, std::vector<double>>& by_gpus, int log2_0,
                     int points, std::int64_t gpus, double elements) noexcept {
  if (by_gpus.empty() || points < 1) return 0;
  // The measured GPU count nearest below, else the smallest one.
  auto it = by_gpus.upper_bound(gpus);
  if (it != by_gpus.begin()) --it;
  const std::vector<double>& v = it->second;
  const double x = std::log2(std::max(elements, 1.0)) - log2_0;
  if (x <= 0) return v.front();
  const double last = static_cast<double>(points - 1);
  if (x >= last) return v.back() * std::exp2(x - last);
  const auto i = static_cast<std::size_t>(x);
  const double f = x - static_cast<double>(i);
  return v[i] + f * (v[i + 1] - v[i]);
}

// {"<gpus>": [latency per point]} with `points` values each.
std::map<std::int64_t, std::vector<double>> read_latencies(StrictObject& lat, int points) {
  std::map<std::int64_t, std::vector<double>> out;
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
    if (!row.is_array() || row.size() != static_cast<std::size_t>(points))
      lat.fail(it.key(), "expected one latency per log2_elements point");
    std::vector<double> v;
    for (const auto& x : row) {
      if (!x.is_number() || !(x.get<double>() > 0) || !(x.get<double>() < 10))
        lat.fail(it.key(), "latencies must be positive seconds below 10");
      v.push_back(x.get<double>());
    }
    out.emplace(gpus, std::move(v));
  }
  if (out.empty()) lat.fail("", "no GPU count measured");
  return out;
}

}  // namespace

Seconds CommTable::latency(std::int64_t gpus, double elements) const noexcept {
  return grid_latency(latency_s, log2_elements0, points, gpus, elements);
}

Seconds CommTable::alltoall_latency(std::int64_t gpus, double elements) const noexcept {
  return grid_latency(alltoall_s, alltoall_log2_elements0, alltoall_points, gpus, elements);
}

CommTable parse_comm_table(std::string_view text, const std::string& origin) {
  const json doc = detail::parse_json_text(text, origin, std::size_t{1} << 20);
  StrictObject o(doc, origin, "");
  CommTable t;
  const detail::KernelTableHeader h = detail::read_kernel_table_header(o, kCommTableSchema);
  detail::set_identity(h, &t);
  detail::read_log2_axis(o, "log2_elements", 40, &t.log2_elements0, &t.points);
  StrictObject lat = o.object("latency_s");
  t.latency_s = read_latencies(lat, t.points);
  if (o.has("alltoall")) {
    StrictObject a = o.object("alltoall");
    t.alltoall_citation = detail::cited_source(a, h);
    detail::read_log2_axis(a, "log2_elements", 40, &t.alltoall_log2_elements0, &t.alltoall_points);
    StrictObject alat = a.object("latency_s");
    t.alltoall_s = read_latencies(alat, t.alltoall_points);
    a.finish();
  }
  o.finish();
  return t;
}

}  // namespace roofline
