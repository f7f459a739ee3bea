//! A model-based check: random sequences of operations run against a backend and against
//! a plain reference model of the contract, and every answer must agree.
//!
//! [`op_strategy`] generates operations (proptest); [`check_model`] runs one sequence.

use std::collections::{BTreeMap, BTreeSet};

use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use proptest::prelude::*;
use serde_json::json;

use super::env::{Env, StoreFactory};
use super::helpers::{new_task, roomy};
use crate::{Clock, Millis, NewTask, Owner, StoreError, TaskId, TaskStore};

const OWNERS: u8 = 3;
const KEYS: u8 = 6;

/// One operation; `task` picks among the tasks created so far (modulo their number),
/// `owner` among three owners (so other-owner calls happen often).
#[derive(Debug, Clone)]
pub enum Op {
    /// [`TaskStore::create`].
    Create {
        /// The owner, among three.
        owner: u8,
        /// The TTL asked for.
        ttl_ms: Option<u64>,
    },
    /// [`TaskStore::get`].
    Get {
        /// The task, among those created so far.
        task: u8,
        /// The caller, among three owners.
        owner: u8,
    },
    /// [`TaskStore::set_status_message`].
    SetMessage {
        /// The task, among those created so far.
        task: u8,
        /// The caller, among three owners.
        owner: u8,
        /// The new status message.
        message: Option<String>,
    },
    /// [`TaskStore::request_input`].
    RequestInput {
        /// The task, among those created so far.
        task: u8,
        /// The caller, among three owners.
        owner: u8,
        /// The input request keys, among six.
        keys: Vec<u8>,
    },
    /// [`TaskStore::resolve_input`].
    Resolve {
        /// The task, among those created so far.
        task: u8,
        /// The caller, among three owners.
        owner: u8,
        /// The keys answered, among six.
        keys: Vec<u8>,
    },
    /// [`TaskStore::take_input_response`].
    Take {
        /// The task, among those created so far.
        task: u8,
        /// The caller, among three owners.
        owner: u8,
        /// The key whose answer is taken, among six.
        key: u8,
    },
    /// [`TaskStore::complete`].
    Complete {
        /// The task, among those created so far.
        task: u8,
        /// The caller, among three owners.
        owner: u8,
    },
    /// [`TaskStore::fail`].
    Fail {
        /// The task, among those created so far.
        task: u8,
        /// The caller, among three owners.
        owner: u8,
    },
    /// [`TaskStore::cancel`].
    Cancel {
        /// The task, among those created so far.
        task: u8,
        /// The caller, among three owners.
        owner: u8,
    },
    /// [`TaskStore::request_cancel`].
    RequestCancel {
        /// The task, among those created so far.
        task: u8,
        /// The caller, among three owners.
        owner: u8,
    },
    /// The clock moves forward.
    Advance {
        /// By this many milliseconds.
        ms: u64,
    },
    /// [`TaskStore::sweep`].
    Sweep,
    /// [`TaskStore::list`], page after page to the end.
    List {
        /// The caller, among three owners.
        owner: u8,
        /// The page size, minus one.
        page: u8,
    },
}

/// Random operations, weighted towards the interesting ones.
pub fn op_strategy() -> impl Strategy<Value = Op> {
    let t = any::<u8>();
    // Mostly the first owner, so most calls reach a task; sometimes another, to check isolation.
    let o = prop_oneof![4 => Just(0u8), 1 => 1..OWNERS];
    let keys = prop::collection::vec(0..KEYS, 0..4);
    prop_oneof![
        3 => (o.clone(), prop::option::of(prop_oneof![Just(1_000u64), Just(5_000), Just(60_000)]))
            .prop_map(|(owner, ttl_ms)| Op::Create { owner, ttl_ms }),
        2 => (t, o.clone()).prop_map(|(task, owner)| Op::Get { task, owner }),
        1 => (t, o.clone(), prop::option::of("[a-z\u{e9}\u{4e2d}]{0,8}"))
            .prop_map(|(task, owner, message)| Op::SetMessage { task, owner, message }),
        2 => (t, o.clone(), keys.clone()).prop_map(|(task, owner, keys)| Op::RequestInput { task, owner, keys }),
        2 => (t, o.clone(), keys).prop_map(|(task, owner, keys)| Op::Resolve { task, owner, keys }),
        1 => (t, o.clone(), 0..KEYS).prop_map(|(task, owner, key)| Op::Take { task, owner, key }),
        1 => (t, o.clone()).prop_map(|(task, owner)| Op::Complete { task, owner }),
        1 => (t, o.clone()).prop_map(|(task, owner)| Op::Fail { task, owner }),
        1 => (t, o.clone()).prop_map(|(task, owner)| Op::Cancel { task, owner }),
        1 => (t, o.clone()).prop_map(|(task, owner)| Op::RequestCancel { task, owner }),
        1 => prop_oneof![Just(10u64), Just(999), Just(1_000), Just(4_000)].prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::Sweep),
        1 => (o, 0u8..5).prop_map(|(owner, page)| Op::List { owner, page }),
    ]
}

#[derive(Debug, Clone)]
struct ModelTask {
    id: TaskId,
    owner: Owner,
    status: TaskStatus,
    message: Option<String>,
    created_at: Millis,
    ttl_ms: Option<u64>,
    pending: BTreeSet<String>,
    used: BTreeSet<String>,
    responses: BTreeSet<String>,
    cancel_requested: bool,
}

impl ModelTask {
    fn expired(&self, now: Millis) -> bool {
        self.ttl_ms
            .is_some_and(|ttl| now >= self.created_at + ttl as i64)
    }
}

#[derive(Debug, Default)]
struct Model {
    tasks: Vec<ModelTask>,
    purged: BTreeSet<TaskId>,
}

impl Model {
    fn find(&self, task: u8, owner: &Owner, now: Millis) -> Result<usize, StoreError> {
        if self.tasks.is_empty() {
            return Err(StoreError::NotFound);
        }
        let i = task as usize % self.tasks.len();
        let t = &self.tasks[i];
        if &t.owner != owner || t.expired(now) || self.purged.contains(&t.id) {
            return Err(StoreError::NotFound);
        }
        Ok(i)
    }
}

fn owner(o: u8) -> Owner {
    Owner::new(format!("owner-{o}"))
}

fn key(k: u8) -> String {
    format!("k{k}")
}

fn kind(r: &Result<impl std::fmt::Debug, StoreError>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => format!("{:?}", std::mem::discriminant(e)),
    }
}

fn same_kind<T: std::fmt::Debug, U: std::fmt::Debug>(
    step: usize,
    op: &Op,
    got: &Result<T, StoreError>,
    want: &Result<U, StoreError>,
) {
    assert_eq!(
        kind(got),
        kind(want),
        "step {step} {op:?}: store said {got:?}, model says {want:?}"
    );
}

/// Runs `ops` on a fresh backend of `factory` and on the model, comparing every answer.
pub async fn check_model<F: StoreFactory>(factory: &F, ops: &[Op]) {
    let env = Env::new("model", roomy());
    let store = factory
        .open(&env)
        .await
        .unwrap_or_else(|e| panic!("cannot open the backend: {e}"));
    let clock = env.clock.clone();
    let mut model = Model::default();
    for (step, op) in ops.iter().enumerate() {
        let now = clock.now_ms();
        match op {
            Op::Create { owner: o, ttl_ms } => {
                let rec = store
                    .create(NewTask {
                        trace_context: None,
                        ttl_ms: *ttl_ms,
                        ..new_task(&owner(*o))
                    })
                    .await
                    .expect("create");
                assert_eq!(rec.status, TaskStatus::Working);
                model.tasks.push(ModelTask {
                    id: rec.id.clone(),
                    owner: owner(*o),
                    status: TaskStatus::Working,
                    message: None,
                    created_at: now,
                    ttl_ms: rec.ttl_ms,
                    pending: BTreeSet::new(),
                    used: BTreeSet::new(),
                    responses: BTreeSet::new(),
                    cancel_requested: false,
                });
            }
            Op::Get { task, owner: o } => {
                let want = model.find(*task, &owner(*o), now);
                let Some(id) = pick(&model, *task) else {
                    continue;
                };
                let got = store.get(&owner(*o), &id).await;
                same_kind(step, op, &got, &want);
                if let (Ok(rec), Ok(i)) = (&got, &want) {
                    agree(step, op, rec, &model.tasks[*i]);
                }
            }
            Op::SetMessage {
                task,
                owner: o,
                message,
            } => {
                let Some(id) = pick(&model, *task) else {
                    continue;
                };
                let want = model.find(*task, &owner(*o), now).and_then(|i| {
                    let t = &mut model.tasks[i];
                    if t.status.is_terminal() {
                        return Err(StoreError::Terminal { status: t.status });
                    }
                    t.message = message.clone();
                    Ok(())
                });
                let got = store
                    .set_status_message(&owner(*o), &id, message.clone())
                    .await;
                same_kind(step, op, &got, &want);
                if let Ok(rec) = &got {
                    agree(
                        step,
                        op,
                        rec,
                        &model.tasks[*task as usize % model.tasks.len()],
                    );
                }
            }
            Op::RequestInput {
                task,
                owner: o,
                keys,
            } => {
                let Some(id) = pick(&model, *task) else {
                    continue;
                };
                let keys: BTreeSet<String> = keys.iter().map(|k| key(*k)).collect();
                let want = model.find(*task, &owner(*o), now).and_then(|i| {
                    let t = &mut model.tasks[i];
                    if t.status.is_terminal() {
                        return Err(StoreError::Terminal { status: t.status });
                    }
                    if let Some(k) = keys.iter().find(|k| t.used.contains(*k)) {
                        return Err(StoreError::InputKeyReused { key: k.clone() });
                    }
                    if !keys.is_empty() {
                        t.used.extend(keys.iter().cloned());
                        t.pending.extend(keys.iter().cloned());
                        t.status = TaskStatus::InputRequired;
                    }
                    Ok(())
                });
                let requests: BTreeMap<String, serde_json::Value> = keys
                    .iter()
                    .map(|k| {
                        (
                            k.clone(),
                            json!({"method": "elicitation/create", "params": {"message": k}}),
                        )
                    })
                    .collect();
                let got = store.request_input(&owner(*o), &id, requests).await;
                same_kind(step, op, &got, &want);
                if let Ok(rec) = &got {
                    agree(
                        step,
                        op,
                        rec,
                        &model.tasks[*task as usize % model.tasks.len()],
                    );
                }
            }
            Op::Resolve {
                task,
                owner: o,
                keys,
            } => {
                let Some(id) = pick(&model, *task) else {
                    continue;
                };
                let keys: BTreeSet<String> = keys.iter().map(|k| key(*k)).collect();
                let want = model.find(*task, &owner(*o), now).map(|i| {
                    let t = &mut model.tasks[i];
                    if t.status.is_terminal() {
                        return Vec::new();
                    }
                    let accepted: Vec<String> = keys
                        .iter()
                        .filter(|k| t.pending.contains(*k))
                        .cloned()
                        .collect();
                    for k in &accepted {
                        t.pending.remove(k);
                        t.responses.insert(k.clone());
                    }
                    if !accepted.is_empty()
                        && t.pending.is_empty()
                        && t.status == TaskStatus::InputRequired
                    {
                        t.status = TaskStatus::Working;
                    }
                    accepted
                });
                let responses = keys
                    .iter()
                    .map(|k| (k.clone(), json!({"action": "accept"})))
                    .collect();
                let got = store.resolve_input(&owner(*o), &id, responses).await;
                same_kind(step, op, &got, &want);
                if let (Ok(got), Ok(want)) = (&got, &want) {
                    assert_eq!(&got.accepted, want, "step {step} {op:?}");
                    agree(
                        step,
                        op,
                        &got.record,
                        &model.tasks[*task as usize % model.tasks.len()],
                    );
                }
            }
            Op::Take {
                task,
                owner: o,
                key: k,
            } => {
                let Some(id) = pick(&model, *task) else {
                    continue;
                };
                let want = model
                    .find(*task, &owner(*o), now)
                    .map(|i| model.tasks[i].responses.remove(&key(*k)));
                let got = store.take_input_response(&owner(*o), &id, &key(*k)).await;
                same_kind(step, op, &got, &want);
                if let (Ok(got), Ok(want)) = (&got, &want) {
                    assert_eq!(got.is_some(), *want, "step {step} {op:?}");
                }
            }
            Op::Complete { task, owner: o }
            | Op::Fail { task, owner: o }
            | Op::Cancel { task, owner: o } => {
                let Some(id) = pick(&model, *task) else {
                    continue;
                };
                let target = match op {
                    Op::Complete { .. } => TaskStatus::Completed,
                    Op::Fail { .. } => TaskStatus::Failed,
                    _ => TaskStatus::Cancelled,
                };
                let want = model.find(*task, &owner(*o), now).map(|i| {
                    let t = &mut model.tasks[i];
                    if t.status.is_terminal() {
                        return false;
                    }
                    t.status = target;
                    t.pending.clear();
                    // Rule 7: the terminal write's own message, not the run's last one.
                    match target {
                        TaskStatus::Failed => t.message = Some("model failure".into()),
                        TaskStatus::Completed => t.message = None,
                        _ => {}
                    }
                    true
                });
                let (ow, id) = (owner(*o), id);
                let got = match target {
                    TaskStatus::Completed => store.complete(&ow, &id, Default::default()).await,
                    TaskStatus::Failed => {
                        store
                            .fail(&ow, &id, ErrorObject::new(-32603, "model failure"))
                            .await
                    }
                    _ => store.cancel(&ow, &id, None).await,
                };
                same_kind(step, op, &got, &want);
                if let (Ok(got), Ok(want)) = (&got, &want) {
                    assert_eq!(got.won, *want, "step {step} {op:?}");
                    agree(
                        step,
                        op,
                        &got.record,
                        &model.tasks[*task as usize % model.tasks.len()],
                    );
                }
            }
            Op::RequestCancel { task, owner: o } => {
                let Some(id) = pick(&model, *task) else {
                    continue;
                };
                let want = model.find(*task, &owner(*o), now).map(|i| {
                    let t = &mut model.tasks[i];
                    if !t.status.is_terminal() {
                        t.cancel_requested = true;
                    }
                });
                let got = store.request_cancel(&owner(*o), &id).await;
                same_kind(step, op, &got, &want);
                if let Ok(rec) = &got {
                    agree(
                        step,
                        op,
                        rec,
                        &model.tasks[*task as usize % model.tasks.len()],
                    );
                }
            }
            Op::Advance { ms } => clock.advance(*ms),
            Op::Sweep => {
                let report = store.sweep().await.expect("sweep");
                let mut purged = 0;
                let mut unfinished = BTreeSet::new();
                for t in &model.tasks {
                    if t.expired(now) && !model.purged.contains(&t.id) {
                        purged += 1;
                        if !t.status.is_terminal() {
                            unfinished.insert(t.id.clone());
                        }
                    }
                }
                let expired: Vec<TaskId> = model
                    .tasks
                    .iter()
                    .filter(|t| t.expired(now))
                    .map(|t| t.id.clone())
                    .collect();
                model.purged.extend(expired);
                assert_eq!(report.purged, purged, "step {step} sweep");
                assert_eq!(
                    report
                        .expired_unfinished
                        .into_iter()
                        .map(|k| k.id)
                        .collect::<BTreeSet<_>>(),
                    unfinished,
                    "step {step} sweep"
                );
            }
            Op::List { owner: o, page } => {
                let page = usize::from(*page) + 1;
                let mut want: Vec<&ModelTask> = model
                    .tasks
                    .iter()
                    .filter(|t| {
                        t.owner == owner(*o) && !t.expired(now) && !model.purged.contains(&t.id)
                    })
                    .collect();
                want.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
                let want: Vec<TaskId> = want.into_iter().map(|t| t.id.clone()).collect();
                let mut got = Vec::new();
                let mut cursor = None;
                for _ in 0..10_000 {
                    let p = store
                        .list(&owner(*o), cursor.as_deref(), page)
                        .await
                        .expect("list");
                    got.extend(p.tasks.into_iter().map(|t| t.id));
                    match p.next_cursor {
                        Some(c) => cursor = Some(c),
                        None => break,
                    }
                }
                assert_eq!(got, want, "step {step} {op:?}");
            }
        }
    }
}

/// The store's record after an operation agrees with the model's task.
fn agree(step: usize, op: &Op, rec: &crate::TaskRecord, m: &ModelTask) {
    assert_eq!(rec.status, m.status, "step {step} {op:?}: status");
    assert_eq!(
        rec.status_message, m.message,
        "step {step} {op:?}: status message"
    );
    assert_eq!(
        rec.input_requests.keys().cloned().collect::<BTreeSet<_>>(),
        m.pending,
        "step {step} {op:?}: pending"
    );
    assert_eq!(
        rec.input_responses.keys().cloned().collect::<BTreeSet<_>>(),
        m.responses,
        "step {step} {op:?}: answers"
    );
    assert_eq!(
        rec.cancel_requested, m.cancel_requested,
        "step {step} {op:?}: cancel flag"
    );
}

fn pick(model: &Model, task: u8) -> Option<TaskId> {
    if model.tasks.is_empty() {
        return None;
    }
    Some(model.tasks[task as usize % model.tasks.len()].id.clone())
}
