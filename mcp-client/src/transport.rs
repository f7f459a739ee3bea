//! How the client reaches a server: a child process's stdio, Streamable HTTP, or a
//! [`Connection`] you made (in-process). Each ends as a frame [`Connection`] for the engine.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use mcp_protocol::engine::{Connection, FrameSender, error_frame};
use mcp_protocol::error_codes;
use mcp_protocol::http::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, routed_name};
use mcp_protocol::jsonrpc::{ErrorObject, RequestId};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::process::{Child, Command};
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

/// The `data` member that marks the error frames the HTTP transport makes up itself (a
/// request whose exchange failed: refused connection, HTTP 500, a broken or empty event
/// stream), so that the client reports them as [`ClientError::Transport`] and not as an
/// error the server sent.
const TRANSPORT_FAILURE: &str = "mcp-client/transportFailure";

/// Whether `error` was made up by the transport (see [`TRANSPORT_FAILURE`]) rather than
/// received from the server.
pub(crate) fn is_transport_failure(error: &ErrorObject) -> bool {
    error
        .data
        .as_ref()
        .and_then(|d| d.get(TRANSPORT_FAILURE))
        .and_then(serde_json::Value::as_bool)
        == Some(true)
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
/// whose HTTP exchange fails gets a JSON-RPC error frame, so no caller waits forever.
pub fn http(
    url: &str,
    client: reqwest::Client,
) -> (Connection, TransportGuard, Arc<Mutex<HttpState>>) {
    let (out_tx, mut out_rx) = FrameSender::channel(256);
    let (in_tx, in_rx) = FrameSender::channel(256);
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
                Arc::clone(&pump_state),
            );
            let task = tokio::spawn(job);
            if let Some(id) = id {
                lock(&inflight).insert(id, task);
            }
            lock(&inflight).retain(|_, t| !t.is_finished());
        }
    });
    (
        Connection {
            sender: out_tx,
            receiver: in_rx,
        },
        TransportGuard::Http(pump),
        state,
    )
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
    state: Arc<Mutex<HttpState>>,
) {
    let fail = |message: String| {
        let inbound = inbound.clone();
        let id = id.clone();
        async move {
            if let Some(id) = id {
                let _ = inbound
                    .send(error_frame(
                        Some(id),
                        ErrorObject::new(error_codes::INTERNAL_ERROR, message)
                            .with_data(serde_json::json!({ TRANSPORT_FAILURE: true })),
                    ))
                    .await;
            }
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
        Err(e) => return fail(format!("HTTP request failed: {e}")).await,
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
                Err(e) if !answered => return fail(format!("event stream broke: {e}")).await,
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
            fail("the event stream ended without a response".to_owned()).await;
        }
        return;
    }
    match response.text().await {
        Ok(body)
            if serde_json::from_str::<serde::de::IgnoredAny>(&body).is_ok()
                && body.contains("\"jsonrpc\"") =>
        {
            let _ = inbound.send(body).await;
        }
        Ok(body) => {
            let snippet: String = body.chars().take(200).collect();
            fail(format!("HTTP {status}: {snippet}")).await;
        }
        Err(e) => fail(format!("HTTP {status}: cannot read the body: {e}")).await,
    }
}
