//! An MCP 2025-11-25 session's state, below the handlers of both revisions: who owns its
//! tasks, what the client declared, where notifications and input requests go outside a
//! request, and the slot transports put into each request's extensions for `initialize`
//! to fill (this file); the replay buffer of its resumable event streams (`replay.rs`,
//! SEP-1699); which sessions subscribed to which resources (`subscriptions.rs`).
//!
//! **Invariant.** No handler and no HTTP: it imports nothing of the server but the
//! protocol and store types (and the audit trail's owner prefix), so the transports, the
//! `_meta` layer and the handlers of either revision read it without a circle.

pub(crate) mod replay;
pub(crate) mod subscriptions;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use mcp_tasks::{Owner, SessionRecord, TaskId};
use mcp_tasks_protocol::engine::Peer;
use mcp_tasks_protocol::types::LoggingLevel;
use mcp_tasks_protocol::v2026::ClientCapabilities;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub(crate) use crate::audit::SESSION_OWNER_PREFIX;

/// An MCP 2025-11-25 session.
pub struct McpSession {
    /// The session id (`Mcp-Session-Id` over HTTP). Without authentication it is the
    /// session's only credential: never logged or exported (see `tag`).
    pub id: String,
    /// What logs, spans and the console show instead of the id: its keyed hash
    /// ([`SealKey::session_tag`](crate::seal::SealKey::session_tag)).
    pub tag: String,
    /// Who owns the session's tasks: the principal, or the session itself.
    pub owner: Owner,
    /// The authenticated principal that opened the session, if any: only it may use the
    /// session afterwards (a session id is not a credential).
    pub principal: Option<String>,
    /// Where notifications and input requests go when no request stream fits: the
    /// connection (stdio) or the standalone GET stream (HTTP), once opened.
    pub(super) standalone: Mutex<Option<Standalone>>,
    /// Input requests being asked right now (task id, key), so each is asked once.
    pub(super) asking: Mutex<HashSet<(TaskId, String)>>,
    /// Signalled when an input request stops being asked unanswered (its stream went
    /// away), so a pending `tasks/result` asks it again at once.
    pub(super) released: Notify,
    /// Ends the session's watcher.
    pub(super) closed: CancellationToken,
    /// Signalled when this instance took over a standalone stream another one held: the
    /// watcher sends the statuses of recently changed tasks again.
    pub(super) taken_over: Notify,
    /// Signalled when a standalone stream is set: the watcher sends what changed while
    /// there was none (a status with nowhere to go is not counted as sent).
    pub(super) stream_opened: Notify,
    /// The least severe log level the client wants (`logging/setLevel`); every level
    /// until it sets one.
    pub(super) log_level: Mutex<Option<LoggingLevel>>,
    /// The protocol version `initialize` agreed on: 2025-11-25, or an earlier revision a
    /// client asked for (without tasks).
    pub protocol_version: String,
    /// The client's `capabilities` and `clientInfo` of `initialize`, as sent.
    pub client: (serde_json::Value, serde_json::Value),
    /// The same capabilities as the tools see them ([`ToolContext::client_capabilities`]);
    /// `None` when they do not read as capabilities.
    ///
    /// [`ToolContext::client_capabilities`]: crate::ToolContext::client_capabilities
    pub(crate) declared: Option<ClientCapabilities>,
    /// The server instance serving the session here (its runtime's node id): who claims
    /// the session's questions in its record on a shared store.
    pub(crate) node: String,
    /// The unfinished tasks the client has named in a request here (`tasks/get`,
    /// `tasks/result`, `tasks/cancel`): it has surely taken in their `CreateTaskResult`.
    /// A task's questions go to the standalone stream only then (or after a bound).
    /// At most [`KNOWN_CAP`], the oldest forgotten first.
    pub(super) known: Mutex<indexmap::IndexSet<TaskId>>,
    /// Signalled when a task joins `known`.
    pub(super) known_changed: Notify,
}

/// A session's standalone stream: where to send, and a token cancelled once the stream
/// is gone (input requests asked on it are then asked again elsewhere).
#[derive(Debug, Clone)]
pub(super) struct Standalone {
    pub(super) peer: Peer,
    pub(super) gone: CancellationToken,
}

/// How many tasks a session remembers the client named (its unfinished ones, and
/// a few that ended after a last mention).
const KNOWN_CAP: usize = 4096;

/// The session revisions `initialize` agrees to, newest first; only the first has tasks.
pub const SESSION_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The tag stands for the id here too (a debug print may end up in a log).
        f.debug_struct("McpSession")
            .field("tag", &self.tag)
            .field("principal", &self.principal)
            .field("protocol_version", &self.protocol_version)
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl McpSession {
    /// A session with nothing asked, no standalone stream and no log level yet; `tag` is
    /// what is shown of its id.
    pub(super) fn new(
        id: String,
        tag: String,
        owner: Owner,
        principal: Option<String>,
        protocol_version: String,
        client: (serde_json::Value, serde_json::Value),
        node: String,
    ) -> McpSession {
        McpSession {
            id,
            tag,
            owner,
            principal,
            standalone: Mutex::default(),
            asking: Mutex::default(),
            released: Notify::new(),
            closed: CancellationToken::new(),
            taken_over: Notify::new(),
            stream_opened: Notify::new(),
            log_level: Mutex::new(None),
            protocol_version,
            declared: serde_json::from_value(client.0.clone()).ok(),
            client,
            node,
            known: Mutex::default(),
            known_changed: Notify::new(),
        }
    }

    /// The client named `task` in a request: it knows the task.
    pub(crate) fn mark_known(&self, task: &TaskId) {
        let added = {
            let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
            let added = known.insert(task.clone());
            if known.len() > KNOWN_CAP {
                known.shift_remove_index(0);
            }
            added
        };
        if added {
            self.known_changed.notify_waiters();
        }
    }

    /// Whether the client named `task` in a request here.
    pub(super) fn knows(&self, task: &TaskId) -> bool {
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(task)
    }

    /// Forgets a task that ended (nothing more is asked about it).
    pub(crate) fn forget_known(&self, task: &TaskId) {
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .shift_remove(task);
    }

    /// Returns once the client named `task` in a request, or `bound` passed.
    pub(super) async fn until_known(&self, task: &TaskId, bound: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let changed = self.known_changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            if self.knows(task) {
                return;
            }
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// The session as the store keeps it (a shared store's record, so other instances
    /// serve it); the store sets the times.
    pub fn record(&self, idle_timeout_ms: u64) -> SessionRecord {
        SessionRecord {
            id: self.id.clone(),
            owner: self.owner.clone(),
            principal: self.principal.clone(),
            protocol_version: self.protocol_version.clone(),
            client_capabilities: self.client.0.clone(),
            client_info: self.client.1.clone(),
            log_level: *self.log_level.lock().unwrap_or_else(|e| e.into_inner()),
            subscriptions: Default::default(),
            asking: Default::default(),
            created_at: 0,
            last_seen: 0,
            idle_timeout_ms,
        }
    }

    /// Whether the session's revision has tasks (2025-11-25 does; earlier ones do not).
    pub fn has_tasks(&self) -> bool {
        self.protocol_version == SESSION_VERSIONS[0]
    }

    /// The least severe log level the client wants: its `logging/setLevel`, else every
    /// level (`debug`).
    pub fn log_level(&self) -> LoggingLevel {
        self.log_level
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or(LoggingLevel::Debug)
    }

    /// `logging/setLevel`: from now on, log messages below `level` are not sent.
    pub fn set_log_level(&self, level: LoggingLevel) {
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = Some(level);
    }

    /// Sets the stream for notifications and input requests outside a request (replacing
    /// the previous one); the guard returned unhooks it when dropped (the stream ended).
    pub fn set_standalone(self: &Arc<Self>, peer: Peer) -> StandaloneGuard {
        let gone = CancellationToken::new();
        *self.standalone.lock().unwrap_or_else(|e| e.into_inner()) = Some(Standalone {
            peer,
            gone: gone.clone(),
        });
        self.stream_opened.notify_one();
        StandaloneGuard {
            session: Arc::clone(self),
            gone,
        }
    }

    /// The stream `gone` was set for has ended: input requests waiting on it are
    /// released, and it stops being the standalone stream unless another replaced it.
    fn clear_standalone(&self, gone: &CancellationToken) {
        gone.cancel();
        let mut current = self.standalone.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().is_some_and(|s| s.gone.is_cancelled()) {
            *current = None;
        }
    }

    /// The standalone stream just set replaces one another instance held (a shared
    /// store's session): what that one sent since the client last read is not here, so
    /// the watcher sends the statuses of the tasks that changed lately again.
    pub fn standalone_taken_over(&self) {
        self.taken_over.notify_one();
    }

    /// Drops the standalone stream, whichever it is (its connection ended).
    pub fn drop_standalone(&self) {
        let taken = self
            .standalone
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(s) = taken {
            s.gone.cancel();
        }
    }

    pub(super) fn standalone(&self) -> Option<Standalone> {
        self.standalone
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Ends the session: its watcher stops.
    pub fn close(&self) {
        self.closed.cancel();
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// The stream for notifications outside a request, if one is open.
    pub(crate) fn standalone_peer(&self) -> Option<Peer> {
        self.standalone().map(|s| s.peer)
    }
}

/// Where `initialize` puts the 2025-11-25 session it opens, for the transport to keep:
/// the HTTP edge gives each `initialize` an empty slot; over stdio the connection holds
/// one, and the session in it is every later request's (see `revision.rs`).
#[derive(Debug, Clone, Default)]
pub struct SessionSlot(pub(super) Arc<OnceLock<Arc<McpSession>>>);

impl SessionSlot {
    pub fn get(&self) -> Option<&Arc<McpSession>> {
        self.0.get()
    }
}

/// Marks a connection whose own peer is the session's standalone stream (stdio).
#[derive(Debug, Clone, Copy)]
pub struct StandaloneIsRequestPeer;

/// Unhooks a standalone stream from its session when the client goes away (unless a
/// newer GET replaced it), releasing the input requests asked on it.
#[derive(Debug)]
pub struct StandaloneGuard {
    session: Arc<McpSession>,
    gone: CancellationToken,
}

impl Drop for StandaloneGuard {
    fn drop(&mut self) {
        self.session.clear_standalone(&self.gone);
    }
}
