//! `mcp-tasks-client` against an independent implementation: an rmcp 3.x server (crates.io
//! `rmcp`, features `server` + `transport-streamable-http-server`) served statelessly
//! over Streamable HTTP on 127.0.0.1:0, its tools run as SEP-2663 tasks by rmcp's
//! `TaskManager`.
//!
//! Our client creates tasks, follows them by polling (rmcp offers no task push), answers
//! an in-task input request through `tasks/update`, reads a failed task's error, and
//! cancels one.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_tasks_client::{
    ClientConfig, ClientError, ClientHandler, DriverConfig, McpClient, Started,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_protocol::types::ElicitResult;
use mcp_tasks_protocol::v2026::{CallToolResult, ElicitRequestParams};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult as RmcpCallToolResult,
    CancelTaskParams, ClientCapabilities, ContentBlock, CreateTaskResult, GetTaskParams,
    GetTaskResult, InputRequest, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The bound of one whole test.
const BOUND: Duration = Duration::from_secs(30);

/// An rmcp server whose tools run as tasks:
/// - `sleep {ms}`: sleeps, stopping early (as `cancelled`) on `tasks/cancel`;
/// - `ask`: asks for a name (elicitation, as an in-task input request), greets it;
/// - `boom`: fails with a JSON-RPC error;
/// - `hello`: synchronous, for a task-less client.
#[derive(Clone, Default)]
struct RmcpTasks {
    tasks: TaskManager,
}

fn text_result(text: impl Into<String>) -> RmcpCallToolResult {
    RmcpCallToolResult::success(vec![ContentBlock::text(text.into())])
}

impl ServerHandler for RmcpTasks {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tasks_ok = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        let args = request.arguments.clone().unwrap_or_default();
        let options = TaskOptions::new().with_poll_interval_ms(50);
        let task = match request.name.as_ref() {
            "hello" => {
                return Ok(CallToolResponse::Complete(text_result(
                    "hello, synchronously",
                )));
            }
            _ if !tasks_ok => {
                return Err(McpError::missing_required_client_capability(
                    ClientCapabilities::builder().enable_tasks().build(),
                ));
            }
            "sleep" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(1000);
                self.tasks.spawn(options, move |ctx| {
                    Box::pin(async move {
                        ctx.set_status_message(format!("sleeping {ms} ms"));
                        tokio::select! {
                            _ = ctx.cancelled() => Err(TaskExit::Cancelled),
                            _ = tokio::time::sleep(Duration::from_millis(ms)) => {
                                Ok(text_result(format!("slept {ms} ms")))
                            }
                        }
                    })
                })
            }
            "ask" => self.tasks.spawn(options, |ctx| {
                Box::pin(async move {
                    let request: InputRequest = serde_json::from_value(json!({
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": "What is your name?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": { "name": { "type": "string" } },
                                "required": ["name"]
                            }
                        }
                    }))
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                    let answer = ctx.request_input("name", request).await?;
                    let name = answer["content"]["name"].as_str().unwrap_or("nobody");
                    Ok(text_result(format!("hello {name}")))
                })
            }),
            "boom" => self.tasks.spawn(options, |_ctx| {
                Box::pin(async move {
                    Err(TaskExit::Error(McpError::internal_error(
                        "boom went the task",
                        None,
                    )))
                })
            }),
            other => {
                return Err(McpError::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }
}

/// The rmcp server on 127.0.0.1:0; stops when dropped.
struct RmcpServer {
    url: String,
    stop: CancellationToken,
}

impl Drop for RmcpServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve_rmcp() -> RmcpServer {
    let stop = CancellationToken::new();
    let handler = RmcpTasks::default();
    let config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(None)
        .with_cancellation_token(stop.clone());
    let service: StreamableHttpService<RmcpTasks, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(handler.clone()), Default::default(), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("address");
    tokio::spawn({
        let stop = stop.clone();
        async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
        }
    });
    RmcpServer {
        url: format!("http://{addr}/mcp"),
        stop,
    }
}

/// Gives a name when asked; counts the questions.
#[derive(Debug, Default)]
struct NameGiver(Mutex<Vec<String>>);

#[async_trait]
impl ClientHandler for NameGiver {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        if let ElicitRequestParams::Form(form) = &params {
            self.0
                .lock()
                .expect("not poisoned")
                .push(form.message.clone());
        }
        Ok(
            serde_json::from_value(json!({ "action": "accept", "content": { "name": "Ada" } }))
                .expect("a valid ElicitResult"),
        )
    }
}

fn config() -> ClientConfig {
    ClientConfig {
        request_timeout: Duration::from_secs(10),
        driver: DriverConfig {
            min_poll: Duration::from_millis(20),
            max_poll: Duration::from_millis(200),
            ..DriverConfig::default()
        },
        ..ClientConfig::default()
    }
}

async fn connect(server: &RmcpServer, handler: Arc<dyn ClientHandler>) -> McpClient {
    McpClient::connect_http(&server.url, handler, config())
        .await
        .unwrap_or_else(|e| panic!("connect to rmcp at {}: {e}", server.url))
}

fn args(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| {
            serde_json::to_value(c)
                .ok()
                .and_then(|v| v.get("text").and_then(Value::as_str).map(str::to_owned))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("finished in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_sees_the_tasks_extension() {
    let server = serve_rmcp().await;
    let client = bounded(connect(&server, Arc::new(NameGiver::default()))).await;
    let info = client.server().expect("negotiated");
    assert!(info.supports_tasks(), "{info:?}");
    let result = bounded(client.call_tool("hello", JsonObject::new()))
        .await
        .expect("hello");
    assert_eq!(text(&result), "hello, synchronously");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_created_and_polled_to_completion() {
    let server = serve_rmcp().await;
    let client = bounded(connect(&server, Arc::new(NameGiver::default()))).await;
    let started = bounded(client.call_tool_as_task("sleep", args(json!({ "ms": 500 }))))
        .await
        .expect("tools/call");
    let Started::Task(handle) = started else {
        panic!("rmcp ran sleep synchronously");
    };
    let created = handle.created().expect("the created task").clone();
    assert_eq!(created.status, TaskStatus::Working);
    assert_eq!(created.poll_interval_ms, Some(50));
    let first = bounded(handle.status()).await.expect("tasks/get");
    assert_eq!(first.status(), TaskStatus::Working);
    assert_eq!(first.status_message(), Some("sleeping 500 ms"));
    let t0 = Instant::now();
    let result = bounded(handle.wait()).await.expect("completed");
    assert_eq!(text(&result), "slept 500 ms");
    assert!(t0.elapsed() < Duration::from_secs(5));
    // And transparently.
    let result = bounded(client.call_tool("sleep", args(json!({ "ms": 100 }))))
        .await
        .expect("completed");
    assert_eq!(text(&result), "slept 100 ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_task_input_request_is_answered_through_tasks_update() {
    let server = serve_rmcp().await;
    let handler = Arc::new(NameGiver::default());
    let client = bounded(connect(&server, handler.clone())).await;
    let started = bounded(client.call_tool_as_task("ask", JsonObject::new()))
        .await
        .expect("tools/call");
    let Started::Task(handle) = started else {
        panic!("rmcp ran ask synchronously");
    };
    let result = bounded(handle.wait()).await.expect("completed");
    assert_eq!(text(&result), "hello Ada");
    assert_eq!(handle.answered(), vec!["name".to_owned()]);
    assert_eq!(
        *handler.0.lock().expect("not poisoned"),
        vec!["What is your name?".to_owned()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_is_task_failed() {
    let server = serve_rmcp().await;
    let client = bounded(connect(&server, Arc::new(NameGiver::default()))).await;
    match bounded(client.call_tool("boom", JsonObject::new())).await {
        Err(ClientError::TaskFailed { error, .. }) => {
            assert_eq!(error.code, -32603);
            assert_eq!(error.message, "boom went the task");
        }
        other => panic!("expected TaskFailed, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_cancelled() {
    let server = serve_rmcp().await;
    let client = bounded(connect(&server, Arc::new(NameGiver::default()))).await;
    let started = bounded(client.call_tool_as_task("sleep", args(json!({ "ms": 30000 }))))
        .await
        .expect("tools/call");
    let Started::Task(handle) = started else {
        panic!("rmcp ran sleep synchronously");
    };
    bounded(handle.cancel()).await.expect("tasks/cancel ack");
    let waited = tokio::time::timeout(Duration::from_secs(5), handle.wait())
        .await
        .expect("ended soon after cancel");
    assert!(
        matches!(&waited, Err(ClientError::TaskCancelled { task_id, .. }) if task_id == handle.id()),
        "{waited:?}"
    );
    // Dropping a followed handle cancels too.
    let started = bounded(client.call_tool_as_task("sleep", args(json!({ "ms": 30000 }))))
        .await
        .expect("tools/call");
    let Started::Task(handle) = started else {
        panic!("rmcp ran sleep synchronously");
    };
    let id = handle.id().to_owned();
    drop(handle);
    let peek = client.resume_task(&id);
    let status = bounded(async {
        loop {
            let t = peek.status().await.expect("tasks/get");
            if t.status() != TaskStatus::Working {
                return t.status();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert_eq!(status, TaskStatus::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_task_is_an_rpc_error() {
    let server = serve_rmcp().await;
    let client = bounded(connect(&server, Arc::new(NameGiver::default()))).await;
    let handle = client.resume_task("no-such-task");
    match bounded(handle.status()).await {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32602),
        other => panic!("expected -32602, got {other:?}"),
    }
}
