//! Redis-specific behaviour of `RedisStore`: the key-expiry safety net, the sweep's
//! repair of a task whose key Redis expired first, and tasks written before the operator
//! index existed. Skipped when no Redis answers, unless
//! `MCP_REQUIRE_SERVICES=1`.

use mcp_tasks::conformance::{Env, RedisFactory, StoreFactory};
use mcp_tasks::{
    Limits, NewTask, OperatorFilter, Origin, Owner, RedisOptions, RedisStore, TaskCounts,
    TaskStore, WireRevision,
};
use mcp_tasks_protocol::tasks::TaskStatus;

fn task(owner: &Owner, ttl_ms: Option<u64>) -> NewTask {
    NewTask {
        trace_context: None,
        owner: owner.clone(),
        ttl_ms,
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

async fn admin() -> redis::aio::MultiplexedConnection {
    let url = std::env::var(RedisFactory::URL_VAR)
        .unwrap_or_else(|_| RedisFactory::DEFAULT_URL.to_owned());
    redis::Client::open(url)
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("admin connection")
}

async fn pttl(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> i64 {
    redis::cmd("PTTL")
        .arg(key)
        .query_async(conn)
        .await
        .expect("PTTL")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_keys_carry_the_safety_net_expiry() {
    let Some(factory) = RedisFactory::from_env() else {
        return;
    };
    let unlimited = Limits {
        max_ttl_ms: None,
        default_ttl_ms: None,
        ..Limits::default()
    };
    let env = Env::new("safety_net", unlimited.clone());
    let store = factory.open(&env).await.expect("open");
    let tag = format!("{{{}}}", RedisFactory::prefix(&env.namespace));
    let mut conn = admin().await;
    let owner = Owner::new("alice");

    let t = store
        .create(task(&owner, Some(60_000)))
        .await
        .expect("create");
    let slack = 3_600_000;
    let left = pttl(&mut conn, &format!("{tag}:t:{}", t.id)).await;
    assert!(
        (60_000 + slack - 10_000..=60_000 + slack).contains(&left),
        "task key expires after ttl + slack: {left}"
    );
    let index = pttl(&mut conn, &format!("{tag}:o:alice")).await;
    assert!(
        index >= left - 1_000,
        "the index outlives its tasks: {index}"
    );
    for key in ["op:all", "op:s:working", "op:n"] {
        let index = pttl(&mut conn, &format!("{tag}:{key}")).await;
        assert!(index >= left - 1_000, "{key} outlives its tasks: {index}");
    }
    // A status change moves the task to a status index that outlives it too.
    store.cancel(&owner, &t.id, None).await.expect("cancel");
    let index = pttl(&mut conn, &format!("{tag}:op:s:cancelled")).await;
    assert!(
        index >= left - 1_000,
        "op:s:cancelled outlives its tasks: {index}"
    );

    // A task that never expires makes the indexes permanent too.
    let forever = store.create(task(&owner, None)).await.expect("create");
    assert_eq!(
        pttl(&mut conn, &format!("{tag}:t:{}", forever.id)).await,
        -1
    );
    assert_eq!(pttl(&mut conn, &format!("{tag}:o:alice")).await, -1);
    assert_eq!(pttl(&mut conn, &format!("{tag}:live")).await, -1);
    for key in ["op:all", "op:s:working", "op:n"] {
        assert_eq!(pttl(&mut conn, &format!("{tag}:{key}")).await, -1, "{key}");
    }

    // Disabled: no key expiry at all.
    let off = RedisStore::connect_with(
        RedisOptions::new(
            std::env::var(RedisFactory::URL_VAR)
                .unwrap_or_else(|_| RedisFactory::DEFAULT_URL.to_owned()),
        )
        .prefix(RedisFactory::prefix(&env.namespace))
        .limits(unlimited)
        .clock(env.clock())
        .safety_slack(None),
    )
    .await
    .expect("connect");
    let plain = off
        .create(task(&owner, Some(60_000)))
        .await
        .expect("create");
    assert_eq!(pttl(&mut conn, &format!("{tag}:t:{}", plain.id)).await, -1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_repairs_a_task_redis_expired_first() {
    let Some(factory) = RedisFactory::from_env() else {
        return;
    };
    let env = Env::new("vanished", Limits::default());
    let store = factory.open(&env).await.expect("open");
    let tag = format!("{{{}}}", RedisFactory::prefix(&env.namespace));
    let mut conn = admin().await;
    let owner = Owner::new("alice");
    let t = store
        .create(task(&owner, Some(1_000)))
        .await
        .expect("create");
    let kept = store
        .create(task(&owner, Some(60_000)))
        .await
        .expect("create");
    assert_eq!(store.live_tasks(&owner).await.expect("counts"), (2, 2));

    // As if the safety net fired before any sweep.
    let _: i64 = redis::cmd("DEL")
        .arg(format!("{tag}:t:{}", t.id))
        .query_async(&mut conn)
        .await
        .expect("DEL");
    let page = store.list(&owner, None, 10).await.expect("list");
    assert_eq!(
        page.tasks,
        vec![kept.clone()],
        "the vanished task is not listed"
    );

    env.clock.advance(1_000);
    let report = store.sweep().await.expect("sweep");
    assert_eq!(report.purged, 1);
    assert_eq!(report.expired_unfinished, vec![t.key()]);
    assert_eq!(store.live_tasks(&owner).await.expect("counts"), (1, 1));
    assert_eq!(store.sweep().await.expect("sweep").purged, 0);
}

/// Tasks written before the operator index existed (its keys deleted here, as before an
/// upgrade) are not in the operator's view; each enters it, whole and counted once, at
/// its next write, and a purge of one that never did leaves the counts alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_from_before_the_operator_index_enter_it_at_their_next_write() {
    let Some(factory) = RedisFactory::from_env() else {
        return;
    };
    let env = Env::new("operator_upgrade", Limits::default());
    let store = factory.open(&env).await.expect("open");
    let tag = format!("{{{}}}", RedisFactory::prefix(&env.namespace));
    let mut conn = admin().await;
    let owner = Owner::new("alice");
    let mut tool_task = task(&owner, Some(60_000));
    tool_task.origin.tool = Some("old".into());
    let first = store.create(tool_task.clone()).await.expect("create");
    let second = store
        .create(NewTask {
            ttl_ms: Some(1_000),
            ..tool_task.clone()
        })
        .await
        .expect("create");
    for key in ["op:all", "op:s:working", "op:t:old", "op:n"] {
        let _: i64 = redis::cmd("DEL")
            .arg(format!("{tag}:{key}"))
            .query_async(&mut conn)
            .await
            .expect("DEL");
    }
    let all = OperatorFilter::default();
    assert!(
        store
            .operator_list(&all, None, 10)
            .await
            .expect("list")
            .tasks
            .is_empty()
    );
    assert_eq!(
        store.operator_counts().await.expect("counts"),
        TaskCounts::default()
    );

    let done = store
        .complete(&owner, &first.id, serde_json::Map::new())
        .await
        .expect("complete");
    let listed = store.operator_list(&all, None, 10).await.expect("list");
    assert_eq!(listed.tasks, vec![done.record]);
    let by_tool = OperatorFilter {
        tool: Some("old".into()),
        status: Some(TaskStatus::Completed),
        ..Default::default()
    };
    assert_eq!(
        store
            .operator_list(&by_tool, None, 10)
            .await
            .expect("list")
            .tasks
            .len(),
        1
    );
    let counts = store.operator_counts().await.expect("counts");
    assert_eq!((counts.completed, counts.total()), (1, 1));
    assert_eq!(counts.by_tool.get("old"), Some(&1));

    // The other one is purged without ever entering the index: no count goes below.
    env.clock.advance(1_000);
    assert_eq!(store.sweep().await.expect("sweep").purged, 1);
    assert!(second.ttl_ms.is_some());
    assert_eq!(store.operator_counts().await.expect("counts"), counts);
}
