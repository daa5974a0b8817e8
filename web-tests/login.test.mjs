// A token-protected node in a browser (issue 11 item 6): the page asks for the token,
// exchanges it for an HttpOnly session cookie, and then the UI works, the live charts
// included (EventSource cannot send an Authorization header, so the cookie carries it).
// The token never appears in a URL, in the page, in a cookie or in the server's logs.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, waitFor, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';
const TOKEN = 'ui-login-test-token-5d1f';
const VIEWPORTS = [{ name: 'desktop', width: 1280, height: 800 }, { name: 'phone', width: 390, height: 844 }];

for (const vp of VIEWPORTS) {
  describe(`login on a token-protected node at ${vp.width}×${vp.height}`, () => {
    let srv, browser, page;
    const consoleErrors = [];
    const urls = [];
    const shot = (name) => page.screenshot({ path: path.join(artifacts, `login-${vp.name}-${name}.png`), fullPage: false });

    before(async () => {
      srv = await startServer({ token: TOKEN });
      browser = await launchBrowser();
      page = await browser.context.newPage();
      await page.setViewportSize({ width: vp.width, height: vp.height });
      page.setDefaultTimeout(T);
      page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) consoleErrors.push(m.text()); });
      page.on('pageerror', (e) => consoleErrors.push(String(e)));
      page.on('request', (r) => urls.push(r.url()));
    });

    after(async () => {
      if (browser) await browser.close();
      await stopServer(srv);
    });

    it('shows only the login form without a session', async () => {
      await page.goto(srv.url + '/');
      await page.locator('#login-token').waitFor();
      assert.equal(await page.locator('[data-instance]').count(), 0, 'no instance panels before login');
      assert.equal(await page.locator('#ndbench-instances').count(), 0);
      // A wrong token is refused next to the button.
      await page.locator('#login-token').fill('not-the-token');
      await page.locator('button[type=submit]').click();
      await page.locator('[data-role=login-message]').filter({ hasText: /wrong token|too many/ }).waitFor();
      await shot('form');
    });

    it('logs in and sees live charts over the event stream', async () => {
      // The failed attempt above makes the next one wait a little (brute-force backoff).
      await page.waitForTimeout(300);
      await page.locator('#login-token').fill(TOKEN);
      await page.locator('button[type=submit]').click();
      await page.locator(`[data-instance=${ID}] [data-role=live][data-stream=open]`).waitFor();
      const cookies = await browser.context.cookies(srv.url);
      const c = cookies.find((x) => x.name === 'ndbench_session');
      assert.ok(c, 'session cookie set');
      assert.equal(c.httpOnly, true);
      assert.equal(c.sameSite, 'Strict');
      assert.ok(!c.value.includes(TOKEN), 'the cookie is not the token');
      assert.equal(await page.evaluate(() => document.cookie.includes('ndbench_session')), false, 'HttpOnly: not readable by scripts');
      // Connect and run reads: the stream delivers points to the charts.
      await page.locator(`#${ID}-driver option[value=memory]`).waitFor({ state: 'attached' });
      await page.locator(`#${ID}-driver`).selectOption('memory');
      await page.locator(`[data-instance=${ID}] [data-action=connect]`).click();
      await page.locator(`[data-instance=${ID}] [data-role=state]`).filter({ hasText: 'connected: memory' }).waitFor();
      await page.locator(`[data-instance=${ID}] [data-action=start-reads]`).click();
      const fig = page.locator(`[data-instance=${ID}] figure[data-chart=throughput][data-op=read]`);
      await waitFor(async () => Number(await fig.getAttribute('data-last')) > 50, 'live read throughput on the chart', T);
      const p0 = await page.evaluate((id) => window.ndbenchUI.points(id), ID);
      await waitFor(async () => (await page.evaluate((id) => window.ndbenchUI.points(id), ID)) > p0 + 1, 'stream points arriving', T);
      assert.ok(urls.some((u) => new URL(u).pathname === '/api/v1/stats/stream'), 'EventSource opened');
      await shot('live');
    });

    it('returns to the login form when the session ends', async () => {
      // The session ends under the page (as at expiry, or a node restart): the next call
      // the page makes brings the login form back, saying why, instead of failing controls.
      await browser.context.clearCookies();
      await page.locator('#login-token').waitFor();
      await page.locator('[data-role=login-message]').filter({ hasText: /session ended/ }).waitFor();
      await shot('expired');
      await page.locator('#login-token').fill(TOKEN);
      await page.locator('button[type=submit]').click();
      await page.locator(`[data-instance=${ID}] [data-role=live][data-stream=open]`).waitFor();
    });

    it('logs out', async () => {
      await page.locator('[data-action=logout]').click();
      await page.locator('#login-token').waitFor();
      const r = await page.evaluate(async () => (await fetch('/api/v1/status')).status);
      assert.equal(r, 401, 'the session no longer authorizes');
    });

    it('never put the token in a URL, the page or the logs', async () => {
      assert.deepEqual(urls.filter((u) => u.includes(TOKEN)), []);
      assert.ok(!(await page.content()).includes(TOKEN));
      assert.ok(!srv.logs().includes(TOKEN), 'token in the server log');
      assert.deepEqual(consoleErrors, []);
    });
  });
}
