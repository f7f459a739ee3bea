//! Re-run from the console's page, and the created/finished chart, in a real browser (a
//! headless Chromium driven by `chromedriver`, [`mcp_tests::browser`]) on a demo server
//! process (a SQLite store, the console on with Basic credentials, one bearer-token
//! owner):
//!
//! - a finished `failing_job` task's detail view offers "Re-run"; a first click arms it
//!   and makes nothing, a second one re-runs it and the view opens the new task, which
//!   says "Re-run of" the old one; its owner reads it through MCP; its row comes into the
//!   table; the link opens the old task, which says "Re-run as" the new one;
//! - a `confirm_delete` task (it asked for input), cancelled from its view, offers no
//!   "Re-run" and says why;
//! - the chart of tasks created and finished per minute is drawn: its bars and the line
//!   of tasks created (counting every task made).
//!
//! Skipped (named) without `chromium` and `chromedriver` (`MCP_TEST_CHROMIUM`,
//! `MCP_TEST_CHROMEDRIVER`, else `PATH`); under `CI=true` or `MCP_REQUIRE_SERVICES=1` a
//! missing one fails the test.

use std::path::Path;

use mcp_tests::browser::Browser;
use mcp_tests::console_page::{
    FINISHED, Owner, console_node, console_url, eval, follow_rerun_link, open_console, open_detail,
    programs_or_skip, rerun_from_detail, row_in, rpc, save_screenshot, start_task, until,
};
use mcp_tests::node_harness::TempDb;
use mcp_tests::server_harness::task_params;
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const CREDENTIALS: &str = "operator:rerun-test-password";
const OWNER: Owner = ("alice", "alice-token");

/// Starts `tool` with `arguments` as a task of the owner; its id.
async fn task(url: &str, tool: &str, arguments: Value) -> String {
    start_task(url, OWNER.1, tool, arguments).await
}

/// The text of the detail view's re-run links.
async fn links(page: &Browser) -> String {
    eval(
        page,
        "return document.getElementById('detail-rerun-links').textContent;",
        json!([]),
    )
    .await
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerun_from_the_page() {
    let Some(programs) = programs_or_skip("console re-run browser test") else {
        return;
    };
    let db = TempDb::new("console_rerun");
    let store = db.store();
    let args = ["--store", store.as_str()];
    let node = console_node(Path::new(DEMO), "R1", &args, &[OWNER], CREDENTIALS).await;
    let page = open_console(&programs, CREDENTIALS, &console_url(&node.url)).await;

    // A finished failing_job: its view offers a re-run.
    let old = task(&node.url, "failing_job", json!({})).await;
    row_in(&page, &old, &FINISHED).await;
    open_detail(&page, &old).await;
    let new = rerun_from_detail(&page, &old).await;
    assert_ne!(new, old);
    assert_eq!(links(&page).await, format!("Re-run of {old}"));
    // Its owner reads it through MCP.
    let reply = rpc(&node.url, OWNER.1, "tasks/get", task_params(&new, true)).await;
    assert!(
        ["working", "completed", "failed"]
            .contains(&reply.result()["status"].as_str().unwrap_or_default()),
        "{}",
        reply.text
    );
    row_in(&page, &new, &FINISHED).await;
    // The link opens the old task, which names its re-run.
    follow_rerun_link(&page, &old, &new).await;

    // A task that asked for input, cancelled from its view: no re-run, and why.
    let asking = task(&node.url, "confirm_delete", json!({ "filename": "f" })).await;
    row_in(&page, &asking, &["input_required"]).await;
    open_detail(&page, &asking).await;
    let hidden = eval(
        &page,
        "return document.getElementById('detail-rerun').hidden;",
        json!([]),
    )
    .await;
    assert_eq!(hidden, json!(true), "no re-run of a task that waits");
    page.click("#detail-cancel").await.expect("arm the cancel");
    page.click("#detail-cancel").await.expect("cancel");
    until(
        &page,
        "the cancelled task's note",
        "return document.getElementById('detail-rerun').hidden \
           && document.getElementById('detail-rerun-note').textContent.includes('asked for input');",
        json!([]),
    )
    .await;

    // The chart of tasks created and finished: bars, and the line of the three created.
    until(
        &page,
        "the created/finished chart",
        "const line = document.querySelector('#chart-finished svg path#created-line'); \
         return line !== null && Number(line.dataset.total) === 3 \
           && line.getAttribute('d').startsWith('M') \
           && document.querySelectorAll('#chart-finished svg rect.bar').length >= 1 \
           && document.querySelectorAll('#chart-finished svg circle.point.created').length === 15;",
        json!([]),
    )
    .await;

    save_screenshot(
        &page,
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-rerun.png"),
    )
    .await;

    page.quit().await;
    drop(node);
}
