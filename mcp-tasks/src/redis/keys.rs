//! Key names of one deployment (one prefix), its shards, and the listing-index member
//! encoding.
//!
//! A deployment's tasks are spread over [`Keys::shards`] shards, each under its own hash
//! tag, so a Redis Cluster puts each shard in one slot (the Lua scripts only ever touch
//! the keys of one shard) and the shards over its nodes. On a standalone server there is
//! one shard whose tag is `{prefix}`: the layout of every earlier version.

use crate::error::StoreError;
use crate::record::{Millis, Owner, TaskId};

/// How many shards a deployment on a Redis Cluster has. Part of the key layout: every
/// handle of a deployment must use the same number.
pub(crate) const CLUSTER_SHARDS: u16 = 16;

/// The names of one deployment's keys.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    /// The prefix, without braces.
    prefix: String,
    /// `{prefix}`: the tag of the keys that are not sharded (sessions, the channel), and
    /// of the only shard on a standalone server.
    tag: String,
    /// How many shards the tasks are spread over (1: standalone).
    shards: u16,
}

impl Keys {
    /// Keys under `prefix`, which must not contain `{` or `}` (they would break the hash
    /// tag) and must not be empty, in one shard (a standalone server).
    pub(crate) fn new(prefix: &str) -> Result<Keys, StoreError> {
        Keys::sharded(prefix, 1)
    }

    /// Keys under `prefix` over `shards` shards (at least 1).
    pub(crate) fn sharded(prefix: &str, shards: u16) -> Result<Keys, StoreError> {
        if prefix.is_empty() || prefix.contains(['{', '}']) {
            return Err(StoreError::backend(format!(
                "invalid Redis key prefix {prefix:?}: it must be non-empty, without braces"
            )));
        }
        Ok(Keys {
            prefix: prefix.to_owned(),
            tag: format!("{{{prefix}}}"),
            shards: shards.max(1),
        })
    }

    /// How many shards the tasks are spread over.
    pub(crate) fn shards(&self) -> u16 {
        self.shards
    }

    /// The shard of task `id`: FNV-1a of the id, modulo the shard count.
    pub(crate) fn shard_of(&self, id: &TaskId) -> u16 {
        if self.shards == 1 {
            return 0;
        }
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in id.as_str().bytes() {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        (hash % u64::from(self.shards)) as u16
    }

    /// The hash tag of `shard`: `{prefix}` with one shard, `{prefix:N}` with several.
    fn shard_tag(&self, shard: u16) -> String {
        if self.shards == 1 {
            self.tag.clone()
        } else {
            format!("{{{}:{shard}}}", self.prefix)
        }
    }

    /// A hash per task, in the task's shard: `rec` (the JSON record) and `rev` (its
    /// revision).
    pub(crate) fn task(&self, id: &TaskId) -> String {
        format!("{}:t:{}", self.shard_tag(self.shard_of(id)), id.as_str())
    }

    /// A list per task, beside its hash (so in the same slot): the entries of the task's
    /// log still kept, oldest first (`scripts.rs`, `LOG`).
    pub(crate) fn log(&self, id: &TaskId) -> String {
        format!("{}:l:{}", self.shard_tag(self.shard_of(id)), id.as_str())
    }

    /// A sorted set per owner and shard, every score 0, members [`member`]: the listing
    /// order of the owner's tasks in that shard.
    pub(crate) fn owner_index(&self, shard: u16, owner: &Owner) -> String {
        format!("{}:o:{}", self.shard_tag(shard), owner.as_str())
    }

    /// A sorted set per shard of task ids scored by expiry time (tasks with a TTL only).
    pub(crate) fn expiries(&self, shard: u16) -> String {
        format!("{}:exp", self.shard_tag(shard))
    }

    /// A sorted set per shard of unfinished, leased task ids scored by lease expiry.
    pub(crate) fn leases(&self, shard: u16) -> String {
        format!("{}:leases", self.shard_tag(shard))
    }

    /// A hash per shard of unfinished task id -> owner; its length is the shard's live
    /// total.
    pub(crate) fn live(&self, shard: u16) -> String {
        format!("{}:live", self.shard_tag(shard))
    }

    /// A hash per shard of owner -> number of unfinished tasks in the shard.
    pub(crate) fn live_per_owner(&self, shard: u16) -> String {
        format!("{}:live_owner", self.shard_tag(shard))
    }

    /// A sorted set per tool and shard, every score 0, members [`member`]: the tasks of
    /// the shard waiting for a worker in claim order.
    pub(crate) fn queue(&self, shard: u16, tool: &str) -> String {
        format!("{}:q:{tool}", self.shard_tag(shard))
    }

    /// The shard of the tasks `owner` creates with idempotency key `key` (contract rule
    /// 25): FNV-1a of the owner and the key, modulo `active` (the shards holding a part
    /// of the limits). The key's entry and its task then share a hash tag, so the create
    /// script decides both at once, on a Cluster too.
    pub(crate) fn idempotency_shard(&self, owner: &Owner, key: &str, active: u16) -> u16 {
        if self.shards == 1 {
            return 0;
        }
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let owner = owner.as_str();
        let len = owner.len().to_string();
        for b in len
            .bytes()
            .chain([b':'])
            .chain(owner.bytes())
            .chain([b':'])
            .chain(key.bytes())
        {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        (hash % u64::from(active.clamp(1, self.shards))) as u16
    }

    /// A string per owner and idempotency key, in the shard of its task
    /// ([`idempotency_shard`](Self::idempotency_shard)): `ID:EXPIRES_AT` of the task
    /// created with the key (`EXPIRES_AT` empty: never). The owner goes with its length,
    /// so no two owner and key pairs share a name.
    pub(crate) fn idempotency(&self, shard: u16, owner: &Owner, key: &str) -> String {
        let owner = owner.as_str();
        format!("{}:i:{}:{owner}:{key}", self.shard_tag(shard), owner.len())
    }

    /// A sorted set per shard, every score 0, members [`member`]: every task of the shard
    /// in creation order (the operator's view, contract rule 22).
    pub(crate) fn op_all(&self, shard: u16) -> String {
        format!("{}:op:all", self.shard_tag(shard))
    }

    /// Like [`op_all`](Self::op_all), the shard's tasks in `status` (its wire name).
    pub(crate) fn op_status(&self, shard: u16, status: &str) -> String {
        format!("{}:op:s:{status}", self.shard_tag(shard))
    }

    /// Like [`op_all`](Self::op_all), the shard's tasks of `tool`.
    pub(crate) fn op_tool(&self, shard: u16, tool: &str) -> String {
        format!("{}:op:t:{tool}", self.shard_tag(shard))
    }

    /// Like [`op_all`](Self::op_all), the shard's tasks whose lease names `holder`.
    pub(crate) fn op_holder(&self, shard: u16, holder: &str) -> String {
        format!("{}:op:h:{holder}", self.shard_tag(shard))
    }

    /// A hash per shard of the tasks counted by `s:STATUS` and `t:TOOL`.
    pub(crate) fn op_counts(&self, shard: u16) -> String {
        format!("{}:op:n", self.shard_tag(shard))
    }

    /// A hash per MCP 2025-11-25 session: `rec`, `seen`, `idle`, `rev`
    /// (`redis/sessions.rs`). `session("")` is the prefix the scripts complete. Sessions
    /// are not sharded: they all live under `{prefix}`, so one script counts them.
    pub(crate) fn session(&self, id: &str) -> String {
        format!("{}:s:{id}", self.tag)
    }

    /// A sorted set of open session ids scored by expiry: the count of rule 3.
    pub(crate) fn sessions(&self) -> String {
        format!("{}:sessions", self.tag)
    }

    /// The node registry's set of node ids (contract rule 24), beside the sessions in
    /// the deployment's own tag, so its scripts touch one slot.
    pub(crate) fn nodes(&self) -> String {
        format!("{}:nodes", self.tag)
    }

    /// A hash per node of the registry, under the same tag as [`nodes`](Self::nodes).
    pub(crate) fn node(&self, id: &str) -> String {
        format!("{}:node:{id}", self.tag)
    }

    /// The pub/sub channel of the deployment's events.
    pub(crate) fn channel(&self) -> String {
        format!("{}:events", self.tag)
    }

    /// The `SCAN MATCH` pattern that finds every key of the deployment (and possibly of
    /// other prefixes starting with this one: [`owns`](Self::owns) tells them apart).
    #[cfg(any(test, feature = "conformance"))]
    pub(crate) fn pattern(&self) -> String {
        let mut escaped = String::with_capacity(self.prefix.len() + 4);
        escaped.push('{');
        for c in self.prefix.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        escaped.push('*');
        escaped
    }

    /// Whether `key` is one of this deployment's keys: its tag is `{prefix}` or
    /// `{prefix:N}`.
    #[cfg(any(test, feature = "conformance"))]
    pub(crate) fn owns(&self, key: &str) -> bool {
        let Some(rest) = key
            .strip_prefix('{')
            .and_then(|k| k.strip_prefix(&self.prefix))
        else {
            return false;
        };
        if rest.starts_with("}:") {
            return true;
        }
        rest.strip_prefix(':')
            .and_then(|r| r.split_once("}:"))
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
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
        assert_eq!(keys.log(&TaskId::from_wire("x")), "{kit:a*b}:l:x");
        assert_eq!(keys.pattern(), "{kit:a\\*b*");
        assert!(keys.owns("{kit:a*b}:t:x"));
        assert!(!keys.owns("{kit:a*bc}:t:x"));
        assert!(!keys.owns("{kit:a*b:x}:t:x"));
        let sharded = Keys::sharded("kit", CLUSTER_SHARDS).expect("valid");
        let id = TaskId::from_wire("0123456789abcdef0123456789abcdef");
        let task = sharded.task(&id);
        assert!(task.starts_with(&format!("{{kit:{}}}:t:", sharded.shard_of(&id))));
        assert!(sharded.owns(&task));
        // The log is in the task's hash tag, so in its cluster slot.
        let tag = |key: &str| key.split_once('}').map(|(tag, _)| tag.to_owned());
        assert_eq!(tag(&sharded.log(&id)), tag(&task));
        assert!(sharded.owns("{kit:15}:live"));
    }

    #[test]
    fn ids_spread_over_every_shard() {
        let keys = Keys::sharded("kit", CLUSTER_SHARDS).expect("valid");
        let mut seen = std::collections::BTreeSet::new();
        for n in 0..1000u32 {
            seen.insert(keys.shard_of(&TaskId::from_wire(format!("{n:032x}"))));
        }
        assert_eq!(seen.len(), usize::from(CLUSTER_SHARDS));
        let single = Keys::new("kit").expect("valid");
        assert_eq!(single.shard_of(&TaskId::from_wire("x")), 0);
    }
}
