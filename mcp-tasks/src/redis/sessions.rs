//! [`SessionStore`] for [`RedisStore`]: a hash per session (`rec`: the JSON record,
//! `seen`, `idle`, `rev`) whose key expires with the idle timeout (plus the safety slack;
//! the clock decides, the key expiry only cleans up), and one sorted set of session ids
//! by expiry that counts the open sessions of every instance. Each write is one script.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;

use super::db::{MAX_ATTEMPTS, backoff};
use super::{Inner, RedisStore, store_error};
use crate::error::StoreError;
use crate::record::Millis;
use crate::session::{
    ResourceUpdates, SessionChange, SessionRecord, SessionStore, too_many_sessions,
};

/// Opens a session within the limit.
///
/// KEYS: the index, the session. ARGV: now, max, id, record JSON, seen, idle,
/// expires_at, key expiry in ms (`0`: none), the session key prefix.
/// Returns 1, or 0 when the limit refuses.
static OPEN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for _, id in ipairs(gone) do redis.call('DEL', ARGV[9] .. id) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[2], 'rec', ARGV[4], 'seen', ARGV[5], 'idle', ARGV[6], 'rev', 0)
if ARGV[8] ~= '0' then redis.call('PEXPIRE', KEYS[2], ARGV[8]) end
redis.call('ZADD', KEYS[1], ARGV[7], ARGV[3])
return 1
"#,
    )
});

/// Marks an unexpired session seen at `now`.
///
/// KEYS: the index, the session. ARGV: now, id, key expiry slack in ms (`-1`: none).
/// Returns 1, or 0 when there is no such unexpired session.
static TOUCH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local v = redis.call('HMGET', KEYS[2], 'seen', 'idle')
if not v[1] then return 0 end
local now, seen, idle = tonumber(ARGV[1]), tonumber(v[1]), tonumber(v[2])
if now >= seen + idle then return 0 end
if now > seen then seen = now end
redis.call('HSET', KEYS[2], 'seen', string.format('%d', seen))
redis.call('ZADD', KEYS[1], string.format('%d', seen + idle), ARGV[2])
if ARGV[3] ~= '-1' then redis.call('PEXPIRE', KEYS[2], string.format('%d', idle + tonumber(ARGV[3]))) end
return 1
"#,
    )
});

/// Writes a changed record if its revision is still `rev`.
///
/// KEYS: the session. ARGV: rev, record JSON. Returns 1, or 0 when another write won.
static CHANGE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
if redis.call('HGET', KEYS[1], 'rev') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'rec', ARGV[2], 'rev', tonumber(ARGV[1]) + 1)
return 1
"#,
    )
});

/// Ends a session. KEYS: the index, the session. ARGV: now, id.
/// Returns 1 when it existed unexpired, else 0.
static END: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local v = redis.call('HMGET', KEYS[2], 'seen', 'idle')
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[1], ARGV[2])
if not v[1] then return 0 end
if tonumber(ARGV[1]) >= tonumber(v[1]) + tonumber(v[2]) then return 0 end
return 1
"#,
    )
});

/// A stored session: its record (with `last_seen` from `seen`) and revision.
type Stored = (SessionRecord, String);

impl Inner {
    /// Milliseconds the session key outlives its idle timeout (`None`: no key expiry).
    fn session_slack(&self) -> Option<u64> {
        self.safety_slack
            .map(|s| u64::try_from(s.as_millis()).unwrap_or(u64::MAX))
    }

    /// The unexpired session `id` at `now`, with its revision.
    async fn load_session(&self, id: &str, now: Millis) -> Result<Option<Stored>, StoreError> {
        let (json, seen, rev): (Option<String>, Option<Millis>, Option<String>) =
            redis::cmd("HMGET")
                .arg(self.keys.session(id))
                .arg("rec")
                .arg("seen")
                .arg("rev")
                .query_async(&mut self.conn())
                .await
                .map_err(store_error)?;
        let (Some(json), Some(seen), Some(rev)) = (json, seen, rev) else {
            return Ok(None);
        };
        let mut record: SessionRecord = serde_json::from_str(&json)
            .map_err(|e| store_error(format!("corrupt session record: {e}")))?;
        record.last_seen = seen;
        Ok((!record.is_expired(now)).then_some((record, rev)))
    }
}

#[async_trait]
impl SessionStore for RedisStore {
    fn is_shared(&self) -> bool {
        true
    }

    async fn open_session(
        &self,
        mut new: SessionRecord,
        max_sessions: usize,
    ) -> Result<SessionRecord, StoreError> {
        let inner = &self.inner;
        let now = inner.clock.now_ms();
        new.created_at = now;
        new.last_seen = now;
        let expiry = match inner.session_slack() {
            // Redis refuses expiries past ~2^62 ms; such a key is kept for ever.
            Some(slack) => new
                .idle_timeout_ms
                .checked_add(slack)
                .filter(|ms| *ms < 1 << 46)
                .unwrap_or(0),
            None => 0,
        };
        let json = serde_json::to_string(&new).map_err(store_error)?;
        let opened: i64 = OPEN
            .key(inner.keys.sessions())
            .key(inner.keys.session(&new.id))
            .arg(now)
            .arg(max_sessions)
            .arg(&new.id)
            .arg(json)
            .arg(now)
            .arg(new.idle_timeout_ms)
            .arg(new.expires_at())
            .arg(expiry)
            .arg(inner.keys.session(""))
            .invoke_async(&mut inner.conn())
            .await
            .map_err(store_error)?;
        if opened == 1 {
            Ok(new)
        } else {
            Err(too_many_sessions(max_sessions))
        }
    }

    async fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let now = self.inner.clock.now_ms();
        Ok(self.inner.load_session(id, now).await?.map(|(r, _)| r))
    }

    async fn touch_session(&self, id: &str) -> Result<bool, StoreError> {
        let inner = &self.inner;
        let slack = inner
            .session_slack()
            .map_or_else(|| "-1".to_owned(), |s| s.to_string());
        let touched: i64 = TOUCH
            .key(inner.keys.sessions())
            .key(inner.keys.session(id))
            .arg(inner.clock.now_ms())
            .arg(id)
            .arg(slack)
            .invoke_async(&mut inner.conn())
            .await
            .map_err(store_error)?;
        Ok(touched == 1)
    }

    async fn change_session(
        &self,
        id: &str,
        change: SessionChange,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let inner = &self.inner;
        for attempt in 0..MAX_ATTEMPTS {
            let now = inner.clock.now_ms();
            let Some((mut record, rev)) = inner.load_session(id, now).await? else {
                return Ok(None);
            };
            change.apply(&mut record, now);
            let json = serde_json::to_string(&record).map_err(store_error)?;
            let written: i64 = CHANGE
                .key(inner.keys.session(id))
                .arg(rev)
                .arg(json)
                .invoke_async(&mut inner.conn())
                .await
                .map_err(store_error)?;
            if written == 1 {
                return Ok(Some(record));
            }
            backoff(attempt).await;
        }
        Err(StoreError::Unavailable(crate::error::BackendError::new(
            "Redis: a session change kept losing its compare-and-set",
        )))
    }

    async fn end_session(&self, id: &str) -> Result<bool, StoreError> {
        let inner = &self.inner;
        let ended: i64 = END
            .key(inner.keys.sessions())
            .key(inner.keys.session(id))
            .arg(inner.clock.now_ms())
            .arg(id)
            .invoke_async(&mut inner.conn())
            .await
            .map_err(store_error)?;
        Ok(ended == 1)
    }

    async fn session_count(&self) -> Result<usize, StoreError> {
        let inner = &self.inner;
        let n: usize = redis::cmd("ZCOUNT")
            .arg(inner.keys.sessions())
            .arg(format!("({}", inner.clock.now_ms()))
            .arg("+inf")
            .query_async(&mut inner.conn())
            .await
            .map_err(store_error)?;
        Ok(n)
    }

    async fn announce_resource_updated(&self, uri: &str) -> Result<(), StoreError> {
        let inner = &self.inner;
        let payload = inner.shared.announce(uri).map_err(store_error)?;
        let _: i64 = redis::cmd("PUBLISH")
            .arg(inner.keys.channel())
            .arg(payload)
            .query_async(&mut inner.conn())
            .await
            .map_err(store_error)?;
        Ok(())
    }

    fn resource_updates(&self) -> ResourceUpdates {
        ResourceUpdates::new(self.inner.shared.resources.subscribe())
    }
}
