//! Every result the server sends over HTTP, for every method of both revisions, validates
//! against the official JSON Schema of its revision: MCP 2026-07-28 (core, and the tasks
//! extension's schema for task results) and MCP 2025-11-25.
//!
//! The official schemas are read from `$MCP_SPEC_DIR`, else the repository's `spec/` (see
//! `mcp_tests::schema_check`). Without them the test says so and passes, except under
//! `CI=true`.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use mcp_tests::legacy::init_params;
use mcp_tests::schema_check::{Schema, spec_dir};
use mcp_tests::server_harness::{TestServer, WAIT, accept, meta, request, update_params};
use serde_json::{Value, json};

/// Polls `tasks/get` (2026-07-28) until the task's status is `status`.
async fn poll_2026(s: &TestServer, id: &str, status: &str) -> Value {
    tokio::time::timeout(WAIT, async {
        loop {
            let reply = s.get_task(id).await;
            let result = reply.result().clone();
            if result["status"] == status {
                return result;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("task {id} never {status}"))
}

#[tokio::test]
async fn every_2026_result_validates() {
    let Some(spec) = spec_dir("every_2026_result_validates") else {
        return;
    };
    let mut core = Schema::load(spec.join("core-2026-07-28/schema.json"));
    let mut ext = Schema::load(spec.join("ext-tasks/schema.json"));
    let s = TestServer::start().await;

    let discover = s
        .rpc("server/discover", json!({ "_meta": meta(true) }))
        .await;
    core.check("server/discover", "DiscoverResult", discover.result());
    let tools = s.rpc("tools/list", json!({ "_meta": meta(true) })).await;
    core.check("tools/list", "ListToolsResult", tools.result());

    let greeted = s.call("greet", json!({ "name": "Ada" }), true).await;
    core.check("tools/call (complete)", "CallToolResult", greeted.result());
    let asked = s.call("test_tool_with_task", json!({}), true).await;
    core.check(
        "tools/call (input_required)",
        "InputRequiredResult",
        asked.result(),
    );

    let slow = s.call("slow_compute", json!({ "seconds": 30 }), true).await;
    ext.check("tools/call (task)", "CreateTaskResult", slow.result());
    let slow_id = slow.result()["taskId"].as_str().unwrap().to_owned();
    let working = s.get_task(&slow_id).await;
    ext.check("tasks/get (working)", "GetTaskResult", working.result());
    let cancelled = s.cancel_task(&slow_id).await;
    ext.check("tasks/cancel", "CancelTaskResult", cancelled.result());
    let ended = poll_2026(&s, &slow_id, "cancelled").await;
    ext.check("tasks/get (cancelled)", "GetTaskResult", &ended);

    let confirm = s
        .create_task("confirm_delete", json!({ "filename": "a.txt" }))
        .await;
    let waiting = poll_2026(&s, &confirm, "input_required").await;
    ext.check("tasks/get (input_required)", "GetTaskResult", &waiting);
    let key = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let updated = s
        .rpc(
            "tasks/update",
            update_params(&confirm, json!({ key: accept(json!({ "confirm": true })) })),
        )
        .await;
    ext.check("tasks/update", "UpdateTaskResult", updated.result());
    let done = poll_2026(&s, &confirm, "completed").await;
    ext.check("tasks/get (completed)", "GetTaskResult", &done);

    let failing = s.create_task("protocol_error_job", json!({})).await;
    let failed = poll_2026(&s, &failing, "failed").await;
    ext.check("tasks/get (failed)", "GetTaskResult", &failed);
}

/// A 2025-11-25 session over HTTP, JSON replies only.
struct Session<'a> {
    s: &'a TestServer,
    id: String,
}

impl Session<'_> {
    async fn rpc(&self, method: &str, params: Value) -> Value {
        let reply = self
            .s
            .post(
                &request(self.s.id(), method, params),
                &[
                    ("mcp-session-id", self.id.as_str()),
                    ("accept", "application/json"),
                ],
            )
            .await;
        reply.result().clone()
    }

    async fn poll(&self, id: &str, status: &str) -> Value {
        tokio::time::timeout(WAIT, async {
            loop {
                let task = self.rpc("tasks/get", json!({ "taskId": id })).await;
                if task["status"] == status {
                    return task;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("task {id} never {status}"))
    }
}

#[tokio::test]
async fn every_2025_result_validates() {
    let Some(spec) = spec_dir("every_2025_result_validates") else {
        return;
    };
    let mut core = Schema::load(spec.join("core-2025-11-25/schema.json"));
    let s = TestServer::start().await;

    let init = s
        .post(
            &request(s.id(), "initialize", init_params()),
            &[("accept", "application/json")],
        )
        .await;
    core.check("initialize", "InitializeResult", init.result());
    let id = init.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = Session { s: &s, id };

    let pong = session.rpc("ping", json!({})).await;
    core.check("ping", "EmptyResult", &pong);
    let tools = session.rpc("tools/list", json!({})).await;
    core.check("tools/list", "ListToolsResult", &tools);
    let greeted = session
        .rpc(
            "tools/call",
            json!({ "name": "greet", "arguments": { "name": "Ada" } }),
        )
        .await;
    core.check("tools/call (sync)", "CallToolResult", &greeted);

    let created = session
        .rpc(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 0.1 }, "task": { "ttl": 60000 } }),
        )
        .await;
    core.check("tools/call (task)", "CreateTaskResult", &created);
    let task_id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let got = session.rpc("tasks/get", json!({ "taskId": task_id })).await;
    core.check("tasks/get", "GetTaskResult", &got);
    session.poll(&task_id, "completed").await;
    let payload = session
        .rpc("tasks/result", json!({ "taskId": task_id }))
        .await;
    core.check("tasks/result", "GetTaskPayloadResult", &payload);
    core.check(
        "tasks/result (the tool's result)",
        "CallToolResult",
        &payload,
    );
    let listed = session.rpc("tasks/list", json!({})).await;
    core.check("tasks/list", "ListTasksResult", &listed);

    let long = session
        .rpc(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 30 }, "task": {} }),
        )
        .await;
    let long_id = long["task"]["taskId"].as_str().unwrap().to_owned();
    let cancelled = session
        .rpc("tasks/cancel", json!({ "taskId": long_id }))
        .await;
    core.check("tasks/cancel", "CancelTaskResult", &cancelled);
}
