//! Streamable HTTP. MCP 2026-07-28 is stateless: `POST /mcp` carries one JSON-RPC message
//! and gets a JSON reply, or an SSE stream for `subscriptions/listen`. MCP 2025-11-25
//! sessions add `Mcp-Session-Id`, a GET standalone stream and DELETE.
//!
//! axum owns the HTTP layer: body limit (413, checked on `Content-Length` before reading),
//! `Content-Type` (415), `Accept` (406), `Host` and `Origin` (403, against DNS
//! rebinding), the standard headers of SEP-2243 (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`: required on 2026-07-28 requests, -32020 with HTTP 400 when missing or
//! different from the body; -32022 for a version not served) and a tool's `Mcp-Param-*`
//! headers (its `x-mcp-header` parameters), notifications (202).
//! The engine does the rest.
//!
//! Modules: `config.rs` (settings and policies), `post.rs` (the POST pipeline, in named
//! stages), `headers.rs` (the routing headers against the body), `reply.rs` (JSON or
//! event-stream replies), `sessions.rs` (2025-11-25 sessions, their limits, GET, DELETE
//! and the responses that answer the server's requests), `resume.rs` (their resumable
//! streams, over the session's replay buffer, `session/replay.rs`). `Host`, `Origin` and the caller's
//! identity are checked once, by the `guard` layer in front of every handler, which
//! puts the principal into the request's extensions.
//!
//! With an authenticator that describes a protected resource (OAuth), the RFC 9728
//! metadata is served, without authentication, at `/.well-known/oauth-protected-resource`
//! and at that path followed by the endpoint's path.

mod config;
pub mod console;
mod console_config;
mod gate;
mod headers;
mod post;
mod reply;
mod resume;
mod sessions;

pub use config::{HostPolicy, HttpConfig, OriginPolicy, PrincipalHook};
use gate::{header_str, origin_refusal, refusal_headers, sse_for};

use std::collections::{BTreeSet, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use jsonrpsee::Extensions;
use mcp_tasks_protocol::engine::{
    FrameReceiver, FrameSender, Peer, ReplyWritten, Session, error_frame,
};
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::{ErrorObject, RequestId};
use serde::Deserialize;
use tokio::net::TcpListener;

use crate::auth::Principal;
use crate::auth::{Identity, Refusal};
use crate::server::{Server, ServerEndpoint};

pub use mcp_tasks_protocol::http::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};

struct App {
    endpoint: Arc<ServerEndpoint>,
    /// The server's shared state: its store and what a restored session needs.
    state: Arc<crate::state::State>,
    /// The 2025-11-25 sessions the server serves (a restored one joins them).
    served: Arc<crate::session::subscriptions::SessionSubscriptions>,
    /// Whether 2025-11-25 sessions live in the store too (a shared store: PostgreSQL,
    /// Redis), so any instance serves any of them (`sessions.rs`).
    shared_sessions: bool,
    config: HttpConfig,
    /// One engine session per principal: requests of one caller share the in-flight map,
    /// so `notifications/cancelled` on one POST cancels a call running on another. Its
    /// peer is never asked to send a request: a 2025-11-25 session's requests to its
    /// client go through that session's own peer (`sessions.rs`).
    sessions: Mutex<HashMap<Option<String>, Session>>,
    /// A sender nobody reads: the peer of sessions, whose replies go per POST instead.
    idle: FrameSender,
    _idle_rx: FrameReceiver,
    /// MCP 2025-11-25 sessions by `Mcp-Session-Id`.
    mcp_sessions: Mutex<HashMap<String, sessions::SessionEntry>>,
    /// Every method the server answers.
    methods: std::collections::HashSet<String>,
    /// The tools with `Mcp-Param-*` headers, and their parameters (SEP-2243).
    param_headers: HashMap<String, Arc<[mcp_tasks_protocol::http::ParamHeader]>>,
    /// The scopes each tool requires (tools requiring none are absent).
    tool_scopes: HashMap<String, Vec<String>>,
}

/// Who is calling, as the [`guard`] layer found it (`None`: anonymous).
#[derive(Debug, Clone)]
struct Authenticated(Option<Identity>);

impl Authenticated {
    fn principal(&self) -> Option<String> {
        self.0.as_ref().map(|i| i.principal.clone())
    }
}

/// The MCP 2025-11-25 session a request names (`Mcp-Session-Id`), found by the [`guard`]
/// layer: known, not idle past its timeout, and usable by this caller; with the events
/// kept for resuming its streams, and its own peer, where the server's requests to this
/// session's client wait for their answers.
#[derive(Debug, Clone)]
struct OpenSession(
    Arc<crate::session::McpSession>,
    Arc<crate::session::replay::Replay>,
    Peer,
);

/// In front of every handler: `Host` and `Origin` (403), an access token in the query
/// string (400 `invalid_request`: RFC 6750 2.3 and MCP allow the header only, and a 401
/// would only send the client to fetch a token it would put in the URL again), then who
/// is calling (what the [`Authenticator`](crate::auth::Authenticator) answers), into the
/// request's extensions as [`Authenticated`]; then the 2025-11-25 session the request
/// names, if any (an unknown, ended or another caller's session is 404), as
/// [`OpenSession`]. No session is looked at before the caller is known.
async fn guard(
    State(app): State<Arc<App>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(refused) = check_origin(&app, request.headers()) {
        return refused;
    }
    if let Some(hook) = &app.config.principal
        && crate::auth::query_has_token(request.uri().query())
    {
        let challenge = crate::auth::Challenge::new()
            .resource_metadata(hook.protected_resource().map(|p| p.metadata_url.clone()))
            .invalid_request("access tokens go in the Authorization header, never in the URL");
        return refusal_response(&Refusal::bad_request(challenge), None);
    }
    let identity = match app
        .identity(request.method(), request.uri(), request.headers())
        .await
    {
        Ok(identity) => identity,
        Err(refused) => return refusal_response(&refused, None),
    };
    let principal = identity.as_ref().map(|i| i.principal.as_str());
    if let Some(id) = header_str(request.headers(), MCP_SESSION_ID) {
        match app.find_session(id, principal).await {
            Ok(Some(session)) => {
                request.extensions_mut().insert(session);
            }
            Ok(None) => return sessions::unknown_session(),
            Err(e) => return sessions::store_failed(&e),
        }
    }
    request.extensions_mut().insert(Authenticated(identity));
    next.run(request).await
}

/// The axum router serving `server` at `config.path`.
pub fn router(server: &Server, config: HttpConfig) -> Router {
    let (idle, idle_rx) = FrameSender::channel(1);
    let limit = config.max_body_bytes;
    let path = config.path.clone();
    let (endpoint, method_names) = server.endpoint_and_methods();
    let tool_scopes = server.tool_scopes();
    let state = server.state();
    let shared_sessions = state.store.sessions().is_some_and(|s| s.is_shared());
    // Resource changes other instances saw reach this one's sessions and listen streams.
    let served = server.served_sessions();
    crate::v2025::listen_for_resource_updates(&state, &served);
    let app = Arc::new(App {
        endpoint,
        state,
        served,
        shared_sessions,
        config,
        sessions: Mutex::default(),
        idle,
        _idle_rx: idle_rx,
        mcp_sessions: Mutex::default(),
        methods: method_names.into_iter().collect(),
        param_headers: server.param_headers(),
        tool_scopes,
    });
    let router = Router::new()
        .route(
            &path,
            post(post::handle_post)
                .get(sessions::handle_get)
                .delete(sessions::handle_delete),
        )
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            guard,
        ))
        .layer(DefaultBodyLimit::max(limit));
    // The metadata is public: outside the guard.
    let metadata = app
        .config
        .principal
        .as_ref()
        .and_then(|hook| hook.protected_resource())
        .map(|resource| {
            let scopes: BTreeSet<String> = app.tool_scopes.values().flatten().cloned().collect();
            Arc::new(resource.document(&scopes).to_string())
        });
    let router = match metadata {
        None => router,
        Some(document) => {
            let serve = move || {
                let document = Arc::clone(&document);
                async move {
                    (
                        [
                            (header::CONTENT_TYPE, "application/json"),
                            (header::CACHE_CONTROL, "max-age=3600"),
                        ],
                        document.as_str().to_owned(),
                    )
                }
            };
            let root = crate::auth::PROTECTED_RESOURCE_PATH;
            let suffixed = format!("{root}{}", path.trim_end_matches('/'));
            let router = router.route(root, get(serve.clone()));
            if suffixed == root {
                router
            } else {
                router.route(&suffixed, get(serve))
            }
        }
    };
    // The operator console, when turned on: behind its own access layer (which runs
    // the same Host/Origin check), never behind the MCP endpoint's guard.
    let router = match &app.config.console {
        Some(console) => console::mount(router, &app.state, &app.config, console),
        None => router,
    };
    router.with_state(app)
}

/// The response to a refused request: its status, `WWW-Authenticate` and `Retry-After`,
/// and a JSON-RPC error (`id` null unless the request's id is known) with its message.
fn refusal_response(refusal: &Refusal, id: Option<RequestId>) -> Response {
    let mut response = rpc_error(
        refusal.status,
        id,
        error_codes::INVALID_REQUEST,
        refusal.message.clone(),
    );
    refusal_headers(refusal, response.headers_mut());
    response
}

/// Serves `server` on `listener` until `shutdown` resolves (then stops accepting, lets
/// open requests finish) — TCP_NODELAY on every connection, since SSE replies stall
/// behind Nagle's algorithm otherwise; a connection that does not send a request's
/// headers within [`HttpConfig::header_read_timeout`] is closed (slow clients). Every
/// request carries the peer's address as an [`axum::extract::ConnectInfo`]`<SocketAddr>`
/// extension.
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
        let (tcp, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: transient; do not spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        // Each request carries the peer's address (the console's audit trail names it).
        let app = app.clone();
        let service = hyper::service::service_fn(
            move |mut request: axum::http::Request<hyper::body::Incoming>| {
                request
                    .extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                tower::Service::call(&mut app.clone(), request)
            },
        );
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

/// An event stream with keep-alives, ended after [`HttpConfig::sse_max_lifetime`].
fn sse(
    app: &App,
    stream: impl Stream<Item = Result<Event, Infallible>> + Send + 'static,
) -> Response {
    sse_for(app.config.sse_max_lifetime, stream)
}

/// `Host` against [`HttpConfig::allowed_hosts`], then `Origin` against
/// [`HttpConfig::allowed_origins`]: 403 when either is not allowed.
fn check_origin(app: &App, headers: &HeaderMap) -> Option<Response> {
    let message = origin_refusal(&app.config, headers)?;
    Some(rpc_error(
        StatusCode::FORBIDDEN,
        None,
        error_codes::INVALID_REQUEST,
        message,
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

/// `response` with a body that fires `written` once the connection has taken its last
/// bytes, or dropped it unsent.
fn fire_when_sent(response: Response, written: &ReplyWritten) -> Response {
    let guard = Some(written.guard());
    response.map(|inner| axum::body::Body::new(FireAtEnd { inner, guard }))
}

/// A body that drops its guard at its end (or when dropped).
struct FireAtEnd {
    inner: axum::body::Body,
    guard: Option<tokio_util::sync::DropGuard>,
}

impl hyper::body::Body for FireAtEnd {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, std::task::Poll::Ready(None | Some(Err(_)))) {
            self.guard.take();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
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

/// What the client accepts: (JSON, SSE).
fn accepts(headers: &HeaderMap) -> (bool, bool) {
    let Some(accept) = header_str(headers, header::ACCEPT) else {
        return (true, true);
    };
    let mut json = false;
    let mut sse = false;
    for part in accept.split(',') {
        let media = part.split(';').next().unwrap_or("").trim();
        let is = |name: &str| media.eq_ignore_ascii_case(name);
        if is("application/json") || is("application/*") {
            json = true;
        } else if is("text/event-stream") || is("text/*") {
            sse = true;
        } else if media == "*/*" {
            json = true;
            sse = true;
        }
    }
    (json, sse)
}

/// -32020, -32021 and -32022 travel with HTTP 400; so do malformed messages. On the
/// 2026-07-28 wire (outside a 2025-11-25 session) a method the server does not have is
/// HTTP 404.
fn status_for(error_code: Option<i64>, in_session: bool) -> StatusCode {
    match error_code {
        Some(error_codes::METHOD_NOT_FOUND) if !in_session => StatusCode::NOT_FOUND,
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

/// [`status_for`] a frame already on its way (the first frame of an event stream, which
/// may be a notification sent before the response).
fn status_of(frame: &str, in_session: bool) -> StatusCode {
    #[derive(Deserialize)]
    struct Probe {
        error: Option<Code>,
    }
    #[derive(Deserialize)]
    struct Code {
        code: i64,
    }
    let code = serde_json::from_str::<Probe>(frame)
        .ok()
        .and_then(|p| p.error)
        .map(|e| e.code);
    status_for(code, in_session)
}

impl App {
    /// Who is calling (`None`: anonymous), or why the request is refused.
    async fn identity(
        &self,
        method: &axum::http::Method,
        uri: &axum::http::Uri,
        headers: &HeaderMap,
    ) -> Result<Option<Identity>, Refusal> {
        match &self.config.principal {
            None => Ok(None),
            Some(hook) => hook.authenticate_request(method, uri, headers).await,
        }
    }

    /// The refusal of a `tools/call` of `tool` by `identity` when the tool requires a
    /// scope the caller's credentials lack: 403 `insufficient_scope` (the authenticator
    /// names the scopes to ask for). An anonymous caller has no scopes.
    fn refuse_tool(&self, tool: &str, identity: Option<&Identity>) -> Option<Refusal> {
        let needed = self.tool_scopes.get(tool)?;
        if identity.is_some_and(|i| i.missing(needed).is_empty()) {
            return None;
        }
        let description = format!("tool {tool} requires scope {}", needed.join(" "));
        Some(match &self.config.principal {
            Some(hook) => hook.insufficient_scope(needed, &description),
            None => Refusal::forbidden(
                crate::auth::Challenge::new().insufficient_scope(needed, &description),
            ),
        })
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

fn message_event(frame: String) -> Event {
    Event::default().event("message").data(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

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
