// The timeline of the task the detail view shows: its log, read from
// GET /console/api/tasks/{id}/history, one row per entry in seq order (time, what
// happened, its details, the node that wrote it, who acted). While the view is open,
// every change console.js hears about the task (its `console:detail` event, sent each
// time the view is drawn) reads the entries after the last one shown and appends them.
//
// Everything from the log (status messages, questions, lines of text, node names) is
// written with textContent, never parsed as HTML.
'use strict';

(function () {
  // console.js's helpers (loaded before this script).
  const { $, el, getJson } = window.Console;
  // The API's largest page.
  const PAGE = 1000;
  // At most this many pages are read at once (a log longer than that is read on the
  // next change).
  const MAX_PAGES = 20;
  const PREFIX = 'rs.mcp-tasks.';
  // While an unfinished task is shown, its log is also read this often: a change whose
  // event was missed (the event stream reconnected or resynced) shows all the same.
  const EVERY_MS = 15000;
  const FINISHED = ['completed', 'failed', 'cancelled'];

  const state = {
    id: null, // the task shown
    status: null, // its status when the view was last drawn
    last: null, // the seq of the last row shown
    generation: 0, // bumped when another task is shown; older replies are dropped
    reading: false,
    again: false, // a change came while reading: read once more after
  };

  function note(text) {
    const box = $('timeline-state');
    box.textContent = text || '';
    box.hidden = !text;
  }

  // What an entry says: [label, details].
  function describe(entry) {
    const p = entry.payload || {};
    const kind = typeof entry.type === 'string' ? entry.type : '';
    switch (kind) {
      case PREFIX + 'status': {
        const parts = [];
        if (typeof p.statusMessage === 'string') parts.push(p.statusMessage);
        if (p.isError === true) parts.push('tool error');
        if (p.error && typeof p.error.message === 'string') parts.push('error: ' + p.error.message);
        return ['status: ' + p.status, parts.join(' · ')];
      }
      case PREFIX + 'input': {
        const asked = [];
        for (const [key, request] of Object.entries(p.inputRequests || {})) {
          const params = (request && request.params) || {};
          const what = typeof params.message === 'string' ? params.message
            : (request && typeof request.method === 'string' ? request.method : '');
          asked.push(what + ' [' + key + ']');
        }
        return ['input asked', asked.join(' · ')];
      }
      case PREFIX + 'answer': {
        const keys = Array.isArray(p.keys) ? p.keys.join(', ') : '';
        return ['answered', 'keys: ' + keys + (p.status ? ' → ' + p.status : '')];
      }
      case PREFIX + 'cancel':
        return ['cancel asked', p.status === 'cancelled' ? 'cancelled at once (no worker had it)' : ''];
      case PREFIX + 'claim':
        return ['claimed', 'attempt ' + p.attempt + ' by ' + p.holder];
      case PREFIX + 'requeue':
        return ['requeued', 'attempt ' + p.attempt + ' lost with its worker'];
      case PREFIX + 'rerun':
        return ['re-run', 'of task ' + p.rerunOf];
      case PREFIX + 'text':
        return ['text', typeof p.text === 'string' ? p.text : ''];
      default:
        return [kind, JSON.stringify(p)];
    }
  }

  function row(entry) {
    const tr = document.createElement('tr');
    tr.dataset.seq = String(entry.seq);
    tr.dataset.type = String(entry.type);
    const [label, details] = describe(entry);
    const time = el('td', 'tl-time', entry.time || new Date(entry.at).toISOString());
    tr.append(el('td', 'tl-seq', entry.seq));
    tr.append(time);
    tr.append(el('td', 'tl-kind', label));
    tr.append(el('td', 'tl-details', details));
    tr.append(el('td', 'tl-node', entry.node || ''));
    tr.append(el('td', 'tl-actor', entry.actor || ''));
    return tr;
  }

  async function page(id, after) {
    const params = new URLSearchParams({ limit: String(PAGE) });
    if (after !== null) params.set('after', String(after));
    return getJson('/tasks/' + encodeURIComponent(id) + '/history?' + params);
  }

  // Reads the entries after the last one shown (all of them for a new task) and appends
  // them; one read at a time, once more if a change came meanwhile.
  async function read() {
    if (state.reading) {
      state.again = true;
      return;
    }
    state.reading = true;
    const generation = state.generation;
    const id = state.id;
    try {
      for (let i = 0; i < MAX_PAGES; i++) {
        const reply = await page(id, state.last);
        if (generation !== state.generation) return;
        const body = $('timeline-rows');
        if (state.last === null && reply.truncated) {
          note('Older entries were dropped by the log\u2019s retention: it starts at entry ' + reply.earliestSeq + '.');
        } else if (state.last !== null && reply.earliestSeq > state.last + 1) {
          note('Entries ' + (state.last + 1) + ' to ' + (reply.earliestSeq - 1) + ' were dropped by the log\u2019s retention before they were shown.');
        } else if (state.last === null) {
          note('');
        }
        for (const entry of reply.entries || []) {
          if (state.last !== null && entry.seq <= state.last) continue;
          body.append(row(entry));
          state.last = entry.seq;
        }
        const entries = reply.entries || [];
        const more = entries.length === PAGE && state.last !== null && state.last + 1 < reply.nextSeq;
        if (!more) break;
      }
      $('timeline').dataset.lastSeq = state.last === null ? '' : String(state.last);
      if (!$('timeline-rows').firstChild) note('No entries.');
    } catch (e) {
      if (generation === state.generation) note('Timeline: ' + e.message);
    } finally {
      if (generation === state.generation) {
        state.reading = false;
        if (state.again) {
          state.again = false;
          read();
        }
      }
    }
  }

  function show(task) {
    if (!task || typeof task.id !== 'string') return;
    state.status = task.status;
    if (task.id !== state.id) {
      state.generation++;
      state.id = task.id;
      state.last = null;
      state.reading = false;
      state.again = false;
      $('timeline-rows').replaceChildren();
      $('timeline').dataset.taskId = task.id;
      $('timeline').dataset.lastSeq = '';
      note('Loading…');
    }
    read();
  }

  function close() {
    state.generation++;
    state.id = null;
    state.last = null;
    state.reading = false;
    state.again = false;
  }

  document.addEventListener('console:detail', (event) => show(event.detail));
  setInterval(() => {
    if (state.id !== null && !$('detail').hidden && !FINISHED.includes(state.status)) read();
  }, EVERY_MS);
  document.addEventListener('console:detail-closed', close);
})();
