//! [`RedisStore`]: the shared networked backend, for many server instances on one Redis.

mod backend;
mod db;
mod feed;
mod keys;
mod scripts;
mod sessions;
mod sweep;

use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionManager;
use tokio::task::JoinHandle;

use crate::clock::{Clock, SystemClock};
use crate::error::{BackendError, IntoStoreError, StoreError};
use crate::limits::Limits;
use feed::Shared;
use keys::Keys;

/// The [`TaskStore`](crate::TaskStore) kept in Redis (7.0 or later), shared by any number
/// of server instances: every instance connects with the same URL and key prefix.
///
/// # Layout
///
/// All keys start with the hash tag `{prefix}` (default `{mcp-tasks}`), so one prefix is
/// one isolated deployment, and a Redis Cluster keeps the whole deployment in one slot
/// (which the multi-key scripts need). Per task a hash `{p}:t:<id>` holds the JSON
/// [`TaskRecord`](crate::TaskRecord) (`rec`) and its revision (`rev`). Indexes: a sorted
/// set per owner (`{p}:o:<owner>`, every score 0, members `<created_at>:<id>` encoded so
/// that their byte order is the `(created_at, id)` order, paged with `ZRANGEBYLEX`), a
/// sorted set of expiry times (`{p}:exp`), one of unfinished tasks' lease expiries
/// (`{p}:leases`), and the live-task counters (`{p}:live`: unfinished id -> owner, whose
/// length is the total; `{p}:live_owner`: owner -> count).
///
/// # Atomicity
///
/// The state machine is not re-implemented in Lua. Every change reads the record, applies
/// the rule function of [`rules`](crate::rules) in Rust, and writes the result back with a
/// Lua script that first compares the stored revision with the one read
/// (compare-and-set). A script runs atomically on the server, so of two writers that read
/// the same revision exactly one succeeds; the other re-reads and re-applies the rule, up
/// to a bounded number of attempts (then [`StoreError::Unavailable`]). Hence *first terminal
/// write wins* across any number of handles and processes: the loser re-reads a terminal
/// record, and the rule reports `won: false` without writing. The same script updates the
/// indexes and counters and publishes the events, so nobody sees one without the other.
///
/// # Consistency
///
/// A single Redis server is strongly consistent: when `create` returns, every handle reads
/// the task. With replicas, every handle must talk to the primary (replication is
/// asynchronous; a replica may not have the task yet, and a failover may lose the last
/// writes).
///
/// # Events
///
/// The write scripts publish a small JSON payload (kind, owner, id, status, revision,
/// keys) on the channel `{p}:events`. Each handle keeps a dedicated pub/sub connection
/// subscribed to it and forwards what arrives into its [`events`](crate::TaskStore::events)
/// feed, so a change through any handle in any process reaches every handle. A write
/// returns once its own event has come back into its handle's feed (waiting at most a
/// second), so a subscription made after a write returns never hears that write.
///
/// Redis pub/sub is fire-and-forget: a message published while a subscriber is
/// disconnected is lost. So when the subscription drops (or stops answering the ping sent
/// every 5 s), every [`EventStream`](crate::EventStream) of the handle reports
/// [`EventError::Lagged(0)`](crate::EventError::Lagged) at once; the handle reconnects with
/// backoff (50 ms doubling to 5 s), resubscribes, and reports `Lagged(0)` again. A waiter
/// re-reads the record on `Lagged`, so none sleeps through a missed change.
///
/// # Time and expiry
///
/// The store's [`Clock`] alone decides expiry: a task past `created_at + ttl` reads as
/// `NotFound` before any sweep, and [`sweep`](crate::TaskStore::sweep) deletes it with its
/// index entries. As a safety net for deployments where no sweeper runs, the task key
/// also gets a Redis expiry of `ttl + slack` ([`RedisOptions::safety_slack`], default one
/// hour; `None` disables it), measured by the Redis server's own clock from the create;
/// the index keys are given an expiry no earlier than that of any task they index (and
/// none while a task without TTL exists). The slack is real time, independent of the
/// store's clock, so the clock-based rules hold with a [`ManualClock`](crate::ManualClock)
/// as long as a test does not run longer than the slack. A task removed by the safety net
/// before any sweep is still reported and uncounted by the next sweep; its listing entry
/// is dropped by the next `list` that meets it.
///
/// # Durability
///
/// A write is acknowledged when the Redis server applied it in memory; what survives a
/// crash is Redis's persistence configuration, not this store's:
///
/// - **AOF with `appendfsync always`**: every write script is fsynced to the log before
///   Redis replies, so an acknowledged create or terminal write survives a crash of Redis
///   or of its machine (at a large cost in write throughput).
/// - **AOF with `appendfsync everysec`** (Redis's recommended default for AOF): a crash of
///   the machine may lose about the last second of acknowledged writes; a crash of the
///   Redis process alone loses nothing the OS already had.
/// - **RDB snapshots only**: everything since the last snapshot (minutes) may be lost.
/// - **No persistence** (as in this project's tests): a restart loses every task.
///
/// Each script is replicated and logged as one unit, so recovery never shows half a write.
/// With replicas, `WAIT` is not used: a failover may lose acknowledged writes.
///
/// A Redis failure that passes (I/O, a command that took longer than 10 s, `READONLY`
/// during a failover...) is [`StoreError::Unavailable`]; any other is
/// [`StoreError::Backend`]. An `Unavailable` error on a write means its outcome is unknown
/// (the connection may have dropped after the script ran): retrying is safe.
#[derive(Debug, Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

/// How to connect a [`RedisStore`].
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// `redis://[user:password@]host:port[/db]` (or `rediss://` if the `redis` crate is
    /// built with TLS).
    pub url: String,
    /// Names the deployment: handles with the same prefix share tasks, others never see
    /// them. Must not contain `{` or `}`. Default `mcp-tasks`.
    pub prefix: String,
    /// The limits the store applies.
    pub limits: Limits,
    /// Where time comes from (rule 17). Default: the system clock.
    pub clock: Arc<dyn Clock>,
    /// The Redis key-expiry safety net: a task key expires `ttl + slack` after its
    /// creation (server time) even if no sweep runs. `None` disables it. Default 1 hour.
    pub safety_slack: Option<Duration>,
}

impl RedisOptions {
    /// Options for `url` with the defaults.
    pub fn new(url: impl Into<String>) -> RedisOptions {
        RedisOptions {
            url: url.into(),
            prefix: "mcp-tasks".to_owned(),
            limits: Limits::default(),
            clock: Arc::new(SystemClock),
            safety_slack: Some(Duration::from_secs(60 * 60)),
        }
    }

    /// With this key prefix.
    pub fn prefix(mut self, prefix: impl Into<String>) -> RedisOptions {
        self.prefix = prefix.into();
        self
    }

    /// With these limits.
    pub fn limits(mut self, limits: Limits) -> RedisOptions {
        self.limits = limits;
        self
    }

    /// Reading time from `clock`.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> RedisOptions {
        self.clock = clock;
        self
    }

    /// With this safety-net slack (`None`: no Redis key expiry).
    pub fn safety_slack(mut self, slack: Option<Duration>) -> RedisOptions {
        self.safety_slack = slack;
        self
    }
}

struct Inner {
    conn: ConnectionManager,
    keys: Keys,
    limits: Limits,
    clock: Arc<dyn Clock>,
    safety_slack: Option<Duration>,
    shared: Arc<Shared>,
    pump: JoinHandle<()>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("keys", &self.keys)
            .field("limits", &self.limits)
            .field("clock", &self.clock)
            .field("safety_slack", &self.safety_slack)
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle is gone: close the subscription (and with it the event feed).
        self.pump.abort();
    }
}

/// How long a command may take before it fails with [`StoreError::Unavailable`].
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// A Redis failure as a [`StoreError`], classified as transient or not (below), its
/// message prefixed with `redis`.
pub(crate) fn store_error(e: impl IntoStoreError) -> StoreError {
    e.into_store_error().context("redis")
}

/// Redis failures that pass: I/O (refused, dropped, timed out), and the server's
/// `READONLY` (a replica during a failover), `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN` and
/// `LOADING`. Everything else (a script error, a wrong type, authentication) stays.
impl IntoStoreError for redis::RedisError {
    fn into_store_error(self) -> StoreError {
        use redis::{ErrorKind, ServerErrorKind};
        let transient = self.is_io_error()
            || self.is_timeout()
            || self.is_connection_dropped()
            || self.is_connection_refusal()
            || matches!(
                self.kind(),
                ErrorKind::Server(
                    ServerErrorKind::ReadOnly
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::BusyLoading
                )
            );
        let e = BackendError::with_source(self.to_string(), self);
        if transient {
            StoreError::Unavailable(e)
        } else {
            StoreError::Backend(e)
        }
    }
}

impl RedisStore {
    /// Connects to `url` with the default prefix, these limits and the system clock.
    pub async fn connect(url: &str, limits: Limits) -> Result<RedisStore, StoreError> {
        RedisStore::connect_with(RedisOptions::new(url).limits(limits)).await
    }

    /// Connects with `options`: one multiplexed command connection (reconnecting by
    /// itself) and one pub/sub connection, subscribed before this returns.
    pub async fn connect_with(options: RedisOptions) -> Result<RedisStore, StoreError> {
        let keys = Keys::new(&options.prefix)?;
        let client = redis::Client::open(options.url.as_str()).map_err(store_error)?;
        // The default 500 ms response timeout is short for a 16 MiB result; a timed-out
        // write has an unknown outcome, so allow more.
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(Duration::from_secs(5)));
        // One plain connection first: a server that refuses or does not answer is said at
        // once (the manager below retries its first connection with backoffs, for seconds).
        let probe = tokio::time::timeout(
            Duration::from_secs(5),
            client.get_multiplexed_async_connection(),
        )
        .await
        .map_err(|e| store_error(e).at(&client.get_connection_info().addr().to_string()))?;
        drop(
            probe
                .map_err(|e| store_error(e).at(&client.get_connection_info().addr().to_string()))?,
        );
        let conn = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(store_error)?;
        let shared = Arc::new(Shared::new().map_err(store_error)?);
        let channel = keys.channel();
        let pubsub = feed::subscribe(&client, &channel)
            .await
            .map_err(store_error)?;
        let pump = tokio::spawn(feed::pump(client, channel, Arc::clone(&shared), pubsub));
        Ok(RedisStore {
            inner: Arc::new(Inner {
                conn,
                keys,
                limits: options.limits,
                clock: options.clock,
                safety_slack: options.safety_slack,
                shared,
                pump,
            }),
        })
    }

    /// The unfinished tasks counted against the limits: `owner`'s, and all owners'.
    pub async fn live_tasks(&self, owner: &crate::Owner) -> Result<(usize, usize), StoreError> {
        let keys = &self.inner.keys;
        let (mine, total): (Option<u64>, u64) = redis::pipe()
            .cmd("HGET")
            .arg(keys.live_per_owner())
            .arg(owner.as_str())
            .cmd("HLEN")
            .arg(keys.live())
            .query_async(&mut self.inner.conn.clone())
            .await
            .map_err(store_error)?;
        let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        Ok((n(mine.unwrap_or(0)), n(total)))
    }
}

/// Blocking helpers for the conformance kit (no runtime needed, usable in `Drop`).
#[cfg(feature = "conformance")]
pub(crate) mod blocking {
    use std::time::Duration;

    use super::{Keys, store_error};
    use crate::error::StoreError;

    fn connect(url: &str, timeout: Duration) -> Result<redis::Connection, StoreError> {
        let client = redis::Client::open(url).map_err(store_error)?;
        let conn = client
            .get_connection_with_timeout(timeout)
            .map_err(store_error)?;
        conn.set_read_timeout(Some(timeout)).map_err(store_error)?;
        conn.set_write_timeout(Some(timeout)).map_err(store_error)?;
        Ok(conn)
    }

    /// Whether a Redis server answers `PING` at `url` within `timeout`.
    pub(crate) fn ping(url: &str, timeout: Duration) -> Result<(), StoreError> {
        let mut conn = connect(url, timeout)?;
        redis::cmd("PING")
            .query::<String>(&mut conn)
            .map_err(store_error)?;
        Ok(())
    }

    /// Deletes every key of the deployment `prefix` (`SCAN` + `DEL`); returns how many.
    pub(crate) fn delete_prefix(
        url: &str,
        prefix: &str,
        timeout: Duration,
    ) -> Result<usize, StoreError> {
        let pattern = Keys::new(prefix)?.pattern();
        let mut conn = connect(url, timeout)?;
        let mut cursor: u64 = 0;
        let mut deleted = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query(&mut conn)
                .map_err(store_error)?;
            if !keys.is_empty() {
                deleted += redis::cmd("UNLINK")
                    .arg(&keys)
                    .query::<usize>(&mut conn)
                    .map_err(store_error)?;
            }
            if next == 0 {
                return Ok(deleted);
            }
            cursor = next;
        }
    }
}
