// A new user's first screen (issue 36): at 1280×900 and on a phone (390×844), a memory run
// starts from the first screen without scrolling (one action connects and starts), a live
// chart follows, the time axis shows at least 3 readable ticks, and the page never scrolls
// sideways (the numbers table scrolls in its own box, and says so on a phone).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, waitFor, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';

describe('first screen', () => {
  let browser;
  const errors = [];

  before(async () => { browser = await launchBrowser(); });
  after(async () => { if (browser) await browser.close(); });

  for (const [name, width, height] of [['desktop', 1280, 900], ['phone', 390, 844]]) {
    it(`starts a run without scrolling at ${width}×${height}`, async () => {
      // A node with the memory driver chosen, not connected: what `ndbench serve` shows.
      const srv = await startServer({ args: ['--driver', 'memory', '--set', 'workload.readRate=200', '--set', 'workload.writeRate=50'] });
      const page = await browser.context.newPage();
      page.setDefaultTimeout(T);
      page.on('pageerror', (e) => errors.push(String(e)));
      page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) errors.push(m.text()); });
      try {
        errors.length = 0;
        await page.setViewportSize({ width, height });
        await page.goto(srv.url + '/');
        const run = page.locator(`[data-instance=${ID}] [data-action=quick-run]`);
        await run.waitFor();
        assert.equal(await run.innerText(), 'Connect and start');
        const box = await run.boundingBox();
        assert.ok(box && box.y >= 0 && box.y + box.height <= height && box.x + box.width <= width,
          `the first action is at ${JSON.stringify(box)}, outside the ${width}×${height} screen`);
        // A disabled Start says why.
        assert.match(await page.locator(`[data-instance=${ID}] [data-action=start-both]`).getAttribute('title'), /Connect a driver first/);
        await page.screenshot({ path: path.join(artifacts, `firstscreen-${name}-before.png`) });
        // Click where it is, without Playwright scrolling it into view first.
        await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
        const fig = page.locator(`[data-instance=${ID}] figure[data-chart=throughput][data-op=read]`);
        await waitFor(async () => Number(await fig.getAttribute('data-last') || 0) > 0, 'a live read rate', T);
        await waitFor(async () => /running: .*read/.test(await page.locator(`[data-instance=${ID}] [data-role=quick-state]`).innerText()), 'the state says running', T);
        assert.equal(await page.locator(`[data-instance=${ID}] [data-action=quick-stop]`).isVisible(), true);
        // Enough seconds for the axis to have its ticks.
        await waitFor(async () => Number(await fig.getAttribute('data-points')) >= 4, 'points charted', T);
        await page.waitForTimeout(1200);
        const ticks = await fig.evaluate((f) => (f.uplot.axes[0]._values || []).filter((v) => v !== null && v !== undefined && v !== ''));
        assert.ok(ticks.length >= 3, `time axis ticks ${JSON.stringify(ticks)}, want at least 3`);
        for (const t of ticks) assert.match(String(t), /^\d\d:\d\d(:\d\d)?$/, `tick ${t} is a whole time`);
        // No sideways scroll of the page; the numbers table scrolls in its box.
        await page.locator(`[data-instance=${ID}] [data-role=numbers] table`).waitFor();
        const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        assert.ok(over <= 0, `the page scrolls sideways by ${over} px`);
        const hint = page.locator(`[data-instance=${ID}] [data-role=numbers] .scroll-hint`);
        assert.equal(await hint.isVisible(), width < 640, 'the table says it scrolls on a phone only');
        await page.screenshot({ path: path.join(artifacts, `firstscreen-${name}-running.png`) });
        await page.locator(`[data-instance=${ID}] [data-action=quick-stop]`).click();
        await waitFor(async () => /idle/.test(await page.locator(`[data-instance=${ID}] [data-role=quick-state]`).innerText()), 'stopped', T);
        assert.equal(await run.innerText(), 'Start');
        assert.deepEqual(errors, []);
      } finally {
        await page.close();
        await stopServer(srv);
      }
    });
  }
});
