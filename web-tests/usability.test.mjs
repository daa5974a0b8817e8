// Issue 11, "the user's side": what a user sees at desktop (1280×800) and phone (390×844)
// widths. Charts drawn only where there is data, one column on a phone with the charts
// first, readable latency charts, a numbers table, and messages next to their control.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, waitFor, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';
const VIEWPORTS = [{ name: 'desktop', width: 1280, height: 800 }, { name: 'phone', width: 390, height: 844 }];

for (const vp of VIEWPORTS) {
  describe(`ndbench UI usability at ${vp.width}×${vp.height}`, () => {
    let srv, browser, page;
    const consoleErrors = [];
    const shot = (name) => page.screenshot({ path: path.join(artifacts, `u-${vp.name}-${name}.png`), fullPage: false });
    const q = (sel) => page.locator(`[data-instance=${ID}] ${sel}`);

    before(async () => {
      srv = await startServer();
      browser = await launchBrowser();
      page = await browser.context.newPage();
      await page.setViewportSize({ width: vp.width, height: vp.height });
      page.setDefaultTimeout(T);
      page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) consoleErrors.push(m.text()); });
      page.on('pageerror', (e) => consoleErrors.push(String(e)));
      await page.goto(srv.url + '/');
      await page.locator(`#${ID}-driver option[value=memory]`).waitFor({ state: 'attached' });
    });

    after(async () => {
      if (browser) await browser.close();
      await stopServer(srv);
    });

    it('(1) draws no minute rollup before the first sample, and idle time as a gap', async () => {
      const r = await page.evaluate(() => {
        const { Store } = window.NDCharts;
        const s = new Store();
        // A server started at 15:57:40 with a 140 ms stall in its first second, then
        // 100 s of load, then 10 s idle (no operations).
        const t0 = Date.parse('2026-11-22T15:57:40Z');
        const op = (count, maxUs) => ({ count, rate: count, misses: 0, failures: {},
          responseTime: { p50: 1000, p95: 1000, p99: 1000, p999: 1000, max: maxUs, mean: 1000 }, serviceTime: {} });
        for (let i = 0; i < 110; i++) {
          const idle = i >= 100;
          s.push({ t: t0 + i * 1000, ops: { read: op(idle ? 0 : 100, i === 0 ? 140000 : 2000) } }, 1);
        }
        const c = s.columns(300);
        const max = c.get('read', 'respMax');
        const firstDrawn = c.t.findIndex((_, j) => max[j] !== null);
        return { first: c.t[firstDrawn] * 1000, t0, idle: max.slice(-5), n: c.n };
      });
      assert.ok(r.first >= r.t0, `first point drawn at ${new Date(r.first).toISOString()}, before the first sample ${new Date(r.t0).toISOString()}`);
      assert.deepEqual(r.idle, [null, null, null, null, null], 'idle seconds have no latency (a gap, not 0 ms)');
    });

    it('(5) shows a failed connect at the connect button', async () => {
      await page.locator(`#${ID}-driver`).selectOption('redis');
      await page.locator(`#${ID}-opt-addrs`).fill('127.0.0.1:1');
      await q('[data-action=connect]').click();
      const msg = q('[data-role=connect-message]');
      await msg.filter({ hasText: /.+/ }).waitFor();
      const [b, m] = [await q('[data-action=connect]').boundingBox(), await msg.boundingBox()];
      assert.ok(Math.abs(m.y - (b.y + b.height)) < 80, `message ${m.y} near the button ${b.y}`);
      await shot('connect-failed');
      await page.locator(`#${ID}-driver`).selectOption('memory');
      await page.locator(`#${ID}-opt-serviceTime`).waitFor();
    });

    it('(2) connects, collapses the driver options, and lays the charts out for the width', async () => {
      await q('[data-action=connect]').click();
      await q('[data-role=state]').filter({ hasText: 'connected: memory' }).waitFor();
      assert.equal(await q('details.options').evaluate((d) => d.open), false, 'driver options collapsed after connect');
      await q('[data-action=start-reads]').click();
      await page.locator(`[data-instance=${ID}][data-reads=true]`).waitFor({ state: 'attached' });
      await waitFor(async () => Number(await q('figure[data-chart=throughput][data-op=read]').getAttribute('data-last')) > 50, 'reads charted', T);
      const layout = await page.evaluate((id) => {
        const root = document.querySelector(`[data-instance=${id}]`);
        const figs = [...root.querySelectorAll('figure.chart')].filter((f) => f.offsetParent).map((f) => f.getBoundingClientRect());
        return {
          lefts: [...new Set(figs.map((f) => Math.round(f.left)))],
          widths: figs.map((f) => f.width),
          chartsTop: root.querySelector('.charts-panel').getBoundingClientRect().top,
          formsTop: root.querySelector('.side').getBoundingClientRect().top,
          scroll: document.scrollingElement.scrollWidth, inner: window.innerWidth,
        };
      }, ID);
      assert.ok(layout.scroll <= layout.inner, `no horizontal scroll: ${layout.scroll} > ${layout.inner}`);
      if (vp.width < 600) {
        assert.equal(layout.lefts.length, 1, `one column on a phone, got columns at ${layout.lefts}`);
        assert.ok(Math.min(...layout.widths) >= 300, `charts ${Math.min(...layout.widths)} px wide`);
        assert.ok(layout.chartsTop < layout.formsTop, 'charts before the forms on a phone');
        await page.setViewportSize({ width: 360, height: 800 });
        await page.waitForTimeout(300);
        const w = await page.evaluate(() => [document.scrollingElement.scrollWidth, window.innerWidth]);
        assert.ok(w[0] <= w[1], `no horizontal scroll at 360 px: ${w[0]} > ${w[1]}`);
        await page.setViewportSize({ width: vp.width, height: vp.height });
      }
      await shot('reads-running');
    });

    it('(3) hides classes that are not running, has avg and p95, a log scale and the time on hover', async () => {
      assert.equal(await q('figure[data-op=write]').count(), 0, 'no write charts while only reads ran');
      assert.equal(await q('figure[data-op=backfill]').count(), 0, 'no backfill charts before a backfill');
      assert.equal(await q('figure.chart.empty').count(), 0, 'no empty "reads only" panels');
      const lat = q('figure[data-chart=latency][data-op=read]');
      const labels = await lat.locator('.u-legend .u-series th').allInnerTexts();
      assert.ok(labels.some((l) => /avg/.test(l)), `avg series in ${labels}`);
      assert.ok(labels.some((l) => /p95/.test(l)), `p95 series in ${labels}`);
      await q('[data-role=logscale]').check();
      await waitFor(async () => (await q('figure[data-chart=latency][data-op=read]').getAttribute('data-scale')) === 'log', 'log scale', T);
      const over = q('figure[data-chart=latency][data-op=read] .u-over');
      await over.scrollIntoViewIfNeeded();
      const box = await over.boundingBox();
      await page.mouse.move(box.x + box.width - 20, box.y + box.height / 2);
      const time = q('figure[data-chart=latency][data-op=read] .u-legend .u-series').first();
      await waitFor(async () => (await time.isVisible()) && /\d\d:\d\d:\d\d/.test(await time.innerText()), 'time shown on hover', T);
      await shot('log-scale-hover');
    });

    it('(4) shows a live numbers table per class', async () => {
      const row = q('[data-role=numbers] tr[data-op=read]');
      await row.waitFor();
      const count = async () => Number(await row.getAttribute('data-count'));
      const c0 = await waitFor(count, 'read count', T);
      await waitFor(async () => (await count()) > c0, 'the table updates', T);
      const heads = await q('[data-role=numbers] th').allInnerTexts();
      for (const h of ['count', 'rate', 'p50', 'p95', 'p99', 'p99.9', 'max', 'errors', 'misses', 'hit ratio']) {
        assert.ok(heads.some((x) => x.toLowerCase().includes(h)), `column ${h} in ${heads}`);
      }
      assert.equal(await q('[data-role=numbers] tr[data-op=write]').count(), 0, 'no row for a class that never ran');
      await q('[data-role=numbers]').scrollIntoViewIfNeeded();
      await shot('numbers');
    });

    it('logged no errors in the page', () => {
      assert.deepEqual(consoleErrors, []);
    });
  });
}
