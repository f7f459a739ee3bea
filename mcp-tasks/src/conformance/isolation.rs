//! Rule 4: another owner's task reads as unknown, on every operation.

use mcp_tasks_protocol::jsonrpc::ErrorObject;

use super::env::StoreFactory;
use super::helpers::{alice, mallory, new_task, open, roomy};
use crate::{StoreError, TaskStore};

/// `get` by another owner is `NotFound`, as for an unknown id.
pub async fn other_owner_cannot_read<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "other_owner_read", roomy()).await;
    let task = store.create(new_task(&alice())).await.expect("create");
    assert!(matches!(
        store.get(&mallory(), &task.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(store.get(&alice(), &task.id).await.is_ok());
}

/// Every write by another owner is `NotFound` and changes nothing.
pub async fn other_owner_cannot_write<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "other_owner_write", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .request_input(
            &owner,
            &task.id,
            [("q".to_owned(), serde_json::json!({"method": "roots/list"}))].into(),
        )
        .await
        .expect("input");
    let before = store.get(&owner, &task.id).await.expect("get");
    let m = mallory();
    let id = &task.id;
    let not_found = |r: Result<(), StoreError>, op: &str| {
        assert!(matches!(r, Err(StoreError::NotFound)), "{op}: {r:?}")
    };
    not_found(
        store
            .set_status_message(&m, id, Some("x".into()))
            .await
            .map(drop),
        "set_status_message",
    );
    not_found(
        store
            .request_input(&m, id, [("z".to_owned(), serde_json::json!({}))].into())
            .await
            .map(drop),
        "request_input",
    );
    not_found(
        store
            .resolve_input(&m, id, [("q".to_owned(), serde_json::json!({}))].into())
            .await
            .map(drop),
        "resolve_input",
    );
    not_found(
        store.take_input_response(&m, id, "q").await.map(drop),
        "take_input_response",
    );
    not_found(
        store.complete(&m, id, Default::default()).await.map(drop),
        "complete",
    );
    not_found(
        store
            .fail(&m, id, ErrorObject::new(-32603, "x"))
            .await
            .map(drop),
        "fail",
    );
    not_found(store.cancel(&m, id, None).await.map(drop), "cancel");
    not_found(
        store.request_cancel(&m, id).await.map(drop),
        "request_cancel",
    );
    not_found(
        store.claim_lease(&m, id, "node-m", 1_000).await.map(drop),
        "claim_lease",
    );
    not_found(
        store.renew_lease(&m, id, "node-m", 1_000).await.map(drop),
        "renew_lease",
    );
    not_found(store.release_lease(&m, id, "node-m").await, "release_lease");
    assert_eq!(
        store.get(&owner, &task.id).await.expect("get"),
        before,
        "nothing changed"
    );
}

/// `list` shows only the caller's tasks.
pub async fn other_owner_cannot_list<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "other_owner_list", roomy()).await;
    for _ in 0..5 {
        store.create(new_task(&alice())).await.expect("create");
    }
    let mine = store.create(new_task(&mallory())).await.expect("create");
    let page = store.list(&mallory(), None, 100).await.expect("list");
    assert_eq!(
        page.tasks.iter().map(|t| &t.id).collect::<Vec<_>>(),
        vec![&mine.id]
    );
    assert!(page.next_cursor.is_none());
    assert_eq!(
        store
            .list(&alice(), None, 100)
            .await
            .expect("list")
            .tasks
            .len(),
        5
    );
}
