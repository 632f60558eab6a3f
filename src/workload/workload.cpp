#include "roofline/workload.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <iterator>
#include <optional>
#include <string>

#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/roofline.h"

namespace roofline {
namespace {

constexpr const char* kOpNames[] = {
    "attn_norm",      "q_proj",           "k_proj",         "v_proj",           "rope",
    "qk_matmul",      "softmax",          "sv_matmul",      "o_proj",           "attn_residual",
    "mlp_norm",       "gate_proj",        "up_proj",        "act_mul",          "down_proj",
    "mlp_residual",   "kv_cache_write",   "embedding",      "final_norm",       "lm_head",
    "router",         "shared_gate_proj", "shared_up_proj", "shared_down_proj", "q_a_proj",
    "q_b_proj",       "kv_a_proj",        "kv_b_proj",      "k_absorb",         "v_absorb",
    "linear_in_proj", "linear_ba_proj",   "short_conv",     "delta_rule",       "gated_norm",
    "output_gate",    "indexer_proj",     "indexer_score",  "indexer_topk",     "all_reduce",
    "pipeline_send",  "all_to_all",       "quantize_input", "convert_input",    "convert_output"};
static_assert(std::size(kOpNames) == kOpKindCount, "one name for each OpKind");

// Vector operations per element, counted the same way everywhere:
//   RMSNorm: square, sum, scale by rsqrt, multiply by the weight      = 4
//   RoPE: x * cos + rotate(x) * sin                                   = 3
//   SiLU-gated product: exp, add, divide (sigmoid), two multiplies    = 5
//   softmax: max, subtract, exp, sum, divide                          = 5
//   residual add                                                       = 1
constexpr double kNormOps = 4;
constexpr double kRopeOps = 3;
constexpr double kGatedActOps = 5;
constexpr double kSoftmaxOps = 5;
constexpr double kResidualOps = 1;
//   SiLU or sigmoid gate: exp, add, divide, multiply                  = 4
constexpr double kGateOps = 4;

// Gated DeltaNet's chunkwise prefill (Yang et al., "Parallelizing Linear
// Transformers with the Delta Rule over Sequence Length", NeurIPS 2024, sec. 3,
// gated as in "Gated Delta Networks", ICLR 2025, sec. 3.3) over chunks of
// kDeltaChunk tokens: flash-linear-attention's chunk_gated_delta_rule, which
// vLLM and SGLang run, uses 64.
constexpr double kDeltaChunk = 64;
// Kernels the chunked gated delta rule launches for a prompt: the queries'
// and keys' L2 norms (use_qk_l2norm_in_kernel, as Qwen3-Next and Qwen3.5 run
// it), the gate's chunk cumsum, the scaled K K^T, the triangular solve (a
// 16 x 16 kernel and the merge to 64 x 64), the W and U recompute, the chunk
// states and the outputs: chunk_gated_delta_rule_fwd and solve_tril in
// SGLang's copy of flash-linear-attention (sgl-project/sglang
// python/sglang/srt/layers/attention/fla/chunk.py at 06beed9248 and
// solve_tril.py at 791a6d58a6); vLLM's and TensorRT-LLM's copies call the same
// sequence. (flash-linear-attention itself has since fused the K K^T, the
// solve and the recompute into one kernel.) Decoding runs one fused kernel.
constexpr double kDeltaChunkKernels = 9;

// Norm weights and routers stay in 16 bits in quantized checkpoints.
constexpr Format kSmallWeights = Format::kBf16;

double ceil_div(double a, double b) { return std::ceil(a / b); }

struct Builder {
  const ModelSpec& m;
  const Device& dev;
  const Scenario& s;
  const ModelOptions& opt;
  OpGraph& g;

  // Per-rank sizes.
  double tp = 1, H = 0, nh = 0, nkv = 0, dh = 0, dv = 0, I = 0, V = 0;
  double B = 1, T = 1, N = 1, ctx = 1;  // batch, tokens per sequence, tokens, attended context
  double C = 0;                         // prefill: tokens a sequence cached before the prompt
  double sparse_top_k = 0;              // DeepSeek sparse attention: cached tokens a query reads
  double P = 0;                         // prompt tokens riding along with a decode step (in N)
  // The engine's sparse-attention path on this device and cache (null: none;
  // realistic mode): prompts whose sequence spans more than mha_prompts_up_to
  // tokens attend absorbed, as decode tokens do, on its kernels.
  const EngineProfile::SparseMla::Path* sparse_path = nullptr;
  // The release's attention kernel of the last sliding-window attention
  // built masks the window instead of skipping its tiles
  // (ModelOptions::window_masking; masks_window()).
  bool window_masked = false;
  double mha_prompts_up_to = 0;  // 0: none
  // Whether a prompt whose sequence spans `span` tokens (cached ones
  // included) attends in the absorbed form.
  bool absorbed_prompt(double span) const {
    return sparse_path != nullptr && !(span <= mha_prompts_up_to);
  }
  Format w{}, e{}, a{}, kv{};
  // The format activations are stored in between kernels (the residual
  // stream, norms', RoPE's and GEMMs' outputs, attention's Q and O): `a`
  // where it is 16 bits or wider, else bf16. A GEMM's quantized input (fp8,
  // NVFP4) is written by the kernel before it or inside the GEMM; the
  // engines keep their hidden states in bf16, and the kernel tables'
  // rooflines count 16-bit outputs (scripts/distill-kernel-tables). An
  // engine whose graph keeps wider tensors says so (ggml's F32:
  // EngineProfile::activation_storage).
  Format stored{};
  ComputePlan wplan{}, eplan{};
  bool decode = true;
  bool drafting = false;  // adding the draft head's ops
  // The quantized release the plan follows (null: none) and the plan of the
  // operators it keeps unquantized.
  const QuantizedRelease* release = nullptr;
  ComputePlan kept_plan{};

  // Whether the engine's GEMM table prices matmuls of these formats (then
  // their wave efficiency goes unused: the table's measurements carry it).
  // The answers are kept: a pass asks for a few format pairs, over and over.
  struct TableAnswer {
    Format fmt;
    ComputePlan plan;
    bool priced;
  };
  mutable std::array<TableAnswer, 4> table_answers{};
  mutable int table_answer_count = 0;
  // The routed experts' GEMMs of a layer the engine's MoE table prices whole
  // (predict's price_moe_layers): no wave efficiency either.
  bool experts_priced_whole = false;
  bool table_prices(Format fmt, const ComputePlan& plan) const {
    if (opt.mode != Mode::kRealistic || opt.gemm_table == nullptr) return false;
    for (int i = 0; i < table_answer_count; ++i) {
      const TableAnswer& known = table_answers[static_cast<std::size_t>(i)];
      if (known.fmt == fmt && known.plan.format == plan.format &&
          known.plan.weight_only == plan.weight_only)
        return known.priced;
    }
    const bool priced =
        opt.gemm_table->find(gemm_table_key(fmt, plan.format, plan.weight_only)) != nullptr;
    // Past four pairs the first slot is reused.
    const int slot =
        table_answer_count < static_cast<int>(table_answers.size()) ? table_answer_count++ : 0;
    table_answers[static_cast<std::size_t>(slot)] = {fmt, plan, priced};
    return priced;
  }

  Op& add(OpKind kind, OpClass cls, double count) {
    if (g.size >= kMaxOps) throw InvalidArgument("model has too many operator groups");
    Op& op = g.ops[static_cast<std::size_t>(g.size++)];
    clear_work(op, kind, cls, a);
    op.moe_layer = op.sliding_layer = op.linear_layer = false;
    op.draft_head = drafting;
    op.count = count;
    return op;
  }

  // A linear layer: m rows x (k -> n) with weights in `fmt`. `read_input`
  // false when a fused kernel already read it.
  // `groups` independent GEMMs of this shape run as one grouped kernel (MoE experts).
  Op& linear(OpKind kind, double count, double rows, double n, double k, Format fmt,
             ComputePlan plan, bool read_input, double launches, double groups = 1) {
    Format act = a;
    if (release && (release_keeps(*release, kind) || (drafting && release->draft_head_kept))) {
      fmt = act = release->kept_format;
      plan = kept_plan;
    }
    if (s.precision.has_op_overrides) {
      const OpPrecision& o = s.precision.ops[static_cast<std::size_t>(kind)];
      if (o.weights || o.act) {
        fmt = o.weights.value_or(fmt);
        act = o.act.value_or(a);
        plan = plan_compute(dev, fmt, act);
      }
    }
    Op& op = add(kind, OpClass::kMatmul, count);
    op.flops = 2 * rows * n * k;
    op.weight_bytes = bytes_for(fmt, n * k);
    op.act_bytes = (read_input ? bytes_for(act, rows * k) : 0) + bytes_for(stored, rows * n);
    op.compute = plan.format;
    op.weight_only = plan.weight_only;
    const bool waves = opt.mode == Mode::kRealistic && !dev.is_cpu() && !experts_priced_whole &&
                       !table_prices(fmt, plan);
    // Dequantization ops count on the device path only (a MoE table prices its layer whole).
    const bool dequant_ops = plan.weight_only && !experts_priced_whole;
    if (waves || dequant_ops) {
      const GemmTiling t = gemm_tiling(rows, n, opt);
      if (waves)
        op.wave_efficiency = wave_efficiency(t.tiles * groups, t.fill, k, dev.sm_count.value, opt);
      if (dequant_ops) op.vector_ops = groups * n * k * t.m_tiles * opt.dequant_ops_per_element;
    }
    op.launches = launches;
    op.gemm_m = rows;
    op.gemm_n = n;
    op.gemm_k = k;
    op.gemm_groups = groups;
    op.weights = fmt;
    return op;
  }

  // An MLA absorption GEMM built over all heads' rows: it is one batched GEMM
  // of N rows per head with each head's own weights (nh groups), which sets
  // its weight bytes and the shape its measured efficiency is looked up at.
  void per_head(Op& op) {
    op.weight_bytes = bytes_for(op.weights, nh * op.gemm_n * op.gemm_k);
    op.gemm_m = N;
    op.gemm_groups = nh;
  }

  Op& elementwise(OpKind kind, double count, double elements, double ops_per_element, double reads,
                  double writes, double launches) {
    Op& op = add(kind, OpClass::kElementwise, count);
    op.flops = elements * ops_per_element;
    op.act_bytes = bytes_for(stored, elements * reads) + bytes_for(stored, elements * writes);
    op.compute = Format::kFp32;
    op.launches = launches;
    return op;
  }

  void norm(OpKind kind, double count, double rows, bool read_input, double launches) {
    Op& op = elementwise(kind, count, rows * H, kNormOps, read_input ? 1 : 0, 1, launches);
    op.weight_bytes = bytes_for(kSmallWeights, H);
  }

  // A prompt of T tokens after C cached ones (C > 0): query i attends the C
  // cached keys and the prompt's first i + 1, at most `window` of them. The
  // FlashAttention loops as for a prompt alone (attention() below), with the
  // cached keys in every tile's span: FA2+ re-reads them for every query tile,
  // FA1 re-reads each query row for every cached tile it meets.
  struct CachedSpan {
    double scores = 0;       // score elements computed
    double cached_keys = 0;  // K (and V) rows read from the cached span, per (sequence, KV head)
    double own_keys = 0;     // ... and from the prompt's own
    double q_reads = 1, o_passes = 1, parallel = 0;
  };
  CachedSpan prompt_after_cached(const AttentionKernelInfo& kinfo, double window, double sparsity,
                                 double q_dim, double heads, Format attn_fmt) const {
    CachedSpan x;
    // Queries 0 .. i0 - 1 see every key before them; the rest see the window.
    const double i0 = window > 0 ? std::clamp(window - C, 0.0, T) : T;
    const double pairs = i0 * C + i0 * (i0 + 1) / 2 + (T - i0) * window;
    const bool unfused = kinfo.loop == AttentionLoop::kUnfused;
    x.scores = B * heads * (unfused ? T * (C + T) : pairs) * sparsity;
    const double sram_elems = dev.shared_memory_per_sm_bytes.value * 8 / bits_per_element(attn_fmt);
    const double block = std::clamp(std::floor(sram_elems / (4 * q_dim)), 16.0, 128.0);
    const double passes = ceil_div(T, block);
    x.cached_keys = C;
    x.own_keys = T;
    if (kinfo.loop == AttentionLoop::kQOuter) {
      x.cached_keys = passes * C;
      x.own_keys = T * (passes + 1) / 2;
      // A window caps every tile's span.
      const double cap = window > 0 ? passes * (window + block) : 0;
      const double reads = x.cached_keys + x.own_keys;
      if (cap > 0 && cap < reads) {
        x.cached_keys *= cap / reads;
        x.own_keys *= cap / reads;
      }
    } else if (kinfo.loop == AttentionLoop::kKvOuter) {
      double visits = ceil_div(C, block) + (passes + 1) / 2;
      if (window > 0) visits = std::min(visits, ceil_div(window, block) + 1);
      x.q_reads = visits;
      x.o_passes = 2 * visits - 1;
    }
    if (!unfused) {
      x.cached_keys *= sparsity;
      x.own_keys *= sparsity;
    }
    x.parallel = B * heads * passes;
    return x;
  }

  // Whether the release's attention kernel for this call masks a sliding
  // window (ModelOptions::window_masking), on the rank's heads and sequences:
  // a decode step of one token a sequence and few programs runs its split-KV
  // kernel; prompt and draft tokens and large batches run the other.
  bool masks_window() {
    if (!opt.window_masking || opt.mode != Mode::kRealistic || !m.attention_sinks) return false;
    const WindowMasking& rule = *opt.window_masking;
    const double per_kv = nh / nkv;
    const double rows =
        std::max(rule.query_rows.value,
                 static_cast<double>(std::bit_ceil(static_cast<std::uint64_t>(std::ceil(per_kv)))));
    const double tile = std::max(1.0, std::floor(rows / per_kv));
    const bool split_kv = decode && T == 1 && P == 0 &&
                          (std::floor(B / tile) + B) * nkv <= rule.split_kv_max_programs.value;
    const bool masked = split_kv ? opt.window_masked_split_kv : opt.window_masked_prompt_kernel;
    g.window_masked_split_kv = masked && split_kv;
    return masked;
  }

  // Attention core (qk_matmul, softmax, sv_matmul) for one layer class.
  void attention(double count, bool sliding, bool mla_latent) {
    const AttentionKernelInfo& kinfo = attention_kernel_info(g.attention);
    // Sparse attention reads its top_k tokens as a window of that size would
    // (the cache itself keeps every token). A kernel that masks the window
    // computes the whole context's tiles.
    if (sliding) window_masked = masks_window();
    const double window =
        sliding ? (window_masked ? 0 : static_cast<double>(m.sliding_window)) : sparse_top_k;
    const double sparsity = s.block_sparsity;
    // Head geometry: MLA decode attends over the shared latent (one "KV head"
    // of kv_lora + rope, values are the latent itself).
    double q_dim = dh, v_dim = dv, kv_heads = nkv;
    if (mla_latent) {
      q_dim = static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
      v_dim = static_cast<double>(m.mla.kv_lora_rank);
      kv_heads = 1;
    }
    // The engine's sparse kernels compute a token's query heads in whole
    // tiles, a rank's heads padded up to the tile (the padded heads read Q
    // and write O too), over every one of the top-k slots. A rank of few
    // heads may run its prompt tokens on the decode kernel.
    const EngineProfile::SparseMla::Kernel* sparse_kernel = nullptr;
    if (sparse_path != nullptr && mla_latent) {
      const auto& path = *sparse_path;
      const bool on_decode_kernel =
          path.decode && (decode || nh < path.prompt_on_decode_kernel_below.value);
      sparse_kernel = on_decode_kernel ? &*path.decode : decode ? nullptr : &path.prompt;
    }
    double heads = nh;
    if (sparse_kernel)
      heads = ceil_div(nh, sparse_kernel->head_tile.value) * sparse_kernel->head_tile.value;
    // An fp8 attention kernel reads Q, K and V in fp8, so it runs over an fp8
    // KV cache, whatever the GEMMs' inputs: with one the engines quantize the
    // queries to match (vLLM's FlashAttention-3 path), and an fp8 model with
    // a 16-bit cache attends in 16 bits. A plan's own qk_matmul format wins.
    Format attn_act = kv == Format::kFp8 ? Format::kFp8 : held_activation_format(a);
    if (s.precision.has_op_overrides) {
      attn_act =
          s.precision.ops[static_cast<std::size_t>(OpKind::kQkMatmul)].act.value_or(attn_act);
    }
    // FlashMLA's sparse kernels do their math in bf16, whatever the cache.
    const Format attn_fmt =
        sparse_kernel ? Format::kBf16
        : (attn_act == Format::kFp8 && kinfo.fp8 && dev.computes(Format::kFp8))
            ? Format::kFp8
            : (bits_per_element(attn_act) >= 16 && dev.computes(attn_act) ? attn_act
                                                                          : Format::kBf16);
    // Q (and a prompt's fresh K/V) are read in fp8 by an fp8 kernel, else as
    // stored; O is written as stored. K/V come from the cache in decode.
    const Format attn_in = attn_fmt == Format::kFp8 ? Format::kFp8 : stored;
    const Format kv_read_fmt = decode ? kv : attn_in;
    double scores = 0, k_elems = 0, v_elems = 0;  // score elements computed; K/V elements read
    // A prompt after cached tokens: the K/V elements it reads from the cache
    // (MLA's come expanded from kv_b_proj, as activations).
    double cached_k = 0, cached_v = 0;
    double q_reads = 1, o_passes = 1;  // passes over Q and O
    double parallel = 0;
    const double S = decode ? ctx : T;
    if (decode) {
      // T queries a sequence (speculative verification: the draft tokens and
      // the model's own) over one read of its cache.
      const double L = window > 0 ? std::min(ctx, window) : ctx;
      scores = B * T * heads * L * sparsity;
      k_elems = B * kv_heads * L * q_dim * sparsity;
      v_elems = mla_latent ? 0 : B * kv_heads * L * v_dim * sparsity;
      parallel = B * heads * (kinfo.split_kv ? ceil_div(L, 128) : 1);
    } else if (C > 0) {
      const CachedSpan x = prompt_after_cached(kinfo, window, sparsity, q_dim, heads, attn_fmt);
      scores = x.scores;
      k_elems = B * kv_heads * x.own_keys * q_dim;
      v_elems = B * kv_heads * x.own_keys * v_dim;
      cached_k = B * kv_heads * x.cached_keys * q_dim;
      cached_v = B * kv_heads * x.cached_keys * v_dim;
      q_reads = x.q_reads;
      o_passes = x.o_passes;
      parallel = x.parallel;
    } else {
      // Causal prefill: the pairs (i, j <= i), or the band of the window.
      const double pairs =
          window > 0 && window < S ? S * window - window * (window - 1) / 2 : S * (S + 1) / 2;
      const bool unfused = kinfo.loop == AttentionLoop::kUnfused;
      scores = B * heads * (unfused ? S * S : pairs) * sparsity;
      // FlashAttention Theorem 2: tiles of M/(4d) rows fit in the on-chip
      // SRAM of M elements; K/V (FA2+) or Q/O (FA1) are re-read once per
      // tile. Causally, tile i pairs with tiles 0..i: (T + 1) / 2 passes.
      const double sram_elems =
          dev.shared_memory_per_sm_bytes.value * 8 / bits_per_element(attn_fmt);
      const double block = std::clamp(std::floor(sram_elems / (4 * q_dim)), 16.0, 128.0);
      const double passes = ceil_div(S, block);
      double causal_passes = (passes + 1) / 2;
      if (window > 0 && window < S)
        causal_passes = std::min(causal_passes, ceil_div(window, block) + 1);
      double kv_passes = 1;
      if (kinfo.loop == AttentionLoop::kQOuter) {
        kv_passes = causal_passes;
      } else if (kinfo.loop == AttentionLoop::kKvOuter) {
        q_reads = causal_passes;
        o_passes = 2 * causal_passes - 1;  // O is read and written on every pass but the first
      }
      k_elems = B * kv_heads * S * q_dim * kv_passes * (unfused ? 1 : sparsity);
      v_elems = B * kv_heads * S * v_dim * kv_passes * (unfused ? 1 : sparsity);
      parallel = B * heads * passes;
    }
    // FlashMLA's sparse kernels loop over every top-k slot and mask the
    // invalid ones (a context shorter than top-k): the whole window's work.
    if (sparse_kernel) scores = B * T * heads * window * sparsity;
    const double efficiency =
        sparse_kernel ? sparse_kernel->efficiency.value : kinfo.efficiency_on(dev).value;

    Op& qk = add(OpKind::kQkMatmul, OpClass::kAttention, count);
    qk.flops = 2 * scores * q_dim;
    qk.act_bytes = bytes_for(attn_in, B * T * heads * q_dim) * q_reads;
    qk.kv_bytes = decode ? bytes_for(kv_read_fmt, k_elems) : 0;
    if (!decode) qk.act_bytes += bytes_for(kv_read_fmt, k_elems);
    if (cached_k > 0) {
      if (m.attention == AttentionKind::kMla) {
        qk.act_bytes += bytes_for(attn_in, cached_k);
      } else {
        qk.kv_bytes += bytes_for(kv, cached_k);
      }
    }
    qk.compute = attn_fmt;
    qk.parallel_blocks = parallel;
    qk.kernel_efficiency = efficiency;

    Op& sm = add(OpKind::kSoftmax, OpClass::kElementwise, count);
    sm.flops = kSoftmaxOps * scores;
    sm.compute = Format::kFp32;

    Op& sv = add(OpKind::kSvMatmul, OpClass::kAttention, count);
    sv.flops = 2 * scores * v_dim;
    sv.act_bytes = bytes_for(stored, B * T * heads * v_dim) * o_passes;
    if (decode) {
      sv.kv_bytes = bytes_for(kv_read_fmt, v_elems);
    } else {
      sv.act_bytes += bytes_for(kv_read_fmt, v_elems);
    }
    if (cached_v > 0) {
      if (m.attention == AttentionKind::kMla) {
        sv.act_bytes += bytes_for(attn_in, cached_v);
      } else {
        sv.kv_bytes += bytes_for(kv, cached_v);
      }
    }
    sv.compute = attn_fmt;
    sv.parallel_blocks = parallel;
    sv.kernel_efficiency = efficiency;

    if (kinfo.loop != AttentionLoop::kUnfused) {
      // The kernel's shape, as attention tables key it (in decode, T queries
      // of a sequence share its K/V the way a KV head's query heads do; a
      // prompt after cached tokens spans them too).
      const double L = !decode ? C + S : window > 0 ? std::min(ctx, window) : ctx;
      for (Op* op : {&qk, &sv}) {
        op->gemm_m = B * kv_heads;
        op->gemm_n = heads / kv_heads * (decode ? T : 1);
        op->gemm_k = L * (decode ? sparsity : 1) * q_dim;
        if (!decode && C > 0) op->query_share = S / L;
        op->weights = kv;
        op->latent_attention = mla_latent;
        op->prompt_attention = !decode;
        op->engine_kernel = sparse_kernel != nullptr;
      }
      qk.gemm_groups = q_dim / (q_dim + v_dim);
      sv.gemm_groups = v_dim / (q_dim + v_dim);
    }
    if (kinfo.loop == AttentionLoop::kUnfused) {
      // Scores and probabilities round-trip through HBM; three kernels.
      qk.act_bytes += bytes_for(stored, scores);
      sm.act_bytes = 2 * bytes_for(stored, scores);
      sv.act_bytes += bytes_for(stored, scores);
      qk.kernel_efficiency = sv.kernel_efficiency = std::nan("");
      qk.parallel_blocks = sv.parallel_blocks = 0;  // batched GEMMs fill the device
    } else {
      sm.launches = 0;
      sv.launches = 0;
    }
  }

  // The prompts whose tokens ride along with a decode step attend causally:
  // P tokens of prompts of `prompt` tokens are P / prompt prompts' worth of
  // causal pairs (each prompt's whole attention spread over the steps that
  // carry its chunks). MLA prompts attend in the expanded (non-latent) form,
  // sparse ones on the engine's sparse kernels in the absorbed form.
  void prefill_share_attention(double count, bool sliding) {
    const double saved_b = B, saved_t = T, saved_ctx = ctx, saved_c = C;
    const bool saved_decode = decode;
    const double prompt = static_cast<double>(s.prefill_prompt);
    B = P / prompt;
    T = prompt;
    ctx = prompt;
    C = static_cast<double>(s.prefill_cached);  // a shared prefix they attend over
    decode = false;
    attention(
        count, sliding,
        m.attention == AttentionKind::kMla && absorbed_prompt(C + static_cast<double>(prompt)));
    B = saved_b;
    T = saved_t;
    ctx = saved_ctx;
    C = saved_c;
    decode = saved_decode;
  }

  void gqa_projections(double count) {
    const bool bias = m.qkv_bias;
    // A gated attention's q_proj also yields the output gate (one per q channel).
    const double q_width = nh * dh * (m.attention_output_gate ? 2 : 1);
    Op& q = linear(OpKind::kQProj, count, N, q_width, H, w, wplan, true, 1);
    Op& k = linear(OpKind::kKProj, count, N, nkv * dh, H, w, wplan, false, 0);
    Op& v = linear(OpKind::kVProj, count, N, nkv * dh, H, w, wplan, false, 0);
    if (bias) {
      q.weight_bytes += bytes_for(kSmallWeights, nh * dh);
      k.weight_bytes += bytes_for(kSmallWeights, nkv * dh);
      v.weight_bytes += bytes_for(kSmallWeights, nkv * dh);
    }
    // Qwen3 normalizes q and k per head; counted with RoPE (one kernel).
    Op& rope = elementwise(OpKind::kRope, count, N * (nh + nkv) * dh,
                           kRopeOps + (m.qk_norm ? kNormOps : 0), 1, 1, 1);
    (void)rope;
    if (m.qk_norm_across_heads && tp > 1) {
      // A norm over all heads' q and k: each rank sums its heads' squares and
      // one all-reduce joins them, two fp32 values a token (vLLM's
      // minimax_qk_norm_fusion; SGLang's and TensorRT-LLM's MiniMax norms
      // all-reduce the same). The message counts 16-bit elements.
      Op& op = add(OpKind::kAllReduce, OpClass::kCommunication, count);
      op.act_bytes = bytes_for(Format::kFp32, 2 * N) * 2 * (tp - 1) / tp;
      op.ranks = tp;
      op.message_elements = 4 * N;
      op.compute = Format::kFp32;
    }
    Op& write = add(OpKind::kKvCacheWrite, OpClass::kMemory, count);
    write.act_bytes = bytes_for(stored, 2 * N * nkv * dh);
    write.kv_bytes = bytes_for(kv, 2 * N * nkv * dh);
  }

  // DeepSeek sparse attention's lightning indexer, whole on every rank: its
  // queries from the q latent, one key and the heads' weights from the hidden
  // state; then every query scores every cached token of its sequence (prompt
  // tokens the tokens before them) in fp8, Σ_heads w · ReLU(q · k), and the
  // top_k scores are selected from the fp32 logits it writes. Each token's
  // key goes to the indexer's cache in fp8 with an fp32 scale.
  void indexer(double count) {
    const auto& x = *m.sparse_attention;
    const double heads = static_cast<double>(x.index_heads);
    const double d = static_cast<double>(x.index_head_dim);
    const double q_in = m.mla.q_lora_rank > 0 ? static_cast<double>(m.mla.q_lora_rank) : H;
    linear(OpKind::kIndexerProj, count, N, heads * d, q_in, w, wplan, true, 1);
    linear(OpKind::kIndexerProj, count, N, d + heads, H, w, wplan, true, 1);
    const double key_bytes = d + 4;
    // Query-key pairs: decoding tokens against their whole cached context,
    // prompt tokens causally within prompts of `prompt` tokens.
    const double prompt_tokens = decode ? P : N;
    const double prompt = decode ? static_cast<double>(s.prefill_prompt) : T;
    double pairs = prompt_tokens > 0 ? prompt_tokens * (prompt + 1) / 2 : 0;
    if (decode) pairs += B * T * ctx;
    // A prompt after cached tokens (riding along: after a shared prefix) scores them too.
    const double cached = decode ? static_cast<double>(s.prefill_cached) : C;
    pairs += prompt_tokens * cached;
    const Format score_fmt = dev.computes(Format::kFp8) ? Format::kFp8 : Format::kBf16;
    Op& score = add(OpKind::kIndexerScore, OpClass::kAttention, count);
    score.flops = 2 * heads * d * pairs;
    score.act_bytes = bytes_for(score_fmt, N * heads * d) + bytes_for(Format::kFp32, N * heads) +
                      bytes_for(Format::kFp32, pairs) + prompt_tokens * key_bytes;
    const double prompts = prompt_tokens > 0 ? prompt_tokens / prompt : 0;
    score.kv_bytes = ((decode ? B * ctx : 0) + prompts * cached) * key_bytes + N * key_bytes;
    score.compute = score_fmt;
    score.kernel_efficiency = std::nan("");
    // Selection: a pass over the logits, top_k indices a query out.
    Op& topk = add(OpKind::kIndexerTopk, OpClass::kElementwise, count);
    topk.flops = 2 * pairs;
    topk.act_bytes = bytes_for(Format::kFp32, pairs) +
                     bytes_for(Format::kFp32, N * static_cast<double>(x.top_k));
    topk.compute = Format::kFp32;
  }

  void mla_projections(double count) {
    const auto& x = m.mla;
    const double qk_head = static_cast<double>(x.qk_nope_head_dim + x.qk_rope_head_dim);
    const double latent = static_cast<double>(x.kv_lora_rank + x.qk_rope_head_dim);
    // The latents are not split across tensor-parallel ranks.
    if (x.q_lora_rank > 0) {
      // q_a_proj and kv_a_proj read the same hidden state, and the engines
      // run them as one GEMM (vLLM's fused_qkv_a_proj, SGLang's
      // fused_qkv_a_proj_with_mqa, TensorRT-LLM's kv_a_proj_with_mqa over
      // both); an engine without the fusion splits it (predict.cpp).
      linear(OpKind::kQAProj, count, N, static_cast<double>(x.q_lora_rank), H, w, wplan, true, 1);
      linear(OpKind::kKvAProj, count, N, latent, H, w, wplan, false, 0);
      linear(OpKind::kQBProj, count, N, nh * qk_head, static_cast<double>(x.q_lora_rank), w, wplan,
             true, 1);
    } else {
      linear(OpKind::kQProj, count, N, nh * qk_head, H, w, wplan, true, 1);
      linear(OpKind::kKvAProj, count, N, latent, H, w, wplan, true, 1);
    }
    elementwise(OpKind::kRope, count, N * (nh + 1) * static_cast<double>(x.qk_rope_head_dim),
                kRopeOps, 1, 1, 1);
    Op& write = add(OpKind::kKvCacheWrite, OpClass::kMemory, count);
    write.act_bytes = bytes_for(stored, N * latent);
    write.kv_bytes = bytes_for(kv, N * latent);
    if (m.sparse_attention) indexer(count);
    if (decode || absorbed_prompt(C + T)) {
      // Weight absorption: q_nope x W_UK into the latent space, and the
      // latent output x W_UV back to values (DeepSeek-V2 section 2.1.3).
      per_head(linear(OpKind::kKAbsorb, count, N * nh, static_cast<double>(x.kv_lora_rank),
                      static_cast<double>(x.qk_nope_head_dim), w, wplan, true, 1));
    } else {
      // The prompt attends in the expanded form: the cached tokens' latents
      // are expanded too (vLLM's, SGLang's and TensorRT-LLM's chunked MLA
      // prefill read them back from the cache).
      Op& up = linear(OpKind::kKvBProj, count, N + B * C,
                      nh * static_cast<double>(x.qk_nope_head_dim + x.v_head_dim),
                      static_cast<double>(x.kv_lora_rank), w, wplan, true, 1);
      if (C > 0) {
        // The cached latents come from the cache, not from this pass.
        up.act_bytes -= bytes_for(a, B * C * static_cast<double>(x.kv_lora_rank));
        up.kv_bytes = bytes_for(kv, B * C * latent);
      }
    }
  }

  // Gated DeltaNet (Qwen3-Next, Qwen3.5) up to o_proj: the in-projections
  // (q, k, v, the output gate z; the per-head decay a and write strength b),
  // the short causal convolution over q, k and v, the delta rule over each
  // value head's state, and the norm gated by z. Heads split over the ranks.
  // Returns the width o_proj reads.
  double linear_attention_block(double count) {
    const auto& x = *m.linear_attention;
    const double hk = static_cast<double>(x.key_heads) / tp;
    const double hv = static_cast<double>(x.value_heads) / tp;
    const double dk = static_cast<double>(x.key_head_dim);
    const double dvh = static_cast<double>(x.value_head_dim);
    const double key = hk * dk, value = hv * dvh, conv = 2 * key + value;
    const double kernel = static_cast<double>(x.conv_kernel);
    // in_proj_qkvz and in_proj_ba: two GEMMs over the same input (separate
    // layers in Transformers, vLLM, SGLang and TensorRT-LLM); the second, a
    // few columns a rank, costs its kernel's floor.
    linear(OpKind::kLinearInProj, count, N, 2 * key + 2 * value, H, w, wplan, true, 1);
    linear(OpKind::kLinearBaProj, count, N, 2 * hv, H, w, wplan, false, 1);
    // The kernels' shape as attention tables key it (attention_table.h):
    // sequences x value heads, value heads per key head, tokens a sequence x
    // key head dim. A decode step's own tokens run the recurrent kernels; the
    // prompt tokens riding along (or a prefill's) the chunked ones, as
    // P / prefill_prompt prompts (at least one).
    const double recurrent = decode ? B * T : 0;
    const double chunked = decode ? P : N;
    const double prompts =
        decode ? std::max(1.0, P / std::max(1.0, static_cast<double>(s.prefill_prompt))) : B;
    auto shape = [&](Op& op, bool prompt) {
      const double sequences = prompt ? prompts : B;
      op.gemm_m = sequences * hv;
      op.gemm_n = hv / hk;
      op.gemm_k = (prompt ? chunked / sequences : T) * dk;
      op.prompt_attention = prompt;
    };
    // A multiply-add a tap and the SiLU; decoding reads and writes each
    // sequence's last kernel - 1 inputs. Two kernels in a step with prompt
    // tokens (the prompts' causal_conv1d_fn, the decode tokens' update).
    for (const bool prompt : {false, true}) {
      const double tokens = prompt ? chunked : recurrent;
      if (tokens <= 0) continue;
      Op& cv =
          elementwise(OpKind::kShortConv, count, tokens * conv, 2 * kernel + kGateOps, 1, 1, 1);
      cv.weight_bytes = bytes_for(kSmallWeights, conv * kernel);
      if (!prompt) cv.kv_bytes = 2 * bytes_for(kLinearConvStateFormat, B * conv * (kernel - 1));
      shape(cv, prompt);
    }

    const double state_bytes = bytes_for(x.state_format, hv * dk * dvh);
    // q, k, v, the decay and the write strength in; the output out.
    auto io_bytes = [&](double tokens) {
      return bytes_for(stored, tokens * (2 * key + value + 2 * hv)) +
             bytes_for(stored, tokens * value);
    };
    // Decoding: per token and value head, the state decays (dk dv), is read
    // against k (2 dk dv), takes the rank-one correction (2 dk dv) and is read
    // against q (2 dk dv), on the vector units; each sequence's state is read
    // and written once a step.
    if (recurrent > 0) {
      Op& op = add(OpKind::kDeltaRule, OpClass::kAttention, count);
      op.flops = recurrent * hv * 7 * dk * dvh;
      op.act_bytes = io_bytes(recurrent);
      op.kv_bytes = 2 * B * state_bytes;
      op.compute = Format::kFp32;
      op.kernel_efficiency = std::nan("");
      shape(op, false);
    }
    // Prompts, chunkwise on the tensor cores: per token and value head,
    // 6 C dk + 4 C dv + C^2 / 3 + 6 dk dv (the chunk's gated K K^T, its
    // triangular inverse, the W and U transforms, the outputs and the state
    // update, C = kDeltaChunk); the chunk states are written and read back.
    if (chunked > 0) {
      const double c = kDeltaChunk;
      Op& op = add(OpKind::kDeltaRule, OpClass::kAttention, count);
      op.flops = chunked * hv * (6 * c * dk + 4 * c * dvh + c * c / 3 + 6 * dk * dvh);
      op.act_bytes = io_bytes(chunked) + 2 * state_bytes * std::ceil(chunked / c);
      // The chunk kernels multiply in 16 bits (or wider) whatever the
      // activations' format, on the tensor cores.
      op.compute = bits_per_element(a) >= 16 && dev.computes(a) ? a : Format::kBf16;
      op.kernel_efficiency = std::nan("");
      op.launches = kDeltaChunkKernels;
      shape(op, true);
    }
    // RMSNorm of each head's output, times SiLU(z).
    Op& gn = elementwise(OpKind::kGatedNorm, count, N * value, kNormOps + kGateOps, 2, 1, 1);
    gn.weight_bytes = bytes_for(kSmallWeights, dvh);
    return value;
  }

  void mlp(double count, bool shared, double inter, double rows) {
    const OpKind gk = shared ? OpKind::kSharedGateProj : OpKind::kGateProj;
    const OpKind uk = shared ? OpKind::kSharedUpProj : OpKind::kUpProj;
    const OpKind dk = shared ? OpKind::kSharedDownProj : OpKind::kDownProj;
    if (m.gated_mlp) {
      linear(gk, count, rows, inter, H, w, wplan, true, 1);
      linear(uk, count, rows, inter, H, w, wplan, false, 0);
    } else {
      linear(uk, count, rows, inter, H, w, wplan, true, 1);
    }
    if (!shared) {
      elementwise(OpKind::kActMul, count, rows * inter, m.gated_mlp ? kGatedActOps : 4,
                  m.gated_mlp ? 2 : 1, 1, 1);
    }
    linear(dk, count, rows, H, inter, w, wplan, true, 1);
  }

  void experts(double count) {
    const auto& x = *m.moe;
    const double E = static_cast<double>(x.num_experts);
    const double k = static_cast<double>(x.top_k);
    const double ep = static_cast<double>(s.ep);
    // A group of tp / ep ranks holds its experts whole, split over its ranks.
    const double Ie = static_cast<double>(x.expert_intermediate) / (tp / ep);
    const ExpertLoad load = busiest_expert_group(E, k, N, ep);
    const double D = load.experts;
    g.distinct_experts = D;
    // The router stays unquantized in every checkpoint, and so does its math:
    // a 16-bit GEMM over the hidden state (not the fp8 or FP4 copy the
    // quantized GEMMs read).
    const Format a16 = held_activation_format(a);
    Op& router = linear(OpKind::kRouter, count, N, E, H, kSmallWeights,
                        plan_compute(dev, kSmallWeights, a16), true, 1);
    const bool planned = s.precision.has_op_overrides &&
                         s.precision.ops[static_cast<std::size_t>(OpKind::kRouter)].act;
    if (a16 != a && !planned) router.act_bytes += bytes_for(a16, N * H) - bytes_for(a, N * H);
    // Routed experts as grouped GEMMs over the D experts the batch touches:
    // weights of D experts stream once; the token-expert pairs compute.
    const double pairs = load.pairs;
    const double rows = pairs / D;
    experts_priced_whole = opt.mode == Mode::kRealistic && opt.engine && opt.moe_table &&
                           !s.precision.has_op_overrides &&
                           opt.moe_table->find(e, eplan.format, eplan.weight_only) != nullptr;
    auto expert_linear = [&](OpKind kind, double n, double kdim, bool read_input, double launches) {
      Op& op = linear(kind, count, rows, n, kdim, e, eplan, read_input, launches, D);
      op.flops = 2 * pairs * n * kdim;
      op.weight_bytes = D * bytes_for(e, n * kdim);
      op.act_bytes = (read_input ? bytes_for(a, pairs * kdim) : 0) + bytes_for(stored, pairs * n);
      op.moe_layer = true;
      op.moe_tokens = N;
      op.moe_ep = ep;
    };
    if (m.gated_mlp) {
      expert_linear(OpKind::kGateProj, Ie, H, true, 1);
      expert_linear(OpKind::kUpProj, Ie, H, false, 0);
    } else {
      expert_linear(OpKind::kUpProj, Ie, H, true, 1);
    }
    Op& act = elementwise(OpKind::kActMul, count, pairs * Ie, kGatedActOps, 2, 1, 1);
    act.moe_layer = true;
    expert_linear(OpKind::kDownProj, H, Ie, true, 1);
    experts_priced_whole = false;
    if (x.num_shared_experts > 0) {
      mlp(count, true, static_cast<double>(x.shared_intermediate * x.num_shared_experts) / tp, N);
    }
  }

  // Expert-parallel dispatch or combine with attention data parallelism: each
  // rank sends its share of the tokens (N / tp) to the k experts' owners, the
  // (ep - 1) / ep of them elsewhere; the message is a rank's whole send buffer.
  void all_to_all(double count) {
    const double ep = static_cast<double>(s.ep);
    Op& op = add(OpKind::kAllToAll, OpClass::kCommunication, count);
    const double elements = N / tp * static_cast<double>(m.moe->top_k) * H;
    op.act_bytes = bytes_for(a, elements) * (ep - 1) / ep;
    op.ranks = tp;
    op.message_elements = elements;
    op.compute = Format::kFp32;
  }

  void all_reduce(double count) {
    if (tp <= 1) return;
    Op& op = add(OpKind::kAllReduce, OpClass::kCommunication, count);
    // Ring all-reduce moves 2 (tp - 1) / tp of the message over each link.
    op.act_bytes = bytes_for(stored, N * H) * 2 * (tp - 1) / tp;
    op.ranks = tp;
    op.message_elements = N * H;
    op.compute = Format::kFp32;
  }

  // Attention data parallelism: the attention block of each group runs over
  // tp / attention_dp ranks on the group's own sequences. The groups meet at
  // the MoE's all-to-all, so a step takes as long as its busiest group, and
  // the engines place whole requests, never parts of one, on a group
  // (TensorRT-LLM's and SGLang's attention-DP schedulers): the busiest holds
  // ceil(B / dp) sequences and, of a step's prompt tokens (P of prompts of
  // prefill_prompt tokens, chunked at prefill_chunk a rank), the pieces it
  // gets when they go round the groups.
  struct AttentionGroup {
    Builder& b;
    double tp, nh, nkv, B, N, P;
    explicit AttentionGroup(Builder& x)
        : b(x), tp(x.tp), nh(x.nh), nkv(x.nkv), B(x.B), N(x.N), P(x.P) {
      const double dp = static_cast<double>(x.s.attention_dp);
      if (dp <= 1) return;
      b.tp = tp / dp;
      b.nh = static_cast<double>(b.m.heads) / b.tp;
      b.nkv = std::max(1.0, static_cast<double>(b.m.kv_heads) / b.tp);
      b.B = busiest(B, 1, dp);
      double piece = static_cast<double>(b.s.prefill_prompt);
      if (b.s.prefill_chunk > 0) piece = std::min(piece, static_cast<double>(b.s.prefill_chunk));
      b.P = P > 0 ? busiest(P, piece, dp) : 0;
      b.N = b.B * b.T + b.P;
    }
    // The busiest group's share of `total` in pieces of `piece` dealt round
    // `dp` groups from the first: it takes ceil(pieces / dp) of them, the last
    // (short) one among them when the count leaves one over.
    static double busiest(double total, double piece, double dp) {
      const double pieces = std::ceil(total / piece - 1e-9);
      const double held = std::ceil(pieces / dp - 1e-9);
      if (std::fmod(pieces, dp) == 1) return (held - 1) * piece + (total - (pieces - 1) * piece);
      return std::min(total, held * piece);
    }
    ~AttentionGroup() {
      b.tp = tp;
      b.nh = nh;
      b.nkv = nkv;
      b.B = B;
      b.N = N;
      b.P = P;
    }
    AttentionGroup(const AttentionGroup&) = delete;
    AttentionGroup& operator=(const AttentionGroup&) = delete;
  };

  // The ops a layer class's two halves added, [begin, end) of the graph, by
  // the attention (full, sliding, linear) and by the MLP (dense, MoE). Which
  // ops a half holds and what each does per instance depend on nothing else
  // a pass's layer classes differ in (the count apart), so a second class
  // with the same attention as an earlier one, or the same MLP, copies that
  // half's ops instead of building them again. The draft head, built over
  // other tokens, builds its own.
  struct Half {
    int begin = 0, end = 0;  // end 0: not built yet
  };
  std::array<Half, 3> attention_halves{};
  std::array<Half, 2> mlp_halves{};

  // Appends the ops of `half` with `count` instances each.
  void repeat(const Half& half, double count) {
    if (g.size + (half.end - half.begin) > kMaxOps)
      throw InvalidArgument("model has too many operator groups");
    for (int i = half.begin; i < half.end; ++i) {
      Op& op = g.ops[static_cast<std::size_t>(g.size++)];
      op = g.ops[static_cast<std::size_t>(i)];
      op.count = count;
    }
  }

  // The attention block, from the input norm to the MLP's norm.
  void attention_half(double count, bool sliding, bool linear_attn) {
    std::optional<AttentionGroup> group;
    group.emplace(*this);
    norm(OpKind::kAttnNorm, count, N, true, 1);
    const bool mla = m.attention == AttentionKind::kMla;
    double o_width = nh * dv;
    if (linear_attn) {
      o_width = linear_attention_block(count);
    } else {
      if (mla) {
        mla_projections(count);
      } else {
        gqa_projections(count);
      }
      const bool absorbed = mla && (decode || absorbed_prompt(C + T));
      attention(count, sliding, absorbed);
      if (P > 0) prefill_share_attention(count, sliding);
      if (absorbed) {
        per_head(linear(OpKind::kVAbsorb, count, N * nh, static_cast<double>(m.mla.v_head_dim),
                        static_cast<double>(m.mla.kv_lora_rank), w, wplan, true, 1));
      }
      if (m.attention_output_gate) {
        elementwise(OpKind::kOutputGate, count, N * nh * dv, kGateOps, 2, 1, 1);
      }
    }
    Op& o = linear(OpKind::kOProj, count, N, H, o_width, w, wplan, true, 1);
    if (m.o_bias) o.weight_bytes += bytes_for(kSmallWeights, H);
    all_reduce(count);
    elementwise(OpKind::kAttnResidual, count, N * H, kResidualOps, 2, 1, 1);
    norm(OpKind::kMlpNorm, count, N, false, 0);  // fused add + norm
  }

  // The MLP or MoE block over every attention group's tokens, to the residual add.
  void mlp_half(double count, bool moe) {
    // Expert parallelism over attention groups: the tokens travel to their
    // experts and back (all-to-alls) instead of being gathered and reduced.
    const bool dispatch = moe && s.ep > 1 && s.attention_dp > 1;
    if (dispatch) all_to_all(count);
    if (moe) {
      experts(count);
    } else {
      mlp(count, false, I, N);
    }
    if (dispatch) {
      all_to_all(count);
    } else {
      all_reduce(count);
    }
    // Residual add in the down projection's epilogue: reads the residual only.
    elementwise(OpKind::kMlpResidual, count, N * H, kResidualOps, 1, 0, 0);
  }

  void layer(double count, bool moe, bool sliding, bool linear_attn) {
    const int first = g.size;
    // A half an earlier class built is copied; else built (and kept).
    const auto add_half = [&](Half& half, auto build) {
      if (half.end > 0 && !drafting) {
        repeat(half, count);
        return;
      }
      const int begin = g.size;
      build();
      if (!drafting) half = {begin, g.size};
    };
    const int attention_kind = linear_attn ? 2 : sliding ? 1 : 0;
    add_half(attention_halves[static_cast<std::size_t>(attention_kind)],
             [&] { attention_half(count, sliding, linear_attn); });
    add_half(mlp_halves[moe ? 1 : 0], [&] { mlp_half(count, moe); });
    if (sliding && window_masked) g.window_masked_layers += count;
    for (int i = first; i < g.size; ++i) {
      g.ops[static_cast<std::size_t>(i)].moe_layer = moe;
      g.ops[static_cast<std::size_t>(i)].sliding_layer = sliding;
      g.ops[static_cast<std::size_t>(i)].linear_layer = linear_attn;
    }
  }
};

// With exact checkpoint bytes (GGUF mixes, block-scaled fp8), scale each
// component's streamed weight bytes so the components sum to the file's bytes.
void scale_to_checkpoint(const ModelSpec& m, const QuantizedRelease* release, OpGraph* g) {
  const auto& c = *m.checkpoint;
  const ParamCounts p = count_parameters(m);
  auto ratio = [](double exact, double modeled) {
    return modeled > 0 && exact > 0 ? exact / modeled : 1.0;
  };
  // The graph's bytes of a component: the checkpoint's format, but the
  // operators its release keeps unquantized in theirs.
  const LinearParameters lp = linear_parameters(m);
  const auto modeled = [&](double params, bool (*in)(OpKind)) {
    double bytes = bytes_for(m.native_weights, params);
    if (release == nullptr) return bytes;
    for (int k = 0; k < kOpKindCount; ++k) {
      const auto kind = static_cast<OpKind>(k);
      if (!release_keeps(*release, kind) || !in(kind)) continue;
      const double kept = lp.dense[static_cast<std::size_t>(k)];
      bytes += bytes_for(release->kept_format, kept) - bytes_for(m.native_weights, kept);
    }
    return bytes;
  };
  const auto shared = [](OpKind k) {
    return k == OpKind::kSharedGateProj || k == OpKind::kSharedUpProj ||
           k == OpKind::kSharedDownProj;
  };
  const bool lm_kept = release && release_keeps(*release, OpKind::kLmHead);
  const Format lm_format = lm_kept ? release->kept_format : m.native_weights;
  const double r_attn = ratio(c.attention, modeled(p.attention, is_attention_projection));
  const double r_mlp = ratio(c.dense_mlp, bytes_for(m.native_weights, p.dense_mlp));
  const double r_exp = ratio(c.routed_experts, bytes_for(m.native_experts, p.routed_experts));
  const double r_shared = ratio(c.shared_experts, modeled(p.shared_experts, shared));
  const double r_lm = m.tie_embeddings ? ratio(c.embedding, bytes_for(lm_format, p.embedding))
                                       : ratio(c.lm_head, bytes_for(lm_format, p.lm_head));
  const double r_emb = ratio(c.embedding, bytes_for(m.native_weights, p.embedding));
  for (int i = 0; i < g->size; ++i) {
    Op& op = g->ops[static_cast<std::size_t>(i)];
    double r = is_attention_projection(op.kind) ? r_attn : 1;
    switch (op.kind) {
      case OpKind::kGateProj:
      case OpKind::kUpProj:
      case OpKind::kDownProj:
        r = op.moe_layer ? r_exp : r_mlp;
        break;
      case OpKind::kSharedGateProj:
      case OpKind::kSharedUpProj:
      case OpKind::kSharedDownProj:
        r = r_shared;
        break;
      case OpKind::kLmHead:
        r = r_lm;
        break;
      case OpKind::kEmbedding:
        r = r_emb;
        break;
      default:
        break;
    }
    op.weight_bytes *= r;
  }
}

}  // namespace

std::string_view op_name(OpKind k) noexcept { return kOpNames[static_cast<int>(k)]; }

std::string_view op_class_name(OpClass c) noexcept {
  switch (c) {
    case OpClass::kMatmul:
      return "matmul";
    case OpClass::kAttention:
      return "attention";
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kMemory:
      return "memory";
    case OpClass::kCommunication:
      return "communication";
  }
  return "matmul";
}

std::string_view phase_name(Phase p) noexcept {
  return p == Phase::kPrefill ? "prefill" : "decode";
}

Phase parse_phase(std::string_view text) {
  if (text == "prefill") return Phase::kPrefill;
  if (text == "decode") return Phase::kDecode;
  throw InvalidArgument("unknown phase '" + clip_utf8(text, 40) + "' (prefill, decode)");
}

double distinct_experts(double num_experts, double top_k, double tokens) noexcept {
  if (num_experts <= 0) return 0;
  return num_experts * (1 - std::pow(1 - top_k / num_experts, tokens));
}

double expected_max_normal(double n) noexcept {
  // E[max of n standard normals] at n = 2^i (Harter, "Expected values of
  // normal order statistics", Biometrika 48, 1961), linear in log2 n between,
  // continued past 256 by the asymptote sqrt(2 ln n) less the table's gap.
  static constexpr double kTable[] = {0.0,    0.5642, 1.0294, 1.4236, 1.7660,
                                      2.0427, 2.3187, 2.5798, 2.8182};
  constexpr int kLast = 8;
  if (!(n > 1)) return 0;
  const double x = std::log2(n);
  if (x >= kLast) {
    const double gap = std::sqrt(2 * std::log(256.0)) - kTable[kLast];
    return std::sqrt(2 * std::log(n)) - gap;
  }
  const int i = static_cast<int>(x);
  const double f = x - i;
  return (1 - f) * kTable[i] + f * kTable[i + 1];
}

ExpertLoad busiest_expert_group(double num_experts, double top_k, double tokens,
                                double ep) noexcept {
  const double all_pairs = tokens * top_k;
  const double touched = distinct_experts(num_experts, top_k, tokens);
  if (!(ep > 1)) return {all_pairs, touched};
  const double z = expected_max_normal(ep);
  const double share = 1 / ep;
  // A group's pairs: binomial(all pairs, 1 / ep).
  const double pairs =
      std::min(all_pairs, all_pairs * share + z * std::sqrt(all_pairs * share * (1 - share)));
  // Its touched experts: binomial(num_experts / ep, touched / num_experts).
  const double local = num_experts / ep;
  const double p = num_experts > 0 ? touched / num_experts : 0;
  double experts = std::min(local, local * p + z * std::sqrt(local * p * (1 - p)));
  experts = std::clamp(experts, std::min(1.0, pairs), std::max(pairs, 1.0));
  return {pairs, experts};
}

std::optional<double> measured_tokens_per_step(const ModelSpec& model,
                                               std::int64_t draft_tokens) noexcept {
  const auto& measured = model.draft_tokens_per_step;
  if (draft_tokens <= 0 || measured.empty()) return std::nullopt;
  const auto k = std::min(static_cast<std::size_t>(draft_tokens), measured.size());
  return measured[k - 1];
}

double acceptance_for_tokens_per_step(std::int64_t draft_tokens, double tokens) noexcept {
  if (draft_tokens <= 0 || !(tokens > 1)) return 0;        // NaN too
  draft_tokens = std::min(draft_tokens, kMaxDraftTokens);  // bounds the work
  const double target = std::min(tokens, static_cast<double>(draft_tokens) + 1);
  // The chain's sum rises with a, so bisection: 60 halvings leave 1e-18.
  double lo = 0, hi = 1;
  for (int i = 0; i < 60; ++i) {
    const double a = 0.5 * (lo + hi);
    double sum = 1, term = 1;
    for (std::int64_t k = 0; k < draft_tokens; ++k) {
      term *= a;
      sum += term;
    }
    (sum < target ? lo : hi) = a;
  }
  return 0.5 * (lo + hi);
}

double draft_acceptance(const ModelSpec& model, std::int64_t draft_tokens,
                        std::optional<double> given) {
  if (given && draft_tokens == 0)
    throw InvalidArgument("acceptance needs draft tokens (speculative decoding)");
  if (draft_tokens <= 0) return 0;
  if (draft_tokens > kMaxDraftTokens) {
    throw InvalidArgument("draft tokens = " + std::to_string(draft_tokens) +
                          " is out of range (0 to " + std::to_string(kMaxDraftTokens) + ")");
  }
  double a = kDefaultDraftAcceptance;
  if (given) {
    a = *given;
  } else if (const auto measured = measured_tokens_per_step(model, draft_tokens)) {
    a = acceptance_for_tokens_per_step(draft_tokens, *measured);
  }
  if (!(a >= 0 && a <= 1)) {
    throw InvalidArgument("acceptance must be from 0 to 1 (the chance a draft token is accepted)");
  }
  return a;
}

double tokens_per_step(const Scenario& s) noexcept {
  double sum = 1, term = 1;
  for (std::int64_t i = 0; i < s.draft_tokens; ++i) {
    term *= s.acceptance;
    sum += term;
  }
  return sum;
}

bool runs_at_measured_acceptance(const ModelSpec& model, const Scenario& s) noexcept {
  const auto measured = measured_tokens_per_step(model, s.draft_tokens);
  return measured && std::abs(tokens_per_step(s) - *measured) <= 1e-9 * *measured;
}

void validate(const Scenario& s, const ModelSpec& m) {
  auto check = [](std::string_view name, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi) {
      throw InvalidArgument(std::string(name) + " = " + std::to_string(v) + " is out of range (" +
                            std::to_string(lo) + " to " + std::to_string(hi) + ")");
    }
  };
  check("batch", s.batch, 1, kMaxBatch);
  check("seq-len", s.seq_len, 1, kMaxSeqLen);
  if (s.cached != 0) {
    if (s.phase != Phase::kPrefill) {
      throw InvalidArgument(
          "cached tokens precede a prompt (prefill); a decode step's cached context is its "
          "seq-len");
    }
    if (s.cached < 0 || s.cached > kMaxSeqLen - s.seq_len) {
      throw InvalidArgument("cached = " + std::to_string(s.cached) + " is out of range (0 to " +
                            std::to_string(kMaxSeqLen - s.seq_len) + ": with the " +
                            std::to_string(s.seq_len) + "-token prompt, at most " +
                            std::to_string(kMaxSeqLen) + " tokens)");
    }
  }
  check("tp", s.tp, 1, kMaxParallel);
  check("pp", s.pp, 1, m.layers);
  check("attention dp", s.attention_dp, 1, s.tp);
  if (s.tp % s.attention_dp != 0) {
    throw InvalidArgument("attention dp " + std::to_string(s.attention_dp) +
                          " does not divide tp " + std::to_string(s.tp));
  }
  if (s.prefill_tokens != 0 || s.prefill_prompt != 0 || s.prefill_cached != 0) {
    if (s.phase != Phase::kDecode)
      throw InvalidArgument("prefill tokens ride along with a decode step only");
    check("prefill tokens", s.prefill_tokens, 1, kMaxBatch);
    check("prefill prompt", s.prefill_prompt, 1, kMaxSeqLen);
    check("prefill cached", s.prefill_cached, 0, kMaxSeqLen - s.prefill_prompt);
    if (s.prefill_chunk != 0) check("prefill chunk", s.prefill_chunk, 1, kMaxBatch);
  }
  check("draft tokens", s.draft_tokens, 0, kMaxDraftTokens);
  if (!(s.acceptance >= 0 && s.acceptance <= 1)) {
    throw InvalidArgument("acceptance must be from 0 to 1 (the chance a draft token is accepted)");
  }
  if (!(s.block_sparsity > 0 && s.block_sparsity <= 1)) {
    throw InvalidArgument(
        "block sparsity must be in (0, 1] (the fraction of attention blocks computed)");
  }
  const std::int64_t attention_tp = s.tp / s.attention_dp;
  if (m.heads % attention_tp != 0) {
    throw InvalidArgument((s.attention_dp > 1 ? "attention tp " + std::to_string(attention_tp) +
                                                    " (tp / attention dp)"
                                              : "tp " + std::to_string(s.tp)) +
                          " does not divide the " + std::to_string(m.heads) + " attention heads");
  }
  if (m.linear_attention && m.linear_attention->key_heads % attention_tp != 0) {
    throw InvalidArgument((s.attention_dp > 1 ? "attention tp " + std::to_string(attention_tp)
                                              : "tp " + std::to_string(s.tp)) +
                          " does not divide the " + std::to_string(m.linear_attention->key_heads) +
                          " linear-attention key heads");
  }
  check("ep", s.ep, 1, s.tp);
  if (s.ep > 1) {
    if (!m.moe) throw InvalidArgument("ep " + std::to_string(s.ep) + ": the model has no experts");
    if (s.tp % s.ep != 0)
      throw InvalidArgument("ep " + std::to_string(s.ep) + " does not divide tp " +
                            std::to_string(s.tp));
    if (m.moe->num_experts % s.ep != 0)
      throw InvalidArgument("ep " + std::to_string(s.ep) + " does not divide the " +
                            std::to_string(m.moe->num_experts) + " experts");
  }
  if (m.intermediate % s.tp != 0 || (m.moe && m.moe->expert_intermediate % (s.tp / s.ep) != 0)) {
    throw InvalidArgument("tp " + std::to_string(s.tp) +
                          " does not divide the MLP intermediate size");
  }
  if (!format_info(s.precision.kv).compute_format && s.precision.kv != Format::kQ8_0 &&
      s.precision.kv != Format::kQ4_0) {
    throw InvalidArgument("KV-cache format " + std::string(format_id(s.precision.kv)) +
                          " is not a KV-cache format");
  }
}

std::vector<std::string> kept_operator_names(const QuantizedRelease& r) {
  std::vector<std::string> names;
  for (int k = 0; k < kOpKindCount; ++k) {
    if (release_keeps(r, static_cast<OpKind>(k)))
      names.emplace_back(op_name(static_cast<OpKind>(k)));
  }
  return names;
}

std::string release_note(const QuantizedRelease& r) {
  std::string ops;
  for (const auto& name : kept_operator_names(r)) ops += (ops.empty() ? "" : ", ") + name;
  std::string note = std::string(format_id(r.format)) + " as its release " + r.checkpoint +
                     " ships it: " + ops + " in " + std::string(format_id(r.kept_format)) +
                     " (weights and math)";
  if (r.draft_head_kept) note += ", and its MTP layer whole";
  return note + "; a strategy quantizes every layer it names";
}

Format stored_activation_format(const ModelOptions& opt, Format act) noexcept {
  if (opt.mode == Mode::kRealistic && opt.engine && opt.engine->activation_storage)
    return *opt.engine->activation_storage;
  return held_activation_format(act);
}

OpGraph build_ops(const ModelSpec& m, const Device& dev, const Scenario& s,
                  const ModelOptions& opt) {
  OpGraph g;
  build_ops(m, dev, s, opt, &g);
  return g;
}

void build_ops(const ModelSpec& m, const Device& dev, const Scenario& s, const ModelOptions& opt,
               OpGraph* out) {
  validate(s, m);
  OpGraph& g = *out;
  g.size = 0;
  g.distinct_experts = 0;
  g.window_masked_layers = 0;
  g.window_masked_split_kv = false;
  Builder b{m, dev, s, opt, g};
  b.decode = s.phase == Phase::kDecode;
  b.tp = static_cast<double>(s.tp);
  b.H = static_cast<double>(m.hidden);
  b.nh = static_cast<double>(m.heads) / b.tp;
  b.nkv = std::max(1.0, static_cast<double>(m.kv_heads) / b.tp);  // replicated when tp > kv heads
  b.dh = static_cast<double>(m.head_dim);
  b.dv = m.attention == AttentionKind::kMla ? static_cast<double>(m.mla.v_head_dim) : b.dh;
  b.I = static_cast<double>(m.intermediate) / b.tp;
  b.V = static_cast<double>(m.vocab) / b.tp;
  b.B = static_cast<double>(s.batch);
  b.T = b.decode ? 1 + static_cast<double>(s.draft_tokens) : static_cast<double>(s.seq_len);
  b.P = b.decode ? static_cast<double>(s.prefill_tokens) : 0;
  b.N = b.B * b.T + b.P;
  b.ctx = b.decode ? static_cast<double>(s.seq_len) + 1 : static_cast<double>(s.seq_len);
  b.C = b.decode ? 0 : static_cast<double>(s.cached);
  b.a = s.precision.act;
  b.stored = stored_activation_format(opt, b.a);
  b.kv = s.precision.kv;
  b.w = s.precision.weights.value_or(m.native_weights);
  b.e = s.precision.experts.value_or(s.precision.weights.value_or(m.native_experts));
  b.wplan = plan_compute(dev, b.w, b.a);
  b.eplan = m.moe ? plan_compute(dev, b.e, b.a) : b.wplan;
  const QuantizedRelease* release = followed_release(m, s.precision);
  if (release != nullptr) {
    b.release = release;
    b.kept_plan = plan_compute(dev, release->kept_format, release->kept_format);
  }
  // An engine whose fused MoE quantizes the activations of these experts on
  // the fly runs their math in its own format; the plan may say which.
  if (m.moe && s.precision.expert_act) {
    if (!dev.computes(*s.precision.expert_act) || std::isnan(dev.peak(*s.precision.expert_act))) {
      throw InvalidArgument(dev.id + " has no " + std::string(format_id(*s.precision.expert_act)) +
                            " math for the experts' activations");
    }
    b.eplan = plan_compute(dev, b.e, *s.precision.expert_act);
  } else if (m.moe && opt.engine && opt.mode == Mode::kRealistic) {
    if (const auto* rule = opt.engine->expert_activation(b.e, b.a, dev))
      b.eplan = plan_compute(dev, b.e, rule->act);
  }
  if (m.sparse_attention) b.sparse_top_k = static_cast<double>(m.sparse_attention->top_k);
  if (opt.engine && opt.mode == Mode::kRealistic) {
    b.sparse_path = opt.engine->sparse_mla_path(m, b.kv, dev);
    if (b.sparse_path && opt.engine->sparse_mla->mha_prompts_up_to.known())
      b.mha_prompts_up_to = opt.engine->sparse_mla->mha_prompts_up_to.value;
  }
  g.weights = b.w;
  g.experts = b.e;
  g.tokens = b.N;
  g.attention = s.attention ? *s.attention : default_attention_kernel(dev, b.decode);
  check_kernel_supported(g.attention, dev);

  // Embedding: a gather of N rows.
  if (m.vocab > 0) {
    Op& emb = b.add(OpKind::kEmbedding, OpClass::kMemory, 1);
    emb.weight_bytes = bytes_for(m.native_weights, b.N * b.H);
    emb.act_bytes = bytes_for(b.stored, b.N * b.H);
  }
  // Layer classes: (moe, attention: full, sliding or linear) -> number of layers.
  enum { kFull, kSliding, kLinear };
  const auto attention_of = [&m](std::int64_t l) {
    return m.is_linear_layer(l) ? kLinear : m.is_sliding_layer(l) ? kSliding : kFull;
  };
  double counts[2][3] = {{0, 0, 0}, {0, 0, 0}};
  const std::int64_t moe_layers = m.moe_layer_count();
  const double layers = static_cast<double>(m.layers);
  if (m.sliding_window == 0 && !m.linear_attention) {
    counts[0][kFull] = layers - static_cast<double>(moe_layers);
    counts[1][kFull] = static_cast<double>(moe_layers);
  } else if ((moe_layers == 0 || moe_layers == m.layers) &&
             !(m.sliding_window != 0 && m.linear_attention)) {
    // Linear attention (Qwen3.5) or sliding windows (gpt-oss), not both, in a
    // model whose layers are all MoE or all dense: no pass over the layers (a
    // tenth of gpt-oss's prediction). Each count is 0 without its kind.
    const int moe = moe_layers > 0 ? 1 : 0;
    counts[moe][kLinear] = static_cast<double>(m.linear_layer_count());
    counts[moe][kSliding] = static_cast<double>(m.sliding_layer_count());
    counts[moe][kFull] = layers - counts[moe][kLinear] - counts[moe][kSliding];
  } else {
    for (std::int64_t l = 0; l < m.layers; ++l) counts[m.is_moe_layer(l)][attention_of(l)] += 1;
  }
  for (int moe = 0; moe < 2; ++moe) {
    for (int kind = kFull; kind <= kLinear; ++kind) {
      if (counts[moe][kind] > 0)
        b.layer(counts[moe][kind], moe == 1, kind == kSliding, kind == kLinear);
    }
  }
  b.norm(OpKind::kFinalNorm, 1, b.N, true, 1);
  if (m.vocab > 0) {
    // Logits only for the last position of each sequence (what serving
    // engines compute; a speculative step's every verified position); the
    // tied embedding is read again when tied. Prompts finishing in this step
    // sample their first token too.
    const double prompts_done = b.P > 0 ? b.P / static_cast<double>(s.prefill_prompt) : 0;
    const double positions = b.decode ? b.B * b.T : b.B;
    b.linear(OpKind::kLmHead, 1, positions + prompts_done, b.V, b.H, b.w, b.wplan, true, 1);
  }
  if (s.draft_tokens > 0) {
    // The draft head: one decoder layer of the model's last kind (DeepSeek-V3's
    // MTP module is an MoE layer) and the shared LM head. A decode step runs it
    // draft_tokens times, one token a sequence each, over the cached context
    // (its own KV cache); a prefill runs it once over the prompt, filling that
    // cache and drafting the first tokens. Its input projection (DeepSeek's
    // eh_proj, 2H -> H) is left out: under 1% of an MoE layer's weights.
    const double saved_t = b.T, saved_n = b.N, saved_p = b.P, saved_d = g.distinct_experts;
    const double passes = b.decode ? static_cast<double>(s.draft_tokens) : 1;
    if (b.decode) b.T = 1;
    b.P = 0;
    b.N = b.B * b.T;
    b.drafting = true;
    // A release that keeps its MTP layer whole: the head's experts too.
    const Format saved_e = b.e;
    const ComputePlan saved_eplan = b.eplan;
    if (release && release->draft_head_kept) {
      b.e = release->kept_format;
      b.eplan = b.kept_plan;
    }
    const std::int64_t last = m.layers - 1;
    b.layer(passes, m.moe && m.is_moe_layer(last), m.is_sliding_layer(last),
            m.is_linear_layer(last));
    b.norm(OpKind::kFinalNorm, passes, b.B, true, 1);
    if (m.vocab > 0) b.linear(OpKind::kLmHead, passes, b.B, b.V, b.H, b.w, b.wplan, true, 1);
    b.drafting = false;
    b.e = saved_e;
    b.eplan = saved_eplan;
    b.T = saved_t;
    b.N = saved_n;
    b.P = saved_p;
    g.distinct_experts = saved_d;
  }
  if (m.checkpoint && !s.precision.weights && !s.precision.experts)
    scale_to_checkpoint(m, release, &g);
  if (s.pp > 1) {
    Op& send = b.add(OpKind::kPipelineSend, OpClass::kCommunication, static_cast<double>(s.pp - 1));
    send.act_bytes = bytes_for(b.stored, b.N * b.H);
    send.compute = Format::kFp32;
  }
}

LinearParameters linear_parameters(const ModelSpec& m) {
  LinearParameters lp;
  auto at = [](std::array<double, kOpKindCount>& a, OpKind k) -> double& {
    return a[static_cast<std::size_t>(k)];
  };
  const ParamCounts p = count_parameters(m);
  const double h = static_cast<double>(m.hidden), L = static_cast<double>(m.layers);
  const double nh = static_cast<double>(m.heads);
  if (m.attention == AttentionKind::kMla) {
    const auto& a = m.mla;
    const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
    if (a.q_lora_rank > 0) {
      at(lp.dense, OpKind::kQAProj) = L * h * static_cast<double>(a.q_lora_rank);
      at(lp.dense, OpKind::kQBProj) = L * static_cast<double>(a.q_lora_rank) * nh * qk;
    } else {
      at(lp.dense, OpKind::kQProj) = L * h * nh * qk;
    }
    at(lp.dense, OpKind::kKvAProj) =
        L * h * static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim);
    at(lp.dense, OpKind::kKvBProj) = L * static_cast<double>(a.kv_lora_rank) * nh *
                                     static_cast<double>(a.qk_nope_head_dim + a.v_head_dim);
    at(lp.dense, OpKind::kOProj) = L * nh * static_cast<double>(a.v_head_dim) * h;
    at(lp.dense, OpKind::kIndexerProj) = m.indexer_parameters();
  } else {
    // Softmax attention in the layers linear attention leaves.
    const double full = L - static_cast<double>(m.linear_layer_count());
    const double q = static_cast<double>(m.heads * m.head_dim);
    const double kv = static_cast<double>(m.kv_heads * m.head_dim);
    at(lp.dense, OpKind::kQProj) = full * h * q * (m.attention_output_gate ? 2 : 1);
    at(lp.dense, OpKind::kKProj) = full * h * kv;
    at(lp.dense, OpKind::kVProj) = full * h * kv;
    at(lp.dense, OpKind::kOProj) = full * q * h;
  }
  if (m.linear_attention) {
    const auto& x = *m.linear_attention;
    const double linear = static_cast<double>(m.linear_layer_count());
    const double key = static_cast<double>(x.key_width());
    const double value = static_cast<double>(x.value_width());
    at(lp.dense, OpKind::kLinearInProj) = linear * h * (2 * key + 2 * value);
    at(lp.dense, OpKind::kLinearBaProj) = linear * h * 2 * static_cast<double>(x.value_heads);
    at(lp.dense, OpKind::kOProj) += linear * value * h;
  }
  const double mats = m.gated_mlp ? 3 : 2;
  if (m.gated_mlp) at(lp.dense, OpKind::kGateProj) = p.dense_mlp / mats;
  at(lp.dense, OpKind::kUpProj) = p.dense_mlp / mats;
  at(lp.dense, OpKind::kDownProj) = p.dense_mlp / mats;
  if (m.gated_mlp) at(lp.routed, OpKind::kGateProj) = p.routed_experts / mats;
  at(lp.routed, OpKind::kUpProj) = p.routed_experts / mats;
  at(lp.routed, OpKind::kDownProj) = p.routed_experts / mats;
  if (m.gated_mlp) at(lp.dense, OpKind::kSharedGateProj) = p.shared_experts / mats;
  at(lp.dense, OpKind::kSharedUpProj) = p.shared_experts / mats;
  at(lp.dense, OpKind::kSharedDownProj) = p.shared_experts / mats;
  at(lp.dense, OpKind::kLmHead) = p.lm_head;
  return lp;
}

}  // namespace roofline
