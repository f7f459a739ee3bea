//! MCP 2025-11-25 sessions over HTTP: the table by `Mcp-Session-Id` (owner checks, idle
//! expiry, the session limit), the standalone `GET` stream and `DELETE`.
//!
//! On a shared store (PostgreSQL, Redis: [`SessionStore::is_shared`]) the table is a
//! cache of the store's session records, so any instance serves any session: `initialize`
//! writes the record (the store counts the session limit over every instance); a request
//! naming a session this process does not hold reads its record and, when the caller is
//! its principal, serves it here from then on (the session rebuilt from the record: owner,
//! version, client, log level; its watcher started); every request of a held session reads
//! the record again (a session ended elsewhere is 404 at once), and touches it at most
//! once per [`touch_interval`]; `DELETE` ends the record, so every instance refuses the
//! session next. What stays with one process: the standalone GET stream and the replay
//! buffers of resumable streams; statuses and input requests of tasks running elsewhere
//! reach the stream through store events, and a `Last-Event-ID` of a stream held by
//! another instance opens a new standalone stream here (`resume.rs`).
//!
//! Each session has its own [`Peer`] for the requests the server sends its client
//! (elicitation, sampling, roots, a task's questions): its own pending map, and ids behind
//! a random 128-bit prefix. A response completes a request only when it is POSTed with
//! that session's `Mcp-Session-Id` (which the guard checked is the caller's), so no
//! other caller, anonymous ones included, can answer it.
//!
//! Sessions are limited in number, over all callers (`max_sessions`) and per principal
//! (`max_sessions_per_principal`; anonymous callers together count as one principal),
//! the latter over the sessions this instance holds.
//!
//! [`SessionStore::is_shared`]: mcp_tasks::SessionStore::is_shared

use std::convert::Infallible;
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use mcp_tasks::StoreError;
use mcp_tasks_protocol::engine::{FrameSender, Peer, Session};
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::{ErrorObject, RequestId};
use serde_json::value::RawValue;

use super::{
    App, Authenticated, OpenSession, accepts, message_event, not_allowed, resume, rpc_error, sse,
};
use crate::session::McpSession;
use crate::session::replay::{Replay, ReplayLimits};

/// A 2025-11-25 session, the events kept for resuming its streams, its requests to the
/// client waiting for their answers, and when it was last used.
pub(super) struct SessionEntry {
    session: Arc<McpSession>,
    replay: Arc<Replay>,
    /// The session's own outbound half: the server's requests to this session's client
    /// wait here, under ids nobody else can guess.
    peer: Peer,
    last_used: std::time::Instant,
    /// When the store's record was last touched (shared stores).
    touched: std::time::Instant,
}

impl SessionEntry {
    /// The session has ended: its watcher stops and the requests still waiting for the
    /// client's answer fail.
    fn end(&self) {
        self.session.close();
        self.peer.close();
    }

    fn open(&self) -> OpenSession {
        OpenSession(
            Arc::clone(&self.session),
            Arc::clone(&self.replay),
            self.peer.clone(),
        )
    }
}

/// Why an `initialize` may not open a session now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SessionLimit {
    /// `max_sessions`: this process holds that many.
    Total(usize),
    /// `max_sessions_per_principal`: the caller holds that many here.
    PerPrincipal(usize),
}

/// A peer for a new session's requests to its client: writing nowhere (each stream gives
/// it its own sender), its ids behind a random 128-bit prefix. Without the OS's random
/// numbers the prefix is the session's tag (never its id, which may be its only
/// credential, while request ids are logged); the pending map is the session's own
/// either way.
fn session_peer(idle: &FrameSender, session: &McpSession) -> Peer {
    let prefix = match mcp_tasks::TaskId::random() {
        Ok(random) => random.as_str().to_owned(),
        Err(e) => {
            tracing::warn!(error = %e, session = %session.tag, "no random numbers for request ids; using the session's tag");
            session.tag.trim_start_matches('#').to_owned()
        }
    };
    Peer::with_prefixed_ids(idle.clone(), format!("{prefix}."))
}

/// How often a held session's record is touched on a shared store: a quarter of the idle
/// timeout, at most 5 s (writes per session bounded, expiry accurate to that).
fn touch_interval(idle: std::time::Duration) -> std::time::Duration {
    (idle / 4).min(std::time::Duration::from_secs(5))
}

impl App {
    /// The session `id`, if `principal` may use it: [`mcp_session_of`] in this
    /// process, and on a shared store also the store's record (module docs).
    ///
    /// [`mcp_session_of`]: App::mcp_session_of
    pub(super) async fn find_session(
        self: &Arc<Self>,
        id: &str,
        principal: Option<&str>,
    ) -> Result<Option<OpenSession>, StoreError> {
        let held = self.mcp_session_of(id, principal);
        let Some(store) = self.state.store.sessions().filter(|_| self.shared_sessions) else {
            return Ok(held);
        };
        if let Some(open) = held {
            let due = self.touch_due(id);
            let alive = if due {
                store.touch_session(id).await?
            } else {
                store.session(id).await?.is_some()
            };
            if !alive {
                self.drop_session(id);
                return Ok(None);
            }
            return Ok(Some(open));
        }
        let Some(record) = store.session(id).await? else {
            return Ok(None);
        };
        if record.principal.is_some() && record.principal.as_deref() != principal {
            return Ok(None);
        }
        if !store.touch_session(id).await? {
            return Ok(None);
        }
        let restored = crate::v2025::restore(&self.state, &self.served, record);
        let kept = self.keep_session(&restored);
        if !Arc::ptr_eq(&kept.0, &restored) {
            // Another request restored it first: that one is served, this one closed.
            restored.close();
        }
        Ok(Some(kept))
    }

    /// Whether the store's record of the held session `id` is due a touch (and, if so,
    /// counts it as touched now).
    fn touch_due(&self, id: &str) -> bool {
        let mut sessions = self.mcp_sessions.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = sessions.get_mut(id) else {
            return true;
        };
        if entry.touched.elapsed() < touch_interval(self.config.session_idle_timeout) {
            return false;
        }
        entry.touched = std::time::Instant::now();
        true
    }

    /// Forgets the held session `id` (ended elsewhere) and stops its watcher.
    fn drop_session(&self, id: &str) {
        let removed = self
            .mcp_sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        if let Some(entry) = removed {
            entry.end();
        }
    }

    /// On a shared store, writes the record of the session `initialize` just opened
    /// here, within the session limit of all instances; refused, the session is
    /// forgotten here too.
    pub(super) async fn record_session(&self, opened: &McpSession) -> Result<(), StoreError> {
        let Some(store) = self.state.store.sessions().filter(|_| self.shared_sessions) else {
            return Ok(());
        };
        let idle = u64::try_from(self.config.session_idle_timeout.as_millis()).unwrap_or(u64::MAX);
        let written = store
            .open_session(opened.record(idle), self.config.max_sessions)
            .await;
        if written.is_err() {
            self.drop_session(&opened.id);
        }
        written.map(|_| ())
    }

    /// The session `id`, if `principal` may use it: the one that opened it (or, for a
    /// session opened without authentication, anyone holding its id). Another principal's
    /// session reads as unknown, like an id never issued.
    pub(super) fn mcp_session_of(&self, id: &str, principal: Option<&str>) -> Option<OpenSession> {
        self.held_mcp_session(id)
            .filter(|s| s.0.principal.is_none() || s.0.principal.as_deref() == principal)
    }

    /// The session `id`, unless it is unknown or idle past its timeout (then it is ended).
    fn held_mcp_session(&self, id: &str) -> Option<OpenSession> {
        let mut sessions = self.mcp_sessions.lock().unwrap_or_else(|e| e.into_inner());
        let entry = sessions.get_mut(id)?;
        if entry.last_used.elapsed() > self.config.session_idle_timeout {
            if let Some(gone) = sessions.remove(id) {
                gone.end();
            }
            return None;
        }
        entry.last_used = std::time::Instant::now();
        Some(entry.open())
    }

    /// Ends idle sessions; then whether there is room for one more session of
    /// `principal` (`None`: anonymous callers, who together count as one principal):
    /// within `max_sessions` in all, and within `max_sessions_per_principal` of the
    /// sessions held here.
    pub(super) fn room_for_a_session(&self, principal: Option<&str>) -> Result<(), SessionLimit> {
        let mut sessions = self.mcp_sessions.lock().unwrap_or_else(|e| e.into_inner());
        let timeout = self.config.session_idle_timeout;
        sessions.retain(|_, entry| {
            let keep = entry.last_used.elapsed() <= timeout;
            if !keep {
                entry.end();
            }
            keep
        });
        if sessions.len() >= self.config.max_sessions {
            return Err(SessionLimit::Total(self.config.max_sessions));
        }
        let per_principal = self.config.max_sessions_per_principal;
        let held = sessions
            .values()
            .filter(|entry| entry.session.principal.as_deref() == principal)
            .take(per_principal)
            .count();
        if held >= per_principal {
            return Err(SessionLimit::PerPrincipal(per_principal));
        }
        Ok(())
    }

    /// Keeps the session `initialize` just opened (or one restored from the store),
    /// under its id, unless one is held under that id already; returns the one held.
    pub(super) fn keep_session(&self, opened: &Arc<McpSession>) -> OpenSession {
        let mut sessions = self.mcp_sessions.lock().unwrap_or_else(|e| e.into_inner());
        let entry = sessions
            .entry(opened.id.clone())
            .or_insert_with(|| SessionEntry {
                session: Arc::clone(opened),
                replay: Replay::new(ReplayLimits {
                    max_events: self.config.sse_replay_max_events,
                    max_bytes: self.config.sse_replay_max_bytes,
                }),
                peer: session_peer(&self.idle, opened),
                last_used: std::time::Instant::now(),
                touched: std::time::Instant::now(),
            });
        entry.open()
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
    let Some(Extension(OpenSession(mcp_session, replay, peer))) = open else {
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
    // The principal's engine session, asking the client through this session's own peer.
    let session = app.session(caller.principal()).with_peer(peer);
    if resume::resumable(&mcp_session) {
        return resume::get(&app, &session, mcp_session, &replay, &headers);
    }
    let (tx, rx) = FrameSender::channel(64);
    let guard = mcp_session.set_standalone(session.peer.with_sender(tx));
    let stream = futures::stream::unfold((rx, guard), |(mut rx, guard)| async move {
        match rx.recv().await {
            Some(Ok(frame)) => Some((Ok::<_, Infallible>(message_event(frame)), (rx, guard))),
            _ => None,
        }
    });
    sse(&app, stream)
}

/// `DELETE` with `Mcp-Session-Id` (MCP 2025-11-25): ends the session (on a shared store,
/// its record first: every instance refuses it next).
pub(super) async fn handle_delete(
    State(app): State<Arc<App>>,
    open: Option<Extension<OpenSession>>,
) -> Response {
    let Some(Extension(OpenSession(session, _, _))) = open else {
        return not_allowed().await;
    };
    let id = session.id.as_str();
    if let Some(store) = app.state.store.sessions().filter(|_| app.shared_sessions)
        && let Err(e) = store.end_session(id).await
    {
        return store_failed(&e);
    }
    let removed = app
        .mcp_sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(id);
    match removed {
        Some(entry) => {
            entry.end();
            StatusCode::NO_CONTENT.into_response()
        }
        None => unknown_session(),
    }
}

/// A JSON-RPC response POSTed by a client: the answer to one of the server's requests,
/// which only a 2025-11-25 session's requests have. It answers a request of `mcp_session`,
/// the session the POST names (the guard checked it is the caller's), or nothing: first
/// the request waiting in the session's own peer (`session.peer`, which the POST's engine
/// session uses); else an input request of one of the session's tasks (asked by another
/// instance of a shared store), written to the store for the session's owner. A response
/// that answers nothing is not accepted: 400, as Streamable HTTP wants for input the
/// server does not take, and whatever it named stays pending for its own session.
pub(super) async fn take_response(
    app: &App,
    mcp_session: Option<&Arc<McpSession>>,
    session: &Session,
    id: RequestId,
    outcome: Result<Box<RawValue>, ErrorObject>,
) -> Response {
    let Some(mcp_session) = mcp_session else {
        tracing::warn!(%id, "a response without Mcp-Session-Id; refused");
        return unanswered(
            "A response must carry the Mcp-Session-Id of the session whose request it answers",
        );
    };
    if session.peer.complete(&id, outcome.clone()) {
        return StatusCode::ACCEPTED.into_response();
    }
    let store = app.state.store_arc();
    match crate::v2025::answer_input(&store, mcp_session, &id, outcome).await {
        Ok(true) => StatusCode::ACCEPTED.into_response(),
        Ok(false) => {
            tracing::warn!(%id, session = %mcp_session.tag, "a response to no request of the session; refused");
            unanswered(format!(
                "No request of this session waits for id {id} (answered already, given up, or never asked here)"
            ))
        }
        // Worth sending again: the answer is not written yet.
        Err(e) if e.is_transient() => store_failed(&e),
        // A task that is gone, or not the session's: nothing to answer.
        Err(e) => {
            tracing::warn!(%id, session = %mcp_session.tag, error = %e, "an input answer for no task of the session; refused");
            unanswered(format!(
                "No request of this session waits for id {id}: no task of the session asks it"
            ))
        }
    }
}

/// The refusal of a response that answers no request of the session it names (or names
/// none): 400 with a JSON-RPC error without id.
fn unanswered(message: impl Into<String>) -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        None,
        error_codes::INVALID_REQUEST,
        message,
    )
}

/// The refusal of an `initialize` over `max_sessions` (of this process, or of every
/// instance on a shared store): -32029 with HTTP 503; or over the caller's
/// `max_sessions_per_principal`: -32029 with HTTP 429 (the server has room, the caller
/// has used its share).
pub(super) fn too_many_sessions(limit: SessionLimit, id: Option<RequestId>) -> Response {
    let (status, message) = match limit {
        SessionLimit::Total(max) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("Too many sessions: the limit is {max} (max_sessions)"),
        ),
        SessionLimit::PerPrincipal(max) => (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "Too many sessions of this caller: the limit is {max} per principal \
                 (max_sessions_per_principal); end one with DELETE or let one expire"
            ),
        ),
    };
    rpc_error(status, id, error_codes::LIMIT_EXCEEDED, message)
}

/// A session the store could not look up or write: 503 with the store's JSON-RPC error
/// (retrying is safe when it is transient).
pub(super) fn store_failed(e: &StoreError) -> Response {
    let status = if e.is_transient() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    let error = ErrorObject::from(e);
    super::json_response(status, mcp_tasks_protocol::engine::error_frame(None, error))
}

pub(super) fn unknown_session() -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        None,
        error_codes::INVALID_REQUEST,
        "Unknown or ended session: initialize again",
    )
}
