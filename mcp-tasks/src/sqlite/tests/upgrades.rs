//! Files of older schema versions, brought to the current one on open.

use super::{TempDb, new_task};
use crate::sqlite::SqliteStore;
use crate::{Limits, ManualClock, Owner, TaskStore};

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

/// A file of schema version 5 comes to version 6 whether or not it has the node
/// registry: a build of version 5 created `nodes` on first use, so a file it wrote may
/// hold the table with rows, which stay; a file without it gets it.
#[tokio::test]
async fn version_5_files_keep_or_get_the_node_registry() {
    let clock = ManualClock::default();
    let beat = crate::NodeBeat {
        id: "w1".into(),
        role: "worker".into(),
        interval_ms: 1_000,
        starting: true,
        drained: false,
    };

    // With the table and a row in it.
    let with = TempDb::new("v5-with-nodes");
    let written = {
        let store = with.open(Limits::default(), &clock);
        store.heartbeat_node(&beat).await.expect("beat")
    };
    set_version(&with, 5);
    {
        let store = with.open(Limits::default(), &clock);
        let listed = store.list_nodes().await.expect("list");
        assert_eq!(listed, vec![written]);
    }
    assert_eq!(version(&with), SqliteStore::SCHEMA_VERSION);

    // Without it.
    let without = TempDb::new("v5-without-nodes");
    drop(without.open(Limits::default(), &clock));
    {
        let conn = rusqlite::Connection::open(&without.0).expect("raw open");
        conn.execute_batch("DROP TABLE nodes; PRAGMA user_version = 5;")
            .expect("back to version 5");
    }
    let store = without.open(Limits::default(), &clock);
    assert!(store.list_nodes().await.expect("list").is_empty());
    let written = store.heartbeat_node(&beat).await.expect("beat");
    assert_eq!(store.list_nodes().await.expect("list"), vec![written]);
    drop(store);
    assert_eq!(version(&without), SqliteStore::SCHEMA_VERSION);
}

fn set_version(db: &TempDb, version: i64) {
    rusqlite::Connection::open(&db.0)
        .expect("raw open")
        .pragma_update(None, "user_version", version)
        .expect("set version");
}

fn version(db: &TempDb) -> i64 {
    rusqlite::Connection::open(&db.0)
        .expect("raw open")
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .expect("version")
}
