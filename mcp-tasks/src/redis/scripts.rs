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

/// The Lua function of the task logs (contract rule 23) that every write appending to a
/// log shares: pushing the entries of drafts, with retention.
///
/// A task's log is a list `{s}:l:<id>` beside its hash, in the same slot: one element
/// per entry kept, oldest first, each the JSON [`LogEntry`](crate::LogEntry) with its
/// size for retention first (`{"z":SIZE,"seq":..,"at":..,"type":..,...}`; readers ignore
/// `z`). The task's hash holds the next `seq` (`ln`) and the sizes kept summed (`lb`),
/// and, for the log's own scripts, the owner (`own`), the expiry (`exp`, `''`: never) and
/// the status (`st`), so that they never decode the record (a record written before
/// them is decoded once per call instead: see [`LOG_CHECK`]).
const LOG: &str = r#"
-- Pushes the entries of the drafts of the log block that starts at ARGV[at] (now, the
-- retention limits in entries and bytes, the number of drafts, then each draft's size
-- and JSON tail) onto the list `log`, numbered from `seq`, then drops the oldest entries
-- while past the limits, `bytes` being the sizes kept before (never the newest). A new
-- list gets the task key's expiry: `left` ms (-1: none; nil: the PTTL of `task`).
-- Returns the next seq and the sizes kept: what the task's hash keeps as `ln`, `lb`.
local function log_push(log, at, seq, bytes, left, task)
  local n = tonumber(ARGV[at + 3])
  if n == 0 then return seq, bytes end
  local now = ARGV[at]
  local len = 0
  local batch = {}
  for i = 1, n do
    local size = ARGV[at + 2 + 2 * i]
    batch[#batch + 1] = '{"z":' .. size .. ',"seq":' .. seq .. ',"at":' .. now .. ',' ..
      ARGV[at + 3 + 2 * i]
    bytes = bytes + tonumber(size)
    seq = seq + 1
    if #batch == 1000 or i == n then
      len = redis.call('RPUSH', log, unpack(batch))
      batch = {}
    end
  end
  if len == n then
    if not left then left = redis.call('PTTL', task) end
    if left > 0 then redis.call('PEXPIRE', log, left) end
  end
  local max_n, max_b = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  while len > 1 and (len > max_n or bytes > max_b) do
    local dropped = redis.call('LPOP', log)
    bytes = bytes - tonumber(string.match(dropped, '^{"z":(%d+),'))
    len = len - 1
  end
  return seq, bytes
end
"#;

/// The visibility check of the log's own scripts (append and read).
const LOG_CHECK: &str = r#"
-- Whether task `task` is `owner`'s and unexpired at `now` (milliseconds, a string):
-- its status, next seq and sizes kept when it is; nil when not (gone, another owner's,
-- expired).
local function log_visible(task, owner, now)
  local h = redis.call('HMGET', task, 'own', 'exp', 'st', 'ln', 'lb')
  local own, exp, st = h[1], h[2], h[3]
  if not own then
    -- Written before the log's fields: the record says.
    local json = redis.call('HGET', task, 'rec')
    if not json then return nil end
    local rec = cjson.decode(json)
    own, st, exp = rec.owner, rec.status, ''
    if type(rec.ttl_ms) == 'number' then
      exp = string.format('%d', rec.created_at + rec.ttl_ms)
    end
  end
  if own ~= owner then return nil end
  if exp ~= '' and tonumber(now) >= tonumber(exp) then return nil end
  return st, tonumber(h[4] or '0'), tonumber(h[5] or '0')
end
"#;

/// Inserts a new task if the live-task limits allow it.
///
/// KEYS: task, owner index, expiries, live, live per owner, leases, the tool's queue, the
/// operator index: all tasks, the status's, the tool's, the lease holder's, counts; and
/// the task's log.
/// ARGV: owner, id, record JSON, revision, index member, expires_at (`''`: never), the
/// shard's part of the per-owner limit, its part of the total limit, channel, safety net
/// (`off`, `forever` or milliseconds until the task key expires), lease expiry (`''`: no
/// lease), `1` if the task waits for a worker, status, `+TOOL` or `-` (none), `+HOLDER`
/// or `-` (no lease), the log block (see [`LOG`]: now, limits, count, drafts), event
/// payloads...
///
/// With an idempotency key (contract rule 25), KEYS has one more, the key's entry
/// (`ID:EXPIRES_AT`, in the task's slot): when it names a task unexpired at now, the
/// script writes nothing and returns the entry; otherwise it writes the entry with the
/// task, expiring with the task key.
///
/// Returns 1, or -1 (per-owner limit), -2 (total limit), -3 (the id exists), or the
/// idempotency key's entry (a string) when a task still holds the key.
pub(crate) static CREATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{OUTLIVE}{LOG}{}",
        r#"
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
if KEYS[14] then
  local held = redis.call('GET', KEYS[14])
  if held then
    local exp = string.sub(held, 34)
    if exp == '' or tonumber(exp) > tonumber(ARGV[16]) then return held end
  end
end
local mine = tonumber(redis.call('HGET', KEYS[5], ARGV[1]) or '0')
if mine >= tonumber(ARGV[7]) then return -1 end
if redis.call('HLEN', KEYS[4]) >= tonumber(ARGV[8]) then return -2 end
local existed = {}
for i = 2, 5 do existed[i] = redis.call('EXISTS', KEYS[i]) end
-- A log left by an earlier task of this id (none in practice) is not this task's. The
-- log expires with the task key.
redis.call('DEL', KEYS[13])
local log_left = -1
if ARGV[10] ~= 'off' and ARGV[10] ~= 'forever' then log_left = tonumber(ARGV[10]) end
local ln, lb = log_push(KEYS[13], 16, 0, 0, log_left)
redis.call('HSET', KEYS[1], 'rec', ARGV[3], 'rev', ARGV[4], 'own', ARGV[1], 'exp', ARGV[6],
  'st', ARGV[13], 'ln', ln, 'lb', lb)
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
if KEYS[14] then
  redis.call('SET', KEYS[14], ARGV[2] .. ':' .. ARGV[6])
  if safety ~= 'off' and safety ~= 'forever' then redis.call('PEXPIRE', KEYS[14], safety) end
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
for i = 20 + 2 * tonumber(ARGV[19]), #ARGV do redis.call('PUBLISH', ARGV[9], ARGV[i]) end
return 1
"#
    ))
});

/// Writes back a changed record if its revision is still the one it was read at.
///
/// KEYS: task, leases, live, live per owner, the tool's queue, the operator index: all
/// tasks, the status's before, the status's after, the lease holder's before, after, the
/// tool's, counts; and the task's log.
/// ARGV: expected revision, new revision, record JSON, lease expiry (`''`: no live
/// lease), `1` if this write finished the task, id, channel, the queue change (`+MEMBER`:
/// it waits for a worker now, `-MEMBER`: no more, `''`: no change), index member, status
/// before, after, `+HOLDER` or `-` before, after, `+TOOL` or `-`, the log block (see
/// [`LOG`]), event payloads...
///
/// A task not in the operator index yet (written before it existed) is added to it whole.
///
/// Returns 1, or 0 when the record changed (or vanished) since it was read.
pub(crate) static COMMIT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{OUTLIVE}{LOG}{}",
        r#"
local h = redis.call('HMGET', KEYS[1], 'rev', 'ln', 'lb')
if h[1] ~= ARGV[1] then return 0 end
local left = redis.call('PTTL', KEYS[1])
local ln, lb = log_push(KEYS[13], 15, tonumber(h[2] or '0'), tonumber(h[3] or '0'), left)
redis.call('HSET', KEYS[1], 'rec', ARGV[3], 'rev', ARGV[2], 'st', ARGV[11], 'ln', ln, 'lb', lb)
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
for i = 19 + 2 * tonumber(ARGV[18]), #ARGV do redis.call('PUBLISH', ARGV[7], ARGV[i]) end
return 1
"#
    ))
});

/// Deletes an expired task with its index entries and live count.
///
/// KEYS: task, expiries, leases, live, live per owner, owner index, the operator index:
/// all tasks, the status's, the tool's, the lease holder's, counts (when the record is
/// gone, any key of the shard in each place: unused); and the task's log.
/// ARGV: expected revision (`''`: the record is already gone, e.g. by the key-expiry
/// safety net), id, index member (`''`: unknown), status, `+TOOL` or `-`, `+HOLDER` or
/// `-`. With an idempotency key, KEYS has one more, the key's entry: deleted when it
/// still names this task.
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
redis.call('DEL', KEYS[1], KEYS[12])
if KEYS[13] then
  local held = redis.call('GET', KEYS[13])
  if held and string.sub(held, 1, 32) == ARGV[2] then redis.call('DEL', KEYS[13]) end
end
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

/// Appends a tool's entries to the log of the owner's visible, unfinished task, and
/// publishes the `logged` event.
///
/// KEYS: task, its log.
/// ARGV: owner, channel, the event payload (completed here with `"log": LAST`), the log
/// block (see [`LOG`]).
///
/// Returns `{1, LAST}`, `{0, ''}` (no such task for the owner at now) or `{-1, STATUS}`
/// (finished).
pub(crate) static APPEND_LOG: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{LOG}{LOG_CHECK}{}",
        r#"
local TERMINAL = {completed = true, failed = true, cancelled = true}
local st, ln, lb = log_visible(KEYS[1], ARGV[1], ARGV[4])
if not st then return {0, ''} end
if TERMINAL[st] then return {-1, st} end
local nxt, bytes = log_push(KEYS[2], 4, ln, lb, nil, KEYS[1])
if nxt == ln then return {0, ''} end
redis.call('HSET', KEYS[1], 'ln', nxt, 'lb', bytes)
local last = string.format('%d', nxt - 1)
local payload = ARGV[3]
redis.call('PUBLISH', ARGV[2], string.sub(payload, 1, -2) .. ',"log":' .. last .. '}')
return {1, last}
"#
    ))
});

/// Reads a page of the log of the owner's visible task.
///
/// KEYS: task, its log.
/// ARGV: owner, now, the cursor (`''`: from the earliest kept), the most entries.
///
/// Returns `{1, NEXT, EARLIEST, {ENTRY...}}`, or `{0, 0, 0, {}}` when the owner has no
/// such task at now.
pub(crate) static READ_LOG: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{LOG_CHECK}{}",
        r#"
local st, nxt = log_visible(KEYS[1], ARGV[1], ARGV[2])
if not st then return {0, 0, 0, {}} end
local len = redis.call('LLEN', KEYS[2])
local earliest = nxt - len
local from = earliest
if ARGV[3] ~= '' then
  local after = tonumber(ARGV[3]) + 1
  if after > from then from = after end
end
local entries = {}
if from < nxt then
  local start = from - earliest
  local stop = start + tonumber(ARGV[4]) - 1
  if stop >= len then stop = len - 1 end
  entries = redis.call('LRANGE', KEYS[2], start, stop)
end
return {1, nxt, earliest, entries}
"#
    ))
});
