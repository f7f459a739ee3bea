//! Wire rules of MCP 2025-11-25 tasks that the schema alone does not pin down.

#![allow(clippy::unwrap_used)]

use mcp_tasks_protocol::v2025::{
    CallToolResponse, CancelTaskResult, ClientNotification, ClientRequest, CreateTaskResult,
    GetTaskPayloadResult, GetTaskResult, ServerResult, Task, TaskStatus, TaskStatusNotification,
    TaskSupport, Tool, ToolExecution, methods,
};
use serde_json::{Value, json};

fn task() -> Task {
    Task::new(
        "t-1",
        TaskStatus::Working,
        "2025-11-25T10:30:00Z",
        "2025-11-25T10:30:00Z",
    )
}

#[test]
fn null_ttl_is_emitted() {
    let v = serde_json::to_value(task()).unwrap();
    assert!(v.as_object().unwrap().contains_key("ttl"));
    assert_eq!(v["ttl"], Value::Null);
    assert!(v.get("pollInterval").is_none() && v.get("statusMessage").is_none());
    for k in ["ttlMs", "pollIntervalMs", "resultType"] {
        assert!(v.get(k).is_none(), "{k}");
    }
    let flat = serde_json::to_value(GetTaskResult::from(task())).unwrap();
    assert_eq!(flat["ttl"], Value::Null);
    let nested = serde_json::to_value(CreateTaskResult::new(task())).unwrap();
    assert_eq!(nested, json!({"task": v}));
}

#[test]
fn missing_ttl_reads_as_none_but_is_written_back() {
    let v = json!({"taskId":"a","status":"completed","createdAt":"x","lastUpdatedAt":"y"});
    let t: Task = serde_json::from_value(v).unwrap();
    assert_eq!(t.ttl, None);
    assert_eq!(serde_json::to_value(&t).unwrap()["ttl"], Value::Null);
}

#[test]
fn create_task_result_is_nested_and_get_is_flat() {
    let created = serde_json::to_value(CreateTaskResult::new(task())).unwrap();
    assert!(created.get("taskId").is_none());
    assert_eq!(created["task"]["taskId"], "t-1");
    let got = serde_json::to_value(CancelTaskResult::from(task())).unwrap();
    assert_eq!(got["taskId"], "t-1");
    assert!(got.get("task").is_none());
}

#[test]
fn terminal_statuses() {
    let terminal: Vec<_> = TaskStatus::ALL
        .into_iter()
        .filter(|s| s.is_terminal())
        .collect();
    assert_eq!(
        terminal,
        [
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled
        ]
    );
    assert_eq!(
        serde_json::to_value(TaskStatus::InputRequired).unwrap(),
        "input_required"
    );
}

#[test]
fn task_support_defaults_to_forbidden() {
    assert_eq!(
        ToolExecution::default().effective_task_support(),
        TaskSupport::Forbidden
    );
    let mut tool = Tool::new("t");
    assert_eq!(tool.task_support(), TaskSupport::Forbidden);
    tool.execution = Some(ToolExecution::with_task_support(TaskSupport::Required));
    assert_eq!(tool.task_support(), TaskSupport::Required);
    let v = serde_json::to_value(&tool).unwrap();
    assert_eq!(
        v,
        json!({"name":"t","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}})
    );
}

#[test]
fn unknown_fields_survive() {
    let v = json!({"task":{"taskId":"a","status":"working","createdAt":"x","lastUpdatedAt":"y","ttl":5,
        "x-task":true},"x-result":[1],"_meta":{"io.modelcontextprotocol/model-immediate-response":"hi","k":1}});
    let r: CreateTaskResult = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(r.task.extra["x-task"], true);
    assert_eq!(r.model_immediate_response(), Some("hi"));
    assert_eq!(serde_json::to_value(&r).unwrap(), v);

    let g = json!({"taskId":"a","status":"failed","createdAt":"x","lastUpdatedAt":"y","ttl":null,"x":{"y":1},"_meta":{}});
    let r: GetTaskResult = serde_json::from_value(g.clone()).unwrap();
    assert_eq!(serde_json::to_value(&r).unwrap(), g);

    let p = json!({"content":[],"structuredContent":{"a":1},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"a"}}});
    let r: GetTaskPayloadResult = serde_json::from_value(p.clone()).unwrap();
    assert_eq!(r.related_task_id().as_deref(), Some("a"));
    assert_eq!(serde_json::to_value(&r).unwrap(), p);
}

#[test]
fn call_tool_response_tells_task_from_result() {
    let task: CallToolResponse =
        serde_json::from_value(json!({"task":serde_json::to_value(task()).unwrap()})).unwrap();
    assert!(matches!(task, mcp_tasks_protocol::v2025::TaskOr::Task(_)));
    let direct: CallToolResponse =
        serde_json::from_value(json!({"content":[{"type":"text","text":"hi"}]})).unwrap();
    assert!(matches!(
        direct,
        mcp_tasks_protocol::v2025::TaskOr::Result(_)
    ));
}

#[test]
fn unions_dispatch_on_method() {
    let r: ClientRequest =
        serde_json::from_value(json!({"jsonrpc":"2.0","id":1,"method":"tasks/list"})).unwrap();
    assert_eq!(r.method(), methods::TASKS_LIST);
    assert!(matches!(r, ClientRequest::ListTasks(_)));
    let err = serde_json::from_value::<ClientRequest>(
        json!({"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{}}),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("unknown method"), "{err}");
    let err = serde_json::from_value::<ClientRequest>(
        json!({"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("taskId"), "{err}");
    assert!(!ClientRequest::has_method("sampling/createMessage"));

    let n: ClientNotification = serde_json::from_value(
        json!({"jsonrpc":"2.0","method":"notifications/tasks/status",
        "params":{"taskId":"a","status":"working","createdAt":"x","lastUpdatedAt":"y","ttl":null}}),
    )
    .unwrap();
    assert!(matches!(n, ClientNotification::TaskStatus(_)));
    let typed: TaskStatusNotification =
        serde_json::from_value(serde_json::to_value(&n).unwrap()).unwrap();
    assert_eq!(typed.params.task.status, TaskStatus::Working);

    let r: ServerResult =
        serde_json::from_value(json!({"taskId":"a","status":"cancelled","createdAt":"x",
        "lastUpdatedAt":"y","ttl":1}))
        .unwrap();
    assert!(matches!(r, ServerResult::GetTask(_)));
    let r: ServerResult = serde_json::from_value(
        json!({"task":{"taskId":"a","status":"working","createdAt":"x",
        "lastUpdatedAt":"y","ttl":1}}),
    )
    .unwrap();
    assert!(matches!(r, ServerResult::CreateTask(_)));
    let r: ServerResult = serde_json::from_value(json!({})).unwrap();
    assert!(matches!(r, ServerResult::Empty(_)));
}
