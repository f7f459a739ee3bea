//! Resumable event streams of MCP 2025-11-25 sessions (SEP-1699): a POST's stream and
//! the standalone GET stream, each event with an id (`replay.rs`), each stream started by
//! a priming event (an id, `retry`, empty data), and `GET` with `Last-Event-ID` reading a
//! stream on from there.
//!
//! A POST's handler writes into a pump that keeps every frame in the session's
//! [`Replay`]; the connection only reads it. So a connection that drops loses nothing:
//! the request goes on (disconnection is not cancellation, says the spec), and its later
//! events, its response included, wait for the client to resume. A `tools/call` whose
//! stream stays without a connection for [`HttpConfig::sse_resume_window`] is cancelled;
//! a `tasks/result` at once (its result stays in the store, and its questions are asked
//! on the next stream).
//!
//! A `Last-Event-ID` that is not an id this server writes is 400; one that names no
//! stream this session holds (another session's, made up, or no longer kept) is 400 as
//! well, the same for each, so nothing about other sessions shows. On a shared store
//! (sessions any instance serves) such an id may name a stream of another instance, one
//! that died or that the balancer did not send the client back to: the client gets a
//! new standalone stream of its session instead (nothing replayed; the statuses of
//! its tasks unfinished or changed in the last minute sent again by the watcher), so
//! status notifications and input requests reach it again. A stream that has ended
//! and whose events the client all has answers 204 (the SSE standard's "stop
//! reconnecting"). When the limits pushed out events the client had not read, the
//! resumed stream carries what is left, after a `notifications/message` (level `error`)
//! saying how many were lost.
//!
//! [`HttpConfig::sse_resume_window`]: super::HttpConfig::sse_resume_window

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use mcp_tasks_protocol::engine::{FrameReceiver, FrameSender, InboundRequest, Session};
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::meta::PROTOCOL_VERSION_2025_11_25;
use mcp_tasks_protocol::method::{Request, TypedNotification};
use mcp_tasks_protocol::types::LoggingLevel;
use mcp_tasks_protocol::v2025;
use mcp_tasks_protocol::v2026::{LoggingMessage, LoggingMessageNotificationParams};
use tokio_util::sync::CancellationToken;

use super::{App, rpc_error};
use crate::session::McpSession;
use crate::session::StandaloneGuard;
use crate::session::replay::{EventId, Item, NotHeld, Reader, Redo, Replay, Resume};

/// The header a client resumes a stream with.
pub(super) const LAST_EVENT_ID: &str = "last-event-id";

/// How often an idle stream gets a keep-alive comment (as axum's default).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Whether `session`'s streams are resumable: 2025-11-25 sessions (SEP-1699). Sessions
/// of earlier revisions keep the plain streams they knew.
pub(super) fn resumable(session: &McpSession) -> bool {
    session.protocol_version == PROTOCOL_VERSION_2025_11_25
}

/// Answers `req` with a resumable event stream: the priming event at once, then every
/// frame the handler sends and its response; the stream ends after the response.
pub(super) fn post_reply(
    app: &App,
    session: Session,
    req: InboundRequest,
    mcp_session: Arc<McpSession>,
    replay: &Arc<Replay>,
) -> Response {
    let window = if req.method == v2025::GetTaskPayload::METHOD {
        Duration::ZERO
    } else {
        app.config.sse_resume_window
    };
    let reader = replay.open(false);
    let stream = reader.stream();
    let run = Run {
        endpoint: Arc::clone(&app.endpoint),
        session,
        req: Arc::new(req),
        replay: Arc::clone(replay),
        stream,
        window,
    };
    if window.is_zero() {
        // Given up as soon as its client goes: run again when the client resumes.
        let again = run.clone();
        replay.set_redo(stream, Redo(Arc::new(move || again.start())));
    }
    run.start();
    let priming = priming(EventId { stream, seq: 0 }, app.config.sse_retry);
    respond(app, Some(priming), reader, None, mcp_session)
}

/// One run of a POST's request, writing into its stream.
#[derive(Clone)]
struct Run {
    endpoint: Arc<crate::server::ServerEndpoint>,
    session: Session,
    req: Arc<InboundRequest>,
    replay: Arc<Replay>,
    stream: u64,
    window: Duration,
}

impl Run {
    /// Runs the request (in the writer the stream has for it) and its pump.
    fn start(&self) {
        let (tx, rx) = FrameSender::channel(64);
        let stop = CancellationToken::new();
        let session = self
            .session
            .with_peer(self.session.peer.with_sender(tx.clone()));
        let req = InboundRequest {
            id: self.req.id.clone(),
            method: self.req.method.clone(),
            params: self.req.params.clone(),
        };
        tokio::spawn(pump(
            Arc::clone(&self.replay),
            self.stream,
            rx,
            Some(Abandon {
                stop: stop.clone(),
                window: self.window,
            }),
        ));
        let endpoint = Arc::clone(&self.endpoint);
        tokio::spawn(async move {
            if let Some(reply) = endpoint.handle_request_until(session, req, &stop).await {
                let _ = tx.send(reply.frame).await;
            }
        });
    }
}

/// `GET` in a 2025-11-25 session: with `Last-Event-ID`, the stream it names read on
/// from there; without, a new standalone stream (which replaces the previous one).
pub(super) fn get(
    app: &App,
    session: &Session,
    mcp_session: Arc<McpSession>,
    replay: &Arc<Replay>,
    headers: &HeaderMap,
) -> Response {
    let fresh = |mcp_session: Arc<McpSession>| {
        let reader = replay.open(true);
        let stream = reader.stream();
        let guard = carry_standalone(session, &mcp_session, replay, stream);
        let priming = priming(EventId { stream, seq: 0 }, app.config.sse_retry);
        respond(app, Some(priming), reader, Some(guard), mcp_session)
    };
    let Some(raw) = headers.get(LAST_EVENT_ID) else {
        return fresh(mcp_session);
    };
    let Some(last) = raw.to_str().ok().and_then(|v| EventId::parse(v.trim())) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            error_codes::INVALID_REQUEST,
            "Last-Event-ID is malformed: resume with the id of an event this server sent",
        );
    };
    match replay.resume(last) {
        // On a shared store the stream may be another instance's (one that died, or the
        // balancer sent the client here): its events cannot be replayed here, so the
        // client gets a new standalone stream, and the statuses of the session's tasks
        // that changed lately (the watcher's takeover resync).
        Err(NotHeld) if app.shared_sessions => {
            tracing::debug!(session = %mcp_session.tag, %last, "resuming a stream held elsewhere: a new standalone stream here");
            let response = fresh(Arc::clone(&mcp_session));
            mcp_session.standalone_taken_over();
            response
        }
        Err(NotHeld) => rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            error_codes::INVALID_REQUEST,
            format!(
                "Last-Event-ID {last} names no event stream this session holds (not sent in this session, or no longer kept): nothing to resume"
            ),
        ),
        Ok(Resume::Ended) => StatusCode::NO_CONTENT.into_response(),
        Ok(Resume::Read {
            reader,
            standalone,
            redo,
        }) => {
            // The standalone stream got a writer for this connection: carry it on.
            let guard =
                standalone.then(|| carry_standalone(session, &mcp_session, replay, last.stream));
            // A request given up runs again, in the writer the stream got for it.
            if let Some(Redo(again)) = redo {
                again();
            }
            respond(app, None, reader, guard, mcp_session)
        }
    }
}

/// Makes `stream` the session's standalone stream (replacing the previous one): what the
/// session sends outside a request goes into it through a pump, the writer that
/// [`Replay::open`] or [`Replay::resume`] gave it. Returns what unhooks it when the
/// connection ends.
fn carry_standalone(
    session: &Session,
    mcp_session: &Arc<McpSession>,
    replay: &Arc<Replay>,
    stream: u64,
) -> StandaloneGuard {
    let (tx, rx) = FrameSender::channel(64);
    let guard = mcp_session.set_standalone(session.peer.with_sender(tx));
    tokio::spawn(pump(Arc::clone(replay), stream, rx, None));
    guard
}

/// When to give up a POST's request whose stream has no connection.
struct Abandon {
    stop: CancellationToken,
    window: Duration,
}

/// Keeps every frame of `rx` as the next event of `stream` until every sender is gone;
/// then the stream's writer ends. With `abandon`, cancels the request once the stream
/// has been without a reader for its window; a request that ended so is run again if
/// it is redoable and a reader came meanwhile, and one that ended by itself has answered
/// (it is no longer redoable).
async fn pump(
    replay: Arc<Replay>,
    stream: u64,
    mut rx: FrameReceiver,
    mut abandon: Option<Abandon>,
) {
    let wake = replay.wake(stream);
    let mut given_up = false;
    loop {
        let notified = wake.as_ref().map(|w| w.notified());
        let mut notified = std::pin::pin!(async move {
            match notified {
                Some(n) => n.await,
                None => std::future::pending().await,
            }
        });
        // Read after the wake-up is armed: a detachment after this wakes the loop.
        let deadline = abandon.as_ref().and_then(|a| {
            replay
                .detached_since(stream)
                .map(|since| tokio::time::Instant::from_std(since + a.window))
        });
        tokio::select! {
            frame = rx.recv() => match frame {
                Some(Ok(frame)) => replay.push(stream, frame),
                _ => break,
            },
            _ = &mut notified => {}
            _ = sleep_until(deadline) => {
                if let Some(a) = abandon.take() {
                    tracing::debug!(stream, "no client resumed the stream in time; its request is cancelled");
                    a.stop.cancel();
                    given_up = true;
                }
            }
        }
    }
    if !given_up {
        replay.forget_redo(stream);
        replay.end_writer(stream);
    } else if let Some(Redo(again)) = replay.end_writer_or_redo(stream) {
        again();
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The event stream a connection reads: `first` (the priming event), then `reader`'s
/// items; keep-alives while idle; ended after [`HttpConfig::sse_max_lifetime`]
/// (the client resumes). `guard` goes with the connection.
///
/// [`HttpConfig::sse_max_lifetime`]: super::HttpConfig::sse_max_lifetime
fn respond(
    app: &App,
    first: Option<Bytes>,
    reader: Reader,
    guard: Option<StandaloneGuard>,
    mcp_session: Arc<McpSession>,
) -> Response {
    let events = futures::stream::unfold(
        (reader, guard, mcp_session),
        |(mut reader, guard, mcp_session)| async move {
            let bytes = match reader.next().await? {
                Item::Event { id, frame } => message(id, &frame),
                Item::Gap { missed } => gap_notice(missed, &mcp_session),
            };
            Some((bytes, (reader, guard, mcp_session)))
        },
    );
    let events = futures::stream::iter(first).chain(events);
    let end: futures::future::BoxFuture<'static, ()> = match app.config.sse_max_lifetime {
        Some(lifetime) => Box::pin(tokio::time::sleep(lifetime)),
        None => Box::pin(std::future::pending()),
    };
    let body = with_keep_alive(events.take_until(end));
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// `events`, with a comment line whenever nothing was sent for [`KEEP_ALIVE`].
fn with_keep_alive(
    events: impl Stream<Item = Bytes> + Send + 'static,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    futures::stream::unfold(Box::pin(events), |mut events| async move {
        tokio::select! {
            next = events.next() => next.map(|bytes| (Ok(bytes), events)),
            _ = tokio::time::sleep(KEEP_ALIVE) => Some((Ok(Bytes::from_static(b":\n\n")), events)),
        }
    })
}

/// The priming event: an id, the reconnection delay, and an empty `data` field.
fn priming(id: EventId, retry: Duration) -> Bytes {
    Bytes::from(format!("id: {id}\nretry: {}\ndata:\n\n", retry.as_millis()))
}

/// A message event with its id. A frame is compact JSON, but any line break in it
/// starts another `data` line, as the SSE format requires.
fn message(id: EventId, frame: &str) -> Bytes {
    let mut out = format!("id: {id}\nevent: message\n");
    for line in frame.split(['\n', '\r']) {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// Tells the client that `missed` events of the stream it resumed are no longer kept,
/// as a `notifications/message` at level `error` (unless the session's level is above
/// it); without an id, so the client's cursor stays where the stream is.
fn gap_notice(missed: u64, mcp_session: &McpSession) -> Bytes {
    if LoggingLevel::Error < mcp_session.log_level() {
        return Bytes::from_static(b":\n\n");
    }
    let mut params = LoggingMessageNotificationParams::new(
        LoggingLevel::Error,
        serde_json::json!({
            "message": format!("{missed} event(s) of this stream were no longer kept for replay (the session's replay limits) and are lost"),
            "missedEvents": missed,
        }),
    );
    params.logger = Some("mcp-server/sse".to_owned());
    let frame = serde_json::to_string(&TypedNotification::<LoggingMessage>::new(params))
        .unwrap_or_default();
    Bytes::from(format!("event: message\ndata: {frame}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priming_and_message_events_are_written_as_sse() {
        let id = EventId { stream: 3, seq: 0 };
        assert_eq!(
            priming(id, Duration::from_millis(1500)),
            Bytes::from_static(b"id: 3-0\nretry: 1500\ndata:\n\n")
        );
        let id = EventId { stream: 3, seq: 2 };
        assert_eq!(
            message(id, "{\"a\":1}"),
            Bytes::from_static(b"id: 3-2\nevent: message\ndata: {\"a\":1}\n\n")
        );
        assert_eq!(
            message(id, "a\nb"),
            Bytes::from_static(b"id: 3-2\nevent: message\ndata: a\ndata: b\n\n")
        );
    }
}
