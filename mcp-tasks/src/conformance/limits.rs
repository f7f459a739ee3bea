//! Rule 16: limits refuse with a typed error and change nothing.

use mcp_tasks_protocol::JsonObject;
use serde_json::{Value, json};

use super::env::StoreFactory;
use super::helpers::{alice, mallory, new_task, open, roomy};
use crate::{Limit, Limits, StoreError, TaskStore};

fn exceeded(r: &Result<impl std::fmt::Debug, StoreError>, which: Limit) -> bool {
    matches!(r, Err(StoreError::LimitExceeded { limit, .. }) if *limit == which)
}

/// One owner may not exceed its unfinished-task limit; finishing one frees a slot.
pub async fn live_tasks_per_owner_limit<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(
        factory,
        "limit_per_owner",
        Limits {
            max_live_tasks_per_owner: 3,
            ..roomy()
        },
    )
    .await;
    let owner = alice();
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(store.create(new_task(&owner)).await.expect("create").id);
    }
    let r = store.create(new_task(&owner)).await;
    assert!(exceeded(&r, Limit::LiveTasksPerOwner), "{r:?}");
    assert!(
        store.create(new_task(&mallory())).await.is_ok(),
        "another owner has its own allowance"
    );
    store
        .complete(&owner, &ids[0], Default::default())
        .await
        .expect("complete");
    assert!(
        store.create(new_task(&owner)).await.is_ok(),
        "a finished task frees its slot"
    );
    assert_eq!(
        store
            .list(&owner, None, 100)
            .await
            .expect("list")
            .tasks
            .len(),
        4
    );
}

/// All owners together may not exceed the total limit.
pub async fn live_tasks_total_limit<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(
        factory,
        "limit_total",
        Limits {
            max_live_tasks_total: 4,
            ..roomy()
        },
    )
    .await;
    for i in 0..4 {
        store
            .create(new_task(&crate::Owner::new(format!("owner-{i}"))))
            .await
            .expect("create");
    }
    let r = store.create(new_task(&mallory())).await;
    assert!(exceeded(&r, Limit::LiveTasksTotal), "{r:?}");
    assert!(
        store
            .list(&mallory(), None, 10)
            .await
            .expect("list")
            .tasks
            .is_empty(),
        "nothing was created"
    );
}

/// A task may not have more input requests outstanding than the limit.
pub async fn input_requests_per_task_limit<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(
        factory,
        "limit_inputs",
        Limits {
            max_input_requests_per_task: 2,
            ..roomy()
        },
    )
    .await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .request_input(&owner, &task.id, [("a".to_owned(), json!({}))].into())
        .await
        .expect("a");
    let r = store
        .request_input(
            &owner,
            &task.id,
            [("b".to_owned(), json!({})), ("c".to_owned(), json!({}))].into(),
        )
        .await;
    assert!(exceeded(&r, Limit::InputRequestsPerTask), "{r:?}");
    let record = store.get(&owner, &task.id).await.expect("get");
    assert_eq!(record.input_requests.len(), 1, "nothing was added");
    assert!(
        store
            .request_input(&owner, &task.id, [("b".to_owned(), json!({}))].into())
            .await
            .is_ok(),
        "keys of a refused request stay unused"
    );
}

/// A result larger than the limit is refused and the task stays unfinished.
pub async fn result_bytes_limit<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(
        factory,
        "limit_result",
        Limits {
            max_result_bytes: 1_024,
            ..roomy()
        },
    )
    .await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let mut big = JsonObject::new();
    big.insert("text".into(), Value::String("x".repeat(2_000)));
    let r = store.complete(&owner, &task.id, big).await;
    assert!(exceeded(&r, Limit::ResultBytes), "{r:?}");
    assert!(
        !store
            .get(&owner, &task.id)
            .await
            .expect("get")
            .is_terminal()
    );
    assert!(
        store
            .complete(&owner, &task.id, JsonObject::new())
            .await
            .expect("small result")
            .won
    );
}
