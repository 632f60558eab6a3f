// The app's charts: the roofline itself (log-log), strategy bars, memory against
// context, the batch x context heatmap, the serving curves (throughput against
// interactivity, latency against concurrency) and the deployment search's Pareto
// front. Chart.js draws all but the heatmap.
import { Chart, registerables, type ActiveElement, type ChartConfiguration, type ChartDataset, type ChartEvent, type Plugin,
  type Scale, type TooltipItem } from 'chart.js';
import type { Candidate, Deployment, Device, Op, SearchResult, Serving, ServingRun, SweepRow, ValidationCase } from './api';
import { bytes, counted, esc, flopsPerS, pct, seconds, si, tokens } from './units';

Chart.register(...registerables);
Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
Chart.defaults.color = '#3b4252';
Chart.defaults.animation = false;

const COLORS = ['#2563eb', '#d97706', '#059669', '#7c3aed', '#db2777', '#0891b2', '#65a30d', '#dc2626'];
const BOUND_COLOR: Record<string, string> = { memory: '#2563eb', compute: '#ea580c', overhead: '#6b7280',
  communication: '#7c3aed' };

// Chart.js types each chart by its kind; this module keeps charts of every kind in one map.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyChart = Chart<any, any, any>;
const charts = new Map<string, AnyChart>();
// Reachable from the console and the browser test: window.rooflineCharts.get('roofline-chart').
(window as unknown as { rooflineCharts: Map<string, AnyChart> }).rooflineCharts = charts;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function draw(canvasId: string, config: ChartConfiguration<any, any, any>): AnyChart {
  charts.get(canvasId)?.destroy();
  const canvas = document.getElementById(canvasId) as HTMLCanvasElement;
  const chart = new Chart(canvas, config);
  charts.set(canvasId, chart);
  return chart;
}

type Point = { x: number; y: number; op?: Op; share?: number };

/** The formats whose roofs are drawn: those the operators compute in, 16-bit, and the device's fastest. */
function roofFormats(device: Device, ops: Op[]): string[] {
  const peaks = Object.entries(device.peaks).filter(([, v]) => v > 0);
  const wanted = new Set(ops.map((o) => o.compute_format));
  wanted.add(device.peaks['bf16'] ? 'bf16' : 'fp16');
  const fastest = peaks.reduce((a, b) => (b[1] > a[1] ? b : a), peaks[0]);
  if (fastest) wanted.add(fastest[0]);
  return peaks.filter(([f]) => wanted.has(f)).sort((a, b) => a[1] - b[1]).map(([f]) => f).slice(-4);
}

export function drawRoofline(canvasId: string, device: Device, ops: Op[], realistic: boolean): void {
  const bw = device.bandwidth_Bps;
  const formats = roofFormats(device, ops);
  // An operator with no bytes of its own (fused into its neighbour) has no intensity to plot.
  const computing = ops.filter((o) => o.flops > 0 && o.time_s > 0 && o.ai > 0);
  const ais = computing.map((o) => o.ai).filter((x) => x > 0);
  const ridges = formats.map((f) => device.peaks[f] / bw);
  const xMin = Math.min(0.1, ...ais.map((x) => x / 3));
  const xMax = Math.max(...ridges.map((r) => r * 8), ...ais.map((x) => x * 3), 10);
  const total = ops.reduce((s, o) => s + o.time_s, 0);
  const datasets: ChartDataset<'scatter', Point[]>[] = [];

  formats.forEach((f, i) => {
    const peak = device.peaks[f];
    const ridge = peak / bw;
    const color = COLORS[(i + 3) % COLORS.length];
    datasets.push({
      label: `${f} roof ${flopsPerS(peak)}`,
      data: [{ x: xMin, y: bw * xMin }, { x: ridge, y: peak }, { x: xMax, y: peak }],
      showLine: true, pointRadius: 0, borderColor: color, borderWidth: 2, backgroundColor: color,
    });
    if (realistic) {
      const frac = device.matmul_fraction[f] ?? device.matmul_fraction['default'] ?? 1;
      const bwr = bw * device.bandwidth_fraction;
      datasets.push({
        label: `${f} achievable (${pct(frac * 100, 0)} of peak, ${pct(device.bandwidth_fraction * 100, 0)} of bandwidth)`,
        data: [{ x: xMin, y: bwr * xMin }, { x: (peak * frac) / bwr, y: peak * frac }, { x: xMax, y: peak * frac }],
        showLine: true, pointRadius: 0, borderColor: color, borderDash: [6, 4], borderWidth: 1.5,
        backgroundColor: color,
      });
    }
  });

  for (const bound of ['memory', 'compute']) {
    const pts: Point[] = computing.filter((o) => o.bound === bound).map((o) => ({
      x: Math.max(o.ai, xMin), y: o.flops / o.time_s, op: o, share: o.time_s / total,
    }));
    if (pts.length === 0) continue;
    datasets.push({
      label: `operators, ${bound}-bound`,
      data: pts,
      pointRadius: pts.map((p) => 4 + 14 * Math.sqrt(p.share ?? 0)),
      pointHoverRadius: pts.map((p) => 6 + 14 * Math.sqrt(p.share ?? 0)),
      backgroundColor: BOUND_COLOR[bound] + 'b0',
      borderColor: '#ffffff',
      borderWidth: 1,
    });
  }

  const tick = (unit: string) => (v: number | string) => {
    const n = Number(v);
    const exp = Math.log10(n);
    return Math.abs(exp - Math.round(exp)) < 1e-6 ? si(n, unit, 1) : '';
  };

  draw(canvasId, {
    type: 'scatter',
    data: { datasets },
    options: {
      maintainAspectRatio: false,
      interaction: { mode: 'nearest', intersect: true },
      scales: {
        x: { type: 'logarithmic', min: xMin, max: xMax,
             title: { display: true, text: 'arithmetic intensity (FLOP / byte)' }, ticks: { callback: tick('') } },
        y: { type: 'logarithmic',
             title: { display: true, text: 'attained FLOP/s' }, ticks: { callback: tick('FLOP/s') } },
      },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 12, usePointStyle: true } },
        tooltip: {
          filter: (item: TooltipItem<'scatter'>) => Boolean((item.raw as Point).op),
          callbacks: {
            title: (items: TooltipItem<'scatter'>[]) => (items[0].raw as Point).op?.name ?? '',
            label: (item: TooltipItem<'scatter'>) => {
              const p = item.raw as Point;
              const o = p.op!;
              return [
                `${o.bound}-bound, ${o.compute_format}${o.weight_only ? ' (weight-only)' : ''}`,
                `time ${seconds(o.time_s)} (${pct((p.share ?? 0) * 100)} of the step)`,
                `${si(o.flops, 'FLOP')} over ${bytes(o.bytes)}`,
                `intensity ${o.ai.toPrecision(3)} FLOP/B, attains ${flopsPerS(p.y)}`,
                `× ${o.count} ${o.count === 1 ? 'instance' : 'instances'}`,
              ];
            },
          },
        },
      },
    },
  });
}

/** Three bar charts over the same strategies: speedup, memory, quality loss. */
export function drawStrategies(candidates: Candidate[], capacityBytes: number): void {
  const sorted = [...candidates].sort((a, b) => b.predicted_speedup - a.predicted_speedup);
  const labels = sorted.map((c) => c.strategy);
  const color = sorted.map((c) => (c.feasible ? '#059669' : '#9ca3af'));
  const common = (title: string) => ({
    indexAxis: 'y' as const,
    maintainAspectRatio: false,
    plugins: {
      legend: { display: false },
      title: { display: true, text: title },
      tooltip: {
        callbacks: {
          afterLabel: (item: TooltipItem<'bar'>) => {
            const c = sorted[item.dataIndex];
            return c.feasible ? `time ${seconds(c.time_s)}` : `rejected: ${c.rejected_because.join('; ')}`;
          },
        },
      },
    },
  });
  draw('speedup-chart', {
    type: 'bar',
    data: { labels, datasets: [{ label: 'speedup', data: sorted.map((c) => c.predicted_speedup), backgroundColor: color }] },
    options: { ...common('Speedup over 16-bit (×)'), scales: { x: { beginAtZero: true } } },
  });
  draw('memory-chart', {
    type: 'bar',
    data: { labels, datasets: [{ label: 'memory (GB)', data: sorted.map((c) => c.memory_bytes / 1e9), backgroundColor: color }] },
    options: { ...common(`Memory (GB; the device has ${bytes(capacityBytes)})`), scales: { x: { beginAtZero: true } } },
  });
  draw('quality-chart', {
    type: 'bar',
    data: { labels, datasets: [{ label: 'quality loss (%)', data: sorted.map((c) => c.quality_loss_pct), backgroundColor: color }] },
    options: { ...common('Estimated quality loss (%)'), scales: { x: { beginAtZero: true } } },
  });
}

/** Memory (weights + KV cache) against context, one line per strategy, with the device's capacity. */
export function drawMemoryByContext(rows: SweepRow[], capacityBytes: number): void {
  const strategies = [...new Set(rows.map((r) => r.strategy || 'as chosen'))];
  const contexts = [...new Set(rows.map((r) => r.seq_len))].sort((a, b) => a - b);
  const datasets: ChartDataset<'line', number[]>[] = strategies.map((s, i) => ({
    label: s,
    data: contexts.map((c) => {
      const row = rows.find((r) => (r.strategy || 'as chosen') === s && r.seq_len === c);
      return row && !row.error ? row.memory_total_bytes / 1e9 : NaN;
    }),
    borderColor: COLORS[i % COLORS.length], backgroundColor: COLORS[i % COLORS.length], tension: 0.15, pointRadius: 2,
  }));
  datasets.push({
    label: 'device memory', data: contexts.map(() => capacityBytes / 1e9),
    borderColor: '#dc2626', borderDash: [6, 4], pointRadius: 0, borderWidth: 1.5,
  });
  draw('kv-chart', {
    type: 'line',
    data: { labels: contexts.map(tokens), datasets },
    options: {
      maintainAspectRatio: false,
      scales: {
        x: { title: { display: true, text: 'context (tokens)' } },
        y: { beginAtZero: true, title: { display: true, text: 'memory (GB)' } },
      },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 12 } },
        tooltip: { callbacks: { label: (i: TooltipItem<'line'>) => `${i.dataset.label}: ${Number(i.raw).toPrecision(3)} GB` } },
      },
    },
  });
}

/** A batch x context grid of tokens per second; cells that do not fit in memory are marked. */
export function drawHeatmap(el: HTMLElement, rows: SweepRow[], phase: string): void {
  const batches = [...new Set(rows.map((r) => r.batch))].sort((a, b) => a - b);
  const contexts = [...new Set(rows.map((r) => r.seq_len))].sort((a, b) => a - b);
  const rate = (r: SweepRow) => r.tokens_per_s;
  const fitting = rows.filter((r) => !r.error && r.fits).map(rate);
  const lo = Math.log(Math.min(...fitting, 1));
  const hi = Math.log(Math.max(...fitting, 1));
  const shade = (v: number) => {
    const t = hi > lo ? (Math.log(v) - lo) / (hi - lo) : 1;
    // light blue to deep blue
    const l = 94 - 58 * t;
    return `hsl(217 85% ${l}%)`;
  };
  let html = `<table class="heat"><thead><tr><th class="corner">batch \\ context</th>${contexts.map((c) => `<th>${tokens(c)}</th>`).join('')}</tr></thead><tbody>`;
  for (const b of batches) {
    html += `<tr><th>${b}</th>`;
    for (const c of contexts) {
      const r = rows.find((x) => x.batch === b && x.seq_len === c);
      if (!r) { html += '<td></td>'; continue; }
      if (r.error) { html += `<td class="oom" title="${esc(r.error)}">n/a</td>`; continue; }
      const v = rate(r);
      const title = `batch ${b}, context ${c}: ${si(v, 'tok/s')} (${seconds(r.time_s)} per ${phase === 'decode' ? 'step' : 'prefill'}), ${bytes(r.memory_total_bytes)} of memory, ${r.bound}-bound${r.fits ? '' : ' — does not fit'}`;
      if (!r.fits) {
        html += `<td class="oom" title="${esc(title)}">OOM</td>`;
      } else {
        const dark = hi > lo && (Math.log(v) - lo) / (hi - lo) > 0.55;
        html += `<td style="background:${shade(v)};color:${dark ? '#fff' : '#0f172a'}" title="${esc(title)}">${si(v, '', 2)}</td>`;
      }
    }
    html += '</tr>';
  }
  html += '</tbody></table><div class="legend-note">tokens per second (all sequences together); OOM: weights and KV cache exceed the device memory</div>';
  el.innerHTML = html;
}

/** A rolling line of the last samples of one GPU metric. */
export function drawSparkline(canvasId: string, label: string, values: number[], max?: number): void {
  const existing = charts.get(canvasId);
  if (existing) {
    existing.data.labels = values.map((_, i) => i);
    existing.data.datasets[0].data = values;
    existing.update('none');
    return;
  }
  draw(canvasId, {
    type: 'line',
    data: { labels: values.map((_, i) => i), datasets: [{ label, data: values, borderColor: '#2563eb', pointRadius: 0, fill: true, backgroundColor: '#2563eb22' }] },
    options: { maintainAspectRatio: false, plugins: { legend: { display: false }, title: { display: true, text: label } },
               scales: { x: { display: false }, y: { beginAtZero: true, max } } },
  });
}

/** Removes a chart (its canvas stays, blank): for a panel whose data failed to load. */
export function clearChart(canvasId: string): void {
  charts.get(canvasId)?.destroy();
  charts.delete(canvasId);
}

// Serving points: one per concurrency. Beyond the KV capacity, requests wait for a slot.
const FITS_COLOR = '#2563eb';
const QUEUED_COLOR = '#dc2626';
const SELECTED_COLOR = '#f59e0b';
type ServingPoint = { x: number; y: number; r: Serving };

/** Writes each point's concurrency beside it (Chart.js has no data labels of its own). */
function concurrencyLabels(datasetIndex: number): Plugin<'scatter'> {
  return {
    id: 'concurrency-labels',
    afterDatasetsDraw(chart) {
      const meta = chart.getDatasetMeta(datasetIndex);
      if (meta.hidden) return;
      const data = chart.data.datasets[datasetIndex].data as ServingPoint[];
      const ctx = chart.ctx;
      ctx.save();
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillStyle = '#374151';
      ctx.textBaseline = 'bottom';
      meta.data.forEach((el, i) => ctx.fillText(String(data[i].r.concurrency), el.x + 6, el.y - 4));
      ctx.restore();
    },
  };
}

const serving = (r: Serving) => r.concurrency <= r.max_concurrency_that_fits;

/**
 * The throughput/interactivity curve: output tokens/s per GPU (y) against tokens/s per user (x),
 * one point per concurrency, labelled by it. `onPick` gets the index of a clicked point.
 */
export function drawServingCurve(canvasId: string, rows: Serving[], selected: number, onPick: (i: number) => void): void {
  const points: ServingPoint[] = rows.map((r) => ({ x: r.output_tokens_per_s_per_user, y: r.output_tokens_per_s_per_gpu, r }));
  const color = rows.map((r, i) => (i === selected ? SELECTED_COLOR : serving(r) ? FITS_COLOR : QUEUED_COLOR));
  draw(canvasId, {
    type: 'scatter',
    data: {
      datasets: [{
        label: 'one point per concurrency',
        data: points,
        showLine: true,
        borderColor: '#94a3b8',
        borderWidth: 1.5,
        pointBackgroundColor: color,
        pointBorderColor: color,
        pointRadius: rows.map((_, i) => (i === selected ? 7 : 4.5)),
        pointHoverRadius: 8,
      }],
    },
    plugins: [concurrencyLabels(0)],
    options: {
      maintainAspectRatio: false,
      layout: { padding: { top: 12, right: 24 } },
      onClick: (_e: ChartEvent, elements: ActiveElement[]) => { if (elements.length > 0) onPick(elements[0].index); },
      scales: {
        x: { beginAtZero: true, title: { display: true, text: 'output tokens/s per user (interactivity)' } },
        y: { beginAtZero: true, title: { display: true, text: 'output tokens/s per GPU (throughput)' } },
      },
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: {
            title: (items: TooltipItem<'scatter'>[]) => `concurrency ${(items[0].raw as ServingPoint).r.concurrency}`,
            label: (item: TooltipItem<'scatter'>) => {
              const r = (item.raw as ServingPoint).r;
              return [
                `${si(r.output_tokens_per_s_per_gpu, 'tok/s')} per GPU, ${si(r.output_tokens_per_s_per_user, 'tok/s')} per user`,
                `TTFT ${seconds(r.ttft.mean)} (p90 ${seconds(r.ttft.p90)}), TPOT ${seconds(r.tpot.mean)} (p90 ${seconds(r.tpot.p90)})`,
                `limited by ${r.limited_by.replace('_', ' ')}${serving(r) ? '' : ` (only ${r.max_concurrency_that_fits} fit)`}`,
              ];
            },
          },
        },
      },
    },
  });
}

/** The latency chart's series, in dataset order: the means, then their p90s; the KV capacity line after. */
const LATENCY_SERIES = 4;

/**
 * TTFT and TPOT against concurrency (both axes logarithmic): the mean of each as a line, its p90
 * dashed, the band between them shaded; a line where the KV capacity is reached.
 */
export function drawServingLatency(canvasId: string, rows: Serving[], selected: number, onPick: (i: number) => void): void {
  const cs = rows.map((r) => r.concurrency);
  const times = rows.flatMap((r) => [r.ttft.mean, r.ttft.p90, r.tpot.mean, r.tpot.p90]).filter((t) => t > 0);
  const yMin = Math.min(...times) / 2;
  const yMax = Math.max(...times) * 2;
  const xMin = Math.min(...cs) / 1.5;
  const xMax = Math.max(...cs) * 1.5;
  const radius = rows.map((_, i) => (i === selected ? 7 : 3.5));
  const series = (label: string, pick: (r: Serving) => number, color: string): ChartDataset<'scatter', ServingPoint[]> => ({
    label,
    data: rows.map((r) => ({ x: r.concurrency, y: pick(r), r })),
    showLine: true, borderColor: color, backgroundColor: color, pointRadius: radius, pointHoverRadius: 8,
    pointBackgroundColor: rows.map((_, i) => (i === selected ? SELECTED_COLOR : color)),
  });
  // A p90 line, dashed, shading the band down to its mean (dataset `mean`).
  const p90 = (label: string, pick: (r: Serving) => number, color: string, mean: number): ChartDataset<'scatter', ServingPoint[]> => ({
    label,
    data: rows.map((r) => ({ x: r.concurrency, y: pick(r), r })),
    showLine: true, borderColor: color, backgroundColor: `${color}22`, borderDash: [5, 3], borderWidth: 1.5,
    pointRadius: 2, pointHoverRadius: 6, pointBackgroundColor: color, fill: mean,
  });
  const datasets: ChartDataset<'scatter', Array<{ x: number; y: number }>>[] = [
    series('TTFT (time to first token), mean', (r) => r.ttft.mean, '#7c3aed'),
    series('TPOT (time per output token), mean', (r) => r.tpot.mean, '#059669'),
    p90('TTFT p90', (r) => r.ttft.p90, '#7c3aed', 0),
    p90('TPOT p90', (r) => r.tpot.p90, '#059669', 1),
  ];
  const capacity = rows[0]?.max_concurrency_that_fits ?? 0;
  if (capacity >= xMin && capacity <= xMax) {
    datasets.push({
      label: `KV capacity: ${capacity} requests`,
      data: [{ x: capacity, y: yMin }, { x: capacity, y: yMax }],
      showLine: true, pointRadius: 0, borderColor: QUEUED_COLOR, backgroundColor: QUEUED_COLOR, borderDash: [6, 4], borderWidth: 1.5,
    });
  }
  const decade = (v: number | string) => {
    const e = Math.log10(Number(v));
    return Math.abs(e - Math.round(e)) < 1e-6 ? seconds(Number(v)) : '';
  };
  draw(canvasId, {
    type: 'scatter',
    data: { datasets },
    options: {
      maintainAspectRatio: false,
      onClick: (_e: ChartEvent, elements: ActiveElement[]) => {
        const hit = elements.find((el) => el.datasetIndex < LATENCY_SERIES);
        if (hit) onPick(hit.index);
      },
      scales: {
        x: { type: 'logarithmic', min: xMin, max: xMax, title: { display: true, text: 'concurrency (clients)' },
             afterBuildTicks: (axis: Scale) => { axis.ticks = cs.map((value) => ({ value })); },
             ticks: { callback: (v: number | string) => String(v) } },
        y: { type: 'logarithmic', min: yMin, max: yMax, title: { display: true, text: 'seconds' }, ticks: { callback: decade } },
      },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 12 } },
        tooltip: {
          filter: (item: TooltipItem<'scatter'>) => item.datasetIndex < LATENCY_SERIES,
          callbacks: {
            title: (items: TooltipItem<'scatter'>[]) => `concurrency ${(items[0].raw as ServingPoint).r.concurrency}`,
            label: (item: TooltipItem<'scatter'>) => `${item.dataset.label}: ${seconds((item.raw as ServingPoint).y)}`,
          },
        },
      },
    },
  });
}

// The deployment search: the Pareto front of tokens/s per GPU against tokens/s per user, the
// best configuration meeting the targets and the runners-up, and the TPOT target as a line.
const MEETS_COLOR = '#059669';
const MISSES_COLOR = '#9ca3af';
const RUNNER_COLOR = '#7c3aed';
type SearchPoint = { x: number; y: number; d?: Deployment; why?: string };

/** The marker of a layout: circles for aggregated instances, triangles for disaggregated units. */
const MODE_STYLE = { agg: 'circle', disagg: 'triangle' } as const;
export const MODE_WORDS = { agg: 'aggregated', disagg: 'disaggregated' } as const;

/** Attention DP and EP within a TP: " with DP attention, EP 8", or nothing. */
const parallelWords = (attentionDp: number, ep: number) =>
  attentionDp > 1 || ep > 1
    ? ` with ${[attentionDp > 1 ? 'DP attention' : '', ep > 1 ? `EP ${ep}` : ''].filter((x) => x).join(', ')}`
    : '';

/** A disaggregated deployment's pools, as the Serving tab says them: "prefill 2 × TP 2, decode 1 × TP 4". */
export const deploymentPools = (d: Deployment) =>
  `prefill ${d.prefill_workers} × TP ${d.prefill_tp}${parallelWords(d.prefill_attention_dp ?? 1, d.prefill_ep ?? 1)}, ` +
  `decode ${d.decode_workers} × TP ${d.decode_tp}${parallelWords(d.attention_dp, d.ep)}`;

/**
 * A deployment's layout in words: "aggregated: 4 replicas at TP 2", or "disaggregated: prefill
 * 2 × TP 2, decode 1 × TP 4; 1 replica". The server's `name` says it in short.
 */
export function deploymentLayout(d: Deployment): string {
  return d.mode === 'disagg'
    ? `disaggregated: ${deploymentPools(d)}; ${counted(d.replicas, 'replica')}`
    : `aggregated: ${counted(d.replicas, 'replica')} at TP ${d.tp}${parallelWords(d.attention_dp, d.ep)}`;
}

/** The axis end at or above `v`: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten (1 for nothing above 0). */
function niceCeil(v: number): number {
  if (!(v > 0) || !Number.isFinite(v)) return 1;
  const decade = 10 ** Math.floor(Math.log10(v));
  return [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].map((m) => m * decade).find((x) => x >= v * (1 - 1e-12)) ?? 10 * decade;
}

/** Drops an axis's last tick (its set maximum) where it falls closer to the one before than a step. */
function dropCrowdedEnd(axis: Scale): void {
  const t = axis.ticks;
  if (t.length < 3) return;
  const step = t[1].value - t[0].value;
  if (t[t.length - 1].value - t[t.length - 2].value < 0.75 * step) t.pop();
}

/** Names one configuration; "" for a point that is none (a line). */
const deploymentKey = (d: Deployment | undefined) => (d ? `${d.name}/${d.concurrency_per_replica}` : '');

/** Dataset order of the search chart; Chart.js draws the first on top and lists it first in a tooltip. */
const SEARCH_BEST = 0;
const SEARCH_RUNNERS = 1;

/**
 * Writes text beside the points of some datasets: `labels` maps a dataset index to one text per
 * point, its font, and whether it goes below the points rather than above.
 */
function pointLabels(labels: Map<number, { text: string[]; font: string; below: boolean }>): Plugin<'scatter'> {
  return {
    id: 'point-labels',
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      ctx.save();
      ctx.fillStyle = '#1f2937';
      for (const [index, { text, font, below }] of labels) {
        const meta = chart.getDatasetMeta(index);
        if (meta.hidden) continue;
        ctx.font = font;
        meta.data.forEach((el, i) => {
          // Above the point, or below it; past the middle of the plot, to its left.
          const right = el.x > (chart.chartArea.left + chart.chartArea.right) / 2;
          ctx.textAlign = right ? 'right' : 'left';
          ctx.textBaseline = below ? 'top' : 'bottom';
          ctx.fillText(text[i] ?? '', el.x + (right ? -9 : 9), el.y + (below ? 6 : -6));
        });
      }
      ctx.restore();
    },
  };
}

/**
 * The search's answer on one chart: output tokens/s per GPU (y) against tokens/s per user (x). The
 * Pareto front as a line through its points, green where they meet the targets and grey where
 * they miss, circles for aggregated layouts and triangles for disaggregated ones; the best (a
 * star, labelled) and the runners-up (rings or triangles as their layout, numbered as in the
 * table); the TPOT target as the vertical line tokens/s per user = 1 / tpot_max. Hover a point for
 * its figures.
 */
export function drawSearchFront(canvasId: string, r: SearchResult): void {
  const point = (d: Deployment, why?: string): SearchPoint =>
    ({ x: d.output_tokens_per_s_per_user, y: d.output_tokens_per_s_per_gpu, d, why });
  const best = r.best ? [point(r.best)] : [];
  const runners = r.runners_up.map((d) => point(d, d.why));
  const front = r.front.map((d) => point(d));
  const all = [...best, ...runners, ...front];
  const target = r.tpot_max_s ? 1 / r.tpot_max_s : NaN;
  const xMax = niceCeil(Math.max(...all.map((p) => p.x), Number.isFinite(target) ? target : 0) * 1.05);
  const yMax = niceCeil(Math.max(...all.map((p) => p.y)) * 1.08);
  // The front's points by whether they meet the targets (colour) and by layout (marker).
  const frontPart = (meets: boolean, mode: Deployment['mode']): ChartDataset<'scatter', SearchPoint[]> => ({
    label: `front, ${meets ? 'meets' : 'misses'} the targets (${MODE_WORDS[mode]})`,
    data: front.filter((p) => p.d!.meets_targets === meets && p.d!.mode === mode),
    pointStyle: MODE_STYLE[mode], pointRadius: mode === 'disagg' ? 6 : 5, pointHoverRadius: 8,
    borderColor: meets ? MEETS_COLOR : MISSES_COLOR, backgroundColor: meets ? MEETS_COLOR : MISSES_COLOR,
  });
  const datasets: ChartDataset<'scatter', SearchPoint[]>[] = [
    {
      label: r.best ? `best: ${r.best.name}, ${r.best.concurrency_per_replica} per replica` : 'best: none meets the targets',
      data: best, pointStyle: 'star', pointRadius: 12, pointHoverRadius: 14, borderWidth: 2.5,
      borderColor: SELECTED_COLOR, backgroundColor: SELECTED_COLOR,
    },
    {
      label: r.best ? 'runners-up' : 'most tokens/s per GPU, missing the targets',
      data: runners, pointRadius: 8, pointHoverRadius: 10, borderWidth: 2,
      pointStyle: runners.map((p) => MODE_STYLE[p.d!.mode]),
      borderColor: RUNNER_COLOR, backgroundColor: '#7c3aed1a',
    },
    frontPart(true, 'agg'),
    frontPart(true, 'disagg'),
    frontPart(false, 'agg'),
    frontPart(false, 'disagg'),
    {
      label: 'Pareto front',
      data: front.map((p) => ({ x: p.x, y: p.y })), showLine: true, pointRadius: 0, pointHitRadius: 0, pointStyle: 'line',
      borderColor: '#94a3b8', backgroundColor: '#94a3b8', borderWidth: 1.5,
    },
  ];
  if (Number.isFinite(target)) {
    datasets.push({
      label: `TPOT target: ${seconds(r.tpot_max_s!)} (${si(target, 'tok/s', 3)} per user)`,
      data: [{ x: target, y: 0 }, { x: target, y: yMax }], showLine: true, pointRadius: 0, pointHitRadius: 0, pointStyle: 'line',
      borderColor: QUEUED_COLOR, backgroundColor: QUEUED_COLOR, borderDash: [6, 4], borderWidth: 1.5,
    });
  }
  const labels = new Map([
    [SEARCH_BEST, { text: best.map((p) => `${p.d!.name}, ${p.d!.concurrency_per_replica} per replica`),
                    font: 'bold 12px system-ui, sans-serif', below: false }],
    [SEARCH_RUNNERS, { text: runners.map((_, i) => String(i + (r.best ? 2 : 1))), font: '11px system-ui, sans-serif', below: true }],
  ]);
  draw(canvasId, {
    type: 'scatter',
    data: { datasets },
    plugins: [pointLabels(labels)],
    options: {
      maintainAspectRatio: false,
      layout: { padding: { top: 16, right: 24 } },
      interaction: { mode: 'nearest', intersect: true },
      scales: {
        x: { beginAtZero: true, max: xMax, title: { display: true, text: 'output tokens/s per user (interactivity)' },
             afterBuildTicks: dropCrowdedEnd, ticks: { callback: (v: number | string) => si(Number(v), '') } },
        y: { beginAtZero: true, max: yMax, title: { display: true, text: 'output tokens/s per GPU (throughput)' },
             afterBuildTicks: dropCrowdedEnd, ticks: { callback: (v: number | string) => si(Number(v), '') } },
      },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 12, usePointStyle: true,
          filter: (item: { datasetIndex?: number }, data: { datasets: Array<{ data: unknown[] }> }) =>
            data.datasets[item.datasetIndex ?? 0].data.length > 0 } },
        tooltip: {
          // Points drawn at one place (two deployments with the same figures) are listed best first,
          // then the runners-up, then the front.
          itemSort: (a: TooltipItem<'scatter'>, b: TooltipItem<'scatter'>) => a.datasetIndex - b.datasetIndex,
          // A point drawn twice (the best is often on the front) is described once, by its first
          // dataset (the best's, then the runners-up's), whatever order the hit test found them in.
          filter: (item: TooltipItem<'scatter'>, _index: number, items: TooltipItem<'scatter'>[]) => {
            const key = deploymentKey((item.raw as SearchPoint).d);
            if (key === '') return false;
            const same = items.filter((x) => deploymentKey((x.raw as SearchPoint).d) === key);
            return same.every((x) => x.datasetIndex >= item.datasetIndex) &&
              same.find((x) => x.datasetIndex === item.datasetIndex) === item;
          },
          callbacks: {
            title: (items: TooltipItem<'scatter'>[]) => {
              const d = (items[0].raw as SearchPoint).d!;
              return `${d.name}, concurrency ${d.concurrency_per_replica} per replica`;
            },
            label: (item: TooltipItem<'scatter'>) => {
              const p = item.raw as SearchPoint;
              const d = p.d!;
              const lines = [
                deploymentLayout(d),
                `${si(d.output_tokens_per_s_per_gpu, 'tok/s')} per GPU (${si(d.output_tokens_per_s, 'tok/s')} in all), ` +
                  `${si(d.output_tokens_per_s_per_user, 'tok/s')} per user`,
                `TTFT ${seconds(d.ttft_s)}, TPOT ${seconds(d.tpot_s)}; limited by ${d.limited_by.replace('_', ' ')}`,
                d.meets_targets ? 'meets the targets' : `misses: ${d.misses}`,
              ];
              if (item.datasetIndex === SEARCH_BEST) lines.unshift('best: most tokens/s per GPU meeting the targets');
              if (p.why && p.why !== d.misses) lines.push(`lost: ${p.why}`);
              return lines;
            },
          },
        },
      },
    },
  });
}

/** Shows one of the search chart's deployments as hovered, with its tooltip: rank 0 is the best,
 * 1 and on the runners-up; null clears it. */
export function showSearchPoint(canvasId: string, rank: number | null): void {
  const chart = charts.get(canvasId);
  if (!chart) return;
  const active = rank === null ? []
    : rank === 0 ? [{ datasetIndex: SEARCH_BEST, index: 0 }] : [{ datasetIndex: SEARCH_RUNNERS, index: rank - 1 }];
  const shown = active.filter((a) => chart.data.datasets[a.datasetIndex]?.data.length > a.index);
  chart.setActiveElements(shown);
  chart.tooltip?.setActiveElements(shown, { x: 0, y: 0 });
  chart.update('none');
}

type ScatterScales = NonNullable<NonNullable<ChartConfiguration<'scatter'>['options']>['scales']>;

/**
 * A scatter chart of the Accuracy page: each point carries its record, which the tooltip describes;
 * `guides` draws the reference lines under the points.
 */
function drawRecords<P extends { x: number; y: number }>(canvasId: string, datasets: Array<ChartDataset<'scatter', P[]>>,
  scales: ScatterScales, describe: (p: P) => string[], guides: Plugin<'scatter'>): void {
  draw(canvasId, {
    type: 'scatter',
    data: { datasets },
    options: {
      maintainAspectRatio: false,
      scales,
      plugins: {
        legend: { position: 'bottom' },
        tooltip: { callbacks: { label: (item: TooltipItem<'scatter'>) => describe(item.raw as P) } },
      },
    },
    plugins: [guides],
  });
}

/** The error bands the accuracy targets name: a median within 10%, no case past 35%. */
const ERROR_BANDS: Array<[number, string]> = [[10, '#059669'], [35, '#dc2626']];

/** Horizontal dashed lines at ± each band (a plugin: Chart.js has no annotations of its own). */
const errorBands: Plugin<'scatter'> = {
  id: 'error-bands',
  beforeDatasetsDraw(chart) {
    const y = chart.scales.y;
    const { left, right } = chart.chartArea;
    const ctx = chart.ctx;
    ctx.save();
    ctx.setLineDash([5, 4]);
    ctx.font = '11px system-ui, sans-serif';
    for (const [band, color] of ERROR_BANDS) {
      for (const v of [band, -band]) {
        if (v < y.min || v > y.max) continue;
        const py = y.getPixelForValue(v);
        ctx.strokeStyle = color;
        ctx.beginPath();
        ctx.moveTo(left, py);
        ctx.lineTo(right, py);
        ctx.stroke();
        ctx.fillStyle = color;
        ctx.fillText(`${v > 0 ? '+' : '−'}${band}%`, right - 34, py - 3);
      }
    }
    ctx.restore();
  },
};

type CasePoint = { x: number; y: number; c: ValidationCase };

/**
 * Every published case's signed error (predicted − measured over measured), sorted, one colour per
 * engine: above zero the prediction is faster (or a TTFT longer), below it slower.
 */
export function drawValidationErrors(canvasId: string, cases: ValidationCase[], describe: (c: ValidationCase) => string[]): void {
  const sorted = [...cases].sort((a, b) => a.error_pct - b.error_pct);
  const engines = [...new Set(sorted.map((c) => c.engine))].sort();
  const datasets: Array<ChartDataset<'scatter', CasePoint[]>> = engines.map((e, i) => ({
    label: e,
    data: sorted.flatMap((c, x) => (c.engine === e ? [{ x: x + 1, y: c.error_pct, c }] : [])),
    backgroundColor: COLORS[i % COLORS.length],
    pointRadius: 4,
    pointHoverRadius: 6,
  }));
  const bound = Math.ceil(Math.max(40, ...sorted.map((c) => Math.abs(c.error_pct) + 5)) / 10) * 10;
  drawRecords(canvasId, datasets, {
    x: { title: { display: true, text: 'cases, sorted by signed error' }, min: 0, max: sorted.length + 1, ticks: { precision: 0 } },
    y: { title: { display: true, text: 'error (predicted − measured) / measured, %' }, min: -bound, max: bound },
  }, (p: CasePoint) => describe(p.c), errorBands);
}

type RunPoint = { x: number; y: number; r: ServingRun };

/** Log-axis labels at 1, 2 and 5 of each decade only, in SI ("2 k"): the default labels every tick. */
function decadeTick(value: number | string): string {
  const v = Number(value);
  const mantissa = Math.round(v / 10 ** Math.floor(Math.log10(v)));
  return [1, 2, 5].includes(mantissa) ? si(v, '') : '';
}

/** The diagonal (prediction = measurement) and the ±25% lines around it, on log-log axes. */
const diagonal: Plugin<'scatter'> = {
  id: 'diagonal',
  beforeDatasetsDraw(chart) {
    const { x, y } = chart.scales;
    const ctx = chart.ctx;
    const { left, right, top, bottom } = chart.chartArea;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, right - left, bottom - top);
    ctx.clip();
    for (const [k, color, dash] of [[1, '#111827', []], [1.25, '#dc2626', [5, 4]], [0.75, '#dc2626', [5, 4]]] as Array<[number, string, number[]]>) {
      ctx.strokeStyle = color;
      ctx.setLineDash(dash);
      ctx.beginPath();
      ctx.moveTo(x.getPixelForValue(x.min), y.getPixelForValue(x.min * k));
      ctx.lineTo(x.getPixelForValue(x.max), y.getPixelForValue(x.max * k));
      ctx.stroke();
    }
    ctx.restore();
  },
};

/**
 * Measured (x) against predicted (y) TTFT or TPOT of every predicted serving run, log-log, one colour
 * per engine; the solid diagonal is a perfect prediction, the dashed lines ±25%.
 */
export function drawServingValidation(canvasId: string, runs: ServingRun[], metric: 'ttft' | 'tpot',
  describe: (r: ServingRun) => string[]): void {
  const key = metric === 'ttft' ? (['measured_ttft_ms', 'predicted_ttft_ms'] as const) : (['measured_tpot_ms', 'predicted_tpot_ms'] as const);
  const shown = runs.filter((r) => r.predicted_tpot_ms !== undefined && r[key[0]] > 0 && (r[key[1]] ?? 0) > 0);
  const engines = [...new Set(shown.map((r) => r.engine ?? r.backend))].sort();
  const datasets: Array<ChartDataset<'scatter', RunPoint[]>> = engines.map((e, i) => ({
    label: e,
    data: shown.filter((r) => (r.engine ?? r.backend) === e).map((r) => ({ x: r[key[0]], y: r[key[1]]!, r })),
    backgroundColor: `${COLORS[i % COLORS.length]}99`,
    pointRadius: 2.5,
    pointHoverRadius: 5,
  }));
  const values = shown.flatMap((r) => [r[key[0]], r[key[1]]!]);
  const lo = 10 ** Math.floor(Math.log10(Math.min(...values)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...values)));
  const name = metric === 'ttft' ? 'TTFT' : 'TPOT';
  drawRecords(canvasId, datasets, {
    x: { type: 'logarithmic', min: lo, max: hi, title: { display: true, text: `measured ${name}, ms` }, ticks: { callback: decadeTick } },
    y: { type: 'logarithmic', min: lo, max: hi, title: { display: true, text: `predicted ${name}, ms` }, ticks: { callback: decadeTick } },
  }, (p: RunPoint) => describe(p.r), diagonal);
}
