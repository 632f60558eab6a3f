#include "roofline/strategy.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../common/embedded_data.h"
#include "../common/strict_json.h"
#include "roofline/error.h"

namespace roofline {
namespace {

using detail::StrictObject;

Format read_format(StrictObject& obj, std::string_view key, bool compute) {
  const std::string text = obj.string(key);
  Format f{};
  if (!try_parse_format(text, &f)) obj.fail(key, "unknown format '" + clip_utf8(text, 40) + "'");
  if (compute && !format_info(f).compute_format) {
    obj.fail(key,
             std::string(format_id(f)) + " is storage-only; activations need a compute format");
  }
  return f;
}

Format fallback_act(const Device& d) {
  return d.computes(Format::kBf16) ? Format::kBf16 : Format::kFp16;
}

bool act_computable(const Device& d, Format f) { return d.computes(f) && !std::isnan(d.peak(f)); }

}  // namespace

OpKind parse_op_kind(std::string_view name) {
  std::string names;
  for (int i = 0; i < kOpKindCount; ++i) {
    const auto kind = static_cast<OpKind>(i);
    if (op_name(kind) == name) return kind;
    names += (names.empty() ? "" : ", ") + std::string(op_name(kind));
  }
  throw NotFound("unknown operator '" + clip_utf8(name, 40) + "' (operators: " + names + ")");
}

Strategy parse_strategy(std::string_view text, const std::string& origin) {
  const auto doc_json = detail::parse_json_text(text, origin, 1 << 20);
  StrictObject doc(doc_json, origin, "");
  Strategy s;
  s.origin = origin;
  s.name = doc.string("name");
  if (s.name.empty() || s.name.size() > 64) doc.fail("name", "must be 1 to 64 characters");
  s.description = doc.string("description");
  s.weights = read_format(doc, "weights", false);
  if (doc.has("experts")) s.experts = read_format(doc, "experts", false);
  s.act = read_format(doc, "act", true);
  s.kv = read_format(doc, "kv", false);
  if (doc.has("expert_act")) s.expert_act = read_format(doc, "expert_act", true);
  StrictObject ops = doc.object("ops");
  for (auto it = ops.json().begin(); it != ops.json().end(); ++it) {
    OpKind kind{};
    try {
      kind = parse_op_kind(it.key());
    } catch (const NotFound& e) {
      ops.fail(it.key(), e.what());
    }
    StrictObject op = ops.object(it.key());
    OpPrecision& p = s.ops[static_cast<std::size_t>(kind)];
    if (op.has("weights")) p.weights = read_format(op, "weights", false);
    if (op.has("act")) p.act = read_format(op, "act", true);
    op.finish();
  }
  ops.finish();
  doc.finish();
  return s;
}

const std::vector<Strategy>& built_in_strategies() {
  static const std::vector<Strategy> strategies = [] {
    // Listed in the order people read them: baselines, then lighter to heavier quantization.
    const char* order[] = {"fp16_baseline",    "bf16_baseline",    "fp8_balanced",
                           "int8_smoothquant", "int4_weight_only", "nvfp4_blackwell",
                           "long_context_kv"};
    std::vector<Strategy> out;
    for (const char* name : order) {
      const std::string file = std::string("strategies/") + name + ".json";
      for (const auto& f : detail::embedded_files()) {
        if (f.name == file) out.push_back(parse_strategy(f.text, "built-in " + file));
      }
    }
    return out;
  }();
  return strategies;
}

Strategy load_strategy(std::string_view name_or_path) {
  for (const auto& s : built_in_strategies()) {
    if (s.name == name_or_path) return s;
  }
  const std::string path(name_or_path);
  std::error_code ec;
  if (name_or_path.find('/') != std::string_view::npos || path.ends_with(".json") ||
      std::filesystem::exists(path, ec)) {
    if (!std::filesystem::is_regular_file(path, ec))
      throw ParseError(path + ": cannot read: not a regular file");
    if (std::filesystem::file_size(path, ec) > (1 << 20))
      throw ParseError(path + ": too large for a strategy file");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buf;
    buf << in.rdbuf();
    return parse_strategy(buf.str(), path);
  }
  std::string names;
  for (const auto& s : built_in_strategies()) names += (names.empty() ? "" : ", ") + s.name;
  throw NotFound("unknown strategy '" + clip_utf8(path, 40) + "' (" + names +
                 ", or a strategy .json file)");
}

ResolvedStrategy resolve(const Strategy& st, const ModelSpec& model, const Device& d) {
  ResolvedStrategy r;
  r.name = st.name;
  PrecisionPlan& p = r.precision;
  p.follow_release = false;  // a strategy quantizes the layers it names
  p.weights = st.weights;
  p.experts = st.experts ? st.experts : std::optional<Format>(st.weights);
  p.kv = st.kv;
  p.act = st.act;
  if (!act_computable(d, st.act)) {
    p.act = fallback_act(d);
    r.act_fallback = true;
    r.notes.push_back(d.id + " has no " + std::string(format_id(st.act)) +
                      " tensor cores: activations run in " + std::string(format_id(p.act)) +
                      " instead");
  }
  if (st.expert_act && model.moe) {
    if (act_computable(d, *st.expert_act)) {
      p.expert_act = st.expert_act;
    } else {
      r.notes.push_back(d.id + " has no " + std::string(format_id(*st.expert_act)) +
                        " tensor cores: the experts' math runs as the engine's or the "
                        "activations' instead");
    }
  }
  for (int i = 0; i < kOpKindCount; ++i) {
    OpPrecision o = st.ops[static_cast<std::size_t>(i)];
    if (o.act && !act_computable(d, *o.act)) o.act = p.act;
    if (o.weights || o.act) {
      p.ops[static_cast<std::size_t>(i)] = o;
      p.has_op_overrides = true;
    }
  }
  auto check_weights = [&](Format w, Format a, const char* what) {
    const ComputePlan plan = plan_compute(d, w, a);
    if (plan.weight_only) {
      r.weight_only = true;
      r.notes.push_back(
          std::string(what) + " in " + std::string(format_id(w)) + " are weight-only on " + d.id +
          ": dequantized to " + std::string(format_id(plan.format)) + " before the math, at the " +
          std::string(format_id(plan.format)) + " rate (the dequantization work is counted)");
    }
  };
  check_weights(*p.weights, p.act, "weights");
  if (model.moe && p.experts != p.weights) check_weights(*p.experts, p.act, "expert weights");
  return r;
}

}  // namespace roofline
