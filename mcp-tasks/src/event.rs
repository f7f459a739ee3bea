//! Store events: what a worker or a waiting request needs to hear about, delivered to
//! every handle of the same backend.
//!
//! Events are wake-ups, not the truth: after an event (or after [`EventError::Lagged`])
//! read the record again. A subscriber that falls behind loses events, never the state.

use mcp_protocol::tasks::TaskStatus;
use tokio::sync::broadcast;

use crate::record::TaskKey;

/// Something happened to a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskEvent {
    /// The record changed (status, status message, input requests, outcome).
    Changed {
        key: TaskKey,
        status: TaskStatus,
        revision: u64,
    },
    /// Answers arrived for these input request keys.
    InputResponded { key: TaskKey, keys: Vec<String> },
    /// Someone asked for the task to stop.
    CancelRequested { key: TaskKey },
}

impl TaskEvent {
    pub fn key(&self) -> &TaskKey {
        match self {
            TaskEvent::Changed { key, .. }
            | TaskEvent::InputResponded { key, .. }
            | TaskEvent::CancelRequested { key } => key,
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
pub struct EventStream(Feed);

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
    /// A subscription to a feed of plain events.
    pub fn new(rx: broadcast::Receiver<TaskEvent>) -> EventStream {
        EventStream(Feed::Events(rx))
    }

    /// A subscription to a feed that may also tell its subscribers to re-read
    /// ([`FeedItem::Resync`], received as [`EventError::Lagged`]`(0)`).
    pub fn with_resync(rx: broadcast::Receiver<FeedItem>) -> EventStream {
        EventStream(Feed::Items(rx))
    }

    /// The next event.
    pub async fn recv(&mut self) -> Result<TaskEvent, EventError> {
        match &mut self.0 {
            Feed::Events(rx) => rx.recv().await.map_err(recv_error),
            Feed::Items(rx) => rx.recv().await.map_err(recv_error).and_then(item),
        }
    }

    /// The next event if one is queued now.
    pub fn try_recv(&mut self) -> Option<Result<TaskEvent, EventError>> {
        match &mut self.0 {
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
