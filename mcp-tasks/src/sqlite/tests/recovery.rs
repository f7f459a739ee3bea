//! Crash recovery of the unfinished tasks of a file.

use serde_json::json;

use super::{TempDb, new_task};
use crate::{Limits, ManualClock, Owner, StoreError, TaskEvent, TaskStore};

/// Crash recovery: every unfinished, unexpired task fails (with an event and the live
/// counts released); finished and expired ones are left alone.
#[tokio::test]
async fn recover_unfinished_fails_or_requeues_only_unfinished_live_tasks() {
    use mcp_tasks_protocol::jsonrpc::ErrorObject;
    use mcp_tasks_protocol::tasks::TaskStatus;

    let db = TempDb::new("recover_unfinished");
    let clock = ManualClock::default();
    let store = db.open(Limits::default(), &clock);
    let owner = Owner::new("crash");
    let working = store.create(new_task(&owner, None)).await.expect("create");
    store
        .claim_lease(&owner, &working.id, "dead-node", 60_000)
        .await
        .expect("claim");
    let waiting = store.create(new_task(&owner, None)).await.expect("create");
    store
        .request_input(
            &owner,
            &waiting.id,
            [("q".to_owned(), json!({"method": "elicitation/create"}))].into(),
        )
        .await
        .expect("request input");
    let done = store.create(new_task(&owner, None)).await.expect("create");
    let mut result = mcp_tasks_protocol::JsonObject::new();
    result.insert("answer".into(), json!(42));
    store
        .complete(&owner, &done.id, result.clone())
        .await
        .expect("complete");
    let expiring = store
        .create(new_task(&owner, Some(1_000)))
        .await
        .expect("create");
    // At least once: its lost run is run again; a queued one waits on for a worker.
    let with_job = |delivery| {
        let mut new = new_task(&owner, None);
        new.origin.tool = Some("t".into());
        let mut job = crate::Job::new(Default::default());
        job.delivery = delivery;
        new.job = Some(job);
        new
    };
    let again = store
        .create_leased(
            with_job(crate::Delivery::AtLeastOnce { max_attempts: 2 }),
            "dead-node",
            60_000,
        )
        .await
        .expect("create leased");
    let queued = store
        .create(with_job(crate::Delivery::AtMostOnce))
        .await
        .expect("create queued");
    clock.advance(1_000);

    // A second handle in this process, as a restarted server's store would be.
    let reopened = db.open(Limits::default(), &clock);
    let mut events = reopened.events();
    let error = ErrorObject::new(-32603, "worker lost");
    assert_eq!(
        reopened
            .recover_unfinished(error.clone())
            .await
            .expect("recover"),
        crate::Recovered {
            failed: 2,
            requeued: 1,
            cancelled: 0
        }
    );
    // Each recovery is in its task's log, by the server.
    let last_entry = |id: crate::TaskId| {
        let reopened = reopened.clone();
        let owner = owner.clone();
        async move {
            let page = reopened
                .read_log(&owner, &id, None, 100)
                .await
                .expect("log");
            page.entries.last().cloned().expect("an entry")
        }
    };
    let requeued = last_entry(again.id.clone()).await;
    assert_eq!(requeued.kind, crate::log::kinds::REQUEUE);
    assert_eq!(requeued.payload["attempt"], 1);
    assert_eq!(requeued.actor, crate::Actor::Server);
    let failed = last_entry(working.id.clone()).await;
    assert_eq!(failed.kind, crate::log::kinds::STATUS);
    assert_eq!(failed.payload["status"], "failed");
    assert_eq!(failed.payload["error"]["message"], "worker lost");
    let rerun = reopened.get(&owner, &again.id).await.expect("get");
    assert_eq!(rerun.status, TaskStatus::Working);
    assert_eq!(rerun.queued_tool(), Some("t"), "waits for a worker again");
    let untouched = reopened.get(&owner, &queued.id).await.expect("get");
    assert_eq!(untouched.revision, queued.revision);

    for task in [&working, &waiting] {
        let rec = reopened.get(&owner, &task.id).await.expect("get");
        assert_eq!(rec.status, TaskStatus::Failed);
        assert_eq!(rec.outcome, Some(crate::Outcome::Error(error.clone())));
        assert!(rec.input_requests.is_empty() && rec.lease.is_none());
    }
    let kept = reopened.get(&owner, &done.id).await.expect("get");
    assert_eq!(kept.outcome, Some(crate::Outcome::Result(result)));
    assert_eq!(
        kept.revision,
        store.get(&owner, &done.id).await.expect("get").revision
    );
    assert!(matches!(
        reopened.get(&owner, &expiring.id).await,
        Err(StoreError::NotFound)
    ));
    let mut announced = Vec::new();
    while let Some(Ok(TaskEvent::Changed { key, status, .. })) = events.try_recv() {
        let expected = if key.id == again.id {
            TaskStatus::Working
        } else {
            TaskStatus::Failed
        };
        assert_eq!(status, expected);
        announced.push(key.id);
    }
    announced.sort();
    let mut expected = vec![working.id.clone(), waiting.id.clone(), again.id.clone()];
    expected.sort();
    assert_eq!(announced, expected);
    // The expired task still counts as live until the sweep purges it; the requeued and
    // queued ones count on.
    assert_eq!(reopened.live_tasks(&owner).await.expect("count"), (3, 3));
    assert_eq!(reopened.sweep().await.expect("sweep").purged, 1);
    assert_eq!(reopened.live_tasks(&owner).await.expect("count"), (2, 2));
    // Nothing is left to fail; the queued ones wait for a worker.
    assert_eq!(
        reopened.recover_unfinished(error).await.expect("recover"),
        crate::Recovered::default()
    );
}
