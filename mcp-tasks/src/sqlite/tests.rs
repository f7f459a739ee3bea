//! Unit tests of what the conformance kit does not reach.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use super::SqliteStore;
use crate::{
    Limit, Limits, ManualClock, NewTask, Origin, Owner, StoreError, TaskEvent, TaskStore,
    WireRevision,
};

/// A database path under the temp dir, removed (with `-wal`/`-shm`) on drop.
struct TempDb(PathBuf);

impl TempDb {
    fn new(name: &str) -> TempDb {
        let salt = crate::TaskId::random().expect("rng");
        TempDb(std::env::temp_dir().join(format!(
            "mcp-tasks-unit-{name}-{}-{}.sqlite3",
            std::process::id(),
            &salt.as_str()[..12]
        )))
    }

    fn open(&self, limits: Limits, clock: &ManualClock) -> SqliteStore {
        SqliteStore::open_with_clock(&self.0, limits, Arc::new(clock.clone())).expect("open")
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", ".lock"] {
            let mut file = self.0.clone().into_os_string();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
    }
}

fn new_task(owner: &Owner, ttl_ms: Option<u64>) -> NewTask {
    NewTask {
        trace_context: None,
        owner: owner.clone(),
        ttl_ms,
        poll_interval_ms: None,
        origin: Origin {
            method: "tools/call".into(),
            tool: None,
            revision: WireRevision::V2025_11_25,
        },
        status_message: None,
        job: None,
    }
}

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
async fn handles_share_a_feed_per_file_only() {
    let (db, other_db) = (TempDb::new("feed_a"), TempDb::new("feed_b"));
    let clock = ManualClock::default();
    let a = db.open(Limits::default(), &clock);
    // Another path spelling of the same file shares the feed.
    let dotted =
        db.0.parent()
            .expect("dir")
            .join(".")
            .join(db.0.file_name().expect("name"));
    let b = SqliteStore::open_with_clock(&dotted, Limits::default(), Arc::new(clock.clone()))
        .expect("open");
    let c = other_db.open(Limits::default(), &clock);
    let (mut on_b, mut on_c) = (b.events(), c.events());
    let owner = Owner::new("o");
    let task = a.create(new_task(&owner, None)).await.expect("create");
    match on_b.try_recv() {
        Some(Ok(TaskEvent::Changed { key, .. })) => assert_eq!(key.id, task.id),
        other => panic!("expected the create on b, got {other:?}"),
    }
    assert!(on_c.try_recv().is_none(), "another file's feed heard it");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_a_backend_error() {
    let db = TempDb::new("garbage");
    std::fs::write(&db.0, vec![0x5a_u8; 8192]).expect("write");
    match SqliteStore::open(&db.0, Limits::default()) {
        Err(StoreError::Backend(e)) => assert!(!e.message().is_empty()),
        other => panic!("expected a backend error, got {other:?}"),
    }
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

/// The hot queries use their indexes, not a scan of every task.
#[test]
fn list_and_sweep_queries_use_their_indexes() {
    let db = TempDb::new("plans");
    let conn = super::schema::open(&db.0).expect("open");
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

#[tokio::test]
async fn handles_in_one_process_share_the_claim() {
    let db = TempDb::new("claim");
    let clock = ManualClock::default();
    let a = db.open(Limits::default(), &clock);
    let b = db.open(Limits::default(), &clock);
    a.claim().expect("first claim");
    b.claim().expect("the same process claims again");
    let holder = std::fs::read_to_string(SqliteStore::lock_path(&db.0)).expect("lock file");
    assert!(
        holder.contains(&format!("process {}", std::process::id())),
        "{holder}"
    );
    // Recovery claims the file too (and may run from any handle of this process).
    b.recover_unfinished(mcp_tasks_protocol::jsonrpc::ErrorObject::new(
        -32603, "lost",
    ))
    .await
    .expect("recover");
}

/// A write that meets a read-only database (a file opened read-only underneath, a file
/// system remounted read-only) is a clear, permanent error that says read-only; a busy or
/// full database is transient.
#[test]
fn a_write_on_a_read_only_database_says_so() {
    let db = TempDb::new("read_only_write");
    drop(db.open(Limits::default(), &ManualClock::default()));
    let conn =
        rusqlite::Connection::open_with_flags(&db.0, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open read-only");
    let refused = conn
        .execute("DELETE FROM tasks", [])
        .expect_err("a write on a read-only connection");
    let e = super::schema::backend(refused);
    assert!(!e.is_transient(), "{e:?}");
    assert!(e.to_string().contains("read-only"), "{e}");

    let busy =
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY), None);
    assert!(super::schema::backend(busy).is_transient());
    let full =
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL), None);
    let full = super::schema::backend(full);
    assert!(full.is_transient());
    assert!(full.to_string().contains("disk is full"), "{full}");
}

/// A file of schema version 1 (no `queued_tool`) with a task in it: opening brings it to
/// the current version; the old record still loads, is never claimed, and finishes; a
/// task queued afterwards is claimed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_1_files_load_after_the_queue_migration() {
    let db = TempDb::new("v1-upgrade");
    let clock = ManualClock::default();
    let owner = Owner::new("o");
    let mut tool_task = new_task(&owner, None);
    tool_task.origin.tool = Some("t".into());
    let task = {
        let store = db.open(Limits::default(), &clock);
        store.create(tool_task.clone()).await.expect("create")
    };
    {
        let conn = rusqlite::Connection::open(&db.0).expect("raw open");
        conn.execute_batch(
            "DROP TRIGGER task_log_goes_with_its_task;
             DROP TABLE task_log;
             ALTER TABLE tasks DROP COLUMN log_first;
             ALTER TABLE tasks DROP COLUMN log_next;
             ALTER TABLE tasks DROP COLUMN log_bytes;
             DROP INDEX tasks_queued;
             DROP INDEX tasks_by_created;
             DROP INDEX tasks_by_status;
             DROP INDEX tasks_by_tool;
             DROP INDEX tasks_by_holder;
             ALTER TABLE tasks DROP COLUMN queued_tool;
             ALTER TABLE tasks DROP COLUMN status;
             ALTER TABLE tasks DROP COLUMN tool;
             ALTER TABLE tasks DROP COLUMN lease_holder;
             PRAGMA user_version = 1;",
        )
        .expect("back to version 1");
    }
    let store = db.open(Limits::default(), &clock);
    let read = store.get(&owner, &task.id).await.expect("old record loads");
    assert_eq!(read.job, None);
    // Version 3 indexes the rows already there for the operator's view.
    let by_tool = crate::OperatorFilter {
        tool: Some("t".into()),
        ..Default::default()
    };
    let listed = store.operator_list(&by_tool, None, 10).await.expect("list");
    assert_eq!(listed.tasks, vec![read.clone()]);
    assert_eq!(
        store
            .operator_counts()
            .await
            .expect("counts")
            .by_tool
            .get("t"),
        Some(&1)
    );
    let tools = vec!["t".to_owned()];
    assert!(
        store
            .claim_next(&tools, "w", 1_000)
            .await
            .expect("claim")
            .is_none()
    );
    tool_task.job = Some(crate::Job::new(serde_json::Map::new()));
    let queued = store.create(tool_task).await.expect("create queued");
    let claimed = store.claim_next(&tools, "w", 1_000).await.expect("claim");
    assert_eq!(claimed.map(|r| r.id), Some(queued.id));
    assert!(
        store
            .complete(&owner, &task.id, serde_json::Map::new())
            .await
            .expect("complete")
            .won
    );
}

fn log_rows(db: &TempDb) -> i64 {
    rusqlite::Connection::open(&db.0)
        .expect("raw open")
        .query_row("SELECT count(*) FROM task_log", [], |row| row.get(0))
        .expect("count")
}

/// The sweep takes an expired task's log rows with it, and a trimmed log keeps only the
/// rows it reports.
#[tokio::test]
async fn log_rows_go_with_retention_and_the_sweep() {
    let db = TempDb::new("log_rows");
    let clock = ManualClock::default();
    let limits = Limits {
        max_log_entries: 3,
        ..Limits::default()
    };
    let store = db.open(limits, &clock);
    let owner = Owner::new("o");
    let task = store
        .create(new_task(&owner, Some(1_000)))
        .await
        .expect("create");
    let drafts = (0..5)
        .map(|i| {
            crate::LogDraft::new(
                "com.example.n",
                json!({ "i": i }).as_object().cloned().expect("an object"),
            )
        })
        .collect();
    assert_eq!(
        store
            .append_log(&owner, &task.id, drafts)
            .await
            .expect("append"),
        5
    );
    let page = store
        .read_log(&owner, &task.id, None, 10)
        .await
        .expect("read");
    assert_eq!((page.earliest, page.next), (3, 6));
    assert_eq!(log_rows(&db), 3);
    clock.advance(1_000);
    assert_eq!(store.sweep().await.expect("sweep").purged, 1);
    assert_eq!(log_rows(&db), 0);
}

/// A file of schema version 3 (no logs) upgrades in place: its tasks start an empty log
/// at 0 and keep the entries of every write after.
#[tokio::test]
async fn version_3_files_start_their_tasks_logs_empty() {
    let db = TempDb::new("v3-upgrade");
    let clock = ManualClock::default();
    let owner = Owner::new("o");
    let task = {
        let store = db.open(Limits::default(), &clock);
        store.create(new_task(&owner, None)).await.expect("create")
    };
    {
        let conn = rusqlite::Connection::open(&db.0).expect("raw open");
        conn.execute_batch(
            "DROP TRIGGER task_log_goes_with_its_task;
             DROP TABLE task_log;
             ALTER TABLE tasks DROP COLUMN log_first;
             ALTER TABLE tasks DROP COLUMN log_next;
             ALTER TABLE tasks DROP COLUMN log_bytes;
             PRAGMA user_version = 3;",
        )
        .expect("back to version 3");
    }
    let store = db.open(Limits::default(), &clock);
    let page = store
        .read_log(&owner, &task.id, None, 10)
        .await
        .expect("read");
    assert!(page.entries.is_empty());
    assert_eq!((page.earliest, page.next), (0, 0));
    store
        .set_status_message(&owner, &task.id, Some("on".into()))
        .await
        .expect("message");
    let seq = store
        .append_log(&owner, &task.id, vec![crate::LogDraft::text("hi")])
        .await
        .expect("append");
    assert_eq!(seq, 1);
    let page = store
        .read_log(&owner, &task.id, None, 10)
        .await
        .expect("read");
    assert_eq!(page.entries[0].payload["statusMessage"], "on");
    assert_eq!((page.earliest, page.next), (0, 2));
    let version: i64 = rusqlite::Connection::open(&db.0)
        .expect("raw open")
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .expect("version");
    assert_eq!(version, SqliteStore::SCHEMA_VERSION);
}
