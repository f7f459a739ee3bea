//! Every tasks type of both revisions, validated against the official schemas and ours,
//! and round-tripped through our types: fixed examples, then property tests.

#![allow(clippy::unwrap_used)]

mod tasks_common;

use mcp_tasks_protocol::tasks as ext;
use mcp_tasks_protocol::v2025 as v25;
use proptest::prelude::*;
use serde_json::{Value, json};
use tasks_common::{Doc, assert_invalid, check, check_typed};

const STATUSES: [&str; 5] = [
    "working",
    "input_required",
    "completed",
    "failed",
    "cancelled",
];

fn task25(status: &str, ttl: Value) -> Value {
    json!({"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":status,
        "statusMessage":"Ça avance — 進行中","createdAt":"2025-11-25T10:30:00Z",
        "lastUpdatedAt":"2025-11-25T10:40:00Z","ttl":ttl,"pollInterval":5000})
}

fn with(mut v: Value, extra: Value) -> Value {
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

// ---------------------------------------------------------------- 2025-11-25

#[test]
fn v2025_task_in_each_status_with_null_and_numeric_ttl() {
    for s in STATUSES {
        for ttl in [Value::Null, json!(60000)] {
            check::<v25::Task>(false, "Task", task25(s, ttl.clone()));
            check::<v25::GetTaskResult>(false, "GetTaskResult", task25(s, ttl.clone()));
            check::<v25::TaskStatusNotificationParams>(
                false,
                "TaskStatusNotificationParams",
                task25(s, ttl),
            );
        }
        check::<v25::TaskStatus>(false, "TaskStatus", json!(s));
    }
    let minimal =
        json!({"taskId":"a","status":"working","createdAt":"x","lastUpdatedAt":"y","ttl":null});
    check::<v25::Task>(false, "Task", minimal.clone());
    // Our schema, like the official one, requires `ttl`.
    let mut no_ttl = minimal;
    no_ttl.as_object_mut().unwrap().remove("ttl");
    assert_invalid(Doc::Official2025, "Task", &no_ttl);
    assert_invalid(Doc::Ours2025, "Task", &no_ttl);
}

#[test]
fn v2025_create_task_result() {
    let plain = json!({"task": task25("working", json!(60000))});
    let r = check::<v25::CreateTaskResult>(false, "CreateTaskResult", plain);
    assert_eq!(r.model_immediate_response(), None);

    let with_meta = json!({"task": task25("working", Value::Null),
        "_meta":{"io.modelcontextprotocol/model-immediate-response":"Working on it."}});
    let r = check::<v25::CreateTaskResult>(false, "CreateTaskResult", with_meta.clone());
    assert_eq!(r.model_immediate_response(), Some("Working on it."));

    let built =
        v25::CreateTaskResult::new(serde_json::from_value(task25("working", Value::Null)).unwrap())
            .with_model_immediate_response("Working on it.");
    assert_eq!(check_typed(false, "CreateTaskResult", &built), with_meta);
}

#[test]
fn v2025_task_results_and_payload() {
    check::<v25::CancelTaskResult>(
        false,
        "CancelTaskResult",
        with(
            task25("cancelled", json!(30000)),
            json!({"_meta":{"k":"v"}}),
        ),
    );
    check::<v25::ListTasksResult>(
        false,
        "ListTasksResult",
        json!({"tasks":[task25("working", json!(30000)), task25("completed", Value::Null)],
            "nextCursor":"next-page-cursor"}),
    );
    check::<v25::ListTasksResult>(false, "ListTasksResult", json!({"tasks":[]}));

    let payload = json!({"content":[{"type":"text","text":"72°F, partly cloudy"}],"isError":false,
        "_meta":{"io.modelcontextprotocol/related-task":{"taskId":"786512e2"}}});
    let p = check::<v25::GetTaskPayloadResult>(false, "GetTaskPayloadResult", payload.clone());
    assert_eq!(p.related_task_id().as_deref(), Some("786512e2"));
    // The payload is also the original result type.
    check::<v25::CallToolResult>(false, "CallToolResult", payload.clone());

    let mut result = payload.as_object().unwrap().clone();
    result.remove("_meta");
    let built = v25::GetTaskPayloadResult::for_task("786512e2", result);
    assert_eq!(check_typed(false, "GetTaskPayloadResult", &built), payload);
}

#[test]
fn v2025_task_notification_and_requests() {
    check::<v25::TaskStatusNotification>(
        false,
        "TaskStatusNotification",
        json!({"jsonrpc":"2.0","method":"notifications/tasks/status","params":task25("completed", json!(60000))}),
    );
    for (method, def) in [
        ("tasks/get", "GetTaskRequest"),
        ("tasks/result", "GetTaskPayloadRequest"),
        ("tasks/cancel", "CancelTaskRequest"),
    ] {
        let v = json!({"jsonrpc":"2.0","id":3,"method":method,"params":{"taskId":"t-1"}});
        match def {
            "GetTaskRequest" => drop(check::<v25::GetTaskRequest>(false, def, v.clone())),
            "GetTaskPayloadRequest" => {
                drop(check::<v25::GetTaskPayloadRequest>(false, def, v.clone()))
            }
            _ => drop(check::<v25::CancelTaskRequest>(false, def, v.clone())),
        }
        check::<v25::ClientRequest>(false, "ClientRequest", v.clone());
        check::<v25::ServerRequest>(false, "ServerRequest", v);
    }
    check::<v25::ListTasksRequest>(
        false,
        "ListTasksRequest",
        json!({"jsonrpc":"2.0","id":"5","method":"tasks/list"}),
    );
    check::<v25::ListTasksRequest>(
        false,
        "ListTasksRequest",
        json!({"jsonrpc":"2.0","id":5,"method":"tasks/list","params":{"cursor":"c-1"}}),
    );
    check::<v25::TaskMetadata>(false, "TaskMetadata", json!({"ttl":60000}));
    check::<v25::TaskMetadata>(false, "TaskMetadata", json!({}));
    check::<v25::RelatedTaskMetadata>(false, "RelatedTaskMetadata", json!({"taskId":"t-1"}));
}

#[test]
fn v2025_capabilities_with_tasks() {
    let server = json!({"tools":{"listChanged":true},"logging":{},
        "tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}});
    let caps = check::<v25::ServerCapabilities>(false, "ServerCapabilities", server);
    assert!(
        caps.supports_task_tool_calls() && caps.supports_task_list() && caps.supports_task_cancel()
    );
    let built = v25::ServerCapabilities {
        tasks: Some(v25::ServerTasksCapability::tool_calls(false)),
        ..Default::default()
    };
    assert_eq!(
        check_typed(false, "ServerCapabilities", &built),
        json!({"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}})
    );

    let client = json!({"roots":{"listChanged":true},"sampling":{"tools":{}},"elicitation":{"form":{},"url":{}},
        "tasks":{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}},"elicitation":{"create":{}}}}});
    let caps = check::<v25::ClientCapabilities>(false, "ClientCapabilities", client.clone());
    assert!(caps.supports_task_sampling() && caps.supports_task_elicitation());
    assert!(!v25::ClientCapabilities::default().supports_task_sampling());

    check::<v25::InitializeRequest>(
        false,
        "InitializeRequest",
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",
            "capabilities":client,"clientInfo":{"name":"c","version":"1.0"}}}),
    );
    check::<v25::InitializeResult>(
        false,
        "InitializeResult",
        json!({"protocolVersion":"2025-11-25","capabilities":{"tasks":{"requests":{"tools":{"call":{}}}}},
            "serverInfo":{"name":"s","version":"0.1"},"instructions":"Long jobs run as tasks."}),
    );
}

#[test]
fn v2025_tools_with_task_support() {
    let base = json!({"name":"get_weather","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}});
    let t = check::<v25::Tool>(false, "Tool", base.clone());
    assert_eq!(t.task_support(), v25::TaskSupport::Forbidden);
    let t = check::<v25::Tool>(false, "Tool", with(base.clone(), json!({"execution":{}})));
    assert_eq!(t.task_support(), v25::TaskSupport::Forbidden);
    for (s, want) in [
        ("forbidden", v25::TaskSupport::Forbidden),
        ("optional", v25::TaskSupport::Optional),
        ("required", v25::TaskSupport::Required),
    ] {
        let t = check::<v25::Tool>(
            false,
            "Tool",
            with(base.clone(), json!({"execution":{"taskSupport":s}})),
        );
        assert_eq!(t.task_support(), want);
    }
    check::<v25::ListToolsResult>(
        false,
        "ListToolsResult",
        json!({"tools":[with(base, json!({"execution":{"taskSupport":"optional"}}))]}),
    );
}

#[test]
fn v2025_task_augmented_requests() {
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"get_weather","arguments":{"city":"New York"},"task":{"ttl":60000},"_meta":{"progressToken":"p"}}});
    let r = check::<v25::CallToolRequest>(false, "CallToolRequest", call.clone());
    assert_eq!(r.params.task.unwrap().ttl, Some(60000));
    check::<v25::ClientRequest>(false, "ClientRequest", call);

    let sampling = json!({"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{
        "messages":[{"role":"user","content":{"type":"text","text":"Hi"}}],"maxTokens":100,"task":{"ttl":1000},
        "_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-9"}}}});
    let r = check::<v25::CreateMessageRequest>(false, "CreateMessageRequest", sampling.clone());
    assert_eq!(
        v25::RelatedTaskMetadata::task_id_in(r.params.meta.as_ref()).as_deref(),
        Some("t-9")
    );
    check::<v25::ServerRequest>(false, "ServerRequest", sampling);

    let form = json!({"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"mode":"form",
        "message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]},
        "task":{}}});
    let r = check::<v25::ElicitRequest>(false, "ElicitRequest", form);
    assert!(r.params.task().is_some());
    let url = json!({"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{"mode":"url",
        "message":"Sign in","elicitationId":"e-1","url":"https://example.com/auth","task":{"ttl":5}}});
    check::<v25::ElicitRequest>(false, "ElicitRequest", url);

    for (def, v) in [
        (
            "CallToolResult",
            json!({"task": task25("working", Value::Null)}),
        ),
        ("CallToolResult", json!({"content":[]})),
    ] {
        let r: v25::CallToolResponse = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap(), v, "{def}");
    }
}

#[test]
fn v2025_related_task_meta_helpers() {
    let mut meta = serde_json::Map::new();
    v25::RelatedTaskMetadata::new("t-1").insert_into(&mut meta);
    assert_eq!(
        Value::Object(meta.clone()),
        json!({"io.modelcontextprotocol/related-task":{"taskId":"t-1"}})
    );
    assert_eq!(
        v25::RelatedTaskMetadata::from_meta(&meta)
            .unwrap()
            .unwrap()
            .task_id,
        "t-1"
    );
    let mut none = None;
    v25::RelatedTaskMetadata::new("t-2").insert_into_option(&mut none);
    assert_eq!(
        v25::RelatedTaskMetadata::task_id_in(none.as_ref()).as_deref(),
        Some("t-2")
    );
    assert!(v25::RelatedTaskMetadata::remove_from(&mut meta));
    assert!(v25::RelatedTaskMetadata::from_meta(&meta).is_none());
}

// ---------------------------------------------------------------- extension

fn task_ext(status: &str, ttl: Value) -> Value {
    json!({"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":status,
        "statusMessage":"Ça avance — 進行中","createdAt":"2026-07-28T10:30:00Z",
        "lastUpdatedAt":"2026-07-28T10:40:00Z","ttlMs":ttl,"pollIntervalMs":5000})
}

fn input_requests() -> Value {
    json!({
        "name":{"method":"elicitation/create","params":{"mode":"form","message":"Please enter your name.",
            "requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}},
        "login":{"method":"elicitation/create","params":{"mode":"url","message":"Sign in",
            "elicitationId":"e-1","url":"https://example.com/login"}},
        "summary":{"method":"sampling/createMessage","params":{"messages":[{"role":"user",
            "content":{"type":"text","text":"Summarise"}}],"maxTokens":200}},
        "roots":{"method":"roots/list"}
    })
}

/// One example per DetailedTask variant, with its official `$defs` name.
fn detailed_examples() -> Vec<(&'static str, Value)> {
    vec![
        ("WorkingTask", task_ext("working", json!(3600000))),
        (
            "InputRequiredTask",
            with(
                task_ext("input_required", Value::Null),
                json!({"inputRequests": input_requests()}),
            ),
        ),
        (
            "CompletedTask",
            with(
                task_ext("completed", json!(1)),
                json!({"result":{"content":[{"type":"text","text":"Hello, Luca!"}],"isError":false}}),
            ),
        ),
        (
            "CompletedTask",
            with(
                task_ext("completed", json!(1)),
                json!({"result":{"content":[{"type":"text","text":"Failed to process request: invalid input"}],"isError":true}}),
            ),
        ),
        (
            "FailedTask",
            with(
                task_ext("failed", Value::Null),
                json!({"error":{"code":-32603,"message":"API rate limit exceeded","data":{"retryAfterMs":1000}}}),
            ),
        ),
        ("CancelledTask", task_ext("cancelled", json!(60000))),
    ]
}

#[test]
fn ext_detailed_task_variants() {
    for (def, v) in detailed_examples() {
        let d = check::<ext::DetailedTask>(true, "DetailedTask", v.clone());
        assert_eq!(d.status().as_str(), v["status"]);
        match &d {
            ext::DetailedTask::Working(_) => drop(check::<ext::WorkingTask>(true, def, v.clone())),
            ext::DetailedTask::InputRequired(_) => {
                drop(check::<ext::InputRequiredTask>(true, def, v.clone()))
            }
            ext::DetailedTask::Completed(_) => {
                drop(check::<ext::CompletedTask>(true, def, v.clone()))
            }
            ext::DetailedTask::Failed(_) => drop(check::<ext::FailedTask>(true, def, v.clone())),
            ext::DetailedTask::Cancelled(_) => {
                drop(check::<ext::CancelledTask>(true, def, v.clone()))
            }
        }
        let mut plain = v.clone();
        for k in ["inputRequests", "result", "error"] {
            plain.as_object_mut().unwrap().remove(k);
        }
        check::<ext::Task>(true, "Task", plain);

        let get = with(v.clone(), json!({"resultType":"complete"}));
        check::<ext::GetTaskResult>(true, "GetTaskResult", get);
        let params = with(
            v,
            json!({"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-1"}}),
        );
        check::<ext::TaskStatusNotificationParams>(
            true,
            "TaskStatusNotificationParams",
            params.clone(),
        );
        check::<ext::TaskStatusNotification>(
            true,
            "TaskStatusNotification",
            json!({"jsonrpc":"2.0","method":"notifications/tasks","params":params}),
        );
    }
    for s in STATUSES {
        check::<ext::TaskStatus>(true, "TaskStatus", json!(s));
    }
}

#[test]
fn ext_schemas_reject_what_we_reject() {
    let no_inputs = task_ext("input_required", Value::Null);
    assert_invalid(Doc::OfficialExt, "DetailedTask", &no_inputs);
    assert_invalid(Doc::OursExt, "DetailedTask", &no_inputs);
    let no_result = task_ext("completed", Value::Null);
    assert_invalid(Doc::OfficialExt, "DetailedTask", &no_result);
    assert_invalid(Doc::OursExt, "DetailedTask", &no_result);
    for def in ["Task", "DetailedTask", "CreateTaskResult", "GetTaskResult"] {
        let mut no_ttl = with(
            task_ext("working", Value::Null),
            json!({"resultType": if def == "CreateTaskResult" { "task" } else { "complete" }}),
        );
        no_ttl.as_object_mut().unwrap().remove("ttlMs");
        assert_invalid(Doc::OfficialExt, def, &no_ttl);
        let ours = match def {
            "Task" => "Task",
            "DetailedTask" => "DetailedTask",
            "CreateTaskResult" => "CreateTaskResult",
            _ => "GetTaskResult",
        };
        assert_invalid(Doc::OursExt, ours, &no_ttl);
    }
    // Both schemas require `resultType` on results, though we read a missing one as "complete".
    assert_invalid(Doc::OfficialExt, "CancelTaskResult", &json!({}));
    assert_invalid(Doc::OursExt, "CancelTaskResult", &json!({}));
    assert_invalid(
        Doc::OfficialExt,
        "GetTaskResult",
        &task_ext("working", Value::Null),
    );
    assert_invalid(
        Doc::OursExt,
        "GetTaskResult",
        &task_ext("working", Value::Null),
    );
    let create_with_complete = with(
        task_ext("working", Value::Null),
        json!({"resultType":"complete"}),
    );
    assert_invalid(Doc::OfficialExt, "CreateTaskResult", &create_with_complete);
    assert_invalid(Doc::OursExt, "CreateTaskResult", &create_with_complete);
}

#[test]
fn ext_create_task_result() {
    for ttl in [Value::Null, json!(60000)] {
        let v = with(task_ext("working", ttl), json!({"resultType":"task"}));
        check::<ext::CreateTaskResult>(true, "CreateTaskResult", v);
    }
    let minimal = json!({"resultType":"task","taskId":"t","status":"working","createdAt":"2026-07-28T10:30:00Z",
        "lastUpdatedAt":"2026-07-28T10:30:00Z","ttlMs":null});
    check::<ext::CreateTaskResult>(true, "CreateTaskResult", minimal);
}

#[test]
fn ext_requests_and_acks() {
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}});
    check::<ext::GetTaskRequest>(
        true,
        "GetTaskRequest",
        json!({"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t-1","_meta":meta}}),
    );
    check::<ext::CancelTaskRequest>(
        true,
        "CancelTaskRequest",
        json!({"jsonrpc":"2.0","id":"9","method":"tasks/cancel","params":{"taskId":"t-1"}}),
    );
    check::<ext::UpdateTaskRequest>(
        true,
        "UpdateTaskRequest",
        json!({"jsonrpc":"2.0","id":6,"method":"tasks/update","params":{"taskId":"t-1","inputResponses":{
            "name":{"action":"accept","content":{"input":"Luca"}},
            "summary":{"role":"assistant","content":{"type":"text","text":"Done"},"model":"m"},
            "roots":{"roots":[{"uri":"file:///tmp","name":"tmp"}]}}}}),
    );
    check::<ext::UpdateTaskResult>(true, "UpdateTaskResult", json!({"resultType":"complete"}));
    check::<ext::CancelTaskResult>(true, "CancelTaskResult", json!({"resultType":"complete"}));
    check::<ext::CancelTaskResult>(
        true,
        "CancelTaskResult",
        json!({"resultType":"complete","_meta":{"k":1}}),
    );
}

#[test]
fn ext_capability_and_subscriptions() {
    check::<ext::TasksExtensionCapability>(true, "TasksExtensionCapability", json!({}));
    check::<ext::TaskSubscriptionNotifications>(
        true,
        "TaskSubscriptionNotifications",
        json!({"taskIds":["a","b"]}),
    );
    check::<ext::TaskSubscriptionNotifications>(true, "TaskSubscriptionNotifications", json!({}));
    check::<ext::TaskSubscriptionAcknowledgedNotifications>(
        true,
        "TaskSubscriptionAcknowledgedNotifications",
        json!({"taskIds":["a"]}),
    );
    let (k, v) = ext::TasksExtensionCapability::entry();
    assert_eq!(k, "io.modelcontextprotocol/tasks");
    check::<ext::TasksExtensionCapability>(true, "TasksExtensionCapability", v);
}

// ---------------------------------------------------------------- property tests

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ._-]{0,24}",
        "\\PC{0,24}",
        Just("日本語 — ünïcødé ✓ 🚀".to_owned()),
    ]
}

fn task_id() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "\\PC{1,40}"
    ]
}

fn timestamp() -> impl Strategy<Value = String> {
    (
        2000u32..2100,
        1u32..=12,
        1u32..=28,
        0u32..24,
        0u32..60,
        0u32..60,
        proptest::option::of(0u32..1000),
    )
        .prop_map(|(y, mo, d, h, mi, s, ms)| match ms {
            Some(ms) => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z"),
            None => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
        })
}

const MAX_SAFE: i64 = 9_007_199_254_740_991;

fn ttl() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![Just(None), (1i64..=MAX_SAFE).prop_map(Some)]
}

fn poll() -> impl Strategy<Value = Option<i64>> {
    proptest::option::of(1i64..=3_600_000)
}

fn status() -> impl Strategy<Value = ext::TaskStatus> {
    proptest::sample::select(ext::TaskStatus::ALL.to_vec())
}

fn tool_result() -> impl Strategy<Value = serde_json::Map<String, Value>> {
    (
        proptest::collection::vec(text(), 0..3),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(texts, is_error)| {
            let content: Vec<Value> = texts
                .into_iter()
                .map(|t| json!({"type":"text","text":t}))
                .collect();
            let mut m = serde_json::Map::new();
            m.insert("content".into(), Value::Array(content));
            if let Some(e) = is_error {
                m.insert("isError".into(), Value::Bool(e));
            }
            m
        })
}

fn error_object() -> impl Strategy<Value = mcp_tasks_protocol::jsonrpc::ErrorObject> {
    (-32768i64..=-32000, text(), proptest::option::of(text())).prop_map(|(code, msg, data)| {
        let e = mcp_tasks_protocol::jsonrpc::ErrorObject::new(code, msg);
        match data {
            Some(d) => e.with_data(json!({"detail": d})),
            None => e,
        }
    })
}

fn input_requests_map() -> impl Strategy<Value = ext::InputRequests> {
    proptest::collection::btree_map("[a-z][a-z0-9_-]{0,8}", (text(), 0u8..3), 1..4).prop_map(|m| {
        let mut out = serde_json::Map::new();
        for (k, (msg, kind)) in m {
            let v = match kind {
                0 => json!({"method":"elicitation/create","params":{"mode":"form","message":msg,
                    "requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}}}}}),
                1 => json!({"method":"sampling/createMessage","params":{"maxTokens":16,
                    "messages":[{"role":"user","content":{"type":"text","text":msg}}]}}),
                _ => json!({"method":"roots/list"}),
            };
            out.insert(k, v);
        }
        serde_json::from_value(Value::Object(out)).unwrap()
    })
}

prop_compose! {
    fn ext_task()(id in task_id(), st in status(), msg in proptest::option::of(text()),
                  created in timestamp(), updated in timestamp(), ttl in ttl(), poll in poll()) -> ext::Task {
        let mut t = ext::Task::new(id, st, created, updated);
        t.status_message = msg;
        t.ttl_ms = ttl;
        t.poll_interval_ms = poll;
        t
    }
}

prop_compose! {
    fn v25_task()(t in ext_task()) -> v25::Task {
        let mut out = v25::Task::new(t.task_id, t.status, t.created_at, t.last_updated_at);
        out.status_message = t.status_message;
        out.ttl = t.ttl_ms;
        out.poll_interval = t.poll_interval_ms;
        out
    }
}

fn detailed_task() -> impl Strategy<Value = ext::DetailedTask> {
    (
        ext_task(),
        input_requests_map(),
        tool_result(),
        error_object(),
    )
        .prop_map(|(t, inputs, result, error)| match t.status {
            ext::TaskStatus::InputRequired => t.input_required(inputs),
            ext::TaskStatus::Completed => t.completed(result),
            ext::TaskStatus::Failed => t.failed(error),
            _ => t.to_detailed().unwrap(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn prop_v2025_task(t in v25_task()) {
        let v = check_typed(false, "Task", &t);
        prop_assert!(v.as_object().unwrap().contains_key("ttl"));
        check_typed(false, "GetTaskResult", &v25::GetTaskResult::from(t.clone()));
        check_typed(false, "CancelTaskResult", &v25::CancelTaskResult::from(t.clone()));
        check_typed(false, "TaskStatusNotificationParams", &v25::TaskStatusNotificationParams::from(t.clone()));
    }

    #[test]
    fn prop_v2025_create_task_result(t in v25_task(), hint in proptest::option::of(text())) {
        let mut r = v25::CreateTaskResult::new(t);
        if let Some(h) = hint {
            r.set_model_immediate_response(h);
        }
        check_typed(false, "CreateTaskResult", &r);
    }

    #[test]
    fn prop_v2025_list_tasks(tasks in proptest::collection::vec(v25_task(), 0..4), next in proptest::option::of(text())) {
        let r = v25::ListTasksResult { tasks, next_cursor: next, meta: None, extra: Default::default() };
        check_typed(false, "ListTasksResult", &r);
    }

    #[test]
    fn prop_ext_task(t in ext_task()) {
        let v = check_typed(true, "Task", &t);
        prop_assert!(v.as_object().unwrap().contains_key("ttlMs"));
        prop_assert!(v.get("ttl").is_none() && v.get("pollInterval").is_none());
        let c = check_typed(true, "CreateTaskResult", &ext::CreateTaskResult::from(t));
        prop_assert_eq!(&c["resultType"], "task");
    }

    #[test]
    fn prop_ext_detailed_task(d in detailed_task()) {
        check_typed(true, "DetailedTask", &d);
        let g = check_typed(true, "GetTaskResult", &ext::GetTaskResult::from(d.clone()));
        prop_assert_eq!(&g["resultType"], "complete");
        check_typed(true, "TaskStatusNotificationParams", &ext::TaskStatusNotificationParams::from(d.clone()));
        prop_assert_eq!(d.to_task().status, d.status());
    }
}
