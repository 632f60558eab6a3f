#include "roofline/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <mutex>

#include "../common/embedded_data.h"
#include "kernel_table.h"
#include "log_grid.h"
#include "roofline/error.h"
#include "strict_json.h"

namespace roofline {
namespace {

// A release's leading numbers ("1.2.0rc6" or "v1.2.0" -> 1, 2, 0): each
// dot-separated part's digits up to the first other character; none when the
// text does not start with a number (a nightly build, a branch name). A
// pre-release counts as its release.
std::vector<int> release_numbers(std::string_view v) {
  if (v.size() > 1 && (v[0] == 'v' || v[0] == 'V') && v[1] >= '0' && v[1] <= '9')
    v.remove_prefix(1);
  std::vector<int> out;
  while (!v.empty() && out.size() < 6) {
    std::size_t i = 0;
    int n = 0;
    while (i < v.size() && i < 6 && v[i] >= '0' && v[i] <= '9') n = n * 10 + (v[i++] - '0');
    if (i == 0) break;
    out.push_back(n);
    if (i >= v.size() || v[i] != '.') break;
    v.remove_prefix(i + 1);
  }
  return out;
}

// Whether release `have` comes before release `than` (missing parts are zeros).
bool release_before(std::vector<int> have, std::vector<int> than) {
  const std::size_t parts = std::max(have.size(), than.size());
  have.resize(parts, 0);
  than.resize(parts, 0);
  return std::lexicographical_compare(have.begin(), have.end(), than.begin(), than.end());
}

using detail::StrictObject;
using nlohmann::json;

constexpr std::string_view kGemmTableSchema = "roofline-gemm-efficiency-1";

Confidence parse_confidence(StrictObject& o, std::string_view key) {
  const std::string c = o.string(key);
  if (c == "vendor") return Confidence::kVendor;
  if (c == "derived") return Confidence::kDerived;
  if (c == "measured") return Confidence::kMeasured;
  o.fail(key, "must be vendor, derived or measured");
}

// The operator `name` names, in the list at `key`; fails on `o` otherwise.
OpKind op_kind_named(StrictObject& o, std::string_view key, const std::string& name) {
  for (int k = 0; k < kOpKindCount; ++k) {
    if (op_name(static_cast<OpKind>(k)) == name) return static_cast<OpKind>(k);
  }
  o.fail(key, "'" + clip_utf8(name, 24) + "' is not an operator name");
}

std::vector<std::string> strings(StrictObject& o, std::string_view key) {
  const json& v = o.required(key);
  if (!v.is_array()) o.fail(key, "expected an array of strings");
  std::vector<std::string> out;
  for (const auto& x : v) {
    if (!x.is_string()) o.fail(key, "expected an array of strings");
    out.push_back(x.get<std::string>());
  }
  return out;
}

// {"value": x, "confidence": ..., "source": key, "note": ...}; `lo`..`hi` bound the value.
// figure_fields reads these keys of an object that may hold others (its caller finishes it).
EngineFigure figure_fields(StrictObject& o, double lo, double hi,
                           const std::map<std::string, std::string>& sources) {
  EngineFigure f;
  f.value = o.non_negative("value");
  if (f.value < lo || f.value > hi) {
    o.fail("value", "must be from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  f.confidence = parse_confidence(o, "confidence");
  f.source = o.string("source");
  if (!sources.count(f.source)) o.fail("source", "names no entry of \"sources\"");
  f.note = o.optional_string("note", "");
  return f;
}

EngineFigure figure(StrictObject& parent, std::string_view key, double lo, double hi,
                    const std::map<std::string, std::string>& sources) {
  StrictObject o = parent.object(key);
  EngineFigure f = figure_fields(o, lo, hi, sources);
  o.finish();
  return f;
}

// "sampler": {"bytes_per_logit": <figure>, "flashinfer": {"bytes_per_logit":
// <figure>, "releases": [{"from": R, "before": R}, ...], "source": key,
// "note": text}, "note": text}: a release range open at an end omits it;
// the ranges ascend without overlapping.
void read_profile_sampler(StrictObject& pass, const std::map<std::string, std::string>& sources,
                          EngineScheduler* s) {
  StrictObject o = pass.object("sampler");
  // A logit is held in at least 16 bits; a sampler holds a few dozen bytes.
  s->kv_profile_sort_bytes = figure(o, "bytes_per_logit", 2, 256, sources);
  if (o.has("flashinfer")) {
    StrictObject f = o.object("flashinfer");
    s->kv_profile_flashinfer_bytes = figure(f, "bytes_per_logit", 2, 256, sources);
    s->kv_profile_flashinfer_source = f.string("source");
    if (!sources.count(s->kv_profile_flashinfer_source))
      f.fail("source", "names no entry of \"sources\"");
    const json& list = f.required("releases");
    if (!list.is_array() || list.empty() || list.size() > 8)
      f.fail("releases", "expected a list of 1 to 8 release ranges");
    std::vector<int> last;  // the previous range's end
    for (std::size_t i = 0; i < list.size(); ++i) {
      StrictObject r(list[i], f.origin(), "sampler.flashinfer.releases[" + std::to_string(i) + "]");
      EngineScheduler::ReleaseRange range;
      range.from = r.optional_string("from", "");
      range.before = r.optional_string("before", "");
      for (const auto& [key, v] : {std::pair{"from", &range.from}, {"before", &range.before}}) {
        if (!v->empty() && release_numbers(*v).empty())
          r.fail(key, "expected a release such as \"0.11.1\"");
      }
      if (range.from.empty() && range.before.empty()) r.fail("from", "a range needs an end");
      if (!range.from.empty() && !range.before.empty() &&
          !release_before(release_numbers(range.from), release_numbers(range.before)))
        r.fail("before", "must come after \"from\"");
      if (i > 0 &&
          (last.empty() || range.from.empty() || release_before(release_numbers(range.from), last)))
        r.fail("from", "ranges must ascend without overlapping");
      last = release_numbers(range.before);
      if (range.before.empty() && i + 1 < list.size())
        r.fail("before", "only the last range is open");
      r.finish();
      s->kv_profile_flashinfer_releases.push_back(std::move(range));
    }
    (void)f.optional_string("note", "");
    f.finish();
  }
  (void)o.optional_string("note", "");
  o.finish();
}

// The format `name` names, an entry of the list at `key`; fails on `o` otherwise.
Format format_named(StrictObject& o, std::string_view key, const std::string& name) {
  Format f{};
  if (!try_parse_format(name, &f)) o.fail(key, "'" + clip_utf8(name, 20) + "' is not a format id");
  return f;
}

json format_ids(const std::vector<Format>& formats) {
  json ids = json::array();
  for (Format f : formats) ids.push_back(format_id(f));
  return ids;
}

Format format_key(StrictObject& o, std::string_view key) {
  const std::string name = o.string(key);
  Format f{};
  if (!try_parse_format(name, &f)) o.fail(key, "'" + clip_utf8(name, 20) + "' is not a format id");
  return f;
}

// A rule's "source" (or the key `key`): a key of the profile's sources.
std::string rule_source(StrictObject& r, const std::map<std::string, std::string>& sources,
                        std::string_view key = "source") {
  std::string source = r.string(key);
  if (!sources.count(source)) r.fail(key, "names no entry of \"sources\"");
  return source;
}

// "benchmark_tuning": {"kv_memory": figure, "batch_cap": figure, "tokens_cap":
//   figure, "min_batch": figure, "min_tokens": figure,
//   "batch_tiers": [{"below": n, "step": n}, ..., {"step": n}], "token_tiers": [...],
//   "bytes_per_weight": [{"format": id, "bytes": b, "stored_elements_per_weight": e}],
//   "bytes_source": key, "chunked_prefill": {"value": false, "source": key},
//   "source": key, "note": text}
void read_benchmark_tuning(StrictObject& scheduler,
                           const std::map<std::string, std::string>& sources,
                           EngineScheduler::BenchmarkTuning* t) {
  StrictObject o = scheduler.object("benchmark_tuning");
  t->known = true;
  t->kv_memory = figure(o, "kv_memory", 0.05, 1, sources);
  t->batch_cap = figure(o, "batch_cap", 1, 1 << 20, sources);
  t->tokens_cap = figure(o, "tokens_cap", 16, 1 << 20, sources);
  t->min_batch = figure(o, "min_batch", 1, 1 << 20, sources);
  t->min_tokens = figure(o, "min_tokens", 1, 1 << 20, sources);
  // Ascending thresholds, the last tier open: every value meets a tier.
  const auto tiers = [&o](std::string_view key) {
    const json& list = o.required(key);
    if (!list.is_array() || list.empty() || list.size() > 8)
      o.fail(key, "expected a list of 1 to 8 tiers");
    std::vector<EngineScheduler::BenchmarkTuning::Tier> out;
    for (std::size_t i = 0; i < list.size(); ++i) {
      StrictObject r(list[i], o.origin(), std::string(key) + "[" + std::to_string(i) + "]");
      EngineScheduler::BenchmarkTuning::Tier tier;
      const bool last = i + 1 == list.size();
      if (last != !r.has("below")) r.fail("below", "every tier but the last (open) one has it");
      if (!last) {
        tier.below = r.non_negative("below");
        if (tier.below < 1 || tier.below > (1 << 20) ||
            (!out.empty() && tier.below <= out.back().below))
          r.fail("below", "must ascend, from 1 to 2^20");
      }
      tier.step = r.non_negative("step");
      if (tier.step < 1 || tier.step > 65536 || tier.step != std::floor(tier.step))
        r.fail("step", "must be a whole number from 1 to 65536");
      r.finish();
      out.push_back(tier);
    }
    return out;
  };
  t->batch_tiers = tiers("batch_tiers");
  t->token_tiers = tiers("token_tiers");
  const json& list = o.required("bytes_per_weight");
  if (!list.is_array() || list.empty() || list.size() > 16)
    o.fail("bytes_per_weight", "expected a list of 1 to 16 formats");
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject r(list[i], o.origin(), "bytes_per_weight[" + std::to_string(i) + "]");
    EngineScheduler::BenchmarkTuning::FormatBytes f;
    f.format = format_key(r, "format");
    f.bytes_per_element = r.non_negative("bytes");
    if (f.bytes_per_element < 0.125 || f.bytes_per_element > 8) r.fail("bytes", "must be 1/8 to 8");
    if (r.has("stored_elements_per_weight")) {
      f.stored_elements_per_weight = r.non_negative("stored_elements_per_weight");
      if (f.stored_elements_per_weight < 0.0625 || f.stored_elements_per_weight > 1)
        r.fail("stored_elements_per_weight", "must be 1/16 to 1");
    }
    for (const auto& seen : t->bytes_per_weight) {
      if (seen.format == f.format) r.fail("format", "is listed twice");
    }
    r.finish();
    t->bytes_per_weight.push_back(f);
  }
  t->bytes_source = rule_source(o, sources, "bytes_source");
  {
    StrictObject c = o.object("chunked_prefill");
    const json& v = c.required("value");
    if (!v.is_boolean()) c.fail("value", "expected true or false");
    t->chunked_prefill = v.get<bool>();
    t->chunked_source = rule_source(c, sources);
    (void)c.optional_string("note", "");
    c.finish();
  }
  t->source = rule_source(o, sources);
  (void)o.optional_string("note", "");
  o.finish();
}

// "scheduler": {"policy": {"value": "mixed" | "prefill_first", "source": key},
//   "chunked_prefill": {"value": true, "source": key},
//   "kv_admission": {"value": "prompt" | "whole", "source": key},
//   "pipeline": {"value": "micro_batches" | "one_batch", "source": key},
//   "max_running_with_pipeline": {"value": "per_micro_batch" | "per_instance",
//                                 "source": key} (optional; per_instance without it),
//   "batch_formed": {"value": "a_step_ahead" | "as_it_starts", "source": key,
//                    "with_pipeline_parallel": true, "since_version": "0.14.0"},
//   "prefix_cache": {"value": true, "source": key},
//   "batch_wait": {"value": true, "source": key} (optional; false without it),
//   "recv_interval": {"value": true, "source": key} (optional; false without it),
//   "adp_balance": {"value": true, "source": key} (optional; false without it),
//   "token_budget": figure, "max_running": figure, "note": text}
EngineScheduler parse_scheduler(StrictObject& parent,
                                const std::map<std::string, std::string>& sources) {
  StrictObject o = parent.object("scheduler");
  EngineScheduler s;
  s.known = true;
  const auto choice = [&](std::string_view key, std::string* source) {
    StrictObject c = o.object(key);
    const json v = c.required("value");
    *source = c.string("source");
    if (!sources.count(*source)) c.fail("source", "names no entry of \"sources\"");
    (void)c.optional_string("note", "");
    c.finish();
    return v;
  };
  const json policy = choice("policy", &s.policy_source);
  if (policy != "mixed" && policy != "prefill_first") {
    o.fail("policy", "value must be \"mixed\" or \"prefill_first\"");
  }
  s.prefill_first = policy == "prefill_first";
  const json chunked = choice("chunked_prefill", &s.chunked_source);
  if (!chunked.is_boolean()) o.fail("chunked_prefill", "value must be true or false");
  s.chunked_prefill = chunked.get<bool>();
  const json admission = choice("kv_admission", &s.admission_source);
  if (admission != "prompt" && admission != "whole") {
    o.fail("kv_admission", "value must be \"prompt\" or \"whole\"");
  }
  s.reserve_whole = admission == "whole";
  const json pipeline = choice("pipeline", &s.pipeline_source);
  if (pipeline != "micro_batches" && pipeline != "one_batch") {
    o.fail("pipeline", "value must be \"micro_batches\" or \"one_batch\"");
  }
  s.pipeline_micro_batches = pipeline == "micro_batches";
  if (o.has("max_running_with_pipeline")) {
    const json each = choice("max_running_with_pipeline", &s.running_cap_source);
    if (each != "per_micro_batch" && each != "per_instance") {
      o.fail("max_running_with_pipeline", "value must be \"per_micro_batch\" or \"per_instance\"");
    }
    s.running_cap_per_micro_batch = each == "per_micro_batch";
  }
  const json prefix = choice("prefix_cache", &s.prefix_cache_source);
  if (!prefix.is_boolean()) o.fail("prefix_cache", "value must be true or false");
  s.prefix_cache = prefix.get<bool>();
  if (o.has("batch_wait")) {
    const json wait = choice("batch_wait", &s.batch_wait_source);
    if (!wait.is_boolean()) o.fail("batch_wait", "value must be true or false");
    s.batch_wait = wait.get<bool>();
  }
  if (o.has("recv_interval")) {
    const json recv = choice("recv_interval", &s.recv_interval_source);
    if (!recv.is_boolean()) o.fail("recv_interval", "value must be true or false");
    s.recv_interval = recv.get<bool>();
  }
  if (o.has("adp_balance")) {
    const json balance = choice("adp_balance", &s.adp_balance_source);
    if (!balance.is_boolean()) o.fail("adp_balance", "value must be true or false");
    s.adp_balance = balance.get<bool>();
  }
  {
    StrictObject f = o.object("batch_formed");
    const json v = f.required("value");
    if (v != "a_step_ahead" && v != "as_it_starts") {
      f.fail("value", "must be \"a_step_ahead\" or \"as_it_starts\"");
    }
    s.formed_a_step_ahead = v == "a_step_ahead";
    s.formed_source = f.string("source");
    if (!sources.count(s.formed_source)) f.fail("source", "names no entry of \"sources\"");
    s.ahead_since = f.optional_string("since_version", "");
    if (!s.ahead_since.empty() && release_numbers(s.ahead_since).empty()) {
      f.fail("since_version", "expected a release such as \"0.14.0\"");
    }
    if (f.has("with_pipeline_parallel")) {
      const json& w = f.required("with_pipeline_parallel");
      if (!w.is_boolean()) f.fail("with_pipeline_parallel", "expected true or false");
      s.ahead_with_pipeline_parallel = w.get<bool>();
    }
    (void)f.optional_string("note", "");
    f.finish();
  }
  s.token_budget = figure(o, "token_budget", 16, 1 << 20, sources);
  s.max_running = figure(o, "max_running", 1, 1 << 20, sources);
  if (o.has("kv_block_tokens")) {
    s.kv_block_tokens = figure(o, "kv_block_tokens", 1, 1024, sources);
    if (s.kv_block_tokens.value != std::floor(s.kv_block_tokens.value))
      o.fail("kv_block_tokens", "must be a whole number of tokens");
  }
  {
    // "kv_memory": {"of": "total" | "free", <share figure>,
    //               "earlier": {"before_version": "0.20.0", <share figure>},
    //               "profile_pass": {"sampled_rows": "running" | "one",
    //                                "source": key, "note": text}}
    StrictObject k = o.object("kv_memory");
    const std::string of = k.string("of");
    if (of != "total" && of != "free") k.fail("of", "must be \"total\" or \"free\"");
    s.kv_memory_of_free = of == "free";
    s.kv_memory = figure_fields(k, 0.05, 1, sources);
    if (k.has("earlier")) {
      StrictObject b = k.object("earlier");
      s.kv_memory_before = b.string("before_version");
      if (release_numbers(s.kv_memory_before).empty())
        b.fail("before_version", "expected a release such as \"0.20.0\"");
      s.kv_memory_earlier = figure_fields(b, 0.05, 1, sources);
      b.finish();
    }
    if (k.has("profile_pass")) {
      StrictObject pass = k.object("profile_pass");
      s.kv_profile_pass_source = pass.string("source");
      if (!sources.count(s.kv_profile_pass_source))
        pass.fail("source", "names no entry of \"sources\"");
      const std::string rows = pass.string("sampled_rows");
      if (rows != "running" && rows != "one") pass.fail("sampled_rows", "must be running or one");
      s.kv_profile_pass_one_row = rows == "one";
      if (pass.has("sampler")) read_profile_sampler(pass, sources, &s);
      (void)pass.optional_string("note", "");
      pass.finish();
    }
    k.finish();
  }
  if (o.has("by_memory")) {
    const json& list = o.required("by_memory");
    if (!list.is_array() || list.size() > 8) o.fail("by_memory", "expected a list of at most 8");
    for (std::size_t i = 0; i < list.size(); ++i) {
      StrictObject r(list[i], o.origin(), "scheduler.by_memory[" + std::to_string(i) + "]");
      EngineScheduler::Rule rule;
      const double gib = r.non_negative("memory_at_least_gib");
      if (gib > 1e5) r.fail("memory_at_least_gib", "must be at most 100000");
      rule.memory_at_least_bytes = gib * 1073741824.0;
      rule.except_architecture = r.optional_string("except_architecture", "");
      const double budget = r.non_negative("token_budget");
      if (budget < 16 || budget > (1 << 20)) r.fail("token_budget", "must be from 16 to 2^20");
      rule.token_budget = static_cast<std::int64_t>(budget);
      if (r.has("max_running")) {
        const double cap = r.non_negative("max_running");
        if (cap < 1 || cap > (1 << 20)) r.fail("max_running", "must be from 1 to 2^20");
        rule.max_running = static_cast<std::int64_t>(cap);
      }
      rule.source = r.string("source");
      if (!sources.count(rule.source)) r.fail("source", "names no entry of \"sources\"");
      r.finish();
      s.rules.push_back(std::move(rule));
    }
  }
  if (o.has("aiconfigurator")) {
    StrictObject a = o.object("aiconfigurator");
    auto& x = s.aiconfigurator;
    x.known = true;
    x.prompt_headroom = figure(a, "prompt_headroom", 0, 1 << 20, sources);
    x.block_tokens = figure(a, "block_tokens", 1, 1024, sources);
    const auto flag = [&a](std::string_view key) {
      const json& v = a.required(key);
      if (!v.is_boolean()) a.fail(key, "expected true or false");
      return v.get<bool>();
    };
    x.prompt_within_chunk = flag("prompt_within_chunk");
    x.decode_budget_is_batch = flag("decode_budget_is_batch");
    x.mixed_steps = flag("mixed_steps");
    if (a.has("prefill_workers_ahead")) x.prefill_workers_ahead = flag("prefill_workers_ahead");
    if (a.has("prefix_cache")) x.prefix_cache = flag("prefix_cache");
    if (a.has("kv_memory")) x.kv_memory = figure(a, "kv_memory", 0.05, 1, sources);
    x.source = a.string("source");
    if (!sources.count(x.source)) a.fail("source", "names no entry of \"sources\"");
    (void)a.optional_string("note", "");
    a.finish();
  }
  if (o.has("benchmark_tuning")) read_benchmark_tuning(o, sources, &s.benchmark_tuning);
  s.note = o.optional_string("note", "");
  o.finish();
  return s;
}

// "file_mixes": [{"format": "q4_k_m", "experts": false, "source": key,
//   "roles": [{"ops": ["v_proj", "down_proj"], "format": "q6_k", "layers": "use_more_bits"}]}]
std::vector<FileMix> parse_file_mixes(StrictObject& o,
                                      const std::map<std::string, std::string>& sources) {
  std::vector<FileMix> mixes;
  const json& list = o.required("file_mixes");
  if (!list.is_array() || list.size() > 16) o.fail("file_mixes", "expected a list of at most 16");
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject m(list[i], o.origin(), o.path_of("file_mixes") + "[" + std::to_string(i) + "]");
    FileMix mix;
    mix.format = format_key(m, "format");
    const json& experts = m.required("experts");
    if (!experts.is_boolean()) m.fail("experts", "expected true or false");
    mix.experts = experts.get<bool>();
    mix.source = m.string("source");
    if (!sources.count(mix.source)) m.fail("source", "names no entry of \"sources\"");
    mix.note = m.optional_string("note", "");
    const json& roles = m.required("roles");
    if (!roles.is_array() || roles.empty() || roles.size() > 8)
      m.fail("roles", "expected a list of 1 to 8 roles");
    for (std::size_t r = 0; r < roles.size(); ++r) {
      StrictObject ro(roles[r], o.origin(), m.path_of("roles") + "[" + std::to_string(r) + "]");
      FileMix::Role role;
      for (const std::string& name : strings(ro, "ops")) {
        if (name == "non_expert") {
          role.non_expert = true;
          continue;
        }
        role.ops.push_back(op_kind_named(ro, "ops", name));
      }
      role.format = format_key(ro, "format");
      const std::string layers = ro.string("layers");
      if (layers == "all") {
        role.layers = FileMix::Layers::kAll;
      } else if (layers == "use_more_bits") {
        role.layers = FileMix::Layers::kUseMoreBits;
      } else {
        ro.fail("layers", "must be all or use_more_bits");
      }
      ro.finish();
      mix.roles.push_back(std::move(role));
    }
    m.finish();
    mixes.push_back(std::move(mix));
  }
  return mixes;
}

}  // namespace

double FileMix::layer_share(Layers rule, std::int64_t layers) noexcept {
  if (rule == Layers::kAll || layers <= 0) return 1;
  std::int64_t more = 0;
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::int64_t n8 = layers / 8;
    if (i < n8 || i >= 7 * layers / 8 || (i - n8) % 3 == 2) ++more;
  }
  return static_cast<double>(more) / static_cast<double>(layers);
}

const FileMix* EngineProfile::file_mix(Format weights, Format experts, bool moe) const noexcept {
  for (const FileMix& m : file_mixes) {
    if (m.experts ? (moe && experts == m.format) : weights == m.format) return &m;
  }
  return nullptr;
}

std::string_view efficiency_source_name(EfficiencySource s) noexcept {
  switch (s) {
    case EfficiencySource::kDevice:
      return "device";
    case EfficiencySource::kMeasuredTable:
      return "measured-table";
    case EfficiencySource::kDerivedTable:
      return "derived-table";
    case EfficiencySource::kIdeal:
      return "ideal";
    case EfficiencySource::kMeasuredMoeTable:
      return "measured-moe-table";
    case EfficiencySource::kDerivedMoeTable:
      return "derived-moe-table";
    case EfficiencySource::kEngine:
      return "engine";
    case EfficiencySource::kMeasuredAttentionTable:
      return "measured-attention-table";
    case EfficiencySource::kDerivedAttentionTable:
      return "derived-attention-table";
  }
  return "?";
}

const GemmTable::Entry* GemmTable::find(std::string_view key) const noexcept {
  const auto it = formats.find(key);
  return it == formats.end() ? nullptr : &it->second;
}

double GemmTable::efficiency(const Entry& e, double m, double nk) const noexcept {
  return detail::log2_grid_value(e.efficiency, log2_m0, m_points, log2_nk0, nk_points, m, nk);
}

double GemmTable::efficiency_log2(const Entry& e, double log2_m, double log2_nk) const noexcept {
  return detail::log2_grid_value_at(e.efficiency, log2_m0, m_points, log2_nk0, nk_points, log2_m,
                                    log2_nk);
}

namespace {

// A latency on a grid of log2(m k) from `log2_mk0`: linear between its points
// in log2(m k), held at its edges; 0 when empty.
double latency_by_mk(const std::vector<double>& grid, int log2_mk0, double mk) noexcept {
  const auto n = static_cast<int>(grid.size());
  if (n == 0) return 0;
  const double x =
      std::clamp(std::log2(std::max(mk, 1.0)) - log2_mk0, 0.0, static_cast<double>(n - 1));
  const int i = std::min(static_cast<int>(x), std::max(n - 2, 0));
  const int j = std::min(i + 1, n - 1);
  const double f = x - i;
  return (1 - f) * grid[static_cast<std::size_t>(i)] + f * grid[static_cast<std::size_t>(j)];
}

// Reads a GEMM table's latency grid over log2(m k) (fp8_dynamic_scale,
// fp8_static_quantize): its citation and values; the axis must start where
// `*log2_mk0` says once one grid has set it.
void read_mk_latency(StrictObject& o, std::string_view key, const detail::KernelTableHeader& h,
                     bool* axis_set, int* log2_mk0, std::vector<double>* out,
                     std::string* citation) {
  StrictObject d = o.object(key);
  *citation = detail::cited_source(d, h);
  const double rows = d.non_negative("rows");
  if (rows != std::floor(rows) || rows > 1e9)
    d.fail("rows", "must be a whole number of at most 1e9");
  int points = 0, start = 0;
  detail::read_log2_axis(d, "log2_mk", 62, &start, &points);
  if (*axis_set && start != *log2_mk0)
    d.fail("log2_mk", "must start where the table's other log2_mk grid does");
  *axis_set = true;
  *log2_mk0 = start;
  const json& latency = d.required("latency_s");
  if (!latency.is_array() || latency.size() != static_cast<std::size_t>(points))
    d.fail("latency_s", "expected one value per log2_mk point");
  for (const auto& v : latency) {
    if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() > 1)
      d.fail("latency_s", "every value must be in [0, 1] s");
    out->push_back(v.get<double>());
  }
  d.finish();
}

}  // namespace

double GemmTable::fp8_dynamic_scale(double mk) const noexcept {
  return latency_by_mk(fp8_dynamic_scale_s, log2_mk0, mk);
}

double GemmTable::fp8_static_quantize(double mk) const noexcept {
  return latency_by_mk(fp8_static_quantize_s, log2_mk0, mk);
}

GemmTable parse_gemm_table(std::string_view text, const std::string& origin) {
  const json doc = detail::parse_json_text(text, origin, std::size_t{8} << 20);
  StrictObject o(doc, origin, "");
  GemmTable t;
  const detail::KernelTableHeader h = detail::read_kernel_table_header(o, kGemmTableSchema);
  detail::set_identity(h, &t);
  detail::read_log2_axis(o, "log2_m", 40, &t.log2_m0, &t.m_points);
  detail::read_log2_axis(o, "log2_nk", 40, &t.log2_nk0, &t.nk_points);
  StrictObject formats = o.object("formats");
  for (auto it = formats.json().begin(); it != formats.json().end(); ++it) {
    StrictObject f = formats.object(it.key());
    GemmTable::Entry e;
    e.kernel = f.string("kernel");
    for (const char* key : {"rows", "capped_rows"}) {
      const double v = f.non_negative(key);
      if (v != std::floor(v) || v > 1e9) f.fail(key, "must be a whole number of at most 1e9");
      (std::string_view(key) == "rows" ? e.rows : e.capped_rows) = static_cast<std::int64_t>(v);
    }
    e.floor_s = f.non_negative("floor_s");
    const json& grid = f.required("efficiency");
    if (!grid.is_array() || grid.size() != static_cast<std::size_t>(t.m_points)) {
      f.fail("efficiency", "expected one row per log2_m point");
    }
    for (const auto& row : grid) {
      if (!row.is_array() || row.size() != static_cast<std::size_t>(t.nk_points)) {
        f.fail("efficiency", "expected one value per log2_nk point in every row");
      }
      for (const auto& v : row) {
        if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1) {
          f.fail("efficiency", "every value must be in (0, 1]");
        }
        e.efficiency.push_back(v.get<float>());
      }
    }
    f.finish();
    t.formats.emplace(it.key(), std::move(e));
  }
  formats.finish();
  bool mk_axis = false;
  for (const std::string_view key : {"fp8_dynamic_scale", "fp8_static_quantize"}) {
    if (!o.has(key)) continue;
    const bool dynamic = key == "fp8_dynamic_scale";
    read_mk_latency(o, key, h, &mk_axis, &t.log2_mk0,
                    dynamic ? &t.fp8_dynamic_scale_s : &t.fp8_static_quantize_s,
                    dynamic ? &t.fp8_dynamic_scale_citation : &t.fp8_static_quantize_citation);
    if (!t.formats.contains("fp8")) o.fail(key, "the table measures no fp8 GEMM");
  }
  o.finish();
  if (t.formats.empty()) throw ParseError(origin + ": formats: no format measured");
  return t;
}

GemmTable gemm_table_from_measurements(const std::vector<GemmMeasurement>& rows,
                                       const std::string& device, const std::string& engine,
                                       const std::string& citation) {
  GemmTable t;
  t.device = device;
  t.engine = engine;
  t.id = device + "-" + engine;
  t.engine_version = "measured";
  t.confidence = "measured";
  t.citation = citation;
  auto cell = [](double v) { return static_cast<int>(std::lround(std::log2(std::max(v, 1.0)))); };
  int m_lo = 40, m_hi = 0, nk_lo = 40, nk_hi = 0;
  std::vector<const GemmMeasurement*> usable;
  for (const GemmMeasurement& r : rows) {
    if (!(r.efficiency > 0) || !std::isfinite(r.efficiency) || !(r.m >= 1) || !(r.nk >= 1) ||
        r.format_key.empty() || cell(r.m) > 40 || cell(r.nk) > 40)
      continue;
    usable.push_back(&r);
    m_lo = std::min(m_lo, cell(r.m));
    m_hi = std::max(m_hi, cell(r.m));
    nk_lo = std::min(nk_lo, cell(r.nk));
    nk_hi = std::max(nk_hi, cell(r.nk));
  }
  if (usable.empty()) throw Unsupported(t.id + ": no measured GEMM to make a table of");
  // At least two points per axis (the interpolation needs a cell to either side).
  if (m_hi == m_lo) m_hi = m_lo + 1;
  if (nk_hi == nk_lo) nk_hi = nk_lo + 1;
  t.log2_m0 = m_lo;
  t.log2_nk0 = nk_lo;
  t.m_points = m_hi - m_lo + 1;
  t.nk_points = nk_hi - nk_lo + 1;
  std::map<std::string, std::vector<std::vector<double>>> cells;  // key -> cell -> values
  for (const GemmMeasurement* r : usable) {
    auto& grid = cells[r->format_key];
    grid.resize(static_cast<std::size_t>(t.m_points * t.nk_points));
    grid[static_cast<std::size_t>((cell(r->m) - m_lo) * t.nk_points + cell(r->nk) - nk_lo)]
        .push_back(std::min(r->efficiency, 1.0));
    GemmTable::Entry& e = t.formats[r->format_key];
    if (e.kernel.empty()) e.kernel = r->kernel;
    e.floor_s = e.rows == 0 ? r->time_s : std::min(e.floor_s, r->time_s);
    ++e.rows;
    e.capped_rows += r->efficiency > 1 ? 1 : 0;
  }
  for (auto& [key, grid] : cells) {
    GemmTable::Entry& e = t.formats[key];
    std::vector<double> value(grid.size(), 0);
    for (std::size_t i = 0; i < grid.size(); ++i) {
      auto& v = grid[i];
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      value[i] = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    }
    const int M = t.m_points, NK = t.nk_points;
    auto at = [&](int i, int j) -> double& { return value[static_cast<std::size_t>(i * NK + j)]; };
    std::vector<double> filled = value;
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < NK; ++j) {
        if (at(i, j) > 0) continue;
        double best = 0;
        for (int d = 1; d < NK && best == 0; ++d) {  // nearest in the row
          if (j - d >= 0 && at(i, j - d) > 0) best = at(i, j - d);
          if (best == 0 && j + d < NK && at(i, j + d) > 0) best = at(i, j + d);
        }
        for (int d = 1; d < M && best == 0; ++d) {  // then in the column
          if (i - d >= 0 && at(i - d, j) > 0) best = at(i - d, j);
          if (best == 0 && i + d < M && at(i + d, j) > 0) best = at(i + d, j);
        }
        filled[static_cast<std::size_t>(i * NK + j)] = best;
      }
    }
    // A cell with neither a measured row nor column: the format's median.
    std::vector<double> measured;
    for (double v : value) {
      if (v > 0) measured.push_back(v);
    }
    std::sort(measured.begin(), measured.end());
    const double fallback = measured[measured.size() / 2];
    e.efficiency.clear();
    for (double v : filled) e.efficiency.push_back(static_cast<float>(v > 0 ? v : fallback));
  }
  return t;
}

nlohmann::json to_json(const GemmTable& t) {
  json axis_m = json::array(), axis_nk = json::array();
  for (int i = 0; i < t.m_points; ++i) axis_m.push_back(t.log2_m0 + i);
  for (int j = 0; j < t.nk_points; ++j) axis_nk.push_back(t.log2_nk0 + j);
  json formats = json::object();
  for (const auto& [key, e] : t.formats) {
    json grid = json::array();
    for (int i = 0; i < t.m_points; ++i) {
      json row = json::array();
      for (int j = 0; j < t.nk_points; ++j)
        row.push_back(e.efficiency[static_cast<std::size_t>(i * t.nk_points + j)]);
      grid.push_back(std::move(row));
    }
    formats[key] = {{"kernel", e.kernel},
                    {"rows", e.rows},
                    {"capped_rows", e.capped_rows},
                    {"floor_s", e.floor_s},
                    {"efficiency", std::move(grid)}};
  }
  json doc = {{"schema", kGemmTableSchema},
              {"device", t.device},
              {"engine", t.engine},
              {"engine_version", t.engine_version},
              {"sources", {{"measurement", t.citation}}},
              {"confidence", t.confidence},
              {"source", "measurement"},
              {"method",
               "median of ideal/latency per cell of log2(m) x log2(n*k), capped at 1; empty cells "
               "from the nearest measured cell"},
              {"log2_m", axis_m},
              {"log2_nk", axis_nk},
              {"formats", formats}};
  // The latency grids over log2(m k), each with its citation.
  const auto mk_grid = [&](const char* key, const char* source, const std::vector<double>& grid,
                           const std::string& citation) {
    if (grid.empty()) return;
    json axis_mk = json::array();
    for (std::size_t i = 0; i < grid.size(); ++i)
      axis_mk.push_back(t.log2_mk0 + static_cast<int>(i));
    doc["sources"][source] = citation;
    doc[key] = {{"source", source}, {"rows", 0}, {"log2_mk", axis_mk}, {"latency_s", grid}};
  };
  mk_grid("fp8_dynamic_scale", "dynamic-scale", t.fp8_dynamic_scale_s,
          t.fp8_dynamic_scale_citation);
  mk_grid("fp8_static_quantize", "static-quantize", t.fp8_static_quantize_s,
          t.fp8_static_quantize_citation);
  return doc;
}

const EngineScheduler::Rule* EngineScheduler::rule_for(const Device& d) const noexcept {
  for (const Rule& r : rules) {
    if (d.memory_capacity_bytes.value >= r.memory_at_least_bytes &&
        (r.except_architecture.empty() || r.except_architecture != d.architecture)) {
      return &r;
    }
  }
  return nullptr;
}

const PaddedMoeLayout* EngineProfile::padded_moe_for(std::string_view version, const Device& d,
                                                     std::int64_t tp) const noexcept {
  if (!padded_moe.on || d.architecture != padded_moe.architecture) return nullptr;
  std::vector<int> have = release_numbers(version);
  if (have.empty()) return nullptr;  // the current release
  if (release_before(have, release_numbers(padded_moe.from_version)) ||
      !release_before(have, release_numbers(padded_moe.before_version)))
    return nullptr;
  if (padded_moe.excluded_tp > 0 && tp == padded_moe.excluded_tp &&
      !release_before(have, release_numbers(padded_moe.excluded_tp_from)))
    return nullptr;
  return &padded_moe;
}

const MoeKernelRelease* EngineProfile::moe_kernel_release(std::string_view version,
                                                          const Device& d) const noexcept {
  if (moe_kernel_releases.empty()) return nullptr;
  const std::vector<int> have = release_numbers(version);  // empty: the current release
  for (const MoeKernelRelease& r : moe_kernel_releases) {
    if (r.architecture != d.architecture) continue;
    if (r.before_version.empty()) return &r;  // every release
    if (!have.empty() && release_before(have, release_numbers(r.before_version))) return &r;
  }
  return nullptr;
}

const WindowMasking* EngineProfile::window_masking_for(std::string_view version, const Device& d,
                                                       bool* prompt_kernel,
                                                       bool* split_kv) const noexcept {
  *prompt_kernel = *split_kv = false;
  const std::vector<int> have = release_numbers(version);
  if (have.empty()) return nullptr;  // the current release
  for (const WindowMasking& r : window_masking) {
    if (r.architecture != d.architecture) continue;
    const auto masks = [&have](const std::string& before) {
      return !before.empty() && release_before(have, release_numbers(before));
    };
    *prompt_kernel = masks(r.prompt_kernel_before);
    *split_kv = masks(r.split_kv_before);
    return *prompt_kernel || *split_kv ? &r : nullptr;
  }
  return nullptr;
}

const MoeWeightPadding* EngineProfile::moe_padding(std::string_view format, std::string_view chosen,
                                                   const Device& d) const noexcept {
  for (const MoeWeightPadding& r : moe_weight_padding) {
    if (r.format != format) continue;
    if (!chosen.empty() ? r.family == chosen
                        : std::find(r.default_on.begin(), r.default_on.end(), d.architecture) !=
                              r.default_on.end())
      return &r;
  }
  return nullptr;
}

bool EngineScheduler::a_step_ahead(std::int64_t pp, std::string_view version) const noexcept {
  if (!formed_a_step_ahead || (pp > 1 && !ahead_with_pipeline_parallel)) return false;
  std::vector<int> have = release_numbers(version);
  if (ahead_since.empty() || have.empty()) return true;
  return !release_before(std::move(have), release_numbers(ahead_since));
}

std::int64_t EngineScheduler::budget_on(const Device& d) const noexcept {
  const Rule* r = rule_for(d);
  return r ? r->token_budget : static_cast<std::int64_t>(token_budget.value);
}

std::int64_t EngineScheduler::running_on(const Device& d) const noexcept {
  const Rule* r = rule_for(d);
  return r && r->max_running > 0 ? r->max_running : static_cast<std::int64_t>(max_running.value);
}

double EngineScheduler::kv_memory_share(std::string_view version,
                                        bool aiconfigurator_deployment) const noexcept {
  if (aiconfigurator_deployment && aiconfigurator.kv_memory.known())
    return aiconfigurator.kv_memory.value;
  if (kv_memory_before.empty()) return kv_memory.value;
  const std::vector<int> have = release_numbers(version);
  return !have.empty() && release_before(have, release_numbers(kv_memory_before))
             ? kv_memory_earlier.value
             : kv_memory.value;
}

bool EngineScheduler::kv_profile_flashinfer(std::string_view version) const noexcept {
  const std::vector<int> have = release_numbers(version);
  for (const ReleaseRange& r : kv_profile_flashinfer_releases) {
    if (have.empty()) {
      if (r.before.empty()) return true;  // the current release: the open range's
      continue;
    }
    if ((r.from.empty() || !release_before(have, release_numbers(r.from))) &&
        (r.before.empty() || release_before(have, release_numbers(r.before))))
      return true;
  }
  return false;
}

double EngineScheduler::kv_profile_sampler_bytes(std::string_view version) const noexcept {
  if (!kv_profile_sort_bytes.known()) return 0;
  return kv_profile_flashinfer(version) ? kv_profile_flashinfer_bytes.value
                                        : kv_profile_sort_bytes.value;
}

double EngineScheduler::kv_room_bytes(double share, double capacity, double weights,
                                      double activations) const noexcept {
  return kv_memory_of_free ? share * (capacity - weights - activations)
                           : share * capacity - weights - activations;
}

std::int64_t EngineProfile::captured_size(const Device& d, std::int64_t tp,
                                          std::int64_t captured) const noexcept {
  if (captured > 0) return captured;
  double cap = graph_max_batch.known() ? graph_max_batch.value : 0;
  const auto& small = graph_max_batch_small;
  if (small.below_tp > 0 && tp < small.below_tp &&
      d.memory_capacity_bytes.value < small.below_memory_bytes)
    cap = small.max_batch.value;
  return static_cast<std::int64_t>(cap);
}

bool EngineProfile::replays_graphs(const Device& d, std::int64_t tp, std::int64_t batch,
                                   bool prompt_tokens, std::int64_t captured) const noexcept {
  if (!decode_cuda_graphs || prompt_tokens) return false;
  const std::int64_t cap = captured_size(d, tp, captured);
  return cap <= 0 || batch <= cap;
}

bool EngineProfile::runs(Format f) const noexcept {
  return std::find(unsupported.begin(), unsupported.end(), f) == unsupported.end();
}

const EngineProfile::ExpertActivation* EngineProfile::expert_activation(
    Format weights, Format act, const Device& device) const noexcept {
  if (act != Format::kBf16 && act != Format::kFp16) return nullptr;
  for (const ExpertActivation& r : expert_activations) {
    if (r.weights != weights || !device.computes(r.act)) continue;
    for (std::uint64_t a : r.architecture_keys)
      if (a == device.architecture_key) return &r;
  }
  return nullptr;
}

const EngineProfile::ActivationRule* EngineProfile::weight_activation(
    Format weights, const Device& device) const noexcept {
  for (const ActivationRule& r : weight_activations) {
    if (r.weights != weights || !device.computes(r.act)) continue;
    for (std::uint64_t a : r.architecture_keys)
      if (a == device.architecture_key) return &r;
  }
  return nullptr;
}

bool EngineProfile::apply_weight_activation(PrecisionPlan* plan, Format native,
                                            const Device& device) const noexcept {
  const ActivationRule* rule = weight_activation(plan->weights.value_or(native), device);
  if (rule == nullptr) return false;
  plan->act = rule->act;
  plan->act_from_engine = true;
  return true;
}

const EngineProfile::LatentCacheCast* EngineProfile::casts_latent_cache(
    const ModelSpec& model, Format kv, const Device& device) const noexcept {
  if (!latent_cache_cast || kv != Format::kFp8 || model.mla.kv_lora_rank <= 0 ||
      model.sparse_attention)
    return nullptr;
  for (std::uint64_t a : latent_cache_cast->architecture_keys)
    if (a == device.architecture_key) return &*latent_cache_cast;
  return nullptr;
}

const EngineProfile::SparseMla::Path* EngineProfile::sparse_mla_path(
    const ModelSpec& model, Format kv, const Device& device) const noexcept {
  if (!sparse_mla || !model.sparse_attention || model.attention != AttentionKind::kMla)
    return nullptr;
  const Format cache = kv == Format::kFp16 ? Format::kBf16 : kv;
  for (const SparseMla::Path& p : sparse_mla->paths)
    if (p.architecture_key == device.architecture_key && (!p.kv || *p.kv == cache)) return &p;
  return nullptr;
}

std::string EngineProfile::citation(const std::string& key) const {
  const auto it = sources.find(key);
  return it == sources.end() ? std::string() : it->second;
}

namespace {

// "prompt" / "decode": {"head_tile": <figure>, "efficiency": <figure>}
EngineProfile::SparseMla::Kernel sparse_mla_kernel(
    StrictObject& parent, std::string_view key, const std::map<std::string, std::string>& sources) {
  StrictObject o = parent.object(key);
  EngineProfile::SparseMla::Kernel k;
  // A tile of query heads: an MMA's rows (64) or two CTAs' (128).
  k.head_tile = figure(o, "head_tile", 1, 256, sources);
  if (k.head_tile.value != std::floor(k.head_tile.value))
    o.fail("head_tile", "a tile is whole heads");
  k.efficiency = figure(o, "efficiency", 0.01, 1.0, sources);
  o.finish();
  return k;
}

// "sparse_mla": {"kernel": text, "mha_prompts_up_to": <figure>, "paths": [{"architecture": a,
// "kv": "bf16" | "fp8", "prompt": kernel, "decode": kernel, "prompt_on_decode_kernel_below":
// <figure>, "note": text}, ...], "source": key}: the first path of the device's architecture
// and the cache's format (or of any format, without "kv") applies.
EngineProfile::SparseMla parse_sparse_mla(StrictObject& parent,
                                          const std::map<std::string, std::string>& sources) {
  StrictObject r = parent.object("sparse_mla");
  EngineProfile::SparseMla rule;
  const json& list = r.required("paths");
  if (!list.is_array() || list.empty() || list.size() > 16)
    r.fail("paths", "expected a list of 1 to 16 paths");
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject a(list[i], r.origin(), "sparse_mla.paths[" + std::to_string(i) + "]");
    EngineProfile::SparseMla::Path p;
    p.architecture = a.string("architecture");
    p.architecture_key = architecture_key(p.architecture);
    if (a.has("kv")) {
      Format f{};
      const std::string id = a.string("kv");
      if (!try_parse_format(id, &f) || (f != Format::kBf16 && f != Format::kFp8))
        a.fail("kv", "expected bf16 or fp8");
      p.kv = f;
    }
    for (const auto& other : rule.paths)
      if (other.architecture_key == p.architecture_key && (!other.kv || other.kv == p.kv))
        a.fail("architecture", "'" + p.architecture + "' has an earlier path for this cache");
    p.prompt = sparse_mla_kernel(a, "prompt", sources);
    if (a.has("decode")) p.decode = sparse_mla_kernel(a, "decode", sources);
    if (a.has("prompt_on_decode_kernel_below")) {
      if (!p.decode) a.fail("prompt_on_decode_kernel_below", "the path has no decode kernel");
      p.prompt_on_decode_kernel_below =
          figure(a, "prompt_on_decode_kernel_below", 1, 1024, sources);
    }
    p.note = a.optional_string("note", "");
    a.finish();
    rule.paths.push_back(std::move(p));
  }
  if (r.has("mha_prompts_up_to")) {
    rule.mha_prompts_up_to = figure(r, "mha_prompts_up_to", 1, 1e7, sources);
    if (rule.mha_prompts_up_to.value != std::floor(rule.mha_prompts_up_to.value))
      r.fail("mha_prompts_up_to", "must be a whole number of tokens");
  }
  rule.kernel = r.string("kernel");
  rule.source = r.string("source");
  if (!sources.count(rule.source)) r.fail("source", "names no entry of \"sources\"");
  r.finish();
  return rule;
}

// A list of 1 to 16 rules under `key`.
const json& rule_list(StrictObject& parent, std::string_view key) {
  const json& list = parent.required(key);
  if (!list.is_array() || list.empty() || list.size() > 16)
    parent.fail(key, "expected a list of 1 to 16 rules");
  return list;
}

// A rule's "family": one of kMoeKernelFamilies, in its static storage.
std::string moe_family(StrictObject& r) {
  try {
    return std::string(parse_moe_kernel(r.string("family"), "family"));
  } catch (const InvalidArgument& e) {
    r.fail("family", e.what());
  }
}

// A rule list's "architecture", at most one rule each.
template <typename Rule>
std::string rule_architecture(StrictObject& r, const std::vector<Rule>& earlier) {
  std::string architecture = r.string("architecture");
  if (architecture.empty()) r.fail("architecture", "must name the architecture");
  for (const Rule& other : earlier)
    if (other.architecture == architecture)
      r.fail("architecture", "'" + architecture + "' has an earlier rule");
  return architecture;
}

// "moe_kernel_releases": [{"format": MoE table key, "architecture": a, "family": one of
// kMoeKernelFamilies, "before_version": release (absent: every release), "measured_as": MoE
// table key (optional), "source": key, "note": text}, ...]: at most one rule per architecture.
std::vector<MoeKernelRelease> parse_moe_kernel_releases(
    StrictObject& parent, const std::map<std::string, std::string>& sources) {
  const json& list = rule_list(parent, "moe_kernel_releases");
  std::vector<MoeKernelRelease> rules;
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject r(list[i], parent.origin(), "moe_kernel_releases[" + std::to_string(i) + "]");
    MoeKernelRelease x;
    x.format = r.string("format");
    if (!is_moe_table_key(x.format))
      r.fail("format",
             "expected a MoE table key (bf16, fp8, fp8_block, nvfp4, int4, mxfp4, "
             "mxfp4_mxfp8)");
    x.architecture = rule_architecture(r, rules);
    x.family = moe_family(r);
    x.before_version = r.optional_string("before_version", "");
    if (r.has("before_version") && release_numbers(x.before_version).empty())
      r.fail("before_version", "expected a release such as \"0.12.0\" (absent: every release)");
    x.measured_as = r.optional_string("measured_as", "");
    if (r.has("measured_as") && (!is_moe_table_key(x.measured_as) || x.measured_as == x.format))
      r.fail("measured_as", "expected a MoE table key other than the rule's format");
    x.source = rule_source(r, sources);
    (void)r.optional_string("note", "");
    r.finish();
    rules.push_back(std::move(x));
  }
  return rules;
}

// "window_masking": [{"architecture": a, "kernel": text, "prompt_kernel_before": release,
// "split_kv_before": release (either may be absent, not both), "split_kv_max_programs":
// <figure>, "query_rows": <figure>, "source": key, "note": text}, ...]: at most one rule per
// architecture.
std::vector<WindowMasking> parse_window_masking(StrictObject& parent,
                                                const std::map<std::string, std::string>& sources) {
  const json& list = rule_list(parent, "window_masking");
  std::vector<WindowMasking> rules;
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject r(list[i], parent.origin(), "window_masking[" + std::to_string(i) + "]");
    WindowMasking x;
    x.architecture = rule_architecture(r, rules);
    x.kernel = r.string("kernel");
    if (x.kernel.empty()) r.fail("kernel", "must name the kernel");
    for (const auto& [key, v] : {std::pair{"prompt_kernel_before", &x.prompt_kernel_before},
                                 {"split_kv_before", &x.split_kv_before}}) {
      *v = r.optional_string(key, "");
      if (r.has(key) && release_numbers(*v).empty())
        r.fail(key, "expected a release such as \"0.14.0\"");
    }
    if (x.prompt_kernel_before.empty() && x.split_kv_before.empty())
      r.fail("split_kv_before", "a rule names the releases of at least one kernel");
    // A grid of at most a few thousand programs; a query tile of 1 to 256 rows.
    x.split_kv_max_programs = figure(r, "split_kv_max_programs", 1, 4096, sources);
    x.query_rows = figure(r, "query_rows", 1, 256, sources);
    x.source = rule_source(r, sources);
    (void)r.optional_string("note", "");
    r.finish();
    rules.push_back(std::move(x));
  }
  return rules;
}

// "moe_table_stand_ins": [{"architecture": a, "engine": engine id, "source": key, "note":
// text}, ...]: at most one per architecture; the registry checks the engine exists.
std::vector<MoeTableStandIn> parse_moe_table_stand_ins(
    StrictObject& parent, const std::map<std::string, std::string>& sources) {
  const json& list = rule_list(parent, "moe_table_stand_ins");
  std::vector<MoeTableStandIn> rules;
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject r(list[i], parent.origin(), "moe_table_stand_ins[" + std::to_string(i) + "]");
    MoeTableStandIn x;
    x.architecture = rule_architecture(r, rules);
    x.engine = r.string("engine");
    if (x.engine.empty()) r.fail("engine", "must name the engine whose tables stand in");
    x.source = rule_source(r, sources);
    (void)r.optional_string("note", "");
    r.finish();
    rules.push_back(std::move(x));
  }
  return rules;
}

// "moe_weight_padding": [{"format": format id, "family": one of kMoeKernelFamilies,
// "intermediate_multiple": n, "hidden_multiple": n, "default_on": [architecture, ...],
// "source": key, "note": text}, ...]: at most one rule per format and family.
std::vector<MoeWeightPadding> parse_moe_weight_padding(
    StrictObject& parent, const std::map<std::string, std::string>& sources) {
  const json& list = rule_list(parent, "moe_weight_padding");
  std::vector<MoeWeightPadding> rules;
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject r(list[i], parent.origin(), "moe_weight_padding[" + std::to_string(i) + "]");
    MoeWeightPadding x;
    x.format = std::string(format_id(format_key(r, "format")));
    x.family = moe_family(r);
    for (const auto& other : rules)
      if (other.format == x.format && other.family == x.family)
        r.fail("family", "'" + x.family + "' has an earlier rule for " + x.format);
    const auto multiple = [&](std::string_view key) {
      const json& v = r.required(key);
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 4096)
        r.fail(key, "expected a whole multiple from 1 to 4096");
      return v.get<std::int64_t>();
    };
    x.intermediate_multiple = multiple("intermediate_multiple");
    x.hidden_multiple = multiple("hidden_multiple");
    if (r.has("default_on")) x.default_on = strings(r, "default_on");
    x.source = r.string("source");
    if (!sources.count(x.source)) r.fail("source", "names no entry of \"sources\"");
    (void)r.optional_string("note", "");
    r.finish();
    rules.push_back(std::move(x));
  }
  return rules;
}

}  // namespace

EngineProfile parse_engine(std::string_view text, const std::string& origin) {
  const json doc = detail::parse_json_text(text, origin, std::size_t{1} << 20);
  StrictObject o(doc, origin, "");
  EngineProfile e;
  e.origin = origin;
  e.id = o.string("id");
  if (e.id.empty() || e.id.size() > 32 || e.id != detail::ascii_lower(e.id))
    o.fail("id", "a lower-case id of 1 to 32 characters");
  e.name = o.string("name");
  e.kind = o.string("kind");
  if (e.kind != "serving" && e.kind != "local" && e.kind != "reference") {
    o.fail("kind", "must be serving, local or reference");
  }
  e.versions = o.string("versions");
  e.sources = detail::read_sources(o);
  {
    StrictObject g = o.object("decode_cuda_graphs");
    const json& v = g.required("value");
    if (!v.is_boolean()) g.fail("value", "expected true or false");
    e.decode_cuda_graphs = v.get<bool>();
    e.decode_cuda_graphs_source = g.string("source");
    if (!e.sources.count(e.decode_cuda_graphs_source))
      g.fail("source", "names no entry of \"sources\"");
    (void)g.optional_string("note", "");
    if (g.has("max_batch")) e.graph_max_batch = figure(g, "max_batch", 1, 1 << 20, e.sources);
    if (g.has("max_batch_small")) {
      StrictObject small = g.object("max_batch_small");
      const double tp = small.non_negative("below_tp");
      if (tp < 2 || tp > 4096 || tp != std::floor(tp)) {
        small.fail("below_tp", "must be a whole number from 2 to 4096");
      }
      const double gib = small.non_negative("below_memory_gib");
      if (!(gib > 0) || gib > 1e5)
        small.fail("below_memory_gib", "must be above 0, at most 100000");
      e.graph_max_batch_small.below_tp = static_cast<std::int64_t>(tp);
      e.graph_max_batch_small.below_memory_bytes = gib * 1073741824.0;
      e.graph_max_batch_small.max_batch = figure(small, "max_batch", 1, 1 << 20, e.sources);
      small.finish();
    }
    if (!e.decode_cuda_graphs &&
        (e.graph_max_batch.known() || e.graph_max_batch_small.below_tp > 0))
      g.fail("max_batch", "given for an engine without decode graphs");
    if (e.graph_max_batch_small.below_tp > 0 &&
        (!e.graph_max_batch.known() ||
         e.graph_max_batch_small.max_batch.value > e.graph_max_batch.value)) {
      g.fail("max_batch_small", "needs max_batch, and at most it");
    }
    g.finish();
  }
  // A reference engine (today's realistic mode) leaves these to the device.
  if (o.has("launch_overhead_s")) {
    StrictObject l = o.object("launch_overhead_s");
    e.launch_decode_s = figure(l, "decode", 0, 1e-3, e.sources);
    e.launch_prefill_s = figure(l, "prefill", 0, 1e-3, e.sources);
    if (l.has("eager")) e.launch_eager_s = figure(l, "eager", 0, 1e-3, e.sources);
    if (l.has("prefill_before")) {
      StrictObject b = l.object("prefill_before");
      try {
        e.launch_prefill_before =
            parse_build_date(b.string("build_date"), "prefill_before.build_date");
      } catch (const InvalidArgument& x) {
        b.fail("build_date", x.what());
      }
      e.launch_prefill_before_s = figure_fields(b, 0, 1e-3, e.sources);
      b.finish();
      if (!e.launch_prefill_s.known()) l.fail("prefill_before", "needs prefill (the current cost)");
    }
    l.finish();
  }
  if (o.has("step_overhead_s")) e.step_overhead_s = figure(o, "step_overhead_s", 0, 1.0, e.sources);
  if (o.has("shared_experts_stream")) {
    StrictObject s = o.object("shared_experts_stream");
    e.shared_experts_stream.on = true;
    e.shared_experts_stream.source = s.string("source");
    if (!e.sources.count(e.shared_experts_stream.source))
      s.fail("source", "names no entry of \"sources\"");
    if (s.has("max_tokens"))
      e.shared_experts_stream.max_tokens = figure(s, "max_tokens", 1, 1 << 20, e.sources);
    const json& g = s.required("graphs_only");
    if (!g.is_boolean()) s.fail("graphs_only", "expected true or false");
    e.shared_experts_stream.graphs_only = g.get<bool>();
    if (e.shared_experts_stream.graphs_only && !e.decode_cuda_graphs)
      s.fail("graphs_only", "the engine replays no decode graphs");
    s.finish();
  }
  if (o.has("moe_kernel_releases")) e.moe_kernel_releases = parse_moe_kernel_releases(o, e.sources);
  if (o.has("moe_table_stand_ins")) e.moe_table_stand_ins = parse_moe_table_stand_ins(o, e.sources);
  if (o.has("moe_weight_padding")) e.moe_weight_padding = parse_moe_weight_padding(o, e.sources);
  if (o.has("window_masking")) e.window_masking = parse_window_masking(o, e.sources);
  if (o.has("moe_padded_layout")) {
    // {"kernel", "format", "architecture", "from_version", "before_version",
    //  "excluded_tp": {"tp", "from_version"}?, "block_rows", "gemm": {"tables",
    //  "format"}, "source"}
    StrictObject p = o.object("moe_padded_layout");
    auto& x = e.padded_moe;
    x.on = true;
    x.kernel = p.string("kernel");
    if (x.kernel.empty()) p.fail("kernel", "must name the kernel");
    const std::string format = p.string("format");
    if (!try_parse_format(format, &x.format) || x.format != Format::kFp8)
      p.fail("format", "must be fp8 (block-scaled experts)");
    x.architecture = p.string("architecture");
    if (x.architecture.empty()) p.fail("architecture", "must name the architecture");
    const auto release = [&](StrictObject& obj, std::string_view key) {
      std::string v = obj.string(key);
      if (release_numbers(v).empty()) obj.fail(key, "expected a release such as \"0.12.0\"");
      return v;
    };
    x.from_version = release(p, "from_version");
    x.before_version = release(p, "before_version");
    if (!release_before(release_numbers(x.from_version), release_numbers(x.before_version)))
      p.fail("before_version", "must come after from_version");
    if (p.has("excluded_tp")) {
      StrictObject t = p.object("excluded_tp");
      const json& tp = t.required("tp");
      if (!tp.is_number_integer() || tp.get<std::int64_t>() < 2 || tp.get<std::int64_t>() > 1024)
        t.fail("tp", "expected a tensor-parallel size from 2 to 1024");
      x.excluded_tp = tp.get<std::int64_t>();
      x.excluded_tp_from = release(t, "from_version");
      t.finish();
    }
    const json& rows = p.required("block_rows");
    if (!rows.is_number_integer() || rows.get<std::int64_t>() < 1 ||
        rows.get<std::int64_t>() > 4096)
      p.fail("block_rows", "expected rows from 1 to 4096");
    x.block_rows = rows.get<std::int64_t>();
    StrictObject g = p.object("gemm");
    x.gemm_tables = g.string("tables");
    if (x.gemm_tables != "vllm" && x.gemm_tables != "sglang" && x.gemm_tables != "trtllm")
      g.fail("tables", "must be vllm, sglang or trtllm (the engines measured)");
    x.gemm_format = g.string("format");
    if (x.gemm_format.empty()) g.fail("format", "must name the table's format key");
    x.gemm_source = g.string("source");
    if (!e.sources.count(x.gemm_source)) g.fail("source", "names no entry of \"sources\"");
    g.finish();
    x.source = p.string("source");
    if (!e.sources.count(x.source)) p.fail("source", "names no entry of \"sources\"");
    (void)p.optional_string("note", "");
    p.finish();
  }
  {
    StrictObject g = o.object("gemm");
    e.gemm_tables = g.string("tables");
    if (!e.gemm_tables.empty() && e.gemm_tables != "vllm" && e.gemm_tables != "sglang" &&
        e.gemm_tables != "trtllm") {
      g.fail("tables", "must be \"\", vllm, sglang or trtllm (the engines measured)");
    }
    if (g.has("table_scale")) e.gemm_table_scale = figure(g, "table_scale", 0.05, 2.0, e.sources);
    if (g.has("borrowed_formats")) {
      if (e.gemm_tables.empty()) g.fail("borrowed_formats", "needs the engine's own tables");
      const json& list = g.required("borrowed_formats");
      if (!list.is_array() || list.empty() || list.size() > 8)
        g.fail("borrowed_formats", "expected a list of 1 to 8 formats");
      for (std::size_t i = 0; i < list.size(); ++i) {
        StrictObject b(list[i], g.origin(), "gemm.borrowed_formats[" + std::to_string(i) + "]");
        EngineProfile::BorrowedFormat f;
        f.format_key = b.string("format");
        // The keys gemm_table_key() gives (a dense GEMM never reads fp8_block).
        if (f.format_key != "bf16" && f.format_key != "fp8" && f.format_key != "nvfp4" &&
            f.format_key != "int8" && f.format_key != "int8_wo" && f.format_key != "int4")
          b.fail("format", "'" + clip_utf8(f.format_key, 20) +
                               "' is not a GEMM table format a prediction reads (bf16, fp8, "
                               "nvfp4, int8, int8_wo, int4)");
        for (const auto& other : e.borrowed_gemm_formats) {
          if (other.format_key == f.format_key) b.fail("format", "is borrowed twice");
        }
        f.from = b.string("from");
        if (f.from != "vllm" && f.from != "sglang" && f.from != "trtllm")
          b.fail("from", "must be vllm, sglang or trtllm (the engines measured)");
        if (f.from == e.gemm_tables) b.fail("from", "an engine cannot lend to itself");
        f.source = b.string("source");
        if (e.sources.find(f.source) == e.sources.end())
          b.fail("source", "'" + clip_utf8(f.source, 40) + "' is not in sources");
        b.finish();
        e.borrowed_gemm_formats.push_back(std::move(f));
      }
    }
    if (g.has("gemv_bandwidth_per_sm_Bps") || g.has("gemv_stream") || g.has("gemv_max_m")) {
      // Either bound of the matrix-vector kernels needs the rows they take.
      if (g.has("gemv_bandwidth_per_sm_Bps"))
        e.gemv_bandwidth_per_sm_Bps = figure(g, "gemv_bandwidth_per_sm_Bps", 1e8, 1e12, e.sources);
      if (g.has("gemv_stream")) {
        StrictObject a = g.object("gemv_stream");
        for (auto it = a.json().begin(); it != a.json().end(); ++it)
          e.gemv_stream.emplace(it.key(), figure(a, it.key(), 0.05, 1.0, e.sources));
        if (e.gemv_stream.empty()) a.fail("gemv_stream", "names no architecture");
        a.finish();
      }
      if (!e.gemv_bandwidth_per_sm_Bps.known() && e.gemv_stream.empty())
        g.fail("gemv_max_m", "needs gemv_bandwidth_per_sm_Bps or gemv_stream (what it bounds)");
      e.gemv_max_m = figure(g, "gemv_max_m", 1, 64, e.sources);
    }
    if (g.has("dequant_gemm")) {
      StrictObject q = g.object("dequant_gemm");
      e.dequant_gemm.kernel = q.string("kernel");
      for (const std::string& f : strings(q, "formats")) {
        Format fmt{};
        if (!try_parse_format(f, &fmt))
          q.fail("formats", "'" + clip_utf8(f, 20) + "' is not a format id");
        e.dequant_gemm.formats.push_back(fmt);
      }
      e.dequant_gemm.peak = format_key(q, "peak");
      StrictObject a = q.object("architectures");
      for (auto it = a.json().begin(); it != a.json().end(); ++it) {
        StrictObject f = a.object(it.key());
        EngineProfile::DequantGemm::Figures figures;
        figures.stream = figure(f, "stream", 0.1, 10.0, e.sources);
        figures.compute = figure(f, "compute", 0.01, 1.0, e.sources);
        f.finish();
        e.dequant_gemm.architectures.emplace(it.key(), std::move(figures));
      }
      a.finish();
      if (q.has("cublas_before")) {
        StrictObject b = q.object("cublas_before");
        try {
          e.dequant_gemm.cublas_before =
              parse_build_date(b.string("build_date"), "cublas_before.build_date");
        } catch (const InvalidArgument& x) {
          b.fail("build_date", x.what());
        }
        e.dequant_gemm.cublas_above_rows = b.non_negative("above_rows");
        const double rows = e.dequant_gemm.cublas_above_rows;
        if (!(rows >= 1) || rows > 4096 || rows != std::floor(rows))
          b.fail("above_rows", "must be a whole number in [1, 4096]");
        e.dequant_gemm.cublas_before_source = b.string("source");
        if (e.sources.find(e.dequant_gemm.cublas_before_source) == e.sources.end())
          b.fail("source",
                 "'" + clip_utf8(e.dequant_gemm.cublas_before_source, 40) + "' is not in sources");
        b.finish();
      }
      q.finish();
      if (!e.gemv_max_m.known())
        g.fail("dequant_gemm", "needs gemv_max_m (the rows it starts above)");
    }
    if (g.has("cublas_gemm")) {
      StrictObject c = g.object("cublas_gemm");
      EngineProfile::CublasGemm& cb = e.cublas_gemm;
      cb.kernel = c.string("kernel");
      for (const std::string& f : strings(c, "formats")) {
        Format fmt{};
        if (!try_parse_format(f, &fmt) || (fmt != Format::kFp16 && fmt != Format::kBf16))
          c.fail("formats", "'" + clip_utf8(f, 20) + "' is not a 16-bit format (fp16, bf16)");
        cb.formats.push_back(fmt);
      }
      if (cb.formats.empty()) c.fail("formats", "must name at least one format");
      const std::string acc = c.string("accumulate");
      if (acc != "fp16" && acc != "fp32") c.fail("accumulate", "must be \"fp16\" or \"fp32\"");
      cb.fp16_accumulate = acc == "fp16";
      if (cb.fp16_accumulate &&
          std::find(cb.formats.begin(), cb.formats.end(), Format::kBf16) != cb.formats.end())
        c.fail("accumulate", "bf16 GEMMs accumulate in fp32");
      cb.source = c.string("source");
      if (e.sources.find(cb.source) == e.sources.end())
        c.fail("source", "'" + clip_utf8(cb.source, 40) + "' is not in sources");
      StrictObject a = c.object("architectures");
      for (auto it = a.json().begin(); it != a.json().end(); ++it)
        cb.compute.emplace(it.key(), figure(a, it.key(), 0.01, 1.0, e.sources));
      a.finish();
      if (cb.compute.empty()) c.fail("architectures", "must give at least one architecture");
      c.finish();
      if (!e.gemv_max_m.known())
        g.fail("cublas_gemm", "needs gemv_max_m (the rows it starts above)");
    }
    if (e.dequant_gemm.cublas_before > 0 && e.cublas_gemm.compute.empty())
      g.fail("dequant_gemm", "cublas_before needs cublas_gemm (the F16 GEMM it prices)");
    if (g.has("fp8_prequantized")) {
      StrictObject q = g.object("fp8_prequantized");
      EngineProfile::Fp8Prequantized& pq = e.fp8_prequantized;
      const auto kinds = [&q](std::string_view key) {
        std::vector<OpKind> out;
        for (const std::string& name : strings(q, key)) out.push_back(op_kind_named(q, key, name));
        return out;
      };
      pq.ops = kinds("ops");
      pq.with_allreduce_fusion = kinds("with_allreduce_fusion");
      if (pq.ops.empty() && pq.with_allreduce_fusion.empty()) q.fail("ops", "names no operator");
      pq.source = q.string("source");
      if (e.sources.find(pq.source) == e.sources.end())
        q.fail("source", "'" + clip_utf8(pq.source, 40) + "' is not in sources");
      q.finish();
    }
    if (g.has("weight_only_stream")) {
      StrictObject w = g.object("weight_only_stream");
      for (auto it = w.json().begin(); it != w.json().end(); ++it) {
        Format f{};
        if (!try_parse_format(it.key(), &f) || (f != Format::kInt8 && f != Format::kInt4))
          w.fail(it.key(), "weight-only formats are int8 and int4");
        e.weight_only_stream[f] = figure(w, it.key(), 0.05, 1.0, e.sources);
      }
      w.finish();
    }
    StrictObject k = g.object("kernels");
    for (auto it = k.json().begin(); it != k.json().end(); ++it)
      e.gemm_kernels[it.key()] = k.string(it.key());
    k.finish();
    g.finish();
  }
  // expert_activations and weight_activations: lists of the same rules.
  const auto activation_rules = [&](const char* key,
                                    std::vector<EngineProfile::ActivationRule>* out) {
    if (!o.has(key)) return;
    const json& list = rule_list(o, key);
    for (std::size_t i = 0; i < list.size(); ++i) {
      StrictObject r(list[i], origin, std::string(key) + "[" + std::to_string(i) + "]");
      EngineProfile::ActivationRule rule;
      rule.weights = format_key(r, "weights");
      rule.architectures = strings(r, "architectures");
      if (rule.architectures.empty()) r.fail("architectures", "names no architecture");
      for (const std::string& a : rule.architectures)
        rule.architecture_keys.push_back(architecture_key(a));
      rule.act = format_key(r, "act");
      if (!format_info(rule.act).compute_format)
        r.fail("act", "must be a compute format (the activations' math)");
      rule.kernel = r.string("kernel");
      rule.source = r.string("source");
      if (!e.sources.count(rule.source)) r.fail("source", "names no entry of \"sources\"");
      r.finish();
      for (const auto& other : *out)
        if (other.weights == rule.weights) r.fail("weights", "has a rule already");
      out->push_back(std::move(rule));
    }
  };
  activation_rules("expert_activations", &e.expert_activations);
  activation_rules("weight_activations", &e.weight_activations);
  if (o.has("activation_storage")) {
    StrictObject a = o.object("activation_storage");
    Format f{};
    const std::string id = a.string("format");
    if (!try_parse_format(id, &f) || bits_per_element(f) < 16)
      a.fail("format", "a format of 16 bits or more (bf16, fp16, fp32)");
    e.activation_storage = f;
    e.activation_storage_source = a.string("source");
    if (!e.sources.count(e.activation_storage_source))
      a.fail("source", "names no entry of \"sources\"");
    (void)a.optional_string("note", "");
    a.finish();
  }
  if (o.has("gemm_copies")) {
    StrictObject c = o.object("gemm_copies");
    EngineProfile::GemmCopies copies;
    for (const std::string& f : strings(c, "quantized_formats"))
      copies.quantized_formats.push_back(format_named(c, "quantized_formats", f));
    copies.quantized_input_bits = figure(c, "quantized_input_bits", 1, 32, e.sources);
    for (const std::string& f : strings(c, "cublas_formats"))
      copies.cublas_formats.push_back(format_named(c, "cublas_formats", f));
    copies.source = c.string("source");
    if (!e.sources.count(copies.source)) c.fail("source", "names no entry of \"sources\"");
    c.finish();
    e.gemm_copies = std::move(copies);
  }
  if (o.has("latent_cache_cast")) {
    StrictObject r = o.object("latent_cache_cast");
    EngineProfile::LatentCacheCast rule;
    rule.architectures = strings(r, "architectures");
    if (rule.architectures.empty()) r.fail("architectures", "names no architecture");
    for (const std::string& a : rule.architectures)
      rule.architecture_keys.push_back(architecture_key(a));
    rule.bandwidth_efficiency = figure(r, "bandwidth_efficiency", 0.01, 1.0, e.sources);
    rule.kernel = r.string("kernel");
    rule.source = r.string("source");
    if (!e.sources.count(rule.source)) r.fail("source", "names no entry of \"sources\"");
    r.finish();
    e.latent_cache_cast = std::move(rule);
  }
  if (o.has("sparse_mla")) e.sparse_mla = parse_sparse_mla(o, e.sources);
  e.attention_kernels = o.string("attention_kernels");
  e.fusions = strings(o, "fusions");
  auto fuses = [&](std::string_view f) {
    return std::find(e.fusions.begin(), e.fusions.end(), f) != e.fusions.end();
  };
  e.rope_in_attention = fuses("rope_in_attention");
  e.allreduce_residual_rmsnorm = fuses("allreduce_residual_rmsnorm");
  for (const std::string& f : strings(o, "unsupported_formats")) {
    Format fmt{};
    if (!try_parse_format(f, &fmt))
      o.fail("unsupported_formats", "'" + f.substr(0, 20) + "' is not a format id");
    e.unsupported.push_back(fmt);
  }
  if (o.has("file_mixes")) e.file_mixes = parse_file_mixes(o, e.sources);
  if (o.has("scheduler")) e.scheduler = parse_scheduler(o, e.sources);
  e.notes = o.optional_string("notes", "");
  o.finish();
  return e;
}

namespace {

// Each engine's borrowed formats (EngineProfile::borrowed_gemm_formats): in
// every table of the engine, the entry of that format becomes the lending
// engine's entry of the same device, marked with where it came from. A
// device the lender did not measure, or measured on another grid, keeps its
// own entry.
void lend_borrowed_formats(const std::vector<EngineProfile>& engines,
                           std::vector<GemmTable>* tables) {
  // Lending rewrites the tables themselves: every profile reading them must
  // borrow the same formats.
  for (const EngineProfile& a : engines) {
    for (const EngineProfile& b : engines) {
      if (a.gemm_tables.empty() || a.gemm_tables != b.gemm_tables) continue;
      auto keys = [](const EngineProfile& e) {
        std::vector<std::string> k;
        for (const auto& f : e.borrowed_gemm_formats) k.push_back(f.format_key + ":" + f.from);
        std::sort(k.begin(), k.end());
        return k;
      };
      if (keys(a) != keys(b)) {
        throw ParseError("engines " + a.id + " and " + b.id + " read the " + a.gemm_tables +
                         " tables but borrow different formats into them");
      }
    }
  }
  for (const EngineProfile& e : engines) {
    for (const EngineProfile::BorrowedFormat& b : e.borrowed_gemm_formats) {
      for (GemmTable& t : *tables) {
        if (t.engine != e.gemm_tables) continue;
        const auto lender = std::find_if(tables->begin(), tables->end(), [&](const GemmTable& x) {
          return x.engine == b.from && x.device == t.device;
        });
        if (lender == tables->end() || lender->log2_m0 != t.log2_m0 ||
            lender->m_points != t.m_points || lender->log2_nk0 != t.log2_nk0 ||
            lender->nk_points != t.nk_points)
          continue;
        const auto entry = lender->formats.find(b.format_key);
        if (entry == lender->formats.end()) continue;
        GemmTable::Entry lent = entry->second;
        lent.borrowed_from = lender->engine + " " + lender->engine_version;
        t.formats[b.format_key] = std::move(lent);
      }
    }
  }
}

// Each engine's MoE table stand-ins name another engine with measured tables.
void check_moe_table_stand_ins(const std::vector<EngineProfile>& engines) {
  for (const EngineProfile& e : engines) {
    for (const MoeTableStandIn& x : e.moe_table_stand_ins) {
      const auto other = std::find_if(engines.begin(), engines.end(),
                                      [&](const EngineProfile& o) { return o.id == x.engine; });
      if (other == engines.end() || other->id == e.id || other->gemm_tables.empty()) {
        throw ParseError("engine " + e.id + ": moe_table_stand_ins names '" + x.engine +
                         "', which is not another engine with measured tables");
      }
    }
  }
}

}  // namespace

const EngineRegistry& EngineRegistry::built_in() {
  static const EngineRegistry registry = [] {
    EngineRegistry r;
    for (const auto& file : detail::embedded_files()) {
      const std::string name(file.name);
      if (name.rfind("engines/", 0) == 0) {
        r.engines_.push_back(parse_engine(file.text, name));
      } else if (name.rfind("kernels/gemm/", 0) == 0) {
        r.tables_.push_back(parse_gemm_table(file.text, name));
      } else if (name.rfind("kernels/moe/", 0) == 0) {
        r.moe_tables_.push_back(parse_moe_table(file.text, name));
      } else if (name.rfind("kernels/comm/", 0) == 0) {
        r.comm_tables_.push_back(parse_comm_table(file.text, name));
      } else if (name.rfind("kernels/attention/", 0) == 0) {
        r.attention_tables_.push_back(parse_attention_table(file.text, name));
      }
    }
    lend_borrowed_formats(r.engines_, &r.tables_);
    check_moe_table_stand_ins(r.engines_);
    // "roofline" (the reference) first, then by id.
    std::sort(r.engines_.begin(), r.engines_.end(),
              [](const EngineProfile& a, const EngineProfile& b) {
                return (a.kind == "reference") != (b.kind == "reference") ? a.kind == "reference"
                                                                          : a.id < b.id;
              });
    return r;
  }();
  return registry;
}

const EngineProfile* EngineRegistry::find(std::string_view id) const noexcept {
  const std::string key = detail::ascii_lower(id);
  for (const auto& e : engines_) {
    if (e.id == key) return &e;
  }
  return nullptr;
}

const EngineProfile& EngineRegistry::get(std::string_view id) const {
  if (const EngineProfile* e = find(id)) return *e;
  std::string ids;
  for (const auto& e : engines_) ids += (ids.empty() ? "" : ", ") + e.id;
  throw NotFound("unknown engine '" + clip_utf8(id, 40) + "' (known: " + ids + ")");
}

EngineRegistry EngineRegistry::without_tables_of(std::string_view device) const {
  EngineRegistry r = *this;
  r.tables_.erase(std::remove_if(r.tables_.begin(), r.tables_.end(),
                                 [&](const GemmTable& t) { return t.device == device; }),
                  r.tables_.end());
  r.moe_tables_.erase(std::remove_if(r.moe_tables_.begin(), r.moe_tables_.end(),
                                     [&](const MoeTable& t) { return t.device == device; }),
                      r.moe_tables_.end());
  std::erase_if(r.attention_tables_, [&](const AttentionTable& t) { return t.device == device; });
  r.moe_kernel_cache_ = std::make_shared<MoeKernelCache>();
  return r;
}

void EngineRegistry::add_table(GemmTable table) {
  for (auto& t : tables_) {
    if (t.id == table.id) {
      t = std::move(table);
      return;
    }
  }
  tables_.push_back(std::move(table));
}

namespace {

const Registry& measured_devices() {
  static const Registry registry = Registry::built_in();  // the tables' devices
  return registry;
}

// The table of `engine`'s measured engine for `device`: its own (*own = true),
// else the nearest measured device of the same architecture; nullptr when none.
template <typename Table>
const Table* pick_table(const std::vector<Table>& tables, const Device& device,
                        const EngineProfile& engine, bool* own) noexcept {
  *own = false;
  if (engine.gemm_tables.empty()) return nullptr;
  const Table* related = nullptr;
  double related_distance = 0;
  for (const auto& t : tables) {
    if (t.engine != engine.gemm_tables) continue;
    if (t.device == device.id) {
      *own = true;
      return &t;
    }
    // A device of the same architecture: the one closest in bandwidth (the
    // efficiency of small GEMMs depends on it most).
    const Device* measured = measured_devices().find(t.device);
    if (!measured || measured->architecture_key != device.architecture_key) continue;
    const double d = std::fabs(
        std::log(measured->memory_bandwidth_Bps.value / device.memory_bandwidth_Bps.value));
    if (!related || d < related_distance) {
      related = &t;
      related_distance = d;
    }
  }
  return related;
}

}  // namespace

const GemmTable* EngineRegistry::gemm_table(const Device& device, const EngineProfile& engine,
                                            EfficiencySource* source) const noexcept {
  bool own = false;
  const GemmTable* t = pick_table(tables_, device, engine, &own);
  if (t && source)
    *source = own ? EfficiencySource::kMeasuredTable : EfficiencySource::kDerivedTable;
  return t;
}

const MoeTable* EngineRegistry::moe_table(const Device& device, const EngineProfile& engine,
                                          EfficiencySource* source) const noexcept {
  bool own = false;
  const MoeTable* t = pick_table(moe_tables_, device, engine, &own);
  if (t == nullptr) {
    // None of its own on this architecture: the engine whose kernels stand in.
    for (const MoeTableStandIn& x : engine.moe_table_stand_ins) {
      if (x.architecture != device.architecture) continue;
      for (const EngineProfile& other : engines_) {  // ids as loaded (find() allocates)
        if (other.id == x.engine) t = pick_table(moe_tables_, device, other, &own);
      }
      own = false;
    }
  }
  if (t && source)
    *source = own ? EfficiencySource::kMeasuredMoeTable : EfficiencySource::kDerivedMoeTable;
  return t;
}

const CommTable* EngineRegistry::comm_table(const Device& device, const EngineProfile& engine,
                                            bool* own) const noexcept {
  bool mine = false;
  const CommTable* t = pick_table(comm_tables_, device, engine, &mine);
  if (own) *own = mine;
  return t;
}

const AttentionTable* EngineRegistry::attention_table(const Device& device,
                                                      const EngineProfile& engine,
                                                      EfficiencySource* source) const noexcept {
  bool own = false;
  const AttentionTable* t = pick_table(attention_tables_, device, engine, &own);
  if (t && source)
    *source =
        own ? EfficiencySource::kMeasuredAttentionTable : EfficiencySource::kDerivedAttentionTable;
  return t;
}

const MoeTable* EngineRegistry::moe_table(const Device& device, const EngineProfile& engine,
                                          std::string_view family, EfficiencySource* source) const {
  const MoeTable* picked = moe_table(device, engine, source);
  if (family.empty() || picked == nullptr) return picked;
  const std::string key = picked->id + "/" + std::string(family);
  std::lock_guard lock(moe_kernel_cache_->mutex);
  auto it = moe_kernel_cache_->tables.find(key);
  if (it == moe_kernel_cache_->tables.end()) {
    std::vector<const MoeTable*> others;
    for (const auto& t : moe_tables_) {
      if (&t != picked && t.device == picked->device) others.push_back(&t);
    }
    bool borrowed = false;
    auto table =
        std::make_unique<const MoeTable>(with_moe_kernel(*picked, family, others, &borrowed));
    it = moe_kernel_cache_->tables.emplace(key, std::make_pair(std::move(table), borrowed)).first;
  }
  if (source && it->second.second) *source = EfficiencySource::kDerivedMoeTable;
  return it->second.first.get();
}

std::vector<std::string_view> EngineRegistry::moe_kernel_families(const Device& device) const {
  // The devices whose tables stand in for `device`: its own, or its architecture's nearest.
  std::vector<std::string> stand_ins;
  for (const auto& engine : engines_) {
    if (const MoeTable* t = moe_table(device, engine, nullptr)) stand_ins.push_back(t->device);
  }
  std::vector<std::string_view> out;
  for (const std::string_view family : kMoeKernelFamilies) {
    const bool measured =
        std::any_of(moe_tables_.begin(), moe_tables_.end(), [&](const MoeTable& t) {
          return t.measures(family) &&
                 std::find(stand_ins.begin(), stand_ins.end(), t.device) != stand_ins.end();
        });
    if (measured) out.push_back(family);
  }
  return out;
}

void EngineRegistry::add_moe_table(MoeTable table) {
  moe_kernel_cache_ = std::make_shared<MoeKernelCache>();
  for (auto& t : moe_tables_) {
    if (t.id == table.id) {
      t = std::move(table);
      return;
    }
  }
  moe_tables_.push_back(std::move(table));
}

}  // namespace roofline

namespace roofline {

std::string_view gemm_table_key(Format weights, Format act, bool weight_only) noexcept {
  if (weight_only) {
    if (weights == Format::kInt4) return "int4";
    if (weights == Format::kInt8) return "int8_wo";
    return {};
  }
  (void)act;
  switch (weights) {
    case Format::kBf16:
    case Format::kFp16:
      return "bf16";  // the same tensor-core rate and kernels
    case Format::kFp8:
      return "fp8";
    case Format::kNvfp4:
      return "nvfp4";
    case Format::kInt8:
      return "int8";
    default:
      return {};
  }
}

ModelOptions with_engine(ModelOptions options, const Device& device, const EngineProfile* engine,
                         const EngineRegistry& tables) {
  static const GemmTable kNoTable{};
  options = with_engine(std::move(options), device, engine);
  if (options.engine == nullptr) return options;
  options.gemm_table_source = EfficiencySource::kDevice;
  options.gemm_table = tables.gemm_table(device, *engine, &options.gemm_table_source);
  if (options.gemm_table == nullptr) options.gemm_table = &kNoTable;
  static const MoeTable kNoMoeTable{};
  options.moe_table =
      tables.moe_table(device, *engine, options.moe_kernel, &options.moe_table_source);
  if (options.moe_table == nullptr) options.moe_table = &kNoMoeTable;
  static const CommTable kNoCommTable{};
  options.comm_table = tables.comm_table(device, *engine, nullptr);
  if (options.comm_table == nullptr) options.comm_table = &kNoCommTable;
  static const AttentionTable kNoAttentionTable{};
  options.attention_table =
      tables.attention_table(device, *engine, &options.attention_table_source);
  if (options.attention_table == nullptr) options.attention_table = &kNoAttentionTable;
  return options;
}

void check_engine_version(std::string_view version, std::string_view what) {
  if (version.size() > 40 || !std::all_of(version.begin(), version.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' ||
               c == '_';
      })) {
    throw InvalidArgument(std::string(what) +
                          ": at most 40 letters, digits and . - + _ (a release such as 0.14.0)");
  }
}

ModelOptions with_engine_release(ModelOptions options, const Device& device,
                                 std::string_view version, std::int64_t tp,
                                 const EngineRegistry& tables) {
  options.padded_moe = nullptr;
  options.padded_moe_gemm = nullptr;
  options.moe_release = nullptr;
  options.window_masking = nullptr;
  options.window_masked_prompt_kernel = options.window_masked_split_kv = false;
  if (options.engine == nullptr || options.mode != Mode::kRealistic) return options;
  if (options.moe_kernel.empty())
    options.moe_release = options.engine->moe_kernel_release(version, device);
  options.window_masking = options.engine->window_masking_for(
      version, device, &options.window_masked_prompt_kernel, &options.window_masked_split_kv);
  const PaddedMoeLayout* layout = options.engine->padded_moe_for(version, device, tp);
  if (layout == nullptr) return options;
  const EngineProfile* measured = tables.find(layout->gemm_tables);
  if (measured == nullptr) return options;
  EfficiencySource source = EfficiencySource::kDevice;
  const GemmTable* table = tables.gemm_table(device, *measured, &source);
  if (table == nullptr || table->find(layout->gemm_format) == nullptr) return options;
  options.padded_moe = layout;
  options.padded_moe_gemm = table;
  return options;
}

void check_moe_kernel(const ModelOptions& options, const Device* device, std::string_view what) {
  if (options.moe_kernel.empty()) return;
  const EngineProfile* engine = options.engine;
  const std::string family(options.moe_kernel);
  if (engine == nullptr || engine->kind == "reference" || engine->gemm_tables.empty()) {
    throw InvalidArgument(std::string(what) + " " + family +
                          ": the engine has no measured MoE layers (vllm, sglang have)");
  }
  if (device == nullptr) return;
  const auto& registry = EngineRegistry::built_in();
  if (registry.moe_table(*device, *engine, nullptr) == nullptr) {
    throw InvalidArgument(std::string(what) + " " + family + ": no " + engine->id +
                          " MoE layer is measured on " + device->id + " or a device like it");
  }
  const auto families = registry.moe_kernel_families(*device);
  if (std::find(families.begin(), families.end(), options.moe_kernel) == families.end()) {
    std::string measured;
    for (const auto f : families) measured += (measured.empty() ? "" : ", ") + std::string(f);
    throw InvalidArgument(std::string(what) + " " + family + ": no " + family +
                          " MoE layer is measured on " + device->id +
                          " (measured: " + (measured.empty() ? "none" : measured) + ")");
  }
}

ModelOptions with_engine(ModelOptions options, const Device& device, const EngineProfile* engine) {
  if (engine == nullptr || engine->kind == "reference") {
    options.engine = nullptr;
    options.gemm_table = nullptr;
    options.moe_table = nullptr;
    options.comm_table = nullptr;
    options.attention_table = nullptr;
    options.window_masking = nullptr;
    options.window_masked_prompt_kernel = options.window_masked_split_kv = false;
    return options;
  }
  options.engine = engine;
  // The current release's kernels skip the tiles outside a window.
  options.window_masking = nullptr;
  options.window_masked_prompt_kernel = options.window_masked_split_kv = false;
  options.gemm_table_source = EfficiencySource::kDevice;
  options.gemm_table =
      EngineRegistry::built_in().gemm_table(device, *engine, &options.gemm_table_source);
  options.moe_table = EngineRegistry::built_in().moe_table(device, *engine, options.moe_kernel,
                                                           &options.moe_table_source);
  // The current release's MoE kernel family where a rule of every release names one.
  options.moe_release =
      options.moe_kernel.empty() ? engine->moe_kernel_release("", device) : nullptr;
  options.comm_table = EngineRegistry::built_in().comm_table(device, *engine, nullptr);
  options.attention_table =
      EngineRegistry::built_in().attention_table(device, *engine, &options.attention_table_source);
  return options;
}

}  // namespace roofline

namespace roofline {
namespace {

nlohmann::json figure_json(const EngineProfile& e, const EngineFigure& f);

nlohmann::json scheduler_json(const EngineProfile& e) {
  const EngineScheduler& s = e.scheduler;
  if (!s.known) return nullptr;
  nlohmann::json j = {
      {"policy", s.prefill_first ? "prefill_first" : "mixed"},
      {"policy_source", e.citation(s.policy_source)},
      {"chunked_prefill", s.chunked_prefill},
      {"chunked_prefill_source", e.citation(s.chunked_source)},
      {"kv_admission", s.reserve_whole ? "whole" : "prompt"},
      {"kv_admission_source", e.citation(s.admission_source)},
      {"pipeline", s.pipeline_micro_batches ? "micro_batches" : "one_batch"},
      {"pipeline_source", e.citation(s.pipeline_source)},
      {"max_running_with_pipeline",
       s.running_cap_per_micro_batch ? "per_micro_batch" : "per_instance"},
      {"batch_formed", s.formed_a_step_ahead ? "a_step_ahead" : "as_it_starts"},
      {"batch_formed_with_pipeline_parallel", s.ahead_with_pipeline_parallel},
      {"batch_formed_since", s.ahead_since},
      {"batch_formed_source", e.citation(s.formed_source)},
      {"prefix_cache", s.prefix_cache},
      {"prefix_cache_source", e.citation(s.prefix_cache_source)},
      {"batch_wait", s.batch_wait},
      {"batch_wait_source",
       s.batch_wait ? nlohmann::json(e.citation(s.batch_wait_source)) : nlohmann::json(nullptr)},
      {"adp_balance", s.adp_balance},
      {"adp_balance_source",
       s.adp_balance ? nlohmann::json(e.citation(s.adp_balance_source)) : nlohmann::json(nullptr)},
      {"recv_interval", s.recv_interval},
      {"recv_interval_source", s.recv_interval ? nlohmann::json(e.citation(s.recv_interval_source))
                                               : nlohmann::json(nullptr)},
      {"token_budget", figure_json(e, s.token_budget)},
      {"max_running", figure_json(e, s.max_running)},
      {"kv_block_tokens", figure_json(e, s.kv_block_tokens)},
      {"kv_memory", figure_json(e, s.kv_memory)},
      {"kv_memory_of", s.kv_memory_of_free ? "free" : "total"},
      {"kv_memory_less_profile_pass", s.kv_profile_pass()}};
  if (!s.kv_memory_before.empty()) {
    j["kv_memory_earlier"] = figure_json(e, s.kv_memory_earlier);
    j["kv_memory_earlier"]["before_version"] = s.kv_memory_before;
  }
  if (s.kv_profile_sampler_known()) {
    nlohmann::json ranges = nlohmann::json::array();
    for (const EngineScheduler::ReleaseRange& r : s.kv_profile_flashinfer_releases) {
      nlohmann::json x = nlohmann::json::object();
      if (!r.from.empty()) x["from"] = r.from;
      if (!r.before.empty()) x["before"] = r.before;
      ranges.push_back(std::move(x));
    }
    j["kv_profile_sampler"] = {
        {"sort_bytes_per_logit", figure_json(e, s.kv_profile_sort_bytes)},
        {"flashinfer_bytes_per_logit", figure_json(e, s.kv_profile_flashinfer_bytes)},
        {"flashinfer_releases", std::move(ranges)},
        {"flashinfer_releases_source",
         s.kv_profile_flashinfer_source.empty()
             ? nlohmann::json(nullptr)
             : nlohmann::json(e.citation(s.kv_profile_flashinfer_source))}};
  }
  nlohmann::json rules = nlohmann::json::array();
  for (const EngineScheduler::Rule& r : s.rules) {
    nlohmann::json x = {{"memory_at_least_gib", r.memory_at_least_bytes / 1073741824.0},
                        {"token_budget", r.token_budget},
                        {"source", e.citation(r.source)}};
    if (!r.except_architecture.empty()) x["except_architecture"] = r.except_architecture;
    if (r.max_running > 0) x["max_running"] = r.max_running;
    rules.push_back(std::move(x));
  }
  j["by_memory"] = std::move(rules);
  if (const auto& a = s.aiconfigurator; a.known) {
    j["aiconfigurator"] = {{"prompt_headroom", figure_json(e, a.prompt_headroom)},
                           {"block_tokens", figure_json(e, a.block_tokens)},
                           {"prompt_within_chunk", a.prompt_within_chunk},
                           {"decode_budget_is_batch", a.decode_budget_is_batch},
                           {"mixed_steps", a.mixed_steps},
                           {"prefill_workers_ahead", a.prefill_workers_ahead},
                           {"source", e.citation(a.source)}};
    if (a.prefix_cache) j["aiconfigurator"]["prefix_cache"] = *a.prefix_cache;
    if (a.kv_memory.known()) j["aiconfigurator"]["kv_memory"] = figure_json(e, a.kv_memory);
  }
  if (!s.running_cap_source.empty())
    j["max_running_with_pipeline_source"] = e.citation(s.running_cap_source);
  if (const auto& t = s.benchmark_tuning; t.known) {
    const auto tiers = [](const std::vector<EngineScheduler::BenchmarkTuning::Tier>& list) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& tier : list) {
        nlohmann::json x = {{"step", tier.step}};
        if (tier.below > 0) x["below"] = tier.below;
        out.push_back(std::move(x));
      }
      return out;
    };
    nlohmann::json bytes = nlohmann::json::array();
    for (const auto& f : t.bytes_per_weight) {
      bytes.push_back({{"format", format_id(f.format)},
                       {"bytes", f.bytes_per_element},
                       {"stored_elements_per_weight", f.stored_elements_per_weight}});
    }
    j["benchmark_tuning"] = {{"kv_memory", figure_json(e, t.kv_memory)},
                             {"batch_cap", figure_json(e, t.batch_cap)},
                             {"tokens_cap", figure_json(e, t.tokens_cap)},
                             {"min_batch", figure_json(e, t.min_batch)},
                             {"min_tokens", figure_json(e, t.min_tokens)},
                             {"batch_tiers", tiers(t.batch_tiers)},
                             {"token_tiers", tiers(t.token_tiers)},
                             {"bytes_per_weight", std::move(bytes)},
                             {"bytes_source", e.citation(t.bytes_source)},
                             {"chunked_prefill", t.chunked_prefill},
                             {"chunked_prefill_source", e.citation(t.chunked_source)},
                             {"source", e.citation(t.source)}};
  }
  if (!s.note.empty()) j["note"] = s.note;
  return j;
}

nlohmann::json figure_json(const EngineProfile& e, const EngineFigure& f) {
  if (!f.known()) return nullptr;
  nlohmann::json j = {{"value", f.value},
                      {"confidence", confidence_name(f.confidence)},
                      {"source", e.citation(f.source)}};
  if (!f.note.empty()) j["note"] = f.note;
  return j;
}

}  // namespace

nlohmann::json to_json(const EngineProfile& e) {
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : EngineRegistry::built_in().gemm_tables()) {
    if (!e.gemm_tables.empty() && t.engine == e.gemm_tables) {
      nlohmann::json formats = nlohmann::json::array();
      nlohmann::json borrowed = nlohmann::json::object();
      for (const auto& [key, entry] : t.formats) {
        formats.push_back(key);
        if (!entry.borrowed_from.empty()) borrowed[key] = entry.borrowed_from;
      }
      nlohmann::json table = {
          {"device", t.device}, {"engine_version", t.engine_version}, {"formats", formats}};
      if (!borrowed.empty()) table["borrowed"] = std::move(borrowed);
      tables.push_back(std::move(table));
    }
  }
  nlohmann::json moe_tables = nlohmann::json::array();
  for (const auto& t : EngineRegistry::built_in().moe_tables()) {
    if (!e.gemm_tables.empty() && t.engine == e.gemm_tables) {
      nlohmann::json formats = nlohmann::json::array();
      for (const auto& [key, entry] : t.formats) formats.push_back(key);
      moe_tables.push_back(
          {{"device", t.device}, {"engine_version", t.engine_version}, {"formats", formats}});
    }
  }
  nlohmann::json comm_tables = nlohmann::json::array();
  for (const auto& t : EngineRegistry::built_in().comm_tables()) {
    if (!e.gemm_tables.empty() && t.engine == e.gemm_tables) {
      nlohmann::json gpus = nlohmann::json::array();
      for (const auto& [n, row] : t.latency_s) gpus.push_back(n);
      comm_tables.push_back(
          {{"device", t.device}, {"engine_version", t.engine_version}, {"gpus", gpus}});
    }
  }
  nlohmann::json attention_tables = nlohmann::json::array();
  for (const auto& t : EngineRegistry::built_in().attention_tables()) {
    if (!e.gemm_tables.empty() && t.engine == e.gemm_tables) {
      nlohmann::json entries = nlohmann::json::object();
      for (const auto& entry : t.entries) {
        entries[entry.key] = {{"kernel", entry.kernel},
                              {"engine_version", entry.engine_version},
                              {"floor_s", entry.floor_s},
                              {"fit_median_error", entry.fit_median_error}};
      }
      attention_tables.push_back({{"device", t.device}, {"entries", entries}});
    }
  }
  nlohmann::json borrowed_formats = nlohmann::json::array();
  for (const auto& b : e.borrowed_gemm_formats) {
    borrowed_formats.push_back(
        {{"format", b.format_key}, {"from", b.from}, {"source", e.citation(b.source)}});
  }
  nlohmann::json unsupported = nlohmann::json::array();
  for (Format f : e.unsupported) unsupported.push_back(format_id(f));
  nlohmann::json mixes = nlohmann::json::array();
  for (const FileMix& m : e.file_mixes) {
    nlohmann::json roles = nlohmann::json::array();
    for (const FileMix::Role& r : m.roles) {
      nlohmann::json ops = nlohmann::json::array();
      if (r.non_expert) ops.push_back("non_expert");
      for (OpKind k : r.ops) ops.push_back(op_name(k));
      roles.push_back({{"ops", ops},
                       {"format", format_id(r.format)},
                       {"layers", r.layers == FileMix::Layers::kAll ? "all" : "use_more_bits"}});
    }
    nlohmann::json j = {{"format", format_id(m.format)},
                        {"experts", m.experts},
                        {"roles", roles},
                        {"source", e.citation(m.source)}};
    if (!m.note.empty()) j["note"] = m.note;
    mixes.push_back(std::move(j));
  }
  json dequant = nullptr;
  if (!e.dequant_gemm.architectures.empty()) {
    json formats = json::array(), archs = json::object();
    for (Format f : e.dequant_gemm.formats) formats.push_back(format_id(f));
    for (const auto& [arch, f] : e.dequant_gemm.architectures)
      archs[arch] = {{"stream", figure_json(e, f.stream)}, {"compute", figure_json(e, f.compute)}};
    dequant = {{"kernel", e.dequant_gemm.kernel},
               {"formats", formats},
               {"peak", format_id(e.dequant_gemm.peak)},
               {"architectures", archs}};
    if (const auto& q = e.dequant_gemm; q.cublas_before > 0) {
      dequant["cublas_before"] = {{"build_date", format_build_date(q.cublas_before)},
                                  {"above_rows", q.cublas_above_rows},
                                  {"source", e.citation(q.cublas_before_source)}};
    }
  }
  json cublas = nullptr;
  if (!e.cublas_gemm.compute.empty()) {
    json formats = json::array(), archs = json::object();
    for (Format f : e.cublas_gemm.formats) formats.push_back(format_id(f));
    for (const auto& [arch, f] : e.cublas_gemm.compute) archs[arch] = figure_json(e, f);
    cublas = {{"kernel", e.cublas_gemm.kernel},
              {"formats", formats},
              {"accumulate", e.cublas_gemm.fp16_accumulate ? "fp16" : "fp32"},
              {"source", e.citation(e.cublas_gemm.source)},
              {"architectures", archs}};
  }
  json prequantized = nullptr;
  if (!e.fp8_prequantized.source.empty()) {
    json ops = json::array(), with_reduce = json::array();
    for (OpKind k : e.fp8_prequantized.ops) ops.push_back(op_name(k));
    for (OpKind k : e.fp8_prequantized.with_allreduce_fusion) with_reduce.push_back(op_name(k));
    prequantized = {{"ops", ops},
                    {"with_allreduce_fusion", with_reduce},
                    {"source", e.citation(e.fp8_prequantized.source)}};
  }
  const auto rules_json = [&e](const std::vector<EngineProfile::ActivationRule>& rules) {
    json out = json::array();
    for (const auto& r : rules)
      out.push_back({{"weights", format_id(r.weights)},
                     {"architectures", r.architectures},
                     {"act", format_id(r.act)},
                     {"kernel", r.kernel},
                     {"source", e.citation(r.source)}});
    return out;
  };
  const json expert_acts = rules_json(e.expert_activations);
  const json weight_acts = rules_json(e.weight_activations);
  json gemv_stream = json::object();
  for (const auto& [architecture, f] : e.gemv_stream) gemv_stream[architecture] = figure_json(e, f);
  json weight_only = json::object();
  for (const auto& [format, f] : e.weight_only_stream)
    weight_only[std::string(format_id(format))] = figure_json(e, f);
  json padded = nullptr;
  if (const auto& x = e.padded_moe; x.on) {
    padded = {{"kernel", x.kernel},
              {"format", format_id(x.format)},
              {"architecture", x.architecture},
              {"from_version", x.from_version},
              {"before_version", x.before_version},
              {"excluded_tp", x.excluded_tp},
              {"excluded_tp_from_version", x.excluded_tp_from},
              {"block_rows", x.block_rows},
              {"gemm_tables", x.gemm_tables},
              {"gemm_format", x.gemm_format},
              {"gemm_source", e.citation(x.gemm_source)},
              {"source", e.citation(x.source)}};
  }
  json releases = json::array();
  for (const auto& r : e.moe_kernel_releases) {
    releases.push_back({{"format", r.format},
                        {"architecture", r.architecture},
                        {"family", r.family},
                        {"before_version", r.before_version},
                        {"measured_as", r.measured_as},
                        {"source", e.citation(r.source)}});
  }
  json stand_ins = json::array();
  for (const auto& x : e.moe_table_stand_ins) {
    stand_ins.push_back(
        {{"architecture", x.architecture}, {"engine", x.engine}, {"source", e.citation(x.source)}});
  }
  json maskings = json::array();
  for (const auto& r : e.window_masking) {
    maskings.push_back({{"architecture", r.architecture},
                        {"kernel", r.kernel},
                        {"prompt_kernel_before", r.prompt_kernel_before},
                        {"split_kv_before", r.split_kv_before},
                        {"split_kv_max_programs", figure_json(e, r.split_kv_max_programs)},
                        {"query_rows", figure_json(e, r.query_rows)},
                        {"source", e.citation(r.source)}});
  }
  json paddings = json::array();
  for (const auto& r : e.moe_weight_padding) {
    paddings.push_back({{"format", r.format},
                        {"family", r.family},
                        {"intermediate_multiple", r.intermediate_multiple},
                        {"hidden_multiple", r.hidden_multiple},
                        {"default_on", r.default_on},
                        {"source", e.citation(r.source)}});
  }
  const nlohmann::json copies =
      e.gemm_copies
          ? nlohmann::json{{"quantized_formats", format_ids(e.gemm_copies->quantized_formats)},
                           {"quantized_input_bits",
                            figure_json(e, e.gemm_copies->quantized_input_bits)},
                           {"cublas_formats", format_ids(e.gemm_copies->cublas_formats)},
                           {"source", e.citation(e.gemm_copies->source)}}
          : nlohmann::json(nullptr);
  nlohmann::json sparse_mla = nullptr;
  if (e.sparse_mla) {
    const auto kernel_json = [&e](const EngineProfile::SparseMla::Kernel& k) {
      return nlohmann::json{{"head_tile", figure_json(e, k.head_tile)},
                            {"efficiency", figure_json(e, k.efficiency)}};
    };
    nlohmann::json paths = nlohmann::json::array();
    for (const auto& p : e.sparse_mla->paths) {
      paths.push_back(
          {{"architecture", p.architecture},
           {"kv", p.kv ? nlohmann::json(format_id(*p.kv)) : nlohmann::json(nullptr)},
           {"prompt", kernel_json(p.prompt)},
           {"decode", p.decode ? kernel_json(*p.decode) : nlohmann::json(nullptr)},
           {"prompt_on_decode_kernel_below", figure_json(e, p.prompt_on_decode_kernel_below)},
           {"note", p.note}});
    }
    sparse_mla = {{"paths", paths},
                  {"mha_prompts_up_to", figure_json(e, e.sparse_mla->mha_prompts_up_to)},
                  {"kernel", e.sparse_mla->kernel},
                  {"source", e.citation(e.sparse_mla->source)}};
  }
  const nlohmann::json storage =
      e.activation_storage ? nlohmann::json{{"format", format_id(*e.activation_storage)},
                                            {"source", e.citation(e.activation_storage_source)}}
                           : nlohmann::json(nullptr);
  return {{"id", e.id},
          {"name", e.name},
          {"kind", e.kind},
          {"versions", e.versions},
          {"decode_cuda_graphs", e.decode_cuda_graphs},
          {"decode_cuda_graphs_source", e.citation(e.decode_cuda_graphs_source)},
          {"graph_max_batch", figure_json(e, e.graph_max_batch)},
          {"graph_max_batch_small",
           e.graph_max_batch_small.below_tp > 0
               ? nlohmann::json{{"below_tp", e.graph_max_batch_small.below_tp},
                                {"below_memory_gib",
                                 e.graph_max_batch_small.below_memory_bytes / 1073741824.0},
                                {"max_batch", figure_json(e, e.graph_max_batch_small.max_batch)}}
               : nlohmann::json(nullptr)},
          {"launch_overhead_decode_s", figure_json(e, e.launch_decode_s)},
          {"launch_overhead_prefill_s", figure_json(e, e.launch_prefill_s)},
          {"launch_overhead_eager_s", figure_json(e, e.launch_eager_s)},
          {"launch_overhead_prefill_before",
           e.launch_prefill_before > 0
               ? nlohmann::json{{"build_date", format_build_date(e.launch_prefill_before)},
                                {"launch_overhead_prefill_s",
                                 figure_json(e, e.launch_prefill_before_s)}}
               : nlohmann::json(nullptr)},
          {"step_overhead_s", figure_json(e, e.step_overhead_s)},
          {"shared_experts_stream",
           e.shared_experts_stream.on
               ? nlohmann::json{{"max_tokens", figure_json(e, e.shared_experts_stream.max_tokens)},
                                {"graphs_only", e.shared_experts_stream.graphs_only},
                                {"source", e.citation(e.shared_experts_stream.source)}}
               : nlohmann::json(nullptr)},
          {"moe_padded_layout", padded},
          {"moe_kernel_releases", releases},
          {"moe_table_stand_ins", stand_ins},
          {"moe_weight_padding", paddings},
          {"window_masking", maskings},
          {"gemm_tables", tables},
          {"moe_tables", moe_tables},
          {"comm_tables", comm_tables},
          {"attention_tables", attention_tables},
          {"gemm_table_scale", figure_json(e, e.gemm_table_scale)},
          {"borrowed_gemm_formats", borrowed_formats},
          {"gemv_bandwidth_per_sm_Bps", figure_json(e, e.gemv_bandwidth_per_sm_Bps)},
          {"gemv_max_m", figure_json(e, e.gemv_max_m)},
          {"gemv_stream", gemv_stream},
          {"weight_only_stream", weight_only},
          {"dequant_gemm", dequant},
          {"cublas_gemm", cublas},
          {"fp8_prequantized", prequantized},
          {"expert_activations", expert_acts},
          {"weight_activations", weight_acts},
          {"latent_cache_cast",
           e.latent_cache_cast
               ? nlohmann::json{{"architectures", e.latent_cache_cast->architectures},
                                {"bandwidth_efficiency",
                                 figure_json(e, e.latent_cache_cast->bandwidth_efficiency)},
                                {"kernel", e.latent_cache_cast->kernel},
                                {"source", e.citation(e.latent_cache_cast->source)}}
               : nlohmann::json(nullptr)},
          {"sparse_mla", sparse_mla},
          {"activation_storage", storage},
          {"gemm_copies", copies},
          {"gemm_kernels", e.gemm_kernels},
          {"attention_kernels", e.attention_kernels},
          {"fusions", e.fusions},
          {"unsupported_formats", unsupported},
          {"file_mixes", mixes},
          {"scheduler", scheduler_json(e)},
          {"notes", e.notes},
          {"sources", e.sources}};
}

}  // namespace roofline

namespace roofline {

std::int32_t parse_build_date(std::string_view text, std::string_view what) {
  const auto bad = [&] {
    return InvalidArgument(std::string(what) + ": '" + clip_utf8(text, 20) +
                           "' is not a build date (YYYY-MM-DD or YYYY-MM)");
  };
  const auto digits = [&](std::size_t at, std::size_t n) {
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') throw bad();
      v = v * 10 + (text[i] - '0');
    }
    return v;
  };
  if ((text.size() != 7 && text.size() != 10) || text[4] != '-' ||
      (text.size() == 10 && text[7] != '-'))
    throw bad();
  const int year = digits(0, 4), month = digits(5, 2);
  if (year < 2000 || year > 2099 || month < 1 || month > 12) throw bad();
  // Years 2000-2099: every fourth is a leap year.
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const int last = kDays[month - 1] + (month == 2 && year % 4 == 0 ? 1 : 0);
  const int day = text.size() == 10 ? digits(8, 2) : last;
  if (day < 1 || day > last) throw bad();
  return year * 10000 + month * 100 + day;
}

std::string format_build_date(std::int32_t date) {
  return fmt::format("{}-{:02}-{:02}", date / 10000, date / 100 % 100, date % 100);
}

std::string_view graph_policy_name(GraphPolicy g) noexcept {
  switch (g) {
    case GraphPolicy::kDecodeOnly:
      return "decode-only";
    case GraphPolicy::kOff:
      return "off";
    case GraphPolicy::kEngine:
      break;
  }
  return "engine";
}

GraphPolicy parse_graph_policy(std::string_view text, std::string_view what) {
  for (GraphPolicy g : {GraphPolicy::kEngine, GraphPolicy::kDecodeOnly, GraphPolicy::kOff})
    if (text == graph_policy_name(g)) return g;
  throw InvalidArgument(std::string(what) + ": '" + clip_utf8(text, 20) +
                        "' is not a graph policy (engine, decode-only or off)");
}

}  // namespace roofline
