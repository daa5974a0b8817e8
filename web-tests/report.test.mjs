// The HTML run report in a real browser: `ndbench run --report-html` writes one file that
// draws the same charts as the live page, offline (file://, nothing fetched).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchBrowser, waitFor, artifacts, repo, ensureBinary } from './harness.mjs';

describe('HTML run report', () => {
  let browser, page;
  const errors = [];
  const requests = [];

  before(async () => {
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(15000);
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('request', (r) => requests.push(r.url()));
  });

  after(async () => { if (browser) await browser.close(); });

  it('shows the run with its charts, offline', async () => {
    const file = path.join(artifacts, 'report.html');
    execFileSync(ensureBinary(), ['run', '--driver', 'memory', '--duration', '4s', '--set', 'workload.readRate=300',
      '--set', 'workload.writeRate=100', '--report-html', file], { cwd: repo, stdio: 'ignore' });
    await page.goto(pathToFileURL(file).href);
    const fig = page.locator('figure[data-chart=throughput][data-op=read]');
    await waitFor(async () => Number(await fig.getAttribute('data-points')) >= 3, 'read throughput chart with the series', 15000);
    assert.equal(await page.locator('figure[data-chart=latency] canvas').count(), 2);
    // The results table: the read row's achieved rate is about the 300 ops/s target.
    const row = page.locator('table').first().locator('tr', { hasText: /^read/ });
    const cells = await row.locator('td').allInnerTexts();
    assert.equal(cells[1], 'response');
    assert.ok(Math.abs(Number(cells[3]) - 300) < 30, `read rate ${cells[3]}`);
    assert.equal(cells[4], '300');
    await page.screenshot({ path: path.join(artifacts, '09-html-report.png'), fullPage: false });
    assert.deepEqual(errors, []);
    // Only the file itself was loaded.
    assert.deepEqual(requests.filter((u) => !u.startsWith('file:')), []);
  });

  it('fits a phone without sideways scrolling', async () => {
    // A report is often opened from a chat or a mail on a phone: the page must not scroll
    // sideways; a table wider than the screen scrolls inside its own box.
    const file = path.join(artifacts, 'report.html');
    const phone = await browser.context.newPage();
    try {
      await phone.setViewportSize({ width: 390, height: 844 });
      await phone.goto(pathToFileURL(file).href);
      await phone.locator('figure[data-chart=throughput][data-op=read] canvas').waitFor();
      const { scroll, inner } = await phone.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
      assert.ok(scroll <= inner, `page ${scroll} px wide in a ${inner} px screen`);
      // The results table keeps every column: it scrolls within its box.
      const box = await phone.locator('table.data').first().evaluate((t) => ({ sw: t.scrollWidth, cw: t.clientWidth, cols: t.querySelectorAll('thead th').length }));
      assert.equal(box.cols, 14);
      assert.ok(box.cw <= inner, `results table box ${box.cw} px`);
      await phone.screenshot({ path: path.join(artifacts, '09-html-report-phone.png'), fullPage: false });
    } finally {
      await phone.close();
    }
  });

  it('charts an auto-tune search step by step', async () => {
    const file = path.join(artifacts, 'autotune-report.html');
    // A short search on the memory store; on a busy machine it may end client-bound, which
    // is still a search with steps to show.
    spawnSync(ensureBinary(), ['autotune', '--driver', 'memory', '--set', 'drivers.memory.capacity=1500',
      '--set', 'drivers.memory.serviceTime=1ms', '--set', 'workload.writeEnabled=false', '--set', 'workload.readers=32',
      '--set', 'workload.maxReaders=256', '--latency', '200ms', '--percentile', '90', '--start', '400', '--settle', '1s',
      '--window', '2s', '--confirm', '2s', '--tolerance', '25%', '--client-lag', '150ms', '--max-rate', '6400',
      '--report-html', file], { cwd: repo, stdio: 'ignore', timeout: 240000 });
    errors.length = 0;
    await page.goto(pathToFileURL(file).href);
    await page.locator('#autotune').waitFor();
    const rows = await page.locator('#autotune-steps tbody tr').count();
    assert.ok(rows >= 2, `${rows} step rows`);
    assert.equal(await page.locator('#autotune-chart').getAttribute('data-points'), String(rows));
    assert.equal(await page.locator('#autotune-chart canvas').count(), 1);
    // The SLA bound (--latency 200ms) is drawn beside the percentile it bounds.
    assert.equal(await page.locator('#autotune-chart').getAttribute('data-bounds'), 'read=200');
    const legend = await page.locator('#autotune-chart .u-legend').innerText();
    assert.match(legend, /read SLA bound \(ms\)/);
    assert.match(await page.locator('#autotune-outcome').innerText(), /^Status (found|client-bound|above-max|none-within-sla|not-confirmed)/);
    // The first step is the start rate.
    assert.equal(await page.locator('#autotune-steps tbody tr').first().locator('td').nth(2).innerText(), '400');
    await page.locator('#autotune').screenshot({ path: path.join(artifacts, '11-autotune-report.png') });
    assert.deepEqual(errors, []);
  });

  it('marks a scenario\'s phases and hooks on every chart', async () => {
    const scen = path.join(artifacts, 'marks.yaml');
    writeFileSync(scen, [
      'name: marks', 'config:', '  driver: {name: memory}', '  workload: {readRate: 200, writeRate: 50}',
      'phases:', '  - name: warm', '    duration: 2s', '  - name: main', '    duration: 4s',
      'hooks:', '  - name: fault', '    at: main + 1s', '    run: "true"', '    for: 1s', '    undo: {run: "true"}',
    ].join('\n') + '\n');
    const file = path.join(artifacts, 'scenario-report.html');
    // No thresholds: it passes (0), or is invalid (4) on a machine too busy to keep the
    // schedule; either way the report is written, and the report is what is checked here.
    const run = spawnSync(ensureBinary(), ['scenario', 'run', scen, '--report-html', file], { cwd: repo, stdio: 'ignore' });
    assert.ok(run.status === 0 || run.status === 4, `scenario run exit ${run.status}`);
    errors.length = 0;
    await page.goto(pathToFileURL(file).href);
    const fig = page.locator('figure[data-chart=latency][data-op=read]');
    await waitFor(async () => Number(await fig.getAttribute('data-points')) >= 3, 'read latency chart with the series', 15000);
    // Two phases and one hook, on every chart.
    const marks = await page.locator('#charts figure.chart').evaluateAll((fs) => fs.map((f) => f.dataset.marks));
    assert.ok(marks.length >= 6);
    assert.ok(marks.every((m) => m === '3'), `marks per chart: ${marks}`);
    // The hook's band is drawn: the chart's pixels under it are tinted blue.
    const tinted = await page.evaluate(() => {
      const c = document.querySelector('figure[data-chart=throughput][data-op=read] canvas');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 2] > d[i] + 20 && d[i + 3] > 0 && d[i + 2] > 200) n++;
      return n;
    });
    assert.ok(tinted > 50, `blue-tinted pixels under the hook: ${tinted}`);
    await page.screenshot({ path: path.join(artifacts, '10-scenario-report.png'), fullPage: false });
    assert.deepEqual(errors, []);
  });
});
