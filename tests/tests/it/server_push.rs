//! Task status pushed over `subscriptions/listen` (Streamable HTTP, SSE): the
//! acknowledgement first, then `notifications/tasks` with the full DetailedTask and the
//! subscription id, up to the terminal state; nothing else on the stream. The SSE is
//! parsed from the raw byte stream.

use std::time::Duration;

use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::meta::SUBSCRIPTION_ID;
use mcp_tests::server_harness::{TASKS_EXTENSION, TestServer, meta, request};
use serde_json::{Value, json};

const EVENT_WAIT: Duration = Duration::from_secs(10);

fn listen(id: i64, task_ids: &[&str], tasks: bool) -> Value {
    let mut meta = meta(tasks);
    // Invite log messages: none may appear on a task stream anyway.
    meta["io.modelcontextprotocol/logLevel"] = json!("debug");
    request(
        id,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": task_ids}, "_meta": meta}),
    )
}

#[tokio::test]
async fn listen_acknowledges_then_pushes_each_state_up_to_completed() {
    let s = TestServer::start().await;
    let id = s
        .create_task("slow_compute", json!({"seconds": 1, "label": "pushed"}))
        .await;
    let mut stream = s.open_stream(&listen(77, &[&id], true), &[]).await;
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

    let ack = stream
        .next_event(EVENT_WAIT)
        .await
        .expect("an acknowledgement")
        .json();
    assert_eq!(ack["jsonrpc"], "2.0");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "the stream must start with the ack: {ack}"
    );
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 77, "{ack}");

    let mut statuses = Vec::new();
    let mut pushes: Vec<Value> = Vec::new();
    let last = loop {
        let event = stream
            .next_event(EVENT_WAIT)
            .await
            .expect("the stream stays open until the task ends");
        let frame = event.json();
        assert_eq!(event.event, "message");
        let method = frame["method"].as_str().unwrap_or_default();
        assert_eq!(
            method, "notifications/tasks",
            "nothing else on the stream: {frame}"
        );
        let params = &frame["params"];
        assert_eq!(params["_meta"][SUBSCRIPTION_ID], 77, "{frame}");
        assert_eq!(params["taskId"], id.as_str());
        for field in ["status", "createdAt", "lastUpdatedAt", "ttlMs"] {
            assert!(params.get(field).is_some(), "{field}: {frame}");
        }
        let status = params["status"].as_str().expect("status").to_owned();
        statuses.push(status.clone());
        // The completion reaches the stream from the runtime that wrote it and again from
        // the store's feed: each state is pushed once.
        assert!(!pushes.contains(params), "pushed twice: {frame}");
        pushes.push(params.clone());
        if matches!(status.as_str(), "completed" | "failed" | "cancelled") {
            break params.clone();
        }
    };
    assert_eq!(
        statuses.last().map(String::as_str),
        Some("completed"),
        "{statuses:?}"
    );
    assert!(
        statuses[..statuses.len() - 1]
            .iter()
            .all(|s| s == "working"),
        "{statuses:?}"
    );
    assert!(
        last["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("pushed: done")),
        "the full DetailedTask, with its result: {last}"
    );
    if let Some(more) = stream.event_within(Duration::from_millis(500)).await {
        panic!("nothing after the terminal state: {:?}", more.json());
    }

    // The pushed state is what tasks/get says (minus the envelope members).
    let got = s.get_task(&id).await;
    let mut got = got.result().clone();
    let mut pushed = last.clone();
    for v in [&mut got, &mut pushed] {
        let obj = v.as_object_mut().expect("object");
        obj.remove("resultType");
        obj.remove("_meta");
    }
    assert_eq!(pushed, got);
}

#[tokio::test]
async fn a_cancelled_task_is_pushed_as_cancelled() {
    let s = TestServer::start().await;
    let id = s.create_task("slow_compute", json!({"seconds": 30})).await;
    let mut stream = s.open_stream(&listen(5, &[&id], true), &[]).await;
    let ack = stream.next_event(EVENT_WAIT).await.expect("ack").json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let first = stream.next_event(EVENT_WAIT).await.expect("state").json();
    assert_eq!(first["params"]["status"], "working", "{first}");
    s.cancel_task(&id).await;
    loop {
        let frame = stream
            .next_event(EVENT_WAIT)
            .await
            .expect("a change")
            .json();
        assert_eq!(frame["method"], "notifications/tasks", "{frame}");
        if frame["params"]["status"] != "working" {
            assert_eq!(frame["params"]["status"], "cancelled", "{frame}");
            break;
        }
    }
}

#[tokio::test]
async fn listen_acknowledges_only_the_tasks_it_can_serve() {
    let s = TestServer::start().await;
    let id = s.create_task("slow_compute", json!({"seconds": 30})).await;
    let unknown = "0123456789abcdef0123456789abcdef";
    let mut stream = s.open_stream(&listen(6, &[unknown, &id], true), &[]).await;
    let ack = stream.next_event(EVENT_WAIT).await.expect("ack").json();
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    let first = stream.next_event(EVENT_WAIT).await.expect("state").json();
    assert_eq!(first["params"]["taskId"], id.as_str(), "{first}");
    s.cancel_task(&id).await;
}

/// D.2.19, and -32021 travels with HTTP 400 like everywhere else on HTTP.
#[tokio::test]
async fn listen_for_tasks_without_the_extension_is_32021() {
    let s = TestServer::start().await;
    let id = s.create_task("slow_compute", json!({"seconds": 30})).await;
    let reply = s
        .post(
            &listen(8, &[&id], false),
            &[("accept", "application/json, text/event-stream")],
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(
        reply.error_code(),
        error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY
    );
    assert_eq!(reply.body["id"], 8);
    assert_eq!(
        reply.error()["data"]["requiredCapabilities"]["extensions"][TASKS_EXTENSION],
        json!({})
    );
    s.cancel_task(&id).await;
}

/// A request answered over SSE (Accept: text/event-stream only) carries its response as
/// one `message` event.
#[tokio::test]
async fn a_call_can_be_answered_over_sse() {
    let s = TestServer::start().await;
    let call = request(
        3,
        "tools/call",
        json!({"name": "greet", "arguments": {"name": "Ann"}, "_meta": meta(false)}),
    );
    let mut stream = s.open_stream(&call, &[]).await;
    assert_eq!(stream.status, 200);
    let frame = stream
        .next_event(EVENT_WAIT)
        .await
        .expect("the response")
        .json();
    assert_eq!(frame["id"], 3);
    assert_eq!(frame["result"]["content"][0]["text"], "Hello, Ann!");
    assert!(
        stream.next_event(EVENT_WAIT).await.is_none(),
        "the stream ends after the response"
    );
}

/// Two clients of one principal (here: anonymous) both number their requests from 1. A
/// client that drops its stream cancels its own request, never the other client's
/// request with the same id.
#[tokio::test]
async fn a_dropped_stream_cancels_only_its_own_request_when_ids_collide() {
    let s = TestServer::start().await;
    let kept = s
        .create_task("slow_compute", json!({"seconds": 1.5, "label": "kept"}))
        .await;
    let dropped = s
        .create_task("slow_compute", json!({"seconds": 0.3, "label": "dropped"}))
        .await;
    // The stream that will be dropped opens first, the kept one second: the kept
    // request is the latest one with id 1.
    let mut second = s.open_stream(&listen(1, &[&dropped], true), &[]).await;
    let ack = second.next_event(EVENT_WAIT).await.expect("an ack").json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let mut first = s.open_stream(&listen(1, &[&kept], true), &[]).await;
    let ack = first.next_event(EVENT_WAIT).await.expect("an ack").json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    // The server finds the second client gone when it pushes that task's completion.
    drop(second);

    let last = loop {
        let event = first
            .next_event(EVENT_WAIT)
            .await
            .expect("the first stream still runs after the second was dropped")
            .json();
        if event["params"]["status"] != "working" {
            break event;
        }
    };
    assert_eq!(last["params"]["taskId"], json!(kept), "{last}");
    assert_eq!(last["params"]["status"], "completed", "{last}");
}
