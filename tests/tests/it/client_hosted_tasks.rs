//! Client-hosted tasks (MCP 2025-11-25, SEP-1686, the client as receiver), against a raw
//! server peer: our client with a store declares `capabilities.tasks`, runs a server's
//! task-augmented `elicitation/create` and `sampling/createMessage` as tasks (the
//! `CreateTaskResult` at once, the handler in the background), answers `tasks/get`,
//! `tasks/result`, `tasks/list` and `tasks/cancel` from the store scoped to the
//! connection, and sends `notifications/tasks/status`. What it sends is checked against
//! the official 2025-11-25 schema.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::client_hosted_common::{DropFlag, ada, elicit_and_sample, wait_for};
use async_trait::async_trait;
use jsonrpsee::RpcModule;
use jsonrpsee::types::ErrorObjectOwned;
use mcp_tasks::{Limits, ManualClock, MemoryStore, TaskStore};
use mcp_tasks_client::{ClientConfig, ClientHandler, McpClient, Revision};
use mcp_tasks_protocol::engine::{Connection, EndpointBuilder, Peer, PeerError};
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_protocol::types::ElicitResult;
use mcp_tasks_protocol::v2026::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
};
use mcp_tests::schema_check::{Schema, spec_dir};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

const WAIT: Duration = Duration::from_secs(20);

/// Elicitation waits for `gate` (so a test sees the task `working`), then accepts with
/// the name Ada and sets `finished`; sampling fails with -32001 "model offline". A
/// handler future dropped unfinished sets `dropped`.
#[derive(Default)]
struct Gated {
    gate: Notify,
    /// Set once an elicitation's handler began (a task aborted before its handler was
    /// first polled never builds its drop flag).
    started: AtomicBool,
    dropped: Arc<AtomicBool>,
    /// Set once an elicitation was answered.
    finished: AtomicBool,
}

#[async_trait]
impl ClientHandler for Gated {
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let mut flag = DropFlag(Arc::clone(&self.dropped), false);
        self.started
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.gate.notified().await;
        flag.1 = true;
        self.finished
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(ada())
    }

    async fn sample(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        Err(ErrorObject::new(-32001, "model offline"))
    }

    fn capabilities(&self) -> ClientCapabilities {
        elicit_and_sample()
    }
}

/// The raw server: what `initialize` declared, and each `notifications/tasks/status`.
struct Raw {
    peer: Peer,
    initialize: mpsc::UnboundedReceiver<Value>,
    statuses: mpsc::UnboundedReceiver<Value>,
}

impl Raw {
    async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let raw = serde_json::value::to_raw_value(&params).expect("params");
        let answer = tokio::time::timeout(WAIT, self.peer.request_raw(method, Some(&raw)))
            .await
            .unwrap_or_else(|_| panic!("{method} answered in time"));
        match answer {
            Ok(v) => Ok(serde_json::from_str(v.get()).expect("json")),
            Err(PeerError::Rpc(e)) => Err(e),
            Err(e) => panic!("{method}: {e}"),
        }
    }

    /// The next status notification about `task` with `status`, skipping others.
    async fn status(&mut self, task: &str, status: &str) -> Value {
        tokio::time::timeout(WAIT, async {
            loop {
                let n = self.statuses.recv().await.expect("status feed");
                if n["taskId"] == task && n["status"] == status {
                    return n;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("notifications/tasks/status {status} for {task}"))
    }
}

async fn connect(
    handler: Arc<dyn ClientHandler>,
    store: Option<Arc<dyn TaskStore>>,
) -> (McpClient, Raw) {
    let (init_tx, initialize) = mpsc::unbounded_channel();
    let (status_tx, statuses) = mpsc::unbounded_channel();
    let mut module = RpcModule::new(());
    module
        .register_method("initialize", move |params, _, _| {
            let params: Value = params.parse().unwrap_or(Value::Null);
            let _ = init_tx.send(params);
            Ok::<_, ErrorObjectOwned>(json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"}
            }))
        })
        .expect("fresh module");
    let endpoint = EndpointBuilder::new(module)
        .on_notification("notifications/initialized", |_| async {})
        .on_notification("notifications/tasks/status", move |n| {
            let status_tx = status_tx.clone();
            async move {
                let params = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                    .unwrap_or(Value::Null);
                let _ = status_tx.send(params);
            }
        })
        .build();
    let (server_end, client_end) = Connection::memory();
    let (peer, _session) = endpoint.serve(server_end);
    let config = ClientConfig {
        revision: Revision::V2025_11_25,
        request_timeout: WAIT,
        client_tasks: store,
        ..ClientConfig::default()
    };
    let client = tokio::time::timeout(WAIT, McpClient::connect(client_end, handler, config))
        .await
        .expect("connected in time")
        .expect("connect");
    (
        client,
        Raw {
            peer,
            initialize,
            statuses,
        },
    )
}

fn store() -> Arc<dyn TaskStore> {
    Arc::new(MemoryStore::new(Limits::default()))
}

fn form(ttl: Option<i64>) -> Value {
    let mut params = json!({
        "mode": "form",
        "message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
    });
    params["task"] = match ttl {
        Some(ttl) => json!({ "ttl": ttl }),
        None => json!({}),
    };
    params
}

fn sampling() -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
        "maxTokens": 10,
        "task": {}
    })
}

fn schema() -> Option<Schema> {
    spec_dir("client_hosted_tasks").map(|dir| Schema::load(dir.join("core-2025-11-25/schema.json")))
}

fn check(schema: &mut Option<Schema>, what: &str, type_name: &str, value: &Value) {
    if let Some(schema) = schema {
        schema.check(what, type_name, value);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_augmented_elicitation_runs_as_a_client_hosted_task() {
    let mut schema = schema();
    let handler = Arc::new(Gated::default());
    let (_client, mut raw) = connect(handler.clone(), Some(store())).await;

    let init = raw.initialize.recv().await.expect("initialize");
    check(&mut schema, "initialize", "InitializeRequestParams", &init);
    assert_eq!(
        init["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {
            "sampling": {"createMessage": {}}, "elicitation": {"create": {}}
        }}),
        "{init}"
    );

    let created = raw
        .request("elicitation/create", form(Some(60_000)))
        .await
        .expect("CreateTaskResult");
    check(
        &mut schema,
        "elicitation/create",
        "CreateTaskResult",
        &created,
    );
    let task = created["task"].clone();
    let id = task["taskId"].as_str().expect("taskId").to_owned();
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60_000);

    let got = raw
        .request("tasks/get", json!({ "taskId": id }))
        .await
        .expect("tasks/get");
    check(&mut schema, "tasks/get", "GetTaskResult", &got);
    assert_eq!(got["status"], "working");
    assert_eq!(got["createdAt"], task["createdAt"]);

    let listed = raw
        .request("tasks/list", json!({}))
        .await
        .expect("tasks/list");
    check(&mut schema, "tasks/list", "ListTasksResult", &listed);
    let ids: Vec<&Value> = listed["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| &t["taskId"])
        .collect();
    assert_eq!(ids, [&json!(id)]);

    // tasks/result blocks until the handler answers.
    let result = {
        let peer = raw.peer.clone();
        let id = id.clone();
        tokio::spawn(async move {
            let raw = serde_json::value::to_raw_value(&json!({ "taskId": id })).expect("raw");
            peer.request_raw("tasks/result", Some(&raw)).await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !result.is_finished(),
        "tasks/result waits while the task works"
    );
    handler.gate.notify_one();

    let completed = raw.status(&id, "completed").await;
    check(
        &mut schema,
        "notifications/tasks/status",
        "TaskStatusNotificationParams",
        &completed,
    );
    let payload = tokio::time::timeout(WAIT, result)
        .await
        .expect("in time")
        .expect("joined")
        .expect("tasks/result");
    let payload: Value = serde_json::from_str(payload.get()).expect("json");
    check(&mut schema, "tasks/result", "ElicitResult", &payload);
    assert_eq!(payload["action"], "accept");
    assert_eq!(payload["content"]["name"], "Ada");
    assert_eq!(
        payload["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(id)
    );
    let done = raw
        .request("tasks/get", json!({ "taskId": id }))
        .await
        .expect("tasks/get");
    assert_eq!(done["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_sampling_task_gives_its_error_from_tasks_result() {
    let mut schema = schema();
    let (_client, mut raw) = connect(Arc::new(Gated::default()), Some(store())).await;
    let created = raw
        .request("sampling/createMessage", sampling())
        .await
        .expect("CreateTaskResult");
    check(
        &mut schema,
        "sampling/createMessage",
        "CreateTaskResult",
        &created,
    );
    let id = created["task"]["taskId"].as_str().expect("id").to_owned();
    raw.status(&id, "failed").await;
    let error = raw
        .request("tasks/result", json!({ "taskId": id }))
        .await
        .expect_err("the handler's error");
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32001, "model offline")
    );
    let got = raw
        .request("tasks/get", json!({ "taskId": id }))
        .await
        .expect("tasks/get");
    assert_eq!(got["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_cancel_stops_the_handler_and_refuses_a_finished_task() {
    let mut schema = schema();
    let handler = Arc::new(Gated::default());
    let (_client, mut raw) = connect(handler.clone(), Some(store())).await;
    let created = raw
        .request("elicitation/create", form(None))
        .await
        .expect("CreateTaskResult");
    let id = created["task"]["taskId"].as_str().expect("id").to_owned();
    // The handler is running (on a loaded machine the cancel could otherwise come before
    // its first poll: stopped before it began, it would set no drop flag).
    wait_for(&handler.started, WAIT, "the handler began").await;
    let cancelled = raw
        .request("tasks/cancel", json!({ "taskId": id }))
        .await
        .expect("tasks/cancel");
    check(&mut schema, "tasks/cancel", "CancelTaskResult", &cancelled);
    assert_eq!(cancelled["status"], "cancelled");
    raw.status(&id, "cancelled").await;
    wait_for(&handler.dropped, WAIT, "the handler was stopped").await;
    let again = raw
        .request("tasks/cancel", json!({ "taskId": id }))
        .await
        .expect_err("a finished task");
    assert_eq!(again.code, -32602, "{again:?}");
    assert!(again.message.contains("'cancelled'"), "{again:?}");
    let result = raw
        .request("tasks/result", json!({ "taskId": id }))
        .await
        .expect_err("a cancelled task has no result");
    assert!(result.message.contains("cancelled"), "{result:?}");
    // The gate opening later changes nothing.
    handler.gate.notify_one();
    let got = raw
        .request("tasks/get", json!({ "taskId": id }))
        .await
        .expect("tasks/get");
    assert_eq!(got["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tasks_and_cursors_are_invalid_params() {
    let (_client, raw) = connect(Arc::new(Gated::default()), Some(store())).await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let e = raw
            .request(method, json!({"taskId": "nope"}))
            .await
            .expect_err(method);
        assert_eq!(e.code, -32602, "{method}: {e:?}");
        let e = raw.request(method, json!({})).await.expect_err(method);
        assert_eq!(e.code, -32602, "{method} without taskId: {e:?}");
    }
    let e = raw
        .request("tasks/list", json!({"cursor": "forged"}))
        .await
        .expect_err("a forged cursor");
    assert_eq!(e.code, -32602, "{e:?}");
    let e = raw
        .request(
            "elicitation/create",
            json!({"mode": "form", "message": "x",
            "requestedSchema": {"type": "object", "properties": {}}, "task": {"ttl": "soon"}}),
        )
        .await
        .expect_err("a malformed params.task");
    assert_eq!(e.code, -32602, "{e:?}");
}

/// Two connections on one store: each sees its own tasks only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_scoped_to_their_connection() {
    let shared = store();
    let (_a, raw_a) = connect(Arc::new(Gated::default()), Some(Arc::clone(&shared))).await;
    let (_b, raw_b) = connect(Arc::new(Gated::default()), Some(shared)).await;
    let created = raw_a
        .request("elicitation/create", form(None))
        .await
        .expect("CreateTaskResult");
    let id = created["task"]["taskId"].as_str().expect("id").to_owned();
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let e = raw_b
            .request(method, json!({ "taskId": id }))
            .await
            .expect_err("another connection's task");
        assert_eq!(e.code, -32602, "{method}: {e:?}");
    }
    let listed = raw_b
        .request("tasks/list", Value::Null)
        .await
        .expect("list");
    assert_eq!(listed["tasks"], json!([]));
    let got = raw_a
        .request("tasks/get", json!({ "taskId": id }))
        .await
        .expect("its own");
    assert_eq!(got["status"], "working");
}

/// The store's limits hold: the TTL is clamped to its maximum, and a connection over
/// its live tasks is refused with -32600.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttls_are_clamped_and_limits_refuse() {
    let limits = Limits {
        max_live_tasks_per_owner: 1,
        max_ttl_ms: Some(5_000),
        ..Limits::default()
    };
    let (_client, raw) = connect(
        Arc::new(Gated::default()),
        Some(Arc::new(MemoryStore::new(limits))),
    )
    .await;
    let created = raw
        .request("elicitation/create", form(Some(600_000)))
        .await
        .expect("CreateTaskResult");
    assert_eq!(created["task"]["ttl"], 5_000);
    let e = raw
        .request("elicitation/create", form(None))
        .await
        .expect_err("over the limit");
    assert_eq!(e.code, -32600, "{e:?}");
}

/// A hosted task past its TTL is gone for the server, as an unknown task is:
/// `tasks/get`, `tasks/result` and `tasks/cancel` are -32602 and `tasks/list` leaves it
/// out (the store's clock decides); its handler answering afterwards brings nothing back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_hosted_task_is_gone() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let store = Arc::new(MemoryStore::with_clock(Limits::default(), clock.clone()));
    let handler = Arc::new(Gated::default());
    let (_client, raw) = connect(handler.clone(), Some(store)).await;
    let created = raw
        .request("elicitation/create", form(Some(2_000)))
        .await
        .expect("CreateTaskResult");
    assert_eq!(created["task"]["ttl"], 2_000, "{created}");
    let id = created["task"]["taskId"].as_str().expect("id").to_owned();
    let live = raw
        .request("tasks/get", json!({ "taskId": id }))
        .await
        .expect("live");
    assert_eq!(live["status"], "working");

    clock.advance(2_001);
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let e = raw
            .request(method, json!({ "taskId": id }))
            .await
            .expect_err("expired");
        assert_eq!(e.code, -32602, "{method}: {e:?}");
    }
    let listed = raw
        .request("tasks/list", json!({}))
        .await
        .expect("tasks/list");
    assert_eq!(listed["tasks"], json!([]), "{listed}");

    // The handler answers late: its outcome is not written back to the expired task.
    handler.gate.notify_one();
    wait_for(&handler.finished, WAIT, "the handler answered").await;
    let e = raw
        .request("tasks/get", json!({ "taskId": id }))
        .await
        .expect_err("still gone");
    assert_eq!(e.code, -32602, "{e:?}");
}

/// Without a store the client declares no tasks, answers `params.task` as a plain
/// request, and has no task methods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_store_params_task_is_ignored() {
    let handler = Arc::new(Gated::default());
    let (_client, mut raw) = connect(handler.clone(), None).await;
    let init = raw.initialize.recv().await.expect("initialize");
    assert!(init["capabilities"].get("tasks").is_none(), "{init}");
    handler.gate.notify_one();
    let answer = raw
        .request("elicitation/create", form(Some(1_000)))
        .await
        .expect("a plain answer");
    assert!(answer.get("task").is_none(), "{answer}");
    assert_eq!(answer["content"]["name"], "Ada");
    let e = raw
        .request("tasks/get", json!({"taskId": "x"}))
        .await
        .expect_err("no task methods");
    assert_eq!(e.code, -32601, "{e:?}");
}

/// A handler that declares no sampling hosts no sampling tasks: the capability leaves
/// it out and a task-augmented sampling request is answered as a plain one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_declared_requests_become_tasks() {
    let (_client, mut raw) = connect(Arc::new(mcp_tasks_client::DeclineAll), Some(store())).await;
    let init = raw.initialize.recv().await.expect("initialize");
    assert_eq!(
        init["capabilities"]["tasks"]["requests"],
        json!({"elicitation": {"create": {}}}),
        "{init}"
    );
    let e = raw
        .request("sampling/createMessage", sampling())
        .await
        .expect_err("sampling refused by the handler, at once");
    assert_eq!(e.code, -32601, "{e:?}");
    let declined = raw
        .request("elicitation/create", form(None))
        .await
        .expect("a task");
    assert_eq!(declined["task"]["status"], "working");
}

/// A handler that panics.
struct Panics;

#[async_trait]
impl ClientHandler for Panics {
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        panic!("the handler broke")
    }
}

/// A handler that panics fails its task with -32603; the connection goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_fails_its_task() {
    let (_client, mut raw) = connect(Arc::new(Panics), Some(store())).await;
    let created = raw
        .request("elicitation/create", form(None))
        .await
        .expect("CreateTaskResult");
    let id = created["task"]["taskId"].as_str().expect("id").to_owned();
    raw.status(&id, "failed").await;
    let e = raw
        .request("tasks/result", json!({ "taskId": id }))
        .await
        .expect_err("the task failed");
    assert_eq!(e.code, -32603, "{e:?}");
    let listed = raw.request("tasks/list", json!({})).await.expect("alive");
    assert_eq!(listed["tasks"][0]["status"], "failed");
}

/// When the connection ends, the tasks it was still running end `cancelled` in the
/// store (a shared store keeps no task `working` until its TTL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_connection_cancels_its_running_tasks() {
    let shared = store();
    let (client, raw) = connect(Arc::new(Gated::default()), Some(Arc::clone(&shared))).await;
    let created = raw
        .request("elicitation/create", form(None))
        .await
        .expect("CreateTaskResult");
    let id = created["task"]["taskId"].as_str().expect("id").to_owned();
    let mut events = shared.events();
    drop(client);
    drop(raw);
    tokio::time::timeout(WAIT, async {
        loop {
            match events.recv().await {
                Ok(mcp_tasks::TaskEvent::Changed { key, status, .. })
                    if key.id.as_str() == id && status == TaskStatus::Cancelled =>
                {
                    return;
                }
                Ok(_) => continue,
                Err(e) => panic!("store events: {e}"),
            }
        }
    })
    .await
    .expect("the task was cancelled when its connection ended");
}
