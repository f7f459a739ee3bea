//! The event feed: what the write scripts publish, and the pub/sub pump that brings it
//! into each handle's broadcast channel.
//!
//! Events go out by classic `PUBLISH` on the deployment's one channel (under `{prefix}`,
//! not sharded), which a Redis Cluster forwards to every node, so one plain pub/sub
//! connection per handle, to any node, hears them all. Sharded pub/sub (`SPUBLISH`) is
//! not used: it would take one subscription per shard's node, following slot moves, for
//! little gain.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use mcp_tasks_protocol::tasks::TaskStatus;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, oneshot, watch};

use crate::event::{EVENT_BUFFER, TaskEvent};
use crate::record::{Owner, TaskId, TaskKey, TaskRecord};

/// How often the idle subscription is pinged, and how long a ping may take, so a
/// half-open connection is noticed.
const HEALTH_CHECK: Duration = Duration::from_secs(5);
/// Reconnect backoff bounds.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The longest a write waits for its own event to come back through the subscription.
const ECHO_WAIT: Duration = Duration::from_secs(1);

/// What kind of event a payload carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    Changed,
    InputResponded,
    CancelRequested,
    /// Entries were appended to a task's log (`log` says up to which).
    Logged,
}

/// The JSON payload published on the deployment's channel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Wire {
    pub kind: Kind,
    pub owner: Owner,
    pub id: TaskId,
    pub status: TaskStatus,
    pub revision: u64,
    /// Whether the task waits for a worker (absent from older writers: assumed, so a
    /// worker looks).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub queued: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// The publishing handle and its write sequence number, so the publisher can wait
    /// for its own event (see [`Shared::echo`]).
    #[serde(default)]
    pub node: String,
    #[serde(default)]
    pub seq: u64,
    /// The last log entry of a `logged` payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<u64>,
}

impl Wire {
    /// The payload of `event`, a change of `rec` (whose status and revision it carries
    /// whatever the kind).
    pub(crate) fn new(event: TaskEvent, rec: &TaskRecord) -> Wire {
        let (kind, keys, log) = match event {
            TaskEvent::Changed { .. } => (Kind::Changed, Vec::new(), None),
            TaskEvent::InputResponded { keys, .. } => (Kind::InputResponded, keys, None),
            TaskEvent::CancelRequested { .. } => (Kind::CancelRequested, Vec::new(), None),
            TaskEvent::Logged { seq, .. } => (Kind::Logged, Vec::new(), Some(seq)),
        };
        Wire {
            kind,
            owner: rec.owner.clone(),
            id: rec.id.clone(),
            status: rec.status,
            revision: rec.revision,
            queued: rec.queued_tool().is_some(),
            keys,
            node: String::new(),
            seq: 0,
            log,
        }
    }

    /// The payload announcing entries appended to the log of `owner`'s task `id` by a
    /// tool (no record changed: status and revision are placeholders its readers
    /// ignore). The append script completes it with `"log": LAST`, since only it knows
    /// the `seq` of the last entry.
    pub(crate) fn logged(owner: &Owner, id: &TaskId) -> Wire {
        Wire {
            kind: Kind::Logged,
            owner: owner.clone(),
            id: id.clone(),
            status: TaskStatus::Working,
            revision: 0,
            queued: false,
            keys: Vec::new(),
            node: String::new(),
            seq: 0,
            log: None,
        }
    }

    fn into_event(self) -> TaskEvent {
        let key = TaskKey {
            owner: self.owner,
            id: self.id,
        };
        match self.kind {
            Kind::Changed => TaskEvent::Changed {
                key,
                status: self.status,
                revision: self.revision,
                queued: self.queued,
            },
            Kind::InputResponded => TaskEvent::InputResponded {
                key,
                keys: self.keys,
            },
            Kind::CancelRequested => TaskEvent::CancelRequested { key },
            Kind::Logged => TaskEvent::Logged {
                key,
                seq: self.log.unwrap_or(0),
            },
        }
    }
}

/// The JSON payload announcing that a resource changed (the session store's rule 9),
/// published on the same channel as task events.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ResourceWire {
    /// The resource's URI.
    pub resource: String,
    /// The announcing handle (which delivered it to its own feed already).
    pub node: String,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// State shared by a handle and its pump.
#[derive(Debug)]
pub(crate) struct Shared {
    pub events: broadcast::Sender<TaskEvent>,
    /// The resource URIs announced (rule 9 of the session store).
    pub resources: broadcast::Sender<String>,
    pub resync: watch::Sender<u64>,
    /// This handle's name in payloads.
    node: String,
    next_seq: AtomicU64,
    /// Writes of this handle waiting for their event to come back, by sequence number.
    waiting: Mutex<HashMap<u64, oneshot::Sender<()>>>,
    /// Whether the subscription is up (when it is not, writes do not wait for echoes).
    connected: AtomicBool,
}

/// A write's claim on the echo of its last event.
#[derive(Debug)]
pub(crate) struct Echo {
    seq: u64,
    rx: oneshot::Receiver<()>,
}

impl Shared {
    pub(crate) fn new() -> Result<Shared, getrandom::Error> {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let (resync, _) = watch::channel(0);
        let (resources, _) = broadcast::channel(crate::session::RESOURCE_FEED);
        Ok(Shared {
            events,
            resources,
            resync,
            node: format!("{:016x}", getrandom::u64()?),
            next_seq: AtomicU64::new(1),
            waiting: Mutex::default(),
            connected: AtomicBool::new(false),
        })
    }

    /// Stamps `events` with this handle's name and sequence numbers and serializes them;
    /// returns the payloads and, when there are any, the echo to wait for.
    pub(crate) fn stamp(&self, events: Vec<Wire>) -> (Vec<String>, Option<Echo>) {
        let mut payloads = Vec::with_capacity(events.len());
        let mut last = None;
        for mut wire in events {
            let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
            wire.node.clone_from(&self.node);
            wire.seq = seq;
            // A payload of plain strings and numbers always serializes.
            if let Ok(json) = serde_json::to_string(&wire) {
                payloads.push(json);
                last = Some(seq);
            }
        }
        let echo = last.map(|seq| {
            let (tx, rx) = oneshot::channel();
            lock(&self.waiting).insert(seq, tx);
            Echo { seq, rx }
        });
        (payloads, echo)
    }

    /// Waits (briefly) until the subscription delivered the write's last event into this
    /// handle's feed, so a subscriber that subscribes after the write returns does not
    /// hear it. Returns at once when the subscription is down.
    pub(crate) async fn echo(&self, echo: Option<Echo>) {
        let Some(echo) = echo else { return };
        if self.connected.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(ECHO_WAIT, echo.rx).await;
        }
        lock(&self.waiting).remove(&echo.seq);
    }

    /// Forgets an echo whose write was not committed.
    pub(crate) fn forget(&self, echo: Option<Echo>) {
        if let Some(echo) = echo {
            lock(&self.waiting).remove(&echo.seq);
        }
    }

    /// Announces `uri` to this handle's resource feed and returns the payload that
    /// tells the others.
    pub(crate) fn announce(&self, uri: &str) -> Result<String, serde_json::Error> {
        // No subscriber is not an error.
        let _ = self.resources.send(uri.to_owned());
        serde_json::to_string(&ResourceWire {
            resource: uri.to_owned(),
            node: self.node.clone(),
        })
    }

    fn deliver(&self, payload: &[u8]) {
        if let Ok(announced) = serde_json::from_slice::<ResourceWire>(payload) {
            if announced.node != self.node {
                let _ = self.resources.send(announced.resource);
            }
            return;
        }
        let wire: Wire = match serde_json::from_slice(payload) {
            Ok(wire) => wire,
            Err(e) => {
                tracing::warn!("ignoring an undecodable Redis task event: {e}");
                return;
            }
        };
        let own = (wire.node == self.node).then_some(wire.seq);
        // No subscriber is not an error.
        let _ = self.events.send(wire.into_event());
        if let Some(seq) = own
            && let Some(tx) = lock(&self.waiting).remove(&seq)
        {
            let _ = tx.send(());
        }
    }

    fn signal_resync(&self) {
        self.resync.send_modify(|n| *n = n.wrapping_add(1));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A dedicated pub/sub connection subscribed to `channel`, on the first of `nodes` that
/// answers, starting at `start` and going round; returns that node's index. (On a
/// cluster any node will do: `PUBLISH` reaches every node.)
pub(crate) async fn subscribe(
    nodes: &[redis::Client],
    start: usize,
    channel: &str,
) -> redis::RedisResult<(usize, redis::aio::PubSub)> {
    let mut failure = None;
    for n in 0..nodes.len() {
        let at = (start + n) % nodes.len();
        let attempt = async {
            let mut pubsub = nodes[at].get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        match tokio::time::timeout(HEALTH_CHECK, attempt).await {
            Ok(Ok(pubsub)) => return Ok((at, pubsub)),
            Ok(Err(e)) => failure = Some(e),
            Err(_) => {
                failure = Some(redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "subscribing timed out",
                )));
            }
        }
    }
    Err(failure.unwrap_or_else(|| {
        redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no Redis node to subscribe on",
        ))
    }))
}

/// Forwards the subscription's messages into `shared.events` for ever; when the
/// connection drops (or stops answering pings), signals a resync, reconnects with
/// backoff (to the same node first, then the next ones), resubscribes and signals a
/// resync again.
pub(crate) async fn pump(
    nodes: Vec<redis::Client>,
    mut at: usize,
    channel: String,
    shared: Arc<Shared>,
    mut pubsub: redis::aio::PubSub,
) {
    loop {
        shared.connected.store(true, Ordering::Release);
        forward(&shared, pubsub).await;
        shared.connected.store(false, Ordering::Release);
        // Whatever is published until the subscription is back is lost for this handle:
        // wake every subscriber now, so no waiter sleeps through it.
        shared.signal_resync();
        let mut backoff = MIN_BACKOFF;
        pubsub = loop {
            tokio::time::sleep(backoff).await;
            match subscribe(&nodes, at, &channel).await {
                Ok((node, pubsub)) => {
                    at = node;
                    break pubsub;
                }
                Err(e) => {
                    tracing::warn!("Redis event subscription: reconnect failed: {e}");
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        tracing::info!("Redis event subscription restored");
        // Events published while it was down are gone: subscribers re-read.
        shared.signal_resync();
    }
}

/// Forwards messages until the connection fails.
async fn forward(shared: &Shared, pubsub: redis::aio::PubSub) {
    let (mut sink, mut stream) = pubsub.split();
    let mut ticks = tokio::time::interval(HEALTH_CHECK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.reset();
    loop {
        tokio::select! {
            msg = stream.next() => match msg {
                Some(msg) => {
                    shared.deliver(msg.get_payload_bytes());
                    ticks.reset();
                }
                None => {
                    tracing::warn!("Redis event subscription dropped");
                    return;
                }
            },
            _ = ticks.tick() => {
                let ping = tokio::time::timeout(HEALTH_CHECK, sink.ping::<redis::Value>()).await;
                if !matches!(ping, Ok(Ok(_))) {
                    tracing::warn!("Redis event subscription stopped answering pings");
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logged_payload_completed_by_the_append_script_reads_back() {
        let (owner, id) = (Owner::new("alice"), TaskId::from_wire("abc"));
        let json = serde_json::to_string(&Wire::logged(&owner, &id)).expect("serializes");
        // What the script does: string.sub(payload, 1, -2) .. ',"log":' .. last .. '}'
        let completed = format!("{},\"log\":7}}", &json[..json.len() - 1]);
        let wire: Wire = serde_json::from_str(&completed).expect("reads back");
        assert!(
            matches!(
                wire.into_event(),
                TaskEvent::Logged { key, seq: 7 } if key.owner == owner && key.id == id
            ),
            "{completed}"
        );
    }
}
