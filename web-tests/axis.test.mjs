// Time-axis labels that a user can read: at phone widths (390 and 360 px) uPlot's
// default two-row time labels overprinted each other. Every chart's x labels, measured as
// drawn (text, font, position), must not overlap and must stay inside the chart.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, waitFor, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';

// labelBoxes returns, per visible chart, the x-axis labels as boxes in CSS px relative to
// the chart's canvas (one box per text line), and the canvas width.
function labelBoxes(id) {
  const out = [];
  for (const fig of document.querySelectorAll(`[data-instance=${id}] figure.chart`)) {
    const u = fig.uplot;
    if (!u || !fig.offsetParent) continue;
    const ax = u.axes[0];
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = ax.font[0];
    const boxes = [];
    (ax._values || []).forEach((text, i) => {
      if (text === null || text === undefined || text === '') return;
      const split = ax._splits[i];
      const x = u.valToPos(split, 'x') + u.bbox.left / devicePixelRatio;
      const w = Math.max(...String(text).split('\n').map((l) => ctx.measureText(l).width));
      boxes.push({ text: String(text), left: x - w / 2, right: x + w / 2 });
    });
    out.push({ chart: fig.dataset.chart + '/' + fig.dataset.op, width: u.width, boxes });
  }
  return out;
}

describe('time-axis labels', () => {
  let srv, browser, page;
  const consoleErrors = [];

  before(async () => {
    srv = await startServer({ args: ['--driver', 'memory', '--start', '--set', 'workload.readRate=200', '--set', 'workload.writeRate=50'] });
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

  for (const [name, width, height] of [['phone', 390, 844], ['narrow', 360, 800], ['desktop', 1280, 800]]) {
    it(`do not overlap or leave the chart at ${width} px`, async () => {
      await page.setViewportSize({ width, height });
      await page.goto(srv.url + '/');
      await waitFor(async () => Number(await page.locator(`[data-instance=${ID}] figure[data-chart=throughput][data-op=read]`).getAttribute('data-points')) > 2, 'points charted', T);
      // Let a resize settle and a redraw happen at this width.
      await page.waitForTimeout(1500);
      const charts = await page.evaluate(labelBoxes, ID);
      assert.ok(charts.length > 0, 'charts drawn');
      for (const c of charts) {
        assert.ok(c.boxes.length >= 2, `${c.chart}: ${c.boxes.length} time labels, want at least 2`);
        for (const b of c.boxes) {
          // 2 px of slack: a label centred on a tick near the edge can end a pixel past it
          // by text-measure rounding (a CI rehearsal saw [367, 421] in 420), which cuts
          // nothing readable; a label really outside is tens of pixels out.
          assert.ok(b.left >= -2 && b.right <= c.width + 2, `${c.chart}: label "${b.text}" [${b.left.toFixed(0)}, ${b.right.toFixed(0)}] outside the chart (0..${c.width})`);
        }
        for (let i = 1; i < c.boxes.length; i++) {
          const [a, b] = [c.boxes[i - 1], c.boxes[i]];
          assert.ok(b.left >= a.right + 4, `${c.chart} at ${width} px: labels "${a.text}" and "${b.text}" overlap (${a.right.toFixed(0)} > ${b.left.toFixed(0)})`);
        }
      }
      const lat = page.locator(`[data-instance=${ID}] figure[data-chart=latency][data-op=read]`);
      await lat.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(artifacts, `axis-${name}.png`) });
    });
  }

  it('logged no errors in the page', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
