// A fleet second flagged partial after it was sent (a node's data for it came late) is
// re-sent by the server (the stream's amend event, a series fetch since the newest point):
// the chart store replaces the point it holds at that time, never adds a second one, and
// the minute it is folded into names the node too. charts.js in Node, no browser.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { fileURLToPath } from 'node:url';

// The repository, as harness.mjs finds it; this file needs no browser, so not harness.mjs.
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function charts() {
  const ctx = { window: {}, console };
  vm.runInNewContext(readFileSync(path.join(repo, 'internal/web/static/charts.js'), 'utf8'), ctx);
  return ctx.window.NDCharts;
}

// Arrays from the script's context are compared spread into this one's (deepEqual checks prototypes).
const C = charts();
const point = (sec, extra) => Object.assign({ t: new Date(Date.UTC(2026, 10, 29, 9, 0, sec)).toISOString(), seconds: 1,
  nodes: 3, ops: { read: { count: 90, attempted: 90, rate: 90, errors: 0 } } }, extra);

describe('an amended point replaces the one held (charts.js)', () => {
  it('replaces the second at its time: same count, now partial', () => {
    const s = new C.Store();
    for (let i = 1; i <= 5; i++) assert.equal(s.push(point(i)), true);
    assert.equal(s.push(point(3, { partial: true, missing: ['node-b'] })), false, 'push drops a point not newer than the last');
    assert.equal(s.replace(point(3, { partial: true, missing: ['node-b'] })), true);
    assert.equal(s.fine.len, 5, 'no point added');
    assert.deepEqual(Array.from(s.times()), [1, 2, 3, 4, 5].map((i) => Date.UTC(2026, 10, 29, 9, 0, i) / 1000));
    const pi = s.partialIn(0);
    assert.equal(pi.count, 1);
    assert.deepEqual([...pi.nodes], ['node-b']);
    const cols = s.columns(0);
    const k = cols.t.indexOf(Date.UTC(2026, 10, 29, 9, 0, 3) / 1000);
    assert.deepEqual([...cols.partial[k]], ['node-b']);
    assert.equal(cols.get('read', 'rate')[k], 90);
  });
  it('holds nothing at a time it never had', () => {
    const s = new C.Store();
    s.push(point(1));
    s.push(point(3));
    assert.equal(s.replace(point(2, { partial: true, missing: ['node-b'] })), false);
    assert.equal(s.fine.len, 2);
    assert.equal(s.partialIn(0).count, 0);
  });
  it('names the node in the minute the second is folded into', () => {
    const s = new C.Store();
    for (let i = 1; i <= 3; i++) s.push(point(i));
    s.push(point(65)); // the first minute is folded
    s.replace(point(2, { partial: true, missing: ['node-b'] }));
    s.replace(point(65, { partial: true, missing: ['node-c'] }));
    assert.deepEqual([...s.coarse.missingAt(0)], ['node-b']);
    assert.deepEqual([...s.bucket.missing], ['node-c']);
  });
});
