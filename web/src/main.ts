// The Roofline app: one scenario form, then every view of it from the server's API;
// the Serving page (serving.ts) and the deployment search (search.ts) are tabs over
// the same registry.
import './style.css';
import { api, ApiError, type Device, type Engine, type GemmAnalysis, type Generation, type ModelPreset, type NvmlStatus, type Op,
  type Prediction, type Recommendation, type Strategy, type SweepRow } from './api';
import { drawHeatmap, drawMemoryByContext, drawRoofline, drawSparkline, drawStrategies } from './charts';
import { $, fillSelect, message, setStatus as setStatusOf } from './dom';
import { showAccuracy } from './accuracy';
import { initSearch, showSearch } from './search';
import { initServing, showServing } from './serving';
import { bytes, count, esc, flops, pct, seconds, si, tokens } from './units';

const state = {
  devices: [] as Device[],
  models: [] as ModelPreset[],
  strategies: [] as Strategy[],
  engines: [] as Engine[],
  ops: [] as Op[],
  opsSort: { key: 'time_s' as keyof Op, descending: true },
  opsTotal: 0,
};

function setStatus(text: string, kind: 'busy' | 'ok' | 'error' = 'ok'): void {
  setStatusOf('status', text, kind);
}

function showError(containerId: string, e: unknown): void {
  $(containerId).innerHTML = `<div class="error">${esc(message(e))}</div>`;
}

/** The model as the API takes it: a preset id, or the pasted config.json as an object. */
function modelField(): string | object {
  const pasted = ($('model-config') as HTMLTextAreaElement).value.trim();
  if (!pasted) return ($('model') as HTMLSelectElement).value;
  try {
    return JSON.parse(pasted) as object;
  } catch (e) {
    throw new Error(`the pasted config.json is not valid JSON: ${message(e)}`);
  }
}

function intField(id: string, name: string, lo: number, hi: number): number {
  const v = Number(($(id) as HTMLInputElement).value);
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${name} must be a whole number from ${lo} to ${hi}`);
  return v;
}

/** The engine and, when given, its build's date and its release: fields the analysis's requests carry. */
function engineFields(): { engine: string; engine_build?: string; engine_version?: string } {
  const engine = ($('engine') as HTMLSelectElement).value || 'roofline';
  const build = ($('engine-build') as HTMLInputElement).value.trim();
  const version = ($('engine-version') as HTMLInputElement).value.trim();
  // The server checks the calendar; the shape is checked here to say what is expected.
  if (build && !/^\d{4}-\d{2}(-\d{2})?$/.test(build)) throw new Error('the engine build must be a date, YYYY-MM-DD or YYYY-MM');
  if (version && !/^[A-Za-z0-9.+_-]{1,40}$/.test(version)) {
    throw new Error('the engine release must be at most 40 letters, digits and . - + _ (e.g. 0.11.0)');
  }
  return { engine, ...(build ? { engine_build: build } : {}), ...(version ? { engine_version: version } : {}) };
}

/** Tokens cached before the prompt: a prefill's (a decode step's context is its own). */
function cachedField(phase: string): number {
  const cached = intField('cached', 'cached tokens', 0, 4194304);
  if (cached > 0 && phase !== 'prefill') {
    throw new Error('cached tokens come before a prompt: choose the prefill phase (a decode step\'s context is its own)');
  }
  return cached;
}

function scenario() {
  const phase = ($('phase') as HTMLSelectElement).value;
  const budget = Number(($('budget') as HTMLInputElement).value);
  if (!Number.isFinite(budget) || budget < 0) throw new Error('the quality budget must be a number of percent, 0 or more');
  return {
    model: modelField(),
    hardware: ($('hardware') as HTMLSelectElement).value,
    ...engineFields(),
    phase,
    batch: intField('batch', 'batch', 1, 65536),
    seq_len: intField('seq-len', 'context', 1, 4194304),
    cached: cachedField(phase),
    strategy: ($('strategy') as HTMLSelectElement).value,
    ideal: ($('mode') as HTMLSelectElement).value === 'ideal',
    budget,
  };
}

/** Tokens generated after the prompt in the summary's TTFT/TPOT card. */
const GENERATED_TOKENS = 256;

function renderSummary(p: Prediction, device: Device, g: Generation | string): void {
  const step = p.scenario.phase === 'decode' ? 'per decode step' : 'for the prefill';
  const memShare = (p.memory.total_bytes / p.memory.capacity_bytes) * 100;
  const capacity: [string, string, string] = p.capacity.max_batch > 0
    ? ['Capacity', `batch ≤ ${p.capacity.max_batch}`, `context ≤ ${tokens(p.capacity.max_context)} tokens at batch ${p.scenario.batch}`]
    : ['Capacity', 'none', 'the weights alone exceed the device memory'];
  const cards: Array<[string, string, string]> = [
    ['Time', seconds(p.time_s), step],
    ['Throughput', `${si(p.tokens_per_s, 'tok/s')}`, `batch ${p.scenario.batch}`],
    ['Bound', p.bound, `compute ${seconds(p.compute_time_s)} · memory ${seconds(p.memory_time_s)} · ${flops(p.flops)} over ${bytes(p.bytes)}`],
    ['Memory', bytes(p.memory.total_bytes), `${pct(memShare, 0)} of ${bytes(p.memory.capacity_bytes)}${p.memory.fits ? '' : ' — does not fit'}`],
    capacity,
    typeof g !== 'string'
      ? ['Generation', `${seconds(g.ttft_s)} · ${seconds(g.tpot_s)}`,
         `TTFT and TPOT for a ${tokens(p.scenario.seq_len)}-token prompt` +
         (p.scenario.cached > 0 ? ` after ${tokens(p.scenario.cached)} cached` : '') +
         `, ${GENERATED_TOKENS} new tokens: ${seconds(g.e2e_s)} in all` +
         (g.ttft_recomputed_s ? `; TTFT ${seconds(g.ttft_recomputed_s)} recomputing the cached tokens (no prefix cache)` : '')]
      : ['Generation', '–', g],
  ];
  if (p.engine && p.engine.id !== 'roofline') cards.push(['Engine', engineName(p.engine.id), engineDetail(p)]);
  $('summary').innerHTML = cards.map(([k, v, sub]) =>
    `<div class="stat${(k === 'Memory' && !p.memory.fits) || (k === 'Capacity' && p.capacity.max_batch === 0) ? ' bad' : ''}"><div class="k">${k}</div><div class="v" data-field="${k.toLowerCase()}">${esc(v)}</div><div class="s">${esc(sub)}</div></div>`).join('');
  $('roofline-sub').textContent = `${device.name} · ${p.scenario.model} · ${p.scenario.phase} · weights ${p.scenario.weights}, act ${p.scenario.act}, KV ${p.scenario.kv}` +
    (p.engine && p.engine.id !== 'roofline' ? ` · ${engineName(p.engine.id)}` : '');
  if (p.notes.length > 0) {
    $('summary').insertAdjacentHTML('beforeend', `<div class="notes">${p.notes.map((n) => `<div>${esc(n)}</div>`).join('')}</div>`);
  }
}

function engineName(id: string): string {
  return state.engines.find((e) => e.id === id)?.name ?? id;
}

/** What priced the prediction: the engine's measured tables, its graphs and step cost, its build. */
function engineDetail(p: Prediction): string {
  const e = p.engine!;
  // A table is measured on this device, or derived (borrowed from the nearest measured one).
  const table = (what: string, id?: string | null, source?: string | null) =>
    id ? `${what} ${id}${source?.startsWith('derived') ? ' (derived)' : ''}` : '';
  const tables = [table('GEMMs', e.gemm_table, e.gemm_table_source), table('MoE', e.moe_table, e.moe_table_source),
    table('attention', e.attention_table, e.attention_table_source)].filter(Boolean);
  return [tables.length > 0 ? `kernel tables: ${tables.join(', ')}`
    : 'no kernel tables: the engine\'s figures and the device\'s fractions',
    e.cuda_graphs ? 'CUDA graphs'
      : e.host_dispatch_s > 0
        ? `no graph${e.past_captured_graphs ? ' (past the captured sizes)' : ''}: ${seconds(e.host_dispatch_s)} of host dispatch`
          + (e.host_wait_s > 0 ? `, the GPU waits ${seconds(e.host_wait_s)}` : ', hidden by the GPU\'s work')
        : 'eager launches',
    e.step_overhead_s > 0 ? `${seconds(e.step_overhead_s)} a step on the host` : '',
    e.latent_cache_cast_s > 0
      ? `${seconds(e.latent_cache_cast_s)} a step casting the fp8 KV pool to bf16` : '',
    e.build ? `build of ${e.build}` : ''].filter(Boolean).join(' · ');
}

/** Where an op's efficiency came from, with the fraction of the roofline it reaches. */
function efficiencyCell(o: Op): string {
  if (!o.efficiency_source) return '–';
  const share = o.efficiency != null && o.efficiency > 0 ? ` ${pct(o.efficiency * 100, 0)}` : '';
  return `<span class="source ${esc(o.efficiency_source)}">${esc(o.efficiency_source)}</span>${share}`;
}

const OP_COLUMNS: Array<[keyof Op, string, (o: Op) => string]> = [
  ['name', 'operator', (o) => esc(o.name) + (o.fused ? ' <span class="pill">fused</span>' : '')],
  ['count', '×', (o) => count(o.count)],
  ['flops', 'FLOPs', (o) => si(o.flops, '')],
  ['bytes', 'bytes', (o) => bytes(o.bytes)],
  ['ai', 'FLOP/B', (o) => (o.ai > 0 ? o.ai.toPrecision(3) : '–')],
  ['time_s', 'time', (o) => seconds(o.time_s)],
  ['bound', 'bound', (o) => `<span class="bound ${o.bound}">${o.bound}</span>`],
  ['compute_format', 'format', (o) => esc(o.compute_format) + (o.weight_only ? ' <span class="pill">weight-only</span>' : '')],
  ['efficiency_source', 'efficiency from', efficiencyCell],
];

function renderOps(): void {
  const { key, descending } = state.opsSort;
  const ops = [...state.ops].sort((a, b) => {
    const x = a[key];
    const y = b[key];
    // Ops without a value (no efficiency source) go last in either direction.
    const missing = (v: unknown) => v === null || v === undefined;
    if (missing(x) || missing(y)) return Number(missing(x)) - Number(missing(y));
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return descending ? -c : c;
  });
  const head = OP_COLUMNS.map(([k, label]) =>
    `<th data-key="${k}" class="${k === key ? (descending ? 'sorted desc' : 'sorted asc') : ''}">${label}</th>`).join('');
  const body = ops.map((o) => {
    const share = state.opsTotal > 0 ? (o.time_s / state.opsTotal) * 100 : 0;
    const cells = OP_COLUMNS.map(([k, , f]) => `<td class="${k}">${f(o)}</td>`).join('');
    return `<tr>${cells}<td class="share"><div class="bar" style="width:${Math.min(100, share).toFixed(1)}%"></div><span>${pct(share)}</span></td></tr>`;
  }).join('');
  const table = $('ops-table');
  table.innerHTML = `<thead><tr>${head}<th>share of time</th></tr></thead><tbody>${body}</tbody>`;
  table.querySelectorAll<HTMLElement>('th[data-key]').forEach((th) => th.addEventListener('click', () => {
    const k = th.dataset.key as keyof Op;
    state.opsSort = { key: k, descending: state.opsSort.key === k ? !state.opsSort.descending : true };
    renderOps();
  }));
}

function renderRecommendation(r: Recommendation): void {
  const head = r.any_feasible
    ? `<div class="verdict ok"><div class="big">${esc(r.strategy)}</div>
         <div>${r.predicted_speedup.toFixed(2)}× faster than ${esc(r.baseline)} · ${pct(r.memory_saving * 100, 0)} less memory ·
         quality loss ${r.quality_quantified ? pct(r.quality_loss_pct) : 'not quantified'}</div></div>`
    : `<div class="verdict bad"><div class="big">No strategy meets the constraints</div></div>`;
  const rationale = r.rationale.map((x) => `<li>${esc(x)}</li>`).join('');
  $('recommendation').innerHTML = `${head}<ol class="rationale">${rationale}</ol>`;
}

async function renderGpuPanel(): Promise<void> {
  const el = $('gpu');
  let status: NvmlStatus;
  try {
    status = await api.nvml();
  } catch (e) {
    el.innerHTML = e instanceof ApiError && e.status === 404
      ? '<div class="muted">This server runs with --public-only: no measurement endpoints.</div>'
      : `<div class="error">${esc(message(e))}</div>`;
    return;
  }
  if (!status.available) {
    el.innerHTML = `<div class="muted">${esc(status.message ?? 'NVML not available')}. The panel fills in when the server runs on a machine with an NVIDIA driver.</div>`;
    return;
  }
  const history = new Map<number, { util: number[]; power: number[] }>();
  const render = (s: NvmlStatus) => {
    if (!el.querySelector('.gpus')) {
      el.innerHTML = `<div class="gpus">${s.gpus.map((g) => `
        <div class="gpu" id="gpu-${g.index}"><div class="gpu-name">${esc(g.name)} <span class="muted">#${g.index}</span></div>
        <div class="gpu-figures"></div>
        <div class="spark"><canvas id="spark-util-${g.index}"></canvas></div>
        <div class="spark"><canvas id="spark-power-${g.index}"></canvas></div></div>`).join('')}</div>`;
    }
    for (const g of s.gpus) {
      const h = history.get(g.index) ?? { util: [], power: [] };
      h.util.push(g.utilization_pct);
      h.power.push(g.power_w);
      if (h.util.length > 60) { h.util.shift(); h.power.shift(); }
      history.set(g.index, h);
      const fig = el.querySelector(`#gpu-${g.index} .gpu-figures`);
      if (fig) {
        fig.innerHTML = `utilization ${pct(g.utilization_pct, 0)} · memory ${bytes(g.memory_used_bytes)} / ${bytes(g.memory_total_bytes)} ·
          ${g.power_w.toFixed(0)} W · SM ${g.sm_clock_mhz} MHz · ${g.temperature_c} °C`;
      }
      drawSparkline(`spark-util-${g.index}`, 'utilization (%)', h.util, 100);
      drawSparkline(`spark-power-${g.index}`, 'power (W)', h.power);
    }
  };
  render(status);
  const stream = new EventSource('/api/nvml/stream');
  stream.onmessage = (ev) => render(JSON.parse(ev.data) as NvmlStatus);
  stream.onerror = () => stream.close();
}

/** Powers of two from lo up to hi, inclusive where hi is one. */
function doublings(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let v = lo; v <= hi; v *= 2) out.push(v);
  return out;
}

async function run(): Promise<void> {
  let s: ReturnType<typeof scenario>;
  try {
    s = scenario();
  } catch (e) {
    setStatus(message(e), 'error');
    return;
  }
  const device = state.devices.find((d) => d.id === s.hardware)!;
  const button = $('run') as HTMLButtonElement;
  button.disabled = true;
  try {
    await analyze(s, device);
    await runGemm();  // the GEMM card follows the chosen device
  } catch (e) {
    setStatus(`The page could not show this result: ${message(e)}`, 'error');
  } finally {
    button.disabled = false;
  }
}

async function analyze(s: ReturnType<typeof scenario>, device: Device): Promise<void> {
  setStatus('Predicting…', 'busy');
  const engine = { engine: s.engine, ...(s.engine_build ? { engine_build: s.engine_build } : {}) };
  const release = s.engine_version ? { engine_version: s.engine_version } : {};
  const base = { model: s.model, hardware: s.hardware, phase: s.phase, batch: s.batch, seq_len: s.seq_len, ...engine };
  const t0 = performance.now();

  const predict = api.predict({ ...base, ...release, ...(s.cached > 0 ? { cached: s.cached } : {}), strategy: s.strategy,
    per_op: true, ideal: s.ideal });
  const recommend = api.recommend({ ...base, ...release, max_quality_loss: s.budget, ideal: s.ideal });
  const generate = api.generate({ model: s.model, hardware: s.hardware, batch: s.batch, prompt: s.seq_len,
    ...(s.cached > 0 ? { cached: s.cached } : {}), gen: GENERATED_TOKENS, strategy: s.strategy, ideal: s.ideal, ...engine,
    ...release });
  const contexts = doublings(512, 131072);
  const memorySweep = api.sweep({
    models: [s.model], hardware: [s.hardware], phases: [s.phase], batches: [s.batch], seq_lens: contexts,
    strategies: [...new Set(['bf16_baseline', 'fp8_balanced', 'long_context_kv', s.strategy])]
      .filter((n) => state.strategies.some((x) => x.name === n)),
    ideal: s.ideal, ...engine, ...release,
  });
  const heatSweep = api.sweep({
    models: [s.model], hardware: [s.hardware], phases: [s.phase], batches: doublings(1, 256),
    seq_lens: doublings(1024, 131072), strategies: [s.strategy], ideal: s.ideal, ...engine, ...release,
  });

  const results = await Promise.allSettled([predict, recommend, memorySweep, heatSweep, generate]);
  const [p, r, mem, heat, gen] = results;
  let failures = 0;
  if (p.status === 'fulfilled') {
    const pred = p.value;
    renderSummary(pred, device, gen.status === 'fulfilled' ? gen.value : message(gen.reason));
    state.ops = pred.ops ?? [];
    state.opsTotal = state.ops.reduce((a, o) => a + o.time_s, 0);
    renderOps();
    drawRoofline('roofline-chart', device, state.ops, !s.ideal);
  } else {
    failures++;
    $('summary').innerHTML = `<div class="error wide">${esc(message(p.reason))}</div>`;
  }
  if (r.status === 'fulfilled') {
    renderRecommendation(r.value);
    drawStrategies([r.value, ...r.value.alternatives.filter((a) => a.strategy !== r.value.strategy)], device.capacity_bytes);
  } else {
    failures++;
    showError('recommendation', r.reason);
  }
  if (mem.status === 'fulfilled') drawMemoryByContext(mem.value as SweepRow[], device.capacity_bytes);
  else failures++;
  if (heat.status === 'fulfilled') {
    drawHeatmap($('heatmap'), heat.value, s.phase);
    $('sweep-sub').textContent = `${s.strategy}, ${s.phase}`;
  } else {
    failures++;
    showError('heatmap', heat.reason);
  }
  const ms = (performance.now() - t0).toFixed(0);
  if (failures === 0) setStatus(`Done in ${ms} ms.`, 'ok');
  else setStatus(p.status === 'rejected' ? message(p.reason) : `${failures} of 4 requests failed; see the panels.`, 'error');
}

const GEMM_WEIGHTS = ['fp16', 'bf16', 'fp8', 'int8', 'int4', 'nvfp4', 'mxfp4', 'q8_0', 'q4_0'];
const GEMM_ACTS = ['fp16', 'bf16', 'fp8', 'int8', 'nvfp4'];

function renderGemm(g: GemmAnalysis): void {
  const rows: Array<[string, string]> = [
    ['time', `${seconds(g.time_s)} (${g.bound}-bound)`],
    ['compute · memory', `${seconds(g.compute_time_s)} · ${seconds(g.memory_time_s)} + ${seconds(g.overhead_s)} launch`],
    ['work', `${flops(g.flops)} over ${bytes(g.bytes)}`],
    ['intensity', `${g.ai.toPrecision(3)} FLOP/B (ridge ${g.ridge_ai.toPrecision(3)})`],
    ['attains', si(g.attained_flops_per_s, 'FLOP/s')],
    ['math in', `${g.compute_format}${g.weight_only ? ' (weights dequantized first)' : ''}, wave efficiency ${g.wave_efficiency.toFixed(2)}`],
  ];
  const m = g.measurement;
  if (m) {
    rows.push(['measured', m.available
      ? `${seconds(m.time_s ?? NaN)} on ${m.gpu ?? 'the GPU'} (${(m.error_pct ?? 0) >= 0 ? '+' : ''}${(m.error_pct ?? 0).toFixed(1)}% predicted vs measured${m.verified ? ', result verified' : ''})`
      : `not measured: ${m.reason ?? ''}`]);
  }
  $('gemm-result').innerHTML = `<dl>${rows.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join('')}</dl>
    <ul class="gemm-notes">${g.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>`;
}

async function runGemm(): Promise<void> {
  const device = state.devices.find((d) => d.id === ($('hardware') as HTMLSelectElement).value)!;
  const button = $('gemm-run') as HTMLButtonElement;
  button.disabled = true;
  try {
    const g = await api.analyze({
      hardware: device.id,
      m: intField('gemm-m', 'm', 1, 2147483647),
      n: intField('gemm-n', 'n', 1, 2147483647),
      k: intField('gemm-k', 'k', 1, 2147483647),
      weights: ($('gemm-weights') as HTMLSelectElement).value,
      act: ($('gemm-act') as HTMLSelectElement).value,
      ideal: ($('mode') as HTMLSelectElement).value === 'ideal',
      ...(($('gemm-measure') as HTMLInputElement).checked ? { measure: true } : {}),
    });
    renderGemm(g);
    const op: Op = {
      name: `GEMM ${g.m}×${g.n}×${g.k}`, kind: 'gemm', count: 1, flops: g.flops, bytes: g.bytes,
      weight_bytes: 0, kv_cache_bytes: 0, ai: g.ai, time_s: g.time_s, compute_time_s: g.compute_time_s,
      memory_time_s: g.memory_time_s, bound: g.bound, compute_format: g.compute_format,
      weight_only: g.weight_only, fused: false,
    };
    drawRoofline('gemm-chart', device, [op], !g.notes.some((n) => n.startsWith('ideal mode')));
  } catch (e) {
    showError('gemm-result', e);
  } finally {
    button.disabled = false;
  }
}

function describeStrategy(): void {
  const name = ($('strategy') as HTMLSelectElement).value;
  const st = state.strategies.find((x) => x.name === name);
  $('strategy-note').textContent = st ? `${st.description} (weights ${st.weights}, act ${st.act}, KV ${st.kv})` : '';
}

async function init(): Promise<void> {
  setStatus('Loading the registry…', 'busy');
  try {
    [state.devices, state.models, state.strategies, state.engines] =
      await Promise.all([api.hardware(), api.models(), api.strategies(), api.engines()]);
  } catch (e) {
    setStatus(`Cannot reach the roofline server: ${message(e)}`, 'error');
    return;
  }
  const params = new URLSearchParams(location.search);
  fillSelect('model', state.models.map((m) => [m.id, `${m.name} (${si(m.params, '', 2)} params)`]), params.get('model') ?? 'llama-3.1-8b');
  fillSelect('hardware', state.devices.map((d) => [d.id, d.name]), params.get('hardware') ?? 'gb10');
  fillSelect('strategy', state.strategies.map((x) => [x.name, x.name]), params.get('strategy') ?? 'bf16_baseline');
  // The reference (ideal kernels at the device's fractions) first, then the serving and local engines.
  const order = (e: Engine) => (e.id === 'roofline' ? 0 : e.kind === 'serving' ? 1 : 2);
  fillSelect('engine', [...state.engines].sort((a, b) => order(a) - order(b))
    .map((e) => [e.id, e.id === 'roofline' ? 'roofline (reference kernels)' : `${e.name}${e.kind === 'serving' ? '' : ` (${e.kind})`}`]),
    params.get('engine') ?? 'roofline');
  ($('engine-build') as HTMLInputElement).value = params.get('engine_build') ?? '';
  ($('engine-version') as HTMLInputElement).value = params.get('engine_version') ?? '';
  describeStrategy();
  ($('strategy') as HTMLSelectElement).addEventListener('change', describeStrategy);
  $('scenario').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void run();
  });
  fillSelect('gemm-weights', GEMM_WEIGHTS.map((f) => [f, f]), 'fp16');
  fillSelect('gemm-act', GEMM_ACTS.map((f) => [f, f]), 'fp16');
  $('gemm-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void runGemm();
  });
  setStatus('');
  initServing(state.models, state.devices);
  initSearch(state.models, state.devices);
  window.addEventListener('hashchange', () => void showPage());
  await showPage();
}

let analyzed = false;

const PAGES = ['serving', 'search', 'accuracy'];

/** Shows the page the address names (#serving, #search, #accuracy, else the analysis); each runs its default case when first shown. */
async function showPage(): Promise<void> {
  const named = location.hash.slice(1);
  const page = PAGES.includes(named) ? named : 'analyze';
  document.querySelectorAll<HTMLElement>('.page').forEach((el) => { el.hidden = el.id !== `page-${page}`; });
  document.querySelectorAll<HTMLElement>('nav.tabs a').forEach((a) => a.classList.toggle('active', a.dataset.page === page));
  if (page === 'serving') {
    await showServing();
  } else if (page === 'search') {
    await showSearch();
  } else if (page === 'accuracy') {
    await showAccuracy();
  } else if (!analyzed) {
    analyzed = true;
    void renderGpuPanel();
    await run();
  }
}

void init();
