// Typed calls to the roofline server. Field names are those of the CLI's --json
// output (see DESIGN.md); only the fields the app reads are typed here.

export interface Sourced { value: number | null; confidence: string; source: string }

/** A registry device as the server sends it: every figure with its source. */
interface DeviceDocument {
  id: string;
  name: string;
  vendor: string;
  architecture: string;
  bandwidth_Bps: number;
  peaks: Record<string, Sourced>;
  memory: { capacity_bytes: Sourced; type: string };
  efficiency: { bandwidth_fraction: Sourced; matmul_fraction: Record<string, Sourced> };
}

/** The figures the app draws, flattened; unknown figures (null) are left out. */
export interface Device {
  id: string;
  name: string;
  architecture: string;
  bandwidth_Bps: number;
  peaks: Record<string, number>;
  peakSources: Record<string, string>;
  capacity_bytes: number;
  memory_type: string;
  bandwidth_fraction: number;
  matmul_fraction: Record<string, number>;
}

function known(figures: Record<string, Sourced>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, f] of Object.entries(figures)) if (f.value !== null) out[k] = f.value;
  return out;
}

function flatten(d: DeviceDocument): Device {
  return {
    id: d.id,
    name: d.name,
    architecture: d.architecture,
    bandwidth_Bps: d.bandwidth_Bps,
    peaks: known(d.peaks),
    peakSources: Object.fromEntries(Object.entries(d.peaks).map(([k, f]) => [k, `${f.confidence}: ${f.source}`])),
    capacity_bytes: d.memory.capacity_bytes.value ?? NaN,
    memory_type: d.memory.type,
    bandwidth_fraction: d.efficiency.bandwidth_fraction.value ?? 1,
    matmul_fraction: known(d.efficiency.matmul_fraction),
  };
}

export interface ModelPreset { id: string; name: string; params: number; model_type: string }

export interface Strategy { name: string; description: string; weights: string; act: string; kv: string }

export interface Op {
  name: string;
  kind: string;
  count: number;
  flops: number;
  bytes: number;
  weight_bytes: number;
  kv_cache_bytes: number;
  ai: number;
  time_s: number;
  compute_time_s: number;
  memory_time_s: number;
  bound: string;
  compute_format: string;
  weight_only: boolean;
  fused: boolean;
  efficiency?: number | null;          // the fraction of the roofline its kernel reaches (null: no table)
  efficiency_source?: string | null;   // where that fraction comes from (measured-table, device, ...)
}

/** The engine a prediction ran with, and the measured tables that priced its ops. */
export interface PredictionEngine {
  id: string;
  cuda_graphs: boolean;
  step_overhead_s: number;
  /** Decode with an fp8 latent cache the engine's kernel cannot read: the pool's cast to bf16. */
  latent_cache_cast_s: number;
  /** A step with no graph at all: the host's time to issue its kernels, and what of it the GPU waits for. */
  past_captured_graphs?: boolean;
  host_dispatch_s: number;
  host_wait_s: number;
  gemm_table?: string | null; gemm_table_source?: string | null;
  attention_table?: string | null; attention_table_source?: string | null;
  moe_table?: string | null; moe_table_source?: string | null;
  build?: string;
}

/** How the engine's predictions compared with published measurements like this one (`roofline validate`):
 * on this device, else its architecture's, else its vendor's; positive optimism: predicted faster. */
export interface TrackRecord {
  engine: string; kind: 'prompt' | 'generation'; scope: 'device' | 'architecture' | 'vendor';
  hardware: string; vendor: string; architecture: string; cases: number; devices: string[]; metrics: string[];
  median_abs_error_pct: number; p90_abs_error_pct: number; max_abs_error_pct: number; worst_case: string;
  median_optimism_pct: number; optimistic_cases: number; pessimistic_cases: number;
  device_cases: number; architecture_cases: number;
}

export interface Prediction {
  time_s: number;
  tokens_per_s: number;
  flops: number;
  bytes: number;
  bound: string;
  compute_time_s: number;
  memory_time_s: number;
  overhead_s: number;
  memory: { weights_bytes: number; kv_cache_bytes: number; total_bytes: number; capacity_bytes: number;
            /** The serving engine's room for the KV cache (null: no engine's rule); fits follows it. */
            kv_room_bytes: number | null; fits: boolean };
  capacity: {
    max_batch: number; max_context: number;
    /** The serving engine's rule that sized the KV cache (null: the reference, all the memory left). */
    kv_memory: { engine: string; share: number; of: 'total' | 'free' } | null;
  };
  scenario: { model: string; hardware: string; phase: string; batch: number; seq_len: number; cached: number;
              weights: string; act: string; kv: string; attention: string };
  notes: string[];
  /** The engine's track record for this phase (empty for the reference engine or a device it was never measured near). */
  track_record: TrackRecord[];
  ops?: Op[];
  engine?: PredictionEngine;
}

export interface Generation {
  ttft_s: number;
  /** With cached tokens: the TTFT were they computed again with the prompt (no prefix cache). */
  ttft_recomputed_s: number | null;
  tpot_s: number;
  e2e_s: number;
  output_tokens_per_s: number;
  /** The engine's track records for the prompt and the generation, and their notes (empty for the reference). */
  track_record: TrackRecord[];
  notes: string[];
}

export interface GemmAnalysis {
  m: number; n: number; k: number;
  weights: string; act: string; compute_format: string; weight_only: boolean;
  time_s: number; compute_time_s: number; memory_time_s: number; overhead_s: number;
  flops: number; bytes: number; ai: number; ridge_ai: number; bound: string;
  attained_flops_per_s: number; wave_efficiency: number; notes: string[];
  measurement: null | { available: boolean; reason?: string; gpu?: string; time_s?: number;
    flops_per_s?: number; error_pct?: number; verified?: boolean; note?: string };
}

export interface Candidate {
  strategy: string;
  time_s: number;
  predicted_speedup: number;
  memory_bytes: number;
  memory_saving: number;
  quality_loss_pct: number;
  quality_quantified: boolean;
  feasible: boolean;
  rejected_because: string[];
  quality_basis: string[];
  notes: string[];
}

export interface Recommendation extends Candidate {
  any_feasible: boolean;
  baseline: string;
  baseline_time_s: number;
  rationale: string[];
  alternatives: Candidate[];
}

export interface SweepRow {
  model: string; hardware: string; phase: string; strategy: string;
  batch: number; seq_len: number; time_s: number; tokens_per_s: number;
  memory_total_bytes: number; kv_cache_bytes: number; weight_bytes: number; fits: boolean; bound: string;
  error?: string;  // the row's combination cannot run (e.g. a format the device lacks)
}

/** Mean and percentiles over the simulated requests, in seconds. */
export interface Spread { mean: number; p50: number; p90: number; p99: number }

/** Whose engine settings a serving prediction runs with. */
export type Recipe = 'engine' | 'aiconfigurator' | 'trtllm-bench';

/**
 * One serving prediction (POST /api/serving): a discrete-event simulation of `concurrency` clients
 * in a closed loop, `rounds` requests each, against the engine's scheduler; latencies are means
 * and percentiles over the simulated requests. Aggregated ("agg"): one instance of TP `tp` serves
 * prompts and decodes. Disaggregated ("disagg"): prefill workers hand each prompt's KV cache to
 * decode workers, and the prefill_* / decode_* fields and kv_transfer_s are present.
 */
export interface Serving {
  model: string; hardware: string; engine: string;
  isl: number; osl: number; concurrency: number;
  isl_min: number; osl_min: number;      // random lengths: each uniform from *_min to isl / osl
  mode: 'agg' | 'disagg';
  tp: number;                            // the aggregated instance's (not used when disaggregated)
  pp: number;                            // pipeline stages of each instance
  attention_dp: number;                  // attention data-parallel groups within tp (disaggregated: decode_tp)
  ep: number;                            // expert-parallel groups within tp (MoE; disaggregated: decode_tp)
  dp: number;                            // data-parallel replicas (aggregated)
  draft_tokens: number; acceptance: number;  // speculative decoding (0 draft tokens: plain decoding)
  tokens_per_step: number;               // tokens a decode step yields per request
  shared_prefix: number;                 // prompt tokens every request takes from the prefix cache
  prompt_pool: number;                   // distinct prompts each request's is drawn from (0: every prompt unique)
  prefix_hit_rate: number;               // of the requests, those whose prompt the prefix cache held
  // TensorRT-LLM's batch waiting as set (null: not set) and the steps that held prompts back.
  batch_wait: { iters: number; ratio: number; waited_steps: number } | null;
  // TensorRT-LLM's attention-DP balance as it ran (null: off) and the steps that held prompts back.
  adp_balance: { timeout_iters: number; batching_wait_iters: number; held_steps: number } | null;
  scheduler_recv_interval: number;       // SGLang's receive interval as set (0: every step)
  recv_wait_s: number;                   // mean wait from arrival to the step that takes a request in
  weights: string; act: string; kv: string;
  ttft_s: number; tpot_s: number; e2e_s: number;  // the means of ttft, tpot, e2e
  ttft: Spread; tpot: Spread; e2e: Spread;
  /** Every gap between two streamed tokens, one a step (vllm bench serve's ITL). */
  itl: Spread;
  output_tokens_per_s: number;           // all GPUs together
  output_tokens_per_s_per_gpu: number;
  output_tokens_per_s_per_user: number;  // 1 / TPOT
  gpus: number;                          // both pools when disaggregated
  max_concurrency_that_fits: number;     // requests whose KV cache fits at once (the decode pool's)
  kv_cache_tokens: number;               // tokens one instance's KV cache holds (the decode pool's)
  kv_cache_bytes_per_gpu: number;        // bytes of KV cache a GPU
  // The engine's rule (set: the share the request gave): a share of the memory, or of what the
  // weights leave; the activations it subtracted a GPU, and its profiling pass's sampler where
  // that set them (rows, bytes a logit of the whole vocabulary).
  kv_memory: {
    share: number; of: 'total' | 'free'; set: boolean; activation_bytes_per_gpu: number;
    profile_sampler: { rows: number; bytes_per_logit: number } | null;
  };
  running: number;                       // the mean decode batch: requests decoding in a step
  queue_wait_s: number;                  // mean wait from arrival to admission
  prompt_queue_wait_s: number;           // mean wait from admission to the first prompt chunk
  plain_step_s: number; prompt_step_s: number;  // the decode step of `running`, alone and carrying one prompt
  prompts_per_step: number;              // prompts started per step
  prompt_share: number;                  // the share of the steps' time prompt tokens add
  requests: number; rounds: number; steps: number;  // simulated: requests (clients x rounds) over steps
  preemptions: number;                   // requests evicted when the KV cache ran out, then recomputed
  token_budget: number; max_running: number;  // the scheduler's, per instance: tokens a step, requests running
                                         // (disaggregated: a prefill worker's)
  kv_block_tokens: number;  // the KV cache's paging: tokens a block (1: token-granular)
  formed_a_step_ahead: boolean;          // batches formed while the step before runs (overlap scheduling)
  decode_formed_a_step_ahead: boolean;   // the same on the decode workers (disaggregated)
  engine_version: string;                // as asked ("" the current release)
  decode_token_budget: number; decode_max_running: number;  // disaggregated: a decode worker's (0 aggregated)
  recipe: Recipe;                        // the engine's defaults, AIConfigurator's or trtllm-bench's limits
  prefill_workers?: number; prefill_tp?: number;  // disaggregated: workers of each pool, each of *_tp GPUs
  prefill_attention_dp?: number; prefill_ep?: number;  // disaggregated: within prefill_tp
  decode_workers?: number; decode_tp?: number;
  kv_transfer_s?: number;                // disaggregated: one prompt's KV cache, prefill to decode worker
  limited_by: string;                    // kv_capacity, prefill, memory_bandwidth, compute
  method: string;
  notes: string[];                       // the track records' notes last
  track_record: TrackRecord[];           // the prompt's and the generation's, where the engine has them
}

/**
 * One deployment the search evaluated (POST /api/search): an engine, a weight format, a layout
 * repeated as replicas over the GPUs, and the concurrency each replica serves. The layout is an
 * aggregated instance of `tp` GPUs ("agg"), or a disaggregated unit of prefill and decode workers
 * ("disagg": the prefill_* / decode_* fields are present, and `tp` is the decode TP). Latencies are
 * one replica's; tokens/s in all and per GPU count every replica.
 */
export interface Deployment {
  name: string;                          // the server's: "vllm fp8 TP2 x4", "vllm 0.11.0 fp8 2xTP2+1xTP4 x1"
  engine: string; weights: string;
  engine_version: string | null;         // the release asked for; null: the current one
  mode: 'agg' | 'disagg';
  tp: number; replicas: number; concurrency_per_replica: number;
  attention_dp: number; ep: number;      // MoE: within tp (disaggregated: the decode workers')
  prefill_workers?: number; prefill_tp?: number;  // disaggregated: one replica's workers of each pool
  prefill_attention_dp?: number; prefill_ep?: number;  // disaggregated: within prefill_tp
  decode_workers?: number; decode_tp?: number;
  ttft_s: number; tpot_s: number;
  output_tokens_per_s: number;           // all replicas together
  output_tokens_per_s_per_gpu: number;
  output_tokens_per_s_per_user: number;  // 1 / TPOT
  limited_by: string;                    // as Serving's
  prefix_hit_rate: number;               // as Serving's (0 without a prompt pool)
  meets_targets: boolean;
  misses: string;                        // why it misses the targets; "" when it meets them
}

/** The deployment search's document: the Pareto front, the best meeting the targets, the runners-up. */
export interface SearchResult {
  model: string; hardware: string; gpus: number; isl: number; osl: number;
  ttft_max_s: number | null; tpot_max_s: number | null;
  engine_versions?: Record<string, string>;  // the releases asked for, by engine
  evaluated: number;                     // configurations predicted
  refused: number;                       // configurations that cannot run (counted by reason in refusals)
  // Concurrencies not predicted: past twice what a layout runs at once, where only the queue grows.
  // Absent from documents that do not count them.
  skipped?: number;
  front: Deployment[];                   // by tokens/s per user, ascending
  best: Deployment | null;               // most tokens/s per GPU meeting the targets; null when none does
  runners_up: Array<Deployment & { why: string }>;  // why each lost to the best (or what it misses)
  refusals: Array<{ reason: string; n: number }>;
  method: string;
  /** The ranked engines' track records on published measurements (the best's engine first), and their notes. */
  track_record: TrackRecord[];
  notes: string[];
}

/** A published case as GET /api/validation reports it: its measurement and the prediction. */
export interface ValidationCase {
  id: string; engine: string; framework: string; hardware: string; model: string; weights: string;
  metric: string; batch: number; prompt: number; gen: number; tp: number; ep: number;
  measured: number; predicted: number; error_pct: number; source: string;
  source_key?: string;                   // its key in published.json's sources (a "source=" group)
  pp?: number;                           // pipeline stages (absent: 1)
}
/** |error| statistics of one group of cases ("all", "engine=vllm", "metric=ttft_s"). */
export interface ErrorGroup {
  group: string; rows: number; median_abs_error_pct: number; p90_abs_error_pct: number;
  max_abs_error_pct: number; median_signed_error_pct: number;
}
/** One acceptance target as the checks report it: the measured value against its limit (a percentage, or a count). */
export interface TargetCheck { target: string; value: number; limit: number; holds: boolean; misses: string }
export interface Validation {
  cases: ValidationCase[]; groups: ErrorGroup[]; targets: TargetCheck[]; version: string;
  /** Each case as speed (positive: predicted faster; a duration's error as measured / predicted - 1): the median, and the cases above 0. */
  median_optimism_pct: number; optimistic_cases: number; evaluated: number;
}
/** A measured serving run as GET /api/validation/serving reports it: predicted, or refused with why. */
export interface ServingRun {
  id: string; backend: string; engine?: string; model?: string; model_path: string; hardware?: string; system: string;
  mode: string; isl: number; osl: number; concurrency: number; tp: number; formats?: string;
  measured_ttft_ms: number; measured_tpot_ms: number;
  predicted_ttft_ms?: number; predicted_tpot_ms?: number; ttft_error_pct?: number; tpot_error_pct?: number;
  refused?: string;
}
export interface ServingValidation {
  rows: ServingRun[]; predicted: number; refused: number; tpot_groups: ErrorGroup[]; ttft_groups: ErrorGroup[];
  targets: TargetCheck[]; refusals: Array<{ reason: string; rows: number }>; version: string;
}

/** A serving engine as GET /api/engines lists it; only what the app reads. */
export interface Engine { id: string; name: string; kind: string; versions: string; unsupported_formats: string[] }

export interface NvmlGpu {
  index: number; name: string; utilization_pct: number; memory_utilization_pct: number;
  memory_used_bytes: number; memory_total_bytes: number; power_w: number;
  sm_clock_mhz: number; memory_clock_mhz: number; temperature_c: number;
}
export interface NvmlStatus { available: boolean; message?: string; gpus: NvmlGpu[] }

/** An error the server explained: {"error": {"code", "message"}} with its HTTP status. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

async function parse<T>(res: Response): Promise<T> {
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(res.status, 'bad_response', `the server answered ${res.status} with something that is not JSON`);
  }
  if (!res.ok) {
    const e = (body as { error?: { code?: string; message?: string } }).error;
    throw new ApiError(res.status, e?.code ?? 'error', e?.message ?? `HTTP ${res.status}`);
  }
  return body as T;
}

export async function get<T>(path: string): Promise<T> {
  return parse<T>(await fetch(path));
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  return parse<T>(await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  }));
}

export const api = {
  hardware: () => get<{ devices: DeviceDocument[] }>('/api/hardware').then((r) => r.devices.map(flatten)),
  models: () => get<{ models: ModelPreset[] }>('/api/models').then((r) => r.models),
  strategies: () => get<{ strategies: Strategy[] }>('/api/strategies').then((r) => r.strategies),
  predict: (req: object) => post<Prediction>('/api/predict', req),
  recommend: (req: object) => post<Recommendation>('/api/recommend', req),
  generate: (req: object) => post<Generation>('/api/generate', req),
  engines: () => get<{ engines: Engine[] }>('/api/engines').then((r) => r.engines),
  serving: (req: object) => post<Serving>('/api/serving', req),
  validation: () => get<Validation>('/api/validation'),
  servingValidation: () => get<ServingValidation>('/api/validation/serving'),
  search: (req: object) => post<SearchResult>('/api/search', req),
  analyze: (req: object) => post<GemmAnalysis>('/api/analyze', req),
  sweep: (req: object) => post<{ count: number; rows: SweepRow[] }>('/api/sweep', req).then((r) => r.rows),
  nvml: () => get<NvmlStatus>('/api/nvml/status'),
};
