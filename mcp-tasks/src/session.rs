//! [`SessionStore`]: MCP 2025-11-25 session records beside the tasks, so any server
//! instance on a shared store serves any request of a session; and [`LocalSessions`],
//! the in-process table the memory and SQLite stores keep them in.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;
use mcp_tasks_protocol::types::LoggingLevel;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::error::StoreError;
use crate::event::EventError;
use crate::limits::Limit;
use crate::record::{Millis, Owner};

/// What a server keeps of one MCP 2025-11-25 session (`Mcp-Session-Id`): enough for any
/// instance to serve its next request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The session id: 128 random bits chosen by the server, as text.
    pub id: String,
    /// Who owns the session's tasks.
    pub owner: Owner,
    /// The authenticated principal that opened the session, if any: only it may use it.
    pub principal: Option<String>,
    /// The protocol version `initialize` agreed on.
    pub protocol_version: String,
    /// The client's `capabilities` of `initialize`, as sent.
    #[serde(default)]
    pub client_capabilities: Value,
    /// The client's `clientInfo` of `initialize`, as sent.
    #[serde(default)]
    pub client_info: Value,
    /// The level of `logging/setLevel`, once set.
    #[serde(default)]
    pub log_level: Option<LoggingLevel>,
    /// The resource URIs of `resources/subscribe`.
    #[serde(default)]
    pub subscriptions: BTreeSet<String>,
    /// The input requests of the session's tasks being asked of the client right now, by
    /// the server's marker for each (task and key): who asks it, until when. On a shared
    /// store, so that one instance asks each question ([`SessionChange::ClaimInput`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub asking: BTreeMap<String, InputClaim>,
    /// When the session was opened (the store's clock).
    pub created_at: Millis,
    /// When a request of the session was last seen by the store (see rule 5).
    pub last_seen: Millis,
    /// How long the session lives without being seen.
    pub idle_timeout_ms: u64,
}

impl SessionRecord {
    /// When the session ends unless seen again.
    pub fn expires_at(&self) -> Millis {
        let idle = Millis::try_from(self.idle_timeout_ms).unwrap_or(Millis::MAX);
        self.last_seen.saturating_add(idle)
    }

    /// Whether the session has ended by idling at `now` (rule 4).
    pub fn is_expired(&self, now: Millis) -> bool {
        now >= self.expires_at()
    }
}

/// Who asks one input request of a session's task, until when (the store's clock): a
/// lease, renewed while the question waits for its answer, lapsing when its instance died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputClaim {
    /// The asking server instance (any string unique to it).
    pub by: String,
    /// The claim holds while `now < until`.
    pub until: Millis,
}

/// A change of a session's state after `initialize`, decided here once for every backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChange {
    /// `logging/setLevel`.
    LogLevel(LoggingLevel),
    /// `resources/subscribe` of a URI.
    Subscribe(String),
    /// `resources/unsubscribe` of a URI.
    Unsubscribe(String),
    /// `by` asks the input request `marker` for `lease_ms` from now: claimed when nobody
    /// holds a live claim on it, renewed when `by` does, left as it is otherwise (the
    /// record as written says who holds it). Lapsed claims are dropped.
    ClaimInput {
        /// The question (its task and key, as the server writes them).
        marker: String,
        /// The claiming instance.
        by: String,
        /// How long the claim holds without a renewal.
        lease_ms: u64,
    },
    /// `by` no longer asks `marker` (answered, or its stream ended): its claim goes, and
    /// another instance may ask. Nothing changes when another instance holds it.
    ReleaseInput {
        /// The question.
        marker: String,
        /// The releasing instance.
        by: String,
    },
}

impl SessionChange {
    /// Applies the change to `record` at `now` (the store's clock).
    pub fn apply(&self, record: &mut SessionRecord, now: Millis) {
        record.asking.retain(|_, claim| now < claim.until);
        match self {
            SessionChange::ClaimInput {
                marker,
                by,
                lease_ms,
            } => {
                let free = record.asking.get(marker).is_none_or(|c| c.by == *by);
                if free {
                    let lease = Millis::try_from(*lease_ms).unwrap_or(Millis::MAX);
                    let claim = InputClaim {
                        by: by.clone(),
                        until: now.saturating_add(lease),
                    };
                    record.asking.insert(marker.clone(), claim);
                }
            }
            SessionChange::ReleaseInput { marker, by } => {
                if record.asking.get(marker).is_some_and(|c| c.by == *by) {
                    record.asking.remove(marker);
                }
            }
            SessionChange::LogLevel(level) => record.log_level = Some(*level),
            SessionChange::Subscribe(uri) => {
                record.subscriptions.insert(uri.clone());
            }
            SessionChange::Unsubscribe(uri) => {
                record.subscriptions.remove(uri);
            }
        }
    }
}

/// Storage of MCP 2025-11-25 session records.
///
/// # Contract
///
/// Every backend obeys these rules; the kit's `session_*` behaviours
/// ([`conformance`](crate::conformance)) check each one.
///
/// 1. **Thread-safe, shared.** Every method may be called concurrently from any number of
///    handles. A shared store ([`is_shared`](Self::is_shared): PostgreSQL, Redis) shows
///    every handle, in any process, the same records; a local one (memory, SQLite) shows
///    them to the handles of one process only.
/// 2. **Durable open.** When [`open_session`](Self::open_session) returns, every handle
///    reads the record; `created_at` and `last_seen` are the store's `now`, whatever the
///    caller put there.
/// 3. **Limit.** `open_session` with `max_sessions` refuses with
///    [`StoreError::LimitExceeded`] ([`Limit::Sessions`]) and stores nothing when that
///    many unexpired sessions exist on the store (all instances of a shared store
///    together), atomically with respect to other opens.
/// 4. **Idle expiry.** A session expires when `now >= last_seen + idle_timeout_ms`. From
///    then on it reads as absent, is not counted, and no touch or change revives it.
/// 5. **Touch.** [`touch_session`](Self::touch_session) sets `last_seen` to `now` (never
///    back) on an unexpired session and says whether there was one.
/// 6. **Change.** [`change_session`](Self::change_session) applies a [`SessionChange`]
///    atomically (no concurrent change is lost) at the store's `now` and returns the
///    record as written, or `None` for an absent session. So of concurrent
///    [`SessionChange::ClaimInput`]s of one question, one holds it, and every claimant
///    reads that one in the record returned.
/// 7. **End.** After [`end_session`](Self::end_session) the session reads as absent on
///    every handle, for good; it says whether the session existed.
/// 8. **Time** comes from the store's [`Clock`](crate::Clock) only.
/// 9. **Resource announcements.** [`announce_resource_updated`] reaches every
///    [`resource_updates`] feed opened before it was called, on every handle that
///    shares the records (rule 1), the announcing handle's included, once each. It never
///    waits for a subscriber; a feed that fell behind says so ([`EventError::Lagged`]).
///    An announcement made while a handle could not hear the others (its notification
///    connection was down) is missed by that handle: the notifications it leads to are
///    best effort, as in MCP.
///
/// [`announce_resource_updated`]: Self::announce_resource_updated
/// [`resource_updates`]: Self::resource_updates
///
/// Who may use a session is the server's decision (it compares `principal`): a record
/// is found by its unguessable id alone.
#[async_trait]
pub trait SessionStore: Send + Sync + std::fmt::Debug + 'static {
    /// Whether other processes see these records (rule 1).
    fn is_shared(&self) -> bool;

    /// Stores `new` as an open session, within `max_sessions` (rules 2, 3).
    async fn open_session(
        &self,
        new: SessionRecord,
        max_sessions: usize,
    ) -> Result<SessionRecord, StoreError>;

    /// The unexpired session `id`, if any (rule 4).
    async fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError>;

    /// Marks the session seen now (rule 5).
    async fn touch_session(&self, id: &str) -> Result<bool, StoreError>;

    /// Changes the session's state (rule 6).
    async fn change_session(
        &self,
        id: &str,
        change: SessionChange,
    ) -> Result<Option<SessionRecord>, StoreError>;

    /// Ends the session everywhere (rule 7).
    async fn end_session(&self, id: &str) -> Result<bool, StoreError>;

    /// How many unexpired sessions the store holds (rule 3 counts the same).
    async fn session_count(&self) -> Result<usize, StoreError>;

    /// Tells every handle's [`resource_updates`](Self::resource_updates) that the
    /// resource `uri` changed (rule 9), so the instance holding a subscribed session's
    /// stream sends `notifications/resources/updated` whichever instance saw the change.
    async fn announce_resource_updated(&self, uri: &str) -> Result<(), StoreError>;

    /// The resource URIs announced from now on, by any handle (rule 9).
    fn resource_updates(&self) -> ResourceUpdates;
}

/// How many announced URIs a [`ResourceUpdates`] feed may fall behind by.
pub(crate) const RESOURCE_FEED: usize = 256;

/// A feed of resource URIs announced as changed ([`SessionStore::resource_updates`]).
#[derive(Debug)]
pub struct ResourceUpdates {
    rx: broadcast::Receiver<String>,
}

impl ResourceUpdates {
    /// A feed reading `rx` (a backend's broadcast of announced URIs).
    pub fn new(rx: broadcast::Receiver<String>) -> ResourceUpdates {
        ResourceUpdates { rx }
    }

    /// The next URI announced; [`EventError::Lagged`] when this feed fell behind and
    /// missed some, [`EventError::Closed`] when the store is gone.
    pub async fn recv(&mut self) -> Result<String, EventError> {
        self.rx.recv().await.map_err(|e| match e {
            broadcast::error::RecvError::Lagged(n) => EventError::Lagged(n),
            broadcast::error::RecvError::Closed => EventError::Closed,
        })
    }
}

/// The refusal of rule 3.
pub(crate) fn too_many_sessions(max: usize) -> StoreError {
    StoreError::LimitExceeded {
        limit: Limit::Sessions,
        max: max as u64,
    }
}

/// Session records in this process: the memory store's, and the SQLite store's (shared
/// by the handles of one file). Every method takes the store's `now`.
#[derive(Debug)]
pub(crate) struct LocalSessions {
    map: Mutex<HashMap<String, SessionRecord>>,
    /// The URIs announced by rule 9, to this process's feeds.
    updates: broadcast::Sender<String>,
}

impl Default for LocalSessions {
    fn default() -> Self {
        LocalSessions {
            map: Mutex::default(),
            updates: broadcast::channel(RESOURCE_FEED).0,
        }
    }
}

impl LocalSessions {
    pub(crate) fn announce(&self, uri: &str) {
        // No feed open is no error: nobody listens right now.
        let _ = self.updates.send(uri.to_owned());
    }

    pub(crate) fn updates(&self) -> ResourceUpdates {
        ResourceUpdates::new(self.updates.subscribe())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionRecord>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn open(
        &self,
        mut new: SessionRecord,
        max: usize,
        now: Millis,
    ) -> Result<SessionRecord, StoreError> {
        let mut map = self.lock();
        map.retain(|_, s| !s.is_expired(now));
        if map.len() >= max {
            return Err(too_many_sessions(max));
        }
        new.created_at = now;
        new.last_seen = now;
        map.insert(new.id.clone(), new.clone());
        Ok(new)
    }

    pub(crate) fn get(&self, id: &str, now: Millis) -> Option<SessionRecord> {
        self.lock().get(id).filter(|s| !s.is_expired(now)).cloned()
    }

    pub(crate) fn touch(&self, id: &str, now: Millis) -> bool {
        match self.lock().get_mut(id) {
            Some(s) if !s.is_expired(now) => {
                s.last_seen = s.last_seen.max(now);
                true
            }
            _ => false,
        }
    }

    pub(crate) fn change(
        &self,
        id: &str,
        change: &SessionChange,
        now: Millis,
    ) -> Option<SessionRecord> {
        let mut map = self.lock();
        let s = map.get_mut(id).filter(|s| !s.is_expired(now))?;
        change.apply(s, now);
        Some(s.clone())
    }

    pub(crate) fn end(&self, id: &str, now: Millis) -> bool {
        self.lock().remove(id).is_some_and(|s| !s.is_expired(now))
    }

    pub(crate) fn count(&self, now: Millis) -> usize {
        let mut map = self.lock();
        map.retain(|_, s| !s.is_expired(now));
        map.len()
    }
}

/// [`SessionStore`] for a store that keeps its sessions in a [`LocalSessions`]: the
/// store names the table and its clock.
macro_rules! local_session_store {
    ($store:ty, |$s:ident| $table:expr, $now:expr) => {
        #[async_trait::async_trait]
        impl $crate::session::SessionStore for $store {
            fn is_shared(&self) -> bool {
                false
            }

            async fn open_session(
                &self,
                new: $crate::session::SessionRecord,
                max_sessions: usize,
            ) -> Result<$crate::session::SessionRecord, $crate::StoreError> {
                let $s = self;
                $table.open(new, max_sessions, $now)
            }

            async fn session(
                &self,
                id: &str,
            ) -> Result<Option<$crate::session::SessionRecord>, $crate::StoreError> {
                let $s = self;
                Ok($table.get(id, $now))
            }

            async fn touch_session(&self, id: &str) -> Result<bool, $crate::StoreError> {
                let $s = self;
                Ok($table.touch(id, $now))
            }

            async fn change_session(
                &self,
                id: &str,
                change: $crate::session::SessionChange,
            ) -> Result<Option<$crate::session::SessionRecord>, $crate::StoreError> {
                let $s = self;
                Ok($table.change(id, &change, $now))
            }

            async fn end_session(&self, id: &str) -> Result<bool, $crate::StoreError> {
                let $s = self;
                Ok($table.end(id, $now))
            }

            async fn session_count(&self) -> Result<usize, $crate::StoreError> {
                let $s = self;
                Ok($table.count($now))
            }

            async fn announce_resource_updated(&self, uri: &str) -> Result<(), $crate::StoreError> {
                let $s = self;
                $table.announce(uri);
                Ok(())
            }

            fn resource_updates(&self) -> $crate::session::ResourceUpdates {
                let $s = self;
                $table.updates()
            }
        }
    };
}
pub(crate) use local_session_store;
