//! The store's events routed to whoever watches one task or one owner's tasks: a
//! `subscriptions/listen` stream, a 2025-11-25 session's status watcher, a waiting
//! `tasks/result`, a question being asked.
//!
//! Each of them used to hold its own subscription to the store's feed, so every change
//! to any task woke every open stream, which then threw the event away: with 50 listen
//! streams open, one task's change cost 50 wake-ups. Here the runtime's event pump
//! (`events.rs`), which reads the feed anyway, hands each event only to the watches of
//! its task and of its owner.
//!
//! **Invariants.**
//! - A watch is registered when it is made (under the registry's lock), before its maker
//!   reads the store: a change written after that read is routed to it, a change written
//!   before is in what the read saw. So "subscribe, then read" stays lossless.
//! - A watch loses events, never the news that it lost some: when its queue is full, or
//!   the pump's own subscription lagged, its next receive after the events still queued
//!   is [`EventError::Lagged`], and its holder re-reads what it watches (as with a
//!   subscription of its own).
//! - Delivering never waits: it is a `try_send` under a lock held for no `.await`.
//! - When the pump ends (the feed closed, or the runtime stopped at the end of shutdown,
//!   after listen streams and session watchers have ended), every watch, and every watch
//!   made afterwards, receives [`EventError::Closed`].
//! - A change this node wrote itself may be handed over at once by its writer
//!   ([`Watchers::deliver_early`]), before the feed brings it back: the feed's copy of
//!   that change (same task, same revision) is then dropped, so a watch hears a change
//!   once. The writer's hand-over saves the pump's hop through the scheduler's queue, the
//!   largest part of a pushed completion's latency under load. What was handed over early
//!   is remembered until the feed's copy arrives, forgotten at a lag (when the feed may
//!   have lost the copy), and never more than [`EARLY`] changes at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use mcp_tasks::{EventError, Owner, TaskEvent, TaskKey};
use tokio::sync::mpsc;

/// Events a watch may hold before it is told it lagged: as many as a subscription of the
/// store's own feed holds (the channel takes memory only for what it holds).
const QUEUE: usize = mcp_tasks::EVENT_BUFFER;

/// Changes handed over early and not yet seen on the feed, at most: past it, what is
/// remembered is forgotten (a change whose copy the feed then brings is heard twice,
/// which a watch's holder tolerates: it reads the record again).
const EARLY: usize = 4096;

/// What a watch asked to hear about.
#[derive(Debug)]
enum Interest {
    Task(TaskKey),
    Owner(Owner),
}

/// One watch's end in the registry.
#[derive(Debug)]
struct Entry {
    id: u64,
    tx: mpsc::Sender<Result<TaskEvent, EventError>>,
    /// Events dropped since the watch last heard of a lag.
    dropped: Arc<AtomicU64>,
}

impl Entry {
    fn deliver(&self, event: Result<TaskEvent, EventError>) {
        if self.tx.try_send(event).is_err() {
            // Full (or the watch is going away): the watch hears of it after its queue.
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[derive(Debug, Default)]
struct Registry {
    by_task: HashMap<TaskKey, Vec<Entry>>,
    by_owner: HashMap<Owner, Vec<Entry>>,
    next_id: u64,
    /// The pump ended: no watch will hear anything again.
    closed: bool,
    /// Changes handed over early ([`Watchers::deliver_early`]), by task: the revision
    /// whose copy on the feed is to be dropped.
    early: HashMap<TaskKey, u64>,
}

/// Who watches which tasks; shared by the runtime's event pump and the watches.
#[derive(Debug, Default)]
pub(crate) struct Watchers {
    registry: Mutex<Registry>,
}

impl Registry {
    fn entries(&mut self, interest: &Interest) -> Option<&mut Vec<Entry>> {
        match interest {
            Interest::Task(key) => self.by_task.get_mut(key),
            Interest::Owner(owner) => self.by_owner.get_mut(owner),
        }
    }

    /// Hands `event` to the watches of its owner, then of its task (a watch holds one
    /// interest or the other, never both, so none hears an event twice). Whether any
    /// watch was there.
    fn route(&self, event: &TaskEvent) -> bool {
        let key = event.key();
        let owner = self.by_owner.get(&key.owner);
        let task = self.by_task.get(key);
        let mut heard = false;
        for entry in owner.into_iter().chain(task).flatten() {
            entry.deliver(Ok(event.clone()));
            heard = true;
        }
        heard
    }

    fn remove(&mut self, interest: &Interest) {
        match interest {
            Interest::Task(key) => self.by_task.remove(key),
            Interest::Owner(owner) => self.by_owner.remove(owner),
        };
    }

    fn all(&self) -> impl Iterator<Item = &Entry> {
        self.by_task
            .values()
            .chain(self.by_owner.values())
            .flatten()
    }
}

impl Watchers {
    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A watch of each of `keys` (a key named twice is watched once).
    pub(crate) fn tasks(self: &Arc<Self>, keys: impl IntoIterator<Item = TaskKey>) -> TaskWatch {
        let keys: std::collections::BTreeSet<TaskKey> = keys.into_iter().collect();
        self.watch(keys.into_iter().map(Interest::Task).collect())
    }

    /// A watch of every task of `owner`.
    pub(crate) fn owner(self: &Arc<Self>, owner: Owner) -> TaskWatch {
        self.watch(vec![Interest::Owner(owner)])
    }

    fn watch(self: &Arc<Self>, interests: Vec<Interest>) -> TaskWatch {
        let (tx, rx) = mpsc::channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let mut registry = self.lock();
        let id = registry.next_id;
        registry.next_id += 1;
        if !registry.closed {
            for interest in &interests {
                let entry = Entry {
                    id,
                    tx: tx.clone(),
                    dropped: Arc::clone(&dropped),
                };
                match interest {
                    Interest::Task(key) => registry.by_task.entry(key.clone()).or_default(),
                    Interest::Owner(owner) => registry.by_owner.entry(owner.clone()).or_default(),
                }
                .push(entry);
            }
        }
        // A watch of nothing keeps its own sender, so it waits (hearing nothing) instead
        // of reading `Closed`; with the pump ended, `tx` goes here and the watch reads
        // `Closed` at once.
        let idle = (interests.is_empty() && !registry.closed).then_some(tx);
        drop(registry);
        TaskWatch {
            rx,
            _idle: idle,
            dropped,
            id,
            interests,
            watchers: Arc::downgrade(self),
        }
    }

    /// Hands `event` to the watches it concerns (a lag or the end: to every watch).
    pub(super) fn deliver(&self, event: &Result<TaskEvent, EventError>) {
        let mut registry = self.lock();
        match event {
            Ok(e) => {
                if let TaskEvent::Changed { key, revision, .. } = e
                    && registry.early.get(key) == Some(revision)
                {
                    // Its writer handed it over already.
                    registry.early.remove(key);
                    return;
                }
                registry.route(e);
            }
            Err(_) => {
                registry.early.clear();
                // Once to each watch, however many tasks it watches.
                let mut told = std::collections::HashSet::new();
                for entry in registry.all().filter(|e| told.insert(e.id)) {
                    entry.deliver(event.clone());
                }
            }
        }
    }

    /// Hands `change`, which this node just wrote, to the watches it concerns now,
    /// instead of when the pump reads it back from the feed (whose copy is then dropped).
    pub(super) fn deliver_early(&self, change: TaskEvent) {
        let TaskEvent::Changed { key, revision, .. } = &change else {
            return;
        };
        let mut registry = self.lock();
        if registry.closed || !registry.route(&change) {
            return;
        }
        if registry.early.len() >= EARLY {
            registry.early.clear();
        }
        registry.early.insert(key.clone(), *revision);
    }

    /// The pump ended: every watch is told, and new ones start closed.
    pub(super) fn close(&self) {
        let mut registry = self.lock();
        registry.closed = true;
        registry.by_task.clear();
        registry.by_owner.clear();
        registry.early.clear();
    }
}

/// What a watch hears: the events of its tasks, [`EventError::Lagged`] when some were
/// lost (re-read what you watch), [`EventError::Closed`] when the feed ended.
/// Unregisters itself when dropped.
#[derive(Debug)]
pub(crate) struct TaskWatch {
    rx: mpsc::Receiver<Result<TaskEvent, EventError>>,
    /// The sender of a watch of nothing, kept so that its receiver never ends.
    _idle: Option<mpsc::Sender<Result<TaskEvent, EventError>>>,
    dropped: Arc<AtomicU64>,
    id: u64,
    interests: Vec<Interest>,
    watchers: Weak<Watchers>,
}

impl TaskWatch {
    /// The next event of a watched task.
    pub(crate) async fn recv(&mut self) -> Result<TaskEvent, EventError> {
        // Events queued before a loss come first; then the loss; then waiting (nothing is
        // dropped while the queue has room, so an empty queue has lost nothing since).
        if let Ok(event) = self.rx.try_recv() {
            return event;
        }
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            return Err(EventError::Lagged(dropped));
        }
        self.rx.recv().await.unwrap_or(Err(EventError::Closed))
    }
}

impl Drop for TaskWatch {
    fn drop(&mut self) {
        let Some(watchers) = self.watchers.upgrade() else {
            return;
        };
        let mut registry = watchers.lock();
        for interest in &self.interests {
            if let Some(entries) = registry.entries(interest) {
                entries.retain(|e| e.id != self.id);
                if entries.is_empty() {
                    registry.remove(interest);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks_protocol::tasks::TaskStatus;

    fn key(owner: &str, id: &str) -> TaskKey {
        TaskKey {
            owner: Owner::new(owner),
            id: mcp_tasks::TaskId::from_wire(id),
        }
    }

    fn changed(owner: &str, id: &str) -> TaskEvent {
        TaskEvent::Changed {
            key: key(owner, id),
            status: TaskStatus::Working,
            revision: 1,
            queued: false,
        }
    }

    /// Whether `watch` stays silent for 20 ms.
    async fn hears_nothing(watch: &mut TaskWatch) -> bool {
        tokio::time::timeout(std::time::Duration::from_millis(20), watch.recv())
            .await
            .is_err()
    }

    #[tokio::test]
    async fn a_watch_hears_its_tasks_and_its_owner_only() {
        let watchers = Arc::new(Watchers::default());
        let mut task = watchers.tasks([key("alice", "t1")]);
        let mut owner = watchers.owner(Owner::new("bob"));
        for event in [
            changed("alice", "t2"),
            changed("bob", "t3"),
            changed("alice", "t1"),
        ] {
            watchers.deliver(&Ok(event));
        }
        assert_eq!(task.recv().await, Ok(changed("alice", "t1")));
        assert_eq!(owner.recv().await, Ok(changed("bob", "t3")));
        watchers.close();
        assert_eq!(task.recv().await, Err(EventError::Closed));
        assert_eq!(owner.recv().await, Err(EventError::Closed));
        // Made after the pump ended: closed at once.
        assert_eq!(
            watchers.owner(Owner::new("bob")).recv().await,
            Err(EventError::Closed)
        );
    }

    #[tokio::test]
    async fn a_task_named_twice_is_heard_once() {
        let watchers = Arc::new(Watchers::default());
        let mut watch = watchers.tasks([key("alice", "t1"), key("alice", "t1")]);
        watchers.deliver(&Ok(changed("alice", "t1")));
        watchers.deliver(&Ok(changed("alice", "t2")));
        assert_eq!(watch.recv().await, Ok(changed("alice", "t1")));
        assert!(hears_nothing(&mut watch).await, "heard an event twice");
    }

    #[tokio::test]
    async fn a_change_handed_over_early_is_heard_once() {
        let watchers = Arc::new(Watchers::default());
        let mut watch = watchers.tasks([key("alice", "t1")]);
        let done = |revision| TaskEvent::Changed {
            key: key("alice", "t1"),
            status: TaskStatus::Completed,
            revision,
            queued: false,
        };
        watchers.deliver_early(done(2));
        assert_eq!(watch.recv().await, Ok(done(2)));
        // The feed's copy is dropped; a later revision is not.
        watchers.deliver(&Ok(done(2)));
        watchers.deliver(&Ok(done(3)));
        assert_eq!(watch.recv().await, Ok(done(3)));
        assert!(watchers.lock().early.is_empty());
        // Nobody watching: nothing is remembered (the feed's copy finds nobody either).
        watchers.deliver_early(changed("bob", "t9"));
        assert!(watchers.lock().early.is_empty());
        // After a lag the feed may have lost the copy: forgotten.
        watchers.deliver_early(done(4));
        watchers.deliver(&Err(EventError::Lagged(1)));
        assert!(watchers.lock().early.is_empty());
        assert_eq!(watch.recv().await, Ok(done(4)));
        assert_eq!(watch.recv().await, Err(EventError::Lagged(1)));
    }

    #[tokio::test]
    async fn a_watch_of_nothing_waits() {
        let watchers = Arc::new(Watchers::default());
        let mut nothing = watchers.tasks([]);
        assert!(
            hears_nothing(&mut nothing).await,
            "a watch of nothing heard something"
        );
    }

    #[tokio::test]
    async fn a_full_queue_is_heard_as_a_lag_after_what_it_holds() {
        let watchers = Arc::new(Watchers::default());
        let mut watch = watchers.tasks([key("alice", "t1")]);
        for _ in 0..QUEUE + 3 {
            watchers.deliver(&Ok(changed("alice", "t1")));
        }
        for _ in 0..QUEUE {
            assert_eq!(watch.recv().await, Ok(changed("alice", "t1")));
        }
        assert_eq!(watch.recv().await, Err(EventError::Lagged(3)));
        watchers.deliver(&Ok(changed("alice", "t1")));
        assert_eq!(watch.recv().await, Ok(changed("alice", "t1")));
    }

    #[tokio::test]
    async fn a_feed_lag_reaches_every_watch_and_a_dropped_watch_leaves_the_registry() {
        let watchers = Arc::new(Watchers::default());
        let mut a = watchers.tasks([key("alice", "t1"), key("alice", "t2")]);
        let b = watchers.owner(Owner::new("bob"));
        watchers.deliver(&Err(EventError::Lagged(7)));
        assert_eq!(a.recv().await, Err(EventError::Lagged(7)));
        // Once, though `a` watches two tasks.
        watchers.deliver(&Ok(changed("alice", "t2")));
        assert_eq!(a.recv().await, Ok(changed("alice", "t2")));
        drop(b);
        assert_eq!(watchers.lock().by_task.len(), 2);
        assert!(watchers.lock().by_owner.is_empty());
        drop(a);
        assert!(watchers.lock().by_task.is_empty());
    }
}
