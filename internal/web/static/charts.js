// ndbench charts: turns stats points ({t, ops: {read: OpSummary, ...}}) into columns and
// draws them with uPlot. Shared by the live page (app.js) and the self-contained HTML run
// report, so both show the same charts. No dependencies but uPlot; no build step.
'use strict';

(function (global) {
  // The series every node has; a workload's other op classes (and the operations of a
  // mixed class, "search.byTitle") are added as they first appear in the data.
  const OPS = ['read', 'write', 'backfill'];
  const MAX_OPS = 32; // the server's stats.MaxSeries
  const ERROR_CLASSES = ['timeout', 'unavailable', 'throttled', 'rejected', 'other'];

  // Columns kept per op class, in this order. Latencies are converted from the API's
  // microseconds to milliseconds; target 0 (closed loop) becomes a gap, not a zero line.
  const FIELDS = ['rate', 'target',
    'resp50', 'resp95', 'resp99', 'resp999', 'respMax', 'respAvg', 'svc50', 'svc99', 'svc999', 'svcMax',
    ...ERROR_CLASSES.map((c) => 'err_' + c),
    'hit', 'backlog', 'count', 'misses', 'attempted'];
  const NF = FIELDS.length;
  const F = Object.fromEntries(FIELDS.map((f, i) => [f, i]));
  const LATENCY = ['resp50', 'resp95', 'resp99', 'resp999', 'respMax', 'respAvg', 'svc50', 'svc99', 'svc999', 'svcMax'];
  // How a column is folded when points are downsampled: latencies and backlog keep the
  // worst value of the bucket, everything else is averaged (hit ratio from the sums).
  const FOLD_MAX = new Set([...LATENCY, 'backlog']);

  // readLike tells the series whose misses mean cache misses: the read class, its
  // operations, and the driver's read within any mixed class ("lookup.read").
  function readLike(op) { return op === 'read' || op.startsWith('read.') || op.endsWith('.read'); }

  // reportOrder sorts series names as the server's reports do (stats.ReportOrder): read,
  // write, the other classes by name, backfill last; each class followed by its operations.
  function reportOrder(names) {
    const rank = (n) => ({ read: 0, write: 1, backfill: 3 }[n.split('.')[0]] ?? 2);
    return names.slice().sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  }

  function num(v) { return typeof v === 'number' && isFinite(v) ? v : 0; }

  // spanOf returns the seconds a point covers, which its counts are rates over: a second
  // mostly, less at a phase boundary (the first interval after a reset starts at it, the
  // flush of a phase's end stops at it). The point says so (seconds) on current servers;
  // else the caller's figure (an interval event's seconds); else what its own rates imply
  // (rate is count over the span); 1 s when nothing tells.
  function spanOf(p, seconds) {
    if (p && p.seconds > 0) return p.seconds;
    if (seconds > 0) return seconds;
    for (const s of Object.values((p && p.ops) || {})) {
      if (s && s.count > 0 && s.rate > 0) return s.count / s.rate;
    }
    return 1;
  }

  // values of one point as a flat array: ops.length * NF numbers (null = no value). Every
  // per-second column (rate, attempted, errors) is over the point's own span (spanOf), so
  // the partial seconds at a phase boundary draw as rates, not as dips.
  function pointValues(p, seconds, ops) {
    ops = ops || OPS;
    const out = new Array(ops.length * NF).fill(null);
    const secs = spanOf(p, seconds);
    ops.forEach((op, k) => {
      const s = p.ops && p.ops[op];
      if (!s) return;
      const b = k * NF;
      const rt = s.responseTime || {}, st = s.serviceTime || {};
      out[b + F.rate] = typeof s.rate === 'number' ? num(s.rate) : num(s.count) / secs;
      // Attempted: every op sent, failures included (rate counts those that answered). An
      // older server without the field draws no line rather than a false zero.
      out[b + F.attempted] = typeof s.attempted === 'number' ? s.attempted / secs : null;
      out[b + F.target] = s.targetRate > 0 ? s.targetRate : null;
      // A second without operations has no latency: a gap in the chart, not "0 ms".
      if (s.count > 0) {
        out[b + F.resp50] = num(rt.p50) / 1000; out[b + F.resp95] = num(rt.p95) / 1000;
        out[b + F.resp99] = num(rt.p99) / 1000; out[b + F.resp999] = num(rt.p999) / 1000;
        out[b + F.respMax] = num(rt.max) / 1000; out[b + F.respAvg] = num(rt.mean) / 1000;
        out[b + F.svc50] = num(st.p50) / 1000; out[b + F.svc99] = num(st.p99) / 1000;
        out[b + F.svc999] = num(st.p999) / 1000; out[b + F.svcMax] = num(st.max) / 1000;
      }
      const fl = s.failures || {};
      ERROR_CLASSES.forEach((c) => { out[b + F['err_' + c]] = num(fl[c]) / secs; });
      out[b + F.count] = num(s.count); out[b + F.misses] = num(s.misses);
      out[b + F.hit] = s.count > 0 ? 100 * (s.count - num(s.misses)) / s.count : null;
      out[b + F.backlog] = num(s.backlogMs);
    });
    return out;
  }

  // Ring is a fixed-capacity time series: the oldest point is overwritten, so memory stays
  // bounded however long the page runs.
  class Ring {
    constructor(cap, nops) {
      this.cap = cap; this.start = 0; this.len = 0;
      this.t = new Float64Array(cap);
      // Fleet completeness per point: missing[i] lists the nodes whose data the point
      // lacks (a partial second), null for a complete point (and always on one node).
      this.missing = new Array(cap).fill(null);
      this.cols = [];
      this.grow(nops);
    }
    // grow adds the columns of new op classes: empty (NaN) for the points already held.
    grow(nops) {
      while (this.cols.length < nops * NF) this.cols.push(new Float64Array(this.cap).fill(NaN));
    }
    push(t, vals, missing) {
      const i = (this.start + this.len) % this.cap;
      if (this.len < this.cap) this.len++; else this.start = (this.start + 1) % this.cap;
      this.t[i] = t;
      this.missing[i] = missing || null;
      for (let c = 0; c < vals.length; c++) this.cols[c][i] = vals[c] === null ? NaN : vals[c];
    }
    // set puts vals and missing in place of the point at logical index j.
    set(j, vals, missing) {
      const i = (this.start + j) % this.cap;
      this.missing[i] = missing || null;
      for (let c = 0; c < this.cols.length; c++) this.cols[c][i] = c < vals.length && vals[c] !== null ? vals[c] : NaN;
    }
    // indexOf returns the logical index of the point at t, -1 when none is held; from the
    // newest back, where the points a server amends are.
    indexOf(t) {
      for (let j = this.len - 1; j >= 0; j--) {
        const tj = this.t[(this.start + j) % this.cap];
        if (tj === t) return j;
        if (tj < t) break;
      }
      return -1;
    }
    lastT() { return this.len ? this.t[(this.start + this.len - 1) % this.cap] : -Infinity; }
    firstT() { return this.len ? this.t[this.start] : Infinity; }
    // slice returns the logical indexes [from, len) of points with t in [t0, t1).
    range(t0, t1) {
      let a = 0, b = this.len;
      while (a < b && this.t[(this.start + a) % this.cap] < t0) a++;
      while (b > a && this.t[(this.start + b - 1) % this.cap] >= t1) b--;
      return [a, b];
    }
    at(c, j) { const v = this.cols[c][(this.start + j) % this.cap]; return Number.isNaN(v) ? null : v; }
    time(j) { return this.t[(this.start + j) % this.cap]; }
    missingAt(j) { return this.missing[(this.start + j) % this.cap]; }
  }

  // missingOf returns a point's fleet completeness: the ids of the nodes a partial point
  // (merged by a fleet coordinator without some node's data) lacks, [] when it is partial
  // without names, null for a complete point or a single node's.
  function missingOf(p) {
    if (!p || !p.partial) return null;
    return Array.isArray(p.missing) ? p.missing.slice() : [];
  }

  // Store keeps the last hour at 1 Hz (3600 points) and, for longer runs, one point per
  // minute for the last day (1440 points): about 5,000 points per instance at most.
  class Store {
    constructor(opts) {
      opts = opts || {};
      this.ops = OPS.slice();
      this.fine = new Ring(opts.fine || 3600, this.ops.length);
      // coarse: 0 keeps no minute points (a report holds its whole series at 1 Hz).
      this.coarse = opts.coarse === 0 ? null : new Ring(opts.coarse || 1440, this.ops.length);
      this.bucketSecs = opts.bucketSecs || 60;
      this.bucket = null;
      this.last = null; // the newest point as received
      this.total = 0;
    }
    // push adds a point ({t: RFC 3339 or ms, ops}); points not newer than the last are
    // dropped, so the initial series and the stream can overlap.
    push(p, seconds) {
      const t = (typeof p.t === 'number' ? p.t : Date.parse(p.t)) / 1000;
      if (!(t > this.fine.lastT())) return false;
      this.learn(p.ops);
      const vals = pointValues(p, seconds, this.ops);
      const missing = missingOf(p);
      this.fine.push(t, vals, missing);
      this.fold(t, vals, missing);
      this.last = p; this.total++;
      return true;
    }
    // replace puts p in place of the 1 s point held at its time: a point the server
    // amended after it was sent (a fleet second flagged partial when a node's data for it
    // came late), from the stream's amend event or a series fetch that returns it again.
    // It returns false when no point is held at that time (push adds newer ones). The
    // minute the second is folded into takes its missing nodes; its values stay (an
    // amendment flags a second, its counts do not change).
    replace(p, seconds) {
      const t = (typeof p.t === 'number' ? p.t : Date.parse(p.t)) / 1000;
      const j = this.fine.indexOf(t);
      if (j < 0) return false;
      this.learn(p.ops);
      const missing = missingOf(p);
      this.fine.set(j, pointValues(p, seconds, this.ops), missing);
      if (missing && this.coarse) {
        const key = Math.floor(t / this.bucketSecs);
        if (this.bucket && this.bucket.key === key) {
          this.bucket.missing = this.bucket.missing || new Set();
          missing.forEach((id) => this.bucket.missing.add(id));
        } else {
          for (let k = this.coarse.len - 1; k >= 0; k--) {
            if (Math.floor(this.coarse.time(k) / this.bucketSecs) !== key) continue;
            const i = (this.coarse.start + k) % this.coarse.cap;
            this.coarse.missing[i] = [...new Set([...(this.coarse.missing[i] || []), ...missing])];
            break;
          }
        }
      }
      if (this.last && t === this.fine.lastT()) this.last = p;
      return true;
    }
    // times returns the end times (Unix seconds) of the 1 s points held, oldest first.
    times() {
      const out = new Array(this.fine.len);
      for (let j = 0; j < this.fine.len; j++) out[j] = this.fine.time(j);
      return out;
    }
    // learn adds the op classes of a point the store has not seen yet.
    learn(ops) {
      const names = Object.keys(ops || {}).filter((n) => !this.ops.includes(n)).sort();
      if (!names.length) return;
      for (const n of names) if (this.ops.length < MAX_OPS) this.ops.push(n);
      this.fine.grow(this.ops.length);
      if (this.coarse) this.coarse.grow(this.ops.length);
      if (this.bucket) {
        while (this.bucket.vals.length < this.ops.length * NF) { this.bucket.vals.push(0); this.bucket.n.push(0); }
      }
    }
    fold(t, vals, missing) {
      if (!this.coarse) return;
      const key = Math.floor(t / this.bucketSecs);
      if (this.bucket && this.bucket.key !== key) {
        // A minute point sits at its first sample, not at the start of its minute: a
        // server started at 15:57:40 has no data at 15:57:00.
        this.coarse.push(this.bucket.first, this.bucket.vals.map((v, c) => {
          if (this.bucket.n[c] === 0) return null;
          return FOLD_MAX.has(FIELDS[c % NF]) ? v : v / this.bucket.n[c];
        }), this.bucket.missing ? [...this.bucket.missing] : null);
        this.bucket = null;
      }
      if (!this.bucket) this.bucket = { key, first: t, vals: new Array(vals.length).fill(0), n: new Array(vals.length).fill(0), missing: null };
      const b = this.bucket;
      // A minute with a partial second is partial: its nodes are the union.
      if (missing) { b.missing = b.missing || new Set(); missing.forEach((id) => b.missing.add(id)); }
      vals.forEach((v, c) => {
        if (v === null) return;
        b.vals[c] = FOLD_MAX.has(FIELDS[c % NF]) ? Math.max(b.n[c] ? b.vals[c] : -Infinity, v) : b.vals[c] + v;
        b.n[c]++;
      });
    }
    // columns returns {t: [...], get(op, field) -> [...]} for the window: seconds back from
    // the newest point, or 0 for everything kept. Minute points are used only for minutes
    // that ended before the first 1 s point, so a rollup is never drawn where 1 s data
    // exists. Where samples are missing (the page or the server was away, or between the
    // minute points and the 1 s points) a null point makes a gap instead of a diagonal.
    columns(windowSecs) {
      const end = this.fine.lastT() + 1;
      const t0 = windowSecs > 0 ? end - windowSecs : -Infinity;
      const [fa, fb] = this.fine.range(t0, Infinity);
      const fineStart = this.fine.len ? this.fine.firstT() : Infinity;
      const cut = Math.floor(fineStart / this.bucketSecs) * this.bucketSecs;
      const [ca, cb] = this.coarse ? this.coarse.range(t0, cut) : [0, 0];
      const src = [], idx = [], t = [], span = [];
      const add = (ring, step, a, b) => {
        for (let j = a; j < b; j++) {
          const tj = ring.time(j);
          if (t.length && tj - t[t.length - 1] > 2.5 * step) { src.push(null); idx.push(0); t.push(t[t.length - 1] + step); span.push(step); }
          src.push(ring); idx.push(j); t.push(tj); span.push(step);
        }
      };
      if (this.coarse) add(this.coarse, this.bucketSecs, ca, cb);
      if (cb > ca && fb > fa) { src.push(null); idx.push(0); t.push(t[t.length - 1] + this.bucketSecs / 2); span.push(1); }
      add(this.fine, 1, fa, fb);
      const n = t.length;
      const cache = {};
      const get = (op, field) => {
        const k = this.ops.indexOf(op);
        if (k < 0) return new Array(n).fill(null);
        const c = k * NF + F[field];
        if (cache[c]) return cache[c];
        const out = new Array(n);
        for (let k = 0; k < n; k++) out[k] = src[k] ? src[k].at(c, idx[k]) : null;
        return (cache[c] = out);
      };
      // partial: per point, the nodes it lacks (null when complete); spans: the seconds
      // each point covers (it sits at its end), for drawing partial seconds as bands.
      const partial = new Array(n);
      for (let k = 0; k < n; k++) partial[k] = src[k] ? src[k].missingAt(idx[k]) : null;
      return { t, get, n, partial, spans: span };
    }
    // partialIn returns the partial 1 s points in the window (all kept when 0): how many,
    // and the ids of the nodes they lacked.
    partialIn(windowSecs) {
      const t0 = windowSecs > 0 ? this.fine.lastT() + 1 - windowSecs : -Infinity;
      let count = 0;
      const nodes = new Set();
      for (let j = 0; j < this.fine.len; j++) {
        const m = this.fine.missingAt(j);
        if (!m || this.fine.time(j) < t0) continue;
        count++;
        m.forEach((id) => nodes.add(id));
      }
      return { count, nodes: [...nodes].sort() };
    }
    // hasData tells whether an op class did anything in the last windowSecs (all kept
    // data when 0): classes that did nothing get no charts.
    hasData(op, windowSecs) {
      const k = this.ops.indexOf(op);
      if (k < 0) return false;
      const c = k * NF + F.count;
      const t0 = windowSecs > 0 ? this.fine.lastT() + 1 - windowSecs : -Infinity;
      for (let j = 0; j < this.fine.len; j++) if (this.fine.time(j) >= t0 && this.fine.at(c, j) > 0) return true;
      for (let j = 0; this.coarse && j < this.coarse.len; j++) if (this.coarse.time(j) >= t0 && this.coarse.at(c, j) > 0) return true;
      return false;
    }
  }
  const C = { blue: '#1f5fbf', orange: '#d9730d', red: '#c62828', purple: '#6a3d9a', grey: '#666', green: '#2e7d32', brown: '#8d5524', teal: '#00838f', pink: '#ad1457' };
  const LAT = [['50', 'p50', C.blue], ['95', 'p95', C.teal], ['99', 'p99', C.orange], ['999', 'p99.9', C.red], ['Max', 'max', C.purple], ['Avg', 'avg', C.grey]];

  // CHARTS lists every chart: title, y unit, which op classes have it, and its series.
  const CHARTS = [
    // On a fleet page (Grid option fleet) the seconds merged without some node's data are
    // not part of the achieved and target lines: they are drawn apart as a lower bound, so
    // a missing node never reads as the store's throughput dropping.
    // Succeeded is what the store answered; attempted adds the failures, so a store that
    // fails fast never looks like one that keeps up.
    { id: 'throughput', title: 'Throughput', unit: 'ops/s', series: [
      { field: 'rate', label: 'succeeded', stroke: C.blue, fill: 'rgba(31,95,191,0.08)', complete: true },
      { field: 'attempted', label: 'attempted', stroke: C.red, dash: [4, 2], complete: true },
      { field: 'target', label: 'target', stroke: C.grey, dash: [6, 4], complete: true },
      { field: 'rate', label: 'partial (lower bound)', stroke: C.orange, dash: [2, 3], fleet: true, partialOnly: true, points: true }] },
    { id: 'latency', title: 'Latency', unit: 'ms', log: true, series: [
      ...LAT.map(([k, l, c]) => ({ field: 'resp' + k, label: 'response ' + l, stroke: c })),
      ...LAT.filter(([k]) => k !== '95' && k !== 'Avg').map(([k, l, c]) => ({ field: 'svc' + k, label: 'service ' + l, stroke: c, dash: [3, 3], show: k === '50' || k === '99' }))] },
    { id: 'errors', title: 'Errors by class', unit: 'errors/s', series:
      ERROR_CLASSES.map((c, i) => ({ field: 'err_' + c, label: c, stroke: [C.red, C.orange, C.teal, C.pink, C.brown][i] })) },
    { id: 'hit', title: 'Cache hit ratio', unit: '%', ops: readLike, range: [0, 100], series: [
      { field: 'hit', label: 'hits', stroke: C.green }] },
    { id: 'backlog', title: 'Backlog', unit: 'ms', series: [
      { field: 'backlog', label: 'behind schedule', stroke: C.brown }] },
  ];

  function fmt(v, unit) {
    if (v === null || v === undefined || Number.isNaN(v)) return '–';
    const a = Math.abs(v);
    const s = a >= 1e6 ? (v / 1e6).toFixed(2) + 'M' : a >= 1e4 ? (v / 1e3).toFixed(1) + 'k' : a >= 100 ? v.toFixed(0) : a >= 1 ? v.toFixed(2) : v.toFixed(3);
    return s + ' ' + unit;
  }

  // clock formats a time (seconds) for the legend: the time under the cursor.
  function clock(t) {
    const d = new Date(t * 1000);
    return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
  }

  // timeTicks formats the time axis on one row: uPlot's default adds a second row with the
  // date under the first tick and wherever a larger unit changes, which is wider than the
  // space between ticks on a phone and overprints its neighbours. The hour and minute
  // (and the second when ticks are seconds apart) are what a live chart needs; the legend
  // gives the full time under the cursor. Ticks a day or more apart show the date.
  function timeTicks(u, splits, axisIdx, space, incr) {
    const two = (n) => String(n).padStart(2, '0');
    return splits.map((v) => {
      if (v === null || v === undefined) return '';
      const d = new Date(v * 1000);
      if (incr >= 86400) return (d.getMonth() + 1) + '/' + d.getDate();
      const hm = two(d.getHours()) + ':' + two(d.getMinutes());
      return incr % 60 === 0 ? hm : hm + ':' + two(d.getSeconds());
    });
  }

  // timeSpace is the narrowest spacing between time ticks (CSS px): "15:57:40" is about
  // 50 px at 12 px, so a narrow chart keeps labels apart with room to spare; a wide one
  // keeps uPlot's denser default. A phone's chart (about 300 px of plot) still gets at
  // least 3 ticks: the spacing shrinks to a quarter of the plot, never under 60 px.
  function timeSpace(u, axisIdx, min, max, plotDim) {
    return Math.max(60, Math.min(plotDim < 500 ? 90 : 70, plotDim / 4));
  }

  // decades keeps the grid lines of a log axis at powers of ten; lines at every 2..9 of
  // each decade make a grey band that hides the series.
  function decades(u, splits) {
    return splits.map((v) => (v > 0 && Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9 ? v : null));
  }

  // tick formats an axis value: short, with k/M for thousands and millions.
  function tick(v) {
    // A log axis leaves some splits without a label (null).
    if (v === null || v === undefined) return '';
    const a = Math.abs(v);
    if (a >= 1e6) return +(v / 1e6).toPrecision(3) + 'M';
    if (a >= 1e3) return +(v / 1e3).toPrecision(3) + 'k';
    return String(+v.toPrecision(3));
  }

  // drawMarks draws a scenario's timeline under the series: each phase's start as a
  // dashed line, each hook as a blue band over its span (a line when it has none), so a
  // latency spike lines up with the fault that caused it; drawMarkLabels names them.
  // marks: [{ kind: 'phase'|'hook', name, start, end }] with times in seconds.
  function drawMarks(u, marks) {
    if (!marks.length) return;
    const { left, top, width: w, height: h } = u.bbox;
    const ctx = u.ctx;
    const px = global.devicePixelRatio || 1;
    ctx.save();
    ctx.beginPath(); ctx.rect(left, top, w, h); ctx.clip();
    for (const m of marks) {
      const x0 = u.valToPos(m.start, 'x', true);
      if (m.kind === 'hook') {
        const x1 = m.end > m.start ? u.valToPos(m.end, 'x', true) : x0;
        ctx.fillStyle = 'rgba(37,99,235,0.12)';
        ctx.fillRect(x0, top, Math.max(x1 - x0, 2 * px), h);
      } else {
        ctx.strokeStyle = 'rgba(80,80,80,0.7)';
        ctx.lineWidth = px;
        ctx.setLineDash([4 * px, 3 * px]);
        ctx.beginPath(); ctx.moveTo(x0, top); ctx.lineTo(x0, top + h); ctx.stroke();
        ctx.setLineDash([]);
      }
    }
    ctx.restore();
  }

  // drawMarkLabels writes the marks' names over the series (drawn after them, on a white
  // ground, so a line at the top of the plot does not cross them out), each right of its
  // mark, or left of it when the plot ends first: a run's start mark sits at the right
  // edge for its first seconds, and its label was cut there ("lo"). The boxes drawn are
  // kept on the plot (u.ndMarkLabels, CSS px relative to the canvas) for tests.
  function drawMarkLabels(u, marks) {
    u.ndMarkLabels = [];
    if (!marks.length) return;
    const { left, top, width: w, height: h } = u.bbox;
    const ctx = u.ctx;
    const px = global.devicePixelRatio || 1;
    ctx.save();
    ctx.font = Math.round(10 * px) + 'px sans-serif';
    ctx.textBaseline = 'top';
    const lineH = 12 * px, pad = 2 * px;
    let row = 0;
    for (const m of marks) {
      const x0 = u.valToPos(m.start, 'x', true);
      if (x0 < left - 1 || x0 > left + w + 1) continue; // outside the window: no label
      const tw = ctx.measureText(m.name).width;
      let x = x0 + 3 * px;
      if (x + tw + pad > left + w) x = x0 - 3 * px - tw;
      x = Math.max(left + pad, Math.min(x, left + w - tw - pad));
      // Labels take turns on three rows, so neighbours do not overprint each other.
      const y = top + pad + (row++ % 3) * lineH;
      if (y + lineH > top + h) continue;
      ctx.fillStyle = 'rgba(255,255,255,0.85)';
      ctx.fillRect(x - pad, y - pad / 2, tw + 2 * pad, lineH);
      ctx.fillStyle = m.kind === 'hook' ? 'rgba(37,99,235,0.9)' : 'rgba(60,60,60,0.9)';
      ctx.fillText(m.name, x, y);
      u.ndMarkLabels.push({ text: m.name, left: x / px, right: (x + tw) / px, top: y / px,
        plot: { left: left / px, right: (left + w) / px, top: top / px, bottom: (top + h) / px } });
    }
    ctx.restore();
  }

  // hatch is the fill of partial seconds: orange diagonal stripes, one pattern per canvas.
  function hatch(ctx) {
    if (ctx.ndHatch) return ctx.ndHatch;
    const c = document.createElement('canvas');
    const s = Math.round(8 * (global.devicePixelRatio || 1));
    c.width = s; c.height = s;
    const g = c.getContext('2d');
    g.fillStyle = 'rgba(217,115,13,0.10)';
    g.fillRect(0, 0, s, s);
    g.strokeStyle = 'rgba(217,115,13,0.55)';
    g.lineWidth = Math.max(1, s / 8);
    g.beginPath(); g.moveTo(0, s); g.lineTo(s, 0); g.moveTo(-s / 2, s / 2); g.lineTo(s / 2, -s / 2); g.moveTo(s / 2, s * 1.5); g.lineTo(s * 1.5, s / 2); g.stroke();
    return (ctx.ndHatch = ctx.createPattern(c, 'repeat'));
  }

  // partialBands turns the points' completeness into [from, to] time spans to hatch:
  // consecutive partial points make one band.
  function partialBands(cols) {
    const bands = [];
    if (!cols.partial) return bands;
    for (let k = 0; k < cols.n; k++) {
      if (!cols.partial[k]) continue;
      const from = cols.t[k] - (cols.spans ? cols.spans[k] : 1), to = cols.t[k];
      const last = bands[bands.length - 1];
      if (last && from <= last[1] + 1e-6) last[1] = to; else bands.push([from, to]);
    }
    return bands;
  }

  // makeChart draws one chart of one op class into el and returns a handle whose
  // update(cols) sets its data. Seconds a fleet merged without some node's data (partial)
  // are hatched in every chart.
  // With log, a chart that allows it (latency) uses a log y axis: one 500 ms stall does not
  // flatten eight series of 1 ms into the x axis.
  function makeChart(el, def, op, width, minSpan, log, fleet, marks) {
    marks = marks || [];
    const logY = !!(log && def.log);
    const defs = def.series.filter((s) => !s.fleet || fleet);
    let bands = [];
    const series = [{ value: (u, v) => (v === null || v === undefined ? '–' : clock(v)) }].concat(defs.map((s) => ({
      label: s.label, stroke: s.stroke, width: 1.5, dash: s.dash, fill: s.fill, show: s.show !== false,
      spanGaps: false, value: (u, v) => fmt(v, def.unit),
      points: s.points ? { show: true, size: 5, width: 1.5, stroke: s.stroke, fill: '#fff' } : undefined,
    })));
    const opts = {
      width: width, height: 170,
      series: series,
      cursor: { drag: { x: false, y: false } },
      legend: { live: true },
      hooks: { draw: [(u) => drawMarkLabels(u, marks)], drawClear: [(u) => drawMarks(u, marks), (u) => {
        if (!bands.length) return;
        const { left, top, width: w, height: h } = u.bbox;
        const ctx = u.ctx;
        ctx.save();
        ctx.beginPath(); ctx.rect(left, top, w, h); ctx.clip();
        ctx.fillStyle = hatch(ctx);
        const minW = 3 * (global.devicePixelRatio || 1);
        for (const [a, b] of bands) {
          const x0 = u.valToPos(a, 'x', true), x1 = u.valToPos(b, 'x', true);
          ctx.fillRect(Math.min(x0, x1) - Math.max(0, (minW - Math.abs(x1 - x0)) / 2), top, Math.max(Math.abs(x1 - x0), minW), h);
        }
        ctx.restore();
      }] },
      // The live page shows at least a minute across, so a fresh run does not zoom into
      // sub-second ticks; a report spans exactly its run.
      // A phase that began with the data (a run's first phase, a backfill) starts a second
      // before its first point, which sits at its interval's end: the range reaches back
      // to it, so its mark is drawn, not clipped.
      scales: { x: { time: true, range: (u, min, max) => {
        for (const m of marks) if (m.start < min && m.start >= min - 1.5) min = m.start;
        return max - min < minSpan ? [max - minSpan, max] : [min, max];
      } },
        y: logY ? { distr: 3, log: 10 } : def.range ? { range: def.range } : { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: '#333', grid: { stroke: '#eee' }, ticks: { stroke: '#ccc' }, space: timeSpace, values: timeTicks },
        { stroke: '#333', grid: Object.assign({ stroke: '#eee' }, logY && { filter: decades }), ticks: Object.assign({ stroke: '#ccc' }, logY && { filter: decades }),
          size: 64, label: def.unit, labelSize: 18, values: (u, splits) => splits.map(tick) },
      ],
    };
    const u = new global.uPlot(opts, [[]].concat(defs.map(() => [])), el);
    // The plot on its figure, for tests and for poking at from the console.
    (el.closest('figure') || el).uplot = u;
    // The legend doubles as the series toggle; make its rows reachable from the keyboard.
    u.root.querySelectorAll('.u-legend .u-series').forEach((row, i) => {
      if (i === 0) return;
      row.tabIndex = 0;
      row.setAttribute('role', 'switch');
      const sync = () => row.setAttribute('aria-checked', String(u.series[i].show));
      sync();
      row.addEventListener('click', () => setTimeout(sync));
      row.addEventListener('keydown', (e) => {
        if (e.key !== 'Enter' && e.key !== ' ') return;
        e.preventDefault();
        u.setSeries(i, { show: !u.series[i].show });
        sync();
      });
    });
    let hovering = false;
    u.over.addEventListener('mouseenter', () => { hovering = true; });
    u.over.addEventListener('mouseleave', () => { hovering = false; showLatest(); });
    function showLatest() {
      const n = u.data[0].length;
      // Outside a hover the legend shows the newest values.
      if (!hovering && n > 0) u.setLegend({ idx: n - 1 });
    }
    return {
      plot: u,
      update(cols) {
        // A log axis has no zero: a zero latency is left out rather than drawn at -inf.
        const col = (f) => (logY ? cols.get(op, f).map((v) => (v > 0 ? v : null)) : cols.get(op, f));
        const part = cols.partial || [];
        // On a fleet page a partial second leaves the complete lines and goes to its own.
        const masked = (s) => {
          const v = col(s.field);
          if (!fleet || !(s.complete || s.partialOnly)) return v;
          return v.map((x, k) => ((!!part[k]) === !!s.partialOnly ? x : null));
        };
        bands = partialBands(cols);
        u.setData([cols.t].concat(defs.map(masked)));
        // setData redraws (and resets the legend) in a microtask; set the legend after it.
        queueMicrotask(showLatest);
        const last = cols.n ? cols.get(op, defs[0].field)[cols.n - 1] : null;
        // Exposed on the figure for tests and scripts: the newest value of the first series.
        const fig = el.closest('figure') || el;
        fig.dataset.last = last === null || last === undefined ? '' : String(last);
        fig.dataset.points = String(cols.n);
        fig.dataset.scale = logY ? 'log' : 'linear';
        fig.dataset.partial = String(part.filter(Boolean).length);
      },
      resize(w) { u.setSize({ width: w, height: 170 }); },
    };
  }

  // Grid lays out every chart for the given op classes in a container: one row per
  // chart kind, one column per op class (one column in all on a narrow screen). Charts an
  // op class does not have (cache hit ratio for writes) are left out, not shown empty.
  // opts.minSpan: narrowest x range in seconds; opts.log: log y axis for latency.
  class Grid {
    constructor(container, ops, opts) {
      this.container = container; this.charts = []; this.ops = ops;
      this.log = !!(opts && opts.log);
      this.fleet = !!(opts && opts.fleet);
      this.marks = (opts && opts.marks) || [];
      const minSpan = opts && opts.minSpan !== undefined ? opts.minSpan : 60;
      container.classList.add('chart-grid');
      const width = this.colWidth();
      for (const def of CHARTS) {
        for (const op of ops) {
          if (def.ops && !def.ops(op)) continue;
          const fig = document.createElement('figure');
          fig.className = 'chart';
          fig.dataset.chart = def.id; fig.dataset.op = op;
          const cap = document.createElement('figcaption');
          cap.textContent = op + ' · ' + def.title + ' (' + def.unit + ')';
          fig.appendChild(cap);
          container.appendChild(fig);
          const body = document.createElement('div');
          fig.appendChild(body);
          fig.dataset.marks = String(this.marks.length);
          this.charts.push({ op, def, fig, chart: makeChart(body, def, op, width, minSpan, this.log, this.fleet, this.marks) });
        }
      }
    }
    // colWidth sets the number of columns for the container's width (CSS grid and the
    // canvases must agree, or charts overlap) and returns one column's width.
    // A workload with more op classes (and operations) than fit side by side at 220 px
    // wraps onto more rows rather than widening the page.
    colWidth() {
      const w = this.container.clientWidth || 900;
      const cols = w < 640 ? 1 : Math.max(1, Math.min(this.ops.length, Math.floor((w + 14) / (220 + 14))));
      this.container.style.setProperty('--cols', String(cols));
      return Math.max(200, Math.floor((w - 14 * (cols - 1)) / cols) - 2);
    }
    update(cols) { for (const c of this.charts) c.chart.update(cols); }
    // setMarks replaces the phases and hooks marked on every chart (drawn at the next
    // update): a live page learns of phases as they begin.
    setMarks(marks) {
      this.marks.splice(0, this.marks.length, ...marks);
      for (const c of this.charts) c.fig.dataset.marks = String(this.marks.length);
    }
    resize() { const w = this.colWidth(); for (const c of this.charts) c.chart.resize(w); }
  }

  // --- auto-tune -------------------------------------------------------------------

  // autotuneClasses returns the op classes measured in a search's steps, sorted.
  function autotuneClasses(steps) {
    const seen = new Set();
    for (const st of steps) for (const c of Object.keys(st.classes || {})) seen.add(c);
    return [...seen].sort();
  }

  // autotunePercentile is the percentile a class's SLA bounds (its own, else the
  // search's), or null when the settings are not known (yet).
  function autotunePercentile(settings, c) {
    if (!settings) return null;
    const own = settings.classes && settings.classes[c];
    return (own && own.percentile) || (settings.sla && settings.sla.percentile) || null;
  }

  // autotuneBound returns class c's latency bound in ms (the SLA's latency, nanoseconds in
  // the JSON), or null when the settings are not known.
  function autotuneBound(settings, c) {
    if (!settings) return null;
    const own = settings.classes && settings.classes[c];
    const ns = (own && own.latency) || (settings.sla && settings.sla.latency) || 0;
    return ns > 0 ? ns / 1e6 : null;
  }

  // AutotuneChart draws an auto-tune search (package autotune's Result, or the steps so
  // far of a running one): per step the target and achieved total rate, failed steps red,
  // client-bound steps orange, the capacity found as a line, and each class's
  // response-time percentile on the right axis. The HTML report and the live page's
  // Auto-tune panel both draw it. at: {steps, capacity, settings}; settings may be null.
  class AutotuneChart {
    constructor(el, width) {
      this.el = el; this.width = width; this.u = null; this.key = null;
    }
    update(at) {
      const steps = at.steps || [];
      const classes = autotuneClasses(steps);
      const labels = classes.map((c) => { const q = autotunePercentile(at.settings, c); return c + ' ' + (q ? 'p' + q : 'pX') + ' (ms)'; });
      // The series follow the classes measured: rebuilt when they change (a running
      // search's first step adds them).
      if (!this.u || this.key !== labels.join()) {
        if (this.u) this.u.destroy();
        this.key = labels.join();
        // The classes' percentiles take colours no rate line has (target blue, achieved
        // green, failed red, client-bound orange, capacity purple), and each its SLA bound
        // in its colour, dotted, on the same axis: a step over the bound is seen above it.
        const colors = ['#be185d', '#92400e', '#0f172a', '#a16207'];
        const series = [{ label: 'step' },
          { label: 'target', stroke: '#2563eb', width: 1.5, points: { show: true, size: 5 } },
          { label: 'achieved', stroke: '#059669', width: 1.5, dash: [4, 3] },
          { label: 'failed', stroke: '#dc2626', width: 0, points: { show: true, size: 9, fill: '#dc2626' } },
          { label: 'client-bound', stroke: '#d97706', width: 0, points: { show: true, size: 9, fill: '#d97706' } },
          { label: 'capacity', stroke: '#7c3aed', width: 1, dash: [8, 4] }]
          .concat(labels.map((l, i) => ({ label: l, stroke: colors[i % colors.length], width: 1.5, scale: 'ms' })))
          .concat(classes.map((c, i) => ({ label: c + ' SLA bound (ms)', stroke: colors[i % colors.length], width: 1, dash: [2, 3], scale: 'ms' })));
        const zeroUp = (u, min, max) => [0, max > 0 ? max * 1.1 : 1];
        this.u = new global.uPlot({ width: this.width, height: 260, series: series,
          // Steps are whole numbers: the x axis ticks only those.
          scales: { x: { time: false }, y: { range: zeroUp }, ms: { range: zeroUp } },
          axes: [{ label: 'step', stroke: '#333', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500] }, { label: 'ops/s', stroke: '#333', size: 70, values: (u, splits) => splits.map(tick) },
            { scale: 'ms', side: 1, label: 'ms', stroke: '#333', grid: { show: false } }],
        }, series.map(() => []), this.el);
      }
      const cap = at.capacity > 0 ? at.capacity : null;
      const pick = (v) => steps.map((st) => (st.verdict === v ? st.rate : null));
      const data = [steps.map((st) => st.n), steps.map((st) => st.rate), steps.map((st) => st.achieved),
        pick('fail'), pick('client-bound'), steps.map(() => cap)]
        .concat(classes.map((c) => steps.map((st) => { const m = st.classes && st.classes[c]; return m ? m.response / 1000 : null; })))
        .concat(classes.map((c) => steps.map(() => autotuneBound(at.settings, c))));
      this.u.setData(data);
      // Exposed on the figure for tests and scripts.
      const fig = this.el.closest('figure') || this.el;
      fig.dataset.points = String(steps.length);
      fig.dataset.capacity = cap === null ? '' : String(cap);
      fig.dataset.bounds = classes.map((c) => c + '=' + (autotuneBound(at.settings, c) ?? '')).join(',');
    }
    resize(w) {
      this.width = w;
      if (this.u) this.u.setSize({ width: w, height: 260 });
    }
  }

  // AUTOTUNE_HEADS are the step table's columns.
  const AUTOTUNE_HEADS = ['#', 'phase', 'rate (ops/s)', 'achieved', 'percentile (ms)', 'errors', 'verdict', 'why'];

  // autotuneRows fills a table body with a search's steps: number, phase, target and
  // achieved rate, each class's percentile and error ratio, verdict and why. Each row
  // carries its verdict (data-verdict) for styling and tests. Rows are updated in place,
  // a cell's text only where it changed: the panel renders every second while a search
  // runs, and a table rebuilt each time lost a user's selection of a figure and the
  // tooltip being read on a phase.
  function autotuneRows(tbody, steps) {
    const classes = autotuneClasses(steps);
    const m = (st, c) => st.classes && st.classes[c];
    steps.forEach((st, i) => {
      let tr = tbody.children[i];
      if (!tr) {
        tr = document.createElement('tr');
        for (const h of AUTOTUNE_HEADS) {
          const td = document.createElement('td');
          // The column's name, for a narrow screen that shows each row as a card.
          td.dataset.label = h;
          tr.appendChild(td);
        }
        tr.children[6].className = 'verdict';
        tbody.appendChild(tr);
      }
      if (tr.dataset.verdict !== st.verdict) tr.dataset.verdict = st.verdict;
      const lat = classes.map((c) => (m(st, c) ? c + ' ' + (m(st, c).response / 1000).toFixed(3) : '')).join(' / ');
      const errs = classes.map((c) => (m(st, c) && m(st, c).attempted ? (100 * m(st, c).errors / m(st, c).attempted).toPrecision(2) + '%' : '0%')).join(' / ');
      [st.n, st.phase, Math.round(st.rate), Math.round(st.achieved), lat, errs, st.verdict, (st.why || []).join('; ')].forEach((v, k) => {
        const td = tr.children[k];
        if (td.textContent !== String(v)) td.textContent = String(v);
      });
      // Why the search ran this rate (after which step, to do what), on the phase.
      const phase = tr.children[1];
      if (st.because) {
        if (phase.title !== st.because) phase.title = st.because;
        if (tr.dataset.because !== st.because) tr.dataset.because = st.because;
      } else {
        phase.removeAttribute('title');
        delete tr.dataset.because;
      }
    });
    while (tbody.children.length > steps.length) tbody.lastElementChild.remove();
  }

  global.NDCharts = { OPS, readLike, reportOrder, FIELDS, ERROR_CLASSES, CHARTS, Store, Grid, pointValues, spanOf, fmt, clock, AutotuneChart, autotuneRows };
})(window);
