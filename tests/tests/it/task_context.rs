//! What a task's tool sees of its caller, wherever the task runs: the client
//! capabilities the creating `tools/call` declared (MCP 2026-07-28) reach
//! `ToolContext::client_capabilities` on the node that created it (`Role::All`) and on a
//! worker node that claimed it (`Role::Api` in front, `Role::Worker` behind, sharing one
//! store), from the task record's job.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::{MemoryStore, TaskStore};
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{
    CallToolResult, Role, Server, TaskPolicy, ToolContext, ToolDef, WorkerConfig,
};
use mcp_tests::server_harness::{PROTOCOL_VERSION, TestServer, WAIT};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize, JsonSchema)]
struct NoArgs {}

/// A task tool that answers with the client capabilities its context shows.
fn declared_tool() -> ToolDef {
    ToolDef::new(
        "declared",
        TaskPolicy::Required,
        |ctx: ToolContext, _args: NoArgs| async move {
            let shown = match ctx.client_capabilities() {
                Some(caps) => serde_json::to_string(caps).unwrap_or_default(),
                None => "none".to_owned(),
            };
            Ok(CallToolResult::text(shown))
        },
    )
    .expect("tool")
}

fn server(store: Arc<dyn TaskStore>, role: Role) -> Server {
    Server::builder("mcp-tests", "0")
        .store(store)
        .role(role)
        .worker(WorkerConfig {
            poll: Duration::from_millis(50),
            ..WorkerConfig::default()
        })
        .tool(declared_tool())
        .build()
}

/// Calls `declared` as a task declaring elicitation (and the tasks extension) and
/// returns what the tool saw, once the task completed.
async fn seen(front: &TestServer) -> Value {
    let params = json!({
        "name": "declared",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientInfo": { "name": "mcp-tests", "version": "0" },
            "io.modelcontextprotocol/clientCapabilities": {
                "elicitation": { "form": {} },
                "extensions": { "io.modelcontextprotocol/tasks": {} }
            }
        }
    });
    let reply = front.rpc("tools/call", params).await;
    let task_id = reply.result()["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {}", reply.text))
        .to_owned();
    let done = front
        .poll_task(&task_id, WAIT, |r| r["status"] == "completed")
        .await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result: {done}"));
    serde_json::from_str(text).unwrap_or_else(|_| panic!("the tool saw {text:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_run_where_it_was_created_sees_the_declarations() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
    let front = TestServer::start_server(server(store, Role::All), HttpConfig::default()).await;
    let caps = tokio::time::timeout(WAIT, seen(&front))
        .await
        .expect("in time");
    assert!(caps["elicitation"].is_object(), "{caps}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_a_worker_claimed_sees_the_declarations() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
    let front =
        TestServer::start_server(server(Arc::clone(&store), Role::Api), HttpConfig::default())
            .await;
    let worker = server(store, Role::Worker);
    let caps = tokio::time::timeout(WAIT, seen(&front))
        .await
        .expect("in time");
    assert!(caps["elicitation"].is_object(), "{caps}");
    worker.shutdown().await;
}

/// An at-least-once task whose worker was lost after it asked under its own key asks
/// again, in its next run, under that key marked with the run (`confirm-r2`): the old
/// key stays used (a reused key is refused), so without the mark the rerun could not ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_asks_again_under_its_own_key_marked_with_the_run() {
    use mcp_tasks::{Job, NewTask, Origin, Owner, WireRevision};
    use mcp_tasks_server::Delivery;
    use mcp_tasks_server::RuntimeConfig;

    let run = async {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
        let asking = ToolDef::new(
            "asking",
            TaskPolicy::Required,
            |ctx: ToolContext, _args: NoArgs| async move {
                let form = serde_json::from_value(json!({
                    "mode": "form",
                    "message": "Go on?",
                    "requestedSchema": {"type": "object", "properties": {}}
                }))
                .expect("form");
                let answer = ctx.elicit_keyed("confirm", form).await?;
                Ok(CallToolResult::text(format!(
                    "run {} got {:?}",
                    ctx.attempt(),
                    answer.action
                )))
            },
        )
        .expect("tool")
        .delivery(Delivery::AtLeastOnce { max_attempts: 3 });
        // A first run, on a node that is gone: it asked under "confirm", then its lease
        // lapsed.
        let owner = Owner::new("alice");
        let mut job = Job::new(Default::default());
        job.delivery = Delivery::AtLeastOnce { max_attempts: 3 };
        let task = store
            .create_leased(
                NewTask {
                    trace_context: None,
                    owner: owner.clone(),
                    ttl_ms: None,
                    poll_interval_ms: None,
                    origin: Origin {
                        method: "tools/call".into(),
                        tool: Some("asking".into()),
                        revision: WireRevision::V2026_07_28,
                    },
                    status_message: None,
                    job: Some(job),
                    idempotency: None,
                },
                "gone",
                1,
            )
            .await
            .expect("create");
        let question = json!({"method": "elicitation/create", "params": {}});
        store
            .request_input(&owner, &task.id, [("confirm".to_owned(), question)].into())
            .await
            .expect("first run asks");
        // A worker node whose sweep finds the lapsed lease and runs the task again.
        let worker = Server::builder("mcp-tests", "0")
            .store(Arc::clone(&store))
            .role(Role::Worker)
            .runtime(RuntimeConfig {
                sweep_every: Duration::from_millis(50),
                ..RuntimeConfig::default()
            })
            .worker(WorkerConfig {
                poll: Duration::from_millis(50),
                ..WorkerConfig::default()
            })
            .tool(asking)
            .build();
        let asked = loop {
            let rec = store.get(&owner, &task.id).await.expect("get");
            if rec.attempt() == 2 && !rec.input_requests.is_empty() {
                break rec;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let keys: Vec<&String> = asked.input_requests.keys().collect();
        assert_eq!(keys, ["confirm-r2"], "{asked:?}");
        store
            .resolve_input(
                &owner,
                &task.id,
                [(
                    "confirm-r2".to_owned(),
                    json!({"action": "accept", "content": {}}),
                )]
                .into(),
            )
            .await
            .expect("answer");
        let done = loop {
            let rec = store.get(&owner, &task.id).await.expect("get");
            if rec.is_terminal() {
                break rec;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let result = serde_json::to_string(&done.outcome).expect("outcome");
        assert!(result.contains("run 2 got Accept"), "{result}");
        worker.shutdown().await;
    };
    tokio::time::timeout(WAIT, run).await.expect("in time");
}

/// A tool that answers with the related task ids its context shows.
fn related_tool(policy: TaskPolicy) -> ToolDef {
    ToolDef::new(
        "related",
        policy,
        |ctx: ToolContext, _args: NoArgs| async move {
            Ok(CallToolResult::text(ctx.related_tasks().join(",")))
        },
    )
    .expect("tool")
}

/// `tools/call` params naming `related` (any JSON) as `relatedTaskIds`.
fn related_params(related: Value, task: bool) -> Value {
    let mut caps = json!({});
    if task {
        caps = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    }
    json!({
        "name": "related",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientInfo": { "name": "mcp-tests", "version": "0" },
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/relatedTaskIds": related
        }
    })
}

/// `io.modelcontextprotocol/relatedTaskIds` (the tasks extension draft) reaches the
/// tool, in a synchronous call and in a task (from its job); each id must be one of the
/// caller's tasks, as `tasks/get` would find it: another principal's, an unknown id or a
/// value that is not a list of ids is invalid params, and the tool does not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn related_task_ids_reach_the_tool_checked_against_the_caller() {
    use mcp_tasks_server::http::HttpConfig;
    use mcp_tests::server_harness::bearer_principal;

    let run = async {
        for policy in [TaskPolicy::Synchronous, TaskPolicy::Required] {
            let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
            let server = Server::builder("mcp-tests", "0")
                .store(store)
                .tool(declared_tool())
                .tool(related_tool(policy))
                .build();
            let front = TestServer::start_server(
                server,
                HttpConfig {
                    principal: Some(bearer_principal()),
                    ..HttpConfig::default()
                },
            )
            .await;
            const ALICE: &[(&str, &str)] = &[("authorization", "Bearer alice")];
            const BOB: &[(&str, &str)] = &[("authorization", "Bearer bob")];
            let call = |params: Value, who: &'static [(&'static str, &'static str)]| {
                let message =
                    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
                let front = &front;
                async move { front.post(&message, who).await }
            };
            let mk = json!({"name": "declared", "arguments": {}, "_meta": mcp_tests::server_harness::meta(true)});
            let made = call(mk, ALICE).await;
            let earlier = made.result()["taskId"].as_str().expect("task").to_owned();
            let task = policy == TaskPolicy::Required;

            let reply = call(related_params(json!([earlier]), task), ALICE).await;
            let text = if task {
                let id = reply.result()["taskId"]
                    .as_str()
                    .expect("task id")
                    .to_owned();
                let message = json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/get",
                    "params": {"taskId": id, "_meta": mcp_tests::server_harness::meta(true)}});
                let done = loop {
                    let got = front.post(&message, ALICE).await;
                    if got.result()["status"] == "completed" {
                        break got;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                };
                done.result()["result"]["content"][0]["text"].clone()
            } else {
                reply.result()["content"][0]["text"].clone()
            };
            assert_eq!(text, earlier, "{policy:?}");

            for (related, who) in [
                (json!([earlier]), BOB),
                (json!(["no-such-task"]), ALICE),
                (json!("not-a-list"), ALICE),
            ] {
                let refused = call(related_params(related.clone(), task), who).await;
                assert_eq!(refused.error_code(), -32602, "{related} {}", refused.text);
                assert!(
                    refused.error_message().contains("relatedTaskIds"),
                    "{}",
                    refused.text
                );
            }
        }
    };
    tokio::time::timeout(WAIT, run).await.expect("in time");
}

/// mcp-tasks-client sends a [`ToolCall`]'s related tasks as `relatedTaskIds`; the reference of
/// the task it makes keeps them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_sends_related_task_ids() {
    use mcp_tasks_client::{ClientConfig, DeclineAll, McpClient, Started, ToolCall};

    let run = async {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
        let server = Server::builder("mcp-tests", "0")
            .store(store)
            .tool(declared_tool())
            .tool(related_tool(TaskPolicy::Required))
            .build();
        let front = TestServer::start_server(server, HttpConfig::default()).await;
        let client =
            McpClient::connect_http(&front.url, Arc::new(DeclineAll), ClientConfig::default())
                .await
                .expect("connect");
        let Started::Task(earlier) = client
            .call_tool_as_task("declared", Default::default())
            .await
            .expect("first task")
        else {
            panic!("declared runs as a task");
        };
        let call = ToolCall::new("related", Default::default()).related_to([earlier.id()]);
        let Started::Task(handle) = client.call_as_task(call).await.expect("call") else {
            panic!("related runs as a task");
        };
        let reference = handle.reference();
        let operation = reference.operation.as_ref().expect("operation");
        assert_eq!(operation.related_task_ids, [earlier.id()]);
        let result = handle.wait().await.expect("result");
        assert_eq!(result.content.len(), 1);
        let text = serde_json::to_value(&result.content[0]).expect("json");
        assert_eq!(text["text"], earlier.id());
    };
    tokio::time::timeout(WAIT, run).await.expect("in time");
}
