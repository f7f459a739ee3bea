//! How the client reaches a server: a child process's stdio, Streamable HTTP, or a
//! [`Connection`] you made (in-process). Each ends as a frame [`Connection`] for the engine.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use mcp_protocol::engine::{Connection, FrameSender};
use mcp_protocol::http::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, routed_name};
use mcp_protocol::jsonrpc::RequestId;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::error::ClientError;

/// What keeps a transport alive; dropping it ends the connection (kills a child process,
/// stops the HTTP pump).
#[derive(Debug)]
pub enum TransportGuard {
    /// A server we started; killed on drop.
    Child(Child),
    /// The task that turns frames into HTTP requests.
    Http(JoinHandle<()>),
    /// Nothing to keep: the caller owns the other end.
    None,
}

impl Drop for TransportGuard {
    fn drop(&mut self) {
        if let TransportGuard::Http(task) = self {
            task.abort();
        }
    }
}

/// Starts `program` with `args` and talks to it over its stdin/stdout. Its stderr is
/// inherited (servers log there).
pub fn spawn_stdio(
    program: &str,
    args: &[String],
) -> Result<(Connection, TransportGuard), ClientError> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ClientError::Transport(format!("cannot start {program}: {e}")))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| ClientError::Transport("no stdout".into()))?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| ClientError::Transport("no stdin".into()))?;
    let (conn, _io) =
        Connection::from_io(stdout, stdin, mcp_protocol::engine::DEFAULT_MAX_FRAME_BYTES);
    Ok((conn, TransportGuard::Child(child)))
}

/// Headers every request of an HTTP connection carries, learned as the session goes.
#[derive(Debug, Default)]
pub struct HttpState {
    /// Sent as `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// Sent as `Mcp-Session-Id` (learned from the server).
    pub session_id: Option<String>,
}

/// Why an HTTP exchange produced no JSON-RPC answer for its request.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The request did not get an HTTP response (connection refused, reset...).
    #[error("HTTP request failed: {0}")]
    Send(#[source] reqwest::Error),
    /// The response's event stream broke before it carried the response.
    #[error("event stream broke: {0}")]
    StreamBroke(#[source] reqwest::Error),
    /// The response's event stream ended without carrying the response.
    #[error("the event stream ended without a response")]
    StreamEnded,
    /// The response was not a JSON-RPC message (an error page, say); `body` is its start.
    #[error("HTTP {status}: {body}")]
    NotJsonRpc {
        /// The HTTP status.
        status: reqwest::StatusCode,
        /// The first 200 characters of the body.
        body: String,
    },
    /// The server refused the request at the HTTP level (401, 403, 404 of an unknown
    /// session...) with an answer not addressed to it (a JSON-RPC error without the
    /// request's id): `body` is its start.
    #[error("HTTP {status}: {body}")]
    Refused {
        /// The HTTP status.
        status: reqwest::StatusCode,
        /// The first 200 characters of the body.
        body: String,
    },
    /// The response's body could not be read.
    #[error("HTTP {status}: cannot read the body: {source}")]
    Body {
        /// The HTTP status.
        status: reqwest::StatusCode,
        /// What went wrong.
        #[source]
        source: reqwest::Error,
    },
}

/// A request whose HTTP exchange failed: no answer will come for `id`. The HTTP transport
/// reports these on their own channel ([`HttpTransport::failures`]), never as frames, so
/// nothing the server sends can pass for one.
#[derive(Debug)]
pub struct ExchangeFailure {
    /// The JSON-RPC id of the request.
    pub id: RequestId,
    /// What went wrong.
    pub error: ExchangeError,
}

/// A Streamable HTTP connection, as [`http`] makes it.
#[derive(Debug)]
pub struct HttpTransport {
    /// The frames, for the engine.
    pub connection: Connection,
    /// Stops the pump when dropped.
    pub guard: TransportGuard,
    /// The headers learned as the session goes (protocol version, session id).
    pub state: Arc<Mutex<HttpState>>,
    /// Requests whose exchange failed; their owner ends them (see
    /// [`Peer::fail`](mcp_protocol::engine::Peer::fail)).
    pub failures: mpsc::UnboundedReceiver<ExchangeFailure>,
}

/// Whether an inbound frame is the response to request `id`.
fn is_response_to(frame: &str, id: &RequestId) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        id: Option<RequestId>,
        method: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Probe>(frame)
        .is_ok_and(|p| p.method.is_none() && p.id.as_ref() == Some(id))
}

/// The request members the HTTP pump reads from an outgoing frame.
#[derive(Deserialize)]
struct Outgoing<'a> {
    id: Option<RequestId>,
    method: Option<String>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// A connection whose frames travel as Streamable HTTP POSTs to `url`: each outgoing
/// frame is one POST; JSON replies and SSE events come back as inbound frames. A request
/// whose HTTP exchange fails is reported on [`HttpTransport::failures`], so its owner can
/// end it and no caller waits forever.
pub fn http(url: &str, client: reqwest::Client) -> HttpTransport {
    let (out_tx, mut out_rx) = FrameSender::channel(256);
    let (in_tx, in_rx) = FrameSender::channel(256);
    let (failed_tx, failed_rx) = mpsc::unbounded_channel();
    let state = Arc::new(Mutex::new(HttpState::default()));
    let url = url.to_owned();
    let pump_state = Arc::clone(&state);
    let pump = tokio::spawn(async move {
        // In-flight POSTs by request id, so `notifications/cancelled` can drop one (which
        // closes its stream, and the server notices).
        let inflight: Arc<Mutex<HashMap<RequestId, JoinHandle<()>>>> = Arc::default();
        while let Some(Ok(frame)) = out_rx.recv().await {
            let outgoing: Option<(Option<RequestId>, Option<String>, Option<String>)> =
                serde_json::from_str::<Outgoing<'_>>(&frame)
                    .ok()
                    .map(|o| (o.id, o.method, o.params.map(|p| p.get().to_owned())));
            let (id, method, params) = outgoing.unwrap_or((None, None, None));
            if method.as_deref() == Some(mcp_protocol::v2026::methods::NOTIFICATIONS_CANCELLED)
                && let Some(target) = params.as_deref().and_then(cancelled_id)
                && let Some(task) = lock(&inflight).remove(&target)
            {
                task.abort();
            }
            let job = post(
                client.clone(),
                url.clone(),
                frame,
                id.clone(),
                method,
                params,
                in_tx.clone(),
                failed_tx.clone(),
                Arc::clone(&pump_state),
            );
            let task = tokio::spawn(job);
            if let Some(id) = id {
                lock(&inflight).insert(id, task);
            }
            lock(&inflight).retain(|_, t| !t.is_finished());
        }
    });
    HttpTransport {
        connection: Connection {
            sender: out_tx,
            receiver: in_rx,
        },
        guard: TransportGuard::Http(pump),
        state,
        failures: failed_rx,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn cancelled_id(params: &str) -> Option<RequestId> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Cancelled {
        request_id: RequestId,
    }
    serde_json::from_str::<Cancelled>(params)
        .ok()
        .map(|c| c.request_id)
}

#[allow(clippy::too_many_arguments)]
async fn post(
    client: reqwest::Client,
    url: String,
    frame: String,
    id: Option<RequestId>,
    method: Option<String>,
    params: Option<String>,
    inbound: FrameSender,
    failures: mpsc::UnboundedSender<ExchangeFailure>,
    state: Arc<Mutex<HttpState>>,
) {
    // Only a request waits for an answer; a failed notification or response is dropped.
    let fail = |error: ExchangeError| {
        if let Some(id) = id.clone() {
            let _ = failures.send(ExchangeFailure { id, error });
        }
    };
    let mut request = client
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        );
    if let Some(method) = &method {
        request = request.header(MCP_METHOD, method);
        if let Some(name) = routed_name(method, params.as_deref()) {
            request = request.header(MCP_NAME, name);
        }
    }
    {
        let state = lock(&state);
        if let Some(v) = &state.protocol_version {
            request = request.header(MCP_PROTOCOL_VERSION, v);
        }
        if let Some(s) = &state.session_id {
            request = request.header(MCP_SESSION_ID, s);
        }
    }
    let response = match request.body(frame).send().await {
        Ok(r) => r,
        Err(e) => return fail(ExchangeError::Send(e)),
    };
    if let Some(session) = response
        .headers()
        .get(MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
    {
        lock(&state).session_id = Some(session.to_owned());
    }
    let status = response.status();
    if status == reqwest::StatusCode::ACCEPTED {
        return;
    }
    let is_sse = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream"));
    if is_sse {
        // A request's stream must carry its response; one that ends (or breaks) before
        // that fails the request at once instead of leaving it to its timeout.
        let mut answered = id.is_none();
        let mut parser = crate::sse::SseParser::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) if !answered => return fail(ExchangeError::StreamBroke(e)),
                Err(_) => return,
            };
            for data in parser.feed(&chunk) {
                if data.is_empty() {
                    continue;
                }
                if let Some(id) = &id
                    && is_response_to(&data, id)
                {
                    answered = true;
                }
                if inbound.send(data).await.is_err() {
                    return;
                }
            }
        }
        if !answered {
            fail(ExchangeError::StreamEnded);
        }
        return;
    }
    match response.text().await {
        // An HTTP error whose JSON-RPC answer is not addressed to this request (`id:
        // null`, as a 401 or 403 before any JSON-RPC is read): nothing will answer it,
        // so it fails now instead of at its timeout.
        Ok(body)
            if !status.is_success() && id.as_ref().is_some_and(|id| !is_response_to(&body, id)) =>
        {
            let body = body.chars().take(200).collect();
            fail(ExchangeError::Refused { status, body });
        }
        Ok(body)
            if serde_json::from_str::<serde::de::IgnoredAny>(&body).is_ok()
                && body.contains("\"jsonrpc\"") =>
        {
            let _ = inbound.send(body).await;
        }
        Ok(body) => {
            let body = body.chars().take(200).collect();
            fail(ExchangeError::NotJsonRpc { status, body });
        }
        Err(source) => fail(ExchangeError::Body { status, source }),
    }
}
