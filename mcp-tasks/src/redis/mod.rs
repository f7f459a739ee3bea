//! [`RedisStore`]: the shared networked backend, for many server instances on one Redis.

mod backend;
mod conn;
mod db;
mod feed;
mod keys;
mod logs;
mod nodes;
mod operator;
mod place;
mod scripts;
mod sessions;
mod sweep;

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::clock::{Clock, SystemClock};
use crate::error::{BackendError, IntoStoreError, StoreError};
use crate::limits::Limits;
use conn::Conn;
use feed::Shared;
use keys::Keys;

/// The [`TaskStore`](crate::TaskStore) kept in Redis (7.0 or later), shared by any number
/// of server instances: every instance connects with the same URL and key prefix.
///
/// # Layout
///
/// One prefix is one isolated deployment. Its tasks are spread over *shards*, each under
/// its own hash tag, and every index and counter is kept per shard, in the shard's tag:
/// on a standalone server there is one shard, tagged `{prefix}` (default `{mcp-tasks}`);
/// on a Redis Cluster there are 16, tagged `{prefix:0}` to `{prefix:15}`, which the
/// cluster hashes to slots spread over its nodes. A task's shard is derived from its id
/// (FNV-1a of the id, modulo the shard count), so any handle finds it without a lookup.
///
/// In each shard (`{s}` below is the shard's tag): a hash per task `{s}:t:<id>` holding
/// the JSON [`TaskRecord`](crate::TaskRecord) (`rec`) and its revision (`rev`); a sorted
/// set per owner (`{s}:o:<owner>`, every score 0, members `<created_at>:<id>` encoded so
/// that their byte order is the `(created_at, id)` order, paged with `ZRANGEBYLEX`); a
/// sorted set of expiry times (`{s}:exp`); one of unfinished tasks' lease expiries
/// (`{s}:leases`); a lexicographic sorted set per tool of the tasks waiting for a worker
/// (`{s}:q:<tool>`); and the live-task counters (`{s}:live`: unfinished id -> owner,
/// whose length is the shard's total; `{s}:live_owner`: owner -> count); the operator's
/// view (contract rule 22: `{s}:op:all`, `{s}:op:s:<status>`, `{s}:op:t:<tool>`,
/// `{s}:op:h:<lease holder>`, ordered like the owner sets, and the counts `{s}:op:n`;
/// tasks written before them enter them at their next write, see `operator.rs`).
/// Each task's log (contract rule 23) is a list `{s}:l:<id>` beside the task's hash, so in
/// its slot: the entries kept, oldest first, as JSON; the hash also holds the log's next
/// `seq` (`ln`), the entries' sizes summed (`lb`), and the owner, expiry and status the
/// log's own scripts check (`own`, `exp`, `st`). The create and compare-and-set scripts
/// append the entries of the change with the record and apply retention; a tool's
/// append and a page's read are one script each; the purge deletes the list with the
/// hash. An idempotency key (contract rule 25) is a string
/// `{s}:i:<owner length>:<owner>:<key>` holding `<id>:<expires_at>` of the task created
/// with it, in that task's slot: a keyed create goes to the shard its owner and key hash
/// to (FNV-1a, modulo the shards holding a part of the limits; its id is drawn until it
/// lands there, about 16 draws on a cluster), so its create script checks the key and
/// stores both at once; the purge deletes it with the task. Sessions and the event channel are not sharded: they live under `{prefix}`. Listing
/// merges the owner's index of every shard (keyset order is preserved: each index is in
/// order); a claim merges the queues of every shard; a sweep walks the shards one by one.
///
/// The shard count is part of the layout and follows the server: a deployment written
/// on a standalone server is not found on a cluster (move it by re-creating the tasks);
/// data of earlier versions on a standalone server reads as before, since one shard
/// tagged `{prefix}` is the earlier layout. In cluster mode a prefix must not be another
/// prefix plus `:<digits>` (their tags would meet).
///
/// # Limits over shards
///
/// No command and no script ever touches two slots, so the live-task limits are split
/// over the shards as PostgreSQL's live-count shards split them: each of the first `m`
/// shards (`m` = the shard count, or either limit if smaller) holds `limit / m` units of
/// each limit (the first `limit % m` shards one more), and the create script of a shard
/// refuses when the shard's count for the owner or in total reached the shard's part. A
/// create first tries the shard of its (random) id; refused there, it reads every
/// shard's counts and, if some shard still has room for both limits, draws a new random
/// id in that shard and tries again. It is refused when no shard has room: exactly at
/// the limit when one shard has room for both whenever each limit has room somewhere
/// (always on a standalone server, where the one shard holds the whole limit); near
/// both limits at once on a cluster, a create may be refused a few units early. The
/// limits are never exceeded. A create with an idempotency key stays in its key's shard
/// (the key and the task must share a slot): on a cluster it is refused when that shard's
/// part of a limit is used up, even if another shard has room.
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
/// writes). On a cluster each shard lives on one primary and every command goes to it
/// (reads included, never to replicas), so the same holds per task.
///
/// # Redis Cluster
///
/// [`RedisOptions::url`] may name any node of a cluster (`redis://host:port`), or
/// several seed nodes (`redis://host:port,host:port`); at connect the first seed that
/// answers is asked `INFO cluster`, and `cluster_enabled:1` selects the `redis` crate's
/// cluster client (`cluster_async::ClusterConnection`), which sends each command to the
/// node of its key's slot, follows `MOVED` and `ASK` redirections and refreshes its slot
/// map. What still surfaces while slots migrate or a primary fails over (`MOVED`, `ASK`,
/// `TRYAGAIN`, `CLUSTERDOWN`, a node that cannot be reached) is
/// [`StoreError::Unavailable`]: retried like any outage, never a task failure. A cluster
/// connection whose commands keep failing at the connection level for a few seconds is
/// replaced by a fresh one (`conn/heal.rs`): after repeated cuts the crate's connection
/// can stay wedged while a new one to the same nodes answers at once.
///
/// # Events
///
/// The write scripts publish a small JSON payload (kind, owner, id, status, revision,
/// keys) on the channel `{prefix}:events`. Each handle keeps a dedicated pub/sub
/// connection subscribed to it and forwards what arrives into its
/// [`events`](crate::TaskStore::events) feed, so a change through any handle in any
/// process reaches every handle. On a cluster the scripts run on the shards' nodes and
/// use the classic `PUBLISH`, which Redis Cluster forwards to every node, so a handle's
/// subscription is a plain connection to one node (the seed that answered; after a
/// failure it moves on to the other primaries and seeds). Sharded pub/sub
/// (`SPUBLISH`) was not chosen: one channel per shard would need a subscription per
/// shard's node that follows slot migrations, and the cluster bus traffic of `PUBLISH`
/// is small beside the writes themselves. A write
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
/// hour; `None` disables it), measured by the Redis server's own clock from the create
/// (its log key gets the same instant);
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
    /// built with TLS): a standalone server, or any node of a Redis Cluster (told apart
    /// at connect). Several seed nodes of a cluster: `redis://host:port,host:port`.
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
    conn: Conn,
    keys: Keys,
    limits: Limits,
    clock: Arc<dyn Clock>,
    safety_slack: Option<Duration>,
    shared: Arc<Shared>,
    pump: JoinHandle<()>,
    /// The unfinished records this handle wrote last (`recent.rs`).
    recent: crate::recent::Recent,
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

/// A Redis failure as a [`StoreError`], classified as transient or not (below), its
/// message prefixed with `redis`.
pub(crate) fn store_error(e: impl IntoStoreError) -> StoreError {
    e.into_store_error().context("redis")
}

/// Redis failures that pass: I/O (refused, dropped, timed out), and the server's
/// `READONLY` (a replica during a failover), `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`,
/// `LOADING`, and on a cluster `MOVED` and `ASK` (a slot migrating or a primary failed
/// over, once the cluster client's own redirections ran out) and a node the cluster
/// client has no connection to. Everything else (a script error, a wrong type,
/// authentication, `CROSSSLOT`) stays.
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
                        | ServerErrorKind::Moved
                        | ServerErrorKind::Ask
                ) | ErrorKind::ClusterConnectionNotFound
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
    /// itself; on a cluster, one per node, following the slot map) and one pub/sub
    /// connection, subscribed before this returns.
    pub async fn connect_with(options: RedisOptions) -> Result<RedisStore, StoreError> {
        Keys::new(&options.prefix)?;
        let connected = conn::connect(&options.url).await?;
        let shards = if connected.cluster {
            keys::CLUSTER_SHARDS
        } else {
            1
        };
        let keys = Keys::sharded(&options.prefix, shards)?;
        let shared = Arc::new(Shared::new().map_err(store_error)?);
        let channel = keys.channel();
        let (at, pubsub) = feed::subscribe(&connected.nodes, 0, &channel)
            .await
            .map_err(store_error)?;
        let pump = tokio::spawn(feed::pump(
            connected.nodes,
            at,
            channel,
            Arc::clone(&shared),
            pubsub,
        ));
        Ok(RedisStore {
            inner: Arc::new(Inner {
                conn: connected.conn,
                keys,
                limits: options.limits,
                clock: options.clock,
                safety_slack: options.safety_slack,
                shared,
                pump,
                recent: Default::default(),
            }),
        })
    }

    /// The unfinished tasks counted against the limits: `owner`'s, and all owners'
    /// (summed over the shards).
    pub async fn live_tasks(
        &self,
        owner: &crate::record::Owner,
    ) -> Result<(usize, usize), StoreError> {
        let counts = self.inner.shard_counts(owner).await?;
        let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let mine = counts.iter().map(|c| c.owner).sum();
        let total = counts.iter().map(|c| c.total).sum();
        Ok((n(mine), n(total)))
    }

    /// Whether this handle talks to a Redis Cluster (and spreads the deployment over
    /// shards) rather than to a standalone server.
    pub fn is_cluster(&self) -> bool {
        self.inner.keys.shards() > 1
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

    /// Deletes every key of the deployment `prefix` on the node at `url` (`SCAN` +
    /// `UNLINK`, one key per command: on a cluster node the keys of one `SCAN` page are
    /// in many slots); returns how many. On a cluster, call it for every node.
    pub(crate) fn delete_prefix(
        url: &str,
        prefix: &str,
        timeout: Duration,
    ) -> Result<usize, StoreError> {
        let keys = Keys::new(prefix)?;
        let pattern = keys.pattern();
        let mut conn = connect(url, timeout)?;
        let mut cursor: u64 = 0;
        let mut deleted = 0;
        loop {
            let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query(&mut conn)
                .map_err(store_error)?;
            let mine: Vec<&String> = found.iter().filter(|k| keys.owns(k)).collect();
            if !mine.is_empty() {
                let mut pipe = redis::pipe();
                for key in mine {
                    pipe.cmd("UNLINK").arg(key);
                }
                let counts: Vec<usize> = pipe.query(&mut conn).map_err(store_error)?;
                deleted += counts.iter().sum::<usize>();
            }
            if next == 0 {
                return Ok(deleted);
            }
            cursor = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use redis::{ErrorKind, RedisError, ServerErrorKind};

    use super::store_error;

    #[test]
    fn cluster_redirections_and_outages_are_transient() {
        let transient = [
            ErrorKind::Server(ServerErrorKind::Moved),
            ErrorKind::Server(ServerErrorKind::Ask),
            ErrorKind::Server(ServerErrorKind::TryAgain),
            ErrorKind::Server(ServerErrorKind::ClusterDown),
            ErrorKind::ClusterConnectionNotFound,
        ];
        for kind in transient {
            let e = store_error(RedisError::from((kind, "MOVED 15836 127.0.0.1:7103")));
            assert!(e.is_transient(), "{kind:?}: {e:?}");
        }
        let e = store_error(RedisError::from((
            ErrorKind::Server(ServerErrorKind::CrossSlot),
            "CROSSSLOT",
        )));
        assert!(!e.is_transient(), "{e:?}");
    }
}
