use std::time::SystemTime;

use mcp_tasks::Actor;
use mcp_tasks_protocol::tasks::{TaskEventNotificationParams, TaskStatus};

use super::TaskEvent;
use super::reader::is_next;

#[test]
fn an_event_reads_its_meta_and_its_kinds() {
    let params: TaskEventNotificationParams = serde_json::from_value(serde_json::json!({
        "seq": 3, "taskId": "t1", "type": "rs.mcp-tasks.text",
        "payload": { "text": "[1/2] ok" },
        "_meta": {
            "io.modelcontextprotocol/related-task": { "taskId": "t1" },
            "rs.mcp-tasks/at": "2026-07-28T10:00:00.250Z",
            "rs.mcp-tasks/node": "node-a",
            "rs.mcp-tasks/actor": "worker"
        }
    }))
    .expect("the wire's shape");
    let event = TaskEvent::from_params(params);
    assert_eq!((event.seq, event.task_id.as_str()), (3, "t1"));
    assert_eq!(event.text(), Some("[1/2] ok"));
    assert_eq!(event.status(), None);
    assert_eq!(event.node.as_deref(), Some("node-a"));
    assert_eq!(event.actor, Some(Actor::Worker));
    let at = event.at.expect("a time");
    let ms = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after the epoch")
        .as_millis();
    assert_eq!(ms % 1000, 250);
    assert!(
        event
            .meta
            .contains_key("io.modelcontextprotocol/related-task")
    );

    let bare: TaskEventNotificationParams = serde_json::from_value(serde_json::json!({
        "seq": 0, "taskId": "t1", "type": "rs.mcp-tasks.status",
        "payload": { "status": "completed" },
        "_meta": { "rs.mcp-tasks/actor": "somebody new", "rs.mcp-tasks/at": "not a time" }
    }))
    .expect("the wire's shape");
    let event = TaskEvent::from_params(bare);
    assert_eq!(event.status(), Some(TaskStatus::Completed));
    assert_eq!(event.text(), None);
    assert_eq!((event.at, event.node, event.actor), (None, None, None));
}

#[test]
fn only_the_next_event_is_taken() {
    assert!(is_next(None, 0));
    assert!(
        is_next(None, 7),
        "a reader without a cursor starts where the server does"
    );
    assert!(is_next(Some(4), 5));
    assert!(!is_next(Some(4), 4), "heard again");
    assert!(!is_next(Some(4), 2), "heard again");
    assert!(
        !is_next(Some(4), 6),
        "ahead: its own stream brings it in turn"
    );
    assert!(!is_next(Some(u64::MAX), 0));
}
