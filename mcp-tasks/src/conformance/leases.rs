//! Rule 11: worker leases, and lapsed leases found by the sweep.

use mcp_tasks_protocol::jsonrpc::ErrorObject;

use super::env::StoreFactory;
use super::helpers::{alice, another, json_map, new_task, open, roomy};
use crate::{StoreError, TaskStore};

/// A live lease held by one worker refuses another; the holder may re-claim.
pub async fn lease_claim_conflicts_with_live_lease<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "lease_conflict", roomy()).await;
    let b = another(factory, &env).await;
    let owner = alice();
    let task = a.create(new_task(&owner)).await.expect("create");
    let lease = a
        .claim_lease(&owner, &task.id, "node-a", 5_000)
        .await
        .expect("claim");
    assert_eq!(lease.holder, "node-a");
    assert!(matches!(
        b.claim_lease(&owner, &task.id, "node-b", 5_000).await,
        Err(StoreError::LeaseHeld)
    ));
    assert!(
        a.claim_lease(&owner, &task.id, "node-a", 5_000)
            .await
            .is_ok(),
        "the holder may claim again"
    );
}

/// Only the holder renews or releases; after release anyone may claim.
pub async fn lease_renew_and_release_need_the_holder<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "lease_renew", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .claim_lease(&owner, &task.id, "node-a", 1_000)
        .await
        .expect("claim");
    env.clock.advance(900);
    let renewed = store
        .renew_lease(&owner, &task.id, "node-a", 1_000)
        .await
        .expect("renew");
    assert!(renewed.expires_at >= crate::Clock::now_ms(&env.clock) + 1_000);
    assert!(matches!(
        store.renew_lease(&owner, &task.id, "node-b", 1_000).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.release_lease(&owner, &task.id, "node-b").await,
        Err(StoreError::LeaseLost)
    ));
    store
        .release_lease(&owner, &task.id, "node-a")
        .await
        .expect("release");
    assert!(
        store
            .claim_lease(&owner, &task.id, "node-b", 1_000)
            .await
            .is_ok()
    );
    env.clock.advance(200);
    assert_eq!(
        store.sweep().await.expect("sweep").lease_lapsed,
        vec![],
        "renewed in time"
    );
}

/// A lease not renewed in time is reported by the sweep and may be taken over.
pub async fn lapsed_lease_is_reported_and_reclaimable<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "lease_lapse", roomy()).await;
    let b = another(factory, &env).await;
    let owner = alice();
    let task = a.create(new_task(&owner)).await.expect("create");
    let finished = a.create(new_task(&owner)).await.expect("create");
    a.claim_lease(&owner, &task.id, "node-a", 1_000)
        .await
        .expect("claim");
    a.claim_lease(&owner, &finished.id, "node-a", 1_000)
        .await
        .expect("claim");
    a.complete(&owner, &finished.id, Default::default())
        .await
        .expect("complete");
    env.clock.advance(1_000);
    let report = b.sweep().await.expect("sweep");
    assert_eq!(
        report.lease_lapsed,
        vec![task.key()],
        "only the unfinished task is reported"
    );
    assert!(
        matches!(
            a.renew_lease(&owner, &task.id, "node-a", 1_000).await,
            Err(StoreError::LeaseLost)
        ),
        "a lapsed lease is lost"
    );
    b.claim_lease(&owner, &task.id, "node-b", 1_000)
        .await
        .expect("take over a lapsed lease");
    assert!(matches!(
        a.renew_lease(&owner, &task.id, "node-a", 1_000).await,
        Err(StoreError::LeaseLost)
    ));
}

/// `create_leased` gives a working task already leased to the caller: durable (another
/// handle reads it), the lease refuses another worker, and a lease left to lapse is
/// reported by the sweep like a claimed one.
pub async fn create_leased_holds_the_lease_from_the_start<F: StoreFactory>(factory: &F) {
    let (a, env) = open(factory, "lease_at_create", roomy()).await;
    let b = another(factory, &env).await;
    let owner = alice();
    let task = a
        .create_leased(new_task(&owner), "node-a", 1_000)
        .await
        .expect("create_leased");
    assert_eq!(task.status, mcp_tasks_protocol::tasks::TaskStatus::Working);
    let lease = task.lease.clone().expect("a lease from the start");
    assert_eq!(lease.holder, "node-a");
    let read = b.get(&owner, &task.id).await.expect("durable");
    assert_eq!(read.lease, Some(lease));
    assert!(matches!(
        b.claim_lease(&owner, &task.id, "node-b", 1_000).await,
        Err(StoreError::LeaseHeld)
    ));
    a.renew_lease(&owner, &task.id, "node-a", 1_000)
        .await
        .expect("the holder renews");
    env.clock.advance(1_500);
    let swept = b.sweep().await.expect("sweep");
    assert_eq!(
        swept.lease_lapsed.iter().map(|k| &k.id).collect::<Vec<_>>(),
        vec![&task.id],
        "a lapsed lease from create_leased is reported"
    );
}

/// A terminal write ends the task's lease: the record it returns and every later read
/// have none, and the holder's release afterwards is harmless.
pub async fn terminal_write_ends_the_lease<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "lease_terminal", roomy()).await;
    let owner = alice();
    for finish in 0..3 {
        let task = store.create(new_task(&owner)).await.expect("create");
        store
            .claim_lease(&owner, &task.id, "node-a", 5_000)
            .await
            .expect("claim");
        let written = match finish {
            0 => {
                store
                    .complete(
                        &owner,
                        &task.id,
                        json_map(serde_json::json!({"content": []})),
                    )
                    .await
            }
            1 => {
                let error = ErrorObject::new(-32603, "tool failed");
                store.fail(&owner, &task.id, error).await
            }
            _ => store.cancel(&owner, &task.id, None).await,
        }
        .expect("terminal write");
        assert!(written.won);
        assert_eq!(
            written.record.lease, None,
            "the returned record, finish {finish}"
        );
        let read = store.get(&owner, &task.id).await.expect("get");
        assert_eq!(read.lease, None, "a later read, finish {finish}");
        store
            .release_lease(&owner, &task.id, "node-a")
            .await
            .expect("releasing an ended lease is harmless");
    }
}
