//! [`DeafStore`]: a [`MemoryStore`] whose event feed is the test's, not the store's, so a
//! test decides which events a server hears, and when it hears of a lag; which the
//! test can take down (every operation fails as unavailable) and bring back; and which
//! counts its [`TaskStore::get`] calls (what a test of reads per change compares). It
//! has neither the operator's view nor session records.
//!
//! [`TaskStore::get`]: mcp_tasks::TaskStore::get

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures::future::BoxFuture;
use mcp_tasks::{
    Decorated, EventStream, FeedItem, MemoryStore, Operation, SessionStore, StoreError, StoreLayer,
    TaskStore,
};
use tokio::sync::broadcast;

/// A [`MemoryStore`] whose event feed is the test's, not the store's: the store is
/// [`Decorated::inner`] (calls on it bypass the test's controls), the controls are
/// [`Decorated::layer`].
pub type DeafStore = Decorated<Deaf>;

/// What a [`DeafStore`] changes of the [`MemoryStore`] it wraps.
#[derive(Debug)]
pub struct Deaf {
    /// What the store's subscribers hear (send [`FeedItem::Resync`] for a lag).
    pub feed: broadcast::Sender<FeedItem>,
    down: AtomicBool,
    /// [`TaskStore::get`] calls so far.
    gets: AtomicU64,
}

impl Deaf {
    /// An empty store whose subscribers hear only what is sent on `feed`.
    pub fn store() -> DeafStore {
        let deaf = Deaf {
            feed: broadcast::channel(16).0,
            down: AtomicBool::new(false),
            gets: AtomicU64::new(0),
        };
        Decorated::new(Arc::new(MemoryStore::default()), deaf)
    }

    /// How many times [`TaskStore::get`] was called so far (refused calls included).
    pub fn gets(&self) -> u64 {
        self.gets.load(Ordering::SeqCst)
    }

    /// Takes the store down (`true`: every operation fails with
    /// [`StoreError::Unavailable`], nothing changes) or brings it back.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Why `op` is refused, if it is: the operator's view is unsupported (as by a store
    /// without it, down or not), anything else fails while the store is down.
    fn refusal(&self, op: Operation) -> Option<StoreError> {
        let unsupported = |operation| Some(StoreError::Unsupported { operation });
        match op {
            Operation::OperatorList => unsupported("operator listing"),
            Operation::OperatorGet => unsupported("operator reads"),
            Operation::OperatorCounts => unsupported("operator counts"),
            _ if self.down.load(Ordering::SeqCst) => {
                Some(StoreError::unavailable("the test took the store down"))
            }
            _ => None,
        }
    }
}

impl StoreLayer for Deaf {
    fn around<'a, T: Send + 'a>(
        &'a self,
        op: Operation,
        call: BoxFuture<'a, Result<T, StoreError>>,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        if op == Operation::Get {
            self.gets.fetch_add(1, Ordering::SeqCst);
        }
        match self.refusal(op) {
            Some(e) => Box::pin(std::future::ready(Err(e))),
            None => call,
        }
    }

    fn events(&self, _: &dyn TaskStore) -> EventStream {
        EventStream::with_resync(self.feed.subscribe())
    }

    fn sessions<'a>(&'a self, _: &'a dyn TaskStore) -> Option<&'a dyn SessionStore> {
        None
    }
}
