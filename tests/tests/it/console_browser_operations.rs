//! The operator console's acceptance scenario (issue 49), in one headless Chromium
//! session (driven by `chromedriver`, [`mcp_tests::browser`]) over three demo processes
//! on one PostgreSQL schema: an API node `A` (`--role api`, the console on with
//! `MCP_CONSOLE_CREDENTIALS`: an operator and a viewer; two bearer-token owners, alice
//! and bob) and two worker nodes, `W1` and `W2`, all beating every 200 ms. In turn:
//!
//! 1. the timeline of alice's `confirm_delete`, asked on a worker: the question shows,
//!    she answers over MCP (`tasks/update`), and the open view appends the answer and
//!    `completed` without a reload, every row in `seq` order;
//! 2. a filter shared by URL (`?status=working&text=OPS-9`) shows exactly the working
//!    tasks of both owners whose status message holds `ops-9`, and its form says so;
//!    changing the form changes the list and the URL;
//! 3. bulk cancel of that filter: a dry run counts 4 and cancels nothing (the owners
//!    still read them `working`); confirmed, the 4 are cancelled, alice and bob read
//!    their tasks `cancelled` with `tasks/get`, the other tasks stay `working`, the
//!    cancelled rows leave the `working` list;
//! 4. a re-run of a failed `protocol_error_job` (a JSON-RPC error ends it `failed`): a
//!    first click arms, a second makes the new task, which the view opens ("Re-run of"),
//!    its owner reads over MCP, and whose origin says "Re-run as";
//! 5. the viewer's page names a viewer and shows no cancel (rows, detail, bulk), and the
//!    viewer's cancel through the console API is refused (403): the owner still reads
//!    `working`;
//! 6. the nodes table lists the API node (no "Drain") and both workers; while the
//!    workers run tasks, one holding some (its leases name them) is drained from the
//!    page (a first click arms, the second drains): `draining`, then `drained` once its
//!    tasks finished, the other worker still `active`; tasks made after the drain run
//!    too; every task completes (none lost, none failed by the drain);
//! 7. the created/finished chart is drawn, its line counting every task created; a
//!    screenshot is saved as `console-operations.png` in the target's tmp folder.
//!
//! It covers what `console_browser_bulk.rs` and `console_browser_nodes.rs` did, which it
//! replaced; `console_browser.rs`, `console_browser_timeline.rs` and
//! `console_browser_rerun.rs` keep what it does not (paging, a status filter, markup in
//! messages, a task's lines of text, the re-run refused after a question).
//!
//! Skipped (named) without `chromium` and `chromedriver` (`MCP_TEST_CHROMIUM`,
//! `MCP_TEST_CHROMEDRIVER`, else `PATH`) or without PostgreSQL; under `CI=true` or
//! `MCP_REQUIRE_SERVICES=1` a missing one fails the test.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use mcp_tests::browser::Browser;
use mcp_tests::console_page::{
    FINISHED, Owner, answer_question, console_credentials, console_node, console_url, eval,
    follow_rerun_link, load_as, mark_document, open_console, open_detail, owner_sees,
    programs_or_skip, rerun_from_detail, row_in, rpc, same_document, save_screenshot, start_task,
    status_is, timeline_answered_and_completed, until,
};
use mcp_tests::node_harness::{Node, NodeStore, slow};
use mcp_tests::server_harness::task_params;
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const OPERATOR: &str = "operator:operations-browser-pass";
const VIEWER: &str = "watcher:operations-viewer-pass";
const ALICE: Owner = ("alice", "alice-ops-token");
const BOB: Owner = ("bob", "bob-ops-token");
const BEAT: [&str; 2] = ["--heartbeat-ms", "200"];
/// How long the drain's tasks may take to complete.
const FINISH: Duration = Duration::from_secs(40);

/// Waits until the table shows exactly the tasks `ids`.
async fn rows_are(page: &Browser, what: &str, ids: &BTreeSet<String>) {
    let want: Vec<&String> = ids.iter().collect();
    until(
        page,
        what,
        "const ids = Array.from(document.querySelectorAll('#rows tr')) \
           .map((r) => r.dataset.taskId).sort(); \
         return JSON.stringify(ids) === JSON.stringify(arguments[0]);",
        json!([want]),
    )
    .await;
}

/// Submits the page's filter form with `text` in its text field.
async fn filter_text(page: &Browser, text: &str) {
    eval(
        page,
        "document.getElementById('filter-text').value = arguments[0]; \
         document.getElementById('filters').requestSubmit(); return null;",
        json!([text]),
    )
    .await;
}

/// What the row of node `id` shows: `[role, state, tasks held, drain button visible,
/// drain button armed]`, or null without a row.
async fn node_row(page: &Browser, id: &str) -> Value {
    eval(
        page,
        "const r = document.querySelector(`#nodes-rows tr[data-node-id=\"${arguments[0]}\"]`); \
         if (r === null) return null; \
         const f = (n) => r.querySelector(`[data-field=\"${n}\"]`).textContent; \
         const b = r.querySelector('button[data-action=\"drain\"]'); \
         return [f('role'), f('state'), f('held'), !b.hidden, b.dataset.armed === 'true'];",
        json!([id]),
    )
    .await
}

/// Waits until node `id`'s state cell says `state`.
async fn node_state_is(page: &Browser, id: &str, state: &str) {
    until(
        page,
        &format!("node {id} {state}"),
        "const r = document.querySelector(`#nodes-rows tr[data-node-id=\"${arguments[0]}\"]`); \
         return r !== null && r.querySelector('[data-field=\"state\"]').textContent === arguments[1];",
        json!([id, state]),
    )
    .await;
}

/// The console API's cancel of task `id` as the console user `credentials`: its status.
async fn api_cancel_as(console: &str, credentials: &str, id: &str) -> u16 {
    let (name, password) = credentials.split_once(':').expect("name:password");
    let response = reqwest::Client::new()
        .post(format!("{console}/api/tasks/{id}/cancel"))
        .basic_auth(name, Some(password))
        .header("x-console-csrf", "1")
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("the console API");
    response.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_operations_in_one_browser_session() {
    let Some(programs) = programs_or_skip("console operations browser test") else {
        return;
    };
    let Some(store) = NodeStore::postgres("console_browser_operations").await else {
        return;
    };
    let credentials = console_credentials(OPERATOR, Some(VIEWER));
    let mut api = store.args(0).to_vec();
    api.extend(["--role", "api"]);
    api.extend(BEAT);
    let mut w1 = store.args(1).to_vec();
    w1.extend(BEAT);
    let mut w2 = store.args(2).to_vec();
    w2.extend(BEAT);
    let (node, _w1, _w2) = tokio::join!(
        console_node(Path::new(DEMO), "A", &api, &[ALICE, BOB], &credentials),
        Node::start_worker(Path::new(DEMO), "W1", &w1),
        Node::start_worker(Path::new(DEMO), "W2", &w2),
    );
    let url = node.url.as_str();
    let console = console_url(url);
    // Every task made, for the chart.
    let mut created = 0;

    let page = open_console(&programs, OPERATOR, &console).await;
    mark_document(&page).await;

    // 1. The timeline of a task with an answered question.
    let asking = start_task(
        url,
        ALICE.1,
        "confirm_delete",
        json!({ "filename": "ops.txt" }),
    )
    .await;
    created += 1;
    row_in(&page, &asking, &[]).await;
    open_detail(&page, &asking).await;
    until(
        &page,
        "the question in the timeline",
        "return document.getElementById('timeline').dataset.taskId === arguments[0] \
           && [...document.querySelectorAll('#timeline-rows tr[data-type=\"rs.mcp-tasks.input\"] .tl-details')] \
                .some(d => d.textContent.startsWith('Delete ops.txt?'));",
        json!([asking]),
    )
    .await;
    owner_sees(url, ALICE, &asking, status_is("input_required")).await;
    let key = answer_question(url, ALICE, &asking).await;
    timeline_answered_and_completed(&page).await;
    let timeline = eval(
        &page,
        "return [...document.querySelectorAll('#timeline-rows tr')].map(r => \
           [Number(r.dataset.seq), r.dataset.type, r.querySelector('.tl-details').textContent, \
            r.querySelector('.tl-node').textContent, r.querySelector('.tl-actor').textContent]);",
        json!([]),
    )
    .await;
    let timeline = timeline.as_array().cloned().unwrap_or_default();
    let seqs: Vec<u64> = timeline.iter().filter_map(|r| r[0].as_u64()).collect();
    assert_eq!(
        seqs,
        (0..timeline.len() as u64).collect::<Vec<_>>(),
        "{timeline:?}"
    );
    let of = |kind: &str| {
        timeline
            .iter()
            .position(|r| r[1] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {timeline:?}"))
    };
    assert!(
        of("rs.mcp-tasks.input") < of("rs.mcp-tasks.answer"),
        "{timeline:?}"
    );
    let answer = &timeline[of("rs.mcp-tasks.answer")];
    assert!(
        answer[2]
            .as_str()
            .is_some_and(|d| d.contains(&format!("keys: {key}"))),
        "{answer}"
    );
    assert_eq!(answer[4], "owner", "{answer}");
    let question = &timeline[of("rs.mcp-tasks.input")];
    assert!(
        ["W1", "W2"].contains(&question[3].as_str().unwrap_or_default()),
        "asked on a worker: {question}"
    );
    owner_sees(url, ALICE, &asking, status_is("completed")).await;
    same_document(&page, "the timeline").await;

    // 2. A filter shared by URL, of both owners' tasks.
    let mut batch_tasks = Vec::new();
    for (owner, part) in [(ALICE, 1), (BOB, 2), (ALICE, 3), (BOB, 4)] {
        let params = slow(60.0, &format!("ops-9 part {part}"));
        batch_tasks.push((
            owner,
            start_task(url, owner.1, "slow_compute", params).await,
        ));
    }
    let mut other_tasks = Vec::new();
    for (owner, part) in [(ALICE, 1), (BOB, 2)] {
        let params = slow(60.0, &format!("other {part}"));
        other_tasks.push((
            owner,
            start_task(url, owner.1, "slow_compute", params).await,
        ));
    }
    created += 6;
    // Each says its label (run on a worker) before the page loads.
    for (owner, id) in batch_tasks.iter().chain(&other_tasks) {
        owner_sees(url, *owner, id, |t| {
            t["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains("part") || m.contains("other"))
        })
        .await;
    }
    let ids = |tasks: &[(Owner, String)]| -> BTreeSet<String> {
        tasks.iter().map(|(_, id)| id.clone()).collect()
    };
    let (batch, others) = (ids(&batch_tasks), ids(&other_tasks));
    load_as(
        &page,
        OPERATOR,
        &format!("{console}?status=working&text=OPS-9"),
    )
    .await;
    rows_are(&page, "the URL's filter", &batch).await;
    let form = eval(
        &page,
        "return [document.getElementById('filter-status').value, \
                 document.getElementById('filter-text').value, \
                 new URLSearchParams(location.search).get('text'), \
                 document.body.dataset.role || ''];",
        json!([]),
    )
    .await;
    assert_eq!(form, json!(["working", "OPS-9", "OPS-9", "operator"]));
    let owners = eval(
        &page,
        "return [...new Set([...document.querySelectorAll('#rows td.col-owner')].map(c => c.textContent))].sort();",
        json!([]),
    )
    .await;
    assert_eq!(owners, json!([ALICE.0, BOB.0]), "both owners' tasks");
    filter_text(&page, "other").await;
    rows_are(&page, "the form's filter", &others).await;
    until(
        &page,
        "the URL to follow the form",
        "const p = new URLSearchParams(location.search); \
         return p.get('text') === 'other' && p.get('status') === 'working';",
        json!([]),
    )
    .await;
    filter_text(&page, "ops-9").await;
    rows_are(&page, "back to the batch", &batch).await;

    // 3. Bulk cancel of the filter: a dry run first, then the cancel.
    page.click("#bulk-cancel")
        .await
        .expect("cancel all matching");
    until(
        &page,
        "the dry run's count",
        "return document.getElementById('bulk-dialog').open \
           && document.getElementById('bulk-count').dataset.state === 'ready';",
        json!([]),
    )
    .await;
    let asked = eval(
        &page,
        "return [document.getElementById('bulk-dialog').dataset.matched, \
                 document.getElementById('bulk-count').textContent, \
                 document.getElementById('bulk-confirm').textContent];",
        json!([]),
    )
    .await;
    assert_eq!(asked[0], "4", "{asked}");
    assert!(
        asked[1]
            .as_str()
            .is_some_and(|t| t.contains("4 unfinished tasks match")),
        "{asked}"
    );
    assert_eq!(asked[2], "Cancel 4 tasks", "{asked}");
    for (owner, id) in &batch_tasks {
        let reply = rpc(url, owner.1, "tasks/get", task_params(id, true)).await;
        assert_eq!(reply.result()["status"], "working", "{}", reply.text);
    }
    page.click("#bulk-confirm").await.expect("confirm");
    until(
        &page,
        "the bulk cancel's answer",
        "const c = document.getElementById('bulk-count'); \
         return c.dataset.state === 'done' && c.dataset.cancelled === '4';",
        json!([]),
    )
    .await;
    for (owner, id) in &batch_tasks {
        owner_sees(url, *owner, id, status_is("cancelled")).await;
    }
    for (owner, id) in &other_tasks {
        owner_sees(url, *owner, id, status_is("working")).await;
    }
    page.click("#bulk-keep").await.expect("close the dialog");
    rows_are(
        &page,
        "the batch gone from the working list",
        &BTreeSet::new(),
    )
    .await;

    // 4. A re-run of a failed task.
    load_as(&page, OPERATOR, &console).await;
    let failed = start_task(url, ALICE.1, "protocol_error_job", json!({})).await;
    created += 1;
    let ended = owner_sees(url, ALICE, &failed, |t| t["status"] != "working").await;
    assert_eq!(ended["status"], "failed", "{ended}");
    row_in(&page, &failed, &["failed"]).await;
    open_detail(&page, &failed).await;
    let rerun = rerun_from_detail(&page, &failed).await;
    created += 1;
    let again = owner_sees(url, ALICE, &rerun, |t| {
        FINISHED.contains(&t["status"].as_str().unwrap_or_default())
    })
    .await;
    assert_eq!(again["status"], "failed", "the same end: {again}");
    row_in(&page, &rerun, &["failed"]).await;
    follow_rerun_link(&page, &failed, &rerun).await;

    // 5. The viewer: no cancel in the page, and the API refuses one.
    load_as(&page, VIEWER, &format!("{console}?status=working")).await;
    rows_are(&page, "the viewer's list", &others).await;
    let (other_owner, other) = &other_tasks[0];
    open_detail(&page, other).await;
    let shown = until(
        &page,
        "the viewer's role",
        "if (document.body.dataset.role !== 'viewer') return null; \
         const shown = (e) => e !== null && e.getClientRects().length > 0 \
                            && getComputedStyle(e).display !== 'none'; \
         const cancels = Array.from(document.querySelectorAll('[data-action=\"cancel\"]')); \
         return [cancels.length, cancels.filter(shown).length, \
                 shown(document.getElementById('bulk-cancel')), \
                 document.getElementById('whoami').textContent];",
        json!([]),
    )
    .await;
    assert!(
        shown[0].as_u64().is_some_and(|n| n >= 2),
        "rows with controls: {shown}"
    );
    assert_eq!(shown[1], 0, "no cancel shown to a viewer: {shown}");
    assert_eq!(shown[2], false, "no bulk cancel for a viewer: {shown}");
    assert_eq!(shown[3], "watcher (viewer, read only)", "{shown}");
    assert_eq!(api_cancel_as(&console, VIEWER, other).await, 403);
    owner_sees(url, *other_owner, other, status_is("working")).await;
    // Their owners end the others (so that no worker holds a task of a minute).
    for (owner, id) in &other_tasks {
        let reply = rpc(url, owner.1, "tasks/cancel", task_params(id, true)).await;
        assert!(reply.body["error"].is_null(), "{}", reply.text);
        owner_sees(url, *owner, id, status_is("cancelled")).await;
    }

    // 6. Drain a worker while tasks run.
    load_as(&page, OPERATOR, &console).await;
    for worker in ["W1", "W2"] {
        node_state_is(&page, worker, "active").await;
    }
    node_state_is(&page, "A", "active").await;
    assert_eq!(
        node_row(&page, "A").await,
        json!(["api", "active", "0", false, false])
    );
    let mut running = Vec::new();
    for i in 0..6 {
        let owner = if i % 2 == 0 { ALICE } else { BOB };
        let params = slow(4.0, &format!("drain {i}"));
        running.push((
            owner,
            start_task(url, owner.1, "slow_compute", params).await,
        ));
    }
    created += 6;
    // The worker that holds tasks (W1 if both do).
    let drained = until(
        &page,
        "a worker holding tasks",
        "const held = (id) => { \
           const r = document.querySelector(`#nodes-rows tr[data-node-id=\"${id}\"]`); \
           return r === null ? 0 : Number(r.querySelector('[data-field=\"held\"]').textContent); }; \
         return held('W1') > 0 ? 'W1' : held('W2') > 0 ? 'W2' : null;",
        json!([]),
    )
    .await
    .as_str()
    .expect("a worker")
    .to_owned();
    let other_worker = if drained == "W1" { "W2" } else { "W1" };
    let running_ids: Vec<&String> = running.iter().map(|(_, id)| id).collect();
    until(
        &page,
        "the worker's leases",
        "const r = document.querySelector(`#nodes-rows tr[data-node-id=\"${arguments[0]}\"]`); \
         const leases = r.querySelector('[data-field=\"leases\"]').textContent; \
         return arguments[1].some(id => leases.includes(id));",
        json!([drained, running_ids]),
    )
    .await;
    let row = node_row(&page, &drained).await;
    assert_eq!(row[0], "worker", "{row}");
    assert_eq!(row[3], true, "a worker offers Drain: {row}");
    let drain = format!("#nodes-rows tr[data-node-id=\"{drained}\"] button[data-action=\"drain\"]");
    page.click(&drain).await.expect("arm the drain");
    let armed = node_row(&page, &drained).await;
    assert_eq!(armed[1], "active", "{armed}");
    assert_eq!(armed[4], true, "{armed}");
    page.click(&drain).await.expect("drain");
    node_state_is(&page, &drained, "draining").await;
    assert_eq!(
        node_row(&page, &drained).await[3],
        false,
        "no Drain button any more"
    );
    // Tasks made now run too (on the other worker).
    for i in 0..2 {
        let owner = if i % 2 == 0 { BOB } else { ALICE };
        let params = slow(1.0, &format!("after the drain {i}"));
        running.push((
            owner,
            start_task(url, owner.1, "slow_compute", params).await,
        ));
    }
    created += 2;
    // None lost, none failed: each completes, read by its owner.
    let deadline = std::time::Instant::now() + FINISH;
    for (owner, id) in &running {
        loop {
            let reply = rpc(url, owner.1, "tasks/get", task_params(id, true)).await;
            let status = reply.result()["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if status == "completed" {
                break;
            }
            assert_eq!(
                status, "working",
                "{} lost {id} to the drain: {}",
                owner.0, reply.text
            );
            assert!(
                std::time::Instant::now() < deadline,
                "{id} not completed in {FINISH:?}: {}",
                reply.text
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        row_in(&page, id, &["completed"]).await;
    }
    node_state_is(&page, &drained, "drained").await;
    assert_eq!(
        node_row(&page, &drained).await,
        json!(["worker", "drained", "0", false, false])
    );
    node_state_is(&page, other_worker, "active").await;

    // 7. The chart, drawn with every task created.
    until(
        &page,
        "the created/finished chart",
        "const line = document.querySelector('#chart-finished svg path#created-line'); \
         return line !== null && Number(line.dataset.total) === arguments[0] \
           && line.getAttribute('d').startsWith('M') \
           && document.querySelectorAll('#chart-finished svg rect.bar').length >= 1;",
        json!([created]),
    )
    .await;
    save_screenshot(
        &page,
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-operations.png"),
    )
    .await;

    page.quit().await;
    drop(node);
}
