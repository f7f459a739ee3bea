//! Rules 8 and 9: input requests and their answers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_protocol::tasks::TaskStatus;
use serde_json::{Value, json};

use super::env::StoreFactory;
use super::helpers::{alice, new_task, open, roomy};
use crate::{StoreError, TaskEvent, TaskStore};

fn elicit(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}})
}

fn requests(keys: &[&str]) -> BTreeMap<String, Value> {
    keys.iter().map(|k| ((*k).to_owned(), elicit(k))).collect()
}

fn answers(keys: &[&str]) -> BTreeMap<String, Value> {
    keys.iter()
        .map(|k| {
            (
                (*k).to_owned(),
                json!({"action": "accept", "content": {"name": k}}),
            )
        })
        .collect()
}

/// Requesting input makes the task `input_required` with the requests pending.
pub async fn request_input_makes_task_input_required<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "request_input", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let r = store
        .request_input(&owner, &task.id, requests(&["name"]))
        .await
        .expect("input");
    assert_eq!(r.status, TaskStatus::InputRequired);
    assert_eq!(r.input_requests, requests(&["name"]));
}

/// New requests merge with pending ones.
pub async fn input_requests_merge<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "input_merge", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .request_input(&owner, &task.id, requests(&["a"]))
        .await
        .expect("a");
    let r = store
        .request_input(&owner, &task.id, requests(&["b", "c"]))
        .await
        .expect("b, c");
    assert_eq!(r.input_requests, requests(&["a", "b", "c"]));
}

/// Answering some keys leaves the task `input_required` with only the rest pending.
pub async fn partial_resolution_keeps_input_required<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "partial_resolution", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .request_input(&owner, &task.id, requests(&["first", "second"]))
        .await
        .expect("input");
    let r = store
        .resolve_input(&owner, &task.id, answers(&["first"]))
        .await
        .expect("resolve");
    assert_eq!(r.accepted, vec!["first".to_owned()]);
    assert_eq!(r.record.status, TaskStatus::InputRequired);
    assert_eq!(r.record.input_requests, requests(&["second"]));
}

/// Answering every key makes the task `working` again.
pub async fn full_resolution_returns_to_working<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "full_resolution", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .request_input(&owner, &task.id, requests(&["x", "y"]))
        .await
        .expect("input");
    store
        .resolve_input(&owner, &task.id, answers(&["x"]))
        .await
        .expect("x");
    let r = store
        .resolve_input(&owner, &task.id, answers(&["y"]))
        .await
        .expect("y");
    assert_eq!(r.record.status, TaskStatus::Working);
    assert!(r.record.input_requests.is_empty());
    assert_eq!(
        r.record.input_responses.len(),
        2,
        "answers wait for the worker"
    );
}

/// Keys never requested, or already answered, are ignored without error.
pub async fn unknown_and_answered_keys_are_ignored<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "ignored_keys", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .request_input(&owner, &task.id, requests(&["k1", "k2"]))
        .await
        .expect("input");
    store
        .resolve_input(&owner, &task.id, answers(&["k1"]))
        .await
        .expect("k1");
    let before = store.get(&owner, &task.id).await.expect("get");
    let mut odd = answers(&["k1"]);
    odd.insert("unknown-key".into(), json!({"ignored": true}));
    let r = store
        .resolve_input(&owner, &task.id, odd)
        .await
        .expect("resolve");
    assert!(r.accepted.is_empty());
    assert_eq!(r.record, before, "nothing changed");
    assert_eq!(
        r.record.input_responses.get("k1"),
        Some(&json!({"action": "accept", "content": {"name": "k1"}})),
        "the first answer stands"
    );
}

/// Rule 8: a key used before (pending or answered) is refused, and nothing changes.
pub async fn input_key_reuse_is_refused<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "key_reuse", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .request_input(&owner, &task.id, requests(&["once"]))
        .await
        .expect("input");
    let pending = store
        .request_input(&owner, &task.id, requests(&["once"]))
        .await;
    assert!(
        matches!(pending, Err(StoreError::InputKeyReused { ref key }) if key == "once"),
        "{pending:?}"
    );
    store
        .resolve_input(&owner, &task.id, answers(&["once"]))
        .await
        .expect("answer");
    store
        .take_input_response(&owner, &task.id, "once")
        .await
        .expect("take");
    let before = store.get(&owner, &task.id).await.expect("get");
    let answered = store
        .request_input(&owner, &task.id, requests(&["fresh", "once"]))
        .await;
    assert!(
        matches!(answered, Err(StoreError::InputKeyReused { .. })),
        "{answered:?}"
    );
    assert_eq!(
        store.get(&owner, &task.id).await.expect("get"),
        before,
        "a refused request adds nothing"
    );
}

/// An answer is handed to the worker once.
pub async fn input_response_is_taken_once<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "take_once", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .request_input(&owner, &task.id, requests(&["n"]))
        .await
        .expect("input");
    assert_eq!(
        store
            .take_input_response(&owner, &task.id, "n")
            .await
            .expect("take"),
        None,
        "not answered yet"
    );
    store
        .resolve_input(&owner, &task.id, answers(&["n"]))
        .await
        .expect("answer");
    let got = store
        .take_input_response(&owner, &task.id, "n")
        .await
        .expect("take");
    assert_eq!(
        got,
        Some(json!({"action": "accept", "content": {"name": "n"}}))
    );
    assert_eq!(
        store
            .take_input_response(&owner, &task.id, "n")
            .await
            .expect("take"),
        None
    );
}

/// Rule 9: resolving on a finished task changes nothing and raises no event.
pub async fn resolve_on_terminal_task_changes_nothing_and_raises_no_event<F: StoreFactory>(
    factory: &F,
) {
    let (store, _env) = open(factory, "resolve_terminal", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .request_input(&owner, &task.id, requests(&["late"]))
        .await
        .expect("input");
    let done = store
        .cancel(&owner, &task.id, None)
        .await
        .expect("cancel")
        .record;
    let marker = store.create(new_task(&owner)).await.expect("marker");
    let mut events = store.events();
    let r = store
        .resolve_input(&owner, &task.id, answers(&["late"]))
        .await
        .expect("resolve");
    assert!(r.accepted.is_empty());
    assert_eq!(r.record, done);
    // The next event must be the marker's, not one for the finished task.
    store
        .set_status_message(&owner, &marker.id, Some("marker".into()))
        .await
        .expect("marker");
    let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("an event")
        .expect("feed open");
    assert_eq!(event.key().id, marker.id, "unexpected event {event:?}");
    assert!(!matches!(event, TaskEvent::InputResponded { .. }));
}

/// Concurrent answers to different keys are all kept (no lost update).
pub async fn concurrent_disjoint_resolutions_lose_nothing<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "disjoint_resolutions", roomy()).await;
    let store = Arc::new(store);
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let keys: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    store
        .request_input(&owner, &task.id, requests(&key_refs))
        .await
        .expect("input");
    let calls: Vec<_> = keys
        .iter()
        .map(|k| {
            let (store, owner, id, k) = (
                Arc::clone(&store),
                owner.clone(),
                task.id.clone(),
                k.clone(),
            );
            tokio::spawn(async move {
                store
                    .resolve_input(&owner, &id, answers(&[k.as_str()]))
                    .await
                    .expect("resolve")
                    .accepted
            })
        })
        .collect();
    let mut accepted = 0;
    for call in calls {
        accepted += call.await.expect("join").len();
    }
    assert_eq!(accepted, 20);
    let r = store.get(&owner, &task.id).await.expect("get");
    assert_eq!(r.status, TaskStatus::Working);
    assert_eq!(r.input_responses.len(), 20);
}
