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
    #[error("event subscriber lagged; {0} events dropped")]
    Lagged(u64),
    /// The store is gone.
    #[error("event feed closed")]
    Closed,
}

/// A subscription to a store's change feed.
#[derive(Debug)]
pub struct EventStream(broadcast::Receiver<TaskEvent>);

impl EventStream {
    pub fn new(rx: broadcast::Receiver<TaskEvent>) -> EventStream {
        EventStream(rx)
    }

    /// The next event.
    pub async fn recv(&mut self) -> Result<TaskEvent, EventError> {
        self.0.recv().await.map_err(|e| match e {
            broadcast::error::RecvError::Lagged(n) => EventError::Lagged(n),
            broadcast::error::RecvError::Closed => EventError::Closed,
        })
    }

    /// The next event if one is queued now.
    pub fn try_recv(&mut self) -> Option<Result<TaskEvent, EventError>> {
        match self.0.try_recv() {
            Ok(e) => Some(Ok(e)),
            Err(broadcast::error::TryRecvError::Empty) => None,
            Err(broadcast::error::TryRecvError::Lagged(n)) => Some(Err(EventError::Lagged(n))),
            Err(broadcast::error::TryRecvError::Closed) => Some(Err(EventError::Closed)),
        }
    }
}

/// How many events a subscriber may fall behind before it lags.
pub const EVENT_BUFFER: usize = 4096;
