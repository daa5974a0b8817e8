// ndbench web UI: controls and live charts for a list of instances, each reached through
// its REST API (/api/v1). Vanilla JS, no build step; charts come from charts.js (uPlot).
'use strict';

(function () {
  const { Store, Grid } = window.NDCharts;
  const instances = JSON.parse(document.getElementById('ndbench-instances').textContent);

  // el builds an element: el('input', {type: 'text', id: 'x'}, child...).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k in e && typeof v !== 'string') e[k] = v;
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  // setText changes e's text only when it differs: a live panel updated every second
  // keeps a user's selection of a figure that did not change.
  function setText(e, text) {
    if (e.textContent !== text) e.textContent = text;
  }

  // replaceIfChanged replaces e's children with build()'s only when content (what they
  // show, as JSON) differs from what e shows: a list refreshed by a 2 s poll keeps a
  // user's selection, and the elements a reader holds, while nothing in it changed. The
  // content is kept beside the element, never in the page: a source's raw text may hold
  // a password that the list shows masked.
  const shownContent = new WeakMap();
  function replaceIfChanged(e, content, build) {
    const key = JSON.stringify(content);
    if (shownContent.get(e) === key) return;
    shownContent.set(e, key);
    e.replaceChildren(...build());
  }

  // updateRows makes tbody's rows those of items ({key, attrs, cells}), in order, in
  // place: a row is kept by its key (kept maps keys to rows) and its cells' text and
  // attributes (title, class, data-role) are changed only where they differ, so a live
  // panel updated every second keeps a user's selection and the elements a reader holds.
  function updateRows(tbody, kept, items) {
    const seen = new Set();
    items.forEach((it, i) => {
      seen.add(it.key);
      let tr = kept.get(it.key);
      if (!tr) {
        tr = el('tr', {}, ...it.cells.map(() => el('td', {})));
        kept.set(it.key, tr);
      }
      for (const [a, v] of Object.entries(it.attrs)) if (tr.getAttribute(a) !== v) tr.setAttribute(a, v);
      it.cells.forEach((c, k) => {
        const td = tr.children[k];
        setText(td, c.text);
        for (const a of ['title', 'class', 'data-role']) {
          if (c[a] === undefined) td.removeAttribute(a);
          else if (td.getAttribute(a) !== c[a]) td.setAttribute(a, c[a]);
        }
      });
      if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
    });
    for (const [key, tr] of kept) {
      if (!seen.has(key)) { tr.remove(); kept.delete(key); }
    }
  }

  // shownCredentials masks the password of every URL in text (scheme://user:password@),
  // as the server's own redaction does: a source's name and error name etcd's endpoints,
  // which may carry one, and the page must never show it whatever the server sends.
  function shownCredentials(text) {
    return String(text).replace(/([a-z][a-z0-9+.-]*:\/\/[^\/\s:@]*):[^\s,/]*@/gi, '$1:xxxxx@');
  }

  // ApiError carries the problem+json body of a failed request.
  class ApiError extends Error {
    constructor(status, problem) {
      super((problem && (problem.detail || problem.title)) || 'HTTP ' + status);
      this.status = status; this.problem = problem || {};
    }
  }

  // API_TIMEOUT_MS bounds one API request (InstanceView.api).
  const API_TIMEOUT_MS = { get: 20000, change: 120000 };

  const WINDOWS = { '300': 'last 5 min', '3600': 'last 1 h', '0': 'all' };

  // InstanceView is the panels and charts of one instance.
  // activeRate is a class's session rate: its count over the seconds it ran (the stats'
  // activeSeconds), not over the session since the connect, whose idle minutes would
  // drag it down; the span's rate from a server that does not say.
  function activeRate(s) {
    return s.activeSeconds > 0 ? (s.count || 0) / s.activeSeconds : (s.rate || 0);
  }
  function activeTitle(s) {
    return s.activeSeconds > 0 ? (s.count || 0) + ' operations in the ' + Math.round(s.activeSeconds) + ' s the class ran' : '';
  }

  // HISTORY_WAIT_MS is how long a page waits for its stream to open before it shows the
  // history without it.
  const HISTORY_WAIT_MS = 3000;
  // HELD_MAX is how many live intervals (seconds) wait for a history request.
  const HELD_MAX = 30;

  class InstanceView {
    constructor(inst, root) {
      this.inst = inst; this.root = root;
      this.store = new Store();
      // The stream's intervals held while a history request is out (loadSeries), or null.
      this.held = null; this.loads = 0;
      this.drivers = []; this.config = null; this.status = null;
      // Phases marked on the charts (trackPhase), oldest first; phaseNow is the current one.
      this.marks = []; this.phaseNow = undefined; this.warmUntil = 0;
      this.windowSecs = 300;
      this.log = false;
      this.q = (sel) => root.querySelector(sel);
      this.renderQueued = false;
      this.renderTimes = [];
      // A fleet's view (web.Options.Fleet): its instance is a coordinator's fleet API.
      this.fleet = root.dataset.fleet === 'true';
    }

    async api(method, path, body) {
      const init = { method, headers: { Accept: 'application/json' } };
      if (body !== undefined) {
        init.headers['Content-Type'] = 'application/json';
        init.body = JSON.stringify(body);
      }
      // A node that stops answering (a wedged process, a cut link, a proxy that holds the
      // request) must not leave a button waiting for ever: a request ends with a clear error
      // after API_TIMEOUT_MS (a connect or a start may wait on the store's own connect
      // timeout, so those get longer). data-api-timeout-ms on the instance overrides both.
      const ms = Number(this.root.dataset.apiTimeoutMs) || (method === 'GET' ? API_TIMEOUT_MS.get : API_TIMEOUT_MS.change);
      const ctl = new AbortController();
      const timer = setTimeout(() => ctl.abort(), ms);
      init.signal = ctl.signal;
      let r;
      try {
        r = await fetch(this.inst.baseURL + path, init);
      } catch (e) {
        if (ctl.signal.aborted) throw new ApiError(0, { detail: 'no answer from the node in ' + (ms / 1000) + ' s (' + method + ' ' + path + ')' });
        throw e;
      } finally {
        clearTimeout(timer);
      }
      // This node's session ended (it expired, was deleted elsewhere, or the node restarted
      // with new sessions): reload, and the server answers with its login page, instead of
      // every control failing with "unauthorized". Only for the page's own node: a remote
      // instance's 401 is that instance's answer.
      if (r.status === 401 && !/^[a-z]+:/i.test(this.inst.baseURL || '') && !this.reloading) {
        this.reloading = true;
        sessionStorage.setItem('ndbench-expired', '1');
        location.reload();
      }
      const text = await r.text();
      let data = null;
      try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text }; }
      if (!r.ok) throw new ApiError(r.status, data);
      return data;
    }

    // say shows a message; where names the message line next to the control that caused
    // it (connect, load, backfill, workload, results), so the answer appears where the
    // user is looking. Without it, the instance's own line at the top.
    say(msg, kind, where) {
      const m = this.q('[data-role=' + (where ? where + '-message' : 'message') + ']');
      m.textContent = msg;
      m.className = 'message ' + (kind || 'info');
    }

    async start() {
      try {
        const [drivers, config, status] = await Promise.all([
          this.api('GET', '/api/v1/drivers'), this.api('GET', '/api/v1/config'), this.api('GET', '/api/v1/status')]);
        this.drivers = drivers; this.config = config;
        this.renderDriverPicker();
        this.renderWorkload();
        this.renderOpClasses();
        this.renderStatus(status);
      } catch (e) {
        this.say('Cannot reach the instance: ' + e.message, 'error');
      }
      this.bindActions();
      if (this.fleet) { this.nodes = new NodesPanel(this); this.nodes.start(); }
      this.grid = new Grid(this.q('[data-role=charts]'), this.visibleOps(), { log: this.log, fleet: this.fleet, marks: this.marks.slice() });
      new ResizeObserver(() => this.grid.resize()).observe(this.q('[data-role=charts]'));
      // The stream first, the history once it is open: the server subscribes the stream
      // before it answers, so every interval is in the history or the stream (or both, and
      // the store keeps one). The other order lost the seconds published between the two
      // requests: a hole of a few seconds after login on a busy machine (issue 36).
      await this.openStream();
      if (!this.fleet && this.status && this.status.initialized) this.loadPhases();
      this.poll();
    }

    // --- phase marks --------------------------------------------------------------------

    // phaseOf names what a status says the node is doing, as the report's timeline names
    // its phases: backfill, warmup (figures not yet measured), load, or null when idle.
    static phaseOf(st) {
      if (!st || !st.initialized) return null;
      if (st.backfill && st.backfill.running) return 'backfill';
      if (st.warmingUpUntil && Date.parse(st.warmingUpUntil) > Date.now()) return 'warmup';
      return Object.values(st.running || {}).some(Boolean) || st.readsRunning || st.writesRunning ? 'load' : null;
    }

    // trackPhase marks on every chart where a phase began, as the statuses show it: a
    // backfill, a warm-up, the load after them, so a change in the charts lines up with
    // the phase that caused it (issue 32). The phases that ended before the page opened
    // come from the server's report (loadPhases).
    trackPhase(st) {
      const now = InstanceView.phaseOf(st);
      const before = this.phaseNow;
      this.phaseNow = now;
      if (now === 'warmup') this.warmUntil = Date.parse(st.warmingUpUntil) / 1000;
      // The first status tells what runs, not since when: that phase is the server's to
      // mark (loadPhases), not the page's opening.
      if (before === undefined || now === before || now === null) return;
      let at = Date.now() / 1000;
      // The load after a warm-up began when the warm-up ended, which the status said.
      if (now === 'load' && before === 'warmup' && this.warmUntil) at = this.warmUntil;
      // A phase the server already marked (within a poll's time) is not marked twice.
      if (this.marks.some((m) => m.name === now && Math.abs(m.start - at) < 3)) return;
      this.marks.push({ kind: 'phase', name: now, start: at, end: at });
      if (this.grid) this.grid.setMarks(this.marks);
      // The phase that ended may now be in the server's timeline, with its exact times.
      if (!this.fleet) this.loadPhases();
    }

    // loadPhases takes the phases of the session from the server's report (its timeline):
    // those that ended before the page opened.
    async loadPhases() {
      let rep;
      try { rep = await this.api('GET', '/api/v1/report'); } catch (e) { return; }
      const server = (rep.timeline || []).filter((m) => m.kind === 'phase').map((m) => {
        const start = Date.parse(m.start) / 1000;
        return { kind: 'phase', name: m.name, start: start, end: m.end ? Date.parse(m.end) / 1000 : start };
      }).filter((m) => isFinite(m.start));
      const kept = this.marks.filter((m) => !server.some((x) => x.name === m.name && Math.abs(x.start - m.start) < 3));
      this.marks = server.concat(kept).sort((a, b) => a.start - b.start);
      if (this.grid) this.grid.setMarks(this.marks);
    }

    // --- instance panel -------------------------------------------------------------

    configValue(key) {
      const e = this.config && this.config.entries.find((x) => x.key === key);
      return e ? e : null;
    }

    renderDriverPicker() {
      const sel = this.q('[data-role=driver]');
      sel.replaceChildren(...this.drivers.map((d) => el('option', { value: d.name, text: d.name })));
      const configured = this.configValue('driver.name');
      if (configured) sel.value = configured.value;
      sel.onchange = () => this.renderDriverOptions();
      this.renderDriverOptions();
    }

    renderDriverOptions() {
      const name = this.q('[data-role=driver]').value;
      const d = this.drivers.find((x) => x.name === name);
      this.q('[data-role=driver-summary]').textContent = d ? d.summary : '';
      // The first screen's action names what it connects.
      this.q('[data-role=quick-driver]').textContent = name || 'the chosen driver';
      const box = this.q('[data-role=driver-options]');
      box.replaceChildren();
      if (!d) return;
      for (const o of d.options) {
        const cur = this.configValue('drivers.' + name + '.' + o.name);
        box.append(this.field('opt', o, cur && !cur.secret ? cur.value : o.default, cur && cur.source, (input) => this.onDriverOption(name, o, input)));
      }
      this.applyConnectedState();
    }

    // field renders one labelled input for an option schema entry; onChange runs when
    // the user commits a value.
    field(prefix, o, value, source, onChange) {
      const id = this.inst.id + '-' + prefix + '-' + o.name;
      let input;
      if (o.type === 'bool') {
        input = el('input', { type: 'checkbox', id, checked: value === 'true' });
      } else if (o.enum && o.enum.length) {
        input = el('select', { id }, ...o.enum.map((v) => el('option', { value: v, text: v })));
        input.value = value;
      } else {
        const attrs = { id, value: value, spellcheck: 'false', autocomplete: 'off' };
        if (o.secret) { attrs.type = 'password'; attrs.value = ''; attrs.autocomplete = 'new-password'; attrs.placeholder = source && source !== 'default' ? '(set; unchanged)' : ''; }
        else if (o.type === 'int' || o.type === 'float') {
          attrs.type = 'number'; attrs.step = o.type === 'int' ? '1' : 'any';
          if (o.min !== undefined && o.min !== '') attrs.min = o.min;
          if (o.max !== undefined && o.max !== '') attrs.max = o.max;
        } else attrs.type = 'text';
        input = el('input', attrs);
      }
      input.name = o.name;
      input.dataset.initial = this.inputValue(input);
      const help = el('small', { id: id + '-help', class: 'help' },
        o.help + (o.default !== '' && !o.secret ? ' (default ' + o.default + ')' : ''));
      const err = el('span', { id: id + '-error', class: 'field-error', role: 'alert' });
      input.setAttribute('aria-describedby', help.id + ' ' + err.id);
      const badges = el('span', { class: 'badges' },
        o.live ? el('span', { class: 'badge live', title: 'applies while running', text: 'live' }) : null,
        o.secret ? el('span', { class: 'badge secret', text: 'secret' }) : null,
        el('span', { class: 'source', 'data-role': 'source', text: source && source !== 'default' ? 'from ' + source : '' }));
      const label = el('label', { for: id, text: o.name });
      const wrap = el('div', { class: 'field' + (o.type === 'bool' ? ' check' : ''), 'data-field': o.name });
      if (o.type === 'bool') wrap.append(input, label, badges, help, err);
      else wrap.append(el('div', { class: 'field-head' }, label, badges), input, help, err);
      input.addEventListener('change', () => onChange(input));
      return wrap;
    }

    inputValue(input) {
      return input.type === 'checkbox' ? String(input.checked) : input.value.trim();
    }

    setFieldError(container, name, msg) {
      const wrap = container.querySelector('[data-field="' + CSS.escape(name) + '"]');
      if (!wrap) return false;
      const input = wrap.querySelector('input, select');
      const err = wrap.querySelector('.field-error');
      if (msg) { input.setAttribute('aria-invalid', 'true'); err.textContent = msg; }
      else { input.removeAttribute('aria-invalid'); err.textContent = ''; }
      return true;
    }

    clearErrors(container) {
      container.querySelectorAll('[aria-invalid]').forEach((i) => i.removeAttribute('aria-invalid'));
      container.querySelectorAll('.field-error').forEach((e) => { e.textContent = ''; });
    }

    // showProblem puts each rejected field's message next to it; what cannot be placed
    // goes to the panel message.
    showProblem(container, e, keyToName, where) {
      const fields = (e.problem && e.problem.fields) || [];
      let placed = 0;
      for (const f of fields) {
        const msg = 'invalid value "' + f.value + '"; allowed: ' + f.allowed;
        if (this.setFieldError(container, keyToName(f.field), msg)) placed++;
      }
      this.say(placed && placed === fields.length ? 'Not applied: fix the marked fields.' : e.message, 'error', where);
    }

    onDriverOption(driverName, o, input) {
      this.setFieldError(this.q('[data-role=driver-options]'), o.name, '');
      // While connected, live options apply at once; the rest wait for the next connect.
      if (this.status && this.status.initialized && this.status.driver === driverName && o.live) {
        this.patch({ ['drivers.' + driverName + '.' + o.name]: this.inputValue(input) }, this.q('[data-role=driver-options]'),
          (k) => k.replace('drivers.' + driverName + '.', ''), 'connect');
      }
    }

    async connect() {
      const name = this.q('[data-role=driver]').value;
      const box = this.q('[data-role=driver-options]');
      this.clearErrors(box);
      const options = {};
      // Only what the user changed is sent: the rest keeps its configured value.
      box.querySelectorAll('input, select').forEach((i) => {
        const v = this.inputValue(i);
        if (i.type === 'password' ? v !== '' : v !== i.dataset.initial) options[i.name] = v;
      });
      this.say('Connecting to ' + name + '…', 'info', 'connect');
      try {
        const st = await this.api('POST', '/api/v1/driver/init', { driver: name, options });
        box.querySelectorAll('input[type=password]').forEach((i) => { i.value = ''; });
        this.say('Connected to ' + name + '.', 'ok', 'connect');
        this.renderStatus(st);
        this.settle();
        await this.reloadConfig();
      } catch (e) {
        this.showProblem(box, e, (k) => k.replace(/^drivers\.[^.]+\./, ''), 'connect');
      }
    }

    // quickRun is the first screen's one action: connect the driver chosen under
    // Instance (with the options filled in there) when none is, then start every class.
    // A connect that fails (a required option missing) opens the options at the field it
    // names, so the user sees what to fill in.
    async quickRun() {
      if (!(this.status && this.status.initialized)) {
        await this.connect();
        if (!(this.status && this.status.initialized)) {
          const opts = this.q('details.options');
          opts.open = true;
          const bad = this.q('[data-role=driver-options] .invalid, [data-role=driver-options] [aria-invalid=true]');
          (bad || this.q('[data-role=connect-message]')).scrollIntoView({ block: 'center' });
          this.q('[data-role=quick-state]').textContent = 'not connected: see the driver options';
          return;
        }
      }
      await this.action('Started every class', 'POST', '/api/v1/load/start', { ops: [] }, 'load');
    }

    // renderQuickbar shows the first screen's state and its one action.
    renderQuickbar(st) {
      const running = Object.entries(st.running || {}).filter(([, on]) => on).map(([k]) => k);
      const run = this.q('[data-action=quick-run]'), stop = this.q('[data-action=quick-stop]');
      run.textContent = st.initialized ? 'Start' : 'Connect and start';
      run.hidden = running.length > 0;
      stop.hidden = running.length === 0;
      this.q('[data-role=quick-state]').textContent = !st.initialized ? 'not connected'
        : running.length ? 'running: ' + running.join(', ') : 'connected: ' + st.driver + ', idle';
      this.q('[data-role=quick-hint]').hidden = !!st.initialized;
    }

    async action(label, method, path, body, where) {
      try {
        const st = await this.api(method, path, body);
        this.say(label + '.', 'ok', where);
        if (st && 'initialized' in st) this.renderStatus(st); else this.refreshStatus();
        this.settle();
      } catch (e) {
        this.say(label + ' failed: ' + e.message, 'error', where);
        this.refreshStatus();
      }
    }

    applyConnectedState() {
      const st = this.status || {};
      const on = !!st.initialized;
      const sel = this.q('[data-role=driver]');
      sel.disabled = on;
      if (on && sel.value !== st.driver) { sel.value = st.driver; this.renderDriverOptions(); return; }
      this.q('[data-role=driver-options]').querySelectorAll('.field').forEach((w) => {
        const live = !!w.querySelector('.badge.live');
        w.querySelector('input, select').disabled = on && !live;
      });
      this.q('[data-action=connect]').disabled = on;
      this.q('[data-action=disconnect]').disabled = !on;
      const running = st.backfill && st.backfill.running;
      // A disabled Start says why, rather than nothing.
      this.root.querySelectorAll('[data-needs=driver]').forEach((b) => { b.disabled = !on; b.title = on ? '' : 'Connect a driver first (Connect, or Connect and start above the charts)'; });
      this.q('[data-action=backfill-start]').disabled = !on || running;
      this.q('[data-action=backfill-stop]').disabled = !on || !running;
    }

    renderStatus(st) {
      // Once connected, the driver's options fold away: the charts and the load controls
      // are what matter then (the live options are one click away).
      if (st.initialized && !(this.status && this.status.initialized)) this.q('details.options').open = false;
      if (!st.initialized && this.status && this.status.initialized) this.q('details.options').open = true;
      this.status = st;
      this.trackPhase(st);
      this.renderQuickbar(st);
      this.renderLive();
      this.root.dataset.initialized = String(!!st.initialized);
      this.root.dataset.reads = String(!!st.readsRunning);
      this.root.dataset.writes = String(!!st.writesRunning);
      // Every 2 s poll lands here: what did not change is left alone (setText, and the
      // lists rebuilt only when their content changed), so a user's selection of the
      // connection info or the last error survives the polls, as in the numbers table.
      setText(this.q('[data-role=state]'), st.initialized ? 'connected: ' + st.driver : 'not connected');
      this.q('[data-role=state]').className = 'state ' + (st.initialized ? 'on' : 'off');
      const run = (on) => (on ? 'running' : 'stopped');
      const bf = st.backfill;
      const running = [[st.readsRunning, 'reads: ' + run(st.readsRunning)], [st.writesRunning, 'writes: ' + run(st.writesRunning)],
        [bf && bf.running, 'backfill: ' + (bf ? bf.phase : 'idle')]];
      replaceIfChanged(this.q('[data-role=running]'), running, () => running.map(([on, text]) => el('li', { class: on ? 'on' : '' }, text)));
      const info = this.q('[data-role=conninfo]');
      const rows = Object.entries(st.connectionInfo || {}).concat(
        Object.entries(st.driverStats || {}).map(([k, v]) => [k + ' (count)', String(v)]));
      if (st.since) rows.unshift(['since', new Date(st.since).toLocaleString()]);
      replaceIfChanged(info, rows, () => rows.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v })]));
      const pend = st.pending || [];
      setText(this.q('[data-role=pending]'), pend.length ? 'Applies at the next connect: ' + pend.join(', ') : '');
      const le = st.lastError;
      setText(this.q('[data-role=lasterror]'), le ? 'Last error: ' + (le.message || le.error || JSON.stringify(le)) : '');
      this.renderConfigSources(st.configSources || []);
      // Backfill progress.
      const prog = this.q('[data-role=backfill-progress]');
      const ptext = this.q('[data-role=backfill-text]');
      if (bf && bf.phase !== 'idle') {
        prog.max = Math.max(bf.total, 1);
        prog.value = bf.phase === 'verify' ? bf.verified + bf.missing + bf.corrupt + bf.wrongKey + bf.verifyErrors : bf.written + bf.failed;
        ptext.textContent = bf.phase + ': ' + bf.written + ' of ' + bf.total + ' written' + (bf.failed ? ', ' + bf.failed + ' failed' : '') +
          (bf.verified ? ', ' + bf.verified + ' verified' : '');
      } else { prog.removeAttribute('value'); prog.value = 0; ptext.textContent = 'not run'; }
      this.applyConnectedState();
      this.queueRender();
    }

    // renderConfigSources lists the dynamic configuration sources (a watched --config file,
    // --config-etcd): a failing one with its error and since when, because while it fails
    // the node keeps its last good configuration and an edit there silently changes
    // nothing. No sources, no section.
    renderConfigSources(list) {
      const box = this.q('[data-role=config-sources]');
      box.hidden = list.length === 0;
      // Rebuilt only when a source changed, not at every status poll: a rebuild every 2 s
      // dropped a user's selection of the error text they were copying, and replaced the
      // element under a browser test scrolling to it (CI 54d, 54e).
      const when = (iso) => el('time', { datetime: iso, text: new Date(iso).toLocaleString() });
      replaceIfChanged(this.q('[data-role=config-sources-list]'), list, () => list.map((s) => {
        const li = el('li', { class: s.failing ? 'failing' : 'ok', 'data-failing': String(!!s.failing) },
          el('span', { class: 'cs-name', text: shownCredentials(s.source || '') }), ' ');
        if (s.failing) {
          li.append(el('span', { class: 'flag failing', text: 'failing' }));
          if (s.failingSince) li.append(' since ', when(s.failingSince));
          li.append(el('span', { class: 'muted small', text: ': the last good configuration stays applied' }));
          if (s.error) li.append(el('p', { class: 'error-text', 'data-role': 'config-source-error', text: shownCredentials(s.error) }));
        } else {
          li.append(el('span', { class: 'flag ok', text: 'ok' }));
          if (s.appliedAt) li.append(' applied ', when(s.appliedAt));
          else if (s.checkedAt) li.append(' read ', when(s.checkedAt));
        }
        return li;
      }));
    }

    // settle refreshes a fleet's status once its nodes have beaten again: a fleet answers a
    // command with the state of the nodes' last beats (about a second old), and a fleet
    // start begins at a common instant just after the answer.
    settle() {
      if (!this.fleet) return;
      setTimeout(() => { this.refreshStatus(); if (this.nodes) this.nodes.refresh(); }, 1200);
    }

    async refreshStatus() {
      try { this.renderStatus(await this.api('GET', '/api/v1/status')); } catch (e) { /* the poll retries */ }
    }

    poll() {
      // Status is cheap; every 2 s keeps the panels current without a stream of its own.
      const tick = async () => {
        // The numbers follow the stream's cumulative events; while the stream is down, or
        // from a server whose stream lacks them (an older ndbench), this poll fills them.
        if (!document.hidden) await Promise.all([this.refreshStatus(), this.numbersLive ? null : this.refreshNumbers()]);
        setTimeout(tick, this.status && this.status.backfill && this.status.backfill.running ? 1000 : 2000);
      };
      setTimeout(tick, 2000);
    }

    // --- workload panel ---------------------------------------------------------------

    renderWorkload() {
      const box = this.q('[data-role=workload]');
      box.replaceChildren(...this.config.workloadSchema.map((o) => {
        const cur = this.configValue('workload.' + o.name);
        return this.field('wl', o, cur ? cur.value : o.default, cur && cur.source, (input) =>
          this.patch({ ['workload.' + o.name]: this.inputValue(input) }, box, (k) => k.replace(/^workload\./, ''), 'workload'));
      }));
    }

    // --- op classes ---------------------------------------------------------------------

    // classNames returns the op classes beyond read and write that the configuration has
    // (workload.ops.<class>.<option>), by name.
    classNames() {
      const names = new Set();
      for (const e of (this.config && this.config.entries) || []) {
        const m = /^workload\.ops\.([^.]+)\.[^.]+$/.exec(e.key);
        if (m) names.add(m[1]);
      }
      return [...names].sort();
    }

    // renderOpClasses shows one form per op class (its options from the API's
    // opClassSchema, each applied through PATCH /api/v1/config when committed, like the
    // workload's) and a form to add a class. A class is disabled by clearing its enabled
    // box: the configuration has no way to remove one.
    renderOpClasses() {
      const box = this.q('[data-role=opclasses]');
      const schema = (this.config && this.config.opClassSchema) || [];
      if (!box) return;
      if (!schema.length) { box.replaceChildren(el('p', { class: 'muted small', text: 'This instance does not offer op classes.' })); return; }
      const names = this.classNames();
      this.shownClasses = names.join();
      const classes = names.map((name) => {
        const prefix = 'workload.ops.' + name + '.';
        const fs = el('fieldset', { class: 'opclass fields', 'data-class': name }, el('legend', { text: name }));
        for (const o of schema) {
          const cur = this.configValue(prefix + o.name);
          fs.append(this.field('oc-' + name, o, cur ? cur.value : o.default, cur && cur.source, (input) =>
            this.patch({ [prefix + o.name]: this.inputValue(input) }, fs, (k) => k.slice(prefix.length), 'opclasses')));
        }
        return fs;
      });
      // The new class's form: a name and the options a class cannot do without (a mix
      // the driver offers unless the name is an operation of its own, a rate, workers).
      const add = el('fieldset', { class: 'opclass new fields', 'data-role': 'opclass-new' }, el('legend', { text: 'Add a class' }));
      const nameOpt = { name: 'name', type: 'string', default: '', help: "a letter, then letters, digits and '_'; not read, write or backfill" };
      add.append(this.field('oc-new', nameOpt, '', '', () => {}));
      for (const o of schema.filter((x) => ['mix', 'rate', 'workers'].includes(x.name))) add.append(this.field('oc-new', o, o.default, '', () => {}));
      add.append(el('div', { class: 'buttons' }, el('button', { type: 'button', 'data-action': 'opclass-add', text: 'Add class', onclick: () => this.addClass(add) })));
      box.replaceChildren(...classes, add);
    }

    async addClass(form) {
      this.clearErrors(form);
      const get = (n) => this.inputValue(form.querySelector('[data-field=' + n + '] input'));
      const name = get('name');
      if (!name) { this.setFieldError(form, 'name', 'name the class'); this.say('Not added: name the class.', 'error', 'opclasses'); return; }
      if (this.classNames().includes(name) || ['read', 'write', 'backfill'].includes(name)) {
        this.setFieldError(form, 'name', 'a class named ' + name + ' exists; edit it above');
        this.say('Not added: ' + name + ' exists.', 'error', 'opclasses');
        return;
      }
      const values = {};
      for (const n of ['mix', 'rate', 'workers']) {
        const v = get(n);
        if (v !== '') values['workload.ops.' + name + '.' + n] = v;
      }
      values['workload.ops.' + name + '.enabled'] = 'true';
      try {
        const res = await this.api('PATCH', '/api/v1/config', { values });
        this.config = res.config;
        this.renderOpClasses();
        this.say('Added class ' + name + '; Start both (or start it by name) runs it.', 'ok', 'opclasses');
        this.refreshStatus();
      } catch (e) {
        // A key whose class part is not a valid name is about the name, not its option.
        this.showProblem(form, e, (k) => {
          const m = /^workload\.ops\.([^.]*)\.([^.]+)$/.exec(k);
          return !m || !/^[A-Za-z][A-Za-z0-9_]*$/.test(m[1]) ? 'name' : m[2];
        }, 'opclasses');
      }
    }

    async patch(values, box, keyToName, where) {
      const names = Object.keys(values).map(keyToName);
      names.forEach((n) => this.setFieldError(box, n, ''));
      try {
        const res = await this.api('PATCH', '/api/v1/config', { values });
        this.config = res.config;
        // A change elsewhere may have added a class (another tab, the API).
        if (this.classNames().join() !== this.shownClasses) this.renderOpClasses();
        const pend = res.pending || [];
        const keys = Object.keys(values);
        const later = keys.filter((k) => pend.includes(k));
        this.say('Applied ' + keys.join(', ') + (later.length ? ' (takes effect at the next connect: ' + later.join(', ') + ')' : '') + '.', 'ok', where);
        for (const k of keys) {
          const wrap = box.querySelector('[data-field="' + CSS.escape(keyToName(k)) + '"]');
          const e = this.configValue(k);
          if (wrap && e) wrap.querySelector('[data-role=source]').textContent = 'from ' + e.source;
        }
        this.refreshStatus();
      } catch (e) {
        this.showProblem(box, e, keyToName, where);
      }
    }

    async reloadConfig() {
      try { this.config = await this.api('GET', '/api/v1/config'); } catch (e) { /* keep the old one */ }
    }

    bindActions() {
      const on = (name, f) => this.q('[data-action=' + name + ']').addEventListener('click', f);
      on('connect', () => this.connect());
      on('quick-run', () => this.quickRun());
      // On a phone the Instance panel is thousands of pixels below: the hint's link takes
      // the user there, options open and the driver list focused.
      on('quick-options', (e) => {
        e.preventDefault();
        this.q('details.options').open = true;
        const sel = this.q('[data-role=driver]');
        sel.closest('section').scrollIntoView({ block: 'start' });
        sel.focus({ preventScroll: true });
      });
      // And back up: with the options set, the first action is thousands of pixels above.
      on('back-to-run', (e) => {
        e.preventDefault();
        // The charts' panel, whose padding keeps the bar whole on the screen.
        this.q('[data-role=quickbar]').closest('section').scrollIntoView({ block: 'start' });
        const b = this.q('[data-action=quick-run]');
        (b.hidden ? this.q('[data-action=quick-stop]') : b).focus({ preventScroll: true });
      });
      on('quick-stop', () => this.action('Stopped', 'POST', '/api/v1/load/stop', { ops: [] }, 'load'));
      on('disconnect', () => this.action('Disconnected', 'POST', '/api/v1/driver/shutdown', undefined, 'connect'));
      for (const [name, ops, label] of [['reads', ['read'], 'reads'], ['writes', ['write'], 'writes'], ['both', [], 'reads and writes']]) {
        on('start-' + name, () => this.action('Started ' + label, 'POST', '/api/v1/load/start', { ops }, 'load'));
        on('stop-' + name, () => this.action('Stopped ' + label, 'POST', '/api/v1/load/stop', { ops }, 'load'));
      }
      on('backfill-start', () => this.action('Backfill started', 'POST', '/api/v1/backfill/start', {}, 'backfill'));
      on('backfill-stop', () => this.action('Backfill stopped', 'POST', '/api/v1/backfill/stop', undefined, 'backfill'));
      on('report-json', () => this.downloadReport());
      on('report-html', () => this.downloadHTMLReport());
      this.q('[data-role=window]').addEventListener('change', (e) => {
        this.windowSecs = Number(e.target.value);
        this.render();
      });
      this.q('[data-role=logscale]').addEventListener('change', (e) => {
        this.log = e.target.checked;
        this.rebuildGrid(this.visibleOps());
      });
    }

    // --- statistics -------------------------------------------------------------------

    // loadSeries fetches the points that ended after since (all with ''). The stream's
    // intervals that arrive meanwhile are held and added after them: the store drops a
    // point not newer than its last, so an interval added first would make it drop the
    // older history, the hole this avoids.
    async loadSeries(since) {
      this.loads++;
      if (!this.held) this.held = [];
      try {
        const res = await this.api('GET', '/api/v1/stats/series' + (since ? '?since=' + encodeURIComponent(since) : ''));
        // A point not newer than the last held is one the server amended since (a fleet
        // second flagged partial late): it replaces the one held, never adds a second.
        for (const p of res.points || []) if (!this.store.push(p)) this.store.replace(p);
      } catch (e) { /* the stream fills in */ }
      if (--this.loads === 0) this.releaseHeld();
      this.queueRender();
    }

    // releaseHeld adds the stream's held intervals to the store and stops holding.
    releaseHeld() {
      const held = this.held || [];
      this.held = null;
      // An interval event older than the history is dropped (the history has it, maybe
      // amended since); an amend event replaces the point.
      for (const [p, seconds, amend] of held) if (!this.store.push(p, seconds) && amend) this.store.replace(p, seconds);
    }

    // openStream opens the live stream and resolves once the history is in: fetched when
    // the stream opens, or sooner when the stream fails or is slow to open (the history is
    // worth showing without it), and then again from its newest point once it opens.
    openStream() {
      // cumulative=1: the session totals and failure messages after each interval, for the
      // numbers table and the failures panel (a stream that ignores it leaves them to the poll).
      const es = new EventSource(this.inst.baseURL + '/api/v1/stats/stream?cumulative=1');
      // broken: the stream is not open, so what it will bring joins the history only if
      // the history is fetched again once it opens. It starts so: no stream yet.
      let broken = true, loaded, fetched = false;
      const history = new Promise((resolve) => { loaded = resolve; });
      const load = () => {
        fetched = true;
        this.loadSeries(this.store.last ? this.store.last.t : '').then(loaded);
      };
      const early = () => { if (!fetched) load(); };
      setTimeout(early, HISTORY_WAIT_MS);
      es.addEventListener('open', () => {
        this.streamOpen = true;
        this.renderLive();
        if (broken) load();
        broken = false;
      });
      es.addEventListener('error', () => {
        broken = true;
        this.numbersLive = false;
        this.streamOpen = false;
        this.renderLive();
        early();
      });
      es.addEventListener('interval', (ev) => {
        const s = JSON.parse(ev.data);
        // A fleet's intervals say whether some node's data is missing (partial).
        const p = { t: s.end, ops: s.ops, nodes: s.nodes, partial: s.partial, missing: s.missing };
        if (this.held) {
          this.held.push([p, s.seconds]);
          // A history request that hangs must not freeze the charts: past HELD_MAX the
          // live points go on without it (what it brings later is older, and dropped).
          if (this.held.length <= HELD_MAX) return;
          this.releaseHeld();
          this.queueRender();
        } else if (this.store.push(p, s.seconds)) this.queueRender();
      });
      // A point of the series amended after it was sent (a fleet second flagged partial
      // when a node's data for it came late) replaces the one held at its time.
      es.addEventListener('amend', (ev) => {
        const p = JSON.parse(ev.data);
        if (this.held) this.held.push([p, undefined, true]);
        else if (this.store.replace(p)) this.queueRender();
      });
      es.addEventListener('cumulative', (ev) => {
        this.numbersLive = true;
        this.renderNumbers(JSON.parse(ev.data));
      });
      this.stream = es;
      return history;
    }

    // renderLive says what the charts show: "live" only while load runs and the stream
    // brings it; an open stream with nothing connected or nothing running is not live
    // (a new user read "live" beside empty charts as a run that produced nothing).
    // data-stream says whether the stream itself is open.
    renderLive() {
      const badge = this.q('[data-role=live]');
      const st = this.status || {};
      const running = !!(st.readsRunning || st.writesRunning || (st.backfill && st.backfill.running) ||
        Object.values(st.running || {}).some(Boolean));
      badge.dataset.stream = this.streamOpen ? 'open' : 'closed';
      let text, on = false, title;
      if (!this.streamOpen) {
        text = this.stream ? 'stream disconnected, retrying' : 'connecting…';
        title = 'the page is not receiving statistics from the server';
      } else if (!st.initialized) {
        text = 'waiting: not connected';
        title = 'no driver is connected: Connect and start runs the workload, and its figures show here each second';
      } else if (!running) {
        text = 'idle: no load running';
        title = 'connected, with no class running: Start runs the workload';
      } else {
        text = 'live'; on = true;
        title = 'figures arrive each second while the load runs';
      }
      badge.textContent = text;
      badge.className = 'state ' + (on ? 'on' : 'off');
      badge.title = title;
    }

    // visibleOps returns the op classes that get charts: those running now or with data in
    // the time window (backfill only then), in the store's order (read, write, backfill,
    // then the workload's other classes and operations as they appeared). With nothing
    // run yet, reads and writes, so the page shows where the charts will be.
    visibleOps() {
      const st = this.status || {};
      const running = Object.assign({ read: st.readsRunning, write: st.writesRunning }, st.running || {});
      running.backfill = st.backfill && st.backfill.running;
      const ops = this.store.ops.filter((op) => running[op] || this.store.hasData(op, this.windowSecs));
      if (ops.length) return ops;
      // Nothing ran yet: the classes that will, reads and writes unless disabled (a
      // disabled class gets no charts).
      const enabled = ['read', 'write'].filter((op) => {
        const e = this.configValue('workload.' + op + 'Enabled');
        return !e || String(e.value) !== 'false';
      });
      return enabled.length ? enabled : ['read', 'write'];
    }

    rebuildGrid(ops) {
      const c = this.q('[data-role=charts]');
      c.replaceChildren();
      this.grid = new Grid(c, ops, { log: this.log, fleet: this.fleet, marks: this.marks.slice() });
      this.grid.update(this.store.columns(this.windowSecs));
    }

    // refreshNumbers fetches the session's totals (GET /api/v1/stats) when the stream
    // does not bring them.
    async refreshNumbers() {
      let stats;
      try { stats = await this.api('GET', '/api/v1/stats'); } catch (e) { return; }
      this.renderNumbers(stats);
    }

    // renderNumbers fills the numbers table from the session's cumulative summary
    // ({cumulative, errors}, from the stream or GET /api/v1/stats): per class count, rate,
    // latency percentiles, errors by class, misses and hit ratio, like NDBench's stats
    // panel; and the failures panel from errors.
    renderNumbers(stats) {
      this.renderFailures(stats && stats.errors);
      const cum = stats && stats.cumulative;
      const box = this.q('[data-role=numbers]');
      const ops = cum ? NDCharts.reportOrder(Object.keys(cum.ops || {})).filter((op) => (cum.ops[op].count || 0) + (cum.ops[op].errors || 0) > 0) : [];
      if (!ops.length) { box.replaceChildren(); this.numbers = null; return; }
      const ms = (v) => (typeof v === 'number' ? (v / 1000).toFixed(v >= 100000 ? 0 : v >= 1000 ? 2 : 3) : '–');
      // A dropped column only when workload.catchUp=drop skipped something: never silent,
      // never an empty column.
      const dropping = ops.some((op) => (cum.ops[op].dropped || 0) > 0);
      const heads = ['class', 'count', 'rate (ops/s)', 'p50 (ms)', 'p95 (ms)', 'p99 (ms)', 'p99.9 (ms)', 'max (ms)', 'avg (ms)', 'errors', 'misses', 'hit ratio'];
      if (dropping) heads.push('dropped');
      // Each row as cell specs; the table is updated in place, not rebuilt: rebuilt at
      // every update, each of its elements was replaced every second, so a user's
      // selection of a figure was lost before it could be copied, and an element held
      // between two looks (the caption, by a browser test under load) was detached.
      const rows = ops.map((op) => {
        const s = cum.ops[op];
        const rt = s.responseTime || {};
        const errs = Object.entries(s.failures || {}).filter(([, n]) => n > 0).map(([k, n]) => k + ' ' + n).join(', ');
        const hit = NDCharts.readLike(op) && s.count > 0 ? (100 * (s.count - (s.misses || 0)) / s.count).toFixed(1) + ' %' : '–';
        return { op, count: String(s.count || 0), cells: [
          { text: op }, { text: String(s.count || 0) }, { 'data-role': 'rate', title: activeTitle(s), text: activeRate(s).toFixed(1) },
          { text: ms(rt.p50) }, { text: ms(rt.p95) }, { text: ms(rt.p99) },
          { text: ms(rt.p999) }, { text: ms(rt.max) }, { text: ms(rt.mean) },
          { class: 'errors', text: errs || '0' }, { text: String(s.misses || 0) }, { text: hit },
          ...(dropping ? [{ 'data-role': 'dropped', text: String(s.dropped || 0) }] : [])] };
      });
      const secs = (cum.seconds ? ' over ' + Math.round(cum.seconds) + ' s' : '') +
        (ops.some((op) => cum.ops[op].activeSeconds > 0) ? ', rates over the time each class ran' : '');
      // A fleet's totals that include seconds merged without some node's data.
      // (Outside the table, which scrolls sideways on a phone.)
      const partialText = cum.partial ? 'The totals include partial seconds (missing ' + ((cum.missing || []).join(', ') || '?') + '): their counts are a lower bound.' : '';
      let n = this.numbers;
      if (!n || !box.contains(n.table) || n.heads !== heads.join('|')) {
        const capId = this.inst.id + '-numbers-caption';
        n = this.numbers = {
          heads: heads.join('|'),
          partial: el('p', { class: 'small' }, el('span', { class: 'partial-now', 'data-role': 'numbers-partial' })),
          // The caption sits above the table, not in it: in the table it scrolled away with
          // the columns on a phone, cut at the screen's edge.
          caption: el('p', { id: capId, class: 'muted small numbers-caption' }),
          tbody: el('tbody', {}),
          rows: new Map(),
        };
        n.table = el('table', { 'aria-describedby': capId },
          el('thead', {}, el('tr', {}, ...heads.map((h) => el('th', { scope: 'col', class: h === 'errors' ? 'errors' : null, text: h })))), n.tbody);
        // On a phone the table is wider than the screen: say that it scrolls.
        const hint = el('p', { class: 'scroll-hint muted small', text: 'Swipe the table sideways for every column →' });
        box.replaceChildren(n.partial, n.caption, hint, n.table);
      }
      n.partial.hidden = !partialText;
      setText(n.partial.firstChild, partialText);
      setText(n.caption, 'Session totals' + secs + ' (response time)');
      updateRows(n.tbody, n.rows, rows.map((r) => ({ key: r.op, attrs: { 'data-op': r.op, 'data-count': r.count }, cells: r.cells })));
    }

    // renderFailures fills the failures panel, like Locust's: per op class, the recent
    // distinct failure messages with their failure class, count, and first and last seen.
    // Hidden while nothing failed. Messages come from the store: text, never markup.
    renderFailures(errors) {
      const box = this.q('[data-role=failures]');
      if (!box) return;
      const ops = NDCharts.reportOrder(Object.keys(errors || {}).filter((op) => (errors[op] || []).length));
      box.hidden = ops.length === 0;
      const list = this.q('[data-role=failures-list]');
      if (!ops.length) { list.replaceChildren(); this.failuresTable = null; return; }
      const time = (t) => (t ? new Date(t).toLocaleTimeString([], { hour12: false }) : '–');
      const items = [];
      for (const op of ops) {
        for (const m of errors[op]) {
          items.push({ key: op + '\u0000' + m.class + '\u0000' + m.message,
            attrs: { 'data-op': op, 'data-class': m.class, 'data-count': String(m.count) },
            cells: [{ text: op }, { text: m.class }, { class: 'msg', text: m.message }, { class: 'num', text: String(m.count) },
              { title: m.first ? new Date(m.first).toLocaleString() : '', text: time(m.first) },
              { title: m.last ? new Date(m.last).toLocaleString() : '', text: time(m.last) }] });
        }
      }
      // Updated in place, as the numbers table: a message is what a user selects to copy.
      let f = this.failuresTable;
      if (!f || !list.contains(f.table)) {
        f = this.failuresTable = { tbody: el('tbody', {}), rows: new Map() };
        f.table = el('table', {},
          el('thead', {}, el('tr', {}, ...['class', 'failure', 'message', 'count', 'first seen', 'last seen'].map((h) =>
            el('th', { scope: 'col', class: h === 'message' ? 'msg' : h === 'count' ? 'num' : null, text: h })))), f.tbody);
        list.replaceChildren(f.table);
      }
      updateRows(f.tbody, f.rows, items);
    }

    queueRender() {
      if (this.renderQueued) return;
      this.renderQueued = true;
      requestAnimationFrame(() => { this.renderQueued = false; this.render(); });
    }

    render() {
      if (!this.grid) return;
      const t0 = performance.now();
      const ops = this.visibleOps();
      if (ops.join() !== this.grid.ops.join()) this.rebuildGrid(ops);
      this.grid.update(this.store.columns(this.windowSecs));
      this.root.dataset.points = String(this.store.total);
      const last = this.store.last;
      if (last) {
        // Every op class with a rate, reads and writes always (an operation of a mixed class
        // is in the charts, not here).
        const parts = NDCharts.reportOrder(Object.keys(last.ops)).filter((op) => op !== 'backfill' && !op.includes('.') &&
          (op === 'read' || op === 'write' || (last.ops[op].rate || 0) > 0))
          .map((op) => (op === 'read' ? 'reads' : op === 'write' ? 'writes' : op) + ' ' + Math.round(last.ops[op].rate || 0) + ' ops/s');
        const now = this.q('[data-role=now]');
        now.textContent = 'now: ' + parts.join(', ');
        // A fleet second merged without some node's data: its rates are a lower bound.
        if (last.partial) {
          const miss = last.missing || [];
          const of = last.nodes ? ' (' + last.nodes + ' of ' + (last.nodes + miss.length) + ' nodes)' : '';
          now.append(' ', el('span', { class: 'partial-now', title: 'this second lacks these nodes\' data: its rates are a lower bound, not the store slowing',
            text: 'partial: missing node' + (miss.length > 1 ? 's ' : ' ') + (miss.join(', ') || '?') + of }));
        }
      }
      const note = this.q('[data-role=partial]');
      if (note) {
        const pi = this.store.partialIn(this.windowSecs);
        this.root.dataset.partial = String(pi.count);
        note.hidden = pi.count === 0;
        note.textContent = pi.count ? pi.count + ' partial second' + (pi.count > 1 ? 's' : '') + ' in view (hatched), missing ' +
          pi.nodes.join(', ') + ': lower bounds, not a drop of the store' : '';
      }
      // The cost of each update, for the tests' responsiveness check (last 120 kept).
      // uPlot draws in microtasks queued by setData; this one runs after them.
      queueMicrotask(() => {
        this.renderTimes.push(performance.now() - t0);
        if (this.renderTimes.length > 120) this.renderTimes.shift();
      });
    }

    // --- results ----------------------------------------------------------------------

    // buildReport returns the run report: the API's own when it offers one, else the same
    // document (report format 1) assembled from the API's statistics, status and config.
    async buildReport() {
      try {
        return await this.api('GET', '/api/v1/report');
      } catch (e) {
        if (e.status !== 404 && e.status !== 405) throw e;
      }
      const [stats, series, status, config, health] = await Promise.all([
        this.api('GET', '/api/v1/stats'), this.api('GET', '/api/v1/stats/series'), this.api('GET', '/api/v1/status'),
        this.api('GET', '/api/v1/config'), this.api('GET', '/health').catch(() => ({}))]);
      const cum = stats.cumulative;
      const bf = status.backfill && status.backfill.phase !== 'idle' ? status.backfill : undefined;
      const ops = {};
      for (const [name, s] of Object.entries(cum.ops)) if (name !== 'backfill') ops[name] = s;
      if (bf) ops.backfill = cum.ops.backfill;
      return {
        formatVersion: 1,
        tool: { name: 'ndbench', version: health.version || '', goVersion: '' },
        started: cum.start, ended: cum.end, seconds: cum.seconds,
        driver: { name: status.driver, info: status.connectionInfo, stats: status.driverStats, panics: status.driverPanics || 0 },
        ops, backfill: bf,
        client: null,
        warnings: ['built by the web UI from the API; client CPU figures are not available (see ndbench serve --report)'],
        config: config.entries.map((e) => ({ Key: e.key, Value: e.value, Source: e.source, Secret: e.secret })),
        notices: config.notices,
        series: series.points,
      };
    }

    // downloadHTMLReport saves the server's self-contained HTML report (the same charts,
    // opens offline).
    downloadHTMLReport() {
      const a = el('a', { href: this.inst.baseURL + '/api/v1/report.html', download: 'ndbench-report-' + this.inst.id + '-' + new Date().toISOString().replace(/[:.]/g, '-') + '.html' });
      document.body.append(a);
      a.click();
      a.remove();
      this.say('HTML report downloaded.', 'ok', 'results');
    }

    async downloadReport() {
      try {
        const rep = await this.buildReport();
        const blob = new Blob([JSON.stringify(rep, null, 2) + '\n'], { type: 'application/json' });
        const a = el('a', { href: URL.createObjectURL(blob), download: 'ndbench-report-' + this.inst.id + '-' + new Date().toISOString().replace(/[:.]/g, '-') + '.json' });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(a.href), 60000);
        this.say('Report downloaded.', 'ok', 'results');
      } catch (e) {
        this.say('Report failed: ' + e.message, 'error', 'results');
      }
    }
  }


  // NodesPanel is a fleet page's table of the fleet's members (GET
  // <fleet>/api/v1/fleet/members), refreshed every 2 s: health, what runs, achieved of
  // assigned rate and p99 per class, errors, clock offset and flags, with Start and Stop
  // for each node (POST <fleet>/api/v1/fleet/nodes/{id}/load/start|stop). Rows are kept
  // by node id and updated in place, so a focused button survives a refresh.
  class NodesPanel {
    constructor(view) {
      this.view = view;
      this.box = view.q('[data-role=nodes]');
      this.summary = view.q('[data-role=nodes-summary]');
      this.rows = new Map();
      this.members = [];
      this.renders = 0;
      this.tbody = el('tbody');
      this.box.replaceChildren(el('table', { class: 'nodes-table' },
        el('thead', {}, el('tr', {}, ...NodesPanel.HEADS.map(([, h, tip]) => el('th', { scope: 'col', title: tip, text: h })))),
        this.tbody));
    }

    start() {
      this.refresh();
      const tick = async () => {
        if (!document.hidden) await this.refresh();
        setTimeout(tick, 2000);
      };
      setTimeout(tick, 2000);
    }

    async refresh() {
      try {
        this.render(await this.view.api('GET', '/api/v1/fleet/members'));
      } catch (e) {
        this.summary.textContent = 'cannot list the nodes: ' + e.message;
      }
    }

    render(body) {
      const members = (body && body.members) || [];
      this.members = members;
      const alive = members.filter((m) => m.health === 'alive').length;
      this.summary.textContent = members.length + ' node' + (members.length === 1 ? '' : 's') + ' · ' + alive + ' alive · ' +
        (body.run ? 'run ' + body.run : 'no run') + (body.driver ? ' · driver ' + body.driver : '');
      const root = this.view.root;
      root.dataset.nodes = String(members.length);
      root.dataset.alive = String(alive);
      const seen = new Set();
      for (const m of members) {
        seen.add(m.id);
        let row = this.rows.get(m.id);
        if (!row) {
          row = this.makeRow(m.id);
          this.rows.set(m.id, row);
        }
        this.fill(row, m);
        this.tbody.append(row.tr); // keeps the server's order (by id)
      }
      for (const [id, row] of this.rows) if (!seen.has(id)) { row.tr.remove(); this.rows.delete(id); }
      // How many answers the table has shown: tests and scripts wait on it.
      this.box.dataset.renders = String(++this.renders);
    }

    makeRow(id) {
      const cells = {};
      const tr = el('tr', { 'data-node': id });
      for (const [key, h] of NodesPanel.HEADS) {
        cells[key] = el('td', { 'data-label': h, class: 'c-' + key });
        tr.append(cells[key]);
      }
      const start = el('button', { type: 'button', 'data-action': 'node-start', 'aria-label': 'Start the load on ' + id, text: 'Start',
        onclick: () => this.act(id, 'start') });
      const stop = el('button', { type: 'button', 'data-action': 'node-stop', 'aria-label': 'Stop the load on ' + id, text: 'Stop',
        onclick: () => this.act(id, 'stop') });
      cells.actions.append(el('span', { class: 'row-buttons' }, start, stop));
      return { tr, cells, start, stop };
    }

    fill(row, m) {
      const c = row.cells;
      const alive = m.health === 'alive';
      const running = NDCharts.reportOrder(Object.keys(m.running || {}).filter((k) => m.running[k]));
      const assigned = m.assigned || {}, achieved = m.achieved || {}, p99 = m.responseP99Ms || {};
      const classes = NDCharts.reportOrder(Object.keys(Object.assign({}, assigned, achieved, m.running || {}))
        .filter((k) => (m.running && m.running[k]) || assigned[k] > 0 || achieved[k] > 0));
      const tr = row.tr;
      tr.dataset.health = m.health;
      tr.dataset.running = running.join(',');
      tr.dataset.achieved = String(Object.values(achieved).reduce((a, b) => a + (b || 0), 0));
      tr.className = 'h-' + m.health + (m.saturated && alive ? ' saturated' : '');
      // A node that is not alive keeps its last figures: shown, but as stale.
      const stale = alive ? '' : ' stale';
      // Each cell is rebuilt only when what it shows changed (replaceIfChanged): rebuilt at
      // every 2 s refresh, a user's selection of a node's address, or the tooltip read on
      // a health or flag, was lost before it could be used.
      const labels = Object.entries(m.labels || {}).map(([k, v]) => k + '=' + v);
      const addr = m.addr && m.addr !== m.id ? m.addr : '';
      replaceIfChanged(c.node, [m.id, addr, labels], () => [el('span', { class: 'node-id', text: m.id }),
        addr ? el('small', { class: 'muted block', text: addr }) : null,
        labels.length ? el('span', { class: 'chips' }, ...labels.map((l) => el('span', { class: 'chip', text: l }))) : null].filter(Boolean));
      const since = m.since ? 'since ' + new Date(m.since).toLocaleTimeString() : '';
      const why = m.lastError && !alive ? m.lastError : '';
      const healthTitle = [since, m.lastError].filter(Boolean).join(': ');
      replaceIfChanged(c.health, [m.health, healthTitle, why], () => [el('span', { class: 'health h-' + m.health, title: healthTitle, text: m.health }),
        why ? el('small', { class: 'why', title: why, text: why }) : null].filter(Boolean));
      const runningText = running.length ? running.join(', ') : m.driver ? 'idle' : 'no driver';
      replaceIfChanged(c.running, [runningText, running.length > 0, stale], () => [running.length
        ? el('span', { class: 'line' + stale, text: runningText }) : el('span', { class: 'muted', text: runningText })]);
      const lines = (cell, f) => {
        const texts = classes.map((k) => [k, f(k)]);
        replaceIfChanged(cell, [texts, stale], () => (texts.length
          ? texts.map(([k, v]) => el('span', { class: 'line' + stale }, el('span', { class: 'cls', text: k }), ' ', v)) : ['–']));
      };
      lines(c.rate, (k) => rate(achieved[k]) + (assigned[k] > 0 ? ' / ' + rate(assigned[k]) : ''));
      lines(c.p99, (k) => (p99[k] > 0 ? ms(p99[k]) : '–'));
      setText(c.errors, (m.errorsPerSec || 0).toFixed(m.errorsPerSec >= 10 ? 0 : 1));
      c.errors.classList.toggle('bad', m.errorsPerSec > 0);
      setText(c.clock, (m.offsetMs >= 0 ? '+' : '') + ms(m.offsetMs || 0));
      const clockTitle = 'clock offset from the coordinator; beat round trip ' + ms(m.rttMs || 0) + ' ms';
      if (c.clock.title !== clockTitle) c.clock.title = clockTitle;
      // Each flag as [class, tooltip, text].
      const flags = [];
      if (m.saturated && alive) flags.push(['saturated', "generator-bound: below 95% of its assigned rate; its numbers are the generator's, not the store's", 'saturated']);
      if (m.orphaned) flags.push(['orphaned', 'runs load of a run this coordinator does not hold (left from another coordinator, or before a restart)', 'orphaned']);
      if (m.keptAfterLeftDiscovery) flags.push(['undiscovered', 'discovery no longer lists this node, but it answers and runs its share of the run: it keeps its share until it stops answering (its link to the registry failed, not the node)', 'kept: left discovery']);
      if (m.versionMismatch) flags.push(['mismatch', 'runs ndbench ' + m.version + ', not the coordinator\'s version', 'version ' + m.version]);
      if (m.health === 'suspect' || m.health === 'lost') flags.push(['h-' + m.health, m.lastError || m.health, m.health === 'lost' ? 'lost: figures stale' : 'missed beats']);
      if (m.inRun && alive) flags.push(['inrun', 'takes part in the fleet run', 'in run']);
      replaceIfChanged(c.flags, flags, () => (flags.length ? flags.map(([cls, title, text]) => el('span', { class: 'flag ' + cls, title, text })) : ['–']));
      row.start.disabled = !alive || !m.driver;
      row.stop.disabled = !alive || running.length === 0;
    }

    async act(id, what) {
      const label = (what === 'start' ? 'Start' : 'Stop') + ' on ' + id;
      try {
        const res = await this.view.api('POST', '/api/v1/fleet/nodes/' + encodeURIComponent(id) + '/load/' + what, { ops: [] });
        this.view.say((what === 'start' ? 'Started the load on ' : 'Stopped the load on ') + id + '.', 'ok', 'nodes');
        if (res && res.members) this.render(res);
        this.view.refreshStatus();
        this.view.settle();
      } catch (e) {
        this.view.say(label + ' failed: ' + e.message, 'error', 'nodes');
        this.refresh();
      }
    }
  }
  // The table's columns: header and what it means (a tooltip on the header).
  NodesPanel.HEADS = [
    ['node', 'node', 'node id (and address); group labels'],
    ['health', 'health', 'joining, alive, suspect (missed beats), lost (no beat for the timeout), left; hover for since and the last error'],
    ['running', 'running', 'op classes running on the node'],
    ['rate', 'achieved / assigned (ops/s)', 'achieved of assigned rate per class, over the last seconds'],
    ['p99', 'p99 (ms)', 'response time p99 per class, over the last seconds'],
    ['errors', 'errors/s', 'failures per second, all classes'],
    ['clock', 'clock (ms)', "the node's clock minus the coordinator's"],
    ['flags', 'flags', 'saturated, orphaned, kept after it left discovery, version mismatch, suspect/lost'],
    ['actions', 'actions', 'start or stop the load on this node alone'],
  ];

  function rate(v) { v = v || 0; return v >= 100 ? String(Math.round(v)) : v.toFixed(1); }
  function ms(v) { const a = Math.abs(v); return a >= 100 ? v.toFixed(0) : a >= 1 ? v.toFixed(2) : v.toFixed(3); }

  const views = {};
  for (const inst of instances) {
    const root = document.querySelector('[data-instance="' + CSS.escape(inst.id) + '"]');
    const v = new InstanceView(inst, root);
    views[inst.id] = v;
    root.querySelector('[data-role=window]').value = String(v.windowSecs);
    v.start();
    // The Auto-tune panel (autotune.js): its form, progress, chart and step table.
    if (window.NDAutotune) v.autotune = new window.NDAutotune.Panel(v, el);
  }

  // Log out is offered when this tab logged in (the session cookie is HttpOnly, so the
  // page cannot see it; the login page leaves a flag in sessionStorage).
  const logout = document.querySelector('[data-action=logout]');
  if (logout && sessionStorage.getItem('ndbench-session')) {
    logout.hidden = false;
    logout.addEventListener('click', async () => {
      await fetch('/api/v1/session', { method: 'DELETE', credentials: 'same-origin' }).catch(() => {});
      sessionStorage.removeItem('ndbench-session');
      location.reload();
    });
  }

  // A read-only handle for tests and for poking at the page from the console.
  window.ndbenchUI = {
    instances,
    latest: (id) => views[id] && views[id].store.last,
    points: (id) => (views[id] ? views[id].store.total : 0),
    // The end times (Unix seconds) of the 1 s points held, oldest first: a gap between
    // two of them is a hole in the charts.
    times: (id) => (views[id] ? views[id].store.times() : []),
    status: (id) => views[id] && views[id].status,
    marks: (id) => (views[id] ? views[id].marks.map((m) => Object.assign({}, m)) : []),
    renderTimes: (id) => (views[id] ? views[id].renderTimes.slice() : []),
    members: (id) => (views[id] && views[id].nodes ? views[id].nodes.members : null),
    windows: WINDOWS,
  };
})();
