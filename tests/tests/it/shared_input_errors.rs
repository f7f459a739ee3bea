//! A task's question answered with a JSON-RPC error through another instance, on a
//! shared store (PostgreSQL, Redis, a Redis Cluster with each handle connected through
//! another node): two servers in this process on two handles of one store, each behind its
//! own HTTP listener, one 2025-11-25 session served by both.
//!
//! The question (`confirm_delete`'s elicitation) is asked on one instance's stream (A's
//! standalone GET stream, or the `tasks/result` stream on B, whichever claims it); the
//! client's error reply goes to the *other* instance. As on one instance, an error answers
//! nothing and the question is asked again: the instance that got the error gives up the
//! asker's claim for it, the asker stops waiting at its next renewal, and the question
//! comes again; the client's accepting answer, again through the other instance, finishes
//! the task. (Before, the asker waited for an answer that would never come, and the task
//! stayed `input_required`.)

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use mcp_tasks::conformance::StoreFactory;
use mcp_tests::legacy::init_params;
use mcp_tests::server_harness::{
    SseStream, demo_server, open_legacy_session, request, two_instances,
};
use serde_json::{Value, json};

/// Long enough for an asker's claim renewal (every 5 s) to notice, with room.
const REASKED_WITHIN: Duration = Duration::from_secs(30);

/// The next `elicitation/create` on either stream within `within`: which stream (0 or
/// 1) and the request.
async fn next_question(streams: &mut [SseStream; 2], within: Duration) -> (usize, Value) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        assert!(!left.is_zero(), "no question asked within {within:?}");
        let [a, b] = streams;
        let step = left.min(Duration::from_millis(200));
        let (which, event) = tokio::select! {
            e = a.event_within(step) => (0, e),
            e = b.event_within(step) => (1, e),
        };
        if let Some(event) = event {
            let message = event.json();
            if message["method"] == "elicitation/create" {
                return (which, message);
            }
        }
    }
}

async fn an_error_answer_through_another_instance_asks_again<F: StoreFactory>(factory: &F) {
    let (a, b) = two_instances(factory, "shared_input_errors", demo_server).await;
    let servers = [&a, &b];
    let (sid, _) = open_legacy_session(&a, init_params()).await;
    let sid = sid.as_str();
    let standalone = a.get_stream(&[("mcp-session-id", sid)]).await;
    let created = a
        .post(
            &request(
                a.id(),
                "tools/call",
                json!({"name": "confirm_delete", "arguments": {"filename": "a.txt"}, "task": {}}),
            ),
            &[("mcp-session-id", sid), ("accept", "application/json")],
        )
        .await;
    let task_id = created.result()["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {}", created.text))
        .to_owned();
    let result_stream = b
        .open_stream(
            &request(b.id(), "tasks/result", json!({"taskId": task_id})),
            &[("mcp-session-id", sid)],
        )
        .await;
    let mut streams = [standalone, result_stream];

    // Asked on one instance; the client's error goes to the other.
    let (asked_on, first) = next_question(&mut streams, REASKED_WITHIN).await;
    let refused = json!({"jsonrpc": "2.0", "id": first["id"],
        "error": {"code": -32603, "message": "the user's terminal went away"}});
    let other = servers[1 - asked_on];
    let reply = other.post(&refused, &[("mcp-session-id", sid)]).await;
    assert_eq!(reply.status, 202, "{}", reply.text);

    // Asked again (on either stream), under a new request id.
    let (asked_on, again) = next_question(&mut streams, REASKED_WITHIN).await;
    assert_ne!(again["id"], first["id"], "a new request: {again}");
    assert_eq!(again["params"]["message"], first["params"]["message"]);
    let accepted = json!({"jsonrpc": "2.0", "id": again["id"],
        "result": {"action": "accept", "content": {"confirm": true}}});
    let other = servers[1 - asked_on];
    let reply = other.post(&accepted, &[("mcp-session-id", sid)]).await;
    assert_eq!(reply.status, 202, "{}", reply.text);

    // The tasks/result stream on B ends with the tool's result.
    let [_, result_stream] = &mut streams;
    let deadline = tokio::time::Instant::now() + REASKED_WITHIN;
    let result = loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        assert!(!left.is_zero(), "no result on the tasks/result stream");
        let Some(event) = result_stream.event_within(left).await else {
            panic!("the tasks/result stream ended without its result");
        };
        let message = event.json();
        if message.get("result").is_some() && message.get("method").is_none() {
            break message["result"].clone();
        }
    };
    assert_eq!(
        result["content"][0]["text"], "Deleted a.txt (not really: this is a demo).",
        "{result}"
    );
    drop(streams);
    a.stop().await;
    b.stop().await;
}

mcp_tests::shared_store_tests!(
    an_error_answer_through_another_instance_asks_again =>
        super::an_error_answer_through_another_instance_asks_again,
);
