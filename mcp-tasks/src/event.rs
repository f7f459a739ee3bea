//! Store events: what a worker or a waiting request needs to hear about, delivered to
//! every handle of the same backend.
//!
//! Events are wake-ups, not the truth: after an event (or after [`EventError::Lagged`])
//! read the record again. A subscriber that falls behind loses events, never the state.

use mcp_protocol::tasks::TaskStatus;
use tokio::sync::{broadcast, watch};

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
    /// `n` is 0 when the number is unknown (a backend lost its connection to the shared
    /// change feed and resubscribed).
    #[error("event subscriber lagged; {0} events dropped")]
    Lagged(u64),
    /// The store is gone.
    #[error("event feed closed")]
    Closed,
}

/// A subscription to a store's change feed.
#[derive(Debug)]
pub struct EventStream {
    rx: broadcast::Receiver<TaskEvent>,
    /// Bumped by a backend whose feed may have missed events (e.g. its connection to a
    /// remote change feed dropped); every bump is reported once as a lag.
    resync: Option<watch::Receiver<u64>>,
}

impl EventStream {
    pub fn new(rx: broadcast::Receiver<TaskEvent>) -> EventStream {
        EventStream { rx, resync: None }
    }

    /// A stream that also reports [`EventError::Lagged`] whenever `resync` changes: the
    /// backend's feed may have missed events, so subscribers must re-read what they
    /// watch. The count of such a lag is unknown and reported as 0.
    pub fn with_resync(
        rx: broadcast::Receiver<TaskEvent>,
        mut resync: watch::Receiver<u64>,
    ) -> EventStream {
        // Only changes after subscribing count.
        resync.mark_unchanged();
        EventStream {
            rx,
            resync: Some(resync),
        }
    }

    /// The next event.
    pub async fn recv(&mut self) -> Result<TaskEvent, EventError> {
        let EventStream { rx, resync } = self;
        if let Some(watch) = resync {
            tokio::select! {
                biased;
                changed = watch.changed() => match changed {
                    Ok(()) => return Err(EventError::Lagged(0)),
                    // The backend stopped signalling: plain broadcast from now on.
                    Err(_) => *resync = None,
                },
                event = rx.recv() => return event.map_err(recv_error),
            }
        }
        rx.recv().await.map_err(recv_error)
    }

    /// The next event if one is queued now.
    pub fn try_recv(&mut self) -> Option<Result<TaskEvent, EventError>> {
        if let Some(watch) = &mut self.resync
            && watch.has_changed().unwrap_or(false)
        {
            watch.mark_unchanged();
            return Some(Err(EventError::Lagged(0)));
        }
        match self.rx.try_recv() {
            Ok(e) => Some(Ok(e)),
            Err(broadcast::error::TryRecvError::Empty) => None,
            Err(broadcast::error::TryRecvError::Lagged(n)) => Some(Err(EventError::Lagged(n))),
            Err(broadcast::error::TryRecvError::Closed) => Some(Err(EventError::Closed)),
        }
    }
}

fn recv_error(e: broadcast::error::RecvError) -> EventError {
    match e {
        broadcast::error::RecvError::Lagged(n) => EventError::Lagged(n),
        broadcast::error::RecvError::Closed => EventError::Closed,
    }
}

/// How many events a subscriber may fall behind before it lags.
pub const EVENT_BUFFER: usize = 4096;
