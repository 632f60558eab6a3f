#include "roofline/moe_table.h"

#include <algorithm>
#include <cmath>

#include "kernel_table.h"
#include "log_grid.h"
#include "roofline/error.h"
#include "strict_json.h"

namespace roofline {
namespace {

using detail::StrictObject;
using nlohmann::json;

constexpr std::string_view kMoeTableSchema = "roofline-moe-efficiency-3";
// A measured shape's fields, in the order each shape lists them.
constexpr std::string_view kShapeFields[] = {"hidden", "inter", "experts",          "top_k",
                                             "tp",     "ep",    "log2_tokens_from", "efficiency"};
// Bounds of a measured shape's sizes (past any model's: DeepSeek-V3 has
// hidden 7168, Kimi-K2 384 experts; wide expert parallelism reaches 256 GPUs).
constexpr std::int64_t kMaxShapeWidth = 1 << 20;
constexpr std::int64_t kMaxShapeExperts = 1 << 16;
constexpr std::int64_t kMaxShapeRanks = 1 << 12;
// The shipped tables' factors reach 4.6 (eight-expert layers at many tokens).
constexpr double kMaxWidthCorrection = 8;
constexpr std::string_view kFormatKeys[] = {"bf16", "fp8",   "fp8_block",  "nvfp4",
                                            "int4", "mxfp4", "mxfp4_mxfp8"};

// A whole number in [0, 1e9].
std::int64_t count(StrictObject& o, std::string_view key) {
  const double v = o.non_negative(key);
  if (v != std::floor(v) || v > 1e9) o.fail(key, "must be a whole number of at most 1e9");
  return static_cast<std::int64_t>(v);
}

}  // namespace

bool is_moe_table_key(std::string_view key) noexcept {
  return std::find(std::begin(kFormatKeys), std::end(kFormatKeys), key) != std::end(kFormatKeys);
}

const MoeTable::Entry* MoeTable::find(std::string_view key) const noexcept {
  const auto it = formats.find(key);
  return it == formats.end() ? nullptr : &it->second;
}

const MoeTable::Entry* MoeTable::find_family(std::string_view family,
                                             std::string_view format_key) const noexcept {
  if (const auto k = kernels.find(family); k != kernels.end()) {
    if (const auto it = k->second.find(format_key); it != k->second.end()) return &it->second;
  }
  // A format measured on one family only keeps its entry in `formats`.
  const Entry* e = find(format_key);
  return e != nullptr && e->family == family ? e : nullptr;
}

bool MoeTable::measures(std::string_view family) const noexcept {
  return kernels.find(family) != kernels.end() ||
         std::any_of(formats.begin(), formats.end(),
                     [&](const auto& f) { return f.second.family == family; });
}

const MoeTable::Entry* MoeTable::find(Format weights, Format compute,
                                      bool weight_only) const noexcept {
  const std::string_view key = moe_table_key(weights, compute, weight_only);
  if (key.empty()) return nullptr;
  if (key == "fp8") {
    if (const Entry* block = find("fp8_block")) return block;
  }
  return find(key);
}

double MoeTable::efficiency(const Entry& e, double tokens, Bytes weight_bytes,
                            double width) const noexcept {
  const double log2_tokens = std::log2(std::max(tokens, 1.0));
  const double grid =
      detail::log2_grid_value_at(e.efficiency, log2_tokens0, token_points, log2_bytes0, byte_points,
                                 log2_tokens, std::log2(std::max(weight_bytes, 1.0)));
  const double factor =
      detail::log2_grid_blend_at(e.width_correction, log2_tokens0, token_points, log2_width0,
                                 width_points, log2_tokens, std::log2(std::max(width, 1.0)));
  return std::min(grid * factor, 1.0);
}

const MoeTable::Shape* MoeTable::find_shape(const Entry& e, const ShapeKey& key) noexcept {
  const auto it = std::lower_bound(e.shapes.begin(), e.shapes.end(), key,
                                   [](const Shape& s, const ShapeKey& k) { return s.key < k; });
  if (it == e.shapes.end() || key < it->key) return nullptr;
  return &*it;
}

const MoeTable::Shape* MoeTable::other_model_shape(const Entry& e, const ShapeKey& key,
                                                   double* token_scale) noexcept {
  if (e.shapes.empty() || key.experts <= 0 || key.top_k <= 0) return nullptr;
  const ShapeKey& model = e.shapes.front().key;
  const auto same_model = [&](const Shape& s) {
    return s.key.hidden == model.hidden && s.key.inter == model.inter &&
           s.key.experts == model.experts && s.key.top_k == model.top_k;
  };
  if (!std::all_of(e.shapes.begin(), e.shapes.end(), same_model)) return nullptr;
  if (key.hidden == model.hidden && key.inter == model.inter && key.experts == model.experts &&
      key.top_k == model.top_k)
    return nullptr;  // its own model: a layout the source did not measure
  ShapeKey at = model;
  at.tp = key.tp;
  at.ep = key.ep;
  const Shape* s = find_shape(e, at);
  if (s == nullptr || model.experts <= 0 || model.top_k <= 0) return nullptr;
  if (token_scale != nullptr) {
    *token_scale = (static_cast<double>(key.top_k) / static_cast<double>(key.experts)) /
                   (static_cast<double>(model.top_k) / static_cast<double>(model.experts));
  }
  return s;
}

double MoeTable::shape_efficiency(const Shape& s, double tokens) noexcept {
  if (s.efficiency.size() < 2) return s.efficiency.empty() ? 1 : s.efficiency[0];
  // Held at the ends: below the first point (NaN too) and past the last.
  const double x = tokens > 1 ? std::log2(tokens) - s.log2_tokens_from : -1;
  const double last = static_cast<double>(s.efficiency.size() - 1);
  const double at = std::clamp(x, 0.0, last);
  const auto i = static_cast<std::size_t>(std::min(std::floor(at), last - 1));
  const double f = at - static_cast<double>(i);
  return (1 - f) * s.efficiency[i] + f * s.efficiency[i + 1];
}

double MoeTable::skew_slowdown(double tokens) const noexcept {
  if (routing_skew.empty()) return 1;
  // A grid of one column: linear in log2 tokens, held at the edges.
  return std::max(1.0, detail::log2_grid_blend_at(routing_skew, log2_tokens0, token_points, 0, 1,
                                                  std::log2(std::max(tokens, 1.0)), 0));
}

namespace {

// The collector's power-law routings a routing skew may compare with its balanced one.
constexpr std::string_view kSkewedRoutings[] = {"power_law_1.01", "power_law_1.2"};
constexpr double kMaxSkewSlowdown = 4;

// "routing_skew": {"distribution": D, "layers": N, "method": M, "slowdown": [...]}.
void read_routing_skew(StrictObject& o, MoeTable* t) {
  StrictObject r = o.object("routing_skew");
  t->routing_skew_distribution = r.string("distribution");
  if (std::find(std::begin(kSkewedRoutings), std::end(kSkewedRoutings),
                t->routing_skew_distribution) == std::end(kSkewedRoutings))
    r.fail("distribution", "must be power_law_1.01 or power_law_1.2");
  if (count(r, "layers") == 0) r.fail("layers", "must count the layers measured both ways");
  (void)r.string("method");
  const json& v = r.required("slowdown");
  if (!v.is_array() || v.size() != static_cast<std::size_t>(t->token_points))
    r.fail("slowdown", "expected one value per log2_tokens point");
  for (const auto& x : v) {
    if (!x.is_number() || !(x.get<double>() >= 1) || x.get<double>() > kMaxSkewSlowdown)
      r.fail("slowdown", "every value must be in [1, 4]");
    t->routing_skew.push_back(x.get<float>());
  }
  r.finish();
}

// A row-major grid of `rows` x `cols` numbers in (0, `max`] under `key`.
std::vector<float> read_grid(StrictObject& f, std::string_view key, int rows, int cols, double max,
                             std::string_view range, std::string_view row_axis,
                             std::string_view col_axis) {
  const json& grid = f.required(key);
  if (!grid.is_array() || grid.size() != static_cast<std::size_t>(rows))
    f.fail(key, "expected one row per " + std::string(row_axis) + " point");
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(rows * cols));
  for (const auto& row : grid) {
    if (!row.is_array() || row.size() != static_cast<std::size_t>(cols))
      f.fail(key, "expected one value per " + std::string(col_axis) + " point in every row");
    for (const auto& v : row) {
      if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > max)
        f.fail(key, "every value must be in " + std::string(range));
      out.push_back(v.get<float>());
    }
  }
  return out;
}

constexpr std::string_view kFamilyList = "(triton, flashinfer-trtllm, flashinfer-cutlass, marlin)";

bool known_family(std::string_view name) noexcept {
  return std::find(std::begin(kMoeKernelFamilies), std::end(kMoeKernelFamilies), name) !=
         std::end(kMoeKernelFamilies);
}

// Whether two tables' grids share their axes (every shipped table's do).
bool same_axes(const MoeTable& a, const MoeTable& b) noexcept {
  return a.log2_tokens0 == b.log2_tokens0 && a.token_points == b.token_points &&
         a.log2_bytes0 == b.log2_bytes0 && a.byte_points == b.byte_points &&
         a.log2_width0 == b.log2_width0 && a.width_points == b.width_points;
}

// A whole number in [1, `max`] at `v`, or the failure naming `what`.
std::int64_t shape_size(StrictObject& f, const json& v, std::int64_t max, std::string_view what) {
  const double x = v.is_number() ? v.get<double>() : 0;
  if (!(x >= 1) || x > static_cast<double>(max) || x != std::floor(x))
    f.fail("shapes", "every shape's " + std::string(what) + " must be a whole number in [1, " +
                         std::to_string(max) + "]");
  return static_cast<std::int64_t>(x);
}

// "shapes": [[hidden, inter, experts, top_k, tp, ep, log2_tokens_from, [efficiency...]], ...],
// sorted by the first six, each once; the points on the table's token axis.
std::vector<MoeTable::Shape> read_shapes(StrictObject& f, const MoeTable& t) {
  const json& list = f.required("shapes");
  if (!list.is_array()) f.fail("shapes", "expected an array of measured shapes");
  std::vector<MoeTable::Shape> out;
  out.reserve(list.size());
  const int last_point = t.log2_tokens0 + t.token_points - 1;
  for (const json& v : list) {
    if (!v.is_array() || v.size() != std::size(kShapeFields))
      f.fail("shapes", "every shape must list its 8 shape_fields");
    MoeTable::Shape s;
    s.key.hidden = shape_size(f, v[0], kMaxShapeWidth, "hidden");
    s.key.inter = shape_size(f, v[1], kMaxShapeWidth, "inter");
    s.key.experts = shape_size(f, v[2], kMaxShapeExperts, "experts");
    s.key.top_k = shape_size(f, v[3], s.key.experts, "top_k (at most its experts)");
    s.key.tp = shape_size(f, v[4], kMaxShapeRanks, "tp");
    s.key.ep = shape_size(f, v[5], kMaxShapeRanks, "ep");
    if (s.key.experts % s.key.ep != 0) f.fail("shapes", "every shape's ep must divide its experts");
    const double from = v[6].is_number() ? v[6].get<double>() : -1e9;
    if (!(from >= t.log2_tokens0) || from > last_point || from != std::floor(from))
      f.fail("shapes", "every shape's log2_tokens_from must be a point of log2_tokens");
    s.log2_tokens_from = static_cast<int>(from);
    const json& eff = v[7];
    if (!eff.is_array() || eff.empty() || static_cast<double>(eff.size()) > last_point - from + 1)
      f.fail("shapes",
             "every shape's efficiency must hold one value per log2_tokens point from "
             "its log2_tokens_from, at least one, none past the axis");
    s.efficiency.reserve(eff.size());
    for (const json& x : eff) {
      if (!x.is_number() || !(x.get<double>() > 0) || x.get<double>() > 1)
        f.fail("shapes", "every efficiency must be in (0, 1]");
      s.efficiency.push_back(x.get<float>());
    }
    if (!out.empty() && !(out.back().key < s.key))
      f.fail("shapes", "must be sorted by hidden, inter, experts, top_k, tp, ep, each once");
    out.push_back(std::move(s));
  }
  return out;
}

// "shape_fields": exactly kShapeFields.
void read_shape_fields(StrictObject& o) {
  const json& v = o.required("shape_fields");
  bool ok = v.is_array() && v.size() == std::size(kShapeFields);
  for (std::size_t i = 0; ok && i < v.size(); ++i)
    ok = v[i].is_string() && v[i].get<std::string>() == kShapeFields[i];
  if (!ok) {
    o.fail("shape_fields",
           "must be [\"hidden\", \"inter\", \"experts\", \"top_k\", \"tp\", \"ep\", "
           "\"log2_tokens_from\", \"efficiency\"]");
  }
}

// One entry's keys (kernel, rows, rows_above_roofline, floor_s, the grids);
// the caller finishes `f`.
MoeTable::Entry read_entry(StrictObject& f, const MoeTable& t) {
  MoeTable::Entry e;
  e.kernel = f.string("kernel");
  e.rows = count(f, "rows");
  e.rows_above_roofline = count(f, "rows_above_roofline");
  if (e.rows_above_roofline >= e.rows) f.fail("rows_above_roofline", "must be fewer than \"rows\"");
  e.floor_s = f.non_negative("floor_s");
  if (!(e.floor_s > 0) || e.floor_s > 1) f.fail("floor_s", "must be in (0, 1] seconds");
  e.efficiency = read_grid(f, "efficiency", t.token_points, t.byte_points, 1, "(0, 1]",
                           "log2_tokens", "log2_weight_bytes");
  e.width_correction = read_grid(f, "width_correction", t.token_points, t.width_points,
                                 kMaxWidthCorrection, "(0, 8]", "log2_tokens", "log2_expert_width");
  e.shapes = read_shapes(f, t);
  return e;
}

}  // namespace

std::string_view parse_moe_kernel(std::string_view name, std::string_view what) {
  std::string key;
  for (const char c : name.substr(0, 64)) {
    key += c == '_' ? '-' : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  for (const std::string_view family : kMoeKernelFamilies) {
    if (key == family && name.size() == family.size()) return family;
  }
  throw InvalidArgument(std::string(what) + ": '" + clip_utf8(name, 40) +
                        "' is not a MoE kernel family " + std::string(kFamilyList));
}

MoeTable with_moe_kernel(const MoeTable& table, std::string_view family,
                         const std::vector<const MoeTable*>& others, bool* borrowed) {
  if (!known_family(family)) {
    throw InvalidArgument("MoE kernel '" + clip_utf8(family, 40) + "' is not known " +
                          std::string(kFamilyList));
  }
  MoeTable out = table;
  out.kernels.clear();
  out.id = table.id + " (" + std::string(family) + " MoE kernels)";
  if (borrowed) *borrowed = false;
  // Every format any of the tables measures on the family.
  std::vector<const MoeTable*> all{&table};
  all.insert(all.end(), others.begin(), others.end());
  std::vector<std::string> given;  // formats a source already gave the family's entry
  for (const MoeTable* source : all) {
    if (!same_axes(*source, table)) continue;  // a grid of other axes cannot lend
    auto take = [&](const std::string& key, const MoeTable::Entry& entry) {
      if (std::find(given.begin(), given.end(), key) != given.end()) return;
      MoeTable::Entry e = entry;
      if (source != &table) {
        e.kernel += " (" + source->id + "'s measurement)";
        if (borrowed) *borrowed = true;
      }
      out.formats[key] = std::move(e);
      given.push_back(key);
    };
    // The source's entries of the family: its kernels map, and the formats it
    // measured on that family alone (the parser keeps the two apart).
    if (const auto fam = source->kernels.find(family); fam != source->kernels.end()) {
      for (const auto& [key, entry] : fam->second) take(key, entry);
    }
    for (const auto& [key, entry] : source->formats) {
      if (entry.family == family) take(key, entry);
    }
  }
  return out;
}

MoeTable parse_moe_table(std::string_view text, const std::string& origin) {
  const json doc = detail::parse_json_text(text, origin, std::size_t{8} << 20);
  StrictObject o(doc, origin, "");
  MoeTable t;
  const detail::KernelTableHeader h = detail::read_kernel_table_header(o, kMoeTableSchema);
  detail::set_identity(h, &t);
  detail::read_log2_axis(o, "log2_tokens", 48, &t.log2_tokens0, &t.token_points);
  detail::read_log2_axis(o, "log2_weight_bytes", 48, &t.log2_bytes0, &t.byte_points);
  detail::read_log2_axis(o, "log2_expert_width", 24, &t.log2_width0, &t.width_points);
  read_shape_fields(o);
  StrictObject formats = o.object("formats");
  for (auto it = formats.json().begin(); it != formats.json().end(); ++it) {
    if (!is_moe_table_key(it.key())) {
      formats.fail(it.key(),
                   "is not a MoE table format (bf16, fp8, fp8_block, nvfp4, int4, "
                   "mxfp4, mxfp4_mxfp8)");
    }
    StrictObject f = formats.object(it.key());
    MoeTable::Entry e = read_entry(f, t);
    if (f.optional("family")) {
      e.family = f.string("family");
      if (!known_family(e.family))
        f.fail("family", "is not a MoE kernel family " + std::string(kFamilyList));
    }
    if (f.optional("kernels")) {
      if (!e.family.empty()) f.fail("kernels", "a format of one family has no kernels map");
      StrictObject families = f.object("kernels");
      for (auto k = families.json().begin(); k != families.json().end(); ++k) {
        if (!known_family(k.key()))
          families.fail(k.key(), "is not a MoE kernel family " + std::string(kFamilyList));
        StrictObject one = families.object(k.key());
        t.kernels[k.key()].emplace(it.key(), read_entry(one, t));
        one.finish();
      }
      families.finish();
    }
    f.finish();
    t.formats.emplace(it.key(), std::move(e));
  }
  formats.finish();
  if (o.optional("routing_skew")) read_routing_skew(o, &t);
  o.finish();
  if (t.formats.empty()) throw ParseError(origin + ": formats: no format measured");
  return t;
}

std::string_view moe_table_key(Format weights, Format compute, bool weight_only) noexcept {
  if (weight_only) {
    // Dequantized to 16 bits before the math (Marlin, Triton W4A16 kernels).
    if (weights == Format::kInt4) return "int4";
    if (weights == Format::kMxfp4) return "mxfp4";
    return {};
  }
  switch (weights) {
    case Format::kBf16:
    case Format::kFp16:
      return "bf16";  // the same tensor-core rate and kernels
    case Format::kFp8:
      return "fp8";
    case Format::kNvfp4:
      return "nvfp4";
    case Format::kMxfp4:
      // MXFP4 weights with 8-bit activations on Blackwell's tensor cores.
      return compute == Format::kFp8 || compute == Format::kMxfp8 ? "mxfp4_mxfp8"
                                                                  : std::string_view{};
    default:
      return {};
  }
}

}  // namespace roofline
