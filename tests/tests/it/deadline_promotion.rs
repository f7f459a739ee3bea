//! Deadline-promoted calls (`TaskPolicy::After`) on MCP 2026-07-28: a quick run answers
//! in the request and writes nothing to the store; a slow one becomes a task at the
//! deadline and runs on as it with nothing lost (its status message, its questions, its
//! cancellation); a question before the deadline is an MRTR round, one after it an input
//! request of the task; a client that did not declare tasks never gets one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcp_tasks::{MemoryStore, Owner, TaskStore};
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{CallToolResult, Server, TaskPolicy, ToolContext, ToolDef, ToolError};
use mcp_tests::server_harness::{TestServer, WAIT, accept, meta};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// The deadline of the tools here.
const DEADLINE: Duration = Duration::from_millis(300);

#[derive(Debug, Deserialize, JsonSchema)]
struct WorkArgs {
    /// How long the work takes, in milliseconds.
    ms: u64,
    /// Ask a question after the work (and one before it when `ask_before` is set).
    #[serde(default)]
    ask_after: bool,
    #[serde(default)]
    ask_before: bool,
}

fn question(key: &str) -> mcp_tasks_protocol::v2026::ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": format!("Question {key}?"),
        "requestedSchema": { "type": "object", "properties": { "answer": { "type": "string" } } }
    }))
    .expect("elicitation params")
}

fn answer_of(result: &mcp_tasks_protocol::types::ElicitResult) -> String {
    result
        .content
        .as_ref()
        .and_then(|c| c.get("answer"))
        .and_then(|a| serde_json::to_value(a).ok())
        .and_then(|a| a.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Sets its flag when dropped: the tool's run stopped, whether it saw its cancellation or
/// was dropped by the runtime that saw it first.
struct SetOnDrop {
    flag: Arc<AtomicBool>,
    armed: bool,
}

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
}

/// `work`: says where it stands, optionally asks before, works `ms`, optionally asks
/// after; answers with what it heard and how it ran. Sets `stopped` when its run stops
/// before the work is done.
fn work_tool(stopped: Arc<AtomicBool>) -> ToolDef {
    ToolDef::new(
        "work",
        TaskPolicy::After(DEADLINE),
        move |ctx: ToolContext, args: WorkArgs| {
            let stopped = Arc::clone(&stopped);
            async move {
                let mut heard = Vec::new();
                if args.ask_before {
                    heard.push(answer_of(
                        &ctx.elicit_keyed("before", question("before")).await?,
                    ));
                }
                let _ = ctx.status("working").await;
                let mut guard = SetOnDrop {
                    flag: stopped,
                    armed: true,
                };
                tokio::select! {
                    _ = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
                    _ = tokio::time::sleep(Duration::from_millis(args.ms)) => {}
                }
                guard.armed = false;
                if args.ask_after {
                    heard.push(answer_of(
                        &ctx.elicit_keyed("after", question("after")).await?,
                    ));
                }
                let how = if ctx.is_task() { "task" } else { "request" };
                Ok(CallToolResult::text(format!("{how}: {}", heard.join(","))))
            }
        },
    )
    .expect("tool")
}

struct Setup {
    front: TestServer,
    store: Arc<dyn TaskStore>,
    stopped: Arc<AtomicBool>,
}

async fn setup() -> Setup {
    setup_with(false).await
}

/// The server with `work`, its record written up front when `up_front`.
async fn setup_with(up_front: bool) -> Setup {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
    let stopped = Arc::new(AtomicBool::new(false));
    let mut tool = work_tool(Arc::clone(&stopped));
    if up_front {
        tool = tool.record_up_front();
    }
    let server = Server::builder("mcp-tests", "0")
        .store(Arc::clone(&store))
        .tool(tool)
        .build();
    let front = TestServer::start_server(server, HttpConfig::default()).await;
    Setup {
        front,
        store,
        stopped,
    }
}

impl Setup {
    async fn tasks_in_store(&self) -> usize {
        self.records().await.len()
    }

    async fn records(&self) -> Vec<mcp_tasks::TaskRecord> {
        let owner = Owner::new(mcp_tasks_server::ANONYMOUS);
        let page = self.store.list(&owner, None, 100).await.expect("list");
        page.tasks
    }

    /// The only record, once `done` holds for it (bounded by `WAIT`).
    async fn only_record(
        &self,
        done: impl Fn(&mcp_tasks::TaskRecord) -> bool,
    ) -> mcp_tasks::TaskRecord {
        let seen = tokio::time::timeout(WAIT, async {
            loop {
                let records = self.records().await;
                assert!(records.len() <= 1, "one record at most: {records:?}");
                if let Some(record) = records.into_iter().next().filter(|r| done(r)) {
                    return record;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        seen.await.expect("the record got there in time")
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_run_answers_in_the_request_and_leaves_no_task() {
    let s = setup().await;
    let reply = s.front.call("work", json!({ "ms": 0 }), true).await;
    let result = reply.result();
    assert_eq!(result["resultType"], "complete", "{}", reply.text);
    assert_eq!(text(result), "request: ");
    assert_eq!(s.tasks_in_store().await, 0, "nothing written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_run_becomes_a_task_at_the_deadline_and_completes_with_its_result() {
    let s = setup().await;
    let asked = Instant::now();
    let reply = s.front.call("work", json!({ "ms": 1500 }), true).await;
    let answered = asked.elapsed();
    let created = reply.result();
    assert_eq!(created["resultType"], "task", "{}", reply.text);
    assert!(
        answered >= DEADLINE,
        "answered after {answered:?}, before the deadline"
    );
    // The status message the tool set before the deadline is the task's.
    assert_eq!(created["statusMessage"], "working", "{}", reply.text);
    let task_id = created["taskId"].as_str().expect("taskId");
    assert_eq!(s.tasks_in_store().await, 1);
    let done = s
        .front
        .poll_task(task_id, WAIT, |t| t["status"] == "completed")
        .await;
    assert_eq!(text(&done["result"]), "task: ", "{done}");
    // The task's job holds the call's arguments, moved in at the promotion.
    let record = s.only_record(|r| r.is_terminal()).await;
    let arguments = record
        .job
        .as_ref()
        .map(|job| Value::Object(job.arguments.clone()));
    assert_eq!(arguments, Some(json!({ "ms": 1500 })), "{record:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_before_the_deadline_is_a_round_and_one_after_it_a_task_input() {
    let s = setup().await;
    let args = json!({ "ms": 1000, "ask_before": true, "ask_after": true });
    // Round 1: the question before the deadline ends the round synchronously.
    let round = s.front.call("work", args.clone(), true).await;
    let round = round.result().clone();
    assert_eq!(round["resultType"], "input_required", "{round}");
    assert!(round["inputRequests"]["before"].is_object(), "{round}");
    assert_eq!(s.tasks_in_store().await, 0, "a round writes nothing");
    // Round 2: answered; the work outlives the deadline, so the call becomes a task.
    let params = json!({
        "name": "work",
        "arguments": args,
        "inputResponses": { "before": accept(json!({ "answer": "one" })) },
        "requestState": round["requestState"],
        "_meta": meta(true),
    });
    let reply = s.front.rpc("tools/call", params).await;
    let created = reply.result();
    assert_eq!(created["resultType"], "task", "{}", reply.text);
    let task_id = created["taskId"].as_str().expect("taskId").to_owned();
    // The question after the deadline is the task's input request.
    let waiting = s
        .front
        .poll_task(&task_id, WAIT, |t| t["status"] == "input_required")
        .await;
    assert!(waiting["inputRequests"]["after"].is_object(), "{waiting}");
    let ack = s
        .front
        .update_task(
            &task_id,
            json!({ "after": accept(json!({ "answer": "two" })) }),
        )
        .await;
    assert!(ack.result().is_object(), "{}", ack.text);
    let done = s
        .front
        .poll_task(&task_id, WAIT, |t| t["status"] == "completed")
        .await;
    assert_eq!(text(&done["result"]), "task: one,two", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_call_is_cancelled_as_a_task() {
    let s = setup().await;
    let reply = s.front.call("work", json!({ "ms": 60_000 }), true).await;
    let task_id = reply.result()["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {}", reply.text))
        .to_owned();
    let ack = s.front.cancel_task(&task_id).await;
    assert!(ack.result().is_object(), "{}", ack.text);
    s.front
        .poll_task(&task_id, WAIT, |t| t["status"] == "cancelled")
        .await;
    assert!(
        s.stopped.load(Ordering::SeqCst),
        "the tool saw its cancellation"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_tasks_never_gets_a_task() {
    let s = setup().await;
    let reply = s.front.call("work", json!({ "ms": 800 }), false).await;
    let result = reply.result();
    assert_eq!(result["resultType"], "complete", "{}", reply.text);
    assert_eq!(text(result), "request: ");
    assert_eq!(s.tasks_in_store().await, 0);
}

/// The JSON-RPC response in a 2025-11-25 reply (a JSON body, or the SSE event with an id).
fn response_2025(reply: &mcp_tests::server_harness::Reply) -> Value {
    if let Ok(value) = serde_json::from_str::<Value>(&reply.text) {
        return value;
    }
    reply
        .text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no response in {}", reply.text))
}

/// MCP 2025-11-25 has the client choose: the tool is listed as `taskSupport: optional`, a
/// call with `params.task` gets a task at once (that revision requires it), one without
/// answers in the request however long it takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2025_11_25_the_client_chooses() {
    use mcp_tests::legacy::{LEGACY_VERSION, init_params};
    use mcp_tests::server_harness::request;

    let s = setup().await;
    let init = s
        .front
        .post(&request(s.front.id(), "initialize", init_params()), &[])
        .await;
    let session = init
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no session: {init:?}"))
        .to_owned();
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", LEGACY_VERSION),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    s.front.post(&initialized, &headers).await;
    let rpc = |method: &'static str, params: Value| {
        let message = request(s.front.id(), method, params);
        let front = &s.front;
        async move { response_2025(&front.post(&message, &headers).await) }
    };
    let listed = rpc("tools/list", json!({})).await;
    assert_eq!(
        listed["result"]["tools"][0]["execution"]["taskSupport"], "optional",
        "{listed}"
    );
    let asked = Instant::now();
    let created = rpc(
        "tools/call",
        json!({ "name": "work", "arguments": { "ms": 1000 }, "task": { "ttl": 60000 } }),
    )
    .await;
    assert!(created["result"]["task"]["taskId"].is_string(), "{created}");
    assert!(
        asked.elapsed() < Duration::from_millis(1000),
        "a task at once, not at the deadline"
    );
    let plain = rpc(
        "tools/call",
        json!({ "name": "work", "arguments": { "ms": 600 } }),
    )
    .await;
    assert_eq!(
        plain["result"]["content"][0]["text"], "request: ",
        "{plain}"
    );
}

/// With the record written up front, a quick call still answers in the request, and its
/// record ends completed with the same result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_front_a_quick_call_ends_its_record_completed() {
    let s = setup_with(true).await;
    let reply = s.front.call("work", json!({ "ms": 0 }), true).await;
    assert_eq!(reply.result()["resultType"], "complete", "{}", reply.text);
    let record = s.only_record(|r| r.is_terminal()).await;
    assert_eq!(record.status.as_str(), "completed");
    match &record.outcome {
        Some(mcp_tasks::Outcome::Result(result)) => {
            assert_eq!(result["content"][0]["text"], "request: ", "{result:?}")
        }
        other => panic!("no result: {other:?}"),
    }
}

/// With the record written up front, a slow call's task is that record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_front_a_slow_call_becomes_the_record_it_wrote() {
    let s = setup_with(true).await;
    let reply = s.front.call("work", json!({ "ms": 1000 }), true).await;
    let created = reply.result();
    assert_eq!(created["resultType"], "task", "{}", reply.text);
    assert_eq!(created["statusMessage"], "working", "{}", reply.text);
    let task_id = created["taskId"].as_str().expect("taskId").to_owned();
    let record = s.only_record(|r| r.is_terminal()).await;
    assert_eq!(record.id.as_str(), task_id);
    assert_eq!(record.status.as_str(), "completed");
}

/// With the record written up front, a round ending `input_required` cancels its record,
/// saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_front_a_round_ending_input_required_cancels_its_record() {
    let s = setup_with(true).await;
    let args = json!({ "ms": 0, "ask_before": true });
    let reply = s.front.call("work", args, true).await;
    assert_eq!(
        reply.result()["resultType"],
        "input_required",
        "{}",
        reply.text
    );
    let record = s.only_record(|r| r.is_terminal()).await;
    assert_eq!(record.status.as_str(), "cancelled");
    assert_eq!(
        record.status_message.as_deref(),
        Some(mcp_tasks_server::ROUND_ENDED_MESSAGE)
    );
}
