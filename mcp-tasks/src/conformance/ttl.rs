//! Rule 12: TTLs, expiry and the sweep, on the injected clock.

use super::env::StoreFactory;
use super::helpers::{alice, another, new_task, open, roomy};
use crate::{Limits, NewTask, StoreError, TaskStore};

/// No TTL asked: the default; too long: the maximum.
pub async fn ttl_is_defaulted_and_clamped<F: StoreFactory>(factory: &F) {
    let limits = Limits {
        default_ttl_ms: Some(30_000),
        max_ttl_ms: Some(60_000),
        ..roomy()
    };
    let (store, _env) = open(factory, "ttl_defaults", limits).await;
    let owner = alice();
    assert_eq!(
        store.create(new_task(&owner)).await.expect("create").ttl_ms,
        Some(30_000)
    );
    let long = NewTask {
        trace_context: None,
        ttl_ms: Some(10 * 60_000),
        ..new_task(&owner)
    };
    assert_eq!(
        store.create(long).await.expect("create").ttl_ms,
        Some(60_000)
    );
    let short = NewTask {
        trace_context: None,
        ttl_ms: Some(5_000),
        ..new_task(&owner)
    };
    assert_eq!(
        store.create(short).await.expect("create").ttl_ms,
        Some(5_000)
    );
}

/// At `created_at + ttl` the task reads as `NotFound` on every handle, before any sweep.
pub async fn expired_task_reads_as_not_found<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "ttl_expiry", roomy()).await;
    let b = another(factory, &env).await;
    let owner = alice();
    let task = a
        .create(NewTask {
            trace_context: None,
            ttl_ms: Some(10_000),
            ..new_task(&owner)
        })
        .await
        .expect("create");
    a.complete(&owner, &task.id, Default::default())
        .await
        .expect("complete");
    env.clock.advance(9_999);
    assert!(
        b.get(&owner, &task.id).await.is_ok(),
        "still retrievable while the TTL runs"
    );
    env.clock.advance(1);
    assert!(matches!(
        a.get(&owner, &task.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        b.get(&owner, &task.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        a.cancel(&owner, &task.id, None).await,
        Err(StoreError::NotFound)
    ));
}

/// The sweep deletes expired tasks and names the unfinished ones.
pub async fn sweep_purges_expired_and_reports_unfinished<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "sweep_purges", roomy()).await;
    let owner = alice();
    let done = store
        .create(NewTask {
            trace_context: None,
            ttl_ms: Some(1_000),
            ..new_task(&owner)
        })
        .await
        .expect("create");
    store
        .complete(&owner, &done.id, Default::default())
        .await
        .expect("complete");
    let running = store
        .create(NewTask {
            trace_context: None,
            ttl_ms: Some(1_000),
            ..new_task(&owner)
        })
        .await
        .expect("create");
    env.clock.advance(1_000);
    let report = store.sweep().await.expect("sweep");
    assert_eq!(report.purged, 2);
    assert_eq!(report.expired_unfinished, vec![running.key()]);
    assert!(
        store
            .list(&owner, None, 10)
            .await
            .expect("list")
            .tasks
            .is_empty()
    );
    let again = store.sweep().await.expect("sweep");
    assert_eq!(again.purged, 0, "a second sweep finds nothing");
}

/// Tasks within their TTL survive a sweep untouched.
pub async fn sweep_keeps_unexpired_tasks<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "sweep_keeps", roomy()).await;
    let owner = alice();
    let task = store
        .create(NewTask {
            trace_context: None,
            ttl_ms: Some(60_000),
            ..new_task(&owner)
        })
        .await
        .expect("create");
    env.clock.advance(59_000);
    let report = store.sweep().await.expect("sweep");
    assert_eq!(report.purged, 0);
    assert_eq!(store.get(&owner, &task.id).await.expect("get"), task);
}

/// With no maximum and no default, a task without a TTL is kept whatever the time.
pub async fn unlimited_ttl_never_expires<F: StoreFactory>(factory: &F) {
    let limits = Limits {
        default_ttl_ms: None,
        max_ttl_ms: None,
        ..roomy()
    };
    let (store, env) = open(factory, "ttl_unlimited", limits).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    assert_eq!(task.ttl_ms, None);
    env.clock.advance(10 * 365 * 24 * 60 * 60 * 1000);
    assert_eq!(store.sweep().await.expect("sweep").purged, 0);
    assert!(store.get(&owner, &task.id).await.is_ok());
}
