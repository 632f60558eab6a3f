// Measured serving runs (data/validation/serving-dev.csv) and the decode-step
// check: one decode step at batch = concurrency against the measured TPOT.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <map>
#include <tuple>

#include "../common/embedded_data.h"
#include "../common/strict_json.h"
#include "roofline/deadline.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/serving.h"
#include "roofline/validate.h"

namespace roofline {
namespace {

constexpr std::size_t kMaxServingBytes = 16 << 20;
constexpr std::size_t kMaxServingRows = 100000;
constexpr std::int64_t kMaxSize = std::int64_t{1} << 20;
constexpr std::size_t kMaxHarnessBytes = 1 << 20;
constexpr std::size_t kMaxHarnesses = 64;

// The columns, in the order of the development set. A file must have exactly
// these (in any order).
constexpr std::array<std::string_view, 33> kColumns = {"id",
                                                       "backend",
                                                       "backend_version",
                                                       "model_path",
                                                       "system",
                                                       "precision",
                                                       "mode",
                                                       "isl",
                                                       "osl",
                                                       "gemm_quant_mode",
                                                       "moe_quant_mode",
                                                       "batch_size",
                                                       "tp_size",
                                                       "pp_size",
                                                       "attention_dp_size",
                                                       "moe_tp_size",
                                                       "moe_ep_size",
                                                       "prefill_batch_size",
                                                       "prefill_num_workers",
                                                       "prefill_tp_size",
                                                       "prefill_pp_size",
                                                       "prefill_attention_dp_size",
                                                       "prefill_moe_tp_size",
                                                       "prefill_moe_ep_size",
                                                       "decode_batch_size",
                                                       "decode_num_workers",
                                                       "decode_tp_size",
                                                       "decode_pp_size",
                                                       "decode_attention_dp_size",
                                                       "decode_moe_tp_size",
                                                       "decode_moe_ep_size",
                                                       "silicon_ttft_ms",
                                                       "silicon_tpot_ms"};

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

struct LineReader {
  const std::string& origin;
  std::size_t line;
  [[noreturn]] void fail(std::string_view column, const std::string& message) const {
    throw ParseError(origin + ": line " + std::to_string(line) + ": " + std::string(column) + ": " +
                     message);
  }
  // Empty: `fallback`. Otherwise a whole number from 1 to 2^20; a parallel
  // size (`zero_is_unset`) may also be 0, meaning not used (`fallback`).
  std::int64_t size(std::string_view column, std::string_view text, std::int64_t fallback,
                    bool zero_is_unset = true) const {
    if (text.empty()) return fallback;
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    const std::int64_t lo = zero_is_unset ? 0 : 1;
    if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > kMaxSize) {
      fail(column, "'" + clip_utf8(text, 20) + "' is not a whole number from " +
                       std::to_string(lo) + " to 1048576");
    }
    return v == 0 ? fallback : v;
  }
  double milliseconds(std::string_view column, std::string_view text) const {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v <= 0 ||
        v > 1e7) {
      fail(column, "'" + clip_utf8(text, 20) + "' is not a time in ms (positive, at most 1e7)");
    }
    return v;
  }
};

// The client concurrency an id names ("..._c64_..."), or 0 when it names none.
std::int64_t id_concurrency(const LineReader& in, std::string_view id) {
  for (std::size_t at = id.find("_c"); at != std::string_view::npos; at = id.find("_c", at + 2)) {
    std::size_t end = at + 2;
    while (end < id.size() && std::isdigit(static_cast<unsigned char>(id[end]))) ++end;
    if (end > at + 2 && end < id.size() && id[end] == '_')
      return in.size("id", id.substr(at + 2, end - at - 2), 0);
  }
  return 0;
}

// The id's "_tp<A>_ep<B>_" label: {A, B}; B is 0 for "_epnone_"; {0, 0} without one.
std::pair<std::int64_t, std::int64_t> id_tp_ep(const LineReader& in, std::string_view id) {
  for (std::size_t at = id.find("_tp"); at != std::string_view::npos; at = id.find("_tp", at + 3)) {
    std::size_t end = at + 3;
    while (end < id.size() && std::isdigit(static_cast<unsigned char>(id[end]))) ++end;
    if (end == at + 3 || id.substr(end, 3) != "_ep") continue;
    const std::int64_t tp = in.size("id", id.substr(at + 3, end - at - 3), 0);
    std::size_t ep_end = end + 3;
    while (ep_end < id.size() && std::isdigit(static_cast<unsigned char>(id[ep_end]))) ++ep_end;
    const std::int64_t ep =
        ep_end > end + 3 ? in.size("id", id.substr(end + 3, ep_end - end - 3), 0) : 0;
    return {tp, ep};
  }
  return {0, 0};
}

// Some of the set's campaigns write a deployment of N GPUs with attention TP
// (or attention DP) N and expert parallelism N as tp_size (or
// attention_dp_size) N x N, moe_tp_size N and moe_ep_size N: their ids read
// "_tp4_ep4_" where tp_size is 16 (104 rows), and 23 of these rows repeat,
// TTFT and TPOT alike, rows of the same runs written tp_size 4, moe_tp_size
// 1, moe_ep_size 4 (or attention_dp_size 4). Such rows are read as that
// deployment: N GPUs, the experts split N ways; so are the 46 unlabelled
// rows of the same shape past 8 GPUs. Where the id gives other sizes
// ("_tp4_epnone_" for tp_size 4 with moe 2 x 2), the row's own fields stand.
//
// Other rows write such a deployment as tp_size N and attention_dp_size N with
// moe_tp_size 1 and moe_ep_size N x N (38 vLLM rows: InferenceX's "tp: N, ep:
// N", --tensor-parallel-size N --enable-expert-parallel on N GPUs, which its
// Kimi-K2.5 and MiniMax-M2.5 sweeps search; their ids say "_tpN_epN_" where
// labelled, and tp 4 x attention DP 4 would be 16 GPUs of a single-node
// benchmark). They are read the same way, by the same label rule.
void undo_tp_times_ep(const LineReader& in, ServingRun* r) {
  if (r->moe_tp == 1 && r->tp > 1 && r->attention_dp == r->tp && r->moe_ep == r->tp * r->tp) {
    const std::int64_t n = r->tp;
    const auto [id_tp, id_ep] = id_tp_ep(in, r->id);
    if (id_tp != 0 && (id_tp != n || id_ep != n)) return;
    if (id_tp == 0 && n * n <= 8) return;  // unlabelled: only past one 8-GPU node
    r->layout_note = "written tp_size " + std::to_string(n) + " x attention_dp_size " +
                     std::to_string(n) + " with moe 1 x " + std::to_string(n * n) + "; read as " +
                     std::to_string(n) + " GPUs with expert parallelism " + std::to_string(n) +
                     (id_tp != 0 ? " (its id)" : " (no id label; past 8 GPUs)");
    r->attention_dp = 1;
    r->moe_ep = n;
    return;
  }
  const std::int64_t n = r->moe_ep;
  if (r->moe_tp != n || n <= 1 || r->tp * r->attention_dp != n * n) return;
  const auto [id_tp, id_ep] = id_tp_ep(in, r->id);
  if (id_tp != 0 && (id_tp != n || id_ep != n)) return;
  // Without a label only layouts past one 8-GPU node (16 and 64 here, at
  // concurrencies as low as 4): TensorRT-LLM's moe_tp x moe_ep must equal
  // its TP, so a labelless TP 4 with MoE 2 x 2 is a real 4-GPU deployment.
  if (id_tp == 0 && n * n <= 8) return;
  r->layout_note =
      "written " + std::string(r->attention_dp > 1 ? "attention_dp_size " : "tp_size ") +
      std::to_string(n * n) + " with moe " + std::to_string(n) + " x " + std::to_string(n) +
      "; read as " + std::to_string(n) + " GPUs with expert parallelism " + std::to_string(n) +
      (id_tp != 0 ? " (its id)" : " (no id label; past 8 GPUs)");
  if (r->attention_dp > 1) {
    if (r->tp != 1) return;
    r->attention_dp = n;
  } else {
    r->tp = n;
  }
  r->moe_tp = 1;
}

// Eight TensorRT-LLM rows (DeepSeek and gpt-oss, 1.3.0rc1 and 1.3.0rc5) leave
// attention_dp_size empty while their batch_size is the id's clients over
// tp_size (224 clients at TP 4 with batch_size 56; AIConfigurator's
// silicon_concurrency agrees): a rank's batch, which batch_size is only under
// attention data parallelism. AIConfigurator writes that deployment as
// tp_size 1 with attention_dp_size N, and so they are read.
// `adp_blank`: the row's attention_dp_size field is empty (a written 1 stands).
void read_rank_batch(bool adp_blank, std::int64_t batch, ServingRun* r) {
  if (!adp_blank || r->attention_dp != 1 || r->tp <= 1 || r->concurrency != batch * r->tp) return;
  r->layout_note = "batch_size " + std::to_string(batch) + " is the id's " +
                   std::to_string(r->concurrency) + " clients over tp_size " +
                   std::to_string(r->tp) + " with attention_dp_size blank; read as attention DP " +
                   std::to_string(r->tp) + " (a rank's batch)";
  r->attention_dp = r->tp;
  r->tp = 1;
}

// The preset a Hugging Face id names, or empty.
std::string preset_of(std::string_view model_path) {
  static const std::map<std::string, std::string, std::less<>> kPresets = {
      {"meta-llama/llama-3.1-8b-instruct", "llama-3.1-8b"},
      {"nvidia/llama-3.1-8b-instruct-fp8", "llama-3.1-8b"},
      {"meta-llama/llama-3.1-70b", "llama-3.1-70b"},
      {"meta-llama/llama-3.1-70b-instruct", "llama-3.1-70b"},
      {"openai/gpt-oss-120b", "gpt-oss-120b"},
      {"openai/gpt-oss-20b", "gpt-oss-20b"},
      // DeepSeek-R1 and V3.1 are the DeepSeek-V3 architecture.
      {"deepseek-ai/deepseek-v3", "deepseek-v3"},
      {"deepseek-ai/deepseek-r1", "deepseek-v3"},
      {"nvidia/deepseek-r1-nvfp4", "deepseek-v3"},
      {"nvidia/deepseek-v3.1-nvfp4", "deepseek-v3"},
      {"qwen/qwen3-30b-a3b", "qwen3-30b-a3b"},
      {"qwen/qwen3-32b", "qwen3-32b"},
      // The FP8 checkpoint is the same architecture; the run's quant modes set the formats.
      {"qwen/qwen3-235b-a22b", "qwen3-235b-a22b"},
      {"qwen/qwen3-235b-a22b-fp8", "qwen3-235b-a22b"},
      // Kimi-K2.5's text model has Kimi-K2's values in every field the tool models.
      {"moonshotai/kimi-k2-instruct", "kimi-k2"},
      {"moonshotai/kimi-k2.5", "kimi-k2"},
      // MiniMax-M2.1 and M2.5 are the MiniMax-M2 architecture.
      {"minimaxai/minimax-m2", "minimax-m2"},
      {"minimaxai/minimax-m2.1", "minimax-m2"},
      {"minimaxai/minimax-m2.5", "minimax-m2"},
      // The fp8 and nvfp4 checkpoints are this architecture; the run's quant modes set the formats.
      {"qwen/qwen3.5-397b-a17b", "qwen3.5-397b-a17b"},
      {"zhipuai/glm-5", "glm-5"},
  };
  const auto it = kPresets.find(detail::ascii_lower(model_path));
  return it == kPresets.end() ? std::string() : it->second;
}

// A quant mode of the development set as a format ("" -> unset).
std::optional<Format> quant_format(std::string_view mode) {
  if (mode.empty() || mode == "bf16") return std::nullopt;
  if (mode == "fp8" || mode == "fp8_block") return Format::kFp8;
  if (mode == "nvfp4") return Format::kNvfp4;
  if (mode == "int4_wo") return Format::kInt4;
  throw Unsupported("quant mode '" + clip_utf8(mode, 20) + "' has no format here");
}

struct Refusal : Unsupported {
  using Unsupported::Unsupported;
};

// The scenario of one aggregated run's decode step; throws Refusal with the reason.
// `aiconfigurator`: the run is one of AIConfigurator's deployments. Its SDK
// gives a quantized checkpoint (fp8 or nvfp4, fp8 block scales included:
// DeepSeek-V3/R1's and MiniMax-M2.5's own, "-FP8" and "-NVFP4" releases) an
// fp8 KV cache (sdk/models/helpers.py, _infer_quant_modes_from_raw_config),
// and its precision profiles, which the set's `precision` column names, give
// the fp8 and fp4 profiles an fp8 cache whatever the checkpoint
// (sdk/task_v1_compat.py, _PROFILE_TO_QUANT: fp8, fp8_static and nvfp4 carry
// kvcache_quant_mode fp8; bfloat16 and mxfp4 keep bf16). The second rule is
// the one the runs bear out: a bf16 cache leaves too little room for the
// clients that the rows show decoding at once (docs/VALIDATION.md, session 23).
// bf16, int4 and mxfp4 runs of bf16 checkpoints keep the default bf16 cache.
Scenario decode_step(const ServingRun& r, const ModelSpec& m, std::string* formats,
                     bool aiconfigurator) {
  if (r.pp > 1) throw Refusal("pipeline parallel serving is not modeled (the serving issue, #12)");
  Scenario s;
  s.phase = Phase::kDecode;
  s.batch = r.concurrency;
  s.seq_len = r.isl + r.osl / 2;

  // AIConfigurator's tp_size is the attention tensor parallelism within each
  // attention data-parallel group: tp_size x attention_dp_size GPUs in all,
  // which moe_tp_size x moe_ep_size also count.
  s.tp = r.tp * r.attention_dp;
  s.attention_dp = r.attention_dp;
  s.ep = r.moe_ep;
  const std::optional<Format> gemm = quant_format(r.gemm_quant);
  const std::optional<Format> moe = quant_format(r.moe_quant);
  if (m.native_experts == Format::kMxfp4 && m.moe) {
    // gpt-oss ships MXFP4 experts and BF16 other weights; the set labels its
    // runs nvfp4, but the engines load the checkpoint as shipped, and the
    // engine's profile says which activations its MoE kernel takes (MXFP8
    // on Blackwell in TensorRT-LLM, BF16 elsewhere).
    *formats = "as shipped (mxfp4 experts)";
    return s;
  }
  if (gemm) s.precision.weights = *gemm;
  if (moe && m.moe) s.precision.experts = *moe;
  // W8A8 and W4A4 kernels: activations in the weights' format (TensorRT-LLM,
  // vLLM and SGLang quantize activations on the fly for fp8 and nvfp4).
  const std::optional<Format> act_from = gemm ? gemm : moe;
  if (act_from && (*act_from == Format::kFp8 || *act_from == Format::kNvfp4))
    s.precision.act = *act_from;
  const std::string path = detail::ascii_lower(r.model_path);
  const auto ends_with = [&path](std::string_view tail) {
    return path.size() >= tail.size() &&
           path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
  };
  const bool quantized_checkpoint = m.native_weights == Format::kFp8 ||
                                    m.native_weights == Format::kNvfp4 || ends_with("-fp8") ||
                                    ends_with("-nvfp4") || ends_with("-fp4");
  const bool fp8_profile = r.precision == "fp8" || r.precision == "fp4";
  if (aiconfigurator && (quantized_checkpoint || fp8_profile)) s.precision.kv = Format::kFp8;
  *formats = std::string(format_id(s.precision.weights.value_or(m.native_weights)));
  if (m.moe)
    *formats += "/" + std::string(format_id(s.precision.experts.value_or(
                          s.precision.weights.value_or(m.native_experts))));
  if (const QuantizedRelease* release = followed_release(m, s.precision))
    *formats += " as " + release->checkpoint;
  return s;
}

// The mean decode step when each step also carries running / osl whole
// prompts (the requests that arrive as others finish), for the running
// requests whose KV cache (isl + osl tokens each) fits in the memory the
// engine gives its cache in AIConfigurator's deployments (the engine's
// kv_memory rule, at the share those deployments set): plain + running /
// osl x (the step with one prompt - plain), or with the attention-DP balance
// running / osl / D x (the step with D prompts, one a rank - plain).
double step_with_prompt_share(const ModelSpec& m, const Device& d, Scenario s, const ServingRun& r,
                              const ModelOptions& o) {
  Scenario one = s;
  one.batch = 1;
  one.seq_len = r.isl + r.osl;
  const MemoryEstimate mem = estimate_memory(m, d, one);
  const EngineScheduler& sched = o.engine && o.engine->scheduler.known
                                     ? o.engine->scheduler
                                     : EngineRegistry::built_in().get("roofline").scheduler;
  const double share =
      r.kv_memory_share > 0 ? r.kv_memory_share : sched.kv_memory_share(r.backend_version, true);
  const double room =
      sched.kv_room_bytes(share, mem.capacity_bytes, mem.weights_bytes, mem.activation_bytes);
  const double fit = mem.kv_cache_bytes > 0 ? std::floor(room / mem.kv_cache_bytes) : 0;
  if (fit < 1) throw Refusal("one request's KV cache does not fit beside the weights");
  s.batch = std::min<std::int64_t>(r.concurrency, static_cast<std::int64_t>(fit));
  ModelOptions sized = o;  // a pool cast whole each step is the one this share sizes
  sized.kv_memory_share = share;
  const double plain = predict(m, d, s, sized).time_s;
  // A prompt lands whole on one attention-DP rank; with the deployment's
  // balance (ServingRun::adp_balance) they start together, one a rank, in a
  // step that comes 1 / attention_dp as often.
  const std::int64_t together = r.adp_balance && r.mode == "agg" ? s.attention_dp : 1;
  s.prefill_tokens = r.isl * together;
  s.prefill_prompt = r.isl;
  const double with_prompt = predict(m, d, s, sized).time_s;
  // A speculative step finishes tokens_per_step tokens of each request, so
  // requests (and their prompts) turn over that much faster; TPOT is the
  // step over its tokens.
  const double per_step = tokens_per_step(s);
  const double step = plain + static_cast<double>(s.batch) * per_step / static_cast<double>(r.osl) *
                                  std::max(0.0, with_prompt - plain) /
                                  static_cast<double>(together);
  return step / per_step;
}

}  // namespace

std::vector<ServingRun> parse_serving_runs(std::string_view text, const std::string& origin) {
  if (text.size() > kMaxServingBytes) throw ParseError(origin + ": larger than 16 MB");
  std::vector<ServingRun> runs;
  std::size_t pos = 0, line_no = 0;
  std::vector<int> column_of;  // file column -> index in kColumns
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const LineReader in{origin, line_no};
    if (line.find('"') != std::string_view::npos) in.fail("line", "quoted fields are not read");
    const std::vector<std::string_view> fields = split_fields(line);
    if (column_of.empty()) {
      for (std::string_view name : fields) {
        const auto it = std::find(kColumns.begin(), kColumns.end(), name);
        if (it == kColumns.end()) in.fail(clip_utf8(name, 40), "unknown column");
        const int index = static_cast<int>(it - kColumns.begin());
        if (std::find(column_of.begin(), column_of.end(), index) != column_of.end())
          in.fail(name, "column given twice");
        column_of.push_back(index);
      }
      if (column_of.size() != kColumns.size()) {
        for (std::size_t i = 0; i < kColumns.size(); ++i) {
          if (std::find(column_of.begin(), column_of.end(), static_cast<int>(i)) == column_of.end())
            in.fail(kColumns[i], "missing column");
        }
      }
      continue;
    }
    if (fields.size() != column_of.size()) {
      in.fail("line", std::to_string(fields.size()) + " fields, the header has " +
                          std::to_string(column_of.size()));
    }
    if (runs.size() >= kMaxServingRows) in.fail("line", "more than 100,000 rows");
    std::array<std::string_view, kColumns.size()> f{};
    for (std::size_t i = 0; i < fields.size(); ++i)
      f[static_cast<std::size_t>(column_of[i])] = fields[i];
    auto col = [&](std::string_view name) {
      return f[static_cast<std::size_t>(std::find(kColumns.begin(), kColumns.end(), name) -
                                        kColumns.begin())];
    };
    ServingRun r;
    r.id = std::string(col("id"));
    r.backend = std::string(col("backend"));
    r.backend_version = std::string(col("backend_version"));
    r.model_path = std::string(col("model_path"));
    r.system = std::string(col("system"));
    r.precision = std::string(col("precision"));
    r.mode = std::string(col("mode"));
    if (r.mode != "agg" && r.mode != "disagg") in.fail("mode", "must be agg or disagg");
    r.gemm_quant = std::string(col("gemm_quant_mode"));
    r.moe_quant = std::string(col("moe_quant_mode"));
    r.isl = in.size("isl", col("isl"), 0, false);
    r.osl = in.size("osl", col("osl"), 0, false);
    if (r.isl == 0 || r.osl == 0) in.fail("isl", "isl and osl are required");
    if (r.mode == "agg") {
      const std::int64_t batch = in.size("batch_size", col("batch_size"), 0, false);
      if (batch == 0) in.fail("batch_size", "required in aggregated rows");
      r.tp = in.size("tp_size", col("tp_size"), 1);
      r.pp = in.size("pp_size", col("pp_size"), 1);
      r.attention_dp = in.size("attention_dp_size", col("attention_dp_size"), 1);
      // batch_size is a rank's batch under attention data parallelism: the
      // clients are the id's "_c<N>_" (batch x attention_dp in 74 of the set's
      // 75 such rows), else that product. Without it the id agrees with
      // batch_size in 1,418 of 1,426 rows; it is the benchmark's label, so it
      // wins where given.
      r.concurrency = id_concurrency(in, r.id);
      if (r.concurrency == 0) r.concurrency = batch * r.attention_dp;  // as written
      r.moe_tp = in.size("moe_tp_size", col("moe_tp_size"), 1);
      r.moe_ep = in.size("moe_ep_size", col("moe_ep_size"), 1);
      undo_tp_times_ep(in, &r);
      read_rank_batch(col("attention_dp_size").empty(), batch, &r);
    } else {
      // Disaggregated rows: the client concurrency from batch_size, else the
      // id's "_c<N>_"; the decode pool's figures in the shared fields.
      r.concurrency = in.size("batch_size", col("batch_size"), 0);
      // Neither: concurrency stays 0 and the row is refused.
      if (r.concurrency == 0) r.concurrency = id_concurrency(in, r.id);
      r.prefill_batch = in.size("prefill_batch_size", col("prefill_batch_size"), 0);
      r.decode_batch = in.size("decode_batch_size", col("decode_batch_size"), 0);
      (void)in.size("prefill_moe_tp_size", col("prefill_moe_tp_size"), 1);
      r.prefill_moe_ep = in.size("prefill_moe_ep_size", col("prefill_moe_ep_size"), 1);
      r.workers_given = !col("prefill_num_workers").empty() && !col("decode_num_workers").empty();
      r.prefill_workers = in.size("prefill_num_workers", col("prefill_num_workers"), 1);
      r.decode_workers = in.size("decode_num_workers", col("decode_num_workers"), 1);
      r.prefill_tp = in.size("prefill_tp_size", col("prefill_tp_size"), 1);
      r.prefill_pp = in.size("prefill_pp_size", col("prefill_pp_size"), 1);
      r.prefill_attention_dp =
          in.size("prefill_attention_dp_size", col("prefill_attention_dp_size"), 1);
      r.tp = in.size("decode_tp_size", col("decode_tp_size"), 1);
      r.pp = in.size("decode_pp_size", col("decode_pp_size"), 1);
      r.attention_dp = in.size("decode_attention_dp_size", col("decode_attention_dp_size"), 1);
      r.moe_tp = in.size("decode_moe_tp_size", col("decode_moe_tp_size"), 1);
      r.moe_ep = in.size("decode_moe_ep_size", col("decode_moe_ep_size"), 1);
    }
    r.ttft_ms = in.milliseconds("silicon_ttft_ms", col("silicon_ttft_ms"));
    r.tpot_ms = in.milliseconds("silicon_tpot_ms", col("silicon_tpot_ms"));
    runs.push_back(std::move(r));
  }
  if (column_of.empty()) throw ParseError(origin + ": no header line");
  return runs;
}

namespace {

// A note's counts (steps, lengths, layouts): a whole number from `min` (1
// unless 0 means none) to `max`.
std::int64_t whole_number(detail::StrictObject& o, std::string_view key,
                          std::int64_t max = kMaxSize, std::int64_t min = 1) {
  const double v = o.non_negative(key);
  if (v != std::floor(v) || v < static_cast<double>(min) || v > static_cast<double>(max))
    o.fail(key, fmt::format("must be a whole number from {} to {}", min, max));
  return static_cast<std::int64_t>(v);
}

// A setting's "when": {"isl": L, "osl": L, "tp": T, "tp_below": T,
// "clients_at_least": C, "attention_dp": true} (each optional; none: every row).
HarnessCondition harness_condition(detail::StrictObject& parent) {
  HarnessCondition c;
  if (!parent.has("when")) return c;
  detail::StrictObject w = parent.object("when");
  const auto size = [&w](std::string_view key) -> std::int64_t {
    return w.has(key) ? whole_number(w, key) : 0;
  };
  c.isl = size("isl");
  c.osl = size("osl");
  c.tp = size("tp");
  c.tp_below = size("tp_below");
  c.clients_at_least = size("clients_at_least");
  if (const nlohmann::json* dp = w.optional("attention_dp")) {
    if (!dp->is_boolean() || !dp->get<bool>())
      w.fail("attention_dp", "true (only the rows with attention DP), or left out");
    c.attention_dp = true;
  }
  w.finish();
  return c;
}

// A setting given by rules, [{..., "when": {...}}, ...] (1 to 8; the first a
// row meets applies): `read` takes each rule's value from its object.
template <typename Read>
void read_rules(detail::StrictObject& parent, std::string_view key, const std::string& origin,
                Read read) {
  const nlohmann::json& rules = parent.required(key);
  if (!rules.is_array() || rules.empty() || rules.size() > 8)
    parent.fail(key, "expected a list of 1 to 8 rules");
  for (std::size_t k = 0; k < rules.size(); ++k) {
    detail::StrictObject rule(rules[k], origin,
                              parent.path_of(key) + "[" + std::to_string(k) + "]");
    read(rule, harness_condition(rule));
    rule.finish();
  }
}

// Experts whole on each of the row's GPUs, none split within.
void spread_experts(ServingRun* r) {
  r->moe_ep = r->tp * r->attention_dp;
  r->moe_tp = 1;
}

// Another way the row's layout was read, after any before it.
void add_layout_note(ServingRun* r, const std::string& what) {
  r->layout_note += (r->layout_note.empty() ? "" : "; ") + what;
}

// The first of `rules` whose condition the row meets, or null.
template <typename Rule>
const Rule* first_met(const std::vector<Rule>& rules, const ServingRun& r) {
  const auto it =
      std::find_if(rules.begin(), rules.end(), [&r](const Rule& rule) { return rule.when.met(r); });
  return it == rules.end() ? nullptr : &*it;
}

}  // namespace

bool HarnessCondition::met(const ServingRun& r) const noexcept {
  return (!isl || r.isl == isl) && (!osl || r.osl == osl) && (!tp || r.tp == tp) &&
         (!tp_below || r.tp < tp_below) && r.concurrency >= clients_at_least &&
         (!attention_dp || r.attention_dp > 1);
}

std::vector<ServingHarness> parse_serving_harnesses(std::string_view text,
                                                    const std::string& origin) {
  using detail::StrictObject;
  const nlohmann::json doc = detail::parse_json_text(text, origin, kMaxHarnessBytes);
  StrictObject root(doc, origin, "");
  (void)root.string("about");
  const std::map<std::string, std::string> sources = detail::read_sources(root);
  const auto cite = [&sources](StrictObject& o) {
    std::string key = o.string("source");
    const auto it = sources.find(key);
    if (it == sources.end()) o.fail("source", "'" + clip_utf8(key, 40) + "' is not in sources");
    return it->second;
  };
  const nlohmann::json& list = root.required("harnesses");
  if (!list.is_array()) root.fail("harnesses", "must be an array");
  if (list.size() > kMaxHarnesses) root.fail("harnesses", "more than 64 notes");
  std::vector<ServingHarness> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject h(list[i], origin, "harnesses[" + std::to_string(i) + "]");
    ServingHarness n;
    n.id = h.string("id");
    if (n.id.empty() || n.id.size() > 64) h.fail("id", "must be 1 to 64 characters");
    n.benchmark = h.string("benchmark");
    StrictObject m = h.object("match");
    n.backend = m.string("backend");
    n.backend_version = m.string("backend_version");
    n.system = m.string("system");
    // "model_path": a name, or the names the same runs carry (1 to 4).
    if (const nlohmann::json* paths = m.optional("model_path"); paths && paths->is_array()) {
      if (paths->empty() || paths->size() > 4)
        m.fail("model_path", "a name, or a list of 1 to 4 names");
      for (const nlohmann::json& p : *paths) {
        if (!p.is_string() || p.get<std::string>().empty())
          m.fail("model_path", "the names must be non-empty strings");
        n.model_paths.push_back(p.get<std::string>());
      }
      (void)m.required("model_path");
    } else {
      n.model_paths.push_back(m.string("model_path"));
    }
    n.precision = m.string("precision");
    // "id_prefix": how the rows' ids begin, one or a list of 1 to 8.
    if (const nlohmann::json* ids = m.optional("id_prefix")) {
      const auto add = [&](const nlohmann::json& p) {
        if (!p.is_string() || p.get<std::string>().empty() || p.get<std::string>().size() > 128)
          m.fail("id_prefix", "the beginnings must be strings of 1 to 128 bytes");
        n.id_prefixes.push_back(p.get<std::string>());
      };
      if (ids->is_array()) {
        if (ids->empty() || ids->size() > 8) m.fail("id_prefix", "a beginning, or 1 to 8");
        for (const nlohmann::json& p : *ids) add(p);
      } else {
        add(*ids);
      }
    }
    // Optionally the layout too, as the rows are read (a campaign that shares
    // the other columns with another run at another layout).
    const auto layout = [&m](std::string_view key) -> std::int64_t {
      return m.has(key) ? whole_number(m, key) : 0;
    };
    n.tp = layout("tp");
    n.ep = layout("ep");
    n.clients_at_most = layout("clients_at_most");
    m.finish();
    if (n.backend.empty() || n.system.empty() || n.model_paths.front().empty() ||
        n.precision.empty())
      h.fail("match", "backend, system, model_path and precision must not be empty");
    std::string source = cite(h);
    if (h.has("speculative_decoding")) {
      StrictObject sd = h.object("speculative_decoding");
      if (sd.string("method") != "mtp") sd.fail("method", "must be mtp (a one-layer draft head)");
      n.draft_tokens = whole_number(sd, "draft_tokens", kMaxDraftTokens);
      n.draft_tokens_with_attention_dp =
          whole_number(sd, "draft_tokens_with_attention_dp", kMaxDraftTokens);
      source += "; " + cite(sd);
      sd.finish();
    }
    if (h.has("deployment")) {
      StrictObject dp = h.object("deployment");
      const auto whole = [&dp](std::string_view key) { return whole_number(dp, key); };
      if (dp.has("kv_cache")) {
        // A compute format, q8_0 or q4_0, as a strategy's KV cache.
        const std::string kv = dp.string("kv_cache");
        Format f{};
        if (!try_parse_format(kv, &f) ||
            !(format_info(f).compute_format || f == Format::kQ8_0 || f == Format::kQ4_0))
          dp.fail("kv_cache", "'" + clip_utf8(kv, 20) + "' is not a KV cache format");
        n.kv = f;
      }
      // Fixed limits, or the TensorRT-LLM scripts' formula (its three terms together).
      if (const nlohmann::json* v = dp.optional("max_running"); v && v->is_string()) {
        if (*v != "clients") dp.fail("max_running", "a number, or \"clients\" (one a client)");
        n.max_running_is_clients = true;
        (void)dp.string("max_running");
      } else if (v) {
        n.max_running = whole("max_running");
      }
      if (const nlohmann::json* v = dp.optional("token_budget"); v && v->is_array()) {
        // "token_budget": [{"tokens": N, "when": {...}}, ...], or one for every row.
        read_rules(dp, "token_budget", origin, [&n](StrictObject& rule, HarnessCondition when) {
          n.token_budgets.push_back({whole_number(rule, "tokens"), when});
        });
      } else if (v) {
        n.token_budget = whole("token_budget");
      }
      const bool budget_given = n.token_budget || !n.token_budgets.empty();
      if (dp.has("max_batch_attention_dp_divisor") || dp.has("token_budget_headroom") ||
          dp.has("token_budget_round_to") || dp.has("token_budget_at_least")) {
        if (n.max_running || n.max_running_is_clients || budget_given)
          dp.fail(budget_given ? "token_budget" : "max_running",
                  "give fixed limits or the script's formula, not both");
        // The divisor sets max_batch too; without it the script leaves the
        // engine's running cap and its budget counts every client.
        if (dp.has("max_batch_attention_dp_divisor"))
          n.max_batch_attention_dp_divisor = whole("max_batch_attention_dp_divisor");
        n.token_budget_headroom = whole("token_budget_headroom");
        n.token_budget_round_to = whole("token_budget_round_to");
        if (dp.has("token_budget_at_least"))
          n.token_budget_at_least = whole("token_budget_at_least");
      }
      if (dp.has("expert_parallel")) {
        const nlohmann::json& v = dp.required("expert_parallel");
        if (!v.is_boolean() || !v.get<bool>())
          dp.fail("expert_parallel", "true (the script enables it on every row), or left out");
        n.expert_parallel = true;
      }
      if (dp.has("layout")) {
        // "layout": [{"when": {...}, "expert_parallel": true, "attention_dp": true}, ...]:
        // each rule turns one or both on (the first a row meets applies).
        if (n.expert_parallel) dp.fail("layout", "give expert_parallel or layout rules, not both");
        read_rules(dp, "layout", origin, [&n](StrictObject& rule, HarnessCondition when) {
          const auto on = [&rule](const char* key) {
            const nlohmann::json* v = rule.optional(key);
            if (v && (!v->is_boolean() || !v->get<bool>())) rule.fail(key, "true, or left out");
            return v != nullptr;
          };
          ServingHarness::LayoutRule l;
          l.when = when;
          l.expert_parallel = on("expert_parallel");
          l.attention_dp = on("attention_dp");
          if (!l.expert_parallel && !l.attention_dp)
            rule.fail("expert_parallel", "a rule turns expert parallelism or attention DP on");
          n.layouts.push_back(l);
        });
      }
      if (const nlohmann::json* v = dp.optional("kv_memory"); v && v->is_array()) {
        // "kv_memory": [{"share": S, "when": {...}}, ...], or one share for every row.
        read_rules(dp, "kv_memory", origin, [&n](StrictObject& rule, HarnessCondition when) {
          const double share = rule.non_negative("share");
          if (!(share > 0 && share <= 1)) rule.fail("share", "must be a share in (0, 1]");
          n.kv_memory.push_back({share, when});
        });
      } else if (v) {
        const double share = dp.non_negative("kv_memory");
        if (!(share > 0 && share <= 1))
          dp.fail("kv_memory", "must be a share in (0, 1] of the engine's rule, or rules");
        n.kv_memory.push_back({share, {}});
      }
      if (dp.has("cuda_graphs")) {
        try {
          n.graphs = parse_graph_policy(dp.string("cuda_graphs"), "cuda_graphs");
        } catch (const InvalidArgument& x) {
          dp.fail("cuda_graphs", x.what());
        }
        if (n.graphs == GraphPolicy::kEngine)
          dp.fail("cuda_graphs", "the engine's defaults need no setting: leave it out");
      }
      if (dp.has("graph_capture_size")) n.graph_capture_size = whole("graph_capture_size");
      if (dp.has("moe_kernel")) {
        try {
          n.moe_kernel = parse_moe_kernel(dp.string("moe_kernel"), "moe_kernel");
        } catch (const InvalidArgument& x) {
          dp.fail("moe_kernel", x.what());
        }
      }
      if (n.token_budget_round_to == 0 && !n.max_running && !n.max_running_is_clients &&
          !budget_given && !n.kv && !n.expert_parallel && n.layouts.empty() &&
          !dp.has("batch_wait") && !dp.has("scheduler_recv_interval") &&
          !dp.has("attention_dp_balance") && n.kv_memory.empty() &&
          n.graphs == GraphPolicy::kEngine && n.graph_capture_size == 0 && n.moe_kernel.empty()) {
        dp.fail("max_running",
                "a deployment gives a KV cache, its memory, limits, the formula, expert "
                "parallelism, a scheduler setting, CUDA graphs or a MoE kernel");
      }
      if (dp.has("batch_wait")) {
        // "batch_wait": {"timeout_iters": N, "max_tokens_ratio": R,
        //                "when": {"isl": L, "osl": L, "tp_below": T,
        //                         "clients_at_least": C}} (each optional)
        StrictObject bw = dp.object("batch_wait");
        n.batch_wait_iters = whole_number(bw, "timeout_iters", kMaxBatchWaitIters);
        n.batch_wait_ratio = bw.non_negative("max_tokens_ratio");
        if (n.batch_wait_ratio > 1) bw.fail("max_tokens_ratio", "must be from 0 to 1");
        n.batch_wait_when = harness_condition(bw);
        bw.finish();
      }
      if (dp.has("attention_dp_balance")) {
        // "attention_dp_balance": {"timeout_iters": N, "batching_wait_iters": M}
        // (TensorRT-LLM's attention_dp_config with enable_balance: true).
        StrictObject ab = dp.object("attention_dp_balance");
        n.adp_balance = true;
        n.adp_timeout_iters = whole_number(ab, "timeout_iters", kMaxBatchWaitIters, 0);
        n.adp_batching_wait_iters = whole_number(ab, "batching_wait_iters", kMaxBatchWaitIters, 0);
        ab.finish();
      }
      if (dp.has("scheduler_recv_interval")) {
        // "scheduler_recv_interval": [{"steps": N, "when": {...}}, ...]
        read_rules(
            dp, "scheduler_recv_interval", origin, [&n](StrictObject& rule, HarnessCondition when) {
              n.recv_intervals.push_back({whole_number(rule, "steps", kMaxRecvInterval), when});
            });
      }
      source += "; " + cite(dp);
      dp.finish();
    }
    if (h.has("moe")) {
      StrictObject mo = h.object("moe");
      const std::string act = mo.string("expert_act");
      Format f{};
      if (!try_parse_format(act, &f) || !format_info(f).compute_format)
        mo.fail("expert_act", "'" + clip_utf8(act, 20) + "' is not a compute format");
      n.expert_act = f;
      source += "; " + cite(mo);
      mo.finish();
    }
    if (h.has("client")) {
      StrictObject c = h.object("client");
      n.range_ratio = c.non_negative("range_ratio");
      if (!(n.range_ratio > 0 && n.range_ratio <= 1)) c.fail("range_ratio", "must be in (0, 1]");
      source += "; " + cite(c);
      c.finish();
    }
    n.source = std::move(source);
    (void)h.optional_string("note", "");
    h.finish();
    for (const ServingHarness& e : out) {
      if (e.id == n.id) h.fail("id", "'" + clip_utf8(n.id, 40) + "' given twice");
      // A layout left out (0) covers every one, so it overlaps any given.
      const auto overlaps = [](std::int64_t a, std::int64_t b) { return !a || !b || a == b; };
      const bool same_model =
          std::any_of(e.model_paths.begin(), e.model_paths.end(), [&n](const std::string& p) {
            return std::find(n.model_paths.begin(), n.model_paths.end(), p) != n.model_paths.end();
          });
      // Ids left out cover every row; given on both, they overlap where one
      // beginning starts another.
      const bool same_ids =
          e.id_prefixes.empty() || n.id_prefixes.empty() ||
          std::any_of(e.id_prefixes.begin(), e.id_prefixes.end(), [&n](const std::string& a) {
            return std::any_of(
                n.id_prefixes.begin(), n.id_prefixes.end(),
                [&a](const std::string& b) { return a.starts_with(b) || b.starts_with(a); });
          });
      if (std::tie(e.backend, e.backend_version, e.system, e.precision) ==
              std::tie(n.backend, n.backend_version, n.system, n.precision) &&
          same_model && same_ids && overlaps(e.tp, n.tp) && overlaps(e.ep, n.ep))
        h.fail("match", "covers the same rows as '" + clip_utf8(e.id, 40) + "'");
    }
    out.push_back(std::move(n));
  }
  root.finish();
  return out;
}

const std::vector<ServingHarness>& built_in_serving_harnesses() {
  static const std::vector<ServingHarness> notes = [] {
    for (const auto& f : detail::embedded_files()) {
      if (f.name == "validation/serving-harnesses.json")
        return parse_serving_harnesses(f.text, "built-in validation/serving-harnesses.json");
    }
    return std::vector<ServingHarness>{};
  }();
  return notes;
}

void apply_serving_harnesses(const std::vector<ServingHarness>& notes,
                             std::vector<ServingRun>* runs) {
  for (ServingRun& r : *runs) {
    for (const ServingHarness& n : notes) {
      if (r.backend != n.backend || r.backend_version != n.backend_version ||
          r.system != n.system || r.precision != n.precision ||
          std::find(n.model_paths.begin(), n.model_paths.end(), r.model_path) ==
              n.model_paths.end() ||
          (n.tp && r.tp != n.tp) || (n.ep && r.moe_ep != n.ep) ||
          (n.clients_at_most && r.concurrency > n.clients_at_most) ||
          (!n.id_prefixes.empty() &&
           std::none_of(n.id_prefixes.begin(), n.id_prefixes.end(),
                        [&r](const std::string& p) { return r.id.starts_with(p); })))
        continue;
      r.harness = n.id;
      if (const auto* rule = first_met(n.layouts, r)) {
        // The script's layout where the row records none: attention DP over
        // the TP ranks (written as TP 1, as the set writes such rows), experts
        // whole on each GPU. The note's other rules then see the row so read.
        std::string what;
        if (rule->attention_dp && r.attention_dp == 1 && r.tp > 1) {
          r.attention_dp = r.tp;
          r.tp = 1;
          what = "attention DP " + std::to_string(r.attention_dp);
        }
        if (rule->expert_parallel && r.moe_ep == 1 && r.tp * r.attention_dp > 1) {
          spread_experts(&r);
          what +=
              (what.empty() ? "" : " and ") + ("expert parallelism " + std::to_string(r.moe_ep));
        }
        if (!what.empty()) add_layout_note(&r, what + " by the script's rules (" + n.id + ")");
      }
      const bool dp = r.attention_dp > 1;
      r.draft_tokens = dp ? n.draft_tokens_with_attention_dp : n.draft_tokens;
      if (n.token_budget_round_to > 0) {
        // The script's max_num_tokens, per attention-DP rank: its batch term is
        // max_batch where the script sets one (the clients, or their share
        // under attention DP), else the clients.
        const std::int64_t divisor = n.max_batch_attention_dp_divisor;
        const std::int64_t batch =
            !dp || divisor == 0
                ? r.concurrency
                : (r.concurrency < divisor ? r.concurrency : r.concurrency / divisor);
        const std::int64_t step_tokens =
            (r.draft_tokens + 1) * batch + r.isl + n.token_budget_headroom;
        const std::int64_t round = n.token_budget_round_to;
        r.max_running = divisor > 0 ? batch * r.attention_dp : 0;
        r.token_budget = r.attention_dp * std::max(n.token_budget_at_least,
                                                   (step_tokens + round - 1) / round * round);
      } else {
        r.max_running = n.max_running_is_clients ? r.concurrency : n.max_running;
        r.token_budget = n.token_budget;
        if (const auto* rule = first_met(n.token_budgets, r)) r.token_budget = rule->tokens;
      }
      r.range_ratio = n.range_ratio;
      if (n.expert_parallel && r.moe_ep == 1) {
        spread_experts(&r);  // vLLM's EP size is its TP x DP
        add_layout_note(&r, "expert parallelism " + std::to_string(r.moe_ep) + " (" + n.id + ")");
      }
      if (n.batch_wait_iters > 0 && n.batch_wait_when.met(r)) {
        r.batch_wait_iters = n.batch_wait_iters;
        r.batch_wait_ratio = n.batch_wait_ratio;
      }
      if (const auto* rule = first_met(n.recv_intervals, r)) r.recv_interval = rule->steps;
      if (n.adp_balance && dp) {
        r.adp_balance = true;
        r.adp_timeout_iters = n.adp_timeout_iters;
        r.adp_batching_wait_iters = n.adp_batching_wait_iters;
      }
      if (const auto* rule = first_met(n.kv_memory, r)) r.kv_memory_share = rule->share;
      r.expert_act = n.expert_act;
      r.kv = n.kv;
      r.graphs = n.graphs;
      r.graph_capture_size = n.graph_capture_size;
      r.moe_kernel = n.moe_kernel;
      break;  // no two notes cover the same rows
    }
  }
}

std::vector<ServingRun> built_in_serving_runs() {
  for (const auto& f : detail::embedded_files()) {
    if (f.name == "validation/serving-dev.csv") {
      std::vector<ServingRun> runs =
          parse_serving_runs(f.text, "built-in validation/serving-dev.csv");
      apply_serving_harnesses(built_in_serving_harnesses(), &runs);
      return runs;
    }
  }
  return {};
}

std::vector<ServingRun> load_serving_runs(const std::string& path) {
  return parse_serving_runs(detail::read_text_file(path, kMaxServingBytes), path);
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double x = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(x);
  const std::size_t j = std::min(i + 1, v.size() - 1);
  return v[i] + (x - static_cast<double>(i)) * (v[j] - v[i]);
}

ErrorStats error_stats(std::string group, const std::vector<double>& errors) {
  ErrorStats s;
  s.group = std::move(group);
  s.rows = static_cast<int>(errors.size());
  std::vector<double> abs(errors.size());
  std::transform(errors.begin(), errors.end(), abs.begin(), [](double e) { return std::fabs(e); });
  s.median_abs_pct = percentile(abs, 0.5);
  s.p90_abs_pct = percentile(abs, 0.9);
  s.max_abs_pct = abs.empty() ? 0 : *std::max_element(abs.begin(), abs.end());
  s.median_signed_pct = percentile(errors, 0.5);
  return s;
}

namespace {

// The group of `groups` named `name`, or nullptr.
const ErrorStats* find_group(const std::vector<ErrorStats>& groups, std::string_view name) {
  for (const ErrorStats& g : groups) {
    if (g.group == name) return &g;
  }
  return nullptr;
}

// A target on one figure of a group: holds when the figure is at most `limit`.
TargetCheck figure_target(std::string target, const ErrorStats& g, double figure, double limit) {
  TargetCheck t{std::move(target), figure, limit, figure <= limit, ""};
  if (!t.holds) {
    t.misses = fmt::format("{:.1f}% over {} rows (signed median {:+.1f}%)", figure, g.rows,
                           g.median_signed_pct);
  }
  return t;
}

}  // namespace

std::vector<TargetCheck> decode_step_targets(const DecodeStepReport& r) {
  constexpr double kDecodeStepMedianLimitPct = 12;  // issue 11
  const ErrorStats* all = find_group(r.groups, "all");
  if (!all || all->rows == 0) return {};
  return {figure_target("decode steps: median |error|", *all, all->median_abs_pct,
                        kDecodeStepMedianLimitPct)};
}

std::vector<TargetCheck> serving_targets(const DecodeStepReport& r) {
  // Issue 12's bounds for the aggregated rows.
  constexpr double kTpotMedianLimitPct = 10, kTpotP90LimitPct = 25, kTtftMedianLimitPct = 20;
  std::vector<TargetCheck> out;
  if (const ErrorStats* tpot = find_group(r.groups, "mode=agg"); tpot && tpot->rows > 0) {
    out.push_back(figure_target("aggregated TPOT: median |error|", *tpot, tpot->median_abs_pct,
                                kTpotMedianLimitPct));
    out.push_back(
        figure_target("aggregated TPOT: p90 |error|", *tpot, tpot->p90_abs_pct, kTpotP90LimitPct));
  }
  if (const ErrorStats* ttft = find_group(r.ttft_groups, "mode=agg"); ttft && ttft->rows > 0) {
    out.push_back(figure_target("aggregated TTFT: median |error|", *ttft, ttft->median_abs_pct,
                                kTtftMedianLimitPct));
  }
  return out;
}

namespace {

DecodeStepReport check_runs(const std::vector<ServingRun>& runs, const Registry& registry,
                            const ModelOptions& options, const std::string& engine,
                            const EngineRegistry* tables, bool prefill_share, bool serving,
                            ServingRecipe recipe = ServingRecipe::kEngineDefaults,
                            std::int64_t rounds = kDefaultRounds, std::int64_t prompt_pool = 0) {
  DecodeStepReport report;
  report.prompt_pool = prompt_pool;
  if (serving) {
    report.repeated = repeated_serving_runs(runs);
    report.conflicts = measurement_conflicts(runs);
  } else {  // the decode-step check reads aggregated rows only
    std::vector<ServingRun> aggregated;
    std::copy_if(runs.begin(), runs.end(), std::back_inserter(aggregated),
                 [](const ServingRun& r) { return r.mode == "agg"; });
    report.repeated = repeated_serving_runs(aggregated);
    report.conflicts = measurement_conflicts(aggregated);
  }
  const EngineRegistry& engines = EngineRegistry::built_in();
  const EngineProfile* fixed = engine == "case" ? nullptr : &engines.get(engine);
  std::map<std::string, ModelSpec> models;
  std::map<std::string, std::vector<double>> groups, ttft;
  std::map<std::string, int> refusals, harness_rows;
  for (const ServingRun& r : runs) {
    const bool disagg = r.mode != "agg";
    if (disagg && !serving) {
      ++report.skipped_disaggregated;  // a decode step alone says nothing of them
      continue;
    }
    if (!r.harness.empty()) ++harness_rows[r.harness];
    check_deadline("decode-step validation");
    DecodeStepRow row;
    row.run = r;
    try {
      row.model = preset_of(r.model_path);
      if (row.model.empty()) throw Refusal("no preset for this model");
      const Device* d = registry.find(r.system);
      if (!d) {
        std::string id = r.system;
        std::replace(id.begin(), id.end(), '_', '-');
        d = registry.find(id);
        if (!d && id.size() > 4 && id.substr(id.size() - 4) == "-sxm")
          d = registry.find(id.substr(0, id.size() - 4));
      }
      if (!d) throw Refusal("no device file for system " + clip_utf8(r.system, 20));
      row.device = d->id;
      const EngineProfile* e = fixed ? fixed : engines.find(r.backend);
      if (!e) throw Refusal("no engine profile for backend " + clip_utf8(r.backend, 20));
      row.engine = e->id;
      auto it = models.find(row.model);
      if (it == models.end()) it = models.emplace(row.model, load_model(row.model)).first;
      if (r.concurrency == 0)
        throw Refusal("the row gives no concurrency (batch_size, or _c<N>_ in its id)");
      // AIConfigurator's own check of these rows needs the worker counts too
      // (tools/accuracy_regression_testing/predict_silicon_sample.py).
      if (disagg && !r.workers_given)
        throw Refusal("disaggregated row without its prefill and decode worker counts");
      if (disagg && r.prefill_pp > 1)
        throw Refusal("pipeline parallel serving is not modeled (the serving issue, #12)");
      Scenario s = decode_step(r, it->second, &row.formats,
                               !serving || recipe == ServingRecipe::kAiConfigurator);
      // The KV cache the benchmark's deployment gave, from its harness note.
      if (r.kv && *r.kv != s.precision.kv) {
        s.precision.kv = *r.kv;
        row.formats += fmt::format(", {} cache ({})", format_id(*r.kv), clip_utf8(r.harness, 64));
      }
      // An fp8 latent cache that the engine would read through a cast of its
      // whole pool every step (SGLang's FlashAttention 3 on Hopper): these runs
      // cannot have paid it (at their pools of a million tokens the cast
      // alone takes over 100 ms a step, their TPOTs are 10-50 ms), so they
      // are read with a 16-bit cache (docs/VALIDATION.md, session 25).
      // This reading wins over a harness note's fp8 cache (no built-in note
      // meets it): such a run's TPOT cannot hold the cast either.
      if (e->casts_latent_cache(it->second, s.precision.kv, *d)) {
        s.precision.kv = Format::kBf16;
        row.formats += ", bf16 cache (an fp8 one would be cast whole every step)";
      }
      // The benchmark's speculative decoding, from its harness note. No run
      // records its own acceptance: the model's measured one where published
      // (its prompts went through the chat template, which InferenceX adds to
      // its MTP runs so that they accept drafts as real prompts do), else the
      // predictor's default.
      if (r.draft_tokens > 0) {
        s.draft_tokens = r.draft_tokens;
        s.acceptance = draft_acceptance(it->second, r.draft_tokens, std::nullopt);
        const auto measured = measured_tokens_per_step(it->second, r.draft_tokens);
        row.formats += fmt::format(
            ", MTP {}{} ({})", r.draft_tokens,
            measured ? fmt::format(" at {:.3g} tokens a step", *measured) : std::string(),
            clip_utf8(r.harness, 64));
      }
      if (r.expert_act) {
        s.precision.expert_act = r.expert_act;
        row.formats +=
            fmt::format(", experts x {} ({})", format_id(*r.expert_act), clip_utf8(r.harness, 64));
      }
      ModelOptions o = options;
      o.engine = e;
      if (tables) o = with_engine(o, *d, e, *tables);
      if (r.graphs != GraphPolicy::kEngine) {
        o.graphs = r.graphs;
        row.formats += fmt::format(", CUDA graphs {} ({})", graph_policy_name(r.graphs),
                                   clip_utf8(r.harness, 64));
      }
      if (!r.moe_kernel.empty()) {
        o.moe_kernel = r.moe_kernel;
        o = tables ? with_engine(o, *d, e, *tables) : with_engine(o, *d, e);
        row.formats += fmt::format(", {} MoE ({})", r.moe_kernel, clip_utf8(r.harness, 64));
      }
      // A decode step alone runs the release's kernels here (the serving model
      // applies them itself, from the scenario's engine version).
      if (!serving) {
        o = with_engine_release(o, *d, r.backend_version, s.tp,
                                tables ? *tables : EngineRegistry::built_in());
      }
      if (r.graph_capture_size > 0) {
        row.formats += fmt::format(", graphs to {} tokens ({})", r.graph_capture_size,
                                   clip_utf8(r.harness, 64));
      }
      // A decode step alone: these deployments captured graphs up to their batch
      // (AIConfigurator's benchmark rules; the serving model sets each pool's),
      // or up to the size their script gives.
      if (!serving && o.graph_max_batch == 0) {
        o.graph_max_batch = r.graph_capture_size > 0
                                ? r.graph_capture_size
                                : (s.batch + s.attention_dp - 1) / s.attention_dp;
      }
      if (serving) {
        ServingScenario load;
        load.isl = r.isl;
        load.osl = r.osl;
        load.concurrency = r.concurrency;
        load.step = s;
        load.recipe = recipe;
        load.rounds = rounds;
        if (!disagg) load.prompt_pool = prompt_pool;
        load.engine_version = r.backend_version;
        // The benchmark's own limits and random lengths, from its harness note.
        if (r.max_running > 0) load.max_running = r.max_running;
        load.graph_capture_size = r.graph_capture_size;
        if (r.token_budget > 0) load.token_budget = r.token_budget;
        if (r.range_ratio > 0) set_range_ratio(load, r.range_ratio);
        if (r.kv_memory_share > 0) {
          load.kv_memory_share = r.kv_memory_share;
          row.formats +=
              fmt::format(", KV memory {:g} ({})", r.kv_memory_share, clip_utf8(r.harness, 64));
        }
        if (r.recv_interval > 1 && !disagg && r.attention_dp == 1) {
          load.scheduler_recv_interval = r.recv_interval;
          row.formats +=
              fmt::format(", recv every {} steps ({})", r.recv_interval, clip_utf8(r.harness, 64));
        }
        if (r.batch_wait_iters > 0) {
          load.batch_wait_iters = r.batch_wait_iters;
          load.batch_wait_ratio = r.batch_wait_ratio;
          row.formats += fmt::format(", batch wait {} steps / {:g} ({})", r.batch_wait_iters,
                                     r.batch_wait_ratio, clip_utf8(r.harness, 64));
        }
        if (r.adp_balance && !disagg) {
          load.adp_balance = true;
          load.adp_timeout_iters = r.adp_timeout_iters;
          load.adp_batching_wait_iters = r.adp_batching_wait_iters;
          row.formats += fmt::format(", ADP balance {} / {} steps ({})", r.adp_timeout_iters,
                                     r.adp_batching_wait_iters, clip_utf8(r.harness, 64));
        }
        if (recipe == ServingRecipe::kAiConfigurator && disagg) {
          load.prefill_batch = r.prefill_batch;
          load.decode_batch = r.decode_batch;
        }
        if (disagg) {
          load.mode = ServingMode::kDisaggregated;
          load.prefill_workers = r.prefill_workers;
          load.decode_workers = r.decode_workers;
          load.decode_tp = s.tp;
          load.prefill_tp = r.prefill_tp * r.prefill_attention_dp;
          load.prefill_attention_dp = r.prefill_attention_dp;
          load.prefill_ep = r.prefill_moe_ep;
        }
        const ServingResult sr = predict_serving(it->second, *d, load, o);
        row.predicted_ms = sr.tpot_s * 1e3;
        row.predicted_ttft_ms = sr.ttft_s * 1e3;
        row.ttft_error_pct = (row.predicted_ttft_ms - r.ttft_ms) / r.ttft_ms * 100;
      } else if (prefill_share) {
        row.predicted_ms = step_with_prompt_share(it->second, *d, s, r, o) * 1e3;
      } else {
        const Prediction p = predict(it->second, *d, s, o);
        row.predicted_ms = p.time_s / p.tokens_per_step * 1e3;
      }
      row.error_pct = (row.predicted_ms - r.tpot_ms) / r.tpot_ms * 100;
      ++report.predicted;
      std::vector<std::string> keys = {"all", "engine=" + row.engine, "device=" + row.device,
                                       "model=" + row.model};
      if (serving) keys.push_back("mode=" + r.mode);
      for (const std::string& g : keys) {
        groups[g].push_back(row.error_pct);
        if (serving) ttft[g].push_back(row.ttft_error_pct);
      }
    } catch (const TimeLimit&) {
      throw;
    } catch (const Error& x) {
      row.refused = x.what();
      ++report.refused;
      ++refusals[row.refused];
    }
    report.rows.push_back(std::move(row));
  }
  if (auto all = groups.find("all"); all != groups.end()) {
    report.groups.push_back(error_stats("all", all->second));
    groups.erase(all);
  }
  for (const char* prefix : {"mode=", "engine=", "device=", "model="}) {
    for (const auto& [g, errors] : groups) {
      if (g.rfind(prefix, 0) == 0) report.groups.push_back(error_stats(g, errors));
    }
  }
  if (serving) {
    if (auto all = ttft.find("all"); all != ttft.end()) {
      report.ttft_groups.push_back(error_stats("all", all->second));
      ttft.erase(all);
    }
    for (const char* prefix : {"mode=", "engine=", "device=", "model="}) {
      for (const auto& [g, errors] : ttft) {
        if (g.rfind(prefix, 0) == 0) report.ttft_groups.push_back(error_stats(g, errors));
      }
    }
  }
  for (const auto& [reason, n] : refusals) report.refusals.emplace_back(reason, n);
  for (const auto& [id, n] : harness_rows) report.harness_rows.emplace_back(id, n);
  std::sort(report.refusals.begin(), report.refusals.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return report;
}

}  // namespace

DecodeStepReport validate_decode_steps(const std::vector<ServingRun>& runs,
                                       const Registry& registry, const ModelOptions& options,
                                       const std::string& engine, const EngineRegistry* tables,
                                       bool prefill_share) {
  return check_runs(runs, registry, options, engine, tables, prefill_share, false);
}

int repeated_serving_runs(const std::vector<ServingRun>& runs) {
  const auto key = [](const ServingRun& r) {
    return std::tie(r.backend, r.backend_version, r.model_path, r.system, r.precision, r.mode,
                    r.gemm_quant, r.moe_quant, r.isl, r.osl, r.concurrency, r.prefill_batch,
                    r.decode_batch, r.tp, r.pp, r.attention_dp, r.moe_tp, r.moe_ep,
                    r.prefill_moe_ep, r.prefill_tp, r.prefill_pp, r.prefill_attention_dp,
                    r.prefill_workers, r.decode_workers, r.workers_given, r.draft_tokens,
                    r.max_running, r.token_budget, r.range_ratio, r.expert_act, r.kv, r.ttft_ms,
                    r.tpot_ms);
  };
  std::vector<const ServingRun*> order;
  order.reserve(runs.size());
  for (const ServingRun& r : runs) order.push_back(&r);
  std::sort(order.begin(), order.end(),
            [&](const ServingRun* a, const ServingRun* b) { return key(*a) < key(*b); });
  int repeated = 0;
  for (std::size_t i = 1; i < order.size(); ++i) repeated += key(*order[i]) == key(*order[i - 1]);
  return repeated;
}

std::vector<MeasurementConflict> measurement_conflicts(const std::vector<ServingRun>& runs,
                                                       double min_ratio) {
  // Every field of the configuration, the layout an id's labels give and a
  // harness note's speculative decoding included; not the id, the release or
  // the measurements.
  const auto key = [](const ServingRun& r) {
    return std::tie(r.backend, r.model_path, r.system, r.precision, r.mode, r.gemm_quant,
                    r.moe_quant, r.isl, r.osl, r.concurrency, r.prefill_batch, r.decode_batch, r.tp,
                    r.pp, r.attention_dp, r.moe_tp, r.moe_ep, r.prefill_moe_ep, r.prefill_tp,
                    r.prefill_pp, r.prefill_attention_dp, r.prefill_workers, r.decode_workers,
                    r.workers_given, r.draft_tokens, r.max_running, r.token_budget, r.range_ratio,
                    r.expert_act, r.kv);
  };
  std::vector<const ServingRun*> order;
  order.reserve(runs.size());
  for (const ServingRun& r : runs) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [&](const ServingRun* a, const ServingRun* b) {
    return key(*a) < key(*b) || (key(*a) == key(*b) && a->tpot_ms < b->tpot_ms);
  });
  std::vector<MeasurementConflict> out;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i + 1;
    while (j < order.size() && key(*order[j]) == key(*order[i])) ++j;
    const double a = order[i]->tpot_ms, b = order[j - 1]->tpot_ms;
    // A disaggregated row without its workers names no configuration to compare.
    if (j - i > 1 && order[i]->workers_given && b >= min_ratio * a) {
      MeasurementConflict c;
      for (std::size_t k = i; k < j; ++k) {
        c.ids.push_back(order[k]->id);
        c.versions.push_back(order[k]->backend_version);
        c.tpot_ms.push_back(order[k]->tpot_ms);
        c.across_releases |= order[k]->backend_version != order[i]->backend_version;
      }
      c.ratio = b / a;
      c.floor_error_pct = 100 * (b - a) / (a + b);
      out.push_back(std::move(c));
    }
    i = j;
  }
  // The widest disagreement first.
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.ratio > y.ratio; });
  return out;
}

DecodeStepReport validate_serving(const std::vector<ServingRun>& runs, const Registry& registry,
                                  const std::string& engine, ServingRecipe recipe,
                                  std::int64_t rounds, std::int64_t prompt_pool) {
  // The simulation's own bound (predict_serving), checked once rather than
  // refused row by row.
  if (rounds < 1 || rounds > kMaxRounds)
    throw InvalidArgument(fmt::format("rounds: {} is outside 1 to {}", rounds, kMaxRounds));
  check_prefix_reuse(0, prompt_pool, 1);
  return check_runs(runs, registry, {}, engine, nullptr, true, true, recipe, rounds, prompt_pool);
}

std::vector<ErrorStats> leave_one_device_out(const std::vector<ServingRun>& runs,
                                             const Registry& registry, bool prefill_share) {
  const EngineRegistry& all = EngineRegistry::built_in();
  const DecodeStepReport with =
      validate_decode_steps(runs, registry, {}, "case", &all, prefill_share);
  std::map<std::string, std::vector<double>> own;
  for (const DecodeStepRow& row : with.rows) {
    if (row.refused.empty()) own[row.device].push_back(row.error_pct);
  }
  std::vector<ErrorStats> out;
  for (const auto& [device, errors] : own) {
    // An init-capture: clang 14 (the fuzz build) cannot capture a structured binding with [&].
    const bool measured =
        std::any_of(all.gemm_tables().begin(), all.gemm_tables().end(),
                    [&id = device](const GemmTable& t) { return t.device == id; });
    if (!measured) continue;
    std::vector<ServingRun> subset;
    for (const DecodeStepRow& row : with.rows) {
      if (row.refused.empty() && row.device == device) subset.push_back(row.run);
    }
    const EngineRegistry held_out = all.without_tables_of(device);
    const DecodeStepReport without = validate_decode_steps(subset, registry, {}, "case", &held_out);
    std::vector<double> held;
    for (const DecodeStepRow& row : without.rows) {
      if (row.refused.empty()) held.push_back(row.error_pct);
    }
    out.push_back(error_stats("with-own=" + device, errors));
    out.push_back(error_stats("held-out=" + device, held));
  }
  return out;
}

namespace {

// Least squares of y = a + b x over the points (x distinct, at least two).
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i];
  const double mx = sx / n, my = sy / n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  const double b = sxy / sxx;  // sxx > 0: the x are distinct
  return {my - b * mx, b};
}

}  // namespace

std::vector<TtftLengthFit> ttft_length_fits(const DecodeStepReport& report) {
  using Key =
      std::tuple<std::string, std::string, std::string, std::string, std::string, std::string,
                 std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  struct Sums {
    double measured = 0, predicted = 0;
    int rows = 0;
  };
  std::map<Key, std::map<std::int64_t, Sums>> sweeps;
  for (const DecodeStepRow& row : report.rows) {
    const ServingRun& r = row.run;
    if (!row.refused.empty() || r.mode != "agg" || r.isl <= 0) continue;
    Sums& s = sweeps[Key{row.engine, r.backend_version, row.model, row.device, row.formats,
                         r.harness, r.tp, r.moe_ep, r.attention_dp, r.concurrency, r.osl}][r.isl];
    s.measured += r.ttft_ms;
    s.predicted += row.predicted_ttft_ms;
    ++s.rows;
  }
  std::vector<TtftLengthFit> fits;
  for (const auto& [key, by_isl] : sweeps) {
    if (by_isl.size() < 2) continue;
    TtftLengthFit f;
    std::tie(f.engine, f.engine_version, f.model, f.device, f.formats, f.harness, f.tp, f.ep,
             f.attention_dp, f.concurrency, f.osl) = key;
    std::vector<double> x, measured, predicted;
    for (const auto& [isl, s] : by_isl) {
      f.isl.push_back(isl);
      x.push_back(static_cast<double>(isl));
      measured.push_back(s.measured / s.rows);
      predicted.push_back(s.predicted / s.rows);
    }
    const auto [ma, mb] = fit_line(x, measured);
    const auto [pa, pb] = fit_line(x, predicted);
    f.measured_fixed_ms = ma;
    f.predicted_fixed_ms = pa;
    f.measured_per_token_us = mb * 1e3;  // ms per token -> us per token
    f.predicted_per_token_us = pb * 1e3;
    fits.push_back(std::move(f));
  }
  return fits;
}

std::vector<TtftLengthSummary> summarize_ttft_length_fits(const std::vector<TtftLengthFit>& fits) {
  struct Parts {
    std::vector<double> gaps, ratios;
  };
  std::map<std::string, Parts> groups;
  const std::string few = fmt::format("clients<={}", kFewClients);
  std::vector<std::string> order = {"all", few};
  for (const TtftLengthFit& f : fits) {
    std::vector<std::string> keys = {"all", "engine=" + f.engine, "model=" + f.model};
    if (f.concurrency <= kFewClients) keys.push_back(few);
    for (const std::string& g : keys) {
      auto [it, added] = groups.try_emplace(g);
      if (added && g != "all" && g != few) order.push_back(g);
      it->second.gaps.push_back(f.measured_fixed_ms - f.predicted_fixed_ms);
      if (f.measured_per_token_us > 0) {
        it->second.ratios.push_back(f.predicted_per_token_us / f.measured_per_token_us);
      }
    }
  }
  // "all", the few clients', then the engines and the models, each in name order.
  std::sort(order.begin() + 2, order.end());
  std::vector<TtftLengthSummary> out;
  for (const std::string& g : order) {
    auto it = groups.find(g);
    if (it == groups.end()) continue;  // no fits at all
    const Parts& p = it->second;
    TtftLengthSummary s;
    s.group = g;
    s.sweeps = static_cast<int>(p.gaps.size());
    s.median_fixed_gap_ms = percentile(p.gaps, 0.5);
    s.rising = static_cast<int>(p.ratios.size());
    s.median_per_token_ratio = percentile(p.ratios, 0.5);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace roofline
