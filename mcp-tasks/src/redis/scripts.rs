//! The Lua scripts: each makes one multi-key write atomic (record, indexes, counters and
//! the event publication together). They decide nothing about the task's state machine:
//! the caller applied [`rules`](crate::rules) in Rust and hands over the result; the
//! scripts only check the revision they were based on (compare-and-set) and the limits.
//! Every key a script touches is in one shard (one hash tag, so one cluster slot); the
//! limits it checks are the shard's part of them.

use std::sync::LazyLock;

use redis::Script;

/// The Lua functions the writing scripts share (the operator index's upkeep).
const OUTLIVE: &str = r#"
-- Index `key` (of the operator's view) outlives the task key, whose PTTL is `left`
-- (-1: it never expires, so neither may the index); `existed`: whether `key` existed
-- before this script added to it (a new key has no expiry yet).
local function outlive(key, left, existed)
  if left == -1 then
    redis.call('PERSIST', key)
  elseif left > 0 then
    local l = redis.call('PTTL', key)
    if existed == 0 or (l >= 0 and l < left) then redis.call('PEXPIRE', key, left) end
  end
end
-- Adds member `m` to the sorted set `key`, which then outlives the task.
local function add(key, m, left)
  local existed = redis.call('EXISTS', key)
  redis.call('ZADD', key, 0, m)
  outlive(key, left, existed)
end
-- Adds `n` to `field` of the counts hash `key`, which then outlives the task; a count
-- that falls to 0 goes.
local function count(key, field, n, left)
  local existed = redis.call('EXISTS', key)
  if redis.call('HINCRBY', key, field, n) <= 0 then
    redis.call('HDEL', key, field)
  elseif n > 0 then
    outlive(key, left, existed)
  end
end
"#;

/// Inserts a new task if the live-task limits allow it.
///
/// KEYS: task, owner index, expiries, live, live per owner, leases, the tool's queue, and
/// the operator index: all tasks, the status's, the tool's, the lease holder's, counts.
/// ARGV: owner, id, record JSON, revision, index member, expires_at (`''`: never), the
/// shard's part of the per-owner limit, its part of the total limit, channel, safety net
/// (`off`, `forever` or milliseconds until the task key expires), lease expiry (`''`: no
/// lease), `1` if the task waits for a worker, status, `+TOOL` or `-` (none), `+HOLDER`
/// or `-` (no lease), event payloads...
///
/// Returns 1, or -1 (per-owner limit), -2 (total limit), -3 (the id exists).
pub(crate) static CREATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{OUTLIVE}{}",
        r#"
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
local mine = tonumber(redis.call('HGET', KEYS[5], ARGV[1]) or '0')
if mine >= tonumber(ARGV[7]) then return -1 end
if redis.call('HLEN', KEYS[4]) >= tonumber(ARGV[8]) then return -2 end
local existed = {}
for i = 2, 5 do existed[i] = redis.call('EXISTS', KEYS[i]) end
redis.call('HSET', KEYS[1], 'rec', ARGV[3], 'rev', ARGV[4])
redis.call('ZADD', KEYS[2], 0, ARGV[5])
if ARGV[6] ~= '' then redis.call('ZADD', KEYS[3], ARGV[6], ARGV[2]) end
redis.call('HSET', KEYS[4], ARGV[2], ARGV[1])
redis.call('HINCRBY', KEYS[5], ARGV[1], 1)
local safety = ARGV[10]
if safety == 'forever' then
  -- A task that never expires: the indexes must never expire either.
  for i = 2, 5 do redis.call('PERSIST', KEYS[i]) end
elseif safety ~= 'off' then
  local ms = tonumber(safety)
  redis.call('PEXPIRE', KEYS[1], safety)
  -- The indexes outlive every task they index: only ever pushed later, and left
  -- alone when they already never expire.
  for i = 2, 5 do
    if existed[i] == 0 then
      redis.call('PEXPIRE', KEYS[i], safety)
    else
      local left = redis.call('PTTL', KEYS[i])
      if left >= 0 and left < ms then redis.call('PEXPIRE', KEYS[i], safety) end
    end
  end
end
if ARGV[11] ~= '' then redis.call('ZADD', KEYS[6], ARGV[11], ARGV[2]) end
if ARGV[12] == '1' then redis.call('ZADD', KEYS[7], 0, ARGV[5]) end
local left = redis.call('PTTL', KEYS[1])
add(KEYS[8], ARGV[5], left)
add(KEYS[9], ARGV[5], left)
count(KEYS[12], 's:' .. ARGV[13], 1, left)
if ARGV[14] ~= '-' then
  add(KEYS[10], ARGV[5], left)
  count(KEYS[12], 't:' .. string.sub(ARGV[14], 2), 1, left)
end
if ARGV[15] ~= '-' then add(KEYS[11], ARGV[5], left) end
for i = 16, #ARGV do redis.call('PUBLISH', ARGV[9], ARGV[i]) end
return 1
"#
    ))
});

/// Writes back a changed record if its revision is still the one it was read at.
///
/// KEYS: task, leases, live, live per owner, the tool's queue, and the operator index: all
/// tasks, the status's before, the status's after, the lease holder's before, after, the
/// tool's, counts.
/// ARGV: expected revision, new revision, record JSON, lease expiry (`''`: no live
/// lease), `1` if this write finished the task, id, channel, the queue change (`+MEMBER`:
/// it waits for a worker now, `-MEMBER`: no more, `''`: no change), index member, status
/// before, after, `+HOLDER` or `-` before, after, `+TOOL` or `-`, event payloads...
///
/// A task not in the operator index yet (written before it existed) is added to it whole.
///
/// Returns 1, or 0 when the record changed (or vanished) since it was read.
pub(crate) static COMMIT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{OUTLIVE}{}",
        r#"
if redis.call('HGET', KEYS[1], 'rev') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'rec', ARGV[3], 'rev', ARGV[2])
if ARGV[4] == '' then
  redis.call('ZREM', KEYS[2], ARGV[6])
else
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[6])
end
if ARGV[5] == '1' then
  local owner = redis.call('HGET', KEYS[3], ARGV[6])
  if owner then
    redis.call('HDEL', KEYS[3], ARGV[6])
    if redis.call('HINCRBY', KEYS[4], owner, -1) <= 0 then redis.call('HDEL', KEYS[4], owner) end
  end
end
local q = ARGV[8]
if string.sub(q, 1, 1) == '+' then
  redis.call('ZADD', KEYS[5], 0, string.sub(q, 2))
elseif string.sub(q, 1, 1) == '-' then
  redis.call('ZREM', KEYS[5], string.sub(q, 2))
end
local m = ARGV[9]
local left = redis.call('PTTL', KEYS[1])
if not redis.call('ZSCORE', KEYS[6], m) then
  -- Not indexed yet (written before the index existed): added whole.
  add(KEYS[6], m, left)
  add(KEYS[8], m, left)
  count(KEYS[12], 's:' .. ARGV[11], 1, left)
  if ARGV[14] ~= '-' then
    add(KEYS[11], m, left)
    count(KEYS[12], 't:' .. string.sub(ARGV[14], 2), 1, left)
  end
  if ARGV[13] ~= '-' then add(KEYS[10], m, left) end
else
  if ARGV[10] ~= ARGV[11] then
    redis.call('ZREM', KEYS[7], m)
    add(KEYS[8], m, left)
    count(KEYS[12], 's:' .. ARGV[10], -1, left)
    count(KEYS[12], 's:' .. ARGV[11], 1, left)
  end
  if ARGV[12] ~= ARGV[13] then
    if ARGV[12] ~= '-' then redis.call('ZREM', KEYS[9], m) end
    if ARGV[13] ~= '-' then add(KEYS[10], m, left) end
  end
end
for i = 15, #ARGV do redis.call('PUBLISH', ARGV[7], ARGV[i]) end
return 1
"#
    ))
});

/// Deletes an expired task with its index entries and live count.
///
/// KEYS: task, expiries, leases, live, live per owner, owner index, and the operator
/// index: all tasks, the status's, the tool's, the lease holder's, counts (when the record
/// is gone, any key of the shard in each place: unused).
/// ARGV: expected revision (`''`: the record is already gone, e.g. by the key-expiry
/// safety net), id, index member (`''`: unknown), status, `+TOOL` or `-`, `+HOLDER` or
/// `-`.
///
/// Returns `{1, owner-if-it-was-unfinished-or-''}` when this call purged the task,
/// `{0, ''}` when the record changed meanwhile or someone else purged it.
pub(crate) static PURGE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{OUTLIVE}{}",
        r#"
if ARGV[1] == '' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return {0, ''} end
elseif redis.call('HGET', KEYS[1], 'rev') ~= ARGV[1] then
  return {0, ''}
end
redis.call('DEL', KEYS[1])
if ARGV[3] ~= '' then
  redis.call('ZREM', KEYS[6], ARGV[3])
  -- Counted only if indexed (a task written before the index existed is not).
  if redis.call('ZREM', KEYS[7], ARGV[3]) == 1 then
    redis.call('ZREM', KEYS[8], ARGV[3])
    count(KEYS[11], 's:' .. ARGV[4], -1, 0)
    if ARGV[5] ~= '-' then
      redis.call('ZREM', KEYS[9], ARGV[3])
      count(KEYS[11], 't:' .. string.sub(ARGV[5], 2), -1, 0)
    end
    if ARGV[6] ~= '-' then redis.call('ZREM', KEYS[10], ARGV[3]) end
  end
end
local removed = redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
local owner = redis.call('HGET', KEYS[4], ARGV[2])
if owner then
  redis.call('HDEL', KEYS[4], ARGV[2])
  if redis.call('HINCRBY', KEYS[5], owner, -1) <= 0 then redis.call('HDEL', KEYS[5], owner) end
end
if ARGV[1] == '' and removed == 0 and not owner then return {0, ''} end
return {1, owner or ''}
"#
    ))
});
