#include "engines.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <set>

#include "commands.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

std::string micros(const EngineFigure& f) {
  return f.known() ? fmt::format("{:g} µs", f.value * 1e6) : std::string("device");
}

std::string list(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "-" : out;
}

// The devices whose tables (GEMM, MoE or attention) measured `e`'s kernels.
template <typename Table>
std::vector<std::string> devices_of(const std::vector<Table>& tables, const EngineProfile& e) {
  std::vector<std::string> devices;
  if (e.gemm_tables.empty()) return devices;
  for (const auto& t : tables) {
    if (t.engine == e.gemm_tables) devices.push_back(t.device);
  }
  return devices;
}

}  // namespace

void engines_command(const std::string& id, bool json) {
  const EngineRegistry& engines = EngineRegistry::built_in();
  if (!id.empty()) {
    const EngineProfile& e = engines.get(id);
    if (json) {
      std::cout << to_json(e).dump(2) << "\n";
      return;
    }
    auto figure = [&](const char* what, const EngineFigure& f) {
      if (!f.known()) {
        std::cout << fmt::format("  {:<28} the device's figure\n", what);
        return;
      }
      std::cout << fmt::format("  {:<28} {:g} ({}){}\n      source: {}\n", what, f.value,
                               confidence_name(f.confidence), f.note.empty() ? "" : "; " + f.note,
                               e.citation(f.source));
    };
    std::cout << fmt::format("{} ({}), {} engine; {}\n", e.name, e.id, e.kind, e.versions);
    std::cout << fmt::format("  {:<28} {}\n      source: {}\n", "decode CUDA graphs",
                             e.decode_cuda_graphs ? "yes" : "no",
                             e.citation(e.decode_cuda_graphs_source));
    figure("launch per kernel, decode s", e.launch_decode_s);
    figure("launch per kernel, prefill s", e.launch_prefill_s);
    if (e.launch_eager_s.known()) figure("  host dispatch, no graph s", e.launch_eager_s);
    if (e.launch_prefill_before > 0) {
      const std::string label =
          fmt::format("  builds before {}", format_build_date(e.launch_prefill_before));
      figure(label.c_str(), e.launch_prefill_before_s);
    }
    figure("fixed cost per step s", e.step_overhead_s);
    if (e.activation_storage) {
      std::cout << fmt::format("  {:<28} {} (16 bits in the model otherwise)\n      source: {}\n",
                               "activations between kernels", format_id(*e.activation_storage),
                               e.citation(e.activation_storage_source));
    }
    if (e.gemm_copies) {
      const auto& c = *e.gemm_copies;
      auto ids = [](const std::vector<Format>& formats) {
        std::string out;
        for (Format f : formats) out += (out.empty() ? "" : ", ") + std::string(format_id(f));
        return out;
      };
      std::cout << fmt::format(
          "  {:<28} a {:g}-bit copy of the input for {}; an F16 copy in and out for cuBLAS's {}\n"
          "      source: {}\n",
          "GEMM copies", c.quantized_input_bits.value, ids(c.quantized_formats),
          ids(c.cublas_formats), e.citation(c.source));
    }
    if (e.shared_experts_stream.on) {
      const auto& x = e.shared_experts_stream;
      std::cout << fmt::format(
          "  {:<28} beside the routed ones{}{}\n      source: {}\n", "shared experts stream",
          x.max_tokens.known() ? fmt::format(", passes of at most {:g} tokens", x.max_tokens.value)
                               : std::string(),
          x.graphs_only ? ", in replayed graphs" : "", e.citation(x.source));
    }
    for (const auto& x : e.moe_kernel_releases) {
      std::cout << fmt::format(
          "  {:<28} {} experts on {} on {}{}{}\n      source: {}\n", "MoE kernel by release",
          x.format, x.family, x.architecture,
          x.before_version.empty() ? std::string(", every release")
                                   : fmt::format(", releases before {}", x.before_version),
          x.measured_as.empty()
              ? std::string()
              : fmt::format(" (priced by the family's {} layers where {}'s were not measured)",
                            x.measured_as, x.format),
          e.citation(x.source));
    }
    for (const auto& x : e.window_masking) {
      std::cout << fmt::format(
          "  {:<28} {} on {} (attention-sink models) masks the keys outside a sliding window "
          "instead of skipping them: {}\n      source: {}\n",
          "sliding windows by release", x.kernel, x.architecture,
          x.prompt_kernel_before.empty() ? "split-KV decode kernel before " + x.split_kv_before
          : x.split_kv_before.empty()    ? "prompt kernel before " + x.prompt_kernel_before
                                         : "prompt kernel before " + x.prompt_kernel_before +
                                            ", split-KV decode kernel before " + x.split_kv_before,
          e.citation(x.source));
    }
    if (e.padded_moe.on) {
      const auto& x = e.padded_moe;
      std::cout << fmt::format(
          "  {:<28} {} experts on {}, releases {} to before {}{}: {}, blocks of {} rows, the "
          "unused ones computed; dense efficiency from {}'s {} table\n      source: {}\n",
          "padded MoE workspace", format_id(x.format), x.architecture, x.from_version,
          x.before_version,
          x.excluded_tp > 0 ? fmt::format(" (not TP {} from {})", x.excluded_tp, x.excluded_tp_from)
                            : std::string(),
          x.kernel, x.block_rows, x.gemm_tables, x.gemm_format, e.citation(x.source));
    }
    std::cout << fmt::format("  {:<28} {}\n", "GEMM tables measured on",
                             e.gemm_tables.empty()
                                 ? std::string("none: the device's achievable fractions")
                                 : list(devices_of(engines.gemm_tables(), e)) +
                                       " (others: the nearest device of "
                                       "their architecture)");
    if (!e.gemm_tables.empty()) {
      std::cout << fmt::format("  {:<28} {}\n", "MoE tables measured on",
                               list(devices_of(engines.moe_tables(), e)) +
                                   " (others: the nearest device of their architecture)");
      for (const auto& x : e.moe_table_stand_ins) {
        std::cout << fmt::format(
            "  {:<28} {}'s MoE tables stand in (the same kernels; derived)\n      source: {}\n",
            fmt::format("MoE layers on {}", x.architecture), x.engine, e.citation(x.source));
      }
      std::cout << fmt::format("  {:<28} {}\n", "attention tables measured on",
                               list(devices_of(engines.attention_tables(), e)) +
                                   " (others: the nearest device of their architecture)");
    }
    if (e.gemm_table_scale.known()) figure("factor on the tables", e.gemm_table_scale);
    for (const auto& b : e.borrowed_gemm_formats) {
      std::cout << fmt::format(
          "  {:<28} {}\n      source: {}\n", fmt::format("{} GEMMs priced by", b.format_key),
          b.from + "'s table of the same device (derived)", e.citation(b.source));
    }
    if (e.gemv_bandwidth_per_sm_Bps.known())
      figure("GEMV bytes/s per SM", e.gemv_bandwidth_per_sm_Bps);
    for (const auto& [arch, f] : e.gemv_stream)
      figure(fmt::format("16-bit GEMV stream, {}", arch).c_str(), f);
    if (e.gemv_max_m.known()) figure("GEMV up to rows", e.gemv_max_m);
    for (const auto& [format, f] : e.weight_only_stream)
      figure(fmt::format("{} weight-only stream", format_id(format)).c_str(), f);
    for (const auto& [arch, f] : e.dequant_gemm.architectures) {
      figure(fmt::format("{} stream, {}", e.dequant_gemm.kernel.substr(0, 3), arch).c_str(),
             f.stream);
      figure(fmt::format("{} {} share, {}", e.dequant_gemm.kernel.substr(0, 3),
                         format_id(e.dequant_gemm.peak), arch)
                 .c_str(),
             f.compute);
    }
    if (!e.fp8_prequantized.source.empty()) {
      std::vector<std::string> ops, with_reduce;
      for (OpKind k : e.fp8_prequantized.ops) ops.emplace_back(op_name(k));
      for (OpKind k : e.fp8_prequantized.with_allreduce_fusion)
        with_reduce.emplace_back(op_name(k));
      std::cout << fmt::format(
          "  {:<28} {}; with the all-reduce fusion also {}\n      source: {}\n",
          "fp8 inputs written before", fmt::join(ops, ", "), fmt::join(with_reduce, ", "),
          e.citation(e.fp8_prequantized.source));
    }
    for (const auto& [arch, f] : e.cublas_gemm.compute) {
      figure(fmt::format("cuBLAS {} share, {}", e.cublas_gemm.fp16_accumulate ? "fp16-acc" : "peak",
                         arch)
                 .c_str(),
             f);
    }
    if (const auto& q = e.dequant_gemm; q.cublas_before > 0) {
      std::cout << fmt::format(
          "  {:<28} builds before {}: quantized GEMMs of more than {} rows dequantize to F16, "
          "then cuBLAS (--engine-build)\n      source: {}\n",
          "older builds", format_build_date(q.cublas_before), static_cast<int>(q.cublas_above_rows),
          e.citation(q.cublas_before_source));
    }
    if (e.scheduler.known) {
      // The serving scheduler (roofline serving): each choice with its source.
      const EngineScheduler& s = e.scheduler;
      const auto choice = [&](const char* what, const std::string& value, const std::string& key) {
        std::cout << fmt::format("  {:<28} {}\n      source: {}\n", what, value, e.citation(key));
      };
      choice("scheduler steps", s.prefill_first ? "prefill-first" : "mixed", s.policy_source);
      choice("prompts", s.chunked_prefill ? "chunked" : "whole", s.chunked_source);
      choice("KV admission", s.reserve_whole ? "whole request" : "prompt, growing (preempts)",
             s.admission_source);
      choice("pipeline stages",
             s.pipeline_micro_batches ? "a micro-batch per stage in flight" : "one batch at a time",
             s.pipeline_source);
      choice(
          "batches formed",
          s.formed_a_step_ahead
              ? std::string("a step ahead (a newcomer waits a step more)") +
                    (s.ahead_with_pipeline_parallel ? "" : "; as each starts with pipeline stages")
              : std::string("as each step starts"),
          s.formed_source);
      choice("prefix cache",
             s.prefix_cache ? "on: a prompt found in the KV cache skips its prefill"
                            : "off: every prompt computed",
             s.prefix_cache_source);
      if (s.batch_wait) {
        choice("batch waiting",
               "available, off by default: --batch-wait-iters N holds prompts beside decode "
               "tokens up to N steps for a fuller step (--batch-wait-ratio of the budget)",
               s.batch_wait_source);
      }
      if (s.adp_balance) {
        choice("attention-DP balance",
               "available, off by default: --adp-balance holds prompts until every attention "
               "data-parallel rank has one, at most --adp-timeout-iters steps",
               s.adp_balance_source);
      }
      if (s.recv_interval) {
        choice("receive interval",
               "available, every step by default: --scheduler-recv-interval N takes new "
               "requests in every N decode steps (at once after a prompt step or when idle)",
               s.recv_interval_source);
      }
      figure("token budget a step", s.token_budget);
      figure("requests running", s.max_running);
      if (s.kv_block_tokens.known()) figure("KV block tokens", s.kv_block_tokens);
      choice("KV cache memory",
             fmt::format("{} ({})", kv_memory_text(s.kv_memory.value, s.kv_memory_of_free),
                         confidence_name(s.kv_memory.confidence)),
             s.kv_memory.source);
      if (!s.kv_memory_before.empty()) {
        const std::string before = "  before " + s.kv_memory_before;
        choice(before.c_str(), fmt::format("{:.0f}%", s.kv_memory_earlier.value * 100),
               s.kv_memory_earlier.source);
      }
      for (const EngineScheduler::Rule& r : s.rules) {
        std::cout << fmt::format(
            "  {:<28} {} tokens{} from {:g} GiB{}\n      source: {}\n", "  by device memory",
            r.token_budget, r.max_running > 0 ? fmt::format(", {} running", r.max_running) : "",
            r.memory_at_least_bytes / 1073741824.0,
            r.except_architecture.empty() ? "" : " except " + r.except_architecture,
            e.citation(r.source));
      }
      if (const auto& a = s.aiconfigurator; a.known) {
        choice("AIConfigurator deployments",
               fmt::format("a rank runs its batch size bs; budgets of bs + isl + {:g}{}, "
                           "prefill workers isl + {:g}, decode workers {}{}{}{}{}",
                           a.prompt_headroom.value,
                           a.prompt_within_chunk ? " (the prompt part within the chunk size)" : "",
                           a.prompt_headroom.value,
                           a.decode_budget_is_batch ? "bs" : "the engine's own",
                           a.block_tokens.value > 1
                               ? fmt::format(", in blocks of {:g} tokens", a.block_tokens.value)
                               : std::string(),
                           a.mixed_steps ? "; mixed steps" : "",
                           a.prefill_workers_ahead || !s.formed_a_step_ahead
                               ? ""
                               : "; prefill workers form batches as each step starts",
                           a.prefix_cache && *a.prefix_cache != s.prefix_cache
                               ? (*a.prefix_cache ? "; prefix cache on" : "; prefix cache off")
                               : ""),
               a.source);
        if (a.kv_memory.known()) {
          choice("  their KV cache memory",
                 fmt::format("{:.0f}% (the engine's rule)", a.kv_memory.value * 100),
                 a.kv_memory.source);
        }
      }
    }
    for (const auto& r : e.expert_activations) {
      std::cout << fmt::format("  {:<28} {} activations on {}: {}\n      source: {}\n",
                               fmt::format("{} experts", format_id(r.weights)), format_id(r.act),
                               list(r.architectures), r.kernel, e.citation(r.source));
    }
    for (const auto& r : e.weight_activations) {
      std::cout << fmt::format(
          "  {:<28} {} activations on {} unless --act says otherwise: {}\n      source: {}\n",
          fmt::format("{} weights", format_id(r.weights)), format_id(r.act), list(r.architectures),
          r.kernel, e.citation(r.source));
    }
    for (const auto& [format, kernel] : e.gemm_kernels) {
      std::cout << fmt::format("  {:<28} {}\n", "GEMM " + format, kernel);
    }
    std::cout << fmt::format("  {:<28} {}\n", "attention", e.attention_kernels);
    if (const auto& cast = e.latent_cache_cast) {
      std::cout << fmt::format(
          "  {:<28} on {}: {}; the cast at {:.3g} of the bandwidth ({}{})\n      source: {}\n",
          "fp8 latent (MLA) cache", list(cast->architectures), cast->kernel,
          cast->bandwidth_efficiency.value, confidence_name(cast->bandwidth_efficiency.confidence),
          cast->bandwidth_efficiency.note.empty() ? "" : ": " + cast->bandwidth_efficiency.note,
          e.citation(cast->source));
    }
    std::cout << fmt::format("  {:<28} {}\n", "fusions", list(e.fusions));
    std::vector<std::string> unsupported;
    for (Format f : e.unsupported) unsupported.emplace_back(format_id(f));
    std::cout << fmt::format("  {:<28} {}\n", "cannot run", list(unsupported));
    if (!e.notes.empty()) std::cout << "\n" << e.notes << "\n";
    return;
  }
  if (json) {
    std::cout << engines_document().dump(2) << "\n";
    return;
  }
  Table t({"id", "name", "kind", "decode graphs", "launch decode", "launch prefill", "step cost",
           "GEMM tables"});
  for (const auto& e : engines.engines()) {
    const auto devices = devices_of(engines.gemm_tables(), e);
    t.add_row(
        {e.id, e.name, e.kind, e.decode_cuda_graphs ? "yes" : "no", micros(e.launch_decode_s),
         micros(e.launch_prefill_s),
         e.step_overhead_s.known() ? fmt::format("{:g} ms", e.step_overhead_s.value * 1e3) : "-",
         devices.empty() ? "-" : fmt::format("{} devices", devices.size())});
  }
  std::cout << t.text()
            << "\n'device': the device file's figure; `roofline engines show ID` gives every "
               "figure with its "
               "source; --engine ID on predict, generate, recommend, sweep and attention.\n";
}

void register_engines(CLI::App& app, Common& common) {
  auto* engines_cmd = app.add_subcommand(
      "engines", "Serving engines: list, or show ID with every figure and source");
  auto what = std::make_shared<std::string>();
  auto id = std::make_shared<std::string>();
  engines_cmd->add_option("what", *what, "show")->type_name("show");
  engines_cmd->add_option("id", *id, "Engine id")->type_name("ID");
  add_common(engines_cmd, &common, false);
  engines_cmd->callback([&common, what, id] {
    if (!what->empty() && *what != "show")
      throw InvalidArgument("engines: 'show ID' or nothing (the list), not '" +
                            clip_utf8(*what, 20) + "'");
    if (*what == "show" && id->empty()) throw InvalidArgument("engines show: give an engine id");
    engines_command(*id, common.output() == Output::kJson);
  });
}

}  // namespace roofline::cli
