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
  // Clicking the first point selects it: the cards and the notes follow.
  await page.mouse.click(curve.hover.x, curve.hover.y);
  await page.waitForFunction(() => /^Concurrency 1:/.test(document.querySelector('[data-field="limited-by"]')?.textContent ?? ''));
  check(await page.textContent('[data-field="serving-concurrency"]') === '1', 'clicking a point selects it');
  await page.screenshot({ path: join(outDir, 'serving-page.png'), fullPage: true });
  console.log(`screenshot: ${join(outDir, 'serving-page.png')}`);
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
