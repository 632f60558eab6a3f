// Browser end-to-end test: the app against a running roofline server, in
// Debian's chromium driven by playwright-core. Exits non-zero on the first
// failed check, naming it.
// usage: node e2e/app.e2e.mjs http://127.0.0.1:PORT OUT_DIR
import { chromium } from 'playwright-core';
import { join } from 'node:path';

const [base, outDir] = process.argv.slice(2);
if (!base || !outDir) {
  console.error('usage: node e2e/app.e2e.mjs BASE_URL OUT_DIR');
  process.exit(2);
}
const STEP_TIMEOUT_MS = 20_000;
let checks = 0;
function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  checks++;
  console.log(`ok ${checks} - ${what}`);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
let failed = false;
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  let consoleErrors = true;
  page.on('console', (m) => { if (m.type() === 'error' && consoleErrors) pageErrors.push(m.text()); });
  const external = [];
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) external.push(r.url()); });

  // 1. The app loads and analyses its default scenario.
  await page.goto(base + '/');
  await page.waitForSelector('#status.ok');
  check(await page.locator('#model option').count() >= 10, 'model presets are listed');
  check(await page.locator('#hardware option').count() >= 10, 'devices are listed');

  // 2. Choose a model and a device, a longer context, and an FP8 plan.
  await page.selectOption('#model', 'qwen3-8b');
  await page.selectOption('#hardware', 'h100-sxm');
  await page.fill('#seq-len', '8192');
  await page.selectOption('#strategy', 'fp8_balanced');
  await page.click('#run');
  await page.waitForSelector('#status.ok');
  const status = await page.textContent('#status');
  check(/^Done in \d+ ms\.$/.test(status ?? ''), `status says done (${status})`);
  const sub = await page.textContent('#roofline-sub');
  check(sub.includes('H100') && sub.includes('qwen3-8b'), `the chart is of the chosen model and device (${sub})`);
  const time = await page.textContent('[data-field="time"]');
  check(/^[\d.]+ (ms|µs|s)$/.test(time ?? ''), `a step time is shown (${time})`);
  const generation = await page.textContent('[data-field="generation"]');
  check(/^[\d.]+ (ms|µs|s) · [\d.]+ (ms|µs|s)$/.test(generation ?? ''), `TTFT and TPOT are shown (${generation})`);

  // 2a. A follow-up turn: the prompt after cached tokens takes longer, and the card says so;
  // cached tokens before a decode step are refused before any request.
  await page.selectOption('#phase', 'prefill');
  await page.click('#run');
  await page.waitForSelector('#status.ok');
  const firstTurn = await page.evaluate(() => document.querySelector('[data-field="time"]')?.textContent);
  await page.fill('#cached', '32768');
  await page.click('#run');
  await page.waitForSelector('#status.ok');
  const followUp = await page.textContent('.stat:has([data-field="generation"])');
  check(/8K-token prompt after 32K cached/.test(followUp ?? ''), `the generation card says the prompt follows cached tokens (${followUp})`);
  check(/recomputing the cached tokens/.test(followUp ?? ''), `the card gives the TTFT without a prefix cache (${followUp})`);
  const laterTime = await page.textContent('[data-field="time"]');
  check(laterTime !== firstTurn, `the prefill after 32K cached tokens takes another time (${firstTurn} -> ${laterTime})`);
  await page.selectOption('#phase', 'decode');
  await page.click('#run');
  await page.waitForSelector('#status.error');
  check(/prefill/.test(await page.textContent('#status') ?? ''), 'cached tokens before a decode step are refused');
  await page.fill('#cached', '0');
  await page.click('#run');
  await page.waitForSelector('#status.ok');

  // 3. The roofline chart: roofs and operator points, and a tooltip on hover.
  const chart = await page.evaluate(() => {
    const c = window.rooflineCharts.get('roofline-chart');
    const ds = c.data.datasets;
    const opsIndex = ds.findIndex((d) => d.label.startsWith('operators'));
    const point = c.getDatasetMeta(opsIndex).data[0];
    const box = c.canvas.getBoundingClientRect();
    return {
      roofs: ds.filter((d) => d.label.includes('roof')).length,
      points: ds.filter((d) => d.label.startsWith('operators')).reduce((n, d) => n + d.data.length, 0),
      xLog: c.options.scales.x.type === 'logarithmic' && c.options.scales.y.type === 'logarithmic',
      hover: { x: box.left + point.x, y: box.top + point.y },
      firstOp: ds[opsIndex].data[0].op.name,
    };
  });
  check(chart.roofs >= 2, `the device's roofs are drawn (${chart.roofs})`);
  check(chart.points >= 5, `operators are plotted as points (${chart.points})`);
  check(chart.xLog, 'both axes are logarithmic');
  await page.mouse.move(chart.hover.x, chart.hover.y);
  await page.waitForFunction(() => window.rooflineCharts.get('roofline-chart').tooltip.opacity > 0);
  const tooltip = await page.evaluate(() => {
    const t = window.rooflineCharts.get('roofline-chart').tooltip;
    return { title: t.title.join(' '), body: t.body.flatMap((b) => b.lines).join(' | ') };
  });
  check(tooltip.title === chart.firstOp && /FLOP\/B/.test(tooltip.body),
        `hovering a point shows its numbers (${tooltip.title}: ${tooltip.body.slice(0, 80)}...)`);

  // 4. The recommendation with its rationale, the strategy bars, the table, KV and heatmap.
  const verdict = await page.textContent('.verdict .big');
  check((verdict ?? '').length > 0, `a recommendation is shown (${verdict})`);
  check(await page.locator('.rationale li').count() >= 3, 'the rationale is listed');
  const bars = await page.evaluate(() => window.rooflineCharts.get('speedup-chart').data.labels.length);
  check(bars >= 5, `strategies are compared as bars (${bars})`);
  const rows = await page.locator('#ops-table tbody tr').count();
  check(rows >= 10, `the per-operator table has rows (${rows})`);
  // With the tooltip still up, before the table is re-sorted.
  await page.screenshot({ path: join(outDir, 'roofline-app.png'), fullPage: true });
  console.log(`screenshot: ${join(outDir, 'roofline-app.png')}`);
  await page.click('#ops-table th[data-key="name"]');
  check((await page.getAttribute('#ops-table th[data-key="name"]', 'class')).includes('sorted'), 'the table sorts on a click');
  const kvLines = await page.evaluate(() => window.rooflineCharts.get('kv-chart').data.datasets.length);
  check(kvLines >= 3, `memory against context has a line per plan and the capacity (${kvLines})`);
  const cells = await page.locator('#heatmap td').count();
  check(cells >= 40, `the sweep heatmap has cells (${cells})`);
  // The panel fills in on its own request, apart from the analysis.
  await page.waitForFunction(() => (document.getElementById('gpu')?.textContent ?? '').trim().length > 0);
  const gpu = await page.textContent('#gpu');
  check(/NVML|GPU|utilization/.test(gpu ?? ''), 'the GPU panel says what NVML gives');

  // 4a. An engine: its card names it and its measured tables, and the table says where each
  // operator's efficiency came from; a build that is not a date is said, not sent.
  check(await page.locator('#engine option').count() >= 8, 'the engines are listed');
  check(await page.inputValue('#engine') === 'roofline', 'the reference is the default engine');
  await page.selectOption('#engine', 'vllm');
  await page.click('#run');
  await page.waitForSelector('#status.ok');
  const engineCard = await page.textContent('.stat:has([data-field="engine"])');
  check(/vLLM/.test(engineCard ?? '') && /h100-sxm-vllm/.test(engineCard ?? ''),
        `the engine card names the engine and its table (${engineCard})`);
  const sources = await page.locator('#ops-table td.efficiency_source').allTextContents();
  check(sources.some((x) => x.startsWith('measured-table')),
        `operators say their efficiency came from the engine's measured table (${sources.slice(0, 3)})`);
  // The engine's track record on published measurements closes the notes.
  const trackNote = await page.textContent('#summary .notes') ?? '';
  check(/track record \(roofline validate\): vLLM on .* published generation measurements \([^)]*\): median \|error\|/.test(trackNote),
        `the notes quote the engine's track record (${trackNote.slice(trackNote.indexOf('track record'), trackNote.indexOf('track record') + 120)})`);
  await page.screenshot({ path: join(outDir, 'roofline-engine.png') });
  await page.fill('#engine-build', 'last May');
  await page.click('#run');
  await page.waitForSelector('#status.error');
  check(/YYYY-MM/.test(await page.textContent('#status') ?? ''), 'a build that is not a date is refused with the format');
  // A build that is a date goes with the request, and the card names it.
  await page.fill('#engine-build', '2024-05');
  await page.click('#run');
  await page.waitForSelector('#status.ok');
  const dated = await page.textContent('.stat:has([data-field="engine"])');
  check(/build of 2024-05-31/.test(dated ?? ''), `the engine card names the build (${dated})`);
  await page.fill('#engine-build', '');
  // A release: one of odd characters is refused here; one that is well formed goes with
  // every request of the analysis.
  await page.fill('#engine-version', '0.11 beta!');
  await page.click('#run');
  await page.waitForSelector('#status.error');
  check(/engine release/.test(await page.textContent('#status') ?? ''), 'a malformed release is refused');
  const bodies = new Map();
  const record = (req) => {
    const path = new URL(req.url()).pathname;
    if (req.method() === 'POST' && path.startsWith('/api/')) bodies.set(path, JSON.parse(req.postData() ?? '{}'));
  };
  page.on('request', record);
  await page.fill('#engine-version', '0.11.0');
  await page.click('#run');
  await page.waitForSelector('#status.ok');
  page.off('request', record);
  for (const path of ['/api/predict', '/api/generate', '/api/recommend', '/api/sweep']) {
    check(bodies.get(path)?.engine_version === '0.11.0', `${path} carries the release`);
  }
  await page.fill('#engine-version', '');
  // Sorted by source, the ops no table priced come last in both directions.
  for (const pass of ['first', 'second']) {
    await page.click('#ops-table th[data-key="efficiency_source"]');
    const column = await page.locator('#ops-table td.efficiency_source').allTextContents();
    check(column[0] !== '–' && column[column.length - 1] === '–',
          `sorted by source (${pass} click), ops without one come last (${column[0]} ... ${column[column.length - 1]})`);
  }
  // A device without its own measurements borrows a table, and the card says derived.
  const device = await page.inputValue('#hardware');
  await page.selectOption('#hardware', 'h100-pcie');
  await page.click('#run');
  await page.waitForSelector('#status.ok');
  const borrowed = await page.textContent('.stat:has([data-field="engine"])');
  check(/h100-sxm-vllm \(derived\)/.test(borrowed ?? ''), `a borrowed table is called derived (${borrowed})`);
  // Ideal mode leaves the engine's costs out and says so.
  await page.selectOption('#mode', 'ideal');
  await page.click('#run');
  await page.waitForSelector('#status.ok');
  check(/vLLM's kernels and costs are not applied/.test(await page.textContent('#summary .notes') ?? ''),
        'ideal mode says the engine is not applied');
  await page.selectOption('#mode', 'realistic');
  await page.selectOption('#hardware', device);
  await page.selectOption('#engine', 'roofline');
  await page.click('#run');
  await page.waitForSelector('#status.ok');
  check(await page.locator('[data-field="engine"]').count() === 0, 'the reference has no engine card');


  // 4b. One GEMM on the chosen device: figures, notes, its point on the roofline, and
  // the measurement's reason on a machine without a GPU backend.
  await page.fill('#gemm-m', '64');
  await page.selectOption('#gemm-weights', 'int4');
  await page.check('#gemm-measure');
  await page.click('#gemm-run');
  // The card already shows the default GEMM: wait for this one's point (drawn with its figures).
  await page.waitForFunction(() => window.rooflineCharts.get('gemm-chart')?.data.datasets
    .some((d) => d.data.some((p) => p.op?.name === 'GEMM 64×4096×4096')));
  const gemm = await page.textContent('#gemm-result');
  check(/weight-only/.test(gemm) && /measured/.test(gemm), `the GEMM is analysed with its notes (${gemm.slice(0, 90)}...)`);
  const gemmPoint = await page.evaluate(() => window.rooflineCharts.get('gemm-chart').data.datasets
    .filter((d) => d.label.startsWith('operators')).flatMap((d) => d.data.map((p) => p.op.name)));
  check(gemmPoint.length === 1 && gemmPoint[0] === 'GEMM 64×4096×4096', `the GEMM is one point on the roofline (${gemmPoint})`);
  check(/132 SMs/.test(gemm), 'the GEMM is analysed on the chosen device (the H100\'s 132 SMs)');

  // 5. Bad input is said, not crashed on: a pasted config that is not JSON.
  // (The browser logs the 4xx answers below as console errors; they are expected.)
  consoleErrors = false;
  await page.click('#config-box summary');
  await page.fill('#model-config', '{"hidden_size": ');
  await page.click('#run');
  await page.waitForSelector('#status.error');
  check(/not valid JSON/.test(await page.textContent('#status')), 'a broken config.json is reported');
  // A pasted config that parses but is not a model: the server's message is shown.
  await page.fill('#model-config', '{"hidden_size": 4096}');
  await page.click('#run');
  await page.waitForSelector('#status.error');
  const serverMessage = await page.textContent('#status');
  check(/HTTP 4\d\d/.test(serverMessage ?? ''), `the server's error is shown (${serverMessage})`);

  consoleErrors = true;

  // 5b. The Serving page: its tab runs the default case (one POST /api/serving per
  // concurrency): a table, the throughput/interactivity curve, latency with the KV
  // capacity, and what limited the selected point.
  await page.click('nav.tabs a[data-page="serving"]');
  await page.waitForSelector('#serving-status.ok');
  check(await page.isHidden('#page-analyze') && await page.isVisible('#page-serving'), 'the Serving tab shows its page');
  const servingStatus = await page.textContent('#serving-status');
  check(/^Done: \d+ concurrencies in \d+ ms\.$/.test(servingStatus ?? ''), `the serving status says done (${servingStatus})`);
  const servingRows = await page.locator('#serving-table tbody tr').count();
  check(servingRows >= 10, `the table has a row per concurrency (${servingRows})`);
  const perGpu = await page.textContent('[data-field="serving-per-gpu"]');
  check(/^[\d.]+ k?tok\/s$/.test(perGpu ?? ''), `tokens/s per GPU is shown (${perGpu})`);
  const tpot = await page.textContent('[data-field="serving-tpot"]');
  check(/^[\d.]+ (ms|µs|s)$/.test(tpot ?? ''), `TPOT is shown (${tpot})`);
  const curve = await page.evaluate(() => {
    const c = window.rooflineCharts.get('serving-curve');
    const d = c.data.datasets[0].data;
    const box = c.canvas.getBoundingClientRect();
    const first = c.getDatasetMeta(0).data[0];
    return { points: d.length, width: box.width, height: box.height, increasing: d[d.length - 1].y > d[0].y,
      faster: d[0].x > d[d.length - 1].x, labels: d.map((p) => p.r.concurrency), hover: { x: box.left + first.x, y: box.top + first.y } };
  });
  check(curve.points === servingRows && curve.width > 200 && curve.height > 200,
        `the curve has a point per concurrency and is drawn (${curve.points} points, ${curve.width}x${curve.height})`);
  check(curve.increasing && curve.faster, 'more clients: more tokens/s per GPU, fewer per user');
  const latency = await page.evaluate(() => {
    const ds = window.rooflineCharts.get('serving-latency').data.datasets;
    return ds.map((d) => `${d.label}: ${d.data.length}`);
  });
  check(latency.some((l) => l.startsWith('TTFT')) && latency.some((l) => l.startsWith('TPOT')) && latency.some((l) => l.startsWith('KV capacity')),
        `TTFT and TPOT against concurrency, with the KV capacity marked (${latency.join('; ')})`);
  const limit = await page.textContent('[data-field="limited-by"]');
  check(/limited by/.test(limit ?? '') && await page.locator('#serving-detail li').count() >= 1,
        `what limited the selected point is said, with its notes (${limit})`);
  // vLLM's ITL: every gap between two tokens, its percentiles beside TTFT and TPOT.
  const itl = (await page.textContent('#serving-detail')) ?? '';
  check(/ITL.*every gap between two tokens: mean [\d.]+ (µs|ms|s); p50 [\d.]+ (µs|ms|s), p90 [\d.]+ (µs|ms|s), p99 [\d.]+ (µs|ms|s)/.test(itl),
        `the detail gives the ITL over every gap between tokens (${itl.match(/ITL[^\n]*/)?.[0]})`);
  // How far to trust it: the development set's measured runs of the default case (vLLM, Llama-3.1-70B,
  // H200), counted as the server's document counts them.
  await page.waitForFunction(() => /TTFT: median|no measured|could not/.test(document.getElementById('serving-accuracy')?.textContent ?? ''),
    null, { timeout: 180000 });
  const sv = await (await fetch(base + '/api/validation/serving')).json();
  const like = sv.rows.filter((r) => r.tpot_error_pct !== undefined && r.mode === 'agg' && r.engine === 'vllm' &&
    r.model === 'llama-3.1-70b' && r.hardware === 'h200').length;
  const trust = await page.textContent('#serving-accuracy');
  check(like > 0 && trust.includes(`vllm running llama-3.1-70b on h200: ${like} in the development set`) &&
        /TTFT: median \|error\|/.test(trust), `the page says how far such runs came out (${like} runs)`);
  // Clicking the first point selects it: the cards and the notes follow.
  await page.mouse.click(curve.hover.x, curve.hover.y);
  await page.waitForFunction(() => /^Concurrency 1:/.test(document.querySelector('[data-field="limited-by"]')?.textContent ?? ''));
  check(await page.textContent('[data-field="serving-concurrency"]') === '1', 'clicking a point selects it');
  await page.screenshot({ path: join(outDir, 'serving-page.png'), fullPage: true });
  console.log(`screenshot: ${join(outDir, 'serving-page.png')}`);
  // Past the KV capacity (1024 clients of 4,096 + 256 tokens, about a quarter of which fit),
  // the admission wait is for a KV slot.
  await page.fill('#sv-isl', '4096');
  await page.fill('#sv-concurrency', '1024');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Concurrency 1024:/.test(document.querySelector('[data-field="limited-by"]')?.textContent ?? ''));
  const full = await page.textContent('#serving-detail');
  check(/limited by kv capacity/.test(full) && /[\d.]+ (ms|s) waiting for a KV slot, then /.test(full) && /preempted and recomputed/.test(full),
        'past the KV capacity the admission wait is for a KV slot, and preemptions are counted');
  await page.fill('#sv-isl', '1024');
  // An API error (TP 3 does not divide the heads) is a message, not a broken page.
  consoleErrors = false;
  await page.fill('#sv-tp', '3');
  await page.fill('#sv-concurrency', '1,8');
  await page.click('#serving-run');
  await page.waitForSelector('#serving-status.error');
  const servingError = await page.textContent('#serving-status');
  check(/does not divide/.test(servingError ?? '') && /HTTP 4\d\d/.test(servingError ?? ''), `the server's error is shown (${servingError})`);
  check(/does not divide/.test(await page.textContent('#serving-table')), 'the table says why the concurrencies failed');
  // A concurrency list that is not one is said before any request.
  await page.fill('#sv-concurrency', '1,two');
  await page.click('#serving-run');
  await page.waitForFunction(() => /concurrency "two"/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(true, 'a bad concurrency list is reported');
  consoleErrors = true;

  // 5b'. A disaggregated prediction: one prefill and one decode worker at TP 2 each over
  // concurrencies 1..64. The form sends the pools (and no TP), the rounds and the scheduler's
  // defaults (0); the cards show TTFT and TPOT as means with their p50/p90/p99, both pools' GPUs
  // and the KV transfer; the latency chart draws each p90 beside its mean.
  const servingBodies = [];
  const onServing = (r) => { if (r.url().endsWith('/api/serving')) servingBodies.push(JSON.parse(r.postData() ?? '{}')); };
  page.on('request', onServing);
  await page.fill('#sv-tp', '2');
  check(await page.isHidden('#sv-disagg') && await page.isEnabled('#sv-tp'), 'aggregated: the pools are hidden, the TP is used');
  await page.selectOption('#sv-mode', 'disagg');
  check(await page.isVisible('#sv-disagg') && await page.isDisabled('#sv-tp'), 'disaggregated: the pools are shown, the TP greyed out');
  await page.fill('#sv-prefill-workers', '1');
  await page.fill('#sv-prefill-tp', '2');
  await page.fill('#sv-decode-workers', '1');
  await page.fill('#sv-decode-tp', '2');
  await page.fill('#sv-concurrency', '1..64');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 7 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(servingBodies.length === 7 && servingBodies.every((b) => b.mode === 'disagg' && b.prefill_workers === 1 && b.prefill_tp === 2 &&
        b.decode_workers === 1 && b.decode_tp === 2 && !('tp' in b) && b.rounds === 10 && b.token_budget === 0 && b.max_running === 0),
        `the disaggregated pools are sent, without the TP (${JSON.stringify(servingBodies[0])})`);
  const duration = /^[\d.]+ (ns|µs|ms|s)$/;
  const spread = /^p50 [\d.]+ (ns|µs|ms|s), p90 [\d.]+ (ns|µs|ms|s), p99 [\d.]+ (ns|µs|ms|s)$/;
  const card = async (field) => [await page.textContent(`[data-field="serving-${field}"]`), await page.textContent(`[data-field="serving-${field}-sub"]`)];
  const [ttftMean, ttftSpread] = await card('ttft');
  const [tpotMean, tpotSpread] = await card('tpot');
  check(duration.test(ttftMean) && spread.test(ttftSpread) && duration.test(tpotMean) && spread.test(tpotSpread),
        `TTFT and TPOT: means with p50, p90, p99 (TTFT ${ttftMean}: ${ttftSpread}; TPOT ${tpotMean}: ${tpotSpread})`);
  const [transfer, transferSub] = await card('kv-transfer');
  check(duration.test(transfer) && /prefill to decode/.test(transferSub), `the KV transfer time is shown (${transfer}: ${transferSub})`);
  const [gpus, gpusSub] = await card('gpus');
  check(gpus === '4' && gpusSub === 'prefill 2 (1 × TP 2), decode 2 (1 × TP 2)', `both pools' GPUs are counted (${gpus}: ${gpusSub})`);
  check((await page.textContent('#serving-sub')).includes('4 × h200 (prefill 1 × TP 2; decode 1 × TP 2)'), 'the table names the pools');
  const detail = await page.textContent('#serving-detail');
  const disaggVerdict = await page.textContent('[data-field="limited-by"]');
  check(/^Concurrency 64:/.test(disaggVerdict) && !/kv capacity/.test(disaggVerdict) && /KV transfer/.test(detail) && /\d+ requests \(64 clients × 10 rounds\) over \d+ steps/.test(detail) &&
        /a prefill worker \d+-token budget, at most \d+ running; a decode worker \d+-token budget, at most \d+ running/.test(detail) &&
        /from arrival to admission/.test(detail) && !/KV slot/.test(detail),
        `the detail gives the simulation, each pool's scheduler and the waits without a KV slot (${disaggVerdict})`);
  const p90 = await page.evaluate(() => {
    const c = window.rooflineCharts.get('serving-latency');
    const ds = c.data.datasets;
    const by = (label) => ds.find((d) => d.label === label);
    const ok = (d, pick) => d && d.data.length === 7 && d.data.every((p) => p.y === pick(p.r));
    return { labels: ds.map((d) => d.label), ttft: ok(by('TTFT p90'), (r) => r.ttft.p90), tpot: ok(by('TPOT p90'), (r) => r.tpot.p90),
      bands: [by('TTFT p90')?.fill, by('TPOT p90')?.fill] };
  });
  check(p90.ttft && p90.tpot && p90.bands[0] === 0 && p90.bands[1] === 1,
        `the latency chart draws TTFT and TPOT p90 beside the means, the band between (${p90.labels.join('; ')})`);
  await page.screenshot({ path: join(outDir, 'serving-disagg.png'), fullPage: true });
  console.log(`screenshot: ${join(outDir, 'serving-disagg.png')}`);
  // The scheduler set by hand: at most 16 running per instance; 64 clients wait to be admitted,
  // and the wait is then for a slot.
  servingBodies.length = 0;
  await page.click('#sv-advanced summary');
  await page.fill('#sv-token-budget', '4096');
  await page.fill('#sv-max-running', '16');
  await page.fill('#sv-rounds', '4');
  await page.fill('#sv-concurrency', '64');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  const capped = await page.textContent('#serving-detail');
  check(servingBodies.length === 1 && servingBodies[0].token_budget === 4096 && servingBodies[0].max_running === 16 && servingBodies[0].rounds === 4 &&
        /a prefill worker 4096-token budget, at most 16 running; a decode worker 4096-token budget, at most 16 running/.test(capped) &&
        /256 requests \(64 clients × 4 rounds\)/.test(capped) &&
        /limited by kv capacity/.test(await page.textContent('[data-field="limited-by"]')) &&
        /waiting to run \(at most 16 running per instance\)/.test(capped) && !/KV slot/.test(capped),
        'a scheduler set by hand is sent and shown; the admission wait is then for the running cap');
  // Expert parallelism, attention DP and replicas: greyed out for disaggregated layouts, sent
  // and named for an aggregated one (Qwen3-30B-A3B, 128 experts, over 2 replicas of TP 2).
  check(await page.isDisabled('#sv-ep') && await page.isDisabled('#sv-attention-dp') && await page.isDisabled('#sv-dp'),
        'disaggregated: attention DP, EP and replicas greyed out');
  servingBodies.length = 0;
  await page.selectOption('#sv-mode', 'agg');
  await page.selectOption('#sv-model', 'qwen3-30b-a3b');
  await page.fill('#sv-tp', '2');
  await page.fill('#sv-attention-dp', '2');
  await page.fill('#sv-ep', '2');
  await page.fill('#sv-dp', '2');
  await page.fill('#sv-concurrency', '8');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  const parallelSub = await page.textContent('#serving-sub');
  check(servingBodies.length === 1 && servingBodies[0].attention_dp === 2 && servingBodies[0].ep === 2 && servingBodies[0].dp === 2 &&
        parallelSub.includes('on 4 × h200 (TP 2, attention DP 2, EP 2, 2 replicas)'),
        `EP, attention DP and replicas are sent and named (${JSON.stringify(servingBodies[0])}; ${parallelSub})`);
  // Disaggregated, each pool with its own attention DP and EP within its TP 2.
  servingBodies.length = 0;
  await page.selectOption('#sv-mode', 'disagg');
  for (const id of ['#sv-prefill-attention-dp', '#sv-prefill-ep', '#sv-decode-attention-dp', '#sv-decode-ep']) await page.fill(id, '2');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  const poolsSub = await page.textContent('#serving-sub');
  const b = servingBodies[0] ?? {};
  check(servingBodies.length === 1 && b.prefill_attention_dp === 2 && b.prefill_ep === 2 && b.attention_dp === 2 && b.ep === 2 && !('dp' in b) &&
        poolsSub.includes('(prefill 1 × TP 2, attention DP 2, EP 2; decode 1 × TP 2, attention DP 2, EP 2)'),
        `each pool's attention DP and EP are sent and named (${JSON.stringify(b)}; ${poolsSub})`);
  await page.selectOption('#sv-mode', 'agg');
  // Speculative decoding from the advanced fields: draft tokens and acceptance sent and named.
  servingBodies.length = 0;
  await page.fill('#sv-draft-tokens', '3');
  await page.fill('#sv-acceptance', '0.8');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  const specDetail = await page.textContent('#serving-detail');
  check(servingBodies.length === 1 && servingBodies[0].draft_tokens === 3 && servingBodies[0].acceptance === 0.8 &&
        /3 draft tokens a step, each accepted at 0\.8: 2\.95 tokens a request a step/.test(specDetail),
        `speculative decoding is sent and shown (${JSON.stringify(servingBodies[0])})`);
  await page.fill('#sv-draft-tokens', '0');
  // A shared prefix from the advanced fields: sent, and the notes say what it saves.
  servingBodies.length = 0;
  await page.fill('#sv-shared-prefix', '512');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(servingBodies.length === 1 && servingBodies[0].shared_prefix === 512 &&
        /shared prefix: the first 512 tokens of every prompt come from the prefix cache/.test(await page.textContent('#serving-detail')),
        `a shared prefix is sent and explained (${JSON.stringify(servingBodies[0])})`);
  await page.fill('#sv-shared-prefix', '0');
  // A prompt pool: sent, and the share of prompts found in the prefix cache shown.
  servingBodies.length = 0;
  await page.fill('#sv-prompt-pool', '4');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(servingBodies.length === 1 && servingBodies[0].prompt_pool === 4 &&
        /of the requests found their prompt cached \(drawn from 4 prompts\)/.test(await page.textContent('#serving-detail')),
        `a prompt pool is sent and its hits shown (${JSON.stringify(servingBodies[0])})`);
  await page.fill('#sv-prompt-pool', '0');
  // Pipeline stages: sent, named, and the micro-batches said in the notes.
  servingBodies.length = 0;
  await page.fill('#sv-pp', '2');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  const ppSub = await page.textContent('#serving-sub');
  check(servingBodies.length === 1 && servingBodies[0].pp === 2 && ppSub.includes('PP 2 (a micro-batch per stage)') &&
        /2 micro-batches in flight/.test(await page.textContent('#serving-detail')),
        `pipeline stages are sent and named (${JSON.stringify(servingBodies[0])}; ${ppSub})`);
  await page.fill('#sv-pp', '1');
  // AIConfigurator's benchmark deployment: sent, and the scheduler line says its limits.
  servingBodies.length = 0;
  await page.selectOption('#sv-recipe', 'aiconfigurator');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(servingBodies.length === 1 && servingBodies[0].recipe === 'aiconfigurator' &&
        /AIConfigurator's benchmark deployment: \d+-token budget per step/.test(await page.textContent('#serving-detail')),
        `the AIConfigurator recipe is sent and shown (${JSON.stringify(servingBodies[0])})`);
  await page.selectOption('#sv-recipe', 'engine');
  // TensorRT-LLM's batch waiting: sent, and the steps that held their prompts back shown.
  servingBodies.length = 0;
  await page.selectOption('#sv-engine', 'trtllm');
  for (const id of ['#sv-attention-dp', '#sv-ep', '#sv-dp']) await page.fill(id, '1');
  await page.fill('#sv-batch-wait-iters', '20');
  await page.fill('#sv-batch-wait-ratio', '0.9');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(servingBodies.length === 1 && servingBodies[0].batch_wait_iters === 20 && servingBodies[0].batch_wait_ratio === 0.9 &&
        /held their prompts back for a fuller step \(at most 20 in a row, until 90\.0% of the budget\)/.test(await page.textContent('#serving-detail')),
        `batch waiting is sent and shown (${JSON.stringify(servingBodies[0])})`);
  await page.fill('#sv-batch-wait-iters', '0');
  // trtllm-bench's tuned limits: sent, and the scheduler line says whose they are.
  servingBodies.length = 0;
  await page.selectOption('#sv-recipe', 'trtllm-bench');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(servingBodies.length === 1 && servingBodies[0].recipe === 'trtllm-bench' &&
        /trtllm-bench's tuned limits: \d+-token budget per step/.test(await page.textContent('#serving-detail')),
        `the trtllm-bench recipe is sent and shown (${JSON.stringify(servingBodies[0])})`);
  await page.selectOption('#sv-recipe', 'engine');
  // TensorRT-LLM's attention-DP balance: on with a timeout, sent, and the held steps shown.
  servingBodies.length = 0;
  for (const id of ['#sv-attention-dp', '#sv-ep']) await page.fill(id, '2');
  await page.fill('#sv-adp-timeout', '30');
  await page.fill('#sv-adp-batching', '0');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(servingBodies.length === 1 && servingBodies[0].adp_balance === true && servingBodies[0].adp_timeout_iters === 30 &&
        servingBodies[0].adp_batching_wait_iters === 0 &&
        /held their prompts back until every rank had one \(timeout 30 steps, batching wait 0\)/.test(await page.textContent('#serving-detail')),
        `the attention-DP balance is sent and shown (${JSON.stringify(servingBodies[0])})`);
  await page.fill('#sv-adp-timeout', '0');
  for (const id of ['#sv-attention-dp', '#sv-ep']) await page.fill(id, '1');
  // SGLang's receive interval: sent, and the intake shown.
  servingBodies.length = 0;
  await page.selectOption('#sv-engine', 'sglang');
  await page.fill('#sv-recv-interval', '30');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(servingBodies.length === 1 && servingBodies[0].scheduler_recv_interval === 30 &&
        /new requests taken in every 30 decode steps/.test(await page.textContent('#serving-detail')),
        `the receive interval is sent and shown (${JSON.stringify(servingBodies[0])})`);
  await page.fill('#sv-recv-interval', '0');
  // A MoE kernel family: sent as the deployment's, and the run prices it.
  servingBodies.length = 0;
  await page.selectOption('#sv-moe-kernel', 'triton');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(servingBodies.length === 1 && servingBodies[0].moe_kernel === 'triton',
        `the MoE kernel family is sent (${JSON.stringify(servingBodies[0])})`);
  await page.selectOption('#sv-moe-kernel', '');
  await page.selectOption('#sv-engine', 'vllm');
  // The KV cache's memory share: sent, and the capacity card says it was set.
  servingBodies.length = 0;
  await page.fill('#sv-kv-memory', '0.5');
  await page.click('#serving-run');
  await page.waitForFunction(() => /^Done: 1 concurrencies/.test(document.getElementById('serving-status')?.textContent ?? ''));
  check(servingBodies.length === 1 && servingBodies[0].kv_memory_share === 0.5 &&
        /50% of the memory \(as set\)/.test(await page.textContent('#serving-cards')),
        `the KV memory share is sent and shown (${JSON.stringify(servingBodies[0])})`);
  await page.fill('#sv-kv-memory', '0');
  page.off('request', onServing);

  // 5c. The Search page: its tab runs the default search (POST /api/search: llama-3.1-70b on 8
  // H200s, TPOT at most 30 ms, aggregated and disaggregated layouts): the best in the cards and
  // first in the table, the runners-up with why they lost, the Pareto front with the points meeting
  // the target apart and each layout's marker, the best labelled, the target line at 1 / tpot_max,
  // a tooltip per point, and the refusals counted. Deployments carry the server's names.
  const searches = [];
  const onSearch = (r) => { if (r.url().endsWith('/api/search')) searches.push({ body: JSON.parse(r.request().postData() ?? '{}'), response: r }); };
  page.on('response', onSearch);
  await page.click('nav.tabs a[data-page="search"]');
  await page.waitForSelector('#search-status.ok');
  check(await page.isVisible('#page-search') && await page.isHidden('#page-serving'), 'the Search tab shows its page');
  check(searches.length === 1 && JSON.stringify(searches[0].body.modes) === '["agg","disagg"]' &&
        await page.inputValue('#sr-modes') === 'both', `the default search asks for both layouts (${JSON.stringify(searches[0]?.body.modes)})`);
  const searchDoc = await searches[0].response.json();
  const searchStatus = await page.textContent('#search-status');
  // The skipped concurrencies beside the evaluated and refused ones, as the document counts them.
  const skippedPart = 'skipped' in searchDoc ? `, ${searchDoc.skipped} skipped` : '';
  check(new RegExp(`^Done: ${searchDoc.evaluated} configurations evaluated, ${searchDoc.refused} refused${skippedPart}, in \\d+ ms\\.$`).test(searchStatus ?? '') &&
        (await page.textContent('#search-cards')).includes(`${searchDoc.refused} refused (cannot run)${skippedPart}`),
        `the search status says done with the document's counts (${searchStatus}${'skipped' in searchDoc ? '' : '; the document has no "skipped"'})`);
  const serverName = /^(vllm|sglang|trtllm) (bf16|fp8|nvfp4) (TP\d+|\d+xTP\d+\+\d+xTP\d+) x\d+$/;
  const bestName = await page.textContent('[data-field="search-best"]');
  check(serverName.test(bestName ?? '') && bestName === searchDoc.best.name, `the best deployment has the server's name (${bestName})`);
  const bestTpot = await page.textContent('[data-field="search-tpot"]');
  check(/^[\d.]+ ms$/.test(bestTpot ?? '') && parseFloat(bestTpot) <= 30, `the best meets the TPOT target (${bestTpot})`);
  const bestRow = await page.textContent('#search-table tbody tr:first-child');
  check(await page.locator('#search-table tbody tr.best').count() === 1 && bestRow.includes(bestName) && bestRow.includes('best'),
        `the table's first row is the best (${bestRow.slice(0, 60)}...)`);
  // The best's engine's track record comes first under the ranking, as the document orders them.
  const searchTrust = await page.locator('#search-trust li').allTextContents();
  check(searchTrust.length === searchDoc.notes.length && searchTrust.length >= 1 &&
        searchTrust[0].startsWith(`track record (roofline validate): ${{ vllm: 'vLLM', sglang: 'SGLang', trtllm: 'TensorRT-LLM' }[searchDoc.best.engine]}`),
        `the ranked engines' track records are listed, the best's first (${searchTrust[0]?.slice(0, 80)})`);
  const runnersUp = await page.locator('#search-table tbody tr:not(.best)').allTextContents();
  check(runnersUp.length >= 1 && runnersUp.every((t) => /fewer tokens\/s per GPU than|TPOT|TTFT/.test(t)),
        `the runners-up say why they lost (${runnersUp.length}: ${runnersUp[0]?.slice(-60)})`);
  const front = await page.evaluate(() => {
    const c = window.rooflineCharts.get('search-front');
    const ds = c.data.datasets;
    const by = (prefix) => ds.find((d) => d.label.startsWith(prefix));
    const all = (prefix) => ds.filter((d) => d.label.startsWith(prefix));
    const best = by('best');
    const el = c.getDatasetMeta(ds.indexOf(best)).data[0];
    const box = c.canvas.getBoundingClientRect();
    // Each layout's front points as drawn: their modes and markers.
    const drawn = (mode) => ds.flatMap((d, i) => (d.label.startsWith('front,') && d.label.endsWith(`(${mode})`)
      ? c.getDatasetMeta(i).data.map((e, j) => ({ mode: d.data[j].d.mode, style: e.options.pointStyle })) : []));
    return {
      width: box.width, height: box.height, best: best.label, bestX: best.data[0].x,
      line: by('Pareto front').data.length, runners: by('runners-up').data.length,
      meets: all('front, meets').flatMap((d) => d.data).filter((p) => p.d.meets_targets).length,
      misses: all('front, misses').flatMap((d) => d.data).filter((p) => !p.d.meets_targets).length,
      sorted: all('front, ').reduce((n, d) => n + d.data.length, 0) === by('Pareto front').data.length,
      agg: drawn('aggregated'), disagg: drawn('disaggregated'),
      legend: c.legend.legendItems.map((i) => i.text),
      target: by('TPOT target')?.data.map((p) => p.x),
      axes: `${c.options.scales.x.title.text} / ${c.options.scales.y.title.text}`,
      hover: { x: box.left + el.x, y: box.top + el.y },
    };
  });
  check(front.width > 300 && front.height > 200 && front.line >= 3 && /per user/.test(front.axes) && /per GPU/.test(front.axes),
        `the front is drawn: tokens/s per GPU against per user (${front.line} points, ${front.width}x${front.height})`);
  check(front.meets >= 1 && front.misses >= 1 && front.sorted,
        `points meeting the target are drawn apart from those missing it (${front.meets} meet, ${front.misses} miss)`);
  check(front.agg.length >= 1 && front.disagg.length >= 1 && front.agg.every((p) => p.mode === 'agg' && p.style === 'circle') &&
        front.disagg.every((p) => p.mode === 'disagg' && p.style === 'triangle') &&
        front.legend.some((t) => t.endsWith('(aggregated)')) && front.legend.some((t) => t.endsWith('(disaggregated)')),
        `the front has both layouts, circles aggregated and triangles disaggregated (${front.agg.length} and ${front.disagg.length})`);
  const layouts = await page.locator('#search-front-table tbody tr').evaluateAll((rows) => rows.map((tr) =>
    [tr.cells[0].textContent, tr.cells[1].textContent]));
  check(layouts.length === front.line && layouts.every(([name, mode]) => serverName.test(name) &&
        mode === (name.includes('+') ? 'disaggregated' : 'aggregated')) && layouts.some(([, mode]) => mode === 'disaggregated'),
        `the front's table names each point as the server does, with its layout (${layouts.map(([n]) => n).slice(-2).join('; ')})`);
  check(front.target?.length === 2 && front.target.every((x) => Math.abs(x - 1 / 0.03) < 1e-9) && front.bestX >= 1 / 0.03,
        `the TPOT target is the line tokens/s per user = 1 / 0.03 s, the best right of it (${front.target?.[0]})`);
  check(front.best.includes(bestName) && /per replica/.test(front.best) && front.runners === runnersUp.length,
        `the best is labelled on the chart, the runners-up marked (${front.best})`);
  await page.mouse.move(front.hover.x, front.hover.y);
  await page.waitForFunction(() => window.rooflineCharts.get('search-front').tooltip.opacity > 0);
  const searchTip = await page.evaluate(() => {
    const t = window.rooflineCharts.get('search-front').tooltip;
    const c = window.rooflineCharts.get('search-front');
    const best = c.getDatasetMeta(0).data[0];
    // A deployment drawn where the best is (the same figures: e.g. 2 replicas of a layout and 1
    // of twice its workers) may be the one hit first.
    const atBest = t.dataPoints.length > 0 && t.dataPoints.every((p) =>
      Math.abs(p.element.x - best.x) < 1 && Math.abs(p.element.y - best.y) < 1);
    return { title: t.title.join(' '), body: t.body.flatMap((b) => b.lines).join(' | '), atBest };
  });
  check(((searchTip.title.startsWith(bestName) && /^best/.test(searchTip.body)) || searchTip.atBest) &&
        /concurrency \d+ per replica/.test(searchTip.title) && /TPOT/.test(searchTip.body), `hovering the best shows its figures (${searchTip.title}: ${searchTip.body.slice(0, 70)}...)`);
  // Hovering a runner-up's row shows its point's tooltip.
  await page.hover('#search-table tbody tr[data-rank="1"]');
  const rowTip = await page.evaluate(() => window.rooflineCharts.get('search-front').tooltip.title.join(' '));
  const runnerName = await page.textContent('#search-table tbody tr[data-rank="1"] td:nth-child(2)');
  check(rowTip.startsWith(runnerName), `hovering a row shows its point (${rowTip})`);
  const refusals = await page.locator('#search-refusals li').allTextContents();
  check(refusals.length >= 1 && refusals.every((t) => /^\d+ /.test(t)) && /does not fit/.test(refusals.join(' ')),
        `the refusals are counted by reason (${refusals[0]?.slice(0, 70)}...)`);
  check(await page.locator('#search-front-table tbody tr').count() === front.line, 'the front is listed point by point');
  await page.screenshot({ path: join(outDir, 'search-page.png'), fullPage: true });
  console.log(`screenshot: ${join(outDir, 'search-page.png')}`);
  // The disaggregated layouts alone: the request says so, and every deployment shown is one
  // (prefill and decode workers in the name: "vllm fp8 2xTP2+1xTP4 x1").
  searches.length = 0;
  await page.selectOption('#sr-modes', 'disagg');
  await page.click('#search-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('search-status')?.textContent ?? '') &&
    !document.getElementById('search-run').disabled);
  const disaggName = (t) => /xTP/.test(t) && /\+/.test(t) && serverName.test(t);
  const disaggBest = await page.textContent('[data-field="search-best"]');
  const disaggRows = await page.locator('#search-table tbody tr').evaluateAll((rows) => rows.map((tr) =>
    [tr.cells[1].textContent, tr.cells[2].textContent]));
  const disaggFront = await page.locator('#search-front-table tbody tr td:first-child').allTextContents();
  check(searches.length === 1 && JSON.stringify(searches[0].body.modes) === '["disagg"]', 'a disaggregated search sends modes ["disagg"]');
  check(disaggName(disaggBest) && (await page.textContent('#search-table tbody tr.best td:nth-child(2)')) === disaggBest,
        `the best card and the table's first row name a disaggregated layout (${disaggBest})`);
  check(disaggRows.length >= 2 && disaggRows.every(([name, mode]) => disaggName(name) && mode === 'disaggregated') &&
        disaggFront.length >= 1 && disaggFront.every(disaggName),
        `every row is disaggregated (${disaggRows.map(([n]) => n).join('; ')})`);
  const disaggChart = await page.evaluate(() => window.rooflineCharts.get('search-front').data.datasets
    .filter((d) => d.label.startsWith('front,')).map((d) => [d.label, d.data.length]));
  check(disaggChart.every(([label, n]) => label.endsWith('(disaggregated)') || n === 0),
        `the chart has disaggregated points alone (${disaggChart.map(([l, n]) => `${l}: ${n}`).join('; ')})`);
  await page.screenshot({ path: join(outDir, 'search-disagg.png'), fullPage: true });
  console.log(`screenshot: ${join(outDir, 'search-disagg.png')}`);
  // One GPU holds no disaggregated unit: said before any request.
  await page.fill('#sr-gpus', '1');
  await page.click('#search-run');
  await page.waitForFunction(() => /disaggregated layout needs at least 2 GPUs/.test(document.getElementById('search-status')?.textContent ?? ''));
  check(searches.length === 1, 'a disaggregated search on one GPU is refused in the page');
  await page.fill('#sr-gpus', '8');
  await page.selectOption('#sr-modes', 'both');
  // AIConfigurator's benchmark limits in every configuration: sent with the search.
  searches.length = 0;
  await page.selectOption('#sr-recipe', 'aiconfigurator');
  await page.click('#search-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('search-status')?.textContent ?? ''));
  check(searches.length === 1 && searches[0].body.recipe === 'aiconfigurator', `the search sends the recipe (${JSON.stringify(searches[0]?.body)})`);
  await page.selectOption('#sr-recipe', 'engine');
  // The workload's prefix reuse: sent with the search; with a pool the disaggregated layouts are refused, said why.
  searches.length = 0;
  await page.fill('#sr-shared-prefix', '256');
  await page.fill('#sr-prompt-pool', '100');
  await page.click('#search-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('search-status')?.textContent ?? ''));
  check(searches.length === 1 && searches[0].body.shared_prefix === 256 && searches[0].body.prompt_pool === 100 &&
        /prompt pool: modeled for aggregated serving only/.test(await page.textContent('#search-refusals')),
        `the search sends the prefix reuse and shows the pool's refusals (${JSON.stringify(searches[0]?.body)})`);
  await page.fill('#sr-shared-prefix', '0');
  await page.fill('#sr-prompt-pool', '0');
  // An engine's release: sent as engine_versions, and its deployments carry it in their names;
  // a bare release with several engines chosen is refused in the page.
  searches.length = 0;
  await page.fill('#sr-engine-versions', 'vllm=0.12.0');
  await page.click('#search-run');
  await page.waitForFunction(() => /^Done/.test(document.getElementById('search-status')?.textContent ?? ''));
  const datedNames = await page.locator('#search-table tbody tr td:nth-child(2)').allTextContents();
  check(searches.length === 1 && JSON.stringify(searches[0].body.engine_versions) === '{"vllm":"0.12.0"}' &&
        datedNames.filter((n) => n.startsWith('vllm')).every((n) => n.startsWith('vllm 0.12.0 ')),
        `the search sends the engine's release and names its deployments with it (${JSON.stringify(searches[0]?.body.engine_versions)}; ${datedNames.join('; ')})`);
  await page.fill('#sr-engine-versions', '0.12.0');
  await page.click('#search-run');
  await page.waitForFunction(() => /name its engine/.test(document.getElementById('search-status')?.textContent ?? ''));
  check(searches.length === 1, 'a bare release with several engines chosen is refused in the page');
  await page.fill('#sr-engine-versions', '');
  page.off('response', onSearch);
  // A target nothing meets: no best; those with the most tokens/s per GPU, with what they miss.
  await page.fill('#sr-tpot', '1');
  await page.click('#search-run');
  await page.waitForFunction(() => document.querySelector('[data-field="search-best"]')?.textContent === 'none');
  check(/^Done/.test(await page.textContent('#search-status')) && /none meets TPOT ≤ 1\.00 ms/.test(await page.textContent('#search-table-sub')) &&
        (await page.locator('#search-table tbody tr').allTextContents()).every((t) => /TPOT [\d.]+ ms > 1 ms/.test(t)),
        'a target nothing meets: no best, and what the next ones miss');
  await page.hover('#search-table tbody tr[data-rank="1"]');
  const next = await page.evaluate(() => {
    const c = window.rooflineCharts.get('search-front');
    return { tip: c.tooltip.title.join(' '), labels: c.data.datasets.map((d) => `${d.label}: ${d.data.length}`).join('; ') };
  });
  const nextName = await page.textContent('#search-table tbody tr[data-rank="1"] td:nth-child(2)');
  check(next.tip.startsWith(nextName) && /best: none/.test(next.labels) && /most tokens\/s per GPU, missing the targets: [1-9]/.test(next.labels) &&
        await page.textContent('#search-table tbody tr[data-rank="1"] td:first-child') === '1',
        `without a best, the next ones are marked on the chart and numbered from 1 (${next.tip})`);
  // Nothing can run (DeepSeek-V3 on one L4): the refusals say why, and no empty chart is shown.
  await page.selectOption('#sr-model', 'deepseek-v3');
  await page.selectOption('#sr-hardware', 'l4');
  await page.fill('#sr-gpus', '1');
  await page.click('#search-run');
  await page.waitForSelector('#search-status.error');
  check(/^No configuration can run \(\d+ refused\)/.test(await page.textContent('#search-status')) &&
        await page.isHidden('#search-front-card') && await page.isVisible('#search-refusals-card') &&
        /does not fit/.test(await page.textContent('#search-refusals')), 'a search where nothing can run shows the refusals alone');
  // The server's error (isl + osl past 2^30) is a message, not a broken page.
  consoleErrors = false;
  await page.fill('#sr-isl', String(2 ** 30));
  await page.click('#search-run');
  await page.waitForFunction(() => /HTTP 4\d\d/.test(document.getElementById('search-status')?.textContent ?? ''));
  const searchError = await page.textContent('#search-status');
  check(/HTTP 4\d\d/.test(searchError ?? '') && /isl/.test(searchError ?? '') && /HTTP 4\d\d/.test(await page.textContent('#search-cards')),
        `the server's error is shown (${searchError})`);
  check(await page.isHidden('#search-refusals-card') && await page.evaluate(() => !window.rooflineCharts.has('search-front')),
        'the panels of the previous search are cleared');
  // No engine chosen is said before any request.
  await page.fill('#sr-isl', '1024');
  await page.locator('#sr-engines input:checked').evaluateAll((boxes) => boxes.forEach((b) => { b.checked = false; }));
  await page.click('#search-run');
  await page.waitForFunction(() => /choose at least one engine/.test(document.getElementById('search-status')?.textContent ?? ''));
  check(true, 'a search without engines is refused in the page');
  consoleErrors = true;

  // 5d. The Accuracy page: every published case (GET /api/validation) against its measurement.
  await page.click('nav.tabs a[data-page="accuracy"]');
  await page.waitForSelector('#accuracy-status.ok');
  check(await page.isHidden('#page-search') && await page.isVisible('#page-accuracy'), 'the Accuracy tab shows its page');
  const validation = await (await fetch(base + '/api/validation')).json();
  const accuracyRows = await page.locator('#accuracy-table tbody tr').count();
  check(accuracyRows === validation.cases.length && accuracyRows > 50,
        `the table has a row per published case (${accuracyRows} of ${validation.cases.length})`);
  const all = validation.groups.find((g) => g.group === 'all');
  check(await page.textContent('[data-field="accuracy-median"]') === `${all.median_abs_error_pct.toFixed(1)}%`,
        'the median card shows the server\'s median');
  // The targets come from the server (issue 11's, in the validation document), not the page.
  const family = validation.targets.find((t) => t.target === "worst family's |signed median|");
  check(family !== undefined && await page.textContent('[data-field="accuracy-family-bias"]') === `${family.value.toFixed(1)}%`,
        'the family-bias card shows the server\'s worst engine x metric family');
  const accuracyPoints = await page.evaluate(() =>
    window.rooflineCharts.get('accuracy-chart').data.datasets.reduce((n, d) => n + d.data.length, 0));
  check(accuracyPoints === validation.cases.length, `the chart has a point per case (${accuracyPoints})`);
  const engineRows = await page.locator('#accuracy-engines tbody tr').count();
  check(engineRows === validation.groups.filter((g) => g.group.startsWith('engine=')).length && engineRows >= 4,
        `the engine table has a row per engine (${engineRows})`);
  // One row per source key, worst median first, each counting that source's cases.
  const sourceGroups = validation.groups.filter((g) => g.group.startsWith('source='));
  const sourceRows = await page.locator('#accuracy-sources tbody tr').evaluateAll((rows) => rows.map((tr) =>
    [tr.cells[0].textContent, Number(tr.cells[1].textContent)]));
  const worstSource = sourceGroups.reduce((a, b) => (b.median_abs_error_pct > a.median_abs_error_pct ? b : a));
  const perKey = (key) => validation.cases.filter((c) => c.source_key === key).length;
  check(sourceRows.length === sourceGroups.length && sourceRows.length >= 20 &&
        sourceRows[0][0] === worstSource.group.slice('source='.length) &&
        sourceRows.every(([key, n]) => n === perKey(key)),
        `the source table has a row per source, worst first, each with its cases (${sourceRows.length}; first ${sourceRows[0]?.[0]})`);
  const worst = validation.cases.reduce((a, b) => (Math.abs(b.error_pct) > Math.abs(a.error_pct) ? b : a));
  check(await page.textContent('#accuracy-table tbody tr:first-child td:first-child') === worst.id,
        `the worst case leads the table (${worst.id})`);
  // Its serving section: every run of the development set (GET /api/validation/serving), simulated once.
  await page.waitForSelector('#accuracy-serving-status.ok', { timeout: 180000 });
  const servingCheck = await (await fetch(base + '/api/validation/serving')).json();
  check(await page.textContent('[data-field="accuracy-serving-runs"]') ===
        `${servingCheck.predicted} / ${servingCheck.predicted + servingCheck.refused}`, 'the runs card counts predicted and all runs');
  const tpotPoints = await page.evaluate(() =>
    window.rooflineCharts.get('accuracy-serving-tpot').data.datasets.reduce((n, d) => n + d.data.length, 0));
  check(tpotPoints === servingCheck.predicted && servingCheck.predicted > 1000, `the TPOT chart has a point per predicted run (${tpotPoints})`);
  check(await page.locator('#accuracy-serving-groups tbody tr').count() === servingCheck.tpot_groups.length,
        'the serving groups table has a row per group');
  check(await page.locator('#accuracy-refusals li').count() === servingCheck.refusals.length, 'the refusals are listed by reason');
  await page.screenshot({ path: join(outDir, 'accuracy-page.png') });  // the cards and the chart
  await page.locator('#accuracy-serving-cards').evaluate((el) => el.scrollIntoView());
  await page.screenshot({ path: join(outDir, 'accuracy-serving.png') });
  await page.evaluate(() => window.scrollTo(0, 0));
  console.log(`screenshot: ${join(outDir, 'accuracy-page.png')}`);

  // 6. The API docs are served locally.
  await page.goto(base + '/docs');
  await page.waitForSelector('.swagger-ui .info .title');
  check((await page.textContent('.swagger-ui .info .title')).includes('Roofline API'), 'swagger-ui shows the OpenAPI document');
  check(await page.locator('.opblock').count() >= 10, 'the endpoints are listed');

  check(pageErrors.length === 0, `no errors in the page (${pageErrors.join('; ')})`);
  check(external.length === 0, `nothing is fetched from outside the server (${external.slice(0, 3).join(', ')})`);
} catch (e) {
  failed = true;
  console.error(e.message);
} finally {
  await browser.close();
}
console.log(failed ? 'web-e2e: FAILED' : `web-e2e: ${checks} checks passed`);
process.exit(failed ? 1 : 0);
