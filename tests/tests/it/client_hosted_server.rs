//! Our server asks our client as a task (MCP 2025-11-25, SEP-1686, the client as
//! receiver): the client hosts tasks in a store and declares them, so the demo tools
//! `ask_name` (elicitation) and `ask_model` (sampling) ask with `params.task`, follow the
//! client's task with `tasks/get` and `tasks/result`, and hand its answer to the tool;
//! cancelling the tool's task cancels the client's. Over an in-process connection and
//! over Streamable HTTP, for a tool running as a task and for a synchronous call; and
//! what the server sends a raw hosting client (the task-augmented question, `tasks/get`,
//! `tasks/result`, `tasks/cancel`) checked against the official 2025-11-25 schema.

use std::sync::Arc;
use std::time::Duration;

use crate::client_hosted_common::{Answers, wait_for};
use mcp_tasks::{MemoryStore, TaskStore};
use mcp_tasks_client::{ClientConfig, DriverConfig, McpClient, Revision, Started};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::Connection;
use mcp_tasks_protocol::v2025;
use mcp_tasks_protocol::v2026::CallToolResult;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, ToolDef, demo};
use mcp_tests::server_harness::{TestServer, build_server};

const WAIT: Duration = Duration::from_secs(30);

fn tools() -> Vec<ToolDef> {
    demo::asking::tools().expect("asking tools")
}

fn config(store: &Arc<MemoryStore>) -> ClientConfig {
    ClientConfig {
        revision: Revision::V2025_11_25,
        request_timeout: WAIT,
        driver: DriverConfig {
            default_poll: Duration::from_millis(50),
            min_poll: Duration::from_millis(20),
            max_poll: Duration::from_millis(200),
            ..DriverConfig::default()
        },
        ..ClientConfig::default()
    }
    .with_client_tasks(Arc::clone(store) as Arc<dyn TaskStore>)
}

async fn in_process(handler: Arc<Answers>, store: &Arc<MemoryStore>) -> McpClient {
    let server = build_server(tools(), RuntimeConfig::default());
    let (server_end, client_end) = Connection::memory();
    let _ = server.serve_connection(server_end);
    tokio::time::timeout(WAIT, McpClient::connect(client_end, handler, config(store)))
        .await
        .expect("in time")
        .expect("connect")
}

async fn over_http(handler: Arc<Answers>, store: &Arc<MemoryStore>) -> (TestServer, McpClient) {
    let server =
        TestServer::start_with(tools(), RuntimeConfig::default(), HttpConfig::default()).await;
    let client = tokio::time::timeout(
        WAIT,
        McpClient::connect_http(&server.url, handler, config(store)),
    )
    .await
    .expect("in time")
    .expect("connect");
    (server, client)
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content[0]).expect("json")["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Both tools as tasks of the server, each question a task of the client.
async fn tasks_ask_tasks(client: &McpClient, store: &MemoryStore) {
    let greeted = tokio::time::timeout(WAIT, client.call_tool("ask_name", JsonObject::new()))
        .await
        .expect("in time")
        .expect("ask_name");
    assert_eq!(text(&greeted), "Hello, Ada!");
    assert_eq!(store.len(), 1, "the elicitation was a task of the client");
    let args = JsonObject::from_iter([("prompt".into(), "The answer?".into())]);
    let sampled = tokio::time::timeout(WAIT, client.call_tool("ask_model", args))
        .await
        .expect("in time")
        .expect("ask_model");
    assert_eq!(text(&sampled), "LLM response: 42");
    assert_eq!(store.len(), 2, "the sampling was a task of the client");
}

/// A synchronous call (no `params.task`): the tool asks on the call's own stream, as a
/// task of the client all the same.
async fn sync_call_asks_a_task(client: &McpClient, store: &MemoryStore) {
    let before = store.len();
    let params = v2025::CallToolRequestParams {
        name: "ask_name".into(),
        arguments: Some(JsonObject::new()),
        task: None,
        idempotency_key: None,
        meta: None,
        extra: JsonObject::new(),
    };
    let result = tokio::time::timeout(WAIT, client.request::<v2025::CallTool>(&params))
        .await
        .expect("in time")
        .expect("tools/call");
    let text = serde_json::to_value(&result).expect("json")["content"][0]["text"].clone();
    assert_eq!(text, "Hello, Ada!");
    assert_eq!(
        store.len(),
        before + 1,
        "the elicitation was a task of the client"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_the_server_asks_the_client_as_a_task() {
    let store = Arc::new(MemoryStore::default());
    let client = in_process(Arc::new(Answers::default()), &store).await;
    tasks_ask_tasks(&client, &store).await;
    sync_call_asks_a_task(&client, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_the_server_asks_the_client_as_a_task() {
    let store = Arc::new(MemoryStore::default());
    let (_server, client) = over_http(Arc::new(Answers::default()), &store).await;
    tasks_ask_tasks(&client, &store).await;
    sync_call_asks_a_task(&client, &store).await;
}

/// Without a store the client declares no tasks, and the server asks as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_tasks_is_asked_plainly() {
    let server = build_server(tools(), RuntimeConfig::default());
    let (server_end, client_end) = Connection::memory();
    let _ = server.serve_connection(server_end);
    let config = ClientConfig {
        revision: Revision::V2025_11_25,
        ..ClientConfig::default()
    };
    let client = McpClient::connect(client_end, Arc::new(Answers::default()), config)
        .await
        .expect("connect");
    let greeted = tokio::time::timeout(WAIT, client.call_tool("ask_name", JsonObject::new()))
        .await
        .expect("in time")
        .expect("ask_name");
    assert_eq!(text(&greeted), "Hello, Ada!");
}

/// Cancelling the tool's task cancels the client's task: its handler is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_tool_cancels_the_clients_task() {
    let store = Arc::new(MemoryStore::default());
    let handler = Arc::new(Answers {
        hold_all: true,
        ..Answers::default()
    });
    let client = in_process(Arc::clone(&handler), &store).await;
    let Started::Task(task) = client
        .call_tool_as_task("ask_name", JsonObject::new())
        .await
        .expect("ask_name")
    else {
        panic!("ask_name runs as a task when asked to")
    };
    tokio::time::timeout(WAIT, handler.asked.notified())
        .await
        .expect("the client was asked");
    assert_eq!(store.len(), 1);
    task.cancel().await.expect("tasks/cancel");
    wait_for(&handler.dropped, WAIT, "the client's handler was stopped").await;
}

/// What a raw client records of the server's requests, and whether it holds its tasks
/// `working` (never finishing them).
#[derive(Default)]
struct Recorded {
    requests: std::sync::Mutex<Vec<(String, serde_json::Value)>>,
    hold: std::sync::atomic::AtomicBool,
}

impl Recorded {
    fn push(&self, method: &str, params: serde_json::Value) {
        self.requests
            .lock()
            .expect("record")
            .push((method.to_owned(), params));
    }

    fn all(&self) -> Vec<(String, serde_json::Value)> {
        self.requests.lock().expect("record").clone()
    }
}

/// A raw 2025-11-25 client answering the server's requests with `module`, connected to a
/// server with [`tools`] over an in-process connection and initialized with `capabilities`.
struct RawClient {
    peer: mcp_tasks_protocol::engine::Peer,
    _session: tokio::task::JoinHandle<()>,
}

impl RawClient {
    async fn open(
        module: jsonrpsee::RpcModule<Arc<Recorded>>,
        capabilities: serde_json::Value,
    ) -> RawClient {
        let endpoint = mcp_tasks_protocol::engine::EndpointBuilder::new(module)
            .on_notification("notifications/tasks/status", |_| async {})
            .build();
        let server = build_server(tools(), RuntimeConfig::default());
        let (server_end, client_end) = Connection::memory();
        let _ = server.serve_connection(server_end);
        let (peer, session) = endpoint.serve(client_end);
        let raw = RawClient {
            peer,
            _session: session,
        };
        raw.call(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-11-25",
                "clientInfo": {"name": "raw", "version": "1"}, "capabilities": capabilities}),
        )
        .await;
        raw.peer
            .notify_raw("notifications/initialized", None)
            .await
            .expect("initialized");
        raw
    }

    /// `method` with `params`, answered in time; the result.
    async fn call(&self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let raw = serde_json::value::to_raw_value(&params).expect("params");
        let answer = tokio::time::timeout(WAIT, self.peer.request_raw(method, Some(&raw)))
            .await
            .unwrap_or_else(|_| panic!("{method} in time"))
            .unwrap_or_else(|e| panic!("{method}: {e}"));
        serde_json::from_str(answer.get()).expect("json")
    }
}

fn raw_task(id: &str, status: &str) -> serde_json::Value {
    serde_json::json!({"taskId": id, "status": status, "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:00Z", "ttl": 60000, "pollInterval": 50})
}

/// A raw 2025-11-25 client hosting tasks: every request the server sends it (the
/// task-augmented question, `tasks/get`, `tasks/result`, `tasks/cancel`) is valid against
/// the official schema, and the answer it gives through its task reaches the tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_server_sends_a_hosting_client_is_valid() {
    use jsonrpsee::RpcModule;
    use jsonrpsee::types::ErrorObjectOwned;
    use mcp_tests::schema_check::{Schema, spec_dir};
    use serde_json::{Value, json};
    use std::sync::atomic::Ordering;

    let recorded = Arc::new(Recorded::default());
    let mut module = RpcModule::new(Arc::clone(&recorded));
    for method in ["elicitation/create", "sampling/createMessage"] {
        module
            .register_method(method, move |params, rec, _| {
                let params: Value = params.parse().unwrap_or(Value::Null);
                rec.push(method, params);
                let id = format!("client-task-{}", rec.all().len());
                Ok::<_, ErrorObjectOwned>(json!({ "task": raw_task(&id, "working") }))
            })
            .expect("fresh module");
    }
    module
        .register_method("tasks/get", |params, rec, _| {
            let params: Value = params.parse().unwrap_or(Value::Null);
            rec.push("tasks/get", params.clone());
            let status = if rec.hold.load(Ordering::SeqCst) {
                "working"
            } else {
                "completed"
            };
            let id = params["taskId"].as_str().unwrap_or_default().to_owned();
            Ok::<_, ErrorObjectOwned>(raw_task(&id, status))
        })
        .expect("fresh module");
    module
        .register_method("tasks/result", |params, rec, _| {
            let params: Value = params.parse().unwrap_or(Value::Null);
            rec.push("tasks/result", params.clone());
            let related =
                json!({"io.modelcontextprotocol/related-task": {"taskId": params["taskId"]}});
            // The task's id says which request made it, so which answer it gives.
            let made_by = params["taskId"]
                .as_str()
                .and_then(|id| id.strip_prefix("client-task-"))
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| rec.all().get(n - 1).map(|(m, _)| m.clone()))
                .unwrap_or_default();
            Ok::<_, ErrorObjectOwned>(if made_by == "sampling/createMessage" {
                json!({"role": "assistant", "content": {"type": "text", "text": "42"},
                    "model": "raw", "_meta": related})
            } else {
                json!({"action": "accept", "content": {"name": "Ada"}, "_meta": related})
            })
        })
        .expect("fresh module");
    module
        .register_method("tasks/cancel", |params, rec, _| {
            let params: Value = params.parse().unwrap_or(Value::Null);
            rec.push("tasks/cancel", params.clone());
            let id = params["taskId"].as_str().unwrap_or_default().to_owned();
            Ok::<_, ErrorObjectOwned>(raw_task(&id, "cancelled"))
        })
        .expect("fresh module");
    let raw = RawClient::open(
        module,
        json!({"elicitation": {"form": {}}, "sampling": {}, "tasks": {"cancel": {},
                "requests": {"elicitation": {"create": {}}, "sampling": {"createMessage": {}}}}}),
    )
    .await;
    let call = |method: &'static str, params: Value| raw.call(method, params);

    let greeted = call("tools/call", json!({"name": "ask_name", "arguments": {}})).await;
    assert_eq!(greeted["content"][0]["text"], "Hello, Ada!", "{greeted}");
    let sampled = call(
        "tools/call",
        json!({"name": "ask_model", "arguments": {"prompt": "The answer?"}}),
    )
    .await;
    assert_eq!(
        sampled["content"][0]["text"], "LLM response: 42",
        "{sampled}"
    );

    // A tool's task, its question held working by the client, then cancelled.
    recorded.hold.store(true, Ordering::SeqCst);
    let created = call(
        "tools/call",
        json!({"name": "ask_name", "arguments": {}, "task": {}}),
    )
    .await;
    let server_task = created["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let asked = |method: &str| {
        let method = method.to_owned();
        let recorded = Arc::clone(&recorded);
        async move {
            tokio::time::timeout(WAIT, async {
                loop {
                    let n = recorded.all().iter().filter(|(m, _)| *m == method).count();
                    if n > 0 {
                        return n;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await
            .unwrap_or_else(|_| panic!("the server sent {method}"))
        }
    };
    let before = recorded.all().len();
    tokio::time::timeout(WAIT, async {
        while recorded.all()[before..]
            .iter()
            .all(|(m, _)| m != "tasks/get")
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the server follows the held task");
    call("tasks/cancel", json!({ "taskId": server_task })).await;
    asked("tasks/cancel").await;

    let all = recorded.all();
    let names: Vec<&str> = all.iter().map(|(m, _)| m.as_str()).collect();
    for method in [
        "elicitation/create",
        "sampling/createMessage",
        "tasks/get",
        "tasks/result",
        "tasks/cancel",
    ] {
        assert!(names.contains(&method), "{method} never sent: {names:?}");
    }
    for (method, params) in &all {
        if method == "elicitation/create" || method == "sampling/createMessage" {
            assert_eq!(
                params["task"],
                json!({}),
                "{method} asks as a task: {params}"
            );
        }
        if method.starts_with("tasks/") {
            assert!(
                params["taskId"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("client-task-")),
                "{params}"
            );
        }
    }
    let cancelled = &all
        .iter()
        .find(|(m, _)| m == "tasks/cancel")
        .expect("tasks/cancel")
        .1;
    let held_at = all
        .iter()
        .rposition(|(m, _)| m == "elicitation/create")
        .expect("asked");
    let held = &all[held_at].1;
    assert_eq!(
        held["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(server_task),
        "{held}"
    );
    let held_id = format!("client-task-{}", held_at + 1);
    assert_eq!(
        cancelled["taskId"],
        json!(held_id),
        "the held task is cancelled"
    );
    if let Some(dir) = spec_dir("what_the_server_sends_a_hosting_client_is_valid") {
        let mut schema = Schema::load(dir.join("core-2025-11-25/schema.json"));
        for (method, params) in &all {
            let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
            let type_name = match method.as_str() {
                "elicitation/create" => "ElicitRequest",
                "sampling/createMessage" => "CreateMessageRequest",
                "tasks/get" => "GetTaskRequest",
                "tasks/result" => "GetTaskPayloadRequest",
                _ => "CancelTaskRequest",
            };
            schema.check(method, type_name, &request);
        }
    }
}

/// A raw 2025-11-25 client that hosts no tasks (it declares elicitation and sampling,
/// no `tasks`): the server's questions, from a synchronous call and from a tool's task,
/// carry no `params.task`, and the plain answers reach the tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_declaring_no_tasks_is_never_asked_as_a_task() {
    use jsonrpsee::RpcModule;
    use jsonrpsee::types::ErrorObjectOwned;
    use serde_json::{Value, json};

    let recorded = Arc::new(Recorded::default());
    let mut module = RpcModule::new(Arc::clone(&recorded));
    module
        .register_method("elicitation/create", |params, rec, _| {
            rec.push("elicitation/create", params.parse().unwrap_or(Value::Null));
            Ok::<_, ErrorObjectOwned>(json!({"action": "accept", "content": {"name": "Ada"}}))
        })
        .expect("fresh module");
    module
        .register_method("sampling/createMessage", |params, rec, _| {
            rec.push(
                "sampling/createMessage",
                params.parse().unwrap_or(Value::Null),
            );
            Ok::<_, ErrorObjectOwned>(json!({"role": "assistant",
                "content": {"type": "text", "text": "42"}, "model": "raw"}))
        })
        .expect("fresh module");
    let raw = RawClient::open(module, json!({"elicitation": {"form": {}}, "sampling": {}})).await;
    let call = |method: &'static str, params: Value| raw.call(method, params);

    let greeted = call("tools/call", json!({"name": "ask_name", "arguments": {}})).await;
    assert_eq!(greeted["content"][0]["text"], "Hello, Ada!", "{greeted}");
    let sampled = call(
        "tools/call",
        json!({"name": "ask_model", "arguments": {"prompt": "The answer?"}}),
    )
    .await;
    assert_eq!(
        sampled["content"][0]["text"], "LLM response: 42",
        "{sampled}"
    );
    // The same question from a tool running as the server's task.
    let created = call(
        "tools/call",
        json!({"name": "ask_name", "arguments": {}, "task": {}}),
    )
    .await;
    let task_id = created["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let result = call("tasks/result", json!({"taskId": task_id})).await;
    assert_eq!(result["content"][0]["text"], "Hello, Ada!", "{result}");

    let asked = recorded.all();
    assert_eq!(asked.len(), 3, "{asked:?}");
    for (method, params) in asked {
        assert!(
            params.get("task").is_none(),
            "{method} asked as a task: {params}"
        );
    }
}
