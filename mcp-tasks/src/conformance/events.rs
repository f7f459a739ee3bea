//! Rule 15: events reach every handle of the backend.

use std::time::Duration;

use mcp_tasks_protocol::tasks::TaskStatus;
use serde_json::json;

use super::env::StoreFactory;
use super::helpers::{alice, another, new_task, open, roomy};
use crate::{EventStream, TaskEvent, TaskId, TaskStore};

const WAIT: Duration = Duration::from_secs(10);

/// The next event about `id`, skipping others; fails after 10 s.
async fn next_for(events: &mut EventStream, id: &TaskId) -> TaskEvent {
    let found = tokio::time::timeout(WAIT, async {
        loop {
            match events.recv().await {
                Ok(e) if &e.key().id == id => return e,
                Ok(_) => continue,
                Err(e) => panic!("event feed failed: {e}"),
            }
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("no event for {id} within {WAIT:?}"))
}

/// A change made through one handle is announced on the other.
pub async fn events_reach_the_other_handle<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "events_other_handle", roomy()).await;
    let b = another(factory, &env).await;
    let mut feed = b.events();
    let owner = alice();
    let task = a.create(new_task(&owner)).await.expect("create");
    let created = next_for(&mut feed, &task.id).await;
    assert!(
        matches!(
            created,
            TaskEvent::Changed {
                status: TaskStatus::Working,
                ..
            }
        ),
        "{created:?}"
    );
    a.set_status_message(&owner, &task.id, Some("half way".into()))
        .await
        .expect("message");
    let changed = next_for(&mut feed, &task.id).await;
    assert!(
        matches!(changed, TaskEvent::Changed { revision: 2, .. }),
        "{changed:?}"
    );
    a.complete(&owner, &task.id, Default::default())
        .await
        .expect("complete");
    let done = next_for(&mut feed, &task.id).await;
    assert!(
        matches!(
            done,
            TaskEvent::Changed {
                status: TaskStatus::Completed,
                ..
            }
        ),
        "{done:?}"
    );
}

/// An answer accepted on one handle wakes the worker watching another.
pub async fn input_response_event_reaches_the_other_handle<F: StoreFactory>(factory: &F) {
    let (worker, env) = open(factory, "events_input_response", roomy()).await;
    let front = another(factory, &env).await;
    let owner = alice();
    let task = worker.create(new_task(&owner)).await.expect("create");
    worker
        .request_input(
            &owner,
            &task.id,
            [("ask".to_owned(), json!({"method": "roots/list"}))].into(),
        )
        .await
        .expect("input");
    let mut feed = worker.events();
    front
        .resolve_input(
            &owner,
            &task.id,
            [("ask".to_owned(), json!({"roots": []}))].into(),
        )
        .await
        .expect("answer");
    loop {
        match next_for(&mut feed, &task.id).await {
            TaskEvent::InputResponded { keys, .. } => {
                assert_eq!(keys, vec!["ask".to_owned()]);
                break;
            }
            TaskEvent::Changed { .. } => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        worker
            .take_input_response(&owner, &task.id, "ask")
            .await
            .expect("take"),
        Some(json!({"roots": []}))
    );
}

/// A cancel request made on one handle reaches the worker's handle.
pub async fn cancel_request_event_reaches_the_other_handle<F: StoreFactory>(factory: &F) {
    let (worker, env) = open(factory, "events_cancel_request", roomy()).await;
    let front = another(factory, &env).await;
    let owner = alice();
    let task = worker.create(new_task(&owner)).await.expect("create");
    let mut feed = worker.events();
    front
        .request_cancel(&owner, &task.id)
        .await
        .expect("request cancel");
    loop {
        match next_for(&mut feed, &task.id).await {
            TaskEvent::CancelRequested { key } => {
                assert_eq!(key.owner, owner);
                break;
            }
            TaskEvent::Changed { .. } => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// A terminal write raises one `Changed` event; losing writes raise none.
pub async fn terminal_write_raises_one_event<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "events_terminal_once", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let marker = store.create(new_task(&owner)).await.expect("marker");
    let mut feed = store.events();
    assert!(
        store
            .complete(&owner, &task.id, Default::default())
            .await
            .expect("complete")
            .won
    );
    assert!(
        !store
            .cancel(&owner, &task.id, None)
            .await
            .expect("cancel")
            .won
    );
    store
        .set_status_message(&owner, &marker.id, Some("marker".into()))
        .await
        .expect("marker");
    let first = tokio::time::timeout(WAIT, feed.recv())
        .await
        .expect("event")
        .expect("open");
    assert!(
        matches!(first, TaskEvent::Changed { status: TaskStatus::Completed, ref key, .. } if key.id == task.id),
        "{first:?}"
    );
    let second = tokio::time::timeout(WAIT, feed.recv())
        .await
        .expect("event")
        .expect("open");
    assert_eq!(
        second.key().id,
        marker.id,
        "the losing cancel raised {second:?}"
    );
}
