// The web UI in a real browser: connect the memory driver, run reads and writes, watch the
// charts follow a rate change, see a validation error next to its field, backfill, stop,
// and download the report. Every wait is on a condition (15 s budget), never a fixed sleep.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, waitFor, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';

describe('ndbench web UI', () => {
  let srv, browser, page;
  const consoleErrors = [];
  const badResponses = [];
  const shot = (name) => page.screenshot({ path: path.join(artifacts, name + '.png'), fullPage: false });
  const latest = () => page.evaluate((id) => window.ndbenchUI && window.ndbenchUI.latest(id), ID);
  const field = (name) => page.locator(`#${ID}-wl-${name}`);

  before(async () => {
    srv = await startServer();
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(T);
    // Resource failures are judged by URL below (badResponses); other console errors count.
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) consoleErrors.push(m.text()); });
    page.on('response', (r) => { if (r.status() >= 400) badResponses.push(r.status() + ' ' + new URL(r.url()).pathname); });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
  });

  after(async () => {
    if (browser) await browser.close();
    await stopServer(srv);
  });

  it('loads the page under 1 MB with a labelled, schema-driven form', async () => {
    await page.goto(srv.url + '/');
    await page.locator(`#${ID}-driver option[value=memory]`).waitFor({ state: 'attached' });
    await page.locator(`#${ID}-wl-writeRate`).waitFor();
    // Transferred bytes of the document and every resource (the event stream is still open,
    // so it is not counted: it is data, not page weight).
    const bytes = await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      return performance.getEntriesByType('resource').reduce((n, e) => n + e.transferSize, nav.transferSize);
    });
    console.log(`page weight: ${bytes} bytes transferred`);
    assert.ok(bytes > 10000 && bytes < 1000000, `page weight ${bytes} B`);
    // Every field has a label; enums are selects, bools checkboxes.
    const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select')]
      .filter((e) => e.labels.length === 0).map((e) => e.id || e.name));
    assert.deepEqual(unlabelled, []);
    assert.equal(await page.locator(`#${ID}-wl-pattern`).evaluate((e) => e.tagName), 'SELECT');
    assert.equal(await page.locator(`#${ID}-wl-readEnabled`).getAttribute('type'), 'checkbox');
    assert.equal(await page.locator(`#${ID}-wl-readRate`).getAttribute('type'), 'number');
    // A secret option is a password field, shown empty.
    await page.locator(`#${ID}-driver`).selectOption('redis');
    const pw = page.locator(`#${ID}-opt-password`);
    assert.equal(await pw.getAttribute('type'), 'password');
    assert.equal(await pw.inputValue(), '');
    await page.locator(`#${ID}-driver`).selectOption('memory');
    await page.locator(`#${ID}-opt-serviceTime`).waitFor();
    assert.match(await page.locator(`[data-instance=${ID}] [data-field=serviceTime] .badge.live`).innerText(), /live/);
    await shot('01-loaded');
  });

  it('connects the memory driver and is reachable from the keyboard', async () => {
    // Keyboard: focus the driver picker and tab on to the Connect button.
    await page.locator(`#${ID}-driver`).focus();
    let reached = false;
    for (let i = 0; i < 40 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement && document.activeElement.dataset.action === 'connect');
    }
    assert.ok(reached, 'Connect button reachable with Tab');
    await page.keyboard.press('Enter');
    await page.locator(`[data-instance=${ID}] [data-role=state]`).filter({ hasText: 'connected: memory' }).waitFor();
    await page.locator(`[data-instance=${ID}] [data-role=conninfo] dt`, { hasText: 'shards' }).waitFor({ state: 'attached' });
    // The status polls (every 2 s) leave what did not change alone: the connection info a
    // user selects to copy is the same element two polls later (it was rebuilt at each).
    const polls = [];
    page.on('request', (r) => { if (new URL(r.url()).pathname === '/api/v1/status') polls.push(r.url()); });
    await page.locator(`[data-instance=${ID}] [data-role=conninfo] dd`).first().evaluate((e) => { window.ndInfo = e; });
    await waitFor(async () => polls.length >= 2, 'two status polls', T);
    await page.waitForTimeout(300);
    assert.ok(await page.locator(`[data-instance=${ID}] [data-role=conninfo] dd`).first().evaluate((e) => e === window.ndInfo),
      'the connection info is the same element across status polls');
    await shot('02-connected');
  });

  it('starts reads and writes and the throughput chart shows them', async () => {
    await page.locator(`[data-instance=${ID}] [data-action=start-both]`).click();
    await page.locator(`[data-instance=${ID}][data-reads=true][data-writes=true]`).waitFor({ state: 'attached' });
    const p = await waitFor(async () => {
      const l = await latest();
      return l && l.ops.write.rate > 50 && l.ops.read.rate > 50 && l;
    }, 'reads and writes at their 100 ops/s target', T);
    assert.equal(p.ops.write.targetRate, 100);
    // The chart got the point: its data attribute and its legend show the achieved rate.
    const fig = page.locator(`[data-instance=${ID}] figure[data-chart=throughput][data-op=write]`);
    await waitFor(async () => Number(await fig.getAttribute('data-last')) > 50, 'write throughput chart updated', T);
    const legend = fig.locator('.u-legend .u-series').nth(1).locator('.u-value');
    await waitFor(async () => /ops\/s/.test(await legend.innerText()), 'legend value in ops/s', T);
    assert.ok(await fig.locator('canvas').count() === 1);
    await shot('03-running');
  });

  it('follows a write-rate change on the chart', async () => {
    const f = field('writeRate');
    await f.fill('400');
    await f.press('Tab');
    await page.locator(`[data-instance=${ID}] [data-role=workload-message]`).filter({ hasText: 'Applied workload.writeRate' }).waitFor();
    const t0 = Date.now();
    await waitFor(async () => {
      const l = await latest();
      return l && l.ops.write.targetRate === 400 && Math.abs(l.ops.write.rate - 400) < 40;
    }, 'achieved write rate near the new 400 ops/s target', T);
    console.log(`write rate followed the new target in ${Date.now() - t0} ms`);
    const fig = page.locator(`[data-instance=${ID}] figure[data-chart=throughput][data-op=write]`);
    await waitFor(async () => Math.abs(Number(await fig.getAttribute('data-last')) - 400) < 40, 'chart at the new rate', T);
    await shot('04-rate-changed');
  });

  it('shows the API validation error next to the field', async () => {
    const f = field('writeRate');
    await f.fill('-5');
    await f.press('Tab');
    await page.locator(`#${ID}-wl-writeRate[aria-invalid=true]`).waitFor({ state: 'attached' });
    const err = page.locator(`[data-instance=${ID}] [data-field=writeRate] .field-error`);
    assert.match(await err.innerText(), /invalid value "-5"; allowed: a number from 0 to 1000000000/);
    await shot('05-invalid-value');
    // Nothing was applied: the target is still 400. A valid value clears the error.
    assert.equal((await latest()).ops.write.targetRate, 400);
    await f.fill('400');
    await f.press('Tab');
    await waitFor(async () => (await f.getAttribute('aria-invalid')) === null, 'error cleared', T);
  });

  it('updates at 1 Hz without long tasks from the updates', async () => {
    // Over 10 s of running load: each chart update (13 charts) must be short. Whole-frame
    // gaps are logged but not asserted: on a 2-core machine the server and browser share
    // the cores, and a gap there is not the page's doing.
    const before = await page.evaluate((id) => window.ndbenchUI.points(id), ID);
    const gaps = await page.evaluate(() => new Promise((resolve) => {
      let last = performance.now(); let worst = 0; let over = 0;
      const end = last + 10000;
      const frame = (now) => {
        const g = now - last; last = now;
        if (g > worst) worst = g;
        if (g > 100) over++;
        if (now < end) requestAnimationFrame(frame); else resolve({ worst, over });
      };
      requestAnimationFrame(frame);
    }));
    const after = await page.evaluate((id) => window.ndbenchUI.points(id), ID);
    const times = await page.evaluate((id) => window.ndbenchUI.renderTimes(id), ID);
    const recent = times.slice(-10).sort((a, b) => a - b);
    console.log(`10 s: ${after - before} points, update ms p50 ${recent[Math.floor(recent.length / 2)].toFixed(1)} max ${recent[recent.length - 1].toFixed(1)}; frame gap worst ${gaps.worst.toFixed(0)} ms, ${gaps.over} over 100 ms`);
    assert.ok(after - before >= 8, `~1 Hz updates: got ${after - before} in 10 s`);
    assert.ok(recent[Math.floor(recent.length / 2)] < 50, 'median update under 50 ms');
    // One long update is allowed: a browser the machine descheduled mid-update (the
    // frame gap shows it) reads as one, a slow page as every one (p50 7 ms, max 371 ms
    // beside a 983 ms frame gap on a loaded 2-core machine).
    assert.ok(recent[recent.length - 2] < 100, `at most one update over 100 ms: ${recent.map((t) => t.toFixed(0)).join(', ')}`);
  });

  it('switches the time window', async () => {
    await page.locator(`#${ID}-window`).selectOption('0');
    const fig = page.locator(`[data-instance=${ID}] figure[data-chart=latency][data-op=read]`);
    await waitFor(async () => Number(await fig.getAttribute('data-points')) >= 10, 'all points shown', T);
    await page.locator(`#${ID}-window`).selectOption('300');
  });

  it('backfills with progress', async () => {
    await page.locator(`[data-instance=${ID}] [data-action=backfill-start]`).click();
    await page.locator(`[data-instance=${ID}] [data-role=backfill-text]`).filter({ hasText: /^done: 1000 of 1000 written/ }).waitFor();
    const prog = page.locator(`#${ID}-bf-progress`);
    assert.equal(await prog.evaluate((e) => e.value === e.max), true);
    await page.locator(`[data-instance=${ID}] figure[data-chart=throughput][data-op=backfill]`).waitFor();
    await shot('06-backfilled');
  });

  it('stops the load', async () => {
    await page.locator(`[data-instance=${ID}] [data-action=stop-both]`).click();
    await page.locator(`[data-instance=${ID}][data-reads=false][data-writes=false]`).waitFor({ state: 'attached' });
    await waitFor(async () => { const l = await latest(); return l && l.ops.write.rate === 0 && l.ops.read.rate === 0; }, 'rates at 0', T);
    await shot('07-stopped');
  });

  it('downloads the run report', async () => {
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.locator(`[data-instance=${ID}] [data-action=report-json]`).click(),
    ]);
    assert.match(download.suggestedFilename(), /^ndbench-report-.*\.json$/);
    const file = path.join(artifacts, 'report.json');
    await download.saveAs(file);
    const rep = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(rep.formatVersion, 1);
    assert.equal(rep.driver.name, 'memory');
    assert.ok(rep.ops.write.count > 1000, `write count ${rep.ops.write.count}`);
    assert.ok(rep.ops.read.count > 1000, `read count ${rep.ops.read.count}`);
    assert.ok(rep.series.length >= 10, 'series kept');
    assert.ok(rep.config.some((e) => (e.Key || e.key) === 'workload.writeRate' && (e.Value || e.value) === '400'), 'config with the applied rate');
    assert.ok(rep.client && rep.client.opsPerCPUSecond > 0, 'the server-built report carries the client CPU figures');
    await shot('08-report');
  });

  it('downloads the self-contained HTML report', async () => {
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.locator(`[data-instance=${ID}] [data-action=report-html]`).click(),
    ]);
    assert.match(download.suggestedFilename(), /^ndbench-report-.*\.html$/);
    const file = path.join(artifacts, 'report-from-ui.html');
    await download.saveAs(file);
    const html = readFileSync(file, 'utf8');
    assert.match(html, /ndbench report/);
    assert.doesNotMatch(html, /(src|href)=["']?(https?:)?\/\//i, 'the HTML report loads nothing from elsewhere');
  });

  it('logged no errors in the page', () => {
    assert.deepEqual(consoleErrors, []);
    // Expected: the 422s the test provoked, and the probe for a server-side report
    // (GET /api/v1/report) on servers that do not offer one yet.
    const unexpected = badResponses.filter((r) => !/^422 \/api\/v1\/config$/.test(r) && r !== '404 /api/v1/report');
    assert.deepEqual(unexpected, []);
  });
});
