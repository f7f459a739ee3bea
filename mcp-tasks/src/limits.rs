//! What a store refuses, and the defaults it applies.

/// Limits and defaults of a store. Every refusal is a typed
/// [`StoreError::LimitExceeded`](crate::StoreError::LimitExceeded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Unfinished tasks one owner may have at once.
    pub max_live_tasks_per_owner: usize,
    /// Unfinished tasks all owners together may have at once.
    pub max_live_tasks_total: usize,
    /// Input requests one task may have outstanding at once.
    pub max_input_requests_per_task: usize,
    /// The largest result (serialized JSON bytes) a task may store.
    pub max_result_bytes: usize,
    /// Requested TTLs above this are lowered to it; `None` allows unlimited retention.
    pub max_ttl_ms: Option<u64>,
    /// The TTL of a task whose requestor did not ask for one; `None` keeps it until deleted
    /// (only when `max_ttl_ms` is `None` too).
    pub default_ttl_ms: Option<u64>,
    /// The poll interval suggested when none is given.
    pub default_poll_interval_ms: u64,
    /// Entries one task's log keeps ([`log`](crate::log)); the oldest go first.
    pub max_log_entries: usize,
    /// Bytes one task's log keeps ([`LogEntry::size`](crate::LogEntry::size) summed); the
    /// oldest entries go first, the newest is always kept.
    pub max_log_bytes: usize,
    /// The largest entry a tool may append ([`LogEntry::size`](crate::LogEntry::size)).
    pub max_log_entry_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_live_tasks_per_owner: 1_000,
            max_live_tasks_total: 1_000_000,
            max_input_requests_per_task: 64,
            max_result_bytes: 16 * 1024 * 1024,
            max_ttl_ms: Some(24 * 60 * 60 * 1000),
            default_ttl_ms: Some(60 * 60 * 1000),
            default_poll_interval_ms: 1_000,
            max_log_entries: 1_000,
            max_log_bytes: 1024 * 1024,
            max_log_entry_bytes: 64 * 1024,
        }
    }
}

impl Limits {
    /// The TTL a new task gets when `requested` was asked for.
    pub fn effective_ttl(&self, requested: Option<u64>) -> Option<u64> {
        let wanted = requested.or(self.default_ttl_ms).or(self.max_ttl_ms);
        match (wanted, self.max_ttl_ms) {
            (Some(ttl), Some(max)) => Some(ttl.min(max)),
            (Some(ttl), None) => Some(ttl),
            (None, max) => max,
        }
    }
}

/// Which limit refused an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// [`Limits::max_live_tasks_per_owner`]: unfinished tasks of one owner.
    LiveTasksPerOwner,
    /// [`Limits::max_live_tasks_total`]: unfinished tasks of all owners.
    LiveTasksTotal,
    /// [`Limits::max_input_requests_per_task`]: outstanding input requests of one task.
    InputRequestsPerTask,
    /// [`Limits::max_result_bytes`]: the size of one task's result.
    ResultBytes,
    /// The `max_sessions` a server passes to
    /// [`SessionStore::open_session`](crate::SessionStore::open_session): open MCP
    /// 2025-11-25 sessions.
    Sessions,
    /// [`Limits::max_log_entry_bytes`]: the size of one entry a tool appends to its
    /// task's log.
    LogEntryBytes,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limit::LiveTasksPerOwner => "unfinished tasks per owner",
            Limit::LiveTasksTotal => "unfinished tasks in total",
            Limit::InputRequestsPerTask => "outstanding input requests per task",
            Limit::ResultBytes => "result size in bytes",
            Limit::Sessions => "open sessions",
            Limit::LogEntryBytes => "log entry size in bytes",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Limits;

    #[test]
    fn ttl_is_defaulted_and_clamped() {
        let l = Limits {
            max_ttl_ms: Some(100),
            default_ttl_ms: Some(50),
            ..Limits::default()
        };
        assert_eq!(l.effective_ttl(None), Some(50));
        assert_eq!(l.effective_ttl(Some(10)), Some(10));
        assert_eq!(l.effective_ttl(Some(1_000)), Some(100));
        let unlimited = Limits {
            max_ttl_ms: None,
            default_ttl_ms: None,
            ..Limits::default()
        };
        assert_eq!(unlimited.effective_ttl(None), None);
        assert_eq!(unlimited.effective_ttl(Some(7)), Some(7));
    }
}
