// The Auto-tune panel in a real browser: on a memory store with a simulated capacity of
// 4,000 ops/s, connect, see a bad field's error next to it, run a short search from the
// form (1 s windows, p90, 10% tolerance: about 40 s), watch the load controls say a search
// runs, and check the capacity shown lies in the search's interval and near 4,000 (within
// -40%/+10%: 1 s windows on a shared machine), the step table lists every step and the
// chart drew them. Then a client-bound search (no capacity claimed) and a stopped one.
// Screenshots at 1280x800 and 390x844.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer, stopServer, launchBrowser, freePort, artifacts } from './harness.mjs';

const T = 15000;
const ID = 'local';
const CAPACITY = 4000;
const TOKEN = 'ui-autotune-test-token-5e1d';

describe('auto-tune in the web UI', () => {
  let srv, browser, page;
  const errors = [];
  const panel = `[data-instance=${ID}] [data-role=autotune]`;
  const input = (name) => page.locator(`#${ID}-at-${name}`);

  before(async () => {
    srv = await startServer({ args: ['--set', 'driver.name=memory',
      '--set', 'drivers.memory.capacity=' + CAPACITY, '--set', 'drivers.memory.serviceTime=1ms',
      '--set', 'workload.writeEnabled=false', '--set', 'workload.readers=16', '--set', 'workload.maxReaders=256'] });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(T);
    page.on('pageerror', (e) => errors.push(String(e)));
    // The 422 of the bad field is expected; the browser logs every failed request.
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) errors.push(m.text()); });
  });

  after(async () => {
    if (browser) await browser.close();
    await stopServer(srv);
  });

  it('runs a search from the form and shows its capacity, steps and chart', { timeout: 300000 }, async () => {
    await page.goto(srv.url + '/');
    await page.locator(`${panel} [data-role=autotune-outcome]`).filter({ hasText: 'No search has run' }).waitFor();
    // Every control of the form is labelled and shows its default.
    const unlabelled = await page.locator(`${panel} input`).evaluateAll((es) => es.filter((e) => e.labels.length === 0).map((e) => e.name));
    assert.deepEqual(unlabelled, []);
    assert.equal(await input('latency').getAttribute('placeholder'), '10ms');
    assert.match(await page.locator(`${panel} [data-field=tolerance] .help`).innerText(), /default 2%/);

    // Before a driver is connected the server refuses, and the panel says why.
    await page.locator(`${panel} [data-action=autotune-start]`).click();
    await page.locator(`[data-instance=${ID}] [data-role=autotune-message]`).filter({ hasText: 'init one first' }).waitFor();

    await page.locator(`[data-instance=${ID}] [data-action=connect]`).click();
    await page.locator(`[data-instance=${ID}] [data-role=state]`).filter({ hasText: 'connected: memory' }).waitFor();

    // A bad field: its error appears next to it, and nothing starts.
    await input('latency').fill('abc');
    await page.locator(`${panel} [data-action=autotune-start]`).click();
    const err = page.locator(`${panel} [data-field=latency] .field-error`);
    await err.filter({ hasText: 'abc' }).waitFor();
    assert.equal(await input('latency').getAttribute('aria-invalid'), 'true');
    assert.equal(await page.locator(panel).getAttribute('data-state'), 'idle');
    // The error names the field's server name too (errors → max errors).
    await input('maxErrors').fill('lots');
    await input('latency').fill('100ms');
    assert.equal(await err.innerText(), '', 'editing the field clears its error');
    await page.locator(`${panel} [data-action=autotune-start]`).click();
    await page.locator(`${panel} [data-field=maxErrors] .field-error`).filter({ hasText: 'lots' }).waitFor();
    await input('maxErrors').fill('');
    // A value the search's own validation rejects is marked at its field too.
    await input('percentile').fill('150');
    await page.locator(`${panel} [data-action=autotune-start]`).click();
    await page.locator(`${panel} [data-field=percentile] .field-error`).filter({ hasText: 'below 100' }).waitFor();

    // A short search.
    for (const [k, v] of Object.entries({ percentile: '90', latency: '100ms', start: '1500', tolerance: '10%', settle: '1s', window: '1s', confirm: '2s' })) {
      await input(k).fill(v);
    }
    // A search that ends client-bound is run once more, as its message advises a user:
    // with 1 s windows beside the fuzzers and another browser file (make test's ui stage),
    // a starved generator started operations late at 3.89k of 4k ops/s, and the search
    // said so honestly (2 of 8 runs, 19 of 32 workers in the store). Twice is a failure.
    for (let attempt = 1; ; attempt++) {
      await page.locator(`${panel} [data-action=autotune-start]`).click();
      await page.waitForSelector(`${panel}[data-state=running]`);
      // The load controls that would fight it say so and are off; the API refuses them too.
      await page.locator(`[data-instance=${ID}] [data-role=load-autotune]`).waitFor();
      assert.ok(await page.locator(`[data-instance=${ID}] [data-action=stop-both]`).isDisabled());
      const refused = await page.evaluate(async () => (await fetch('/api/v1/load/stop', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).status);
      assert.equal(refused, 409);
      // Progress while it runs: steps in the table and the chart.
      await page.waitForFunction((sel) => Number(document.querySelector(sel).dataset.steps) >= 2, panel, { timeout: 30000 });
      // A step's row stays the same element while the panel renders each second and more
      // steps arrive: rebuilt every time, a user's selection of a figure and the tooltip
      // read on a phase were lost.
      await page.locator(`${panel} [data-role=autotune-steps] tbody tr`).first().evaluate((tr) => { window.__firstStep = tr; });
      await page.waitForFunction((sel) => Number(document.querySelector(sel).dataset.steps) >= 3 || document.querySelector(sel).dataset.state === 'done', panel, { timeout: 130000 });
      assert.equal(await page.evaluate(() => window.__firstStep.isConnected), true, 'the first step\'s row survives later renders');
      assert.equal(await page.locator(`${panel} details.autotune-settings`).evaluate((d) => d.open), false, 'settings folded while running');
      await page.locator(`${panel} [data-role=autotune-chart]`).scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(artifacts, 'autotune-running.png') });

      await page.waitForSelector(`${panel}[data-state=done]`, { timeout: 130000 });
      if (attempt === 1 && await page.locator(panel).getAttribute('data-status') === 'client-bound') {
        console.log('search 1 ended client-bound: ' + await page.locator(`${panel} [data-role=autotune-outcome]`).innerText());
        continue;
      }
      break;
    }
    const status = await page.locator(panel).getAttribute('data-status');
    const outcome = page.locator(`${panel} [data-role=autotune-outcome]`);
    const text = await outcome.innerText();
    assert.equal(status, 'found', 'status ' + status + ': ' + text);
    const cap = Number(await outcome.getAttribute('data-capacity'));
    const lo = Number(await outcome.getAttribute('data-lo'));
    const hi = Number(await outcome.getAttribute('data-hi'));
    assert.ok(lo <= cap && cap <= hi, `capacity ${cap} in [${lo}, ${hi}]`);
    // Near the store's capacity: never above it by more than the last step's queueing
    // allows; below it by up to two bisection steps, since with 1 s windows on a busy machine
    // (load average 8 on 2 cores when measured) a scheduling stall fails a step under
    // capacity: 3108, 3271, 3891 and 3891 were found (internal/autotune's tests hold the
    // search itself to 5% with longer windows).
    console.log(`found ${Math.round(cap)} ops/s in [${Math.round(lo)}, ${Math.round(hi)}] (store capacity ${CAPACITY})`);
    assert.ok(cap >= 0.6 * CAPACITY && cap <= 1.1 * CAPACITY, `capacity ${cap} near ${CAPACITY}`);
    assert.match(text, /Capacity [\d.k]+ ops\/s within SLA, interval \[/);
    // The table has every step, the failed ones marked; the chart drew as many.
    const rows = page.locator(`${panel} [data-role=autotune-steps] tbody tr`);
    const n = await rows.count();
    assert.equal(String(n), await page.locator(panel).getAttribute('data-steps'));
    assert.ok(n >= 4, n + ' steps');
    assert.ok(await page.locator(`${panel} [data-role=autotune-steps] tbody tr[data-verdict=fail]`).count() >= 1, 'a failed step');
    assert.equal(await rows.first().locator('td').nth(2).innerText(), '1500');
    const fig = page.locator(`${panel} [data-role=autotune-chart]`);
    assert.equal(await fig.getAttribute('data-points'), String(n));
    assert.equal(Number(await fig.getAttribute('data-capacity')), cap);
    assert.equal(await fig.locator('canvas').count(), 1);
    // The load controls are back.
    await page.locator(`[data-instance=${ID}] [data-role=load-autotune]`).waitFor({ state: 'hidden' });
    assert.ok(!(await page.locator(`[data-instance=${ID}] [data-action=start-both]`).isDisabled()));

    await page.locator(`${panel} details.autotune-settings > summary`).click();
    await page.locator(panel).scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(artifacts, 'autotune-1280.png') });
    await page.locator(panel).screenshot({ path: path.join(artifacts, 'autotune-panel-1280.png') });
    // A phone: one column, nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForFunction((sel) => document.querySelector(sel + ' [data-role=autotune-chart] canvas').getBoundingClientRect().width <= 390, panel);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, 'page scroll width ' + wide + ' at 390');
    const cols = await page.locator(`${panel} [data-role=autotune-fields]`).evaluate((e) => getComputedStyle(e).gridTemplateColumns.split(' ').length);
    assert.ok(cols <= 2, cols + ' form columns on a phone');
    await page.locator(panel).scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(artifacts, 'autotune-390.png') });
    await page.locator(panel).screenshot({ path: path.join(artifacts, 'autotune-panel-390.png') });
    assert.deepEqual(errors, []);
  });

  it('says client-bound, not a capacity, when the generator is the limit; Stop ends a search', { timeout: 60000 }, async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    // Four workers and no more against a 2 ms service time: at most 2,000 ops/s, far below
    // the store's 20,000 (internal/autotune's TestClientBoundIsNotCapacity).
    const patched = await page.evaluate(async () => (await fetch('/api/v1/config', { method: 'PATCH', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ values: { 'workload.readers': '4', 'workload.maxReaders': '0', 'drivers.memory.serviceTime': '2ms', 'drivers.memory.capacity': '20000' } }) })).status);
    assert.equal(patched, 200);
    await page.locator(`${panel} details.autotune-settings`).evaluate((d) => { d.open = true; });
    await input('start').fill('500');
    await input('tolerance').fill('');
    await page.locator(`${panel} [data-action=autotune-start]`).click();
    await page.waitForSelector(`${panel}[data-state=running]`);
    await page.waitForSelector(`${panel}[data-state=done]`, { timeout: 45000 });
    const outcome = page.locator(`${panel} [data-role=autotune-outcome]`);
    const text = await outcome.innerText();
    assert.equal(await page.locator(panel).getAttribute('data-status'), 'client-bound', text);
    // Which limit the generator meets first is the machine's: with a step within SLA the
    // four busy workers are the limit and the outcome says the rate the store sustained;
    // on a starved machine (CI 55's first run, one core kept busy) the generator fell
    // behind at the first step, and the outcome says no rate was measured within SLA and
    // that free workers point at cores. Both are client-bound, neither claims a capacity;
    // each must say what its steps show.
    const passed = await page.locator(`${panel} [data-role=autotune-steps] tbody tr[data-verdict=pass]`).count();
    if (passed > 0) {
      assert.match(text, /^Client-bound: the store sustains at least [\d.k]+ ops\/s within SLA/);
    } else {
      assert.match(text, /^Client-bound\. .*no rate was measured within SLA before it/s);
    }
    assert.match(text, /give the generator more workers|so more workers will not help: give it more cores/);
    assert.equal(await outcome.getAttribute('data-capacity'), null, 'no capacity claimed');
    assert.ok(await page.locator(`${panel} [data-role=autotune-steps] tbody tr[data-verdict=client-bound]`).count() >= 1);
    await page.locator(`${panel} [data-role=autotune-outcome]`).scrollIntoViewIfNeeded();
    await page.locator(panel).screenshot({ path: path.join(artifacts, 'autotune-client-bound.png') });

    // Stop: the search ends at once with status stopped, and the load buttons come back.
    await page.locator(`${panel} [data-action=autotune-start]`).click();
    await page.waitForSelector(`${panel}[data-state=running]`);
    await page.locator(`${panel} [data-action=autotune-stop]`).click();
    await page.waitForSelector(`${panel}[data-state=done][data-status=stopped]`);
    await outcome.filter({ hasText: /^Stopped/ }).waitFor();
    await page.locator(`[data-instance=${ID}] [data-role=load-autotune]`).waitFor({ state: 'hidden' });
    assert.ok(!(await page.locator(`[data-instance=${ID}] [data-action=start-both]`).isDisabled()));
    assert.deepEqual(errors, []);
  });
});

// The fleet view serves the same page: its Auto-tune panel talks to the coordinator's fleet
// API, and whatever the server answers (501 while a fleet cannot run a search) is shown in
// the panel, not hidden.
describe('auto-tune on the fleet view', () => {
  let srv, browser, page;
  const errors = [];

  before(async () => {
    const addr = await freePort();
    srv = await startServer({ token: TOKEN, listen: addr, args: ['--peers', addr, '--coordinate'] });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(T);
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) errors.push(m.text()); });
  });

  after(async () => {
    if (browser) await browser.close();
    await stopServer(srv);
  });

  it("shows the fleet server's answer to a search", async () => {
    await page.goto(srv.url + '/fleet/');
    await page.locator('#login-token').fill(TOKEN);
    await page.locator('button[type=submit]').click();
    const panel = '[data-instance=fleet] [data-role=autotune]';
    await page.locator(`${panel} [data-role=autotune-outcome]`).filter({ hasText: 'No search has run' }).waitFor();
    const answer = page.waitForResponse((r) => r.url().endsWith('/fleet/api/v1/autotune') && r.request().method() === 'POST');
    await page.locator(`${panel} [data-action=autotune-start]`).click();
    const status = (await answer).status();
    const msg = page.locator('[data-instance=fleet] [data-role=autotune-message]');
    await page.waitForFunction((sel) => /error/.test(document.querySelector(sel).className), '[data-instance=fleet] [data-role=autotune-message]');
    const text = await msg.innerText();
    if (status === 501) assert.match(text, /^Not started \(501, not implemented here\): .*cannot run a search/);
    else assert.equal(status, 409, 'before a driver is connected: ' + text);
    assert.ok(await msg.isVisible());
    assert.equal(await page.locator(panel).getAttribute('data-state'), 'idle');
    await page.locator(panel).screenshot({ path: path.join(artifacts, 'autotune-fleet.png') });
    assert.deepEqual(errors, []);
  });
});
