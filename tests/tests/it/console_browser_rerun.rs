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
use std::time::Duration;

use base64::Engine as _;
use mcp_tasks::conformance::report_skip;
use mcp_tests::browser::{self, Browser};
use mcp_tests::node_harness::{Node, TempDb, post_request};
use mcp_tests::server_harness::{Reply, call_params, request, task_params};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const CREDENTIALS: &str = "operator:rerun-test-password";
const OWNER: (&str, &str) = ("alice", "alice-token");
/// How long the page may take to show a change.
const SHOWN: Duration = Duration::from_secs(15);

fn required() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
        || std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1")
}

/// An MCP 2026-07-28 request to `url` as the owner.
async fn rpc(url: &str, method: &str, params: Value) -> Reply {
    static NEXT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let client = reqwest::Client::new();
    post_request(
        &client,
        url,
        Some(OWNER.1),
        method,
        request(id, method, params),
    )
    .await
}

/// Starts `tool` with `arguments` as a task of the owner; its id.
async fn task(url: &str, tool: &str, arguments: Value) -> String {
    let reply = rpc(url, "tools/call", call_params(tool, arguments, true)).await;
    let result = reply.result();
    assert_eq!(result["resultType"], "task", "{}", reply.text);
    result["taskId"].as_str().expect("taskId").to_owned()
}

/// Waits until `script` (given `args`) returns true.
async fn until(page: &Browser, what: &str, script: &str, args: Value) {
    page.wait_for(what, SHOWN, script, args)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Waits until the row of task `id` is in the table with a status among `statuses`.
async fn row_in(page: &Browser, id: &str, statuses: &[&str]) {
    until(
        page,
        &format!("row {id} {statuses:?}"),
        "const r = document.querySelector(`#rows tr[data-task-id=\"${arguments[0]}\"]`); \
         return r !== null && arguments[1].includes(r.dataset.status);",
        json!([id, statuses]),
    )
    .await;
}

/// Opens the detail view of `id` from its row and waits for it to show.
async fn open(page: &Browser, id: &str) {
    page.click(&format!(
        "#rows tr[data-task-id=\"{id}\"] button[data-action=\"open\"]"
    ))
    .await
    .expect("open the task");
    until(
        page,
        &format!("the detail of {id}"),
        "return !document.getElementById('detail').hidden \
           && document.getElementById('detail-id').textContent === arguments[0];",
        json!([id]),
    )
    .await;
}

/// The text of the detail view's re-run links.
async fn links(page: &Browser) -> String {
    page.script(
        "return document.getElementById('detail-rerun-links').textContent;",
        json!([]),
    )
    .await
    .expect("script")
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

const FINISHED: [&str; 3] = ["completed", "failed", "cancelled"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerun_from_the_page() {
    let (chromium, chromedriver) = match browser::programs() {
        Ok(found) => found,
        Err(why) if required() => panic!("console re-run browser test: {why}"),
        Err(why) => {
            report_skip(&format!("console re-run browser test: {why}"));
            return;
        }
    };
    let db = TempDb::new("console_rerun");
    let store = db.store();
    let bearer = format!("{}:{}", OWNER.0, OWNER.1);
    let args = ["--store", store.as_str(), "--bearer", bearer.as_str()];
    let env = [("MCP_CONSOLE_CREDENTIALS", CREDENTIALS)];
    let node = Node::start_with_env(Path::new(DEMO), "R1", &args, &env).await;
    let console_url = node.url.replace("/mcp", "/console");

    let page = Browser::start(&chromium, &chromedriver, 1280, 1000)
        .await
        .unwrap_or_else(|e| panic!("the browser: {e}"));
    let basic = base64::engine::general_purpose::STANDARD.encode(CREDENTIALS.as_bytes());
    page.cdp("Network.enable", json!({}))
        .await
        .expect("Network.enable");
    page.cdp(
        "Network.setExtraHTTPHeaders",
        json!({ "headers": { "Authorization": format!("Basic {basic}") } }),
    )
    .await
    .expect("Network.setExtraHTTPHeaders");
    page.navigate(&console_url).await.expect("load the console");
    until(
        &page,
        "the live indicator",
        "return document.getElementById('live').classList.contains('on');",
        json!([]),
    )
    .await;

    // A finished failing_job: its view offers a re-run.
    let old = task(&node.url, "failing_job", json!({})).await;
    row_in(&page, &old, &FINISHED).await;
    open(&page, &old).await;
    until(
        &page,
        "the Re-run button",
        "return !document.getElementById('detail-rerun').hidden;",
        json!([]),
    )
    .await;
    // The first click arms it: nothing is made.
    page.click("#detail-rerun").await.expect("arm the re-run");
    let armed = page
        .script(
            "const b = document.getElementById('detail-rerun'); \
             return [b.dataset.armed === 'true', document.getElementById('detail-id').textContent, \
                     document.querySelectorAll('#rows tr').length];",
            json!([]),
        )
        .await
        .expect("script");
    assert_eq!(armed, json!([true, old, 1]), "armed, nothing made");
    page.click("#detail-rerun").await.expect("re-run");
    until(
        &page,
        "the new task's detail",
        "return document.getElementById('detail-id').textContent !== arguments[0] \
           && document.getElementById('detail-rerun-links').textContent.includes(arguments[0]);",
        json!([old]),
    )
    .await;
    let new = page
        .script(
            "return document.getElementById('detail-id').textContent;",
            json!([]),
        )
        .await
        .expect("script")
        .as_str()
        .expect("the new id")
        .to_owned();
    assert_ne!(new, old);
    assert_eq!(links(&page).await, format!("Re-run of {old}"));
    // Its owner reads it through MCP.
    let reply = rpc(&node.url, "tasks/get", task_params(&new, true)).await;
    assert!(
        ["working", "completed", "failed"]
            .contains(&reply.result()["status"].as_str().unwrap_or_default()),
        "{}",
        reply.text
    );
    row_in(&page, &new, &FINISHED).await;
    // The link opens the old task, which names its re-run.
    page.click(&format!(
        "#detail-rerun-links button[data-task-id=\"{old}\"]"
    ))
    .await
    .expect("follow the link");
    until(
        &page,
        "the old task, linked to the new one",
        "return document.getElementById('detail-id').textContent === arguments[0] \
           && document.getElementById('detail-rerun-links').textContent === 'Re-run as ' + arguments[1];",
        json!([old, new]),
    )
    .await;

    // A task that asked for input, cancelled from its view: no re-run, and why.
    let asking = task(&node.url, "confirm_delete", json!({ "filename": "f" })).await;
    row_in(&page, &asking, &["input_required"]).await;
    open(&page, &asking).await;
    let hidden = page
        .script(
            "return document.getElementById('detail-rerun').hidden;",
            json!([]),
        )
        .await
        .expect("script");
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

    let png = page.screenshot().await.expect("screenshot");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-rerun.png");
    std::fs::write(&path, &png).expect("write the screenshot");
    eprintln!("re-run screenshot: {}", path.display());

    page.quit().await;
    drop(node);
}
