//! [`Peer`]: the outbound half of a session. It sends requests and notifications to the
//! other side and matches responses to the requests waiting for them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::transport::{Closed, FrameSender};
use crate::error_codes;
use crate::jsonrpc::{ErrorObject, RequestId, Version};
use crate::method::{Notification, Request, serializes_as_none};

/// Why an outbound request did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The other side answered with a JSON-RPC error.
    #[error("peer answered with an error: {0}")]
    Rpc(ErrorObject),
    /// The connection closed before the answer arrived.
    #[error("connection closed")]
    Closed,
    /// Our params could not be serialized, or the peer's result did not have the expected shape.
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The transport could not carry the exchange (an HTTP request refused or answered
    /// without a JSON-RPC body, a stream that broke): no answer will come. Reported by the
    /// transport's owner through [`Peer::fail`], never read from a frame.
    #[error("transport: {0}")]
    Transport(String),
    /// The transport could not carry the exchange, typed: how it failed (no connection,
    /// cut before the answer, an HTTP status without a JSON-RPC answer), the HTTP status
    /// and `Retry-After` when a response came, so that a caller decides whether sending
    /// again is safe and useful without reading the text. Reported like
    /// [`Transport`](PeerError::Transport), through [`Peer::fail`], never read from a frame.
    #[error("transport: {0}")]
    Exchange(TransportFailure),
}

/// How an exchange failed, as far as its transport could tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// No connection was made (refused, no route, DNS): the request never left.
    Unreachable,
    /// The request was sent (or may have been) and the exchange ended before its answer:
    /// a connection reset or closed, a response body or event stream cut or ended early.
    /// The request may have reached the other side.
    Interrupted,
    /// A response came without a JSON-RPC answer to the request (an HTTP error page, a
    /// balancer's 502, a 429): see [`TransportFailure::status`].
    Status,
    /// Anything else (a login that failed, a request refused locally).
    Other,
}

/// A failed exchange ([`PeerError::Exchange`]): what its text says, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportFailure {
    /// What happened, for people.
    pub message: String,
    /// How it failed.
    pub kind: FailureKind,
    /// The HTTP status of the response, when one came.
    pub status: Option<u16>,
    /// The response's `Retry-After` (seconds, or an HTTP date turned into the time left
    /// until it), when it had one that parsed.
    pub retry_after: Option<std::time::Duration>,
}

impl TransportFailure {
    /// A failure of `kind` said by `message`, without an HTTP response.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> TransportFailure {
        TransportFailure {
            message: message.into(),
            kind,
            status: None,
            retry_after: None,
        }
    }

    /// This failure, with the HTTP status and `Retry-After` of the response that came.
    pub fn with_status(
        mut self,
        status: u16,
        retry_after: Option<std::time::Duration>,
    ) -> TransportFailure {
        self.status = Some(status);
        self.retry_after = retry_after;
        self
    }
}

impl std::fmt::Display for TransportFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The text, so that code reading the message (`contains`, `starts_with`) keeps working.
impl std::ops::Deref for TransportFailure {
    type Target = str;

    fn deref(&self) -> &str {
        &self.message
    }
}

/// A failure known only by its text ([`FailureKind::Other`]).
impl From<String> for TransportFailure {
    fn from(message: String) -> TransportFailure {
        TransportFailure::new(FailureKind::Other, message)
    }
}

impl From<&str> for TransportFailure {
    fn from(message: &str) -> TransportFailure {
        TransportFailure::new(FailureKind::Other, message)
    }
}

impl From<Closed> for PeerError {
    fn from(_: Closed) -> Self {
        PeerError::Closed
    }
}

type Outcome = Result<Box<RawValue>, PeerError>;

/// State shared by every view of one session: the pending map, the id counter and how
/// ids are spelled.
#[derive(Debug, Default)]
struct Shared {
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Outcome>>>,
    next_id: AtomicI64,
    /// When set, minted ids are the strings `"{prefix}{n}"` instead of the numbers `n`.
    id_prefix: Option<String>,
}

/// A handle for talking to the other side of a session. Cheap to clone.
///
/// Outbound ids are minted here: integers 1, 2, 3, ..., or strings behind a prefix of
/// the owner's choosing ([`with_prefixed_ids`](Peer::with_prefixed_ids): a secret random
/// one makes them unguessable). The client's and the server's id spaces are separate: a
/// response is matched by id against this side's own requests only, in the pending map
/// of this peer (and of its [`with_sender`](Peer::with_sender) views) alone.
#[derive(Debug, Clone)]
pub struct Peer {
    shared: Arc<Shared>,
    out: FrameSender,
}

#[derive(Serialize)]
struct RequestOut<'a> {
    jsonrpc: Version,
    id: &'a RequestId,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct NotificationOut<'a> {
    jsonrpc: Version,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a RawValue>,
}

/// Removes the pending entry if the request future is dropped before its answer, and
/// tells the other side to stop unless the request is [kept](Peer::request_raw_keepable).
struct PendingGuard<'a> {
    peer: &'a Peer,
    id: RequestId,
    sent: bool,
    done: bool,
    keep: Option<&'a AtomicBool>,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let removed = self.peer.take_pending(&self.id).is_some();
        if removed && self.sent && !self.keep.is_some_and(|k| k.load(Ordering::SeqCst)) {
            let params = serde_json::json!({ "requestId": &self.id, "reason": "request dropped by the caller" });
            if let Ok(params) = serde_json::value::to_raw_value(&params) {
                let _ = self
                    .peer
                    .notify_frame(super::CANCELLED_METHOD, Some(&params))
                    .map(|f| self.peer.out.try_send(f));
            }
        }
    }
}

impl Peer {
    /// A peer that writes to `out`; its requests are numbered 1, 2, 3, ...
    pub fn new(out: FrameSender) -> Peer {
        Peer::with_shared(out, None)
    }

    /// A peer that writes to `out` and whose requests have the ids `"{prefix}1"`,
    /// `"{prefix}2"`, ... With a secret random prefix (say 128 bits from the OS), nobody
    /// but the party the requests go to learns an id, so nobody else can answer one: what
    /// a server whose transport lets several callers post responses wants (Streamable
    /// HTTP). Ids given to [`request_raw_as`](Self::request_raw_as) are used as given.
    pub fn with_prefixed_ids(out: FrameSender, prefix: impl Into<String>) -> Peer {
        Peer::with_shared(out, Some(prefix.into()))
    }

    fn with_shared(out: FrameSender, id_prefix: Option<String>) -> Peer {
        Peer {
            shared: Arc::new(Shared {
                next_id: AtomicI64::new(1),
                id_prefix,
                ..Shared::default()
            }),
            out,
        }
    }

    /// The same session (pending map, id counter) writing to another sender: used where each
    /// inbound request has its own response stream (Streamable HTTP).
    pub fn with_sender(&self, out: FrameSender) -> Peer {
        Peer {
            shared: Arc::clone(&self.shared),
            out,
        }
    }

    /// The sender this view writes to.
    pub fn sender(&self) -> &FrameSender {
        &self.out
    }

    /// Sends a typed request and waits for its typed result.
    ///
    /// Dropping the returned future before it resolves sends `notifications/cancelled`.
    pub async fn request<M: Request>(&self, params: &M::Params) -> Result<M::Result, PeerError> {
        let raw = if serializes_as_none(params) {
            None
        } else {
            Some(serde_json::value::to_raw_value(params)?)
        };
        let result = self.request_raw(M::METHOD, raw.as_deref()).await?;
        Ok(serde_json::from_str(result.get())?)
    }

    /// Sends a typed notification.
    pub async fn notify<N: Notification>(&self, params: &N::Params) -> Result<(), PeerError> {
        let raw = if serializes_as_none(params) {
            None
        } else {
            Some(serde_json::value::to_raw_value(params)?)
        };
        self.notify_raw(N::METHOD, raw.as_deref()).await
    }

    /// Sends a request with raw params and waits for the raw result.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, PeerError> {
        self.request_raw_as(self.mint_id(), method, params).await
    }

    /// [`request_raw`](Self::request_raw), except that dropping the future before its
    /// answer once `keep` is set only forgets the request: no `notifications/cancelled`,
    /// the other side goes on with it, its late answer is dropped. For a request a repeat
    /// finds again (a create the other side deduplicates by key) given up on after a
    /// timeout, where a cancel would end the work the repeat is after.
    pub async fn request_raw_keepable(
        &self,
        method: &str,
        params: Option<&RawValue>,
        keep: &AtomicBool,
    ) -> Result<Box<RawValue>, PeerError> {
        self.send_request(self.mint_id(), method, params, Some(keep))
            .await
    }

    /// The id of this session's next request: the next number, behind the prefix if the
    /// peer has one.
    fn mint_id(&self) -> RequestId {
        let n = self.next_id();
        match &self.shared.id_prefix {
            Some(prefix) => RequestId::String(format!("{prefix}{n}")),
            None => RequestId::Number(n),
        }
    }

    /// A number no other request of this session got from [`next_id`](Self::next_id)
    /// (the counter [`request_raw`](Self::request_raw) uses).
    pub fn next_id(&self) -> i64 {
        self.shared.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a request under an id of the caller's choosing (one that says what the
    /// request is about, so that whoever receives the answer can act on it; made unique
    /// with [`next_id`](Self::next_id)) and waits for the raw result. An id already
    /// waiting for its answer is refused ([`PeerError::Transport`]), nothing sent.
    pub async fn request_raw_as(
        &self,
        id: RequestId,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, PeerError> {
        self.send_request(id, method, params, None).await
    }

    /// Sends a request under `id` and waits for its answer; dropped before it, the request
    /// is cancelled unless `keep` is set.
    async fn send_request(
        &self,
        id: RequestId,
        method: &str,
        params: Option<&RawValue>,
        keep: Option<&AtomicBool>,
    ) -> Result<Box<RawValue>, PeerError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.lock_pending();
            if pending.contains_key(&id) {
                return Err(PeerError::Transport(format!(
                    "a request with id {id} is already waiting for its answer"
                )));
            }
            pending.insert(id.clone(), tx);
        }
        let mut guard = PendingGuard {
            peer: self,
            id: id.clone(),
            sent: false,
            done: false,
            keep,
        };
        let frame = serde_json::to_string(&RequestOut {
            jsonrpc: Version,
            id: &id,
            method,
            params,
        })?;
        self.out.send(frame).await?;
        guard.sent = true;
        let outcome = rx.await.map_err(|_| PeerError::Closed);
        guard.done = true;
        outcome?
    }

    /// Sends a notification with raw params.
    pub async fn notify_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), PeerError> {
        let frame = self.notify_frame(method, params)?;
        Ok(self.out.send(frame).await?)
    }

    /// Sends an already serialized frame as it is.
    pub async fn send_frame(&self, frame: String) -> Result<(), PeerError> {
        Ok(self.out.send(frame).await?)
    }

    fn notify_frame(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<String, serde_json::Error> {
        serde_json::to_string(&NotificationOut {
            jsonrpc: Version,
            method,
            params,
        })
    }

    /// Hands a response to the request waiting for it. Returns `false` when nobody waits for
    /// that id (unknown, already answered, or given up on); the caller logs and drops it.
    pub fn complete(&self, id: &RequestId, outcome: Result<Box<RawValue>, ErrorObject>) -> bool {
        self.resolve(id, outcome.map_err(PeerError::Rpc))
    }

    /// Ends the request waiting under `id` with `error` instead of an answer: how a
    /// transport that knows an exchange failed (see [`PeerError::Transport`]) releases its
    /// caller. Returns `false` when nobody waits for that id.
    pub fn fail(&self, id: &RequestId, error: PeerError) -> bool {
        self.resolve(id, Err(error))
    }

    fn resolve(&self, id: &RequestId, outcome: Outcome) -> bool {
        match self.take_pending(id) {
            Some(tx) => {
                let _ = tx.send(outcome);
                true
            }
            None => false,
        }
    }

    /// Fails every request still waiting, with [`PeerError::Closed`].
    pub fn close(&self) {
        self.lock_pending().clear();
    }

    /// How many outbound requests wait for an answer.
    pub fn pending_count(&self) -> usize {
        self.lock_pending().len()
    }

    fn take_pending(&self, id: &RequestId) -> Option<oneshot::Sender<Outcome>> {
        self.lock_pending().remove(id)
    }

    fn lock_pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<RequestId, oneshot::Sender<Outcome>>> {
        // A poisoned lock only means another thread panicked mid-insert/remove of a map
        // entry; the map itself is still consistent.
        self.shared
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// Maps a peer error to the JSON-RPC error a handler should answer with when it cannot go on.
impl From<PeerError> for ErrorObject {
    fn from(e: PeerError) -> Self {
        match e {
            PeerError::Rpc(e) => e,
            PeerError::Closed => {
                ErrorObject::new(error_codes::INTERNAL_ERROR, "connection to the peer closed")
            }
            PeerError::Json(e) => ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                format!("invalid JSON from peer: {e}"),
            ),
            PeerError::Transport(e) => ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                format!("transport to the peer failed: {e}"),
            ),
            PeerError::Exchange(e) => ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                format!("transport to the peer failed: {e}"),
            ),
        }
    }
}

/// Decodes a raw result into `T`.
pub fn decode<T: DeserializeOwned>(raw: &RawValue) -> Result<T, PeerError> {
    Ok(serde_json::from_str(raw.get())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fail_ends_the_waiting_request_with_that_error() {
        let (out, mut sent) = FrameSender::channel(4);
        let peer = Peer::new(out);
        let waiting = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request_raw("tools/call", None).await }
        });
        let frame = sent.recv().await.and_then(Result::ok).unwrap_or_default();
        let frame: serde_json::Value = serde_json::from_str(&frame).unwrap_or_default();
        let id: RequestId =
            serde_json::from_value(frame["id"].clone()).unwrap_or(RequestId::Number(0));
        assert!(peer.fail(&id, PeerError::Transport("HTTP 502".into())));
        let out = waiting.await.ok();
        assert!(
            matches!(&out, Some(Err(PeerError::Transport(m))) if m == "HTTP 502"),
            "{out:?}"
        );
        // Nobody waits under that id any more.
        assert!(!peer.fail(&id, PeerError::Closed));
        assert_eq!(peer.pending_count(), 0);
    }

    #[tokio::test]
    async fn a_typed_failure_reaches_the_request_as_it_was_told() {
        let (out, mut sent) = FrameSender::channel(4);
        let peer = Peer::new(out);
        let waiting = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request_raw("tools/call", None).await }
        });
        let frame = sent.recv().await.and_then(Result::ok).unwrap_or_default();
        let frame: serde_json::Value = serde_json::from_str(&frame).unwrap_or_default();
        let id: RequestId =
            serde_json::from_value(frame["id"].clone()).unwrap_or(RequestId::Number(0));
        let failure = TransportFailure::new(FailureKind::Status, "HTTP 429: slow down")
            .with_status(429, Some(std::time::Duration::from_secs(2)));
        assert!(peer.fail(&id, PeerError::Exchange(failure.clone())));
        match waiting.await.ok() {
            Some(Err(PeerError::Exchange(got))) => {
                assert_eq!(got, failure);
                assert!(got.contains("429"), "reads as its text");
                assert_eq!(got.to_string(), "HTTP 429: slow down");
            }
            other => panic!("expected the typed failure, got {other:?}"),
        }
        let text: TransportFailure = "no route".into();
        assert_eq!((text.kind, text.status), (FailureKind::Other, None));
    }

    /// The id of the first request `peer` sends, and the task waiting for its answer.
    async fn first_request(
        peer: &Peer,
        sent: &mut crate::engine::FrameReceiver,
    ) -> (
        RequestId,
        tokio::task::JoinHandle<Result<Box<RawValue>, PeerError>>,
    ) {
        let waiting = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request_raw("elicitation/create", None).await }
        });
        let frame = sent.recv().await.and_then(Result::ok).unwrap_or_default();
        let frame: serde_json::Value = serde_json::from_str(&frame).unwrap_or_default();
        let id = serde_json::from_value(frame["id"].clone()).unwrap_or(RequestId::Number(0));
        (id, waiting)
    }

    #[tokio::test]
    async fn prefixed_ids_are_strings_behind_the_prefix() {
        let (out, mut sent) = FrameSender::channel(4);
        let peer = Peer::with_prefixed_ids(out, "secret.");
        let (id, waiting) = first_request(&peer, &mut sent).await;
        assert_eq!(id, RequestId::String("secret.1".into()));
        // The bare number answers nothing.
        let answer = serde_json::value::to_raw_value(&true).unwrap_or_default();
        assert!(!peer.complete(&RequestId::Number(1), Ok(answer.clone())));
        assert!(peer.complete(&id, Ok(answer)));
        let out = waiting.await.ok();
        assert!(matches!(&out, Some(Ok(v)) if v.get() == "true"), "{out:?}");
    }

    #[tokio::test]
    async fn another_peer_cannot_complete_a_request() {
        let (out, mut sent) = FrameSender::channel(4);
        let asking = Peer::new(out.clone());
        let other = Peer::new(out);
        let (id, waiting) = first_request(&asking, &mut sent).await;
        let answer = serde_json::value::to_raw_value(&true).unwrap_or_default();
        assert!(!other.complete(&id, Ok(answer.clone())), "not its request");
        assert_eq!(
            asking.pending_count(),
            1,
            "still waiting for its own answer"
        );
        assert!(
            asking
                .with_sender(other.sender().clone())
                .complete(&id, Ok(answer))
        );
        assert!(matches!(waiting.await.ok(), Some(Ok(_))));
    }

    /// Dropping a request before its answer cancels it, unless it was kept: forgotten.
    #[tokio::test]
    async fn a_dropped_request_is_cancelled_unless_kept() {
        for kept in [false, true] {
            let (out, mut sent) = FrameSender::channel(4);
            let peer = Peer::new(out);
            let asking = peer.clone();
            let keep = Arc::new(AtomicBool::new(false));
            let waiting = tokio::spawn({
                let keep = Arc::clone(&keep);
                async move { asking.request_raw_keepable("tools/call", None, &keep).await }
            });
            let mut next = async || -> serde_json::Value {
                let frame = sent.recv().await.and_then(Result::ok).unwrap_or_default();
                serde_json::from_str(&frame).unwrap_or_default()
            };
            let request = next().await;
            keep.store(kept, Ordering::SeqCst);
            waiting.abort();
            assert!(waiting.await.is_err_and(|e| e.is_cancelled()));
            assert_eq!(peer.pending_count(), 0, "forgotten either way");
            drop(peer); // every sender gone: what came after the request, then the end
            let after = next().await;
            let expected = match kept {
                false => serde_json::json!(["notifications/cancelled", request["id"]]),
                true => serde_json::json!([null, null]), // nothing after the request
            };
            let got = serde_json::json!([after["method"], after["params"]["requestId"]]);
            assert_eq!(got, expected, "{after}");
        }
    }
}
