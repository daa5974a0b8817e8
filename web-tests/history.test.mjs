// The History page in a real browser (issue 37): a results store with 30 imported nightly
// reports whose read p99 steps up 20% at run 21, and one real `ndbench run` of the memory
// store, served by `ndbench serve --results` behind a token. The page lists the runs,
// filters them by tag and driver, draws the trends with the change point at run 21 ± 1
// marked as a regression and check's verdict, opens a run's report, and sets two runs
// side by side. Screenshots at 1280x800 and 390x844 (no sideways scrolling on a phone).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startServer, stopServer, launchBrowser, ensureBinary, artifacts } from './harness.mjs';

const T = 15000;
const TOKEN = 'ui-history-test-token-7f3a';

// nightly writes n report files of the redis store: read p99 about 10 ms (µs in the
// report) with 3% noise (a fixed sequence), +20% from run stepAt.
function nightly(dir, n, stepAt) {
  let seed = 7;
  const noise = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return (seed / 2147483648 - 0.5) * 0.06; };
  const files = [];
  for (let i = 0; i < n; i++) {
    const started = new Date(Date.UTC(2026, 9, 1 + i, 2, 0, 0));
    const p99 = 10000 * (i + 1 >= stepAt ? 1.2 : 1) * (1 + noise());
    const lat = (p) => ({ p50: p / 10, p95: p * 0.8, p99: p, p995: p * 1.1, p999: p * 1.5, max: p * 2, mean: p / 8 });
    const rep = {
      formatVersion: 1, tool: { name: 'ndbench', version: 'v1.' + i }, started: started.toISOString(),
      ended: new Date(started.getTime() + 60000).toISOString(), seconds: 60, driver: { name: 'redis' },
      ops: {
        read: { count: 60000, rate: 1000 * (1 + noise() / 3), responseTime: lat(p99) },
        write: { count: 6000, rate: 100, responseTime: lat(900) },
      },
      errors: {}, client: { numCPU: 2, opsPerCPUSecond: 50000 }, warnings: [], config: [], series: [],
    };
    const f = path.join(dir, `run-${String(i + 1).padStart(2, '0')}.json`);
    writeFileSync(f, JSON.stringify(rep));
    files.push(f);
  }
  return files;
}

describe('history page', () => {
  let srv, browser, page, dir, db;
  const errors = [];
  const trend = (fig) => page.locator(`#history figure.trend[data-figure="${fig}"]`);
  const rows = () => page.locator('#history [data-role=runs] tbody tr');

  before(async () => {
    const ndbench = ensureBinary();
    dir = mkdtempSync(path.join(tmpdir(), 'ndbench-history-ui-'));
    db = path.join(dir, 'history.db');
    for (const [i, f] of nightly(dir, 30, 21).entries()) {
      execFileSync(ndbench, ['history', 'import', '--results', db, '--tag', 'store=redis-7.2', '--tag', `build=${101 + i}`, f]);
    }
    // A real run, recorded by `ndbench run` itself: its report renders with charts.
    execFileSync(ndbench, ['run', '--driver', 'memory', '--duration', '1s', '--set', 'workload.readRate=200',
      '--set', 'workload.writeRate=50', '--results', db, '--tag', 'store=memory']);
    srv = await startServer({ token: TOKEN, args: ['--results', db] });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(T);
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) errors.push(m.text()); });
  });

  after(async () => {
    if (browser) await browser.close();
    await stopServer(srv);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('logs in and opens the History page from the header', async () => {
    await page.goto(srv.url + '/');
    await page.locator('#login-token').fill(TOKEN);
    await page.locator('button[type=submit]').click();
    await page.locator('[data-instance=local] [data-role=state]').waitFor();
    await page.locator('nav.views a[data-nav=history]').click();
    await page.locator('#history[data-state=ready]').waitFor();
    assert.equal(await page.locator('main.instance').isVisible(), false, 'the live page is hidden');
    assert.equal(await page.locator('nav.views a[data-nav=history]').getAttribute('aria-current'), 'page');
    assert.equal(await rows().count(), 31);
    // Newest first: the real run of the memory store, recorded by ndbench run.
    const first = rows().first();
    assert.equal(await first.getAttribute('data-run'), '31');
    assert.match(await first.innerText(), /run\s+memory[\s\S]*store=memory/);
    assert.match(await page.locator('[data-role=history-store]').innerText(), /history\.db/);
  });

  it('marks the change point at run 21 as a regression, with check\'s verdict', async () => {
    await page.locator('#history-tag').fill('store=redis-7.2');
    await page.locator('#history-tag').press('Enter');
    await page.waitForFunction(() => document.querySelectorAll('#history [data-role=runs] tbody tr').length === 30);
    await trend('read.p99').and(page.locator('[data-state=ready]')).waitFor();
    await page.locator('#history[data-state=ready]').waitFor();
    const p99 = trend('read.p99');
    assert.equal(await p99.getAttribute('data-points'), '30');
    assert.equal(await p99.getAttribute('data-changes'), '1');
    assert.equal(await p99.getAttribute('data-verdict'), 'regression');
    const run = Number(await p99.locator('g.change.regression').getAttribute('data-run'));
    assert.ok(run >= 20 && run <= 22, 'change point at run ' + run + ', want 21 ± 1');
    assert.match(await p99.locator('g.change title').textContent(), new RegExp(`change point at run ${run} \\[build=${100 + run} store=redis-7\\.2\\]: regression .*\\(\\+(1[5-9]|2[0-5])\\.\\d%\\)`));
    assert.match(await p99.locator('.verdict-text').innerText(), new RegExp(`started at run ${run} \\[build=${100 + run} store=redis-7\\.2\\]`));
    // Throughput did not move: no change point, and check passes.
    assert.equal(await trend('read.rate').getAttribute('data-verdict'), 'pass');
    assert.equal(await trend('read.rate').getAttribute('data-changes'), '0');
    // p50, p99.9 and the write class are charted too.
    for (const f of ['read.p50', 'read.p99.9', 'write.rate', 'write.p99']) assert.equal(await trend(f).count(), 1, f + ' charted');
    // Each point links to its run's report.
    assert.equal(await p99.locator('a[data-run]').count(), 30);
  });

  it('looks right at 1280 px', async () => {
    await page.screenshot({ path: path.join(artifacts, 'history-1280.png'), fullPage: true });
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 1280, 'page scroll width ' + wide);
  });

  it('filters by driver and opens a run\'s report', async () => {
    await page.locator('#history-tag').fill('');
    await page.locator('#history-driver').selectOption('memory');
    await page.waitForFunction(() => document.querySelectorAll('#history [data-role=runs] tbody tr').length === 1);
    await page.locator('#history[data-state=ready]').waitFor();
    const [report] = await Promise.all([
      browser.context.waitForEvent('page'),
      rows().first().locator('[data-role=report-link]').click(),
    ]);
    await report.waitForLoadState();
    assert.match(await report.title(), /ndbench/i);
    assert.match(await report.locator('body').innerText(), /memory/);
    await report.close();
    await page.locator('#history-driver').selectOption('');
    await page.waitForFunction(() => document.querySelectorAll('#history [data-role=runs] tbody tr').length === 31);
  });

  it('sets two runs side by side', async () => {
    await page.locator('#history [data-role=pick][value="20"]').check();
    await page.locator('#history [data-role=pick][value="25"]').check();
    const cmp = page.locator('#history [data-role=compare]');
    await cmp.locator('tr[data-figure="read.p99"]').waitFor();
    assert.match(await cmp.locator('h2').innerText(), /Run 20 and run 25/);
    assert.match(await cmp.locator('tr[data-figure="read.p99"] td.worse').innerText(), /^\+\d/);
  });

  it('looks right at 390 px', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForFunction(() => document.querySelector('#history figure.trend svg').getBoundingClientRect().width <= 390);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, 'page scroll width ' + wide + ' at 390');
    await page.screenshot({ path: path.join(artifacts, 'history-390.png'), fullPage: true });
    // What a phone shows: the filters and the first trends, then the runs table.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(artifacts, 'history-390-top.png') });
    await page.locator('#history [data-role=runs]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(artifacts, 'history-390-runs.png') });
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('goes back to the live page', async () => {
    await page.locator('nav.views a[data-nav=live]').click();
    await page.locator('main.instance').waitFor({ state: 'visible' });
    assert.equal(await page.locator('#history').isVisible(), false);
    assert.deepEqual(errors, []);
  });
});
