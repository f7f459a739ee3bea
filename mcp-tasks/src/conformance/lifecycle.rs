//! Creating and reading tasks.

use std::collections::HashSet;

use mcp_tasks_protocol::tasks::TaskStatus;

use super::env::StoreFactory;
use super::helpers::{alice, another, new_task, open, origin, roomy};
use crate::{Clock, NewTask, Owner, StoreError, TaskId, TaskStore, WireRevision};

/// A new task is `working`, owned by its creator, with `created_at == last_updated_at`.
pub async fn create_returns_working_task<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "create_returns_working_task", roomy()).await;
    let task = store.create(new_task(&alice())).await.expect("create");
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(task.owner, alice());
    assert_eq!(task.created_at, task.last_updated_at);
    assert_eq!(task.created_at, env.clock.now_ms());
    assert!(task.outcome.is_none() && task.input_requests.is_empty() && !task.cancel_requested);
    assert_eq!(task.revision, 1);
}

/// Rule 2: once `create` returns, another handle reads the task at once.
pub async fn durable_create_visible_from_second_handle<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "durable_create", roomy()).await;
    let b = another(factory, &env).await;
    for _ in 0..20 {
        let task = a.create(new_task(&alice())).await.expect("create");
        let seen = b
            .get(&alice(), &task.id)
            .await
            .expect("visible on the second handle immediately");
        assert_eq!(seen, task);
    }
}

/// Rule 3: ids are 32 lowercase hex digits (128 bits) and never repeat.
pub async fn ids_are_unique_128_bit_hex<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "ids_unique", roomy()).await;
    let mut seen = HashSet::new();
    for _ in 0..500 {
        let task = store.create(new_task(&alice())).await.expect("create");
        let id = task.id.as_str();
        assert_eq!(id.len(), 32, "{id}");
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{id}"
        );
        assert!(seen.insert(task.id.clone()), "duplicate id {id}");
    }
}

/// An id nobody created reads as `NotFound` on every operation.
pub async fn unknown_id_is_not_found<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "unknown_id", roomy()).await;
    let id = TaskId::from_wire("00000000000000000000000000000000");
    let owner = alice();
    assert!(matches!(
        store.get(&owner, &id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.complete(&owner, &id, Default::default()).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.cancel(&owner, &id, None).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.request_cancel(&owner, &id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.resolve_input(&owner, &id, Default::default()).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.get(&owner, &TaskId::from_wire("not even hex")).await,
        Err(StoreError::NotFound)
    ));
}

/// Rule 17: `created_at` and `last_updated_at` come from the store's clock.
pub async fn timestamps_come_from_the_clock<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "timestamps", roomy()).await;
    let start = env.clock.now_ms();
    let task = store.create(new_task(&alice())).await.expect("create");
    assert_eq!(task.created_at, start);
    env.clock.advance(1_500);
    let updated = store
        .set_status_message(&alice(), &task.id, Some("step 2".into()))
        .await
        .expect("message");
    assert_eq!(updated.created_at, start);
    assert_eq!(updated.last_updated_at, start + 1_500);
}

/// Rule 14: every change bumps the revision; reads do not.
pub async fn revision_increases_with_every_change<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "revision", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let mut last = task.revision;
    let r = store
        .set_status_message(&owner, &task.id, Some("a".into()))
        .await
        .expect("msg");
    assert!(r.revision > last);
    last = r.revision;
    assert_eq!(
        store.get(&owner, &task.id).await.expect("get").revision,
        last,
        "a read changes nothing"
    );
    let r = store
        .request_input(
            &owner,
            &task.id,
            [("k".to_owned(), serde_json::json!({}))].into(),
        )
        .await
        .expect("input");
    assert!(r.revision > last);
    last = r.revision;
    let r = store
        .complete(&owner, &task.id, Default::default())
        .await
        .expect("complete")
        .record;
    assert!(r.revision > last);
}

/// The origin (method, tool, revision) and the poll interval are kept as given.
pub async fn origin_and_poll_interval_round_trip<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "origin", roomy()).await;
    let owner = Owner::new("p\u{e9}rez@example.com");
    let mut legacy = origin();
    legacy.revision = WireRevision::V2025_11_25;
    legacy.tool = Some("tool/with spaces".into());
    let task = store
        .create(NewTask {
            trace_context: None,
            owner: owner.clone(),
            ttl_ms: Some(5_000),
            poll_interval_ms: Some(250),
            origin: legacy.clone(),
            status_message: Some("queued".into()),
            job: None,
            idempotency: None,
        })
        .await
        .expect("create");
    let read = store.get(&owner, &task.id).await.expect("get");
    assert_eq!(read.origin, legacy);
    assert_eq!(read.poll_interval_ms, Some(250));
    assert_eq!(read.ttl_ms, Some(5_000));
    assert_eq!(read.status_message.as_deref(), Some("queued"));
    let defaulted = store.create(new_task(&owner)).await.expect("create");
    assert_eq!(
        defaulted.poll_interval_ms,
        Some(roomy().default_poll_interval_ms)
    );
}

/// The status message can be set, replaced and cleared while the task runs.
pub async fn status_message_set_and_cleared<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "status_message", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .set_status_message(&owner, &task.id, Some("50%".into()))
        .await
        .expect("set");
    assert_eq!(
        store
            .get(&owner, &task.id)
            .await
            .expect("get")
            .status_message
            .as_deref(),
        Some("50%")
    );
    store
        .set_status_message(&owner, &task.id, None)
        .await
        .expect("clear");
    assert_eq!(
        store
            .get(&owner, &task.id)
            .await
            .expect("get")
            .status_message,
        None
    );
}
