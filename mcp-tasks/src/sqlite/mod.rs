//! [`SqliteStore`]: the embedded durable backend, one SQLite database file in WAL mode.

mod backend;
mod claim;
mod db;
mod log;
mod nodes;
mod operator;
mod schema;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::broadcast;

use crate::clock::{Clock, SystemClock};
use crate::error::StoreError;
use crate::event::{EVENT_BUFFER, TaskEvent};
use crate::limits::Limits;
use crate::log::{Actor, LogDraft, LogScope, kinds};
use crate::record::{Owner, Recovery};
use crate::rules;
use schema::backend;

/// What [`SqliteStore::recover_unfinished`] did with the tasks a previous process left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Failed as lost (at most once, or no attempt left).
    pub failed: usize,
    /// Waiting for a worker again (at least once, with attempts left).
    pub requeued: usize,
    /// Ended cancelled (their cancel had been requested).
    pub cancelled: usize,
}

/// The [`TaskStore`](crate::TaskStore) kept in one SQLite database file (its
/// [`Backend`](crate::Backend) implementation is in `backend.rs`).
///
/// - **Durability.** The database runs in WAL mode with `synchronous = FULL`: every write
///   is one `BEGIN IMMEDIATE` transaction, and when `create` (or any write) returns, its
///   commit has been synced to disk, so it survives a crash of the process or of the
///   operating system.
/// - **Sharing.** Any number of handles may use the file at once: clones of a handle share
///   its connection; every [`open`](SqliteStore::open) makes another connection, and other
///   processes may open the file too. SQLite's write lock serializes the writes (waiting up
///   to 5 s for it); WAL lets reads run beside them.
/// - **Events do not cross process boundaries.** SQLite has no change notification, so
///   events are published in process only: every handle opened on the same file *in this
///   process* shares one feed ([`events`](crate::TaskStore::events)). A handle in another process
///   sees the data, not the events; whoever waits there must poll.
/// - **Task logs** (rule 23) are rows beside the tasks, written in the transaction of the
///   write they record, and removed with their task.
/// - **Idempotency keys** (rule 25, schema version 5) are rows of `idempotency_keys`,
///   one per `(owner, key)`, checked and written in the create's transaction, removed
///   with their task.
/// - Each operation runs on Tokio's blocking pool, so the store needs a Tokio runtime.
/// - The schema is created on first open; a file written by a newer schema version than
///   [`SqliteStore::SCHEMA_VERSION`] is refused with [`StoreError::Backend`].
#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// Set once this handle claimed the file for this process ([`SqliteStore::claim`]).
    claim: Mutex<Option<Arc<claim::Claim>>>,
    limits: Limits,
    clock: Arc<dyn Clock>,
    events: Arc<broadcast::Sender<TaskEvent>>,
    /// MCP 2025-11-25 session records, shared by the handles on this file in this process.
    sessions: Arc<crate::session::LocalSessions>,
}

type Feeds = Mutex<HashMap<PathBuf, Weak<broadcast::Sender<TaskEvent>>>>;

/// The event feed of every database file open in this process, by canonical path.
static FEEDS: LazyLock<Feeds> = LazyLock::new(Feeds::default);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the connection leaves no transaction open (the transaction
    // rolls back when dropped), so the connection is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

type SessionTables = Mutex<HashMap<PathBuf, Weak<crate::session::LocalSessions>>>;

/// The session records of every database file open in this process, by canonical path:
/// kept here, not in the file (a single-node store; a restart ends the sessions).
static SESSION_TABLES: LazyLock<SessionTables> = LazyLock::new(SessionTables::default);

/// The session table shared by every handle on the file at `path` in this process.
fn session_table(path: &Path) -> Arc<crate::session::LocalSessions> {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut tables = lock(&SESSION_TABLES);
    tables.retain(|_, table| table.strong_count() > 0);
    if let Some(table) = tables.get(&key).and_then(Weak::upgrade) {
        return table;
    }
    let table = Arc::new(crate::session::LocalSessions::default());
    tables.insert(key, Arc::downgrade(&table));
    table
}

/// The feed shared by every handle on the file at `path` in this process.
fn feed(path: &Path) -> Arc<broadcast::Sender<TaskEvent>> {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut feeds = lock(&FEEDS);
    feeds.retain(|_, feed| feed.strong_count() > 0);
    if let Some(feed) = feeds.get(&key).and_then(Weak::upgrade) {
        return feed;
    }
    let (sender, _) = broadcast::channel(EVENT_BUFFER);
    let sender = Arc::new(sender);
    feeds.insert(key, Arc::downgrade(&sender));
    sender
}

impl SqliteStore {
    /// The schema version this build creates and reads (the file's `PRAGMA user_version`).
    pub const SCHEMA_VERSION: i64 = schema::SCHEMA_VERSION;

    /// Opens (creating if needed) the database file at `path`, on the system clock.
    pub fn open(path: impl AsRef<Path>, limits: Limits) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with_clock(path, limits, Arc::new(SystemClock))
    }

    /// Opens the database file at `path`, reading time from `clock`.
    pub fn open_with_clock(
        path: impl AsRef<Path>,
        limits: Limits,
        clock: Arc<dyn Clock>,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let conn = schema::open(path)?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                conn: Mutex::new(conn),
                path: path.to_path_buf(),
                claim: Mutex::default(),
                limits,
                clock,
                events: feed(path),
                sessions: session_table(path),
            }),
        })
    }

    /// How many tasks the file holds (finished ones included, expired ones until swept).
    pub async fn task_count(&self) -> Result<usize, StoreError> {
        self.run(|conn, _| db::task_count(conn)).await
    }

    /// The unfinished tasks counted against the limits: `owner`'s, and all owners'.
    pub async fn live_tasks(&self, owner: &Owner) -> Result<(usize, usize), StoreError> {
        let owner = owner.clone();
        self.run(move |conn, _| db::live_counts(conn, &owner)).await
    }

    /// Claims the file for this process alone, as a single-node server must before it
    /// recovers what a previous process left ([`recover_unfinished`](Self::recover_unfinished)
    /// claims it itself): an exclusive lock on `{file}.lock` beside the database, naming
    /// this process. Handles in this process share the claim; it lasts until the last
    /// handle that claimed is dropped, or the process ends, however it ends (the operating
    /// system releases the lock after a crash too). A file another process claimed is
    /// refused with [`StoreError::Backend`] naming that process.
    ///
    /// Other processes may still open the file (reading tasks, say); only a second claim
    /// is refused.
    pub fn claim(&self) -> Result<(), StoreError> {
        let mut held = lock(&self.inner.claim);
        if held.is_none() {
            *held = Some(claim::claim(&self.inner.path)?);
        }
        Ok(())
    }

    /// The lock file [`claim`](Self::claim) takes for the database at `path`.
    pub fn lock_path(path: impl AsRef<Path>) -> PathBuf {
        claim::lock_path(path.as_ref())
    }

    /// Crash recovery for a **single-node** deployment: every unfinished, unexpired task
    /// that was running (or created to run) in a process now gone is recovered as a lost
    /// run ([`rules::recover_lost`]): an at-least-once task with attempts left waits for a
    /// worker again, a task whose cancel was requested ends cancelled, any other fails
    /// with `lost` (first terminal write, as [`fail`](crate::TaskStore::fail) would).
    /// Tasks waiting for a worker ([`TaskRecord::queued_tool`](crate::TaskRecord::queued_tool))
    /// are left to the restarted node's worker loop. One transaction; each change is
    /// announced and written in the task's log, as [`recover_lapsed`](crate::TaskStore::recover_lapsed)
    /// writes a lost run's.
    ///
    /// A server that is the only one using this file calls it once at start, before it
    /// serves anything: every task still unfinished then was left by a process that is gone
    /// (crashed or killed), and no worker will ever finish it. Without this, such tasks
    /// would stay `working` until their lease lapsed and a sweep recovered them (or, for a
    /// task whose worker never took a lease, until its TTL ran out).
    ///
    /// **Never call it while another process serves tasks from the same file**: it cannot
    /// tell that process's running tasks from orphans, and would fail them under it. That
    /// is why it is a method of `SqliteStore` and not of the [`TaskStore`](crate::TaskStore) contract; shared
    /// backends rely on leases and the sweep instead. It [claims](Self::claim) the file
    /// first, so a second server process on the same file is refused here instead.
    pub async fn recover_unfinished(&self, lost: ErrorObject) -> Result<Recovered, StoreError> {
        self.claim()?;
        // Read here: the closure runs on another thread, outside the caller's scope.
        let scope = LogScope::current();
        self.run(move |conn, inner| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let now = inner.clock.now_ms();
            let mut recovered = Recovered::default();
            let mut events = Vec::new();
            for (mut rec, log) in db::unfinished(&tx, now)? {
                if rec.queued_tool().is_some() {
                    continue;
                }
                let recovery = rules::recover_lost(&mut rec, lost.clone(), now);
                let (counter, kind, payload) = match recovery {
                    Recovery::NotLapsed => continue,
                    Recovery::Requeued { attempt } => (
                        &mut recovered.requeued,
                        kinds::REQUEUE,
                        JsonObject::from_iter([("attempt".to_owned(), attempt.into())]),
                    ),
                    Recovery::Cancelled => (
                        &mut recovered.cancelled,
                        kinds::STATUS,
                        crate::log::terminal_payload(&rec),
                    ),
                    Recovery::Failed => (
                        &mut recovered.failed,
                        kinds::STATUS,
                        crate::log::terminal_payload(&rec),
                    ),
                };
                *counter += 1;
                let entry = LogDraft {
                    kind: kind.to_owned(),
                    payload,
                    node: scope.node.clone(),
                    actor: scope.actor.unwrap_or(Actor::Server),
                };
                let log = log::append(&tx, &rec.id, log, vec![entry], now, &inner.limits)?;
                db::save(&tx, &rec, log)?;
                if rec.is_terminal() {
                    db::release_live(&tx, rec.owner.as_str(), 1)?;
                }
                events.push(TaskEvent::changed(&rec));
            }
            tx.commit().map_err(backend)?;
            for event in events {
                inner.publish(event);
            }
            Ok(recovered)
        })
        .await
    }

    /// Runs `f` on the connection, on the blocking pool.
    async fn run<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection, &Inner) -> Result<R, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut conn = lock(&inner.conn);
            f(&mut conn, &inner)
        })
        .await
        .map_err(|e| backend(format!("store operation did not finish: {e}")))?
    }
}

impl Inner {
    fn publish(&self, event: TaskEvent) {
        // No subscriber is not an error.
        let _ = self.events.send(event);
    }
}

#[cfg(test)]
mod tests;
