// Editing op classes in the Workload panel (issue 11): add a class with a mix of the
// driver's operations, run it, change its options, see the server's field errors next to
// the control, and disable it; everything through PATCH /api/v1/config.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, waitFor, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';

for (const vp of [{ name: 'desktop', width: 1280, height: 800 }, { name: 'phone', width: 390, height: 844 }]) {
  describe(`op class editor at ${vp.width}×${vp.height}`, () => {
    let srv, browser, page;
    const consoleErrors = [];
    const q = (sel) => page.locator(`[data-instance=${ID}] ${sel}`);
    const config = async (key) => {
      const c = await (await page.request.get(srv.url + '/api/v1/config')).json();
      const e = c.entries.find((x) => x.key === key);
      return e && e.value;
    };
    const status = async () => (await page.request.get(srv.url + '/api/v1/status')).json();

    before(async () => {
      srv = await startServer({ args: ['--driver', 'memory', '--set', 'workload.readRate=50', '--set', 'workload.writeRate=20'] });
      browser = await launchBrowser();
      page = await browser.context.newPage();
      await page.setViewportSize({ width: vp.width, height: vp.height });
      page.setDefaultTimeout(T);
      page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) consoleErrors.push(m.text()); });
      page.on('pageerror', (e) => consoleErrors.push(String(e)));
      await page.goto(srv.url + '/');
      await q('[data-role=opclass-new]').waitFor();
    });

    after(async () => {
      if (browser) await browser.close();
      await stopServer(srv);
    });

    it('shows the server\'s error next to the field of a class it rejects', async () => {
      const form = q('[data-role=opclass-new]');
      await form.locator(`#${ID}-oc-new-name`).fill('lookup');
      await form.locator(`#${ID}-oc-new-mix`).fill('nosuch:1');
      await q('[data-action=opclass-add]').click();
      const err = form.locator(`#${ID}-oc-new-mix-error`);
      await err.filter({ hasText: /nosuch/ }).waitFor();
      assert.match(await err.innerText(), /allowed: operations of driver memory: read, write/);
      assert.equal(await form.locator(`#${ID}-oc-new-mix`).getAttribute('aria-invalid'), 'true');
      assert.equal(await config('workload.ops.lookup.mix'), undefined, 'nothing applied');
      // A bad name is about the name field.
      await form.locator(`#${ID}-oc-new-name`).fill('9bad');
      await form.locator(`#${ID}-oc-new-mix`).fill('read');
      await q('[data-action=opclass-add]').click();
      await form.locator(`#${ID}-oc-new-name-error`).filter({ hasText: /op class name/ }).waitFor();
      assert.equal(await form.locator(`#${ID}-oc-new-mix`).getAttribute('aria-invalid'), null, 'mix no longer marked');
    });

    it('adds a class that runs with the load', async () => {
      const form = q('[data-role=opclass-new]');
      await form.locator(`#${ID}-oc-new-name`).fill('lookup');
      await form.locator(`#${ID}-oc-new-mix`).fill('read:3,write:1');
      await form.locator(`#${ID}-oc-new-rate`).fill('150');
      await form.locator(`#${ID}-oc-new-workers`).fill('2');
      await q('[data-action=opclass-add]').click();
      await q('[data-role=opclasses-message]').filter({ hasText: 'Added class lookup' }).waitFor();
      const fs = q('fieldset[data-class=lookup]');
      await fs.waitFor();
      assert.equal(await fs.locator(`#${ID}-oc-lookup-rate`).inputValue(), '150');
      assert.equal(await fs.locator(`#${ID}-oc-lookup-mix`).inputValue(), 'read:3,write:1');
      assert.equal(await fs.locator(`#${ID}-oc-lookup-enabled`).isChecked(), true);
      assert.equal(await config('workload.ops.lookup.workers'), '2');
      assert.equal(await form.locator(`#${ID}-oc-new-name`).inputValue(), '', 'the add form is cleared');
      await q('[data-action=connect]').click();
      await q('[data-role=state]').filter({ hasText: 'connected: memory' }).waitFor();
      await q('[data-action=start-both]').click();
      await waitFor(async () => (await status()).running?.lookup === true, 'lookup running', T);
      await waitFor(async () => Number(await q('figure[data-chart=throughput][data-op=lookup]').getAttribute('data-last')) > 50, 'lookup charted', T);
    });

    it('edits a class: a rejected value is marked, a good one applies live', async () => {
      const fs = q('fieldset[data-class=lookup]');
      const mix = fs.locator(`#${ID}-oc-lookup-mix`);
      await mix.fill('nosuch');
      await mix.press('Enter');
      await fs.locator(`#${ID}-oc-lookup-mix-error`).filter({ hasText: /allowed/ }).waitFor();
      assert.equal(await mix.getAttribute('aria-invalid'), 'true');
      assert.equal(await config('workload.ops.lookup.mix'), 'read:3,write:1', 'a rejected mix is not applied');
      await mix.fill('read');
      await mix.press('Enter');
      await waitFor(async () => (await config('workload.ops.lookup.mix')) === 'read', 'mix applied', T);
      assert.equal(await mix.getAttribute('aria-invalid'), null, 'the mark is gone');
      const rate = fs.locator(`#${ID}-oc-lookup-rate`);
      await rate.fill('80');
      await rate.press('Enter');
      await waitFor(async () => (await config('workload.ops.lookup.rate')) === '80', 'rate applied', T);
      assert.match(await fs.locator('[data-field=rate] [data-role=source]').innerText(), /from api/);
      await fs.scrollIntoViewIfNeeded();
      const w = await page.evaluate(() => [document.scrollingElement.scrollWidth, window.innerWidth]);
      assert.ok(w[0] <= w[1], `no horizontal scroll: ${w[0]} > ${w[1]}`);
      await page.screenshot({ path: path.join(artifacts, `opclass-edit-${vp.name}.png`) });
    });

    it('disables a class: it stops', async () => {
      const box = q(`#${ID}-oc-lookup-enabled`);
      await box.uncheck();
      await waitFor(async () => (await config('workload.ops.lookup.enabled')) === 'false', 'disabled in the config', T);
      await waitFor(async () => !(await status()).running?.lookup, 'lookup stopped', T);
      const st = await status();
      assert.ok(st.readsRunning, 'reads still run');
    });

    it('logged no errors in the page', () => {
      assert.deepEqual(consoleErrors, []);
    });
  });
}
