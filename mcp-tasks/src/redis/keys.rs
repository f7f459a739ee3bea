//! Key names of one deployment (one prefix), and the listing-index member encoding.
//!
//! Every key starts with the hash tag `{prefix}`, so a Redis Cluster keeps a whole
//! deployment in one slot and the Lua scripts may touch any of its keys.

use crate::error::StoreError;
use crate::record::{Millis, Owner, TaskId};

/// The names of one deployment's keys.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    /// `{prefix}`: the hash tag every key starts with.
    tag: String,
}

impl Keys {
    /// Keys under `prefix`, which must not contain `{` or `}` (they would break the hash
    /// tag) and must not be empty.
    pub(crate) fn new(prefix: &str) -> Result<Keys, StoreError> {
        if prefix.is_empty() || prefix.contains(['{', '}']) {
            return Err(StoreError::backend(format!(
                "invalid Redis key prefix {prefix:?}: it must be non-empty, without braces"
            )));
        }
        Ok(Keys {
            tag: format!("{{{prefix}}}"),
        })
    }

    /// A hash per task: `rec` (the JSON record) and `rev` (its revision).
    pub(crate) fn task(&self, id: &TaskId) -> String {
        format!("{}:t:{}", self.tag, id.as_str())
    }

    /// A sorted set per owner, every score 0, members [`member`]: the listing order.
    pub(crate) fn owner_index(&self, owner: &Owner) -> String {
        format!("{}:o:{}", self.tag, owner.as_str())
    }

    /// A sorted set of task ids scored by expiry time (tasks with a TTL only).
    pub(crate) fn expiries(&self) -> String {
        format!("{}:exp", self.tag)
    }

    /// A sorted set of unfinished, leased task ids scored by lease expiry.
    pub(crate) fn leases(&self) -> String {
        format!("{}:leases", self.tag)
    }

    /// A hash of unfinished task id -> owner; its length is the live total.
    pub(crate) fn live(&self) -> String {
        format!("{}:live", self.tag)
    }

    /// A hash of owner -> number of unfinished tasks.
    pub(crate) fn live_per_owner(&self) -> String {
        format!("{}:live_owner", self.tag)
    }

    /// A sorted set per tool, every score 0, members [`member`]: the tasks waiting for a
    /// worker in claim order.
    pub(crate) fn queue(&self, tool: &str) -> String {
        format!("{}:q:{tool}", self.tag)
    }

    /// A hash per MCP 2025-11-25 session: `rec`, `seen`, `idle`, `rev`
    /// (`redis/sessions.rs`). `session("")` is the prefix the scripts complete.
    pub(crate) fn session(&self, id: &str) -> String {
        format!("{}:s:{id}", self.tag)
    }

    /// A sorted set of open session ids scored by expiry: the count of rule 3.
    pub(crate) fn sessions(&self) -> String {
        format!("{}:sessions", self.tag)
    }

    /// The pub/sub channel of the deployment's events.
    pub(crate) fn channel(&self) -> String {
        format!("{}:events", self.tag)
    }

    /// The `SCAN MATCH` pattern of every key of the deployment.
    #[cfg(any(test, feature = "conformance"))]
    pub(crate) fn pattern(&self) -> String {
        let mut escaped = String::with_capacity(self.tag.len() + 2);
        for c in self.tag.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        escaped.push_str(":*");
        escaped
    }
}

/// The owner-index member of `(created_at, id)`: 16 hex digits of `created_at` with its
/// sign bit flipped (so the byte order is the numeric order, negatives included), `:`,
/// and the 32-hex-digit id. Lexicographic order of members = `(created_at, id)` order.
pub(crate) fn member(created_at: Millis, id: &TaskId) -> String {
    format!("{:016x}:{}", (created_at as u64) ^ (1 << 63), id.as_str())
}

/// Decodes a [`member`]; `None` for anything else.
pub(crate) fn parse_member(member: &str) -> Option<(Millis, TaskId)> {
    let (at, id) = member.split_once(':')?;
    if at.len() != 16 {
        return None;
    }
    let at = u64::from_str_radix(at, 16).ok()? ^ (1 << 63);
    Some((at as i64, TaskId::from_wire(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_sort_like_their_keys() {
        let id = |c: char| TaskId::from_wire(c.to_string().repeat(32));
        let keys = [
            (i64::MIN, id('0')),
            (-5, id('f')),
            (0, id('0')),
            (0, id('a')),
            (1_767_225_600_000, id('1')),
            (i64::MAX, id('0')),
        ];
        let members: Vec<String> = keys.iter().map(|(at, id)| member(*at, id)).collect();
        let mut sorted = members.clone();
        sorted.sort();
        assert_eq!(members, sorted);
        for ((at, id), m) in keys.iter().zip(&members) {
            assert_eq!(parse_member(m), Some((*at, id.clone())));
        }
    }

    #[test]
    fn prefixes_are_checked_and_escaped() {
        assert!(Keys::new("").is_err());
        assert!(Keys::new("a{b").is_err());
        let keys = Keys::new("kit:a*b").expect("valid");
        assert_eq!(keys.task(&TaskId::from_wire("x")), "{kit:a*b}:t:x");
        assert_eq!(keys.pattern(), "{kit:a\\*b}:*");
    }
}
