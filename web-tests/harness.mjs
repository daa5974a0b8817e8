// Test harness: starts an ndbench server on a free loopback port and a headless system
// Chromium driven by playwright-core. Nothing is downloaded: Chromium comes from apt
// (scripts/install-ui-test-deps.sh).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const artifacts = path.join(repo, 'web-tests', 'artifacts');

// startProcess runs bin with args and resolves with the base URL it prints
// ("serving on http://ADDR").
function startProcess(bin, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...(env || {}) } });
    let out = '', err = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${bin} did not start in 30 s: ${out}${err}`)); }, 30000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/serving on (http:\/\/[^\s]+)/);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1], logs: () => err }); }
    });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`${bin} exited (${code}) before serving: ${out}${err}`)); });
  });
}

// ensureBinary returns bin/ndbench, building it when missing (`make ui` builds it first).
export function ensureBinary() {
  const ndbench = path.join(repo, 'bin', 'ndbench');
  if (!existsSync(ndbench)) execFileSync('go', ['build', '-o', ndbench, './cmd/ndbench'], { cwd: repo, stdio: 'inherit' });
  return ndbench;
}

// startServer starts `bin/ndbench serve --listen 127.0.0.1:0`, which serves the page
// beside the API. opts.token starts a token-protected node; the token goes in the
// environment (NDBENCH_TOKEN), not the command line, as a user would keep it out of `ps`.
// opts.args are more arguments of serve (--driver, --set, --start); opts.listen its
// address when it must be known before it starts (a fleet's --peers), from freePort.
export async function startServer(opts) {
  const ndbench = ensureBinary();
  const token = opts && opts.token;
  const args = ['serve', '--listen', (opts && opts.listen) || '127.0.0.1:0', '--log-level', 'warn', ...((opts && opts.args) || [])];
  return startProcess(ndbench, args, token ? { NDBENCH_TOKEN: token } : {});
}

// freePort returns a loopback address ("127.0.0.1:PORT") free a moment ago, for a server
// whose address others must know before it starts.
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve('127.0.0.1:' + port));
    });
  });
}

// killServer stops a server abruptly (SIGKILL), as a node that dies.
export async function killServer(srv) {
  if (!srv || srv.child.exitCode !== null || srv.child.signalCode !== null) return;
  const exited = new Promise((r) => srv.child.once('exit', r));
  srv.child.kill('SIGKILL');
  await exited;
}

export async function stopServer(srv) {
  if (!srv || srv.child.exitCode !== null || srv.child.signalCode !== null) return;
  const exited = new Promise((r) => srv.child.once('exit', r));
  srv.child.kill('SIGTERM');
  const t = setTimeout(() => srv.child.kill('SIGKILL'), 10000);
  await exited;
  clearTimeout(t);
}

export async function launchBrowser() {
  const profile = mkdtempSync(path.join(tmpdir(), 'ndbench-chromium-'));
  mkdirSync(artifacts, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    acceptDownloads: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  // Every page gets a navigation timeout of NAVIGATION_PATIENCE, which a test's own
  // page.setDefaultTimeout does not shorten (Playwright gives a page's navigation timeout
  // precedence). No test here judges how fast a page loads; a timeout on page.goto only
  // turns a page that never loads into a failure. On a starved machine (one core kept
  // busy, the fuzzers and another browser file beside) a fresh Chromium's first
  // navigation once took over the 15 s the tests give their conditions, and the test
  // failed before it looked at the page.
  const newPage = context.newPage.bind(context);
  context.newPage = async (...args) => {
    const page = await newPage(...args);
    page.setDefaultNavigationTimeout(NAVIGATION_PATIENCE);
    return page;
  };
  return {
    context,
    async close() { await context.close(); rmSync(profile, { recursive: true, force: true }); },
  };
}

// NAVIGATION_PATIENCE bounds a page's navigation (page.goto, reload): long enough that no
// machine, however loaded, takes it to load a page of ours; short enough that a page that
// never loads fails its test instead of hanging the run (as testserver.Patience in Go).
export const NAVIGATION_PATIENCE = 60000;

// waitFor polls fn (in node) until it returns a truthy value or timeoutMs passes.
export async function waitFor(fn, what, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
