// Issue 11 items 4 and 7 in the page: the numbers table follows the stats stream (no
// polling of GET /api/v1/stats), and a failures panel lists the recent distinct failure
// messages per class with count, first and last seen, live, hidden when nothing failed.
// The memory driver fails a share of its operations on request (errorRatio).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, waitFor, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';

describe('failures panel and live numbers', () => {
  let srv, browser, page;
  const consoleErrors = [];
  const statsPolls = [];
  const q = (sel) => page.locator(`[data-instance=${ID}] ${sel}`);

  before(async () => {
    srv = await startServer({ args: ['--driver', 'memory', '--start', '--set', 'workload.readRate=200', '--set', 'workload.writeRate=50',
      '--set', 'drivers.memory.errorRatio=0.05', '--set', 'drivers.memory.errorClass=timeout'] });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(T);
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    page.on('request', (r) => { if (new URL(r.url()).pathname === '/api/v1/stats') statsPolls.push(r.url()); });
  });

  after(async () => {
    if (browser) await browser.close();
    await stopServer(srv);
  });

  it('updates the numbers table from the stream, without polling', async () => {
    await page.goto(srv.url + '/');
    const row = q('[data-role=numbers] tr[data-op=read]');
    await row.waitFor();
    const count = async () => Number(await row.getAttribute('data-count'));
    const c0 = await count();
    await waitFor(async () => (await count()) > c0, 'the table updates', T);
    const c1 = await count();
    await waitFor(async () => (await count()) > c1, 'the table updates again', T);
    // Long enough for two polls at the old 2 s period.
    await page.waitForTimeout(4500);
    assert.ok((await count()) > c1, 'still updating');
    assert.deepEqual(statsPolls, [], 'no GET /api/v1/stats: the table follows the stream');
    // Nothing is dropped (catchUp=burst): no dropped column (dropped.test.mjs has one).
    assert.ok(!(await q('[data-role=numbers] thead th').allInnerTexts()).includes('dropped'));
  });

  it('lists the failure message per class with its count, first and last seen, live', async () => {
    const panel = q('[data-role=failures]');
    await panel.waitFor({ state: 'visible' });
    const row = q('[data-role=failures] tr[data-op=read][data-class=timeout]');
    await row.waitFor();
    const api = await (await page.request.get(srv.url + '/api/v1/stats')).json();
    const want = api.errors.read.find((m) => m.class === 'timeout');
    assert.ok(want, `the API has the read timeout message: ${JSON.stringify(api.errors)}`);
    // The message as the API gives it, as text.
    assert.equal(await row.locator('td.msg').innerText(), want.message);
    assert.match(want.message, /injected failure/);
    assert.equal(await row.locator('td.msg *').count(), 0, 'message is text, no markup');
    const n = async () => Number(await row.getAttribute('data-count'));
    const n0 = await n();
    assert.ok(n0 > 0, 'a count');
    assert.equal(Number(await row.locator('td.num').innerText()), n0, 'the count shown');
    // Updated in place: the message a user selects to copy is the same element while the
    // count grows (the list was rebuilt at every update, which dropped a selection).
    await row.locator('td.msg').evaluate((e) => { window.ndMsg = e; });
    await waitFor(async () => (await n()) > n0, 'the count grows', T);
    assert.ok(await row.locator('td.msg').evaluate((e) => e === window.ndMsg), 'the message cell is the same element across updates');
    const cells = await row.locator('td').allInnerTexts();
    assert.match(cells[4], /\d\d:\d\d:\d\d/, `first seen: ${cells}`);
    assert.match(cells[5], /\d\d:\d\d:\d\d/, `last seen: ${cells}`);
    const heads = await q('[data-role=failures] th').allInnerTexts();
    assert.deepEqual(heads.map((h) => h.toLowerCase()), ['class', 'failure', 'message', 'count', 'first seen', 'last seen']);
    await panel.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(artifacts, 'failures-desktop.png') });
    // On a phone the panel fits: no horizontal scroll of the page.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    const w = await page.evaluate(() => [document.scrollingElement.scrollWidth, window.innerWidth]);
    assert.ok(w[0] <= w[1], `no horizontal scroll at 390 px: ${w[0]} > ${w[1]}`);
    await panel.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(artifacts, 'failures-phone.png') });
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('charts attempted apart from succeeded while ops fail (item 9)', async () => {
    const fig = q('figure[data-chart=throughput][data-op=read]');
    const labels = await fig.locator('.u-legend .u-series th').allInnerTexts();
    assert.ok(labels.some((l) => /succeeded/.test(l)) && labels.some((l) => /attempted/.test(l)), `succeeded and attempted in ${labels}`);
    // Over the last seconds, 5% of 200 ops/s fail: attempted is above succeeded.
    const r = await fig.evaluate((f) => {
      const u = f.uplot;
      const idx = (name) => u.series.findIndex((s) => s.label === name);
      const sum = (i) => u.data[i].slice(-6, -1).reduce((a, v) => a + (v || 0), 0);
      return { attempted: sum(idx('attempted')), succeeded: sum(idx('succeeded')) };
    });
    assert.ok(r.attempted > r.succeeded * 1.01, `attempted ${r.attempted} vs succeeded ${r.succeeded} over 5 s`);
    assert.ok(r.succeeded > 0, 'succeeded drawn');
  });

  it('hides the panel when the session has no failures', async () => {
    const patch = await page.request.patch(srv.url + '/api/v1/config', { data: { values: { 'drivers.memory.errorRatio': '0' } } });
    assert.equal(patch.status(), 200, await patch.text());
    const reset = await page.request.post(srv.url + '/api/v1/stats/reset');
    assert.equal(reset.status(), 204, await reset.text());
    await q('[data-role=failures]').waitFor({ state: 'hidden' });
    // And the table keeps counting after the reset.
    await waitFor(async () => Number(await q('[data-role=numbers] tr[data-op=read]').getAttribute('data-count')) > 0, 'counts after the reset', T);
  });

  it('logged no errors in the page', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
