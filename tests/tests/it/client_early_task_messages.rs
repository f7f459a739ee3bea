//! `mcp-tasks-client` against an MCP 2025-11-25 server that speaks about a task before the
//! `tools/call` response (`CreateTaskResult`) that tells the client the task exists: its
//! `elicitation/create` (with the related-task `_meta`) and `notifications/tasks/status`
//! come first. The client holds such a request until the response routes the task, then
//! hands it to that task's handle (its handler, its update stream), as if it had come
//! after; a request naming a task that never becomes known is answered as before (by the
//! client's handler) once the hold ends, without a hang.
//!
//! The server is raw JSON-RPC written here, over an in-memory duplex (what stdio is) and
//! over Streamable HTTP (the standalone `GET` stream, on 127.0.0.1). Every test is
//! bounded by [`BOUND`].

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use mcp_tasks_client::{
    ClientConfig, ClientHandler, DriverConfig, McpClient, Revision, Started, TaskHandle, TaskUpdate,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::Connection;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::meta::RELATED_TASK;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_protocol::types::{ElicitAction, ElicitResult, ElicitValue};
use mcp_tasks_protocol::v2026::ElicitRequestParams;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

/// The bound of one whole test (and of every wait of the raw server).
const BOUND: Duration = Duration::from_secs(20);

/// The task the raw server makes.
const TASK: &str = "task-early-1";
/// A task the raw server names but never makes.
const GHOST: &str = "task-never-made";
/// The id of the raw server's `elicitation/create`.
const QUESTION_ID: &str = "ask-1";
/// The status message of the early `notifications/tasks/status`.
const WAITING: &str = "waiting for a name";

// ---------------------------------------------------------------------------------------
// The raw server.
// ---------------------------------------------------------------------------------------

/// A task in the 2025-11-25 shape.
fn task(status: &str, message: Option<&str>) -> Value {
    let mut t = json!({
        "taskId": TASK,
        "status": status,
        "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:00Z",
        "ttl": 60000,
        "pollInterval": 50,
    });
    if let Some(message) = message {
        t["statusMessage"] = json!(message);
    }
    t
}

/// The server's `elicitation/create` about task `about`.
fn question(about: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": QUESTION_ID,
        "method": "elicitation/create",
        "params": {
            "message": "Your name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            },
            "_meta": {RELATED_TASK: {"taskId": about}}
        }
    })
}

/// A raw MCP 2025-11-25 server with one task-capable tool, `ask`. A task-augmented call
/// first sends the task's question (and, for a known task, an `input_required` status
/// notification), then the `CreateTaskResult`; the task completes with the answer.
struct RawServer {
    /// The question names [`GHOST`], and the call is answered only once the question is.
    ghost: bool,
    /// What the client sent back for the question (its `result`, or its `error`).
    answer: Mutex<Option<Value>>,
    answered: Notify,
}

impl RawServer {
    fn new(ghost: bool) -> Arc<RawServer> {
        Arc::new(RawServer {
            ghost,
            answer: Mutex::new(None),
            answered: Notify::new(),
        })
    }

    /// The client's answer to the question, once it came (`Null` if not within the
    /// bound: the test's checks then fail).
    async fn answer(&self) -> Value {
        let wait = async {
            loop {
                let changed = self.answered.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if let Some(answer) = self.answer.lock().expect("not poisoned").clone() {
                    return answer;
                }
                changed.await;
            }
        };
        tokio::time::timeout(BOUND, wait)
            .await
            .unwrap_or(Value::Null)
    }

    /// A response from the client (to the question).
    fn record(&self, message: &Value) {
        if message["id"] == QUESTION_ID {
            let answer = message
                .get("result")
                .or_else(|| message.get("error"))
                .cloned()
                .unwrap_or(Value::Null);
            *self.answer.lock().expect("not poisoned") = Some(answer);
            self.answered.notify_waiters();
        }
    }

    /// The result of request `method`; what the server sends of its own meanwhile goes
    /// to `push`, in order.
    async fn handle(
        &self,
        method: &str,
        params: &Value,
        push: &mpsc::UnboundedSender<Value>,
    ) -> Value {
        match method {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
                "serverInfo": {"name": "raw-early", "version": "1"}
            }),
            "tools/list" => json!({"tools": [{
                "name": "ask",
                "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "optional"}
            }]}),
            "tools/call" => {
                assert!(params.get("task").is_some(), "the client asks for a task");
                if self.ghost {
                    let _ = push.send(question(GHOST));
                    // A server that waits for the answer before it answers the call.
                    self.answer().await;
                } else {
                    let _ = push.send(question(TASK));
                    let _ = push.send(json!({
                        "jsonrpc": "2.0",
                        "method": "notifications/tasks/status",
                        "params": task("input_required", Some(WAITING))
                    }));
                    // A moment, so that the client has read both before the answer (the
                    // checks hold in either order; in this one they need the hold).
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                json!({"task": task("working", None)})
            }
            "tasks/get" => {
                let done = self.answer.lock().expect("not poisoned").is_some();
                task(if done { "completed" } else { "working" }, None)
            }
            // Blocks until the task is over, as 2025-11-25 says.
            "tasks/result" => {
                let answer = self.answer().await;
                json!({
                    "content": [{"type": "text", "text": format!("answered: {answer}")}],
                    "isError": false,
                    "_meta": {RELATED_TASK: {"taskId": TASK}}
                })
            }
            "tasks/cancel" => task("cancelled", None),
            _ => json!({}),
        }
    }
}

/// The raw server on one end of an in-memory duplex; the client's end is returned. Its
/// own messages and its replies go out in the order it makes them, one frame each.
fn duplex(raw: Arc<RawServer>) -> Connection {
    let (client_end, server_end) = Connection::memory();
    let Connection {
        sender,
        mut receiver,
    } = server_end;
    let (out, mut outbox) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        while let Some(message) = outbox.recv().await {
            if sender.send(message.to_string()).await.is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        while let Some(Ok(frame)) = receiver.recv().await {
            let message: Value = serde_json::from_str(&frame).expect("the client sends JSON");
            match (message.get("id").cloned(), message["method"].as_str()) {
                (Some(id), Some(method)) => {
                    let (raw, out, method) = (Arc::clone(&raw), out.clone(), method.to_owned());
                    tokio::spawn(async move {
                        let params = message.get("params").cloned().unwrap_or(Value::Null);
                        let result = raw.handle(&method, &params, &out).await;
                        let _ = out.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
                    });
                }
                (Some(_), None) => raw.record(&message),
                _ => {} // notifications
            }
        }
    });
    client_end
}

/// The raw server over Streamable HTTP on 127.0.0.1: replies in the `POST` bodies, its
/// own messages on the standalone `GET` stream. A `tools/call` is handled once that
/// stream is open (the task's messages go out on it before the call is answered).
async fn http(raw: Arc<RawServer>) -> String {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;

    let (push, events) = mpsc::unbounded_channel::<Value>();
    let events = Arc::new(Mutex::new(Some(events)));
    let stream_open = Arc::new(Notify::new());
    let get = {
        let stream_open = Arc::clone(&stream_open);
        move || async move {
            let Some(events) = events.lock().expect("not poisoned").take() else {
                return StatusCode::METHOD_NOT_ALLOWED.into_response();
            };
            stream_open.notify_one();
            let stream = futures::stream::unfold(events, |mut events| async move {
                let message = events.recv().await?;
                Some((Ok::<_, Infallible>(format!("data: {message}\n\n")), events))
            });
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "text/event-stream")],
                axum::body::Body::from_stream(stream),
            )
                .into_response()
        }
    };
    let post = move |body: String| async move {
        let message: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
            raw.record(&message);
            return StatusCode::ACCEPTED.into_response();
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        if method == "tools/call" {
            let _ = tokio::time::timeout(BOUND, stream_open.notified()).await;
        }
        let result = raw.handle(method, &params, &push).await;
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            reply.to_string(),
        )
            .into_response()
    };
    let app = axum::Router::new().route("/mcp", axum::routing::get(get).post(post));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/mcp")
}

// ---------------------------------------------------------------------------------------
// The client side.
// ---------------------------------------------------------------------------------------

/// Records each elicitation it is asked (its params as JSON) and accepts with the name
/// Ada, or declines.
struct Recorder {
    accept: bool,
    asked: Mutex<Vec<Value>>,
}

impl Recorder {
    fn new(accept: bool) -> Arc<Recorder> {
        Arc::new(Recorder {
            accept,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<Value> {
        self.asked.lock().expect("not poisoned").clone()
    }
}

#[async_trait]
impl ClientHandler for Recorder {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let params = serde_json::to_value(params).expect("params as JSON");
        self.asked.lock().expect("not poisoned").push(params);
        Ok(if self.accept {
            let mut content = indexmap::IndexMap::new();
            content.insert("name".to_owned(), ElicitValue::String("Ada".into()));
            ElicitResult::accept(content)
        } else {
            ElicitResult::new(ElicitAction::Decline)
        })
    }
}

fn config(hold: Duration) -> ClientConfig {
    ClientConfig {
        revision: Revision::V2025_11_25,
        request_timeout: BOUND,
        driver: DriverConfig {
            unknown_task_hold: hold,
            ..DriverConfig::default()
        },
        ..ClientConfig::default()
    }
}

/// The task's updates, to the last.
async fn follow(handle: TaskHandle) -> Vec<TaskUpdate> {
    let mut updates = handle.into_updates();
    let mut seen = Vec::new();
    while let Some(update) = updates.next().await {
        let last = matches!(update, TaskUpdate::Finished(_));
        seen.push(update);
        if last {
            break;
        }
    }
    seen
}

/// The task the related-task `_meta` of elicitation params names.
fn named_task(params: &Value) -> &Value {
    &params["_meta"][RELATED_TASK]["taskId"]
}

/// Calls `ask` as a task whose own handler is `task_handler`, follows it to the end,
/// and checks that the early question reached that handler (not the client's), naming
/// the task, that its accept is what the server got, and that the early status
/// notification and the question are on the task's update stream.
async fn early_messages_reach_the_task(
    client: &McpClient,
    raw: &RawServer,
    client_handler: &Recorder,
) {
    let task_handler = Recorder::new(true);
    let started = client
        .call_tool_as_task("ask", JsonObject::new())
        .await
        .expect("tools/call");
    let Started::Task(handle) = started else {
        panic!("ask made no task");
    };
    assert_eq!(handle.id(), TASK);
    let handle = (*handle).with_handler(Arc::clone(&task_handler) as Arc<dyn ClientHandler>);
    let updates = follow(handle).await;

    let asked = task_handler.asked();
    assert_eq!(
        asked.len(),
        1,
        "the task's handler was asked once: {asked:?}"
    );
    assert_eq!(named_task(&asked[0]), TASK, "{:?}", asked[0]);
    assert_eq!(asked[0]["message"], "Your name?");
    assert!(
        client_handler.asked().is_empty(),
        "the client's handler answered for the task: {:?}",
        client_handler.asked()
    );
    assert_eq!(
        raw.answer().await,
        json!({"action": "accept", "content": {"name": "Ada"}}),
        "the server got the task handler's answer"
    );

    let questions: Vec<Value> = updates
        .iter()
        .filter_map(|u| match u {
            TaskUpdate::InputRequested { request, .. } => {
                Some(serde_json::to_value(request).expect("request as JSON"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(questions.len(), 1, "{updates:?}");
    assert_eq!(questions[0]["method"], "elicitation/create");
    assert_eq!(questions[0]["params"]["message"], "Your name?");
    assert!(
        updates.iter().any(|u| matches!(u,
            TaskUpdate::Status(view) if view.task_id() == TASK
                && view.status() == TaskStatus::InputRequired
                && view.status_message() == Some(WAITING))),
        "the early status notification is on the stream: {updates:?}"
    );
    match updates.last() {
        Some(TaskUpdate::Finished(Ok(result))) => {
            let text = serde_json::to_string(&result.content).expect("content");
            assert!(text.contains("Ada"), "{text}");
        }
        other => panic!("the task did not finish well: {other:?}"),
    }
}

#[tokio::test]
async fn duplex_early_question_and_status_reach_the_task_they_name() {
    tokio::time::timeout(BOUND, async {
        let raw = RawServer::new(false);
        let client_handler = Recorder::new(false);
        let client = McpClient::connect(
            duplex(Arc::clone(&raw)),
            Arc::clone(&client_handler) as Arc<dyn ClientHandler>,
            config(BOUND),
        )
        .await
        .expect("connect");
        early_messages_reach_the_task(&client, &raw, &client_handler).await;
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn http_early_question_and_status_on_the_get_stream_reach_the_task_they_name() {
    tokio::time::timeout(BOUND, async {
        let raw = RawServer::new(false);
        let url = http(Arc::clone(&raw)).await;
        let client_handler = Recorder::new(false);
        let client = McpClient::connect_http(
            &url,
            Arc::clone(&client_handler) as Arc<dyn ClientHandler>,
            config(BOUND),
        )
        .await
        .expect("connect");
        early_messages_reach_the_task(&client, &raw, &client_handler).await;
    })
    .await
    .expect("bounded");
}

/// A question naming a task that never becomes known (the server even waits for its
/// answer before answering the call) is answered by the client's handler once the hold
/// ends, as it was before there was a hold; the call then goes on to its result.
#[tokio::test]
async fn a_question_for_a_task_never_made_is_answered_as_before_after_the_hold() {
    tokio::time::timeout(BOUND, async {
        let raw = RawServer::new(true);
        let client_handler = Recorder::new(false);
        let client = McpClient::connect(
            duplex(Arc::clone(&raw)),
            Arc::clone(&client_handler) as Arc<dyn ClientHandler>,
            config(Duration::from_millis(200)),
        )
        .await
        .expect("connect");
        let result = client
            .call_tool("ask", JsonObject::new())
            .await
            .expect("the call goes on");
        let asked = client_handler.asked();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(named_task(&asked[0]), GHOST);
        assert_eq!(raw.answer().await, json!({"action": "decline"}));
        let text = serde_json::to_string(&result.content).expect("content");
        assert!(text.contains("decline"), "{text}");
    })
    .await
    .expect("bounded");
}
