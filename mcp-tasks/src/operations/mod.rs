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
use crate::log::{self, Actor, LogDraft, LogPage, kinds};
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts};
use crate::record::{
    Lease, NewTask, Owner, Recovery, Resolved, SweepReport, TaskId, TaskPage, TaskRecord,
    Transition,
};
use crate::rules::{self, Finish};
use crate::session::SessionStore;
use crate::store::TaskStore;
use note::{Note, note_rerun, object};

mod note;

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

/// A create with an idempotency key (rule 25): a valid key, on a backend that keeps
/// them; never silently ignored.
fn check_idempotency<B: Backend>(new: &NewTask) -> Result<(), StoreError> {
    let Some(idempotency) = &new.idempotency else {
        return Ok(());
    };
    if !B::IDEMPOTENCY {
        return Err(StoreError::Unsupported {
            operation: "idempotency keys",
        });
    }
    idempotency.check()
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
    let note = Note::of::<B>(Actor::Worker);
    let (won, record) = store
        .update_task(
            owner,
            id,
            move |rec, now, _| {
                let won = rules::finish(rec, finish.take()?, now);
                if won {
                    note.add(rec, kinds::STATUS, log::terminal_payload);
                }
                Ok(won)
            },
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
        check_idempotency::<B>(&new)?;
        let id = TaskId::random().map_err(StoreError::backend)?;
        let note = Note::of::<B>(Actor::Owner);
        self.insert_task(
            move |limits, now| {
                let mut rec = rules::new_record(id, new, limits, now);
                note.add(&mut rec, kinds::STATUS, log::status_payload);
                note_rerun(&note, &mut rec);
                rec
            },
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
        check_idempotency::<B>(&new)?;
        let id = TaskId::random().map_err(StoreError::backend)?;
        let holder = holder.to_owned();
        let note = Note::of::<B>(Actor::Owner);
        self.insert_task(
            move |limits, now| {
                let mut rec = rules::new_leased_record(id, new, limits, now, &holder, ttl_ms);
                note.add(&mut rec, kinds::STATUS, log::status_payload);
                note_rerun(&note, &mut rec);
                rec
            },
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
        let note = Note::of::<B>(Actor::Worker);
        let ((), record) = self
            .update_task(
                owner,
                id,
                move |rec, now, _| {
                    let before = rec.revision;
                    rules::set_status_message(rec, message.take()?, now)?;
                    note.add_if_changed(rec, before, kinds::STATUS, log::status_payload);
                    Ok(())
                },
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
        let note = Note::of::<B>(Actor::Worker);
        let ((), record) = self
            .update_task(
                owner,
                id,
                move |rec, now, limits| {
                    let (before, requests) = (rec.revision, requests.take()?);
                    let keys: Vec<String> = requests.keys().cloned().collect();
                    rules::request_input(rec, requests, limits, now)?;
                    note.add_if_changed(rec, before, kinds::INPUT, |rec| {
                        let asked: JsonObject = keys
                            .iter()
                            .filter_map(|k| Some((k.clone(), rec.input_requests.get(k)?.clone())))
                            .collect();
                        object(serde_json::json!({
                            "status": rec.status.as_str(),
                            "inputRequests": asked,
                        }))
                    });
                    Ok(())
                },
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
        let note = Note::of::<B>(Actor::Owner);
        let (accepted, record) = self
            .update_task(
                owner,
                id,
                move |rec, now, _| {
                    let accepted = rules::resolve_input(rec, responses.take()?, now);
                    if !accepted.is_empty() {
                        note.add(rec, kinds::ANSWER, |rec| {
                            object(serde_json::json!({
                                "keys": accepted,
                                "status": rec.status.as_str(),
                            }))
                        });
                    }
                    Ok(accepted)
                },
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
        let note = Note::of::<B>(Actor::Owner);
        let (_, record) = self
            .update_task(
                owner,
                id,
                move |rec, now, _| {
                    let before = rec.revision;
                    let asked = rules::request_cancel(rec, now);
                    note.add_if_changed(rec, before, kinds::CANCEL, |rec| {
                        if rec.is_terminal() {
                            log::status_payload(rec)
                        } else {
                            JsonObject::new()
                        }
                    });
                    Ok(asked)
                },
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
        let note = Note::of::<B>(Actor::Worker);
        let claimed = self
            .claim_task(
                tools,
                move |rec, now, _| {
                    rules::claim_job(rec, &holder, ttl_ms, now)?;
                    note.add(rec, kinds::CLAIM, |rec| {
                        object(serde_json::json!({ "attempt": rec.attempt(), "holder": holder }))
                    });
                    Ok(())
                },
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
        let note = Note::of::<B>(Actor::Server);
        let (recovery, _) = self
            .update_task(
                owner,
                id,
                move |rec, now, _| {
                    if !rules::lease_lapsed(rec, now) {
                        return Ok(Recovery::NotLapsed);
                    }
                    let recovery = rules::recover_lapsed(rec, lost.take()?, now);
                    match recovery {
                        Recovery::NotLapsed => {}
                        Recovery::Requeued { attempt } => note.add(rec, kinds::REQUEUE, |_| {
                            object(serde_json::json!({ "attempt": attempt }))
                        }),
                        Recovery::Failed | Recovery::Cancelled => {
                            note.add(rec, kinds::STATUS, log::terminal_payload)
                        }
                    }
                    Ok(recovery)
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

    fn keeps_logs(&self) -> bool {
        B::LOGS
    }

    fn supports_idempotency(&self) -> bool {
        B::IDEMPOTENCY
    }

    async fn append_log(
        &self,
        owner: &Owner,
        id: &TaskId,
        entries: Vec<LogDraft>,
    ) -> Result<u64, StoreError> {
        if !B::LOGS {
            return Err(StoreError::Unsupported {
                operation: "task logs",
            });
        }
        if entries.is_empty() {
            // Nothing to append: the last entry there is.
            let page = self.read_log_entries(owner, id, None, 1).await?;
            return Ok(page.next.saturating_sub(1));
        }
        for entry in &entries {
            log::check_draft(entry, self.limits())?;
        }
        self.append_log_entries(owner, id, entries).await
    }

    async fn read_log(
        &self,
        owner: &Owner,
        id: &TaskId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<LogPage, StoreError> {
        self.read_log_entries(owner, id, after, limit.max(1)).await
    }

    async fn heartbeat_node(
        &self,
        beat: &crate::node::NodeBeat,
    ) -> Result<crate::node::NodeRecord, StoreError> {
        self.beat_node(beat).await
    }

    async fn list_nodes(&self) -> Result<Vec<crate::node::NodeRecord>, StoreError> {
        self.list_node_entries().await
    }

    async fn request_drain(&self, id: &str) -> Result<crate::node::NodeRecord, StoreError> {
        self.drain_node(id).await
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
