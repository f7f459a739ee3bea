//! Search, the filter in the page's URL, bulk cancel and the viewer's page, in a real
//! browser (a headless Chromium driven by `chromedriver`, [`mcp_tests::browser`]) on a
//! demo server process (a SQLite store, two bearer-token owners, alice and bob, and the
//! console's credentials in `MCP_CONSOLE_CREDENTIALS`: an operator and a viewer, one per
//! line):
//!
//! - `/console?status=working&text=BULK-7` shows exactly the working tasks whose status
//!   message holds `bulk-7`, of both owners, and its form says so; changing the filter in
//!   the form changes the list and the page's URL;
//! - "Cancel all matching…" counts first (a dry run, in a dialog naming the count) and
//!   cancels nothing until confirmed; confirmed, the four are cancelled: their owners
//!   read them `cancelled` over MCP, the rows leave the `working` list, the other tasks
//!   stay `working`;
//! - the viewer's page names them as a viewer and offers no cancel: neither the rows'
//!   nor "Cancel all matching…";
//! - a screenshot with the dialog open is saved as `console-bulk.png` in the target's
//!   tmp folder.
//!
//! Skipped (named) without `chromium` and `chromedriver` (`MCP_TEST_CHROMIUM`,
//! `MCP_TEST_CHROMEDRIVER`, else `PATH`); under `CI=true` or `MCP_REQUIRE_SERVICES=1` a
//! missing one fails the test.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use mcp_tasks::conformance::report_skip;
use mcp_tests::browser::{self, Browser};
use mcp_tests::node_harness::{Node, TempDb, post_request, slow};
use mcp_tests::server_harness::{Reply, call_params, request, task_params};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const OPERATOR: &str = "operator:bulk-browser-password";
const VIEWER: &str = "watcher:viewer-browser-password";
const ALICE: (&str, &str) = ("alice", "alice-token");
const BOB: (&str, &str) = ("bob", "bob-token");
/// How long the page may take to show a change.
const SHOWN: Duration = Duration::from_secs(15);

fn required() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
        || std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1")
}

/// An MCP 2026-07-28 request to `url` as the owner holding `token`.
async fn rpc(url: &str, token: &str, method: &str, params: Value) -> Reply {
    static NEXT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let client = reqwest::Client::new();
    post_request(
        &client,
        url,
        Some(token),
        method,
        request(id, method, params),
    )
    .await
}

/// Starts a minute of `slow_compute` labelled `label` (its status message) as `owner`.
async fn long_task(url: &str, owner: (&str, &str), label: &str) -> String {
    let params = call_params("slow_compute", slow(60.0, label), true);
    let reply = rpc(url, owner.1, "tools/call", params).await;
    let result = reply.result();
    assert_eq!(result["resultType"], "task", "{}", reply.text);
    result["taskId"].as_str().expect("taskId").to_owned()
}

/// Waits until `owner`'s `tasks/get` of `id` passes `done` (within [`SHOWN`]).
async fn owner_sees(url: &str, owner: (&str, &str), id: &str, done: impl Fn(&Value) -> bool) {
    let deadline = std::time::Instant::now() + SHOWN;
    loop {
        let reply = rpc(url, owner.1, "tasks/get", task_params(id, true)).await;
        if done(reply.result()) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} never saw {id} there: {}",
            owner.0,
            reply.text
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn status_is(status: &'static str) -> impl Fn(&Value) -> bool {
    move |task| task["status"] == status
}

/// Waits until `script` (given `args`) returns true.
async fn until(page: &Browser, what: &str, script: &str, args: Value) {
    page.wait_for(what, SHOWN, script, args)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

/// The task ids of the table's rows.
const ROW_IDS: &str =
    "return Array.from(document.querySelectorAll('#rows tr')).map((r) => r.dataset.taskId).sort();";

/// Waits until the table shows exactly `ids`.
async fn rows_are(page: &Browser, what: &str, ids: &BTreeSet<String>) {
    let want: Vec<&String> = ids.iter().collect();
    until(
        page,
        what,
        &format!("const ids = (function () {{ {ROW_IDS} }})(); return JSON.stringify(ids) === JSON.stringify(arguments[0]);"),
        json!([want]),
    )
    .await;
}

/// Loads `url` as the console user `credentials` and waits for the live indicator.
async fn load_as(page: &Browser, credentials: &str, url: &str) {
    let basic = base64::engine::general_purpose::STANDARD.encode(credentials.as_bytes());
    page.cdp(
        "Network.setExtraHTTPHeaders",
        json!({ "headers": { "Authorization": format!("Basic {basic}") } }),
    )
    .await
    .expect("Network.setExtraHTTPHeaders");
    page.navigate(url).await.expect("load the console");
    until(
        page,
        "the live indicator",
        "return document.getElementById('live').classList.contains('on');",
        json!([]),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_url_filters_bulk_cancel_and_the_viewers_page() {
    let (chromium, chromedriver) = match browser::programs() {
        Ok(found) => found,
        Err(why) if required() => panic!("console bulk browser test: {why}"),
        Err(why) => {
            report_skip(&format!("console bulk browser test: {why}"));
            return;
        }
    };
    let db = TempDb::new("console_bulk");
    let store = db.store();
    let alice = format!("{}:{}", ALICE.0, ALICE.1);
    let bob = format!("{}:{}", BOB.0, BOB.1);
    let args = [
        "--store",
        store.as_str(),
        "--bearer",
        alice.as_str(),
        "--bearer",
        bob.as_str(),
    ];
    let credentials = format!("{OPERATOR}\nviewer={VIEWER}\n");
    let env = [("MCP_CONSOLE_CREDENTIALS", credentials.as_str())];
    let node = Node::start_with_env(Path::new(DEMO), "B1", &args, &env).await;
    let console_url = node.url.replace("/mcp", "/console");

    // (owner, id) of the batch and of the others.
    let mut batch_tasks = Vec::new();
    for (owner, part) in [(ALICE, 1), (BOB, 2), (ALICE, 3), (BOB, 4)] {
        let id = long_task(&node.url, owner, &format!("bulk-7 part {part}")).await;
        batch_tasks.push((owner, id));
    }
    let mut other_tasks = Vec::new();
    for (owner, part) in [(ALICE, 1), (BOB, 2)] {
        let id = long_task(&node.url, owner, &format!("other {part}")).await;
        other_tasks.push((owner, id));
    }
    // Each says its label before the page loads (the list is read at load).
    for (owner, id) in batch_tasks.iter().chain(&other_tasks) {
        owner_sees(&node.url, *owner, id, |t| {
            t["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains("part") || m.contains("other"))
        })
        .await;
    }
    let ids = |tasks: &[((&str, &str), String)]| -> BTreeSet<String> {
        tasks.iter().map(|(_, id)| id.clone()).collect()
    };
    let (batch, others) = (ids(&batch_tasks), ids(&other_tasks));

    let page = Browser::start(&chromium, &chromedriver, 1280, 1000)
        .await
        .unwrap_or_else(|e| panic!("the browser: {e}"));
    page.cdp("Network.enable", json!({}))
        .await
        .expect("Network.enable");

    // A shared URL: its filter is applied at load (the text in another case).
    let shared = format!("{console_url}?status=working&text=BULK-7");
    load_as(&page, OPERATOR, &shared).await;
    rows_are(&page, "the URL's filter", &batch).await;
    let form = page
        .script(
            "return [document.getElementById('filter-status').value, \
                     document.getElementById('filter-text').value, \
                     new URLSearchParams(location.search).get('text'), \
                     document.body.dataset.role || ''];",
            json!([]),
        )
        .await
        .expect("script");
    assert_eq!(form, json!(["working", "BULK-7", "BULK-7", "operator"]));

    // Changing the filter in the form changes the list and the URL.
    page.script(
        "document.getElementById('filter-text').value = 'other'; \
         document.getElementById('filters').requestSubmit();",
        json!([]),
    )
    .await
    .expect("submit the filter");
    rows_are(&page, "the form's filter", &others).await;
    until(
        &page,
        "the URL to follow the form",
        "const p = new URLSearchParams(location.search); \
         return p.get('text') === 'other' && p.get('status') === 'working';",
        json!([]),
    )
    .await;
    page.script(
        "document.getElementById('filter-text').value = 'bulk-7'; \
         document.getElementById('filters').requestSubmit();",
        json!([]),
    )
    .await
    .expect("submit the filter");
    rows_are(&page, "back to the batch", &batch).await;

    // Cancel all matching: counted first, in the dialog; nothing cancelled yet.
    page.click("#bulk-cancel")
        .await
        .expect("cancel all matching");
    until(
        &page,
        "the dry run's count",
        "const d = document.getElementById('bulk-dialog'); \
         return d.open && document.getElementById('bulk-count').dataset.state === 'ready';",
        json!([]),
    )
    .await;
    let asked = page
        .script(
            "return [document.getElementById('bulk-dialog').dataset.matched, \
                     document.getElementById('bulk-count').textContent, \
                     document.getElementById('bulk-confirm').textContent];",
            json!([]),
        )
        .await
        .expect("script");
    assert_eq!(asked[0], "4", "{asked}");
    assert!(
        asked[1]
            .as_str()
            .is_some_and(|t| t.contains("4 unfinished tasks match")),
        "{asked}"
    );
    assert_eq!(asked[2], "Cancel 4 tasks", "{asked}");
    // A screenshot of the page with the dialog open.
    let png = page.screenshot().await.expect("screenshot");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-bulk.png");
    std::fs::write(&path, &png).expect("write the screenshot");
    eprintln!("console bulk screenshot: {}", path.display());
    for (owner, id) in &batch_tasks {
        let reply = rpc(&node.url, owner.1, "tasks/get", task_params(id, true)).await;
        assert_eq!(reply.result()["status"], "working", "{}", reply.text);
    }
    // Confirmed: cancelled.
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
        owner_sees(&node.url, *owner, id, status_is("cancelled")).await;
    }
    for (owner, id) in &other_tasks {
        owner_sees(&node.url, *owner, id, status_is("working")).await;
    }
    page.click("#bulk-keep").await.expect("close the dialog");
    // The cancelled rows leave the working list.
    rows_are(
        &page,
        "the batch gone from the working list",
        &BTreeSet::new(),
    )
    .await;

    // The viewer's page: named as a viewer, no cancel anywhere.
    load_as(&page, VIEWER, &format!("{console_url}?status=working")).await;
    rows_are(&page, "the viewer's list", &others).await;
    until(
        &page,
        "the viewer's role",
        "return document.body.dataset.role === 'viewer' \
           && document.getElementById('whoami') !== null;",
        json!([]),
    )
    .await;
    let shown = page
        .script(
            "const shown = (e) => e.getClientRects().length > 0 \
                                && getComputedStyle(e).display !== 'none'; \
             const cancels = Array.from(document.querySelectorAll('[data-action=\"cancel\"]')); \
             return [cancels.length, cancels.filter(shown).length, \
                     shown(document.getElementById('bulk-cancel')), \
                     document.getElementById('whoami').textContent];",
            json!([]),
        )
        .await
        .expect("script");
    assert!(
        shown[0].as_u64().is_some_and(|n| n >= 2),
        "rows with controls: {shown}"
    );
    assert_eq!(shown[1], 0, "no cancel shown to a viewer: {shown}");
    assert_eq!(shown[2], false, "no bulk cancel for a viewer: {shown}");
    assert_eq!(shown[3], "watcher (viewer, read only)", "{shown}");
    page.quit().await;
}
