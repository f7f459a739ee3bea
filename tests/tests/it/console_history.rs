//! A task's timeline in the operator console, `GET /console/api/tasks/{id}/history`, on
//! an in-process server (memory store, bearer-token owners, the console behind Basic):
//!
//! - `confirm_delete` answered by its owner through `tasks/update`: created (`working`,
//!   by the owner), the question asked (its message), the answer (its key, by the owner),
//!   `completed`, in `seq` order without gaps; the reply names the owner as the API shows
//!   owners; the read is audited at INFO with the operator as actor and the owner as
//!   principal;
//! - `build_log`'s text lines, by the worker, in order; read in pages with `after` and
//!   `limit`, the pages give the whole log once;
//! - a log past its retention says `truncated` and where it starts;
//! - an unknown task is 404; a bad `after` or `limit`, an unknown or repeated parameter is
//!   400; a store without the operator's view is 501; no credential is 401;
//! - HTML in a status message and in a line of text comes back as the JSON string it is.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::{Limits, MemoryStore};
use mcp_tasks_server::console::ConsoleConfig;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{CallToolResult, ContentBlock, TaskPolicy, ToolContext, ToolDef};
use mcp_tests::console::{
    self, assert_holds, basic, capture_audit, entries, rpc_as, seqs, task_of, wait_for,
};
use mcp_tests::deaf_store::Deaf;
use mcp_tests::server_harness::{TestServer, accept, bearer_principal, demo_tools, update_params};
use serde_json::{Value, json};

const USER: &str = "admin";
const PASSWORD: &str = "history-pass";
/// Markup that would run script if a page parsed it.
const STATUS_HTML: &str = r#"<img src=x onerror="window.__pwned=1">"#;
const TEXT_HTML: &str = "<script>window.__pwned=2</script><b>bold</b>";

fn operator() -> String {
    basic(USER, PASSWORD)
}

/// A tool that says HTML: its status message, then a line of text, then waits `ms`.
fn html_tool() -> ToolDef {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        #[serde(default)]
        ms: u64,
    }
    ToolDef::new(
        "html_says",
        TaskPolicy::Required,
        |ctx: ToolContext, args: Args| async move {
            ctx.status(STATUS_HTML).await?;
            ctx.emit_text(TEXT_HTML).await?;
            tokio::time::sleep(Duration::from_millis(args.ms.min(60_000))).await;
            Ok(CallToolResult::new(vec![ContentBlock::Text(
                mcp_tasks_protocol::types::TextContent::new("said"),
            )]))
        },
    )
    .expect("tool")
}

/// The demo tools and `html_says` on `store`, bearer owners, the console behind Basic.
async fn server_on(store: Arc<dyn mcp_tasks::TaskStore>) -> TestServer {
    let http = HttpConfig {
        principal: Some(bearer_principal()),
        console: Some(ConsoleConfig::basic(USER, PASSWORD).expect("valid")),
        ..HttpConfig::default()
    };
    let tools = demo_tools().into_iter().chain([html_tool()]);
    console::server_on("console-history", store, tools, http).await
}

async fn server() -> TestServer {
    server_on(Arc::new(MemoryStore::default())).await
}

/// GET `path` on the server's origin with `auth`: the status and the JSON body.
async fn get(s: &TestServer, path: &str, auth: Option<&str>) -> (u16, Value) {
    let got = console::call(s, reqwest::Method::GET, path, auth, None).await;
    (got.status, got.body)
}

/// Runs `tool` as a task of `owner` to its completion; its id.
async fn completed_task(s: &TestServer, owner: &str, tool: &str, args: Value) -> String {
    let id = task_of(s, owner, tool, args).await;
    wait_for(s, owner, &id, |t| t["status"] == "completed").await;
    id
}

/// The history of `id` (with `query`), which must answer 200.
async fn history(s: &TestServer, id: &str, query: &str) -> Value {
    let path = format!("/console/api/tasks/{id}/history{query}");
    let (status, body) = get(s, &path, Some(&operator())).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

// Current-thread: the server's tasks run on this thread, under its audit subscriber.
#[tokio::test(flavor = "current_thread")]
async fn an_answered_question_shows_in_order_with_who_acted() {
    let (audit, _guard) = capture_audit("trace");

    let s = server().await;
    let file = "<b>report</b>.txt";
    let id = task_of(&s, "bob", "confirm_delete", json!({ "filename": file })).await;
    let asking = wait_for(&s, "bob", &id, |t| t["status"] == "input_required").await;
    let key = asking["inputRequests"]
        .as_object()
        .and_then(|o| o.keys().next().cloned())
        .expect("a question");
    let mut responses = serde_json::Map::new();
    responses.insert(key.clone(), accept(json!({ "confirm": true })));
    let answered = rpc_as(
        &s,
        "bob",
        "tasks/update",
        update_params(&id, Value::Object(responses)),
    )
    .await;
    assert!(answered.is_object(), "{answered}");
    wait_for(&s, "bob", &id, |t| t["status"] == "completed").await;

    let reply = history(&s, &id, "").await;
    assert_eq!(reply["taskId"], id.as_str());
    assert_eq!(reply["owner"], "bob");
    assert_eq!(reply["status"], "completed");
    assert_eq!(reply["earliestSeq"], 0);
    assert_eq!(reply.get("truncated"), None, "{reply}");
    let list = entries(&reply);
    assert_eq!(
        seqs(&list),
        (0..list.len() as u64).collect::<Vec<_>>(),
        "{reply}"
    );
    assert_eq!(reply["nextSeq"], list.len() as u64);
    for entry in &list {
        assert!(entry["at"].as_i64().is_some_and(|at| at > 0), "{entry}");
        assert!(
            entry["time"]
                .as_str()
                .is_some_and(mcp_tests::server_harness::is_iso_timestamp),
            "{entry}"
        );
    }
    // Created, by the owner.
    assert_eq!(list[0]["type"], "rs.mcp-tasks.status");
    assert_eq!(list[0]["payload"]["status"], "working");
    assert_eq!(list[0]["actor"], "owner");
    // The question, with its message (HTML as text), asked by the worker.
    let at = |kind: &str| {
        list.iter()
            .position(|e| e["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {reply}"))
    };
    let (input, answer) = (at("rs.mcp-tasks.input"), at("rs.mcp-tasks.answer"));
    assert!(0 < input && input < answer, "{reply}");
    let question = &list[input];
    assert_eq!(question["payload"]["status"], "input_required");
    assert_eq!(question["actor"], "worker");
    let message = question["payload"]["inputRequests"][&key]["params"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("the question's message: {question}"));
    assert_eq!(message, format!("Delete {file}?"));
    // The answer: its key only, by the owner.
    assert_eq!(list[answer]["payload"]["keys"], json!([key]));
    assert_eq!(list[answer]["actor"], "owner");
    assert!(
        !list[answer].to_string().contains("confirm\":true"),
        "the answer itself is not in the log: {}",
        list[answer]
    );
    // Completed, last.
    let last = list.last().expect("entries");
    assert_eq!(last["type"], "rs.mcp-tasks.status");
    assert_eq!(last["payload"]["status"], "completed");

    // Audited like a task read in full.
    let line = audit.first_with(&["op=\"console: history\""]);
    assert_holds(
        &line,
        &[
            "INFO",
            "actor=admin",
            "principal=bob",
            &format!("task_id=\"{id}\""),
            "outcome=\"ok\"",
        ],
    );
    let text = audit.text();
    assert!(!text.contains(PASSWORD), "{text}");
    s.stop().await;
}

#[tokio::test]
async fn a_tools_lines_are_in_order_and_read_in_pages() {
    let s = server().await;
    let id = completed_task(
        &s,
        "alice",
        "build_log",
        json!({ "steps": 5, "interval_ms": 20 }),
    )
    .await;
    let whole = history(&s, &id, "").await;
    let list = entries(&whole);
    assert_eq!(whole["owner"], "alice");
    let lines: Vec<&Value> = list
        .iter()
        .filter(|e| e["type"] == "rs.mcp-tasks.text")
        .collect();
    assert_eq!(lines.len(), 5, "{whole}");
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(
            line["payload"]["text"],
            format!("[{}/5] Compiling demo-unit-{} ... ok", i + 1, i + 1)
        );
        assert_eq!(line["actor"], "worker", "{line}");
    }
    assert!(
        list.iter()
            .any(|e| e["payload"]["statusMessage"] == "building: 5 steps"),
        "the status message: {whole}"
    );
    assert_eq!(
        list.last().expect("entries")["payload"]["status"],
        "completed"
    );

    // Pages of two, each after the last one's seq: the whole log once.
    let mut paged = Vec::new();
    let mut after: Option<u64> = None;
    for _ in 0..list.len() + 1 {
        let query = match after {
            Some(seq) => format!("?limit=2&after={seq}"),
            None => "?limit=2".to_owned(),
        };
        let page = history(&s, &id, &query).await;
        let got = entries(&page);
        assert!(got.len() <= 2, "{page}");
        let Some(last) = got.last() else { break };
        after = last["seq"].as_u64();
        paged.extend(got);
    }
    assert_eq!(paged, list, "the pages make the whole log");
    let past = history(&s, &id, &format!("?after={}", list.len() - 1)).await;
    assert_eq!(past["entries"], json!([]), "{past}");
    assert_eq!(past["nextSeq"], list.len() as u64);
    let one = history(&s, &id, "?after=2&limit=1").await;
    assert_eq!(seqs(&entries(&one)), [3]);
    s.stop().await;
}

#[tokio::test]
async fn a_log_past_its_retention_says_it_is_truncated() {
    let limits = Limits {
        max_log_entries: 4,
        ..Limits::default()
    };
    let s = server_on(Arc::new(MemoryStore::new(limits))).await;
    let id = completed_task(
        &s,
        "alice",
        "build_log",
        json!({ "steps": 8, "interval_ms": 5 }),
    )
    .await;
    let reply = history(&s, &id, "").await;
    let list = entries(&reply);
    assert_eq!(reply["truncated"], true, "{reply}");
    assert_eq!(list.len(), 4, "{reply}");
    let earliest = reply["earliestSeq"].as_u64().expect("earliestSeq");
    assert!(earliest > 0, "{reply}");
    assert_eq!(seqs(&list), (earliest..earliest + 4).collect::<Vec<_>>());
    assert_eq!(reply["nextSeq"], earliest + 4);
    s.stop().await;
}

#[tokio::test]
async fn bad_requests_are_refused_with_their_reason() {
    let s = server().await;
    let id = task_of(
        &s,
        "bob",
        "build_log",
        json!({ "steps": 1, "interval_ms": 1 }),
    )
    .await;
    let auth = operator();
    let (status, body) = get(&s, "/console/api/tasks/0000/history", Some(&auth)).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"], "task not found");
    for (query, says) in [
        ("after=-1", "after"),
        ("after=abc", "after"),
        ("after=1.5", "after"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=ten", "limit"),
        ("cursor=x", "unknown parameter cursor"),
        ("after=1&after=2", "twice"),
    ] {
        let path = format!("/console/api/tasks/{id}/history?{query}");
        let (status, body) = get(&s, &path, Some(&auth)).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| e.contains(says)),
            "{query}: {body}"
        );
    }
    let path = format!("/console/api/tasks/{id}/history");
    let (status, body) = get(&s, &path, None).await;
    assert_eq!(status, 401, "{body}");
    let (status, _) = get(&s, &format!("{path}?limit=1000&after="), Some(&auth)).await;
    assert_eq!(status, 200, "an empty value is no value");
    s.stop().await;
}

#[tokio::test]
async fn a_store_without_the_operators_view_is_501() {
    let s = server_on(Arc::new(Deaf::store())).await;
    let id = task_of(
        &s,
        "bob",
        "build_log",
        json!({ "steps": 1, "interval_ms": 1 }),
    )
    .await;
    let path = format!("/console/api/tasks/{id}/history");
    let (status, body) = get(&s, &path, Some(&operator())).await;
    assert_eq!(status, 501, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("does not support")),
        "{body}"
    );
    s.stop().await;
}

#[tokio::test]
async fn html_in_a_status_message_or_a_line_is_data() {
    let s = server().await;
    let id = completed_task(&s, "bob", "html_says", json!({ "ms": 10 })).await;
    let reply = history(&s, &id, "").await;
    let list = entries(&reply);
    assert!(
        list.iter()
            .any(|e| e["type"] == "rs.mcp-tasks.status"
                && e["payload"]["statusMessage"] == STATUS_HTML),
        "{reply}"
    );
    assert!(
        list.iter()
            .any(|e| e["type"] == "rs.mcp-tasks.text" && e["payload"]["text"] == TEXT_HTML),
        "{reply}"
    );
    s.stop().await;
}
