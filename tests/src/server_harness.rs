//! A harness for wire tests of `mcp-tasks-server`: the demo server in-process over Streamable
//! HTTP on `127.0.0.1:0`, a JSON-RPC-over-POST helper, `_meta` builders, an SSE reader,
//! and bounded polling. Every wait is bounded by [`WAIT`] (or a caller's bound).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use mcp_tasks::{MemoryStore, NewTask, Origin, Owner, TaskId, WireRevision};
use mcp_tasks_server::http::{HttpConfig, PrincipalHook};
use mcp_tasks_server::{RuntimeConfig, Server, TaskRuntime, ToolDef, demo};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The protocol version the server speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// The tasks extension's identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The upper bound of any single network wait in these tests.
pub const WAIT: Duration = Duration::from_secs(20);
/// How often [`TestServer::poll_task`] re-reads a task.
pub const POLL_EVERY: Duration = Duration::from_millis(25);

/// A request's `_meta`: the protocol version, client info and client capabilities, with
/// or without the tasks extension.
pub fn meta(tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({ "extensions": { TASKS_EXTENSION: {} } })
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "mcp-tests", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// The standard headers (SEP-2243) a conforming 2026-07-28 client sends with `message`:
/// `MCP-Protocol-Version` from its `_meta`, `Mcp-Method`, and `Mcp-Name` for the methods
/// that name a tool, prompt, resource or task. A message without `_meta` (a 2025-11-25
/// session's) gets `Mcp-Method` and `Mcp-Name` only.
pub fn standard_headers(message: &Value) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    let Some(method) = message["method"].as_str() else {
        return headers;
    };
    let params = &message["params"];
    if let Some(version) = params["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str() {
        headers.push(("mcp-protocol-version", version.to_owned()));
    }
    headers.push(("mcp-method", method.to_owned()));
    let params_text = (!params.is_null()).then(|| params.to_string());
    if let Some(name) = mcp_tasks_protocol::http::routed_name(method, params_text.as_deref()) {
        headers.push((
            "mcp-name",
            mcp_tasks_protocol::http::encode_header_value(&name),
        ));
    }
    headers
}

/// A JSON-RPC request object.
pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// `tools/call` params for `name` with `arguments`, declaring the extension or not.
pub fn call_params(name: &str, arguments: Value, tasks: bool) -> Value {
    json!({ "name": name, "arguments": arguments, "_meta": meta(tasks) })
}

/// `tasks/get` / `tasks/cancel` params for `task_id`, declaring the extension or not.
pub fn task_params(task_id: &str, tasks: bool) -> Value {
    json!({ "taskId": task_id, "_meta": meta(tasks) })
}

/// `tasks/update` params answering `responses` for `task_id` (extension declared).
pub fn update_params(task_id: &str, responses: Value) -> Value {
    json!({ "taskId": task_id, "inputResponses": responses, "_meta": meta(true) })
}

/// An accepted elicitation answer with `content`.
pub fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

/// The demo server's tools.
pub fn demo_tools() -> Vec<ToolDef> {
    demo::tools().expect("the demo tools are well-formed")
}

/// Creates a task of `owner` in the runtime's store and runs the demo tool `tool` with
/// `args` as it on `runtime` (no server in between); returns the task id.
pub async fn launch_demo_task(
    runtime: &TaskRuntime,
    owner: &Owner,
    tool: &str,
    args: Value,
) -> TaskId {
    launch_demo(runtime, owner, tool, args, None).await
}

/// [`launch_demo_task`] with the task's [`mcp_tasks::Job`] in its record (its arguments and
/// `delivery`, its first run counted), as a server creates it: a run that loses its
/// worker can be run again.
pub async fn launch_demo_job(
    runtime: &TaskRuntime,
    owner: &Owner,
    tool: &str,
    args: Value,
    delivery: mcp_tasks::Delivery,
) -> TaskId {
    launch_demo(runtime, owner, tool, args, Some(delivery)).await
}

async fn launch_demo(
    runtime: &TaskRuntime,
    owner: &Owner,
    tool: &str,
    args: Value,
    delivery: Option<mcp_tasks::Delivery>,
) -> TaskId {
    let Value::Object(args) = args else {
        panic!("arguments are an object: {args}")
    };
    let job = delivery.map(|delivery| mcp_tasks::Job {
        arguments: args.clone(),
        declarations: None,
        principal: None,
        scopes: Default::default(),
        related_tasks: Vec::new(),
        delivery,
        attempts: 1,
        rerun_of: None,
    });
    let record = runtime
        .store()
        .create(NewTask {
            trace_context: None,
            owner: owner.clone(),
            ttl_ms: None,
            poll_interval_ms: None,
            origin: Origin {
                method: "tools/call".into(),
                tool: Some(tool.into()),
                revision: WireRevision::V2026_07_28,
            },
            status_message: None,
            job,
            idempotency: None,
        })
        .await
        .expect("create");
    let def = demo_tools()
        .into_iter()
        .find(|t| t.name() == tool)
        .unwrap_or_else(|| panic!("no demo tool {tool}"));
    runtime.launch(&record, def, args).await.expect("launch");
    record.id
}

/// A server with the demo tools on `store`, default runtime: one instance of a
/// deployment, for [`two_instances`] and the like.
pub fn demo_server(store: Arc<dyn mcp_tasks::TaskStore>) -> Server {
    let mut builder = Server::builder("mcp-tests", "0")
        .store(store)
        .runtime(RuntimeConfig::default());
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    builder.build()
}

/// A server with `tools`, a fresh [`MemoryStore`] and `runtime`.
pub fn build_server(tools: Vec<ToolDef>, runtime: RuntimeConfig) -> Server {
    let mut builder = Server::builder("mcp-tests", "0")
        .store(Arc::new(MemoryStore::default()))
        .runtime(runtime);
    for tool in tools {
        builder = builder.tool(tool);
    }
    builder.build()
}

/// A principal hook reading `Authorization: Bearer <name>`; no header is anonymous, any
/// other scheme is refused with 401. (reqwest and axum share the `http` 1.x types.)
pub fn bearer_principal() -> PrincipalHook {
    Arc::new(|headers: &HeaderMap| {
        let Some(value) = headers.get("authorization") else {
            return Ok(None);
        };
        let value = value.to_str().map_err(|_| StatusCode::UNAUTHORIZED)?;
        match value.strip_prefix("Bearer ") {
            Some(name) if !name.is_empty() => Ok(Some(name.to_owned())),
            _ => Err(StatusCode::UNAUTHORIZED),
        }
    })
}

/// One HTTP reply: status, headers, the body as JSON (`Null` when it is not JSON) and as
/// text.
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// The body as text.
    pub text: String,
}

impl Reply {
    /// Reads `response` whole (its body within [`WAIT`]).
    pub async fn read(response: reqwest::Response) -> Reply {
        let status = response.status();
        let headers = response.headers().clone();
        let text = tokio::time::timeout(WAIT, response.text())
            .await
            .expect("HTTP body in time")
            .expect("HTTP body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            text,
        }
    }

    /// The JSON-RPC `result`; panics (with the reply) when there is none.
    pub fn result(&self) -> &Value {
        let result = &self.body["result"];
        assert!(
            result.is_object(),
            "expected a result, got HTTP {} {}",
            self.status,
            self.text
        );
        result
    }

    /// The JSON-RPC `error`; panics (with the reply) when there is none.
    pub fn error(&self) -> &Value {
        let error = &self.body["error"];
        assert!(
            error.is_object(),
            "expected an error, got HTTP {} {}",
            self.status,
            self.text
        );
        error
    }

    /// The JSON-RPC error code; panics when the reply is not an error.
    pub fn error_code(&self) -> i64 {
        self.error()["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("error without an integer code: {}", self.text))
    }

    /// The error message, or "" when the reply is not an error.
    pub fn error_message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("")
    }
}

/// The demo server served over HTTP on `127.0.0.1:0`, with a client pointed at it.
#[derive(Debug)]
pub struct TestServer {
    /// The server.
    pub server: Server,
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// A client pointed at it.
    pub client: reqwest::Client,
    next_id: AtomicI64,
    stop: Option<oneshot::Sender<()>>,
    serving: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// The demo tools, default runtime, default HTTP settings.
    pub async fn start() -> TestServer {
        Self::start_with(
            demo_tools(),
            RuntimeConfig::default(),
            HttpConfig::default(),
        )
        .await
    }

    /// The demo tools with these HTTP settings.
    pub async fn start_http(http: HttpConfig) -> TestServer {
        Self::start_with(demo_tools(), RuntimeConfig::default(), http).await
    }

    /// `tools` with these runtime and HTTP settings.
    pub async fn start_with(
        tools: Vec<ToolDef>,
        runtime: RuntimeConfig,
        http: HttpConfig,
    ) -> TestServer {
        Self::start_server(build_server(tools, runtime), http).await
    }

    /// `server` (built by the caller, e.g. with limits) with these HTTP settings.
    pub async fn start_server(server: Server, http: HttpConfig) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        Self::start_server_on(listener, server, http).await
    }

    /// `server` on `listener` (bound by the caller, who needed its address first, e.g.
    /// for the OAuth resource URL).
    pub async fn start_server_on(
        listener: TcpListener,
        server: Server,
        http: HttpConfig,
    ) -> TestServer {
        let addr = listener.local_addr().expect("local address");
        let url = format!("http://{addr}{}", http.path);
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tokio::spawn({
            let server = server.clone();
            async move {
                mcp_tasks_server::http::serve(&server, listener, http, async move {
                    let _ = stopped.await;
                })
                .await
            }
        });
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(WAIT)
            .build()
            .expect("HTTP client");
        TestServer {
            server,
            url,
            client,
            next_id: AtomicI64::new(1),
            stop: Some(stop),
            serving: Some(serving),
        }
    }

    /// A fresh request id.
    pub fn id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// POSTs a raw body with the default headers (`Content-Type: application/json`,
    /// `Accept: application/json, text/event-stream`), each replaced or completed by
    /// `headers`.
    pub async fn post_raw(
        &self,
        body: impl Into<reqwest::Body>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut map = HeaderMap::new();
        map.insert("content-type", HeaderValue::from_static("application/json"));
        map.insert(
            "accept",
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        for (name, value) in headers {
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).expect("header name"),
                HeaderValue::from_str(value).expect("header value"),
            );
        }
        let send = self.client.post(&self.url).headers(map).body(body).send();
        let response = tokio::time::timeout(WAIT, send)
            .await
            .expect("HTTP reply in time")
            .expect("HTTP request");
        Reply::read(response).await
    }

    /// POSTs a JSON-RPC message with the default headers, the standard headers a
    /// conforming client derives from it ([`standard_headers`]), then `headers` (which
    /// replace any of them).
    pub async fn post(&self, message: &Value, headers: &[(&str, &str)]) -> Reply {
        let derived = standard_headers(message);
        let mut all: Vec<(&str, &str)> = derived
            .iter()
            .filter(|(name, _)| !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)))
            .map(|(n, v)| (*n, v.as_str()))
            .collect();
        all.extend_from_slice(headers);
        self.post_raw(message.to_string(), &all).await
    }

    /// POSTs a JSON-RPC message with the default headers plus `headers` only: none
    /// derived from the message (for tests of missing standard headers).
    pub async fn post_bare(&self, message: &Value, headers: &[(&str, &str)]) -> Reply {
        self.post_raw(message.to_string(), headers).await
    }

    /// POSTs a request for `method` with `params` (fresh id, default headers).
    pub async fn rpc(&self, method: &str, params: Value) -> Reply {
        self.post(&request(self.id(), method, params), &[]).await
    }

    /// Calls tool `name`, declaring the extension or not.
    pub async fn call(&self, name: &str, arguments: Value, tasks: bool) -> Reply {
        self.rpc("tools/call", call_params(name, arguments, tasks))
            .await
    }

    /// Calls tool `name` with the extension and returns the new task's id; panics unless
    /// the reply is a CreateTaskResult.
    pub async fn create_task(&self, name: &str, arguments: Value) -> String {
        let reply = self.call(name, arguments, true).await;
        let result = reply.result();
        assert_eq!(result["resultType"], "task", "{}", reply.text);
        result["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("no taskId: {}", reply.text))
            .to_owned()
    }

    /// `tasks/get` with the extension.
    pub async fn get_task(&self, task_id: &str) -> Reply {
        self.rpc("tasks/get", task_params(task_id, true)).await
    }

    /// `tasks/cancel` with the extension.
    pub async fn cancel_task(&self, task_id: &str) -> Reply {
        self.rpc("tasks/cancel", task_params(task_id, true)).await
    }

    /// `tasks/update` answering `responses`.
    pub async fn update_task(&self, task_id: &str, responses: Value) -> Reply {
        self.rpc("tasks/update", update_params(task_id, responses))
            .await
    }

    /// Polls `tasks/get` until `done` holds for the result, within `within`; returns that
    /// result. Panics with the last state seen when time runs out.
    pub async fn poll_task(
        &self,
        task_id: &str,
        within: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        self.poll_task_with(task_id, &[], within, done).await
    }

    /// [`poll_task`](Self::poll_task) with extra request headers (e.g. `Authorization`).
    pub async fn poll_task_with(
        &self,
        task_id: &str,
        headers: &[(&str, &str)],
        within: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let mut last = Value::Null;
        let polled = tokio::time::timeout(within, async {
            loop {
                let message = request(self.id(), "tasks/get", task_params(task_id, true));
                let reply = self.post(&message, headers).await;
                let result = reply.result().clone();
                if done(&result) {
                    return result;
                }
                last = result;
                tokio::time::sleep(POLL_EVERY).await;
            }
        })
        .await;
        polled.unwrap_or_else(|_| {
            panic!("task {task_id} did not get there in {within:?}; last: {last}")
        })
    }

    /// Polls until the task's status is `status`.
    pub async fn poll_status(&self, task_id: &str, status: &str) -> Value {
        self.poll_task(task_id, WAIT, |t| t["status"] == status)
            .await
    }

    /// Polls until the task is terminal (completed, failed or cancelled).
    pub async fn poll_terminal(&self, task_id: &str) -> Value {
        self.poll_task(task_id, WAIT, |t| {
            matches!(
                t["status"].as_str(),
                Some("completed" | "failed" | "cancelled")
            )
        })
        .await
    }

    /// Opens a `subscriptions/listen` (or any) request whose reply is an SSE stream, with
    /// the standard headers derived from it, then `headers` (which replace any of them).
    pub async fn open_stream(&self, message: &Value, headers: &[(&str, &str)]) -> SseStream {
        let mut map = HeaderMap::new();
        map.insert("content-type", HeaderValue::from_static("application/json"));
        map.insert("accept", HeaderValue::from_static("text/event-stream"));
        let derived = standard_headers(message);
        let derived = derived.iter().map(|(n, v)| (*n, v.as_str()));
        for (name, value) in derived.chain(headers.iter().copied()) {
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).expect("header name"),
                HeaderValue::from_str(value).expect("header value"),
            );
        }
        let request = self
            .client
            .post(&self.url)
            .headers(map)
            .body(message.to_string());
        // The stream outlives the client's overall timeout: read it with bounded waits.
        let request = request.timeout(Duration::from_secs(3600));
        let response = tokio::time::timeout(WAIT, request.send())
            .await
            .expect("stream opened in time")
            .expect("HTTP request");
        SseStream::from_response(response)
    }

    /// Opens the standalone event stream of an MCP 2025-11-25 session (`GET` with
    /// `Accept: text/event-stream` plus `headers`, e.g. `Mcp-Session-Id`).
    pub async fn get_stream(&self, headers: &[(&str, &str)]) -> SseStream {
        let mut request = self
            .client
            .get(&self.url)
            .header("accept", "text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        // The stream outlives the client's overall timeout: read it with bounded waits.
        let request = request.timeout(Duration::from_secs(3600));
        let response = tokio::time::timeout(WAIT, request.send())
            .await
            .expect("stream opened in time")
            .expect("HTTP request");
        SseStream::from_response(response)
    }

    /// Stops accepting connections and waits (bounded by [`WAIT`]) until the open ones
    /// are done and `http::serve` has returned; panics when it does not return in time.
    pub async fn stop_http(&mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.serving.take() {
            None => Ok(()),
            Some(serving) => tokio::time::timeout(WAIT, serving)
                .await
                .expect("http::serve returned in time")
                .expect("http::serve did not panic"),
        }
    }

    /// Stops the HTTP listener, then shuts the server down (tasks get the grace period).
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(serving) = self.serving.take() {
            let _ = tokio::time::timeout(WAIT, serving).await;
        }
        let _ = tokio::time::timeout(WAIT, self.server.shutdown()).await;
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// The `event:` field (`"message"` when absent).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The `id:` field, if any (a cursor to resume the stream from).
    pub id: Option<String>,
    /// The `retry:` field (milliseconds), if any.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// Whether the event carries no message: a priming event (an id and empty data,
    /// SEP-1699), which [`SseStream::next_event`] and [`sse_events`] skip.
    pub fn is_priming(&self) -> bool {
        self.data.is_empty()
    }
}

impl SseEvent {
    /// The data as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {}", self.data))
    }
}

type ByteStream =
    std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// An SSE reply read event by event from the raw byte stream.
pub struct SseStream {
    /// The HTTP status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    bytes: ByteStream,
    buffer: Vec<u8>,
}

impl std::fmt::Debug for SseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseStream")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl SseStream {
    /// Reads `response`'s body as server-sent events.
    pub fn from_response(response: reqwest::Response) -> SseStream {
        SseStream {
            status: response.status(),
            headers: response.headers().clone(),
            bytes: Box::pin(response.bytes_stream()),
            buffer: Vec::new(),
        }
    }

    /// The next event with a message within `within`; `None` when the stream ended.
    /// Panics when time runs out. Comment lines (keep-alives) and priming events (no
    /// data) are skipped.
    pub async fn next_event(&mut self, within: Duration) -> Option<SseEvent> {
        tokio::time::timeout(within, self.next_message_unbounded())
            .await
            .unwrap_or_else(|_| panic!("no SSE event within {within:?}"))
    }

    /// The next event within `within`, priming events included; `None` when the stream
    /// ended. Panics when time runs out.
    pub async fn next_any_event(&mut self, within: Duration) -> Option<SseEvent> {
        tokio::time::timeout(within, self.next_event_unbounded())
            .await
            .unwrap_or_else(|_| panic!("no SSE event within {within:?}"))
    }

    /// An event with a message arriving within `within`, or `None` when the stream stays
    /// quiet that long (or ends): for checking that nothing is sent.
    pub async fn event_within(&mut self, within: Duration) -> Option<SseEvent> {
        tokio::time::timeout(within, self.next_message_unbounded())
            .await
            .ok()
            .flatten()
    }

    async fn next_message_unbounded(&mut self) -> Option<SseEvent> {
        loop {
            match self.next_event_unbounded().await {
                Some(event) if event.is_priming() => continue,
                other => return other,
            }
        }
    }

    async fn next_event_unbounded(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.take_event() {
                return Some(event);
            }
            match self.bytes.next().await {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(&chunk),
                Some(Err(e)) => panic!("SSE stream failed: {e}"),
                None => return None,
            }
        }
    }

    /// Takes one complete event (ended by a blank line) out of the buffer, if any.
    fn take_event(&mut self) -> Option<SseEvent> {
        loop {
            let (end, sep) = find_blank_line(&self.buffer)?;
            let block: Vec<u8> = self.buffer.drain(..end + sep).take(end).collect();
            let block = String::from_utf8(block).expect("SSE is UTF-8");
            if let Some(event) = parse_block(&block) {
                return Some(event);
            }
        }
    }
}

/// Every event with a message of a complete SSE body (e.g. [`Reply::text`] of a
/// streamed reply): priming events (no data) are left out.
pub fn sse_events(body: &str) -> Vec<SseEvent> {
    let mut events = all_sse_events(body);
    events.retain(|e| !e.is_priming());
    events
}

/// Every event of a complete SSE body, priming events included.
pub fn all_sse_events(body: &str) -> Vec<SseEvent> {
    let mut buffer = body.as_bytes().to_vec();
    buffer.extend_from_slice(b"\n\n");
    let mut events = Vec::new();
    while let Some((end, sep)) = find_blank_line(&buffer) {
        let block: Vec<u8> = buffer.drain(..end + sep).take(end).collect();
        if let Some(event) = parse_block(&String::from_utf8_lossy(&block)) {
            events.push(event);
        }
    }
    events
}

/// Where the first blank line is: (index of the block's end, length of the separator).
fn find_blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    for i in 0..buf.len() {
        for sep in [&b"\r\n\r\n"[..], b"\n\n", b"\r\r"] {
            if buf[i..].starts_with(sep) {
                return Some((i, sep.len()));
            }
        }
    }
    None
}

/// One event block; `None` for a block of comments only.
fn parse_block(block: &str) -> Option<SseEvent> {
    let mut event = None;
    let mut data: Vec<&str> = Vec::new();
    let mut id = None;
    let mut retry = None;
    for line in block.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => data.push(value),
            "id" => id = Some(value.to_owned()),
            "retry" => retry = value.parse().ok(),
            _ => {}
        }
    }
    if event.is_none() && data.is_empty() && id.is_none() && retry.is_none() {
        return None;
    }
    Some(SseEvent {
        event: event.unwrap_or_else(|| "message".to_owned()),
        data: data.join("\n"),
        id,
        retry,
    })
}

/// Whether `s` looks like an ISO 8601 / RFC 3339 UTC date-time (`YYYY-MM-DDTHH:MM:SS...`).
pub fn is_iso_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 19
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && b[10] == b'T'
        && b[11..13].iter().all(u8::is_ascii_digit)
        && b[13] == b':'
        && b[14..16].iter().all(u8::is_ascii_digit)
        && b[16] == b':'
        && b[17..19].iter().all(u8::is_ascii_digit)
}

/// Opens an MCP 2025-11-25 (or earlier) session over HTTP: `initialize` with `params`
/// (HTTP 200 and a session id checked), then `notifications/initialized` (202 checked).
/// Returns the session id and the `initialize` result.
pub async fn open_legacy_session(s: &TestServer, params: Value) -> (String, Value) {
    let reply = s.post(&request(s.id(), "initialize", params), &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let result = reply.result().clone();
    let id = reply
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("initialize returns Mcp-Session-Id: {reply:?}"))
        .to_owned();
    let version = result["protocolVersion"].as_str().unwrap_or_default();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ack = s
        .post(
            &initialized,
            &[("mcp-session-id", &id), ("mcp-protocol-version", version)],
        )
        .await;
    assert_eq!(ack.status, 202, "{}", ack.text);
    (id, result)
}

/// Two servers in this process on two handles of one fresh namespace of `factory`'s
/// backend (so their events travel through the backend, as between processes), each made
/// by `server` and behind its own HTTP listener: two instances of one deployment. On a
/// Redis Cluster (`RedisFactory::cluster_from_env`) the factory connects its handles
/// through the nodes' URLs in turn, so the two instances start from different nodes.
pub async fn two_instances<F: mcp_tasks::conformance::StoreFactory>(
    factory: &F,
    test: &str,
    server: impl Fn(Arc<dyn mcp_tasks::TaskStore>) -> Server,
) -> (TestServer, TestServer) {
    let env = mcp_tasks::conformance::Env::new(test, mcp_tasks::Limits::default());
    let a = factory.open(&env).await.expect("first handle");
    let b = factory.open(&env).await.expect("second handle");
    tokio::join!(
        TestServer::start_server(server(Arc::new(a)), HttpConfig::default()),
        TestServer::start_server(server(Arc::new(b)), HttpConfig::default()),
    )
}

/// One `#[tokio::test]` per backend that shares sessions across instances, in modules
/// `postgres`, `redis` and `redis_cluster`, each calling `$scenario(&factory)` (skipped as
/// the factory's `from_env` / `cluster_from_env` says when its service is not there, a
/// failure under `MCP_REQUIRE_SERVICES=1`). On the cluster each handle the scenario
/// opens connects through another node's URL (the factory takes them in turn).
#[macro_export]
macro_rules! shared_store_tests {
    ($($name:ident => $scenario:path),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(factory) = mcp_tasks::conformance::PostgresFactory::from_env() else {
                        return;
                    };
                    $scenario(&factory).await;
                }
            )*
        }
        mod redis {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(factory) = mcp_tasks::conformance::RedisFactory::from_env() else {
                        return;
                    };
                    $scenario(&factory).await;
                }
            )*
        }
        mod redis_cluster {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(factory) =
                        mcp_tasks::conformance::RedisFactory::cluster_from_env()
                    else {
                        return;
                    };
                    $scenario(&factory).await;
                }
            )*
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_blocks_parse() {
        assert_eq!(
            parse_block("event: message\ndata: {\"a\":1}"),
            Some(SseEvent {
                event: "message".into(),
                data: "{\"a\":1}".into(),
                id: None,
                retry: None,
            })
        );
        assert_eq!(parse_block(": keep-alive"), None);
        let priming = parse_block("id: 4-0\nretry: 1000\ndata:").expect("an event");
        assert!(priming.is_priming());
        assert_eq!(priming.id.as_deref(), Some("4-0"));
        assert_eq!(priming.retry, Some(1000));
        assert_eq!(
            parse_block("data: a\ndata: b").map(|e| e.data),
            Some("a\nb".into())
        );
        assert_eq!(find_blank_line(b"data: x\n\nrest"), Some((7, 2)));
        assert_eq!(find_blank_line(b"data: x\n"), None);
    }

    #[test]
    fn iso_timestamps() {
        assert!(is_iso_timestamp("2026-07-28T10:30:00.123Z"));
        assert!(!is_iso_timestamp("1785000000000"));
        assert!(!is_iso_timestamp("2026-07-28 10:30:00"));
    }
}
