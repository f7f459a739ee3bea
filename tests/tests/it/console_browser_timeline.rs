//! The timeline of a task in the console's page, in a real browser (a headless Chromium
//! driven by `chromedriver`, [`mcp_tests::browser`]) on a demo server process (a SQLite
//! store, the console on with Basic credentials, one bearer-token owner):
//!
//! - `confirm_delete` opened while it waits for its answer: the timeline shows the task
//!   created and the question with its message; the owner answers through MCP
//!   (`tasks/update`) and, without a click or a reload, the answer (its key, by the owner)
//!   and `completed` are appended, every row in `seq` order;
//! - `build_log`'s lines of text appear in the open view as the tool writes them;
//! - a status message and a question holding HTML show as text: no element is made
//!   from them and their `onerror` never runs.
//!
//! Skipped (named) without `chromium` and `chromedriver` (`MCP_TEST_CHROMIUM`,
//! `MCP_TEST_CHROMEDRIVER`, else `PATH`); under `CI=true` or `MCP_REQUIRE_SERVICES=1` a
//! missing one fails the test.

use std::path::Path;

use mcp_tests::browser::Browser;
use mcp_tests::console_page::{
    Owner, answer_question, console_node, console_url, eval, mark_document, open_console,
    open_detail, programs_or_skip, row_in, same_document, save_screenshot, start_task,
    timeline_answered_and_completed, until,
};
use mcp_tests::node_harness::TempDb;
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const CREDENTIALS: &str = "operator:timeline-test-password";
const OWNER: Owner = ("alice", "alice-token");
/// Markup that would run script if the page ever parsed it as HTML.
const PAYLOAD: &str = r#"<img src=x onerror="window.__pwned=1">"#;

/// Starts `tool` with `arguments` as a task of the owner; its id.
async fn task(url: &str, tool: &str, arguments: Value) -> String {
    start_task(url, OWNER.1, tool, arguments).await
}

/// Waits until the task's row is in the table, then opens its detail view and waits for
/// it (and the first timeline row) to show.
async fn open(page: &Browser, id: &str) {
    row_in(page, id, &[]).await;
    open_detail(page, id).await;
    until(
        page,
        &format!("the timeline of {id}"),
        "return document.getElementById('timeline').dataset.taskId === arguments[0] \
           && document.querySelector('#timeline-rows tr[data-seq=\"0\"]') !== null;",
        json!([id]),
    )
    .await;
}

/// The timeline's rows as `[seq, type, event, details, node, actor]`.
async fn rows(page: &Browser) -> Vec<Value> {
    let got = eval(
        page,
        "return [...document.querySelectorAll('#timeline-rows tr')].map(r => \
               [Number(r.dataset.seq), r.dataset.type, r.querySelector('.tl-kind').textContent, \
                r.querySelector('.tl-details').textContent, r.querySelector('.tl-node').textContent, \
                r.querySelector('.tl-actor').textContent]);",
        json!([]),
    )
    .await;
    got.as_array().cloned().unwrap_or_default()
}

/// Waits until a timeline row of `kind` shows.
async fn row_of(page: &Browser, kind: &str) {
    until(
        page,
        &format!("a timeline row of {kind}"),
        "return document.querySelector(`#timeline-rows tr[data-type=\"${arguments[0]}\"]`) !== null;",
        json!([kind]),
    )
    .await;
}

/// Nothing was made from the HTML and its script never ran.
async fn no_html_ran(page: &Browser) {
    let got = eval(
        page,
        "return [document.querySelectorAll('img, #timeline-rows b').length, typeof window.__pwned];",
        json!([]),
    )
    .await;
    assert_eq!(got, json!([0, "undefined"]), "HTML was parsed: {got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_in_a_browser() {
    let Some(programs) = programs_or_skip("console timeline browser test") else {
        return;
    };
    let db = TempDb::new("console_timeline");
    let store = db.store();
    let args = ["--store", store.as_str()];
    let node = console_node(Path::new(DEMO), "T1", &args, &[OWNER], CREDENTIALS).await;

    let page = open_console(&programs, CREDENTIALS, &console_url(&node.url)).await;
    mark_document(&page).await;

    // A question, opened while it waits; its message holds HTML.
    let asking = task(&node.url, "confirm_delete", json!({ "filename": PAYLOAD })).await;
    open(&page, &asking).await;
    row_of(&page, "rs.mcp-tasks.input").await;
    let before = rows(&page).await;
    let question = before
        .iter()
        .find(|r| r[1] == "rs.mcp-tasks.input")
        .expect("the question's row");
    assert_eq!(question[2], "input asked", "{question}");
    assert!(
        question[3]
            .as_str()
            .is_some_and(|d| d.starts_with(&format!("Delete {PAYLOAD}?"))),
        "the question's message as text: {question}"
    );
    assert_eq!(before[0][1], "rs.mcp-tasks.status", "{before:?}");
    assert_eq!(before[0][2], "status: working");
    assert_eq!(before[0][4], "T1", "{before:?}");
    assert_eq!(before[0][5], "owner");
    no_html_ran(&page).await;

    // The owner answers through MCP: the open view appends the rest by itself.
    let key = answer_question(&node.url, OWNER, &asking).await;
    timeline_answered_and_completed(&page).await;
    let after = rows(&page).await;
    let seqs: Vec<u64> = after.iter().map(|r| r[0].as_u64().expect("seq")).collect();
    assert_eq!(
        seqs,
        (0..after.len() as u64).collect::<Vec<_>>(),
        "{after:?}"
    );
    let kinds: Vec<&str> = after.iter().map(|r| r[1].as_str().expect("type")).collect();
    let at = |kind: &str| kinds.iter().position(|k| *k == kind).expect(kind);
    assert!(
        at("rs.mcp-tasks.input") < at("rs.mcp-tasks.answer"),
        "{kinds:?}"
    );
    let answer = &after[at("rs.mcp-tasks.answer")];
    assert_eq!(answer[2], "answered");
    assert!(
        answer[3]
            .as_str()
            .is_some_and(|d| d.contains(&format!("keys: {key}"))),
        "{answer}"
    );
    assert_eq!(answer[5], "owner");

    // A status message holding HTML, and lines of text appended live.
    let xss = task(
        &node.url,
        "slow_compute",
        json!({ "seconds": 60, "label": PAYLOAD }),
    )
    .await;
    open(&page, &xss).await;
    until(
        &page,
        "the status message as text",
        "return [...document.querySelectorAll('#timeline-rows .tl-details')] \
           .some(d => d.textContent.startsWith(arguments[0]));",
        json!([PAYLOAD]),
    )
    .await;
    no_html_ran(&page).await;
    let build = task(
        &node.url,
        "build_log",
        json!({ "steps": 4, "interval_ms": 400 }),
    )
    .await;
    open(&page, &build).await;
    until(
        &page,
        "four lines of text, then completed",
        "const rows = [...document.querySelectorAll('#timeline-rows tr')]; \
         const lines = rows.filter(r => r.dataset.type === 'rs.mcp-tasks.text') \
           .map(r => r.querySelector('.tl-details').textContent); \
         return lines.length === 4 && lines[3] === '[4/4] Compiling demo-unit-4 ... ok' \
           && rows[rows.length - 1].querySelector('.tl-kind').textContent === 'status: completed';",
        json!([]),
    )
    .await;
    same_document(&page, "the timeline").await;
    no_html_ran(&page).await;

    save_screenshot(
        &page,
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-timeline.png"),
    )
    .await;

    page.quit().await;
    drop(node);
}
