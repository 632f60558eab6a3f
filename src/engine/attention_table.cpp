#include "roofline/attention_table.h"

#include <algorithm>
#include <cmath>

#include "kernel_table.h"
#include "roofline/error.h"
#include "strict_json.h"

namespace roofline {
namespace {

using detail::StrictObject;
using nlohmann::json;

constexpr std::string_view kAttentionTableSchema = "roofline-attention-efficiency-1";
// Each key and its slot: prefill, MLA, 16-bit cache; or, for Gated DeltaNet's
// kernels, prefill and the short convolution.
struct EntryKey {
  std::string_view name;
  bool prefill, mla, sixteen;
  bool linear = false, conv = false;
};
constexpr EntryKey kEntryKeys[] = {{"decode_gqa_bf16", false, false, true},
                                   {"decode_gqa_fp8", false, false, false},
                                   {"decode_mla_bf16", false, true, true},
                                   {"decode_mla_fp8", false, true, false},
                                   {"prefill_gqa_bf16", true, false, true},
                                   {"prefill_gqa_fp8", true, false, false},
                                   {"decode_gdn", false, false, false, true, false},
                                   {"decode_gdn_conv", false, false, false, true, true},
                                   {"prefill_gdn", true, false, false, true, false},
                                   {"prefill_gdn_conv", true, false, false, true, true}};

// A whole number in [0, 1e9].
std::int64_t count(StrictObject& o, std::string_view key) {
  const double v = o.non_negative(key);
  if (v != std::floor(v) || v > 1e9) o.fail(key, "must be a whole number of at most 1e9");
  return static_cast<std::int64_t>(v);
}

// Linear interpolation weights along one axis in grid units, held at the edges.
struct AxisPoint {
  int lo, hi;
  double frac;
};
AxisPoint axis_point(double log2_value, int first, int points) noexcept {
  const double x = std::clamp(log2_value - first, 0.0, static_cast<double>(points - 1));
  const int lo = std::min(static_cast<int>(x), std::max(points - 2, 0));
  return {lo, std::min(lo + 1, points - 1), x - lo};
}

}  // namespace

const AttentionTable::Entry* AttentionTable::find(std::string_view key) const noexcept {
  for (const Entry& e : entries) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

const AttentionTable::Entry* AttentionTable::find(bool prefill, bool mla,
                                                  Format kv) const noexcept {
  // bf16 and fp16 caches: the same bytes and kernels.
  const bool sixteen = kv == Format::kBf16 || kv == Format::kFp16;
  if (!sixteen && kv != Format::kFp8) return nullptr;
  const int i = slot[prefill][mla][sixteen];
  return i < 0 ? nullptr : &entries[static_cast<std::size_t>(i)];
}

const AttentionTable::Entry* AttentionTable::find_linear(bool prefill, bool conv) const noexcept {
  const int i = linear_slot[prefill][conv];
  return i < 0 ? nullptr : &entries[static_cast<std::size_t>(i)];
}

double AttentionTable::efficiency(const Entry& e, double streams, double group,
                                  double span) const noexcept {
  const AxisPoint a = axis_point(std::log2(std::max(streams, 1.0)), log2_streams0, stream_points);
  const AxisPoint b = axis_point(std::log2(std::max(group, 1.0)), log2_group0, group_points);
  const AxisPoint c = axis_point(std::log2(std::max(span, 1.0)), log2_span0, span_points);
  auto at = [&](int i, int j, int k) {
    return static_cast<double>(
        e.log_efficiency[static_cast<std::size_t>((i * group_points + j) * span_points + k)]);
  };
  auto plane = [&](int i) {
    return (1 - b.frac) * ((1 - c.frac) * at(i, b.lo, c.lo) + c.frac * at(i, b.lo, c.hi)) +
           b.frac * ((1 - c.frac) * at(i, b.hi, c.lo) + c.frac * at(i, b.hi, c.hi));
  };
  return std::min(std::exp((1 - a.frac) * plane(a.lo) + a.frac * plane(a.hi)), 1.0);
}

AttentionTable parse_attention_table(std::string_view text, const std::string& origin) {
  const json doc = detail::parse_json_text(text, origin, std::size_t{8} << 20);
  StrictObject o(doc, origin, "");
  AttentionTable t;
  const detail::KernelTableHeader h = detail::read_kernel_table_header(o, kAttentionTableSchema);
  detail::set_identity(h, &t);
  detail::read_log2_axis(o, "log2_streams", 40, &t.log2_streams0, &t.stream_points);
  detail::read_log2_axis(o, "log2_group", 16, &t.log2_group0, &t.group_points);
  detail::read_log2_axis(o, "log2_span", 48, &t.log2_span0, &t.span_points);
  StrictObject entries = o.object("entries");
  for (auto it = entries.json().begin(); it != entries.json().end(); ++it) {
    const auto* known = std::find_if(std::begin(kEntryKeys), std::end(kEntryKeys),
                                     [&](const EntryKey& k) { return k.name == it.key(); });
    if (known == std::end(kEntryKeys)) {
      entries.fail(it.key(),
                   "is not an attention table entry (decode_gqa_bf16, decode_gqa_fp8, "
                   "decode_mla_bf16, decode_mla_fp8, prefill_gqa_bf16, prefill_gqa_fp8, "
                   "decode_gdn, decode_gdn_conv, prefill_gdn, prefill_gdn_conv)");
    }
    StrictObject f = entries.object(it.key());
    AttentionTable::Entry e;
    e.key = it.key();
    e.kernel = f.string("kernel");
    e.engine_version = f.string("engine_version");
    e.citation = detail::cited_source(f, h);
    e.rows = count(f, "rows");
    if (e.rows == 0) f.fail("rows", "must be at least 1");
    if (count(f, "capped_rows") > e.rows) f.fail("capped_rows", "must be at most \"rows\"");
    e.floor_s = f.non_negative("floor_s");
    if (!(e.floor_s > 0) || e.floor_s > 1) f.fail("floor_s", "must be in (0, 1] seconds");
    e.fit_median_error = f.non_negative("fit_median_error");
    e.fit_p90_error = f.non_negative("fit_p90_error");
    const json& grid = f.required("efficiency");
    if (!grid.is_array() || grid.size() != static_cast<std::size_t>(t.stream_points))
      f.fail("efficiency", "expected one plane per log2_streams point");
    e.efficiency.reserve(
        static_cast<std::size_t>(t.stream_points * t.group_points * t.span_points));
    for (const auto& plane : grid) {
      if (!plane.is_array() || plane.size() != static_cast<std::size_t>(t.group_points))
        f.fail("efficiency", "expected one row per log2_group point in every plane");
      for (const auto& row : plane) {
        if (!row.is_array() || row.size() != static_cast<std::size_t>(t.span_points))
          f.fail("efficiency", "expected one value per log2_span point in every row");
        for (const auto& v : row) {
          if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1)
            f.fail("efficiency", "every value must be in (0, 1]");
          e.efficiency.push_back(v.get<float>());
          e.log_efficiency.push_back(static_cast<float>(std::log(v.get<double>())));
        }
      }
    }
    f.finish();
    std::int8_t& slot = known->linear ? t.linear_slot[known->prefill][known->conv]
                                      : t.slot[known->prefill][known->mla][known->sixteen];
    slot = static_cast<std::int8_t>(t.entries.size());
    t.entries.push_back(std::move(e));
  }
  entries.finish();
  o.finish();
  if (t.entries.empty()) throw ParseError(origin + ": entries: no attention measured");
  return t;
}

}  // namespace roofline
