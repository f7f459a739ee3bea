//! Limits and HTTP hardening over Streamable HTTP: requests in flight per principal,
//! `subscriptions/listen` streams per principal, the poll-rate back-off, the `Host`
//! allowlist, a 1 GiB `Content-Length` on a small body, invalid UTF-8, deep nesting, slow
//! headers, the SSE lifetime, and forged / truncated / replayed cursors and
//! `requestState`. Each refusal names its limit, and the server keeps serving others.
//! Every wait is bounded; everything listens on 127.0.0.1.

use std::time::{Duration, Instant};

use mcp_tasks_protocol::error_codes;
use mcp_tasks_server::http::{HostPolicy, HttpConfig};
use mcp_tasks_server::{RuntimeConfig, Server};
use mcp_tests::legacy::{LEGACY_VERSION, init_params};
use mcp_tests::server_harness::{
    POLL_EVERY, Reply, SseEvent, TestServer, WAIT, accept, bearer_principal, call_params,
    demo_tools, meta, request, sse_events, task_params,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ALICE: (&str, &str) = ("authorization", "Bearer alice");
const BOB: (&str, &str) = ("authorization", "Bearer bob");

/// A server with the demo tools, configured by `configure`, behind the bearer hook.
async fn start(
    configure: impl FnOnce(mcp_tasks_server::ServerBuilder) -> mcp_tasks_server::ServerBuilder,
    http: HttpConfig,
) -> TestServer {
    let mut builder = Server::builder("mcp-tests", "0")
        .store(std::sync::Arc::new(mcp_tasks::MemoryStore::default()))
        .runtime(RuntimeConfig::default());
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    let http = HttpConfig {
        principal: Some(bearer_principal()),
        ..http
    };
    TestServer::start_server(configure(builder).build(), http).await
}

/// `greet` answers: the server still serves `who`.
async fn still_serving(s: &TestServer, who: (&str, &str)) {
    let reply = s
        .post(
            &request(
                s.id(),
                "tools/call",
                call_params("greet", json!({"name": "Ada"}), false),
            ),
            &[who],
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.result()["resultType"], "complete", "{}", reply.text);
}

/// `host:port` of the server.
fn authority(s: &TestServer) -> String {
    s.url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("authority")
        .to_owned()
}

/// Reads from `tcp` until EOF or `within` passes; returns what arrived.
async fn read_some(tcp: &mut TcpStream, within: Duration) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, tcp.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => {
                got.extend_from_slice(&buf[..n]);
                if got.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn requests_beyond_the_inflight_limit_are_refused_at_once() {
    let s = start(|b| b.max_inflight_requests(2), HttpConfig::default()).await;
    // Two slow synchronous calls of alice's hold both places.
    let slow = || async {
        s.post(
            &request(
                s.id(),
                "tools/call",
                call_params("slow_compute", json!({"seconds": 2}), false),
            ),
            &[ALICE],
        )
        .await
    };
    let held = futures::future::join(slow(), slow());
    let probe = async {
        let deadline = Instant::now() + WAIT;
        loop {
            let reply = s
                .post(
                    &request(s.id(), "tools/list", json!({"_meta": meta(false)})),
                    &[ALICE],
                )
                .await;
            if reply.body["error"]["code"] == error_codes::LIMIT_EXCEEDED {
                return reply;
            }
            assert!(Instant::now() < deadline, "never refused: {}", reply.text);
            tokio::time::sleep(POLL_EVERY).await;
        }
    };
    let refused = async {
        let reply = probe.await;
        // Meanwhile bob is served.
        still_serving(&s, BOB).await;
        reply
    };
    let ((first, second), refused) = futures::future::join(held, refused).await;
    assert_eq!(refused.status, 200, "{}", refused.text);
    let message = refused.error_message();
    assert!(
        message.contains("max_inflight_requests") && message.contains('2'),
        "the message names the limit: {message}"
    );
    for reply in [first, second] {
        assert_eq!(reply.result()["resultType"], "complete", "{}", reply.text);
    }
    // Once they are done, alice is served again.
    still_serving(&s, ALICE).await;
}

fn listen(id: i64, task_ids: &[&str]) -> Value {
    request(
        id,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": task_ids}, "_meta": meta(true)}),
    )
}

#[tokio::test]
async fn subscriptions_beyond_the_limit_per_principal_are_refused() {
    let s = start(
        |b| b.max_subscriptions_per_principal(1),
        HttpConfig::default(),
    )
    .await;
    let task = s
        .post(
            &request(
                s.id(),
                "tools/call",
                call_params("slow_compute", json!({"seconds": 5}), true),
            ),
            &[ALICE],
        )
        .await;
    let task_id = task.result()["taskId"].as_str().expect("taskId").to_owned();

    let mut first = s.open_stream(&listen(1, &[&task_id]), &[ALICE]).await;
    let ack = first.next_event(WAIT).await.expect("ack").json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");

    let mut second = s.open_stream(&listen(2, &[&task_id]), &[ALICE]).await;
    let refused = second.next_event(WAIT).await.expect("an answer").json();
    assert_eq!(refused["id"], 2, "{refused}");
    assert_eq!(
        refused["error"]["code"],
        error_codes::LIMIT_EXCEEDED,
        "{refused}"
    );
    let message = refused["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("subscriptions") && message.contains('1'),
        "the message names the limit: {message}"
    );

    // Bob has places of his own, and alice's other requests are served.
    let mut bobs = s.open_stream(&listen(3, &[]), &[BOB]).await;
    let ack = bobs.next_event(WAIT).await.expect("ack").json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    still_serving(&s, ALICE).await;

    // Closing alice's stream frees her place.
    drop(first);
    let deadline = Instant::now() + WAIT;
    loop {
        let mut again = s.open_stream(&listen(4, &[&task_id]), &[ALICE]).await;
        let event = again.next_event(WAIT).await.expect("an answer").json();
        if event["method"] == "notifications/subscriptions/acknowledged" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the place was never freed: {event}"
        );
        tokio::time::sleep(POLL_EVERY).await;
    }
}

#[tokio::test]
async fn polling_too_fast_is_answered_with_a_larger_poll_interval() {
    let s = TestServer::start().await;
    let id = s.create_task("slow_compute", json!({"seconds": 5})).await;
    let first = s.get_task(&id).await;
    let base = first.result()["pollIntervalMs"]
        .as_i64()
        .unwrap_or_else(|| panic!("pollIntervalMs: {}", first.text));
    let mut last = base;
    for _ in 0..12 {
        let reply = s.get_task(&id).await;
        let result = reply.result();
        // Never a wrong answer: the same task, in its true state.
        assert_eq!(result["taskId"], id.as_str(), "{}", reply.text);
        assert_eq!(result["status"], "working", "{}", reply.text);
        last = result["pollIntervalMs"].as_i64().expect("pollIntervalMs");
    }
    assert!(
        last > base,
        "12 reads within {base} ms earn a longer interval, got {last}"
    );
    // Another task of the same caller is unaffected.
    let other = s.create_task("slow_compute", json!({"seconds": 5})).await;
    let reply = s.get_task(&other).await;
    assert_eq!(reply.result()["pollIntervalMs"], base, "{}", reply.text);
}

#[tokio::test]
async fn a_foreign_host_is_403_on_a_loopback_bind() {
    let s = TestServer::start().await;
    let ping = request(1, "tools/list", json!({"_meta": meta(false)}));
    for host in [
        "evil.example",
        "evil.example:80",
        "127.0.0.1.nip.io",
        "localhost.evil.example",
    ] {
        let reply = s.post(&ping, &[("host", host)]).await;
        assert_eq!(reply.status, 403, "{host}: {}", reply.text);
        assert!(
            reply.error_message().contains("Host not allowed"),
            "{}",
            reply.text
        );
    }
    for host in ["localhost:1", "127.0.0.1", "[::1]:8080", "LOCALHOST"] {
        let reply = s.post(&ping, &[("host", host)]).await;
        assert_eq!(reply.status, 200, "{host}: {}", reply.text);
    }
    // The policy is configurable.
    let open = TestServer::start_http(HttpConfig {
        allowed_hosts: HostPolicy::Any,
        ..HttpConfig::default()
    })
    .await;
    let reply = open.post(&ping, &[("host", "evil.example")]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let listed = TestServer::start_http(HttpConfig {
        allowed_hosts: HostPolicy::List(vec!["mcp.example.com".into()]),
        ..HttpConfig::default()
    })
    .await;
    let reply = listed.post(&ping, &[("host", "mcp.example.com:443")]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let reply = listed.post(&ping, &[("host", "localhost")]).await;
    assert_eq!(reply.status, 403, "{}", reply.text);
}

#[tokio::test]
async fn a_huge_content_length_on_a_small_body_is_413_without_reading() {
    let s = TestServer::start().await;
    let authority = authority(&s);
    let mut tcp = tokio::time::timeout(WAIT, TcpStream::connect(&authority))
        .await
        .expect("connect in time")
        .expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 1073741824\r\n\r\n{{}}"
    );
    tcp.write_all(head.as_bytes()).await.expect("write");
    // The server must answer without waiting for the other 1 GiB.
    let reply = read_some(&mut tcp, Duration::from_secs(5)).await;
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply:?}");
    still_serving(&s, ("x-nothing", "")).await;
}

#[tokio::test]
async fn an_invalid_utf8_body_is_32700() {
    let s = TestServer::start().await;
    let reply = s
        .post_raw(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}".to_vec(),
            &[],
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(
        reply.error_code(),
        error_codes::PARSE_ERROR,
        "{}",
        reply.text
    );
    still_serving(&s, ("x-nothing", "")).await;
}

#[tokio::test]
async fn a_100000_level_nested_body_is_an_error_and_the_server_keeps_serving() {
    let s = TestServer::start().await;
    for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
        let body = format!("{}1{}", open.repeat(100_000), close.repeat(100_000));
        let reply = s.post_raw(body, &[]).await;
        assert_eq!(reply.status, 400, "{}", reply.text);
        let code = reply.error_code();
        assert!(
            code == error_codes::PARSE_ERROR || code == error_codes::INVALID_REQUEST,
            "{}",
            reply.text
        );
    }
    still_serving(&s, ("x-nothing", "")).await;
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let s = TestServer::start_http(HttpConfig {
        header_read_timeout: Duration::from_millis(300),
        ..HttpConfig::default()
    })
    .await;
    let authority = authority(&s);
    let mut tcp = tokio::time::timeout(WAIT, TcpStream::connect(&authority))
        .await
        .expect("connect in time")
        .expect("connect");
    tcp.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {authority}\r\n").as_bytes())
        .await
        .expect("write");
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    // Closed (EOF, or a reset) well before our bound, with no request served.
    let read = tokio::time::timeout(WAIT, async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the connection stayed open");
    assert!(started.elapsed() < Duration::from_secs(10));
    still_serving(&s, ("x-nothing", "")).await;
}

#[tokio::test]
async fn event_streams_end_after_their_max_lifetime() {
    let s = TestServer::start_http(HttpConfig {
        sse_max_lifetime: Some(Duration::from_millis(500)),
        ..HttpConfig::default()
    })
    .await;
    let id = s.create_task("slow_compute", json!({"seconds": 10})).await;
    let deadline = Instant::now() + WAIT;
    let mut stream = s.open_stream(&listen(1, &[&id]), &[]).await;
    // The ack and the task's state, then the end (keep-alives come every 15 s only).
    while stream.next_event(WAIT).await.is_some() {
        assert!(
            Instant::now() < deadline,
            "the stream outlived its lifetime"
        );
    }
    still_serving(&s, ("x-nothing", "")).await;
}

/// Finds the JSON-RPC response in a (JSON or SSE) reply.
fn response_of(reply: &Reply) -> Value {
    if reply.body.is_object() {
        return reply.body.clone();
    }
    sse_events(&reply.text)
        .iter()
        .map(SseEvent::json)
        .find(|m| m.get("method").is_none())
        .unwrap_or_else(|| panic!("no response in HTTP {} {}", reply.status, reply.text))
}

/// Opens a 2025-11-25 session; returns its id.
async fn legacy_session(s: &TestServer) -> String {
    let reply = s
        .post(&request(s.id(), "initialize", init_params()), &[])
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("Mcp-Session-Id")
        .to_owned()
}

async fn legacy_rpc(s: &TestServer, session: &str, method: &str, params: Value) -> Value {
    let reply = s
        .post(
            &request(s.id(), method, params),
            &[
                ("mcp-session-id", session),
                ("mcp-protocol-version", LEGACY_VERSION),
            ],
        )
        .await;
    response_of(&reply)
}

#[tokio::test]
async fn forged_truncated_and_replayed_cursors_are_32602_over_the_wire() {
    let s = TestServer::start().await;
    let alice = legacy_session(&s).await;
    let bob = legacy_session(&s).await;
    for _ in 0..51 {
        let created = legacy_rpc(
            &s,
            &alice,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0.01}, "task": {}}),
        )
        .await;
        assert!(created["result"]["task"].is_object(), "{created}");
    }
    let first = legacy_rpc(&s, &alice, "tasks/list", json!({})).await;
    let cursor = first["result"]["nextCursor"]
        .as_str()
        .unwrap_or_else(|| panic!("a second page: {first}"))
        .to_owned();
    // The genuine cursor works for its session.
    let second = legacy_rpc(&s, &alice, "tasks/list", json!({"cursor": cursor})).await;
    assert!(second["result"]["tasks"].is_array(), "{second}");

    let mut forged = cursor.clone().into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
    let forged = String::from_utf8(forged).expect("ASCII");
    let truncated = cursor[..cursor.len() - 3].to_owned();
    let unsealed = cursor
        .rsplit_once('~')
        .map(|(inner, _)| inner.to_owned())
        .expect("a sealed cursor");
    for (what, session, bad) in [
        ("forged", &alice, &forged),
        ("truncated", &alice, &truncated),
        ("unsealed", &alice, &unsealed),
        ("replayed by another session", &bob, &cursor),
    ] {
        let refused = legacy_rpc(&s, session, "tasks/list", json!({"cursor": bad})).await;
        assert_eq!(
            refused["error"]["code"],
            error_codes::INVALID_PARAMS,
            "{what}: {refused}"
        );
    }
    still_serving(&s, ("x-nothing", "")).await;
}

#[tokio::test]
async fn forged_and_replayed_request_state_is_32602() {
    let s = start(|b| b, HttpConfig::default()).await;
    let round1 = s
        .post(
            &request(
                s.id(),
                "tools/call",
                call_params("confirm_delete", json!({"filename": "m.txt"}), false),
            ),
            &[ALICE],
        )
        .await;
    let r1 = round1.result();
    assert_eq!(r1["resultType"], "input_required", "{}", round1.text);
    let state = r1["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    let key = r1["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("one input request");
    let round2 = |state: String| {
        let mut params = call_params("confirm_delete", json!({"filename": "m.txt"}), false);
        params["inputResponses"] = json!({ key.clone(): accept(json!({"confirm": true})) });
        params["requestState"] = json!(state);
        request(s.id(), "tools/call", params)
    };
    // Hand-written state (the answers a client would like to have given), a tampered
    // one, and alice's state replayed by bob are refused.
    let handmade = json!({"tool": "confirm_delete", "answers": {}}).to_string();
    let mut tampered = state.clone().into_bytes();
    tampered[0] ^= 1;
    let tampered = String::from_utf8(tampered).unwrap_or_default();
    for (what, who, bad) in [
        ("handmade", ALICE, handmade),
        ("tampered", ALICE, tampered),
        ("replayed by another principal", BOB, state.clone()),
    ] {
        let reply = s.post(&round2(bad), &[who]).await;
        assert_eq!(
            reply.error_code(),
            error_codes::INVALID_PARAMS,
            "{what}: {}",
            reply.text
        );
    }
    // The genuine state completes the call.
    let done = s.post(&round2(state), &[ALICE]).await;
    assert_eq!(done.result()["resultType"], "complete", "{}", done.text);
}

#[tokio::test]
async fn tasks_get_keeps_answering_under_the_meter() {
    // The back-off never hides a state change: a finished task reads as finished.
    let s = TestServer::start().await;
    let id = s.create_task("slow_compute", json!({"seconds": 0.2})).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let reply = s.rpc("tasks/get", task_params(&id, true)).await;
        if reply.result()["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "never completed: {}", reply.text);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
