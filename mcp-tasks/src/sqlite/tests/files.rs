//! The database file and the handles on it: the feed, the claim, a file that is no
//! database, a read-only one.

use std::sync::Arc;

use super::{TempDb, new_task};
use crate::sqlite::{SqliteStore, schema};
use crate::{Limits, ManualClock, Owner, StoreError, TaskEvent, TaskStore};

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
    let e = schema::backend(refused);
    assert!(!e.is_transient(), "{e:?}");
    assert!(e.to_string().contains("read-only"), "{e}");

    let busy =
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY), None);
    assert!(schema::backend(busy).is_transient());
    let full =
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL), None);
    let full = schema::backend(full);
    assert!(full.is_transient());
    assert!(full.to_string().contains("disk is full"), "{full}");
}
