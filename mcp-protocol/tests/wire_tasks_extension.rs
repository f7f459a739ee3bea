#![allow(clippy::unwrap_used)]

//! Wire rules of the tasks extension that the schema alone does not pin down.

use mcp_tasks_protocol::tasks::{
    CancelTaskRequest, CancelTaskResult, CreateTaskResult, DetailedTask, GetTaskResult, Task,
    TaskStatus, TaskStatusNotification, UpdateTaskRequest, extensions_declare_tasks,
    missing_capability_error, missing_capability_error_data,
};
use serde_json::{Value, json};

fn task() -> Task {
    let mut t = Task::new(
        "t-1",
        TaskStatus::Working,
        "2026-07-28T10:00:00Z",
        "2026-07-28T10:00:01Z",
    );
    t.poll_interval_ms = Some(500);
    t
}

#[test]
fn create_task_result_is_flat_with_result_type_task() {
    let v = serde_json::to_value(CreateTaskResult::from(task())).unwrap();
    assert_eq!(v["resultType"], "task");
    assert_eq!(v["taskId"], "t-1");
    assert_eq!(v["ttlMs"], Value::Null);
    assert!(
        v.as_object().unwrap().contains_key("ttlMs"),
        "ttlMs must be emitted even when null"
    );
    for k in [
        "task",
        "ttl",
        "pollInterval",
        "result",
        "error",
        "inputRequests",
        "requestState",
    ] {
        assert!(v.get(k).is_none(), "unexpected key {k} in {v}");
    }
    let back: CreateTaskResult = serde_json::from_value(v).unwrap();
    assert_eq!(back, CreateTaskResult::from(task()));
}

#[test]
fn create_task_result_requires_result_type_task() {
    let mut v = serde_json::to_value(CreateTaskResult::from(task())).unwrap();
    v["resultType"] = json!("complete");
    assert!(serde_json::from_value::<CreateTaskResult>(v.clone()).is_err());
    v.as_object_mut().unwrap().remove("resultType");
    assert!(serde_json::from_value::<CreateTaskResult>(v).is_err());
}

#[test]
fn get_task_result_has_result_type_complete() {
    let r = GetTaskResult::from(task().to_detailed().unwrap());
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["resultType"], "complete");
    assert_eq!(v["status"], "working");
    assert_eq!(v["ttlMs"], Value::Null);
    assert_eq!(serde_json::from_value::<GetTaskResult>(v).unwrap(), r);
}

#[test]
fn get_task_result_without_result_type_reads_as_complete() {
    let v =
        json!({"taskId":"a","status":"cancelled","createdAt":"x","lastUpdatedAt":"y","ttlMs":5});
    let r: GetTaskResult = serde_json::from_value(v).unwrap();
    assert_eq!(r.task.status(), TaskStatus::Cancelled);
    assert_eq!(serde_json::to_value(&r).unwrap()["resultType"], "complete");
}

#[test]
fn get_task_result_refuses_result_type_task() {
    let v = json!({"resultType":"task","taskId":"a","status":"working","createdAt":"x","lastUpdatedAt":"y","ttlMs":null});
    assert!(serde_json::from_value::<GetTaskResult>(v).is_err());
}

#[test]
fn input_required_without_input_requests_is_rejected() {
    let v = json!({"taskId":"a","status":"input_required","createdAt":"x","lastUpdatedAt":"y","ttlMs":null});
    let err = serde_json::from_value::<DetailedTask>(v.clone())
        .unwrap_err()
        .to_string();
    assert!(err.contains("inputRequests"), "{err}");
    let mut r = v;
    r["resultType"] = json!("complete");
    assert!(serde_json::from_value::<GetTaskResult>(r).is_err());
}

#[test]
fn completed_without_result_is_rejected() {
    let v =
        json!({"taskId":"a","status":"completed","createdAt":"x","lastUpdatedAt":"y","ttlMs":null});
    let err = serde_json::from_value::<DetailedTask>(v)
        .unwrap_err()
        .to_string();
    assert!(err.contains("result"), "{err}");
}

#[test]
fn failed_without_error_is_rejected() {
    let v =
        json!({"taskId":"a","status":"failed","createdAt":"x","lastUpdatedAt":"y","ttlMs":null});
    assert!(serde_json::from_value::<DetailedTask>(v).is_err());
}

#[test]
fn unknown_status_is_rejected() {
    let v =
        json!({"taskId":"a","status":"paused","createdAt":"x","lastUpdatedAt":"y","ttlMs":null});
    assert!(serde_json::from_value::<DetailedTask>(v).is_err());
}

#[test]
fn acks_are_exactly_result_type_complete() {
    assert_eq!(
        serde_json::to_value(CancelTaskResult::default()).unwrap(),
        json!({"resultType":"complete"})
    );
    let ack: CancelTaskResult = serde_json::from_value(json!({})).unwrap();
    assert_eq!(
        serde_json::to_value(ack).unwrap(),
        json!({"resultType":"complete"})
    );
    assert!(serde_json::from_value::<CancelTaskResult>(json!({"resultType":"task"})).is_err());
    assert_eq!(
        serde_json::to_value(mcp_tasks_protocol::tasks::UpdateTaskResult::default()).unwrap(),
        json!({"resultType":"complete"})
    );
}

#[test]
fn unknown_fields_survive() {
    let v = json!({"resultType":"complete","taskId":"a","status":"completed","createdAt":"x","lastUpdatedAt":"y",
        "ttlMs":1000,"pollIntervalMs":10,"result":{"content":[],"isError":true,"x-extra":1},
        "x-vendor":{"k":[1,2]},"_meta":{"m":true}});
    let r: GetTaskResult = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&r).unwrap(), v);
    let DetailedTask::Completed(c) = &r.task else {
        panic!("not completed")
    };
    assert_eq!(c.extra["x-vendor"], json!({"k":[1,2]}));
    assert_eq!(r.meta.as_ref().unwrap().extra["m"], true);

    let c = json!({"resultType":"task","taskId":"a","status":"working","createdAt":"x","lastUpdatedAt":"y",
        "ttlMs":null,"x-vendor":"v","_meta":{"k":1}});
    let r: CreateTaskResult = serde_json::from_value(c.clone()).unwrap();
    assert_eq!(r.task.extra["x-vendor"], "v");
    assert_eq!(serde_json::to_value(&r).unwrap(), c);

    let ack = json!({"resultType":"complete","x":1});
    assert_eq!(
        serde_json::to_value(serde_json::from_value::<CancelTaskResult>(ack.clone()).unwrap())
            .unwrap(),
        ack
    );
}

#[test]
fn update_accepts_unknown_input_response_shapes() {
    let v = json!({"jsonrpc":"2.0","id":7,"method":"tasks/update",
        "params":{"taskId":"a","inputResponses":{"unknown-key":{"ignored":true}}}});
    let r: UpdateTaskRequest = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(
        r.params.input_responses["unknown-key"],
        json!({"ignored":true})
    );
    assert_eq!(serde_json::to_value(&r).unwrap(), v);
}

#[test]
fn request_envelopes_check_method() {
    let v = json!({"jsonrpc":"2.0","id":"c","method":"tasks/cancel","params":{"taskId":"a"}});
    let r: CancelTaskRequest = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(r.params.task_id, "a");
    assert_eq!(serde_json::to_value(&r).unwrap(), v);
    let mut wrong = v;
    wrong["method"] = json!("tasks/get");
    assert!(serde_json::from_value::<CancelTaskRequest>(wrong).is_err());
}

#[test]
fn notification_carries_detailed_task() {
    let v = json!({"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"a","status":"failed",
        "createdAt":"x","lastUpdatedAt":"y","ttlMs":null,"error":{"code":-32603,"message":"boom"},
        "_meta":{"io.modelcontextprotocol/subscriptionId":3}}});
    let n: TaskStatusNotification = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(n.params.task.status(), TaskStatus::Failed);
    assert_eq!(serde_json::to_value(&n).unwrap(), v);
}

#[test]
fn detailed_task_conversions() {
    let d = task().completed(serde_json::Map::new());
    assert_eq!(d.status(), TaskStatus::Completed);
    assert_eq!(d.task_id(), "t-1");
    let t: Task = (&d).into();
    assert_eq!(t.status, TaskStatus::Completed);
    assert!(t.to_detailed().is_none());
    assert!(TaskStatus::Completed.is_terminal() && !TaskStatus::InputRequired.is_terminal());
}

#[test]
fn capability_helpers() {
    let data = missing_capability_error_data();
    assert_eq!(
        data,
        json!({"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}})
    );
    let e = missing_capability_error();
    assert_eq!(e.code, -32021);
    assert_eq!(e.data, Some(data));
    let ext = mcp_tasks_protocol::tasks::TasksExtensionCapability::extensions_map();
    assert!(extensions_declare_tasks(&ext));
    assert!(!extensions_declare_tasks(&serde_json::Map::new()));

    use mcp_tasks_protocol::tasks::{
        TasksExtensionCapability, client_declares_tasks, server_declares_tasks,
    };
    use mcp_tasks_protocol::v2026::{ClientCapabilities, ServerCapabilities};
    let client = TasksExtensionCapability::declare_on_client(ClientCapabilities::default());
    assert!(client_declares_tasks(&client));
    assert!(!client_declares_tasks(&ClientCapabilities::default()));
    assert_eq!(
        serde_json::to_value(&client).unwrap(),
        json!({"extensions":{"io.modelcontextprotocol/tasks":{}}})
    );
    let server = TasksExtensionCapability::declare_on_server(ServerCapabilities::default());
    assert!(server_declares_tasks(&server));

    let get: mcp_tasks_protocol::tasks::GetTaskRequest = serde_json::from_value(json!({"jsonrpc":"2.0","id":1,
        "method":"tasks/get","params":{"taskId":"t","_meta":{
            "io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}))
    .unwrap();
    assert!(get.params.declares_tasks());
    let bare: mcp_tasks_protocol::tasks::GetTaskRequest =
        serde_json::from_value(json!({"jsonrpc":"2.0","id":1,
        "method":"tasks/get","params":{"taskId":"t","_meta":{
            "io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":{}}}}))
        .unwrap();
    assert!(!bare.params.declares_tasks());
    assert!(!mcp_tasks_protocol::tasks::GetTaskRequestParams::new("t").declares_tasks());
}
