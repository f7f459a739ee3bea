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
use std::time::Duration;

use base64::Engine as _;
use mcp_tasks::conformance::report_skip;
use mcp_tests::browser::{self, Browser};
use mcp_tests::node_harness::{Node, TempDb, post_request};
use mcp_tests::server_harness::{Reply, accept, call_params, request, update_params};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const CREDENTIALS: &str = "operator:timeline-test-password";
const OWNER: (&str, &str) = ("alice", "alice-token");
/// Markup that would run script if the page ever parsed it as HTML.
const PAYLOAD: &str = r#"<img src=x onerror="window.__pwned=1">"#;
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

/// Waits until the task's row is in the table, then opens its detail view and waits for
/// it (and the first timeline row) to show.
async fn open(page: &Browser, id: &str) {
    page.wait_for(
        &format!("row {id}"),
        SHOWN,
        "return document.querySelector(`#rows tr[data-task-id=\"${arguments[0]}\"]`) !== null;",
        json!([id]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    page.click(&format!(
        "#rows tr[data-task-id=\"{id}\"] button[data-action=\"open\"]"
    ))
    .await
    .expect("open the task");
    page.wait_for(
        &format!("the timeline of {id}"),
        SHOWN,
        "return document.getElementById('timeline').dataset.taskId === arguments[0] \
           && document.querySelector('#timeline-rows tr[data-seq=\"0\"]') !== null;",
        json!([id]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

/// The timeline's rows as `[seq, type, event, details, node, actor]`.
async fn rows(page: &Browser) -> Vec<Value> {
    let got = page
        .script(
            "return [...document.querySelectorAll('#timeline-rows tr')].map(r => \
               [Number(r.dataset.seq), r.dataset.type, r.querySelector('.tl-kind').textContent, \
                r.querySelector('.tl-details').textContent, r.querySelector('.tl-node').textContent, \
                r.querySelector('.tl-actor').textContent]);",
            json!([]),
        )
        .await
        .expect("script");
    got.as_array().cloned().unwrap_or_default()
}

/// Waits until a timeline row of `kind` shows.
async fn row_of(page: &Browser, kind: &str) {
    page.wait_for(
        &format!("a timeline row of {kind}"),
        SHOWN,
        "return document.querySelector(`#timeline-rows tr[data-type=\"${arguments[0]}\"]`) !== null;",
        json!([kind]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Nothing was made from the HTML and its script never ran.
async fn no_html_ran(page: &Browser) {
    let got = page
        .script(
            "return [document.querySelectorAll('img, #timeline-rows b').length, typeof window.__pwned];",
            json!([]),
        )
        .await
        .expect("script");
    assert_eq!(got, json!([0, "undefined"]), "HTML was parsed: {got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_in_a_browser() {
    let (chromium, chromedriver) = match browser::programs() {
        Ok(found) => found,
        Err(why) if required() => panic!("console timeline browser test: {why}"),
        Err(why) => {
            report_skip(&format!("console timeline browser test: {why}"));
            return;
        }
    };
    let db = TempDb::new("console_timeline");
    let store = db.store();
    let bearer = format!("{}:{}", OWNER.0, OWNER.1);
    let args = ["--store", store.as_str(), "--bearer", bearer.as_str()];
    let env = [("MCP_CONSOLE_CREDENTIALS", CREDENTIALS)];
    let node = Node::start_with_env(Path::new(DEMO), "T1", &args, &env).await;
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
    page.wait_for(
        "the live indicator",
        SHOWN,
        "return document.getElementById('live').classList.contains('on');",
        json!([]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    page.script("window.__sameDocument = true; return null;", json!([]))
        .await
        .expect("mark the document");

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
    let waiting = rpc(
        &node.url,
        "tasks/get",
        mcp_tests::server_harness::task_params(&asking, true),
    )
    .await;
    let key = waiting.result()["inputRequests"]
        .as_object()
        .and_then(|o| o.keys().next().cloned())
        .expect("a question");
    let mut responses = serde_json::Map::new();
    responses.insert(key.clone(), accept(json!({ "confirm": true })));
    let answered = rpc(
        &node.url,
        "tasks/update",
        update_params(&asking, Value::Object(responses)),
    )
    .await;
    assert!(answered.body["error"].is_null(), "{}", answered.text);
    page.wait_for(
        "the answer and the end in the timeline",
        SHOWN,
        "const rows = [...document.querySelectorAll('#timeline-rows tr')]; \
         const last = rows[rows.length - 1]; \
         return rows.some(r => r.dataset.type === 'rs.mcp-tasks.answer') && last !== undefined \
           && last.querySelector('.tl-kind').textContent === 'status: completed';",
        json!([]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
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
    page.wait_for(
        "the status message as text",
        SHOWN,
        "return [...document.querySelectorAll('#timeline-rows .tl-details')] \
           .some(d => d.textContent.startsWith(arguments[0]));",
        json!([PAYLOAD]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    no_html_ran(&page).await;
    let build = task(
        &node.url,
        "build_log",
        json!({ "steps": 4, "interval_ms": 400 }),
    )
    .await;
    open(&page, &build).await;
    page.wait_for(
        "four lines of text, then completed",
        SHOWN,
        "const rows = [...document.querySelectorAll('#timeline-rows tr')]; \
         const lines = rows.filter(r => r.dataset.type === 'rs.mcp-tasks.text') \
           .map(r => r.querySelector('.tl-details').textContent); \
         return lines.length === 4 && lines[3] === '[4/4] Compiling demo-unit-4 ... ok' \
           && rows[rows.length - 1].querySelector('.tl-kind').textContent === 'status: completed';",
        json!([]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let same = page
        .script("return window.__sameDocument === true;", json!([]))
        .await
        .expect("script");
    assert_eq!(same, json!(true), "the timeline came by reloading the page");
    no_html_ran(&page).await;

    let png = page.screenshot().await.expect("screenshot");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-timeline.png");
    std::fs::write(&path, &png).expect("write the screenshot");
    eprintln!("timeline screenshot: {}", path.display());

    page.quit().await;
    drop(node);
}
