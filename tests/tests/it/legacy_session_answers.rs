//! MCP 2025-11-25: the answer to a question the server asks a session's client
//! (elicitation, sampling, roots; a task's input request) is taken only from that session
//! (issue 35, finding 1). Callers here are anonymous, so they share one principal: before,
//! they shared one pending map too, the server numbered its questions 1, 2, 3, and any
//! caller could answer another session's question.
//!
//! On one instance, a synchronous `confirm_delete` of session A asks on A's stream; a
//! response with that question's id POSTed without a session, in another session, or with
//! the guessable old id is refused (400) and completes nothing; A's own answer (a decline)
//! is the one its call returns. On two instances of a shared store (PostgreSQL, Redis),
//! the same for a task's question: refused on either instance, in another session or
//! none; A's answer through the other instance finishes the task with A's answer.

use std::time::Duration;

use mcp_tasks::conformance::StoreFactory;
use mcp_tasks_protocol::error_codes;
use mcp_tests::legacy::init_params;
use mcp_tests::server_harness::{
    POLL_EVERY, Reply, SseStream, TestServer, WAIT, demo_server, open_legacy_session, request,
    two_instances,
};
use serde_json::{Value, json};

/// What an attacker would answer: "yes, delete it".
fn accept() -> Value {
    json!({"action": "accept", "content": {"confirm": true}})
}

/// What the session's own client answers.
fn decline() -> Value {
    json!({"action": "decline"})
}

fn answer(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The next `elicitation/create` on `stream` (within [`WAIT`]).
async fn next_question(stream: &mut SseStream) -> Value {
    loop {
        let Some(event) = stream.next_event(WAIT).await else {
            panic!("the stream ended without a question");
        };
        let message = event.json();
        if message["method"] == "elicitation/create" {
            return message;
        }
    }
}

/// The response (not a notification or request) on `stream`, within [`WAIT`].
async fn next_response(stream: &mut SseStream) -> Value {
    loop {
        let Some(event) = stream.next_event(WAIT).await else {
            panic!("the stream ended without its response");
        };
        let message = event.json();
        if message.get("method").is_none() {
            return message;
        }
    }
}

/// A response refused as answering nothing: HTTP 400 with a JSON-RPC error without id.
fn assert_refused(reply: &Reply, what: &str) {
    assert_eq!(reply.status, 400, "{what}: {}", reply.text);
    assert_eq!(
        reply.body["error"]["code"],
        error_codes::INVALID_REQUEST,
        "{what}: {}",
        reply.text
    );
    assert!(reply.body["id"].is_null(), "{what}: {}", reply.text);
}

#[tokio::test]
async fn another_callers_answer_to_a_sessions_question_is_refused() {
    let s = TestServer::start().await;
    let (a, _) = open_legacy_session(&s, init_params()).await;
    let (b, _) = open_legacy_session(&s, init_params()).await;
    let call = request(
        s.id(),
        "tools/call",
        json!({"name": "confirm_delete", "arguments": {"filename": "important.db"}}),
    );
    let mut stream = s.open_stream(&call, &[("mcp-session-id", &a)]).await;
    assert_eq!(stream.status, 200);
    let question = next_question(&mut stream).await;
    let id = &question["id"];
    // Not a number anyone could count to.
    let spelled = id
        .as_str()
        .unwrap_or_else(|| panic!("a string id: {question}"));
    assert!(spelled.len() >= 32, "an unguessable id: {question}");

    // Without a session, in another session, or under the old guessable id: refused.
    let none = s.post(&answer(id, accept()), &[]).await;
    assert_refused(&none, "no Mcp-Session-Id");
    assert!(
        none.text.contains("Mcp-Session-Id"),
        "says what is missing: {}",
        none.text
    );
    let other = s
        .post(&answer(id, accept()), &[("mcp-session-id", &b)])
        .await;
    assert_refused(&other, "another session");
    for guess in [json!(1), json!("1")] {
        let guessed = s.post(&answer(&guess, accept()), &[]).await;
        assert_refused(&guessed, "a guessed id without a session");
        let guessed = s
            .post(&answer(&guess, accept()), &[("mcp-session-id", &a)])
            .await;
        assert_refused(&guessed, "a guessed id in the session");
    }

    // The question is still A's to answer; A's answer is the one the call returns.
    let own = s
        .post(&answer(id, decline()), &[("mcp-session-id", &a)])
        .await;
    assert_eq!(own.status, 202, "{}", own.text);
    let response = next_response(&mut stream).await;
    assert_eq!(response["id"], call["id"], "{response}");
    assert_eq!(
        response["result"]["content"][0]["text"], "Kept important.db.",
        "{response}"
    );
    // Answered once: the same answer again completes nothing.
    let again = s
        .post(&answer(id, accept()), &[("mcp-session-id", &a)])
        .await;
    assert_refused(&again, "an answered question");
    s.stop().await;
}

/// A session's requests to its client never reach another session's streams either: B's
/// standalone stream stays quiet while A is asked.
#[tokio::test]
async fn a_sessions_question_goes_to_its_own_stream_only() {
    let s = TestServer::start().await;
    let (a, _) = open_legacy_session(&s, init_params()).await;
    let (b, _) = open_legacy_session(&s, init_params()).await;
    let mut b_stream = s.get_stream(&[("mcp-session-id", &b)]).await;
    assert_eq!(b_stream.status, 200);
    let call = request(
        s.id(),
        "tools/call",
        json!({"name": "confirm_delete", "arguments": {"filename": "a.txt"}}),
    );
    let mut stream = s.open_stream(&call, &[("mcp-session-id", &a)]).await;
    let question = next_question(&mut stream).await;
    assert!(
        b_stream
            .event_within(Duration::from_millis(200))
            .await
            .is_none(),
        "nothing for B"
    );
    let own = s
        .post(
            &answer(&question["id"], accept()),
            &[("mcp-session-id", &a)],
        )
        .await;
    assert_eq!(own.status, 202, "{}", own.text);
    let response = next_response(&mut stream).await;
    assert_eq!(
        response["result"]["content"][0]["text"], "Deleted a.txt (not really: this is a demo).",
        "{response}"
    );
    drop(b_stream);
    s.stop().await;
}

/// A JSON request of session `sid` on `s`; its result.
async fn session_result(s: &TestServer, sid: &str, method: &str, params: Value) -> Value {
    let reply = s
        .post(
            &request(s.id(), method, params),
            &[("mcp-session-id", sid), ("accept", "application/json")],
        )
        .await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.text);
    reply.result().clone()
}

async fn a_tasks_question_is_answered_only_in_its_session<F: StoreFactory>(factory: &F) {
    let (one, two) = two_instances(factory, "legacy_session_answers", demo_server).await;
    let (a, _) = open_legacy_session(&one, init_params()).await;
    let (b, _) = open_legacy_session(&two, init_params()).await;
    let mut standalone = one.get_stream(&[("mcp-session-id", &a)]).await;
    assert_eq!(standalone.status, 200);
    let created = session_result(
        &one,
        &a,
        "tools/call",
        json!({"name": "confirm_delete", "arguments": {"filename": "important.db"}, "task": {}}),
    )
    .await;
    let task = created["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    let question = next_question(&mut standalone).await;
    let id = &question["id"];

    // Refused on both instances: in B's session (B's own instance, and the one asking)
    // and without a session.
    for (s, session) in [
        (&two, Some(&b)),
        (&one, Some(&b)),
        (&two, None),
        (&one, None),
    ] {
        let headers: Vec<(&str, &str)> = session
            .map(|sid| ("mcp-session-id", sid.as_str()))
            .into_iter()
            .collect();
        let refused = s.post(&answer(id, accept()), &headers).await;
        assert_refused(&refused, &format!("{} session {session:?}", s.url));
        // An error answer gives up nothing of another session's question either.
        let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "no"}});
        let refused = s.post(&error, &headers).await;
        assert_refused(
            &refused,
            &format!("an error, {} session {session:?}", s.url),
        );
    }
    let status = session_result(&one, &a, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(status["status"], "input_required", "{status}");

    // A's answer, through the instance that did not ask, is the task's answer.
    let own = two
        .post(&answer(id, decline()), &[("mcp-session-id", &a)])
        .await;
    assert_eq!(own.status, 202, "{}", own.text);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let status = session_result(&one, &a, "tasks/get", json!({"taskId": task})).await;
        if status["status"] == "completed" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task did not finish: {status}"
        );
        tokio::time::sleep(POLL_EVERY).await;
    }
    let result = session_result(&one, &a, "tasks/result", json!({"taskId": task})).await;
    assert_eq!(
        result["content"][0]["text"], "Kept important.db.",
        "{result}"
    );
    drop(standalone);
    one.stop().await;
    two.stop().await;
}

mcp_tests::shared_store_tests!(
    a_tasks_question_is_answered_only_in_its_session =>
        super::a_tasks_question_is_answered_only_in_its_session,
);
