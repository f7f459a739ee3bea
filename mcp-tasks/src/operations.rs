//! The [`TaskStore`] operations, written once for every [`Backend`]: which rule of
//! [`rules`] each runs through [`Backend::update_task`] (or
//! [`Backend::insert_task`]), and which events it announces.

use std::collections::BTreeMap;

use async_trait::async_trait;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use serde_json::Value;

use crate::backend::{Backend, Events};
use crate::cursor;
use crate::error::StoreError;
use crate::event::{EventStream, TaskEvent};
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts};
use crate::record::{
    Lease, NewTask, Owner, Recovery, Resolved, SweepReport, TaskId, TaskPage, TaskRecord,
    Transition,
};
use crate::rules::{self, Finish};
use crate::session::SessionStore;
use crate::store::TaskStore;

/// An operation's argument on its way into the rule: moved into the only run of a
/// backend that runs each update once, copied into every run of one that may re-run.
struct Arg<T> {
    value: Option<T>,
    keep: bool,
}

impl<T: Clone> Arg<T> {
    fn new<B: Backend>(value: T) -> Arg<T> {
        Arg {
            value: Some(value),
            keep: B::RERUNS_UPDATES,
        }
    }

    fn take(&mut self) -> Result<T, StoreError> {
        let value = if self.keep {
            self.value.clone()
        } else {
            self.value.take()
        };
        value.ok_or_else(|| {
            StoreError::backend("the backend ran an update again but says it never does")
        })
    }
}

/// Announces the record's new state.
fn changed<R>(_: &R, rec: &TaskRecord) -> Events {
    Events::one(TaskEvent::changed(rec))
}

/// Announces nothing (a change only the worker cares about).
fn silent<R>(_: &R, _: &TaskRecord) -> Events {
    Events::none()
}

/// The terminal write: announced when this call won.
async fn finish<B: Backend>(
    store: &B,
    owner: &Owner,
    id: &TaskId,
    finish: Finish,
) -> Result<Transition, StoreError> {
    rules::check_finish(&finish, store.limits())?;
    let mut finish = Arg::new::<B>(finish);
    let (won, record) = store
        .update_task(
            owner,
            id,
            move |rec, now, _| Ok(rules::finish(rec, finish.take()?, now)),
            |won, rec| {
                if *won {
                    Events::one(TaskEvent::changed(rec))
                } else {
                    Events::none()
                }
            },
        )
        .await?;
    Ok(Transition { won, record })
}

#[async_trait]
impl<B: Backend> TaskStore for B {
    async fn create(&self, new: NewTask) -> Result<TaskRecord, StoreError> {
        let id = TaskId::random().map_err(StoreError::backend)?;
        self.insert_task(
            move |limits, now| rules::new_record(id, new, limits, now),
            changed,
        )
        .await
    }

    async fn create_leased(
        &self,
        new: NewTask,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<TaskRecord, StoreError> {
        let id = TaskId::random().map_err(StoreError::backend)?;
        let holder = holder.to_owned();
        self.insert_task(
            move |limits, now| rules::new_leased_record(id, new, limits, now, &holder, ttl_ms),
            changed,
        )
        .await
    }

    async fn get(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.read_task(owner, id).await
    }

    async fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let after = cursor.map(cursor::decode).transpose()?;
        self.list_tasks(owner, after, limit.max(1)).await
    }

    async fn set_status_message(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<TaskRecord, StoreError> {
        let mut message = Arg::new::<B>(message);
        let ((), record) = self
            .update_task(
                owner,
                id,
                move |rec, now, _| rules::set_status_message(rec, message.take()?, now),
                changed,
            )
            .await?;
        Ok(record)
    }

    async fn request_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        requests: BTreeMap<String, Value>,
    ) -> Result<TaskRecord, StoreError> {
        let mut requests = Arg::new::<B>(requests);
        let ((), record) = self
            .update_task(
                owner,
                id,
                move |rec, now, limits| rules::request_input(rec, requests.take()?, limits, now),
                // Only a change is announced (no requests: no change).
                changed,
            )
            .await?;
        Ok(record)
    }

    async fn resolve_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        responses: BTreeMap<String, Value>,
    ) -> Result<Resolved, StoreError> {
        let mut responses = Arg::new::<B>(responses);
        let (accepted, record) = self
            .update_task(
                owner,
                id,
                move |rec, now, _| Ok(rules::resolve_input(rec, responses.take()?, now)),
                // Only a change is announced: no answer accepted, nothing to say.
                |accepted: &Vec<String>, rec| {
                    Events::two(
                        TaskEvent::changed(rec),
                        TaskEvent::InputResponded {
                            key: rec.key(),
                            keys: accepted.clone(),
                        },
                    )
                },
            )
            .await?;
        Ok(Resolved { accepted, record })
    }

    async fn take_input_response(
        &self,
        owner: &Owner,
        id: &TaskId,
        key: &str,
    ) -> Result<Option<Value>, StoreError> {
        let key = key.to_owned();
        let (value, _) = self
            .update_task(
                owner,
                id,
                move |rec, now, _| Ok(rules::take_input_response(rec, &key, now)),
                silent,
            )
            .await?;
        Ok(value)
    }

    async fn complete(
        &self,
        owner: &Owner,
        id: &TaskId,
        result: JsonObject,
    ) -> Result<Transition, StoreError> {
        finish(self, owner, id, Finish::Complete(result)).await
    }

    async fn fail(
        &self,
        owner: &Owner,
        id: &TaskId,
        error: ErrorObject,
    ) -> Result<Transition, StoreError> {
        finish(self, owner, id, Finish::Fail(error)).await
    }

    async fn cancel(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<Transition, StoreError> {
        finish(self, owner, id, Finish::Cancel(message)).await
    }

    async fn request_cancel(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let (_, record) = self
            .update_task(
                owner,
                id,
                |rec, now, _| Ok(rules::request_cancel(rec, now)),
                // A queued task is cancelled at once (rule 21): its waiters hear it.
                |_, rec| {
                    let asked = TaskEvent::CancelRequested { key: rec.key() };
                    if rec.is_terminal() {
                        Events::two(asked, TaskEvent::changed(rec))
                    } else {
                        Events::one(asked)
                    }
                },
            )
            .await?;
        Ok(record)
    }

    async fn claim_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        let holder = holder.to_owned();
        let (lease, _) = self
            .update_task(
                owner,
                id,
                move |rec, now, _| rules::claim_lease(rec, &holder, ttl_ms, now),
                silent,
            )
            .await?;
        Ok(lease)
    }

    async fn renew_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        let holder = holder.to_owned();
        let (lease, _) = self
            .update_task(
                owner,
                id,
                move |rec, now, _| rules::renew_lease(rec, &holder, ttl_ms, now),
                silent,
            )
            .await?;
        Ok(lease)
    }

    async fn release_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
    ) -> Result<(), StoreError> {
        let holder = holder.to_owned();
        self.update_task(
            owner,
            id,
            move |rec, now, _| rules::release_lease(rec, &holder, now),
            silent,
        )
        .await?;
        Ok(())
    }

    async fn claim_next(
        &self,
        tools: &[String],
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Option<TaskRecord>, StoreError> {
        if tools.is_empty() {
            return Ok(None);
        }
        let holder = holder.to_owned();
        let claimed = self
            .claim_task(
                tools,
                move |rec, now, _| rules::claim_job(rec, &holder, ttl_ms, now),
                // A run after the first changed the status message: say so.
                |_, rec| {
                    if rec.attempt() > 1 {
                        Events::one(TaskEvent::changed(rec))
                    } else {
                        Events::none()
                    }
                },
            )
            .await?;
        Ok(claimed.map(|((), record)| record))
    }

    async fn recover_lapsed(
        &self,
        owner: &Owner,
        id: &TaskId,
        lost: ErrorObject,
    ) -> Result<Recovery, StoreError> {
        let mut lost = Arg::new::<B>(lost);
        let (recovery, _) = self
            .update_task(
                owner,
                id,
                move |rec, now, _| {
                    if !rules::lease_lapsed(rec, now) {
                        return Ok(Recovery::NotLapsed);
                    }
                    Ok(rules::recover_lapsed(rec, lost.take()?, now))
                },
                changed,
            )
            .await?;
        Ok(recovery)
    }

    async fn sweep(&self) -> Result<SweepReport, StoreError> {
        self.sweep_tasks().await
    }

    async fn operator_list(
        &self,
        filter: &OperatorFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<OperatorPage, StoreError> {
        let before = cursor.map(|c| filter.decode_cursor(c)).transpose()?;
        self.operator_list_tasks(filter, before, limit.max(1)).await
    }

    async fn operator_get(&self, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.operator_read_task(id).await
    }

    async fn operator_counts(&self) -> Result<TaskCounts, StoreError> {
        self.operator_count_tasks().await
    }

    fn events(&self) -> EventStream {
        self.subscribe()
    }

    fn sessions(&self) -> Option<&dyn SessionStore> {
        self.session_store()
    }

    fn backend(&self) -> &'static str {
        B::NAME
    }
}
