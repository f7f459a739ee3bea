//! The Streamable HTTP transport: [`http`] runs a pump that turns each outgoing frame
//! into one HTTP exchange (`exchange.rs`), opens the server's own stream once the
//! session is initialized, and drops a request's exchange when `notifications/cancelled`
//! names it; [`check_http_url`] refuses an endpoint that is not one.
//!
//! Invariant: a request whose exchange fails is reported on [`HttpTransport::failures`],
//! never as a frame; the pump, and the server's stream it opened, end with the
//! [`TransportGuard`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcp_tasks_protocol::engine::{Connection, FrameSender};
use mcp_tasks_protocol::jsonrpc::RequestId;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::TransportGuard;
use super::exchange::{ExchangeFailure, HttpState, Job, lock};
use crate::auth::Authorizer;
use crate::error::ClientError;

/// Refuses, with a message that says what is wrong, a Streamable HTTP endpoint that is
/// not an absolute `http://` or `https://` URL with a host (`localhost:8000/mcp` reads as
/// the scheme `localhost`; reqwest would only say "builder error").
pub fn check_http_url(url: &str) -> Result<(), ClientError> {
    let invalid = |reason: String| ClientError::InvalidUrl {
        url: url.to_owned(),
        reason,
    };
    let no_scheme = || invalid(format!("no scheme: write http://{url} (or https://{url})"));
    match url::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {
            if parsed.host_str().is_some_and(|h| !h.is_empty()) {
                Ok(())
            } else {
                Err(invalid("no host".into()))
            }
        }
        // `localhost:8000/mcp` parses with `localhost` as its scheme.
        Ok(_) if !url.contains("://") => Err(no_scheme()),
        Ok(parsed) => Err(invalid(format!(
            "the scheme is {:?}; a Streamable HTTP endpoint is http:// or https://",
            parsed.scheme()
        ))),
        Err(url::ParseError::RelativeUrlWithoutBase) => Err(no_scheme()),
        Err(e) => Err(invalid(e.to_string())),
    }
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
    /// [`Peer::fail`](mcp_tasks_protocol::engine::Peer::fail)).
    pub failures: mpsc::UnboundedReceiver<ExchangeFailure>,
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
///
/// With `auth`, every request carries its bearer token, and a 401 or a 403
/// `insufficient_scope` runs the login before the request is sent again.
pub fn http(url: &str, client: reqwest::Client, auth: Option<Arc<Authorizer>>) -> HttpTransport {
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
        // The server's own stream (`GET`), once the session is initialized; it ends with
        // the pump.
        let mut _listener: Option<AbortOnDrop> = None;
        while let Some(Ok(frame)) = out_rx.recv().await {
            let outgoing: Option<(Option<RequestId>, Option<String>, Option<String>)> =
                serde_json::from_str::<Outgoing<'_>>(&frame)
                    .ok()
                    .map(|o| (o.id, o.method, o.params.map(|p| p.get().to_owned())));
            let (id, method, params) = outgoing.unwrap_or((None, None, None));
            if method.as_deref()
                == Some(mcp_tasks_protocol::v2026::methods::NOTIFICATIONS_CANCELLED)
                && let Some(target) = params.as_deref().and_then(cancelled_id)
                && let Some(task) = lock(&inflight).remove(&target)
            {
                task.abort();
            }
            let job = Job {
                client: client.clone(),
                url: url.clone(),
                frame,
                id: id.clone(),
                method,
                params,
                inbound: in_tx.clone(),
                failures: failed_tx.clone(),
                state: Arc::clone(&pump_state),
                auth: auth.clone(),
            };
            // `notifications/initialized` goes before anything else is sent (MCP
            // 2025-11-25), and opens the stream on which the server sends requests and
            // notifications of its own.
            if job.method.as_deref()
                == Some(mcp_tasks_protocol::v2025::methods::NOTIFICATIONS_INITIALIZED)
            {
                let listen = job.clone_for_listening();
                job.run().await;
                _listener = Some(AbortOnDrop(tokio::spawn(listen.listen())));
                continue;
            }
            let task = tokio::spawn(job.run());
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

/// A task that ends with its owner.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(url: &str) -> String {
        match check_http_url(url) {
            Err(e @ ClientError::InvalidUrl { .. }) => e.to_string(),
            other => panic!("{url}: {other:?}"),
        }
    }

    #[test]
    fn an_endpoint_without_a_scheme_is_named_as_such() {
        let said = reason("localhost:8000/mcp");
        assert!(said.contains("\"localhost:8000/mcp\""), "{said}");
        assert!(said.contains("no scheme"), "{said}");
        assert!(said.contains("http://localhost:8000/mcp"), "{said}");
        assert!(reason("127.0.0.1:8000/mcp").contains("no scheme"));
        assert!(reason("ftp://example.com/mcp").contains("\"ftp\""));
        assert!(reason("http://").contains("http://"));
        assert!(check_http_url("http://127.0.0.1:8000/mcp").is_ok());
        assert!(check_http_url("https://example.com/mcp").is_ok());
        assert!(check_http_url("http://[::1]:8000/mcp").is_ok());
    }
}
