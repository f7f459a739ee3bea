//! The reading behind a [`TaskEvents`](super::TaskEvents): one `tasks/stream` at a time,
//! the session's events heard meanwhile, and what to do when a stream ends (done, or ask
//! again after a bounded backoff).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::tasks::{
    EventsGoneData, GetTask, StreamTask, StreamTaskRequestParams, StreamTaskResult,
    TaskEventNotificationParams, TaskIdParams, TaskStatus,
};
use tokio::sync::broadcast;
use tokio::time::Instant;

use super::{Progress, TaskEvent, lock};
use crate::error::ClientError;
use crate::session::Session;

type Streaming = Pin<Box<dyn Future<Output = Result<StreamTaskResult, ClientError>> + Send>>;

/// What to do once a `tasks/stream` ended.
enum Then {
    /// The task is terminal and every event was yielded.
    Done,
    /// Ask again (after the backoff, if any, was waited).
    Again,
}

/// The reading behind a [`TaskEvents`](super::TaskEvents).
pub(super) struct Reader {
    session: Arc<Session>,
    task_id: String,
    /// The session's events, of every task.
    heard: broadcast::Receiver<TaskEventNotificationParams>,
    progress: Arc<Mutex<Progress>>,
    /// The `tasks/stream` in flight (dropping it cancels it).
    streaming: Option<Streaming>,
    /// How the last `tasks/stream` ended, held until the events before it are out.
    ended: Option<Result<StreamTaskResult, ClientError>>,
    /// Whether a `tasks/stream` was sent already.
    opened: bool,
    /// Attempts in a row that brought no new event.
    failures: u32,
    /// A terminal status event was yielded.
    terminal_seen: bool,
    /// The stream in flight was asked with the task known terminal: its result ends it.
    confirming: bool,
    /// When to check the task with `tasks/get` if nothing new came by then.
    quiet_until: Option<Instant>,
    deadline: Instant,
    done: bool,
}

impl Reader {
    /// The reading of `task_id`'s events after `progress`'s cursor.
    pub(super) fn new(
        session: Arc<Session>,
        task_id: String,
        progress: Arc<Mutex<Progress>>,
    ) -> Reader {
        let now = Instant::now();
        // A year stands for "no bound" when `max_wait` is too long for the clock.
        let deadline = now
            .checked_add(session.config.driver.max_wait)
            .unwrap_or_else(|| now + std::time::Duration::from_secs(365 * 24 * 3600));
        Reader {
            heard: session.task_events.subscribe(),
            session,
            task_id,
            progress,
            streaming: None,
            ended: None,
            opened: false,
            failures: 0,
            terminal_seen: false,
            confirming: false,
            quiet_until: None,
            deadline,
            done: false,
        }
    }

    pub(super) async fn next(&mut self) -> Option<Result<TaskEvent, ClientError>> {
        if self.done {
            return None;
        }
        let step = self.step().await;
        if !matches!(step, Ok(Some(_))) {
            self.done = true;
            self.streaming = None;
        }
        step.transpose()
    }

    fn cursor(&self) -> Option<u64> {
        lock(&self.progress).cursor
    }

    /// The next event; `None` once the task ended and its events are all out.
    async fn step(&mut self) -> Result<Option<TaskEvent>, ClientError> {
        loop {
            if let Some(ended) = self.ended.take() {
                // What came before the response comes first.
                match self.heard.try_recv() {
                    Ok(params) => {
                        self.ended = Some(ended);
                        if let Some(event) = self.take(params) {
                            return Ok(Some(event));
                        }
                        continue;
                    }
                    Err(broadcast::error::TryRecvError::Lagged(missed)) => {
                        self.fell_behind(missed).await?;
                        continue;
                    }
                    Err(broadcast::error::TryRecvError::Closed) => return Err(ClientError::Closed),
                    Err(broadcast::error::TryRecvError::Empty) => {}
                }
                match self.after(ended).await? {
                    Then::Done => return Ok(None),
                    Then::Again => continue,
                }
            }
            if self.streaming.is_none() {
                self.open()?;
            }
            let quiet_until = *self
                .quiet_until
                .get_or_insert_with(|| Instant::now() + self.session.config.driver.max_poll);
            let Some(streaming) = self.streaming.as_mut() else {
                continue;
            };
            tokio::select! {
                biased;
                heard = self.heard.recv() => match heard {
                    Ok(params) => {
                        if let Some(event) = self.take(params) {
                            return Ok(Some(event));
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        self.fell_behind(missed).await?;
                    }
                    Err(broadcast::error::RecvError::Closed) => return Err(ClientError::Closed),
                },
                ended = streaming => {
                    self.streaming = None;
                    self.ended = Some(ended);
                }
                () = tokio::time::sleep_until(quiet_until) => self.check_quiet().await?,
                () = tokio::time::sleep_until(self.deadline) => {
                    return Err(ClientError::TaskExpired { task_id: self.task_id.clone() });
                }
            }
        }
    }

    /// Sends `tasks/stream` after the cursor; refuses at once when the server serves no
    /// event streams.
    fn open(&mut self) -> Result<(), ClientError> {
        if !self.session.offers_event_streams() {
            let why = if self.session.is_2025() {
                "an MCP 2025-11-25 session has none".to_owned()
            } else {
                "server/discover does not advertise task event streams (rs.mcp-tasks/event-streams)"
                    .to_owned()
            };
            return Err(ClientError::EventStreamsUnsupported(why));
        }
        if self.opened {
            lock(&self.progress).resumes += 1;
        }
        self.opened = true;
        let mut params = StreamTaskRequestParams::new(&self.task_id, self.cursor());
        params.meta = self.session.request_meta_object();
        let session = Arc::clone(&self.session);
        self.streaming = Some(Box::pin(async move {
            // No timeout: the stream lasts as long as the task; the reader bounds it.
            session
                .peer
                .request::<StreamTask>(&params)
                .await
                .map_err(|e| session.lift(e.into()))
        }));
        self.quiet_until = None;
        Ok(())
    }

    /// The event `params` carries, when it is this task's next one.
    fn take(&mut self, params: TaskEventNotificationParams) -> Option<TaskEvent> {
        if params.task_id != self.task_id {
            return None;
        }
        let mut progress = lock(&self.progress);
        if !is_next(progress.cursor, params.seq) {
            // Heard again (a resumed stream, another reader's), or ahead of ours: the
            // stream of this reader brings it in its turn.
            return None;
        }
        progress.cursor = Some(params.seq);
        drop(progress);
        let event = TaskEvent::from_params(params);
        self.terminal_seen = event.status().is_some_and(TaskStatus::is_terminal);
        self.failures = 0;
        self.quiet_until = None;
        Some(event)
    }

    /// The reader fell behind the session's buffer: what it missed is read again.
    async fn fell_behind(&mut self, missed: u64) -> Result<(), ClientError> {
        tracing::debug!(task_id = %self.task_id, missed, "task events missed; reading them again");
        self.streaming = None;
        self.ended = None;
        self.confirming = false;
        self.retry(None).await
    }

    /// Nothing came for a while: a terminal task's stream should have ended, so it is
    /// asked again (which ends it); a task that goes on is waited for.
    async fn check_quiet(&mut self) -> Result<(), ClientError> {
        self.quiet_until = None;
        match self.terminal().await {
            Ok(false) => Ok(()),
            Ok(true) => {
                tracing::debug!(task_id = %self.task_id, "task ended but its stream did not; asking again");
                self.streaming = None;
                self.confirming = true;
                self.retry(None).await
            }
            // The connection may be gone with the stream: ask again.
            Err(e) if transient(&e) => {
                self.streaming = None;
                self.confirming = false;
                self.retry(Some(e)).await
            }
            Err(e) => Err(e),
        }
    }

    /// What follows the end of a `tasks/stream`.
    async fn after(
        &mut self,
        ended: Result<StreamTaskResult, ClientError>,
    ) -> Result<Then, ClientError> {
        match ended {
            Ok(_) if self.terminal_seen || self.confirming => Ok(Then::Done),
            Ok(_) => match self.terminal().await {
                // Ended with the task, unless the server ended it before its last events
                // (shutting down as the task ended): one more stream after the cursor
                // says which, and ends at once.
                Ok(true) => {
                    self.confirming = true;
                    Ok(Then::Again)
                }
                // Ended early (the server shutting down, say): asked again.
                Ok(false) => {
                    tracing::debug!(task_id = %self.task_id, "task event stream ended before the task; asking again");
                    self.retry(None).await?;
                    Ok(Then::Again)
                }
                Err(e) if transient(&e) => {
                    self.retry(Some(e)).await?;
                    Ok(Then::Again)
                }
                Err(e) => Err(e),
            },
            Err(ClientError::Rpc(e)) if EventsGoneData::of(&e).is_some() => {
                let earliest_seq = EventsGoneData::of(&e).map_or(0, |d| d.earliest_seq);
                Err(ClientError::EventsGone {
                    task_id: self.task_id.clone(),
                    earliest_seq,
                })
            }
            Err(ClientError::Rpc(e)) if e.code == error_codes::METHOD_NOT_FOUND => Err(
                ClientError::EventStreamsUnsupported(format!("the server answered: {}", e.message)),
            ),
            Err(e) if transient(&e) => {
                self.confirming = false;
                self.retry(Some(e)).await?;
                Ok(Then::Again)
            }
            Err(e) => Err(e),
        }
    }

    /// Counts an attempt that brought nothing new and waits before the next; past the
    /// bound, `error` (or a message saying so) ends the stream.
    async fn retry(&mut self, error: Option<ClientError>) -> Result<(), ClientError> {
        self.failures += 1;
        let config = &self.session.config.driver;
        if self.failures > config.stream_retries {
            return Err(error.unwrap_or_else(|| {
                ClientError::Transport(
                    format!(
                        "the event stream of task {} kept ending before the task did ({} attempts)",
                        self.task_id, self.failures
                    )
                    .into(),
                )
            }));
        }
        let wait = config.backoff(self.failures);
        if let Some(e) = &error {
            tracing::debug!(task_id = %self.task_id, error = %e, ?wait, "task event stream broke; resuming");
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => Ok(()),
            () = tokio::time::sleep_until(self.deadline) => Err(ClientError::TaskExpired {
                task_id: self.task_id.clone(),
            }),
        }
    }

    /// Whether the task is terminal now (`tasks/get`).
    async fn terminal(&mut self) -> Result<bool, ClientError> {
        let mut params = TaskIdParams::new(&self.task_id);
        params.meta = self.session.request_meta_object();
        let got = self.session.request::<GetTask>(&params).await?;
        Ok(got.task.status().is_terminal())
    }
}

/// Whether event `seq` is the one to yield after `cursor` (the last yielded, or where
/// the reader started): the next one, or any first one for a reader without a cursor.
pub(super) fn is_next(cursor: Option<u64>, seq: u64) -> bool {
    cursor.is_none_or(|last| last.checked_add(1) == Some(seq))
}

/// Whether asking again may help: a transport failure, a timeout, a server that says to
/// retry, or one at its limit of open streams (the broken stream's place is freed once
/// the server notices).
fn transient(e: &ClientError) -> bool {
    match e {
        ClientError::Transport(_) | ClientError::Timeout(_) => true,
        ClientError::Rpc(rpc) => e.is_retryable() || rpc.code == error_codes::LIMIT_EXCEEDED,
        _ => false,
    }
}
