//! What the console's browser tests (`tests/it/console_browser*.rs`) share: skipping
//! without `chromium`/`chromedriver`, a [`Browser`] on the console's page with a console
//! user's Basic credentials (an extra header given through the DevTools protocol), the
//! demo processes' console and owner arguments, bounded waits for the page's elements
//! and rows, a task's detail view, screenshots, and MCP requests as a bearer-token owner.
//!
//! Every wait is bounded by [`SHOWN`] (the page) or [`DRIVER_WAIT`](crate::browser::DRIVER_WAIT)
//! (one WebDriver request).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use mcp_tasks::conformance::report_skip;
use serde_json::{Value, json};

use crate::browser::{self, Browser};
use crate::node_harness::{Node, post_request};
use crate::server_harness::{Reply, accept, call_params, request, task_params, update_params};

/// How long the page (or an owner's `tasks/get`) may take to show a change.
pub const SHOWN: Duration = Duration::from_secs(20);

/// An owner: its name and bearer token.
pub type Owner = (&'static str, &'static str);

/// True when a missing program or service must fail the test instead of skipping it
/// (`CI=true` or `MCP_REQUIRE_SERVICES=1`).
pub fn required() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
        || std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1")
}

/// The browser and driver programs, or `None` after a `skipped: TEST: why` line (a
/// failure under [`required`]).
pub fn programs_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    match browser::programs() {
        Ok(found) => Some(found),
        Err(why) if required() => panic!("{test}: {why}"),
        Err(why) => {
            report_skip(&format!("{test}: {why}"));
            None
        }
    }
}

/// The console page of the node serving MCP at `mcp_url`.
pub fn console_url(mcp_url: &str) -> String {
    mcp_url.replace("/mcp", "/console")
}

/// `--bearer NAME:TOKEN` for each owner.
pub fn bearer_args(owners: &[Owner]) -> Vec<String> {
    owners
        .iter()
        .flat_map(|(name, token)| ["--bearer".to_owned(), format!("{name}:{token}")])
        .collect()
}

/// Starts the demo server `exe` as node `name` with `args`, serving the console to
/// `credentials` (`MCP_CONSOLE_CREDENTIALS`, [`console_credentials`]) and MCP to
/// `owners` (their bearer tokens).
pub async fn console_node(
    exe: &Path,
    name: &str,
    args: &[&str],
    owners: &[Owner],
    credentials: &str,
) -> Node {
    let bearers = bearer_args(owners);
    let mut args = args.to_vec();
    args.extend(bearers.iter().map(String::as_str));
    let env = [("MCP_CONSOLE_CREDENTIALS", credentials)];
    Node::start_with_env(exe, name, &args, &env).await
}

/// `MCP_CONSOLE_CREDENTIALS` of an operator (`name:password`) and, if any, a viewer.
pub fn console_credentials(operator: &str, viewer: Option<&str>) -> String {
    match viewer {
        Some(viewer) => format!("{operator}\nviewer={viewer}\n"),
        None => operator.to_owned(),
    }
}

/// Starts a headless browser (1280x1000) whose requests carry `credentials` (a console
/// user's `name:password`) as Basic credentials, and loads `url` ([`load_as`]).
pub async fn open_console(programs: &(PathBuf, PathBuf), credentials: &str, url: &str) -> Browser {
    let page = Browser::start(&programs.0, &programs.1, 1280, 1000)
        .await
        .unwrap_or_else(|e| panic!("the browser: {e}"));
    page.cdp("Network.enable", json!({}))
        .await
        .expect("Network.enable");
    load_as(&page, credentials, url).await;
    page
}

/// Loads `url` as the console user `credentials` and waits for the live indicator.
pub async fn load_as(page: &Browser, credentials: &str, url: &str) {
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

/// Waits (at most [`SHOWN`]) until `script` (given `args`) returns something other than
/// `null` or `false`; that value.
pub async fn until(page: &Browser, what: &str, script: &str, args: Value) -> Value {
    page.wait_for(what, SHOWN, script, args)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `script` in the page; what it returns.
pub async fn eval(page: &Browser, script: &str, args: Value) -> Value {
    page.script(script, args).await.expect("script")
}

/// Marks the page's document, for [`same_document`].
pub async fn mark_document(page: &Browser) {
    eval(
        page,
        "window.__sameDocument = true; return null;",
        json!([]),
    )
    .await;
}

/// Asserts the page was not reloaded since [`mark_document`] (what came, came live).
pub async fn same_document(page: &Browser, what: &str) {
    let same = eval(page, "return window.__sameDocument === true;", json!([])).await;
    assert_eq!(same, json!(true), "{what} came by reloading the page");
}

/// Waits until the row of task `id` is in the table with a status among `statuses`
/// (any status when empty).
pub async fn row_in(page: &Browser, id: &str, statuses: &[&str]) {
    until(
        page,
        &format!("row {id} {statuses:?}"),
        "const r = document.querySelector(`#rows tr[data-task-id=\"${arguments[0]}\"]`); \
         return r !== null && (arguments[1].length === 0 || arguments[1].includes(r.dataset.status));",
        json!([id, statuses]),
    )
    .await;
}

/// The statuses of a finished task.
pub const FINISHED: [&str; 3] = ["completed", "failed", "cancelled"];

/// Opens the detail view of `id` from its row and waits for it to show.
pub async fn open_detail(page: &Browser, id: &str) {
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

/// In the open detail view of a finished task `old`: "Re-run" shows, a first click arms
/// it and makes nothing (no new row), a second makes the new task, whose view opens
/// saying "Re-run of" `old`; the new task's id.
pub async fn rerun_from_detail(page: &Browser, old: &str) -> String {
    until(
        page,
        "the Re-run button",
        "return !document.getElementById('detail-rerun').hidden;",
        json!([]),
    )
    .await;
    let rows = "return document.querySelectorAll('#rows tr').length;";
    let before = eval(page, rows, json!([])).await;
    page.click("#detail-rerun").await.expect("arm the re-run");
    let armed = eval(
        page,
        "return [document.getElementById('detail-rerun').dataset.armed === 'true', \
                 document.getElementById('detail-id').textContent];",
        json!([]),
    )
    .await;
    assert_eq!(armed, json!([true, old]), "armed");
    assert_eq!(eval(page, rows, json!([])).await, before, "nothing made");
    page.click("#detail-rerun").await.expect("re-run");
    let new = until(
        page,
        "the new task's detail",
        "const id = document.getElementById('detail-id').textContent; \
         return id !== arguments[0] \
           && document.getElementById('detail-rerun-links').textContent === 'Re-run of ' + arguments[0] \
           && id;",
        json!([old]),
    )
    .await;
    new.as_str().expect("the new id").to_owned()
}

/// In the detail view of `new`, a re-run of `old`: the link opens `old`, whose view
/// says "Re-run as" `new`.
pub async fn follow_rerun_link(page: &Browser, old: &str, new: &str) {
    page.click(&format!(
        "#detail-rerun-links button[data-task-id=\"{old}\"]"
    ))
    .await
    .expect("follow the link");
    until(
        page,
        "the old task, linked to the new one",
        "return document.getElementById('detail-id').textContent === arguments[0] \
           && document.getElementById('detail-rerun-links').textContent === 'Re-run as ' + arguments[1];",
        json!([old, new]),
    )
    .await;
}

/// Answers the question task `id` (of `owner`, on `url`) waits on, accepting with
/// `{"confirm": true}` through `tasks/update`; the question's key.
pub async fn answer_question(url: &str, owner: Owner, id: &str) -> String {
    let waiting = owner_sees(url, owner, id, |t| t["inputRequests"].is_object()).await;
    let key = waiting["inputRequests"]
        .as_object()
        .and_then(|o| o.keys().next().cloned())
        .expect("a question");
    let mut responses = serde_json::Map::new();
    responses.insert(key.clone(), accept(json!({ "confirm": true })));
    let answered = rpc(
        url,
        owner.1,
        "tasks/update",
        update_params(id, Value::Object(responses)),
    )
    .await;
    assert!(answered.body["error"].is_null(), "{}", answered.text);
    key
}

/// Waits until the open timeline shows an answer and ends `completed`.
pub async fn timeline_answered_and_completed(page: &Browser) {
    until(
        page,
        "the answer and the end in the timeline",
        "const rows = [...document.querySelectorAll('#timeline-rows tr')]; \
         const last = rows[rows.length - 1]; \
         return rows.some(r => r.dataset.type === 'rs.mcp-tasks.answer') && last !== undefined \
           && last.querySelector('.tl-kind').textContent === 'status: completed';",
        json!([]),
    )
    .await;
}

/// Saves a PNG of the whole page at `path` (a test's `CARGO_TARGET_TMPDIR`, which only
/// a test target is given); its bytes.
pub async fn save_screenshot(page: &Browser, path: &Path) -> Vec<u8> {
    let png = page.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    std::fs::write(path, &png).expect("write the screenshot");
    eprintln!("screenshot: {} ({} bytes)", path.display(), png.len());
    png
}

/// An MCP 2026-07-28 request to `url` as the owner holding `token`.
pub async fn rpc(url: &str, token: &str, method: &str, params: Value) -> Reply {
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

/// Starts `tool` with `arguments` as a task of the owner holding `token`; its id.
pub async fn start_task(url: &str, token: &str, tool: &str, arguments: Value) -> String {
    let reply = rpc(url, token, "tools/call", call_params(tool, arguments, true)).await;
    let result = reply.result();
    assert_eq!(result["resultType"], "task", "{}", reply.text);
    result["taskId"].as_str().expect("taskId").to_owned()
}

/// Polls `owner`'s `tasks/get` of `id` on `url` until the task passes `done` (within
/// [`SHOWN`]); the task.
pub async fn owner_sees(url: &str, owner: Owner, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + SHOWN;
    loop {
        let reply = rpc(url, owner.1, "tasks/get", task_params(id, true)).await;
        if done(reply.result()) {
            return reply.result().clone();
        }
        assert!(
            Instant::now() < deadline,
            "{} never saw {id} get there in {SHOWN:?}: {}",
            owner.0,
            reply.text
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A [`owner_sees`] test: the task's status is `status`.
pub fn status_is(status: &'static str) -> impl Fn(&Value) -> bool {
    move |task| task["status"] == status
}
