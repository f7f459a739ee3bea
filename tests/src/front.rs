//! What the test fronts share ([`retry_front`](crate::retry_front),
//! [`reply_drop_proxy`](crate::reply_drop_proxy)): an HTTP server on 127.0.0.1 in front of
//! one upstream that passes every request on as it came (method, path, headers but the
//! hop-by-hop ones, body) and streams the response back, except for the `tools/call` POSTs
//! ([`ToolCall`]), which go to the front's [`ToolCalls`]. There a front reads the whole
//! response ([`read_whole`]), finds the task it names ([`Whole::task_id`]), and passes it
//! on ([`Whole::into_response`]) or loses it: it answers a status of its own, or closes the
//! client's connection without a byte of response ([`Cut::close`]); every connection of a
//! [`Serving`] front is cuttable.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::serve::{IncomingStream, Listener};
use futures::TryStreamExt;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::proxy::{CONNECT_TIMEOUT, passes};

/// The longest a `tools/call` exchange with the upstream (its whole response) may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest request or `tools/call` response body a front reads whole.
pub const MAX_BODY: usize = 16 << 20;

/// `m` locked, poisoned or not (a test that panicked holding it has failed already).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `(origin, path)` of `http://HOST:PORT/PATH`; the path is empty when there is none.
pub fn split_url(url: &str) -> (String, String) {
    let (scheme, rest) = url.split_once("//").unwrap_or(("http:", url));
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    (format!("{scheme}//{host}"), path.to_owned())
}

/// A front's upstream: its origin and the HTTP client that reaches it.
#[derive(Debug)]
pub struct Upstream {
    origin: String,
    client: reqwest::Client,
}

impl Upstream {
    /// The upstream at `origin` (`http://127.0.0.1:PORT`); each exchange bounded by
    /// `timeout` when given (an event stream may stay open that long at most).
    pub fn new(origin: String, timeout: Option<Duration>) -> Upstream {
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT);
        let client = match timeout {
            Some(timeout) => client.timeout(timeout),
            None => client,
        };
        Upstream {
            origin,
            client: client.build().expect("the front's HTTP client"),
        }
    }

    /// `request` (its body read whole) as it goes on upstream, and the JSON-RPC message
    /// it is, if it is a POST of one; `Err` is the answer to a body over [`MAX_BODY`].
    async fn pass_on(
        &self,
        request: Request,
    ) -> Result<(reqwest::RequestBuilder, Option<Value>), Response> {
        let (parts, body) = request.into_parts();
        let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
            return Err((StatusCode::BAD_REQUEST, "body too large").into_response());
        };
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let mut upstream = self
            .client
            .request(parts.method.clone(), format!("{}{path}", self.origin))
            .body(body.clone());
        for (name, value) in &parts.headers {
            if passes(name) {
                upstream = upstream.header(name, value);
            }
        }
        let message = (parts.method == Method::POST)
            .then(|| serde_json::from_slice::<Value>(&body).ok())
            .flatten();
        Ok((upstream, message))
    }
}

/// Sends `upstream` and streams its response back (event streams included).
async fn stream_back(upstream: reqwest::RequestBuilder) -> Response {
    let answer = match upstream.send().await {
        Ok(answer) => answer,
        Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if passes(name) {
            response = response.header(name, value);
        }
    }
    let stream = answer.bytes_stream().map_err(io::Error::other);
    response
        .body(Body::from_stream(stream))
        .unwrap_or_else(|e| (StatusCode::BAD_GATEWAY, e.to_string()).into_response())
}

/// A response read whole: once it is, the server did all it does for the request.
#[derive(Debug, Clone)]
pub struct Whole {
    /// Its status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Bytes,
}

/// Sends `upstream` and reads its whole response within [`CALL_TIMEOUT`]; `Err` is the
/// `502 Bad Gateway` to answer when that fails or the body is over [`MAX_BODY`].
pub async fn read_whole(upstream: reqwest::RequestBuilder) -> Result<Whole, Response> {
    let answer = match upstream.timeout(CALL_TIMEOUT).send().await {
        Ok(answer) => answer,
        Err(e) => return Err((StatusCode::BAD_GATEWAY, e.to_string()).into_response()),
    };
    let (status, headers) = (answer.status(), answer.headers().clone());
    match answer.bytes().await {
        Ok(body) if body.len() <= MAX_BODY => Ok(Whole {
            status,
            headers,
            body,
        }),
        Ok(_) => Err((StatusCode::BAD_GATEWAY, "response too large").into_response()),
        Err(e) => Err((StatusCode::BAD_GATEWAY, e.to_string()).into_response()),
    }
}

impl Whole {
    /// The task a `tools/call` response names, if it created (or found) one: the
    /// response message of a JSON body or of an event stream (the one with an `id` and a
    /// `result`), a 2026-07-28 task result (`resultType: "task"`, the task flattened:
    /// `result.taskId`) or a 2025-11-25 `CreateTaskResult` (`result.task.taskId`).
    pub fn task_id(&self) -> Option<String> {
        let sse = (self.headers.get("content-type"))
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let messages: Vec<Value> = if sse {
            String::from_utf8_lossy(&self.body)
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str(data.trim_start()).ok())
                .collect()
        } else {
            serde_json::from_slice(&self.body).into_iter().collect()
        };
        let result = messages
            .iter()
            .find(|m| m.get("id").is_some() && m.get("result").is_some())
            .map(|m| &m["result"])?;
        let id = if result["resultType"] == "task" {
            result["taskId"].as_str()
        } else {
            result["task"]["taskId"].as_str()
        };
        id.map(str::to_owned)
    }

    /// The response passed on to the client as it came.
    pub fn into_response(self) -> Response {
        let mut response = Response::builder().status(self.status);
        for (name, value) in &self.headers {
            if passes(name) {
                response = response.header(name, value);
            }
        }
        response
            .body(Body::from(self.body))
            .unwrap_or_else(|e| (StatusCode::BAD_GATEWAY, e.to_string()).into_response())
    }
}

/// A `tools/call` POST on its way: the JSON-RPC message, its request ready to send
/// upstream, and the switch of the client's connection.
#[derive(Debug)]
pub struct ToolCall {
    /// The `tools/call` message.
    pub message: Value,
    /// Its request to the upstream, not sent yet.
    pub upstream: reqwest::RequestBuilder,
    /// Closes the client's connection ([`Cut::close`]).
    pub cut: Cut,
}

/// What a front does with the `tools/call` POSTs; it passes everything else on.
pub trait ToolCalls: Send + Sync + 'static {
    /// The answer to `call`; `Err` is the answer when the exchange with the upstream
    /// failed.
    fn tool_call(&self, call: ToolCall) -> impl Future<Output = Result<Response, Response>> + Send;

    /// Told of every other JSON-RPC message POSTed, before it is passed on.
    fn passed(&self, _message: &Value) {}
}

/// A front being served on a free 127.0.0.1 port; it stops when dropped.
#[derive(Debug)]
pub struct Serving {
    /// Where it listens.
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

/// A front's state: where it passes requests on, and what it does with `tools/call`s.
struct Front<F> {
    upstream: Upstream,
    calls: Arc<F>,
}

impl Serving {
    /// Serves on a free 127.0.0.1 port a front that passes requests on to `upstream`,
    /// the `tools/call` POSTs through `calls`.
    pub async fn start<F: ToolCalls>(upstream: Upstream, calls: Arc<F>) -> Serving {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the front");
        let addr = listener.local_addr().expect("front address");
        let app = Router::new()
            .fallback(forward::<F>)
            .with_state(Arc::new(Front { upstream, calls }))
            .into_make_service_with_connect_info::<Cut>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(CuttableListener(listener), app).await;
        });
        Serving { addr, task }
    }
}

/// Passes `request` on and streams its response back, unless it is a `tools/call` POST:
/// that goes to the front's [`ToolCalls`].
async fn forward<F: ToolCalls>(
    State(front): State<Arc<Front<F>>>,
    ConnectInfo(cut): ConnectInfo<Cut>,
    request: Request,
) -> Result<Response, Response> {
    let (upstream, message) = front.upstream.pass_on(request).await?;
    match message {
        Some(message) if message["method"] == "tools/call" => {
            let call = ToolCall {
                message,
                upstream,
                cut,
            };
            front.calls.tool_call(call).await
        }
        Some(message) => {
            front.calls.passed(&message);
            Ok(stream_back(upstream).await)
        }
        None => Ok(stream_back(upstream).await),
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A connection's switch: once set, nothing more is read
/// from or written to the connection, and it closes.
#[derive(Debug, Clone)]
pub struct Cut(Arc<AtomicBool>);

impl Cut {
    /// Cuts the connection: the response returned (never written) makes hyper's first
    /// write fail, and it closes the connection without a byte of response.
    pub fn close(&self) -> Response {
        self.0.store(true, Ordering::SeqCst);
        StatusCode::BAD_GATEWAY.into_response()
    }
}

impl Connected<IncomingStream<'_, CuttableListener>> for Cut {
    fn connect_info(stream: IncomingStream<'_, CuttableListener>) -> Self {
        Cut(Arc::clone(&stream.io().cut))
    }
}

/// A TCP listener whose connections can be cut by their handler ([`Cut`]).
#[derive(Debug)]
pub struct CuttableListener(TcpListener);

impl Listener for CuttableListener {
    type Io = CuttableStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = Listener::accept(&mut self.0).await;
        let cut = Arc::new(AtomicBool::new(false));
        (CuttableStream { stream, cut }, addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// A connection that fails every read and write once cut, so that hyper drops (closes)
/// it without having written anything more.
#[derive(Debug)]
pub struct CuttableStream {
    stream: TcpStream,
    cut: Arc<AtomicBool>,
}

impl CuttableStream {
    /// `Err` once the connection is cut.
    fn check(&self) -> io::Result<()> {
        if self.cut.load(Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the test front cut this connection",
            ));
        }
        Ok(())
    }
}

impl AsyncRead for CuttableStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.check()?;
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for CuttableStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check()?;
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check()?;
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?;
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(content_type: &str, body: &'static [u8]) -> Whole {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", content_type.parse().expect("value"));
        Whole {
            status: StatusCode::OK,
            headers,
            body: Bytes::from_static(body),
        }
    }

    #[test]
    fn task_ids_are_read_in_json_and_in_event_streams() {
        let json = |body| whole("application/json", body).task_id();
        let created = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t1"}}"#;
        assert_eq!(json(created).as_deref(), Some("t1"));
        let legacy = br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t2"}}}"#;
        assert_eq!(json(legacy).as_deref(), Some("t2"));
        let done = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}"#;
        assert_eq!(json(done), None);
        let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}"#;
        assert_eq!(json(error), None);
        let stream = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"task\":{\"taskId\":\"t3\"}}}\n\n";
        let sse = whole("text/event-stream", stream);
        assert_eq!(sse.task_id().as_deref(), Some("t3"));
    }

    #[test]
    fn urls_split_into_origin_and_path() {
        assert_eq!(
            split_url("http://127.0.0.1:80/mcp"),
            ("http://127.0.0.1:80".into(), "/mcp".into())
        );
        assert_eq!(
            split_url("http://127.0.0.1:80"),
            ("http://127.0.0.1:80".into(), String::new())
        );
    }
}
