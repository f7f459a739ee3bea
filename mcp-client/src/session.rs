//! [`Session`]: one connection to a server and what the client and its task handles share
//! over it — the engine's [`Peer`], the handler, the configuration, what negotiation
//! learned, the push channels of `notifications/tasks` and `notifications/tasks/event`
//! — and the request helpers (timeout, `_meta`, results read as a given shape).
//!
//! Below `client.rs`, `driver.rs` and `v2025.rs`; imports none of them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::{
    Connection, EndpointBuilder, InboundNotification, Peer, PeerError,
};
use mcp_tasks_protocol::meta::{PROTOCOL_VERSION_2026_07_28, TASKS_EXTENSION};
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::tasks::{
    self, DetailedTask, TaskEventNotificationParams, TaskStatusNotificationParams,
};
use mcp_tasks_protocol::v2025;
use mcp_tasks_protocol::v2026::{ClientCapabilities, DiscoverResult, RequestMeta};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::config::ClientConfig;
use crate::error::ClientError;
pub(crate) use crate::handler::Creating;
use crate::handler::{ClientHandler, Routes, client_methods};
use crate::hosted::Hosted;
use crate::reference::Endpoint;
use crate::transport::{ExchangeError, ExchangeFailure, HttpState, TransportGuard};

/// What the server is, as negotiated.
#[derive(Debug, Clone)]
pub enum ServerInfo {
    /// MCP 2026-07-28 (`server/discover`).
    V2026(Box<DiscoverResult>),
    /// MCP 2025-11-25 (`initialize`), for servers without `server/discover`.
    V2025(Box<v2025::InitializeResult>),
}

impl ServerInfo {
    /// Whether the server offers the tasks extension.
    pub fn supports_tasks(&self) -> bool {
        match self {
            ServerInfo::V2026(d) => tasks::server_declares_tasks(&d.capabilities),
            ServerInfo::V2025(i) => i.capabilities.supports_task_tool_calls(),
        }
    }

    /// Whether the server serves task event streams (`tasks/stream`, draft SEP-2694):
    /// `rs.mcp-tasks/event-streams` among the extensions of `server/discover`. Never
    /// in a 2025-11-25 session.
    pub fn offers_event_streams(&self) -> bool {
        match self {
            ServerInfo::V2026(d) => tasks::server_offers_event_streams(&d.capabilities),
            ServerInfo::V2025(_) => false,
        }
    }
}

/// How many task events the session holds for readers that have not taken them yet; a
/// reader that falls further behind reads the rest again from the server.
const TASK_EVENTS_BUFFER: usize = 1024;

/// The HTTP side of a connection: the headers state, the failed exchanges and the login.
pub(crate) type HttpParts = (
    Arc<Mutex<HttpState>>,
    UnboundedReceiver<ExchangeFailure>,
    Option<Arc<crate::auth::Authorizer>>,
);

/// One connection to a server, shared by the client and every task handle.
pub(crate) struct Session {
    /// The outbound half of the engine.
    pub(crate) peer: Peer,
    /// The application's handler, and the tasks' own (MCP 2025-11-25 input requests).
    routes: Arc<Routes>,
    /// The configuration the client was made with.
    pub(crate) config: ClientConfig,
    server: Mutex<Option<ServerInfo>>,
    /// `notifications/tasks` pushed by the server, for drivers to pick up.
    pub(crate) pushed: broadcast::Sender<DetailedTask>,
    /// `notifications/tasks/status` (MCP 2025-11-25) pushed by the server.
    pub(crate) pushed_2025: broadcast::Sender<v2025::Task>,
    /// `notifications/tasks/event` (the events of every `tasks/stream` in flight), for
    /// the event streams to pick up theirs.
    pub(crate) task_events: broadcast::Sender<TaskEventNotificationParams>,
    /// Where the server is, for task references.
    endpoint: Option<Endpoint>,
    /// The HTTP headers state, for transports that have one.
    http: Option<Arc<Mutex<HttpState>>>,
    /// The last login failure of an HTTP exchange: the request it ended reports it as
    /// [`ClientError::Auth`] instead of a transport message.
    auth_failure: Arc<Mutex<Option<Arc<crate::auth::AuthError>>>>,
    /// The login of an HTTP connection, if configured.
    authorizer: Option<Arc<crate::auth::Authorizer>>,
    /// The tasks this connection hosts (MCP 2025-11-25), with a store configured.
    hosted: Option<Arc<Hosted>>,
    /// The tools of the last `tools/list` the server flags as deduplicating keyed calls
    /// (`_meta["rs.mcp-tasks/idempotency"]`); `None` before any listing.
    idempotent_tools: Mutex<Option<std::collections::HashSet<String>>>,
    _guard: TransportGuard,
    _forward: Option<AbortOnDrop>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Drop for Session {
    /// The client is gone: the tasks it hosts end with it (the endpoint, which keeps
    /// answering until the connection closes, holds them too).
    fn drop(&mut self) {
        if let Some(hosted) = &self.hosted {
            hosted.close();
        }
    }
}

/// A task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The handler's capabilities in the 2025-11-25 shape.
fn declared_2025(handler: &dyn ClientHandler) -> Result<v2025::ClientCapabilities, ClientError> {
    serde_json::to_value(handler.capabilities())
        .and_then(serde_json::from_value::<v2025::ClientCapabilities>)
        .map_err(|e| ClientError::Protocol(format!("capabilities: {e}")))
}

/// The tasks the connection hosts (MCP 2025-11-25), when the configuration gives them a
/// store.
fn hosted_tasks(
    config: &ClientConfig,
    handler: &dyn ClientHandler,
) -> Result<Option<Arc<Hosted>>, ClientError> {
    let Some(store) = &config.client_tasks else {
        return Ok(None);
    };
    let declared = declared_2025(handler)?;
    let hosted = Hosted::new(Arc::clone(store), &declared).map_err(ClientError::Protocol)?;
    Ok(Some(Arc::new(hosted)))
}

/// Passes the task of a `notifications/tasks` on to the drivers.
async fn push_task(pushed: broadcast::Sender<DetailedTask>, n: InboundNotification) {
    let params = n
        .params
        .as_deref()
        .map(|p| serde_json::from_str::<TaskStatusNotificationParams>(p.get()));
    match params {
        Some(Ok(p)) => {
            let _ = pushed.send(p.task);
        }
        _ => tracing::debug!("malformed notifications/tasks; ignored"),
    }
}

/// Passes the task of a `notifications/tasks/status` (MCP 2025-11-25) on to the drivers.
async fn push_task_2025(pushed: broadcast::Sender<v2025::Task>, n: InboundNotification) {
    let task = n
        .params
        .as_deref()
        .map(|p| serde_json::from_str::<v2025::TaskStatusNotificationParams>(p.get()));
    match task {
        Some(Ok(p)) => {
            let _ = pushed.send(p.task);
        }
        _ => tracing::debug!("malformed notifications/tasks/status; ignored"),
    }
}

/// Passes the event of a `notifications/tasks/event` on to the event streams. Handled
/// before the engine reads the next frame: an event sent before its stream's response is
/// in the channel when the response is.
async fn push_event(
    events: broadcast::Sender<TaskEventNotificationParams>,
    n: InboundNotification,
) {
    let params = n
        .params
        .as_deref()
        .map(|p| serde_json::from_str::<TaskEventNotificationParams>(p.get()));
    match params {
        Some(Ok(p)) => {
            let _ = events.send(p);
        }
        _ => tracing::debug!("malformed notifications/tasks/event; ignored"),
    }
}

/// What to do with a 2025-11-25 task that asks for input past the bound: cancel it.
fn cancel_past_bound(peer: &Peer) -> Box<dyn Fn(&str) + Send + Sync> {
    let peer = peer.clone();
    Box::new(move |id: &str| {
        let (peer, params) = (peer.clone(), v2025::TaskIdParams::new(id));
        tokio::spawn(async move {
            if let Err(e) = peer.request::<v2025::CancelTask>(&params).await {
                tracing::debug!(error = %e, "cancelling a task past its input bound failed");
            }
        });
    })
}

/// Failed HTTP exchanges end their requests with `PeerError::Exchange` (typed); a login
/// failure is kept in `auth_failure` for the request to report typed.
fn forward_failures(
    mut failures: UnboundedReceiver<ExchangeFailure>,
    peer: &Peer,
    auth_failure: &Arc<Mutex<Option<Arc<crate::auth::AuthError>>>>,
) -> AbortOnDrop {
    let peer = peer.clone();
    let auth_failure = Arc::clone(auth_failure);
    AbortOnDrop(tokio::spawn(async move {
        while let Some(failure) = failures.recv().await {
            if let ExchangeError::Auth(e) = &failure.error {
                *lock(&auth_failure) = Some(Arc::clone(e));
            }
            peer.fail(&failure.id, PeerError::Exchange(failure.error.failure()));
        }
    }))
}

impl Session {
    /// Serves `conn` with the client's methods (answered by `handler`; with
    /// [`ClientConfig::client_tasks`], the hosted tasks' too) and the
    /// `notifications/tasks` push channel. Not negotiated yet.
    pub(crate) fn open(
        conn: Connection,
        guard: TransportGuard,
        http: Option<HttpParts>,
        handler: Arc<dyn ClientHandler>,
        config: ClientConfig,
        reached_at: Option<Endpoint>,
    ) -> Result<Session, ClientError> {
        let (pushed, _) = broadcast::channel(256);
        let (pushed_2025, _) = broadcast::channel(256);
        let (task_events, _) = broadcast::channel(TASK_EVENTS_BUFFER);
        let hosted = hosted_tasks(&config, handler.as_ref())?;
        let routes = Arc::new(Routes::new(
            handler,
            config.max_input_rounds,
            config.driver.unknown_task_hold,
        ));
        let endpoint = EndpointBuilder::new(client_methods(Arc::clone(&routes), hosted.clone()))
            .on_notification(tasks::methods::NOTIFICATIONS_TASKS, {
                let pushed = pushed.clone();
                move |n| push_task(pushed.clone(), n)
            })
            .on_notification(v2025::methods::NOTIFICATIONS_TASKS_STATUS, {
                let pushed = pushed_2025.clone();
                move |n| push_task_2025(pushed.clone(), n)
            })
            .on_notification(tasks::methods::NOTIFICATIONS_TASKS_EVENT, {
                let events = task_events.clone();
                move |n| push_event(events.clone(), n)
            })
            .build();
        let (peer, _session) = endpoint.serve(conn);
        if let Some(hosted) = &hosted {
            hosted.serve(peer.clone());
        }
        // A 2025-11-25 task asking for input past the bound is cancelled.
        routes.on_exceeded(cancel_past_bound(&peer));
        let (http, failures, authorizer) = match http {
            Some((state, failures, authorizer)) => (Some(state), Some(failures), authorizer),
            None => (None, None, None),
        };
        let auth_failure: Arc<Mutex<Option<Arc<crate::auth::AuthError>>>> = Arc::default();
        let forward = failures.map(|failures| forward_failures(failures, &peer, &auth_failure));
        Ok(Session {
            peer,
            routes,
            config,
            server: Mutex::new(None),
            pushed,
            pushed_2025,
            task_events,
            endpoint: reached_at,
            http,
            auth_failure,
            authorizer,
            hosted,
            idempotent_tools: Mutex::new(None),
            _guard: guard,
            _forward: forward,
        })
    }

    /// The capabilities `initialize` declares (MCP 2025-11-25): the handler's, with
    /// `tasks` when the connection hosts tasks.
    pub(crate) fn capabilities_2025(&self) -> Result<v2025::ClientCapabilities, ClientError> {
        let mut declared = declared_2025(self.handler())?;
        declared.tasks = self.hosted.as_ref().map(|h| h.capability());
        Ok(declared)
    }

    /// What the server said about itself, once negotiated.
    pub(crate) fn server(&self) -> Option<ServerInfo> {
        lock(&self.server).clone()
    }

    /// Records the outcome of negotiation.
    pub(crate) fn set_server(&self, info: ServerInfo) {
        *lock(&self.server) = Some(info);
    }

    /// Where the server is (`None` over a connection the application made).
    pub(crate) fn endpoint(&self) -> Option<Endpoint> {
        self.endpoint.clone()
    }

    /// The protocol version negotiated (`2026-07-28`, or what `initialize` agreed).
    pub(crate) fn protocol_version(&self) -> String {
        match &*lock(&self.server) {
            Some(ServerInfo::V2025(i)) => i.protocol_version.clone(),
            _ => PROTOCOL_VERSION_2026_07_28.to_owned(),
        }
    }

    /// Whether the session speaks MCP 2025-11-25.
    pub(crate) fn is_2025(&self) -> bool {
        matches!(*lock(&self.server), Some(ServerInfo::V2025(_)))
    }

    /// Whether the server serves task event streams (see
    /// [`ServerInfo::offers_event_streams`]).
    pub(crate) fn offers_event_streams(&self) -> bool {
        lock(&self.server)
            .as_ref()
            .is_some_and(ServerInfo::offers_event_streams)
    }

    /// Whether the server offers the tasks extension (2025-11-25: task tool calls).
    pub(crate) fn supports_tasks(&self) -> bool {
        lock(&self.server)
            .as_ref()
            .is_some_and(ServerInfo::supports_tasks)
    }

    /// Sets the `MCP-Protocol-Version` header an HTTP transport sends from now on.
    pub(crate) fn set_protocol_version(&self, version: &str) {
        if let Some(http) = &self.http {
            lock(http).protocol_version = Some(version.to_owned());
        }
    }

    /// A transport failure that was a login failure, as [`ClientError::Auth`].
    pub(crate) fn lift(&self, e: ClientError) -> ClientError {
        match e {
            ClientError::Transport(failure) => match lock(&self.auth_failure).take() {
                Some(auth) if failure.message == auth.to_string() => ClientError::Auth(auth),
                _ => ClientError::Transport(failure),
            },
            e => e,
        }
    }

    /// Remembers the `Mcp-Param-*` headers of the tools just listed (HTTP only).
    pub(crate) fn set_tool_headers(
        &self,
        headers: std::collections::HashMap<String, Vec<mcp_tasks_protocol::http::ParamHeader>>,
    ) {
        if let Some(http) = &self.http {
            lock(http).tool_headers = headers;
        }
    }

    /// Remembers which tools of a `tools/list` (`(name, _meta)` each) the server flags
    /// as deduplicating keyed calls.
    pub(crate) fn set_idempotent_tools<'a>(
        &self,
        tools: impl IntoIterator<Item = (&'a str, Option<&'a JsonObject>)>,
    ) {
        let flagged = tools
            .into_iter()
            .filter(|(_, meta)| {
                meta.and_then(|m| m.get(mcp_tasks_protocol::meta::IDEMPOTENT_TOOL))
                    .is_some_and(serde_json::Value::is_object)
            })
            .map(|(name, _)| name.to_owned())
            .collect();
        *lock(&self.idempotent_tools) = Some(flagged);
    }

    /// Whether the server flags the tool `name` as deduplicating keyed calls, as the last
    /// `tools/list` said: `false` for a tool not flagged, and before any listing.
    pub(crate) fn idempotent_tool(&self, name: &str) -> bool {
        lock(&self.idempotent_tools)
            .as_ref()
            .is_some_and(|tools| tools.contains(name))
    }

    /// The application's handler.
    pub(crate) fn handler(&self) -> &dyn ClientHandler {
        self.routes.default_handler()
    }

    /// Server->client requests about `task_id` (MCP 2025-11-25) go to `handler`, at most
    /// `limit` of them, until [`unroute`](Session::unroute). Returns the requests about
    /// it that came before (see [`Routes::route`](crate::handler::Routes::route)).
    pub(crate) fn route(
        &self,
        task_id: &str,
        handler: Arc<dyn ClientHandler>,
        limit: u32,
    ) -> Vec<serde_json::Value> {
        self.routes.route(task_id, handler, limit)
    }

    /// A task-augmented call (MCP 2025-11-25) is about to be sent: until the guard is
    /// dropped (once the call's task is routed, or the call ended without one), a
    /// server's request naming a task not routed yet is held for it (see
    /// [`Routes`](crate::handler::Routes)).
    pub(crate) fn creating(&self) -> Creating {
        self.routes.creating()
    }

    /// Whether a 2025-11-25 task asked for input past its bound (and was cancelled).
    pub(crate) fn rounds_exceeded(&self, task_id: &str) -> bool {
        self.routes.exceeded(task_id)
    }

    /// Ends a [`route`](Session::route).
    pub(crate) fn unroute(&self, task_id: &str) {
        self.routes.unroute(task_id);
    }

    /// The `_meta` every request carries: protocol version, our capabilities (with the
    /// tasks extension), who we are.
    pub(crate) fn request_meta(&self) -> RequestMeta {
        let caps: ClientCapabilities = self
            .handler()
            .capabilities()
            .with_extension(TASKS_EXTENSION, JsonObject::new());
        RequestMeta::new(caps).with_client_info(self.config.client_info.clone())
    }

    /// [`request_meta`](Session::request_meta) as a JSON object, for params that carry
    /// `_meta` untyped.
    pub(crate) fn request_meta_object(&self) -> Option<JsonObject> {
        match serde_json::to_value(self.request_meta()) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => None,
        }
    }

    /// `answer` within `timeout`, not counting the time a browser step of the login
    /// takes (the step bounds its own wait). `timed_out`, if given, is set before a
    /// timed-out `answer` is dropped.
    async fn bounded<T>(
        &self,
        timeout: std::time::Duration,
        answer: impl std::future::Future<Output = T>,
        timed_out: Option<&AtomicBool>,
    ) -> Result<T, ClientError> {
        tokio::pin!(answer);
        loop {
            match tokio::time::timeout(timeout, &mut answer).await {
                Ok(out) => return Ok(out),
                Err(_)
                    if self
                        .authorizer
                        .as_ref()
                        .is_some_and(|a| a.in_browser_step()) => {}
                Err(_) => {
                    if let Some(timed_out) = timed_out {
                        timed_out.store(true, Ordering::SeqCst);
                    }
                    return Err(ClientError::Timeout(timeout));
                }
            }
        }
    }

    /// A typed request with the configured timeout.
    pub(crate) async fn request<M: Request>(
        &self,
        params: &M::Params,
    ) -> Result<M::Result, ClientError> {
        if let Some((span, traced)) = crate::telemetry::outgoing(M::METHOD, params) {
            let sent = self.request_raw_as(M::METHOD, &traced, true);
            let answer = tracing::Instrument::instrument(sent, span.clone()).await;
            return answer.inspect_err(|e| crate::telemetry::failed(&span, e));
        }
        let timeout = self.config.request_timeout;
        let answer = self
            .bounded(timeout, self.peer.request::<M>(params), None)
            .await?;
        answer.map_err(|e| self.lift(e.into()))
    }

    /// A request with the configured timeout whose result is read as `R` (for results
    /// with several shapes, or read in another revision's shape). A request that times
    /// out is cancelled (`notifications/cancelled`).
    pub(crate) async fn request_as<R: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<R, ClientError> {
        self.request_as_with(method, params, true).await
    }

    /// [`request_as`](Self::request_as), except that a request that times out is only
    /// forgotten, not cancelled: the server goes on with it (dropped before, it is
    /// cancelled). For a keyed create of a tool the server deduplicates, which a retry
    /// with the same key finds again.
    pub(crate) async fn request_as_uncancelled<R: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<R, ClientError> {
        self.request_as_with(method, params, false).await
    }

    /// A request with the configured timeout whose result is read as `R`; `cancel`:
    /// whether a request that times out is cancelled (one dropped before always is).
    async fn request_as_with<R: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
        cancel: bool,
    ) -> Result<R, ClientError> {
        if let Some((span, traced)) = crate::telemetry::outgoing(method, params) {
            let sent = self.request_raw_as(method, &traced, cancel);
            let answer = tracing::Instrument::instrument(sent, span.clone()).await;
            return answer.inspect_err(|e| crate::telemetry::failed(&span, e));
        }
        let raw = serde_json::value::to_raw_value(params)
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.request_raw_as(method, &raw, cancel).await
    }

    /// A request of `raw` params with the configured timeout, its result read as `R`;
    /// `cancel`: whether a request that times out is cancelled.
    async fn request_raw_as<R: DeserializeOwned>(
        &self,
        method: &str,
        raw: &serde_json::value::RawValue,
        cancel: bool,
    ) -> Result<R, ClientError> {
        let timeout = self.config.request_timeout;
        let result = if cancel {
            let sent = self.peer.request_raw(method, Some(raw));
            self.bounded(timeout, sent, None).await?
        } else {
            let kept = AtomicBool::new(false);
            let sent = self.peer.request_raw_keepable(method, Some(raw), &kept);
            self.bounded(timeout, sent, Some(&kept)).await?
        };
        let result = result.map_err(|e| self.lift(e.into()))?;
        serde_json::from_str(result.get()).map_err(|e| {
            ClientError::Protocol(format!("{method} answered with an unexpected shape: {e}"))
        })
    }
}
