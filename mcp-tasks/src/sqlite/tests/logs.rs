//! The rows of task logs: retention and the sweep remove them.

use serde_json::json;

use super::{TempDb, new_task};
use crate::{Limits, ManualClock, Owner, TaskStore};

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
