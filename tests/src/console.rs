//! What the console's API tests share (`console_*.rs` but the browser ones): a server
//! with the console on, console calls with a credential (and the CSRF header on a
//! `POST`), their replies, tasks of bearer owners and waits for their statuses, the
//! audit trail captured, and [`Remote`], the console of a demo process.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use mcp_tasks::TaskStore;
use mcp_tasks_server::console::ConsoleConfig;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, Server, ToolDef};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::issuer::{Protected, TestIssuer, protect_with};
use crate::server_harness::{Reply, TestServer, WAIT, call_params, request, task_params};

/// The console's CSRF header, which every `POST` needs.
pub const CSRF: (&str, &str) = ("x-console-csrf", "1");

/// `Authorization: Basic ...` of `user` and `password`.
pub fn basic(user: &str, password: &str) -> String {
    basic_of(&format!("{user}:{password}"))
}

/// `Authorization: Basic ...` of a `user:password` pair.
pub fn basic_of(credentials: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
    format!("Basic {encoded}")
}

/// The runtime of a console test: tasks still running when it ends are cancelled at once.
pub fn quick_shutdown() -> RuntimeConfig {
    RuntimeConfig {
        shutdown_grace: Duration::from_millis(100),
        ..RuntimeConfig::default()
    }
}

/// A server named `name` on `store` with `tools`, [`quick_shutdown`], over HTTP as
/// `http` says (the console and the principal hook are the test's).
pub async fn server_on(
    name: &str,
    store: Arc<dyn TaskStore>,
    tools: impl IntoIterator<Item = ToolDef>,
    http: HttpConfig,
) -> TestServer {
    let mut builder = Server::builder(name, "0")
        .store(store)
        .runtime(quick_shutdown());
    for tool in tools {
        builder = builder.tool(tool);
    }
    TestServer::start_server(builder.build(), http).await
}

/// The demo server behind `issuer`'s tokens with the console in scope mode: a token
/// with the scope `console` is an operator.
pub async fn scope_server(issuer: &TestIssuer) -> Protected {
    let http = HttpConfig {
        console: Some(ConsoleConfig::scope("console").expect("a scope")),
        ..HttpConfig::default()
    };
    protect_with(issuer, |_| {}, http).await
}

/// `http://127.0.0.1:PORT` of a server whose MCP endpoint is `url`.
pub fn origin_of(url: &str) -> String {
    url.trim_end_matches("/mcp").to_owned()
}

/// One console reply.
#[derive(Debug)]
pub struct Got {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body as JSON, `Null` when it is not JSON (or an event stream, not read).
    pub body: Value,
    /// The body as text (empty for an event stream).
    pub text: String,
}

impl Got {
    /// The value of header `name`, empty when absent.
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }
}

/// `method path` on the server's origin with exactly `headers`, and `body` as JSON when
/// given. An event stream's body is not read.
pub async fn send(
    s: &TestServer,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Got {
    let mut request = s
        .client
        .request(method, format!("{}{path}", origin_of(&s.url)));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = tokio::time::timeout(WAIT, request.send())
        .await
        .expect("reply in time")
        .expect("HTTP request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = if headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
    {
        String::new()
    } else {
        tokio::time::timeout(WAIT, response.text())
            .await
            .expect("body in time")
            .expect("body")
    };
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Got {
        status,
        headers,
        body,
        text,
    }
}

/// `method path` as `auth` (none: no credential), the CSRF header on a `POST`, `body` as
/// JSON when given.
pub async fn call(
    s: &TestServer,
    method: reqwest::Method,
    path: &str,
    auth: Option<&str>,
    body: Option<&Value>,
) -> Got {
    let mut headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
    if method == reqwest::Method::POST {
        headers.push(CSRF);
    }
    send(s, method, path, &headers, body).await
}

/// A GET as `auth` that must answer 200; its JSON body.
pub async fn ok_as(s: &TestServer, auth: &str, path: &str) -> Value {
    let got = call(s, reqwest::Method::GET, path, Some(auth), None).await;
    assert_eq!(got.status, 200, "GET {path}: {}", got.text);
    got.body
}

/// An MCP request as `owner` (`Authorization: Bearer owner`): its whole reply.
pub async fn rpc_reply(s: &TestServer, owner: &str, method: &str, params: Value) -> Reply {
    let auth = format!("Bearer {owner}");
    let message = request(s.id(), method, params);
    s.post(&message, &[("authorization", &auth)]).await
}

/// An MCP request as `owner` (`Authorization: Bearer owner`): its result.
pub async fn rpc_as(s: &TestServer, owner: &str, method: &str, params: Value) -> Value {
    rpc_reply(s, owner, method, params).await.result().clone()
}

/// Starts `tool` with `args` as a task of `owner` through the MCP endpoint; its id.
pub async fn task_of(s: &TestServer, owner: &str, tool: &str, args: Value) -> String {
    let reply = rpc_reply(s, owner, "tools/call", call_params(tool, args, true)).await;
    let result = reply.result();
    assert_eq!(result["resultType"], "task", "{}", reply.text);
    result["taskId"].as_str().expect("taskId").to_owned()
}

/// `tasks/get` of `id` as `owner`: the whole reply.
pub async fn get_as(s: &TestServer, owner: &str, id: &str) -> Reply {
    rpc_reply(s, owner, "tasks/get", task_params(id, true)).await
}

/// Calls `read` until `done` holds for what it returns (within [`WAIT`]); that value.
pub async fn poll<T: std::fmt::Display, F: Future<Output = T>>(
    mut read: impl FnMut() -> F,
    done: impl Fn(&T) -> bool,
) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        let value = read().await;
        if done(&value) {
            return value;
        }
        assert!(Instant::now() < deadline, "never got there: {value}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Polls `tasks/get` of `id` as `owner` until `done` holds (within [`WAIT`]); that task.
pub async fn wait_for(
    s: &TestServer,
    owner: &str,
    id: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    poll(
        || rpc_as(s, owner, "tasks/get", task_params(id, true)),
        done,
    )
    .await
}

/// Whether a task (a `tasks/get` result or the console's view) is in a terminal status.
pub fn finished(task: &Value) -> bool {
    ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or_default())
}

/// The `seq` of each of a history's entries.
pub fn seqs(list: &[Value]) -> Vec<u64> {
    list.iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect()
}

/// The entries of a history reply.
pub fn entries(reply: &Value) -> Vec<Value> {
    reply["entries"].as_array().cloned().unwrap_or_default()
}

/// The audit trail, captured for the (current-thread) test that holds the guard of
/// [`capture_audit`].
#[derive(Clone, Debug, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Everything captured so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }

    /// The captured lines holding every one of `parts`.
    pub fn lines_with(&self, parts: &[&str]) -> Vec<String> {
        self.text()
            .lines()
            .filter(|l| parts.iter().all(|p| l.contains(p)))
            .map(str::to_owned)
            .collect()
    }

    /// The first captured line holding every one of `parts`.
    pub fn first_with(&self, parts: &[&str]) -> String {
        let text = self.text();
        text.lines()
            .find(|l| parts.iter().all(|p| l.contains(p)))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no line with {parts:?} in:\n{text}"))
    }

    /// The one captured line holding every one of `parts`.
    pub fn line_with(&self, parts: &[&str]) -> String {
        let found = self.lines_with(parts);
        assert_eq!(
            found.len(),
            1,
            "one line with {parts:?} in:\n{}",
            self.text()
        );
        found[0].clone()
    }
}

/// Asserts that `line` holds every one of `parts`.
pub fn assert_holds(line: &str, parts: &[&str]) {
    for part in parts {
        assert!(line.contains(part), "{part} in {line}");
    }
}

/// The audit trail at `level` (`trace`, `debug`, `info`...), captured for the
/// (current-thread) test that holds the guard.
pub fn capture_audit(level: &str) -> (Captured, tracing::subscriber::DefaultGuard) {
    // tracing-core decides a callsite's interest from the current thread's dispatcher
    // alone while just one dispatcher is registered: another test's thread (no
    // subscriber) hitting a callsite first while this test's scoped one was the only one
    // cached "never" for it, and this test lost the line (the 401 refusal, seen once in a
    // full run). A second dispatcher kept for the whole process makes it ask every live one.
    static SECOND: OnceLock<tracing::Dispatch> = OnceLock::new();
    SECOND.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    let audit = Captured::default();
    let writer = audit.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(format!(
            "{}={level}",
            mcp_tasks_server::audit::TARGET
        )))
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (audit, tracing::subscriber::set_default(subscriber))
}

/// The console of a demo process whose MCP endpoint is `url`, called with Basic
/// `user:password` credentials.
#[derive(Debug)]
pub struct Remote {
    base: String,
    auth: String,
    client: reqwest::Client,
}

impl Remote {
    /// The console beside `url`, called as `credentials` (`user:password`).
    pub fn new(url: &str, credentials: &str) -> Remote {
        Remote {
            base: url.replace("/mcp", "/console"),
            auth: basic_of(credentials),
            client: reqwest::Client::new(),
        }
    }

    /// `GET /console{path}`: the status and the JSON body (which must be JSON).
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .header("authorization", &self.auth)
            .timeout(WAIT)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = response.status().as_u16();
        (status, response.json().await.expect("JSON"))
    }

    /// `POST /console{path}`, with the CSRF header if `csrf`: the status and the JSON
    /// body (`Null` when not JSON).
    pub async fn post(&self, path: &str, csrf: bool) -> (u16, Value) {
        let mut request = self
            .client
            .post(format!("{}{path}", self.base))
            .header("authorization", &self.auth)
            .timeout(WAIT);
        if csrf {
            request = request.header(CSRF.0, CSRF.1);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// The history of task `id`, which must answer 200.
    pub async fn history(&self, id: &str) -> Value {
        let (status, body) = self.get(&format!("/api/tasks/{id}/history")).await;
        assert_eq!(status, 200, "{body}");
        body
    }
}
