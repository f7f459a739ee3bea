//! What a store keeps reads back exactly; the live counts hold under concurrent creates;
//! the sweep frees what it removes and reports only what it should, through its indexes.

use serde_json::json;

use super::{TempDb, new_task};
use crate::sqlite::schema;
use crate::{Limit, Limits, ManualClock, Owner, StoreError, TaskStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_on_two_connections_respect_the_owner_limit() {
    let db = TempDb::new("limit_race");
    let clock = ManualClock::default();
    let limits = Limits {
        max_live_tasks_per_owner: 5,
        ..Limits::default()
    };
    let a = db.open(limits.clone(), &clock);
    let b = db.open(limits, &clock);
    let owner = Owner::new("racer");
    let mut calls = Vec::new();
    for i in 0..20 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let owner = owner.clone();
        calls.push(tokio::spawn(async move {
            store.create(new_task(&owner, None)).await
        }));
    }
    let mut created = 0;
    for call in calls {
        match call.await.expect("join") {
            Ok(_) => created += 1,
            Err(StoreError::LimitExceeded {
                limit: Limit::LiveTasksPerOwner,
                ..
            }) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(created, 5);
    assert_eq!(a.live_tasks(&owner).await.expect("count"), (5, 5));
}

#[tokio::test]
async fn floats_and_big_integers_round_trip_exactly() {
    let db = TempDb::new("floats");
    let clock = ManualClock::default();
    let store = db.open(Limits::default(), &clock);
    let owner = Owner::new("f");
    let task = store.create(new_task(&owner, None)).await.expect("create");
    let result = json!({
        "a": 0.1, "b": 0.30000000000000004, "c": 2.2250738585072014e-308,
        "d": 1.7976931348623157e308, "e": 5e-324, "f": 0.123_456_789_012_345_68,
        "g": 18_446_744_073_709_551_615_u64, "h": -9_223_372_036_854_775_808_i64,
        "i": 4.35, "j": 9_007_199_254_740_992.0,
    });
    let serde_json::Value::Object(result) = result else {
        unreachable!()
    };
    store
        .complete(&owner, &task.id, result.clone())
        .await
        .expect("complete");
    let read = store.get(&owner, &task.id).await.expect("get");
    assert_eq!(read.outcome, Some(crate::Outcome::Result(result)));
}

/// Records go through JSON text, so every finite `f64` must survive it (serde_json's
/// `float_roundtrip`; without it about a third of random doubles come back 1 ULP off).
#[tokio::test]
async fn random_doubles_round_trip_exactly() {
    let db = TempDb::new("random_doubles");
    let clock = ManualClock::default();
    let store = db.open(Limits::default(), &clock);
    let owner = Owner::new("f");
    let task = store.create(new_task(&owner, None)).await.expect("create");
    let mut bits: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut values = Vec::new();
    while values.len() < 5_000 {
        bits ^= bits << 13;
        bits ^= bits >> 7;
        bits ^= bits << 17;
        let f = f64::from_bits(bits);
        if f.is_finite() {
            values.push(json!(f));
        }
    }
    let mut result = mcp_tasks_protocol::JsonObject::new();
    result.insert("values".into(), serde_json::Value::Array(values));
    store
        .complete(&owner, &task.id, result.clone())
        .await
        .expect("complete");
    let read = store.get(&owner, &task.id).await.expect("get");
    assert_eq!(read.outcome, Some(crate::Outcome::Result(result)));
}

#[tokio::test]
async fn sweep_of_expired_unfinished_tasks_frees_their_slots() {
    let db = TempDb::new("sweep_counts");
    let clock = ManualClock::default();
    let store = db.open(Limits::default(), &clock);
    let (alice, bob) = (Owner::new("alice"), Owner::new("bob"));
    for _ in 0..3 {
        store
            .create(new_task(&alice, Some(1_000)))
            .await
            .expect("create");
    }
    let done = store
        .create(new_task(&alice, Some(1_000)))
        .await
        .expect("create");
    store
        .complete(&alice, &done.id, Default::default())
        .await
        .expect("complete");
    store
        .create(new_task(&bob, Some(60_000)))
        .await
        .expect("create");
    assert_eq!(store.live_tasks(&alice).await.expect("count"), (3, 4));
    clock.advance(1_000);
    let report = store.sweep().await.expect("sweep");
    assert_eq!(report.purged, 4);
    assert_eq!(report.expired_unfinished.len(), 3);
    assert_eq!(store.live_tasks(&alice).await.expect("count"), (0, 1));
    assert_eq!(store.live_tasks(&bob).await.expect("count"), (1, 1));
    assert_eq!(store.task_count().await.expect("len"), 1);
}

#[tokio::test]
async fn lapsed_lease_of_a_finished_task_is_not_reported() {
    let db = TempDb::new("lease_finished");
    let clock = ManualClock::default();
    let store = db.open(Limits::default(), &clock);
    let owner = Owner::new("w");
    let running = store.create(new_task(&owner, None)).await.expect("create");
    let finished = store.create(new_task(&owner, None)).await.expect("create");
    for task in [&running, &finished] {
        store
            .claim_lease(&owner, &task.id, "worker-1", 1_000)
            .await
            .expect("claim");
    }
    store
        .cancel(&owner, &finished.id, None)
        .await
        .expect("cancel");
    clock.advance(1_000);
    let report = store.sweep().await.expect("sweep");
    assert_eq!(report.lease_lapsed, vec![running.key()]);
    store
        .claim_lease(&owner, &running.id, "worker-2", 1_000)
        .await
        .expect("reclaim");
    assert!(store.sweep().await.expect("sweep").lease_lapsed.is_empty());
}

/// The hot queries use their indexes, not a scan of every task.
#[test]
fn list_and_sweep_queries_use_their_indexes() {
    let db = TempDb::new("plans");
    let conn = schema::open(&db.0).expect("open");
    let plan = |sql: &str| -> String {
        let mut st = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("explain");
        let rows = st
            .query_map([], |row| row.get::<_, String>(3))
            .expect("plan");
        rows.map(|r| r.expect("row")).collect::<Vec<_>>().join("; ")
    };
    let list = plan(
        "SELECT record FROM tasks WHERE owner = 'o' AND (created_at, id) > (1, 'x')
         AND (expires_at IS NULL OR expires_at > 5) ORDER BY created_at, id LIMIT 10",
    );
    assert!(list.contains("tasks_by_owner"), "{list}");
    assert!(!list.contains("TEMP B-TREE"), "{list}");
    let expired = plan("DELETE FROM tasks WHERE expires_at <= 5 RETURNING owner, id, live");
    assert!(expired.contains("tasks_by_expiry"), "{expired}");
    let lapsed = plan(
        "SELECT record FROM tasks WHERE live = 1 AND lease_expires_at <= 5
         ORDER BY lease_expires_at, id",
    );
    assert!(lapsed.contains("tasks_by_lease"), "{lapsed}");
    let log = plan(
        "SELECT seq, type, payload, at, node, actor FROM task_log
         WHERE task_id = 'x' AND seq >= 3 ORDER BY seq LIMIT 10",
    );
    assert!(log.contains("sqlite_autoindex_task_log_1"), "{log}");
    assert!(!log.contains("TEMP B-TREE"), "{log}");
    let trim = plan("DELETE FROM task_log WHERE task_id = 'x' AND seq < 3");
    assert!(trim.contains("sqlite_autoindex_task_log_1"), "{trim}");
}
