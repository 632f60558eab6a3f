// `roofline serving`: TTFT and TPOT of C clients against one engine instance.
#include "roofline/serving.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "commands.h"
#include "common.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

struct ServingArgs {
  ScenarioArgs sc;
  std::string isl = "1024", osl = "256", concurrency = "1";
  std::string isl_min = "0", osl_min = "0", range_ratio;  // random lengths
  std::string mode = "agg";
  std::string prefill_workers = "1", prefill_tp = "1", decode_workers = "1", decode_tp = "1";
  std::string rounds = std::to_string(kDefaultRounds), token_budget = "0", max_running = "0";
  std::string graph_capture_size = "0";
  std::string batch_wait_iters = "0", batch_wait_ratio = "0", recv_interval = "0";
  bool adp_balance = false;
  std::string adp_timeout_iters = "50", adp_batching_wait_iters = "10";  // TensorRT-LLM's
  std::string kv_memory = "0";
  std::string requests;  // empty: rounds x concurrency
  std::string dp = "1";
  std::string prefill_attention_dp = "1", prefill_ep = "1";
  std::string shared_prefix = "0";
  std::string prompt_pool = "0";
  std::string recipe = "engine", prefill_batch = "0", decode_batch = "0";
  std::string engine_version;
  std::string overlap = "engine", chunked_prefill = "engine";
};

// " attention DP 8 EP 8", or "" for plain tensor parallelism.
std::string parallel_text(std::int64_t attention_dp, std::int64_t ep) {
  return (attention_dp > 1 ? fmt::format(", attention DP {}", attention_dp) : std::string()) +
         (ep > 1 ? fmt::format(", EP {}", ep) : std::string());
}

void cmd_serving(const Common& c, const ServingArgs& a) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.sc.hardware);
  const ModelSpec m = load_model(a.sc.model);
  ServingScenario s;
  s.isl = parse_count("--isl", a.isl, 1, kMaxSeqLen);
  s.osl = parse_count("--osl", a.osl, 1, kMaxSeqLen);
  s.concurrency = parse_count("--concurrency", a.concurrency, 1, kMaxBatch);
  if (!a.range_ratio.empty()) {
    set_range_ratio(s, parse_positive("--range-ratio", a.range_ratio));
  } else {
    s.isl_min = parse_count("--isl-min", a.isl_min, 0, s.isl);
    s.osl_min = parse_count("--osl-min", a.osl_min, 0, s.osl);
  }
  s.rounds = parse_count("--rounds", a.rounds, 1, 1000);
  if (!a.requests.empty()) {
    // The benchmark's request count: every client sends its share (rounded up).
    const std::int64_t n = parse_count("--requests", a.requests, 1, kMaxSimulatedRequests);
    s.rounds = std::clamp<std::int64_t>((n + s.concurrency - 1) / s.concurrency, 1, 1000);
  }
  s.shared_prefix = parse_count("--shared-prefix", a.shared_prefix, 0, kMaxSeqLen);
  s.prompt_pool = parse_count("--prompt-pool", a.prompt_pool, 0, kMaxPromptPool);
  s.token_budget = parse_count("--token-budget", a.token_budget, 0, kMaxBatch);
  s.max_running = parse_count("--max-running", a.max_running, 0, kMaxBatch);
  s.graph_capture_size = parse_count("--graph-capture-size", a.graph_capture_size, 0, kMaxBatch);
  s.batch_wait_iters = parse_count("--batch-wait-iters", a.batch_wait_iters, 0, kMaxBatchWaitIters);
  s.batch_wait_ratio = parse_positive("--batch-wait-ratio", a.batch_wait_ratio);
  s.scheduler_recv_interval =
      parse_count("--scheduler-recv-interval", a.recv_interval, 0, kMaxRecvInterval);
  s.adp_balance = a.adp_balance;
  s.adp_timeout_iters =
      parse_count("--adp-timeout-iters", a.adp_timeout_iters, 0, kMaxBatchWaitIters);
  s.adp_batching_wait_iters =
      parse_count("--adp-batching-wait-iters", a.adp_batching_wait_iters, 0, kMaxBatchWaitIters);
  s.kv_memory_share = parse_positive("--kv-memory-share", a.kv_memory);
  s.recipe = parse_serving_recipe(a.recipe);
  s.engine_version = a.engine_version;
  s.overlap = parse_switch("--overlap-scheduling", a.overlap);
  s.chunked_prefill = parse_switch("--chunked-prefill", a.chunked_prefill);
  s.prefill_batch = parse_count("--prefill-batch", a.prefill_batch, 0, kMaxBatch);
  s.decode_batch = parse_count("--decode-batch", a.decode_batch, 0, kMaxBatch);
  s.mode = parse_serving_mode(a.mode);
  s.replicas = parse_count("--dp", a.dp, 1, 1024);
  if (s.mode == ServingMode::kDisaggregated) {
    s.prefill_workers = parse_count("--prefill-workers", a.prefill_workers, 1, 1024);
    s.prefill_tp = parse_count("--prefill-tp", a.prefill_tp, 1, kMaxParallel);
    s.decode_workers = parse_count("--decode-workers", a.decode_workers, 1, 1024);
    s.decode_tp = parse_count("--decode-tp", a.decode_tp, 1, kMaxParallel);
    s.prefill_attention_dp =
        parse_count("--prefill-attention-dp", a.prefill_attention_dp, 1, kMaxParallel);
    s.prefill_ep = parse_count("--prefill-ep", a.prefill_ep, 1, kMaxParallel);
  } else if (a.prefill_attention_dp != "1" || a.prefill_ep != "1") {
    throw InvalidArgument(
        "--prefill-attention-dp and --prefill-ep set the prefill workers of --mode disagg");
  }
  if (a.sc.ideal) throw InvalidArgument("serving: engines' costs have no ideal mode");
  ScenarioArgs step = a.sc;
  // Disaggregated: the step is a decode worker's (its attention DP and EP divide its TP).
  if (s.mode == ServingMode::kDisaggregated) step.tp = std::to_string(s.decode_tp);
  s.step = make_scenario(step, m, &d);
  const ModelOptions o = make_options(a.sc, &d);
  const ServingResult r = predict_serving(m, d, s, o);
  if (c.output() == Output::kJson) {
    print_json(serving_document(m, d, s, r, o, reg));
    return;
  }
  const std::string layout =
      s.mode == ServingMode::kAggregated
          ? fmt::format("TP {}{}{}", s.step.tp, parallel_text(s.step.attention_dp, s.step.ep),
                        s.replicas > 1 ? fmt::format(", {} replicas", s.replicas) : "")
          : fmt::format("disaggregated: {} prefill x TP {}{}, {} decode x TP {}{}",
                        s.prefill_workers, s.prefill_tp,
                        parallel_text(s.prefill_attention_dp, s.prefill_ep), s.decode_workers,
                        s.decode_tp, parallel_text(s.step.attention_dp, s.step.ep));
  std::cout << fmt::format(
      "{} on {} ({}), {} engine: {} clients, {} prompt / {} output tokens, {}\n\n", m.name, d.name,
      d.id, o.engine ? o.engine->id : std::string("roofline"), s.concurrency,
      length_range(s.isl_min, s.isl), length_range(s.osl_min, s.osl), layout);
  const auto spread = [](const Spread& x) {
    return fmt::format("{} (p50 {}, p90 {}, p99 {})", human_time(x.mean), human_time(x.p50),
                       human_time(x.p90), human_time(x.p99));
  };
  Table t({"quantity", "value"});
  t.add_row({"TTFT", spread(r.ttft)});
  t.add_row({"TPOT", spread(r.tpot)});
  t.add_row({"ITL (every gap between tokens)", spread(r.itl)});
  t.add_row({"end to end", spread(r.e2e)});
  t.add_row(
      {"output tokens/s", fmt::format("{:.4g} ({:.4g} per GPU, {} GPUs)", r.output_tokens_per_s,
                                      r.output_tokens_per_s_per_gpu, r.gpus)});
  t.add_row({"tokens/s per user", fmt::format("{:.4g}", r.output_tokens_per_s_per_user)});
  t.add_row({"running / fit",
             fmt::format("{} decoding at once on average; KV cache fits {} whole requests",
                         r.running, r.max_concurrency_that_fits)});
  t.add_row({"KV cache", fmt::format("{} tokens an instance, {} a GPU ({})", r.kv_cache_tokens,
                                     human_bytes(r.kv_cache_bytes_per_gpu),
                                     kv_memory_text(r.kv_memory_share, r.kv_memory_of_free) +
                                         (r.kv_memory_set ? ", as set" : ""))});
  t.add_row({"waits", human_time(r.queue_wait_s) + " to be admitted, " +
                          human_time(r.prompt_queue_wait_s) + " more to the first chunk"});
  if (r.batch_wait_iters > 0) {
    t.add_row({"batch waiting",
               fmt::format("{} of {} steps held their prompts back (at most {} in a row)",
                           r.waited_steps, r.steps, r.batch_wait_iters)});
  }
  if (r.adp_balance) {
    t.add_row({"attention-DP balance",
               fmt::format("{} of {} steps held their prompts back for every rank to have one "
                           "(timeout {} steps, batching wait {})",
                           r.balance_held_steps, r.steps, r.adp_timeout_iters,
                           r.adp_batching_wait_iters)});
  }
  if (r.scheduler_recv_interval > 1) {
    t.add_row({"receive interval",
               fmt::format("every {} decode steps: {} on average from arrival to intake",
                           r.scheduler_recv_interval, human_time(r.recv_wait_s))});
  }
  t.add_row({"step: plain / with a prompt",
             human_time(r.plain_step_s) + " / " + human_time(r.prompt_step_s)});
  t.add_row({"limited by", r.limited_by});
  std::cout << t.text();
  print_notes(r.notes);
  print_notes(track_record_notes(o.engine, d, {MetricKind::kPrompt, MetricKind::kGeneration}));
}

}  // namespace

void register_serving(CLI::App& app, Common& common) {
  auto* cmd = app.add_subcommand(
      "serving", "TTFT and TPOT of C clients in a closed loop against one engine instance");
  auto a = std::make_shared<ServingArgs>();
  add_scenario_options(cmd, &a->sc, false);
  cmd->add_option("--isl", a->isl, "Prompt tokens per request")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--osl", a->osl, "Output tokens per request")
      ->capture_default_str()
      ->type_name("INT");
  auto* isl_min = cmd->add_option("--isl-min", a->isl_min,
                                  "Random lengths: each prompt uniform from this to --isl (0: "
                                  "every prompt --isl)")
                      ->capture_default_str()
                      ->type_name("INT");
  auto* osl_min = cmd->add_option("--osl-min", a->osl_min,
                                  "Random lengths: each output uniform from this to --osl (0: "
                                  "every output --osl)")
                      ->capture_default_str()
                      ->type_name("INT");
  cmd->add_option("--range-ratio", a->range_ratio,
                  "Random lengths as InferenceMAX and SGLang's bench_serving draw them "
                  "(--random-range-ratio R): each uniform from floor(R x length) to the length")
      ->type_name("R")
      ->excludes(isl_min)
      ->excludes(osl_min);
  cmd->add_option("--concurrency", a->concurrency, "Clients, each with one request in flight")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--mode", a->mode, "agg (one pool) or disagg (prefill and decode workers)")
      ->capture_default_str();
  cmd->add_option("--dp", a->dp,
                  "Aggregated: data-parallel replicas, independent instances the clients are "
                  "spread over")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--prefill-workers", a->prefill_workers, "Disaggregated: prefill workers")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--prefill-tp", a->prefill_tp, "Disaggregated: GPUs per prefill worker")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--prefill-attention-dp", a->prefill_attention_dp,
                  "Disaggregated: attention data-parallel groups within --prefill-tp (the decode "
                  "workers take --attention-dp within --decode-tp)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--prefill-ep", a->prefill_ep,
                  "Disaggregated: expert-parallel groups within --prefill-tp (the decode workers "
                  "take --ep within --decode-tp)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--decode-workers", a->decode_workers, "Disaggregated: decode workers")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--decode-tp", a->decode_tp, "Disaggregated: GPUs per decode worker")
      ->capture_default_str()
      ->type_name("INT");
  auto* rounds =
      cmd->add_option("--rounds", a->rounds, "Requests each client sends (the benchmark's length)")
          ->capture_default_str()
          ->type_name("INT");
  cmd->add_option("--requests", a->requests,
                  "The benchmark's request count instead of --rounds (each client sends its "
                  "share, rounded up)")
      ->type_name("INT")
      ->excludes(rounds);
  cmd->add_option("--shared-prefix", a->shared_prefix,
                  "Tokens at the start of every prompt shared and kept by the prefix cache (a "
                  "system prompt): held once an instance, never computed again")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--prompt-pool", a->prompt_pool,
                  "Distinct prompts the benchmark draws each request's from, with replacement "
                  "(aiperf's synthetic dataset: 100); a prompt the engine's prefix cache still "
                  "holds skips its prefill. 0: every prompt unique (aggregated serving only)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--token-budget", a->token_budget,
                  "Tokens a step may carry (0: the engine's default for the device)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--max-running", a->max_running,
                  "Requests an instance runs at once (0: the engine's default)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--graph-capture-size", a->graph_capture_size,
                  "The largest step (tokens) the deployment captures CUDA graphs for (vLLM's "
                  "--max-cudagraph-capture-size); past it a step runs with no graph (0: the "
                  "engine's default, 512 for vLLM)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--batch-wait-iters", a->batch_wait_iters,
                  "TensorRT-LLM's batch waiting (batch_wait_timeout_iters): a prompt beside "
                  "decode tokens may be held back up to this many steps for a fuller step (0: "
                  "off; aggregated, without attention DP)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--batch-wait-ratio", a->batch_wait_ratio,
                  "With --batch-wait-iters (batch_wait_max_tokens_ratio): a held step takes its "
                  "prompts once its tokens reach this share of the token budget")
      ->capture_default_str()
      ->type_name("R");
  cmd->add_flag("--adp-balance", a->adp_balance,
                "TensorRT-LLM's attention-DP balance (attention_dp_config enable_balance): "
                "prompts wait until every attention data-parallel rank has one, at most "
                "--adp-timeout-iters steps (aggregated, with --attention-dp above 1)");
  cmd->add_option("--adp-timeout-iters", a->adp_timeout_iters,
                  "With --adp-balance (timeout_iters): the count of steps without a prompt on "
                  "every rank that releases the held prompts")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--adp-batching-wait-iters", a->adp_batching_wait_iters,
                  "With --adp-balance (batching_wait_iters): steps prompts on every rank are "
                  "held more while every rank decodes")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--scheduler-recv-interval", a->recv_interval,
                  "SGLang's receive interval: new requests are taken in every N decode steps (at "
                  "once after a prompt step or when idle; 0 or 1: every step; aggregated, "
                  "without attention DP)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--kv-memory-share", a->kv_memory,
                  "The KV cache's memory share under the engine's rule: of the whole memory "
                  "(vLLM's --gpu-memory-utilization, SGLang's --mem-fraction-static) or of what "
                  "the weights leave (TensorRT-LLM's free_gpu_memory_fraction); 0: the engine's")
      ->capture_default_str()
      ->type_name("R");
  cmd->add_option("--engine-version", a->engine_version,
                  "The engine's release (e.g. 0.12.0): behaviour its profile dates by release "
                  "follows it (vLLM's async scheduling from 0.14.0); default the current one")
      ->type_name("TEXT");
  cmd->add_option("--overlap-scheduling", a->overlap,
                  "Whether the next step's batch is formed while one runs (vLLM's "
                  "--async-scheduling, SGLang's overlap schedule, TensorRT-LLM's overlap "
                  "scheduler): engine (its rule for the release), on or off")
      ->capture_default_str()
      ->type_name("MODE");
  cmd->add_option("--chunked-prefill", a->chunked_prefill,
                  "Whether prompts split across steps to fill the token budget (TensorRT-LLM's "
                  "--enable_chunked_prefill, vLLM's --no-enable-chunked-prefill, SGLang's "
                  "--chunked-prefill-size -1): engine (its default), on or off")
      ->capture_default_str()
      ->type_name("MODE");
  cmd->add_option("--recipe", a->recipe,
                  "Engine settings: engine (its defaults), aiconfigurator (the limits NVIDIA "
                  "AIConfigurator's generator sets for benchmark deployments: a worker runs its "
                  "batch size of requests, budgets of batch + isl + 1500 tokens, graphs up to the "
                  "batch, SGLang mixed chunks) or trtllm-bench (TensorRT-LLM's `trtllm-bench "
                  "throughput`: max_batch_size and max_num_tokens from its heuristic over the "
                  "memory the checkpoint leaves, whole prompts, its 0.90 KV share unless "
                  "--kv-memory-share; give --requests N --concurrency N for its burst)")
      ->capture_default_str()
      ->type_name("NAME");
  cmd->add_option("--prefill-batch", a->prefill_batch,
                  "With --recipe aiconfigurator, disaggregated: a prefill worker's batch size "
                  "(0: 1)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option(
         "--decode-batch", a->decode_batch,
         "With --recipe aiconfigurator: a decode worker's (or aggregated instance's) batch "
         "size (0: its clients)")
      ->capture_default_str()
      ->type_name("INT");
  add_common(cmd, &common, false);
  cmd->callback([&common, a, cmd] {
    if (cmd->get_option("--batch")->count() > 0)
      throw InvalidArgument("serving: the batch follows from --concurrency (no --batch)");
    cmd_serving(common, *a);
  });
}

}  // namespace roofline::cli
