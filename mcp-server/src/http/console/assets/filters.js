// The task list's filter in the page's URL, bulk cancel of what it matches, and what a
// viewer is not offered. Loaded before console.js, so that a shared URL's filter
// (/console?status=working&text=copy) is in the form when console.js first reads it;
// console.js then says every filter it applies ('console:filter'), and the URL follows
// it (history.replaceState). Plain script; everything from users is written with
// textContent. console.js's helpers (window.Console: requests with the CSRF header,
// text-only elements) are used once the page has loaded, console.js having run then.
'use strict';

(function () {
  // The URL's parameters are the API's, each with its form field.
  const FIELDS = {
    status: 'filter-status',
    tool: 'filter-tool',
    owner: 'filter-owner',
    node: 'filter-node',
    text: 'filter-text',
    createdFrom: 'filter-from',
    createdBefore: 'filter-before',
  };
  const TIMES = ['createdFrom', 'createdBefore'];

  const $ = (id) => document.getElementById(id);

  // The filter the list shows now (console.js says it).
  let applied = {};

  // console.js's helpers: loaded after this script, there by the time the page has
  // loaded (every use is in a handler or after DOMContentLoaded).
  const shared = () => window.Console;

  // Milliseconds since the epoch as a datetime-local value (local time, to the second).
  function localField(ms) {
    const d = new Date(ms);
    if (!Number.isFinite(d.getTime())) return '';
    const two = (n) => String(n).padStart(2, '0');
    return String(d.getFullYear()).padStart(4, '0') + '-' + two(d.getMonth() + 1) + '-'
      + two(d.getDate()) + 'T' + two(d.getHours()) + ':' + two(d.getMinutes()) + ':'
      + two(d.getSeconds());
  }

  // ---- the filter in the URL -------------------------------------------------------

  function fromUrl() {
    const params = new URLSearchParams(window.location.search);
    for (const [name, id] of Object.entries(FIELDS)) {
      const value = params.get(name);
      const field = $(id);
      if (value === null || !field) continue;
      if (TIMES.includes(name)) {
        field.value = /^-?[0-9]+$/.test(value) ? localField(Number(value)) : '';
      } else if (field.tagName === 'SELECT') {
        if (Array.from(field.options).some((o) => o.value === value)) field.value = value;
      } else {
        field.value = value;
      }
    }
  }

  function toUrl(filter) {
    const params = new URLSearchParams();
    for (const name of Object.keys(FIELDS)) if (filter[name]) params.set(name, filter[name]);
    const search = params.toString();
    const url = window.location.pathname + (search ? '?' + search : '') + window.location.hash;
    const now = window.location.pathname + window.location.search + window.location.hash;
    if (url !== now) history.replaceState(history.state, '', url);
  }

  document.addEventListener('console:filter', (event) => {
    applied = Object.assign({}, event.detail || {});
    toUrl(applied);
  });

  // ---- who is using the page -------------------------------------------------------

  // A viewer may only read: the page leaves out what changes state (console.css hides
  // it under body[data-role="viewer"]; the server refuses it anyway).
  async function loadRole() {
    try {
      const me = await shared().getJson('/me');
      const role = me && typeof me.role === 'string' ? me.role : '';
      document.body.dataset.role = role;
      const top = document.querySelector('header.top');
      if (top && me && typeof me.name === 'string') {
        const who = shared().el('p', 'whoami', me.name + ' (' + role + (role === 'viewer' ? ', read only' : '') + ')');
        who.id = 'whoami';
        top.append(who);
      }
    } catch (e) {
      // The page stays as it is; the server decides anyway.
    }
  }

  // ---- bulk cancel ------------------------------------------------------------------

  function describe(filter) {
    const parts = [];
    for (const name of Object.keys(FIELDS)) {
      if (!filter[name]) continue;
      const value = TIMES.includes(name) ? new Date(Number(filter[name])).toISOString() : filter[name];
      parts.push(name + ' = ' + value);
    }
    return parts.length ? parts.join(', ') : 'no filter: every task';
  }

  function bulk(filter, dryRun) {
    return shared().postJson('/tasks/cancel', { filter, dryRun });
  }

  function dialogText(text, state) {
    const count = $('bulk-count');
    count.textContent = text;
    count.dataset.state = state;
    $('bulk-keep').textContent = state === 'ready' ? 'Keep them' : 'Close';
  }

  async function askBulk() {
    const dialog = $('bulk-dialog');
    const confirm = $('bulk-confirm');
    const filter = {};
    for (const name of Object.keys(FIELDS)) if (applied[name]) filter[name] = applied[name];
    confirm.hidden = true;
    confirm.disabled = true;
    dialog.dataset.filter = JSON.stringify(filter);
    dialogText('Counting the unfinished tasks that match (' + describe(filter) + ')…', 'counting');
    if (!dialog.open) dialog.showModal();
    try {
      const dry = await bulk(filter, true);
      const n = dry.matched;
      dialog.dataset.matched = String(n);
      if (dry.overMax) {
        dialogText('More than ' + dry.max + ' unfinished tasks match (' + describe(filter)
          + '). One bulk cancel cancels at most ' + dry.max + ': narrow the filter.', 'over');
      } else if (n === 0) {
        dialogText('No unfinished task matches (' + describe(filter) + ').', 'none');
      } else {
        dialogText(n + (n === 1 ? ' unfinished task matches' : ' unfinished tasks match')
          + ' (' + describe(filter) + '). Cancel ' + (n === 1 ? 'it' : 'them all') + '?', 'ready');
        confirm.textContent = 'Cancel ' + n + (n === 1 ? ' task' : ' tasks');
        confirm.hidden = false;
        confirm.disabled = false;
      }
    } catch (e) {
      dialogText('Counting failed: ' + e.message, 'error');
    }
  }

  async function runBulk() {
    const dialog = $('bulk-dialog');
    const confirm = $('bulk-confirm');
    confirm.disabled = true;
    let filter = {};
    try {
      filter = JSON.parse(dialog.dataset.filter || '{}');
    } catch (e) {
      filter = {};
    }
    dialogText('Cancelling…', 'cancelling');
    try {
      const done = await bulk(filter, false);
      confirm.hidden = true;
      const failed = Array.isArray(done.failed) ? done.failed.length : 0;
      const count = $('bulk-count');
      dialogText('Cancelled ' + done.cancelled + ' of ' + done.matched + ' (already finished: '
        + done.alreadyTerminal + ', failed: ' + failed + ').', 'done');
      count.dataset.cancelled = String(done.cancelled);
      if (failed) {
        const list = shared().el('ul', 'bulk-failed');
        for (const f of done.failed) list.append(shared().el('li', null, f.taskId + ': ' + f.error));
        count.append(list);
      }
    } catch (e) {
      dialogText('Bulk cancel failed: ' + e.message, 'error');
      confirm.hidden = true;
    }
  }

  function start() {
    fromUrl();
    const open = $('bulk-cancel');
    if (open) open.addEventListener('click', askBulk);
    const confirm = $('bulk-confirm');
    if (confirm) confirm.addEventListener('click', runBulk);
    const keep = $('bulk-keep');
    if (keep) keep.addEventListener('click', () => $('bulk-dialog').close());
    // console.js (deferred, after this script) has run by DOMContentLoaded.
    if (shared()) loadRole();
    else document.addEventListener('DOMContentLoaded', loadRole);
  }

  start();
})();
