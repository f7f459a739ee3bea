//! [`PostgresStore`] beyond the kit: events between separately connected stores, the
//! listener's reconnect, concurrent migrations, and the schema version check. Skipped
//! when PostgreSQL is not reachable at `MCP_TEST_POSTGRES_URL`, unless
//! `MCP_REQUIRE_SERVICES=1`.

use std::time::Duration;

use mcp_tasks::conformance::{Env, PostgresFactory, StoreFactory};
use mcp_tasks::{
    EventError, EventStream, Limit, Limits, NewTask, Origin, Owner, PostgresOptions, PostgresStore,
    StoreError, TaskEvent, TaskId, TaskRecord, TaskStore, WireRevision,
};
use mcp_tasks_protocol::tasks::TaskStatus;

const WAIT: Duration = Duration::from_secs(15);

fn url() -> String {
    std::env::var(PostgresFactory::URL_ENV).unwrap_or_else(|_| PostgresFactory::DEFAULT_URL.into())
}

fn new_task(owner: &Owner) -> NewTask {
    NewTask {
        trace_context: None,
        owner: owner.clone(),
        ttl_ms: None,
        poll_interval_ms: None,
        origin: Origin {
            method: "tools/call".into(),
            tool: Some("pg".into()),
            revision: WireRevision::V2026_07_28,
        },
        status_message: None,
        job: None,
        idempotency: None,
    }
}

/// The next event about `id` (other events skipped); `Lagged` is returned as an error.
async fn next_for(feed: &mut EventStream, id: &TaskId) -> Result<TaskEvent, EventError> {
    tokio::time::timeout(WAIT, async {
        loop {
            match feed.recv().await {
                Ok(e) if &e.key().id == id => return Ok(e),
                Ok(_) => continue,
                Err(e) => return Err(e),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("nothing about {id} within {WAIT:?}"))
}

/// A plain client, its connection driven in the background.
async fn raw() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .expect("raw connect");
    tokio::spawn(connection);
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separately_connected_stores_hear_each_other() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("pg_two_stores", Limits::default());
    let a = factory.open(&env).await.expect("store a");
    let b = factory.open(&env).await.expect("store b");
    let (mut a_feed, mut b_feed) = (a.events(), b.events());
    let owner = Owner::new("alice");

    let task = a.create(new_task(&owner)).await.expect("create");
    let heard = next_for(&mut b_feed, &task.id).await.expect("b hears");
    assert!(
        matches!(
            heard,
            TaskEvent::Changed {
                status: TaskStatus::Working,
                revision: 1,
                ..
            }
        ),
        "{heard:?}"
    );
    // The writer's own feed has it too, exactly once.
    let own = next_for(&mut a_feed, &task.id).await.expect("a hears");
    assert_eq!(own, heard);

    assert!(
        b.complete(&owner, &task.id, Default::default())
            .await
            .expect("complete")
            .won
    );
    let done = next_for(&mut a_feed, &task.id).await.expect("a hears b");
    assert!(
        matches!(
            done,
            TaskEvent::Changed {
                status: TaskStatus::Completed,
                revision: 2,
                ..
            }
        ),
        "{done:?}"
    );
    assert!(a_feed.try_recv().is_none(), "no echo of a's own create");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_listener_reconnects_and_resyncs_its_waiters() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("pg_reconnect", Limits::default());
    let writer = factory.open(&env).await.expect("writer");
    let waiter = factory.open(&env).await.expect("waiter");
    let owner = Owner::new("alice");
    // Subscribe before the create: its notification may reach the waiter's listener
    // before `create` returns here, and a later subscription would miss it.
    let mut feed = waiter.events();
    let task = writer.create(new_task(&owner)).await.expect("create");
    // Drain the create's notification, so only what follows counts.
    next_for(&mut feed, &task.id).await.expect("create heard");

    // Kill every listener connection of the schema.
    let admin = raw().await;
    let killed = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = 'mcp-tasks listener' AND query = $1",
            &[&format!("LISTEN {}", waiter.channel())],
        )
        .await
        .expect("terminate");
    assert!(
        killed.len() >= 2,
        "both stores' listeners: {}",
        killed.len()
    );

    // A change made while the listener is down may go unheard: the waiter must be told
    // to re-read (Lagged) once the listener is back.
    writer
        .set_status_message(&owner, &task.id, Some("during the outage".into()))
        .await
        .expect("message");
    let mut resynced = false;
    while !resynced {
        match next_for(&mut feed, &task.id).await {
            Err(EventError::Lagged(_)) => resynced = true,
            // Delivered before the connection died: fine, keep waiting for the resync.
            Ok(TaskEvent::Changed { .. }) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        waiter
            .get(&owner, &task.id)
            .await
            .expect("re-read")
            .status_message
            .as_deref(),
        Some("during the outage")
    );

    // And it listens again: a later change is heard as an event.
    writer
        .request_cancel(&owner, &task.id)
        .await
        .expect("cancel request");
    let heard = next_for(&mut feed, &task.id)
        .await
        .expect("heard after reconnect");
    assert!(
        matches!(heard, TaskEvent::CancelRequested { .. }),
        "{heard:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_starting_together_migrate_once() {
    if PostgresFactory::from_env().is_none() {
        return;
    }
    let schema = PostgresFactory::schema_for(&format!(
        "pg_migrate_{}",
        &TaskId::random().expect("rng").as_str()[..12]
    ));
    let connects = (0..4).map(|_| {
        PostgresStore::connect_with(PostgresOptions {
            schema: schema.clone(),
            pool_size: 2,
            ..PostgresOptions::new(url())
        })
    });
    let stores = futures::future::join_all(connects).await;
    let admin = raw().await;
    let versions = admin
        .query(&format!("SELECT version FROM {schema}.schema_version"), &[])
        .await;
    let functions = admin
        .query(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = $1 AND p.proname = 'create_task'",
            &[&schema],
        )
        .await;
    drop(stores);
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
        .expect("cleanup");
    let versions: Vec<i32> = versions
        .expect("versions")
        .iter()
        .map(|row| row.get(0))
        .collect();
    let expected: Vec<i32> = (1..=PostgresStore::SCHEMA_VERSION).collect();
    assert_eq!(versions, expected, "each migration applied once");
    assert_eq!(
        functions.expect("functions").len(),
        1,
        "create_task made once"
    );
}

/// A schema of version 1 (no `queued_tool`) with a task in it: a connect brings it to
/// the current version, the old record still loads, is never claimed, and finishes; a
/// task queued afterwards is claimed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_1_data_loads_after_the_queue_migration() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("pg_v1_upgrade", Limits::default());
    let schema = PostgresFactory::schema_for(&env.namespace);
    let owner = Owner::new("o");
    let old = factory.open(&env).await.expect("open");
    let task = old.create(new_task(&owner)).await.expect("create");
    drop(old);
    let admin = raw().await;
    admin
        .batch_execute(&format!(
            "DROP TABLE {schema}.sessions;
             DROP INDEX {schema}.tasks_queued;
             DROP INDEX {schema}.tasks_by_created;
             ALTER TABLE {schema}.tasks DROP COLUMN queued_tool, DROP COLUMN revision,
                 DROP COLUMN owner_slot, DROP COLUMN total_slot, DROP COLUMN status,
                 DROP COLUMN tool, DROP COLUMN lease_holder;
             DROP FUNCTION {schema}.create_task;
             DROP FUNCTION {schema}.save_task;
             DROP FUNCTION {schema}.take_slot;
             DROP FUNCTION {schema}.take_shard;
             DROP FUNCTION {schema}.create_tasks;
             DROP FUNCTION {schema}.save_tasks;
             DROP FUNCTION {schema}.take_units;
             DROP FUNCTION {schema}.sweep_expired;
             DROP TABLE {schema}.live_counts;
             CREATE TABLE {schema}.live_counts (owner BYTEA PRIMARY KEY, live BIGINT NOT NULL);
             CREATE TABLE {schema}.counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
             INSERT INTO {schema}.live_counts
               SELECT owner, count(*) FROM {schema}.tasks WHERE live GROUP BY owner;
             INSERT INTO {schema}.counters
               SELECT 'live_total', count(*) FROM {schema}.tasks WHERE live;
             DELETE FROM {schema}.schema_version WHERE version > 1;"
        ))
        .await
        .expect("back to version 1");
    let store = factory.open(&env).await.expect("open migrates");
    // The live count comes through the sharded counts of version 4.
    assert_eq!(store.live_tasks(&owner).await.expect("counts"), (1, 1));
    let read = store.get(&owner, &task.id).await.expect("old record loads");
    assert_eq!(read.job, None);
    // Version 8 filled the operator's columns of the rows already there.
    let working = mcp_tasks::OperatorFilter {
        status: Some(TaskStatus::Working),
        ..Default::default()
    };
    let listed = store
        .operator_list(&working, None, 10)
        .await
        .expect("operator list");
    assert_eq!(listed.tasks, vec![read.clone()]);
    assert_eq!(store.operator_counts().await.expect("counts").working, 1);
    let tools = vec!["pg".to_owned()];
    assert!(
        store
            .claim_next(&tools, "w", 1_000)
            .await
            .expect("claim")
            .is_none()
    );
    let mut queued = new_task(&owner);
    queued.job = Some(mcp_tasks::Job::new(serde_json::Map::new()));
    let queued = store.create(queued).await.expect("create queued");
    let claimed = store.claim_next(&tools, "w", 1_000).await.expect("claim");
    assert_eq!(claimed.map(|r| r.id), Some(queued.id));
    assert!(
        store
            .complete(&owner, &task.id, serde_json::Map::new())
            .await
            .expect("complete")
            .won
    );
    // The queued task is still live; the old one gave its units back.
    assert_eq!(store.live_tasks(&owner).await.expect("counts"), (1, 1));
    drop(store);
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
        .expect("cleanup");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_version_is_refused_and_data_survives_reconnects() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("pg_version", Limits::default());
    let owner = Owner::new("o");
    let store = factory.open(&env).await.expect("open");
    let id = store.create(new_task(&owner)).await.expect("create").id;
    let schema = store.schema().to_owned();
    drop(store);

    // Every handle gone; a new one reads what was committed, counters included.
    let again = factory.open(&env).await.expect("reopen");
    assert_eq!(again.get(&owner, &id).await.expect("get").id, id);
    assert_eq!(again.live_tasks(&owner).await.expect("counts"), (1, 1));
    drop(again);

    let admin = raw().await;
    admin
        .execute(
            &format!("INSERT INTO {schema}.schema_version (version) VALUES ($1)"),
            &[&(PostgresStore::SCHEMA_VERSION + 1)],
        )
        .await
        .expect("bump version");
    match factory.open(&env).await {
        Err(StoreError::Backend(e)) => {
            let msg = e.message();
            assert!(msg.contains("newer"), "{msg}");
            assert!(
                msg.contains(&(PostgresStore::SCHEMA_VERSION + 1).to_string()),
                "{msg}"
            );
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_schema_names_and_urls_are_backend_errors() {
    for options in [
        PostgresOptions {
            schema: "Robert'); DROP TABLE students;--".into(),
            ..PostgresOptions::new(url())
        },
        PostgresOptions::new("postgres://[not a url"),
    ] {
        assert!(matches!(
            PostgresStore::connect_with(options).await,
            Err(StoreError::Backend(_))
        ));
    }
}

/// Creates, terminal writes and sweeps racing on two stores and one owner: no deadlock
/// or serialization error surfaces, and the counters match the rows afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_creates_finishes_and_sweeps_keep_the_counters_exact() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("pg_race", Limits::default());
    let a = factory.open(&env).await.expect("a");
    let b = factory.open(&env).await.expect("b");
    let owner = Owner::new("racer");
    let mut workers = Vec::new();
    for w in 0..8u64 {
        let (mine, other) = if w % 2 == 0 {
            (a.clone(), b.clone())
        } else {
            (b.clone(), a.clone())
        };
        let (owner, clock) = (owner.clone(), env.clock.clone());
        workers.push(tokio::spawn(async move {
            for i in 0..15u64 {
                if i % 4 == 0 {
                    other.sweep().await.expect("sweep");
                }
                let task = mine
                    .create(NewTask {
                        trace_context: None,
                        ttl_ms: Some(1 + (w * 15 + i) % 40),
                        ..new_task(&owner)
                    })
                    .await
                    .expect("create");
                clock.advance(1);
                if i % 3 == 0 {
                    // Left unfinished: counted until a sweep purges it.
                    continue;
                }
                // Both stores race to finish it; it may also expire and be swept meanwhile.
                let (x, y) = tokio::join!(
                    mine.complete(&owner, &task.id, Default::default()),
                    other.cancel(&owner, &task.id, None),
                );
                for r in [x, y] {
                    match r {
                        Ok(_) | Err(StoreError::NotFound) => {}
                        Err(e) => panic!("finish: {e}"),
                    }
                }
            }
        }));
    }
    for worker in workers {
        worker.await.expect("worker");
    }
    let admin = raw().await;
    let unfinished: i64 = admin
        .query_one(
            &format!("SELECT count(*) FROM {}.tasks WHERE live", a.schema()),
            &[],
        )
        .await
        .expect("count")
        .get(0);
    let (owner_live, total) = a.live_tasks(&owner).await.expect("counts");
    assert!(unfinished > 0, "some tasks stayed unfinished");
    assert_eq!((owner_live as i64, total as i64), (unfinished, unfinished));
}

/// The live counts are spread over shards, each holding a share of the limit: under 120
/// creates racing on two stores, exactly the limit of them succeed (per owner, and in
/// total across owners), the rest are refused naming the limit; a finished task's unit
/// comes back to exactly one more create.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_creates_stop_exactly_at_the_limits() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    // Neither limit a multiple of the shard count; the total below the owners' sum.
    let limits = Limits {
        max_live_tasks_per_owner: 37,
        max_live_tasks_total: 53,
        ..Limits::default()
    };
    let env = Env::new("pg_exact_limits", limits);
    let a = factory.open(&env).await.expect("a");
    let b = factory.open(&env).await.expect("b");
    let race = |owner: Owner, n: usize| {
        let (a, b) = (a.clone(), b.clone());
        async move {
            let creates = (0..n).map(|i| {
                let store = if i % 2 == 0 { a.clone() } else { b.clone() };
                let owner = owner.clone();
                async move { store.create(new_task(&owner)).await }
            });
            futures::future::join_all(creates).await
        }
    };
    let refused_by = |results: &[Result<TaskRecord, StoreError>], limit: Limit| {
        let other: Vec<_> = results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .filter(|e| !matches!(e, StoreError::LimitExceeded { .. }))
            .collect();
        assert!(other.is_empty(), "{other:?}");
        results
            .iter()
            .filter(|r| matches!(r, Err(StoreError::LimitExceeded { limit: l, .. }) if *l == limit))
            .count()
    };
    let alice = Owner::new("alice");
    let first = race(alice.clone(), 60).await;
    let made: Vec<&TaskRecord> = first.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(made.len(), 37, "exactly the owner's limit");
    assert_eq!(refused_by(&first, Limit::LiveTasksPerOwner), 23);
    assert_eq!(a.live_tasks(&alice).await.expect("counts"), (37, 37));

    let bob = Owner::new("bob");
    let second = race(bob.clone(), 60).await;
    assert_eq!(
        second.iter().filter(|r| r.is_ok()).count(),
        16,
        "53 in total"
    );
    assert_eq!(refused_by(&second, Limit::LiveTasksTotal), 44);

    // Five of alice's finish: five more creates (of anyone) fit, not six.
    for task in made.iter().take(5) {
        assert!(
            a.complete(&alice, &task.id, Default::default())
                .await
                .expect("complete")
                .won
        );
    }
    let third = race(bob.clone(), 6).await;
    assert_eq!(third.iter().filter(|r| r.is_ok()).count(), 5);
    assert_eq!(refused_by(&third, Limit::LiveTasksTotal), 1);
    assert_eq!(b.live_tasks(&bob).await.expect("counts"), (21, 53));
}

/// Schema version 5: after the per-owner limit is lowered, shards filled under the old
/// limit do not let the others admit past the new one. 32 tasks under a limit of 32 (two
/// per shard); all but shard 0's two finish; under a new limit of 4 exactly two more
/// creates fit (shards 1 to 3 alone would have taken three).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lowered_limit_holds_over_shards_filled_under_the_old_one() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let wide = Limits {
        max_live_tasks_per_owner: 32,
        ..Limits::default()
    };
    let env = Env::new("pg_lowered_limit", wide);
    let a = factory.open(&env).await.expect("a");
    let alice = Owner::new("alice");
    for _ in 0..32 {
        a.create(new_task(&alice)).await.expect("within 32");
    }
    let schema = PostgresFactory::schema_for(&env.namespace);
    let raw = raw().await;
    let rows = raw
        .query(
            &format!("SELECT id FROM {schema}.tasks WHERE owner_slot <> 0"),
            &[],
        )
        .await
        .expect("the tasks outside shard 0");
    assert_eq!(rows.len(), 30, "two tasks per shard");
    for row in rows {
        let id = TaskId::from_wire(row.get::<_, String>(0));
        assert!(
            a.complete(&alice, &id, Default::default())
                .await
                .expect("complete")
                .won
        );
    }
    assert_eq!(a.live_tasks(&alice).await.expect("counts").0, 2);
    let narrow = Env {
        limits: Limits {
            max_live_tasks_per_owner: 4,
            ..Limits::default()
        },
        ..env.clone()
    };
    let b = factory
        .open(&narrow)
        .await
        .expect("b, with the lower limit");
    let mut made = 0;
    for _ in 0..6 {
        match b.create(new_task(&alice)).await {
            Ok(_) => made += 1,
            Err(StoreError::LimitExceeded {
                limit: Limit::LiveTasksPerOwner,
                max: 4,
            }) => {}
            Err(e) => panic!("unexpected: {e}"),
        }
    }
    assert_eq!(made, 2, "4 live in all under the new limit");
    assert_eq!(b.live_tasks(&alice).await.expect("counts").0, 4);
}
