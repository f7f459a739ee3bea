//! [`MemoryStore`]: the in-process backend. Concurrent without a global lock: tasks live
//! in shards by id, each owner's listing index in shards by owner (`db.rs`); its
//! [`Backend`](crate::Backend) implementation is in `backend.rs`. Clones are handles on
//! the same store and share its event feed. Nothing survives the process.

mod backend;
mod db;
mod key;
mod nodes;
mod operator;
mod ops;

use std::sync::Arc;

use crate::clock::{Clock, SystemClock};
use crate::limits::Limits;
use db::Inner;

/// The in-memory [`TaskStore`](crate::TaskStore).
#[derive(Debug, Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new(Limits::default())
    }
}

impl MemoryStore {
    /// A store with these limits on the system clock.
    pub fn new(limits: Limits) -> MemoryStore {
        MemoryStore::with_clock(limits, Arc::new(SystemClock))
    }

    /// A store reading time from `clock` (a [`ManualClock`](crate::ManualClock) in tests).
    pub fn with_clock(limits: Limits, clock: Arc<dyn Clock>) -> MemoryStore {
        MemoryStore {
            inner: Arc::new(Inner::new(limits, clock)),
        }
    }

    /// How many tasks are stored (finished ones included, expired ones until swept).
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// True when no task is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
