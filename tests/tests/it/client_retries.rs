//! The client's safe retries (issue 50): a task-augmented `tools/call` of a tool the
//! server's `tools/list` flags as deduplicating keyed calls (`_meta["rs.mcp-tasks/idempotency"]`)
//! carries an idempotency key (a fresh one by default, or the caller's), in `params` and
//! `_meta`, and is sent again with it when its answer was lost — a 502, 503 or 504
//! without a JSON-RPC answer, a connection closed without a response, a 429 after its
//! `Retry-After` — within the configured attempts. A tool not flagged (a synchronous one)
//! gets no key by default, and its lost answer is not retried even with the caller's
//! key: it would run again; a 2026-07-28 client that has not listed the tools knows no
//! flag, so sends no key of its own. Against our real server behind a fault-injecting front
//! ([`RetryFront`]) that lets each faulted request reach the server and loses its answer:
//! every attempt names the same task, the tool runs once, the retries are told to the
//! hook. A call without a key (keys off, or a plain 2025-11-25 call) is never retried.
//! The client's request timeout is retried like a lost answer, for a flagged tool only,
//! and the timed-out attempt is not cancelled (no `notifications/cancelled` reaches the
//! server: the task it started is what the retry finds); another call that times out is
//! cancelled and not retried. Both revisions where the path differs (2026-07-28;
//! 2025-11-25 with `params.task`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks_client::{
    ClientConfig, ClientError, DeclineAll, McpClient, RetryConfig, RetryNotice, Revision, Started,
    ToolCall,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, TaskPolicy};
use mcp_tests::retry_front::{Call, Fault, RetryFront};
use mcp_tests::server_harness::TestServer;
use serde_json::{Value, json};

use crate::idempotency::counted;

/// The bound of one scenario.
const WAIT: Duration = Duration::from_secs(40);

/// The deadline of `counted_after`: past [`SHORT_TIMEOUT`], so that a call it answers
/// in the request times out first.
const AFTER: Duration = Duration::from_secs(3);

/// The client's request timeout where a test makes one time out.
const SHORT_TIMEOUT: Duration = Duration::from_millis(500);

/// Our server (`counted`: always a task; `counted_sync`: never; `counted_after`: a task
/// at [`AFTER`]), its run counter, and the front before it.
struct Setup {
    _server: TestServer,
    front: RetryFront,
    runs: Arc<AtomicUsize>,
    notices: Arc<Mutex<Vec<RetryNotice>>>,
}

async fn setup() -> Setup {
    let runs = Arc::new(AtomicUsize::new(0));
    let tools = vec![
        counted("counted", TaskPolicy::Required, &runs),
        counted("counted_sync", TaskPolicy::Synchronous, &runs),
        counted("counted_after", TaskPolicy::After(AFTER), &runs),
    ];
    let server =
        TestServer::start_with(tools, RuntimeConfig::default(), HttpConfig::default()).await;
    let front = RetryFront::start(&server.url).await;
    Setup {
        _server: server,
        front,
        runs,
        notices: Arc::default(),
    }
}

impl Setup {
    /// A client of `revision` through the front that has listed the tools (so it knows
    /// which the server deduplicates), its retries told to `notices`, with short
    /// back-offs; `tune` changes the rest.
    async fn client(&self, revision: Revision, tune: impl FnOnce(&mut ClientConfig)) -> McpClient {
        let client = self.unlisted_client(revision, tune).await;
        tokio::time::timeout(WAIT, client.list_tools())
            .await
            .expect("listed in time")
            .expect("tools/list");
        client
    }

    /// [`client`](Self::client) without listing the tools.
    async fn unlisted_client(
        &self,
        revision: Revision,
        tune: impl FnOnce(&mut ClientConfig),
    ) -> McpClient {
        let notices = Arc::clone(&self.notices);
        let mut config = ClientConfig {
            revision,
            retry: RetryConfig {
                initial_backoff: Duration::from_millis(10),
                ..RetryConfig::default()
            },
            ..ClientConfig::default()
        }
        .on_retry(Arc::new(move |n: &RetryNotice| {
            notices
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(n.clone())
        }));
        tune(&mut config);
        tokio::time::timeout(
            WAIT,
            McpClient::connect_http(&self.front.url, Arc::new(DeclineAll), config),
        )
        .await
        .expect("connected in time")
        .expect("connect")
    }

    fn notices(&self) -> Vec<RetryNotice> {
        self.notices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The `tools/call`s of tool `name` the front passed on.
    fn calls_of(&self, name: &str) -> Vec<Call> {
        self.front
            .calls()
            .into_iter()
            .filter(|c| c.params["name"] == name)
            .collect()
    }
}

/// The arguments of a `counted` call labelled `text`: it works 50 ms.
fn label(text: &str) -> JsonObject {
    let mut args = JsonObject::new();
    args.insert("label".into(), json!(text));
    args.insert("ms".into(), json!(50));
    args
}

/// The idempotency key a call sent: `params.idempotencyKey`, which must equal
/// `_meta.idempotencyKey` when both are there.
fn key_sent(call: &Call) -> Option<String> {
    let param = call.params.get("idempotencyKey").and_then(Value::as_str);
    let meta = call.params["_meta"]
        .get("idempotencyKey")
        .and_then(Value::as_str);
    assert_eq!(
        param, meta,
        "params and _meta carry one key: {}",
        call.params
    );
    param.map(str::to_owned)
}

async fn call(client: &McpClient, call: ToolCall) -> Result<Started, ClientError> {
    tokio::time::timeout(WAIT, client.call_as_task(call))
        .await
        .expect("answered in time")
}

/// Lost answers of every kind, then the answer: one key on every attempt, every attempt
/// answered with one task, the tool run once, each retry told.
async fn lost_answers_are_retried_with_one_key(revision: Revision, given: Option<&str>) {
    let s = setup().await;
    let client = s.client(revision, |_| {}).await;
    s.front.fail_next([
        Fault::Status(502),
        Fault::Status(503),
        Fault::Status(504),
        Fault::Close,
    ]);
    let mut operation = ToolCall::new("counted", label("once"));
    if let Some(key) = given {
        operation = operation.with_idempotency_key(key);
    }
    let Started::Task(handle) = call(&client, operation).await.expect("the call") else {
        panic!("counted made no task");
    };
    let key = handle
        .operation()
        .and_then(|o| o.idempotency_key.clone())
        .expect("the handle keeps the key sent");
    if let Some(given) = given {
        assert_eq!(key, given);
    }
    assert_eq!(
        handle.reference().operation.and_then(|o| o.idempotency_key),
        Some(key.clone()),
        "a TaskRef carries the key"
    );
    let calls = s.calls_of("counted");
    assert_eq!(calls.len(), 5, "four lost answers, then the answer");
    for c in &calls {
        assert_eq!(key_sent(c).as_deref(), Some(key.as_str()), "{}", c.params);
        assert_eq!(c.task_id.as_deref(), Some(handle.id()), "one task: {c:?}");
    }
    let notices = s.notices();
    let statuses: Vec<Option<u16>> = notices.iter().map(|n| n.status).collect();
    assert_eq!(statuses, [Some(502), Some(503), Some(504), None]);
    for (n, attempt) in notices.iter().zip(2..) {
        assert_eq!(n.attempt, attempt);
        assert_eq!(n.max_attempts, 5);
        assert_eq!(n.method, "tools/call");
        assert_eq!(n.idempotency_key, key);
        assert!(n.wait <= Duration::from_secs(5), "{n:?}");
    }
    let result = tokio::time::timeout(WAIT, handle.wait())
        .await
        .expect("in time")
        .expect("the task's result");
    assert_eq!(
        result.content.first().and_then(|c| c.as_text()),
        Some("done once")
    );
    assert_eq!(s.runs.load(Ordering::SeqCst), 1, "the tool ran once");
}

#[tokio::test]
async fn lost_answers_are_retried_with_one_key_2026() {
    lost_answers_are_retried_with_one_key(Revision::V2026_07_28, None).await;
}

#[tokio::test]
async fn lost_answers_are_retried_with_one_key_2025() {
    lost_answers_are_retried_with_one_key(Revision::V2025_11_25, None).await;
}

#[tokio::test]
async fn a_key_of_the_callers_is_sent_and_kept_2026() {
    lost_answers_are_retried_with_one_key(Revision::V2026_07_28, Some("caller-key-1")).await;
}

#[tokio::test]
async fn a_key_of_the_callers_is_sent_and_kept_2025() {
    lost_answers_are_retried_with_one_key(Revision::V2025_11_25, Some("caller-key-2")).await;
}

/// A 429 is sent again after its `Retry-After`, as the hook's wait says.
#[tokio::test]
async fn a_429_is_retried_after_its_retry_after() {
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let s = setup().await;
        let client = s.client(revision, |_| {}).await;
        s.front.fail_next([Fault::TooMany("1".into())]);
        let started = call(&client, ToolCall::new("counted", label("later")))
            .await
            .expect("the call");
        assert!(matches!(started, Started::Task(_)), "{revision:?}");
        let notices = s.notices();
        assert_eq!(notices.len(), 1, "{revision:?}: {notices:?}");
        assert_eq!(notices[0].status, Some(429));
        assert_eq!(notices[0].retry_after, Some(Duration::from_secs(1)));
        assert!(
            notices[0].wait >= Duration::from_secs(1),
            "{:?}",
            notices[0]
        );
        let calls = s.calls_of("counted");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].task_id, calls[1].task_id, "one task");
    }
}

/// Past the attempts the last failure is the error; every attempt named one task.
#[tokio::test]
async fn giving_up_returns_the_last_failure() {
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let s = setup().await;
        let client = s.client(revision, |c| c.retry.max_attempts = 3).await;
        s.front
            .fail_next([Fault::Status(502), Fault::Close, Fault::Status(503)]);
        let error = call(&client, ToolCall::new("counted", label("lost")))
            .await
            .expect_err("every answer lost");
        assert_eq!(error.http_status(), Some(503), "{revision:?}: {error}");
        assert!(
            matches!(&error, ClientError::Transport(m) if m.contains("503")),
            "{error}"
        );
        assert_eq!(s.notices().len(), 2, "{revision:?}");
        let calls = s.calls_of("counted");
        assert_eq!(calls.len(), 3, "{revision:?}");
        let first = calls[0].task_id.clone();
        assert!(first.is_some(), "the server made the task");
        assert!(calls.iter().all(|c| c.task_id == first), "{calls:?}");
    }
}

/// A revision, a tool, a change to the configuration, and whether a key is sent.
type Case = (Revision, &'static str, fn(&mut ClientConfig), bool);

/// Without a key a call is sent once: keys off (2026-07-28 and 2025-11-25), a plain
/// 2025-11-25 call of a tool that never makes a task (no key by default), and retries
/// off with a key.
#[tokio::test]
async fn a_call_without_a_key_or_with_retries_off_is_not_retried() {
    let cases: [Case; 4] = [
        (
            Revision::V2026_07_28,
            "counted",
            |c| c.idempotency_keys = false,
            false,
        ),
        (
            Revision::V2025_11_25,
            "counted",
            |c| c.idempotency_keys = false,
            false,
        ),
        (Revision::V2025_11_25, "counted_sync", |_| {}, false),
        (
            Revision::V2026_07_28,
            "counted",
            |c| c.retry = RetryConfig::none(),
            true,
        ),
    ];
    for (revision, tool, tune, keyed) in cases {
        let s = setup().await;
        let client = s.client(revision, tune).await;
        s.front.fail_next([Fault::Status(502)]);
        let error = call(&client, ToolCall::new(tool, label("one")))
            .await
            .expect_err("the answer was lost");
        assert_eq!(
            error.http_status(),
            Some(502),
            "{revision:?} {tool}: {error}"
        );
        assert!(s.notices().is_empty(), "{revision:?} {tool}");
        let calls = s.calls_of(tool);
        assert_eq!(calls.len(), 1, "{revision:?} {tool}: sent once");
        assert_eq!(key_sent(&calls[0]).is_some(), keyed, "{revision:?} {tool}");
    }
}

/// 2026-07-28, the default configuration: the lost answer of a synchronous tool's call
/// (the server ignores a key there, so a repeat would run it again) is not retried,
/// whether the call carries no key (none by default: the tool is not flagged) or the
/// caller's; the tool ran once and the failure is the error.
#[tokio::test]
async fn a_synchronous_tools_lost_answer_is_not_retried() {
    for (fault, given) in [
        (Fault::Status(502), None),
        (Fault::Close, None),
        (Fault::Status(504), Some("caller-key-3")),
    ] {
        let s = setup().await;
        let client = s.client(Revision::V2026_07_28, |_| {}).await;
        s.front.fail_next([fault.clone()]);
        let mut operation = ToolCall::new("counted_sync", label("sync"));
        if let Some(key) = given {
            operation = operation.with_idempotency_key(key);
        }
        let error = call(&client, operation)
            .await
            .expect_err("the answer was lost");
        assert!(
            matches!(error, ClientError::Transport(_)),
            "{fault:?}: {error}"
        );
        assert!(s.notices().is_empty(), "{fault:?}: not retried");
        let calls = s.calls_of("counted_sync");
        assert_eq!(calls.len(), 1, "{fault:?}: sent once");
        assert_eq!(key_sent(&calls[0]).as_deref(), given, "{fault:?}");
        assert_eq!(calls[0].task_id, None, "{fault:?}: answered in the request");
        assert_eq!(
            s.runs.load(Ordering::SeqCst),
            1,
            "{fault:?}: the tool ran once"
        );
    }
}

/// A 2026-07-28 client that has not listed the tools does not know which the server
/// deduplicates: no key of its own, and a lost answer is not retried; once it has
/// listed them, the same call is keyed and retried.
#[tokio::test]
async fn a_client_that_has_not_listed_the_tools_sends_no_key_of_its_own() {
    let s = setup().await;
    let client = s.unlisted_client(Revision::V2026_07_28, |_| {}).await;
    s.front.fail_next([Fault::Status(502)]);
    let error = call(&client, ToolCall::new("counted", label("unlisted")))
        .await
        .expect_err("the answer was lost");
    assert_eq!(error.http_status(), Some(502), "{error}");
    assert!(s.notices().is_empty(), "not retried");
    let calls = s.calls_of("counted");
    assert_eq!(calls.len(), 1, "sent once");
    assert_eq!(key_sent(&calls[0]), None, "no default key");

    tokio::time::timeout(WAIT, client.list_tools())
        .await
        .expect("listed in time")
        .expect("tools/list");
    s.front.fail_next([Fault::Status(502)]);
    let started = call(&client, ToolCall::new("counted", label("listed")))
        .await
        .expect("retried");
    assert!(matches!(started, Started::Task(_)));
    let calls = s.calls_of("counted");
    assert_eq!(calls.len(), 3, "the second call sent twice");
    let key = key_sent(&calls[1]);
    assert!(key.is_some(), "a default key once listed");
    assert_eq!(key_sent(&calls[2]), key, "the retry with the same key");
    assert_eq!(calls[1].task_id, calls[2].task_id, "one task");
    assert_eq!(s.notices().len(), 1);
}

/// Whether the front passed on a `notifications/cancelled` of the request `id`.
fn cancelled(s: &Setup, id: &Value) -> bool {
    s.front
        .others()
        .iter()
        .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == *id)
}

/// Waits (bounded) until the front passed on a `notifications/cancelled` of `id`: it goes
/// out as the request is dropped and reaches the front soon after.
async fn until_cancelled(s: &Setup, id: &Value) {
    let told = async {
        while !cancelled(s, id) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT, told)
        .await
        .expect("the request was cancelled");
}

/// A call of a flagged tool whose answer comes after the client's request timeout: the
/// timed-out attempt is not cancelled, the retry (same key) gets the same task, the tool
/// ran once and its task completed.
async fn a_timed_out_create_is_retried_uncancelled(revision: Revision) {
    let s = setup().await;
    let client = s
        .client(revision, |c| c.request_timeout = SHORT_TIMEOUT)
        .await;
    s.front.fail_next([Fault::Delay(SHORT_TIMEOUT * 3)]);
    let Started::Task(handle) = call(&client, ToolCall::new("counted", label("once")))
        .await
        .expect("retried after the timeout")
    else {
        panic!("{revision:?}: counted made no task");
    };
    let calls = s.calls_of("counted");
    assert_eq!(
        calls.len(),
        2,
        "{revision:?}: the timed-out attempt, the retry"
    );
    let key = key_sent(&calls[0]);
    assert!(key.is_some(), "{revision:?}: keyed");
    assert_eq!(key_sent(&calls[1]), key, "{revision:?}: the same key");
    assert_eq!(
        calls[0].task_id.as_deref(),
        Some(handle.id()),
        "{revision:?}"
    );
    assert_eq!(
        calls[1].task_id.as_deref(),
        Some(handle.id()),
        "{revision:?}"
    );
    let notices = s.notices();
    assert_eq!(notices.len(), 1, "{revision:?}: {notices:?}");
    assert!(
        notices[0].reason.contains("no answer within"),
        "{notices:?}"
    );
    assert_eq!(notices[0].status, None);
    let result = tokio::time::timeout(WAIT, handle.wait())
        .await
        .expect("in time")
        .expect("the task completed, not cancelled");
    assert_eq!(
        result.content.first().and_then(|c| c.as_text()),
        Some("done once")
    );
    assert_eq!(s.runs.load(Ordering::SeqCst), 1, "{revision:?}: ran once");
    assert!(!cancelled(&s, &calls[0].id), "{revision:?}: not cancelled");
}

#[tokio::test]
async fn a_timed_out_create_is_retried_uncancelled_2026() {
    a_timed_out_create_is_retried_uncancelled(Revision::V2026_07_28).await;
}

#[tokio::test]
async fn a_timed_out_create_is_retried_uncancelled_2025() {
    a_timed_out_create_is_retried_uncancelled(Revision::V2025_11_25).await;
}

/// 2026-07-28, a deadline-promoted tool still working in the request when the client
/// times out: not cancelled, the server goes on; the retry finds the task the key names
/// (written up front), which completes; the tool ran once.
#[tokio::test]
async fn a_timed_out_deadline_call_keeps_running_and_is_found() {
    let s = setup().await;
    let client = s
        .client(Revision::V2026_07_28, |c| c.request_timeout = SHORT_TIMEOUT)
        .await;
    let mut args = label("after");
    args.insert("ms".into(), json!((SHORT_TIMEOUT * 2).as_millis()));
    let Started::Task(handle) = call(&client, ToolCall::new("counted_after", args))
        .await
        .expect("retried after the timeout")
    else {
        panic!("the retry found no task");
    };
    let result = tokio::time::timeout(WAIT, handle.wait())
        .await
        .expect("in time")
        .expect("the task completed, not cancelled");
    assert_eq!(
        result.content.first().and_then(|c| c.as_text()),
        Some("done after")
    );
    assert_eq!(s.runs.load(Ordering::SeqCst), 1, "ran once");
    assert_eq!(s.notices().len(), 1);
    // The front keeps a call once its answer came: the timed-out attempt's, as the tool
    // ended (after the retry's).
    let both = async {
        loop {
            let mut calls = s.calls_of("counted_after");
            if calls.len() >= 2 {
                calls.sort_by_key(|c| c.id.as_i64());
                return calls;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let calls = tokio::time::timeout(WAIT, both)
        .await
        .expect("both attempts answered");
    assert_eq!(
        calls.len(),
        2,
        "the timed-out attempt, the retry: {calls:?}"
    );
    assert_eq!(key_sent(&calls[1]), key_sent(&calls[0]), "the same key");
    assert_eq!(
        calls[1].task_id.as_deref(),
        Some(handle.id()),
        "the retry's"
    );
    assert!(!cancelled(&s, &calls[0].id), "not cancelled");
}

/// A synchronous tool's call that times out is cancelled (the front sees the
/// `notifications/cancelled`) and not retried, with a key of the caller's or without.
#[tokio::test]
async fn a_synchronous_tools_timeout_is_cancelled_not_retried() {
    for given in [None, Some("caller-key-4")] {
        let s = setup().await;
        let client = s
            .client(Revision::V2026_07_28, |c| c.request_timeout = SHORT_TIMEOUT)
            .await;
        s.front.fail_next([Fault::Delay(SHORT_TIMEOUT * 3)]);
        let mut operation = ToolCall::new("counted_sync", label("sync"));
        if let Some(key) = given {
            operation = operation.with_idempotency_key(key);
        }
        let error = call(&client, operation).await.expect_err("timed out");
        assert!(
            matches!(error, ClientError::Timeout(_)),
            "{given:?}: {error}"
        );
        assert!(s.notices().is_empty(), "{given:?}: not retried");
        let calls = s.calls_of("counted_sync");
        assert_eq!(calls.len(), 1, "{given:?}: sent once");
        assert_eq!(key_sent(&calls[0]).as_deref(), given, "{given:?}");
        until_cancelled(&s, &calls[0].id).await;
    }
}

/// A keyed call of a flagged tool that its caller drops (not timed out) is still
/// cancelled: only the client's own timeout keeps the attempt.
#[tokio::test]
async fn a_dropped_call_of_a_flagged_tool_is_still_cancelled() {
    let s = setup().await;
    let client = s.client(Revision::V2026_07_28, |_| {}).await;
    s.front.fail_next([Fault::Delay(WAIT)]);
    let operation = ToolCall::new("counted", label("dropped"));
    // The front holds the answer: the call is dropped once it was sent.
    let sent = async {
        while s.calls_of("counted").is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        out = client.call_as_task(operation) => panic!("answered while held: {:?}", out.is_ok()),
        () = sent => {}
        () = tokio::time::sleep(WAIT) => panic!("the call never reached the front"),
    }
    until_cancelled(&s, &s.calls_of("counted")[0].id).await;
    assert!(s.notices().is_empty(), "not retried");
}
