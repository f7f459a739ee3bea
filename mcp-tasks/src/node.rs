//! The node registry (contract rule 24): which server processes (nodes) share a store,
//! their role, when they started and last said they were alive, and whether an operator
//! asked one to drain (take no new work, finish what it holds, then say it is drained).
//!
//! A node writes its own entry with [`TaskStore::heartbeat_node`](crate::TaskStore::heartbeat_node)
//! every [`NodeBeat::interval_ms`] and reads the drain request in the answer; the
//! operator reads them all with [`TaskStore::list_nodes`](crate::TaskStore::list_nodes)
//! and asks for a drain with [`TaskStore::request_drain`](crate::TaskStore::request_drain).
//! Time is the store's: a node whose last heartbeat is [`LOST_AFTER_BEATS`] intervals old
//! is [`NodeState::Lost`], and one [`FORGET_AFTER_MS`] past that is removed.

use crate::record::Millis;

/// A node is lost when its last heartbeat is this many of its intervals old.
pub const LOST_AFTER_BEATS: i64 = 3;

/// A lost node is removed from the registry this long after it became lost (15 minutes).
pub const FORGET_AFTER_MS: i64 = 15 * 60 * 1000;

/// What a node says in each heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeBeat {
    /// The node's id (the holder name of its leases).
    pub id: String,
    /// What it does with tasks: `api`, `worker` or `all` (any short text to the store).
    pub role: String,
    /// How often it beats, in milliseconds (at least 1): its entry is
    /// [`NodeState::Lost`] after [`LOST_AFTER_BEATS`] of them without a beat.
    pub interval_ms: u64,
    /// `true` for the first beat of a process: the entry starts afresh (`started_at` is
    /// now, no drain asked), whatever an earlier process of the same id left.
    pub starting: bool,
    /// The node was asked to drain and holds no task any more. Recorded only while a
    /// drain is asked.
    pub drained: bool,
}

/// Where a node stands, as the store sees it at the time of the read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeState {
    /// Beating, not asked to drain.
    Active,
    /// Asked to drain; still holds work, or has not said it finished.
    Draining,
    /// Asked to drain, and said it holds no task.
    Drained,
    /// No heartbeat for [`LOST_AFTER_BEATS`] intervals (whatever it was before).
    Lost,
}

impl NodeState {
    /// `active`, `draining`, `drained` or `lost`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Active => "active",
            NodeState::Draining => "draining",
            NodeState::Drained => "drained",
            NodeState::Lost => "lost",
        }
    }
}

/// A node's entry in the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRecord {
    /// The node's id.
    pub id: String,
    /// Its role, as it last said.
    pub role: String,
    /// When its process first beat (store time).
    pub started_at: Millis,
    /// Its last heartbeat (store time).
    pub heartbeat_at: Millis,
    /// Its heartbeat interval, in milliseconds.
    pub interval_ms: u64,
    /// An operator asked it to drain.
    pub drain_requested: bool,
    /// It said it holds no task since the drain was asked.
    pub drained: bool,
    /// Its state at the time of the read.
    pub state: NodeState,
}

impl NodeRecord {
    /// The entry as read at `now`: `drained` kept only while a drain is asked, and its
    /// [`state`](Self::state) set (what every backend returns).
    pub fn settled(mut self, now: Millis) -> NodeRecord {
        self.drained = self.drained && self.drain_requested;
        self.state = self.state_at(now);
        self
    }

    /// When the entry becomes [`NodeState::Lost`]: [`LOST_AFTER_BEATS`] intervals after
    /// its last heartbeat.
    pub fn lost_at(&self) -> Millis {
        lost_at(self.heartbeat_at, self.interval_ms)
    }

    /// When the entry is removed: [`FORGET_AFTER_MS`] after it became lost.
    pub fn forget_at(&self) -> Millis {
        self.lost_at().saturating_add(FORGET_AFTER_MS)
    }

    /// Its state at `now`.
    pub fn state_at(&self, now: Millis) -> NodeState {
        if now >= self.lost_at() {
            NodeState::Lost
        } else if self.drained && self.drain_requested {
            NodeState::Drained
        } else if self.drain_requested {
            NodeState::Draining
        } else {
            NodeState::Active
        }
    }
}

/// [`NodeRecord::lost_at`] of these fields (what the SQL stores compute in a statement).
pub fn lost_at(heartbeat_at: Millis, interval_ms: u64) -> Millis {
    let interval = i64::try_from(interval_ms.max(1)).unwrap_or(i64::MAX);
    heartbeat_at.saturating_add(interval.saturating_mul(LOST_AFTER_BEATS))
}

/// The entries of `records` not forgotten at `now`, by id (what every backend's
/// listing returns after it removed the forgotten ones).
pub fn kept(mut records: Vec<NodeRecord>, now: Millis) -> Vec<NodeRecord> {
    records.retain(|r| now < r.forget_at());
    records.sort_by(|a, b| a.id.cmp(&b.id));
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(drain: bool, drained: bool, now: Millis) -> NodeRecord {
        NodeRecord {
            id: "n".into(),
            role: "worker".into(),
            started_at: 0,
            heartbeat_at: 1_000,
            interval_ms: 100,
            drain_requested: drain,
            drained,
            state: NodeState::Active,
        }
        .settled(now)
    }

    #[test]
    fn states_follow_the_flags_and_the_heartbeat_age() {
        assert_eq!(entry(false, false, 1_000).state, NodeState::Active);
        assert_eq!(entry(true, false, 1_000).state, NodeState::Draining);
        assert_eq!(entry(true, true, 1_000).state, NodeState::Drained);
        // Drained without a drain asked is not recorded.
        assert_eq!(entry(false, true, 1_000).state, NodeState::Active);
        assert!(!entry(false, true, 1_000).drained);
        assert_eq!(entry(false, false, 1_299).state, NodeState::Active);
        assert_eq!(entry(true, true, 1_300).state, NodeState::Lost);
        let e = entry(false, false, 0);
        assert_eq!(e.forget_at(), 1_300 + FORGET_AFTER_MS);
        assert_eq!(kept(vec![e.clone()], e.forget_at() - 1).len(), 1);
        assert!(kept(vec![e.clone()], e.forget_at()).is_empty());
    }
}
