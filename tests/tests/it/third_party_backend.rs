//! A backend written as a third party would write one: only the public
//! [`Backend`](mcp_tasks::Backend) trait of mcp-tasks, over a `Mutex<HashMap>`, and
//! nothing else. It must pass the whole store conformance kit and the model-based check,
//! with no `TaskStore` method written by hand.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use mcp_tasks::conformance::model::{check_model, op_strategy};
use mcp_tasks::conformance::{Env, StoreFactory};
use mcp_tasks::{
    Announce, Backend, Clock, EVENT_BUFFER, EventStream, Limit, Limits, Millis, Owner, StoreError,
    SweepReport, TaskEvent, TaskId, TaskPage, TaskRecord, TaskStore, cursor, rules,
};
use proptest::prelude::*;
use tokio::sync::broadcast;

/// What every handle of one deployment shares.
#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    events: broadcast::Sender<TaskEvent>,
}

#[derive(Debug, Default)]
struct State {
    tasks: HashMap<TaskId, TaskRecord>,
    /// Unfinished tasks per owner (swept ones uncounted).
    live: HashMap<Owner, usize>,
    live_total: usize,
}

impl State {
    fn release(&mut self, owner: &Owner) {
        if let Some(n) = self.live.get_mut(owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.live.remove(owner);
            }
        }
        self.live_total = self.live_total.saturating_sub(1);
    }
}

/// One handle: the shared map, this handle's limits and clock.
#[derive(Debug, Clone)]
struct MapStore {
    shared: Arc<Shared>,
    limits: Limits,
    clock: Arc<dyn Clock>,
}

impl MapStore {
    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, events: impl IntoIterator<Item = TaskEvent>) {
        for event in events {
            // No subscriber is not an error.
            let _ = self.shared.events.send(event);
        }
    }
}

fn visible(rec: &TaskRecord, owner: &Owner, now: Millis) -> bool {
    &rec.owner == owner && !rec.is_expired(now)
}

impl Backend for MapStore {
    // RERUNS_UPDATES is left at its safe default.

    fn limits(&self) -> &Limits {
        &self.limits
    }

    async fn insert_task<M>(
        &self,
        make: M,
        announce: Announce<()>,
    ) -> Result<TaskRecord, StoreError>
    where
        M: FnOnce(&Limits, Millis) -> TaskRecord + Send + 'static,
    {
        let record = make(&self.limits, self.clock.now_ms());
        {
            let mut state = self.state();
            let mine = state.live.get(&record.owner).copied().unwrap_or(0);
            if mine >= self.limits.max_live_tasks_per_owner {
                return Err(StoreError::LimitExceeded {
                    limit: Limit::LiveTasksPerOwner,
                    max: self.limits.max_live_tasks_per_owner as u64,
                });
            }
            if state.live_total >= self.limits.max_live_tasks_total {
                return Err(StoreError::LimitExceeded {
                    limit: Limit::LiveTasksTotal,
                    max: self.limits.max_live_tasks_total as u64,
                });
            }
            *state.live.entry(record.owner.clone()).or_default() += 1;
            state.live_total += 1;
            state.tasks.insert(record.id.clone(), record.clone());
        }
        self.publish(announce(&(), &record));
        Ok(record)
    }

    async fn update_task<R, F>(
        &self,
        owner: &Owner,
        id: &TaskId,
        mut f: F,
        announce: Announce<R>,
    ) -> Result<(R, TaskRecord), StoreError>
    where
        R: Send + 'static,
        F: FnMut(&mut TaskRecord, Millis, &Limits) -> Result<R, StoreError> + Send + 'static,
    {
        let now = self.clock.now_ms();
        let (value, record, changed) = {
            let mut state = self.state();
            let stored = match state.tasks.get(id) {
                Some(rec) if visible(rec, owner, now) => rec,
                _ => return Err(StoreError::NotFound),
            };
            // Work on a copy: an error leaves the stored record untouched.
            let mut record = stored.clone();
            let value = f(&mut record, now, &self.limits)?;
            let changed = record.revision != stored.revision;
            if changed {
                let finished = !stored.is_terminal() && record.is_terminal();
                state.tasks.insert(id.clone(), record.clone());
                if finished {
                    state.release(owner);
                }
            }
            (value, record, changed)
        };
        if changed {
            self.publish(announce(&value, &record));
        }
        Ok((value, record))
    }

    /// A scan for the oldest queued task of `tools`, then the ordinary update (which
    /// re-checks under the lock: `NotQueued` when another claim won meanwhile).
    async fn claim_task<R, F>(
        &self,
        tools: &[String],
        f: F,
        announce: Announce<R>,
    ) -> Result<Option<(R, TaskRecord)>, StoreError>
    where
        R: Send + 'static,
        F: FnMut(&mut TaskRecord, Millis, &Limits) -> Result<R, StoreError>
            + Clone
            + Send
            + 'static,
    {
        loop {
            let now = self.clock.now_ms();
            let oldest = self
                .state()
                .tasks
                .values()
                .filter(|rec| !rec.is_expired(now))
                .filter(|rec| {
                    rec.queued_tool()
                        .is_some_and(|t| tools.iter().any(|x| x == t))
                })
                .map(|rec| (rec.created_at, rec.id.clone(), rec.owner.clone()))
                .min();
            let Some((_, id, owner)) = oldest else {
                return Ok(None);
            };
            match self.update_task(&owner, &id, f.clone(), announce).await {
                Err(StoreError::NotQueued) => continue,
                other => return other.map(Some),
            }
        }
    }

    async fn read_task(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let now = self.clock.now_ms();
        match self.state().tasks.get(id) {
            Some(rec) if visible(rec, owner, now) => Ok(rec.clone()),
            _ => Err(StoreError::NotFound),
        }
    }

    async fn list_tasks(
        &self,
        owner: &Owner,
        after: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let now = self.clock.now_ms();
        let mut tasks: Vec<TaskRecord> = self
            .state()
            .tasks
            .values()
            .filter(|rec| visible(rec, owner, now))
            .filter(|rec| {
                after
                    .as_ref()
                    .is_none_or(|(at, id)| (rec.created_at, &rec.id) > (*at, id))
            })
            .cloned()
            .collect();
        tasks.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let more = tasks.len() > limit;
        tasks.truncate(limit);
        let next_cursor = match tasks.last() {
            Some(last) if more => Some(cursor::encode(last.created_at, &last.id)),
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    async fn sweep_tasks(&self) -> Result<SweepReport, StoreError> {
        let now = self.clock.now_ms();
        let mut report = SweepReport::default();
        let mut state = self.state();
        let expired: Vec<TaskId> = state
            .tasks
            .values()
            .filter(|rec| rec.is_expired(now))
            .map(|rec| rec.id.clone())
            .collect();
        for id in expired {
            if let Some(rec) = state.tasks.remove(&id) {
                report.purged += 1;
                if !rec.is_terminal() {
                    state.release(&rec.owner);
                    report.expired_unfinished.push(rec.key());
                }
            }
        }
        report.lease_lapsed = state
            .tasks
            .values()
            .filter(|rec| rules::lease_lapsed(rec, now))
            .map(TaskRecord::key)
            .collect();
        Ok(report)
    }

    fn subscribe(&self) -> EventStream {
        EventStream::new(self.shared.events.subscribe())
    }
}

/// Handles of one namespace share one map (they are nodes of one deployment).
#[derive(Debug, Default)]
struct MapFactory {
    deployments: Mutex<HashMap<String, Arc<Shared>>>,
}

#[async_trait]
impl StoreFactory for MapFactory {
    type Store = MapStore;

    async fn open(&self, env: &Env) -> Result<MapStore, StoreError> {
        let mut deployments = self.deployments.lock().unwrap_or_else(|e| e.into_inner());
        let shared = deployments.entry(env.namespace.clone()).or_insert_with(|| {
            Arc::new(Shared {
                state: Mutex::default(),
                events: broadcast::channel(EVENT_BUFFER).0,
            })
        });
        Ok(MapStore {
            shared: Arc::clone(shared),
            limits: env.limits.clone(),
            clock: env.clock(),
        })
    }
}

mcp_tasks::conformance_tests!(MapFactory::default());

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn third_party_backend_matches_the_model(ops in prop::collection::vec(op_strategy(), 1..80)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(check_model(&MapFactory::default(), &ops));
    }
}

/// A backend is a `TaskStore` servers take as `Arc<dyn TaskStore>`.
#[tokio::test]
async fn serves_as_a_dyn_task_store() {
    let env = Env::new("dyn", Limits::default());
    let store: Arc<dyn TaskStore> = Arc::new(MapFactory::default().open(&env).await.expect("open"));
    let owner = Owner::new("alice");
    let task = store
        .create(mcp_tasks::NewTask {
            trace_context: None,
            owner: owner.clone(),
            ttl_ms: None,
            poll_interval_ms: None,
            origin: mcp_tasks::Origin {
                method: "tools/call".into(),
                tool: None,
                revision: mcp_tasks::WireRevision::V2026_07_28,
            },
            status_message: None,
            job: None,
            idempotency: None,
        })
        .await
        .expect("create");
    let done = store
        .complete(&owner, &task.id, serde_json::Map::new())
        .await
        .expect("complete");
    assert!(done.won);
    assert!(store.get(&Owner::new("mallory"), &task.id).await.is_err());
}

/// A backend that keeps no task logs says so in one place (`Backend::LOGS`, false by
/// default): a server on it does not advertise task event streams and answers
/// `tasks/stream` with -32601, while its tasks work as ever.
#[tokio::test]
async fn a_server_on_a_store_without_logs_offers_no_event_streams() {
    use mcp_tests::server_harness::{TestServer, demo_tools, meta, request};
    use serde_json::json;

    let env = Env::new("no_logs", Limits::default());
    let store: Arc<dyn TaskStore> = Arc::new(MapFactory::default().open(&env).await.expect("open"));
    assert!(!store.keeps_logs());
    let mut builder = mcp_tasks_server::Server::builder("mcp-tests", "0").store(store);
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    let s = TestServer::start_server(builder.build(), Default::default()).await;
    let discovered = s
        .rpc("server/discover", json!({ "_meta": meta(true) }))
        .await;
    let tasks = &discovered.result()["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"];
    assert!(tasks.is_object(), "{:?}", discovered.result());
    assert!(
        discovered.result()["capabilities"]["extensions"]
            .get("rs.mcp-tasks/event-streams")
            .is_none(),
        "{:?}",
        discovered.result()
    );
    let id = s
        .create_task("slow_compute", json!({ "seconds": 0.05 }))
        .await;
    let reply = s
        .post(
            &request(
                7,
                "tasks/stream",
                json!({ "taskId": id, "_meta": meta(true) }),
            ),
            &[],
        )
        .await;
    let refused = if reply.body.is_null() {
        reply
            .text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .find(|f| f.get("id").is_some())
            .expect("a response")
    } else {
        reply.body.clone()
    };
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    assert_eq!(s.poll_terminal(&id).await["status"], "completed");
}
