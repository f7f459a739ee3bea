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

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::SystemTime;

use futures::Stream;
use mcp_tasks::Actor;
use mcp_tasks::log::kinds;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::tasks::{
    EVENT_META_PREFIX, EventsGoneData, GetTask, StreamTask, StreamTaskRequestParams,
    StreamTaskResult, TaskEventNotificationParams, TaskIdParams, TaskStatus,
};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::error::ClientError;
use crate::session::Session;

/// One event of a task, as [`TaskEvents`] yields it: the wire's `seq`, `type` and
/// `payload`, and what this implementation's servers add in `_meta` (when, where and by
/// whom it was written), read when present.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEvent {
    /// Its place in the task's stream: 0 for the first event, then one more each.
    pub seq: u64,
    /// The task.
    pub task_id: String,
    /// Its type: vendor-prefixed (e.g. `rs.mcp-tasks.text`, `rs.mcp-tasks.status`).
    pub kind: String,
    /// What it says; its shape is the type's.
    pub payload: JsonObject,
    /// When the server wrote it (`rs.mcp-tasks/at`).
    pub at: Option<SystemTime>,
    /// The node that wrote it (`rs.mcp-tasks/node`).
    pub node: Option<String>,
    /// Who made it (`rs.mcp-tasks/actor`).
    pub actor: Option<Actor>,
    /// The event's whole `_meta` (with the related task).
    pub meta: JsonObject,
}

impl TaskEvent {
    fn from_params(params: TaskEventNotificationParams) -> TaskEvent {
        let meta = params.meta.unwrap_or_default();
        let ours = |key: &str| meta.get(&format!("{EVENT_META_PREFIX}{key}"));
        let at = ours("at")
            .and_then(Value::as_str)
            .and_then(|t| humantime::parse_rfc3339_weak(t).ok());
        let node = ours("node").and_then(Value::as_str).map(str::to_owned);
        let actor = ours("actor").and_then(|a| Actor::deserialize(a).ok());
        TaskEvent {
            seq: params.seq,
            task_id: params.task_id,
            kind: params.kind,
            payload: params.payload,
            at,
            node,
            actor,
            meta,
        }
    }

    /// The text of a tool's text output (`rs.mcp-tasks.text`: `{"text"}`).
    pub fn text(&self) -> Option<&str> {
        (self.kind == kinds::TEXT)
            .then(|| self.payload.get("text").and_then(Value::as_str))
            .flatten()
    }

    /// The status a change of status reports (`rs.mcp-tasks.status`: `{"status", ...}`).
    pub fn status(&self) -> Option<TaskStatus> {
        if self.kind != kinds::STATUS {
            return None;
        }
        TaskStatus::deserialize(self.payload.get("status")?).ok()
    }
}

type Streaming = Pin<Box<dyn Future<Output = Result<StreamTaskResult, ClientError>> + Send>>;
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
        let now = Instant::now();
        // A year stands for "no bound" when `max_wait` is too long for the clock.
        let deadline = now
            .checked_add(session.config.driver.max_wait)
            .unwrap_or_else(|| now + std::time::Duration::from_secs(365 * 24 * 3600));
        let reader = Reader {
            heard: session.task_events.subscribe(),
            session,
            task_id: task_id.clone(),
            progress: Arc::clone(&progress),
            streaming: None,
            ended: None,
            opened: false,
            failures: 0,
            terminal_seen: false,
            confirming: false,
            quiet_until: None,
            deadline,
            done: false,
        };
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

/// What to do once a `tasks/stream` ended.
enum Then {
    /// The task is terminal and every event was yielded.
    Done,
    /// Ask again (after the backoff, if any, was waited).
    Again,
}

/// The reading behind a [`TaskEvents`].
struct Reader {
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
    async fn next(&mut self) -> Option<Result<TaskEvent, ClientError>> {
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
                ClientError::Transport(format!(
                    "the event stream of task {} kept ending before the task did ({} attempts)",
                    self.task_id, self.failures
                ))
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
fn is_next(cursor: Option<u64>, seq: u64) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_reads_its_meta_and_its_kinds() {
        let params: TaskEventNotificationParams = serde_json::from_value(serde_json::json!({
            "seq": 3, "taskId": "t1", "type": "rs.mcp-tasks.text",
            "payload": { "text": "[1/2] ok" },
            "_meta": {
                "io.modelcontextprotocol/related-task": { "taskId": "t1" },
                "rs.mcp-tasks/at": "2026-07-28T10:00:00.250Z",
                "rs.mcp-tasks/node": "node-a",
                "rs.mcp-tasks/actor": "worker"
            }
        }))
        .expect("the wire's shape");
        let event = TaskEvent::from_params(params);
        assert_eq!((event.seq, event.task_id.as_str()), (3, "t1"));
        assert_eq!(event.text(), Some("[1/2] ok"));
        assert_eq!(event.status(), None);
        assert_eq!(event.node.as_deref(), Some("node-a"));
        assert_eq!(event.actor, Some(Actor::Worker));
        let at = event.at.expect("a time");
        let ms = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("after the epoch")
            .as_millis();
        assert_eq!(ms % 1000, 250);
        assert!(
            event
                .meta
                .contains_key("io.modelcontextprotocol/related-task")
        );

        let bare: TaskEventNotificationParams = serde_json::from_value(serde_json::json!({
            "seq": 0, "taskId": "t1", "type": "rs.mcp-tasks.status",
            "payload": { "status": "completed" },
            "_meta": { "rs.mcp-tasks/actor": "somebody new", "rs.mcp-tasks/at": "not a time" }
        }))
        .expect("the wire's shape");
        let event = TaskEvent::from_params(bare);
        assert_eq!(event.status(), Some(TaskStatus::Completed));
        assert_eq!(event.text(), None);
        assert_eq!((event.at, event.node, event.actor), (None, None, None));
    }

    #[test]
    fn only_the_next_event_is_taken() {
        assert!(is_next(None, 0));
        assert!(
            is_next(None, 7),
            "a reader without a cursor starts where the server does"
        );
        assert!(is_next(Some(4), 5));
        assert!(!is_next(Some(4), 4), "heard again");
        assert!(!is_next(Some(4), 2), "heard again");
        assert!(
            !is_next(Some(4), 6),
            "ahead: its own stream brings it in turn"
        );
        assert!(!is_next(Some(u64::MAX), 0));
    }
}
