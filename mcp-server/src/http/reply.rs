//! A POST's reply: the response alone as JSON, or an event stream of every frame the
//! handler sends on the way and then the response.
//!
//! **Invariant.** A request whose client went away before its response was sent is
//! cancelled (that request only); one answered is never cancelled.

use std::convert::Infallible;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use mcp_tasks_protocol::engine::{FrameReceiver, FrameSender, InboundRequest, Session};
use serde::Deserialize;

use super::{App, json_response, message_event, sse, status_for, status_of};

/// Answers `req` with its response alone, as JSON.
pub(super) async fn json_reply(
    app: &App,
    mut session: Session,
    req: InboundRequest,
    in_session: bool,
) -> Response {
    // A JSON reply carries nothing but the response: the handler's peer is closed, so a
    // notification is dropped and a request to the client fails at once (a question of
    // a task is then asked on the session's standalone stream, not lost on this one).
    session.peer = session.peer.with_sender(FrameSender::closed());
    match app.endpoint.handle_request(session, req).await {
        Some(reply) => json_response(status_for(reply.error_code, in_session), reply.frame),
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
pub(super) async fn sse_reply(
    app: Arc<App>,
    mut session: Session,
    req: InboundRequest,
    in_session: bool,
) -> Response {
    let (tx, mut rx) = FrameSender::channel(64);
    // Holds the session without the stream's sender: the stream ends once the handler
    // (and with it every sender) is gone.
    let stop = tokio_util::sync::CancellationToken::new();
    let mut guard = CancelOnDrop {
        stop: stop.clone(),
        armed: true,
    };
    session.peer = session.peer.with_sender(tx.clone());
    let handler = Arc::clone(&app);
    tokio::spawn(async move {
        if let Some(reply) = handler
            .endpoint
            .handle_request_until(session, req, &stop)
            .await
        {
            let _ = tx.send(reply.frame).await;
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
        let status = status_of(&first, in_session);
        if status != StatusCode::OK {
            return json_response(status, first);
        }
    }
    sse(&app, frames(first, rx, guard))
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
