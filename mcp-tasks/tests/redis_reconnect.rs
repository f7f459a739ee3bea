//! The pub/sub reconnect rule: when the subscription connection is killed, subscribers
//! get a resync (`Lagged`) and later changes are heard again, so no waiter hangs.
//! Kept in its own test binary: `CLIENT KILL TYPE pubsub` hits every subscriber of the
//! server. Skipped when no Redis answers, unless `MCP_REQUIRE_SERVICES=1`.

use std::time::{Duration, Instant};

use mcp_tasks::conformance::{Env, RedisFactory, StoreFactory};
use mcp_tasks::{EventError, Limits, NewTask, Origin, Owner, TaskEvent, TaskStore, WireRevision};
use mcp_tasks_protocol::tasks::TaskStatus;

fn task(owner: &Owner) -> NewTask {
    NewTask {
        trace_context: None,
        owner: owner.clone(),
        ttl_ms: Some(60_000),
        poll_interval_ms: None,
        origin: Origin {
            method: "tools/call".into(),
            tool: None,
            revision: WireRevision::V2026_07_28,
        },
        status_message: None,
        job: None,
        idempotency: None,
    }
}

async fn kill_subscribers() -> usize {
    let url = std::env::var(RedisFactory::URL_VAR)
        .unwrap_or_else(|_| RedisFactory::DEFAULT_URL.to_owned());
    let client = redis::Client::open(url).expect("url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("admin connection");
    redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut conn)
        .await
        .expect("CLIENT KILL")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_subscription_resyncs_and_recovers() {
    let Some(factory) = RedisFactory::from_env() else {
        return;
    };
    let env = Env::new("reconnect", Limits::default());
    let writer = factory.open(&env).await.expect("writer");
    let watcher = factory.open(&env).await.expect("watcher");
    let owner = Owner::new("alice");
    let t = writer.create(task(&owner)).await.expect("create");

    // A waiter, as a server runs one: wake on events, re-read on Lagged, until the task
    // is finished.
    let mut feed = watcher.events();
    let waiter = {
        let (watcher, owner, id) = (watcher.clone(), owner.clone(), t.id.clone());
        tokio::spawn(async move {
            let mut resyncs = 0;
            loop {
                match feed.recv().await {
                    Ok(TaskEvent::Changed { key, status, .. }) if key.id == id => {
                        if status.is_terminal() {
                            return (status, resyncs);
                        }
                    }
                    Ok(_) => {}
                    Err(EventError::Lagged(_)) => {
                        resyncs += 1;
                        let rec = watcher.get(&owner, &id).await.expect("re-read");
                        if rec.status.is_terminal() {
                            return (rec.status, resyncs);
                        }
                    }
                    Err(EventError::Closed) => panic!("feed closed"),
                }
            }
        })
    };

    assert!(
        kill_subscribers().await >= 2,
        "both nodes' subscriptions killed"
    );
    // Finish at once, most likely while the subscriptions are down: the event is lost,
    // and the waiter must learn of the change from the resync.
    assert!(
        writer
            .complete(&owner, &t.id, Default::default())
            .await
            .expect("complete")
            .won
    );
    let (status, resyncs) = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the waiter did not hang")
        .expect("waiter joined");
    assert_eq!(status, TaskStatus::Completed);
    assert!(resyncs >= 1, "the waiter was told to resync");

    // After the reconnect, events flow again.
    let mut feed = watcher.events();
    let later = writer.create(task(&owner)).await.expect("create");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut n = 0u32;
    loop {
        assert!(Instant::now() < deadline, "no event after the reconnect");
        n += 1;
        writer
            .set_status_message(&owner, &later.id, Some(format!("step {n}")))
            .await
            .expect("message");
        match tokio::time::timeout(Duration::from_millis(300), feed.recv()).await {
            Ok(Ok(TaskEvent::Changed { key, revision, .. }))
                if key.id == later.id && revision > 1 =>
            {
                break;
            }
            // Still reconnecting, or the create's event: go on.
            _ => continue,
        }
    }
}
