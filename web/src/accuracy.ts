// The Accuracy page: how far the predictions are from published measurements (GET /api/validation,
// the document of `roofline validate --json`). Every case is a public measurement with its source,
// predicted with the engine its framework names; none of them set a figure of the model. The page
// shows the error of each case, the statistics by engine and metric against the issues' targets as the
// server reports them (`targets`: a median within 10%, none past 35%, each engine's median within 15%,
// no engine x metric family biased beyond 5%; the serving runs' own), and every case's numbers.
import { api, type ErrorGroup, type ServingRun, type ServingValidation, type TargetCheck, type Validation, type ValidationCase } from './api';
import { clearChart, drawServingValidation, drawValidationErrors } from './charts';
import { $, message, setStatus } from './dom';
import { esc, pct, seconds, si } from './units';

/** The |error| past which a case counts against the server's "cases past 35%" target (highlighted rows). */
const CASE_BOUND_PCT = 35;

/** The target the server names `name`; the page shows no verdict for one it does not report. */
function target(targets: TargetCheck[] | undefined, name: string): TargetCheck | undefined {
  return targets?.find((t) => t.target === name);
}

/** "target ≤ 10%", or that the server reported no such target. */
const bound = (t: TargetCheck | undefined) => (t ? `target ≤ ${t.limit}%` : 'no target reported');

const page = { shown: false };

let servingDocument: Promise<ServingValidation> | null = null;
/** The development set's serving validation, fetched once for this page and the Serving tab's accuracy note. */
export function loadServingValidation(): Promise<ServingValidation> {
  servingDocument ??= api.servingValidation().catch((e: unknown) => {
    servingDocument = null;  // a later call tries again
    throw e;
  });
  return servingDocument;
}

/** The median of `values` (interpolated), as the server's statistics take it. */
function median(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const k = (v.length - 1) / 2;
  return v[Math.floor(k)] + (v[Math.ceil(k)] - v[Math.floor(k)]) * (k - Math.floor(k));
}

/** What the development set says about a serving prediction: how far runs of the same engine, model and
 * device (else engine and model, else engine) came out, in words; empty when it has none. */
export function servingAccuracyNote(v: ServingValidation, engine: string, model: string, hardware: string, mode: string): string[] {
  const predicted = v.rows.filter((r) => r.tpot_error_pct !== undefined && r.mode === mode);
  const scopes: Array<[string, (r: ServingRun) => boolean]> = [
    [`${engine} running ${model} on ${hardware}`, (r) => r.engine === engine && r.model === model && r.hardware === hardware],
    [`${engine} running ${model} (every device)`, (r) => r.engine === engine && r.model === model],
    [`${engine} (every model and device)`, (r) => r.engine === engine],
  ];
  for (const [what, match] of scopes) {
    const rows = predicted.filter(match);
    if (rows.length === 0) continue;
    const abs = (k: 'ttft_error_pct' | 'tpot_error_pct') => median(rows.map((r) => Math.abs(r[k]!)));
    const sgn = (k: 'ttft_error_pct' | 'tpot_error_pct') => median(rows.map((r) => r[k]!));
    const lean = (x: number, early: string, late: string) => (Math.abs(x) < 5 ? 'no clear lean' : x < 0 ? early : late);
    return [`Measured ${mode === 'disagg' ? 'disaggregated' : 'aggregated'} runs of ${what}: ${rows.length} in the development set.`,
      `TPOT: median |error| ${pct(abs('tpot_error_pct'))}, signed ${signed(sgn('tpot_error_pct'))} ` +
        `(${lean(sgn('tpot_error_pct'), 'predictions came out faster', 'predictions came out slower')}).`,
      `TTFT: median |error| ${pct(abs('ttft_error_pct'))}, signed ${signed(sgn('ttft_error_pct'))} ` +
        `(${lean(sgn('ttft_error_pct'), 'predicted first tokens came early', 'predicted first tokens came late')}).`];
  }
  return [];
}

/** A measured or predicted value in its metric's unit: seconds for latencies, tokens/s for rates
 *  (per GPU for output_tokens_per_s_per_gpu). */
function metricValue(metric: string, v: number): string {
  if (metric.endsWith('_per_gpu')) return si(v, 'tok/s/GPU');
  return metric.endsWith('_s') && !metric.endsWith('per_s') ? seconds(v) : si(v, 'tok/s');
}

const signed = (x: number) => `${x > 0 ? '+' : ''}${x.toFixed(1)}%`;

function shape(c: ValidationCase): string {
  const parts = [`batch ${c.batch}`];
  if (c.prompt > 0) parts.push(`prompt ${c.prompt}`);
  if (c.gen > 0) parts.push(`gen ${c.gen}`);
  if (c.tp > 1) parts.push(`TP ${c.tp}`);
  if ((c.pp ?? 1) > 1) parts.push(`PP ${c.pp}`);
  if (c.ep > 1) parts.push(`EP ${c.ep}`);
  return parts.join(', ');
}

function describe(c: ValidationCase): string[] {
  return [`${c.id}: ${c.model} on ${c.hardware}, ${c.engine}, ${c.weights}`, `${c.metric}, ${shape(c)}`,
    `measured ${metricValue(c.metric, c.measured)}, predicted ${metricValue(c.metric, c.predicted)} (${signed(c.error_pct)})`];
}

function stat(k: string, v: string, field: string, sub: string, bad: boolean): string {
  return `<div class="stat${bad ? ' bad' : ''}"><div class="k">${k}</div><div class="v" data-field="accuracy-${field}">${esc(v)}</div>` +
    `<div class="s">${esc(sub)}</div></div>`;
}

function renderCards(v: Validation, all: ErrorGroup, engines: ErrorGroup[]): void {
  const median = target(v.targets, 'median |error|');
  const past = target(v.targets, 'cases past 35%');
  const engine = target(v.targets, "worst engine's median |error|");
  const family = target(v.targets, "worst family's |signed median|");
  const over = engine ? engines.filter((g) => g.median_abs_error_pct > engine.limit) : [];
  $('accuracy-cards').innerHTML = [
    stat('Cases', String(v.cases.length), 'cases', 'published measurements, each with its source', false),
    stat('Median |error|', pct(all.median_abs_error_pct), 'median',
      `${bound(median)}; signed ${signed(all.median_signed_error_pct)} (+: predicted faster, TTFT longer); ` +
      `${v.optimistic_cases} of ${v.evaluated} predicted faster than measured (median ${signed(v.median_optimism_pct)} in speed)`, median?.holds === false),
    stat('p90 |error|', pct(all.p90_abs_error_pct), 'p90', `max ${pct(all.max_abs_error_pct)}`, false),
    stat('Past 35%', past ? String(past.value) : '–', 'past', 'target: none', past?.holds === false),
    stat(`Engines over ${engine?.limit ?? '–'}%`, String(over.length), 'engines-over',
      over.length > 0 ? over.map((g) => g.group.slice('engine='.length)).join(', ') : 'each within its target', engine?.holds === false),
    stat('Worst family bias', family ? pct(family.value) : '–', 'family-bias',
      family ? (family.holds ? `every engine × metric family within ±${family.limit}%` : `target ±${family.limit}%; ${family.misses.split(', ')[0]}`)
        : 'no target reported', family?.holds === false),
  ].join('');
}

function groupTable(id: string, groups: ErrorGroup[], prefix: string, target?: number): void {
  const rows = groups.map((g) => {
    const bad = target !== undefined && g.median_abs_error_pct > target;
    return `<tr${bad ? ' class="miss"' : ''}><td>${esc(g.group.slice(prefix.length))}</td><td class="num">${g.rows}</td>` +
      `<td class="num">${pct(g.median_abs_error_pct)}</td><td class="num">${pct(g.p90_abs_error_pct)}</td>` +
      `<td class="num">${pct(g.max_abs_error_pct)}</td><td class="num">${signed(g.median_signed_error_pct)}</td></tr>`;
  });
  $(id).innerHTML = '<thead><tr><th></th><th>cases</th><th>median |error|</th><th>p90</th><th>max</th><th>signed median</th>' +
    `</tr></thead><tbody>${rows.join('')}</tbody>`;
}

function caseTable(cases: ValidationCase[]): void {
  const sorted = [...cases].sort((a, b) => Math.abs(b.error_pct) - Math.abs(a.error_pct));
  const rows = sorted.map((c) => {
    const miss = Math.abs(c.error_pct) > CASE_BOUND_PCT;
    return `<tr${miss ? ' class="miss"' : ''}><td>${esc(c.id)}</td><td>${esc(c.engine)}</td><td>${esc(c.hardware)}</td>` +
      `<td>${esc(c.model)}</td><td>${esc(c.weights)}</td><td>${esc(c.metric)}</td><td>${esc(shape(c))}</td>` +
      `<td class="num">${esc(metricValue(c.metric, c.measured))}</td><td class="num">${esc(metricValue(c.metric, c.predicted))}</td>` +
      `<td class="num">${signed(c.error_pct)}</td><td class="source" title="${esc(c.source_key ? `${c.source_key}: ${c.source}` : c.source)}">${esc(c.source)}</td></tr>`;
  });
  $('accuracy-table').innerHTML = '<thead><tr><th>case</th><th>engine</th><th>device</th><th>model</th><th>weights</th>' +
    '<th>metric</th><th>shape</th><th>measured</th><th>predicted</th><th>error</th><th>source</th></tr></thead>' +
    `<tbody>${rows.join('')}</tbody>`;
}

function describeRun(r: ServingRun): string[] {
  return [`${r.id}`, `${r.engine ?? r.backend} ${r.model ?? r.model_path} on ${r.hardware ?? r.system}, ${r.mode}, TP ${r.tp}, ` +
    `${r.concurrency} clients, ${r.isl} / ${r.osl} tokens`,
    `TTFT measured ${r.measured_ttft_ms.toPrecision(3)} ms, predicted ${(r.predicted_ttft_ms ?? NaN).toPrecision(3)} ms (${signed(r.ttft_error_pct ?? NaN)})`,
    `TPOT measured ${r.measured_tpot_ms.toPrecision(3)} ms, predicted ${(r.predicted_tpot_ms ?? NaN).toPrecision(3)} ms (${signed(r.tpot_error_pct ?? NaN)})`];
}

function renderServing(v: ServingValidation): void {
  const tpot = (g: string) => v.tpot_groups.find((x) => x.group === g);
  const ttft = (g: string) => v.ttft_groups.find((x) => x.group === g);
  const aggTpot = tpot('mode=agg');
  const aggTtft = ttft('mode=agg');
  const tpotMedian = target(v.targets, 'aggregated TPOT: median |error|');
  const tpotP90 = target(v.targets, 'aggregated TPOT: p90 |error|');
  const ttftMedian = target(v.targets, 'aggregated TTFT: median |error|');
  const cards = [stat('Runs', `${v.predicted} / ${v.predicted + v.refused}`, 'serving-runs', `predicted; ${v.refused} refused with a reason`, false)];
  if (aggTpot && aggTtft) {
    cards.push(
      stat('TPOT median (agg)', pct(aggTpot.median_abs_error_pct), 'serving-tpot', `${bound(tpotMedian)}; signed ${signed(aggTpot.median_signed_error_pct)}`,
        tpotMedian?.holds === false),
      stat('TPOT p90 (agg)', pct(aggTpot.p90_abs_error_pct), 'serving-tpot-p90', bound(tpotP90), tpotP90?.holds === false),
      stat('TTFT median (agg)', pct(aggTtft.median_abs_error_pct), 'serving-ttft', `${bound(ttftMedian)}; signed ${signed(aggTtft.median_signed_error_pct)}`,
        ttftMedian?.holds === false),
      stat('TTFT p90 (agg)', pct(aggTtft.p90_abs_error_pct), 'serving-ttft-p90', `${aggTtft.rows} aggregated runs`, false));
  }
  const dis = tpot('mode=disagg');
  if (dis) cards.push(stat('Disaggregated', `${dis.rows} runs`, 'serving-disagg', `TPOT ${pct(dis.median_abs_error_pct)}, TTFT ${pct(ttft('mode=disagg')?.median_abs_error_pct ?? NaN)}`, false));
  $('accuracy-serving-cards').innerHTML = cards.join('');
  drawServingValidation('accuracy-serving-tpot', v.rows, 'tpot', describeRun);
  drawServingValidation('accuracy-serving-ttft', v.rows, 'ttft', describeRun);
  const rows = v.tpot_groups.map((g) => {
    const t = ttft(g.group);
    const cells = (x: ErrorGroup | undefined) => (x
      ? `<td class="num">${pct(x.median_abs_error_pct)}</td><td class="num">${pct(x.p90_abs_error_pct)}</td><td class="num">${signed(x.median_signed_error_pct)}</td>`
      : '<td></td><td></td><td></td>');
    return `<tr><td>${esc(g.group)}</td><td class="num">${g.rows}</td>${cells(g)}${cells(t)}</tr>`;
  });
  $('accuracy-serving-groups').innerHTML = '<thead><tr><th></th><th>runs</th><th>TPOT median |error|</th><th>p90</th><th>signed</th>' +
    `<th>TTFT median |error|</th><th>p90</th><th>signed</th></tr></thead><tbody>${rows.join('')}</tbody>`;
  $('accuracy-refusals').innerHTML = v.refusals.map((x) => `<li>${x.rows} × ${esc(x.reason)}</li>`).join('');
}

/** The serving section: its first load simulates every run of the development set (a few seconds, once a server). */
async function showServingValidation(): Promise<void> {
  setStatus('accuracy-serving-status', `Simulating the development set's serving runs (a few seconds, once)…`, 'busy');
  const t0 = performance.now();
  try {
    const v = await loadServingValidation();
    renderServing(v);
    setStatus('accuracy-serving-status', `Done: ${v.predicted + v.refused} runs in ${Math.round(performance.now() - t0)} ms.`, 'ok');
  } catch (e) {
    clearChart('accuracy-serving-tpot');
    clearChart('accuracy-serving-ttft');
    setStatus('accuracy-serving-status', `Cannot load the serving validation: ${message(e)}`, 'error');
  }
}

/** Loads and draws the page the first time its tab is shown; the cases do not change while the server runs. */
export async function showAccuracy(): Promise<void> {
  if (page.shown) return;
  page.shown = true;
  const serving = showServingValidation();
  setStatus('accuracy-status', 'Predicting the published cases…', 'busy');
  const t0 = performance.now();
  let v: Validation;
  try {
    v = await api.validation();
  } catch (e) {
    page.shown = false;  // a later visit tries again
    clearChart('accuracy-chart');
    setStatus('accuracy-status', `Cannot load the validation: ${message(e)}`, 'error');
    return;
  }
  const all = v.groups.find((g) => g.group === 'all');
  if (!all || v.cases.length === 0) {
    setStatus('accuracy-status', 'The server reported no cases.', 'error');
    return;
  }
  const engines = v.groups.filter((g) => g.group.startsWith('engine='));
  const metrics = v.groups.filter((g) => g.group.startsWith('metric='));
  // Worst first: where the model fits a source and where it does not.
  const sources = v.groups.filter((g) => g.group.startsWith('source='))
    .sort((a, b) => b.median_abs_error_pct - a.median_abs_error_pct);
  renderCards(v, all, engines);
  drawValidationErrors('accuracy-chart', v.cases, describe);
  groupTable('accuracy-engines', engines, 'engine=', target(v.targets, "worst engine's median |error|")?.limit);
  groupTable('accuracy-metrics', metrics, 'metric=');
  groupTable('accuracy-sources', sources, 'source=');
  caseTable(v.cases);
  $('accuracy-sub').textContent = `${v.cases.length} cases, version ${v.version}`;
  setStatus('accuracy-status', `Done: ${v.cases.length} cases in ${Math.round(performance.now() - t0)} ms.`, 'ok');
  await serving;
}
