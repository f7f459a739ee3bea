//! The operator console's re-run (`POST /console/api/tasks/{id}/rerun`) and the
//! activity's tasks created per minute, over HTTP:
//!
//! - a finished `failing_job` task of alice re-run by the operator: a new task of alice
//!   with the same tool and arguments, which runs; alice reads it with `tasks/get`, bob
//!   does not; the new task's view says `rerunOf`, the old one's `rerunAs`; the new
//!   task's log (the history API, and the store) holds the `rs.mcp-tasks.rerun` entry,
//!   written by the operator; the re-run and a refusal are audited with the operator as
//!   actor; without the CSRF header it is 403;
//! - refusals, 409 naming the reason: a working task, a task that asked for input
//!   (`confirm_delete`, the default policy), a tool whose policy is `Never`, a tool no
//!   longer registered (a second server on the same store without it); an unknown task
//!   404; a tool whose policy is `Allowed` re-runs a task that asked;
//! - the activity counts the tasks created in each minute.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks::{MemoryStore, Owner, TaskId, TaskStore};
use mcp_tasks_server::console::ConsoleConfig;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{Rerun, ToolDef};
use mcp_tests::console::{
    self, Got, assert_holds, basic, capture_audit, finished, get_as, ok_as, poll, task_of,
};
use mcp_tests::node_harness::slow;
use mcp_tests::server_harness::{TestServer, WAIT, bearer_principal, demo_tools};
use serde_json::{Value, json};

const USER: &str = "admin";
const PASSWORD: &str = "s3cret:pass";

fn operator() -> String {
    basic(USER, PASSWORD)
}

/// A server on `store` with `tools`, bearer principals and the console.
async fn server_on(store: Arc<dyn TaskStore>, tools: Vec<ToolDef>) -> TestServer {
    let http = HttpConfig {
        principal: Some(bearer_principal()),
        console: Some(ConsoleConfig::basic(USER, PASSWORD).expect("valid credentials")),
        ..HttpConfig::default()
    };
    console::server_on("mcp-tests", store, tools, http).await
}

/// The demo tools, `protocol_error_job` never re-run.
fn tools() -> Vec<ToolDef> {
    demo_tools()
        .into_iter()
        .map(|t| {
            if t.name() == "protocol_error_job" {
                t.rerun(Rerun::Never)
            } else {
                t
            }
        })
        .collect()
}

/// `method path` as the operator, with the CSRF header if `csrf`.
async fn send(s: &TestServer, method: reqwest::Method, path: &str, csrf: bool) -> Got {
    let auth = operator();
    let mut headers = vec![("authorization", auth.as_str())];
    if csrf {
        headers.push(console::CSRF);
    }
    console::send(s, method, path, &headers, None).await
}

async fn ok(s: &TestServer, path: &str) -> Value {
    ok_as(s, &operator(), path).await
}

async fn rerun(s: &TestServer, id: &str) -> Got {
    let path = format!("/console/api/tasks/{id}/rerun");
    send(s, reqwest::Method::POST, &path, true).await
}

/// A 409 whose message holds `why`.
async fn refused(s: &TestServer, id: &str, why: &str) {
    let got = rerun(s, id).await;
    assert_eq!(got.status, 409, "{}", got.text);
    let message = got.body["error"].as_str().unwrap_or_default();
    assert!(message.contains(why), "{why:?} in {}", got.text);
}

/// The console's view of `id` once `done` holds for it.
async fn until(s: &TestServer, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/console/api/tasks/{id}");
    poll(|| ok(s, &path), done).await
}

// Current-thread: the server's tasks run on this thread, under its audit subscriber.
#[tokio::test(flavor = "current_thread")]
async fn a_failed_task_runs_again_for_its_owner() {
    let (audit, _guard) = capture_audit("trace");
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
    let s = server_on(Arc::clone(&store), tools()).await;
    let old = task_of(&s, "alice", "failing_job", json!({})).await;
    let before = until(&s, &old, finished).await;
    assert_eq!(before["rerunnable"], true, "{before}");
    assert_eq!(before["rerunRefused"], Value::Null, "{before}");
    assert_eq!(before["rerunOf"], Value::Null, "{before}");
    assert_eq!(before["rerunAs"], json!([]), "{before}");

    // Without the CSRF header: refused, nothing made.
    let path = format!("/console/api/tasks/{old}/rerun");
    let no_csrf = send(&s, reqwest::Method::POST, &path, false).await;
    assert_eq!(no_csrf.status, 403, "{}", no_csrf.text);

    let got = rerun(&s, &old).await;
    assert_eq!(got.status, 200, "{}", got.text);
    let new = got.body["taskId"].as_str().expect("taskId").to_owned();
    assert_ne!(new, old);
    let detail = ok(&s, &format!("/console/api/tasks/{new}")).await;
    assert_eq!(detail["owner"], "alice", "{detail}");
    assert_eq!(detail["tool"], "failing_job", "{detail}");
    assert_eq!(detail["arguments"], before["arguments"], "{detail}");
    assert_eq!(detail["rerunOf"], old.as_str(), "{detail}");

    // The owner sees it and follows it to its end (it runs); another principal does not.
    let deadline = Instant::now() + WAIT;
    loop {
        let reply = get_as(&s, "alice", &new).await;
        let status = reply.result()["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if ["completed", "failed"].contains(&status.as_str()) {
            break;
        }
        assert_eq!(status, "working", "{}", reply.text);
        assert!(Instant::now() < deadline, "never finished: {}", reply.text);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let bob = get_as(&s, "bob", &new).await;
    assert!(bob.body["error"].is_object(), "{}", bob.text);
    let after = until(&s, &new, finished).await;
    assert_eq!(after["status"], before["status"], "the same end: {after}");
    assert_eq!(after["statusMessage"], before["statusMessage"]);

    // Linked both ways: the old task's view finds its re-run.
    let old_view = ok(&s, &format!("/console/api/tasks/{old}")).await;
    assert_eq!(old_view["rerunAs"], json!([new]), "{old_view}");
    // A re-run of a re-run names its own origin.
    let third = rerun(&s, &new).await;
    assert_eq!(third.status, 200, "{}", third.text);
    let third = third.body["taskId"].as_str().expect("taskId").to_owned();
    let third_view = ok(&s, &format!("/console/api/tasks/{third}")).await;
    assert_eq!(third_view["rerunOf"], new.as_str(), "{third_view}");
    let old_view = ok(&s, &format!("/console/api/tasks/{old}")).await;
    assert_eq!(old_view["rerunAs"], json!([new]), "{old_view}");

    // The new task's log: created, then the link, written by the operator.
    let log = store
        .read_log(
            &Owner::new("alice"),
            &TaskId::from_wire(new.clone()),
            None,
            100,
        )
        .await
        .expect("the new task's log");
    let link = log
        .entries
        .iter()
        .find(|e| e.kind == "rs.mcp-tasks.rerun")
        .unwrap_or_else(|| panic!("no rerun entry in {:?}", log.entries));
    assert_eq!(link.seq, 1, "written with the creation: {link:?}");
    assert_eq!(link.payload.get("rerunOf"), Some(&json!(old)));
    assert_eq!(link.actor.as_str(), "operator");
    // The same, through the console's history (when this build has it).
    let history = send(
        &s,
        reqwest::Method::GET,
        &format!("/console/api/tasks/{new}/history"),
        false,
    )
    .await;
    if history.status == 200 {
        let entries = history.body["entries"].as_array().expect("entries");
        assert!(
            entries
                .iter()
                .any(|e| e["type"] == "rs.mcp-tasks.rerun"
                    && e["payload"]["rerunOf"] == old.as_str()),
            "{}",
            history.text
        );
    }

    // Audited with the operator as actor, the owner as principal, both ids.
    let line = audit.first_with(&["console: rerun", &new]);
    assert_holds(
        &line,
        &[
            "INFO",
            "actor=admin",
            "principal=alice",
            &format!("task_id=\"{old}\""),
            &format!("rerun_as=\"{new}\""),
            "outcome=\"ok\"",
        ],
    );
    s.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn only_finished_tasks_whose_tool_allows_it_run_again() {
    let (audit, _guard) = capture_audit("trace");
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
    let s = server_on(Arc::clone(&store), tools()).await;

    // Unknown: 404.
    let unknown = rerun(&s, "0000").await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);

    // Working: 409, and the view says why.
    let running = task_of(&s, "bob", "slow_compute", slow(60.0, "r")).await;
    refused(&s, &running, "working").await;
    let view = ok(&s, &format!("/console/api/tasks/{running}")).await;
    assert_eq!(view["rerunnable"], false, "{view}");
    assert!(
        view["rerunRefused"]
            .as_str()
            .is_some_and(|r| r.contains("finished")),
        "{view}"
    );

    // A task that asked for input: not while it waits, nor once it ended (the default
    // policy).
    let asking = task_of(&s, "alice", "confirm_delete", json!({ "filename": "x" })).await;
    until(&s, &asking, |t| t["status"] == "input_required").await;
    refused(&s, &asking, "input_required").await;
    let cancel = send(
        &s,
        reqwest::Method::POST,
        &format!("/console/api/tasks/{asking}/cancel"),
        true,
    )
    .await;
    assert_eq!(cancel.status, 200, "{}", cancel.text);
    let ended = until(&s, &asking, |t| t["status"] == "cancelled").await;
    assert_eq!(ended["rerunnable"], false, "{ended}");
    refused(&s, &asking, "asked for input").await;

    // A tool that never allows it.
    let never = task_of(&s, "alice", "protocol_error_job", json!({})).await;
    until(&s, &never, finished).await;
    refused(&s, &never, "does not allow re-runs").await;

    // Another server on the same store: without failing_job, confirm_delete allowed.
    let failing = task_of(&s, "alice", "failing_job", json!({})).await;
    until(&s, &failing, finished).await;
    let other_tools: Vec<ToolDef> = demo_tools()
        .into_iter()
        .filter(|t| t.name() != "failing_job")
        .map(|t| {
            if t.name() == "confirm_delete" {
                t.rerun(Rerun::Allowed)
            } else {
                t
            }
        })
        .collect();
    let other = server_on(Arc::clone(&store), other_tools).await;
    refused(&other, &failing, "no longer registered").await;
    let view = ok(&other, &format!("/console/api/tasks/{failing}")).await;
    assert_eq!(view["rerunnable"], false, "{view}");
    let again = rerun(&other, &asking).await;
    assert_eq!(again.status, 200, "{}", again.text);
    let again = again.body["taskId"].as_str().expect("taskId").to_owned();
    let asks = until(&other, &again, |t| t["status"] == "input_required").await;
    assert_eq!(asks["owner"], "alice", "{asks}");
    assert_eq!(asks["arguments"], json!({ "filename": "x" }), "{asks}");

    // Each refusal is audited with its reason.
    let line = audit.first_with(&["console: rerun", &never]);
    assert_holds(
        &line,
        &[
            "actor=admin",
            "outcome=\"refused\"",
            "does not allow re-runs",
        ],
    );
    other.stop().await;
    s.stop().await;
}

#[tokio::test]
async fn the_activity_counts_tasks_created_per_minute() {
    let s = server_on(Arc::new(MemoryStore::default()), tools()).await;
    let quick = task_of(&s, "alice", "slow_compute", slow(0.01, "q")).await;
    task_of(&s, "alice", "slow_compute", slow(60.0, "w")).await;
    task_of(&s, "bob", "slow_compute", slow(60.0, "b")).await;
    until(&s, &quick, finished).await;
    let activity = ok(&s, "/console/api/activity").await;
    let minutes = activity["minutes"].as_array().expect("minutes");
    let sum = |key: &str| {
        minutes
            .iter()
            .map(|m| m[key].as_u64().unwrap_or_else(|| panic!("{key} in {m}")))
            .sum::<u64>()
    };
    assert_eq!(sum("created"), 3, "{activity}");
    assert_eq!(sum("completed"), 1, "{activity}");
    // Created in the last minute or the one before (a test that runs across a minute).
    let recent: u64 = minutes[13..]
        .iter()
        .map(|m| m["created"].as_u64().unwrap_or_default())
        .sum();
    assert_eq!(recent, 3, "{activity}");
    let durations = activity["durations"].as_array().expect("durations");
    assert_eq!(durations.len(), 1, "{activity}");
    for key in ["p50Ms", "p99Ms"] {
        assert!(durations[0][key].is_i64(), "{key}: {activity}");
    }
    s.stop().await;
}
