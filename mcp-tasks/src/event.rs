//! Store events: what a worker or a waiting request needs to hear about, delivered to
//! every handle of the same backend.
//!
//! Events are wake-ups, not the truth: after an event (or after [`EventError::Lagged`])
//! read the record again. A subscriber that falls behind loses events, never the state.

use mcp_tasks_protocol::tasks::TaskStatus;
use tokio::sync::{broadcast, watch};

use crate::record::{TaskKey, TaskRecord};

/// Something happened to a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskEvent {
    /// The record changed (status, status message, input requests, outcome).
    Changed {
        /// The task.
        key: TaskKey,
        /// Its status after the change.
        status: TaskStatus,
        /// Its record's revision after the change.
        revision: u64,
        /// It waits for a worker to claim it ([`TaskRecord::queued_tool`]): a worker
        /// that hears this looks for work.
        queued: bool,
    },
    /// Answers arrived for these input request keys.
    InputResponded {
        /// The task.
        key: TaskKey,
        /// The input request keys answered.
        keys: Vec<String>,
    },
    /// Someone asked for the task to stop.
    CancelRequested {
        /// The task.
        key: TaskKey,
    },
    /// Entries were appended to the task's log by
    /// [`append_log`](crate::TaskStore::append_log) (the entries a change of the record
    /// writes come with its [`Changed`](TaskEvent::Changed) event instead).
    Logged {
        /// The task.
        key: TaskKey,
        /// The `seq` of the last entry appended.
        seq: u64,
    },
}

impl TaskEvent {
    /// The [`Changed`](TaskEvent::Changed) event of `rec` as it stands.
    pub fn changed(rec: &TaskRecord) -> TaskEvent {
        TaskEvent::Changed {
            key: rec.key(),
            status: rec.status,
            revision: rec.revision,
            queued: rec.queued_tool().is_some(),
        }
    }

    /// The task the event is about.
    pub fn key(&self) -> &TaskKey {
        match self {
            TaskEvent::Changed { key, .. }
            | TaskEvent::InputResponded { key, .. }
            | TaskEvent::CancelRequested { key }
            | TaskEvent::Logged { key, .. } => key,
        }
    }
}

/// Why no event came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// This subscriber fell behind and `n` events were dropped: re-read what you watch.
    /// `n` is 0 when the number is unknown: the backend could not hear changes for a
    /// while (e.g. its notification connection was re-established) and some may be missed.
    #[error("event subscriber lagged; {0} events dropped")]
    Lagged(u64),
    /// The store is gone.
    #[error("event feed closed")]
    Closed,
}

/// What a feed built with [`EventStream::with_resync`] carries: an event, or word that
/// events may have been missed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedItem {
    /// An event, delivered as it is.
    Event(TaskEvent),
    /// Events may have been missed (e.g. a backend re-established its notification
    /// connection): every subscriber receives [`EventError::Lagged`]`(0)` and re-reads.
    Resync,
}

/// A subscription to a store's change feed.
#[derive(Debug)]
pub struct EventStream {
    feed: Feed,
    /// Bumped by a backend whose feed may have missed events (e.g. its connection to a
    /// remote change feed dropped); every bump is reported once as a lag.
    resync: Option<watch::Receiver<u64>>,
}

#[derive(Debug)]
enum Feed {
    Events(broadcast::Receiver<TaskEvent>),
    Items(broadcast::Receiver<FeedItem>),
}

fn item(item: FeedItem) -> Result<TaskEvent, EventError> {
    match item {
        FeedItem::Event(e) => Ok(e),
        FeedItem::Resync => Err(EventError::Lagged(0)),
    }
}

fn recv_error(e: broadcast::error::RecvError) -> EventError {
    match e {
        broadcast::error::RecvError::Lagged(n) => EventError::Lagged(n),
        broadcast::error::RecvError::Closed => EventError::Closed,
    }
}

fn try_recv_error(e: broadcast::error::TryRecvError) -> Option<EventError> {
    match e {
        broadcast::error::TryRecvError::Empty => None,
        broadcast::error::TryRecvError::Lagged(n) => Some(EventError::Lagged(n)),
        broadcast::error::TryRecvError::Closed => Some(EventError::Closed),
    }
}

impl EventStream {
    /// A subscription to a plain broadcast feed.
    pub fn new(rx: broadcast::Receiver<TaskEvent>) -> EventStream {
        EventStream {
            feed: Feed::Events(rx),
            resync: None,
        }
    }

    /// A subscription to a feed that may also tell its subscribers to re-read
    /// ([`FeedItem::Resync`], received as [`EventError::Lagged`]`(0)`).
    pub fn with_resync(rx: broadcast::Receiver<FeedItem>) -> EventStream {
        EventStream {
            feed: Feed::Items(rx),
            resync: None,
        }
    }

    /// A subscription that also reports [`EventError::Lagged`]`(0)` whenever `resync`
    /// changes: the backend's feed may have missed events, so subscribers must re-read what
    /// they watch.
    pub fn with_resync_signal(
        rx: broadcast::Receiver<TaskEvent>,
        mut resync: watch::Receiver<u64>,
    ) -> EventStream {
        // Only changes after subscribing count.
        resync.mark_unchanged();
        EventStream {
            feed: Feed::Events(rx),
            resync: Some(resync),
        }
    }

    async fn recv_feed(feed: &mut Feed) -> Result<TaskEvent, EventError> {
        match feed {
            Feed::Events(rx) => rx.recv().await.map_err(recv_error),
            Feed::Items(rx) => rx.recv().await.map_err(recv_error).and_then(item),
        }
    }

    /// The next event.
    pub async fn recv(&mut self) -> Result<TaskEvent, EventError> {
        let EventStream { feed, resync } = self;
        if let Some(signal) = resync {
            tokio::select! {
                biased;
                changed = signal.changed() => match changed {
                    Ok(()) => return Err(EventError::Lagged(0)),
                    // The backend stopped signalling: plain feed from now on.
                    Err(_) => *resync = None,
                },
                event = Self::recv_feed(feed) => return event,
            }
        }
        Self::recv_feed(feed).await
    }

    /// The next event if one is queued now.
    pub fn try_recv(&mut self) -> Option<Result<TaskEvent, EventError>> {
        if let Some(signal) = &mut self.resync
            && signal.has_changed().unwrap_or(false)
        {
            signal.mark_unchanged();
            return Some(Err(EventError::Lagged(0)));
        }
        match &mut self.feed {
            Feed::Events(rx) => match rx.try_recv() {
                Ok(e) => Some(Ok(e)),
                Err(e) => try_recv_error(e).map(Err),
            },
            Feed::Items(rx) => match rx.try_recv() {
                Ok(i) => Some(item(i)),
                Err(e) => try_recv_error(e).map(Err),
            },
        }
    }
}

/// How many events a subscriber may fall behind before it lags.
pub const EVENT_BUFFER: usize = 4096;
