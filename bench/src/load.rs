//! The load generator: `concurrency` clients, each running one workload's operation in a
//! loop for `seconds`, over Streamable HTTP (HTTP/1.1 keep-alive, TCP_NODELAY). Prints
//! one JSON object: throughput, latency percentiles, errors, completions per second,
//! for the push workload completion-to-client latency and, for the deadline workload,
//! the split between synchronous answers and promoted tasks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use std::net::SocketAddr;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// One operation, repeated by every client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// A synchronous `tools/call` (`echo`).
    Call,
    /// A task's whole life: `tools/call work {ms: 0}`, then `tasks/get` until completed.
    LifecyclePoll,
    /// A task's whole life followed by push: `tools/call work {ms}`, then
    /// `subscriptions/listen` on it until it is pushed as completed.
    LifecyclePush,
    /// The same on MCP 2025-11-25: each client opens a session and its standalone GET
    /// stream once; then `tools/call work {ms}` with `params.task`, until the stream
    /// pushes `notifications/tasks/status` completed (the result read after, for the
    /// tool's finishing time).
    LifecyclePushSession,
    /// `tasks/get` on one of `live_tasks` working tasks, chosen at random.
    Get,
    /// A task with one input round trip: `tools/call ask`, `tasks/get` until
    /// input_required, `tasks/update` with the answer, `tasks/get` until completed.
    Update,
    /// A task's event stream (ours only): `tools/call emit` (`STREAM_EVENTS` events, one
    /// every `STREAM_INTERVAL_MS`), then `tasks/stream` on it until its result; each live
    /// event's emit -> client latency is measured from the time it carries.
    Stream,
    /// A deadline-promoted call (ours only): `tools/call maybe {ms}`, `ms` drawn uniformly
    /// from the plan's `work_ms`; a `complete` reply is a synchronous answer, a `task`
    /// reply is a promoted task, read with `tasks/get` until completed.
    Deadline,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Call => "tools/call (sync)",
            Workload::LifecyclePoll => "task lifecycle, poll",
            Workload::LifecyclePush => "task lifecycle, push",
            Workload::LifecyclePushSession => "task lifecycle, push (2025-11-25 session)",
            Workload::Get => "tasks/get",
            Workload::Update => "task with input (tasks/update)",
            Workload::Deadline => "deadline-promoted call",
            Workload::Stream => "task event stream (tasks/stream)",
        }
    }
}

/// Which server's tools the workloads call: `mcp-bench serve`'s (see `tools.rs`) or the
/// demo's as shipped (`mcp-tasks-server --example demo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tools {
    /// `echo`, `work {ms}`, `ask`, `maybe {ms}`.
    Bench,
    /// `greet {name}`, `slow_compute {seconds}` (1 µs for "no work"), `confirm_delete
    /// {filename}` answered `{confirm: true}`, `maybe_slow {seconds}`. Its results carry
    /// no finishing time, so push latency is not measured.
    Demo,
}

impl Tools {
    /// The params of a synchronous call.
    fn echo(self) -> Value {
        match self {
            Tools::Bench => json!({"name": "echo", "arguments": {}}),
            Tools::Demo => json!({"name": "greet", "arguments": {"name": "bench"}}),
        }
    }

    /// The params of a task that works `ms` (0: as little as the tool can).
    fn work(self, ms: u64) -> Value {
        match self {
            Tools::Bench => json!({"name": "work", "arguments": {"ms": ms}}),
            Tools::Demo => {
                let seconds = if ms == 0 { 1e-6 } else { ms as f64 / 1000.0 };
                json!({"name": "slow_compute", "arguments": {"seconds": seconds}})
            }
        }
    }

    /// The params of a task that asks one question, and the content that answers it.
    fn ask(self) -> (Value, Value) {
        match self {
            Tools::Bench => (
                json!({"name": "ask", "arguments": {}}),
                json!({"name": "bench"}),
            ),
            Tools::Demo => (
                json!({"name": "confirm_delete", "arguments": {"filename": "bench.txt"}}),
                json!({"confirm": true}),
            ),
        }
    }

    /// The params of a deadline-promoted call working `ms`.
    fn maybe(self, ms: u64) -> Value {
        match self {
            Tools::Bench => json!({"name": "maybe", "arguments": {"ms": ms}}),
            Tools::Demo => {
                json!({"name": "maybe_slow", "arguments": {"seconds": ms as f64 / 1000.0}})
            }
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Whose tools the workloads call.
    pub tools: Tools,
    /// The endpoints; client `n` uses `urls[n % urls.len()]`.
    pub urls: Vec<String>,
    pub workload: Workload,
    pub concurrency: usize,
    pub seconds: f64,
    pub live_tasks: usize,
    pub push_ms: u64,
    /// The deadline workload's work per call, in ms: uniform in `.0..=.1`.
    pub work_ms: (u64, u64),
}

const VERSION: &str = "2026-07-28";
/// The revision of the session workload.
const SESSION_VERSION: &str = "2025-11-25";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    })
}

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

/// One HTTP/1.1 keep-alive connection (TCP_NODELAY) to the server, used by one client
/// at a time: the cheapest client there is, so that the load generator's core is not the
/// bottleneck it measures.
struct Rpc {
    addr: SocketAddr,
    authority: String,
    path: String,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// JSON-RPC ids are unique per connection, as a well-behaved client makes them;
    /// also the count of requests sent.
    next_id: u64,
    /// The MCP 2025-11-25 session this client's requests belong to, once opened.
    session: Option<Session>,
}

/// A client's MCP 2025-11-25 session: its id, and the statuses its standalone stream
/// pushed, as (received at, µs since the epoch; task id; status).
struct Session {
    id: String,
    statuses: tokio::sync::mpsc::UnboundedReceiver<(u128, String, String)>,
    /// The task reading the standalone stream; ended with the session.
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The body of a response (collected) or its stream.
type Reply = hyper::Response<Incoming>;

async fn connect(addr: SocketAddr) -> Result<SendRequest<Full<Bytes>>, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(connection);
    Ok(sender)
}

impl Rpc {
    fn new(url: &str) -> Result<Rpc, String> {
        let uri: hyper::Uri = url.parse().map_err(|e| format!("bad URL {url}: {e}"))?;
        let authority = uri
            .authority()
            .ok_or_else(|| format!("no host in {url}"))?
            .to_string();
        let addr = authority
            .parse()
            .map_err(|e| format!("the bench wants an IP:port URL, not {authority}: {e}"))?;
        Ok(Rpc {
            addr,
            authority,
            path: uri.path().to_owned(),
            sender: None,
            next_id: 1,
            session: None,
        })
    }

    fn request(
        &mut self,
        method: &str,
        mut params: Value,
    ) -> Result<hyper::Request<Full<Bytes>>, String> {
        if let Some(session) = &self.session {
            // A session's request: its id and version in headers, no `_meta` declaration.
            let session = session.id.clone();
            return self.session_request(method, params, Some(&session));
        }
        params["_meta"] = meta();
        // The Mcp-Name header: the tool's name, or the task's id for the tasks/* methods.
        let name = match method {
            "tools/call" => params["name"].as_str().map(str::to_owned),
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                params["taskId"].as_str().map(str::to_owned)
            }
            _ => None,
        };
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = hyper::Request::post(self.path.as_str())
            .header("host", self.authority.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        request
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| e.to_string())
    }

    /// A request of MCP 2025-11-25: in the session `session` (none for `initialize`).
    fn session_request(
        &mut self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<hyper::Request<Full<Bytes>>, String> {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = hyper::Request::post(self.path.as_str())
            .header("host", self.authority.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", SESSION_VERSION);
        }
        request
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| e.to_string())
    }

    /// Opens this client's MCP 2025-11-25 session (`initialize`, then
    /// `notifications/initialized`) and its standalone stream, on a connection of its own.
    async fn open_session(&mut self) -> Result<(), String> {
        let init = self.session_request(
            "initialize",
            json!({
                "protocolVersion": SESSION_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mcp-bench", "version": "0"},
            }),
            None,
        )?;
        let reply = self
            .send(init)
            .await
            .map_err(|e| format!("initialize: {e}"))?;
        let id = reply
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| format!("initialize: no Mcp-Session-Id (HTTP {})", reply.status()))?;
        let _ = reply.into_body().collect().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let note = hyper::Request::post(self.path.as_str())
            .header("host", self.authority.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", id.as_str())
            .header("mcp-protocol-version", SESSION_VERSION)
            .body(Full::new(Bytes::from(initialized.to_string())))
            .map_err(|e| e.to_string())?;
        let reply = self
            .send(note)
            .await
            .map_err(|e| format!("initialized: {e}"))?;
        let _ = reply.into_body().collect().await;
        let get = hyper::Request::get(self.path.as_str())
            .header("host", self.authority.as_str())
            .header("accept", "text/event-stream")
            .header("mcp-session-id", id.as_str())
            .header("mcp-protocol-version", SESSION_VERSION)
            .body(Full::new(Bytes::new()))
            .map_err(|e| e.to_string())?;
        let mut stream_conn = connect(self.addr).await?;
        let reply = stream_conn
            .send_request(get)
            .await
            .map_err(|e| format!("the standalone stream: {e}"))?;
        if !reply.status().is_success() {
            return Err(format!("the standalone stream: HTTP {}", reply.status()));
        }
        let (tx, statuses) = tokio::sync::mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            // The connection lives as long as this reader.
            let _conn = stream_conn;
            let mut body = reply.into_body();
            let mut buffer = String::new();
            while let Some(Ok(frame)) = body.frame().await {
                let received = now_us();
                let Ok(chunk) = frame.into_data() else {
                    continue;
                };
                for message in sse_messages(&mut buffer, &chunk) {
                    if message["method"] != "notifications/tasks/status" {
                        continue;
                    }
                    let task = message["params"]["taskId"].as_str().unwrap_or_default();
                    let status = status(&message["params"]).to_owned();
                    if tx.send((received, task.to_owned(), status)).is_err() {
                        return;
                    }
                }
            }
        });
        self.session = Some(Session {
            id,
            statuses,
            reader,
        });
        Ok(())
    }

    /// Sends on this client's connection (made again if the server closed it).
    async fn send(&mut self, request: hyper::Request<Full<Bytes>>) -> Result<Reply, String> {
        let mut sender = match self.sender.take() {
            Some(s) if !s.is_closed() => s,
            _ => connect(self.addr).await?,
        };
        sender.ready().await.map_err(|e| e.to_string())?;
        let reply = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        self.sender = Some(sender);
        Ok(reply)
    }

    /// One request; its JSON-RPC result (an error reply is an `Err`).
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let request = self.request(method, params)?;
        let reply = self
            .send(request)
            .await
            .map_err(|e| format!("{method}: {e}"))?;
        let sse = reply
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let bytes = reply
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{method}: {e}"))?
            .to_bytes();
        let message: Value = if sse {
            // The reply is the `data:` line that parses as a response.
            std::str::from_utf8(&bytes)
                .map_err(|e| e.to_string())?
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m.get("result").is_some() || m.get("error").is_some())
                .ok_or_else(|| format!("{method}: no response in the event stream"))?
        } else {
            serde_json::from_slice(&bytes).map_err(|e| format!("{method}: {e}"))?
        };
        match message.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(format!("{method}: {}", message["error"])),
        }
    }
}

/// The id of a created task (flat or under `task`).
fn task_id(created: &Value) -> Result<String, String> {
    created
        .get("taskId")
        .or_else(|| created.get("task").and_then(|t| t.get("taskId")))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("not a task: {created}"))
}

fn status(task: &Value) -> &str {
    task.get("status")
        .or_else(|| task.get("task").and_then(|t| t.get("status")))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Bounds a poll loop: a task that needs more reads than this is an error.
const MAX_POLLS: usize = 100_000;

async fn poll_until(rpc: &mut Rpc, id: &str, wanted: &str) -> Result<Value, String> {
    for _ in 0..MAX_POLLS {
        let task = rpc.call("tasks/get", json!({"taskId": id})).await?;
        match status(&task) {
            s if s == wanted => return Ok(task),
            "working" | "input_required" => {}
            other => return Err(format!("task ended {other}: {task}")),
        }
    }
    Err(format!("task {id} not {wanted} after {MAX_POLLS} reads"))
}

/// One push lifecycle; `Some(latency)` when the completion happened after the
/// subscription was acknowledged (a real push, not the initial state).
async fn push_lifecycle(rpc: &mut Rpc, tools: Tools, push_ms: u64) -> Result<Option<u64>, String> {
    let created = rpc.call("tools/call", tools.work(push_ms)).await?;
    let id = task_id(&created)?;
    // The stream gets a connection of its own, closed when this lifecycle ends.
    let listen = rpc.request(
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id]}}),
    )?;
    let mut stream_conn = connect(rpc.addr).await?;
    let reply = stream_conn
        .send_request(listen)
        .await
        .map_err(|e| format!("subscriptions/listen: {e}"))?;
    let http_status = reply.status();
    let mut body = reply.into_body();
    let mut buffer = String::new();
    let mut acked_at = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("subscriptions/listen: {e}"))?;
        let received = now_us();
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        for message in sse_messages(&mut buffer, &chunk) {
            if let Some(error) = message.get("error") {
                return Err(format!("subscriptions/listen: {error}"));
            }
            match message["method"].as_str() {
                Some("notifications/subscriptions/acknowledged") => acked_at = Some(received),
                Some(_) if status(&message["params"]) == "completed" => {
                    let task = message["params"].get("task").unwrap_or(&message["params"]);
                    let done = task["result"]["content"][0]["text"]
                        .as_str()
                        .and_then(|t| serde_json::from_str::<Value>(t).ok())
                        .and_then(|v| v["done_at_us"].as_u64())
                        .map(u128::from);
                    return Ok(match (acked_at, done) {
                        (Some(acked), Some(done)) if done >= acked => {
                            Some(u64::try_from(received.saturating_sub(done)).unwrap_or(u64::MAX))
                        }
                        _ => None,
                    });
                }
                Some(_) if matches!(status(&message["params"]), "failed" | "cancelled") => {
                    return Err(format!("task ended: {message}"));
                }
                _ => {}
            }
        }
    }
    Err(format!(
        "subscriptions/listen: the stream ended before completion (HTTP {http_status}, left: {buffer:?})"
    ))
}

/// Adds `chunk` to `buffer` and takes out the JSON messages of every complete SSE event
/// in it (the `data:` lines that parse).
fn sse_messages(buffer: &mut String, chunk: &[u8]) -> Vec<Value> {
    buffer.push_str(&String::from_utf8_lossy(chunk));
    let mut messages = Vec::new();
    while let Some(end) = buffer.find("\n\n") {
        let event: String = buffer.drain(..end + 2).collect();
        messages.extend(
            event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok()),
        );
    }
    messages
}

/// The events of one `stream` lifecycle, and the wait before each.
const STREAM_EVENTS: u32 = 20;
const STREAM_INTERVAL_MS: u64 = 5;

/// One event-stream lifecycle: `emit` as a task, then its `tasks/stream` read to the end.
/// The latencies of the events emitted after the stream's response began (the earlier
/// ones are replayed from the log, not pushed), and how many events came in all.
async fn stream_lifecycle(rpc: &mut Rpc) -> Result<(Vec<u64>, u64), String> {
    let emit = json!({"name": "emit", "arguments": {"count": STREAM_EVENTS, "interval_ms": STREAM_INTERVAL_MS}});
    let created = rpc.call("tools/call", emit).await?;
    let id = task_id(&created)?;
    let request = rpc.request("tasks/stream", json!({"taskId": id}))?;
    // The stream gets a connection of its own, closed when this lifecycle ends.
    let mut stream_conn = connect(rpc.addr).await?;
    let reply = stream_conn
        .send_request(request)
        .await
        .map_err(|e| format!("tasks/stream: {e}"))?;
    let opened = now_us();
    let http_status = reply.status();
    let mut body = reply.into_body();
    let mut buffer = String::new();
    let (mut latencies, mut events) = (Vec::new(), 0);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("tasks/stream: {e}"))?;
        let received = now_us();
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        for message in sse_messages(&mut buffer, &chunk) {
            if let Some(error) = message.get("error") {
                return Err(format!("tasks/stream: {error}"));
            }
            if message.get("result").is_some() {
                return Ok((latencies, events));
            }
            if message["method"] != "notifications/tasks/event" {
                continue;
            }
            events += 1;
            let at = message["params"]["payload"]["at_us"]
                .as_u64()
                .map(u128::from);
            if let Some(at) = at.filter(|&at| at >= opened) {
                latencies.push(u64::try_from(received.saturating_sub(at)).unwrap_or(u64::MAX));
            }
        }
    }
    Err(format!(
        "tasks/stream: the stream ended before its result (HTTP {http_status}, left: {buffer:?})"
    ))
}

/// One push lifecycle in an MCP 2025-11-25 session (opened first, once per client): the
/// time from the tool's finishing to its `completed` status read on the standalone stream.
async fn session_push_lifecycle(
    rpc: &mut Rpc,
    tools: Tools,
    push_ms: u64,
) -> Result<Option<u64>, String> {
    if rpc.session.is_none() {
        rpc.open_session().await?;
    }
    let mut params = tools.work(push_ms);
    params["task"] = json!({});
    let created = rpc.call("tools/call", params).await?;
    let id = task_id(&created)?;
    let statuses = &mut rpc
        .session
        .as_mut()
        .ok_or("the session went away")?
        .statuses;
    let received = loop {
        let (at, task, status) = statuses.recv().await.ok_or("the standalone stream ended")?;
        if task != id {
            continue;
        }
        match status.as_str() {
            "completed" => break at,
            "failed" | "cancelled" => return Err(format!("task {id} ended {status}")),
            _ => {}
        }
    };
    let result = rpc.call("tasks/result", json!({"taskId": id})).await?;
    let done = result["content"][0]["text"]
        .as_str()
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| v["done_at_us"].as_u64())
        .map(u128::from);
    Ok(done.map(|done| u64::try_from(received.saturating_sub(done)).unwrap_or(u64::MAX)))
}

/// What one operation was, beyond its latency.
#[derive(Debug, Clone, Default)]
struct Outcome {
    /// Completion-to-client latency (push workloads), when measured; the emit -> client
    /// latency of each live event (stream workload).
    push_us: Vec<u64>,
    /// The events received (stream workload).
    events: u64,
    /// Deadline workload: whether the call was promoted to a task.
    promoted: Option<bool>,
}

/// xorshift64: cheap, seeded, uniform enough for picking a task or a duration.
fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// A deadline-promoted call of `ms`: whether it was promoted.
async fn deadline_call(rpc: &mut Rpc, tools: Tools, ms: u64) -> Result<bool, String> {
    let reply = rpc.call("tools/call", tools.maybe(ms)).await?;
    match reply.get("resultType").and_then(Value::as_str) {
        Some("task") => {
            poll_until(rpc, &task_id(&reply)?, "completed").await?;
            Ok(true)
        }
        Some("complete") | None if reply["isError"] != true => Ok(false),
        _ => Err(format!("tools/call maybe: {reply}")),
    }
}

struct Worker {
    latencies_us: Vec<u64>,
    /// The deadline workload's latencies, by how the call answered.
    synchronous_us: Vec<u64>,
    promoted_us: Vec<u64>,
    push_us: Vec<u64>,
    events: u64,
    /// Completion time of each operation, in ms since the start.
    done_ms: Vec<u32>,
    errors: u64,
    first_error: Option<String>,
    requests: u64,
}

async fn operation(
    rpc: &mut Rpc,
    plan: &Plan,
    live: &[String],
    rng: &mut u64,
) -> Result<Outcome, String> {
    match plan.workload {
        Workload::Call => {
            rpc.call("tools/call", plan.tools.echo()).await?;
        }
        Workload::LifecyclePoll => {
            let created = rpc.call("tools/call", plan.tools.work(0)).await?;
            poll_until(rpc, &task_id(&created)?, "completed").await?;
        }
        Workload::LifecyclePush => {
            return Ok(Outcome {
                push_us: Vec::from_iter(push_lifecycle(rpc, plan.tools, plan.push_ms).await?),
                ..Outcome::default()
            });
        }
        Workload::LifecyclePushSession => {
            return Ok(Outcome {
                push_us: Vec::from_iter(
                    session_push_lifecycle(rpc, plan.tools, plan.push_ms).await?,
                ),
                ..Outcome::default()
            });
        }
        Workload::Stream => {
            let (push_us, events) = stream_lifecycle(rpc).await?;
            return Ok(Outcome {
                push_us,
                events,
                promoted: None,
            });
        }
        Workload::Get => {
            let id = &live[(next(rng) % live.len() as u64) as usize];
            let task = rpc.call("tasks/get", json!({"taskId": id})).await?;
            if status(&task) != "working" {
                return Err(format!("a live task is not working: {task}"));
            }
        }
        Workload::Update => {
            let (ask, answer) = plan.tools.ask();
            let created = rpc.call("tools/call", ask).await?;
            let id = task_id(&created)?;
            let task = poll_until(rpc, &id, "input_required").await?;
            let requests = task
                .get("inputRequests")
                .or_else(|| task.get("task").and_then(|t| t.get("inputRequests")))
                .and_then(Value::as_object)
                .ok_or_else(|| format!("no inputRequests: {task}"))?;
            let answers: serde_json::Map<String, Value> = requests
                .keys()
                .map(|k| (k.clone(), json!({"action": "accept", "content": answer})))
                .collect();
            rpc.call(
                "tasks/update",
                json!({"taskId": id, "inputResponses": answers}),
            )
            .await?;
            poll_until(rpc, &id, "completed").await?;
        }
        Workload::Deadline => {
            let (min, max) = plan.work_ms;
            let ms = min + next(rng) % (max - min).saturating_add(1);
            return Ok(Outcome {
                promoted: Some(deadline_call(rpc, plan.tools, ms).await?),
                ..Outcome::default()
            });
        }
    }
    Ok(Outcome::default())
}

/// Creates the working tasks the `get` workload reads (64 at a time).
async fn create_live(url: &str, tools: Tools, count: usize) -> Result<Vec<String>, String> {
    let mut clients = (0..64)
        .map(|_| Rpc::new(url))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ids = Vec::with_capacity(count);
    while ids.len() < count {
        let wanted = (count - ids.len()).min(clients.len());
        let created = futures::future::join_all(
            clients
                .iter_mut()
                .take(wanted)
                .map(|rpc| rpc.call("tools/call", tools.work(3_600_000))),
        )
        .await;
        for c in created {
            ids.push(task_id(&c?)?);
        }
    }
    Ok(ids)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Runs the plan; the report as JSON.
pub async fn run(plan: Plan) -> Result<Value, String> {
    if plan.urls.is_empty() {
        return Err("no URL to load".into());
    }
    let live = Arc::new(if plan.workload == Workload::Get {
        create_live(&plan.urls[0], plan.tools, plan.live_tasks.max(1)).await?
    } else {
        Vec::new()
    });
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers = spawn_workers(&plan, &stop, &live, started)?;
    tokio::time::sleep(Duration::from_secs_f64(plan.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut done = Vec::new();
    for w in workers {
        done.push(w.await.map_err(|e| e.to_string())?);
    }
    Ok(report(&plan, started.elapsed().as_secs_f64(), done))
}

/// One client per unit of concurrency, each running the workload until `stop`.
fn spawn_workers(
    plan: &Plan,
    stop: &Arc<AtomicBool>,
    live: &Arc<Vec<String>>,
    started: Instant,
) -> Result<Vec<tokio::task::JoinHandle<Worker>>, String> {
    let mut workers = Vec::new();
    for n in 0..plan.concurrency {
        let mut rpc = Rpc::new(&plan.urls[n % plan.urls.len()])?;
        let (plan, stop, live) = (plan.clone(), stop.clone(), live.clone());
        workers.push(tokio::spawn(async move {
            let mut w = Worker {
                latencies_us: Vec::new(),
                synchronous_us: Vec::new(),
                promoted_us: Vec::new(),
                push_us: Vec::new(),
                events: 0,
                done_ms: Vec::new(),
                errors: 0,
                first_error: None,
                requests: 0,
            };
            let mut rng =
                0x9E37_79B9_7F4A_7C15u64 ^ (n as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                match operation(&mut rpc, &plan, &live, &mut rng).await {
                    Ok(outcome) => {
                        let us = t.elapsed().as_micros() as u64;
                        w.latencies_us.push(us);
                        w.done_ms.push(started.elapsed().as_millis() as u32);
                        w.push_us.extend(outcome.push_us);
                        w.events += outcome.events;
                        match outcome.promoted {
                            Some(true) => w.promoted_us.push(us),
                            Some(false) => w.synchronous_us.push(us),
                            None => {}
                        }
                    }
                    Err(e) => {
                        w.errors += 1;
                        w.first_error.get_or_insert(e);
                        // An erroring server is not hammered in a tight loop.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            w.requests = rpc.next_id - 1;
            w
        }));
    }
    Ok(workers)
}

/// The report of a run of `elapsed` seconds from its workers.
fn report(plan: &Plan, elapsed: f64, workers: Vec<Worker>) -> Value {
    let (mut latencies, mut push, mut done) = (Vec::new(), Vec::new(), Vec::new());
    let (mut synchronous, mut promoted) = (Vec::new(), Vec::new());
    let (mut errors, mut first_error, mut requests, mut events) = (0, None, 0, 0);
    for w in workers {
        latencies.extend(w.latencies_us);
        synchronous.extend(w.synchronous_us);
        promoted.extend(w.promoted_us);
        push.extend(w.push_us);
        done.extend(w.done_ms);
        errors += w.errors;
        requests += w.requests;
        events += w.events;
        first_error = first_error.or(w.first_error);
    }
    latencies.sort_unstable();
    push.sort_unstable();
    synchronous.sort_unstable();
    promoted.sort_unstable();
    // Operations finished in each whole second of the run.
    let whole_seconds = plan.seconds.floor() as usize;
    let mut per_second = vec![0u64; whole_seconds];
    for ms in done {
        if let Some(slot) = per_second.get_mut(ms as usize / 1000) {
            *slot += 1;
        }
    }
    let operations = latencies.len() as u64;
    json!({
        "workload": plan.workload.name(),
        "concurrency": plan.concurrency,
        "seconds": elapsed,
        "operations": operations,
        "per_second": operations as f64 / elapsed,
        "errors": errors,
        "requests_per_operation": requests as f64 / operations.max(1) as f64,
        "first_error": first_error,
        "p50_us": percentile(&latencies, 0.50),
        "p90_us": percentile(&latencies, 0.90),
        "p99_us": percentile(&latencies, 0.99),
        "max_us": latencies.last().copied().unwrap_or(0),
        "push_samples": push.len(),
        "push_p50_us": percentile(&push, 0.50),
        "push_p99_us": percentile(&push, 0.99),
        "push_max_us": push.last().copied().unwrap_or(0),
        "events": events,
        "events_per_second": events as f64 / elapsed,
        "each_second": per_second,
        "synchronous": synchronous.len(),
        "synchronous_per_second": synchronous.len() as f64 / elapsed,
        "synchronous_p50_us": percentile(&synchronous, 0.50),
        "synchronous_p99_us": percentile(&synchronous, 0.99),
        "promoted": promoted.len(),
        "promoted_per_second": promoted.len() as f64 / elapsed,
        "promoted_p50_us": percentile(&promoted, 0.50),
        "promoted_p99_us": percentile(&promoted, 0.99),
        "work_ms": (plan.workload == Workload::Deadline).then_some([plan.work_ms.0, plan.work_ms.1]),
    })
}
