//! The log entries an operation writes with its change (contract rule 23): who writes
//! them ([`Note`], read from the caller's [`LogScope`]) and the re-run link.

use mcp_tasks_protocol::JsonObject;
use serde_json::Value;

use crate::backend::Backend;
use crate::log::{Actor, LogDraft, LogScope, kinds};
use crate::record::TaskRecord;

/// Who writes the log entries of one operation (contract rule 23), read from the caller's
/// [`LogScope`] before the operation starts (a backend may run it on another task), or
/// nothing when the backend keeps no logs.
#[derive(Clone)]
pub(super) struct Note(Option<(Option<std::sync::Arc<str>>, Actor)>);

impl Note {
    /// The writer of an operation whose actor, outside any scope, is `actor`.
    pub(super) fn of<B: Backend>(actor: Actor) -> Note {
        if !B::LOGS {
            return Note(None);
        }
        let scope = LogScope::current();
        Note(Some((scope.node, scope.actor.unwrap_or(actor))))
    }

    /// Adds an entry of `kind` to what the write of `rec` appends to its log.
    pub(super) fn add(
        &self,
        rec: &mut TaskRecord,
        kind: &str,
        payload: impl FnOnce(&TaskRecord) -> JsonObject,
    ) {
        if let Some((node, actor)) = &self.0 {
            let payload = payload(rec);
            rec.log_append.push(LogDraft {
                kind: kind.to_owned(),
                payload,
                node: node.clone(),
                actor: *actor,
            });
        }
    }

    /// Adds an entry when the change happened: the revision moved past `before`.
    pub(super) fn add_if_changed(
        &self,
        rec: &mut TaskRecord,
        before: u64,
        kind: &str,
        payload: impl FnOnce(&TaskRecord) -> JsonObject,
    ) {
        if rec.revision != before {
            self.add(rec, kind, payload);
        }
    }
}

pub(super) fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// A new task that re-runs another says so in its log, in its creation's write
/// (`kinds::RERUN`).
pub(super) fn note_rerun(note: &Note, rec: &mut TaskRecord) {
    let Some(of) = rec.job.as_ref().and_then(|j| j.rerun_of.clone()) else {
        return;
    };
    note.add(rec, kinds::RERUN, |_| {
        let mut payload = JsonObject::new();
        payload.insert("rerunOf".into(), Value::String(of.as_str().to_owned()));
        payload
    });
}
