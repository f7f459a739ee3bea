//! The task state machine as plain functions on a [`TaskRecord`].
//!
//! A backend makes each call atomic (under a lock, in a transaction, in a script) and
//! persists the record when the function reports a change; the rules themselves live here
//! once, for every backend. Third-party backends may use them too.

use std::collections::BTreeMap;

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use serde_json::Value;

use crate::error::StoreError;
use crate::limits::{Limit, Limits};
use crate::record::{Delivery, Lease, Millis, NewTask, Outcome, Recovery, TaskId, TaskRecord};

/// The status message of a queued task cancelled before any worker took it.
pub const CANCELLED_QUEUED_MESSAGE: &str = "The task was cancelled before a worker started it.";

/// A new record for `new`, as `create` stores it.
pub fn new_record(id: TaskId, new: NewTask, limits: &Limits, now: Millis) -> TaskRecord {
    TaskRecord {
        id,
        owner: new.owner,
        status: TaskStatus::Working,
        status_message: new.status_message,
        created_at: now,
        last_updated_at: now,
        ttl_ms: limits.effective_ttl(new.ttl_ms),
        poll_interval_ms: Some(
            new.poll_interval_ms
                .unwrap_or(limits.default_poll_interval_ms),
        ),
        origin: new.origin,
        outcome: None,
        input_requests: BTreeMap::new(),
        input_responses: BTreeMap::new(),
        used_input_keys: Default::default(),
        cancel_requested: false,
        lease: None,
        revision: 1,
        job: new.job.map(std::sync::Arc::new),
        trace_context: new.trace_context,
        log_append: Vec::new(),
        idempotency: new.idempotency,
    }
}

/// A new task already leased to `holder` for `ttl_ms`: `new_record` and `claim_lease` as
/// one write (the record is still at revision 1).
pub fn new_leased_record(
    id: TaskId,
    new: NewTask,
    limits: &Limits,
    now: Millis,
    holder: &str,
    ttl_ms: u64,
) -> TaskRecord {
    let mut rec = new_record(id, new, limits, now);
    rec.lease = Some(Lease {
        holder: holder.to_owned(),
        expires_at: lease_until(now, ttl_ms),
    });
    // Its first run starts now, on the creator.
    if let Some(job) = &mut rec.job {
        std::sync::Arc::make_mut(job).attempts = 1;
    }
    rec
}

fn touch(rec: &mut TaskRecord, now: Millis) {
    rec.last_updated_at = now.max(rec.last_updated_at);
    rec.revision += 1;
}

fn unfinished(rec: &TaskRecord) -> Result<(), StoreError> {
    if rec.is_terminal() {
        Err(StoreError::Terminal { status: rec.status })
    } else {
        Ok(())
    }
}

/// Sets or clears the status message of an unfinished task.
pub fn set_status_message(
    rec: &mut TaskRecord,
    message: Option<String>,
    now: Millis,
) -> Result<(), StoreError> {
    unfinished(rec)?;
    rec.status_message = message;
    touch(rec, now);
    Ok(())
}

/// Adds input requests; all keys must be new to the task; the pending set must stay within
/// the limit. On error nothing changes.
pub fn request_input(
    rec: &mut TaskRecord,
    requests: BTreeMap<String, Value>,
    limits: &Limits,
    now: Millis,
) -> Result<(), StoreError> {
    unfinished(rec)?;
    if let Some(key) = requests.keys().find(|k| rec.used_input_keys.contains(*k)) {
        return Err(StoreError::InputKeyReused { key: key.clone() });
    }
    if rec.input_requests.len() + requests.len() > limits.max_input_requests_per_task {
        return Err(StoreError::LimitExceeded {
            limit: Limit::InputRequestsPerTask,
            max: limits.max_input_requests_per_task as u64,
        });
    }
    if requests.is_empty() {
        return Ok(());
    }
    for (key, request) in requests {
        rec.used_input_keys.insert(key.clone());
        rec.input_requests.insert(key, request);
    }
    rec.status = TaskStatus::InputRequired;
    touch(rec, now);
    Ok(())
}

/// Accepts answers to pending keys and returns those keys; other keys are ignored. On a
/// terminal task nothing changes.
pub fn resolve_input(
    rec: &mut TaskRecord,
    responses: BTreeMap<String, Value>,
    now: Millis,
) -> Vec<String> {
    if rec.is_terminal() {
        return Vec::new();
    }
    let mut accepted = Vec::new();
    for (key, response) in responses {
        if rec.input_requests.remove(&key).is_some() {
            rec.input_responses.insert(key.clone(), response);
            accepted.push(key);
        }
    }
    if accepted.is_empty() {
        return accepted;
    }
    if rec.input_requests.is_empty() && rec.status == TaskStatus::InputRequired {
        rec.status = TaskStatus::Working;
    }
    touch(rec, now);
    accepted
}

/// Removes and returns the answer to `key`.
pub fn take_input_response(rec: &mut TaskRecord, key: &str, now: Millis) -> Option<Value> {
    let value = rec.input_responses.remove(key)?;
    touch(rec, now);
    Some(value)
}

/// How a terminal write ends a task.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// `completed`, with the request's result.
    Complete(JsonObject),
    /// `failed`, with the request's JSON-RPC error.
    Fail(ErrorObject),
    /// `cancelled`, with an optional status message.
    Cancel(Option<String>),
}

/// Checks a finish against the limits before any state is touched.
pub fn check_finish(finish: &Finish, limits: &Limits) -> Result<(), StoreError> {
    if let Finish::Complete(result) = finish {
        let bytes = serde_json::to_vec(result)
            .map_err(StoreError::backend)?
            .len();
        if bytes > limits.max_result_bytes {
            return Err(StoreError::LimitExceeded {
                limit: Limit::ResultBytes,
                max: limits.max_result_bytes as u64,
            });
        }
    }
    Ok(())
}

/// The terminal write. Returns `true` when this call moved the task; `false` (and no
/// change) when it was already terminal.
pub fn finish(rec: &mut TaskRecord, finish: Finish, now: Millis) -> bool {
    if rec.is_terminal() {
        return false;
    }
    match finish {
        Finish::Complete(result) => {
            rec.status = TaskStatus::Completed;
            rec.status_message = tool_error_message(&result);
            rec.outcome = Some(Outcome::Result(result));
        }
        Finish::Fail(error) => {
            rec.status = TaskStatus::Failed;
            rec.status_message = Some(error.message.clone());
            rec.outcome = Some(Outcome::Error(error));
        }
        Finish::Cancel(message) => {
            rec.status = TaskStatus::Cancelled;
            rec.status_message = message.or(rec.status_message.take());
        }
    }
    rec.input_requests.clear();
    rec.lease = None;
    touch(rec, now);
    true
}

/// What a result's tool error says (its first text content), when the result is one
/// (`isError: true`): the status message of a task that completed with it.
fn tool_error_message(result: &JsonObject) -> Option<String> {
    if result.get("isError") != Some(&Value::Bool(true)) {
        return None;
    }
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|content| {
            content
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("text"))
        })
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty());
    Some(match text {
        Some(text) => format!("Tool error: {text}"),
        None => "Tool error".to_owned(),
    })
}

/// Raises the cancel flag of an unfinished task. A task waiting for a worker
/// ([`TaskRecord::queued_tool`]) has nobody to stop: it is cancelled at once, so no
/// worker ever runs it. Returns whether anything changed.
pub fn request_cancel(rec: &mut TaskRecord, now: Millis) -> bool {
    if rec.is_terminal() || rec.cancel_requested {
        return false;
    }
    let queued = rec.queued_tool().is_some();
    rec.cancel_requested = true;
    if queued {
        finish(
            rec,
            Finish::Cancel(Some(CANCELLED_QUEUED_MESSAGE.to_owned())),
            now,
        );
    } else {
        touch(rec, now);
    }
    true
}

/// The status message of a run after the first: `Attempt 2 of 3`.
pub fn attempt_message(attempt: u32, delivery: Delivery) -> String {
    format!("Attempt {attempt} of {}", delivery.max_attempts())
}

/// A worker takes a task waiting for one: the lease is `holder`'s, the run count goes
/// up (a run after the first says so in the status message). A task not waiting for a
/// worker is [`StoreError::NotQueued`], and nothing changes.
pub fn claim_job(
    rec: &mut TaskRecord,
    holder: &str,
    ttl_ms: u64,
    now: Millis,
) -> Result<(), StoreError> {
    if rec.queued_tool().is_none() {
        return Err(StoreError::NotQueued);
    }
    let Some(job) = rec.job.as_mut().map(std::sync::Arc::make_mut) else {
        return Err(StoreError::NotQueued);
    };
    job.attempts = job.attempts.saturating_add(1);
    if job.attempts > 1 {
        rec.status_message = Some(attempt_message(job.attempts, job.delivery));
    }
    rec.lease = Some(Lease {
        holder: holder.to_owned(),
        expires_at: lease_until(now, ttl_ms),
    });
    touch(rec, now);
    Ok(())
}

/// What a lapsed lease means for its task, by the job's delivery: an at-least-once task
/// with attempts left waits for a worker again (its pending input requests and unread
/// answers belong to the lost run and are dropped; its keys stay used); a task whose
/// cancel was requested ends cancelled; any other fails with `lost`. A task whose lease
/// did not lapse (finished, renewed meanwhile, none) is left alone.
pub fn recover_lapsed(rec: &mut TaskRecord, lost: ErrorObject, now: Millis) -> Recovery {
    if !lease_lapsed(rec, now) {
        return Recovery::NotLapsed;
    }
    recover_lost(rec, lost, now)
}

/// What a lost run means for its unfinished task, lease or not (the only process that
/// could run it is known gone): as [`recover_lapsed`] for a lapsed lease.
pub fn recover_lost(rec: &mut TaskRecord, lost: ErrorObject, now: Millis) -> Recovery {
    if rec.is_terminal() {
        return Recovery::NotLapsed;
    }
    if rec.cancel_requested {
        finish(rec, Finish::Cancel(None), now);
        return Recovery::Cancelled;
    }
    match &rec.job {
        Some(job) if job.attempts < job.delivery.max_attempts() => {
            let attempt = job.attempts;
            rec.lease = None;
            rec.input_requests.clear();
            rec.input_responses.clear();
            rec.status = TaskStatus::Working;
            rec.status_message = Some(format!(
                "Attempt {attempt} of {} lost its worker; waiting for another",
                job.delivery.max_attempts()
            ));
            touch(rec, now);
            Recovery::Requeued { attempt }
        }
        job => {
            let attempts = job
                .as_ref()
                .filter(|j| j.attempts > 1)
                .map(|j| attempt_message(j.attempts, j.delivery));
            let message = match attempts {
                Some(attempts) => format!("{} ({attempts})", lost.message),
                None => lost.message.clone(),
            };
            finish(rec, Finish::Fail(lost), now);
            rec.status_message = Some(message);
            Recovery::Failed
        }
    }
}

fn lease_until(now: Millis, ttl_ms: u64) -> Millis {
    now.saturating_add(i64::try_from(ttl_ms).unwrap_or(i64::MAX))
}

/// Takes the lease when it is free, lapsed, or already the caller's.
pub fn claim_lease(
    rec: &mut TaskRecord,
    holder: &str,
    ttl_ms: u64,
    now: Millis,
) -> Result<Lease, StoreError> {
    unfinished(rec)?;
    if let Some(lease) = &rec.lease
        && lease.holder != holder
        && lease.expires_at > now
    {
        return Err(StoreError::LeaseHeld);
    }
    let lease = Lease {
        holder: holder.to_owned(),
        expires_at: lease_until(now, ttl_ms),
    };
    rec.lease = Some(lease.clone());
    touch(rec, now);
    Ok(lease)
}

/// Extends the caller's lease. A lapsed lease cannot be renewed: the sweep may already
/// have given up on its worker, so the worker must claim again.
pub fn renew_lease(
    rec: &mut TaskRecord,
    holder: &str,
    ttl_ms: u64,
    now: Millis,
) -> Result<Lease, StoreError> {
    unfinished(rec)?;
    match &rec.lease {
        Some(lease) if lease.holder == holder && lease.expires_at > now => {
            let lease = Lease {
                holder: holder.to_owned(),
                expires_at: lease_until(now, ttl_ms),
            };
            rec.lease = Some(lease.clone());
            touch(rec, now);
            Ok(lease)
        }
        _ => Err(StoreError::LeaseLost),
    }
}

/// Drops the caller's lease. Releasing on a finished task is fine (the lease is gone).
pub fn release_lease(rec: &mut TaskRecord, holder: &str, now: Millis) -> Result<(), StoreError> {
    match &rec.lease {
        Some(lease) if lease.holder == holder => {
            rec.lease = None;
            touch(rec, now);
            Ok(())
        }
        None if rec.is_terminal() => Ok(()),
        _ => Err(StoreError::LeaseLost),
    }
}

/// True for an unfinished task whose lease has lapsed.
pub fn lease_lapsed(rec: &TaskRecord, now: Millis) -> bool {
    !rec.is_terminal() && rec.lease.as_ref().is_some_and(|l| l.expires_at <= now)
}
