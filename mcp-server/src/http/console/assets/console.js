// The operator console: counts, a live task table, one task's detail, cancel, and the
// last 15 minutes as charts. Plain script, no framework, no build step.
//
// Everything that comes from users (ids, owners, tools, messages, arguments, results)
// is written with textContent or createTextNode, never parsed as HTML.
'use strict';

(function () {
  // The console's base path, from this script's own URL (".../console/assets/console.js").
  const BASE = new URL(document.currentScript.src).pathname.replace(/\/assets\/console\.js$/, '');
  const API = BASE + '/api';
  const PAGE_SIZE = 50;
  // At most this many rows are kept in the table; older ones are dropped from the end.
  const MAX_ROWS = 1000;
  const COUNTS_EVERY_MS = 1000;
  const ACTIVITY_EVERY_MS = 30000;
  const AGE_EVERY_MS = 5000;
  const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
  const FINISHED = ['completed', 'failed', 'cancelled'];
  const SVG = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);

  const state = {
    filter: { status: '', tool: '', owner: '', node: '' },
    rows: new Map(), // id -> { task, tr }
    cursor: null,
    loading: 0, // generation of the current listing; older responses are ignored
    detailId: null,
    detail: null, // the task the detail view shows
    countsTimer: null,
    countsAgain: false,
    capped: false,
    held: null, // events received while the list reloads
  };

  // ---- small helpers -------------------------------------------------------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  // The page's message line (a failed request says so there).
  function say(text) {
    const box = $('message');
    if (!box) return;
    box.textContent = text || '';
    box.hidden = !text;
  }

  function duration(ms) {
    if (ms === null || ms === undefined) return '';
    if (ms < 1000) return ms + ' ms';
    const s = ms / 1000;
    if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
    const m = Math.floor(s / 60);
    if (m < 60) return m + ' min ' + Math.floor(s % 60) + ' s';
    const h = Math.floor(m / 60);
    if (h < 48) return h + ' h ' + (m % 60) + ' min';
    return Math.floor(h / 24) + ' d ' + (h % 24) + ' h';
  }

  function instant(ms) {
    return ms === null || ms === undefined ? '' : new Date(ms).toISOString();
  }

  function clock(ms) {
    const d = new Date(ms);
    return String(d.getHours()).padStart(2, '0') + ':' + String(d.getMinutes()).padStart(2, '0');
  }

  async function getJson(path) {
    const response = await fetch(API + path, { headers: { Accept: 'application/json' } });
    return readJson(response);
  }

  // A POST with the CSRF header the server asks of every change; `body`, when given, is
  // sent as JSON.
  async function postJson(path, body) {
    const headers = { Accept: 'application/json', 'X-Console-Csrf': '1' };
    const init = { method: 'POST', headers };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(API + path, init);
    return readJson(response);
  }

  // The reply's JSON; a refusal becomes an Error saying the status and the server's
  // `error` message.
  async function readJson(response) {
    let body = null;
    try {
      body = await response.json();
    } catch (e) {
      body = null;
    }
    if (!response.ok) {
      const why = body && typeof body.error === 'string' ? body.error : response.statusText;
      throw new Error(response.status + ' ' + why);
    }
    return body;
  }

  // A change asks first: the first click arms the button (it says `prompt`), a second one
  // within ARM_MS confirms (true); left alone, the button goes back to its label.
  const ARM_MS = 5000;
  function confirmed(button, prompt) {
    if (button.dataset.armed === 'true') {
      disarm(button);
      return true;
    }
    button.dataset.label = button.textContent;
    button.dataset.armed = 'true';
    button.textContent = prompt;
    setTimeout(() => disarm(button), ARM_MS);
    return false;
  }

  function disarm(button) {
    if (button.dataset.armed !== 'true') return;
    delete button.dataset.armed;
    button.textContent = button.dataset.label || '';
  }

  // For the page's other scripts (timeline.js, rerun.js, nodes.js, loaded after this one;
  // filters.js, loaded before, uses it once the page has loaded): one copy of the
  // helpers, text-only elements, requests with the CSRF header and their errors, and
  // the two-click confirmation.
  window.Console = Object.freeze({ $, el, say, getJson, postJson, confirmed, disarm });

  // ---- counts ----------------------------------------------------------------------

  async function loadCounts() {
    try {
      const counts = await getJson('/counts');
      const list = $('counts');
      list.replaceChildren();
      for (const status of STATUSES) {
        const item = el('li', 'count status-' + status);
        item.append(el('span', 'count-n', (counts.byStatus && counts.byStatus[status]) || 0));
        item.append(el('span', 'count-label', status));
        list.append(item);
      }
    } catch (e) {
      say('Counts: ' + e.message);
    }
  }

  // At most one counts request per second, however many events arrive.
  function countsSoon() {
    if (state.countsTimer) {
      state.countsAgain = true;
      return;
    }
    state.countsTimer = setTimeout(() => {
      state.countsTimer = null;
      if (state.countsAgain) {
        state.countsAgain = false;
        countsSoon();
      }
    }, COUNTS_EVERY_MS);
    loadCounts();
  }

  // ---- the task table --------------------------------------------------------------

  // ASCII letters lowered only, as the API compares the text (the same on every store).
  function asciiLower(text) {
    return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
  }

  function matches(task) {
    const f = state.filter;
    return (!f.status || task.status === f.status)
      && (!f.tool || task.tool === f.tool)
      && (!f.owner || task.owner === f.owner)
      && (!f.node || task.node === f.node)
      && (!f.text || (typeof task.statusMessage === 'string'
        && asciiLower(task.statusMessage).includes(asciiLower(f.text))))
      && (!f.createdFrom || task.createdAt >= Number(f.createdFrom))
      && (!f.createdBefore || task.createdAt < Number(f.createdBefore));
  }

  function query() {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(state.filter)) if (v) params.set(k, v);
    params.set('limit', String(PAGE_SIZE));
    if (state.cursor) params.set('cursor', state.cursor);
    return params.toString();
  }

  function terminal(status) {
    return FINISHED.includes(status);
  }

  function makeRow(task) {
    const tr = document.createElement('tr');
    const idCell = el('td', 'col-id');
    const open = el('button', 'link', task.id);
    open.type = 'button';
    open.dataset.action = 'open';
    open.title = 'Show task ' + task.id;
    idCell.append(open);
    tr.append(idCell);
    for (const name of ['tool', 'owner', 'status', 'message', 'age', 'duration', 'node']) {
      tr.append(el('td', 'col-' + name));
    }
    const actions = el('td', 'col-actions');
    const cancel = el('button', 'cancel', 'Cancel');
    cancel.type = 'button';
    cancel.dataset.action = 'cancel';
    actions.append(cancel);
    tr.append(actions);
    const row = { task, tr };
    fillRow(row, task);
    return row;
  }

  // False when `next` is older than what is shown (a reply that crossed a newer event):
  // a finished task never goes back, and an earlier update never replaces a later one.
  function fresher(shown, next) {
    if (!shown) return true;
    if (terminal(shown.status) && !terminal(next.status)) return false;
    return next.lastUpdatedAt >= shown.lastUpdatedAt;
  }

  function fillRow(row, task) {
    row.task = task;
    const tr = row.tr;
    const cells = tr.children;
    tr.dataset.taskId = task.id;
    tr.dataset.status = task.status;
    cells[1].textContent = task.tool || '';
    cells[2].textContent = task.owner;
    const badge = el('span', 'badge status-' + task.status, task.status);
    cells[3].replaceChildren(badge);
    if (task.cancelRequested && !terminal(task.status)) {
      cells[3].append(el('span', 'flag', 'cancel requested'));
    }
    cells[4].textContent = task.statusMessage || '';
    cells[4].title = task.statusMessage || '';
    cells[5].textContent = duration(Date.now() - task.createdAt);
    cells[6].textContent = duration(task.durationMs);
    cells[7].textContent = task.node || '';
    const cancel = cells[8].firstChild;
    cancel.hidden = terminal(task.status);
    cancel.disabled = Boolean(task.cancelRequested);
    cancel.title = 'Cancel task ' + task.id;
  }

  // Newest first, by (createdAt, id) as the API orders them.
  function newer(a, b) {
    return a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id);
  }

  function upsert(task) {
    // While the list reloads, events wait for it (it may not hold them yet).
    if (state.held) {
      state.held.push(task);
      return;
    }
    const row = state.rows.get(task.id);
    if (!matches(task)) {
      if (row) {
        row.tr.remove();
        state.rows.delete(task.id);
        listState();
      }
      return;
    }
    if (row) {
      if (fresher(row.task, task)) fillRow(row, task);
      return;
    }
    const body = $('rows');
    // A task older than the last row shown comes with "load more", not here.
    const last = body.lastElementChild && state.rows.get(body.lastElementChild.dataset.taskId);
    if (state.cursor && last && newer(last.task, task)) return;
    const fresh = makeRow(task);
    state.rows.set(task.id, fresh);
    let before = body.firstElementChild;
    while (before && newer(state.rows.get(before.dataset.taskId).task, task)) {
      before = before.nextElementSibling;
    }
    body.insertBefore(fresh.tr, before);
    trim();
    listState();
  }

  // Keeps at most MAX_ROWS rows: the oldest go. The API's cursor then no longer follows
  // the last row, so paging stops; narrower filters reach older tasks.
  function trim() {
    const body = $('rows');
    while (state.rows.size > MAX_ROWS && body.lastElementChild) {
      const tr = body.lastElementChild;
      state.rows.delete(tr.dataset.taskId);
      tr.remove();
      state.cursor = null;
      state.capped = true;
    }
  }

  function listState() {
    const n = state.rows.size;
    let text = n === 0 ? 'No task matches.' : n + (n === 1 ? ' task shown.' : ' tasks shown.');
    if (state.capped || n >= MAX_ROWS) text += ' At most ' + MAX_ROWS + ' are kept: filter to see older ones.';
    $('list-state').textContent = text;
    $('more').hidden = state.cursor === null || n >= MAX_ROWS;
  }

  async function loadList(reset) {
    const generation = reset ? ++state.loading : state.loading;
    if (reset) {
      state.cursor = null;
      state.capped = false;
      state.held = state.held || [];
    }
    try {
      const page = await getJson('/tasks?' + query());
      if (generation !== state.loading) return;
      if (reset) {
        state.rows.clear();
        $('rows').replaceChildren();
      }
      for (const task of page.tasks) {
        const row = state.rows.get(task.id);
        if (row) {
          if (fresher(row.task, task)) fillRow(row, task);
        } else {
          const fresh = makeRow(task);
          state.rows.set(task.id, fresh);
          $('rows').append(fresh.tr);
        }
      }
      state.cursor = page.nextCursor || null;
      trim();
      say('');
    } catch (e) {
      say('Tasks: ' + e.message);
    }
    if (reset && generation === state.loading) {
      const held = state.held || [];
      state.held = null;
      for (const task of held) upsert(task);
    }
    listState();
  }

  function refreshAges() {
    const now = Date.now();
    for (const { task, tr } of state.rows.values()) {
      tr.children[5].textContent = duration(now - task.createdAt);
    }
  }

  // ---- one task --------------------------------------------------------------------

  function field(list, name, value) {
    list.append(el('dt', null, name));
    list.append(el('dd', null, value === null || value === undefined || value === '' ? '—' : value));
  }

  function showDetail(task) {
    state.detailId = task.id;
    state.detail = task;
    $('detail-id').textContent = task.id;
    const list = $('detail-fields');
    list.replaceChildren();
    field(list, 'Status', task.status + (task.cancelRequested ? ' (cancel requested)' : ''));
    field(list, 'Status message', task.statusMessage);
    field(list, 'Tool', task.tool);
    field(list, 'Owner', task.owner);
    field(list, 'Node', task.node);
    field(list, 'Created', instant(task.createdAt));
    field(list, 'Last updated', instant(task.lastUpdatedAt));
    field(list, 'Duration', duration(task.durationMs));
    field(list, 'Expires', instant(task.expiresAt));
    field(list, 'Revision', task.revision);
    field(list, 'Trace', task.traceId);
    $('detail-json').textContent = JSON.stringify(task, null, 2);
    const cancel = $('detail-cancel');
    cancel.hidden = terminal(task.status);
    cancel.disabled = Boolean(task.cancelRequested);
    const section = $('detail');
    section.hidden = false;
    // For the page's other parts (timeline.js): the detail view shows this task now.
    document.dispatchEvent(new CustomEvent('console:detail', { detail: task }));
  }

  async function openDetail(id, scroll) {
    try {
      const task = await getJson('/tasks/' + encodeURIComponent(id));
      const same = state.detailId === id && !$('detail').hidden;
      if (!same || fresher(state.detail, task)) showDetail(task);
      if (scroll) $('detail').scrollIntoView({ block: 'start' });
    } catch (e) {
      say('Task ' + id + ': ' + e.message);
    }
  }


  async function cancelTask(id) {
    try {
      const task = await postJson('/tasks/' + encodeURIComponent(id) + '/cancel');
      if (state.detailId === id && fresher(state.detail, task)) showDetail(task);
      const row = state.rows.get(id);
      if (row && fresher(row.task, task)) fillRow(row, Object.assign({}, row.task, summaryOf(task)));
      countsSoon();
    } catch (e) {
      say('Cancel ' + id + ': ' + e.message);
      // The controls come back as the task stands.
      const row = state.rows.get(id);
      if (row) fillRow(row, row.task);
      if (state.detailId === id) $('detail-cancel').disabled = false;
    }
  }

  function summaryOf(detail) {
    const keys = ['id', 'owner', 'tool', 'status', 'statusMessage', 'createdAt', 'lastUpdatedAt',
      'durationMs', 'node', 'cancelRequested'];
    const out = {};
    for (const k of keys) out[k] = detail[k];
    return out;
  }

  // ---- charts ----------------------------------------------------------------------

  function drawFinished(box, minutes) {
    const W = 600;
    const H = 220;
    const left = 34;
    const bottom = 24;
    const top = 10;
    const plotH = H - bottom - top;
    const slot = (W - left - 8) / Math.max(minutes.length, 1);
    const max = Math.max(1, ...minutes.map((m) => Math.max(m.created || 0,
      (m.completed || 0) + (m.failed || 0) + (m.cancelled || 0))));
    const chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'svg-chart', role: 'img' });
    chart.append(svg('title', {}, 'Tasks created (line) and finished (bars, stacked by status) per minute over the last 15 minutes'));
    for (const tick of [0, Math.ceil(max / 2), max]) {
      const y = top + plotH - (tick / max) * plotH;
      chart.append(svg('line', { x1: left, x2: W - 4, y1: y, y2: y, class: 'grid' }));
      chart.append(svg('text', { x: left - 4, y: y + 4, class: 'axis end' }, tick));
    }
    minutes.forEach((m, i) => {
      let y = top + plotH;
      const x = left + i * slot + slot * 0.15;
      for (const status of FINISHED) {
        const n = m[status] || 0;
        if (!n) continue;
        const h = (n / max) * plotH;
        y -= h;
        const bar = svg('rect', { x, y, width: slot * 0.7, height: h, class: 'bar status-' + status });
        const extra = status === 'completed' && m.toolErrors ? ' (' + m.toolErrors + ' tool error)' : '';
        bar.append(svg('title', {}, clock(m.start) + ': ' + n + ' ' + status + extra));
        chart.append(bar);
      }
      if (i % 3 === 0 || i === minutes.length - 1) {
        chart.append(svg('text', { x: x + slot * 0.35, y: H - 6, class: 'axis middle' }, clock(m.start)));
      }
    });
    // Tasks created per minute: a line over the bars, a point per minute.
    const created = minutes.map((m, i) => [left + i * slot + slot * 0.5, top + plotH - ((m.created || 0) / max) * plotH]);
    const line = svg('path', {
      d: created.map(([x, y], i) => (i ? 'L' : 'M') + x.toFixed(1) + ' ' + y.toFixed(1)).join(' '),
      class: 'line created',
      id: 'created-line',
      'data-total': minutes.reduce((sum, m) => sum + (m.created || 0), 0),
    });
    if (minutes.length) chart.append(line);
    minutes.forEach((m, i) => {
      const point = svg('circle', { cx: created[i][0], cy: created[i][1], r: 3, class: 'point created' });
      point.append(svg('title', {}, clock(m.start) + ': ' + (m.created || 0) + ' created'));
      chart.append(point);
    });
    const legend = el('ul', 'legend');
    const createdItem = el('li');
    createdItem.append(el('span', 'swatch created'));
    createdItem.append(document.createTextNode('created'));
    legend.append(createdItem);
    for (const status of FINISHED) {
      const item = el('li');
      item.append(el('span', 'swatch status-' + status));
      item.append(document.createTextNode(status));
      legend.append(item);
    }
    // Tool errors (isError results) end `completed`: counted apart, beside it.
    const toolErrors = minutes.reduce((sum, m) => sum + (m.toolErrors || 0), 0);
    const errors = el('li', 'tool-errors', 'tool error (among completed): ' + toolErrors);
    errors.id = 'tool-errors';
    errors.dataset.count = String(toolErrors);
    legend.append(errors);
    box.replaceChildren(chart, legend);
  }

  function drawDurations(box, durations) {
    if (!durations.length) {
      box.replaceChildren(el('p', 'note', 'No task finished in the last 15 minutes.'));
      return;
    }
    const W = 600;
    const row = 54;
    const left = 130;
    const H = durations.length * row + 24;
    const max = Math.max(1, ...durations.map((d) => d.p99Ms || 0));
    const chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'svg-chart', role: 'img' });
    chart.append(svg('title', {}, 'Duration percentiles by tool over the last 15 minutes'));
    durations.forEach((d, i) => {
      const y = 8 + i * row;
      const name = d.tool.length > 18 ? d.tool.slice(0, 17) + '…' : d.tool;
      chart.append(svg('text', { x: left - 8, y: y + 18, class: 'axis end' }, name));
      chart.append(svg('text', { x: left - 8, y: y + 34, class: 'axis end small' }, d.count + (d.count === 1 ? ' task' : ' tasks')));
      ['p50Ms', 'p90Ms', 'p99Ms'].forEach((key, j) => {
        const value = d[key] || 0;
        const w = Math.max(1, (value / max) * (W - left - 90));
        const bar = svg('rect', { x: left, y: y + j * 14, width: w, height: 11, class: 'bar pct-' + j });
        bar.append(svg('title', {}, d.tool + ' ' + key.slice(0, 3) + ': ' + duration(value)));
        chart.append(bar);
        chart.append(svg('text', { x: left + w + 6, y: y + j * 14 + 10, class: 'axis small' },
          key.slice(0, 3) + ' ' + duration(value)));
      });
    });
    const legend = el('ul', 'legend');
    ['p50', 'p90', 'p99'].forEach((label, j) => {
      const item = el('li');
      item.append(el('span', 'swatch pct-' + j));
      item.append(document.createTextNode(label));
      legend.append(item);
    });
    box.replaceChildren(chart, legend);
  }

  // A task that finishes changes the charts: they are read again soon, at most once
  // per ACTIVITY_SOON_MS however many finish.
  const ACTIVITY_SOON_MS = 2000;
  function activitySoon() {
    if (state.activityTimer) return;
    state.activityTimer = setTimeout(() => {
      state.activityTimer = null;
      loadActivity();
    }, ACTIVITY_SOON_MS);
  }

  async function loadActivity() {
    try {
      const activity = await getJson('/activity');
      drawFinished($('chart-finished'), activity.minutes || []);
      drawDurations($('chart-durations'), activity.durations || []);
      const note = $('charts-note');
      note.hidden = !activity.truncated;
      note.textContent = activity.truncated ? 'Too many tasks in the window: the charts show part of them.' : '';
    } catch (e) {
      say('Charts: ' + e.message);
    }
  }

  // ---- live updates ----------------------------------------------------------------

  function connect() {
    const live = $('live');
    const events = new EventSource(API + '/events');
    events.addEventListener('open', () => {
      live.textContent = 'Live';
      live.className = 'live on';
    });
    events.addEventListener('error', () => {
      live.className = 'live off';
      if (events.readyState !== EventSource.CLOSED) {
        live.textContent = 'Reconnecting…';
        return;
      }
      // Refused (too many console pages open, the credential gone, the store out of
      // reach): the browser does not retry such an answer; try again in a while.
      live.textContent = 'Live updates refused (too many console pages open?); retrying in 30 s';
      setTimeout(connect, 30000);
    });
    events.addEventListener('task', (event) => {
      let task;
      try {
        task = JSON.parse(event.data);
      } catch (e) {
        return;
      }
      if (!task || typeof task.id !== 'string') return;
      upsert(task);
      countsSoon();
      if (terminal(task.status)) activitySoon();
      if (state.detailId === task.id && !$('detail').hidden) openDetail(task.id, false);
    });
    events.addEventListener('resync', () => {
      loadList(true);
      countsSoon();
    });
  }

  // ---- wiring ----------------------------------------------------------------------

  // A datetime-local field as milliseconds since the epoch ('' when empty or invalid).
  function fieldMillis(id) {
    const value = $(id).value;
    const ms = value ? new Date(value).getTime() : NaN;
    return Number.isFinite(ms) ? String(ms) : '';
  }

  function readFilters() {
    state.filter = {
      status: $('filter-status').value,
      tool: $('filter-tool').value.trim(),
      owner: $('filter-owner').value.trim(),
      node: $('filter-node').value.trim(),
      text: $('filter-text').value.trim(),
      createdFrom: fieldMillis('filter-from'),
      createdBefore: fieldMillis('filter-before'),
    };
    // For the page's other parts (filters.js: the page's URL, bulk cancel).
    document.dispatchEvent(new CustomEvent('console:filter', { detail: Object.assign({}, state.filter) }));
  }

  function start() {
    const form = $('filters');
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      readFilters();
      loadList(true);
    });
    form.addEventListener('reset', () => {
      // After the form cleared its fields.
      setTimeout(() => {
        readFilters();
        loadList(true);
      }, 0);
    });
    $('filter-status').addEventListener('change', () => {
      readFilters();
      loadList(true);
    });
    $('more').addEventListener('click', () => loadList(false));
    $('rows').addEventListener('click', (event) => {
      const button = event.target.closest('button[data-action]');
      const tr = event.target.closest('tr[data-task-id]');
      if (!button || !tr) return;
      const id = tr.dataset.taskId;
      if (button.dataset.action === 'open') openDetail(id, true);
      if (button.dataset.action === 'cancel' && confirmed(button, 'Click again to cancel')) {
        button.disabled = true;
        cancelTask(id);
      }
    });
    $('detail-cancel').addEventListener('click', () => {
      if (state.detailId && confirmed($('detail-cancel'), 'Click again to cancel')) {
        $('detail-cancel').disabled = true;
        cancelTask(state.detailId);
      }
    });
    $('detail-close').addEventListener('click', () => {
      $('detail').hidden = true;
      state.detailId = null;
      state.detail = null;
      document.dispatchEvent(new CustomEvent('console:detail-closed'));
    });
    // The page's other parts (rerun.js) ask for a task's detail by its id.
    document.addEventListener('console:open', (event) => {
      if (event.detail && event.detail.id) openDetail(String(event.detail.id), true);
    });
    connect();
    // The form may hold a filter already (filters.js put the page URL's into it).
    readFilters();
    loadList(true);
    loadCounts();
    loadActivity();
    setInterval(loadActivity, ACTIVITY_EVERY_MS);
    setInterval(refreshAges, AGE_EVERY_MS);
  }

  start();
})();
