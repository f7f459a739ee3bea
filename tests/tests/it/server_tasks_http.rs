//! The tasks extension on the wire (MCP 2026-07-28, Streamable HTTP): the checkable
//! MUST/SHOULD rules of the extension (reference Part D.2), one test per rule or close
//! group, against the demo server in-process.

use std::time::Duration;

use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::meta::RELATED_TASK;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, TaskPolicy, ToolContext, ToolDef, ToolError};
use mcp_tests::server_harness::{
    TASKS_EXTENSION, TestServer, WAIT, accept, call_params, demo_tools, is_iso_timestamp, meta,
    request, task_params,
};
use serde_json::{Value, json};

/// The Task fields every CreateTaskResult and DetailedTask carries (D.2.6, D.2.7).
fn assert_task_fields(task: &Value) {
    let obj = task.as_object().expect("task is an object");
    assert!(
        obj["taskId"].as_str().is_some_and(|s| !s.is_empty()),
        "taskId: {task}"
    );
    assert!(obj["status"].is_string(), "status: {task}");
    for at in ["createdAt", "lastUpdatedAt"] {
        assert!(
            obj.get(at)
                .and_then(Value::as_str)
                .is_some_and(is_iso_timestamp),
            "{at} is not an ISO 8601 timestamp: {task}"
        );
    }
    let ttl = obj.get("ttlMs").expect("ttlMs is required (nullable)");
    assert!(
        ttl.is_null() || ttl.as_u64().is_some_and(|t| t > 0),
        "ttlMs must be null or a positive integer: {task}"
    );
    if let Some(poll) = obj.get("pollIntervalMs") {
        assert!(
            poll.as_u64().is_some_and(|p| p > 0),
            "pollIntervalMs must be a positive integer: {task}"
        );
    }
    for legacy in ["ttl", "pollInterval", "task", "requestState"] {
        assert!(!obj.contains_key(legacy), "unexpected {legacy:?}: {task}");
    }
}

/// Only the members a status allows (D.2.9).
fn assert_detailed(task: &Value, status: &str) {
    assert_task_fields(task);
    assert_eq!(task["resultType"], "complete", "{task}");
    assert_eq!(task["status"], status, "{task}");
    let has = |k: &str| task.get(k).is_some();
    match status {
        "working" | "cancelled" => {
            assert!(
                !has("result") && !has("error") && !has("inputRequests"),
                "{task}"
            )
        }
        "input_required" => {
            let requests = task["inputRequests"]
                .as_object()
                .expect("inputRequests object");
            assert!(!requests.is_empty(), "{task}");
            for (key, req) in requests {
                assert!(
                    req["method"].as_str().is_some_and(|m| !m.is_empty()),
                    "inputRequests.{key} has no method: {task}"
                );
            }
            assert!(!has("result") && !has("error"), "{task}");
        }
        "completed" => {
            assert!(task["result"].is_object(), "{task}");
            assert!(!has("error") && !has("inputRequests"), "{task}");
        }
        "failed" => {
            assert!(task["error"]["code"].is_i64(), "{task}");
            assert!(task["error"]["message"].is_string(), "{task}");
            assert!(!has("result") && !has("inputRequests"), "{task}");
        }
        other => panic!("unknown status {other}"),
    }
}

/// An empty acknowledgement: `resultType: "complete"` and no task fields (D.2.13, D.2.15).
fn assert_empty_ack(result: &Value) {
    assert_eq!(result["resultType"], "complete", "{result}");
    let extra: Vec<&String> = result
        .as_object()
        .expect("object")
        .keys()
        .filter(|k| *k != "resultType" && *k != "_meta")
        .collect();
    assert!(extra.is_empty(), "the ack carries {extra:?}: {result}");
}

fn input_keys(task: &Value) -> Vec<String> {
    let mut keys: Vec<String> = task["inputRequests"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result}"))
        .to_owned()
}

/// D.2.1
#[tokio::test]
async fn discover_advertises_the_extension_and_no_legacy_tasks_capability() {
    let s = TestServer::start().await;
    let reply = s
        .rpc("server/discover", json!({ "_meta": meta(false) }))
        .await;
    let result = reply.result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["capabilities"]["extensions"][TASKS_EXTENSION],
        json!({})
    );
    assert!(result["capabilities"].get("tasks").is_none(), "{result}");
    assert!(
        result["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28"))),
        "{result}"
    );
}

/// D.2.2 (and no `execution.taskSupport` on the wire any more)
#[tokio::test]
async fn without_the_extension_slow_compute_falls_back_to_a_synchronous_result() {
    let s = TestServer::start().await;
    let reply = s.call("slow_compute", json!({"seconds": 0.1}), false).await;
    let result = reply.result();
    assert_eq!(result["resultType"], "complete", "{result}");
    assert!(
        result["content"].as_array().is_some_and(|c| !c.is_empty()),
        "{result}"
    );
    for key in ["taskId", "task", "status"] {
        assert!(result.get(key).is_none(), "{key}: {result}");
    }

    let tools = s.rpc("tools/list", json!({ "_meta": meta(true) })).await;
    for tool in tools.result()["tools"].as_array().expect("tools") {
        assert!(tool.get("execution").is_none(), "{tool}");
    }
}

/// D.2.3
#[tokio::test]
async fn a_task_only_tool_without_the_extension_is_32021_with_data_and_http_400() {
    let s = TestServer::start().await;
    for tool in ["failing_job", "test_tool_with_task"] {
        let reply = s.call(tool, json!({}), false).await;
        assert_eq!(reply.status, 400, "{tool}: {}", reply.text);
        assert_eq!(
            reply.error_code(),
            error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        );
        assert_eq!(
            reply.error()["data"]["requiredCapabilities"]["extensions"][TASKS_EXTENSION],
            json!({}),
            "{}",
            reply.text
        );
    }
}

/// D.2.4
#[tokio::test]
async fn task_methods_without_the_extension_are_32021() {
    let s = TestServer::start().await;
    let id = s.create_task("slow_compute", json!({"seconds": 30})).await;
    let no_meta = json!({ "taskId": id });
    let undeclared = task_params(&id, false);
    for params in [no_meta, undeclared] {
        for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
            let mut params = params.clone();
            if method == "tasks/update" {
                params["inputResponses"] = json!({});
            }
            let reply = s.rpc(method, params).await;
            assert_eq!(reply.status, 400, "{method}: {}", reply.text);
            assert_eq!(
                reply.error_code(),
                error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                "{method}"
            );
            assert!(
                reply.error()["data"]["requiredCapabilities"]["extensions"][TASKS_EXTENSION]
                    .is_object(),
                "{method}: {}",
                reply.text
            );
        }
    }
    // The refused cancel did nothing.
    assert_detailed(s.get_task(&id).await.result(), "working");
    assert_empty_ack(s.cancel_task(&id).await.result());
}

/// D.2.5 (and D.2.2: no memory of an earlier declaration)
#[tokio::test]
async fn the_declaration_in_one_requests_meta_is_what_counts() {
    let s = TestServer::start().await;
    let args = json!({"seconds": 0.2});
    let before = s.call("slow_compute", args.clone(), false).await;
    assert_eq!(before.result()["resultType"], "complete");
    let during = s.call("slow_compute", args.clone(), true).await;
    assert_eq!(during.result()["resultType"], "task", "{}", during.text);
    let after = s.call("slow_compute", args, false).await;
    assert_eq!(
        after.result()["resultType"],
        "complete",
        "a declaration must not carry over: {}",
        after.text
    );
    assert!(after.result().get("taskId").is_none());
}

/// D.2.6, D.2.7, D.2.18 (no `requestState` on the envelope)
#[tokio::test]
async fn create_task_result_is_flat_with_renamed_duration_fields() {
    let s = TestServer::start().await;
    let reply = s.call("slow_compute", json!({"seconds": 1}), true).await;
    let result = reply.result();
    assert_eq!(result["resultType"], "task");
    assert_task_fields(result);
    for key in ["result", "error", "inputRequests", "content"] {
        assert!(result.get(key).is_none(), "{key}: {result}");
    }
    assert!(
        matches!(result["status"].as_str(), Some("working" | "completed")),
        "{result}"
    );
    // No other result carries resultType "task".
    let id = result["taskId"].as_str().expect("taskId");
    let got = s.get_task(id).await;
    assert_eq!(got.result()["resultType"], "complete");
    let greet = s.call("greet", json!({"name": "Ann"}), true).await;
    assert_eq!(greet.result()["resultType"], "complete");
}

/// D.2.8
#[tokio::test]
async fn tasks_get_right_after_create_resolves() {
    let s = TestServer::start().await;
    for _ in 0..10 {
        let id = s
            .create_task("slow_compute", json!({"seconds": 0.05}))
            .await;
        let got = s.get_task(&id).await;
        assert_eq!(got.result()["taskId"], id.as_str(), "{}", got.text);
    }
}

/// D.2.9 working, D.2.15 (a running task ends cancelled; cancel is idempotent)
#[tokio::test]
async fn a_running_task_reads_working_then_cancel_acks_and_it_ends_cancelled() {
    let s = TestServer::start().await;
    let id = s.create_task("slow_compute", json!({"seconds": 30})).await;
    assert_detailed(s.get_task(&id).await.result(), "working");
    assert_empty_ack(s.cancel_task(&id).await.result());
    let cancelled = s.poll_terminal(&id).await;
    assert_detailed(&cancelled, "cancelled");
    // Cancelling a terminal task: the same empty ack, nothing changes.
    assert_empty_ack(s.cancel_task(&id).await.result());
    assert_eq!(s.get_task(&id).await.result()["status"], "cancelled");
}

/// D.2.15: cancel of a completed task acks and leaves it completed.
#[tokio::test]
async fn cancel_of_a_completed_task_acks_and_changes_nothing() {
    let s = TestServer::start().await;
    let id = s
        .create_task("slow_compute", json!({"seconds": 0.05}))
        .await;
    let done = s.poll_terminal(&id).await;
    assert_detailed(&done, "completed");
    assert_empty_ack(s.cancel_task(&id).await.result());
    let after = s.get_task(&id).await;
    assert_eq!(after.result()["status"], "completed");
    assert_eq!(after.result()["result"], done["result"]);
}

/// D.2.9 input_required, D.2.13 (ack, unknown keys ignored), D.2.10
#[tokio::test]
async fn an_input_required_task_lists_its_requests_and_tasks_update_resumes_it() {
    let s = TestServer::start().await;
    let id = s
        .create_task("confirm_delete", json!({"filename": "a.txt"}))
        .await;
    let waiting = s.poll_status(&id, "input_required").await;
    assert_detailed(&waiting, "input_required");
    let keys = input_keys(&waiting);
    assert_eq!(keys.len(), 1, "{waiting}");
    let request = &waiting["inputRequests"][&keys[0]];
    assert_eq!(request["method"], "elicitation/create", "{waiting}");
    assert!(
        request["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("a.txt")),
        "{waiting}"
    );

    // An unknown key is acknowledged and ignored.
    let ack = s
        .update_task(&id, json!({"unknown-key": {"ignored": true}}))
        .await;
    assert_empty_ack(ack.result());
    let still = s.get_task(&id).await;
    assert_detailed(still.result(), "input_required");
    assert_eq!(input_keys(still.result()), keys);

    let ack = s
        .update_task(&id, json!({ &keys[0]: accept(json!({"confirm": true})) }))
        .await;
    assert_empty_ack(ack.result());
    let done = s.poll_terminal(&id).await;
    assert_detailed(&done, "completed");
    assert!(text_of(&done["result"]).contains("Deleted a.txt"), "{done}");
}

/// D.2.15: a task waiting for input can be cancelled too.
#[tokio::test]
async fn a_task_waiting_for_input_can_be_cancelled() {
    let s = TestServer::start().await;
    let id = s
        .create_task("confirm_delete", json!({"filename": "b.txt"}))
        .await;
    s.poll_status(&id, "input_required").await;
    assert_empty_ack(s.cancel_task(&id).await.result());
    assert_detailed(&s.poll_terminal(&id).await, "cancelled");
}

/// D.2.13 partial answers, D.2.14 (distinct keys; an answered key is not asked again)
#[tokio::test]
async fn partial_answers_leave_the_rest_pending() {
    let s = TestServer::start().await;
    let id = s.create_task("multi_input", json!({})).await;
    let waiting = s
        .poll_task(&id, WAIT, |t| {
            t["inputRequests"].as_object().is_some_and(|m| m.len() == 2)
        })
        .await;
    assert_detailed(&waiting, "input_required");
    let keys = input_keys(&waiting);
    assert_ne!(keys[0], keys[1]);

    let ack = s
        .update_task(&id, json!({ &keys[0]: accept(json!({"name": "Ann"})) }))
        .await;
    assert_empty_ack(ack.result());
    let partial = s.poll_task(&id, WAIT, |t| input_keys(t).len() != 2).await;
    assert_detailed(&partial, "input_required");
    assert_eq!(input_keys(&partial), vec![keys[1].clone()], "{partial}");

    // Answering the answered key again is ignored.
    let ack = s
        .update_task(&id, json!({ &keys[0]: accept(json!({"name": "Mallory"})) }))
        .await;
    assert_empty_ack(ack.result());
    assert_eq!(
        input_keys(s.get_task(&id).await.result()),
        vec![keys[1].clone()]
    );

    s.update_task(&id, json!({ &keys[1]: accept(json!({"name": "Bob"})) }))
        .await;
    let done = s.poll_terminal(&id).await;
    assert_detailed(&done, "completed");
    // Which answer fed which question depends on key order; the ignored one never did.
    let text = text_of(&done["result"]);
    assert!(text.contains("Ann") && text.contains("Bob"), "{text}");
    assert!(!text.contains("Mallory"), "{text}");
}

/// A tool that asks one question, then (after the answer) a second one.
fn two_rounds_tool() -> ToolDef {
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    fn question(
        message: &str,
    ) -> Result<mcp_tasks_protocol::v2026::ElicitRequestParams, ToolError> {
        let params = json!({"mode": "form", "message": message,
            "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}});
        serde_json::from_value(params)
            .map(mcp_tasks_protocol::v2026::ElicitRequestParams::Form)
            .map_err(|e| ToolError::rpc(error_codes::INTERNAL_ERROR, e.to_string()))
    }
    fn answer(a: &mcp_tasks_protocol::types::ElicitResult) -> String {
        match a.content.as_ref().and_then(|c| c.get("answer")) {
            Some(mcp_tasks_protocol::types::ElicitValue::String(s)) => s.clone(),
            _ => "-".into(),
        }
    }
    ToolDef::new(
        "two_rounds",
        TaskPolicy::Required,
        |ctx: ToolContext, _: NoArgs| async move {
            let first = ctx.elicit(question("first?")?).await?;
            let second = ctx.elicit(question("second?")?).await?;
            Ok(mcp_tasks_protocol::v2026::CallToolResult::new(vec![
                mcp_tasks_protocol::types::ContentBlock::Text(
                    mcp_tasks_protocol::types::TextContent::new(format!(
                        "{} then {}",
                        answer(&first),
                        answer(&second)
                    )),
                ),
            ]))
        },
    )
    .expect("valid tool")
}

/// D.2.14: a second elicitation in the same task never reuses the first one's key, and
/// a late answer under the old key does not answer the new question.
#[tokio::test]
async fn a_second_question_in_one_task_gets_a_fresh_key() {
    let mut tools = demo_tools();
    tools.push(two_rounds_tool());
    let s = TestServer::start_with(tools, RuntimeConfig::default(), HttpConfig::default()).await;
    let id = s.create_task("two_rounds", json!({})).await;
    let first = s.poll_status(&id, "input_required").await;
    let first_keys = input_keys(&first);
    assert_eq!(first_keys.len(), 1, "{first}");
    s.update_task(
        &id,
        json!({ &first_keys[0]: accept(json!({"answer": "one"})) }),
    )
    .await;
    let second = s
        .poll_task(&id, WAIT, |t| {
            t["status"] == "input_required" && input_keys(t) != first_keys
        })
        .await;
    let second_keys = input_keys(&second);
    assert_eq!(second_keys.len(), 1, "{second}");
    assert_ne!(second_keys, first_keys, "a key was reused: {second}");
    assert_eq!(
        second["inputRequests"][&second_keys[0]]["params"]["message"],
        "second?"
    );

    // The old key again: ignored, the second question stays open.
    s.update_task(
        &id,
        json!({ &first_keys[0]: accept(json!({"answer": "stale"})) }),
    )
    .await;
    assert_eq!(input_keys(s.get_task(&id).await.result()), second_keys);

    s.update_task(
        &id,
        json!({ &second_keys[0]: accept(json!({"answer": "two"})) }),
    )
    .await;
    let done = s.poll_terminal(&id).await;
    assert_detailed(&done, "completed");
    assert_eq!(text_of(&done["result"]), "one then two");
}

/// D.2.9 completed, D.2.21 (no related-task `_meta` in the inlined result), D.2.22
#[tokio::test]
async fn a_completed_task_inlines_its_result_and_stays_retrievable() {
    let s = TestServer::start().await;
    let id = s
        .create_task("slow_compute", json!({"seconds": 0.2, "label": "sum"}))
        .await;
    let done = s.poll_terminal(&id).await;
    assert_detailed(&done, "completed");
    let result = &done["result"];
    assert!(text_of(result).starts_with("sum: done"), "{result}");
    assert!(result.get("isError").is_none_or(|e| e == false), "{result}");
    assert!(result["_meta"].get(RELATED_TASK).is_none(), "{result}");
    assert!(done["_meta"].get(RELATED_TASK).is_none(), "{done}");

    // The conformance suite's check: still there 500 ms after it ended.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let later = s.get_task(&id).await;
    assert_detailed(later.result(), "completed");
    assert_eq!(later.result()["result"], done["result"]);
}

/// D.2.12: a tool error (isError) completes; a JSON-RPC error fails, with a statusMessage.
#[tokio::test]
async fn tool_errors_complete_and_protocol_errors_fail() {
    let s = TestServer::start().await;
    let tool_error = s.create_task("failing_job", json!({})).await;
    let protocol_error = s.create_task("protocol_error_job", json!({})).await;

    let failed = s.poll_terminal(&protocol_error).await;
    assert_detailed(&failed, "failed");
    assert_eq!(failed["error"]["code"], error_codes::INTERNAL_ERROR);
    assert!(
        failed["statusMessage"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "failed SHOULD carry a statusMessage: {failed}"
    );

    let completed = s.poll_terminal(&tool_error).await;
    assert_detailed(&completed, "completed");
    assert_eq!(completed["result"]["isError"], true, "{completed}");
}

/// D.2.11 (a well-formed random id and a malformed one)
#[tokio::test]
async fn unknown_task_ids_are_32602_on_get_update_and_cancel() {
    let s = TestServer::start().await;
    for id in ["0123456789abcdef0123456789abcdef", "no-such-task", ""] {
        let get = s.get_task(id).await;
        let update = s.update_task(id, json!({"k": accept(json!({}))})).await;
        let cancel = s.cancel_task(id).await;
        for (method, reply) in [("get", &get), ("update", &update), ("cancel", &cancel)] {
            assert_eq!(
                reply.error_code(),
                error_codes::INVALID_PARAMS,
                "tasks/{method} {id:?}: {}",
                reply.text
            );
        }
    }
}

/// D.2.16
#[tokio::test]
async fn tasks_result_and_tasks_list_are_method_not_found() {
    let s = TestServer::start().await;
    let id = s
        .create_task("slow_compute", json!({"seconds": 0.05}))
        .await;
    for (method, params) in [
        ("tasks/result", task_params(&id, true)),
        ("tasks/result", task_params(&id, false)),
        ("tasks/list", json!({ "_meta": meta(true) })),
        ("tasks/list", json!({})),
    ] {
        let reply = s.rpc(method, params).await;
        assert_eq!(
            reply.error_code(),
            error_codes::METHOD_NOT_FOUND,
            "{method}: {}",
            reply.text
        );
    }
    let reply = s
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/list"}),
            &[],
        )
        .await;
    assert_eq!(reply.error_code(), error_codes::METHOD_NOT_FOUND);
}

/// D.2.17
#[tokio::test]
async fn a_legacy_task_param_is_ignored() {
    let s = TestServer::start().await;
    let legacy = json!({"ttl": 60000, "pollInterval": 1000});

    let mut greet = call_params("greet", json!({"name": "Ann"}), true);
    greet["task"] = legacy.clone();
    let reply = s.rpc("tools/call", greet).await;
    assert_eq!(reply.result()["resultType"], "complete", "{}", reply.text);
    assert_eq!(text_of(reply.result()), "Hello, Ann!");

    let mut slow = call_params("slow_compute", json!({"seconds": 0.05}), false);
    slow["task"] = legacy;
    let reply = s.rpc("tools/call", slow).await;
    assert_eq!(reply.result()["resultType"], "complete", "{}", reply.text);
    assert!(reply.result().get("taskId").is_none());
}

/// D.2.18: MRTR rounds first, then the task; requestState never reaches the task.
#[tokio::test]
async fn test_tool_with_task_asks_synchronously_then_creates_the_task() {
    let s = TestServer::start().await;
    let round1 = s.call("test_tool_with_task", json!({}), true).await;
    let r1 = round1.result();
    assert_eq!(r1["resultType"], "input_required", "{r1}");
    assert!(r1.get("taskId").is_none(), "{r1}");
    let state = r1["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    let requests = r1["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{r1}");
    let (key, req) = requests.iter().next().expect("one request");
    assert_eq!(req["method"], "elicitation/create", "{r1}");

    let mut params = call_params("test_tool_with_task", json!({}), true);
    params["inputResponses"] = json!({ key: accept(json!({"name": "Alice"})) });
    params["requestState"] = json!(state);
    let round2 = s.rpc("tools/call", params).await;
    let created = round2.result();
    assert_eq!(created["resultType"], "task", "{created}");
    assert_task_fields(created);
    assert!(created.get("inputRequests").is_none(), "{created}");

    let id = created["taskId"].as_str().expect("taskId");
    let done = s.poll_terminal(id).await;
    assert_detailed(&done, "completed");
    assert!(text_of(&done["result"]).contains("Alice"), "{done}");
}

/// A `requestState` minted for another tool is refused.
#[tokio::test]
async fn a_request_state_for_another_tool_is_refused() {
    let s = TestServer::start().await;
    let round1 = s
        .call("confirm_delete", json!({"filename": "x"}), false)
        .await;
    let state = round1.result()["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    let mut params = call_params("test_tool_with_task", json!({}), true);
    params["requestState"] = json!(state);
    let reply = s.rpc("tools/call", params).await;
    assert_eq!(
        reply.error_code(),
        error_codes::INVALID_PARAMS,
        "{}",
        reply.text
    );
}

/// D.2.20
#[tokio::test]
async fn routing_headers_must_match_the_body() {
    let s = TestServer::start().await;
    let id = s.create_task("slow_compute", json!({"seconds": 30})).await;

    // Matching headers are accepted.
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let mut params = task_params(&id, true);
        if method == "tasks/update" {
            params["inputResponses"] = json!({});
        }
        let reply = s
            .post(
                &request(s.id(), method, params),
                &[("mcp-method", method), ("mcp-name", &id)],
            )
            .await;
        assert_eq!(reply.status, 200, "{method}: {}", reply.text);
        assert_eq!(reply.result()["resultType"], "complete");
    }
    let greet = s
        .post(
            &request(
                s.id(),
                "tools/call",
                call_params("greet", json!({"name": "Ann"}), false),
            ),
            &[
                ("mcp-method", "tools/call"),
                ("mcp-name", "greet"),
                ("mcp-protocol-version", "2026-07-28"),
            ],
        )
        .await;
    assert_eq!(text_of(greet.result()), "Hello, Ann!");

    // A mismatched Mcp-Name on each task method, and a mismatched Mcp-Method.
    let other = s.create_task("slow_compute", json!({"seconds": 30})).await;
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let mut params = task_params(&other, true);
        if method == "tasks/update" {
            params["inputResponses"] = json!({});
        }
        let reply = s
            .post(
                &request(s.id(), method, params),
                &[("mcp-method", method), ("mcp-name", &id)],
            )
            .await;
        assert_eq!(reply.status, 400, "{method}: {}", reply.text);
        assert_eq!(reply.error_code(), error_codes::HEADER_MISMATCH, "{method}");
    }
    let reply = s
        .post(
            &request(
                s.id(),
                "tools/call",
                call_params("greet", json!({"name": "Ann"}), false),
            ),
            &[("mcp-method", "tasks/get")],
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(reply.error_code(), error_codes::HEADER_MISMATCH);
    let reply = s
        .post(
            &request(
                s.id(),
                "tools/call",
                call_params("greet", json!({"name": "Ann"}), false),
            ),
            &[("mcp-name", "slow_compute")],
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(reply.error_code(), error_codes::HEADER_MISMATCH);

    // The refused tasks/cancel did not reach the task.
    assert_eq!(s.get_task(&other).await.result()["status"], "working");
    // The accepted one did.
    assert_detailed(&s.poll_terminal(&id).await, "cancelled");
    s.cancel_task(&other).await;
}

/// `notifications/cancelled` POSTed separately stops a synchronous call running on
/// another POST of the same caller: that POST ends with 202 and no response (tasks are
/// cancelled with tasks/cancel instead, D.2.15).
#[tokio::test]
async fn notifications_cancelled_over_http_stops_a_synchronous_call() {
    let s = TestServer::start().await;
    let call = request(
        4242,
        "tools/call",
        call_params("slow_compute", json!({"seconds": 30}), false),
    );
    let began = std::time::Instant::now();
    let running = s.post(&call, &[]);
    tokio::pin!(running);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 4242, "reason": "test"}});
    // The call's POST may not have reached the server yet: repeat the (idempotent)
    // cancellation until the call returns.
    let reply = loop {
        tokio::select! {
            reply = &mut running => break reply,
            _ = tokio::time::sleep(Duration::from_millis(50)) => {
                let ack = s.post(&cancel, &[]).await;
                assert_eq!(ack.status, 202, "{}", ack.text);
            }
        }
    };
    assert_eq!(reply.status, 202, "{}", reply.text);
    assert!(reply.text.is_empty(), "no response: {}", reply.text);
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
}
