//! The node registry (contract rule 24) on Redis: a hash per node (`role`, `started`,
//! `beat`, `interval`, `drain`, `drained`) and a set of node ids, all under the
//! deployment's own tag `{prefix}` (one slot on a Cluster, as the sessions are). Each
//! operation is one script; the listing removes the forgotten entries as it reads.

use std::sync::LazyLock;

use redis::Script;

use super::{Inner, store_error};
use crate::error::StoreError;
use crate::node::{FORGET_AFTER_MS, LOST_AFTER_BEATS, NodeBeat, NodeRecord, NodeState};
use crate::record::Millis;

/// Writes a heartbeat.
///
/// KEYS: the id set, the node's hash. ARGV: id, role, now, interval, starting (`1`/`0`),
/// drained (`1`/`0`), lost beats, forget ms. Returns the entry's six fields.
static BEAT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local now = tonumber(ARGV[3])
local v = redis.call('HMGET', KEYS[2], 'beat', 'interval')
local fresh = ARGV[5] == '1' or not v[1] or not v[2]
if not fresh and tonumber(v[1]) + tonumber(ARGV[7]) * tonumber(v[2]) + tonumber(ARGV[8]) <= now then
    fresh = true
end
if fresh then
    redis.call('DEL', KEYS[2])
    redis.call('HSET', KEYS[2], 'role', ARGV[2], 'started', ARGV[3], 'beat', ARGV[3],
        'interval', ARGV[4], 'drain', '0', 'drained', '0')
else
    local drained = '0'
    if redis.call('HGET', KEYS[2], 'drain') == '1' and ARGV[6] == '1' then drained = '1' end
    redis.call('HSET', KEYS[2], 'role', ARGV[2], 'beat', ARGV[3], 'interval', ARGV[4],
        'drained', drained)
end
redis.call('SADD', KEYS[1], ARGV[1])
return redis.call('HMGET', KEYS[2], 'role', 'started', 'beat', 'interval', 'drain', 'drained')
"#,
    )
});

/// Raises a node's drain flag.
///
/// KEYS: the node's hash. ARGV: now, lost beats, forget ms. Returns the entry's six
/// fields, or nil when there is no entry (or it is forgotten).
static DRAIN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local v = redis.call('HMGET', KEYS[1], 'beat', 'interval')
if not v[1] or not v[2] then return false end
if tonumber(v[1]) + tonumber(ARGV[2]) * tonumber(v[2]) + tonumber(ARGV[3]) <= tonumber(ARGV[1]) then
    return false
end
redis.call('HSET', KEYS[1], 'drain', '1')
return redis.call('HMGET', KEYS[1], 'role', 'started', 'beat', 'interval', 'drain', 'drained')
"#,
    )
});

/// Lists the entries, removing the forgotten ones.
///
/// KEYS: the id set. ARGV: now, lost beats, forget ms, the node key prefix (the key of
/// node `id` is the prefix and `id`, under the set's tag). Returns, per kept entry, its
/// id and six fields.
static LIST: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    local key = ARGV[4] .. id
    local v = redis.call('HMGET', key, 'role', 'started', 'beat', 'interval', 'drain', 'drained')
    if not v[1] or not v[2] or not v[3] or not v[4] or not v[5] or not v[6] then
        redis.call('DEL', key)
        redis.call('SREM', KEYS[1], id)
    elseif tonumber(v[3]) + tonumber(ARGV[2]) * tonumber(v[4]) + tonumber(ARGV[3]) <= tonumber(ARGV[1]) then
        redis.call('DEL', key)
        redis.call('SREM', KEYS[1], id)
    else
        table.insert(out, id)
        for i = 1, 6 do table.insert(out, v[i]) end
    end
end
return out
"#,
    )
});

/// The entry of `id` from the six fields the scripts return.
fn entry(id: String, fields: &[Option<String>], now: Millis) -> Result<NodeRecord, StoreError> {
    let text = |i: usize| {
        fields
            .get(i)
            .cloned()
            .flatten()
            .ok_or_else(|| store_error(format!("corrupt node entry {id:?}")))
    };
    let number = |i: usize| {
        text(i)?
            .parse::<i64>()
            .map_err(|_| store_error(format!("corrupt node entry {id:?}")))
    };
    let role = text(0)?;
    let (started_at, heartbeat_at, interval) = (number(1)?, number(2)?, number(3)?);
    let (drain, drained) = (text(4)? == "1", text(5)? == "1");
    Ok(NodeRecord {
        id,
        role,
        started_at,
        heartbeat_at,
        interval_ms: u64::try_from(interval).unwrap_or(1),
        drain_requested: drain,
        drained,
        state: NodeState::Active,
    }
    .settled(now))
}

fn flag(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

impl Inner {
    /// Writes `beat` (backend contract rule 14).
    pub(super) async fn beat_node(&self, beat: &NodeBeat) -> Result<NodeRecord, StoreError> {
        let now = self.clock.now_ms();
        let fields: Vec<Option<String>> = BEAT
            .key(self.keys.nodes())
            .key(self.keys.node(&beat.id))
            .arg(&beat.id)
            .arg(&beat.role)
            .arg(now)
            .arg(beat.interval_ms.max(1))
            .arg(flag(beat.starting))
            .arg(flag(beat.drained))
            .arg(LOST_AFTER_BEATS)
            .arg(FORGET_AFTER_MS)
            .invoke_async(&mut self.conn())
            .await
            .map_err(store_error)?;
        entry(beat.id.clone(), &fields, now)
    }

    /// Raises the drain flag of `id` (backend contract rule 14).
    pub(super) async fn drain_node(&self, id: &str) -> Result<NodeRecord, StoreError> {
        let now = self.clock.now_ms();
        let fields: Option<Vec<Option<String>>> = DRAIN
            .key(self.keys.node(id))
            .arg(now)
            .arg(LOST_AFTER_BEATS)
            .arg(FORGET_AFTER_MS)
            .invoke_async(&mut self.conn())
            .await
            .map_err(store_error)?;
        match fields {
            Some(fields) => entry(id.to_owned(), &fields, now),
            None => Err(StoreError::NotFound),
        }
    }

    /// Every entry not forgotten, by id (backend contract rule 14).
    pub(super) async fn list_nodes(&self) -> Result<Vec<NodeRecord>, StoreError> {
        let now = self.clock.now_ms();
        let flat: Vec<Option<String>> = LIST
            .key(self.keys.nodes())
            .arg(now)
            .arg(LOST_AFTER_BEATS)
            .arg(FORGET_AFTER_MS)
            .arg(self.keys.node(""))
            .invoke_async(&mut self.conn())
            .await
            .map_err(store_error)?;
        let mut records = flat
            .chunks(7)
            .map(|chunk| {
                let id = chunk
                    .first()
                    .cloned()
                    .flatten()
                    .ok_or_else(|| store_error("corrupt node listing"))?;
                entry(id, &chunk[1..], now)
            })
            .collect::<Result<Vec<_>, _>>()?;
        records.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(records)
    }
}
