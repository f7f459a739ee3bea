// The nodes of the store (GET /console/api/nodes): every API and worker node with its
// role, state, start, last heartbeat and the tasks it holds, refreshed every few
// seconds. A worker node's "Drain" button arms on the first click; a second click within
// a few seconds asks it to drain (POST /console/api/nodes/{id}/drain): it claims no new
// task, finishes those it holds, then says drained.
//
// Beside console.js, whose helpers it uses (window.Console: requests, the two-click
// confirmation, the page's message line): it owns the Nodes section of the page
// (#nodes-*) and writes the message line on a failed drain. Everything from the store
// is written with textContent, never parsed as HTML.
'use strict';

(function () {
  // console.js's helpers (loaded before this script).
  const { $, say, getJson, postJson, confirmed, disarm } = window.Console;
  const EVERY_MS = 2000;
  const LEASES_SHOWN = 5;

  // The rows shown, by node id.
  const rows = new Map();

  function ago(ms) {
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (s < 60) return s + ' s ago';
    if (s < 3600) return Math.floor(s / 60) + ' min ago';
    return Math.floor(s / 3600) + ' h ago';
  }

  function cell(row, field) {
    return row.querySelector('[data-field="' + field + '"]');
  }

  async function drain(id, button) {
    if (!confirmed(button, 'Click again to drain')) return;
    button.disabled = true;
    try {
      const node = await postJson('/nodes/' + encodeURIComponent(id) + '/drain');
      fill(rows.get(id) || makeRow(node), node);
    } catch (e) {
      say('Drain ' + id + ': ' + e.message);
      button.disabled = false;
    }
  }

  function makeRow(node) {
    const row = document.createElement('tr');
    row.dataset.nodeId = node.id;
    for (const field of ['id', 'role', 'state', 'started', 'heartbeat', 'held', 'leases']) {
      const td = document.createElement(field === 'id' ? 'th' : 'td');
      if (field === 'id') td.scope = 'row';
      td.dataset.field = field;
      row.append(td);
    }
    const actions = document.createElement('td');
    const button = document.createElement('button');
    button.type = 'button';
    button.dataset.action = 'drain';
    button.textContent = 'Drain';
    button.addEventListener('click', () => drain(node.id, button));
    actions.append(button);
    row.append(actions);
    rows.set(node.id, row);
    return row;
  }

  function fill(row, node) {
    cell(row, 'id').textContent = node.id;
    cell(row, 'role').textContent = node.role;
    const state = cell(row, 'state');
    state.textContent = node.state;
    state.className = 'node-state node-' + node.state;
    cell(row, 'started').textContent = new Date(node.startedAt).toLocaleString();
    const beat = cell(row, 'heartbeat');
    beat.textContent = ago(node.heartbeatAt);
    beat.title = new Date(node.heartbeatAt).toISOString();
    cell(row, 'held').textContent = String(node.tasksHeld);
    const leases = Array.isArray(node.leases) ? node.leases : [];
    const shown = leases.slice(0, LEASES_SHOWN).join(', ');
    const more = node.tasksHeld - Math.min(leases.length, LEASES_SHOWN);
    cell(row, 'leases').textContent = more > 0 ? shown + ' (+' + more + ' more)' : shown;
    const button = row.querySelector('button[data-action="drain"]');
    button.hidden = node.role === 'api' || node.drainRequested === true;
    if (button.hidden) disarm(button);
    else if (button.dataset.armed !== 'true') button.disabled = false;
  }

  function render(nodes) {
    const body = $('nodes-rows');
    const seen = new Set();
    const ordered = [];
    for (const node of nodes) {
      seen.add(node.id);
      const row = rows.get(node.id) || makeRow(node);
      fill(row, node);
      ordered.push(row);
    }
    for (const id of Array.from(rows.keys())) {
      if (!seen.has(id)) rows.delete(id);
    }
    body.replaceChildren(...ordered);
    const state = $('nodes-state');
    state.textContent = nodes.length ? '' : 'No node has registered with the store.';
    state.hidden = !state.textContent;
  }

  async function load() {
    try {
      render(await getJson('/nodes'));
    } catch (e) {
      const state = $('nodes-state');
      state.textContent = 'Nodes: ' + e.message;
      state.hidden = false;
    }
  }

  function start() {
    if (!$('nodes-rows')) return;
    load();
    setInterval(load, EVERY_MS);
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();
