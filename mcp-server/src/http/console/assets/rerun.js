// Re-run of a finished task, from its detail view: the "Re-run" button shows when the
// task's view says it may be re-run (`rerunnable`), the reason when it may not; a click
// arms it, a second one within a few seconds asks for the re-run
// (POST /console/api/tasks/{id}/rerun) and opens the new task. The links between a task
// and its re-runs (`rerunOf`, `rerunAs`) are shown as buttons that open the other task.
//
// Hooks into console.js, whose helpers it uses (window.Console): the `console:detail` event (the detail view shows a task) and
// `console:open` (asks console.js to open a task's detail). Everything from users is
// written with textContent, never parsed as HTML.
'use strict';

(function () {
  // console.js's helpers (loaded before this script).
  const { $, say, getJson, postJson, confirmed, disarm } = window.Console;
  const FINISHED = ['completed', 'failed', 'cancelled'];

  // The id of the task the detail view shows, and the generation of the last look-up.
  let shownId = null;
  let generation = 0;

  function open(id) {
    document.dispatchEvent(new CustomEvent('console:open', { detail: { id } }));
  }

  function linkTo(id) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'link';
    button.dataset.taskId = id;
    button.textContent = id;
    button.addEventListener('click', () => open(id));
    return button;
  }

  // Shows what `task` (a task view with its re-run fields) says about re-runs.
  function show(task) {
    const button = $('detail-rerun');
    const note = $('detail-rerun-note');
    const links = $('detail-rerun-links');
    if (!button || !note || !links) return;
    disarm(button);
    button.disabled = false;
    const finished = FINISHED.includes(task.status);
    button.hidden = !(finished && task.rerunnable === true);
    note.textContent = finished && task.rerunnable === false && task.rerunRefused
      ? 'Re-run not offered: ' + task.rerunRefused
      : '';
    note.hidden = !note.textContent;
    links.replaceChildren();
    if (task.rerunOf) {
      links.append(document.createTextNode('Re-run of '), linkTo(task.rerunOf));
    }
    const reruns = Array.isArray(task.rerunAs) ? task.rerunAs : [];
    if (reruns.length) {
      if (links.childNodes.length) links.append(document.createTextNode(' · '));
      links.append(document.createTextNode('Re-run as '));
      reruns.forEach((id, i) => {
        if (i) links.append(document.createTextNode(', '));
        links.append(linkTo(id));
      });
    }
    links.hidden = !links.childNodes.length;
  }

  // The detail view shows `task`: a view without the re-run fields (e.g. the answer to a
  // cancel) is completed by reading the task's view.
  async function onDetail(task) {
    shownId = task.id;
    const mine = ++generation;
    if (task.rerunnable !== undefined) {
      show(task);
      return;
    }
    show(Object.assign({}, task, { rerunnable: false, rerunRefused: null }));
    if (!FINISHED.includes(task.status)) return;
    try {
      const full = await getJson('/tasks/' + encodeURIComponent(task.id));
      if (mine === generation && shownId === task.id) show(full);
    } catch (e) {
      // The button stays hidden; the detail view says what it knows.
    }
  }

  async function rerun(id) {
    const button = $('detail-rerun');
    button.disabled = true;
    try {
      const body = await postJson('/tasks/' + encodeURIComponent(id) + '/rerun');
      say('');
      open(body.taskId);
    } catch (e) {
      say('Re-run ' + id + ': ' + e.message);
      button.disabled = false;
      disarm(button);
    }
  }

  function start() {
    const button = $('detail-rerun');
    if (!button) return;
    document.addEventListener('console:detail', (event) => onDetail(event.detail || {}));
    document.addEventListener('console:detail-closed', () => {
      shownId = null;
      generation += 1;
    });
    button.addEventListener('click', () => {
      if (!shownId || button.disabled) return;
      if (confirmed(button, 'Click again to re-run')) rerun(shownId);
    });
  }

  start();
})();
