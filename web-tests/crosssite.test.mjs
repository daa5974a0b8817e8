// A page on another site must not change a node's state through the browser of someone
// who can reach the node: NDBench's routes change state on GET, so <img src> and
// fetch(no-cors) are enough to try. The node (no token, loopback, as by default) is on
// 127.0.0.1; the attacking pages are served from a second origin: localhost (another
// site) and another port of 127.0.0.1 (same site, another origin). Every wait is on a
// condition, never a fixed sleep.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startServer, stopServer, launchBrowser, waitFor } from './harness.mjs';

const T = 15000;

// State-changing GETs of the issue: connect a driver, raise the load, point a driver at
// another host, start the load. Each is sent once by an <img> and once by fetch(no-cors),
// spelt differently so the browser cannot serve one from the other (every URL is valid:
// an unknown parameter would make the node reject the request for another reason).
const imgAttacks = [
  '/REST/ndbench/driver/init/memory',
  '/REST/ndbench/config/set?readRateLimit=20000&numReaders=64',
  '/REST/ndbench/config/set?redis.addrs=192.0.2.10:6379',
  '/REST/ndbench/driver/start',
];
const fetchAttacks = [
  '/REST/ndbench/driver/init/InMemoryTest',
  '/REST/ndbench/config/set?numReaders=64&readRateLimit=20000',
  '/REST/ndbench/config/tunable/set?redis.addrs=192.0.2.10:6379',
  '/REST/ndbench/driver/startReads',
];

function attackPage(node) {
  const imgs = imgAttacks.map((p) => `<img src="${node}${p}" alt="">`).join('\n');
  return `<!doctype html><html><body>${imgs}
<script>
const imgsDone = [...document.images].map((im) => new Promise((r) => { if (im.complete) r(); else { im.onload = r; im.onerror = r; } }));
const fetches = ${JSON.stringify(fetchAttacks)}.map((p) => fetch(${JSON.stringify(node)} + p, { mode: 'no-cors', credentials: 'include' }).catch(() => {}));
Promise.allSettled([...imgsDone, ...fetches]).then(() => { document.title = 'done'; });
</script></body></html>`;
}

// serveAttacker serves the page on 127.0.0.1:0 and resolves with its port.
function serveAttacker(node) {
  return new Promise((resolve) => {
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(attackPage(node));
    });
    server.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port }));
  });
}

describe('cross-site requests to a node', () => {
  let srv, browser, attacker;

  before(async () => {
    srv = await startServer();
    attacker = await serveAttacker(srv.url);
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (attacker) attacker.server.close();
    await stopServer(srv);
  });

  const status = async () => (await fetch(srv.url + '/api/v1/status')).json();

  for (const host of ['localhost', '127.0.0.1']) {
    it(`a page on http://${host}:<other port> cannot change the node with <img> or fetch(no-cors)`, async () => {
      const before = await status();
      assert.equal(before.initialized, false, 'the node starts without a driver');
      const page = await browser.context.newPage();
      page.setDefaultTimeout(T);
      const sent = [], answers = [];
      page.on('request', (r) => { if (r.url().startsWith(srv.url + '/REST/')) sent.push(new URL(r.url()).pathname + new URL(r.url()).search); });
      // Images get a JSON answer, which Chromium's opaque-response blocking (ORB) hides
      // from the page and from 'response' events; fetch(no-cors) answers are seen.
      page.on('response', (r) => { if (r.url().startsWith(srv.url + '/REST/')) answers.push(r.status()); });
      await page.goto(`http://${host}:${attacker.port}/`);
      await waitFor(async () => (await page.title()) === 'done', 'the attack page to finish its requests', T);
      await page.close();
      // The browser sent every request (so the node, not the browser, is what refused)...
      assert.deepEqual(sent.sort(), [...imgAttacks, ...fetchAttacks].sort());
      // ...and every answer it let the test see is a refusal.
      assert.ok(answers.length >= fetchAttacks.length, `answers seen: ${answers}`);
      assert.deepEqual([...new Set(answers)], [403]);
      const after = await status();
      assert.equal(after.initialized, false, 'a driver was connected');
      assert.equal(after.readsRunning || after.writesRunning, false, 'load was started');
      assert.equal(after.configVersion, before.configVersion, 'the configuration changed');
    });
  }

  it('the node\'s own pages (same origin) still change it', async () => {
    const page = await browser.context.newPage();
    page.setDefaultTimeout(T);
    await page.goto(srv.url + '/health');
    const before = await status();
    const code = await page.evaluate(async () => (await fetch('/REST/ndbench/config/set?numReaders=5')).status);
    assert.equal(code, 200);
    assert.equal((await status()).configVersion, before.configVersion + 1);
    await page.close();
  });
});
