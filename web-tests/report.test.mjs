// The HTML run report in a real browser: `ndbench run --report-html` writes one file that
// draws the same charts as the live page, offline (file://, nothing fetched).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchBrowser, waitFor, artifacts, repo, ensureBinary } from './harness.mjs';

describe('HTML run report', () => {
  let browser, page;
  const errors = [];
  const requests = [];

  before(async () => {
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.setDefaultTimeout(15000);
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('request', (r) => requests.push(r.url()));
  });

  after(async () => { if (browser) await browser.close(); });

  it('shows the run with its charts, offline', async () => {
    const file = path.join(artifacts, 'report.html');
    execFileSync(ensureBinary(), ['run', '--driver', 'memory', '--duration', '4s', '--set', 'workload.readRate=300',
      '--set', 'workload.writeRate=100', '--report-html', file], { cwd: repo, stdio: 'ignore' });
    await page.goto(pathToFileURL(file).href);
    const fig = page.locator('figure[data-chart=throughput][data-op=read]');
    await waitFor(async () => Number(await fig.getAttribute('data-points')) >= 3, 'read throughput chart with the series', 15000);
    assert.equal(await page.locator('figure[data-chart=latency] canvas').count(), 2);
    // The results table: the read row's achieved rate is about the 300 ops/s target.
    const row = page.locator('table').first().locator('tr', { hasText: /^read/ });
    const cells = await row.locator('td').allInnerTexts();
    assert.equal(cells[1], 'response');
    assert.ok(Math.abs(Number(cells[3]) - 300) < 30, `read rate ${cells[3]}`);
    assert.equal(cells[4], '300');
    await page.screenshot({ path: path.join(artifacts, '09-html-report.png'), fullPage: false });
    assert.deepEqual(errors, []);
    // Only the file itself was loaded.
    assert.deepEqual(requests.filter((u) => !u.startsWith('file:')), []);
  });
});
