//! [`Endpoint`]: one side of a JSON-RPC session, serving it. Its read loop takes each
//! inbound frame as [`frames`] classifies it: a request is registered in the
//! [`Session`]'s in-flight registry and run through the middleware stack into the method
//! registry on its own task; a response resolves the [`Peer`]'s pending request; a
//! `notifications/cancelled` cancels the [`CancellationToken`] of the request it names.
//! [`EndpointBuilder`] sets the methods, middleware and limits.
//!
//! Invariant: a cancelled request gets no response; a handler's panic is an internal
//! error, never the end of the session; nothing here knows the transport beyond its
//! frame channels.

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
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

use super::frames::{
    self, InboundRequest, Incoming, Rejected, Reply, error_frame, not_utf8, readdress_response,
    too_large,
};
use super::peer::Peer;
use super::service::{InboundNotification, MethodsService, NotificationHandlers};
use super::session::{Registration, Session};
use super::transport::{Connection, DEFAULT_MAX_FRAME_BYTES, FrameError, FrameReceiver};
use crate::error_codes;
use crate::jsonrpc::{ErrorObject, RequestId};

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
                    self.spawn_reply(&replies, &session, error_frame(None, not_utf8()));
                    continue;
                }
                Err(FrameError::Io(e)) => {
                    tracing::warn!(error = %e, "transport failed; closing session");
                    break;
                }
            };
            if self.refuse_too_large(&replies, &session, &frame) {
                continue;
            }
            self.take_frame(&replies, &session, &frame).await;
        }
        replies.close();
        if let Some(grace) = drain {
            finish_in_flight(&session, &replies, grace).await;
        }
        session.cancel_all();
        session.peer.close();
    }

    /// Refuses a frame longer than the endpoint's limit
    /// ([`max_frame_bytes`](EndpointBuilder::max_frame_bytes)); true when it did.
    fn refuse_too_large(&self, replies: &TaskTracker, session: &Session, frame: &str) -> bool {
        if frame.len() <= self.max_frame_bytes {
            return false;
        }
        tracing::warn!(
            len = frame.len(),
            limit = self.max_frame_bytes,
            "inbound frame too large; discarded"
        );
        self.spawn_reply(
            replies,
            session,
            error_frame(None, too_large(self.max_frame_bytes)),
        );
        true
    }

    /// Takes one frame as [`classify`](Self::classify) says: a request is served on its
    /// own task, a notification or a response is handled now, a bad frame is refused.
    async fn take_frame(self: &Arc<Self>, replies: &TaskTracker, session: &Session, frame: &str) {
        match self.classify(frame) {
            Ok(Incoming::Request(req)) => self.spawn_request(replies, session, req),
            Ok(Incoming::Notification { method, params }) => {
                self.handle_notification(session, method, params).await;
            }
            Ok(Incoming::Response { id, outcome }) => self.handle_response(session, id, outcome),
            Err(rejected) => {
                tracing::debug!(code = rejected.error.code, message = %rejected.error.message, "frame rejected");
                if rejected.reply {
                    self.spawn_reply(replies, session, error_frame(rejected.id, rejected.error));
                }
            }
        }
    }

    /// Registers a request in flight and serves it on its own task, which sends the
    /// answer; refuses it when too many are in flight.
    fn spawn_request(
        self: &Arc<Self>,
        replies: &TaskTracker,
        session: &Session,
        req: InboundRequest,
    ) {
        // In flight from now on, before the handler task is even scheduled: a
        // `notifications/cancelled` on the very next frame must find it.
        let Some(registration) = session.register(&req.id, self.max_inflight_requests, None) else {
            tracing::warn!(id = %req.id, limit = self.max_inflight_requests, "too many requests in flight; refused");
            self.spawn_reply(replies, session, error_frame(Some(req.id), self.too_many()));
            return;
        };
        let this = Arc::clone(self);
        let peer = session.peer.clone();
        let extensions = session.extensions.clone();
        replies.spawn(async move {
            // Fired once the response is queued on the connection, ahead of
            // anything sent after it (or when there is none).
            let written = ReplyWritten::new();
            let _fire = written.guard();
            let reply = this
                .serve_registered(peer.clone(), extensions, req, registration, Some(written))
                .await;
            if let Some(reply) = reply {
                let _ = peer.send_frame(reply.frame).await;
            }
        });
    }

    /// Sends `frame` to the peer on a task of `replies`.
    fn spawn_reply(&self, replies: &TaskTracker, session: &Session, frame: String) {
        let peer = session.peer.clone();
        replies.spawn(async move {
            let _ = peer.send_frame(frame).await;
        });
    }

    /// Classifies one frame, or says how to refuse it: invalid JSON is `-32700` with id
    /// `null`; JSON that is not a JSON-RPC 2.0 message is `-32600`.
    pub fn classify(&self, frame: &str) -> Result<Incoming, Box<Rejected>> {
        frames::classify(frame)
    }

    /// Runs one request through the middleware into its handler and returns the response
    /// frame; `None` when the request was cancelled (a cancelled request gets no response).
    /// `session` is this request's own copy (see [`Session::with_peer`]): the handler sees
    /// its extensions, moved, not copied again.
    pub async fn handle_request(&self, session: Session, req: InboundRequest) -> Option<Reply> {
        self.handle_request_inner(session, req, None).await
    }

    /// [`handle_request`](Self::handle_request) for a request that `stop` also cancels:
    /// a transport that serves each request on its own stream (Streamable HTTP) cancels
    /// exactly that request when its stream goes away, whatever other request shares
    /// its id.
    pub async fn handle_request_until(
        &self,
        session: Session,
        req: InboundRequest,
        stop: &CancellationToken,
    ) -> Option<Reply> {
        self.handle_request_inner(session, req, Some(stop)).await
    }

    async fn handle_request_inner(
        &self,
        session: Session,
        req: InboundRequest,
        stop: Option<&CancellationToken>,
    ) -> Option<Reply> {
        let Some(registration) = session.register(&req.id, self.max_inflight_requests, stop) else {
            tracing::warn!(id = %req.id, limit = self.max_inflight_requests, "too many requests in flight; refused");
            return Some(Reply::error(Some(req.id), self.too_many()));
        };
        let Session {
            peer, extensions, ..
        } = session;
        self.serve_registered(peer, extensions, req, registration, None)
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
    /// flight (see [`Session::register`]), answering through `peer` and seeing
    /// `extensions` (its session's, this request's own copy).
    async fn serve_registered(
        &self,
        peer: Peer,
        extensions: Extensions,
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
        request.extensions = extensions;
        request.extensions.insert(peer);
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

/// Once the inbound side closed: fails our own requests still waiting, then gives the
/// requests already read up to `grace` to send their answers (`replies`, closed), and
/// logs those still running after it.
async fn finish_in_flight(session: &Session, replies: &TaskTracker, grace: Duration) {
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
