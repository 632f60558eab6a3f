// The Serving page: one deployment (model, device, engine, aggregated at a TP or disaggregated
// into prefill and decode workers, formats, prompt and output lengths) at a list of
// concurrencies, each a POST /api/serving (a discrete-event simulation of the benchmark); a
// table, the throughput / interactivity curve, latency (mean and p90) against concurrency, and
// what limited the chosen point.
import { loadServingValidation, servingAccuracyNote } from './accuracy';
import { api, type Device, type Engine, type ModelPreset, type Serving, type Spread } from './api';
import { clearChart, drawServingCurve, drawServingLatency } from './charts';
import { $, fillSelect, message, setStatus } from './dom';
import { counted, esc, pct, seconds, si } from './units';

/**
 * The default case: the server's OpenAPI example of POST /api/serving, over concurrencies 1 to 1024
 * (its KV cache holds 868 requests, so the last point shows clients waiting for a slot).
 */
const DEFAULTS = {
  model: 'llama-3.1-70b', hardware: 'h200', engine: 'vllm', tp: 2, weights: 'fp8', act: 'fp8', kv: '',
  isl: 1024, osl: 256, concurrency: '1..1024',
  attentionDp: 1, ep: 1, replicas: 1, pp: 1,
  mode: 'agg', prefillWorkers: 1, prefillTp: 2, decodeWorkers: 1, decodeTp: 2,
  prefillAttentionDp: 1, prefillEp: 1, decodeAttentionDp: 1, decodeEp: 1,
  rounds: 10, tokenBudget: 0, maxRunning: 0,  // the server's kDefaultRounds; 0: the engine's scheduler
  graphCaptureSize: 0,                        // the engine's captured graphs
  draftTokens: 0, acceptance: 0.85,           // plain decoding; the server's kDefaultDraftAcceptance
  sharedPrefix: 0,                            // no prefix cache hits
  promptPool: 0,                              // every prompt unique
  batchWaitIters: 0, batchWaitRatio: 0,       // TensorRT-LLM's batch waiting, off
  adpTimeout: 0, adpBatching: 10,             // TensorRT-LLM's attention-DP balance, off (its batching default)
  recvInterval: 0,                            // SGLang's receive interval: every step
  kvMemory: 0,                                // the engine's KV memory share
  rangeRatio: 1,                              // fixed lengths (InferenceMAX runs 0.8)
};
const WEIGHTS = ['fp16', 'bf16', 'fp8', 'int8', 'int4', 'nvfp4', 'mxfp4', 'q8_0', 'q4_k_m', 'q4_0'];
const ACTS = ['bf16', 'fp16', 'fp8', 'int8', 'nvfp4'];
const KVS = ['bf16', 'fp16', 'fp8', 'int8', 'nvfp4'];
/** The server's kMaxPromptPool. */
const MAX_PROMPT_POOL = 1 << 20;
/** Most points one run asks for, and requests in flight at once. */
const MAX_POINTS = 64;
const IN_FLIGHT = 4;
const MAX_CONCURRENCY = 1 << 20;  // the server's kMaxBatch, also the most for token budget and max running
const MAX_TP = 4096;              // the server's kMaxParallel
const MAX_WORKERS = 1024;         // prefill or decode workers
const MAX_ROUNDS = 1000;
const MAX_DRAFT_TOKENS = 16;      // the server's kMaxDraftTokens
const MAX_BATCH_WAIT = 100000;    // the server's kMaxBatchWaitIters

/** A mean wait: "none" rather than 0 ns. */
const wait = (s: number) => (s > 0 ? seconds(s) : 'none');

const LIMITS: Record<string, string> = {
  kv_capacity: 'KV-cache capacity: more clients than requests whose KV cache fits (or than the engine runs at once), ' +
    'or requests preempted when the cache ran out; the rest wait for a slot',
  prefill: "prefill: prompt tokens add the larger share of the steps' time",
  memory_bandwidth: 'memory bandwidth: each decode step streams the weights and the KV cache',
  compute: 'compute: the batched decode step is bound by the tensor cores',
};

/** One concurrency's answer: the prediction, or the error the server gave for it. */
type Row = { concurrency: number; result?: Serving; error?: string };

const page = { rows: [] as Row[], selected: -1, run: 0, shown: false, engines: null as Promise<void> | null };

/**
 * Concurrencies from text: integers and doubling ranges, separated by commas or spaces.
 * "1..512" is 1, 2, 4, ..., 512; "3..100" is 3, 6, ..., 96. Sorted, without repeats.
 * Throws an Error naming the bad item.
 */
export function parseConcurrencies(text: string): number[] {
  const out = new Set<number>();
  const whole = (s: string, item: string) => {
    const v = Number(s);
    if (!/^\d+$/.test(s) || v < 1 || v > MAX_CONCURRENCY) {
      throw new Error(`concurrency "${item}": each value must be a whole number from 1 to ${MAX_CONCURRENCY}`);
    }
    return v;
  };
  for (const item of text.split(/[\s,]+/).filter((x) => x.length > 0)) {
    const range = item.split('..');
    if (range.length === 1) {
      out.add(whole(item, item));
    } else if (range.length === 2) {
      const lo = whole(range[0], item);
      const hi = whole(range[1], item);
      if (hi < lo) throw new Error(`concurrency "${item}": the range must go up`);
      for (let v = lo; v <= hi && out.size <= MAX_POINTS; v *= 2) out.add(v);
    } else {
      throw new Error(`concurrency "${item}" is neither a number nor a range like 1..512`);
    }
    if (out.size > MAX_POINTS) throw new Error(`at most ${MAX_POINTS} concurrencies at once`);
  }
  if (out.size === 0) throw new Error('give at least one concurrency (e.g. 1,2,4 or 1..512)');
  return [...out].sort((a, b) => a - b);
}

function intValue(id: string, name: string, lo: number, hi: number): number {
  const v = Number(($(id) as HTMLInputElement).value);
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${name} must be a whole number from ${lo} to ${hi}`);
  return v;
}

/** The request every concurrency shares, from the form; throws on a bad field. */
function request(): Record<string, unknown> {
  const select = (id: string) => ($(id) as HTMLSelectElement).value;
  const req: Record<string, unknown> = {
    model: select('sv-model'),
    hardware: select('sv-hardware'),
    engine: select('sv-engine'),
    act: select('sv-act'),
    isl: intValue('sv-isl', 'prompt length (isl)', 1, 1 << 30),
    osl: intValue('sv-osl', 'output length (osl)', 1, 1 << 30),
  };
  // Aggregated: one instance of TP GPUs. Disaggregated: each pool's workers and their TP.
  if (select('sv-mode') === 'disagg') {
    req.mode = 'disagg';
    req.prefill_workers = intValue('sv-prefill-workers', 'prefill workers', 1, MAX_WORKERS);
    req.prefill_tp = intValue('sv-prefill-tp', 'prefill TP', 1, MAX_TP);
    req.decode_workers = intValue('sv-decode-workers', 'decode workers', 1, MAX_WORKERS);
    req.decode_tp = intValue('sv-decode-tp', 'decode TP', 1, MAX_TP);
    req.prefill_attention_dp = intValue('sv-prefill-attention-dp', 'prefill attention DP', 1, MAX_TP);
    req.prefill_ep = intValue('sv-prefill-ep', 'prefill EP', 1, MAX_TP);
    // The decode workers' attention DP and EP are the step's.
    req.attention_dp = intValue('sv-decode-attention-dp', 'decode attention DP', 1, MAX_TP);
    req.ep = intValue('sv-decode-ep', 'decode EP', 1, MAX_TP);
  } else {
    req.tp = intValue('sv-tp', 'TP', 1, MAX_TP);
    req.attention_dp = intValue('sv-attention-dp', 'attention DP', 1, MAX_TP);
    req.ep = intValue('sv-ep', 'EP', 1, MAX_TP);
    req.dp = intValue('sv-dp', 'replicas', 1, MAX_WORKERS);
  }
  // Pipeline stages apply to every instance, aggregated or each worker of a pool.
  const pp = intValue('sv-pp', 'PP', 1, MAX_TP);
  if (pp > 1) req.pp = pp;
  req.rounds = intValue('sv-rounds', 'rounds', 1, MAX_ROUNDS);
  // 0: the engine's scheduler decides.
  req.token_budget = intValue('sv-token-budget', 'token budget', 0, MAX_CONCURRENCY);
  req.max_running = intValue('sv-max-running', 'max running', 0, MAX_CONCURRENCY);
  // The engine's own defaults unless the deployment's recipe is chosen.
  const recipe = select('sv-recipe');
  if (recipe === 'aiconfigurator' || recipe === 'trtllm-bench') req.recipe = recipe;
  // The engine's release, when given (the server checks its characters).
  const version = ($('sv-engine-version') as HTMLInputElement).value.trim();
  if (version) req.engine_version = version;
  // Random lengths: each uniform from floor(ratio x length) to the length; 1 keeps them fixed.
  const ratio = Number(($('sv-range-ratio') as HTMLInputElement).value);
  if (!(ratio >= 0 && ratio <= 1)) throw new Error('range ratio must be a number from 0 to 1');
  if (ratio < 1) req.range_ratio = ratio;
  const shortest = ratio < 1 ? Math.max(1, Math.floor(ratio * (req.isl as number))) : (req.isl as number);
  const prefix = intValue('sv-shared-prefix', 'shared prefix', 0, shortest - 1);
  if (prefix > 0) req.shared_prefix = prefix;
  // Prompts drawn from a pool, repeats found in the prefix cache (aggregated serving only).
  const promptPool = intValue('sv-prompt-pool', 'prompt pool', 0, MAX_PROMPT_POOL);
  if (promptPool > 0) req.prompt_pool = promptPool;
  // TensorRT-LLM's batch waiting (the server refuses it for other engines).
  const waitIters = intValue('sv-batch-wait-iters', 'batch wait', 0, MAX_BATCH_WAIT);
  const waitRatio = Number(($('sv-batch-wait-ratio') as HTMLInputElement).value);
  if (!(waitRatio >= 0 && waitRatio <= 1)) throw new Error('wait ratio must be a number from 0 to 1');
  if (waitIters > 0) {
    req.batch_wait_iters = waitIters;
    req.batch_wait_ratio = waitRatio;
  }
  // TensorRT-LLM's attention-DP balance, on with a timeout (the server refuses other engines).
  const adpTimeout = intValue('sv-adp-timeout', 'ADP balance timeout', 0, MAX_BATCH_WAIT);
  const adpBatching = intValue('sv-adp-batching', 'batching wait', 0, MAX_BATCH_WAIT);
  if (adpTimeout > 0) {
    req.adp_balance = true;
    req.adp_timeout_iters = adpTimeout;
    req.adp_batching_wait_iters = adpBatching;
  }
  // SGLang's receive interval (the server refuses it for other engines).
  const recvInterval = intValue('sv-recv-interval', 'receive interval', 0, MAX_BATCH_WAIT);
  if (recvInterval > 1) req.scheduler_recv_interval = recvInterval;
  // The KV cache's memory share under the engine's rule (0: the engine's).
  const kvMemory = Number(($('sv-kv-memory') as HTMLInputElement).value);
  if (!(kvMemory >= 0 && kvMemory <= 1)) throw new Error('KV memory share must be a number from 0 to 1');
  if (kvMemory > 0) req.kv_memory_share = kvMemory;
  // Which steps replay CUDA graphs, where the deployment turns the engine's down.
  const graphs = ($('sv-cuda-graphs') as HTMLSelectElement).value;
  if (graphs !== 'engine') req.cuda_graphs = graphs;
  // The largest step the deployment captures graphs for (0: the engine's).
  const captured = intValue('sv-graph-capture', 'graph capture size', 0, MAX_CONCURRENCY);
  if (captured > 0) req.graph_capture_size = captured;
  // The MoE kernel family, where the deployment picks one.
  const moeKernel = ($('sv-moe-kernel') as HTMLSelectElement).value;
  if (moeKernel) req.moe_kernel = moeKernel;
  // Speculative decoding only with draft tokens (the server refuses an acceptance without).
  const drafts = intValue('sv-draft-tokens', 'draft tokens', 0, MAX_DRAFT_TOKENS);
  if (drafts > 0) {
    req.draft_tokens = drafts;
    const a = Number(($('sv-acceptance') as HTMLInputElement).value);
    if (!(a >= 0 && a <= 1)) throw new Error('acceptance must be a number from 0 to 1');
    req.acceptance = a;
  }
  // Empty: the model's own weights; KV as the activations.
  if (select('sv-weights')) req.weights = select('sv-weights');
  if (select('sv-kv')) req.kv = select('sv-kv');
  return req;
}

/** Shows the disaggregated pools' fields, and greys out the aggregated TP, as the mode says. */
function showMode(): void {
  const disagg = ($('sv-mode') as HTMLSelectElement).value === 'disagg';
  $('sv-disagg').hidden = !disagg;
  for (const id of ['sv-tp', 'sv-attention-dp', 'sv-ep', 'sv-dp']) ($(id) as HTMLInputElement).disabled = disagg;
}

/** Fills the form from the registry; the engines come from GET /api/engines. */
export function initServing(models: ModelPreset[], devices: Device[]): void {
  fillSelect('sv-model', models.map((m) => [m.id, `${m.name} (${si(m.params, '', 2)} params)`]), DEFAULTS.model);
  fillSelect('sv-hardware', devices.map((d) => [d.id, d.name]), DEFAULTS.hardware);
  fillSelect('sv-weights', [['', "the model's own"], ...WEIGHTS.map((f): [string, string] => [f, f])], DEFAULTS.weights);
  // '': the engine's for the weights (fp8 weights as W8A8 where it runs them so; the cache stays 16-bit).
  fillSelect('sv-act', [['', "the engine's"], ...ACTS.map((f): [string, string] => [f, f])], DEFAULTS.act);
  fillSelect('sv-kv', [['', 'as activations'], ...KVS.map((f): [string, string] => [f, f])], DEFAULTS.kv);
  ($('sv-tp') as HTMLInputElement).value = String(DEFAULTS.tp);
  ($('sv-isl') as HTMLInputElement).value = String(DEFAULTS.isl);
  ($('sv-osl') as HTMLInputElement).value = String(DEFAULTS.osl);
  ($('sv-concurrency') as HTMLInputElement).value = DEFAULTS.concurrency;
  const number = (id: string, v: number) => { ($(id) as HTMLInputElement).value = String(v); };
  ($('sv-mode') as HTMLSelectElement).value = DEFAULTS.mode;
  ($('sv-recipe') as HTMLSelectElement).value = 'engine';
  ($('sv-cuda-graphs') as HTMLSelectElement).value = 'engine';
  ($('sv-moe-kernel') as HTMLSelectElement).value = '';
  number('sv-attention-dp', DEFAULTS.attentionDp);
  number('sv-ep', DEFAULTS.ep);
  number('sv-dp', DEFAULTS.replicas);
  number('sv-pp', DEFAULTS.pp);
  number('sv-prefill-workers', DEFAULTS.prefillWorkers);
  number('sv-prefill-tp', DEFAULTS.prefillTp);
  number('sv-decode-workers', DEFAULTS.decodeWorkers);
  number('sv-decode-tp', DEFAULTS.decodeTp);
  number('sv-prefill-attention-dp', DEFAULTS.prefillAttentionDp);
  number('sv-prefill-ep', DEFAULTS.prefillEp);
  number('sv-decode-attention-dp', DEFAULTS.decodeAttentionDp);
  number('sv-decode-ep', DEFAULTS.decodeEp);
  number('sv-rounds', DEFAULTS.rounds);
  number('sv-token-budget', DEFAULTS.tokenBudget);
  number('sv-max-running', DEFAULTS.maxRunning);
  number('sv-graph-capture', DEFAULTS.graphCaptureSize);
  number('sv-draft-tokens', DEFAULTS.draftTokens);
  number('sv-acceptance', DEFAULTS.acceptance);
  number('sv-shared-prefix', DEFAULTS.sharedPrefix);
  number('sv-prompt-pool', DEFAULTS.promptPool);
  number('sv-batch-wait-iters', DEFAULTS.batchWaitIters);
  number('sv-batch-wait-ratio', DEFAULTS.batchWaitRatio);
  number('sv-adp-timeout', DEFAULTS.adpTimeout);
  number('sv-adp-batching', DEFAULTS.adpBatching);
  number('sv-recv-interval', DEFAULTS.recvInterval);
  number('sv-kv-memory', DEFAULTS.kvMemory);
  number('sv-range-ratio', DEFAULTS.rangeRatio);
  showMode();
  $('sv-mode').addEventListener('change', showMode);
  page.engines = api.engines().then((engines: Engine[]) => {
    // Serving engines first, then the local ones and the reference.
    const order = (e: Engine) => (e.kind === 'serving' ? 0 : e.kind === 'local' ? 1 : 2);
    const sorted = [...engines].sort((a, b) => order(a) - order(b));
    fillSelect('sv-engine', sorted.map((e) => [e.id, `${e.name}${e.kind === 'serving' ? '' : ` (${e.kind})`}`]), DEFAULTS.engine);
  });
  $('serving-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void runServing();
  });
}

/** Shows the page; the first time, runs the default case. */
export async function showServing(): Promise<void> {
  if (page.shown) return;
  page.shown = true;
  await runServing();
}

/** Runs `work` over `items`, at most `limit` at a time, keeping the order of the answers. */
async function pooled<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

async function runServing(): Promise<void> {
  try {
    await page.engines;
  } catch (e) {
    setStatus('serving-status', `Cannot list the engines: ${message(e)}`, 'error');
    return;
  }
  let base: Record<string, unknown>;
  let concurrencies: number[];
  try {
    base = request();
    concurrencies = parseConcurrencies(($('sv-concurrency') as HTMLInputElement).value);
  } catch (e) {
    setStatus('serving-status', message(e), 'error');
    return;
  }
  const run = ++page.run;
  const button = $('serving-run') as HTMLButtonElement;
  button.disabled = true;
  setStatus('serving-status', `Predicting ${concurrencies.length} concurrencies…`, 'busy');
  const t0 = performance.now();
  try {
    const rows = await pooled(concurrencies, IN_FLIGHT, async (concurrency): Promise<Row> => {
      try {
        return { concurrency, result: await api.serving({ ...base, concurrency }) };
      } catch (e) {
        return { concurrency, error: message(e) };
      }
    });
    if (run !== page.run) return;  // a newer run took over
    page.rows = rows;
    const ok = rows.filter((r) => r.result);
    page.selected = defaultSelection(rows);
    render();
    void renderAccuracy(base, run);
    const ms = (performance.now() - t0).toFixed(0);
    if (ok.length === rows.length) {
      setStatus('serving-status', `Done: ${rows.length} concurrencies in ${ms} ms.`, 'ok');
    } else if (ok.length === 0) {
      setStatus('serving-status', rows[0].error ?? 'every request failed', 'error');
    } else {
      setStatus('serving-status', `${rows.length - ok.length} of ${rows.length} concurrencies failed; see the table.`, 'error');
    }
  } catch (e) {
    setStatus('serving-status', `The page could not show this result: ${message(e)}`, 'error');
  } finally {
    if (run === page.run) button.disabled = false;
  }
}

/** How far measured runs like this request's came from the model (the development set), once it has loaded. */
async function renderAccuracy(req: Record<string, unknown>, run: number): Promise<void> {
  const el = $('serving-accuracy');
  el.innerHTML = '<li class="muted">Comparing with the measured runs of the development set…</li>';
  try {
    const v = await loadServingValidation();
    if (run !== page.run) return;
    const mode = req.mode === 'disagg' ? 'disagg' : 'agg';
    const note = servingAccuracyNote(v, String(req.engine), String(req.model), String(req.hardware), mode);
    el.innerHTML = (note.length > 0 ? note : [req.engine === 'roofline'
      ? 'The reference engine (ideal kernels) is no measured engine: choose vLLM, SGLang or TensorRT-LLM to compare with their measured runs.'
      : `The development set has no measured ${mode === 'disagg' ? 'disaggregated' : 'aggregated'} runs of this engine.`])
      .map((line) => `<li>${esc(line)}</li>`).join('') + '<li class="muted">The Accuracy tab has every run and every case.</li>';
  } catch (e) {
    if (run === page.run) el.innerHTML = `<li class="muted">The measured runs could not be loaded: ${esc(message(e))}</li>`;
  }
}

/** The largest concurrency whose requests all fit in the KV cache, else the first answered point. */
function defaultSelection(rows: Row[]): number {
  let best = -1;
  rows.forEach((row, i) => {
    const r = row.result;
    if (r && (best < 0 || r.concurrency <= r.max_concurrency_that_fits)) best = i;
  });
  return best;
}

function select(i: number): void {
  page.selected = i;
  render();
}

function render(): void {
  const answered = page.rows.filter((r): r is Row & { result: Serving } => r.result !== undefined);
  const results = answered.map((r) => r.result);
  const chosen = page.rows[page.selected]?.result;
  // Chart indices count answered rows only; the table and the selection count all rows.
  const chartIndex = chosen ? results.indexOf(chosen) : -1;
  const pick = (i: number) => select(page.rows.indexOf(answered[i]));
  renderTable();
  if (results.length === 0) {
    clearChart('serving-curve');
    clearChart('serving-latency');
    const first = page.rows.find((r) => r.error);
    $('serving-cards').innerHTML = `<div class="error wide">${esc(first?.error ?? 'no results')}</div>`;
    $('serving-detail').innerHTML = '';
    $('serving-sub').textContent = '';
    $('latency-sub').textContent = '';
    return;
  }
  const r0 = results[0];
  $('serving-sub').textContent = `${r0.model} on ${r0.gpus} × ${r0.hardware} (${layout(r0)}), ${r0.engine}, weights ${r0.weights}, ` +
    `act ${r0.act}, KV ${r0.kv}; ${r0.isl} tokens in, ${r0.osl} out, ${r0.rounds} requests per client` +
    (r0.draft_tokens > 0 ? `; ${r0.draft_tokens} draft tokens a step` : '');
  drawServingCurve('serving-curve', results, chartIndex, pick);
  drawServingLatency('serving-latency', results, chartIndex, pick);
  const capacity = r0.max_concurrency_that_fits;
  const last = results[results.length - 1].concurrency;
  $('latency-sub').textContent = capacity <= last
    ? `KV capacity reached at ${capacity} concurrent requests`
    : `KV capacity (${capacity} requests) not reached`;
  renderCards(chosen);
  renderDetail(chosen);
}

/** GPUs of a pool: "2 (1 × TP 2)". */
const pool = (workers: number, tp: number) => `${workers * tp} (${workers} × TP ${tp})`;

/** Attention DP and EP within a TP: ", attention DP 8, EP 8", or nothing. */
const within = (attentionDp: number, ep: number) =>
  (attentionDp > 1 ? `, attention DP ${attentionDp}` : '') + (ep > 1 ? `, EP ${ep}` : '');

/** How the GPUs are laid out: "TP 2", or each disaggregated pool's workers; with the pipeline stages. */
function layout(r: Serving): string {
  const pools = r.mode === 'disagg'
    ? `prefill ${r.prefill_workers} × TP ${r.prefill_tp}${within(r.prefill_attention_dp!, r.prefill_ep!)}; ` +
      `decode ${r.decode_workers} × TP ${r.decode_tp}${within(r.attention_dp, r.ep)}`
    : `TP ${r.tp}` + within(r.attention_dp, r.ep) + (r.dp > 1 ? `, ${r.dp} replicas` : '');
  return pools + (r.pp > 1 ? `; PP ${r.pp} (a micro-batch per stage)` : '');
}

/** The percentiles of a spread: "p50 906 ms, p90 1.34 s, p99 3.79 s". */
const percentiles = (x: Spread) => `p50 ${seconds(x.p50)}, p90 ${seconds(x.p90)}, p99 ${seconds(x.p99)}`;

function renderCards(r: Serving | undefined): void {
  const el = $('serving-cards');
  if (!r) {
    el.innerHTML = '';
    return;
  }
  const queued = r.concurrency > r.max_concurrency_that_fits;
  const disagg = r.mode === 'disagg';
  const gpus = counted(r.gpus, 'GPU');
  const cards: Array<[string, string, string, string, boolean]> = [
    ['Concurrency', String(r.concurrency), 'concurrency', `${r.running} decoding in the mean step`, false],
    ['TTFT (mean)', seconds(r.ttft.mean), 'ttft', percentiles(r.ttft), false],
    ['TPOT (mean)', seconds(r.tpot.mean), 'tpot', percentiles(r.tpot), false],
    ['Per GPU', si(r.output_tokens_per_s_per_gpu, 'tok/s'), 'per-gpu', `${si(r.output_tokens_per_s, 'tok/s')} on ${gpus}`, false],
    ['Per user', si(r.output_tokens_per_s_per_user, 'tok/s'), 'per-user', '1 / TPOT', false],
    ['KV capacity', `${r.max_concurrency_that_fits} requests`, 'capacity',
     (queued ? `${r.concurrency - r.max_concurrency_that_fits} clients more than fit` : `${r.isl + r.osl} tokens each${disagg ? ', decode pool' : ''}`) +
       `; ${si(r.kv_cache_bytes_per_gpu, 'B')} of cache a GPU, ${pct(r.kv_memory.share * 100, 0)} of ${r.kv_memory.of === 'free' ? 'the memory the weights leave' : 'the memory'}` +
       (r.kv_memory.set ? ' (as set)' : '') +
       (r.kv_memory.profile_sampler
         ? `, less ${si(r.kv_memory.activation_bytes_per_gpu, 'B')} for the engine's profiling pass (its sampler over ${r.kv_memory.profile_sampler.rows} rows)`
         : ''), queued],
  ];
  if (disagg) {
    cards.push(
      ['GPUs', String(r.gpus), 'gpus', `prefill ${pool(r.prefill_workers!, r.prefill_tp!)}, decode ${pool(r.decode_workers!, r.decode_tp!)}`, false],
      ['KV transfer', seconds(r.kv_transfer_s!), 'kv-transfer', "one prompt's KV cache, prefill to decode", false],
    );
  }
  el.classList.toggle('eight', cards.length === 8);
  el.innerHTML = cards.map(([k, v, field, sub, bad]) =>
    `<div class="stat${bad ? ' bad' : ''}"><div class="k">${k}</div><div class="v" data-field="serving-${field}">${esc(v)}</div>` +
    `<div class="s" data-field="serving-${field}-sub">${esc(sub)}</div></div>`).join('');
}

function renderDetail(r: Serving | undefined): void {
  if (!r) {
    $('serving-detail').innerHTML = '';
    return;
  }
  // The admission wait is for a KV slot only when the cache is what limits; else for the scheduler.
  const kvFull = r.concurrency > r.max_concurrency_that_fits || r.preemptions > 0;
  // Requests are admitted where their KV cache is held: the decode workers when disaggregated.
  const admitCap = r.mode === 'disagg' ? r.decode_max_running : r.max_running;
  const admission = r.limited_by !== 'kv_capacity' ? 'from arrival to admission'
    : kvFull ? 'waiting for a KV slot' : `waiting to run (at most ${admitCap} running per instance)`;
  const figures: Array<[string, string]> = [
    ['simulated', `${counted(r.requests, 'request')} (${counted(r.concurrency, 'client')} × ${counted(r.rounds, 'round')}) ` +
      `over ${counted(r.steps, 'step')}, ` +
      (r.preemptions > 0 ? `${r.preemptions} preempted and recomputed` : 'none preempted')],
    ['scheduler', (r.recipe === 'aiconfigurator' ? "AIConfigurator's benchmark deployment: "
      : r.recipe === 'trtllm-bench' ? "trtllm-bench's tuned limits: " : '') +
      (r.mode === 'disagg'
        ? `a prefill worker ${r.token_budget}-token budget, at most ${r.max_running} running; ` +
          `a decode worker ${r.decode_token_budget}-token budget, at most ${r.decode_max_running} running`
        : `${r.token_budget}-token budget per step, at most ${r.max_running} requests running per instance`) +
      (r.formed_a_step_ahead || r.decode_formed_a_step_ahead
        ? '; each batch formed a step ahead (overlap scheduling: a newcomer waits a step more)' : '')],
    ['GPUs', r.mode === 'disagg'
      ? `${r.gpus}: prefill ${pool(r.prefill_workers!, r.prefill_tp!)}, decode ${pool(r.decode_workers!, r.decode_tp!)}`
      : r.dp > 1
        ? `${r.gpus}: ${r.dp} instances at TP ${r.tp} each serve prompts and decode`
        : `${r.gpus}: one instance at TP ${r.tp} serves prompts and decodes`],
    ...(r.mode === 'disagg' ? [['KV transfer', `${seconds(r.kv_transfer_s!)} per prompt, prefill to decode worker`] as [string, string]] : []),
    ['TTFT', `mean ${seconds(r.ttft.mean)}; ${percentiles(r.ttft)}`],
    ['TPOT', `mean ${seconds(r.tpot.mean)}; ${percentiles(r.tpot)}`],
    ['ITL', `every gap between two tokens: mean ${seconds(r.itl.mean)}; ${percentiles(r.itl)}`],
    ['e2e', `mean ${seconds(r.e2e.mean)}; ${percentiles(r.e2e)}`],
    ['running', `${counted(r.running, 'request')} in the mean decode step, of ${counted(r.concurrency, 'client')}`],
    ['decode step', `${seconds(r.plain_step_s)} alone, ${seconds(r.prompt_step_s)} carrying one prompt`],
    ...(r.draft_tokens > 0 ? [['speculative', `${r.draft_tokens} draft tokens a step, each accepted at ${r.acceptance}: ` +
      `${r.tokens_per_step.toPrecision(3)} tokens a request a step`] as [string, string]] : []),
    ['prompts', `${r.prompts_per_step.toPrecision(3)} started per step; prompt tokens add ${pct(r.prompt_share * 100)} of the steps' time`],
    ...(r.prompt_pool > 0 ? [['prefix cache', `${pct(r.prefix_hit_rate * 100)} of the requests found their prompt cached ` +
      `(drawn from ${counted(r.prompt_pool, 'prompt')})`] as [string, string]] : []),
    ['waits', `${wait(r.queue_wait_s)} ${admission}, then ${wait(r.prompt_queue_wait_s)} from admission to the first prompt chunk`],
    ...(r.batch_wait && r.batch_wait.iters > 0 ? [['batch waiting', `${counted(r.batch_wait.waited_steps, 'step')} of ${r.steps} ` +
      `held their prompts back for a fuller step (at most ${r.batch_wait.iters} in a row, until ${pct(r.batch_wait.ratio * 100)} of the budget)`] as [string, string]] : []),
    ...(r.adp_balance ? [['attention-DP balance', `${counted(r.adp_balance.held_steps, 'step')} of ${r.steps} held their ` +
      `prompts back until every rank had one (timeout ${r.adp_balance.timeout_iters} steps, batching wait ${r.adp_balance.batching_wait_iters})`] as [string, string]] : []),
    ...(r.scheduler_recv_interval > 1 ? [['receive interval', `new requests taken in every ${r.scheduler_recv_interval} decode steps: ` +
      `${seconds(r.recv_wait_s)} on average from arrival to intake`] as [string, string]] : []),
  ];
  $('serving-detail').innerHTML = `
    <div class="verdict ${r.limited_by === 'kv_capacity' ? 'bad' : 'ok'}">
      <div class="big" data-field="limited-by">Concurrency ${r.concurrency}: limited by ${esc(r.limited_by.replace('_', ' '))}</div>
      <div>${esc(LIMITS[r.limited_by] ?? r.limited_by)}</div></div>
    <dl>${figures.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join('')}</dl>
    <ul class="rationale">${r.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>`;
}

const COLUMNS: Array<[string, (r: Serving) => string]> = [
  ['running', (r) => String(r.running)],
  ['TTFT mean (p90)', (r) => `${seconds(r.ttft.mean)} (${seconds(r.ttft.p90)})`],
  ['TPOT mean (p90)', (r) => `${seconds(r.tpot.mean)} (${seconds(r.tpot.p90)})`],
  ['e2e', (r) => seconds(r.e2e.mean)],
  ['tok/s', (r) => si(r.output_tokens_per_s, '')],
  ['tok/s per GPU', (r) => si(r.output_tokens_per_s_per_gpu, '')],
  ['tok/s per user', (r) => si(r.output_tokens_per_s_per_user, '')],
  ['admission wait', (r) => wait(r.queue_wait_s)],
  ['prompt share', (r) => pct(r.prompt_share * 100)],
  ['limited by', (r) => `<span class="limit ${esc(r.limited_by)}">${esc(r.limited_by.replace('_', ' '))}</span>`],
];

function renderTable(): void {
  const table = $('serving-table');
  const head = `<thead><tr><th>concurrency</th>${COLUMNS.map(([h]) => `<th>${h}</th>`).join('')}</tr></thead>`;
  const errors = new Set(page.rows.map((r) => r.error));
  if (page.rows.length > 1 && errors.size === 1 && !errors.has(undefined)) {
    // Every concurrency failed alike (the model does not fit, a bad TP): say it once.
    table.innerHTML = `${head}<tbody><tr><td>all</td><td colspan="${COLUMNS.length}" class="row-error">${esc(page.rows[0].error!)}</td></tr></tbody>`;
    return;
  }
  const body = page.rows.map((row, i) => {
    const cls = [i === page.selected ? 'selected' : '', row.result && row.concurrency > row.result.max_concurrency_that_fits ? 'queued' : '']
      .filter(Boolean).join(' ');
    const cells = row.result
      ? COLUMNS.map(([, f]) => `<td>${f(row.result!)}</td>`).join('')
      : `<td colspan="${COLUMNS.length}" class="row-error">${esc(row.error ?? '')}</td>`;
    return `<tr data-index="${i}" class="${cls}"><td>${row.concurrency}</td>${cells}</tr>`;
  }).join('');
  table.innerHTML = `${head}<tbody>${body}</tbody>`;
  table.querySelectorAll<HTMLElement>('tbody tr').forEach((tr) => tr.addEventListener('click', () => {
    const i = Number(tr.dataset.index);
    if (page.rows[i]?.result) select(i);
  }));
}
