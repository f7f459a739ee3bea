//! A task's event log: what happened to one task, in order, kept by the store beside the
//! task and removed with it (contract rule 23 of [`TaskStore`](crate::TaskStore)).
//!
//! Two writers share one log, so the log is the task's history:
//!
//! - **the store's operations** write a [`kinds`] entry with every change of state they
//!   make (created, status message, input asked, answers, cancel asked, claimed, finished),
//!   in the same atomic write as the change itself;
//! - **tools** append their own entries ([`TaskStore::append_log`](crate::TaskStore::append_log)):
//!   progress, text output, any vendor-prefixed type with a JSON object payload.
//!
//! Every entry gets the next sequence number of its task (the first is 0, no gaps, also
//! when several handles on several machines write), the store's time, and the node and
//! actor that made it ([`LogScope`]). Retention is bounded per task
//! ([`Limits::max_log_entries`](crate::Limits::max_log_entries),
//! [`Limits::max_log_bytes`](crate::Limits::max_log_bytes)): the oldest entries go first,
//! the newest is always kept, and a read says which is the earliest still kept.
//!
//! This is what MCP's draft task event streams (SEP-2694, `tasks/stream`) deliver: `seq`,
//! `type` and `payload` here are the wire's.

use std::collections::VecDeque;
use std::sync::Arc;

use mcp_tasks_protocol::JsonObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::StoreError;
use crate::limits::{Limit, Limits};
use crate::record::{Millis, Outcome, TaskRecord};

/// The prefix of every entry type this crate writes: a reverse-DNS style prefix of our
/// own, as SEP-2694 asks of implementation-defined types (unprefixed types are reserved
/// for MCP itself).
pub const PREFIX: &str = "rs.mcp-tasks.";

/// The entry types the store's operations write (payloads as documented per constant).
pub mod kinds {
    /// A change of status or status message: `{"status", "statusMessage"?}`; a terminal
    /// entry adds `"isError": true` for a completed task whose tool failed and `"error"`
    /// (the JSON-RPC error object) for a failed one. The first entry of every task
    /// (seq 0) is this type with `"status": "working"`.
    pub const STATUS: &str = "rs.mcp-tasks.status";
    /// The task asked for input: `{"status": "input_required", "inputRequests": {key:
    /// request}}` (the requests added by this change).
    pub const INPUT: &str = "rs.mcp-tasks.input";
    /// Answers were accepted: `{"keys": [...], "status"}` (the keys answered, and the
    /// status after: `working` again once nothing is pending). The answers themselves
    /// are not copied into the log.
    pub const ANSWER: &str = "rs.mcp-tasks.answer";
    /// Someone asked for the task to stop: `{}` (`{"status": "cancelled"}` when the task
    /// was waiting for a worker and is cancelled at once).
    pub const CANCEL: &str = "rs.mcp-tasks.cancel";
    /// A worker claimed the task: `{"attempt", "holder"}`.
    pub const CLAIM: &str = "rs.mcp-tasks.claim";
    /// A run of the task was lost with its worker and the task waits for another:
    /// `{"attempt"}` (the run that was lost).
    pub const REQUEUE: &str = "rs.mcp-tasks.requeue";
    /// Text output of the tool: `{"text"}` ([`LogDraft::text`](super::LogDraft::text)).
    pub const TEXT: &str = "rs.mcp-tasks.text";
    /// The task re-runs another (the operator's console made it with the same tool,
    /// arguments and owner): `{"rerunOf": id}`, written with its creation (seq 1, after
    /// the `working` entry) when its job names the task it re-runs
    /// ([`Job::rerun_of`](crate::Job::rerun_of)). The task it re-runs is finished, so its
    /// own log never changes: the link back is found from the new task's record.
    pub const RERUN: &str = "rs.mcp-tasks.rerun";
}

/// Who made an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The task's owner (the MCP client): created it, answered, asked to cancel.
    Owner,
    /// The person running the server, through the operator's console.
    Operator,
    /// The worker running the task (its tool, or the runtime around it).
    Worker,
    /// The server itself: recovery of a lost run, the sweep.
    Server,
}

impl Actor {
    /// The name in the log and on the wire: `owner`, `operator`, `worker`, `server`.
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Owner => "owner",
            Actor::Operator => "operator",
            Actor::Worker => "worker",
            Actor::Server => "server",
        }
    }
}

/// One entry of a task's log, as stored and read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Its place in the task's log: 0 for the first entry, then one more each.
    pub seq: u64,
    /// Its type: one of [`kinds`] or a tool's own vendor-prefixed type.
    #[serde(rename = "type")]
    pub kind: String,
    /// What it says, a JSON object whose shape `kind` names.
    pub payload: JsonObject,
    /// When the store wrote it (its clock).
    pub at: Millis,
    /// The node that wrote it, when the writer named one ([`LogScope`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Arc<str>>,
    /// Who made it.
    pub actor: Actor,
}

impl LogEntry {
    /// The size this entry counts for against [`Limits::max_log_bytes`]: its type and
    /// its payload as compact JSON text.
    pub fn size(&self) -> usize {
        entry_size(&self.kind, &self.payload)
    }
}

fn entry_size(kind: &str, payload: &JsonObject) -> usize {
    // Writing JSON into a counter cannot fail for a map of JSON values.
    let mut counter = ByteCount(0);
    let _ = serde_json::to_writer(&mut counter, payload);
    kind.len() + counter.0
}

struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An entry on its way into a log: the store gives it its `seq` and its time.
#[derive(Debug, Clone, PartialEq)]
pub struct LogDraft {
    /// Its type ([`kinds`] or a vendor-prefixed type of the tool's).
    pub kind: String,
    /// What it says.
    pub payload: JsonObject,
    /// The node writing it.
    pub node: Option<Arc<str>>,
    /// Who makes it.
    pub actor: Actor,
}

impl LogDraft {
    /// An entry of `kind` with `payload`, by the node and actor of the current
    /// [`LogScope`] (a worker on no named node outside any scope).
    pub fn new(kind: impl Into<String>, payload: JsonObject) -> LogDraft {
        let scope = LogScope::current();
        LogDraft {
            kind: kind.into(),
            payload,
            node: scope.node,
            actor: scope.actor.unwrap_or(Actor::Worker),
        }
    }

    /// Text output of a tool ([`kinds::TEXT`]).
    pub fn text(text: impl Into<String>) -> LogDraft {
        let mut payload = JsonObject::new();
        payload.insert("text".into(), Value::String(text.into()));
        LogDraft::new(kinds::TEXT, payload)
    }

    /// The entry it becomes as number `seq`, written at `at`.
    pub fn into_entry(self, seq: u64, at: Millis) -> LogEntry {
        LogEntry {
            seq,
            kind: self.kind,
            payload: self.payload,
            at,
            node: self.node,
            actor: self.actor,
        }
    }

    /// The size this entry will count for ([`LogEntry::size`]).
    pub fn size(&self) -> usize {
        entry_size(&self.kind, &self.payload)
    }
}

/// Checks a tool's entry before it is appended: a vendor-prefixed type (a `.` or `/`
/// inside it, never the spec's `io.modelcontextprotocol/` or `mcp.dev/` prefixes, at most
/// 200 bytes) and at most [`Limits::max_log_entry_bytes`].
pub fn check_draft(draft: &LogDraft, limits: &Limits) -> Result<(), StoreError> {
    let kind = draft.kind.as_str();
    let prefixed = kind
        .find(['.', '/'])
        .is_some_and(|at| at > 0 && at + 1 < kind.len());
    let reserved = kind.starts_with("io.modelcontextprotocol") || kind.starts_with("mcp.dev/");
    if !prefixed
        || reserved
        || kind.len() > 200
        || kind.chars().any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(StoreError::InvalidLogType {
            kind: kind.chars().take(200).collect(),
        });
    }
    let size = draft.size();
    if size > limits.max_log_entry_bytes {
        return Err(StoreError::LimitExceeded {
            limit: Limit::LogEntryBytes,
            max: limits.max_log_entry_bytes as u64,
        });
    }
    Ok(())
}

/// A page of one task's log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogPage {
    /// Entries after the cursor asked for, oldest first, without gaps.
    pub entries: Vec<LogEntry>,
    /// The earliest entry still kept (older ones were dropped by retention); equal to
    /// `next` when none is kept.
    pub earliest: u64,
    /// The `seq` the next entry of this task will get.
    pub next: u64,
}

impl LogPage {
    /// True when `after` names an entry the log no longer keeps the successor of: the
    /// entries between were dropped (SEP-2694's `events_gone`).
    pub fn is_gone_after(&self, after: Option<u64>) -> bool {
        after.is_some_and(|after| after.saturating_add(1) < self.earliest)
    }
}

/// A task's log as the memory store keeps it (and a model for the others): the entries
/// still kept, their total size, and the next `seq`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskLog {
    entries: VecDeque<(LogEntry, usize)>,
    bytes: usize,
    next: u64,
}

impl TaskLog {
    /// Appends `drafts` in order at `at`, then drops the oldest entries past the limits
    /// (never the newest). Returns the `seq` of the last entry appended.
    pub fn append(&mut self, drafts: Vec<LogDraft>, at: Millis, limits: &Limits) -> Option<u64> {
        let mut last = None;
        for draft in drafts {
            let size = draft.size();
            let seq = self.next;
            self.next += 1;
            self.entries.push_back((draft.into_entry(seq, at), size));
            self.bytes += size;
            last = Some(seq);
        }
        while self.entries.len() > 1
            && (self.entries.len() > limits.max_log_entries || self.bytes > limits.max_log_bytes)
        {
            if let Some((_, size)) = self.entries.pop_front() {
                self.bytes -= size;
            }
        }
        last
    }

    /// At most `limit` entries after `after` (from the earliest kept when `None`).
    pub fn read(&self, after: Option<u64>, limit: usize) -> LogPage {
        let earliest = self.entries.front().map_or(self.next, |(e, _)| e.seq);
        let from = after
            .map_or(earliest, |a| a.saturating_add(1))
            .max(earliest);
        let skip = (from - earliest) as usize;
        LogPage {
            entries: self
                .entries
                .iter()
                .skip(skip)
                .take(limit.max(1))
                .map(|(e, _)| e.clone())
                .collect(),
            earliest,
            next: self.next,
        }
    }
}

tokio::task_local! {
    static SCOPE: LogScope;
}

/// Who is writing, for the entries written meanwhile: the node (a server instance's or
/// worker's id) and the actor. A server runs each store call made for a peer, the
/// console or a worker inside the matching scope; entries written outside any scope name
/// no node and the actor the operation implies (the owner for create, answers and cancel
/// requests; the worker for the rest; the server for recovery).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogScope {
    /// The node writing.
    pub node: Option<Arc<str>>,
    /// Who acts; `None` leaves it to the operation.
    pub actor: Option<Actor>,
}

impl LogScope {
    /// Runs `fut` with this scope.
    pub async fn run<F: std::future::Future>(self, fut: F) -> F::Output {
        SCOPE.scope(self, fut).await
    }

    /// The scope the current task runs in (the default outside any).
    pub fn current() -> LogScope {
        SCOPE.try_with(Clone::clone).unwrap_or_default()
    }
}

/// The status entry of `rec` as it stands ([`kinds::STATUS`]).
pub(crate) fn status_payload(rec: &TaskRecord) -> JsonObject {
    let mut payload = JsonObject::new();
    payload.insert("status".into(), Value::String(rec.status.as_str().into()));
    if let Some(message) = &rec.status_message {
        payload.insert("statusMessage".into(), Value::String(message.clone()));
    }
    payload
}

/// The entry of a terminal write: the status, its message, and what the outcome says
/// about failure (`isError` of a tool's error, `error` of a failed task).
pub(crate) fn terminal_payload(rec: &TaskRecord) -> JsonObject {
    let mut payload = status_payload(rec);
    match &rec.outcome {
        Some(Outcome::Result(result)) if result.get("isError") == Some(&Value::Bool(true)) => {
            payload.insert("isError".into(), Value::Bool(true));
        }
        Some(Outcome::Error(error)) => {
            if let Ok(error) = serde_json::to_value(error) {
                payload.insert("error".into(), error);
            }
        }
        _ => {}
    }
    payload
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(text: &str) -> LogDraft {
        LogDraft {
            kind: kinds::TEXT.into(),
            payload: serde_json::json!({ "text": text })
                .as_object()
                .cloned()
                .expect("an object"),
            node: None,
            actor: Actor::Worker,
        }
    }

    #[test]
    fn retention_drops_the_oldest_and_keeps_the_newest() {
        let limits = Limits {
            max_log_entries: 3,
            ..Limits::default()
        };
        let mut log = TaskLog::default();
        for i in 0..5 {
            log.append(vec![draft(&i.to_string())], 7, &limits);
        }
        let page = log.read(None, 10);
        assert_eq!((page.earliest, page.next), (2, 5));
        let seqs: Vec<u64> = page.entries.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3, 4]);
        assert!(page.is_gone_after(Some(0)));
        assert!(!page.is_gone_after(Some(1)));
        assert_eq!(log.read(Some(3), 10).entries.len(), 1);

        let tiny = Limits {
            max_log_bytes: 1,
            ..Limits::default()
        };
        log.append(vec![draft("big")], 8, &tiny);
        let page = log.read(None, 10);
        assert_eq!(page.entries.len(), 1, "the newest stays, whatever its size");
        assert_eq!(page.entries[0].seq, 5);
    }

    #[test]
    fn tool_types_must_carry_a_prefix_of_their_own() {
        let limits = Limits::default();
        for bad in [
            "progress",
            ".x",
            "x.",
            "io.modelcontextprotocol/x",
            "mcp.dev/x",
            "a b.c",
        ] {
            let mut d = draft("x");
            d.kind = bad.into();
            assert!(check_draft(&d, &limits).is_err(), "{bad}");
        }
        for good in [
            "com.example.build.log",
            "rs.mcp-tasks.text",
            "acme/progress",
        ] {
            let mut d = draft("x");
            d.kind = good.into();
            assert!(check_draft(&d, &limits).is_ok(), "{good}");
        }
        let big = draft(&"x".repeat(limits.max_log_entry_bytes));
        assert!(matches!(
            check_draft(&big, &limits),
            Err(StoreError::LimitExceeded {
                limit: Limit::LogEntryBytes,
                ..
            })
        ));
    }
}
