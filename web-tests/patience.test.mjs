// The harness's own promise: a page's navigation waits NAVIGATION_PATIENCE, whatever
// timeout a test gives its conditions, so that a starved machine's slow first load is not
// a failure (CI once failed so on page.goto at 15 s). The page is answered by a route
// after 16 s, longer than the tests' 15 s; no server is involved.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, NAVIGATION_PATIENCE } from './harness.mjs';

describe('the harness', () => {
  let browser;
  before(async () => { browser = await launchBrowser(); });
  after(async () => { if (browser) await browser.close(); });

  it('lets a page load for longer than a test\'s own timeout', { timeout: NAVIGATION_PATIENCE + 30000 }, async () => {
    const page = await browser.context.newPage();
    page.setDefaultTimeout(15000); // as every test file does
    await page.route('http://late.invalid/', async (route) => {
      await new Promise((r) => setTimeout(r, 16000));
      await route.fulfill({ status: 200, contentType: 'text/html', body: '<p id=late>late</p>' });
    });
    await page.goto('http://late.invalid/');
    assert.equal(await page.locator('#late').innerText(), 'late');
  });
});
