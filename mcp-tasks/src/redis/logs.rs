//! Task logs on Redis (contract rule 23 of [`TaskStore`](crate::TaskStore), rule 13 of
//! [`Backend`](crate::Backend)): a list per task beside its hash, in its slot, written by
//! the same scripts as the record (see `LOG` in `scripts.rs`), and the two scripts of
//! the log alone: a tool's append and a page's read, each one round trip.
//!
//! Layout: per task a list `{shard}:l:<id>` beside its hash (same hash tag, so the same
//! cluster slot), each element the JSON entry led by its size (`{"z":SIZE,"seq":..}`).
//! The task hash keeps the next `seq` (`ln`), the bytes kept (`lb`), and the owner,
//! expiry and status the log scripts check (`own`, `exp`, `st`; a record from before
//! them is decoded with `cjson`). The create and compare-and-set scripts append a
//! change's entries with the record (a lost compare-and-set writes none; `seq` from
//! `ln`, `at` the write's `now`) and drop the oldest past `max_log_entries` /
//! `max_log_bytes`, never the newest. A tool's append checks, appends and `PUBLISH`es
//! `logged`; the log key gets the task key's expiry and the purge deletes both.

use mcp_tasks_protocol::JsonObject;
use redis::ScriptInvocation;
use serde::Serialize;

use super::feed::Wire;
use super::{Inner, scripts, store_error};
use crate::error::StoreError;
use crate::limits::Limits;
use crate::log::{Actor, LogDraft, LogEntry, LogPage};
use crate::operator::parse_status;
use crate::record::{Millis, Owner, TaskId};

/// A draft as the scripts take it: its JSON without the opening brace, which the script
/// completes with the size, `seq` and time (`{"z":SIZE,"seq":N,"at":NOW,` + this).
#[derive(Serialize)]
struct Tail<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    payload: &'a JsonObject,
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<&'a str>,
    actor: Actor,
}

/// The log block of a write's ARGV, for drafts written at `now`: now, the retention
/// limits (entries, bytes), the number of drafts, then each draft's size
/// ([`LogDraft::size`]) and JSON tail.
pub(super) struct LogBlock {
    args: Vec<String>,
}

impl LogBlock {
    pub(super) fn new(
        limits: &Limits,
        now: Millis,
        drafts: &[LogDraft],
    ) -> Result<LogBlock, StoreError> {
        let mut args = Vec::with_capacity(4 + 2 * drafts.len());
        args.push(now.to_string());
        args.push(limits.max_log_entries.to_string());
        args.push(limits.max_log_bytes.to_string());
        args.push(drafts.len().to_string());
        for draft in drafts {
            let tail = Tail {
                kind: &draft.kind,
                payload: &draft.payload,
                node: draft.node.as_deref(),
                actor: draft.actor,
            };
            let mut json = serde_json::to_string(&tail).map_err(store_error)?;
            json.remove(0);
            args.push(draft.size().to_string());
            args.push(json);
        }
        Ok(LogBlock { args })
    }

    /// Adds the block to `call`'s ARGV.
    pub(super) fn push(&self, call: &mut ScriptInvocation<'_>) {
        for arg in &self.args {
            call.arg(arg);
        }
    }
}

impl Inner {
    /// Appends `drafts` (at least one) at `now` to the log of the owner's task visible
    /// and unfinished at `now`, and announces it; returns the `seq` of the last entry.
    pub(super) async fn append_log(
        &self,
        owner: &Owner,
        id: &TaskId,
        now: Millis,
        drafts: &[LogDraft],
    ) -> Result<u64, StoreError> {
        let block = LogBlock::new(&self.limits, now, drafts)?;
        let (payloads, echo) = self.shared.stamp(vec![Wire::logged(owner, id)]);
        let mut call = scripts::APPEND_LOG.prepare_invoke();
        call.key(self.keys.task(id))
            .key(self.keys.log(id))
            .arg(owner.as_str())
            .arg(self.keys.channel())
            .arg(payloads.first().map_or("{}", String::as_str));
        block.push(&mut call);
        let answer: Result<(i64, String), _> = call.invoke_async(&mut self.conn()).await;
        match answer {
            Ok((1, last)) => {
                self.shared.echo(echo).await;
                last.parse()
                    .map_err(|_| store_error(format!("log append answered seq {last:?}")))
            }
            other => {
                self.shared.forget(echo);
                match other {
                    Ok((-1, status)) => Err(StoreError::Terminal {
                        status: parse_status(&status)
                            .ok_or_else(|| store_error(format!("unknown status {status:?}")))?,
                    }),
                    Ok(_) => Err(StoreError::NotFound),
                    Err(e) => Err(store_error(e)),
                }
            }
        }
    }

    /// At most `limit` entries after `after` of the log of the owner's task visible at
    /// `now`.
    pub(super) async fn read_log(
        &self,
        owner: &Owner,
        id: &TaskId,
        now: Millis,
        after: Option<u64>,
        limit: usize,
    ) -> Result<LogPage, StoreError> {
        let (found, next, earliest, entries): (i64, i64, i64, Vec<String>) = scripts::READ_LOG
            .key(self.keys.task(id))
            .key(self.keys.log(id))
            .arg(owner.as_str())
            .arg(now)
            .arg(after.map(|a| a.to_string()).unwrap_or_default())
            .arg(limit.max(1))
            .invoke_async(&mut self.conn())
            .await
            .map_err(store_error)?;
        if found != 1 {
            return Err(StoreError::NotFound);
        }
        let entries = entries
            .iter()
            .map(|json| {
                serde_json::from_str::<LogEntry>(json)
                    .map_err(|e| store_error(format!("corrupt log entry: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let seq = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(LogPage {
            entries,
            earliest: seq(earliest),
            next: seq(next),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the scripts make of a draft reads back as the entry it is.
    #[test]
    fn a_draft_completed_by_the_script_reads_back_as_its_entry() {
        let mut payload = JsonObject::new();
        payload.insert("text".into(), "a \"quoted\" line\n".into());
        let draft = LogDraft {
            kind: "com.example.text".into(),
            payload,
            node: Some("node-1".into()),
            actor: Actor::Operator,
        };
        let block =
            LogBlock::new(&Limits::default(), -5, std::slice::from_ref(&draft)).expect("block");
        assert_eq!(block.args[..4], ["-5", "1000", "1048576", "1"]);
        assert_eq!(block.args[4], draft.size().to_string());
        // The script: '{"z":' .. size .. ',"seq":' .. seq .. ',"at":' .. now .. ',' .. tail
        let stored = format!(
            "{{\"z\":{},\"seq\":3,\"at\":-5,{}",
            block.args[4], block.args[5]
        );
        let entry: LogEntry = serde_json::from_str(&stored).expect("an entry");
        assert_eq!(entry, draft.clone().into_entry(3, -5));
        let anonymous = LogDraft {
            node: None,
            ..draft
        };
        let block =
            LogBlock::new(&Limits::default(), 0, std::slice::from_ref(&anonymous)).expect("block");
        let stored = format!("{{\"z\":1,\"seq\":0,\"at\":0,{}", block.args[5]);
        let entry: LogEntry = serde_json::from_str(&stored).expect("an entry");
        assert_eq!(entry, anonymous.into_entry(0, 0));
    }

    /// Against the Redis at `MCP_TEST_REDIS_URL` (default `redis://127.0.0.1:6379/`),
    /// skipped when none answers unless `MCP_REQUIRE_SERVICES=1`: the log key carries
    /// the task key's expiry, records written before the log's hash fields are decoded
    /// instead, and the purge deletes the log, also when Redis removed the task first.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_key_lives_and_dies_with_the_task_key() {
        use crate::record::{NewTask, Origin, WireRevision};
        use crate::{ManualClock, RedisOptions, RedisStore, TaskStore};
        use mcp_tasks_protocol::tasks::TaskStatus;
        use std::sync::Arc;

        let url = std::env::var("MCP_TEST_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_owned());
        let prefix = format!("unit-logs-{}", std::process::id());
        let clock = Arc::new(ManualClock::new(1_767_225_600_000));
        let connect = RedisStore::connect_with(
            RedisOptions::new(url.clone())
                .prefix(&prefix)
                .limits(Limits {
                    max_ttl_ms: None,
                    default_ttl_ms: None,
                    ..Limits::default()
                })
                .clock(clock.clone()),
        );
        let store = match tokio::time::timeout(std::time::Duration::from_secs(5), connect).await {
            Ok(Ok(store)) => store,
            failed if std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1") => {
                panic!("MCP_REQUIRE_SERVICES=1 but no Redis at {url}: {failed:?}")
            }
            _ => return,
        };
        let admin = redis::Client::open(url.as_str())
            .expect("url")
            .get_multiplexed_async_connection()
            .await
            .expect("admin connection");
        let keys = store.inner.keys.clone();
        // Every key of the prefix is deleted at the end, passed or failed.
        let _clean = Clean(keys.clone(), url);
        let owner = Owner::new("alice");
        let new = |ttl_ms| NewTask {
            trace_context: None,
            owner: owner.clone(),
            ttl_ms,
            poll_interval_ms: None,
            origin: Origin {
                method: "tools/call".into(),
                tool: None,
                revision: WireRevision::V2026_07_28,
            },
            status_message: None,
            job: None,
            idempotency: None,
        };
        let pttl = |key: String| {
            let mut admin = admin.clone();
            async move {
                redis::cmd("PTTL")
                    .arg(key)
                    .query_async::<i64>(&mut admin)
                    .await
                    .expect("PTTL")
            }
        };
        let exists = |key: String| {
            let mut admin = admin.clone();
            async move {
                redis::cmd("EXISTS")
                    .arg(key)
                    .query_async::<i64>(&mut admin)
                    .await
                    .expect("EXISTS")
                    == 1
            }
        };
        let line = |text: &str| {
            let mut payload = JsonObject::new();
            payload.insert("text".into(), text.into());
            LogDraft {
                kind: "com.example.text".into(),
                payload,
                node: None,
                actor: Actor::Worker,
            }
        };

        let task = store.create(new(Some(60_000))).await.expect("create");
        let (task_key, log_key) = (keys.task(&task.id), keys.log(&task.id));
        let (t, l) = (pttl(task_key.clone()).await, pttl(log_key.clone()).await);
        assert!(t > 60_000 && (t - l).abs() <= 5, "task {t} ms, log {l} ms");
        let forever = store.create(new(None)).await.expect("create");
        assert_eq!(pttl(keys.log(&forever.id)).await, -1);

        // A record from before the log's fields: the scripts decode it.
        let _: i64 = redis::cmd("HDEL")
            .arg(&task_key)
            .arg("own")
            .arg("exp")
            .arg("st")
            .query_async(&mut admin.clone())
            .await
            .expect("HDEL");
        assert_eq!(
            store
                .append_log(&owner, &task.id, vec![line("a")])
                .await
                .expect("append"),
            1
        );
        let page = store.read_log(&owner, &task.id, None, 10).await;
        assert_eq!(page.expect("read").next, 2);
        let foreign = store
            .read_log(&Owner::new("mallory"), &task.id, None, 10)
            .await;
        assert!(matches!(foreign, Err(StoreError::NotFound)), "{foreign:?}");
        store.cancel(&owner, &task.id, None).await.expect("cancel");
        let _: i64 = redis::cmd("HDEL")
            .arg(&task_key)
            .arg("st")
            .query_async(&mut admin.clone())
            .await
            .expect("HDEL");
        let _: i64 = redis::cmd("HDEL")
            .arg(&task_key)
            .arg("own")
            .query_async(&mut admin.clone())
            .await
            .expect("HDEL");
        let late = store.append_log(&owner, &task.id, vec![line("b")]).await;
        assert!(
            matches!(
                late,
                Err(StoreError::Terminal {
                    status: TaskStatus::Cancelled
                })
            ),
            "{late:?}"
        );
        clock.advance(60_000);
        let expired = store.read_log(&owner, &task.id, None, 10).await;
        assert!(matches!(expired, Err(StoreError::NotFound)), "{expired:?}");

        // The purge deletes the log, and so does the sweep of a task Redis removed first.
        let vanished = store.create(new(Some(1_000))).await.expect("create");
        let _: i64 = redis::cmd("DEL")
            .arg(keys.task(&vanished.id))
            .query_async(&mut admin.clone())
            .await
            .expect("DEL");
        assert!(exists(keys.log(&vanished.id)).await);
        clock.advance(1_000);
        assert_eq!(store.sweep().await.expect("sweep").purged, 2);
        assert!(!exists(log_key).await, "the purge deletes the log");
        assert!(
            !exists(keys.log(&vanished.id)).await,
            "also of a vanished task"
        );
    }

    /// Deletes the keys of its prefix when dropped.
    struct Clean(super::super::Keys, String);

    impl Drop for Clean {
        fn drop(&mut self) {
            let Ok(mut conn) =
                redis::Client::open(self.1.as_str()).and_then(|c| c.get_connection())
            else {
                return;
            };
            let found: Vec<String> = redis::cmd("KEYS")
                .arg(self.0.pattern())
                .query(&mut conn)
                .unwrap_or_default();
            for key in found.iter().filter(|k| self.0.owns(k)) {
                let _: Result<i64, _> = redis::cmd("DEL").arg(key).query(&mut conn);
            }
        }
    }
}
