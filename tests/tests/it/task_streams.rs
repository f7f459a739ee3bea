//! Task event streams (`tasks/stream`, draft SEP-2694) over Streamable HTTP: a task's log
//! replayed and then followed live on the request's own SSE stream, numbered from 0
//! without gaps, ended by the empty result after the terminal event; resumed after a
//! cursor; `events_gone` past retention; refused like `tasks/get` for a task the caller
//! cannot see; a tool's own events checked (prefix, size).

use std::sync::Arc;

use mcp_tasks::{Limits, MemoryStore};
use mcp_tasks_protocol::error_codes;
use mcp_tasks_server::{
    CallToolResult, ContentBlock, RuntimeConfig, Server, TaskPolicy, ToolContext, ToolDef,
};
use mcp_tests::server_harness::{Reply, TestServer, demo_tools, meta, request, task_params};
use mcp_tests::task_stream::{EVENT_WAIT, read_to_end, seqs, stream_request};
use serde_json::{Value, json};

/// The response to a `tasks/stream` answered before any event: the JSON reply, or the
/// frame with an id of an event stream.
fn response_of(reply: &Reply) -> Value {
    if !reply.body.is_null() {
        return reply.body.clone();
    }
    reply
        .text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|frame| frame.get("id").is_some())
        .unwrap_or_else(|| panic!("no response in {:?}", reply.text))
}

/// The response to a `tasks/stream` refused before any event.
async fn refusal(s: &TestServer, message: &Value) -> Value {
    response_of(&s.post(message, &[]).await)
}

fn server_with_limits(limits: Limits, tools: Vec<ToolDef>) -> Server {
    let mut builder = Server::builder("mcp-tests", "0")
        .store(Arc::new(MemoryStore::new(limits)))
        .runtime(RuntimeConfig::default());
    for tool in tools {
        builder = builder.tool(tool);
    }
    builder.build()
}

#[tokio::test]
async fn a_stream_replays_follows_live_and_ends_after_the_terminal_event() {
    let s = TestServer::start().await;
    let discovered = s
        .rpc("server/discover", json!({ "_meta": meta(true) }))
        .await;
    assert_eq!(
        discovered.result()["capabilities"]["extensions"]["rs.mcp-tasks/event-streams"],
        json!({}),
        "advertised: {:?}",
        discovered.result()
    );
    assert_eq!(
        discovered.result()["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "the extension's own settings stay empty, as its schema and the ext-tasks library want"
    );
    let id = s
        .create_task("build_log", json!({ "steps": 5, "interval_ms": 150 }))
        .await;
    let mut stream = s.open_stream(&stream_request(9, &id, None), &[]).await;
    assert_eq!(stream.status, 200);
    assert!(
        stream
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream")),
        "{:?}",
        stream.headers
    );
    let (events, response) = read_to_end(&mut stream).await;
    assert_eq!(response["id"], 9);
    assert_eq!(response["result"], json!({ "resultType": "complete" }));
    let n = events.len() as u64;
    assert_eq!(
        seqs(&events),
        (0..n).collect::<Vec<_>>(),
        "no gap, in order"
    );
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types.first(), Some(&"rs.mcp-tasks.status"));
    assert_eq!(events[0]["payload"]["status"], "working");
    let texts: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "rs.mcp-tasks.text")
        .map(|e| e["payload"]["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts.len(), 5, "{events:?}");
    assert_eq!(texts[0], "[1/5] Compiling demo-unit-1 ... ok");
    let last = events.last().expect("events");
    assert_eq!(last["type"], "rs.mcp-tasks.status");
    assert_eq!(last["payload"]["status"], "completed");
    for e in &events {
        assert_eq!(e["taskId"], id.as_str());
        let meta = &e["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/related-task"]["taskId"],
            id.as_str()
        );
        assert!(
            meta["rs.mcp-tasks/at"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z')),
            "{e}"
        );
        assert!(meta["rs.mcp-tasks/actor"].is_string(), "{e}");
    }
    // The stream and tasks/get agree on how the task ended.
    assert_eq!(s.get_task(&id).await.result()["status"], "completed");

    // Resumed after a cursor: what follows it, the same events.
    let mut again = s.open_stream(&stream_request(10, &id, Some(2)), &[]).await;
    let (tail, _) = read_to_end(&mut again).await;
    assert_eq!(tail, events[3..].to_vec());
    // A finished task with nothing after the cursor answers at once.
    let mut done = s
        .open_stream(&stream_request(11, &id, Some(n - 1)), &[])
        .await;
    let (none, response) = read_to_end(&mut done).await;
    assert!(none.is_empty());
    assert_eq!(response["result"]["resultType"], "complete");
    // A cursor past the last event never existed.
    let mut ahead = s
        .open_stream(&stream_request(12, &id, Some(n + 5)), &[])
        .await;
    let (_, refused) = read_to_end(&mut ahead).await;
    assert_eq!(
        refused["error"]["code"],
        error_codes::INVALID_PARAMS,
        "{refused}"
    );
}

#[tokio::test]
async fn events_past_retention_are_gone_and_dropping_the_stream_leaves_the_task() {
    let limits = Limits {
        max_log_entries: 4,
        ..Limits::default()
    };
    let s = TestServer::start_server(server_with_limits(limits, demo_tools()), Default::default())
        .await;
    let id = s
        .create_task("build_log", json!({ "steps": 8, "interval_ms": 100 }))
        .await;
    // A reader that goes away mid-stream stops nothing.
    let mut early = s.open_stream(&stream_request(1, &id, None), &[]).await;
    let first = early.next_event(EVENT_WAIT).await.expect("an event").json();
    assert_eq!(first["params"]["seq"], 0);
    drop(early);
    let ended = s.poll_terminal(&id).await;
    assert_eq!(ended["status"], "completed", "{ended}");

    // 11 entries (created, status message, 8 lines, completed), 4 kept: 7..=10.
    let mut behind = s.open_stream(&stream_request(2, &id, Some(1)), &[]).await;
    let (events, gone) = read_to_end(&mut behind).await;
    assert!(events.is_empty(), "nothing skipped silently: {events:?}");
    assert_eq!(gone["error"]["code"], -32010, "{gone}");
    assert_eq!(gone["error"]["data"]["reason"], "events_gone");
    assert_eq!(gone["error"]["data"]["taskId"], id.as_str());
    let earliest = gone["error"]["data"]["earliestSeq"]
        .as_u64()
        .expect("earliestSeq");
    assert_eq!(earliest, 7);
    // Both ways back in: after earliestSeq - 1, or without a cursor.
    for (rid, after) in [(3, Some(earliest - 1)), (4, None)] {
        let mut resumed = s.open_stream(&stream_request(rid, &id, after), &[]).await;
        let (events, response) = read_to_end(&mut resumed).await;
        assert_eq!(seqs(&events), [7, 8, 9, 10]);
        assert_eq!(response["result"]["resultType"], "complete");
    }
}

#[tokio::test]
async fn a_stream_is_refused_as_tasks_get_is() {
    let s = TestServer::start().await;
    let id = s
        .create_task("slow_compute", json!({ "seconds": 30 }))
        .await;
    // Unknown: the same error as tasks/get.
    let unknown = "0".repeat(32);
    let got = s.rpc("tasks/get", task_params(&unknown, true)).await;
    let refused = refusal(&s, &stream_request(5, &unknown, None)).await;
    assert_eq!(refused["error"]["code"], got.error_code());
    assert_eq!(refused["error"]["message"], got.error_message());
    // Without the tasks extension declared: -32021.
    let params = json!({ "taskId": id, "_meta": meta(false) });
    let refused = refusal(&s, &request(6, "tasks/stream", params)).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    // A negative cursor is invalid params.
    let params = json!({ "taskId": id, "after": -1, "_meta": meta(true) });
    let refused = refusal(&s, &request(7, "tasks/stream", params)).await;
    assert_eq!(
        refused["error"]["code"],
        error_codes::INVALID_PARAMS,
        "{refused}"
    );
    // The stream needs an event stream reply.
    let reply = s
        .post(
            &stream_request(8, &id, None),
            &[("accept", "application/json")],
        )
        .await;
    assert_eq!(reply.status, 406, "{:?}", reply.body);
    s.cancel_task(&id).await;
}

#[tokio::test]
async fn a_tools_events_need_a_prefix_of_their_own_and_a_bounded_size() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        kind: String,
        bytes: usize,
    }
    let tool = ToolDef::new(
        "emitter",
        TaskPolicy::Required,
        |ctx: ToolContext, args: Args| async move {
            let mut payload = serde_json::Map::new();
            payload.insert("text".into(), json!("x".repeat(args.bytes)));
            let seq = ctx.emit(args.kind, payload).await?;
            Ok(CallToolResult::new(vec![ContentBlock::Text(
                mcp_tasks_protocol::types::TextContent::new(format!("{seq:?}")),
            )]))
        },
    )
    .expect("tool");
    let limits = Limits {
        max_log_entry_bytes: 1_000,
        ..Limits::default()
    };
    let s =
        TestServer::start_server(server_with_limits(limits, vec![tool]), Default::default()).await;
    let ok = s
        .create_task(
            "emitter",
            json!({ "kind": "com.example.note", "bytes": 10 }),
        )
        .await;
    let done = s.poll_terminal(&ok).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Some(1)");
    for (kind, bytes, why) in [
        ("progress", 10, "vendor prefix"),
        ("io.modelcontextprotocol/progress", 10, "vendor prefix"),
        ("com.example.note", 2_000, "at most 1000"),
    ] {
        let id = s
            .create_task("emitter", json!({ "kind": kind, "bytes": bytes }))
            .await;
        let failed = s.poll_terminal(&id).await;
        assert_eq!(failed["status"], "failed", "{kind}: {failed}");
        assert_eq!(
            failed["error"]["code"],
            error_codes::INVALID_PARAMS,
            "{failed}"
        );
        assert!(
            failed["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(why)),
            "{kind}: {failed}"
        );
    }
}

/// Another owner's task streams as an unknown one: the same error as `tasks/get`, and
/// no event of it.
#[tokio::test]
async fn another_owners_task_is_not_streamed() {
    use mcp_tasks_server::http::HttpConfig;
    use mcp_tests::server_harness::{bearer_principal, call_params};

    let s = TestServer::start_http(HttpConfig {
        principal: Some(bearer_principal()),
        ..HttpConfig::default()
    })
    .await;
    let alice = [("authorization", "Bearer alice")];
    let bob = [("authorization", "Bearer bob")];
    let created = s
        .post(
            &request(
                1,
                "tools/call",
                call_params("build_log", json!({ "steps": 3 }), true),
            ),
            &alice,
        )
        .await;
    let id = created.result()["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let got = s
        .post(&request(2, "tasks/get", task_params(&id, true)), &bob)
        .await;
    let reply = s.post(&stream_request(3, &id, None), &bob).await;
    let refused = response_of(&reply);
    assert!(
        !reply.text.contains("notifications/tasks/event"),
        "{}",
        reply.text
    );
    assert_eq!(refused["error"]["code"], got.error_code(), "{refused}");
    assert_eq!(
        refused["error"]["message"],
        got.error_message(),
        "{refused}"
    );
    // Its owner streams it.
    let mine = s.post(&stream_request(4, &id, None), &alice).await;
    assert!(
        mine.text.contains("notifications/tasks/event"),
        "{}",
        mine.text
    );
}
