// workload.catchUp=drop is never silent in the page: while operations are dropped, the
// numbers table gains a "dropped" column whose count is the API's; without drops there is
// no such column. The memory driver stalls for 300 ms every second; four fixed writers
// at 500/s fall behind at each stall, and what is more than 50 ms late is dropped.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopServer, launchBrowser, waitFor } from './harness.mjs';

const T = 15000;
const ID = 'local';

describe('dropped operations in the numbers table', () => {
  let srv, browser, page;
  const consoleErrors = [];
  const q = (sel) => page.locator(`[data-instance=${ID}] ${sel}`);

  before(async () => {
    srv = await startServer({ args: ['--driver', 'memory', '--start', '--set', 'workload.readEnabled=false',
      '--set', 'workload.writeRate=500', '--set', 'workload.writers=4', '--set', 'workload.maxWriters=4',
      '--set', 'workload.catchUp=drop', '--set', 'workload.maxLateness=50ms',
      '--set', 'drivers.memory.stallEvery=1s', '--set', 'drivers.memory.stallFor=300ms'] });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(T);
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
  });

  after(async () => {
    if (browser) await browser.close();
    await stopServer(srv);
  });

  it('shows a dropped column with the API count', async () => {
    await page.goto(srv.url + '/');
    const cell = q('[data-role=numbers] tr[data-op=write] td[data-role=dropped]');
    await cell.waitFor();
    await waitFor(async () => Number(await cell.innerText()) > 50, 'dropped operations counted', T);
    const heads = await q('[data-role=numbers] thead th').allInnerTexts();
    assert.ok(heads.includes('dropped'), `columns ${heads}`);
    const shown = Number(await cell.innerText());
    const api = await (await page.request.get(srv.url + '/api/v1/stats')).json();
    const dropped = api.cumulative.ops.write.dropped;
    // The page lags the API by at most an interval or two.
    assert.ok(shown <= dropped && shown >= dropped - 400, `page ${shown}, API ${dropped}`);
    assert.ok(api.cumulative.ops.write.dropLateness.p50 > 50000, `lateness ${JSON.stringify(api.cumulative.ops.write.dropLateness)}`);
    assert.deepEqual(consoleErrors, []);
  });
});
