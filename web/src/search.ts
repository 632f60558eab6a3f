// The Search page: the deployment search (POST /api/search) for a model on a number of GPUs of one
// device: every engine x weight format x layout (an aggregated instance at a TP, or disaggregated
// prefill and decode workers) x replicas x concurrency, the Pareto front of tokens/s per GPU
// against tokens/s per user, the best configuration meeting the latency targets, the runners-up
// and why they lost, and what could not run. Deployments are named as the server names them.
import { api, type Deployment, type Device, type Engine, type ModelPreset, type SearchResult } from './api';
import { clearChart, deploymentLayout, deploymentPools, drawSearchFront, MODE_WORDS, showSearchPoint } from './charts';
import { $, fillSelect, message, setStatus } from './dom';
import { esc, seconds, si } from './units';

/** The default case: the server's OpenAPI example of POST /api/search. */
const DEFAULTS = { model: 'llama-3.1-70b', hardware: 'h200', gpus: 8, isl: 1024, osl: 256, ttft_ms: '', tpot_ms: '30', modes: 'both' };
/** The layouts' choice in the form, as the request's `modes`. */
const MODES: Record<string, string[]> = { both: ['agg', 'disagg'], agg: ['agg'], disagg: ['disagg'] };
const MAX_GPUS = 4096;       // the library's limit (roofline/search.h)
const MAX_TOKENS = 1 << 30;  // kMaxSeqLen; the server checks isl + osl against it
const MAX_DRAFT_TOKENS = 16; // kMaxDraftTokens (roofline/workload.h)
const MAX_PROMPT_POOL = 1 << 20; // kMaxPromptPool (roofline/serving.h)

const page = { run: 0, shown: false, engines: null as Promise<void> | null };

function intValue(id: string, name: string, lo: number, hi: number): number {
  const v = Number(($(id) as HTMLInputElement).value);
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${name} must be a whole number from ${lo} to ${hi}`);
  return v;
}

/** A latency target typed in milliseconds, as seconds; undefined when the field is empty. */
function targetSeconds(id: string, name: string): number | undefined {
  const text = ($(id) as HTMLInputElement).value.trim();
  if (text === '') return undefined;
  const ms = Number(text);
  if (!Number.isFinite(ms) || ms <= 0) throw new Error(`the ${name} target must be a positive number of milliseconds, or empty for none`);
  return ms / 1e3;
}

/** The request from the form; throws on a bad field. */
function request(): Record<string, unknown> {
  const select = (id: string) => ($(id) as HTMLSelectElement).value;
  const engines = [...document.querySelectorAll<HTMLInputElement>('#sr-engines input:checked')].map((c) => c.value);
  if (engines.length === 0) throw new Error('choose at least one engine');
  const gpus = intValue('sr-gpus', 'GPUs', 1, MAX_GPUS);
  // A disaggregated unit holds two GPUs at least; both on one GPU searches the aggregated layouts alone.
  if (select('sr-modes') === 'disagg' && gpus < 2) {
    throw new Error('a disaggregated layout needs at least 2 GPUs: a prefill and a decode worker');
  }
  const req: Record<string, unknown> = {
    model: select('sr-model'),
    hardware: select('sr-hardware'),
    gpus,
    isl: intValue('sr-isl', 'prompt length (isl)', 1, MAX_TOKENS),
    osl: intValue('sr-osl', 'output length (osl)', 1, MAX_TOKENS),
    engines,
    modes: MODES[select('sr-modes')],
  };
  const ttft = targetSeconds('sr-ttft', 'TTFT');
  const tpot = targetSeconds('sr-tpot', 'TPOT');
  if (ttft !== undefined) req.ttft_max = ttft;
  if (tpot !== undefined) req.tpot_max = tpot;
  // Speculative decoding in every configuration, only with draft tokens.
  const drafts = intValue('sr-draft-tokens', 'draft tokens', 0, MAX_DRAFT_TOKENS);
  if (drafts > 0) {
    req.draft_tokens = drafts;
    const a = Number(($('sr-acceptance') as HTMLInputElement).value);
    if (!(a >= 0 && a <= 1)) throw new Error('acceptance must be a number from 0 to 1');
    req.acceptance = a;
  }
  const recipe = select('sr-recipe');
  if (recipe === 'aiconfigurator' || recipe === 'trtllm-bench') req.recipe = recipe;
  // Random lengths: each uniform from floor(ratio x length) to the length; 1 keeps them fixed.
  const ratio = Number(($('sr-range-ratio') as HTMLInputElement).value);
  if (!(ratio >= 0 && ratio <= 1)) throw new Error('range ratio must be a number from 0 to 1');
  if (ratio < 1) req.range_ratio = ratio;
  // The workload's prefix reuse in every configuration.
  const isl = req.isl as number;
  const shortest = ratio < 1 ? Math.max(1, Math.floor(ratio * isl)) : isl;
  const prefix = intValue('sr-shared-prefix', 'shared prefix', 0, shortest - 1);
  if (prefix > 0) req.shared_prefix = prefix;
  const pool = intValue('sr-prompt-pool', 'prompt pool', 0, MAX_PROMPT_POOL);
  if (pool > 0) req.prompt_pool = pool;
  const versions = engineVersions(($('sr-engine-versions') as HTMLInputElement).value, engines);
  if (Object.keys(versions).length > 0) req.engine_versions = versions;
  return req;
}

/** "vllm=0.11.0, sglang=0.5.6" (or a bare release when one engine is chosen) as the request's
 *  engine_versions; the server checks the releases and that each engine is searched. */
function engineVersions(text: string, engines: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of text.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
    const eq = item.indexOf('=');
    if (eq < 0 && engines.length !== 1) {
      throw new Error(`engine release "${item}": name its engine (vllm=${item}) when more than one engine is chosen`);
    }
    const id = eq < 0 ? engines[0] : item.slice(0, eq).trim();
    const version = eq < 0 ? item : item.slice(eq + 1).trim();
    if (id === '' || version === '') throw new Error(`engine release "${item}": expected ENGINE=RELEASE, e.g. vllm=0.11.0`);
    if (id in out) throw new Error(`engine release: ${id} is given two releases`);
    out[id] = version;
  }
  return out;
}

/** Fills the form from the registry; the engines come from GET /api/engines, the serving ones checked. */
export function initSearch(models: ModelPreset[], devices: Device[]): void {
  fillSelect('sr-model', models.map((m) => [m.id, `${m.name} (${si(m.params, '', 2)} params)`]), DEFAULTS.model);
  fillSelect('sr-hardware', devices.map((d) => [d.id, d.name]), DEFAULTS.hardware);
  ($('sr-gpus') as HTMLInputElement).value = String(DEFAULTS.gpus);
  ($('sr-isl') as HTMLInputElement).value = String(DEFAULTS.isl);
  ($('sr-osl') as HTMLInputElement).value = String(DEFAULTS.osl);
  ($('sr-ttft') as HTMLInputElement).value = DEFAULTS.ttft_ms;
  ($('sr-tpot') as HTMLInputElement).value = DEFAULTS.tpot_ms;
  ($('sr-modes') as HTMLSelectElement).value = DEFAULTS.modes;
  ($('sr-draft-tokens') as HTMLInputElement).value = '0';  // plain decoding
  ($('sr-acceptance') as HTMLInputElement).value = '0.85';  // the server's kDefaultDraftAcceptance
  ($('sr-range-ratio') as HTMLInputElement).value = '1';  // fixed lengths
  ($('sr-shared-prefix') as HTMLInputElement).value = '0';  // no system prompt
  ($('sr-prompt-pool') as HTMLInputElement).value = '0';  // every prompt unique
  ($('sr-engine-versions') as HTMLInputElement).value = '';  // each engine's current release
  page.engines = api.engines().then((engines: Engine[]) => {
    const order = (e: Engine) => (e.kind === 'serving' ? 0 : e.kind === 'local' ? 1 : 2);
    const sorted = [...engines].sort((a, b) => order(a) - order(b));
    $('sr-engines').innerHTML = sorted.map((e) => `<label class="check"><input type="checkbox" value="${esc(e.id)}"` +
      `${e.kind === 'serving' ? ' checked' : ''}> ${esc(e.name)}${e.kind === 'serving' ? '' : ` <span class="muted">(${esc(e.kind)})</span>`}</label>`).join('');
  });
  $('search-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void runSearch();
  });
}

/** Shows the page; the first time, runs the default case. */
export async function showSearch(): Promise<void> {
  if (page.shown) return;
  page.shown = true;
  await runSearch();
}

async function runSearch(): Promise<void> {
  try {
    await page.engines;
  } catch (e) {
    setStatus('search-status', `Cannot list the engines: ${message(e)}`, 'error');
    return;
  }
  let req: Record<string, unknown>;
  try {
    req = request();
  } catch (e) {
    setStatus('search-status', message(e), 'error');
    return;
  }
  const run = ++page.run;
  const button = $('search-run') as HTMLButtonElement;
  button.disabled = true;
  setStatus('search-status', 'Searching…', 'busy');
  const t0 = performance.now();
  try {
    let r: SearchResult;
    try {
      r = await api.search(req);
    } catch (e) {
      if (run !== page.run) return;
      renderError(message(e));
      setStatus('search-status', message(e), 'error');
      return;
    }
    if (run !== page.run) return;  // a newer search took over
    render(r);
    const ms = (performance.now() - t0).toFixed(0);
    if (r.evaluated === 0) {
      setStatus('search-status', `No configuration can run (${r.refused} refused); see why below.`, 'error');
    } else {
      setStatus('search-status', `Done: ${r.evaluated} configurations evaluated, ${r.refused} refused${skipped(r)}, in ${ms} ms.`, 'ok');
    }
  } catch (e) {
    setStatus('search-status', `The page could not show this result: ${message(e)}`, 'error');
  } finally {
    if (run === page.run) button.disabled = false;
  }
}

/** Shows the panels of a result that has deployments, and the refusals' panel, or hides them. */
function showPanels(deployments: boolean, refusals: boolean): void {
  for (const id of ['search-front-card', 'search-table-card', 'search-front-table-card']) $(id).hidden = !deployments;
  $('search-refusals-card').hidden = !refusals;
}

/** The server's error in place of the result (the form's status says it too). */
function renderError(text: string): void {
  clearChart('search-front');
  $('search-cards').innerHTML = `<div class="error wide">${esc(text)}</div>`;
  showPanels(false, false);
}

/** ", 12 skipped" after the refused count, when the document counts the skipped concurrencies. */
const skipped = (r: SearchResult) => (r.skipped !== undefined ? `, ${r.skipped} skipped` : '');

/** The targets in words: "TTFT ≤ 200 ms, TPOT ≤ 30 ms", or that there are none. */
function targets(r: SearchResult): string {
  const parts: string[] = [];
  if (r.ttft_max_s !== null) parts.push(`TTFT ≤ ${seconds(r.ttft_max_s)}`);
  if (r.tpot_max_s !== null) parts.push(`TPOT ≤ ${seconds(r.tpot_max_s)}`);
  return parts.length > 0 ? parts.join(', ') : 'no latency targets';
}

function render(r: SearchResult): void {
  $('search-sub').textContent = `${r.model} on ${r.gpus} × ${r.hardware}; ${r.isl} tokens in, ${r.osl} out; ${targets(r)}` +
    (r.ttft_max_s !== null ? ' (the TTFT target is not an axis here: green points meet it)' : '');
  renderCards(r);
  // Nothing evaluated: the cards and the refusals say why; there is no front to draw.
  showPanels(r.evaluated > 0, true);
  if (r.evaluated > 0) drawSearchFront('search-front', r);
  else clearChart('search-front');
  renderTable(r);
  renderFrontTable(r);
  renderRefusals(r);
}

function renderCards(r: SearchResult): void {
  const b = r.best;
  const gpus = `${r.gpus} GPU${r.gpus === 1 ? '' : 's'}`;
  const searched: [string, string, string, string, boolean] =
    ['Searched', String(r.evaluated), 'searched', `configurations evaluated; ${r.refused} refused (cannot run)` +
      (r.skipped !== undefined ? `, ${r.skipped} skipped (past twice what a layout runs at once)` : ''), r.evaluated === 0];
  if (!b) {
    const why = r.evaluated === 0 ? 'nothing could run on this device' : `none of ${r.evaluated} meets ${targets(r)}`;
    $('search-cards').innerHTML = card(['Best', 'none', 'best', why, true]) + card(searched);
    return;
  }
  const cards: Array<[string, string, string, string, boolean]> = [
    ['Best', b.name, 'best', `${b.mode === 'disagg' ? `${deploymentPools(b)}; ` : ''}concurrency ` +
      `${b.concurrency_per_replica} per replica, ${b.concurrency_per_replica * b.replicas} in all`, false],
    ['Per GPU', si(b.output_tokens_per_s_per_gpu, 'tok/s'), 'per-gpu', `${si(b.output_tokens_per_s, 'tok/s')} on ${gpus}`, false],
    ['Per user', si(b.output_tokens_per_s_per_user, 'tok/s'), 'per-user',
      r.tpot_max_s !== null ? `target ≥ ${si(1 / r.tpot_max_s, 'tok/s')}` : '1 / TPOT', false],
    ['TTFT', seconds(b.ttft_s), 'ttft', r.ttft_max_s !== null ? `target ≤ ${seconds(r.ttft_max_s)}` : 'no target', false],
    ['TPOT', seconds(b.tpot_s), 'tpot', r.tpot_max_s !== null ? `target ≤ ${seconds(r.tpot_max_s)}` : 'no target', false],
    searched,
  ];
  $('search-cards').innerHTML = cards.map(card).join('');
}

function card([k, v, field, sub, bad]: [string, string, string, string, boolean]): string {
  return `<div class="stat${bad ? ' bad' : ''}"><div class="k">${k}</div><div class="v" data-field="search-${field}">${esc(v)}</div>` +
    `<div class="s">${esc(sub)}</div></div>`;
}

const limit = (d: Deployment) => `<span class="limit ${esc(d.limited_by)}">${esc(d.limited_by.replace('_', ' '))}</span>`;

/** Aggregated or disaggregated, the layout in words on hover. */
const mode = (d: Deployment) => `<span class="mode ${esc(d.mode)}" title="${esc(deploymentLayout(d))}">` +
  `${MODE_WORDS[d.mode]}</span>`;

/** The columns the best, the runners-up and the front share. */
const COLUMNS: Array<[string, (d: Deployment) => string]> = [
  ['deployment', (d) => esc(d.name)],
  ['layout', mode],
  ['concurrency per replica', (d) => String(d.concurrency_per_replica)],
  ['tok/s per GPU', (d) => si(d.output_tokens_per_s_per_gpu, '')],
  ['tok/s per user', (d) => si(d.output_tokens_per_s_per_user, '')],
  ['TTFT', (d) => seconds(d.ttft_s)],
  ['TPOT', (d) => seconds(d.tpot_s)],
  ['limited by', limit],
];

/** The best and the runners-up, each with why it lost; hovering a row shows its point on the chart. */
function renderTable(r: SearchResult): void {
  const table = $('search-table');
  $('search-table-sub').textContent = r.best
    ? 'the most tokens/s per GPU meeting the targets, and the next ones'
    : r.evaluated > 0 ? `none meets ${targets(r)}: those with the most tokens/s per GPU, and what each misses` : '';
  if (r.evaluated === 0) {
    table.innerHTML = '';
    $('search-trust').innerHTML = '';
    return;
  }
  const head = `<thead><tr><th></th>${COLUMNS.map(([h]) => `<th>${h}</th>`).join('')}<th>${r.best ? 'why it lost' : 'misses'}</th></tr></thead>`;
  const rows: Array<{ rank: number; d: Deployment; why: string }> = [
    ...(r.best ? [{ rank: 0, d: r.best, why: r.ttft_max_s === null && r.tpot_max_s === null
      ? 'the most tokens/s per GPU' : 'the most tokens/s per GPU meeting the targets' }] : []),
    ...r.runners_up.map((d, i) => ({ rank: i + 1, d, why: d.why })),
  ];
  const body = rows.map(({ rank, d, why }) => {
    // Numbered as on the chart: from 2 after the best, else from 1.
    const label = rank === 0 ? '<span class="badge best">best</span>' : String(r.best ? rank + 1 : rank);
    return `<tr data-rank="${rank}" class="${rank === 0 ? 'best' : ''}${d.meets_targets ? '' : ' misses'}"><td>${label}</td>` +
      `${COLUMNS.map(([, f]) => `<td>${f(d)}</td>`).join('')}<td class="why">${esc(why)}</td></tr>`;
  }).join('');
  table.innerHTML = `${head}<tbody>${body}</tbody>`;
  // Each ranked engine's track record: how much its margins can be trusted.
  $('search-trust').innerHTML = r.notes.map((n) => `<li>${esc(n)}</li>`).join('');
  table.querySelectorAll<HTMLElement>('tbody tr').forEach((tr) => {
    tr.addEventListener('mouseenter', () => showSearchPoint('search-front', Number(tr.dataset.rank)));
    tr.addEventListener('mouseleave', () => showSearchPoint('search-front', null));
  });
}

/** Every point of the Pareto front, as the chart draws it. */
function renderFrontTable(r: SearchResult): void {
  $('search-front-sub').textContent = r.front.length > 0
    ? `${r.front.length} of ${r.evaluated} configurations: none of the others has more tokens/s both per GPU and per user`
    : '';
  if (r.front.length === 0) {
    $('search-front-table').innerHTML = '';
    return;
  }
  const head = `<thead><tr>${COLUMNS.map(([h]) => `<th>${h}</th>`).join('')}<th>targets</th></tr></thead>`;
  const body = r.front.map((d) => `<tr class="${d.meets_targets ? '' : 'misses'}">` +
    `${COLUMNS.map(([, f]) => `<td>${f(d)}</td>`).join('')}<td class="why">${d.meets_targets ? 'met' : esc(d.misses)}</td></tr>`).join('');
  $('search-front-table').innerHTML = `${head}<tbody>${body}</tbody>`;
}

/** The configurations that could not run, counted by reason. */
function renderRefusals(r: SearchResult): void {
  const el = $('search-refusals');
  if (r.refusals.length === 0) {
    el.innerHTML = '<div class="muted">None: every configuration could run.</div>';
    return;
  }
  el.innerHTML = `<ul class="refusals">${r.refusals.map((x) =>
    `<li><span class="n">${x.n}</span> ${esc(x.reason)}</li>`).join('')}</ul>`;
}
