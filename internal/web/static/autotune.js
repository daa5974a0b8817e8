// ndbench web UI: the Auto-tune panel of an instance (docs/autotune.md). A form with the
// search's settings starts a capacity search (POST /api/v1/autotune), Stop ends it (POST
// /api/v1/autotune/stop); while it runs the panel polls GET /api/v1/autotune every second
// (the stats stream carries no auto-tune progress) and draws the steps with charts.js's
// AutotuneChart, the chart the HTML report draws. app.js creates one Panel per instance.
'use strict';

(function (global) {
  // FIELDS are the form's controls: the request's JSON field, its label, the input type,
  // the default (shown as placeholder and help, sent only when the user typed a value, so
  // the server stays the one place defaults live) and what it means.
  const FIELDS = [
    { name: 'class', label: 'class', type: 'text', def: 'every enabled class', help: 'tune this op class only; the others keep their configured rates' },
    { name: 'percentile', label: 'percentile', type: 'number', def: '99', help: 'response-time percentile the SLA bounds (99.9 = p99.9)' },
    { name: 'latency', label: 'latency bound', type: 'text', def: '10ms', help: 'bound on that percentile (a duration)' },
    { name: 'maxErrors', label: 'max errors', type: 'text', def: '1%', help: 'failed / attempted operations (ratio or percentage)' },
    { name: 'minAchieved', label: 'min achieved', type: 'text', def: '97%', help: 'achieved / target rate (ratio or percentage)' },
    { name: 'start', label: 'start rate (ops/s)', type: 'number', def: 'configured total, ≥ 1000', help: 'first total rate tried' },
    { name: 'maxRate', label: 'max rate (ops/s)', type: 'number', def: '10000000', help: 'highest total rate tried' },
    { name: 'tolerance', label: 'tolerance', type: 'text', def: '2%', help: 'bisection ends at hi/lo ≤ 1 + tolerance' },
    { name: 'settle', label: 'settle', type: 'text', def: '2s', help: 'settle period of each step' },
    { name: 'window', label: 'window', type: 'text', def: '5s', help: 'least measuring window of each step' },
    { name: 'confirm', label: 'confirm', type: 'text', def: '15s', help: 'least confirmation window at the found rate' },
    { name: 'hold', label: 'hold afterwards', type: 'bool', def: 'off', help: 'hold the highest rate within SLA and follow drift (AIMD) until stopped or the duration' },
    { name: 'duration', label: 'hold duration', type: 'text', def: 'until stopped', help: 'with hold: how long' },
  ];
  // The server names some fields by their SLA name (driver.FieldError.Field).
  const SERVER_NAMES = { errors: 'maxErrors', achieved: 'minAchieved' };
  // The load buttons that would fight a running search: it starts, stops and sets the rate
  // of the classes it tunes (the API refuses them with 409 too).
  const LOAD_ACTIONS = ['start-reads', 'start-writes', 'start-both', 'stop-reads', 'stop-writes', 'stop-both'];

  function num(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return +(v / 1e6).toPrecision(3) + 'M';
    if (a >= 1e4) return +(v / 1e3).toPrecision(3) + 'k';
    return String(Math.round(v));
  }

  // Panel is one instance's Auto-tune panel. view is app.js's InstanceView (api, say,
  // setFieldError, status); el its element builder.
  class Panel {
    constructor(view, el) {
      this.view = view; this.el = el;
      this.box = view.q('[data-role=autotune]');
      if (!this.box) return;
      this.form = this.box.querySelector('[data-role=autotune-fields]');
      this.fig = this.box.querySelector('[data-role=autotune-chart]');
      this.tbody = this.box.querySelector('[data-role=autotune-steps] tbody');
      this.outcome = this.box.querySelector('[data-role=autotune-outcome]');
      this.chart = null;
      this.running = false;
      this.timer = null;
      this.renderForm();
      this.box.querySelector('[data-action=autotune-start]').addEventListener('click', () => this.start());
      this.box.querySelector('[data-action=autotune-stop]').addEventListener('click', () => this.stop());
      // app.js enables the load buttons whenever the node's status comes in; a running
      // search disables them again after it.
      const apply = view.applyConnectedState.bind(view);
      view.applyConnectedState = () => { apply(); this.lockLoad(); };
      new ResizeObserver(() => this.resize()).observe(this.fig);
      this.refresh();
    }

    renderForm() {
      const id = (f) => this.view.inst.id + '-at-' + f.name;
      this.form.replaceChildren(...FIELDS.map((f) => {
        const attrs = { id: id(f), name: f.name, autocomplete: 'off', spellcheck: 'false' };
        let input;
        if (f.type === 'bool') input = this.el('input', Object.assign(attrs, { type: 'checkbox' }));
        else input = this.el('input', Object.assign(attrs, { type: f.type, placeholder: f.def, step: f.type === 'number' ? 'any' : undefined, min: f.type === 'number' ? '0' : undefined }));
        const help = this.el('small', { id: id(f) + '-help', class: 'help', text: f.help + ' (default ' + f.def + ')' });
        const err = this.el('span', { id: id(f) + '-error', class: 'field-error', role: 'alert' });
        input.setAttribute('aria-describedby', help.id + ' ' + err.id);
        input.addEventListener('input', () => this.view.setFieldError(this.form, f.name, ''));
        const label = this.el('label', { for: id(f), text: f.label });
        const wrap = this.el('div', { class: 'field' + (f.type === 'bool' ? ' check' : ''), 'data-field': f.name });
        if (f.type === 'bool') wrap.append(input, label, help, err); else wrap.append(label, input, help, err);
        return wrap;
      }));
    }

    // request is the form as an AutotuneRequest: only the fields the user filled in.
    request() {
      const req = {};
      for (const f of FIELDS) {
        const input = this.form.querySelector('[name="' + f.name + '"]');
        if (f.type === 'bool') { if (input.checked) req[f.name] = true; continue; }
        const v = input.value.trim();
        if (v === '') continue;
        req[f.name] = f.type === 'number' ? Number(v) : v;
      }
      return req;
    }

    async start() {
      this.view.clearErrors(this.form);
      const req = this.request();
      this.percentile = req.percentile || 99;
      this.view.say('Starting the search…', 'info', 'autotune');
      try {
        const st = await this.view.api('POST', '/api/v1/autotune', req);
        this.view.say('Search started: it raises the rate until the SLA breaks, then narrows the boundary down.', 'ok', 'autotune');
        // The settings fold away so the steps show; they stay one click away.
        this.box.querySelector('details.autotune-settings').open = false;
        this.render(st);
      } catch (e) {
        this.showProblem(e);
      }
    }

    async stop() {
      this.view.say('Stopping the search…', 'info', 'autotune');
      try {
        this.render(await this.view.api('POST', '/api/v1/autotune/stop'));
        this.view.say('Search stopped.', 'ok', 'autotune');
      } catch (e) {
        this.view.say('Stop failed: ' + e.message, 'error', 'autotune');
      }
    }

    // showProblem puts each rejected field's message next to its control: the server's
    // field errors (problem.fields) and request validation errors (problem.errors, at
    // "body.<field>"); anything else goes to the panel's message line.
    showProblem(e) {
      const p = e.problem || {};
      const found = [];
      for (const f of p.fields || []) found.push([f.field, 'invalid value "' + f.value + '"; allowed: ' + f.allowed]);
      for (const d of p.errors || []) found.push([String(d.location || '').replace(/^body\./, ''), d.message + (d.value !== undefined ? ' (got ' + JSON.stringify(d.value) + ')' : '')]);
      let placed = 0;
      for (const [name, msg] of found) if (this.view.setFieldError(this.form, SERVER_NAMES[name] || name, msg)) placed++;
      const why = 'Not started' + (e.status === 501 ? ' (501, not implemented here)' : '') + ': ' + e.message;
      this.view.say(placed && placed === found.length ? 'Not started: fix the marked fields.' : why, 'error', 'autotune');
    }

    async refresh() {
      try {
        this.render(await this.view.api('GET', '/api/v1/autotune'));
      } catch (e) {
        this.view.say('Cannot read the search: ' + e.message, 'error', 'autotune');
      }
    }

    // poll reads the search every second while it runs, and once more when it ended.
    poll() {
      if (this.timer) return;
      const tick = async () => {
        this.timer = null;
        await this.refresh();
        if (this.running && !this.timer) this.timer = setTimeout(tick, 1000);
      };
      this.timer = setTimeout(tick, 1000);
    }

    resize() {
      if (this.chart) this.chart.resize(this.chartWidth());
    }

    chartWidth() { return Math.max(240, (this.fig.clientWidth || 600) - 2); }

    // render shows a status (AutotuneStatus): running state, outcome, chart and table.
    render(st) {
      const wasRunning = this.running;
      this.running = !!st.running;
      const res = st.result || null;
      const steps = (res && !st.running ? res.steps : st.steps) || [];
      this.box.dataset.state = st.running ? 'running' : res ? 'done' : 'idle';
      this.box.dataset.status = res && !st.running ? res.status : '';
      this.box.dataset.steps = String(steps.length);
      this.box.querySelector('[data-action=autotune-start]').disabled = this.running;
      this.box.querySelector('[data-action=autotune-stop]').disabled = !this.running;
      // A search that just ended gives the load buttons back in the same render that says
      // it ended: lockLoad only disables them, and waiting for the next status poll left
      // them disabled for up to 2 s with the note that explains it already gone.
      if (wasRunning && !this.running) this.view.applyConnectedState();
      else this.lockLoad();
      this.renderOutcome(st, res, steps);
      const show = steps.length > 0;
      this.box.querySelector('[data-role=autotune-results]').hidden = !show;
      if (show) {
        if (!this.chart) this.chart = new NDCharts.AutotuneChart(this.fig.querySelector('div'), this.chartWidth());
        const settings = res && !st.running ? res.settings : { sla: { percentile: this.percentile || null } };
        this.chart.update({ steps, capacity: res && !st.running ? res.capacity : 0, settings });
        NDCharts.autotuneRows(this.tbody, steps);
      }
      if (this.running) this.poll();
      // The search gives the classes their rates back: show the node's state then.
      if (wasRunning && !this.running) {
        this.view.say('Search ended: ' + (res ? res.status : 'no result') + '.', res && (res.status === 'found' || res.status === 'above-max') ? 'ok' : 'info', 'autotune');
        this.view.refreshStatus();
      }
    }

    renderOutcome(st, res, steps) {
      const o = this.outcome;
      o.className = 'autotune-outcome';
      delete o.dataset.capacity; delete o.dataset.lo; delete o.dataset.hi;
      if (st.running) {
        const last = steps[steps.length - 1];
        const text = 'Running since ' + NDCharts.clock(Date.parse(st.started) / 1000) + ': ' + steps.length + ' step' + (steps.length === 1 ? '' : 's') +
          (last ? '; last ' + last.phase + ' at ' + num(last.rate) + ' ops/s: ' + last.verdict : '; measuring the first rate…');
        // Written only when it changed: the panel renders every second while a search runs.
        if (o.textContent !== text) o.textContent = text;
        return;
      }
      if (!res) { o.textContent = 'No search has run here yet.'; return; }
      const interval = res.hi > 0 ? '[' + num(res.lo) + ', ' + num(res.hi) + '] ops/s' : 'above ' + num(res.lo) + ' ops/s';
      const per = Object.entries(res.perClass || {}).sort().map(([c, v]) => c + ' ' + num(v)).join(', ');
      const took = steps.length + ' steps in ' + Math.round(res.seconds || 0) + ' s';
      o.replaceChildren();
      if (res.status === 'found' || res.status === 'above-max') {
        o.classList.add('good');
        o.dataset.capacity = String(res.capacity); o.dataset.lo = String(res.lo); o.dataset.hi = String(res.hi);
        o.append(this.el('strong', { 'data-role': 'autotune-capacity', text: 'Capacity ' + num(res.capacity) + ' ops/s' }),
          res.status === 'found' ? ' within SLA, interval ' + interval : ' or more: every rate up to the maximum was within SLA',
          per ? ' (' + per + ')' : '', '. ' + took + '.');
      } else {
        o.classList.add(res.status === 'stopped' ? 'info' : 'bad');
        const head = { 'client-bound': 'Client-bound', 'none-within-sla': 'No capacity found', 'not-confirmed': 'No capacity found (not confirmed)',
          stopped: 'Stopped', error: 'Failed' }[res.status] || res.status;
        o.append(this.el('strong', { text: head }), (res.lo > 0 ? ': the store sustains at least ' + num(res.lo) + ' ops/s within SLA' : '') + '. ' + took + '.');
      }
      // A found capacity's message repeats the line above.
      if (res.message && res.status !== 'found') o.append(this.el('span', { class: 'block', text: res.message }));
      if (res.hold) o.append(this.el('span', { class: 'block', text: 'Hold: ' + res.hold.windows + ' windows, rate ' + num(res.hold.min) + '–' + num(res.hold.max) + ' ops/s (mean ' + num(res.hold.mean) + ', final ' + num(res.hold.final) + '), ' + res.hold.failures + ' violations.' }));
    }

    // lockLoad disables the load buttons while a search runs and says why beside them.
    lockLoad() {
      const root = this.view.root;
      root.dataset.autotune = this.running ? 'running' : '';
      const note = root.querySelector('[data-role=load-autotune]');
      if (note) note.hidden = !this.running;
      if (!this.running) return;
      for (const a of LOAD_ACTIONS) {
        const b = root.querySelector('[data-action=' + a + ']');
        if (b) b.disabled = true;
      }
    }
  }

  global.NDAutotune = { Panel, FIELDS };
})(window);
