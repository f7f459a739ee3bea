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
use std::time::Duration;

use base64::Engine as _;
use mcp_tasks::Limits;
use mcp_tasks::conformance::{Env, PostgresFactory, StoreFactory, report_skip};
use mcp_tests::browser::{self, Browser};
use mcp_tests::node_harness::{Node, post_request};
use mcp_tests::server_harness::{Reply, call_params, request, task_params};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const OPERATOR: &str = "operator";
const PASSWORD: &str = "console-test-password";
const ALICE: (&str, &str) = ("alice", "alice-token");
const BOB: (&str, &str) = ("bob", "bob-token");
/// A status message that would run script if the page ever parsed it as HTML.
const PAYLOAD: &str = r#"<img src=x onerror="window.__pwned=1">"#;
/// How long the page may take to show a change.
const SHOWN: Duration = Duration::from_secs(15);

/// True when a missing program or service must fail the test instead of skipping it.
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

/// Polls `tasks/get` as `owner` on `url` until the task's status passes `done`
/// (within [`SHOWN`]); returns that status.
async fn owner_sees(
    url: &str,
    owner: (&str, &str),
    id: &str,
    done: impl Fn(&str) -> bool,
) -> String {
    let mut task = Value::Null;
    let seen = tokio::time::timeout(SHOWN, async {
        loop {
            task = rpc(url, owner.1, "tasks/get", task_params(id, true))
                .await
                .result()
                .clone();
            match task["status"].as_str() {
                Some(status) if done(status) => return status.to_owned(),
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    })
    .await;
    seen.unwrap_or_else(|_| {
        panic!(
            "task {id} as {} did not get there in {SHOWN:?}: {task}",
            owner.0
        )
    })
}

/// Starts `slow_compute` for `seconds` labelled `label` as a task of `owner` on `url`.
async fn slow_task(url: &str, owner: (&str, &str), seconds: f64, label: &str) -> String {
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
    page.wait_for(
        &format!("row {id} with data-status={status}"),
        SHOWN,
        "const r = document.querySelector(`#rows tr[data-task-id=\"${arguments[0]}\"]`); \
         return r !== null && r.dataset.status === arguments[1];",
        json!([id, status]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Starts `tool` with `arguments` as a task of `owner` on `url`.
async fn task(url: &str, owner: (&str, &str), tool: &str, arguments: Value) -> String {
    let reply = rpc(
        url,
        owner.1,
        "tools/call",
        call_params(tool, arguments, true),
    )
    .await;
    let result = reply.result();
    assert_eq!(result["resultType"], "task", "{}", reply.text);
    result["taskId"].as_str().expect("taskId").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_in_a_browser() {
    let (chromium, chromedriver) = match browser::programs() {
        Ok(found) => found,
        Err(why) if required() => panic!("console browser test: {why}"),
        Err(why) => {
            report_skip(&format!("console browser test: {why}"));
            return;
        }
    };
    let Some(factory) = PostgresFactory::from_env() else {
        // from_env said why on stderr (or panicked under MCP_REQUIRE_SERVICES=1).
        return;
    };
    let env = Env::new("console_browser", Limits::default());
    // A fresh schema now, dropped when the factory is.
    drop(factory.open(&env).await.expect("create the schema"));
    let schema = PostgresFactory::schema_for(&env.namespace);
    let store = std::env::var(PostgresFactory::URL_ENV)
        .unwrap_or_else(|_| PostgresFactory::DEFAULT_URL.to_owned());
    let console = format!("{OPERATOR}:{PASSWORD}");
    let alice = format!("{}:{}", ALICE.0, ALICE.1);
    let bob = format!("{}:{}", BOB.0, BOB.1);
    let args = [
        "--store",
        &store,
        "--namespace",
        &schema,
        "--console",
        &console,
        "--bearer",
        &alice,
        "--bearer",
        &bob,
    ];
    let (a, b) = tokio::join!(
        Node::start(Path::new(DEMO), "node-a", &args),
        Node::start(Path::new(DEMO), "node-b", &args),
    );
    let console_url = a.url.replace("/mcp", "/console");

    let page = Browser::start(&chromium, &chromedriver, 1280, 1000)
        .await
        .unwrap_or_else(|e| panic!("the browser: {e}"));
    let basic = base64::engine::general_purpose::STANDARD.encode(console.as_bytes());
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
    page.wait_for(
        "the live indicator",
        SHOWN,
        "return document.getElementById('live').classList.contains('on');",
        json!([]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    // Gone if the page reloads: rows must come without one.
    page.script("window.__sameDocument = true; return null;", json!([]))
        .await
        .expect("mark the document");

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
    let ended = owner_sees(&a.url, ALICE, &failing, |s| s != "working").await;
    row_status_is(&page, &failing, &ended).await;
    // And the chart counts it as a tool error, beside completed.
    page.wait_for(
        "the tool error counted in the chart",
        SHOWN,
        "const e = document.getElementById('tool-errors'); return e !== null && e.dataset.count === '1';",
        json!([]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    for id in &others {
        row_status_is(&page, id, "completed").await;
    }
    let same = page
        .script("return window.__sameDocument === true;", json!([]))
        .await
        .expect("script");
    assert_eq!(same, json!(true), "the rows came by reloading the page");
    let owners = page
        .script(
            "return [...document.querySelectorAll('#rows td.col-owner')].map(c => c.textContent);",
            json!([]),
        )
        .await
        .expect("script");
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
    page.wait_for(
        "only completed rows",
        SHOWN,
        "const rows = [...document.querySelectorAll('#rows tr')]; \
         return rows.length >= 2 && rows.every(r => r.dataset.status === 'completed') \
           && [...arguments].every(id => rows.some(r => r.dataset.taskId === id));",
        json!([alice_short, bob_short]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
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
    page.wait_for(
        "the detail view",
        SHOWN,
        "const d = document.getElementById('detail'); \
         return !d.hidden && document.getElementById('detail-id').textContent === arguments[0] \
           && document.getElementById('detail-json').textContent.includes('\"alice long\"');",
        json!([alice_long]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    // A cancel asks first: one click arms the button and cancels nothing.
    page.click("#detail [data-action=\"cancel\"]")
        .await
        .expect("arm the detail view's cancel");
    let armed = page
        .script(
            "return document.getElementById('detail-cancel').dataset.armed === 'true';",
            json!([]),
        )
        .await
        .expect("script");
    assert_eq!(armed, json!(true), "the first click asks");
    owner_sees(&a.url, ALICE, &alice_long, |s| s == "working").await;
    page.click("#detail [data-action=\"cancel\"]")
        .await
        .expect("cancel from the detail view");
    // And bob's from its row, also in two clicks.
    let row_cancel = format!("#rows tr[data-task-id=\"{bob_long}\"] [data-action=\"cancel\"]");
    page.click(&row_cancel).await.expect("arm the row's cancel");
    page.click(&row_cancel).await.expect("cancel from the row");
    for (id, owner, url) in [(&alice_long, ALICE, &a.url), (&bob_long, BOB, &b.url)] {
        owner_sees(url, owner, id, |s| s == "cancelled").await;
        row_status_is(&page, id, "cancelled").await;
    }

    // The HTML in a status message is text.
    let shown = page
        .script(
            "const r = document.querySelector(`#rows tr[data-task-id=\"${arguments[0]}\"]`); \
             return [r.querySelector('td.col-message').textContent, \
                     document.querySelectorAll('#rows img, #detail img').length, \
                     typeof window.__pwned];",
            json!([xss]),
        )
        .await
        .expect("script");
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
    page.wait_for(
        "the detail view of the HTML message",
        SHOWN,
        "return document.getElementById('detail-id').textContent === arguments[0] \
           && document.getElementById('detail-json').textContent.includes(arguments[1]);",
        json!([xss, PAYLOAD.replace('"', "\\\"")]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let pwned = page
        .script(
            "return [typeof window.__pwned, document.querySelectorAll('img').length];",
            json!([]),
        )
        .await
        .expect("script");
    assert_eq!(pwned, json!(["undefined", 0]), "{pwned}");

    // A screenshot, the charts drawn with what just happened.
    page.navigate(&console_url)
        .await
        .expect("reload the console");
    page.wait_for(
        "the rows and charts after a reload",
        SHOWN,
        "return document.querySelectorAll('#rows tr').length >= 5 \
           && document.querySelector('#chart-finished svg rect') !== null;",
        json!([]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let png = page.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console.png");
    std::fs::write(&path, &png).expect("write the screenshot");
    eprintln!(
        "console screenshot: {} ({} bytes)",
        path.display(),
        png.len()
    );

    // Past one page (50): "Load more" brings the older tasks.
    // The ten tasks above and these.
    let created = 10 + 45;
    for i in 0..45 {
        slow_task(&b.url, ALICE, 0.01, &format!("many {i}")).await;
    }
    page.navigate(&console_url)
        .await
        .expect("reload the console");
    page.wait_for(
        "a full first page and the Load more button",
        SHOWN,
        "return document.querySelectorAll('#rows tr').length === 50 \
           && !document.getElementById('more').hidden;",
        json!([]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    page.click("#more").await.expect("load more");
    page.wait_for(
        "every task after Load more",
        SHOWN,
        "return document.querySelectorAll('#rows tr').length === arguments[0] \
           && document.getElementById('more').hidden;",
        json!([created]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));

    page.quit().await;
    drop((a, b));
}
