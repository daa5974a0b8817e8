// Series a driver measures of its own (driver.Measurer: the composite driver's per-child
// latency and visibility lag) are charted and counted like op classes: a node running a
// cache-aside composition of two memory stores shows child.cache and child.database with
// per-second latency percentiles, in the charts and the numbers table.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';

describe('measured series in the web UI', () => {
  let srv, browser, page;
  const errors = [];

  before(async () => {
    srv = await startServer({ args: ['--driver', 'composite', '--start',
      '--set', 'drivers.composite.mode=cache-aside', '--set', 'drivers.composite.cache=memory',
      '--set', 'drivers.composite.database=memory@db', '--set', 'drivers.memory@db.serviceTime=2ms',
      '--set', 'workload.numKeys=500', '--set', 'workload.readRate=200', '--set', 'workload.writeRate=50'] });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(T);
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  });

  after(async () => {
    if (browser) await browser.close();
    await stopServer(srv);
  });

  it('charts and counts each child like an op class', async () => {
    await page.goto(srv.url + '/');
    const inst = `[data-instance=${ID}]`;
    for (const op of ['child.cache', 'child.database']) {
      const sel = `${inst} figure[data-chart=latency][data-op="${op}"]`;
      await page.locator(sel).waitFor();
      await page.waitForFunction((s) => { const f = document.querySelector(s); return f && Number(f.dataset.last) > 0; }, sel);
    }
    // The database child is slower (a 2 ms service time): its latency says so.
    const last = async (op) => Number(await page.locator(`${inst} figure[data-chart=latency][data-op="${op}"]`).getAttribute('data-last'));
    assert.ok(await last('child.database') >= 2, 'child.database latency below its 2 ms service time');
    await page.locator(`${inst} [data-role=numbers] tr[data-op="child.database"]`).waitFor({ timeout: 20000 });
    await page.screenshot({ path: path.join(artifacts, 'composite.png') });
    assert.deepEqual(errors, []);
  });
});
