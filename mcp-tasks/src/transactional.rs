//! What the transactional backends (SQLite, PostgreSQL) share: each [`TaskStore`]
//! operation that changes one task, written once in terms of the backend's
//! read-modify-write primitive, [`Transactional::update`].
//!
//! [`TaskStore`]: crate::TaskStore

use std::collections::BTreeMap;

use async_trait::async_trait;
use mcp_protocol::JsonObject;
use mcp_protocol::jsonrpc::ErrorObject;
use serde_json::Value;

use crate::error::StoreError;
use crate::event::TaskEvent;
use crate::limits::Limits;
use crate::record::Millis;
use crate::record::{Lease, NewTask, Owner, Resolved, TaskId, TaskRecord, Transition};
use crate::rules::{self, Finish};

/// The events of a committed change, from the operation's value and the record after.
pub(crate) type Announce<R> = fn(&R, &TaskRecord) -> Vec<TaskEvent>;

pub(crate) fn changed(rec: &TaskRecord) -> TaskEvent {
    TaskEvent::Changed {
        key: rec.key(),
        status: rec.status,
        revision: rec.revision,
    }
}

pub(crate) fn silent<R>(_: &R, _: &TaskRecord) -> Vec<TaskEvent> {
    Vec::new()
}

/// A backend that changes one task in one transaction.
#[async_trait]
pub(crate) trait Transactional: Send + Sync {
    fn limits(&self) -> &Limits;

    /// Runs `f` on the owner's unexpired task in one write transaction and stores the
    /// record if `f` changed it (bumped its revision); if the task left a live status,
    /// releases its live slot. After the commit, publishes what `announce` makes of `f`'s
    /// value and the record. Returns both. On error nothing changed.
    async fn update<R, F>(
        &self,
        owner: &Owner,
        id: &TaskId,
        f: F,
        announce: Announce<R>,
    ) -> Result<(R, TaskRecord), StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut TaskRecord, Millis, &Limits) -> Result<R, StoreError> + Send + 'static;

    /// Inserts the new record `make` builds (from the limits and the clock's now) in one
    /// write transaction, with its live counts; after the commit, publishes it.
    async fn insert_new<M>(&self, make: M) -> Result<TaskRecord, StoreError>
    where
        M: FnOnce(&Limits, Millis) -> TaskRecord + Send + 'static;
}

pub(crate) async fn create(
    store: &impl Transactional,
    new: NewTask,
) -> Result<TaskRecord, StoreError> {
    let id = TaskId::random().map_err(StoreError::backend)?;
    store
        .insert_new(move |limits, now| rules::new_record(id, new, limits, now))
        .await
}

pub(crate) async fn create_leased(
    store: &impl Transactional,
    new: NewTask,
    holder: &str,
    ttl_ms: u64,
) -> Result<TaskRecord, StoreError> {
    let id = TaskId::random().map_err(StoreError::backend)?;
    let holder = holder.to_owned();
    store
        .insert_new(move |limits, now| {
            rules::new_leased_record(id, new, limits, now, &holder, ttl_ms)
        })
        .await
}

pub(crate) async fn set_status_message(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    message: Option<String>,
) -> Result<TaskRecord, StoreError> {
    let ((), record) = store
        .update(
            owner,
            id,
            move |rec, now, _| rules::set_status_message(rec, message, now),
            |(), rec| vec![changed(rec)],
        )
        .await?;
    Ok(record)
}

pub(crate) async fn request_input(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    requests: BTreeMap<String, Value>,
) -> Result<TaskRecord, StoreError> {
    let ((), record) = store
        .update(
            owner,
            id,
            move |rec, now, limits| rules::request_input(rec, requests, limits, now),
            // Only a change is committed and announced (no requests: no change).
            |(), rec| vec![changed(rec)],
        )
        .await?;
    Ok(record)
}

pub(crate) async fn resolve_input(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    responses: BTreeMap<String, Value>,
) -> Result<Resolved, StoreError> {
    let (accepted, record) = store
        .update(
            owner,
            id,
            move |rec, now, _| Ok(rules::resolve_input(rec, responses, now)),
            |accepted, rec| {
                vec![
                    changed(rec),
                    TaskEvent::InputResponded {
                        key: rec.key(),
                        keys: accepted.clone(),
                    },
                ]
            },
        )
        .await?;
    Ok(Resolved { accepted, record })
}

pub(crate) async fn take_input_response(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    key: &str,
) -> Result<Option<Value>, StoreError> {
    let key = key.to_owned();
    let (value, _) = store
        .update(
            owner,
            id,
            move |rec, now, _| Ok(rules::take_input_response(rec, &key, now)),
            silent,
        )
        .await?;
    Ok(value)
}

pub(crate) async fn complete(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    result: JsonObject,
) -> Result<Transition, StoreError> {
    finish(store, owner, id, Finish::Complete(result)).await
}

pub(crate) async fn fail(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    error: ErrorObject,
) -> Result<Transition, StoreError> {
    finish(store, owner, id, Finish::Fail(error)).await
}

pub(crate) async fn cancel(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    message: Option<String>,
) -> Result<Transition, StoreError> {
    finish(store, owner, id, Finish::Cancel(message)).await
}

async fn finish(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    finish: Finish,
) -> Result<Transition, StoreError> {
    rules::check_finish(&finish, store.limits())?;
    let (won, record) = store
        .update(
            owner,
            id,
            move |rec, now, _| Ok(rules::finish(rec, finish, now)),
            |won, rec| if *won { vec![changed(rec)] } else { Vec::new() },
        )
        .await?;
    Ok(Transition { won, record })
}

pub(crate) async fn request_cancel(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
) -> Result<TaskRecord, StoreError> {
    let (_, record) = store
        .update(
            owner,
            id,
            |rec, now, _| Ok(rules::request_cancel(rec, now)),
            |_, rec| vec![TaskEvent::CancelRequested { key: rec.key() }],
        )
        .await?;
    Ok(record)
}

pub(crate) async fn claim_lease(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    holder: &str,
    ttl_ms: u64,
) -> Result<Lease, StoreError> {
    let holder = holder.to_owned();
    let (lease, _) = store
        .update(
            owner,
            id,
            move |rec, now, _| rules::claim_lease(rec, &holder, ttl_ms, now),
            silent,
        )
        .await?;
    Ok(lease)
}

pub(crate) async fn renew_lease(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    holder: &str,
    ttl_ms: u64,
) -> Result<Lease, StoreError> {
    let holder = holder.to_owned();
    let (lease, _) = store
        .update(
            owner,
            id,
            move |rec, now, _| rules::renew_lease(rec, &holder, ttl_ms, now),
            silent,
        )
        .await?;
    Ok(lease)
}

pub(crate) async fn release_lease(
    store: &impl Transactional,
    owner: &Owner,
    id: &TaskId,
    holder: &str,
) -> Result<(), StoreError> {
    let holder = holder.to_owned();
    store
        .update(
            owner,
            id,
            move |rec, now, _| rules::release_lease(rec, &holder, now),
            silent,
        )
        .await?;
    Ok(())
}
