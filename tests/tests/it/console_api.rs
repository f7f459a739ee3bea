//! The operator console's access layer and JSON/SSE API, over HTTP:
//!
//! - every `/console` path (page, assets, API, paths that do not exist) is 401 without
//!   the Basic credential, with a wrong one, with the MCP bearer token, or with the
//!   credential in the query string (an `access_token` there is 400); every response
//!   carries the security headers; a foreign `Origin` or `Host` is 403, the console's own
//!   origin passes whatever `allowed_origins` lists;
//! - a `POST` without `X-Console-Csrf: 1` is 403 and changes nothing;
//! - with the credential: tasks of two principals (created through the MCP endpoint)
//!   listed newest first, filtered by status, tool and owner, paged with the cursor; one
//!   task in full; counts; the activity's shape and numbers; bad parameters are 400;
//! - cancel as operator: the audit record names the operator and the owner; the owner's
//!   `tasks/get` then reads `cancelled`;
//! - a task read in full is audited at INFO (operator, owner, task id), a list read and
//!   a stream opened at DEBUG; every refusal is audited with the peer's address, the path
//!   and the reason, never with the credential tried;
//! - a store without the operator's view answers 501; a lag of the store's feed becomes
//!   a `resync` event;
//! - event streams past the limits (per operator, in all) are 429 until one closes; a
//!   change is read from the store once, however many streams are open;
//! - scope mode (an OAuth issuer): no token 401, a token without the scope 403, with it 200;
//! - the event stream of one instance delivers a task created on another instance of
//!   the same PostgreSQL schema (skipped without PostgreSQL, a failure under `CI=true`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks::conformance::StoreFactory as _;
use mcp_tasks_server::Server;
use mcp_tasks_server::console::ConsoleConfig;
use mcp_tasks_server::http::HttpConfig;
use mcp_tests::console::{
    self, Got, assert_holds, basic, capture_audit, get_as, ok_as, origin_of, poll, quick_shutdown,
    scope_server, task_of,
};
use mcp_tests::deaf_store::{Deaf, DeafStore};
use mcp_tests::issuer::TestIssuer;
use mcp_tests::node_harness::slow;
use mcp_tests::server_harness::{SseStream, TestServer, WAIT, bearer_principal, demo_tools};
use serde_json::{Value, json};

const USER: &str = "admin";
const PASSWORD: &str = "s3cret:pass";

/// Every path the access layer must guard, the page's included.
const PATHS: &[&str] = &[
    "/console",
    "/console/",
    "/console/assets/console.js",
    "/console/assets/console.css",
    "/console/api/tasks",
    "/console/api/tasks/0123",
    "/console/api/counts",
    "/console/api/activity",
    "/console/api/events",
    "/console/no/such/path",
];

fn operator() -> String {
    basic(USER, PASSWORD)
}

/// The demo server with bearer principals (`Bearer NAME`) and the console behind Basic.
async fn basic_server() -> TestServer {
    let http = HttpConfig {
        principal: Some(bearer_principal()),
        console: Some(ConsoleConfig::basic(USER, PASSWORD).expect("valid credentials")),
        ..HttpConfig::default()
    };
    TestServer::start_with(demo_tools(), quick_shutdown(), http).await
}

/// `method path` with exactly `headers`.
async fn send(
    s: &TestServer,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
) -> Got {
    console::send(s, method, path, headers, None).await
}

async fn get(s: &TestServer, path: &str, auth: Option<&str>) -> Got {
    console::call(s, reqwest::Method::GET, path, auth, None).await
}

/// A GET as the operator that must answer 200; its JSON body.
async fn ok(s: &TestServer, path: &str) -> Value {
    ok_as(s, &operator(), path).await
}

async fn cancel(s: &TestServer, id: &str, csrf: bool) -> Got {
    let auth = operator();
    let mut headers = vec![("authorization", auth.as_str())];
    if csrf {
        headers.push(console::CSRF);
    }
    let path = format!("/console/api/tasks/{id}/cancel");
    send(s, reqwest::Method::POST, &path, &headers).await
}

fn assert_security_headers(got: &Got, what: &str) {
    let header = |name: &str| {
        got.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("{what}: no {name} in {:?}", got.headers))
            .to_owned()
    };
    let csp = header("content-security-policy");
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{what}: {part} not in {csp}");
    }
    assert_eq!(header("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(header("referrer-policy"), "no-referrer", "{what}");
    assert_eq!(header("cache-control"), "no-store", "{what}");
}

/// Polls the console's list (as the operator) until `done` holds for its tasks.
async fn poll_list(s: &TestServer, query: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let path = format!("/console/api/tasks?{query}");
    let page = poll(|| ok(s, &path), |page| done(&tasks_of(page))).await;
    tasks_of(&page)
}

fn tasks_of(page: &Value) -> Vec<Value> {
    page["tasks"].as_array().cloned().unwrap_or_default()
}

fn ids(tasks: &[Value]) -> BTreeSet<String> {
    tasks
        .iter()
        .map(|t| t["id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test]
async fn every_console_path_needs_the_credential_first() {
    let s = basic_server().await;
    let wrong = basic(USER, "nope");
    let in_query = format!("?user={USER}&password={PASSWORD}&authorization=Basic");
    for path in PATHS {
        for (auth, suffix, why) in [
            (None, "", "no credential"),
            (Some(wrong.as_str()), "", "a wrong password"),
            (Some("Bearer alice"), "", "the MCP bearer token"),
            (None, in_query.as_str(), "the credential in the query"),
        ] {
            let got = get(&s, &format!("{path}{suffix}"), auth).await;
            assert_eq!(got.status, 401, "{path} with {why}: {}", got.text);
            assert_eq!(
                got.headers.get("www-authenticate").map(|v| v.as_bytes()),
                Some(&b"Basic realm=\"mcp-tasks console\", charset=\"UTF-8\""[..]),
                "{path}"
            );
            assert!(got.body["error"].is_string(), "{path}: {}", got.text);
            assert_security_headers(&got, path);
        }
        let got = get(&s, &format!("{path}?access_token=abc"), Some(&operator())).await;
        assert_eq!(
            got.status, 400,
            "{path} with a token in the URL: {}",
            got.text
        );
        assert_security_headers(&got, path);
    }
    // A POST is 401 before anything else too, with or without the CSRF header.
    for csrf in [None, Some(("x-console-csrf", "1"))] {
        let headers: Vec<(&str, &str)> = csrf.into_iter().collect();
        let got = send(
            &s,
            reqwest::Method::POST,
            "/console/api/tasks/x/cancel",
            &headers,
        )
        .await;
        assert_eq!(got.status, 401, "{}", got.text);
    }
    // The page's paths behind the credential: whatever the page serves, never a 401.
    let got = get(&s, "/console/no/such/path", Some(&operator())).await;
    assert_eq!(got.status, 404, "{}", got.text);
    assert_security_headers(&got, "404");
    // DNS rebinding and foreign pages: the MCP endpoint's Host and Origin checks.
    let auth = operator();
    let foreign = [
        ("authorization", auth.as_str()),
        ("origin", "http://evil.example"),
    ];
    let got = send(&s, reqwest::Method::GET, "/console/api/counts", &foreign).await;
    assert_eq!(got.status, 403, "{}", got.text);
    assert_security_headers(&got, "foreign origin");
    let rebound = [("authorization", auth.as_str()), ("host", "evil.example")];
    let got = send(&s, reqwest::Method::GET, "/console/api/counts", &rebound).await;
    assert_eq!(got.status, 403, "{}", got.text);
    // The MCP endpoint is not the console's: no Basic there.
    let reply = s
        .rpc(
            "tools/list",
            json!({ "_meta": mcp_tests::server_harness::meta(true) }),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    s.stop().await;
}

#[tokio::test]
async fn the_operator_lists_filters_and_reads_every_owners_tasks() {
    let s = basic_server().await;
    let mut alice = Vec::new();
    for i in 0..3 {
        alice.push(task_of(&s, "alice", "slow_compute", slow(0.05, &format!("a{i}"))).await);
    }
    let asking = task_of(&s, "alice", "confirm_delete", json!({ "filename": "x" })).await;
    let running = task_of(&s, "bob", "slow_compute", slow(60.0, "b")).await;
    let all: BTreeSet<String> = alice.iter().chain([&asking, &running]).cloned().collect();

    // Everything, newest first, once the quick ones completed and the question is asked.
    let tasks = poll_list(&s, "", |t| {
        let completed = t.iter().filter(|t| t["status"] == "completed").count();
        completed == 3 && t.iter().any(|t| t["status"] == "input_required")
    })
    .await;
    assert_eq!(ids(&tasks), all);
    let created: Vec<i64> = tasks
        .iter()
        .map(|t| t["createdAt"].as_i64().expect("createdAt"))
        .collect();
    assert!(
        created.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {created:?}"
    );
    let bob_row = tasks
        .iter()
        .find(|t| t["id"] == running.as_str())
        .expect("bob's task");
    assert_eq!(bob_row["owner"], "bob");
    assert_eq!(bob_row["tool"], "slow_compute");
    assert_eq!(bob_row["status"], "working");
    assert_eq!(bob_row["durationMs"], Value::Null);
    assert!(
        bob_row["node"].is_string(),
        "a running task's lease holder: {bob_row}"
    );
    assert_eq!(bob_row["cancelRequested"], false);
    let done_row = tasks
        .iter()
        .find(|t| t["id"] == alice[0].as_str())
        .expect("alice's task");
    assert!(
        done_row["durationMs"].as_i64().is_some_and(|d| d >= 50),
        "{done_row}"
    );
    assert_eq!(
        done_row["node"],
        Value::Null,
        "a finished task holds no lease"
    );

    // Filters.
    let by_owner = ok(&s, "/console/api/tasks?owner=bob").await;
    assert_eq!(
        ids(by_owner["tasks"].as_array().expect("tasks")),
        BTreeSet::from([running.clone()])
    );
    let by_tool = ok(&s, "/console/api/tasks?tool=confirm_delete").await;
    assert_eq!(
        ids(by_tool["tasks"].as_array().expect("tasks")),
        BTreeSet::from([asking.clone()])
    );
    let by_status = ok(&s, "/console/api/tasks?status=completed").await;
    assert_eq!(
        ids(by_status["tasks"].as_array().expect("tasks")),
        alice.iter().cloned().collect()
    );
    let both = ok(&s, "/console/api/tasks?status=working&owner=alice").await;
    assert_eq!(both["tasks"], json!([]), "{both}");

    // Pages of two, with the cursor: every task once.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let query = match &cursor {
            Some(c) => format!("/console/api/tasks?limit=2&cursor={c}"),
            None => "/console/api/tasks?limit=2".to_owned(),
        };
        let page = ok(&s, &query).await;
        let tasks = page["tasks"].as_array().expect("tasks");
        assert!(tasks.len() <= 2, "{page}");
        seen.extend(ids(tasks));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 5, "no task twice: {seen:?}");
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), all);

    // One task in full.
    let detail = ok(&s, &format!("/console/api/tasks/{running}")).await;
    assert_eq!(detail["id"], running.as_str());
    assert_eq!(detail["owner"], "bob");
    assert_eq!(detail["method"], "tools/call");
    assert_eq!(detail["arguments"]["label"], "b", "{detail}");
    assert!(
        detail["revision"].as_u64().is_some_and(|r| r >= 1),
        "{detail}"
    );
    assert!(detail["lease"]["holder"].is_string(), "{detail}");
    assert_eq!(detail["lease"]["holder"], detail["node"]);
    assert_eq!(detail["result"], Value::Null);
    let question = ok(&s, &format!("/console/api/tasks/{asking}")).await;
    assert_eq!(
        question["inputRequests"].as_object().map(|o| o.len()),
        Some(1),
        "{question}"
    );
    let finished = ok(&s, &format!("/console/api/tasks/{}", alice[1])).await;
    assert!(finished["result"]["content"].is_array(), "{finished}");
    let unknown = get(&s, "/console/api/tasks/0000", Some(&operator())).await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    assert!(unknown.body["error"].is_string());

    // Counts.
    let counts = ok(&s, "/console/api/counts").await;
    assert_eq!(
        counts,
        json!({
            "byStatus": {"working": 1, "input_required": 1, "completed": 3, "failed": 0, "cancelled": 0},
            "byTool": {"slow_compute": 4, "confirm_delete": 1},
        })
    );

    // Activity: fifteen minutes, the three completions, their durations.
    let activity = ok(&s, "/console/api/activity").await;
    let minutes = activity["minutes"].as_array().expect("minutes");
    assert_eq!(minutes.len(), 15, "{activity}");
    let from = activity["from"].as_i64().expect("from");
    assert_eq!(minutes[0]["start"].as_i64(), Some(from));
    assert!(
        minutes
            .windows(2)
            .all(|w| w[1]["start"].as_i64() == w[0]["start"].as_i64().map(|s| s + 60_000))
    );
    assert!(
        activity["to"]
            .as_i64()
            .is_some_and(|to| to >= from + 14 * 60_000),
        "{activity}"
    );
    let sum = |key: &str| {
        minutes
            .iter()
            .map(|m| m[key].as_u64().expect("a count"))
            .sum::<u64>()
    };
    assert_eq!(
        (sum("completed"), sum("failed"), sum("cancelled")),
        (3, 0, 0),
        "{activity}"
    );
    let durations = activity["durations"].as_array().expect("durations");
    assert_eq!(durations.len(), 1, "{activity}");
    assert_eq!(durations[0]["tool"], "slow_compute");
    assert_eq!(durations[0]["count"], 3);
    let p = |k: &str| durations[0][k].as_i64().expect("a percentile");
    assert!(
        p("p50Ms") >= 50 && p("p50Ms") <= p("p90Ms") && p("p90Ms") <= p("p99Ms"),
        "{activity}"
    );
    assert_eq!(activity["truncated"], false);

    // Bad parameters.
    for query in [
        "status=bogus",
        "limit=0",
        "limit=501",
        "limit=many",
        "createdFrom=yesterday",
        "cursor=not-a-cursor",
        "colour=red",
    ] {
        let got = get(
            &s,
            &format!("/console/api/tasks?{query}"),
            Some(&operator()),
        )
        .await;
        assert_eq!(got.status, 400, "{query}: {}", got.text);
        assert!(got.body["error"].is_string(), "{query}: {}", got.text);
    }
    s.stop().await;
}

// Current-thread: the server's tasks run on this thread, under its audit subscriber.
#[tokio::test(flavor = "current_thread")]
async fn the_operator_cancels_another_principals_task() {
    let (audit, _guard) = capture_audit("trace");
    let s = basic_server().await;
    let id = task_of(&s, "bob", "slow_compute", slow(60.0, "cancel-me")).await;
    let refused = cancel(&s, &id, false).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(
        refused.body["error"]
            .as_str()
            .is_some_and(|e| e.contains("x-console-csrf")),
        "{}",
        refused.text
    );
    assert_security_headers(&refused, "CSRF refusal");
    let still = ok(&s, &format!("/console/api/tasks/{id}")).await;
    assert_eq!(still["cancelRequested"], false, "nothing changed: {still}");

    let done = cancel(&s, &id, true).await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.body["id"], id.as_str());
    assert_eq!(done.body["owner"], "bob");
    assert!(
        done.body["cancelRequested"] == true || done.body["status"] == "cancelled",
        "{}",
        done.text
    );
    let line = audit.first_with(&["console: cancel"]);
    assert_holds(
        &line,
        &[
            "actor=admin",
            "principal=bob",
            &format!("task_id=\"{id}\""),
            "outcome=\"ok\"",
            "INFO",
        ],
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let reply = get_as(&s, "bob", &id).await;
        if reply.result()["status"] == "cancelled" {
            break;
        }
        assert!(Instant::now() < deadline, "never cancelled: {}", reply.text);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // Still bob's alone.
    let alice = get_as(&s, "alice", &id).await;
    assert!(alice.body["error"].is_object(), "{}", alice.text);
    // A finished task is left as it is.
    let again = cancel(&s, &id, true).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body["status"], "cancelled");
    let unknown = cancel(&s, "0000", true).await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    s.stop().await;
}

// Current-thread: the server's tasks run on this thread, under its audit subscriber.
#[tokio::test(flavor = "current_thread")]
async fn reads_and_refusals_are_audited_without_the_credential() {
    let (audit, _guard) = capture_audit("debug");
    let s = basic_server().await;
    let id = task_of(&s, "bob", "slow_compute", slow(60.0, "read-me")).await;

    // Reading bob's task in full: INFO, with the operator, the owner and the task.
    let detail = ok(&s, &format!("/console/api/tasks/{id}")).await;
    assert_eq!(detail["arguments"]["label"], "read-me");
    let read = audit.line_with(&["op=\"console: read\""]);
    assert_holds(
        &read,
        &[
            "INFO",
            "mcp_tasks_server::audit",
            "actor=admin",
            "principal=bob",
            &format!("task_id=\"{id}\""),
            "outcome=\"ok\"",
        ],
    );
    // A list read and a stream opened: DEBUG.
    ok(&s, "/console/api/tasks").await;
    let listed = audit.line_with(&["op=\"console: list\""]);
    assert!(
        listed.contains("DEBUG") && listed.contains("actor=admin"),
        "{listed}"
    );
    let events = open_events(&s).await;
    let opened = audit.line_with(&["op=\"console: events\""]);
    assert!(
        opened.contains("DEBUG") && opened.contains("actor=admin"),
        "{opened}"
    );
    drop(events);

    // A wrong password: 401, audited with where it came from, without the password.
    let tried = "hunter2-tried";
    let wrong = get(&s, "/console/api/counts", Some(&basic(USER, tried))).await;
    assert_eq!(wrong.status, 401, "{}", wrong.text);
    let refused = audit.line_with(&["reason=\"bad credentials\""]);
    assert_holds(
        &refused,
        &[
            "INFO",
            "mcp_tasks_server::audit",
            "op=\"console: refused\"",
            "status=401",
            "remote_ip=127.0.0.1",
            "method=\"GET\"",
            "path=\"/console/api/counts\"",
        ],
    );
    // No credential at all (a browser's first request) is told apart.
    let none = get(&s, "/console/api/activity", None).await;
    assert_eq!(none.status, 401);
    let first = audit.line_with(&["reason=\"no credentials\""]);
    assert!(first.contains("path=\"/console/api/activity\""), "{first}");
    // A credential in the URL: the query string is never written.
    let in_url = get(
        &s,
        &format!("/console/api/tasks?access_token={tried}&password={PASSWORD}"),
        Some(&operator()),
    )
    .await;
    assert_eq!(in_url.status, 400, "{}", in_url.text);
    let url_line = audit.line_with(&["reason=\"credentials in the URL\""]);
    assert!(url_line.contains("status=400"), "{url_line}");
    // A foreign page, and a POST without the CSRF header: 403.
    let auth = operator();
    let foreign = [
        ("authorization", auth.as_str()),
        ("origin", "http://evil.example"),
    ];
    let got = send(&s, reqwest::Method::GET, "/console/api/counts", &foreign).await;
    assert_eq!(got.status, 403);
    let origin = audit.line_with(&["reason=\"host or origin not allowed\""]);
    assert!(origin.contains("evil.example"), "{origin}");
    let csrf = cancel(&s, &id, false).await;
    assert_eq!(csrf.status, 403);
    let csrf_line = audit.line_with(&["reason=\"no CSRF header\""]);
    assert!(csrf_line.contains("method=\"POST\""), "{csrf_line}");

    // Nowhere a password or an Authorization header's value.
    let text = audit.text();
    for secret in [
        tried.to_owned(),
        PASSWORD.to_owned(),
        basic(USER, tried),
        operator(),
    ] {
        assert!(
            !text.contains(&secret),
            "{secret} in the audit trail:\n{text}"
        );
    }
    s.stop().await;
}

/// The demo tools on `store`, with console settings `console`.
async fn server_on(store: Arc<dyn mcp_tasks::TaskStore>, console: ConsoleConfig) -> TestServer {
    let http = HttpConfig {
        console: Some(console),
        ..HttpConfig::default()
    };
    console::server_on("console-tests", store, demo_tools(), http).await
}

/// Basic console settings with these stream limits.
fn with_limits(per_operator: usize, total: usize) -> ConsoleConfig {
    let mut console = ConsoleConfig::basic(USER, PASSWORD).expect("valid");
    console.max_streams_per_operator = per_operator;
    console.max_streams = total;
    console
}

#[tokio::test]
async fn event_streams_past_the_limits_are_429_until_one_closes() {
    for (per_operator, total, says) in [
        (2, 32, "this operator has 2 open"),
        (32, 2, "2 are open on this server"),
    ] {
        let store = Arc::new(mcp_tasks::MemoryStore::default());
        let s = server_on(store, with_limits(per_operator, total)).await;
        let first = open_events(&s).await;
        let second = open_events(&s).await;
        let refused = get(&s, "/console/api/events", Some(&operator())).await;
        assert_eq!(refused.status, 429, "{}", refused.text);
        let error = refused.body["error"].as_str().unwrap_or("");
        assert!(
            error.contains("too many console event streams") && error.contains(says),
            "{}",
            refused.text
        );
        assert_security_headers(&refused, "429");
        // A closed stream frees its slot (once the server sees the connection go).
        drop(first);
        let deadline = Instant::now() + WAIT;
        let third = loop {
            let request = s
                .client
                .get(format!("{}/console/api/events", origin_of(&s.url)))
                .header("authorization", operator())
                .timeout(Duration::from_secs(3600));
            let response = tokio::time::timeout(WAIT, request.send())
                .await
                .expect("answered in time")
                .expect("HTTP request");
            if response.status() == 200 {
                break response;
            }
            assert_eq!(response.status(), 429);
            assert!(
                Instant::now() < deadline,
                "the closed stream's slot was never freed"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        };
        // Open streams would hold the server's graceful shutdown.
        drop((second, third));
        s.stop().await;
    }
}

#[tokio::test]
async fn a_change_is_read_once_however_many_streams_are_open() {
    let store = Arc::new(Deaf::store());
    let s = deaf_server(Arc::clone(&store)).await;
    let task = store
        .inner()
        .create(mcp_tasks::NewTask {
            owner: mcp_tasks::Owner::new("bob"),
            ttl_ms: Some(600_000),
            poll_interval_ms: None,
            origin: mcp_tasks::Origin {
                method: "tools/call".into(),
                tool: Some("slow_compute".into()),
                revision: mcp_tasks::WireRevision::V2026_07_28,
            },
            status_message: None,
            job: None,
            trace_context: None,
            idempotency: None,
        })
        .await
        .expect("a task");
    let id = task.id.as_str().to_owned();
    const STREAMS: usize = 3;
    const CHANGES: u64 = 4;
    let mut streams = Vec::new();
    for _ in 0..STREAMS {
        streams.push(open_events(&s).await);
    }
    let before = store.layer().gets();
    for _ in 0..CHANGES {
        // One change at a time, heard by every stream before the next.
        store
            .layer()
            .feed
            .send(mcp_tasks::FeedItem::Event(mcp_tasks::TaskEvent::changed(
                &task,
            )))
            .expect("a subscriber");
        for stream in &mut streams {
            let event = task_event_of(stream, &id).await;
            assert_eq!(event["owner"], "bob");
        }
    }
    assert_eq!(
        store.layer().gets() - before,
        CHANGES,
        "one store read per change for {STREAMS} streams"
    );
    drop(streams);
    s.stop().await;
}

/// A server on a store without the operator's view, whose event feed the test drives.
async fn deaf_server(store: Arc<DeafStore>) -> TestServer {
    let console = ConsoleConfig::basic(USER, PASSWORD).expect("valid");
    server_on(store, console).await
}

async fn open_events(s: &TestServer) -> SseStream {
    let request = s
        .client
        .get(format!("{}/console/api/events", origin_of(&s.url)))
        .header("authorization", operator())
        .timeout(Duration::from_secs(3600));
    let response = tokio::time::timeout(WAIT, request.send())
        .await
        .expect("stream opened in time")
        .expect("HTTP request");
    let stream = SseStream::from_response(response);
    assert_eq!(stream.status, 200);
    assert!(
        stream
            .headers
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream")),
        "{:?}",
        stream.headers
    );
    stream
}

/// The next `task` event about `id` (other tasks' events are passed over), within WAIT.
async fn task_event_of(events: &mut SseStream, id: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = events
            .next_event(left)
            .await
            .expect("the stream stays open");
        if event.event == "task" && event.json()["id"] == id {
            return event.json();
        }
    }
}

#[tokio::test]
async fn a_store_without_the_operators_view_is_501_and_a_lag_is_a_resync() {
    let store = Arc::new(Deaf::store());
    let s = deaf_server(Arc::clone(&store)).await;
    for path in [
        "/console/api/tasks",
        "/console/api/tasks/x",
        "/console/api/counts",
        "/console/api/activity",
    ] {
        let got = get(&s, path, Some(&operator())).await;
        assert_eq!(got.status, 501, "{path}: {}", got.text);
        assert!(
            got.body["error"]
                .as_str()
                .is_some_and(|e| e.contains("operator")),
            "{path}: {}",
            got.text
        );
    }
    let mut events = open_events(&s).await;
    // The store's feed says events were missed; then a task changes.
    let id = s.create_task("slow_compute", slow(60.0, "deaf")).await;
    store
        .layer()
        .feed
        .send(mcp_tasks::FeedItem::Resync)
        .expect("a subscriber");
    let resync = events.next_event(WAIT).await.expect("an event");
    assert_eq!(
        (resync.event.as_str(), resync.data.as_str()),
        ("resync", "{}")
    );
    let record = store
        .inner()
        .get(
            &mcp_tasks::Owner::new(mcp_tasks_server::ANONYMOUS),
            &mcp_tasks::TaskId::from_wire(id.clone()),
        )
        .await
        .expect("the task");
    let event = mcp_tasks::TaskEvent::changed(&record);
    store
        .layer()
        .feed
        .send(mcp_tasks::FeedItem::Event(event))
        .expect("a subscriber");
    let task = task_event_of(&mut events, &id).await;
    assert_eq!(task["status"], "working");
    assert_eq!(task["tool"], "slow_compute");
    drop(events);
    s.stop().await;
}

#[tokio::test]
async fn scope_mode_needs_a_token_with_the_scope() {
    let issuer = TestIssuer::start().await;
    let p = scope_server(&issuer).await;
    let s = &p.server;
    let none = get(s, "/console/api/counts", None).await;
    assert_eq!(none.status, 401, "{}", none.text);
    assert!(
        none.headers
            .get("www-authenticate")
            .is_some_and(|v| v.as_bytes().starts_with(b"Bearer")),
        "{:?}",
        none.headers
    );
    assert_security_headers(&none, "401");
    let basic = get(s, "/console/api/counts", Some(&operator())).await;
    assert_eq!(basic.status, 401, "{}", basic.text);
    let bad = get(s, "/console/api/counts", Some("Bearer not.a.token")).await;
    assert_eq!(bad.status, 401, "{}", bad.text);
    let plain = format!("Bearer {}", issuer.token("carol", &p.resource, &["mcp"]));
    let refused = get(s, "/console/api/counts", Some(&plain)).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    let challenge = refused
        .headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(
        challenge.contains("insufficient_scope") && challenge.contains("console"),
        "{challenge}"
    );
    let admin = format!("Bearer {}", issuer.token("dave", &p.resource, &["console"]));
    let allowed = get(s, "/console/api/counts", Some(&admin)).await;
    assert_eq!(allowed.status, 200, "{}", allowed.text);
    assert!(allowed.body["byStatus"].is_object(), "{}", allowed.text);
    assert_security_headers(&allowed, "200");
    // The page's paths are guarded the same way.
    let page = get(s, "/console", None).await;
    assert_eq!(page.status, 401, "{}", page.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_shows_tasks_of_another_instance() {
    let Some(factory) = mcp_tasks::conformance::PostgresFactory::from_env() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but PostgreSQL is not reachable for the console's event stream test"
        );
        return;
    };

    let env = mcp_tasks::conformance::Env::new("console_events", mcp_tasks::Limits::default());
    let a = factory.open(&env).await.expect("first handle");
    let b = factory.open(&env).await.expect("second handle");
    let server = |store: Arc<dyn mcp_tasks::TaskStore>| {
        let mut builder = Server::builder("console-tests", "0").store(store);
        for tool in demo_tools() {
            builder = builder.tool(tool);
        }
        builder.build()
    };
    let with_console = HttpConfig {
        console: Some(ConsoleConfig::basic(USER, PASSWORD).expect("valid")),
        ..HttpConfig::default()
    };
    let (a, b) = tokio::join!(
        TestServer::start_server(server(Arc::new(a)), with_console),
        TestServer::start_server(server(Arc::new(b)), HttpConfig::default()),
    );
    let mut events = open_events(&a).await;
    let id = b.create_task("slow_compute", slow(0.2, "elsewhere")).await;
    let first = task_event_of(&mut events, &id).await;
    assert_eq!(first["tool"], "slow_compute", "{first}");
    // It runs on B and completes there; A's console hears that too.
    let deadline = Instant::now() + WAIT;
    let mut last = first;
    while last["status"] != "completed" {
        assert!(Instant::now() < deadline, "never completed: {last}");
        last = task_event_of(&mut events, &id).await;
    }
    // (The kit's stores run on a manual clock: no duration to compare.)
    assert!(last["durationMs"].is_i64(), "{last}");
    // And A's API reads it from the shared store.
    let detail = ok(&a, &format!("/console/api/tasks/{id}")).await;
    assert_eq!(detail["status"], "completed");
    drop(events);
    a.stop().await;
    b.stop().await;
}

/// The console's own page passes the `Origin` check whatever `allowed_origins` lists for
/// MCP clients; another origin does not.
#[tokio::test]
async fn the_consoles_own_origin_passes() {
    let http = HttpConfig {
        allowed_origins: mcp_tasks_server::http::OriginPolicy::List(vec![
            "https://app.example".into(),
        ]),
        console: Some(ConsoleConfig::basic(USER, PASSWORD).expect("valid")),
        ..HttpConfig::default()
    };
    let s = TestServer::start_with(demo_tools(), quick_shutdown(), http).await;
    let own = origin_of(&s.url);
    let auth = operator();
    for (origin, status) in [
        (own.as_str(), 404),
        ("http://evil.example", 403),
        ("https://app.example", 404),
    ] {
        let headers = [
            ("authorization", auth.as_str()),
            ("x-console-csrf", "1"),
            ("origin", origin),
        ];
        let got = send(
            &s,
            reqwest::Method::POST,
            "/console/api/tasks/0000/cancel",
            &headers,
        )
        .await;
        assert_eq!(got.status, status, "from {origin}: {}", got.text);
    }
    s.stop().await;
}
