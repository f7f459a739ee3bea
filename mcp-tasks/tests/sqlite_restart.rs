//! [`SqliteStore`] across a restart: every handle is dropped, the file is opened again by
//! a new store, and everything reads back as it was.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use mcp_tasks::{
    Limit, Limits, ManualClock, NewTask, Origin, Owner, SqliteStore, StoreError, TaskRecord,
    TaskStore, WireRevision,
};
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use serde_json::json;

/// A database path under the temp dir, removed (with `-wal`/`-shm`) on drop.
struct TempDb(PathBuf);

impl TempDb {
    fn new(name: &str) -> TempDb {
        let salt = mcp_tasks::TaskId::random().expect("rng");
        TempDb(std::env::temp_dir().join(format!(
            "mcp-tasks-restart-{name}-{}-{}.sqlite3",
            std::process::id(),
            &salt.as_str()[..12]
        )))
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut file = self.0.clone().into_os_string();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
    }
}

fn limits() -> Limits {
    Limits {
        max_live_tasks_per_owner: 3,
        ..Limits::default()
    }
}

fn new_task(owner: &Owner) -> NewTask {
    NewTask {
        trace_context: None,
        owner: owner.clone(),
        ttl_ms: Some(60 * 60 * 1000),
        poll_interval_ms: Some(250),
        origin: Origin {
            method: "tools/call".into(),
            tool: Some("restart".into()),
            revision: WireRevision::V2025_11_25,
        },
        status_message: Some("starting".into()),
        job: None,
        idempotency: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_survives_a_restart() {
    let db = TempDb::new("records");
    let clock = ManualClock::default();
    let owner = Owner::new("owner \u{e9}\u{4f60}");
    let mut before: Vec<TaskRecord> = Vec::new();
    {
        let store =
            SqliteStore::open_with_clock(&db.0, limits(), Arc::new(clock.clone())).expect("open");
        let clone = store.clone();
        let second = SqliteStore::open_with_clock(&db.0, limits(), Arc::new(clock.clone()))
            .expect("second handle");

        // completed, with non-ASCII text and a 100 KiB string
        let completed = store.create(new_task(&owner)).await.expect("create");
        let big = "\u{1f600}ab\u{fc}".repeat(100 * 1024 / 8);
        assert!(big.len() >= 100 * 1024);
        let result = json!({
            "content": [{"type": "text", "text": "Gr\u{fc}\u{df}e \u{5e9}\u{5dc}\u{5d5}\u{5dd} nul:\u{0}"}],
            "structuredContent": {"big": big, "n": 0.1, "max": u64::MAX},
        });
        let serde_json::Value::Object(result) = result else {
            unreachable!()
        };
        assert!(
            clone
                .complete(&owner, &completed.id, result)
                .await
                .expect("complete")
                .won
        );
        clock.advance(1);

        // failed
        let failed = second.create(new_task(&owner)).await.expect("create");
        let error = ErrorObject::new(-32042, "gone").with_data(json!({"why": ["a", 1, null]}));
        second.fail(&owner, &failed.id, error).await.expect("fail");
        clock.advance(1);

        // input_required: two pending, one answered and not yet taken
        let waiting = store.create(new_task(&owner)).await.expect("create");
        let requests: BTreeMap<_, _> = [
            ("a".to_owned(), json!({"method": "elicitation/create"})),
            ("b".to_owned(), json!({"method": "sampling/createMessage"})),
            ("c".to_owned(), json!({"method": "roots/list"})),
        ]
        .into();
        store
            .request_input(&owner, &waiting.id, requests)
            .await
            .expect("input");
        let resolved = second
            .resolve_input(
                &owner,
                &waiting.id,
                [("c".to_owned(), json!({"roots": []}))].into(),
            )
            .await
            .expect("resolve");
        assert_eq!(resolved.accepted, vec!["c".to_owned()]);
        clock.advance(1);

        // working, with a lease and a cancel request
        let working = store.create(new_task(&owner)).await.expect("create");
        store
            .claim_lease(&owner, &working.id, "worker-1", 600_000)
            .await
            .expect("lease");
        store
            .request_cancel(&owner, &working.id)
            .await
            .expect("cancel request");

        for task in [&completed, &failed, &waiting, &working] {
            before.push(store.get(&owner, &task.id).await.expect("get"));
        }
        assert_eq!(before[0].status, TaskStatus::Completed);
        assert_eq!(before[1].status, TaskStatus::Failed);
        assert_eq!(before[2].status, TaskStatus::InputRequired);
        assert_eq!(before[3].status, TaskStatus::Working);
        // Every handle is dropped here.
    }

    let store =
        SqliteStore::open_with_clock(&db.0, limits(), Arc::new(clock.clone())).expect("reopen");
    for rec in &before {
        assert_eq!(&store.get(&owner, &rec.id).await.expect("get"), rec);
    }
    let page = store.list(&owner, None, 10).await.expect("list");
    assert_eq!(page.tasks, before, "listed oldest first, all of them");
    assert_eq!(page.next_cursor, None);
    let first = store.list(&owner, None, 2).await.expect("page 1");
    let cursor = first.next_cursor.expect("more");
    let rest = store.list(&owner, Some(&cursor), 2).await.expect("page 2");
    assert_eq!(rest.tasks, before[2..]);

    // Two unfinished tasks were counted before the restart, and still are.
    assert_eq!(store.live_tasks(&owner).await.expect("counts"), (2, 2));
    store
        .create(new_task(&owner))
        .await
        .expect("the third slot");
    assert!(matches!(
        store.create(new_task(&owner)).await,
        Err(StoreError::LimitExceeded {
            limit: Limit::LiveTasksPerOwner,
            ..
        })
    ));

    // The lease and the pending input still bind.
    let (waiting, working) = (&before[2], &before[3]);
    assert!(matches!(
        store
            .claim_lease(&owner, &working.id, "worker-2", 1_000)
            .await,
        Err(StoreError::LeaseHeld)
    ));
    assert_eq!(
        store
            .take_input_response(&owner, &waiting.id, "c")
            .await
            .expect("take"),
        Some(json!({"roots": []}))
    );
    assert!(matches!(
        store
            .request_input(&owner, &waiting.id, [("c".to_owned(), json!({}))].into())
            .await,
        Err(StoreError::InputKeyReused { .. })
    ));
    // A finished task frees its slot after the restart too.
    assert!(
        store
            .cancel(&owner, &working.id, None)
            .await
            .expect("cancel")
            .won
    );
    assert_eq!(store.live_tasks(&owner).await.expect("counts"), (2, 2));
}

#[tokio::test]
async fn a_newer_schema_version_is_refused_clearly() {
    let db = TempDb::new("newer");
    drop(SqliteStore::open(&db.0, Limits::default()).expect("create the file"));
    {
        let conn = rusqlite::Connection::open(&db.0).expect("raw open");
        conn.pragma_update(None, "user_version", SqliteStore::SCHEMA_VERSION + 1)
            .expect("bump version");
    }
    match SqliteStore::open(&db.0, Limits::default()) {
        Err(StoreError::Backend(e)) => {
            let msg = e.message();
            assert!(msg.contains("newer"), "{msg}");
            assert!(
                msg.contains(&format!("{}", SqliteStore::SCHEMA_VERSION + 1)),
                "{msg}"
            );
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn reopening_an_up_to_date_file_keeps_its_data() {
    let db = TempDb::new("idempotent");
    let owner = Owner::new("o");
    let id = {
        let store = SqliteStore::open(&db.0, Limits::default()).expect("open");
        store.create(new_task(&owner)).await.expect("create").id
    };
    for _ in 0..3 {
        let store = SqliteStore::open(&db.0, Limits::default()).expect("reopen");
        assert_eq!(store.task_count().await.expect("count"), 1);
        assert!(store.get(&owner, &id).await.is_ok());
    }
}
