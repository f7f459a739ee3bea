//! `GET /console/api/tasks/{id}/history`: a task's timeline, its whole log (contract rule
//! 23, [`mcp_tasks::log`]) as the operator reads it: every change of state the store
//! wrote (created, status messages, input asked with its questions, answers by their keys,
//! cancel asked, claimed, requeued, finished) and the tool's own entries (text lines,
//! progress), in `seq` order, each with its time, the node that wrote it and who acted.
//!
//! Read through the operator's view: [`TaskStore::operator_get`] finds the task and its
//! owner (404 for none), then [`TaskStore::read_log`] reads one page of the owner's log.
//! Query: `after` (a `seq`: the entries after it; from the earliest kept without it) and
//! `limit` (1 to [`MAX_HISTORY`], default [`MAX_HISTORY`]), read strictly (an unknown,
//! repeated or bad parameter is 400). A store that keeps no logs answers 501 naming the
//! operation. The reply, in camelCase:
//!
//! ```json
//! {"taskId": "...", "owner": "alice", "status": "completed", "earliestSeq": 0, "nextSeq": 5,
//!  "entries": [{"seq": 0, "type": "rs.mcp-tasks.status", "payload": {"status": "working"},
//!               "at": 1767225600000, "time": "2026-01-01T00:00:00.000Z",
//!               "node": "W1", "actor": "owner"}],
//!  "truncated": true}
//! ```
//!
//! `at` is milliseconds since the Unix epoch (as every console time), `time` the same
//! instant in RFC 3339; `node` is absent when the writer named none; `truncated` is there
//! (`true`) only when older entries were dropped by retention (`earliestSeq > 0`). A page
//! is full when it has `limit` entries and its last `seq + 1 < nextSeq`: ask again with
//! `after` set to that last `seq`. The payloads are the log's own, data never markup: a
//! status message or a line of text holding HTML is a JSON string here.
//!
//! Audited like a task read in full (`trail.rs`): INFO, `op="console: history"`, the
//! operator as `actor`, the task's owner as `principal`.
//!
//! [`TaskStore::operator_get`]: mcp_tasks::TaskStore::operator_get
//! [`TaskStore::read_log`]: mcp_tasks::TaskStore::read_log

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use mcp_tasks::{LogEntry, LogPage, Millis, TaskId};
use mcp_tasks_protocol::JsonObject;
use serde::Serialize;

use super::access::Operator;
use super::api::{bad, limit, path_id, query_pairs, read_params};
use super::error::ApiError;
use super::{Console, trail};

/// A page's greatest (and default) length: the default retention of a task's log
/// ([`Limits::max_log_entries`](mcp_tasks::Limits::max_log_entries)), so that one read
/// gives a whole log kept with the defaults.
pub(super) const MAX_HISTORY: usize = 1_000;

/// The audit trail's name of this read.
const OP: &str = "console: history";

/// The route, at its full path.
pub(super) fn routes() -> Router<Arc<Console>> {
    Router::new().route("/console/api/tasks/{id}/history", get(history))
}

/// What a history request asks.
#[derive(Debug, PartialEq, Eq)]
struct HistoryQuery {
    after: Option<u64>,
    limit: usize,
}

/// Reads the parameters; an empty value is no value, an unknown or repeated parameter or
/// a bad value is a 400 naming it.
fn history_query(pairs: Vec<(String, String)>) -> Result<HistoryQuery, ApiError> {
    let mut query = HistoryQuery {
        after: None,
        limit: MAX_HISTORY,
    };
    read_params(pairs, |name, value| {
        match name {
            "after" => {
                let seq = value.parse::<u64>().map_err(|_| {
                    bad("after must be the seq of an entry (a whole number from 0)".to_owned())
                })?;
                query.after = Some(seq);
            }
            "limit" => query.limit = limit(&value, MAX_HISTORY)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(query)
}

/// The reply.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct HistoryReply {
    task_id: String,
    /// As [`crate::audit::principal`] shows it.
    owner: String,
    /// The task's status when its record was read (just before its log).
    status: &'static str,
    earliest_seq: u64,
    next_seq: u64,
    entries: Vec<EntryView>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
}

/// One entry of the log as the console shows it.
#[derive(Debug, PartialEq, Serialize)]
struct EntryView {
    seq: u64,
    #[serde(rename = "type")]
    kind: String,
    payload: JsonObject,
    /// Milliseconds since the Unix epoch.
    at: Millis,
    /// `at` in RFC 3339.
    time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<String>,
    actor: &'static str,
}

impl EntryView {
    fn of(entry: LogEntry) -> EntryView {
        EntryView {
            seq: entry.seq,
            time: rfc3339(entry.at),
            at: entry.at,
            kind: entry.kind,
            payload: entry.payload,
            node: entry.node.map(|n| n.to_string()),
            actor: entry.actor.as_str(),
        }
    }
}

/// `ms` since the Unix epoch in RFC 3339 with milliseconds (the epoch for a time before
/// it, which no store's clock writes).
fn rfc3339(ms: Millis) -> String {
    let ms = u64::try_from(ms).unwrap_or(0);
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

impl HistoryReply {
    fn of(task_id: &TaskId, owner: String, status: &'static str, page: LogPage) -> HistoryReply {
        HistoryReply {
            task_id: task_id.as_str().to_owned(),
            owner,
            status,
            earliest_seq: page.earliest,
            next_seq: page.next,
            truncated: page.earliest > 0,
            entries: page.entries.into_iter().map(EntryView::of).collect(),
        }
    }
}

/// The handler: the task through the operator's view, then one page of its log.
async fn history(
    State(console): State<Arc<Console>>,
    Extension(Operator(operator)): Extension<Operator>,
    Path(params): Path<Vec<(String, String)>>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Json<HistoryReply>, ApiError> {
    let query = history_query(query_pairs(query)?)?;
    if !console.store.keeps_logs() {
        return Err(ApiError::Unsupported("task logs"));
    }
    let task_id = path_id(params)?;
    let record = console.store.operator_get(&task_id).await?;
    let page = console
        .store
        .read_log(&record.owner, &task_id, query.after, query.limit)
        .await?;
    trail::read(&console.seal, OP, &operator, &record);
    let owner = crate::audit::principal(&console.seal, &record.owner).into_owned();
    Ok(Json(HistoryReply::of(
        &task_id,
        owner,
        record.status.as_str(),
        page,
    )))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mcp_tasks::Actor;
    use serde_json::json;

    use super::*;
    use crate::http::console::api::tests::pairs;

    #[test]
    fn parameters_are_read_strictly() {
        assert_eq!(
            history_query(Vec::new()).expect("none"),
            HistoryQuery {
                after: None,
                limit: MAX_HISTORY
            }
        );
        assert_eq!(
            history_query(pairs(&[("after", "7"), ("limit", "1")])).expect("valid"),
            HistoryQuery {
                after: Some(7),
                limit: 1
            }
        );
        assert_eq!(
            history_query(pairs(&[("after", "")])).expect("empty").after,
            None
        );
        for bad in [
            &[("after", "-1")][..],
            &[("after", "x")],
            &[("after", "1.5")],
            &[("limit", "0")],
            &[("limit", "1001")],
            &[("limit", "many")],
            &[("cursor", "c")],
            &[("after", "1"), ("after", "2")],
        ] {
            assert!(
                matches!(history_query(pairs(bad)), Err(ApiError::BadRequest(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn entries_show_their_time_node_and_actor() {
        let entry = LogEntry {
            seq: 3,
            kind: "rs.mcp-tasks.text".into(),
            payload: json!({ "text": "<b>x</b>" })
                .as_object()
                .cloned()
                .expect("an object"),
            at: 1_767_225_600_123,
            node: Some(Arc::from("W1")),
            actor: Actor::Worker,
        };
        let shown = serde_json::to_value(EntryView::of(entry)).expect("json");
        assert_eq!(
            shown,
            json!({
                "seq": 3,
                "type": "rs.mcp-tasks.text",
                "payload": { "text": "<b>x</b>" },
                "at": 1_767_225_600_123_i64,
                "time": "2026-01-01T00:00:00.123Z",
                "node": "W1",
                "actor": "worker",
            })
        );
        let page = LogPage {
            entries: Vec::new(),
            earliest: 0,
            next: 0,
        };
        let id = TaskId::from_wire("t".to_owned());
        let reply = serde_json::to_value(HistoryReply::of(&id, "bob".into(), "working", page))
            .expect("json");
        assert_eq!(reply.get("truncated"), None, "{reply}");
        let dropped = LogPage {
            entries: Vec::new(),
            earliest: 4,
            next: 9,
        };
        let reply = serde_json::to_value(HistoryReply::of(&id, "bob".into(), "working", dropped))
            .expect("json");
        assert_eq!(reply["truncated"], true, "{reply}");
        assert_eq!(
            (&reply["earliestSeq"], &reply["nextSeq"]),
            (&json!(4), &json!(9))
        );
    }
}
