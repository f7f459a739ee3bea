//! [`TaskEvents`]: one task's events (`tasks/stream`, draft SEP-2694) as a
//! `futures::Stream` of [`TaskEvent`]s that resumes by itself. A stream that broke (the
//! connection dropped, the server ended it before the task ended, the reader fell behind
//! the session's buffer) is asked again with `after` = the last `seq` yielded; once the
//! server's result came, the task is known terminal (its terminal status event was
//! yielded, or `tasks/get` says so and a last stream after the cursor confirms that
//! nothing follows) or the stream is asked again.
//!
//! Below `client.rs` and `driver.rs`, which make the streams; imports `session`,
//! `config` and `error` only. Works over any transport: the events are the session's
//! `notifications/tasks/event`, the streams' responses its responses.
//!
//! Invariant: events are yielded in `seq` order, each once, without a gap (an event is
//! taken only when it is the next one, whichever stream of the session brought it);
//! attempts that bring no new event are bounded ([`DriverConfig::stream_retries`]) and
//! spaced by a bounded backoff; the whole stream by [`DriverConfig::max_wait`]; it ends
//! after the server's result with the task terminal, or with one error.
//!
//! [`DriverConfig::stream_retries`]: crate::DriverConfig::stream_retries
//! [`DriverConfig::max_wait`]: crate::DriverConfig::max_wait
//!
//! The parts: `event.rs` ([`TaskEvent`], read from the wire's `notifications/tasks/event`),
//! `reader.rs` (the state machine behind a [`TaskEvents`]: which event is next, when to
//! ask again, when it ends).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Stream;

use crate::error::ClientError;
use crate::session::Session;

mod event;
mod reader;
#[cfg(test)]
mod tests;

pub use event::TaskEvent;
use reader::Reader;

type Reading = Pin<Box<dyn Stream<Item = Result<TaskEvent, ClientError>> + Send>>;

/// Where a [`TaskEvents`] is, shared with the reader.
#[derive(Debug, Default)]
struct Progress {
    /// The last `seq` yielded (or the cursor it started after).
    cursor: Option<u64>,
    /// Streams asked again after the first.
    resumes: u32,
}

/// One task's events, in order, each once: a `futures::Stream` of
/// `Result<`[`TaskEvent`]`, `[`ClientError`]`>` over `tasks/stream` (draft SEP-2694).
///
/// It resumes by itself: when the stream breaks (a dropped connection, a server that
/// ended it before the task ended, a reader that fell behind), it calls `tasks/stream`
/// again with `after` = the last `seq` it yielded, waiting between attempts (doubling
/// from [`DriverConfig::min_poll`](crate::DriverConfig::min_poll) to
/// [`max_poll`](crate::DriverConfig::max_poll), at most
/// [`stream_retries`](crate::DriverConfig::stream_retries) attempts in a row without a
/// new event). While no event comes for `max_poll`, `tasks/get` checks the task: a
/// terminal task's stream is asked again, which ends it. The stream ends (`None`) after
/// the server's result once the task is terminal, or after one error:
/// [`ClientError::EventsGone`] when the events after the cursor are no longer kept,
/// [`ClientError::EventStreamsUnsupported`] when the server has no event streams, the
/// server's error for a task it does not know (as `tasks/get` answers).
///
/// It reads the task and does not own it: dropping it ends the server's stream, never
/// the task. Two readers of one task on one client both get every event; a reader
/// started without a cursor takes the first event of the task it hears as its start.
///
/// ```no_run
/// use futures::StreamExt;
/// use mcp_tasks_client::{ClientError, McpClient, Started};
///
/// async fn build(client: &McpClient) -> Result<(), ClientError> {
///     let arguments = serde_json::Map::from_iter([("steps".into(), 5.into())]);
///     let Started::Task(task) = client.call_tool_as_task("build_log", arguments).await? else {
///         return Ok(());
///     };
///     let mut events = task.events();
///     while let Some(event) = events.next().await {
///         let event = event?;
///         match event.text() {
///             Some(line) => println!("{line}"),
///             None => println!("#{} {} {:?}", event.seq, event.kind, event.payload),
///         }
///     }
///     println!("{:?}", task.wait().await?.content);
///     Ok(())
/// }
/// ```
pub struct TaskEvents {
    task_id: String,
    progress: Arc<Mutex<Progress>>,
    reading: Reading,
    /// The reading returned `None`: it is not polled again.
    ended: bool,
}

impl std::fmt::Debug for TaskEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskEvents")
            .field("task", &self.task_id)
            .field("progress", &*lock(&self.progress))
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl TaskEvents {
    /// The events of `task_id` after `after` (all those still kept when `None`).
    pub(crate) fn new(session: Arc<Session>, task_id: String, after: Option<u64>) -> TaskEvents {
        let progress = Arc::new(Mutex::new(Progress {
            cursor: after,
            resumes: 0,
        }));
        let reader = Reader::new(session, task_id.clone(), Arc::clone(&progress));
        let reading = futures::stream::unfold(reader, |mut reader| async move {
            let item = reader.next().await?;
            Some((item, reader))
        });
        TaskEvents {
            task_id,
            progress,
            reading: Box::pin(reading),
            ended: false,
        }
    }

    /// The task.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The `seq` of the last event yielded (the cursor given, before any): where a new
    /// stream would resume (`after`).
    pub fn cursor(&self) -> Option<u64> {
        lock(&self.progress).cursor
    }

    /// How many times the stream was asked again after the first `tasks/stream`.
    pub fn resumes(&self) -> u32 {
        lock(&self.progress).resumes
    }
}

impl Stream for TaskEvents {
    type Item = Result<TaskEvent, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let next = self.reading.as_mut().poll_next(cx);
        if matches!(next, Poll::Ready(None)) {
            self.ended = true;
        }
        next
    }
}

impl futures::stream::FusedStream for TaskEvents {
    fn is_terminated(&self) -> bool {
        self.ended
    }
}
