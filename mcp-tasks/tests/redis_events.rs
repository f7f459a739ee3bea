//! Events across separately connected `RedisStore`s (two nodes of one deployment), and
//! their isolation from another deployment (prefix). Skipped when no Redis answers,
//! unless `MCP_REQUIRE_SERVICES=1`.

use std::time::Duration;

use mcp_tasks::conformance::{Env, RedisFactory, StoreFactory};
use mcp_tasks::{
    EventStream, Limits, NewTask, Origin, Owner, TaskEvent, TaskId, TaskStore, WireRevision,
};
use mcp_tasks_protocol::tasks::TaskStatus;

fn task(owner: &Owner) -> NewTask {
    NewTask {
        trace_context: None,
        owner: owner.clone(),
        ttl_ms: Some(60_000),
        poll_interval_ms: None,
        origin: Origin {
            method: "tools/call".into(),
            tool: Some("slow".into()),
            revision: WireRevision::V2026_07_28,
        },
        status_message: None,
        job: None,
        idempotency: None,
    }
}

/// The next event about `id`, skipping others.
async fn next_for(feed: &mut EventStream, id: &TaskId) -> TaskEvent {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match feed.recv().await {
                Ok(e) if &e.key().id == id => return e,
                Ok(_) => continue,
                Err(e) => panic!("feed failed: {e}"),
            }
        }
    })
    .await
    .expect("an event within 10 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_through_one_store_is_heard_by_another() {
    let Some(factory) = RedisFactory::from_env() else {
        return;
    };
    let env = Env::new("two_stores", Limits::default());
    let a = factory.open(&env).await.expect("node a");
    let b = factory.open(&env).await.expect("node b");
    let other = factory
        .open(&Env::new("elsewhere", Limits::default()))
        .await
        .expect("another deployment");
    let mut heard = b.events();
    let mut elsewhere = other.events();
    let owner = Owner::new("alice");

    let t = a.create(task(&owner)).await.expect("create");
    assert_eq!(
        next_for(&mut heard, &t.id).await,
        TaskEvent::Changed {
            key: t.key(),
            status: TaskStatus::Working,
            revision: 1,
            queued: false
        }
    );
    // Visible on the other node as soon as create returned.
    assert_eq!(b.get(&owner, &t.id).await.expect("get on b"), t);

    a.request_input(
        &owner,
        &t.id,
        [(
            "ask".to_owned(),
            serde_json::json!({"method": "elicitation/create"}),
        )]
        .into(),
    )
    .await
    .expect("input");
    assert!(matches!(
        next_for(&mut heard, &t.id).await,
        TaskEvent::Changed {
            status: TaskStatus::InputRequired,
            revision: 2,
            ..
        }
    ));
    b.resolve_input(
        &owner,
        &t.id,
        [("ask".to_owned(), serde_json::json!({"action": "accept"}))].into(),
    )
    .await
    .expect("answer on b");
    let mut from_b = a.events();
    a.request_cancel(&owner, &t.id)
        .await
        .expect("cancel request");
    assert!(matches!(
        next_for(&mut heard, &t.id).await,
        TaskEvent::Changed {
            status: TaskStatus::Working,
            revision: 3,
            ..
        }
    ));
    assert_eq!(
        next_for(&mut heard, &t.id).await,
        TaskEvent::InputResponded {
            key: t.key(),
            keys: vec!["ask".into()]
        }
    );
    assert_eq!(
        next_for(&mut heard, &t.id).await,
        TaskEvent::CancelRequested { key: t.key() }
    );
    // A store hears its own writes too (after b's events, which may still be arriving:
    // b's write waited for its echo on b's feed, not on a's).
    loop {
        match next_for(&mut from_b, &t.id).await {
            TaskEvent::CancelRequested { key } => break assert_eq!(key, t.key()),
            TaskEvent::Changed { revision: 3, .. } | TaskEvent::InputResponded { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let done = b.cancel(&owner, &t.id, None).await.expect("cancel on b");
    assert!(done.won);
    assert!(matches!(
        next_for(&mut heard, &t.id).await,
        TaskEvent::Changed {
            status: TaskStatus::Cancelled,
            ..
        }
    ));
    assert!(
        elsewhere.try_recv().is_none(),
        "another prefix is another deployment: it hears nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_races_across_many_stores_have_one_winner() {
    let Some(factory) = RedisFactory::from_env() else {
        return;
    };
    let env = Env::new("race", Limits::default());
    let mut nodes = Vec::new();
    for _ in 0..6 {
        nodes.push(factory.open(&env).await.expect("node"));
    }
    let owner = Owner::new("alice");
    for _ in 0..10 {
        let t = nodes[0].create(task(&owner)).await.expect("create");
        let mut calls = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            let (node, owner, id) = (node.clone(), owner.clone(), t.id.clone());
            calls.push(tokio::spawn(async move {
                match i % 3 {
                    0 => node.complete(&owner, &id, Default::default()).await,
                    1 => {
                        node.fail(
                            &owner,
                            &id,
                            mcp_tasks_protocol::jsonrpc::ErrorObject::new(-1, "x"),
                        )
                        .await
                    }
                    _ => node.cancel(&owner, &id, None).await,
                }
            }));
        }
        let mut winners = 0;
        let mut records = Vec::new();
        for call in calls {
            let outcome = call.await.expect("joined").expect("terminal write");
            winners += usize::from(outcome.won);
            records.push(outcome.record);
        }
        assert_eq!(winners, 1);
        assert!(
            records.windows(2).all(|w| w[0] == w[1]),
            "all see the winner's record"
        );
        let (mine, _) = nodes[1].live_tasks(&owner).await.expect("counts");
        assert_eq!(mine, 0, "the winner alone released the live slot");
    }
}
