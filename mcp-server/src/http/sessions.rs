//! MCP 2025-11-25 sessions over HTTP: the table by `Mcp-Session-Id` (owner checks, idle
//! expiry, the session limit), the standalone `GET` stream and `DELETE`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use mcp_protocol::engine::FrameSender;
use mcp_protocol::error_codes;

use super::replay::{Replay, ReplayLimits};
use super::{
    App, Authenticated, OpenSession, accepts, message_event, not_allowed, resume, rpc_error, sse,
};
use crate::v2025::LegacySession;

/// A 2025-11-25 session, the events kept for resuming its streams, and when it was last
/// used.
pub(super) struct LegacyEntry {
    session: Arc<LegacySession>,
    replay: Arc<Replay>,
    last_used: std::time::Instant,
}

impl App {
    /// The session `id`, if `principal` may use it: the one that opened it (or, for a
    /// session opened without authentication, anyone holding its id). Another principal's
    /// session reads as unknown, like an id never issued.
    pub(super) fn legacy_session_of(
        &self,
        id: &str,
        principal: Option<&str>,
    ) -> Option<OpenSession> {
        self.legacy_session(id)
            .filter(|s| s.0.principal.is_none() || s.0.principal.as_deref() == principal)
    }

    /// The session `id`, unless it is unknown or idle past its timeout (then it is ended).
    fn legacy_session(&self, id: &str) -> Option<OpenSession> {
        let mut sessions = self.legacy.lock().unwrap_or_else(|e| e.into_inner());
        let entry = sessions.get_mut(id)?;
        if entry.last_used.elapsed() > self.config.session_idle_timeout {
            if let Some(gone) = sessions.remove(id) {
                gone.session.close();
            }
            return None;
        }
        entry.last_used = std::time::Instant::now();
        Some(OpenSession(
            Arc::clone(&entry.session),
            Arc::clone(&entry.replay),
        ))
    }

    /// Ends idle sessions; then whether there is room for one more.
    pub(super) fn room_for_a_session(&self) -> bool {
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

    /// Keeps the session `initialize` just opened, under its id.
    pub(super) fn keep_session(&self, opened: &Arc<LegacySession>) {
        self.legacy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                opened.id.clone(),
                LegacyEntry {
                    session: Arc::clone(opened),
                    replay: Replay::new(ReplayLimits {
                        max_events: self.config.sse_replay_max_events,
                        max_bytes: self.config.sse_replay_max_bytes,
                    }),
                    last_used: std::time::Instant::now(),
                },
            );
    }
}

/// `GET` with `Mcp-Session-Id` (MCP 2025-11-25): the session's standalone event stream,
/// which carries `notifications/tasks/status` and input requests outside any request;
/// in a 2025-11-25 session, with `Last-Event-ID`, the stream that id belongs to, read on
/// from there (`resume.rs`).
pub(super) async fn handle_get(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Authenticated>,
    open: Option<Extension<OpenSession>>,
    headers: HeaderMap,
) -> Response {
    let Some(Extension(OpenSession(legacy, replay))) = open else {
        return not_allowed().await;
    };
    if !accepts(&headers).1 {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            error_codes::INVALID_REQUEST,
            "Accept must allow text/event-stream",
        );
    }
    let session = app.session(caller.principal());
    if resume::resumable(&legacy) {
        return resume::get(&app, &session, legacy, &replay, &headers);
    }
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

/// Unhooks the standalone stream from its session when the client goes away (unless a
/// newer GET replaced it), releasing the input requests asked on it.
pub(super) struct StandaloneGuard(Arc<LegacySession>, tokio_util::sync::CancellationToken);

impl StandaloneGuard {
    /// Unhooks the standalone stream `gone` was returned for, when dropped.
    pub(super) fn new(
        session: Arc<LegacySession>,
        gone: tokio_util::sync::CancellationToken,
    ) -> StandaloneGuard {
        StandaloneGuard(session, gone)
    }
}

impl Drop for StandaloneGuard {
    fn drop(&mut self) {
        self.0.clear_standalone(&self.1);
    }
}

/// `DELETE` with `Mcp-Session-Id` (MCP 2025-11-25): ends the session.
pub(super) async fn handle_delete(
    State(app): State<Arc<App>>,
    open: Option<Extension<OpenSession>>,
) -> Response {
    let Some(Extension(OpenSession(session, _))) = open else {
        return not_allowed().await;
    };
    let id = session.id.as_str();
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

pub(super) fn unknown_session() -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        None,
        error_codes::INVALID_REQUEST,
        "Unknown or ended session: initialize again",
    )
}
