//! [`Healing`]: the Redis Cluster command connection, replaced by a fresh one when its
//! commands keep failing.
//!
//! The `redis` crate's `cluster_async::ClusterConnection` repairs its node connections by
//! itself, but after every node's connection was cut a few times, seconds apart, it can
//! stay wedged: every command times out after [`RESPONSE_TIMEOUT`] for minutes while a
//! new connection to the same nodes answers at once (its request task stops making
//! progress). So every command's outcome is watched here. A command failing at the
//! connection level (I/O, a timeout, no connection to a node) starts a failure streak,
//! during which the connection is probed with `PING` every [`PROBE_EVERY`] (answer within
//! [`PROBE_TIMEOUT`]), sent to one node at random: it tells whether the connection itself
//! still works, not whether every node is up (a `PING` left to the cluster client goes
//! to every primary and fails while any one is down, as during a failover). Any success
//! ends the streak. When the streak has lasted
//! [`HEAL_AFTER`] (two failures at least), a fresh connection is opened from the kept
//! [`ClusterClient`] in the background (bounded by [`CONNECT_TIMEOUT`]) and swapped in
//! for every clone of the handle; the old one closes once its last command is done. A
//! failed attempt (the cluster still out of reach) is tried again after [`HEAL_AFTER`]
//! while the streak goes on.
//!
//! The healthy path costs a read lock held only to clone the current connection, and one
//! atomic load after the command.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use redis::aio::ConnectionLike;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult, Value};

use super::{CONNECT_TIMEOUT, RESPONSE_TIMEOUT};

/// How long commands must keep failing at the connection level, with no success in
/// between, before the connection is replaced (and between two attempts).
const HEAL_AFTER: Duration = Duration::from_secs(5);
/// How often a failing connection is probed.
const PROBE_EVERY: Duration = Duration::from_secs(1);
/// How long a probe waits for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A Redis Cluster command connection that replaces itself when it stops working;
/// cloning it is cheap (every clone shares the current connection and its health).
#[derive(Clone)]
pub(crate) struct Healing {
    shared: Arc<Shared>,
}

struct Shared {
    /// Where fresh connections come from (the seeds and settings of the first).
    client: ClusterClient,
    /// The connection commands go to; the lock is held only to clone or replace it.
    current: RwLock<ClusterConnection>,
    /// What the failures tell.
    health: Health,
    /// A replacement is under way.
    rebuilding: AtomicBool,
    /// A probe is running.
    probing: AtomicBool,
}

impl Healing {
    /// Watches `conn`, opened from `client`.
    pub(super) fn new(client: ClusterClient, conn: ClusterConnection) -> Healing {
        Healing {
            shared: Arc::new(Shared {
                client,
                current: RwLock::new(conn),
                health: Health::new(),
                rebuilding: AtomicBool::new(false),
                probing: AtomicBool::new(false),
            }),
        }
    }

    fn current(&self) -> ClusterConnection {
        self.shared.current()
    }

    /// Notes the outcome of a command.
    fn observe<T>(&self, result: &RedisResult<T>) {
        match result {
            Ok(_) => self.shared.health.succeeded(),
            Err(e) if connection_failure(e) => {
                let waited = if e.is_timeout() {
                    RESPONSE_TIMEOUT
                } else {
                    Duration::ZERO
                };
                self.shared.failed(waited);
            }
            Err(_) => {}
        }
    }
}

impl Shared {
    fn current(&self) -> ClusterConnection {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A command failed at the connection level after `waited`: a replacement starts when
    /// it is due, and the connection is probed until the failures end.
    fn failed(self: &Arc<Shared>, waited: Duration) {
        let due = self.health.failed(waited);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if due && !self.rebuilding.swap(true, Ordering::AcqRel) {
            runtime.spawn(Arc::clone(self).rebuild());
        }
        // SeqCst, as the probe's hand-off below: either this sees the probe gone, or the
        // probe sees this streak (`Health::failed` stored `failing_since` SeqCst).
        if !self.probing.swap(true, Ordering::SeqCst) {
            runtime.spawn(Shared::probe(Arc::downgrade(self)));
        }
    }

    /// While a failure streak lasts, sends `PING` to one node at random every
    /// [`PROBE_EVERY`] (waiting at most [`PROBE_TIMEOUT`]), so that a connection that no longer answers is found out (and
    /// replaced) without waiting for commands to time out, and one that answers again
    /// ends the streak. It holds the handle only while it probes: once every clone is
    /// dropped, it ends.
    async fn probe(this: Weak<Shared>) {
        loop {
            tokio::time::sleep(PROBE_EVERY).await;
            let Some(shared) = this.upgrade() else {
                return;
            };
            if !shared.health.failing() {
                shared.probing.store(false, Ordering::SeqCst);
                // A streak that began meanwhile, whose failure saw this probe still on
                // (SeqCst store then load, against `failed`'s store then swap).
                if !shared.health.failing() || shared.probing.swap(true, Ordering::SeqCst) {
                    return;
                }
            }
            let mut conn = shared.current();
            let ping = tokio::time::timeout(
                PROBE_TIMEOUT,
                conn.route_command(redis::cmd("PING"), probe_routing()),
            )
            .await;
            match ping {
                Ok(Ok(_)) => shared.health.succeeded(),
                Ok(Err(e)) if connection_failure(&e) => shared.failed(Duration::ZERO),
                Ok(Err(_)) => {}
                Err(_) => shared.failed(PROBE_TIMEOUT),
            }
        }
    }

    /// Opens a fresh connection and swaps it in.
    async fn rebuild(self: Arc<Shared>) {
        let failing = self.health.failing_for();
        let fresh = tokio::time::timeout(CONNECT_TIMEOUT, self.client.get_async_connection()).await;
        match fresh {
            Ok(Ok(fresh)) => {
                let old = std::mem::replace(
                    &mut *self.current.write().unwrap_or_else(PoisonError::into_inner),
                    fresh,
                );
                // The old one closes when its last command is done.
                drop(old);
                self.health.reset();
                tracing::warn!(
                    failing_ms = u64::try_from(failing.as_millis()).unwrap_or(u64::MAX),
                    "Redis Cluster: commands kept failing; replaced the cluster connection \
                     with a fresh one"
                );
            }
            Ok(Err(e)) => {
                tracing::debug!("Redis Cluster: a fresh cluster connection failed: {e}");
            }
            Err(_) => tracing::debug!(
                "Redis Cluster: a fresh cluster connection took over {CONNECT_TIMEOUT:?}"
            ),
        }
        self.health.attempted();
        self.rebuilding.store(false, Ordering::Release);
    }
}

impl ConnectionLike for Healing {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut conn = self.current();
            let result = conn.req_packed_command(cmd).await;
            self.observe(&result);
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut conn = self.current();
            let result = conn.req_packed_commands(pipeline, offset, count).await;
            self.observe(&result);
            result
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// Where a probe goes: one node, any (the cluster client's own routing of `PING` is every
/// primary, all of which must answer).
fn probe_routing() -> RoutingInfo {
    RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random)
}

/// Whether `e` says the connection (not the command) failed: I/O, a timeout, a node the
/// cluster client has no connection to.
fn connection_failure(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.kind() == ErrorKind::ClusterConnectionNotFound
}

/// The failure streak of a connection, in milliseconds since `origin` (plus one: 0 is
/// "none").
struct Health {
    origin: Instant,
    /// When the streak began: the start of its first failed command (a timed-out command
    /// waited [`RESPONSE_TIMEOUT`]), or the last success seen during it if later. 0: none.
    failing_since: AtomicU64,
    /// The last success seen while a streak was on.
    last_ok: AtomicU64,
    /// The failures of the streak.
    failures: AtomicU32,
    /// The last replacement attempt.
    last_attempt: AtomicU64,
}

impl Health {
    fn new() -> Health {
        Health {
            origin: Instant::now(),
            failing_since: AtomicU64::new(0),
            last_ok: AtomicU64::new(0),
            failures: AtomicU32::new(0),
            last_attempt: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1)
    }

    /// A command succeeded: the streak (if any) ends.
    fn succeeded(&self) {
        if self.failing_since.load(Ordering::SeqCst) != 0 {
            self.succeeded_at(self.now());
        }
    }

    fn succeeded_at(&self, now: u64) {
        self.last_ok.fetch_max(now, Ordering::Relaxed);
        self.failing_since.store(0, Ordering::SeqCst);
        self.failures.store(0, Ordering::Relaxed);
    }

    /// A command failed at the connection level after `waited`: whether the connection
    /// is now due for a replacement.
    fn failed(&self, waited: Duration) -> bool {
        self.failed_at(self.now(), waited)
    }

    fn failed_at(&self, now: u64, waited: Duration) -> bool {
        let waited = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
        // A success seen after the command started shows the connection still works.
        let start = now
            .saturating_sub(waited)
            .max(self.last_ok.load(Ordering::Relaxed))
            .max(1);
        let since =
            match self
                .failing_since
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |since| {
                    (since == 0 || start < since).then_some(start)
                }) {
                Ok(_) => start,
                Err(since) => since,
            };
        let failures = self
            .failures
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        let heal_after = u64::try_from(HEAL_AFTER.as_millis()).unwrap_or(u64::MAX);
        let last_attempt = self.last_attempt.load(Ordering::Relaxed);
        // Two failures at least: one slow command alone is no sign of a broken connection.
        failures >= 2
            && now.saturating_sub(since) >= heal_after
            && (last_attempt == 0 || now.saturating_sub(last_attempt) >= heal_after)
    }

    /// Whether a failure streak is on.
    fn failing(&self) -> bool {
        self.failing_since.load(Ordering::SeqCst) != 0
    }

    /// How long the current streak has lasted.
    fn failing_for(&self) -> Duration {
        let since = self.failing_since.load(Ordering::SeqCst);
        if since == 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(self.now().saturating_sub(since))
    }

    /// A fresh connection was swapped in: a new start (commands still running on the old
    /// one count as started now).
    fn reset(&self) {
        self.last_ok.fetch_max(self.now(), Ordering::Relaxed);
        self.failing_since.store(0, Ordering::SeqCst);
        self.failures.store(0, Ordering::Relaxed);
    }

    /// A replacement was attempted (whatever its outcome).
    fn attempted(&self) {
        self.last_attempt.store(self.now(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1000;

    #[test]
    fn failures_for_a_while_without_success_call_for_a_fresh_connection() {
        let h = Health::new();
        // Fast failures (refused, dropped) over less than HEAL_AFTER: not yet.
        assert!(!h.failed_at(10 * SEC, Duration::ZERO));
        assert!(!h.failed_at(12 * SEC, Duration::ZERO));
        assert!(h.failed_at(15 * SEC, Duration::ZERO));
        // After an attempt, the next one waits HEAL_AFTER.
        h.last_attempt.store(15 * SEC, Ordering::Relaxed);
        assert!(!h.failed_at(16 * SEC, Duration::ZERO));
        assert!(h.failed_at(20 * SEC, Duration::ZERO));
    }

    #[test]
    fn timed_out_commands_count_from_their_start_unless_a_success_came_since() {
        let h = Health::new();
        // One slow command alone: no.
        assert!(!h.failed_at(30 * SEC, RESPONSE_TIMEOUT));
        // A second one: the streak began 10 s ago.
        assert!(h.failed_at(31 * SEC, RESPONSE_TIMEOUT));

        // Commands that started during an outage time out after it ended, while others
        // already succeed: the connection works, no replacement.
        let h = Health::new();
        assert!(!h.failed_at(40 * SEC, Duration::ZERO));
        h.succeeded_at(43 * SEC);
        assert!(!h.failed_at(44 * SEC, RESPONSE_TIMEOUT));
        assert!(!h.failed_at(45 * SEC, RESPONSE_TIMEOUT));
        // ... unless the failures go on for HEAL_AFTER past that success.
        assert!(h.failed_at(48 * SEC, Duration::ZERO));
    }

    #[test]
    fn probes_go_to_a_single_node() {
        // Not every primary: one down (a failover) must not fail the probe.
        assert_eq!(
            probe_routing(),
            RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random)
        );
    }

    #[test]
    fn a_success_ends_the_streak() {
        let h = Health::new();
        assert!(!h.failed_at(SEC, Duration::ZERO));
        h.succeeded_at(4 * SEC);
        assert!(!h.failed_at(7 * SEC, Duration::ZERO));
        assert!(!h.failed_at(8 * SEC, Duration::ZERO));
        assert!(h.failed_at(12 * SEC, Duration::ZERO));
    }
}
