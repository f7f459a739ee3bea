//! Rules 6, 7 and 10: terminal writes, first writer wins, cancel requests.

use std::sync::Arc;

use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;

use super::env::StoreFactory;
use super::helpers::{alice, another, json_map, new_task, open, roomy};
use crate::{Outcome, StoreError, TaskStore};

/// `complete` stores the result and reports that it won; the run's last status message
/// goes, and a tool error's text takes its place (rule 7).
pub async fn complete_stores_result<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "complete", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .set_status_message(&owner, &task.id, Some("working for 2 s".into()))
        .await
        .expect("status");
    let result = json_map(
        serde_json::json!({"content": [{"type": "text", "text": "done"}], "isError": false}),
    );
    let t = store
        .complete(&owner, &task.id, result.clone())
        .await
        .expect("complete");
    assert!(t.won);
    assert_eq!(t.record.status, TaskStatus::Completed);
    let read = store.get(&owner, &task.id).await.expect("get");
    assert_eq!(read.outcome, Some(Outcome::Result(result)));
    assert_eq!(
        read.status_message, None,
        "the progress text outlived the run"
    );

    let failing = store.create(new_task(&owner)).await.expect("create");
    store
        .set_status_message(&owner, &failing.id, Some("half way".into()))
        .await
        .expect("status");
    let tool_error = json_map(serde_json::json!({
        "content": [{"type": "text", "text": "disk full"}],
        "isError": true
    }));
    let t = store
        .complete(&owner, &failing.id, tool_error)
        .await
        .expect("complete");
    assert_eq!(
        t.record.status_message.as_deref(),
        Some("Tool error: disk full")
    );
}

/// `fail` stores the JSON-RPC error, and its message becomes the status message in place
/// of the run's last one (rule 7).
pub async fn fail_stores_error_and_message<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "fail", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .set_status_message(&owner, &task.id, Some("working for 1.19 s".into()))
        .await
        .expect("status");
    let error = ErrorObject::new(-32603, "API rate limit exceeded");
    let t = store
        .fail(&owner, &task.id, error.clone())
        .await
        .expect("fail");
    assert!(t.won);
    let read = store.get(&owner, &task.id).await.expect("get");
    assert_eq!(read.status, TaskStatus::Failed);
    assert_eq!(read.outcome, Some(Outcome::Error(error)));
    assert_eq!(
        read.status_message.as_deref(),
        Some("API rate limit exceeded")
    );
}

/// `cancel` moves an unfinished task (working or input_required) to `cancelled`.
pub async fn cancel_moves_to_cancelled<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "cancel", roomy()).await;
    let owner = alice();
    let a = store.create(new_task(&owner)).await.expect("create");
    let t = store
        .cancel(
            &owner,
            &a.id,
            Some("The task was cancelled by request.".into()),
        )
        .await
        .expect("cancel");
    assert!(t.won);
    assert_eq!(t.record.status, TaskStatus::Cancelled);
    assert_eq!(
        t.record.status_message.as_deref(),
        Some("The task was cancelled by request.")
    );
    let b = store.create(new_task(&owner)).await.expect("create");
    store
        .request_input(
            &owner,
            &b.id,
            [("k".to_owned(), serde_json::json!({}))].into(),
        )
        .await
        .expect("input");
    let t = store.cancel(&owner, &b.id, None).await.expect("cancel");
    assert!(t.won);
    assert_eq!(t.record.status, TaskStatus::Cancelled);
    assert!(
        t.record.input_requests.is_empty(),
        "a finished task waits for no input"
    );
}

async fn race<S: TaskStore>(stores: Vec<Arc<S>>, rounds: usize) {
    let owner = alice();
    for round in 0..rounds {
        let task = stores[0].create(new_task(&owner)).await.expect("create");
        let mut calls = Vec::new();
        for i in 0..24usize {
            let store = Arc::clone(&stores[i % stores.len()]);
            let (owner, id) = (owner.clone(), task.id.clone());
            calls.push(tokio::spawn(async move {
                let r = match i % 3 {
                    0 => {
                        store
                            .complete(&owner, &id, json_map(serde_json::json!({"by": i})))
                            .await
                    }
                    1 => {
                        store
                            .fail(&owner, &id, ErrorObject::new(-32603, format!("by {i}")))
                            .await
                    }
                    _ => store.cancel(&owner, &id, Some(format!("by {i}"))).await,
                };
                r.expect("terminal write")
            }));
        }
        let mut winners = Vec::new();
        for call in calls {
            let t = call.await.expect("join");
            if t.won {
                winners.push(t.record);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one winner");
        let final_record = stores[0].get(&owner, &task.id).await.expect("get");
        assert_eq!(
            final_record.status, winners[0].status,
            "the winner's write stands"
        );
        assert_eq!(final_record.outcome, winners[0].outcome);
    }
}

/// Rule 6: of 24 concurrent complete/fail/cancel calls, exactly one wins.
pub async fn concurrent_terminal_writes_have_one_winner<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "race_one_handle", roomy()).await;
    race(vec![Arc::new(store)], 10).await;
}

/// Rule 6 across two handles (two nodes).
pub async fn concurrent_terminal_writes_across_handles_have_one_winner<F: StoreFactory>(
    factory: &F,
) {
    let (a, env) = open(factory, "race_two_handles", roomy()).await;
    let b = another(factory, &env).await;
    race(vec![Arc::new(a), Arc::new(b)], 10).await;
}

/// Rule 6: after a terminal write nothing changes the record again.
pub async fn nothing_leaves_a_terminal_state<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "terminal_final", roomy()).await;
    let owner = alice();
    for finish in 0..3 {
        let task = store.create(new_task(&owner)).await.expect("create");
        match finish {
            0 => assert!(
                store
                    .complete(&owner, &task.id, Default::default())
                    .await
                    .expect("c")
                    .won
            ),
            1 => assert!(
                store
                    .fail(&owner, &task.id, ErrorObject::new(-1, "x"))
                    .await
                    .expect("f")
                    .won
            ),
            _ => assert!(store.cancel(&owner, &task.id, None).await.expect("x").won),
        }
        let done = store.get(&owner, &task.id).await.expect("get");
        let status = done.status;
        assert!(status.is_terminal());
        assert!(
            !store
                .complete(&owner, &task.id, Default::default())
                .await
                .expect("c")
                .won
        );
        assert!(
            !store
                .fail(&owner, &task.id, ErrorObject::new(-1, "y"))
                .await
                .expect("f")
                .won
        );
        assert!(!store.cancel(&owner, &task.id, None).await.expect("x").won);
        assert!(matches!(
            store
                .set_status_message(&owner, &task.id, Some("late".into()))
                .await,
            Err(StoreError::Terminal { .. })
        ));
        assert!(matches!(
            store
                .request_input(
                    &owner,
                    &task.id,
                    [("late".to_owned(), serde_json::json!({}))].into()
                )
                .await,
            Err(StoreError::Terminal { .. })
        ));
        assert!(matches!(
            store.claim_lease(&owner, &task.id, "n", 1_000).await,
            Err(StoreError::Terminal { .. })
        ));
        store
            .request_cancel(&owner, &task.id)
            .await
            .expect("request_cancel");
        assert_eq!(
            store.get(&owner, &task.id).await.expect("get"),
            done,
            "record unchanged"
        );
    }
}

/// Rule 10: `request_cancel` raises the flag (once) without finishing the task.
pub async fn request_cancel_raises_flag_once<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "request_cancel", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let r = store
        .request_cancel(&owner, &task.id)
        .await
        .expect("request");
    assert!(r.cancel_requested);
    assert_eq!(
        r.status,
        TaskStatus::Working,
        "a request is not a cancellation"
    );
    let again = store.request_cancel(&owner, &task.id).await.expect("again");
    assert_eq!(
        again.revision, r.revision,
        "a second request changes nothing"
    );
}

/// Rule 10: `request_cancel` on a finished task changes nothing.
pub async fn request_cancel_on_terminal_task_is_noop<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "request_cancel_terminal", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let done = store
        .complete(&owner, &task.id, Default::default())
        .await
        .expect("complete")
        .record;
    let r = store
        .request_cancel(&owner, &task.id)
        .await
        .expect("request");
    assert_eq!(r, done);
}

/// Rules 5 and 6 across handles: each change builds on the other handle's last one. A
/// handle that wrote a task last and changes it again after another handle did never
/// writes over the other's change, never acts on what it wrote before (a request the
/// other answered, a task the other finished), and loses a terminal race it came late to.
pub async fn changes_through_two_handles_build_on_each_other<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "two_handles_build_on", roomy()).await;
    let b = another(factory, &env).await;
    let owner = alice();
    let task = a.create(new_task(&owner)).await.expect("create on a");
    a.set_status_message(&owner, &task.id, Some("from a".into()))
        .await
        .expect("status on a");
    let asked = b
        .request_input(&owner, &task.id, question())
        .await
        .expect("input on b");
    let after = a
        .set_status_message(&owner, &task.id, Some("again from a".into()))
        .await
        .expect("status on a again");
    assert_eq!(
        after.status,
        TaskStatus::InputRequired,
        "a kept b's question"
    );
    assert_eq!(after.input_requests, asked.input_requests);
    assert_eq!(after.revision, asked.revision + 1);
    assert_eq!(after.status_message.as_deref(), Some("again from a"));

    // b cancels; a, which wrote the task last, comes late to the finish.
    assert!(
        b.cancel(&owner, &task.id, None)
            .await
            .expect("cancel on b")
            .won
    );
    let late = a
        .complete(&owner, &task.id, Default::default())
        .await
        .expect("complete on a");
    assert!(!late.won, "the cancel on b came first");
    assert_eq!(late.record.status, TaskStatus::Cancelled);
    let seen = a.get(&owner, &task.id).await.expect("get on a");
    assert_eq!(seen.status, TaskStatus::Cancelled);
    assert_eq!(seen, b.get(&owner, &task.id).await.expect("get on b"));

    // A refusal is the stored record's: b finishes, a (which created the task) is
    // refused its input request as on any finished task.
    let other = a
        .create(new_task(&owner))
        .await
        .expect("second create on a");
    assert!(
        b.complete(&owner, &other.id, Default::default())
            .await
            .expect("complete on b")
            .won
    );
    let refused = a.request_input(&owner, &other.id, question()).await;
    assert!(
        matches!(
            refused,
            Err(StoreError::Terminal {
                status: TaskStatus::Completed
            })
        ),
        "{refused:?}"
    );
}

fn question() -> std::collections::BTreeMap<String, serde_json::Value> {
    json_map(serde_json::json!({"q": {"x": 1}}))
        .into_iter()
        .collect()
}
