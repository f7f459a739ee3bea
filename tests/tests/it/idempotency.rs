//! Idempotency keys on `tools/call` (issue 50; our extension, rs.mcp-tasks, not the
//! spec's): `params.idempotencyKey` or `_meta.idempotencyKey` makes at most one task per
//! owner and key for the task's TTL, on both revisions (2026-07-28 with the tasks
//! extension, 2025-11-25 with `params.task`), for deadline-promoted calls too, and across
//! two instances on one PostgreSQL or Redis store.
//!
//! The in-process server counts its tool's runs: a repeat that ran the tool again would
//! show.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::v2026::CallToolResult;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, TaskPolicy, ToolContext, ToolDef, ToolError};
use mcp_tests::legacy::{LEGACY_VERSION, init_params, response_in};
use mcp_tests::node_harness::{Node, NodeStore, post_request, slow};
use mcp_tests::server_harness::{
    Reply, TestServer, WAIT, bearer_principal, call_params, meta, request, task_params,
};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const CONFLICT: &str = "idempotency key reused with different arguments";
/// The deadline of `counted_after`.
const DEADLINE: Duration = Duration::from_millis(300);

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct CountedArgs {
    /// Returned in the result.
    label: String,
    /// How long the run works.
    #[serde(default)]
    ms: u64,
}

/// A tool (`name`, `policy`) that counts its runs in `runs`, works `ms`, and answers
/// `done <label>` (the client's retry tests count runs with it too).
pub(crate) fn counted(name: &str, policy: TaskPolicy, runs: &Arc<AtomicUsize>) -> ToolDef {
    let runs = Arc::clone(runs);
    ToolDef::new(name, policy, move |ctx: ToolContext, args: CountedArgs| {
        let runs = Arc::clone(&runs);
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            tokio::select! {
                _ = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
                _ = tokio::time::sleep(Duration::from_millis(args.ms)) => {}
            }
            Ok(CallToolResult::text(format!("done {}", args.label)))
        }
    })
    .expect("tool")
}

/// The server: `counted` (a task when the caller allows), `counted_sync` (never a task)
/// and `counted_after` (a task at [`DEADLINE`]), sharing one run counter; callers named by
/// `Authorization: Bearer <name>`.
async fn server() -> (TestServer, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let tools = vec![
        counted("counted", TaskPolicy::Optional, &runs),
        counted("counted_sync", TaskPolicy::Synchronous, &runs),
        counted("counted_after", TaskPolicy::After(DEADLINE), &runs),
    ];
    let http = HttpConfig {
        principal: Some(bearer_principal()),
        ..HttpConfig::default()
    };
    let server = TestServer::start_with(tools, RuntimeConfig::default(), http).await;
    (server, runs)
}

fn args(label: &str, ms: u64) -> Value {
    json!({ "label": label, "ms": ms })
}

/// 2026-07-28 `tools/call` params (extension declared) with `key` as `params.idempotencyKey`.
fn keyed(name: &str, arguments: Value, key: impl Into<Value>) -> Value {
    let mut params = call_params(name, arguments, true);
    params["idempotencyKey"] = key.into();
    params
}

/// Sends a 2026-07-28 `tools/call` with `params` as `who` (a bearer name, or anonymous).
async fn call_as(s: &TestServer, who: Option<&str>, params: Value) -> Value {
    let bearer = who.map(|w| format!("Bearer {w}"));
    let headers: Vec<(&str, &str)> = bearer
        .as_deref()
        .map(|b| vec![("authorization", b)])
        .unwrap_or_default();
    let reply = s
        .post(&request(s.id(), "tools/call", params), &headers)
        .await;
    reply.body.clone()
}

async fn call(s: &TestServer, params: Value) -> Value {
    call_as(s, None, params).await
}

/// The task a 2026-07-28 reply created or found.
fn task_of(reply: &Value) -> (String, String) {
    let result = &reply["result"];
    assert_eq!(result["resultType"], "task", "{reply}");
    (
        result["taskId"].as_str().expect("taskId").to_owned(),
        result["status"].as_str().expect("status").to_owned(),
    )
}

fn assert_invalid(reply: &Value, needle: &str) {
    assert_eq!(
        reply["error"]["code"].as_i64(),
        Some(error_codes::INVALID_PARAMS),
        "{reply}"
    );
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{needle:?} in {reply}");
}

#[tokio::test]
async fn a_repeat_gets_the_same_task_and_the_tool_runs_once() {
    let (s, runs) = server().await;
    let first = call(&s, keyed("counted", args("a", 300), "k-1")).await;
    let (id, status) = task_of(&first);
    assert_eq!(status, "working");
    let again = call(&s, keyed("counted", args("a", 300), "k-1")).await;
    assert_eq!(task_of(&again).0, id, "{again}");
    let done = s.poll_terminal(&id).await;
    assert_eq!(done["status"], "completed", "{done}");
    // After it completed: the same task, shown completed; the tool did not run again.
    let after = call(&s, keyed("counted", args("a", 300), "k-1")).await;
    assert_eq!(task_of(&after), (id.clone(), "completed".to_owned()));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Argument order does not matter: the fingerprint is of canonical JSON.
    let reordered = json!({ "ms": 300, "label": "a" });
    let same = call(&s, keyed("counted", reordered, "k-1")).await;
    assert_eq!(task_of(&same).0, id);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_repeat_with_other_arguments_or_another_tool_is_32602() {
    let (s, runs) = server().await;
    let first = call(&s, keyed("counted", args("a", 50), "k-2")).await;
    task_of(&first);
    let other = call(&s, keyed("counted", args("b", 50), "k-2")).await;
    assert_invalid(&other, CONFLICT);
    let tool = call(&s, keyed("counted_after", args("a", 50), "k-2")).await;
    assert_invalid(&tool, CONFLICT);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn bad_keys_are_32602() {
    let (s, runs) = server().await;
    let long = "k".repeat(256);
    // 2 bytes each: 128 characters are 256 bytes.
    let long_utf8 = "é".repeat(128);
    for key in [
        json!(long),
        json!(long_utf8),
        json!(""),
        json!(42),
        json!(null),
    ] {
        let reply = call(&s, keyed("counted", args("a", 0), key.clone())).await;
        if key.is_null() {
            // An explicit null is no key: a plain call.
            task_of(&reply);
            continue;
        }
        assert_eq!(
            reply["error"]["code"].as_i64(),
            Some(error_codes::INVALID_PARAMS),
            "key {key}: {reply}"
        );
    }
    // In `_meta` too.
    for key in [json!(""), json!(7), json!("x".repeat(256))] {
        let mut params = call_params("counted", args("a", 0), true);
        params["_meta"]["idempotencyKey"] = key.clone();
        let reply = call(&s, params).await;
        assert_invalid(&reply, "idempotencyKey");
    }
    // 255 bytes is fine.
    let ok = call(&s, keyed("counted", args("a", 0), "k".repeat(255))).await;
    task_of(&ok);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the null key's call and the last"
    );
}

#[tokio::test]
async fn params_and_meta_must_agree_and_meta_alone_works() {
    let (s, runs) = server().await;
    let mut both = keyed("counted", args("a", 200), "k-3");
    both["_meta"]["idempotencyKey"] = json!("k-other");
    assert_invalid(&call(&s, both).await, "differ");
    // In `_meta` only.
    let mut in_meta = call_params("counted", args("a", 200), true);
    in_meta["_meta"]["idempotencyKey"] = json!("k-3");
    let (id, _) = task_of(&call(&s, in_meta.clone()).await);
    assert_eq!(task_of(&call(&s, in_meta).await).0, id);
    // The same key in params is the same key.
    let (again, _) = task_of(&call(&s, keyed("counted", args("a", 200), "k-3")).await);
    assert_eq!(again, id);
    // Both, equal.
    let mut equal = keyed("counted", args("a", 200), "k-3");
    equal["_meta"]["idempotencyKey"] = json!("k-3");
    assert_eq!(task_of(&call(&s, equal).await).0, id);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn two_owners_with_one_key_get_two_tasks() {
    let (s, runs) = server().await;
    let params = keyed("counted", args("a", 100), "shared");
    let (alice, _) = task_of(&call_as(&s, Some("alice"), params.clone()).await);
    let (bob, _) = task_of(&call_as(&s, Some("bob"), params.clone()).await);
    assert_ne!(alice, bob);
    let (alice_again, _) = task_of(&call_as(&s, Some("alice"), params).await);
    assert_eq!(alice_again, alice);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn calls_without_a_key_are_as_before() {
    let (s, runs) = server().await;
    let params = call_params("counted", args("a", 0), true);
    let (one, _) = task_of(&call(&s, params.clone()).await);
    let (two, _) = task_of(&call(&s, params).await);
    assert_ne!(one, two);
    s.poll_terminal(&one).await;
    s.poll_terminal(&two).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_key_on_a_synchronous_answer_is_accepted_and_creates_nothing() {
    let (s, runs) = server().await;
    // A tool that never is a task, and a caller that does not declare the extension.
    let mut undeclared = call_params("counted", args("a", 0), false);
    undeclared["idempotencyKey"] = json!("k-sync");
    for params in [
        keyed("counted_sync", args("a", 0), "k-sync"),
        keyed("counted_sync", args("a", 0), "k-sync"),
        undeclared.clone(),
        undeclared,
    ] {
        let reply = call(&s, params).await;
        assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
        assert_eq!(reply["result"]["content"][0]["text"], "done a", "{reply}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 4, "each synchronous call ran");
    // The key named no task: a task call with it now creates one.
    task_of(&call(&s, keyed("counted", args("a", 0), "k-sync")).await);
    assert_eq!(runs.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn a_deadline_promoted_call_honours_its_key() {
    let (s, runs) = server().await;
    // Promoted at the deadline: the repeat, before and after, finds the same task.
    let slow_call = keyed("counted_after", args("slow", 1500), "k-after");
    let (id, _) = task_of(&call(&s, slow_call.clone()).await);
    assert_eq!(task_of(&call(&s, slow_call.clone()).await).0, id);
    s.poll_terminal(&id).await;
    let (again, status) = task_of(&call(&s, slow_call).await);
    assert_eq!(
        (again.as_str(), status.as_str()),
        (id.as_str(), "completed")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Answered in time: the first call answers synchronously, and its record (written
    // up front) is what a repeat finds, completed.
    let quick = keyed("counted_after", args("quick", 0), "k-quick");
    let first = call(&s, quick.clone()).await;
    assert_eq!(first["result"]["resultType"], "complete", "{first}");
    let repeat = call(&s, quick).await;
    let (quick_id, _) = task_of(&repeat);
    let done = s.poll_terminal(&quick_id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "done quick", "{done}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // Other arguments: refused before anything runs.
    let other = call(&s, keyed("counted_after", args("other", 0), "k-quick")).await;
    assert_invalid(&other, CONFLICT);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// MCP 2025-11-25: `params.task` with a key.
fn keyed_2025(name: &str, arguments: Value, key: &str) -> Value {
    json!({ "name": name, "arguments": arguments, "task": {}, "idempotencyKey": key })
}

/// An MCP 2025-11-25 session over HTTP whose every message bears `Bearer <who>`: the
/// session's tasks belong to that principal.
struct Session {
    client: reqwest::Client,
    url: String,
    bearer: String,
    id: String,
    next_id: AtomicI64,
}

impl Session {
    async fn open(s: &TestServer, who: &str) -> Session {
        let mut session = Session {
            client: s.client.clone(),
            url: s.url.clone(),
            bearer: format!("Bearer {who}"),
            id: String::new(),
            next_id: AtomicI64::new(1),
        };
        let opened = session.post(request(0, "initialize", init_params())).await;
        assert_eq!(opened.status, 200, "initialize: {}", opened.text);
        session.id = opened
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("Mcp-Session-Id")
            .to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(session.post(initialized).await.status, 202);
        session
    }

    async fn post(&self, message: Value) -> Reply {
        let mut post = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", &self.bearer);
        if !self.id.is_empty() {
            post = post
                .header("mcp-session-id", self.id.as_str())
                .header("mcp-protocol-version", LEGACY_VERSION);
        }
        let sent = tokio::time::timeout(WAIT, post.body(message.to_string()).send())
            .await
            .expect("in time")
            .expect("POST");
        Reply::read(sent).await
    }

    async fn rpc(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let reply = self.post(request(id, method, params)).await;
        response_in(&reply, &json!(id))
    }
}

async fn session_as(s: &TestServer, who: &str) -> Session {
    Session::open(s, who).await
}

fn task_2025(response: &Value) -> (String, String) {
    let task = &response["result"]["task"];
    (
        task["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a CreateTaskResult: {response}"))
            .to_owned(),
        task["status"].as_str().expect("status").to_owned(),
    )
}

#[tokio::test]
async fn sessions_of_2025_honour_keys() {
    let (s, runs) = server().await;
    let alice = session_as(&s, "alice").await;
    let first = alice
        .rpc("tools/call", keyed_2025("counted", args("a", 300), "k-25"))
        .await;
    let (id, status) = task_2025(&first);
    assert_eq!(status, "working");
    let again = alice
        .rpc("tools/call", keyed_2025("counted", args("a", 300), "k-25"))
        .await;
    assert_eq!(task_2025(&again).0, id);
    // Another session of the same principal: the same owner, the same task.
    let alice_too = session_as(&s, "alice").await;
    let other_session = alice_too
        .rpc("tools/call", keyed_2025("counted", args("a", 300), "k-25"))
        .await;
    assert_eq!(task_2025(&other_session).0, id);
    // Another principal: its own task.
    let bob = session_as(&s, "bob").await;
    let bobs = bob
        .rpc("tools/call", keyed_2025("counted", args("a", 300), "k-25"))
        .await;
    assert_ne!(task_2025(&bobs).0, id);
    // Other arguments.
    let other = alice
        .rpc("tools/call", keyed_2025("counted", args("b", 300), "k-25"))
        .await;
    assert_invalid(&other, CONFLICT);
    // Completed: the repeat shows it completed.
    tokio::time::timeout(WAIT, async {
        loop {
            let got = alice.rpc("tasks/get", json!({ "taskId": id })).await;
            if got["result"]["status"] == "completed" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    })
    .await
    .expect("completes");
    let after = alice
        .rpc("tools/call", keyed_2025("counted", args("a", 300), "k-25"))
        .await;
    assert_eq!(task_2025(&after), (id, "completed".to_owned()));
    // `_meta.idempotencyKey`, bad keys, and both places differing.
    let mut in_meta = json!({ "name": "counted", "arguments": args("m", 0), "task": {},
        "_meta": { "idempotencyKey": "k-meta" } });
    let (meta_id, _) = task_2025(&alice.rpc("tools/call", in_meta.clone()).await);
    assert_eq!(
        task_2025(&alice.rpc("tools/call", in_meta.clone()).await).0,
        meta_id
    );
    in_meta["idempotencyKey"] = json!("k-not-meta");
    assert_invalid(&alice.rpc("tools/call", in_meta).await, "differ");
    for key in [json!(""), json!(1), json!("k".repeat(256))] {
        let mut params = keyed_2025("counted", args("a", 0), "x");
        params["idempotencyKey"] = key.clone();
        let reply = alice.rpc("tools/call", params).await;
        assert_eq!(
            reply["error"]["code"].as_i64(),
            Some(error_codes::INVALID_PARAMS),
            "key {key}: {reply}"
        );
    }
    // Without `params.task` the call answers now, the key unused.
    let sync = alice
        .rpc(
            "tools/call",
            json!({ "name": "counted", "arguments": args("s", 0), "idempotencyKey": "k-25" }),
        )
        .await;
    assert_eq!(sync["result"]["content"][0]["text"], "done s", "{sync}");
    // counted ran for alice's k-25, bob's k-25, k-meta and the synchronous call.
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}

/// Two demo processes on `store`; the same keyed call sent to both at once: one task.
async fn one_task_across_two_instances(store: &NodeStore) {
    let (args_a, args_b) = (store.args(0), store.args(1));
    let (a, b) = tokio::join!(
        Node::start(Path::new(DEMO), "A", &args_a),
        Node::start(Path::new(DEMO), "B", &args_b),
    );
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .expect("HTTP client");
    for round in 0..5 {
        let key = format!("k-nodes-{round}");
        let params = keyed("slow_compute", slow(1.0, &key), key.as_str());
        let to_a = request(1, "tools/call", params.clone());
        let to_b = request(2, "tools/call", params);
        let (on_a, on_b) = tokio::join!(
            post_request(&client, &a.url, None, "tools/call to A", to_a),
            post_request(&client, &b.url, None, "tools/call to B", to_b),
        );
        let (id_a, _) = task_of(&on_a.body);
        let (id_b, _) = task_of(&on_b.body);
        assert_eq!(id_a, id_b, "one task for one key, round {round}");
        let got = post_request(
            &client,
            &b.url,
            None,
            "tasks/get",
            request(3, "tasks/get", task_params(&id_a, true)),
        )
        .await;
        assert_eq!(got.body["result"]["taskId"], id_a.as_str(), "{}", got.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_task_per_key_across_instances_on_postgres() {
    if let Some(store) = NodeStore::postgres("idempotency_nodes").await {
        one_task_across_two_instances(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_task_per_key_across_instances_on_redis() {
    if let Some(store) = NodeStore::redis("idempotency_nodes").await {
        one_task_across_two_instances(&store).await;
    }
}

/// The names of the listed `tools` flagged `_meta["rs.mcp-tasks/idempotency"]: {}`.
fn flagged(tools: &Value) -> BTreeSet<String> {
    tools
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["_meta"]["rs.mcp-tasks/idempotency"] == json!({}))
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// `tools/list` flags the tools whose keyed calls are deduplicated (each makes a task or
/// writes its record up front), so a client may retry them after a lost answer: in
/// 2026-07-28 not a synchronous tool nor an optional one whose selector may answer in
/// the request; in 2025-11-25 (where a keyed call asks for a task) every tool that
/// allows tasks.
#[tokio::test]
async fn tools_list_flags_the_tools_whose_keyed_calls_are_deduplicated() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tools = vec![
        counted("counted", TaskPolicy::Optional, &runs),
        counted("counted_required", TaskPolicy::Required, &runs),
        counted("counted_sync", TaskPolicy::Synchronous, &runs),
        counted("counted_after", TaskPolicy::After(DEADLINE), &runs),
        counted("counted_picky", TaskPolicy::Optional, &runs).select_task(|a| {
            a.get("ms")
                .and_then(Value::as_u64)
                .is_some_and(|ms| ms > 100)
        }),
    ];
    let s = TestServer::start_with(tools, RuntimeConfig::default(), HttpConfig::default()).await;
    let names =
        |names: &[&str]| -> BTreeSet<String> { names.iter().map(|n| (*n).to_owned()).collect() };
    let listed = s
        .post(
            &request(s.id(), "tools/list", json!({ "_meta": meta(true) })),
            &[],
        )
        .await
        .body;
    assert_eq!(
        flagged(&listed["result"]["tools"]),
        names(&["counted", "counted_after", "counted_required"]),
        "{listed}"
    );
    let session = session_as(&s, "alice").await;
    let listed = session.rpc("tools/list", json!({})).await;
    assert_eq!(
        flagged(&listed["result"]["tools"]),
        names(&[
            "counted",
            "counted_after",
            "counted_picky",
            "counted_required"
        ]),
        "{listed}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
