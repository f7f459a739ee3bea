//! One HTTP exchange of the Streamable HTTP transport ([`Job`]): the POST of a frame with
//! the headers the session learned ([`HttpState`]) and a login when the server asks
//! (401, or 403 `insufficient_scope`); its reply read as JSON or as an event stream,
//! resumed from its last event id when it ends early; and the server's own stream (a
//! `GET`). How an exchange fails: [`ExchangeError`], reported as an [`ExchangeFailure`].
//!
//! Invariant: every inbound message reaches the engine as a frame; a request whose
//! exchange ends without its response is failed at once (never left to its timeout),
//! and retries, resumes and waits are bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use mcp_tasks_protocol::engine::{FailureKind, FrameSender, TransportFailure};
use mcp_tasks_protocol::http::{
    MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, ParamHeader, encode_header_value,
    routed_name,
};
use mcp_tasks_protocol::jsonrpc::RequestId;
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::auth::{
    AuthError, Authorizer, Challenge, DPOP, DPOP_NONCE, Presentation, USE_DPOP_NONCE,
};

/// Headers every request of an HTTP connection carries, learned as the session goes.
#[derive(Debug, Default)]
pub struct HttpState {
    /// Sent as `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// Sent as `Mcp-Session-Id` (learned from the server).
    pub session_id: Option<String>,
    /// The `Mcp-Param-*` headers of each tool, by tool name (from its listing).
    pub tool_headers: HashMap<String, Vec<ParamHeader>>,
}

/// What a request that got no HTTP response met, said so that the user knows what to
/// check: reqwest's own message names only the URL, the cause is deeper in its chain.
fn send_failure(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let refused = std::iter::successors(Some(e as &dyn std::error::Error), |c| c.source())
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
    let at = e
        .url()
        .map(|u| {
            format!(
                "{}:{}",
                u.host_str().unwrap_or("?"),
                u.port_or_known_default().unwrap_or(0)
            )
        })
        .unwrap_or_default();
    if refused {
        format!(
            "connection refused: nothing listens at {at} (is the server running, on that address and port?)"
        )
    } else if e.is_timeout() {
        format!("no answer from {at} in time ({cause})")
    } else if e.is_connect() {
        format!("cannot connect to {at}: {cause}")
    } else {
        format!("{e}: {cause}")
    }
}

/// Why an HTTP exchange produced no JSON-RPC answer for its request.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The request did not get an HTTP response (connection refused, reset...).
    #[error("HTTP request failed: {}", send_failure(.0))]
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
        /// Its `Retry-After`, when it had one that parsed.
        retry_after: Option<std::time::Duration>,
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
        /// Its `Retry-After` (a 429's, a 503's), when it had one that parsed.
        retry_after: Option<std::time::Duration>,
    },
    /// Logging in failed (or the server refused the token it got).
    #[error("{0}")]
    Auth(Arc<AuthError>),
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

impl ExchangeError {
    /// This failure typed for the engine ([`PeerError::Exchange`](mcp_tasks_protocol::engine::PeerError::Exchange)):
    /// whether the request may have reached the server, the status and `Retry-After`.
    pub fn failure(&self) -> TransportFailure {
        let message = self.to_string();
        match self {
            ExchangeError::Send(e) if e.is_connect() => {
                TransportFailure::new(FailureKind::Unreachable, message)
            }
            // The request could not be made (a bad URL or header): nothing was sent, and
            // sending it again fails the same way.
            ExchangeError::Send(e) if e.is_builder() => {
                TransportFailure::new(FailureKind::Other, message)
            }
            ExchangeError::Send(_) | ExchangeError::StreamBroke(_) | ExchangeError::StreamEnded => {
                TransportFailure::new(FailureKind::Interrupted, message)
            }
            ExchangeError::NotJsonRpc {
                status,
                retry_after,
                ..
            }
            | ExchangeError::Refused {
                status,
                retry_after,
                ..
            } => TransportFailure::new(FailureKind::Status, message)
                .with_status(status.as_u16(), *retry_after),
            // A status arrived: the failure is that status's (a 502/503/504 or 429 may be
            // retried, any other is not, even though its body broke).
            ExchangeError::Body { status, .. } => {
                TransportFailure::new(FailureKind::Status, message)
                    .with_status(status.as_u16(), None)
            }
            ExchangeError::Auth(_) => TransportFailure::new(FailureKind::Other, message),
        }
    }
}

/// A request whose HTTP exchange failed: no answer will come for `id`. The HTTP transport
/// reports these on their own channel ([`HttpTransport::failures`](super::HttpTransport::failures)), never as frames, so
/// nothing the server sends can pass for one.
#[derive(Debug)]
pub struct ExchangeFailure {
    /// The JSON-RPC id of the request.
    pub id: RequestId,
    /// What went wrong.
    pub error: ExchangeError,
}

/// Whether an inbound frame is the response to request `id`.
/// `request` with the access token presented: `Authorization`, and the DPoP proof.
fn present(mut request: reqwest::RequestBuilder, p: &Presentation) -> reqwest::RequestBuilder {
    request = request.header(reqwest::header::AUTHORIZATION, &p.authorization);
    if let Some(proof) = &p.dpop {
        request = request.header(DPOP, proof);
    }
    request
}

fn is_response_to(frame: &str, id: &RequestId) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        id: Option<RequestId>,
        method: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Probe>(frame)
        .is_ok_and(|p| p.method.is_none() && p.id.as_ref() == Some(id))
}

/// Locks `m`, also when a panic poisoned it.
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One outgoing frame and what the pump learned of it.
pub(super) struct Job {
    pub(super) client: reqwest::Client,
    pub(super) url: String,
    pub(super) frame: String,
    pub(super) id: Option<RequestId>,
    pub(super) method: Option<String>,
    pub(super) params: Option<String>,
    pub(super) inbound: FrameSender,
    pub(super) failures: mpsc::UnboundedSender<ExchangeFailure>,
    pub(super) state: Arc<Mutex<HttpState>>,
    pub(super) auth: Option<Arc<Authorizer>>,
}

/// How many times one request is sent again after a 401 that a login answered.
const MAX_UNAUTHORIZED: u32 = 2;
/// How many times a request's event stream is resumed (`GET` with `Last-Event-ID`).
const MAX_RESUMES: u32 = 5;
/// The wait before resuming a stream that gave no `retry`.
const DEFAULT_RETRY_MS: u64 = 1000;
/// The longest `retry` honoured.
const MAX_RETRY_MS: u64 = 30_000;

impl Job {
    /// Ends the request (if it is one) with `error`: no answer will come.
    fn fail(&self, error: ExchangeError) {
        if let Some(id) = self.id.clone() {
            let _ = self.failures.send(ExchangeFailure { id, error });
        }
    }

    /// The headers every request of this connection carries now.
    fn common_headers(&self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let state = lock(&self.state);
        if let Some(v) = &state.protocol_version {
            request = request.header(MCP_PROTOCOL_VERSION, v);
        }
        if let Some(s) = &state.session_id {
            request = request.header(MCP_SESSION_ID, s);
        }
        request
    }

    /// The POST of the frame, with `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` of a
    /// `tools/call` whose tool declared them.
    fn request(&self, presented: Option<&Presentation>) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            );
        if let Some(method) = &self.method {
            request = request.header(MCP_METHOD, method);
            if let Some(name) = routed_name(method, self.params.as_deref()) {
                request = request.header(MCP_NAME, encode_header_value(&name));
            }
            if method == mcp_tasks_protocol::v2026::methods::TOOLS_CALL {
                for (name, value) in self.param_headers() {
                    request = request.header(name, value);
                }
            }
        }
        if let Some(p) = presented {
            request = present(request, p);
        }
        self.common_headers(request).body(self.frame.clone())
    }

    /// `Mcp-Param-*` headers of this `tools/call`: the arguments its tool annotated,
    /// those with a value a header can carry.
    fn param_headers(&self) -> Vec<(String, String)> {
        #[derive(Deserialize)]
        struct Call {
            name: String,
            #[serde(default)]
            arguments: Option<serde_json::Map<String, serde_json::Value>>,
        }
        let Some(call) = self
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Call>(p).ok())
        else {
            return Vec::new();
        };
        let state = lock(&self.state);
        let Some(declared) = state.tool_headers.get(&call.name) else {
            return Vec::new();
        };
        let arguments = call.arguments.unwrap_or_default();
        declared
            .iter()
            .filter_map(|h| {
                // No value (or one a header cannot carry, which the server's argument
                // check refuses): no header.
                let text = h.text_in(&arguments)?.ok()?;
                Some((h.header_name(), encode_header_value(&text)))
            })
            .collect()
    }

    /// Sends the POST, logging in when the server asks (401) or wants more scope (403
    /// `insufficient_scope`) and sending it again; a login failure ends the request.
    async fn send(&self) -> Result<reqwest::Response, ExchangeError> {
        let Some(auth) = &self.auth else {
            return self.request(None).send().await.map_err(ExchangeError::Send);
        };
        let auth_failed = |e| ExchangeError::Auth(Arc::new(e));
        let mut unauthorized = 0;
        let mut rounds = 0;
        loop {
            rounds += 1;
            if rounds > 2 * MAX_UNAUTHORIZED + 8 {
                return Err(auth_failed(AuthError::TokenRejected(
                    "the server kept refusing the token".into(),
                )));
            }
            let presented = auth
                .presentation("POST", &self.url)
                .await
                .map_err(auth_failed)?;
            let bearer = presented.as_ref().map(|p| p.token.clone());
            let response = self
                .request(presented.as_ref())
                .send()
                .await
                .map_err(ExchangeError::Send)?;
            let status = response.status();
            // A DPoP server's nonce (RFC 9449 §9), kept for the next proofs; a 401
            // asking for it is sent again with it, once per new nonce.
            let new_nonce = response
                .headers()
                .get(DPOP_NONCE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|n| auth.dpop_nonce(&self.url, n));
            let challenge = || {
                Challenge::parse(
                    response
                        .headers()
                        .get_all(reqwest::header::WWW_AUTHENTICATE)
                        .iter()
                        .filter_map(|v| v.to_str().ok()),
                )
            };
            if status == reqwest::StatusCode::UNAUTHORIZED
                && new_nonce
                && challenge().error.as_deref() == Some(USE_DPOP_NONCE)
            {
                continue;
            }
            if status == reqwest::StatusCode::UNAUTHORIZED {
                if unauthorized >= MAX_UNAUTHORIZED {
                    // Why, as the challenge says it (RFC 6750 §3), else the body.
                    let said = challenge();
                    let reason = match (said.error, said.error_description) {
                        (Some(error), Some(description)) => format!("{error}: {description}"),
                        (Some(error), None) => error,
                        (None, _) => response
                            .text()
                            .await
                            .unwrap_or_default()
                            .chars()
                            .take(200)
                            .collect(),
                    };
                    return Err(auth_failed(AuthError::TokenRejected(format!(
                        "HTTP 401 after {unauthorized} new tokens: {reason}"
                    ))));
                }
                unauthorized += 1;
                auth.unauthorized(&challenge(), bearer.as_deref())
                    .await
                    .map_err(auth_failed)?;
                continue;
            }
            if status == reqwest::StatusCode::FORBIDDEN && challenge().is_insufficient_scope() {
                auth.insufficient_scope(&challenge(), bearer.as_deref())
                    .await
                    .map_err(auth_failed)?;
                continue;
            }
            if status.is_success() && bearer.is_some() {
                auth.succeeded().await;
            }
            return Ok(response);
        }
    }

    /// Reads an event stream, passing each event on; returns whether the response to
    /// this request came, and the parser (its last event id and retry).
    async fn read_stream(
        &self,
        response: reqwest::Response,
        answered: &mut bool,
        parser: &mut crate::sse::SseParser,
    ) -> Result<(), ExchangeError> {
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(ExchangeError::StreamBroke)?;
            for data in parser.feed(&chunk) {
                if data.is_empty() {
                    continue;
                }
                if let Some(id) = &self.id
                    && is_response_to(&data, id)
                {
                    *answered = true;
                }
                if self.inbound.send(data).await.is_err() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Resumes this request's stream after it ended early: waits the stream's `retry`,
    /// then `GET`s the endpoint with `Last-Event-ID` (Streamable HTTP resumability).
    async fn resume(&self, parser: &crate::sse::SseParser) -> Option<reqwest::Response> {
        let last = parser.last_event_id()?;
        let wait = parser
            .retry_ms()
            .unwrap_or(DEFAULT_RETRY_MS)
            .min(MAX_RETRY_MS);
        tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
        let mut request = self
            .client
            .get(&self.url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header("last-event-id", last);
        if let Some(auth) = &self.auth
            && let Ok(Some(p)) = auth.presentation("GET", &self.url).await
        {
            request = present(request, &p);
        }
        let response = self.common_headers(request).send().await.ok()?;
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        (response.status().is_success() && is_sse).then_some(response)
    }

    /// A job without a frame, for the server's stream.
    pub(super) fn clone_for_listening(&self) -> Job {
        Job {
            client: self.client.clone(),
            url: self.url.clone(),
            frame: String::new(),
            id: None,
            method: None,
            params: None,
            inbound: self.inbound.clone(),
            failures: self.failures.clone(),
            state: Arc::clone(&self.state),
            auth: self.auth.clone(),
        }
    }

    /// The server's stream (MCP 2025-11-25 Streamable HTTP: a `GET` of the endpoint),
    /// where a server sends requests and notifications not tied to a request of ours.
    /// A server without one answers 405 and nothing more happens; a stream that ends is
    /// resumed from its last event id, a bounded number of times in a row.
    pub(super) async fn listen(self) {
        let mut parser = crate::sse::SseParser::new();
        let mut failures = 0;
        while failures < MAX_RESUMES {
            let mut request = self
                .client
                .get(&self.url)
                .header(reqwest::header::ACCEPT, "text/event-stream");
            if let Some(last) = parser.last_event_id() {
                request = request.header("last-event-id", last);
            }
            if let Some(auth) = &self.auth
                && let Ok(Some(p)) = auth.presentation("GET", &self.url).await
            {
                request = present(request, &p);
            }
            let Ok(response) = self.common_headers(request).send().await else {
                return;
            };
            let is_sse = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.starts_with("text/event-stream"));
            if !response.status().is_success() || !is_sse {
                return;
            }
            let mut answered = false;
            let before = parser.last_event_id().map(str::to_owned);
            let _ = self.read_stream(response, &mut answered, &mut parser).await;
            if parser.last_event_id().is_none() {
                return;
            }
            // A stream that gave events starts the count afresh.
            failures = if parser.last_event_id().map(str::to_owned) == before {
                failures + 1
            } else {
                0
            };
            let wait = parser
                .retry_ms()
                .unwrap_or(DEFAULT_RETRY_MS)
                .min(MAX_RETRY_MS);
            tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
        }
    }

    pub(super) async fn run(self) {
        let response = match self.send().await {
            Ok(r) => r,
            Err(e) => return self.fail(e),
        };
        if let Some(session) = response
            .headers()
            .get(MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
        {
            lock(&self.state).session_id = Some(session.to_owned());
        }
        let status = response.status();
        if status == reqwest::StatusCode::ACCEPTED {
            return;
        }
        let retry_after = crate::retry::retry_after(
            response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()),
            std::time::SystemTime::now(),
        );
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        if is_sse {
            // A request's stream must carry its response. One that ends (or breaks)
            // before that is resumed when it gave an event id, else the request fails
            // at once instead of at its timeout.
            let mut answered = self.id.is_none();
            let mut parser = crate::sse::SseParser::new();
            let mut stream = Some(response);
            let mut resumes = 0;
            while let Some(response) = stream.take() {
                let read = self.read_stream(response, &mut answered, &mut parser).await;
                if answered {
                    return;
                }
                if resumes < MAX_RESUMES
                    && let Some(next) = self.resume(&parser).await
                {
                    resumes += 1;
                    stream = Some(next);
                    continue;
                }
                return self.fail(match read {
                    Err(e) => e,
                    Ok(()) => ExchangeError::StreamEnded,
                });
            }
            return;
        }
        match response.text().await {
            // An HTTP error whose JSON-RPC answer is not addressed to this request (`id:
            // null`, as a 401 or 403 before any JSON-RPC is read): nothing will answer it,
            // so it fails now instead of at its timeout.
            Ok(body)
                if !status.is_success()
                    && self
                        .id
                        .as_ref()
                        .is_some_and(|id| !is_response_to(&body, id)) =>
            {
                let body = body.chars().take(200).collect();
                self.fail(ExchangeError::Refused {
                    status,
                    body,
                    retry_after,
                });
            }
            Ok(body)
                if serde_json::from_str::<serde::de::IgnoredAny>(&body).is_ok()
                    && body.contains("\"jsonrpc\"") =>
            {
                let _ = self.inbound.send(body).await;
            }
            Ok(body) => {
                let body = body.chars().take(200).collect();
                self.fail(ExchangeError::NotJsonRpc {
                    status,
                    body,
                    retry_after,
                });
            }
            Err(source) => self.fail(ExchangeError::Body { status, source }),
        }
    }
}
