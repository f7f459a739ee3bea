//! Unit tests of what the conformance kit does not reach, by concept: [`records`] (exact
//! round trips, the live counts, the sweep and its queries), [`files`] (the database file
//! and the handles on it), [`recovery`] (crash recovery), [`logs`] (the log's rows) and
//! [`upgrades`] (files of older schema versions). The helpers they share are here.

mod files;
mod logs;
mod records;
mod recovery;
mod upgrades;

use std::path::PathBuf;
use std::sync::Arc;

use super::SqliteStore;
use crate::{Limits, ManualClock, NewTask, Origin, Owner, WireRevision};

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
        idempotency: None,
    }
}
