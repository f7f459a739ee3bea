//! SSE resumability in MCP 2025-11-25 sessions (SEP-1699) over Streamable HTTP: event
//! ids on every event, the priming event with `retry`, a POST stream dropped before its
//! response and resumed with `GET` + `Last-Event-ID` (the tool ran once), two streams
//! resumed independently, foreign and malformed ids refused, the replay limit (and the
//! notice of what it dropped), a call nobody resumes cancelled after the window, older
//! revisions unchanged, and our own client polling a server that ends its streams early.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_tasks_client::{ClientConfig, DeclineAll, McpClient, Revision};
use mcp_tasks_protocol::v2026::CallToolResult;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, TaskPolicy, ToolContext, ToolDef};
use mcp_tests::legacy::{LEGACY_VERSION, init_params};
use mcp_tests::server_harness::{
    POLL_EVERY, SseEvent, SseStream, TestServer, WAIT, bearer_principal, request, sse_events,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// What the `gated` tool did, per key: how often it started, how often it was dropped
/// before finishing (cancelled), and the gates the test opens.
#[derive(Default)]
struct Gates {
    gates: Mutex<HashMap<String, Arc<tokio::sync::Notify>>>,
    runs: Mutex<HashMap<String, usize>>,
    dropped: AtomicUsize,
    finished: AtomicUsize,
}

impl Gates {
    fn gate(&self, key: &str) -> Arc<tokio::sync::Notify> {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(gates.entry(key.to_owned()).or_default())
    }

    fn open(&self, key: &str) {
        self.gate(key).notify_one();
    }

    fn runs(&self, key: &str) -> usize {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.get(key).copied().unwrap_or(0)
    }
}

#[derive(Deserialize, JsonSchema)]
struct GatedArgs {
    /// Which gate to wait for.
    key: String,
    /// Log messages sent before waiting.
    #[serde(default)]
    logs: u32,
    /// While waiting, a log message this often (ms; 0: none), so that a dropped
    /// connection is noticed at the next write.
    #[serde(default)]
    tick_ms: u64,
}

/// Counts a drop of the tool's future before it finished.
struct DropCount(Arc<Gates>, bool);

impl Drop for DropCount {
    fn drop(&mut self) {
        if !self.1 {
            self.0.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// `gated` (synchronous) or `gated_task` (a task when asked): logs, waits until the
/// test opens its gate, and answers `done <key>`.
fn gated(gates: Arc<Gates>, name: &str, policy: TaskPolicy) -> ToolDef {
    ToolDef::new(name, policy, move |ctx: ToolContext, args: GatedArgs| {
        let gates = Arc::clone(&gates);
        async move {
            *gates
                .runs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(args.key.clone())
                .or_default() += 1;
            let mut guard = DropCount(Arc::clone(&gates), false);
            for n in 0..args.logs {
                ctx.log(
                    mcp_tasks_protocol::types::LoggingLevel::Info,
                    json!(format!("log {n}")),
                )
                .await;
            }
            let gate = gates.gate(&args.key);
            let opened = gate.notified();
            let mut opened = std::pin::pin!(opened);
            if args.tick_ms > 0 {
                loop {
                    tokio::select! {
                        _ = &mut opened => break,
                        _ = tokio::time::sleep(Duration::from_millis(args.tick_ms)) => {
                            ctx.log(mcp_tasks_protocol::types::LoggingLevel::Debug, json!("tick")).await;
                        }
                    }
                }
            } else {
                opened.await;
            }
            guard.1 = true;
            gates.finished.fetch_add(1, Ordering::SeqCst);
            Ok(CallToolResult::text(format!("done {}", args.key)))
        }
    })
    .expect("the gated tool is well-formed")
}

async fn start(http: HttpConfig) -> (TestServer, Arc<Gates>) {
    let gates = Arc::new(Gates::default());
    let server = TestServer::start_with(
        vec![
            gated(Arc::clone(&gates), "gated", TaskPolicy::Synchronous),
            gated(Arc::clone(&gates), "gated_task", TaskPolicy::Optional),
        ],
        RuntimeConfig::default(),
        http,
    )
    .await;
    (server, gates)
}

/// One 2025-11-25 (or earlier) session.
struct Session<'a> {
    s: &'a TestServer,
    id: String,
    version: &'static str,
    auth: Option<&'static str>,
}

impl<'a> Session<'a> {
    async fn open(s: &'a TestServer, version: &'static str, auth: Option<&'static str>) -> Self {
        let mut params = init_params();
        params["protocolVersion"] = json!(version);
        let mut headers = Vec::new();
        if let Some(a) = auth {
            headers.push(("authorization", a));
        }
        let reply = s
            .post(&request(s.id(), "initialize", params), &headers)
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        let id = reply
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("a session id: {reply:?}"))
            .to_owned();
        let session = Session {
            s,
            id,
            version,
            auth,
        };
        let ack = s
            .post(
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                &session.headers(),
            )
            .await;
        assert_eq!(ack.status, 202, "{}", ack.text);
        session
    }

    fn headers(&self) -> Vec<(&str, &str)> {
        let mut h = vec![
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", self.version),
        ];
        if let Some(a) = self.auth {
            h.push(("authorization", a));
        }
        h
    }

    /// `tools/call` of `gated` as an event stream; returns the request id and the stream.
    async fn call(&self, arguments: Value) -> (i64, SseStream) {
        let id = self.s.id();
        let message = request(
            id,
            "tools/call",
            json!({"name": "gated", "arguments": arguments}),
        );
        let stream = self.s.open_stream(&message, &self.headers()).await;
        assert_eq!(stream.status, 200);
        (id, stream)
    }

    /// `GET` with `Last-Event-ID` (or none): the raw response.
    async fn get(&self, last_event_id: Option<&str>) -> reqwest::Response {
        let mut request = self
            .s
            .client
            .get(&self.s.url)
            .header("accept", "text/event-stream")
            .timeout(Duration::from_secs(3600));
        for (name, value) in self.headers() {
            request = request.header(name, value);
        }
        if let Some(last) = last_event_id {
            request = request.header("last-event-id", last);
        }
        tokio::time::timeout(WAIT, request.send())
            .await
            .expect("GET answered in time")
            .expect("GET")
    }

    /// `GET` resuming after `last`: the stream (checked: 200, an event stream).
    async fn resume(&self, last: &str) -> SseStream {
        let response = self.get(Some(last)).await;
        assert_eq!(response.status(), 200, "resuming after {last}");
        let stream = SseStream::from_response(response);
        assert_eq!(
            stream
                .headers
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("text/event-stream")
        );
        stream
    }
}

/// The next event, priming events included.
async fn any(stream: &mut SseStream) -> SseEvent {
    stream.next_any_event(WAIT).await.expect("an event")
}

/// The next event with a message, with its id.
async fn message(stream: &mut SseStream) -> (String, Value) {
    let event = stream.next_event(WAIT).await.expect("an event");
    let id = event
        .id
        .clone()
        .unwrap_or_else(|| panic!("every event has an id: {event:?}"));
    (id, event.json())
}

/// The stream an event id belongs to: what comes before its `-`.
fn stream_of(id: &str) -> &str {
    id.split_once('-').map_or(id, |(s, _)| s)
}

/// Reads events until the stream ends (bounded); returns them.
async fn rest(stream: &mut SseStream) -> Vec<SseEvent> {
    let mut events = Vec::new();
    while let Some(event) = stream.next_event(WAIT).await {
        events.push(event);
        assert!(events.len() < 1000, "the stream never ends");
    }
    events
}

/// Waits (bounded) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}");
        tokio::time::sleep(POLL_EVERY).await;
    }
}

fn config() -> HttpConfig {
    HttpConfig {
        sse_retry: Duration::from_millis(250),
        ..HttpConfig::default()
    }
}

#[tokio::test]
async fn every_event_has_an_id_and_each_stream_starts_with_a_priming_event() {
    let (s, gates) = start(config()).await;
    let session = Session::open(&s, LEGACY_VERSION, None).await;
    let (rid, mut stream) = session.call(json!({"key": "a", "logs": 2})).await;
    let priming = any(&mut stream).await;
    assert!(
        priming.is_priming(),
        "first comes the priming event: {priming:?}"
    );
    assert_eq!(
        priming.retry,
        Some(250),
        "with the configured retry: {priming:?}"
    );
    let primed = priming.id.clone().expect("the priming event has an id");
    let mut ids = vec![primed.clone()];
    for n in 0..2 {
        let (id, log) = message(&mut stream).await;
        assert_eq!(log["method"], "notifications/message", "{log}");
        assert_eq!(log["params"]["data"], format!("log {n}"));
        ids.push(id);
    }
    gates.open("a");
    let (id, response) = message(&mut stream).await;
    assert_eq!(response["id"], rid, "{response}");
    assert_eq!(response["result"]["content"][0]["text"], "done a");
    ids.push(id);
    assert_eq!(
        stream.next_any_event(WAIT).await,
        None,
        "the stream ends after the response"
    );
    // One stream, so one prefix; each id once.
    assert!(
        ids.iter().all(|id| stream_of(id) == stream_of(&primed)),
        "{ids:?}"
    );
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");

    // The standalone stream: its own priming event, ids of another stream.
    let mut standalone = SseStream::from_response(session.get(None).await);
    assert_eq!(standalone.status, 200);
    let first = any(&mut standalone).await;
    assert!(first.is_priming(), "{first:?}");
    assert_eq!(first.retry, Some(250));
    let other = first.id.expect("an id");
    assert_ne!(stream_of(&other), stream_of(&primed));
    assert!(!ids.contains(&other));
    s.stop().await;
}

#[tokio::test]
async fn sessions_of_earlier_revisions_keep_plain_streams() {
    let (s, gates) = start(config()).await;
    let session = Session::open(&s, "2025-06-18", None).await;
    gates.open("old");
    let (rid, mut stream) = session.call(json!({"key": "old", "logs": 1})).await;
    let events = rest(&mut stream).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(
        events.iter().all(|e| e.id.is_none() && e.retry.is_none()),
        "{events:?}"
    );
    assert_eq!(events[1].json()["id"], rid);
    s.stop().await;
}

#[tokio::test]
async fn a_response_sent_after_the_post_stream_dropped_is_delivered_on_get() {
    let (s, gates) = start(config()).await;
    let session = Session::open(&s, LEGACY_VERSION, None).await;
    let (rid, mut stream) = session.call(json!({"key": "lost", "logs": 1})).await;
    let primed = any(&mut stream).await.id.expect("priming id");
    let (seen, log) = message(&mut stream).await;
    assert_eq!(log["method"], "notifications/message");
    // The network drops the stream before the response; the tool finishes meanwhile.
    drop(stream);
    tokio::time::sleep(Duration::from_millis(100)).await;
    gates.open("lost");

    let mut resumed = session.resume(&seen).await;
    let (id, response) = message(&mut resumed).await;
    assert_eq!(
        response["id"], rid,
        "the response, nothing before it: {response}"
    );
    assert_eq!(response["result"]["content"][0]["text"], "done lost");
    assert_eq!(stream_of(&id), stream_of(&primed), "the same stream's ids");
    assert_eq!(
        resumed.next_any_event(WAIT).await,
        None,
        "ends after the response"
    );
    assert_eq!(gates.runs("lost"), 1, "the tool ran once");
    assert_eq!(
        gates.dropped.load(Ordering::SeqCst),
        0,
        "and was not cancelled"
    );

    // The client has everything: the stream has ended for good (SSE: stop reconnecting).
    let done = session.get(Some(&id)).await;
    assert_eq!(done.status(), 204);
    s.stop().await;
}

#[tokio::test]
async fn a_stream_is_resumed_from_its_priming_event_while_the_call_still_runs() {
    let (s, gates) = start(config()).await;
    let session = Session::open(&s, LEGACY_VERSION, None).await;
    let (rid, mut stream) = session.call(json!({"key": "early", "logs": 1})).await;
    let primed = any(&mut stream).await.id.expect("priming id");
    drop(stream);
    // Resumed from the priming event: the log it missed, then (live) the response.
    let mut resumed = session.resume(&primed).await;
    let (_, log) = message(&mut resumed).await;
    assert_eq!(log["method"], "notifications/message", "{log}");
    gates.open("early");
    let (_, response) = message(&mut resumed).await;
    assert_eq!(response["id"], rid, "{response}");
    assert_eq!(gates.runs("early"), 1);
    s.stop().await;
}

/// A `tasks/result` whose stream drops is given up at once (so the task's questions
/// are asked on the next stream), and runs again when the client resumes the stream:
/// the result is in the store, so the resumed stream still ends with the response.
#[tokio::test]
async fn a_tasks_result_whose_stream_dropped_answers_on_the_resumed_stream() {
    let (s, gates) = start(config()).await;
    let session = Session::open(&s, LEGACY_VERSION, None).await;
    let created = s
        .post(
            &request(
                s.id(),
                "tools/call",
                json!({"name": "gated_task", "arguments": {"key": "task"}, "task": {}}),
            ),
            &session.headers(),
        )
        .await;
    let created = sse_events(&created.text)
        .iter()
        .map(SseEvent::json)
        .find(|m| m.get("result").is_some())
        .unwrap_or_else(|| panic!("a response: {}", created.text));
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    let rid = s.id();
    let message = request(rid, "tasks/result", json!({"taskId": task_id}));
    let mut stream = s.open_stream(&message, &session.headers()).await;
    let primed = any(&mut stream).await.id.expect("id");
    drop(stream);
    tokio::time::sleep(Duration::from_millis(300)).await;
    gates.open("task");
    let mut resumed = session.resume(&primed).await;
    let events = rest(&mut resumed).await;
    let response = events
        .iter()
        .map(SseEvent::json)
        .find(|m| m["id"] == rid)
        .unwrap_or_else(|| panic!("the response: {events:?}"));
    assert_eq!(
        response["result"]["content"][0]["text"], "done task",
        "{response}"
    );
    assert_eq!(gates.runs("task"), 1, "the tool ran once");
    s.stop().await;
}

#[tokio::test]
async fn two_post_streams_are_resumed_independently() {
    let (s, gates) = start(config()).await;
    let session = Session::open(&s, LEGACY_VERSION, None).await;
    let (rid_a, mut a) = session.call(json!({"key": "a", "logs": 1})).await;
    let (rid_b, mut b) = session.call(json!({"key": "b", "logs": 1})).await;
    let primed_a = any(&mut a).await.id.expect("id");
    let primed_b = any(&mut b).await.id.expect("id");
    assert_ne!(stream_of(&primed_a), stream_of(&primed_b), "two streams");
    drop(a);
    drop(b);
    gates.open("a");
    gates.open("b");
    // Each resumption replays its own stream only: its log, then its response.
    for (primed, rid, key) in [(&primed_b, rid_b, "b"), (&primed_a, rid_a, "a")] {
        let mut resumed = session.resume(primed).await;
        let events = rest(&mut resumed).await;
        assert_eq!(events.len(), 2, "{key}: {events:?}");
        for event in &events {
            let id = event.id.as_deref().expect("an id");
            assert_eq!(stream_of(id), stream_of(primed), "{key}: {events:?}");
        }
        assert_eq!(events[0].json()["method"], "notifications/message");
        let response = events[1].json();
        assert_eq!(response["id"], rid, "{key}: {response}");
        assert_eq!(
            response["result"]["content"][0]["text"],
            format!("done {key}")
        );
        assert_eq!(gates.runs(key), 1);
    }
    s.stop().await;
}

#[tokio::test]
async fn foreign_unknown_and_malformed_last_event_ids_are_refused() {
    let (s, gates) = start(HttpConfig {
        principal: Some(bearer_principal()),
        ..config()
    })
    .await;
    let alice = Session::open(&s, LEGACY_VERSION, Some("Bearer alice")).await;
    let alice2 = Session::open(&s, LEGACY_VERSION, Some("Bearer alice")).await;
    let (_, mut stream) = alice.call(json!({"key": "secret", "logs": 1})).await;
    let primed = any(&mut stream).await.id.expect("id");
    let (seen, _) = message(&mut stream).await;
    drop(stream);

    // Another session of the same principal: no such stream there, and nothing shown.
    let foreign = alice2.get(Some(&primed)).await;
    assert_eq!(foreign.status(), 400);
    let foreign_body = foreign.text().await.expect("body");
    assert!(
        !foreign_body.contains("secret") && !foreign_body.contains("log 0"),
        "{foreign_body}"
    );
    assert!(
        foreign_body.contains("names no event stream"),
        "{foreign_body}"
    );
    // An id never sent (a position past the stream's end, a stream never opened) reads
    // the same.
    let (stream_no, _) = seen.split_once('-').expect("stream-seq");
    for never in [format!("{stream_no}-99"), "999999999-0".to_owned()] {
        let reply = alice.get(Some(&never)).await;
        assert_eq!(reply.status(), 400, "{never}");
        let body = reply.text().await.expect("body");
        assert!(body.contains("names no event stream"), "{never}: {body}");
    }
    // Another principal presenting alice's session and id: the session is unknown to it.
    let bob = Session {
        s: &s,
        id: alice.id.clone(),
        version: LEGACY_VERSION,
        auth: Some("Bearer bob"),
    };
    let hijack = bob.get(Some(&primed)).await;
    assert_eq!(hijack.status(), 404);
    let hijack_body = hijack.text().await.expect("body");
    assert!(!hijack_body.contains("secret"), "{hijack_body}");
    // Malformed ids: a clear 400, never a panic.
    for bad in [
        "",
        "abc",
        "1-2-3",
        "-1",
        "1-",
        "+1-2",
        "1-99999999999999999999999",
        "１-2",
    ] {
        let reply = alice.get(Some(bad)).await;
        assert_eq!(reply.status(), 400, "{bad:?}");
        let body = reply.text().await.expect("body");
        assert!(
            body.contains("Last-Event-ID is malformed"),
            "{bad:?}: {body}"
        );
    }
    // Alice's own stream still resumes, with what she missed.
    gates.open("secret");
    let mut resumed = alice.resume(&seen).await;
    let (_, response) = message(&mut resumed).await;
    assert_eq!(response["result"]["content"][0]["text"], "done secret");
    s.stop().await;
}

#[tokio::test]
async fn the_replay_buffer_keeps_its_limit_and_says_what_it_dropped() {
    let (s, gates) = start(HttpConfig {
        sse_replay_max_events: 4,
        ..config()
    })
    .await;
    let session = Session::open(&s, LEGACY_VERSION, None).await;
    let (rid, mut stream) = session.call(json!({"key": "many", "logs": 10})).await;
    let primed = any(&mut stream).await.id.expect("id");
    drop(stream);
    gates.open("many");
    // Ten logs and the response were sent; four events are kept: logs 7 to 9 and the
    // response. The resumed stream says seven are lost, then carries the rest.
    until("the tool finished", || {
        gates.finished.load(Ordering::SeqCst) == 1
    })
    .await;
    // Its response reaches the buffer right after.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut resumed = session.resume(&primed).await;
    let events = rest(&mut resumed).await;
    assert_eq!(events.len(), 5, "{events:?}");
    let notice = events[0].json();
    assert_eq!(notice["method"], "notifications/message", "{notice}");
    assert_eq!(notice["params"]["level"], "error");
    assert_eq!(notice["params"]["logger"], "mcp-server/sse");
    assert_eq!(notice["params"]["data"]["missedEvents"], 7, "{notice}");
    assert!(
        events[0].id.is_none(),
        "the notice is not part of the stream"
    );
    for (event, n) in events[1..4].iter().zip(7..) {
        assert_eq!(event.json()["params"]["data"], format!("log {n}"));
    }
    assert_eq!(events[4].json()["id"], rid);
    s.stop().await;
}

#[tokio::test]
async fn a_call_whose_stream_is_not_resumed_within_the_window_is_cancelled() {
    let (s, gates) = start(HttpConfig {
        sse_resume_window: Duration::from_secs(1),
        ..config()
    })
    .await;
    let session = Session::open(&s, LEGACY_VERSION, None).await;
    // Resumed within the window: the call goes on.
    let (rid, mut stream) = session.call(json!({"key": "back", "tick_ms": 50})).await;
    let primed = any(&mut stream).await.id.expect("id");
    drop(stream);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut resumed = session.resume(&primed).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    gates.open("back");
    let mut last = Value::Null;
    while let Some(event) = resumed.next_event(WAIT).await {
        last = event.json();
    }
    assert_eq!(last["id"], rid, "the response came: {last}");
    assert_eq!(gates.dropped.load(Ordering::SeqCst), 0);

    // Never resumed: cancelled once the window has passed (the tool's future is
    // dropped), and the stream then ends without a response.
    let (_, mut stream) = session.call(json!({"key": "gone", "tick_ms": 50})).await;
    let primed = any(&mut stream).await.id.expect("id");
    drop(stream);
    let dropped_at = Instant::now();
    until("the call was cancelled", || {
        gates.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    assert!(
        dropped_at.elapsed() >= Duration::from_millis(900),
        "not before the window"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let response = session.get(Some(&primed)).await;
    if response.status() == 200 {
        let mut resumed = SseStream::from_response(response);
        let events = rest(&mut resumed).await;
        assert!(
            events.iter().all(|e| e.json().get("id").is_none()),
            "no response: {events:?}"
        );
    } else {
        assert_eq!(response.status(), 400, "the stream may be gone already");
    }
    s.stop().await;
}

/// Our client, in a 2025-11-25 session with a server that ends every stream after
/// 300 ms: its call's stream is resumed (`GET` + `Last-Event-ID`, after the `retry` the
/// priming event gave) until the response comes; the tool runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_resumes_a_call_across_streams_the_server_ends_early() {
    let (s, gates) = start(HttpConfig {
        sse_max_lifetime: Some(Duration::from_millis(300)),
        sse_retry: Duration::from_millis(50),
        ..HttpConfig::default()
    })
    .await;
    let config = ClientConfig {
        revision: Revision::V2025_11_25,
        ..ClientConfig::default()
    };
    let client = tokio::time::timeout(
        WAIT,
        McpClient::connect_http(&s.url, Arc::new(DeclineAll), config),
    )
    .await
    .expect("connected in time")
    .expect("connect");
    let call = tokio::spawn(async move {
        let arguments = serde_json::Map::from_iter([("key".to_owned(), json!("poll"))]);
        client.call_tool("gated", arguments).await
    });
    // Long enough for the first stream and a resumed one to end without the response.
    tokio::time::sleep(Duration::from_millis(800)).await;
    gates.open("poll");
    let result = tokio::time::timeout(WAIT, call)
        .await
        .expect("answered in time")
        .expect("the call's task")
        .expect("the call succeeds");
    let text = serde_json::to_value(&result.content[0]).expect("json");
    assert_eq!(text["text"], "done poll");
    assert_eq!(gates.runs("poll"), 1, "the tool ran once");
    assert_eq!(gates.dropped.load(Ordering::SeqCst), 0);
    s.stop().await;
}
