// Charts are rates at partial seconds (issue 32): a point at a phase boundary covers less
// than a second, and its counts are drawn as ops/s over the time they cover, never as a
// dip. The rate computation is checked on its own (charts.js in Node, no browser), then in
// a report and on the live page, where the phases are marked on every time chart.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { pathToFileURL } from 'node:url';
import { startServer, stopServer, launchBrowser, waitFor, artifacts, repo, ensureBinary } from './harness.mjs';

// charts returns charts.js's NDCharts, evaluated without a page (the rate code needs none).
function charts() {
  const ctx = { window: {}, console };
  vm.runInNewContext(readFileSync(path.join(repo, 'internal/web/static/charts.js'), 'utf8'), ctx);
  return ctx.window.NDCharts;
}

const C = charts();
const col = (vals, op, field) => vals[C.OPS.indexOf(op) * C.FIELDS.length + C.FIELDS.indexOf(field)];

describe('rates at partial seconds (charts.js)', () => {
  // A second of 1000 ops/s that failed 1 in 10, cut to `secs` by a phase boundary.
  const point = (secs, extra) => {
    const count = Math.round(900 * secs), failed = Math.round(100 * secs);
    return Object.assign({ t: '2026-11-28T00:00:10Z', ops: { read: {
      count, attempted: count + failed, rate: count / secs, errors: failed,
      failures: { timeout: failed, unavailable: 0, throttled: 0, rejected: 0, other: 0 },
    } } }, extra);
  };
  for (const [name, secs, seconds, p] of [
    ['a full second', 1, undefined, (s) => point(s, { seconds: s })],
    ['the first point after a reset (the point says its span)', 0.647, undefined, (s) => point(s, { seconds: s })],
    ['the last point of a phase (the interval event says its span)', 0.25, 0.25, (s) => point(s)],
    ['a point from a server that predates its span (implied by its rate)', 0.4, undefined, (s) => point(s)],
  ]) {
    it(name, () => {
      const v = C.pointValues(p(secs), seconds);
      assert.ok(Math.abs(col(v, 'read', 'rate') - 900) < 2, `succeeded ${col(v, 'read', 'rate')} ops/s, want 900`);
      assert.ok(Math.abs(col(v, 'read', 'attempted') - 1000) < 2, `attempted ${col(v, 'read', 'attempted')} ops/s, want 1000`);
      assert.ok(Math.abs(col(v, 'read', 'err_timeout') - 100) < 2, `timeouts ${col(v, 'read', 'err_timeout')}/s, want 100`);
    });
  }
  it('a second in which nothing answered is over its span too', () => {
    const p = { t: 0, seconds: 0.5, ops: { read: { count: 0, attempted: 50, rate: 0, errors: 50,
      failures: { timeout: 50, unavailable: 0, throttled: 0, rejected: 0, other: 0 } } } };
    const v = C.pointValues(p);
    assert.equal(col(v, 'read', 'attempted'), 100);
    assert.equal(col(v, 'read', 'err_timeout'), 100);
    assert.equal(col(v, 'read', 'rate'), 0);
  });
  it('spanOf prefers the point, then the caller, then the rates, then 1 s', () => {
    assert.equal(C.spanOf({ seconds: 0.3, ops: {} }, 0.9), 0.3);
    assert.equal(C.spanOf({ ops: {} }, 0.9), 0.9);
    assert.equal(C.spanOf({ ops: { read: { count: 50, rate: 100 } } }), 0.5);
    assert.equal(C.spanOf({ ops: { read: { count: 0, rate: 0 } } }), 1);
  });
});

describe('rates and phases in the charts', () => {
  let browser, page;
  const errors = [];

  before(async () => {
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(15000);
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) errors.push(m.text()); });
  });

  after(async () => { if (browser) await browser.close(); });

  // chartSeries reads what a chart draws: its x values and each series' values.
  const chartSeries = (sel) => page.evaluate((sel) => {
    const u = document.querySelector(sel).uplot;
    return { t: Array.from(u.data[0]), labels: u.series.map((s) => s.label), data: u.data.map((d) => Array.from(d)) };
  }, sel);

  it('a report draws every point as a rate over its span, marks its phases, and charts no disabled class', async () => {
    const file = path.join(artifacts, 'rates-report.html');
    const json = path.join(artifacts, 'rates-report.json');
    execFileSync(ensureBinary(), ['run', '--driver', 'memory', '--warmup', '3s', '--duration', '3s', '--backfill',
      '--set', 'workload.numKeys=2000', '--set', 'workload.backfillRate=1000', '--set', 'workload.readRate=400', '--set', 'workload.writeEnabled=false',
      '--report', json, '--report-html', file, '--results', path.join(artifacts, 'rates-history.db')], { cwd: repo, stdio: 'ignore' });
    const rep = JSON.parse(readFileSync(json, 'utf8'));
    errors.length = 0;
    await page.goto(pathToFileURL(file).href);
    const sel = 'figure[data-chart=throughput][data-op=read]';
    await waitFor(async () => Number(await page.locator(sel).getAttribute('data-points')) >= 5, 'read throughput chart', 15000);
    const s = await chartSeries(sel);
    const att = s.labels.indexOf('attempted'), ok = s.labels.indexOf('succeeded');
    // Every charted point is its count over the seconds it covers, as the JSON says.
    const byT = new Map(rep.series.map((p) => [Math.round(Date.parse(p.t) / 10), p]));
    s.t.forEach((t, i) => {
      const p = byT.get(Math.round(t * 100));
      if (!p || !p.ops.read) return;
      assert.ok(p.seconds > 0, `point ${p.t} says its span`);
      const r = p.ops.read;
      for (const [k, want] of [[att, r.attempted / p.seconds], [ok, r.count / p.seconds]]) {
        assert.ok(Math.abs(s.data[k][i] - want) <= want * 0.001 + 0.01, `${s.labels[k]} at ${p.t} (${p.seconds} s): ${s.data[k][i]}, want ${want}`);
      }
    });
    // The backfill, warm-up and load are marked on every time chart.
    const marks = await page.locator('figure.chart[data-op]').evaluateAll((fs) => fs.map((f) => Number(f.dataset.marks)));
    assert.ok(marks.length > 0 && marks.every((n) => n >= 3), `marks per chart ${marks}`);
    // Writes were disabled: no write charts; backfill ran: its charts are there.
    assert.equal(await page.locator('figure.chart[data-op=write]').count(), 0);
    assert.ok(await page.locator('figure.chart[data-op=backfill]').count() > 0);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.locator(sel).screenshot({ path: path.join(artifacts, 'rates-report-throughput.png') });
    assert.deepEqual(errors, []);
  });

  it('the live page marks the warm-up and the load as they begin', async () => {
    // Not started: the page's Connect, then Start, which begins with the warm-up
    // (workload.warmup).
    const srv = await startServer({ args: ['--driver', 'memory', '--set', 'workload.warmup=3s',
      '--set', 'workload.readRate=200', '--set', 'workload.writeRate=50'] });
    try {
      errors.length = 0;
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.goto(srv.url + '/');
      await page.locator('[data-instance=local] [data-action=connect]').click();
      await page.locator('[data-instance=local] [data-action=start-both]').click();
      await waitFor(async () => (await page.evaluate(() => window.ndbenchUI.marks('local'))).some((m) => m.name === 'load'), 'a load mark', 15000);
      const marks = await page.evaluate(() => window.ndbenchUI.marks('local'));
      const names = marks.map((m) => m.name);
      assert.deepEqual(names.filter((n) => n === 'warmup' || n === 'load'), ['warmup', 'load'], `marks ${JSON.stringify(marks)}`);
      const fig = page.locator('[data-instance=local] figure[data-chart=throughput][data-op=read]');
      await waitFor(async () => Number(await fig.getAttribute('data-marks')) >= 2, 'marks on the chart', 15000);
      await fig.screenshot({ path: path.join(artifacts, 'rates-live-marks.png') });
      assert.deepEqual(errors, []);
    } finally {
      await stopServer(srv);
    }
  });
});

describe('session totals', () => {
  let browser, page, srv;
  before(async () => {
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(15000);
    srv = await startServer({ args: ['--driver', 'memory', '--start', '--set', 'workload.readRate=200', '--set', 'workload.writeRate=50'] });
  });
  after(async () => {
    if (browser) await browser.close();
    await stopServer(srv);
  });

  it('are rates over the time each class ran, not over the idle time since the connect', async () => {
    await page.goto(srv.url + '/');
    const cell = page.locator('[data-instance=local] [data-role=numbers] tr[data-op=read] [data-role=rate]');
    await cell.waitFor();
    await page.waitForTimeout(2500);
    const status = await page.evaluate(async () => (await fetch('/api/v1/load/stop', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).status);
    assert.ok(status < 300, 'stop: ' + status);
    // Idle seconds pass: the span grows, the classes' active time does not.
    await page.waitForTimeout(4000);
    const cum = (await (await fetch(srv.url + '/api/v1/stats')).json()).cumulative;
    const r = cum.ops.read;
    assert.ok(r.activeSeconds > 0 && r.activeSeconds < cum.seconds - 2, `read ran ${r.activeSeconds} s of ${cum.seconds} s`);
    const row = page.locator('[data-instance=local] [data-role=numbers] tr[data-op=read]');
    await waitFor(async () => Number(await row.getAttribute('data-count')) === r.count, 'the totals after the stop', 15000);
    const shown = Number(await cell.innerText());
    assert.ok(Math.abs(shown - r.count / r.activeSeconds) < 0.15, `read rate shown ${shown}, want ${r.count}/${r.activeSeconds} s`);
    assert.ok(shown > r.count / cum.seconds * 1.2, `read rate ${shown} is not diluted by the idle time (${r.count}/${cum.seconds} s)`);
  });
});

describe('a disabled class', () => {
  let browser, srv;
  before(async () => {
    browser = await launchBrowser();
    srv = await startServer({ args: ['--driver', 'memory', '--set', 'workload.writeEnabled=false', '--set', 'workload.readRate=100'] });
  });
  after(async () => {
    if (browser) await browser.close();
    await stopServer(srv);
  });

  it('gets no charts on the live page, before the load and while it runs', async () => {
    const page = await browser.context.newPage();
    page.setDefaultTimeout(15000);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(srv.url + '/');
    const charts = (op) => page.locator(`[data-instance=local] figure.chart[data-op=${op}]`).count();
    await page.locator('[data-instance=local] figure.chart[data-op=read]').first().waitFor();
    assert.equal(await charts('write'), 0, 'write charts before the load');
    await page.locator('[data-instance=local] [data-action=quick-run]').click();
    const fig = page.locator('[data-instance=local] figure[data-chart=throughput][data-op=read]');
    await waitFor(async () => Number(await fig.getAttribute('data-points')) >= 2, 'read points', 15000);
    assert.equal(await charts('write'), 0, 'write charts while reads run');
    await page.close();
  });
});
