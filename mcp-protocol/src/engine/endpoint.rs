//! [`Endpoint`]: one side of a JSON-RPC session. It classifies each inbound frame
//! (request, notification, response), runs requests through the middleware stack into
//! the method registry, resolves responses against the [`Peer`]'s pending map, and turns
//! `notifications/cancelled` into a cancelled [`CancellationToken`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use jsonrpsee::Extensions;
use jsonrpsee::core::middleware::{RpcServiceBuilder, RpcServiceT};
use jsonrpsee::core::server::{MethodResponse, Methods};
use jsonrpsee::types::{Id, Request};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::layer::util::Identity;

use super::peer::Peer;
use super::service::{InboundNotification, MethodsService, NotificationHandlers};
use super::transport::{Connection, DEFAULT_MAX_FRAME_BYTES, FrameError, FrameReceiver};
use crate::error_codes;
use crate::jsonrpc::{ErrorObject, JsonRpcErrorResponse, RequestId, Version};

/// What a request handler knows about the request it serves, found in its `Extensions`.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The id the peer gave the request.
    pub id: RequestId,
    /// Cancelled when the peer sends `notifications/cancelled` for this request, or the
    /// connection closes. Once cancelled, no response is sent.
    pub cancel: CancellationToken,
}

impl RequestContext {
    /// The context of the request whose extensions these are.
    pub fn from_extensions(ext: &Extensions) -> Option<&RequestContext> {
        ext.get::<RequestContext>()
    }
}

/// Fired by the transport once a request's response has been handed to the connection
/// (written to stdio's output in order with everything sent after it, or taken by the
/// HTTP connection as its body's last bytes), or once it never will be (the request was
/// cancelled, the connection went). A handler that starts work whose messages must not
/// reach the peer before its response (a 2025-11-25 task's questions and statuses) waits
/// for it; a transport that does not fire it puts none in the extensions.
///
/// Transports put one into a request's [`Extensions`] and keep a [`ReplyWritten::guard`]
/// beside the response, so it fires when they are done with it whatever happens.
#[derive(Debug, Clone, Default)]
pub struct ReplyWritten(CancellationToken);

impl ReplyWritten {
    /// A signal not fired yet.
    pub fn new() -> ReplyWritten {
        ReplyWritten::default()
    }

    /// Fires the signal: the response is written, or never will be.
    pub fn fire(&self) {
        self.0.cancel();
    }

    /// Fires the signal when dropped.
    pub fn guard(&self) -> tokio_util::sync::DropGuard {
        self.0.clone().drop_guard()
    }

    /// Whether it fired.
    pub fn is_fired(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Returns once it fired.
    pub async fn wait(&self) {
        self.0.cancelled().await
    }
}

/// One classified inbound frame.
#[derive(Debug)]
pub enum Incoming {
    /// A request, to dispatch.
    Request(InboundRequest),
    /// A notification: a method and its parameters, no id.
    Notification {
        /// The notification's method.
        method: String,
        /// The notification's parameters, unparsed.
        params: Option<Box<RawValue>>,
    },
    /// A response to one of our own requests.
    Response {
        /// The id of our request it answers.
        id: RequestId,
        /// Its result, unparsed, or the error it reports.
        outcome: Result<Box<RawValue>, ErrorObject>,
    },
}

/// An inbound request, not yet dispatched.
#[derive(Debug)]
pub struct InboundRequest {
    /// The request's id.
    pub id: RequestId,
    /// The request's method.
    pub method: String,
    /// The request's parameters, unparsed.
    pub params: Option<Box<RawValue>>,
}

/// A frame refused before dispatch, with the error to answer (when it deserves an answer).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The id to answer, when the frame had a readable one.
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: ErrorObject,
    /// False for a malformed *response*: JSON-RPC never answers a response.
    pub reply: bool,
}

impl Rejected {
    fn new(id: Option<RequestId>, code: i64, message: impl Into<String>) -> Box<Self> {
        Box::new(Rejected {
            id,
            error: ErrorObject::new(code, message),
            reply: true,
        })
    }

    fn with_reply(mut self: Box<Self>, reply: bool) -> Box<Self> {
        self.reply = reply;
        self
    }
}

/// The per-session state an endpoint serves: the peer, the requests in flight, and the
/// extensions every request of the session sees (e.g. the authenticated principal).
#[derive(Debug, Clone)]
pub struct Session {
    /// The peer of this session: sends requests and notifications to the other side.
    pub peer: Peer,
    /// What every request of the session sees in its extensions.
    pub extensions: Extensions,
    inflight: Arc<Mutex<Inflight>>,
}

/// The requests a session is serving, by id. One id may name several requests at once:
/// over Streamable HTTP a session is a principal, and two clients of one principal both
/// number their requests from 1. Each request therefore has its own token, and ends
/// only its own entry.
#[derive(Debug, Default)]
struct Inflight {
    by_id: HashMap<RequestId, Vec<(u64, CancellationToken)>>,
    count: usize,
    next_serial: u64,
}

/// One request registered in flight (see [`Session::register`]); dropping it (the
/// request was answered, or its future dropped with the connection) ends its entry.
#[derive(Debug)]
struct Registration {
    inflight: Arc<Mutex<Inflight>>,
    id: RequestId,
    serial: u64,
    cancel: CancellationToken,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut inflight = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entries) = inflight.by_id.get_mut(&self.id) else {
            return;
        };
        let before = entries.len();
        entries.retain(|(serial, _)| *serial != self.serial);
        let removed = before - entries.len();
        if entries.is_empty() {
            inflight.by_id.remove(&self.id);
        }
        inflight.count -= removed;
    }
}

impl Session {
    /// A session serving `peer`, whose requests see `extensions`.
    pub fn new(peer: Peer, extensions: Extensions) -> Session {
        Session {
            peer,
            extensions,
            inflight: Arc::default(),
        }
    }

    /// Cancels every request in flight (the connection is gone).
    pub fn cancel_all(&self) {
        let mut inflight = self.lock_inflight();
        for (_, entries) in inflight.by_id.drain() {
            for (_, token) in entries {
                token.cancel();
            }
        }
        inflight.count = 0;
    }

    /// How many inbound requests are being served.
    pub fn inflight_count(&self) -> usize {
        self.lock_inflight().count
    }

    /// The ids of the inbound requests being served.
    fn inflight_ids(&self) -> Vec<RequestId> {
        let inflight = self.lock_inflight();
        let mut ids: Vec<RequestId> = inflight
            .by_id
            .iter()
            .flat_map(|(id, entries)| entries.iter().map(move |_| id.clone()))
            .collect();
        ids.sort_by_key(ToString::to_string);
        ids
    }

    /// The same session (in-flight requests, extensions) answering through `peer`: used
    /// where each inbound request has its own response stream (Streamable HTTP), so that a
    /// `notifications/cancelled` arriving on another stream still finds the request.
    pub fn with_peer(&self, peer: Peer) -> Session {
        Session {
            peer,
            extensions: self.extensions.clone(),
            inflight: Arc::clone(&self.inflight),
        }
    }

    /// Cancels the in-flight request `id`, as `notifications/cancelled` would (every
    /// request of this session with that id). Returns whether one was in flight.
    pub fn cancel(&self, id: &RequestId) -> bool {
        match self.lock_inflight().by_id.get(id) {
            Some(entries) => {
                for (_, token) in entries {
                    token.cancel();
                }
                true
            }
            None => false,
        }
    }

    /// Registers request `id` as in flight, with a token that `parent` (if any) also
    /// cancels. Done when the request is read, so that a cancellation read right after it
    /// is not lost. `None` when `limit` requests are in flight already.
    fn register(
        &self,
        id: &RequestId,
        limit: usize,
        parent: Option<&CancellationToken>,
    ) -> Option<Registration> {
        let mut inflight = self.lock_inflight();
        if inflight.count >= limit {
            return None;
        }
        let cancel = parent.map_or_else(CancellationToken::new, CancellationToken::child_token);
        let serial = inflight.next_serial;
        inflight.next_serial += 1;
        inflight.count += 1;
        inflight
            .by_id
            .entry(id.clone())
            .or_default()
            .push((serial, cancel.clone()));
        Some(Registration {
            inflight: Arc::clone(&self.inflight),
            id: id.clone(),
            serial,
            cancel,
        })
    }

    fn lock_inflight(&self) -> std::sync::MutexGuard<'_, Inflight> {
        self.inflight.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Builds an [`Endpoint`]: the method registry, notification handlers, middleware, limits.
#[derive(Debug)]
pub struct EndpointBuilder<L> {
    methods: Methods,
    notifications: NotificationHandlers,
    middleware: RpcServiceBuilder<L>,
    max_frame_bytes: usize,
    max_response_bytes: usize,
    max_inflight_requests: usize,
}

/// The default of [`EndpointBuilder::max_inflight_requests`].
pub const DEFAULT_MAX_INFLIGHT_REQUESTS: usize = 256;

impl EndpointBuilder<Identity> {
    /// Starts from a method registry (an `RpcModule` converts into `Methods`).
    pub fn new(methods: impl Into<Methods>) -> Self {
        EndpointBuilder {
            methods: methods.into(),
            notifications: NotificationHandlers::default(),
            middleware: RpcServiceBuilder::new(),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_response_bytes: usize::MAX,
            max_inflight_requests: DEFAULT_MAX_INFLIGHT_REQUESTS,
        }
    }
}

impl<L> EndpointBuilder<L> {
    /// Wraps dispatch in jsonrpsee middleware (logging, auth, limits...).
    pub fn middleware<T>(self, middleware: RpcServiceBuilder<T>) -> EndpointBuilder<T> {
        EndpointBuilder {
            methods: self.methods,
            notifications: self.notifications,
            middleware,
            max_frame_bytes: self.max_frame_bytes,
            max_response_bytes: self.max_response_bytes,
            max_inflight_requests: self.max_inflight_requests,
        }
    }

    /// Handles inbound notifications of `method`.
    pub fn on_notification<F, Fut>(mut self, method: impl Into<String>, handler: F) -> Self
    where
        F: Fn(InboundNotification) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notifications.insert(method, handler);
        self
    }

    /// Inbound frames longer than this are refused with `-32600` (default 4 MiB).
    pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
        self.max_frame_bytes = bytes;
        self
    }

    /// Responses longer than this are replaced by an error (default: unlimited).
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Requests of one [`Session`] served at once (default
    /// [`DEFAULT_MAX_INFLIGHT_REQUESTS`]). A request beyond it is answered at once with
    /// [`LIMIT_EXCEEDED`](crate::error_codes::LIMIT_EXCEEDED) (-32029), whose message
    /// names the limit, and the session keeps serving. A session is one connection
    /// (stdio, a duplex); over Streamable HTTP the server keeps one session per
    /// principal, so there the limit is per principal, across all its POSTs.
    pub fn max_inflight_requests(mut self, requests: usize) -> Self {
        self.max_inflight_requests = requests;
        self
    }

    /// The endpoint: the methods and notification handlers behind the middleware, with
    /// these limits.
    pub fn build(self) -> Arc<Endpoint<L::Service>>
    where
        L: tower::Layer<MethodsService>,
    {
        let root = MethodsService::new(self.methods, self.notifications, self.max_response_bytes);
        Arc::new(Endpoint {
            service: self.middleware.service(root),
            max_frame_bytes: self.max_frame_bytes,
            max_inflight_requests: self.max_inflight_requests,
        })
    }
}

/// One side of a JSON-RPC session, independent of any transport.
#[derive(Debug)]
pub struct Endpoint<S> {
    service: S,
    max_frame_bytes: usize,
    max_inflight_requests: usize,
}

/// Why a JSON array is refused: MCP has no batches (2025-06-18 removed them).
const BATCH_REFUSED: &str = "JSON-RPC batches are not supported: MCP sends one message per request";

/// The members of a frame, read without decoding their values.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// `Some` whenever the member is present, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Reads an id: a string or an integer. Anything else (null, a fraction, an object) is no id.
fn parse_id(raw: &RawValue) -> Option<RequestId> {
    serde_json::from_str::<RequestId>(raw.get()).ok()
}

/// A response frame and, when it is an error, its code (so a transport can choose its
/// status without parsing the frame again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The JSON-RPC response, as sent.
    pub frame: String,
    /// The error's code, when the response is an error.
    pub error_code: Option<i64>,
}

impl Reply {
    /// An error response to `id`.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Reply {
        let error_code = Some(error.code);
        Reply {
            frame: error_frame(id, error),
            error_code,
        }
    }
}

/// The JSON text of an error response.
pub fn error_frame(id: Option<RequestId>, error: ErrorObject) -> String {
    let resp = JsonRpcErrorResponse {
        jsonrpc: Version,
        id,
        error,
    };
    // An error response holds only strings, integers and JSON values: it always serializes.
    serde_json::to_string(&resp).unwrap_or_else(|_| {
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#
            .to_owned()
    })
}

impl<S> Endpoint<S>
where
    S: RpcServiceT<MethodResponse = MethodResponse, NotificationResponse = MethodResponse>
        + Send
        + Sync
        + 'static,
{
    /// Serves `conn` on a new task, returning the session's peer and the task. The task ends
    /// when the inbound side closes; requests still in flight are then cancelled and
    /// outbound requests still waiting fail with `Closed`.
    pub fn serve(self: &Arc<Self>, conn: Connection) -> (Peer, JoinHandle<()>) {
        self.serve_with(conn, Extensions::new())
    }

    /// [`serve`](Self::serve) with extensions that every request of the session sees.
    pub fn serve_with(
        self: &Arc<Self>,
        conn: Connection,
        extensions: Extensions,
    ) -> (Peer, JoinHandle<()>) {
        let peer = Peer::new(conn.sender);
        let session = Session::new(peer.clone(), extensions);
        let task = tokio::spawn(Arc::clone(self).run(session, conn.receiver));
        (peer, task)
    }

    /// [`serve_with`](Self::serve_with) for a transport whose outbound side outlives its
    /// inbound side (stdio: a client may write its requests, close its end and still read
    /// the answers). When the inbound side closes, the requests already read go on for up
    /// to `grace` and their answers are sent; those still running then are cancelled
    /// unanswered, and logged. Our own requests still waiting for an answer fail at once
    /// ([`PeerError::Closed`](super::PeerError::Closed)): none can arrive any more.
    pub fn serve_draining(
        self: &Arc<Self>,
        conn: Connection,
        extensions: Extensions,
        grace: Duration,
    ) -> (Peer, JoinHandle<()>) {
        let peer = Peer::new(conn.sender);
        let session = Session::new(peer.clone(), extensions);
        let task = tokio::spawn(Arc::clone(self).read_loop(session, conn.receiver, Some(grace)));
        (peer, task)
    }

    /// The read loop: one frame at a time; requests run concurrently on their own tasks,
    /// notifications and responses are handled in order. When the inbound side closes,
    /// the requests still in flight are cancelled.
    pub async fn run(self: Arc<Self>, session: Session, receiver: FrameReceiver) {
        self.read_loop(session, receiver, None).await
    }

    /// [`run`](Self::run); with `drain`, the requests in flight when the inbound side
    /// closes get that long to finish and send their answers (see
    /// [`serve_draining`](Self::serve_draining)).
    async fn read_loop(
        self: Arc<Self>,
        session: Session,
        mut receiver: FrameReceiver,
        drain: Option<Duration>,
    ) {
        // Every task that will send a frame (an answer, a refusal), so that a drain can
        // wait for them.
        let replies = TaskTracker::new();
        while let Some(item) = receiver.recv().await {
            let frame = match item {
                Ok(frame) => frame,
                Err(FrameError::TooLarge { limit }) => {
                    tracing::warn!(limit, "inbound frame too large; discarded");
                    self.spawn_reply(&replies, &session, error_frame(None, too_large(limit)));
                    continue;
                }
                Err(FrameError::NotUtf8) => {
                    self.spawn_reply(
                        &replies,
                        &session,
                        error_frame(
                            None,
                            ErrorObject::new(
                                error_codes::PARSE_ERROR,
                                "Parse error: frame is not valid UTF-8",
                            ),
                        ),
                    );
                    continue;
                }
                Err(FrameError::Io(e)) => {
                    tracing::warn!(error = %e, "transport failed; closing session");
                    break;
                }
            };
            if frame.len() > self.max_frame_bytes {
                tracing::warn!(
                    len = frame.len(),
                    limit = self.max_frame_bytes,
                    "inbound frame too large; discarded"
                );
                self.spawn_reply(
                    &replies,
                    &session,
                    error_frame(None, too_large(self.max_frame_bytes)),
                );
                continue;
            }
            match self.classify(&frame) {
                Ok(Incoming::Request(req)) => {
                    // In flight from now on, before the handler task is even scheduled: a
                    // `notifications/cancelled` on the very next frame must find it.
                    let Some(registration) =
                        session.register(&req.id, self.max_inflight_requests, None)
                    else {
                        tracing::warn!(id = %req.id, limit = self.max_inflight_requests, "too many requests in flight; refused");
                        self.spawn_reply(
                            &replies,
                            &session,
                            error_frame(Some(req.id), self.too_many()),
                        );
                        continue;
                    };
                    let this = Arc::clone(&self);
                    let session = session.clone();
                    replies.spawn(async move {
                        // Fired once the response is queued on the connection, ahead of
                        // anything sent after it (or when there is none).
                        let written = ReplyWritten::new();
                        let _fire = written.guard();
                        if let Some(reply) = this
                            .serve_registered(&session, req, registration, Some(written))
                            .await
                        {
                            let _ = session.peer.send_frame(reply.frame).await;
                        }
                    });
                }
                Ok(Incoming::Notification { method, params }) => {
                    self.handle_notification(&session, method, params).await;
                }
                Ok(Incoming::Response { id, outcome }) => {
                    self.handle_response(&session, id, outcome)
                }
                Err(rejected) => {
                    tracing::debug!(code = rejected.error.code, message = %rejected.error.message, "frame rejected");
                    if rejected.reply {
                        self.spawn_reply(
                            &replies,
                            &session,
                            error_frame(rejected.id, rejected.error),
                        );
                    }
                }
            }
        }
        replies.close();
        if let Some(grace) = drain {
            // Nothing arrives any more, so no answer to our own requests will: fail them
            // now, and a handler waiting on one answers with that instead of waiting out
            // the grace.
            session.peer.close();
            if !replies.is_empty() {
                tracing::debug!(
                    requests = session.inflight_count(),
                    "inbound side closed; finishing the requests already read"
                );
            }
            if tokio::time::timeout(grace, replies.wait()).await.is_err() {
                let ids: Vec<String> = session
                    .inflight_ids()
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                tracing::warn!(
                    grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
                    unanswered = ids.len(),
                    ids = %ids.join(", "),
                    "inbound side closed and the grace ran out: the requests still running are cancelled unanswered"
                );
            }
        }
        session.cancel_all();
        session.peer.close();
    }

    fn spawn_reply(&self, replies: &TaskTracker, session: &Session, frame: String) {
        let peer = session.peer.clone();
        replies.spawn(async move {
            let _ = peer.send_frame(frame).await;
        });
    }

    /// Classifies one frame, or says how to refuse it: invalid JSON is `-32700` with id
    /// `null`; JSON that is not a JSON-RPC 2.0 message is `-32600`.
    pub fn classify(&self, frame: &str) -> Result<Incoming, Box<Rejected>> {
        // Checked before the probe: serde reads a struct from an array too, so a batch
        // would otherwise be refused for its first element not being "2.0".
        if frame.trim_start().starts_with('[') {
            return Err(match serde_json::from_str::<serde::de::IgnoredAny>(frame) {
                Ok(_) => Rejected::new(None, error_codes::INVALID_REQUEST, BATCH_REFUSED),
                Err(e) => {
                    Rejected::new(None, error_codes::PARSE_ERROR, format!("Parse error: {e}"))
                }
            });
        }
        let probe: Probe<'_> = match serde_json::from_str(frame) {
            Ok(p) => p,
            Err(e) => {
                return Err(match serde_json::from_str::<serde::de::IgnoredAny>(frame) {
                    Ok(_) => Rejected::new(
                        None,
                        error_codes::INVALID_REQUEST,
                        format!("Invalid request: not a JSON-RPC 2.0 message ({e})"),
                    ),
                    Err(e) => {
                        Rejected::new(None, error_codes::PARSE_ERROR, format!("Parse error: {e}"))
                    }
                });
            }
        };
        let id = probe.id.and_then(parse_id);
        if probe.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
            // Answer anything but a (malformed) response: JSON-RPC never answers a response.
            let reply = probe.method.is_some() || probe.result.is_none() && probe.error.is_none();
            return Err(Rejected::new(
                id,
                error_codes::INVALID_REQUEST,
                "Invalid request: `jsonrpc` must be \"2.0\"",
            )
            .with_reply(reply));
        }
        if let Some(method) = probe.method {
            let Ok(method) = serde_json::from_str::<Cow<'_, str>>(method.get()) else {
                return Err(Rejected::new(
                    id,
                    error_codes::INVALID_REQUEST,
                    "Invalid request: `method` must be a string",
                ));
            };
            let params = probe.params.map(ToOwned::to_owned);
            return match probe.id {
                None => Ok(Incoming::Notification {
                    method: method.into_owned(),
                    params,
                }),
                Some(_) => match id {
                    Some(id) => Ok(Incoming::Request(InboundRequest {
                        id,
                        method: method.into_owned(),
                        params,
                    })),
                    None => Err(Rejected::new(
                        None,
                        error_codes::INVALID_REQUEST,
                        "Invalid request: `id` must be a string or an integer",
                    )),
                },
            };
        }
        let not_a_message = |reason: &str| {
            Rejected::new(
                None,
                error_codes::INVALID_REQUEST,
                format!("Invalid response: {reason}"),
            )
            .with_reply(false)
        };
        if probe.result.is_none() && probe.error.is_none() {
            return Err(Rejected::new(
                id,
                error_codes::INVALID_REQUEST,
                "Invalid request: need `method`, or exactly one of `result` and `error`",
            ));
        }
        let Some(id) = id else {
            return Err(not_a_message("no usable `id`"));
        };
        match (probe.result, probe.error) {
            (Some(result), None) => Ok(Incoming::Response {
                id,
                outcome: Ok(result.to_owned()),
            }),
            (None, Some(error)) => {
                let error = serde_json::from_str::<ErrorObject>(error.get()).unwrap_or_else(|e| {
                    ErrorObject::new(
                        error_codes::INTERNAL_ERROR,
                        format!("peer sent a malformed error object: {e}"),
                    )
                });
                Ok(Incoming::Response {
                    id,
                    outcome: Err(error),
                })
            }
            _ => Err(not_a_message("both `result` and `error`")),
        }
    }

    /// Runs one request through the middleware into its handler and returns the response
    /// frame; `None` when the request was cancelled (a cancelled request gets no response).
    pub async fn handle_request(&self, session: &Session, req: InboundRequest) -> Option<Reply> {
        self.handle_request_inner(session, req, None).await
    }

    /// [`handle_request`](Self::handle_request) for a request that `stop` also cancels:
    /// a transport that serves each request on its own stream (Streamable HTTP) cancels
    /// exactly that request when its stream goes away, whatever other request shares
    /// its id.
    pub async fn handle_request_until(
        &self,
        session: &Session,
        req: InboundRequest,
        stop: &CancellationToken,
    ) -> Option<Reply> {
        self.handle_request_inner(session, req, Some(stop)).await
    }

    async fn handle_request_inner(
        &self,
        session: &Session,
        req: InboundRequest,
        stop: Option<&CancellationToken>,
    ) -> Option<Reply> {
        let Some(registration) = session.register(&req.id, self.max_inflight_requests, stop) else {
            tracing::warn!(id = %req.id, limit = self.max_inflight_requests, "too many requests in flight; refused");
            return Some(Reply::error(Some(req.id), self.too_many()));
        };
        self.serve_registered(session, req, registration, None)
            .await
    }

    fn too_many(&self) -> ErrorObject {
        ErrorObject::new(
            error_codes::LIMIT_EXCEEDED,
            format!(
                "Too many requests in flight: the limit is {} per session (max_inflight_requests)",
                self.max_inflight_requests
            ),
        )
    }

    /// [`handle_request`](Self::handle_request) for a request already registered in
    /// flight (see [`Session::register`]).
    async fn serve_registered(
        &self,
        session: &Session,
        req: InboundRequest,
        registration: Registration,
        written: Option<ReplyWritten>,
    ) -> Option<Reply> {
        let cancel = registration.cancel.clone();
        let InboundRequest { id, method, params } = req;

        // jsonrpsee ids are unsigned; a negative integer id gets a stand-in, and the
        // response is re-addressed to the original id below.
        let (jsonrpsee_id, readdress) = match &id {
            RequestId::Number(n) if *n >= 0 => (Id::Number(*n as u64), false),
            RequestId::Number(_) => (Id::Number(0), true),
            RequestId::String(s) => (Id::Str(Cow::Owned(s.clone())), false),
        };
        let span = tracing::debug_span!("request", %id, method = %method);
        let mut request = Request::owned(method, params, jsonrpsee_id);
        request.extensions = session.extensions.clone();
        request.extensions.insert(session.peer.clone());
        request.extensions.insert(RequestContext {
            id: id.clone(),
            cancel: cancel.clone(),
        });
        if let Some(written) = written {
            request.extensions.insert(written);
        }

        let call = AssertUnwindSafe(self.service.call(request)).catch_unwind();
        let outcome = tracing::Instrument::instrument(
            async {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => None,
                    out = call => Some(out),
                }
            },
            span,
        )
        .await;
        drop(registration);
        if cancel.is_cancelled() {
            tracing::debug!(%id, "request cancelled; no response sent");
            return None;
        }
        match outcome? {
            Ok(response) => {
                let error_code = response.as_error_code().map(i64::from);
                let json: Box<str> = response.into_json().into();
                let frame = if readdress {
                    readdress_response(&json, id)
                } else {
                    json.into_string()
                };
                Some(Reply { frame, error_code })
            }
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(%id, panic = %what, "request handler panicked");
                Some(Reply::error(
                    Some(id),
                    ErrorObject::new(
                        error_codes::INTERNAL_ERROR,
                        "Internal error: the handler panicked",
                    ),
                ))
            }
        }
    }

    /// Handles one notification: `notifications/cancelled` cancels the request it names;
    /// every notification then goes through the middleware to its handler.
    pub async fn handle_notification(
        &self,
        session: &Session,
        method: String,
        params: Option<Box<RawValue>>,
    ) {
        if method == super::CANCELLED_METHOD {
            #[derive(Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct Cancelled {
                request_id: RequestId,
            }
            match params
                .as_deref()
                .map(|p| serde_json::from_str::<Cancelled>(p.get()))
            {
                Some(Ok(c)) => {
                    if !session.cancel(&c.request_id) {
                        tracing::debug!(id = %c.request_id, "cancellation for a request not in flight; ignored");
                    }
                }
                _ => tracing::debug!("malformed notifications/cancelled; ignored"),
            }
        }
        let mut n =
            jsonrpsee::core::middleware::Notification::new(method.into(), params.map(Cow::Owned));
        *n.extensions_mut() = session.extensions.clone();
        n.extensions_mut().insert(session.peer.clone());
        let _ = AssertUnwindSafe(self.service.notification(n))
            .catch_unwind()
            .await;
    }

    /// Hands a response to the peer; a response nobody waits for is logged and dropped.
    pub fn handle_response(
        &self,
        session: &Session,
        id: RequestId,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        if !session.peer.complete(&id, outcome) {
            tracing::warn!(%id, "response for a request nobody is waiting for; dropped");
        }
    }
}

fn too_large(limit: usize) -> ErrorObject {
    ErrorObject::new(
        error_codes::INVALID_REQUEST,
        format!("Invalid request: frame exceeds the limit of {limit} bytes"),
    )
}

/// Rewrites the id of a serialized response.
fn readdress_response(json: &str, id: RequestId) -> String {
    #[derive(Deserialize)]
    struct Parts<'a> {
        #[serde(borrow)]
        result: Option<&'a RawValue>,
        #[serde(borrow)]
        error: Option<&'a RawValue>,
    }
    #[derive(serde::Serialize)]
    struct Out<'a> {
        jsonrpc: Version,
        id: RequestId,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'a RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a RawValue>,
    }
    match serde_json::from_str::<Parts<'_>>(json) {
        Ok(p) => serde_json::to_string(&Out {
            jsonrpc: Version,
            id: id.clone(),
            result: p.result,
            error: p.error,
        })
        .unwrap_or_else(|_| {
            error_frame(
                Some(id),
                ErrorObject::new(error_codes::INTERNAL_ERROR, "Internal error"),
            )
        }),
        Err(_) => error_frame(
            Some(id),
            ErrorObject::new(error_codes::INTERNAL_ERROR, "Internal error"),
        ),
    }
}
