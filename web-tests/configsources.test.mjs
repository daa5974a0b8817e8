// The status view lists the dynamic configuration sources that GET /api/v1/status reports
// (configSources: a watched --config file, --config-etcd). A source that fails (an edit
// the validator rejects, etcd not answering) shows visibly with its error and since when,
// and clears once the source is good again; a node without such sources shows no section;
// and a password in a source's name or error (an etcd endpoint URL) is never shown. All of
// it at desktop width and on a phone, where a source's long name and error (an etcd
// endpoint list, a validator's message) wrap inside the view: no sideways scrolling.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, waitFor, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';
const good = 'driver:\n  name: memory\nworkload:\n  readRate: 100\n';
const bad = 'driver:\n  name: memory\nworkload:\n  readRate: lots\n';
const VIEWPORTS = [{ name: 'desktop', width: 1280, height: 800 }, { name: 'phone', width: 390, height: 844 }];

// readable checks that the page does not scroll sideways and that item, a listed source,
// lies within the view with none of its text cut off or spilling out of its box.
async function readable(page, item, vp) {
  const w = await page.evaluate(() => [document.scrollingElement.scrollWidth, window.innerWidth]);
  assert.ok(w[0] <= w[1], `no horizontal scroll at ${vp.width} px: ${w[0]} > ${w[1]}`);
  const box = await item.evaluate((e) => {
    const r = e.getBoundingClientRect();
    const spill = [e, ...e.querySelectorAll('*')].filter((c) => c.scrollWidth > c.clientWidth + 1 && getComputedStyle(c).display !== 'inline');
    return { left: r.left, right: r.right, spill: spill.map((c) => c.outerHTML.slice(0, 80)) };
  });
  assert.ok(box.left >= 0 && box.right <= vp.width, `the source at ${box.left}..${box.right} px, outside the ${vp.width} px view`);
  assert.deepEqual(box.spill, [], `text spills out of its box at ${vp.width} px`);
}

for (const vp of VIEWPORTS) describe(`configuration sources on the status view (${vp.name})`, () => {
  let browser, dir;
  const consoleErrors = [];

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ndbench-cs-'));
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function open(srv) {
    const page = await browser.context.newPage();
    page.setDefaultTimeout(T);
    await page.setViewportSize({ width: vp.width, height: vp.height });
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    return page;
  }

  it('shows a failing config file with its error and since when, and clears it when fixed', async () => {
    const file = path.join(dir, 'ndbench.yaml');
    writeFileSync(file, good);
    const srv = await startServer({ args: ['--config', file] });
    const page = await open(srv);
    try {
      const q = (sel) => page.locator(`[data-instance=${ID}] ${sel}`);
      await page.goto(srv.url + '/');
      const item = q('[data-role=config-sources-list] li');
      await waitFor(async () => (await item.count()) === 1 && await q('[data-role=config-sources]').isVisible(), 'the file source listed', T);
      assert.equal(await item.getAttribute('data-failing'), 'false');
      assert.match(await item.innerText(), new RegExp('file ' + file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + ' ok'));

      writeFileSync(file, bad); // the watch reads it; the validator rejects it
      await waitFor(async () => (await item.getAttribute('data-failing')) === 'true', 'the source shown failing', T);
      const api = (await (await page.request.get(srv.url + '/api/v1/status')).json()).configSources[0];
      assert.equal(api.failing, true);
      const text = await item.innerText();
      assert.match(text, /failing since .+: the last good configuration stays applied/);
      const err = await item.locator('[data-role=config-source-error]').innerText();
      assert.match(err, /workload\.readRate: invalid value "lots"/);
      assert.equal(err, api.error);
      assert.equal(await item.locator('time').getAttribute('datetime'), api.failingSince);
      // Visibly: the failing source is marked in the error colour, not only in words.
      const colour = await item.locator('.flag').evaluate((e) => getComputedStyle(e).color);
      const errColour = await item.locator('.error-text').evaluate((e) => getComputedStyle(e).color);
      assert.equal(colour, errColour);
      // The list is not rebuilt while nothing changes: a mark set on the element now is
      // still on it after two more status polls (a rebuild at every poll dropped a
      // selection of the error text and the element under a scroll).
      await item.evaluate((e) => { e.dataset.probe = 'kept'; });
      for (let i = 0; i < 2; i++) await page.waitForResponse((r) => r.url().endsWith('/api/v1/status'), { timeout: T });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
      assert.equal(await item.getAttribute('data-probe'), 'kept', 'the failing source was rebuilt although nothing about it changed');
      await item.scrollIntoViewIfNeeded();
      await readable(page, item, vp);
      await page.screenshot({ path: path.join(artifacts, `configsources-failing-${vp.name}.png`) });

      writeFileSync(file, good);
      await waitFor(async () => (await item.getAttribute('data-failing')) === 'false', 'the source shown good again', T);
      assert.equal(await item.locator('[data-role=config-source-error]').count(), 0);
      assert.deepEqual(consoleErrors, []);
    } finally {
      await page.close();
      await stopServer(srv);
    }
  });

  it('shows no section without configuration sources, and never a password', async () => {
    const srv = await startServer({ args: ['--driver', 'memory'] });
    const page = await open(srv);
    try {
      const q = (sel) => page.locator(`[data-instance=${ID}] ${sel}`);
      await page.goto(srv.url + '/');
      await waitFor(async () => (await q('[data-role=state]').innerText()) !== 'loading…', 'the status shown', T);
      assert.equal(await q('[data-role=config-sources]').isVisible(), false);
      assert.equal(await q('[data-role=config-sources-list] li').count(), 0);
      assert.equal((await (await page.request.get(srv.url + '/api/v1/status')).json()).configSources, undefined);

      // A server that sent an etcd endpoint's password (this one redacts it; an older or
      // a misbehaving one might not): the page masks it wherever it would appear.
      const secret = 'S3cretEtcdPw';
      const since = '2026-11-28T10:00:00Z';
      await page.route('**/api/v1/status', async (route) => {
        const res = await route.fetch();
        const body = await res.json();
        body.configSources = [{
          source: `etcd http://alice:${secret}@10.0.0.5:2379,https://bob:${secret}@10.0.0.6:2379 /ndbench/n1/`,
          failing: true, failingSince: since, errorAt: since,
          error: `read etcd prefix /ndbench/n1/ from http://alice:${secret}@10.0.0.5:2379 (plain): no answer within 5s`,
        }];
        await route.fulfill({ response: res, json: body });
      });
      const item = q('[data-role=config-sources-list] li');
      await waitFor(async () => (await item.count()) === 1, 'the etcd source listed', T);
      assert.equal(await item.getAttribute('data-failing'), 'true');
      const text = await item.innerText();
      assert.match(text, /^etcd http:\/\/alice:xxxxx@10\.0\.0\.5:2379,https:\/\/bob:xxxxx@10\.0\.0\.6:2379 \/ndbench\/n1\/ failing since /);
      assert.match(text, /from http:\/\/alice:xxxxx@10\.0\.0\.5:2379 \(plain\): no answer within 5s/);
      assert.equal(await item.locator('time').getAttribute('datetime'), since);
      assert.ok(!(await page.content()).includes(secret), 'the password is in the page');
      // The list is not rebuilt while nothing changes: a mark set on the element now is
      // still on it after two more status polls (a rebuild at every poll dropped a
      // selection of the error text and the element under a scroll).
      await item.evaluate((e) => { e.dataset.probe = 'kept'; });
      for (let i = 0; i < 2; i++) await page.waitForResponse((r) => r.url().endsWith('/api/v1/status'), { timeout: T });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
      assert.equal(await item.getAttribute('data-probe'), 'kept', 'the failing source was rebuilt although nothing about it changed');
      await item.scrollIntoViewIfNeeded();
      await readable(page, item, vp);
      assert.deepEqual(consoleErrors, []);
    } finally {
      await page.close();
      await stopServer(srv);
    }
  });
});
