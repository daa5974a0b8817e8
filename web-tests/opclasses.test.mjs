// Op classes by name in the UI: a node whose workload has a class beyond read and write,
// mixing two operations, shows the class and each operation in the charts, the numbers
// table and the "now" line, with no list of classes anywhere in the page's code.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';

describe('op classes in the web UI', () => {
  let srv, browser, page;
  const errors = [];

  before(async () => {
    srv = await startServer({ args: ['--driver', 'memory', '--start',
      '--set', 'workload.readRate=200', '--set', 'workload.writeRate=100',
      '--set', 'workload.ops.lookup.rate=300', '--set', 'workload.ops.lookup.workers=2',
      '--set', 'workload.ops.lookup.mix=read:3,write:1'] });
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

  it('charts, counts and names the class and its operations', async () => {
    await page.goto(srv.url + '/');
    const inst = `[data-instance=${ID}]`;
    for (const op of ['read', 'write', 'lookup', 'lookup.read', 'lookup.write']) {
      await page.locator(`${inst} figure[data-chart=throughput][data-op="${op}"]`).waitFor();
    }
    // The class's throughput chart draws points with a rate.
    const fig = page.locator(`${inst} figure[data-chart=throughput][data-op=lookup]`);
    await page.waitForFunction((sel) => { const f = document.querySelector(sel); return f && Number(f.dataset.last) > 0; },
      `${inst} figure[data-chart=throughput][data-op=lookup]`);
    assert.ok(Number(await fig.getAttribute('data-last')) > 0);
    // A cache-hit chart for reads (and reads within a mixed class), none for lookup itself.
    assert.equal(await page.locator(`${inst} figure[data-chart=hit][data-op="lookup.read"]`).count(), 1);
    assert.equal(await page.locator(`${inst} figure[data-chart=hit][data-op=lookup]`).count(), 0);
    await page.locator(`${inst} [data-role=now]`).filter({ hasText: 'lookup' }).waitFor();
    // The numbers table lists every series that ran.
    await page.locator(`${inst} [data-role=numbers] tr[data-op=lookup]`).waitFor({ timeout: 20000 });
    for (const op of ['lookup.read', 'lookup.write']) {
      assert.equal(await page.locator(`${inst} [data-role=numbers] tr[data-op="${op}"]`).count(), 1, op + ' row');
    }
    // In the reports' order: read, write, then the other classes, each before its operations.
    const order = await page.locator(`${inst} [data-role=numbers] tbody tr`).evaluateAll((rows) => rows.map((r) => r.dataset.op));
    assert.deepEqual(order, ['read', 'write', 'lookup', 'lookup.read', 'lookup.write']);
    await page.screenshot({ path: path.join(artifacts, 'opclasses.png') });
    assert.deepEqual(errors, []);
  });
});
