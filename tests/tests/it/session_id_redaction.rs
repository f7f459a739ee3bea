//! An unauthenticated MCP 2025-11-25 session's id is its only credential: the demo
//! server (a process exporting its spans to an in-process OTLP receiver, its console on,
//! its logs kept) serves such a session with a task, then its logs (the audit trail at
//! DEBUG, WARN lines), every span it exported and every console answer about the task
//! are searched for the raw id. It is nowhere; the session's keyed tag
//! (`session:#<12 hex digits>`) is in each of them instead.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use mcp_tests::legacy::{HttpSession, created_task};
use mcp_tests::node_harness::{Logs, Node, slow};
use mcp_tests::otlp::{OtlpReceiver, ReceivedSpan};
use mcp_tests::server_harness::{Reply, WAIT};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const CONSOLE_USER: &str = "admin";
const CONSOLE_PASSWORD: &str = "redaction-test-pw";

/// How long the logs may lag behind the request that wrote them.
const LOG_WAIT: Duration = Duration::from_secs(10);

/// A console API answer as text (200 checked).
async fn console_get(node: &Node, path: &str) -> String {
    let base = node.url.trim_end_matches("/mcp");
    let credential = base64::engine::general_purpose::STANDARD
        .encode(format!("{CONSOLE_USER}:{CONSOLE_PASSWORD}"));
    let sent = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .header("authorization", format!("Basic {credential}"))
        .send();
    let response = tokio::time::timeout(WAIT, sent)
        .await
        .expect("the console answers in time")
        .expect("the console answers");
    let reply = Reply::read(response).await;
    assert_eq!(reply.status, 200, "{path}: {}", reply.text);
    reply.text
}

/// Waits (at most `within`) for `logs` to contain `needle`, and says what they held if
/// not.
async fn logged(logs: &Logs, needle: &str, within: Duration) {
    assert!(
        logs.wait_for(needle, within).await,
        "no log line with {needle:?}; the logs: {}",
        logs.text()
    );
}

/// Where `secret` is in `span`, if anywhere.
fn places_of(span: &ReceivedSpan, secret: &str) -> Vec<String> {
    span.texts()
        .into_iter()
        .filter(|(_, text)| text.contains(secret))
        .map(|(place, _)| format!("{} {place}", span.span.name))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anonymous_sessions_id_is_never_logged_exported_or_shown() {
    let receiver = OtlpReceiver::start().await;
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "redaction-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    let console = format!("{CONSOLE_USER}:{CONSOLE_PASSWORD}");
    let (node, logs) = Node::start_logged(
        Path::new(DEMO),
        "R",
        &["--store", "memory", "--console", &console],
        &env,
        "info,mcp_tasks_server=debug",
    )
    .await;

    let session = HttpSession::open(&node.url).await;
    let raw = session.id.clone();
    assert!(raw.len() >= 16, "a session id: {raw:?}");
    let created = session
        .rpc(
            "tools/call",
            json!({"name": "slow_compute", "arguments": slow(0.05, "r"), "task": {}}),
        )
        .await;
    let task_id = created_task(&created["result"])["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let got = session.rpc("tasks/get", json!({"taskId": task_id})).await;
    assert_eq!(got["result"]["taskId"], task_id.as_str(), "{got}");
    let listed = session.rpc("tasks/list", json!({})).await;
    assert!(listed["result"]["tasks"].is_array(), "{listed}");
    // A response to nothing the server asked: refused with a WARN line naming the session.
    let stray = json!({"jsonrpc": "2.0", "id": "never-asked", "result": {}});
    let refused = session.post(&stray, &[]).await;
    assert_eq!(refused.status, 400, "{}", refused.text);

    // The console shows the task's owner by the session's tag.
    let list = console_get(&node, "/console/api/tasks").await;
    let detail = console_get(&node, &format!("/console/api/tasks/{task_id}")).await;
    let listed: Value = serde_json::from_str(&list).expect("the list is JSON");
    let owner = listed["tasks"]
        .as_array()
        .and_then(|tasks| tasks.iter().find(|t| t["id"] == task_id.as_str()))
        .and_then(|t| t["owner"].as_str())
        .unwrap_or_else(|| panic!("the task in the console's list: {list}"))
        .to_owned();
    let tag = owner
        .strip_prefix("session:")
        .filter(|t| t.len() == 13 && t.starts_with('#'))
        .filter(|t| t[1..].bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| panic!("the owner is session:#<12 hex digits>: {owner:?}"))
        .to_owned();
    let shown: Value = serde_json::from_str(&detail).expect("the task is JSON");
    assert_eq!(shown["owner"], owner.as_str(), "{detail}");

    // The logs: the audit trail's principal and the WARN line name the tag.
    logged(&logs, &format!("principal={owner}"), LOG_WAIT).await;
    logged(&logs, "a response to no request of the session", LOG_WAIT).await;
    let warned = logs
        .text()
        .lines()
        .find(|l| l.contains("a response to no request of the session"))
        .map(str::to_owned)
        .unwrap_or_default();
    assert!(warned.contains(&format!("session={tag}")), "{warned}");
    logged(&logs, "op=\"tasks/get\"", LOG_WAIT).await;

    // The spans: the session's requests carry the tag as `mcp.session.id`.
    let span = receiver
        .wait_for("the session's tasks/get", |s| {
            s.attr("mcp.method.name").as_deref() == Some("tasks/get")
                && s.attr("mcp.session.id").is_some()
        })
        .await;
    assert_eq!(span.attr("mcp.session.id").as_deref(), Some(tag.as_str()));
    receiver
        .wait_for("the session's tools/call", |s| {
            s.attr("mcp.method.name").as_deref() == Some("tools/call")
                && s.attr("mcp.session.id").as_deref() == Some(tag.as_str())
        })
        .await;

    // And the raw id is nowhere: not in a log line, a span or a console answer.
    let counts = console_get(&node, "/console/api/counts").await;
    for (what, text) in [
        ("the logs", logs.text()),
        ("the console's list", list),
        ("the console's task", detail),
        ("the console's counts", counts),
    ] {
        assert!(
            !text.contains(&raw),
            "the session id {raw} in {what}: {text}"
        );
    }
    let spans = receiver.spans();
    assert!(!spans.is_empty());
    let leaks: Vec<String> = spans.iter().flat_map(|s| places_of(s, &raw)).collect();
    assert!(leaks.is_empty(), "the session id {raw} in spans: {leaks:?}");
    drop(node);
}
