//! Events across instances: the `NOTIFY` payload, and the listener task that turns every
//! notification on the schema's channel into an item of the handle's feed.

use std::future::Future;
use std::time::Duration;

use futures::{Stream, StreamExt};
use mcp_tasks_protocol::tasks::TaskStatus;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, NoTls};

use super::schema::backend;
use crate::error::StoreError;
use crate::event::{FeedItem, TaskEvent};
use crate::record::{Owner, TaskId, TaskKey};

/// PostgreSQL refuses `NOTIFY` payloads of 8000 bytes or more.
const MAX_PAYLOAD: usize = 7999;
/// First and longest wait between reconnection attempts.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How often an idle listener checks that its connection still answers, and how long
/// it waits for the answer.
const PING_EVERY: Duration = Duration::from_secs(15);
const PING_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Changed,
    InputResponded,
    CancelRequested,
    /// Entries were appended to a task's log: `seq` says up to which.
    Logged,
    /// Too large to send as it is: every listener tells its subscribers to re-read.
    Resync,
    /// A resource changed (the session store's rule 9): `uri` says which.
    ResourceUpdated,
}

/// The JSON of one notification: small by construction (keys, never values).
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    kind: Kind,
    /// The handle that made the change (it has published the event itself).
    from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<Owner>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<TaskId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<TaskStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revision: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    keys: Option<Vec<String>>,
    /// Whether the task waits for a worker; absent (from older writers) reads as yes,
    /// so a worker looks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    queued: Option<bool>,
    /// The resource of a `resource_updated` notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
    /// The last log entry of a `logged` notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
}

/// The feeds a listener fills: task events, and announced resource URIs.
#[derive(Debug, Clone)]
pub(crate) struct Feeds {
    pub tasks: broadcast::Sender<FeedItem>,
    pub resources: broadcast::Sender<String>,
}

/// What one notification means to a handle.
#[derive(Debug, PartialEq)]
enum Heard {
    Task(FeedItem),
    Resource(String),
}

/// The notification payload of `event`, made by the handle `from`. One that would pass
/// PostgreSQL's limit becomes a `resync`.
pub(crate) fn payload(event: &TaskEvent, from: &str) -> String {
    let key = event.key();
    let mut p = Payload {
        kind: Kind::Changed,
        from: from.to_owned(),
        owner: Some(key.owner.clone()),
        id: Some(key.id.clone()),
        status: None,
        revision: None,
        keys: None,
        queued: None,
        uri: None,
        seq: None,
    };
    match event {
        TaskEvent::Changed {
            status,
            revision,
            queued,
            ..
        } => {
            p.status = Some(*status);
            p.revision = Some(*revision);
            // Said only when not queued: an absent field reads as queued.
            p.queued = (!queued).then_some(false);
        }
        TaskEvent::InputResponded { keys, .. } => {
            p.kind = Kind::InputResponded;
            p.keys = Some(keys.clone());
        }
        TaskEvent::CancelRequested { .. } => p.kind = Kind::CancelRequested,
        TaskEvent::Logged { seq, .. } => {
            p.kind = Kind::Logged;
            p.seq = Some(*seq);
        }
    }
    match serde_json::to_string(&p) {
        Ok(json) if json.len() <= MAX_PAYLOAD => json,
        _ => resync(from),
    }
}

/// The notification payload announcing that `uri` changed, made by the handle `from`;
/// `None` when it would pass PostgreSQL's limit.
pub(crate) fn resource_payload(uri: &str, from: &str) -> Option<String> {
    let p = Payload {
        kind: Kind::ResourceUpdated,
        from: from.to_owned(),
        owner: None,
        id: None,
        status: None,
        revision: None,
        keys: None,
        queued: None,
        uri: Some(uri.to_owned()),
        seq: None,
    };
    serde_json::to_string(&p)
        .ok()
        .filter(|json| json.len() <= MAX_PAYLOAD)
}

pub(crate) fn resync(from: &str) -> String {
    format!(
        r#"{{"kind":"resync","from":{}}}"#,
        serde_json::Value::String(from.to_owned())
    )
}

/// What a notification means to the handle `me`: nothing (its own change, already
/// published), an event, a resync (also for a payload it cannot read), or a resource
/// announcement.
fn heard(payload: &str, me: &str) -> Option<Heard> {
    let Ok(p) = serde_json::from_str::<Payload>(payload) else {
        tracing::warn!(
            payload,
            "unreadable task notification; resyncing subscribers"
        );
        return Some(Heard::Task(FeedItem::Resync));
    };
    if p.from == me {
        return None;
    }
    if p.kind == Kind::ResourceUpdated {
        return p.uri.map(Heard::Resource);
    }
    feed_item(p).map(Heard::Task)
}

/// The task feed's item of a notification another handle sent.
fn feed_item(p: Payload) -> Option<FeedItem> {
    let key = match (p.owner, p.id) {
        (Some(owner), Some(id)) => TaskKey { owner, id },
        _ => return Some(FeedItem::Resync),
    };
    let event = match (p.kind, p.status, p.revision, p.keys) {
        (Kind::Changed, Some(status), Some(revision), _) => TaskEvent::Changed {
            key,
            status,
            revision,
            queued: p.queued.unwrap_or(true),
        },
        (Kind::InputResponded, _, _, Some(keys)) => TaskEvent::InputResponded { key, keys },
        (Kind::CancelRequested, ..) => TaskEvent::CancelRequested { key },
        (Kind::Logged, ..) => match p.seq {
            Some(seq) => TaskEvent::Logged { key, seq },
            None => return Some(FeedItem::Resync),
        },
        _ => return Some(FeedItem::Resync),
    };
    Some(FeedItem::Event(event))
}

/// Starts the listener of the handle `me` and returns once it is listening (so no change
/// committed after `connect` returns goes unheard), or with the first connection's error.
pub(crate) async fn start(
    config: tokio_postgres::Config,
    channel: String,
    me: String,
    feeds: Feeds,
) -> Result<JoinHandle<()>, StoreError> {
    let (ready, listening) = oneshot::channel();
    let task = tokio::spawn(run(config, channel, me, feeds, ready));
    match listening.await {
        Ok(Ok(())) => Ok(task),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(backend("the event listener stopped before it listened")),
    }
}

type Ready = oneshot::Sender<Result<(), StoreError>>;

/// The listener: one session per connection; when a session ends (the connection
/// dropped, or stopped answering), waits (doubling from 50 ms to 5 s) and starts
/// another. After every re-`LISTEN`, sends [`FeedItem::Resync`] so subscribers re-read
/// what changed while nobody was listening. Runs until aborted (the store is dropped).
async fn run(
    config: tokio_postgres::Config,
    channel: String,
    me: String,
    feeds: Feeds,
    ready: Ready,
) {
    let mut ready = Some(ready);
    let mut delay = MIN_BACKOFF;
    loop {
        let (listened, error) = session(&config, &channel, &me, &feeds, &mut ready).await;
        if let Some(ready) = ready.take() {
            // The first connection failed: `connect` reports it, and the store is not made.
            let _ = ready.send(Err(error));
            return;
        }
        if listened {
            delay = MIN_BACKOFF;
        }
        tracing::warn!(%channel, %error, retry_in = ?delay, "task event listener lost its connection");
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(MAX_BACKOFF);
    }
}

/// One connection's life. Returns whether it got to `LISTEN`, and why it ended.
async fn session(
    config: &tokio_postgres::Config,
    channel: &str,
    me: &str,
    feeds: &Feeds,
    ready: &mut Option<Ready>,
) -> (bool, StoreError) {
    let (client, mut connection) = match config.connect(NoTls).await {
        Ok(pair) => pair,
        Err(e) => return (false, backend(format!("listener cannot connect: {e}"))),
    };
    let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
    let mut pump = |message: Option<Result<AsyncMessage, tokio_postgres::Error>>| match message {
        Some(Ok(AsyncMessage::Notification(n))) => {
            // No subscriber is not an error.
            match heard(n.payload(), me).filter(|_| n.channel() == channel) {
                Some(Heard::Task(item)) => {
                    let _ = feeds.tasks.send(item);
                }
                Some(Heard::Resource(uri)) => {
                    let _ = feeds.resources.send(uri);
                }
                None => {}
            }
            Ok(())
        }
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(backend(format!("listener connection failed: {e}"))),
        None => Err(backend("listener connection closed")),
    };
    let listen = format!("LISTEN {channel}");
    if let Err(e) = drive(client.batch_execute(&listen), &mut messages, &mut pump).await {
        return (false, e);
    }
    match ready.take() {
        Some(ready) => {
            let _ = ready.send(Ok(()));
        }
        // Listening again: whatever was committed meanwhile went unheard.
        None => {
            let _ = feeds.tasks.send(FeedItem::Resync);
        }
    }
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            message = messages.next() => {
                if let Err(e) = pump(message) {
                    return (true, e);
                }
            }
            _ = ping.tick() => {
                // The ping re-issues the (idempotent) LISTEN: the connection's last query
                // stays `LISTEN <channel>`, which tells operators what it is.
                let probe = tokio::time::timeout(PING_TIMEOUT, client.batch_execute(&listen));
                match drive(probe, &mut messages, &mut pump).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(_)) => return (true, backend("listener connection does not answer")),
                    Err(e) => return (true, e),
                }
            }
        }
    }
}

/// Runs `request` on the client while pumping the connection's messages (a request is
/// only answered while its connection is driven). Fails if the connection fails.
async fn drive<T, E: crate::error::IntoStoreError>(
    request: impl Future<Output = Result<T, E>>,
    messages: &mut (impl Stream<Item = Result<AsyncMessage, tokio_postgres::Error>> + Unpin),
    pump: &mut impl FnMut(Option<Result<AsyncMessage, tokio_postgres::Error>>) -> Result<(), StoreError>,
) -> Result<T, StoreError> {
    let mut request = std::pin::pin!(request);
    loop {
        tokio::select! {
            result = &mut request => return result.map_err(backend),
            message = messages.next() => pump(message)?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> TaskKey {
        TaskKey {
            owner: Owner::new("alice"),
            id: TaskId::from_wire("0123456789abcdef0123456789abcdef"),
        }
    }

    #[test]
    fn payloads_round_trip_and_own_ones_are_skipped() {
        let events = [
            TaskEvent::Changed {
                key: key(),
                status: TaskStatus::InputRequired,
                revision: 7,
                queued: false,
            },
            TaskEvent::Changed {
                key: key(),
                status: TaskStatus::Working,
                revision: 1,
                queued: true,
            },
            TaskEvent::InputResponded {
                key: key(),
                keys: vec!["a".into(), "b".into()],
            },
            TaskEvent::CancelRequested { key: key() },
        ];
        for event in events {
            let json = payload(&event, "node-a");
            assert_eq!(
                heard(&json, "node-b"),
                Some(Heard::Task(FeedItem::Event(event)))
            );
            assert_eq!(heard(&json, "node-a"), None);
        }
    }

    #[test]
    fn oversized_and_unreadable_payloads_resync() {
        let event = TaskEvent::InputResponded {
            key: key(),
            keys: (0..64)
                .map(|i| format!("{i}-{}", "k".repeat(200)))
                .collect(),
        };
        let json = payload(&event, "node-a");
        assert!(json.len() <= MAX_PAYLOAD);
        assert_eq!(heard(&json, "node-b"), Some(Heard::Task(FeedItem::Resync)));
        assert_eq!(
            heard("not json", "node-b"),
            Some(Heard::Task(FeedItem::Resync))
        );
    }

    #[test]
    fn resource_announcements_round_trip_and_oversized_ones_are_not_sent() {
        let json = resource_payload("test://a b", "node-a").expect("small enough");
        assert_eq!(
            heard(&json, "node-b"),
            Some(Heard::Resource("test://a b".into()))
        );
        assert_eq!(heard(&json, "node-a"), None);
        assert_eq!(resource_payload(&"x".repeat(MAX_PAYLOAD), "node-a"), None);
    }
}
