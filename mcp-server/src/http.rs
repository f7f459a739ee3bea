//! Streamable HTTP. MCP 2026-07-28 is stateless: `POST /mcp` carries one JSON-RPC message
//! and gets a JSON reply, or an SSE stream for `subscriptions/listen`. MCP 2025-11-25
//! sessions add `Mcp-Session-Id`, a GET standalone stream and DELETE.
//!
//! axum owns the HTTP layer: body limit (413, checked on `Content-Length` before reading),
//! `Content-Type` (415), `Accept` (406), `Host` and `Origin` (403, against DNS rebinding), the routing headers `Mcp-Method` / `Mcp-Name`
//! and `MCP-Protocol-Version` (-32020 / -32022 with HTTP 400), notifications (202).
//! The engine does the rest.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::Stream;
use jsonrpsee::Extensions;
use mcp_protocol::engine::{
    FrameReceiver, FrameSender, InboundRequest, Incoming, Peer, Session, error_frame,
};
use mcp_protocol::error_codes;
use mcp_protocol::jsonrpc::{ErrorObject, RequestId};
use mcp_protocol::method::Request;
use mcp_protocol::v2025;
use mcp_protocol::v2026::SubscriptionsListen;
use serde::Deserialize;
use tokio::net::TcpListener;

use crate::auth::Authenticator;
use crate::caller::{Principal, SUPPORTED_VERSIONS};
use crate::server::{Server, ServerEndpoint};
use crate::v2025::{LegacySession, SessionSlot};

pub use mcp_protocol::http::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};

/// Decides who is calling (see [`crate::auth`]).
pub type PrincipalHook = Arc<dyn Authenticator>;

/// Settings of the HTTP transport.
#[derive(Clone)]
pub struct HttpConfig {
    /// The endpoint's path.
    pub path: String,
    /// Larger bodies are refused with 413.
    pub max_body_bytes: usize,
    /// Browser origins allowed to call; requests with another `Origin` get 403. Requests
    /// without `Origin` (non-browser clients) are allowed. Default: localhost origins only.
    pub allowed_origins: OriginPolicy,
    /// Who is calling; `None` makes every caller anonymous.
    pub principal: Option<PrincipalHook>,
    /// Which `Host` headers are accepted; others get 403 (against DNS rebinding). Default
    /// [`HostPolicy::LoopbackBind`]: localhost names only when bound to a loopback address.
    pub allowed_hosts: HostPolicy,
    /// Event streams (`subscriptions/listen`, the 2025-11-25 standalone stream, streamed
    /// replies) end after this long, whatever their traffic (keep-alives included); the
    /// client reconnects. `None`: no limit. Default: one hour.
    pub sse_max_lifetime: Option<Duration>,
    /// A connection that has not sent a request's complete headers this long after it
    /// opened (or after its previous response) is closed: this is also the idle
    /// timeout of keep-alive connections. Used by [`serve`] only. Default: 10 seconds.
    pub header_read_timeout: Duration,
    /// MCP 2025-11-25 sessions open at once; one more `initialize` is refused with -32029
    /// (HTTP 503). A soft cap: concurrent `initialize` calls may pass it by a few. Default
    /// 10,000.
    pub max_sessions: usize,
    /// A 2025-11-25 session unused this long is ended (its id then reads as unknown, 404).
    /// Default: 30 minutes.
    pub session_idle_timeout: Duration,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("path", &self.path)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("allowed_origins", &self.allowed_origins)
            .field("principal", &self.principal.is_some())
            .field("allowed_hosts", &self.allowed_hosts)
            .field("sse_max_lifetime", &self.sse_max_lifetime)
            .field("header_read_timeout", &self.header_read_timeout)
            .finish()
    }
}

/// Which `Origin` headers are accepted.
#[derive(Debug, Clone)]
pub enum OriginPolicy {
    /// `http(s)://localhost`, `127.0.0.1` and `[::1]`, any port.
    Localhost,
    /// Exactly these origins (e.g. `https://app.example.com`).
    List(Vec<String>),
    /// Any origin (only behind a proxy that checks it).
    Any,
}

/// Which `Host` headers are accepted (a browser tricked by DNS rebinding sends the
/// attacker's host name to a server on a loopback address).
#[derive(Debug, Clone, Default)]
pub enum HostPolicy {
    /// [`HostPolicy::Localhost`] when [`serve`] is bound to a loopback address,
    /// [`HostPolicy::Any`] otherwise. [`router`] alone cannot see the bind address and
    /// treats it as [`HostPolicy::Localhost`].
    #[default]
    LoopbackBind,
    /// `localhost`, `127.0.0.1` and `[::1]`, any port.
    Localhost,
    /// Exactly these host names (any port), e.g. `mcp.example.com`.
    List(Vec<String>),
    /// Any `Host` (a public bind, or behind a proxy that checks it).
    Any,
}

impl HostPolicy {
    /// [`HostPolicy::LoopbackBind`] made concrete for a server bound to `addr`.
    fn for_bind(self, addr: Option<SocketAddr>) -> HostPolicy {
        match self {
            HostPolicy::LoopbackBind => match addr {
                Some(a) if !a.ip().is_loopback() => HostPolicy::Any,
                _ => HostPolicy::Localhost,
            },
            other => other,
        }
    }

    fn allows(&self, host: Option<&str>) -> bool {
        let name = |host: &str| -> String {
            let host = host.trim();
            let name = if let Some(rest) = host.strip_prefix('[') {
                return rest
                    .split_once(']')
                    .map(|(h, _)| format!("[{h}]"))
                    .unwrap_or_default();
            } else {
                host.split(':').next().unwrap_or("")
            };
            name.to_ascii_lowercase()
        };
        match self {
            HostPolicy::Any => true,
            HostPolicy::LoopbackBind | HostPolicy::Localhost => host
                .is_some_and(|h| matches!(name(h).as_str(), "localhost" | "127.0.0.1" | "[::1]")),
            HostPolicy::List(list) => {
                host.is_some_and(|h| list.iter().any(|l| l.eq_ignore_ascii_case(&name(h))))
            }
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".into(),
            max_body_bytes: 4 * 1024 * 1024,
            allowed_origins: OriginPolicy::Localhost,
            principal: None,
            allowed_hosts: HostPolicy::default(),
            sse_max_lifetime: Some(Duration::from_secs(3600)),
            header_read_timeout: Duration::from_secs(10),
            max_sessions: 10_000,
            session_idle_timeout: Duration::from_secs(30 * 60),
        }
    }
}

impl OriginPolicy {
    fn allows(&self, origin: &str) -> bool {
        match self {
            OriginPolicy::Any => true,
            OriginPolicy::List(list) => list.iter().any(|o| o.eq_ignore_ascii_case(origin)),
            OriginPolicy::Localhost => {
                let rest = origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"));
                let Some(rest) = rest else { return false };
                let host = if rest.starts_with('[') {
                    rest.split_once(']').map(|(h, _)| &h[1..]).unwrap_or("")
                } else {
                    rest.split(':').next().unwrap_or("")
                };
                matches!(host, "localhost" | "127.0.0.1" | "::1")
            }
        }
    }
}

struct App {
    endpoint: Arc<ServerEndpoint>,
    config: HttpConfig,
    /// One session per principal: requests of one caller share the in-flight map, so
    /// `notifications/cancelled` on one POST cancels a call running on another.
    sessions: Mutex<HashMap<Option<String>, Session>>,
    /// A sender nobody reads: the peer of sessions, whose replies go per POST instead.
    idle: FrameSender,
    _idle_rx: FrameReceiver,
    /// MCP 2025-11-25 sessions by `Mcp-Session-Id`.
    legacy: Mutex<HashMap<String, LegacyEntry>>,
}

/// A 2025-11-25 session and when it was last used.
struct LegacyEntry {
    session: Arc<LegacySession>,
    last_used: std::time::Instant,
}

/// The axum router serving `server` at `config.path`.
pub fn router(server: &Server, config: HttpConfig) -> Router {
    let (idle, idle_rx) = FrameSender::channel(1);
    let limit = config.max_body_bytes;
    let path = config.path.clone();
    let app = Arc::new(App {
        endpoint: server.endpoint(),
        config,
        sessions: Mutex::default(),
        idle,
        _idle_rx: idle_rx,
        legacy: Mutex::default(),
    });
    Router::new()
        .route(
            &path,
            post(handle_post).get(handle_get).delete(handle_delete),
        )
        .layer(DefaultBodyLimit::max(limit))
        .with_state(app)
}

/// Serves `server` on `listener` until `shutdown` resolves (then stops accepting, lets
/// open requests finish) — TCP_NODELAY on every connection, since SSE replies stall
/// behind Nagle's algorithm otherwise; a connection that does not send a request's
/// headers within [`HttpConfig::header_read_timeout`] is closed (slow clients).
///
/// [`HostPolicy::LoopbackBind`] is resolved here, from the listener's address.
pub async fn serve(
    server: &Server,
    listener: TcpListener,
    config: HttpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut config = config;
    config.allowed_hosts = config.allowed_hosts.for_bind(listener.local_addr().ok());
    let header_read_timeout = config.header_read_timeout;
    let app = router(server, config);
    let connections = tokio_util::task::TaskTracker::new();
    let closing = tokio_util::sync::CancellationToken::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of file descriptors and the like: transient; do not spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let closing = closing.clone();
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_read_timeout);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(tcp), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = closing.cancelled() => conn.as_mut().graceful_shutdown(),
            }
            let _ = conn.await;
        });
    }
    drop(listener);
    closing.cancel();
    connections.close();
    connections.wait().await;
    Ok(())
}

/// The address a listener bound to, for printing.
pub fn local_url(addr: SocketAddr, path: &str) -> String {
    format!("http://{addr}{path}")
}

/// `GET` with `Mcp-Session-Id` (MCP 2025-11-25): the session's standalone event stream,
/// which carries `notifications/tasks/status` and input requests outside any request.
async fn handle_get(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(refused) = check_origin(&app, &headers) {
        return refused;
    }
    let Some(id) = header_str(&headers, MCP_SESSION_ID) else {
        return not_allowed().await;
    };
    let principal = match app.principal(&headers) {
        Ok(p) => p,
        Err(refused) => return *refused,
    };
    let Some(legacy) = app.legacy_session_of(id, principal.as_deref()) else {
        return unknown_session();
    };
    if !accepts(&headers).1 {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            error_codes::INVALID_REQUEST,
            "Accept must allow text/event-stream",
        );
    }
    let session = app.session(principal);
    let (tx, rx) = FrameSender::channel(64);
    let gone = legacy.set_standalone(session.peer.with_sender(tx));
    let stream = futures::stream::unfold(
        (rx, StandaloneGuard(legacy, gone)),
        |(mut rx, guard)| async move {
            match rx.recv().await {
                Some(Ok(frame)) => Some((Ok::<_, Infallible>(message_event(frame)), (rx, guard))),
                _ => None,
            }
        },
    );
    sse(&app, stream)
}

/// An event stream with keep-alives, ended after [`HttpConfig::sse_max_lifetime`].
fn sse(
    app: &App,
    stream: impl Stream<Item = Result<Event, Infallible>> + Send + 'static,
) -> Response {
    use futures::StreamExt;
    let end: futures::future::BoxFuture<'static, ()> = match app.config.sse_max_lifetime {
        Some(lifetime) => Box::pin(tokio::time::sleep(lifetime)),
        None => Box::pin(futures::future::pending()),
    };
    Sse::new(stream.take_until(end))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Unhooks the standalone stream from its session when the client goes away (unless a
/// newer GET replaced it), releasing the input requests asked on it.
struct StandaloneGuard(Arc<LegacySession>, tokio_util::sync::CancellationToken);

impl Drop for StandaloneGuard {
    fn drop(&mut self) {
        self.0.clear_standalone(&self.1);
    }
}

/// `DELETE` with `Mcp-Session-Id` (MCP 2025-11-25): ends the session.
async fn handle_delete(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(refused) = check_origin(&app, &headers) {
        return refused;
    }
    let Some(id) = header_str(&headers, MCP_SESSION_ID) else {
        return not_allowed().await;
    };
    let principal = match app.principal(&headers) {
        Ok(p) => p,
        Err(refused) => return *refused,
    };
    if app.legacy_session_of(id, principal.as_deref()).is_none() {
        return unknown_session();
    }
    let removed = app
        .legacy
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(id);
    match removed {
        Some(entry) => {
            entry.session.close();
            StatusCode::NO_CONTENT.into_response()
        }
        None => unknown_session(),
    }
}

fn too_large(limit: usize) -> Response {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        error_codes::INVALID_REQUEST,
        format!("Body too large (or unreadable): the limit is {limit} bytes"),
    )
}

fn unknown_session() -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        None,
        error_codes::INVALID_REQUEST,
        "Unknown or ended session: initialize again",
    )
}

/// `Host` against [`HttpConfig::allowed_hosts`], then `Origin` against
/// [`HttpConfig::allowed_origins`]: 403 when either is not allowed.
fn check_origin(app: &App, headers: &HeaderMap) -> Option<Response> {
    let host = header_str(headers, header::HOST.as_str());
    if !app.config.allowed_hosts.allows(host) {
        return Some(rpc_error(
            StatusCode::FORBIDDEN,
            None,
            error_codes::INVALID_REQUEST,
            format!("Host not allowed: {}", host.unwrap_or("(none)")),
        ));
    }
    let origin = header_str(headers, header::ORIGIN.as_str())?;
    if app.config.allowed_origins.allows(origin) {
        return None;
    }
    Some(rpc_error(
        StatusCode::FORBIDDEN,
        None,
        error_codes::INVALID_REQUEST,
        format!("Origin not allowed: {origin}"),
    ))
}

async fn not_allowed() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST")],
        "POST one JSON-RPC message; GET and DELETE need an Mcp-Session-Id.",
    )
        .into_response()
}

fn rpc_error(
    status: StatusCode,
    id: Option<RequestId>,
    code: i64,
    message: impl Into<String>,
) -> Response {
    json_response(status, error_frame(id, ErrorObject::new(code, message)))
}

fn json_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// What the client accepts: (JSON, SSE).
fn accepts(headers: &HeaderMap) -> (bool, bool) {
    let Some(accept) = header_str(headers, header::ACCEPT.as_str()) else {
        return (true, true);
    };
    let mut json = false;
    let mut sse = false;
    for part in accept.split(',') {
        let media = part
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/json" | "application/*" => json = true,
            "text/event-stream" | "text/*" => sse = true,
            "*/*" => {
                json = true;
                sse = true;
            }
            _ => {}
        }
    }
    (json, sse)
}

/// The member of `params` that `Mcp-Name` must repeat, for the methods that have one.
fn routed_name(req: &InboundRequest) -> Option<String> {
    mcp_protocol::http::routed_name(&req.method, req.params.as_deref().map(|p| p.get()))
}

/// -32020, -32021 and -32022 travel with HTTP 400; so do malformed messages.
fn status_of(frame: &str) -> StatusCode {
    #[derive(Deserialize)]
    struct Probe {
        error: Option<Code>,
    }
    #[derive(Deserialize)]
    struct Code {
        code: i64,
    }
    match serde_json::from_str::<Probe>(frame)
        .ok()
        .and_then(|p| p.error)
        .map(|e| e.code)
    {
        Some(
            error_codes::HEADER_MISMATCH
            | error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY
            | error_codes::UNSUPPORTED_PROTOCOL_VERSION
            | error_codes::PARSE_ERROR
            | error_codes::INVALID_REQUEST,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

impl App {
    /// The session `id`, if `principal` may use it: the one that opened it (or, for a
    /// session opened without authentication, anyone holding its id). Another principal's
    /// session reads as unknown, like an id never issued.
    fn legacy_session_of(&self, id: &str, principal: Option<&str>) -> Option<Arc<LegacySession>> {
        self.legacy_session(id)
            .filter(|s| s.principal.is_none() || s.principal.as_deref() == principal)
    }

    /// The session `id`, unless it is unknown or idle past its timeout (then it is ended).
    fn legacy_session(&self, id: &str) -> Option<Arc<LegacySession>> {
        let mut sessions = self.legacy.lock().unwrap_or_else(|e| e.into_inner());
        let entry = sessions.get_mut(id)?;
        if entry.last_used.elapsed() > self.config.session_idle_timeout {
            if let Some(gone) = sessions.remove(id) {
                gone.session.close();
            }
            return None;
        }
        entry.last_used = std::time::Instant::now();
        Some(Arc::clone(&entry.session))
    }

    /// Ends idle sessions; then whether there is room for one more.
    fn room_for_a_session(&self) -> bool {
        let mut sessions = self.legacy.lock().unwrap_or_else(|e| e.into_inner());
        let timeout = self.config.session_idle_timeout;
        sessions.retain(|_, entry| {
            let keep = entry.last_used.elapsed() <= timeout;
            if !keep {
                entry.session.close();
            }
            keep
        });
        sessions.len() < self.config.max_sessions
    }

    /// Who is calling; a refusal is the response to send (boxed: it is large).
    fn principal(&self, headers: &HeaderMap) -> Result<Option<String>, Box<Response>> {
        match &self.config.principal {
            None => Ok(None),
            Some(hook) => hook.authenticate(headers).map_err(|status| {
                Box::new(rpc_error(
                    status,
                    None,
                    error_codes::INVALID_REQUEST,
                    "Unauthorized",
                ))
            }),
        }
    }

    fn session(&self, principal: Option<String>) -> Session {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions
            .entry(principal.clone())
            .or_insert_with(|| {
                let mut extensions = Extensions::new();
                if let Some(p) = principal {
                    extensions.insert(Principal(p));
                }
                Session::new(Peer::new(self.idle.clone()), extensions)
            })
            .clone()
    }
}

async fn handle_post(State(app): State<Arc<App>>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    if let Some(refused) = check_origin(&app, &headers) {
        return refused;
    }
    // A declared length over the limit is refused before a byte of the body is read.
    let limit = app.config.max_body_bytes;
    let declared = header_str(&headers, header::CONTENT_LENGTH.as_str())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return too_large(limit);
    }
    let body: Bytes = match axum::body::to_bytes(body, limit).await {
        Ok(body) => body,
        Err(_) => return too_large(limit),
    };
    let content_type = header_str(&headers, header::CONTENT_TYPE.as_str()).unwrap_or("");
    if !content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/json")
    {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            error_codes::INVALID_REQUEST,
            "Content-Type must be application/json",
        );
    }
    let (accepts_json, accepts_sse) = accepts(&headers);
    if !accepts_json && !accepts_sse {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            error_codes::INVALID_REQUEST,
            "Accept must allow application/json or text/event-stream",
        );
    }
    let principal = match app.principal(&headers) {
        Ok(p) => p,
        Err(refused) => return *refused,
    };
    // A 2025-11-25 request names its session; any other request gets an empty slot that
    // `initialize` may fill.
    let session_header = header_str(&headers, MCP_SESSION_ID);
    let slot = match session_header {
        Some(id) => match app.legacy_session_of(id, principal.as_deref()) {
            Some(s) => SessionSlot::with(s),
            None => return unknown_session(),
        },
        None => SessionSlot::default(),
    };
    let legacy = slot.get().is_some();
    let Ok(text) = std::str::from_utf8(&body) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            error_codes::PARSE_ERROR,
            "Parse error: body is not UTF-8",
        );
    };
    let mut session = app.session(principal);
    session.extensions.insert(slot.clone());
    match app.endpoint.classify(text) {
        Err(rejected) => json_response(
            StatusCode::BAD_REQUEST,
            error_frame(rejected.id.clone(), rejected.error.clone()),
        ),
        Ok(Incoming::Notification { method, params }) => {
            app.endpoint
                .handle_notification(&session, method, params)
                .await;
            StatusCode::ACCEPTED.into_response()
        }
        Ok(Incoming::Response { id, outcome }) => {
            // The answer to a server->client request (2025-11-25 sessions).
            app.endpoint.handle_response(&session, id, outcome);
            StatusCode::ACCEPTED.into_response()
        }
        Ok(Incoming::Request(req)) => {
            if let Some(refused) = check_headers(&headers, &req, legacy) {
                return refused;
            }
            let listen = req.method == SubscriptionsListen::METHOD;
            if listen && !accepts_sse {
                return rpc_error(
                    StatusCode::NOT_ACCEPTABLE,
                    Some(req.id),
                    error_codes::INVALID_REQUEST,
                    "subscriptions/listen replies with an event stream: Accept must allow text/event-stream",
                );
            }
            if session_header.is_none()
                && req.method == v2025::Initialize::METHOD
                && !app.room_for_a_session()
            {
                return rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Some(req.id),
                    error_codes::LIMIT_EXCEEDED,
                    format!(
                        "Too many sessions: the limit is {} (max_sessions)",
                        app.config.max_sessions
                    ),
                );
            }
            // In a 2025-11-25 session the server may ask the client while it answers
            // (elicitation during tools/call or tasks/result): those replies stream.
            let may_ask = legacy
                && (req.method == v2025::CallTool::METHOD
                    || req.method == v2025::GetTaskPayload::METHOD);
            let mut response = if listen || !accepts_json || (may_ask && accepts_sse) {
                sse_reply(Arc::clone(&app), session, req).await
            } else {
                json_reply(&app, &session, req).await
            };
            // `initialize` filled the slot: the session exists from now on.
            if session_header.is_none()
                && let Some(opened) = slot.get()
                && let Ok(value) = HeaderValue::from_str(&opened.id)
            {
                app.legacy.lock().unwrap_or_else(|e| e.into_inner()).insert(
                    opened.id.clone(),
                    LegacyEntry {
                        session: Arc::clone(opened),
                        last_used: std::time::Instant::now(),
                    },
                );
                response.headers_mut().insert(MCP_SESSION_ID, value);
            }
            response
        }
    }
}

/// `Mcp-Method` / `Mcp-Name` / `MCP-Protocol-Version` must agree with the body.
fn check_headers(headers: &HeaderMap, req: &InboundRequest, legacy: bool) -> Option<Response> {
    let mismatch = |what: String| {
        Some(rpc_error(
            StatusCode::BAD_REQUEST,
            Some(req.id.clone()),
            error_codes::HEADER_MISMATCH,
            what,
        ))
    };
    if let Some(method) = header_str(headers, MCP_METHOD)
        && method != req.method
    {
        return mismatch(format!(
            "Header mismatch: Mcp-Method is {method:?} but the body's method is {:?}",
            req.method
        ));
    }
    if let Some(name) = header_str(headers, MCP_NAME)
        && let Some(body_name) = routed_name(req)
        && name != body_name
    {
        return mismatch(format!(
            "Header mismatch: Mcp-Name is {name:?} but the body names {body_name:?}"
        ));
    }
    if let Some(version) = header_str(headers, MCP_PROTOCOL_VERSION) {
        if legacy {
            // A 2025-11-25 session's requests carry the negotiated version.
            if version != mcp_protocol::meta::PROTOCOL_VERSION_2025_11_25 {
                return mismatch(format!(
                    "Header mismatch: MCP-Protocol-Version is {version:?} but the session speaks 2025-11-25"
                ));
            }
            return None;
        }
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Some(json_response(
                StatusCode::BAD_REQUEST,
                error_frame(
                    Some(req.id.clone()),
                    ErrorObject::new(error_codes::UNSUPPORTED_PROTOCOL_VERSION, format!("Unsupported protocol version: {version}"))
                        .with_data(serde_json::json!({ "supported": SUPPORTED_VERSIONS, "requested": version })),
                ),
            ));
        }
        let body_version = crate::caller::declarations(req.params.as_deref().map(|p| p.get()))
            .ok()
            .and_then(|d| d.protocol_version);
        if let Some(body_version) = body_version
            && body_version != version
        {
            return mismatch(format!(
                "Header mismatch: MCP-Protocol-Version is {version:?} but _meta names {body_version:?}"
            ));
        }
    }
    None
}

async fn json_reply(app: &App, session: &Session, req: InboundRequest) -> Response {
    // Notifications a handler sends during a JSON reply have nowhere to go.
    let (tx, _rx) = FrameSender::channel(16);
    let session = session.with_peer(session.peer.with_sender(tx));
    match app.endpoint.handle_request(&session, req).await {
        Some(frame) => {
            let status = status_of(&frame);
            json_response(status, frame)
        }
        // Cancelled by the client: nobody waits for an answer.
        None => StatusCode::ACCEPTED.into_response(),
    }
}

/// Cancels the request when the client drops the stream before its response was sent:
/// that request only, through its own token (another request of the same principal may
/// carry the same id).
struct CancelOnDrop {
    stop: tokio_util::sync::CancellationToken,
    /// Cleared once the handler has finished: nothing is left to cancel.
    armed: bool,
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.stop.cancel();
        }
    }
}

/// Whether `frame` is a response (to the request a stream serves) rather than a
/// notification or request sent on the way.
fn is_response(frame: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        method: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Probe>(frame).is_ok_and(|p| p.method.is_none())
}

/// Answers `req` with an event stream: every frame the handler sends, then its response;
/// the stream ends after the response.
///
/// The reply is committed when the first frame is ready. A request refused before its
/// stream began (e.g. -32021 for `subscriptions/listen` with `taskIds` from a caller
/// that does not declare the tasks extension, -32022) is answered like a JSON reply
/// instead, so that it travels with the HTTP status MCP requires (400).
async fn sse_reply(app: Arc<App>, session: Session, req: InboundRequest) -> Response {
    let (tx, mut rx) = FrameSender::channel(64);
    // Holds the session without the stream's sender: the stream ends once the handler
    // (and with it every sender) is gone.
    let stop = tokio_util::sync::CancellationToken::new();
    let mut guard = CancelOnDrop {
        stop: stop.clone(),
        armed: true,
    };
    let session = session.with_peer(session.peer.with_sender(tx.clone()));
    let handler = Arc::clone(&app);
    tokio::spawn(async move {
        if let Some(frame) = handler
            .endpoint
            .handle_request_until(&session, req, &stop)
            .await
        {
            let _ = tx.send(frame).await;
        }
    });
    let first = match rx.recv().await {
        Some(Ok(frame)) => frame,
        // Cancelled by the client: nobody waits for an answer.
        _ => {
            guard.disarm();
            return StatusCode::ACCEPTED.into_response();
        }
    };
    if is_response(&first) {
        guard.disarm();
        let status = status_of(&first);
        if status != StatusCode::OK {
            return json_response(status, first);
        }
    }
    sse(&app, frames(first, rx, guard))
}

fn message_event(frame: String) -> Event {
    Event::default().event("message").data(frame)
}

fn frames(
    first: String,
    rx: FrameReceiver,
    guard: CancelOnDrop,
) -> impl Stream<Item = Result<Event, Infallible>> {
    use futures::StreamExt;
    let rest = futures::stream::unfold((rx, guard), |(mut rx, mut guard)| async move {
        match rx.recv().await {
            Some(Ok(frame)) => Some((Ok(message_event(frame)), (rx, guard))),
            _ => {
                // Every sender is gone: the handler finished and its response went out.
                guard.disarm();
                None
            }
        }
    });
    futures::stream::once(async move { Ok(message_event(first)) }).chain(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_origins() {
        let p = OriginPolicy::Localhost;
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8000",
            "http://[::1]:9",
        ] {
            assert!(p.allows(ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
            "file://",
            "http://127.0.0.1.nip.io",
        ] {
            assert!(!p.allows(bad), "{bad}");
        }
    }

    #[test]
    fn accept_header_parsing() {
        let mut h = HeaderMap::new();
        assert_eq!(accepts(&h), (true, true));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert_eq!(accepts(&h), (true, true));
        h.insert(header::ACCEPT, HeaderValue::from_static("text/html"));
        assert_eq!(accepts(&h), (false, false));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream;q=0.9"),
        );
        assert_eq!(accepts(&h), (false, true));
    }
}
