// ndbench web UI: the History page (#history; docs/history.md). It reads the results store
// through the read-only routes under /api/v1/history: the recorded runs in a table
// (filtered by tag, driver, workload and kind), a trend chart per class and metric
// (throughput, p50, p99, p99.9) with the change points E-divisive means finds marked and
// the verdict `ndbench history check` gives, each run's report a click away, and two
// runs' figures side by side. The live page stays as it is; the header's links switch.
'use strict';

(function () {
  const instances = JSON.parse(document.getElementById('ndbench-instances').textContent);
  // The page's own node (or the fleet view): the store is the one it records into.
  const base = (instances[0] && instances[0].baseURL) || '';
  const METRICS = [['rate', 'throughput', 'ops/s'], ['p50', 'p50', 'ms'], ['p99', 'p99', 'ms'], ['p99.9', 'p99.9', 'ms']];
  const KINDS = ['run', 'serve', 'scenario', 'autotune', 'fleet', 'import'];
  const SVG = 'http://www.w3.org/2000/svg';

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, v);
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  async function api(path) {
    const r = await fetch(base + path, { headers: { Accept: 'application/json' } });
    if (r.status === 401 && !/^[a-z]+:/i.test(base)) {
      sessionStorage.setItem('ndbench-expired', '1');
      location.reload();
    }
    const text = await r.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text }; }
    if (!r.ok) {
      const err = new Error((data && (data.detail || data.title)) || 'HTTP ' + r.status);
      err.status = r.status;
      throw err;
    }
    return data;
  }

  function num(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return +(v / 1e6).toPrecision(3) + 'M';
    if (a >= 1e4) return +(v / 1e3).toPrecision(3) + 'k';
    if (a >= 100) return v.toFixed(0);
    if (a >= 1) return v.toFixed(2);
    return v.toPrecision(3);
  }
  function when(t) { return new Date(t).toISOString().replace('T', ' ').slice(0, 16) + ' UTC'; }
  function tagsText(tags) { return Object.keys(tags || {}).sort().map((k) => k + '=' + tags[k]).join(' '); }
  function reportURL(id, json) { return base + '/api/v1/history/runs/' + id + (json ? '/report' : '/report.html'); }
  function pct(a, b) { return a ? ((b - a) / a) * 100 : 0; }
  function signed(p) { return (p >= 0 ? '+' : '') + p.toFixed(1) + '%'; }

  // Page is the History page: built on first visit, reloaded on each filter change.
  class Page {
    constructor() {
      this.gen = 0;
      this.known = { driver: new Set(), workload: new Set() };
      const field = (id, label, input) => el('div', { class: 'field' }, el('label', { for: id, text: label }), input);
      const select = (id, role, first, values) => el('select', { id, 'data-role': role, onchange: () => this.load() },
        el('option', { value: '', text: first }), ...(values || []).map((v) => el('option', { value: v, text: v })));
      this.tag = el('input', { type: 'text', id: 'history-tag', 'data-role': 'f-tag', placeholder: 'store=redis-7.2 build=1234', autocomplete: 'off',
        onchange: () => this.load(), onkeydown: (e) => { if (e.key === 'Enter') { e.preventDefault(); this.load(); } } });
      this.driver = select('history-driver', 'f-driver', 'all drivers');
      this.workload = select('history-workload', 'f-workload', 'all workloads');
      this.kind = select('history-kind', 'f-kind', 'all kinds', KINDS);
      this.last = el('select', { id: 'history-last', 'data-role': 'f-last', onchange: () => this.load() },
        ...[['50', 'newest 50'], ['200', 'newest 200'], ['1000', 'newest 1000']].map(([v, t]) => el('option', { value: v, text: t })));
      this.message = el('p', { class: 'message info', 'data-role': 'history-message', role: 'status', 'aria-live': 'polite' });
      this.store = el('span', { class: 'muted', 'data-role': 'history-store' });
      this.trends = el('div', { class: 'trend-grid', 'data-role': 'trends' });
      this.runs = el('div', { class: 'table-wrap', 'data-role': 'runs' });
      this.compare = el('section', { class: 'panel', 'data-role': 'compare', hidden: true, 'aria-labelledby': 'history-cmp-h' });
      this.root = el('main', { class: 'history', id: 'history', 'aria-label': 'run history', hidden: true },
        el('section', { class: 'panel', 'aria-labelledby': 'history-h' },
          el('h2', { id: 'history-h' }, 'Run history ', this.store),
          el('form', { class: 'history-filters', 'data-role': 'filters', onsubmit: (e) => { e.preventDefault(); this.load(); } },
            field('history-tag', 'Tags (all must match)', this.tag),
            field('history-driver', 'Driver', this.driver),
            field('history-workload', 'Workload', this.workload),
            field('history-kind', 'Recorded by', this.kind),
            field('history-last', 'Runs', this.last)),
          this.message),
        el('section', { class: 'panel', 'aria-labelledby': 'history-trends-h' },
          el('h2', { id: 'history-trends-h' }, 'Trends ', el('span', { class: 'muted small', text: 'dashed lines: change points (E-divisive means, as ndbench history check), red a regression, green an improvement; click a point for its run\'s report' })),
          this.trends),
        el('section', { class: 'panel', 'aria-labelledby': 'history-runs-h' },
          el('h2', { id: 'history-runs-h' }, 'Runs ', el('span', { class: 'muted small', text: 'newest first; tick two to set them side by side' })),
          this.runs),
        this.compare);
      document.body.append(this.root);
    }

    query() {
      const q = new URLSearchParams();
      for (const t of this.tag.value.split(/[\s,]+/).filter(Boolean)) q.append('tag', t);
      if (this.driver.value) q.set('driver', this.driver.value);
      if (this.workload.value) q.set('workload', this.workload.value);
      if (this.kind.value) q.set('kind', this.kind.value);
      q.set('last', this.last.value);
      return q;
    }

    say(msg, kind) {
      this.message.textContent = msg;
      this.message.className = 'message ' + (kind || 'info');
    }

    // load reads the runs and their trends under the current filters; an answer that a
    // newer load overtook is dropped.
    async load() {
      const gen = ++this.gen;
      const q = this.query();
      this.root.dataset.state = 'loading';
      let runs, figs;
      try {
        [runs, figs] = await Promise.all([api('/api/v1/history/runs?' + q), api('/api/v1/history/figures?' + q)]);
      } catch (e) {
        if (gen !== this.gen) return;
        this.say(e.message, 'error');
        this.root.dataset.state = 'error';
        this.trends.replaceChildren();
        this.runs.replaceChildren();
        return;
      }
      if (gen !== this.gen) return;
      this.store.textContent = runs.store ? 'in ' + runs.store : '';
      this.say(runs.runs.length ? '' : 'No recorded run matches. Runs are recorded by ndbench run, serve, scenario run and autotune with --results or --tag (or NDBENCH_RESULTS); ndbench history import adds report files.');
      this.offer(runs.runs);
      this.table(runs.runs);
      await this.charts(figs, q, gen);
      if (gen === this.gen) this.root.dataset.state = 'ready';
    }

    // offer keeps every driver and workload seen in the filters' choices.
    offer(runs) {
      for (const [key, sel] of [['driver', this.driver], ['workload', this.workload]]) {
        const set = this.known[key];
        let added = false;
        for (const r of runs) if (r[key] && !set.has(r[key])) { set.add(r[key]); added = true; }
        if (!added) continue;
        const cur = sel.value;
        sel.replaceChildren(sel.options[0], ...[...set].sort().map((v) => el('option', { value: v, text: v })));
        sel.value = cur;
      }
    }

    table(runs) {
      if (!runs.length) { this.runs.replaceChildren(); return; }
      const head = el('tr', null, ...['', 'run', 'started', 'recorded by', 'driver', 'workload', 'tags', 'length', 'report']
        .map((h) => el('th', { scope: 'col', text: h })));
      const rows = runs.slice().reverse().map((r) => el('tr', { 'data-run': String(r.id) },
        el('td', { class: 'c-pick' }, el('input', { type: 'checkbox', 'aria-label': 'compare run ' + r.id, 'data-role': 'pick', value: String(r.id), onchange: () => this.picked() })),
        el('td', { class: 'c-run num', text: String(r.id) }),
        el('td', { class: 'c-started nowrap', text: when(r.started) }),
        el('td', { class: 'c-kind', text: r.kind }),
        el('td', { class: 'c-driver', text: r.driver || '–' }),
        el('td', { class: 'c-workload', text: r.workload || '–' }),
        el('td', { class: 'c-tags', text: tagsText(r.tags) || '–' }),
        el('td', { class: 'c-len num nowrap', text: r.seconds >= 120 ? (r.seconds / 60).toFixed(1) + ' min' : r.seconds.toFixed(1) + ' s' }),
        el('td', { class: 'c-report nowrap' },
          el('a', { href: reportURL(r.id), target: '_blank', rel: 'noopener', 'data-role': 'report-link', text: 'HTML' }), ' · ',
          el('a', { href: reportURL(r.id, true), target: '_blank', rel: 'noopener', text: 'JSON' }))));
      this.runs.replaceChildren(el('table', { class: 'data history-runs', 'aria-label': 'recorded runs' }, el('thead', null, head), el('tbody', null, ...rows)));
      this.compare.hidden = true;
    }

    // charts draws a trend per class and metric the selected runs have.
    async charts(figs, q, gen) {
      const have = new Set(figs.map((f) => f.figure));
      const classes = [...new Set(figs.map((f) => f.series))]
        .filter((s) => !s.includes('.') && s !== 'client' && s !== 'autotune')
        .sort((a, b) => (a === 'read' ? -1 : b === 'read' ? 1 : a === 'write' ? -1 : b === 'write' ? 1 : a.localeCompare(b)));
      const wanted = [];
      for (const c of classes) for (const [m, label, unit] of METRICS) if (have.has(c + '.' + m)) wanted.push([c + '.' + m, c + ' ' + label, unit]);
      if (have.has('autotune.capacity')) wanted.push(['autotune.capacity', 'auto-tune capacity', 'ops/s']);
      const boxes = wanted.map(([fig, title]) => el('figure', { class: 'trend', 'data-figure': fig, 'data-state': 'loading' },
        el('figcaption', null, el('span', { text: title })), el('div', { class: 'trend-body', text: 'loading…' })));
      this.trends.replaceChildren(...boxes);
      if (!boxes.length) return;
      await Promise.all(wanted.map(async ([fig, title, unit], i) => {
        const box = boxes[i];
        try {
          const tr = await api('/api/v1/history/trend?' + q + '&figure=' + encodeURIComponent(fig));
          if (gen !== this.gen) return;
          drawTrend(box, tr, title, unit || tr.unit);
        } catch (e) {
          if (gen !== this.gen) return;
          box.dataset.state = 'error';
          box.querySelector('.trend-body').textContent = e.message;
        }
      }));
    }

    // picked sets the two ticked runs side by side (their figures, the change).
    async picked() {
      const ids = [...this.runs.querySelectorAll('[data-role=pick]:checked')].map((c) => c.value);
      if (ids.length !== 2) { this.compare.hidden = true; return; }
      const [a, b] = await Promise.all(ids.sort((x, y) => x - y).map((id) => api('/api/v1/history/runs/' + id))).catch((e) => { this.say(e.message, 'error'); return []; });
      if (!a) return;
      const fb = new Map(b.figures.map((f) => [f.figure, f]));
      const rows = [];
      for (const f of a.figures) {
        const g = fb.get(f.figure);
        if (!g || f.series.includes('.')) continue;
        const p = pct(f.value, g.value);
        const worse = f.worseUp ? p > 0 : p < 0;
        rows.push(el('tr', { 'data-figure': f.figure },
          el('th', { scope: 'row', text: f.figure }), el('td', { class: 'num', text: num(f.value) + ' ' + f.unit }),
          el('td', { class: 'num', text: num(g.value) + ' ' + g.unit }),
          el('td', { class: 'num ' + (Math.abs(p) < 0.05 ? '' : worse ? 'worse' : 'better'), text: f.value ? signed(p) : '–' })));
      }
      this.compare.replaceChildren(
        el('h2', { id: 'history-cmp-h' }, 'Run ' + a.id + ' and run ' + b.id + ' side by side'),
        el('p', { class: 'muted small' }, 'For the full judgement (thresholds, noise), give both JSON reports to ndbench compare: ',
          el('a', { href: reportURL(a.id, true), target: '_blank', rel: 'noopener', text: 'run ' + a.id + '.json' }), ', ',
          el('a', { href: reportURL(b.id, true), target: '_blank', rel: 'noopener', text: 'run ' + b.id + '.json' }), '.'),
        el('div', { class: 'table-wrap' }, el('table', { class: 'data history-compare' },
          el('thead', null, el('tr', null, ...['figure', 'run ' + a.id, 'run ' + b.id, 'change'].map((h) => el('th', { scope: 'col', text: h })))),
          el('tbody', null, ...rows))));
      this.compare.hidden = false;
    }
  }

  // drawTrend draws one figure's trend into box: the values in run order, each point a
  // link to its run's report, a dashed line at each change point, and the verdict.
  function drawTrend(box, tr, title, unit) {
    const pts = tr.points;
    box.dataset.state = 'ready';
    box.dataset.points = String(pts.length);
    box.dataset.changes = String(tr.changePoints.length);
    box.dataset.verdict = tr.verdict.status;
    const cap = box.querySelector('figcaption');
    cap.replaceChildren(el('span', { text: title + ' (' + unit + ')' }),
      el('span', { class: 'verdict ' + tr.verdict.status.replace(' ', '-'), 'data-role': 'verdict', title: tr.verdict.detail, text: tr.verdict.status }));
    const body = box.querySelector('.trend-body');
    if (!pts.length) { body.textContent = 'no run has this figure'; return; }
    const W = 600, H = 190, L = 52, R = 10, T = 16, B = 22;
    let lo = Math.min(...pts.map((p) => p.value)), hi = Math.max(...pts.map((p) => p.value));
    if (hi === lo) { hi += Math.abs(hi) * 0.05 || 1; lo -= Math.abs(lo) * 0.05 || 1; }
    const pad = (hi - lo) * 0.08;
    lo -= pad; hi += pad;
    const x = (i) => L + (pts.length === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (pts.length - 1));
    const y = (v) => T + ((hi - v) * (H - T - B)) / (hi - lo);
    const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'trend-svg', role: 'img', 'aria-label': `${title}: ${pts.length} runs, ${tr.changePoints.length} change points` });
    for (let k = 0; k <= 3; k++) {
      const v = lo + ((hi - lo) * k) / 3;
      g.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid' }),
        svg('text', { x: L - 4, y: y(v) + 4, class: 'axis', 'text-anchor': 'end' }, num(v)));
    }
    g.append(svg('text', { x: L, y: H - 6, class: 'axis' }, 'run ' + pts[0].runId),
      svg('text', { x: W - R, y: H - 6, class: 'axis', 'text-anchor': 'end' }, 'run ' + pts[pts.length - 1].runId));
    for (const c of tr.changePoints) {
      const cx = (x(c.index - 1) + x(c.index)) / 2;
      const p = pts[c.index];
      const tip = `change point at run ${c.runId} [${tagsText(p.tags)}]: ${c.direction} ${num(c.before)} → ${num(c.after)} ${unit} (${signed(c.change * 100)}), p=${c.p.toFixed(3)}`;
      g.append(svg('g', { class: 'change ' + c.direction, 'data-run': String(c.runId) },
        svg('title', null, tip),
        svg('line', { x1: cx, x2: cx, y1: T - 6, y2: H - B }),
        svg('line', { x1: L, x2: cx, y1: y(c.before), y2: y(c.before), class: 'mean' }),
        svg('line', { x1: cx, x2: W - R, y1: y(c.after), y2: y(c.after), class: 'mean' }),
        svg('text', { x: cx + 3, y: T - 2, class: 'label' }, signed(c.change * 100))));
    }
    g.append(svg('polyline', { class: 'line', points: pts.map((p, i) => x(i).toFixed(1) + ',' + y(p.value).toFixed(1)).join(' ') }));
    for (const [i, p] of pts.entries()) {
      const a = svg('a', { href: reportURL(p.runId), target: '_blank', 'data-run': String(p.runId) },
        svg('title', null, `run ${p.runId} · ${when(p.started)} · ${num(p.value)} ${unit}${tagsText(p.tags) ? ' · ' + tagsText(p.tags) : ''}`),
        svg('circle', { cx: x(i).toFixed(1), cy: y(p.value).toFixed(1), r: pts.length > 60 ? 2 : 3.5 }));
      g.append(a);
    }
    body.replaceChildren(g, el('p', { class: 'small verdict-text ' + tr.verdict.status.replace(' ', '-'), text: tr.verdict.detail }));
  }

  let page = null;
  // route shows the History page for #history and the live page otherwise.
  function route() {
    const on = location.hash.startsWith('#history');
    for (const m of document.querySelectorAll('main.instance')) m.hidden = on;
    for (const a of document.querySelectorAll('[data-nav]')) {
      if ((a.dataset.nav === 'history') === on) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    if (on && !page) { page = new Page(); page.load(); }
    if (page) page.root.hidden = !on;
  }
  window.addEventListener('hashchange', route);
  route();
})();
