//! The operator console in a real browser: a headless Chromium (driven by `chromedriver`,
//! [`mcp_tests::browser`]) on the page of one of two demo server processes that share one
//! PostgreSQL schema, the console on with Basic credentials (given to the browser as an
//! extra header through the DevTools protocol) and two bearer-token owners, alice and bob.
//!
//! - tasks of both owners created through either node appear in the table live, without
//!   a reload, and the short ones turn `completed` in place;
//! - the status filter leaves only the rows of that status;
//! - a task's detail view shows its arguments;
//! - the cancel controls (the detail view's, then a row's) ask first (a first click arms
//!   them and cancels nothing), then cancel long tasks: their owner reads them
//!   `cancelled` through MCP, and their rows say `data-status="cancelled"`;
//! - the activity chart counts the tool error (`failing_job`) beside completed;
//! - a status message holding HTML (`slow_compute`'s label is its status message) shows
//!   as text, and its `onerror` never runs;
//! - a screenshot of the page is saved as `console.png` in the target's tmp folder;
//! - past 50 tasks the list is paged: "Load more" brings the rest.
//!
//! Skipped (named) without `chromium` and `chromedriver` (`MCP_TEST_CHROMIUM`,
//! `MCP_TEST_CHROMEDRIVER`, else `PATH`) or without PostgreSQL; under `CI=true` or
//! `MCP_REQUIRE_SERVICES=1` a missing one fails the test.

use std::path::Path;

use mcp_tests::browser::Browser;
use mcp_tests::console_page::{
    Owner, console_node, console_url, eval, mark_document, open_console, owner_sees,
    programs_or_skip, row_in, same_document, save_screenshot, start_task, status_is, until,
};
use mcp_tests::node_harness::NodeStore;
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const OPERATOR: &str = "operator";
const PASSWORD: &str = "console-test-password";
const ALICE: Owner = ("alice", "alice-token");
const BOB: Owner = ("bob", "bob-token");
/// A status message that would run script if the page ever parsed it as HTML.
const PAYLOAD: &str = r#"<img src=x onerror="window.__pwned=1">"#;

/// Starts `slow_compute` for `seconds` labelled `label` as a task of `owner` on `url`.
async fn slow_task(url: &str, owner: Owner, seconds: f64, label: &str) -> String {
    task(
        url,
        owner,
        "slow_compute",
        json!({ "seconds": seconds, "label": label }),
    )
    .await
}

/// Waits until the row of task `id` is in the page with `data-status` `status`.
async fn row_status_is(page: &Browser, id: &str, status: &str) {
    row_in(page, id, &[status]).await;
}

/// Starts `tool` with `arguments` as a task of `owner` on `url`.
async fn task(url: &str, owner: Owner, tool: &str, arguments: Value) -> String {
    start_task(url, owner.1, tool, arguments).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_in_a_browser() {
    let Some(programs) = programs_or_skip("console browser test") else {
        return;
    };
    let Some(store) = NodeStore::postgres("console_browser").await else {
        return;
    };
    let console = format!("{OPERATOR}:{PASSWORD}");
    let args = store.args(0);
    let (a, b) = tokio::join!(
        console_node(Path::new(DEMO), "node-a", &args, &[ALICE, BOB], &console),
        console_node(Path::new(DEMO), "node-b", &args, &[ALICE, BOB], &console),
    );
    let console_url = console_url(&a.url);

    let page = open_console(&programs, &console, &console_url).await;
    // Gone if the page reloads: rows must come without one.
    mark_document(&page).await;

    // Tasks of both owners through either node.
    let alice_long = slow_task(&a.url, ALICE, 120.0, "alice long").await;
    let bob_long = slow_task(&b.url, BOB, 120.0, "bob long").await;
    let alice_short = slow_task(&b.url, ALICE, 0.2, "alice short").await;
    let bob_short = slow_task(&a.url, BOB, 0.2, "bob short").await;
    let xss = slow_task(&b.url, BOB, 120.0, PAYLOAD).await;
    let failing = task(&a.url, ALICE, "failing_job", json!({})).await;
    let mut others = Vec::new();
    for i in 0..4 {
        let (url, owner) = if i % 2 == 0 {
            (&a.url, BOB)
        } else {
            (&b.url, ALICE)
        };
        others.push(slow_task(url, owner, 0.5 + f64::from(i), &format!("batch {i}")).await);
    }
    for id in [&alice_long, &bob_long, &xss] {
        row_status_is(&page, id, "working").await;
    }
    for id in [&alice_short, &bob_short] {
        row_status_is(&page, id, "completed").await;
    }
    // A tool error's task ends as its owner reads it; the row says the same.
    let ended = owner_sees(&a.url, ALICE, &failing, |t| t["status"] != "working").await;
    row_status_is(
        &page,
        &failing,
        ended["status"].as_str().unwrap_or_default(),
    )
    .await;
    // And the chart counts it as a tool error, beside completed.
    until(
        &page,
        "the tool error counted in the chart",
        "const e = document.getElementById('tool-errors'); return e !== null && e.dataset.count === '1';",
        json!([]),
    )
    .await;
    for id in &others {
        row_status_is(&page, id, "completed").await;
    }
    same_document(&page, "the rows").await;
    let owners = eval(
        &page,
        "return [...document.querySelectorAll('#rows td.col-owner')].map(c => c.textContent);",
        json!([]),
    )
    .await;
    for owner in [ALICE.0, BOB.0] {
        assert!(
            owners
                .as_array()
                .is_some_and(|o| o.iter().any(|v| *v == owner)),
            "{owners}"
        );
    }

    // Filter by status: only completed rows, then every row again.
    page.click("#filter-status option[value=\"completed\"]")
        .await
        .expect("pick completed");
    until(
        &page,
        "only completed rows",
        "const rows = [...document.querySelectorAll('#rows tr')]; \
         return rows.length >= 2 && rows.every(r => r.dataset.status === 'completed') \
           && [...arguments].every(id => rows.some(r => r.dataset.taskId === id));",
        json!([alice_short, bob_short]),
    )
    .await;
    page.click("#filter-status option[value=\"\"]")
        .await
        .expect("pick any");
    row_status_is(&page, &alice_long, "working").await;

    // The detail view of alice's long task, then cancel it from there.
    page.click(&format!(
        "#rows tr[data-task-id=\"{alice_long}\"] button[data-action=\"open\"]"
    ))
    .await
    .expect("open the task");
    until(
        &page,
        "the detail view",
        "const d = document.getElementById('detail'); \
         return !d.hidden && document.getElementById('detail-id').textContent === arguments[0] \
           && document.getElementById('detail-json').textContent.includes('\"alice long\"');",
        json!([alice_long]),
    )
    .await;
    // A cancel asks first: one click arms the button and cancels nothing.
    page.click("#detail [data-action=\"cancel\"]")
        .await
        .expect("arm the detail view's cancel");
    let armed = eval(
        &page,
        "return document.getElementById('detail-cancel').dataset.armed === 'true';",
        json!([]),
    )
    .await;
    assert_eq!(armed, json!(true), "the first click asks");
    owner_sees(&a.url, ALICE, &alice_long, status_is("working")).await;
    page.click("#detail [data-action=\"cancel\"]")
        .await
        .expect("cancel from the detail view");
    // And bob's from its row, also in two clicks.
    let row_cancel = format!("#rows tr[data-task-id=\"{bob_long}\"] [data-action=\"cancel\"]");
    page.click(&row_cancel).await.expect("arm the row's cancel");
    page.click(&row_cancel).await.expect("cancel from the row");
    for (id, owner, url) in [(&alice_long, ALICE, &a.url), (&bob_long, BOB, &b.url)] {
        owner_sees(url, owner, id, status_is("cancelled")).await;
        row_status_is(&page, id, "cancelled").await;
    }

    // The HTML in a status message is text.
    let shown = eval(
        &page,
        "const r = document.querySelector(`#rows tr[data-task-id=\"${arguments[0]}\"]`); \
             return [r.querySelector('td.col-message').textContent, \
                     document.querySelectorAll('#rows img, #detail img').length, \
                     typeof window.__pwned];",
        json!([xss]),
    )
    .await;
    assert!(
        shown[0]
            .as_str()
            .is_some_and(|text| text.starts_with(PAYLOAD)),
        "the message as text: {shown}"
    );
    assert_eq!(shown[1], 0, "an <img> was made from the message: {shown}");
    assert_eq!(shown[2], "undefined", "the message's script ran: {shown}");
    page.click(&format!(
        "#rows tr[data-task-id=\"{xss}\"] button[data-action=\"open\"]"
    ))
    .await
    .expect("open the task");
    until(
        &page,
        "the detail view of the HTML message",
        "return document.getElementById('detail-id').textContent === arguments[0] \
           && document.getElementById('detail-json').textContent.includes(arguments[1]);",
        json!([xss, PAYLOAD.replace('"', "\\\"")]),
    )
    .await;
    let pwned = eval(
        &page,
        "return [typeof window.__pwned, document.querySelectorAll('img').length];",
        json!([]),
    )
    .await;
    assert_eq!(pwned, json!(["undefined", 0]), "{pwned}");

    // A screenshot, the charts drawn with what just happened.
    page.navigate(&console_url)
        .await
        .expect("reload the console");
    until(
        &page,
        "the rows and charts after a reload",
        "return document.querySelectorAll('#rows tr').length >= 5 \
           && document.querySelector('#chart-finished svg rect') !== null;",
        json!([]),
    )
    .await;
    save_screenshot(
        &page,
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("console.png"),
    )
    .await;

    // Past one page (50): "Load more" brings the older tasks.
    // The ten tasks above and these.
    let created = 10 + 45;
    for i in 0..45 {
        slow_task(&b.url, ALICE, 0.01, &format!("many {i}")).await;
    }
    page.navigate(&console_url)
        .await
        .expect("reload the console");
    until(
        &page,
        "a full first page and the Load more button",
        "return document.querySelectorAll('#rows tr').length === 50 \
           && !document.getElementById('more').hidden;",
        json!([]),
    )
    .await;
    page.click("#more").await.expect("load more");
    until(
        &page,
        "every task after Load more",
        "return document.querySelectorAll('#rows tr').length === arguments[0] \
           && document.getElementById('more').hidden;",
        json!([created]),
    )
    .await;

    page.quit().await;
    drop((a, b));
}
