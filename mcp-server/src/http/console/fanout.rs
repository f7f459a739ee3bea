//! What the console's event streams (`events.rs`) share: one reader of the store's
//! change feed for all of them, and the limits on how many are open.
//!
//! The reader ([`Hub`]) subscribes to the store's feed when the first stream opens and
//! stops when the last one closes: while no console page is open the console reads
//! nothing. Each change it hears it reads from the store once (events are wake-ups, the
//! record is the truth; changes that arrive together are read once per task), as a
//! [`TaskSummary`] in JSON, and broadcasts that to every stream: a change costs one store
//! read however many streams are open. A stream that falls more than [`STREAM_BUFFER`]
//! updates behind learns it lagged and is sent a resync, as is every stream when the
//! store's feed lagged or a read failed.
//!
//! A stream takes a slot ([`Subscription`]) before it starts, and gives it back when it
//! ends (its client went away, its lifetime ran out, the server shut down): at most
//! [`ConsoleConfig::max_streams_per_operator`] per operator and
//! [`ConsoleConfig::max_streams`] in all; one more is [`Full`].
//!
//! **Invariant.** The reader runs only while a stream is open, and a stream never reads
//! the store itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_tasks::{EventError, EventStream, StoreError, TaskKey, TaskStore};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::ConsoleConfig;
use super::views::TaskSummary;
use crate::seal::SealKey;

/// Changes read together at most: a burst beyond it is read in several rounds.
const BATCH: usize = 256;

/// Updates a stream may fall behind the reader before it lags (and is sent a resync).
pub(super) const STREAM_BUFFER: usize = 256;

/// What a stream is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Update {
    /// A task changed: its [`TaskSummary`], in JSON.
    Task(Arc<str>),
    /// Updates were missed (this stream lagged, the store's feed lagged, or a changed
    /// task could not be read): reload.
    Resync,
}

/// Why a stream was refused: the limits are reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Full {
    /// The operator holds [`ConsoleConfig::max_streams_per_operator`] streams.
    #[error(
        "too many console event streams: this operator has {max} open, the most allowed; \
         close a console page (another tab or window) and reload"
    )]
    Operator {
        /// The limit.
        max: usize,
    },
    /// The server holds [`ConsoleConfig::max_streams`] streams.
    #[error(
        "too many console event streams: {max} are open on this server, the most allowed; \
         try again once one is closed"
    )]
    Server {
        /// The limit.
        max: usize,
    },
}

/// The console's shared change reader and its stream slots.
pub(super) struct Hub {
    store: Arc<dyn TaskStore>,
    /// The server's seal key: how a task's owner is shown.
    seal: SealKey,
    /// The server's shutdown: the reader ends with it.
    shutdown: CancellationToken,
    max_per_operator: usize,
    max_total: usize,
    /// Updates a stream may fall behind ([`STREAM_BUFFER`]; smaller in tests).
    buffer: usize,
    state: Mutex<State>,
}

/// The open streams and the reader, changed together.
#[derive(Default)]
struct State {
    /// Open streams by operator (an operator with none has no entry).
    open: HashMap<String, usize>,
    total: usize,
    /// The running reader, while a stream is open.
    reader: Option<Reader>,
}

/// A running reader: where it broadcasts, and how to stop it (cancelled too when it ends
/// on its own, so its streams end with it).
struct Reader {
    updates: broadcast::Sender<Update>,
    stop: CancellationToken,
}

/// A stream's slot and its updates. Dropping it gives the slot back (and stops the reader
/// when it was the last).
pub(super) struct Subscription {
    updates: broadcast::Receiver<Update>,
    ended: CancellationToken,
    _slot: Slot,
}

/// One open stream of `operator`, counted in its hub until dropped.
struct Slot {
    hub: Arc<Hub>,
    operator: String,
}

impl Hub {
    /// A hub over `store` with `config`'s limits, whose reader ends with `shutdown`;
    /// `seal`: the server's seal key (how a task's owner is shown).
    pub(super) fn new(
        store: Arc<dyn TaskStore>,
        shutdown: CancellationToken,
        config: &ConsoleConfig,
        seal: SealKey,
    ) -> Hub {
        Hub {
            store,
            seal,
            shutdown,
            max_per_operator: config.max_streams_per_operator,
            max_total: config.max_streams,
            buffer: STREAM_BUFFER,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for one more stream of `operator`, with its updates from now on (the reader
    /// started if none runs); [`Full`] past the limits.
    pub(super) fn open(self: &Arc<Self>, operator: &str) -> Result<Subscription, Full> {
        let mut state = self.state();
        let mine = state.open.get(operator).copied().unwrap_or(0);
        if mine >= self.max_per_operator {
            return Err(Full::Operator {
                max: self.max_per_operator,
            });
        }
        if state.total >= self.max_total {
            return Err(Full::Server {
                max: self.max_total,
            });
        }
        let reader = match state.reader.take() {
            Some(reader) if !reader.stop.is_cancelled() => reader,
            // None, or one that ended on its own (the store's feed closed): a new one.
            _ => self.start_reader(),
        };
        let subscription = Subscription {
            updates: reader.updates.subscribe(),
            ended: reader.stop.clone(),
            _slot: Slot {
                hub: Arc::clone(self),
                operator: operator.to_owned(),
            },
        };
        state.reader = Some(reader);
        *state.open.entry(operator.to_owned()).or_default() += 1;
        state.total += 1;
        Ok(subscription)
    }

    /// Subscribes to the store's feed now (so nothing that happens after the stream
    /// opened is missed) and reads it in a task of its own.
    fn start_reader(&self) -> Reader {
        let (updates, _) = broadcast::channel(self.buffer);
        let stop = self.shutdown.child_token();
        tokio::spawn(read(
            Arc::clone(&self.store),
            self.seal.clone(),
            self.store.events(),
            updates.clone(),
            stop.clone(),
        ));
        Reader { updates, stop }
    }

    /// Gives back a slot of `operator`; the last one stops the reader.
    fn release(&self, operator: &str) {
        let mut state = self.state();
        if let Some(mine) = state.open.get_mut(operator) {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                state.open.remove(operator);
            }
        }
        state.total = state.total.saturating_sub(1);
        if state.total == 0
            && let Some(reader) = state.reader.take()
        {
            reader.stop.cancel();
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.hub.release(&self.operator);
    }
}

impl Subscription {
    /// The next update; [`Update::Resync`] when this stream lagged; `None` once the reader
    /// has ended (the store's feed closed, or the server shuts down).
    pub(super) async fn next(&mut self) -> Option<Update> {
        match self.updates.recv().await {
            Ok(update) => Some(update),
            Err(broadcast::error::RecvError::Lagged(_)) => Some(Update::Resync),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// Cancelled when the reader ends.
    pub(super) fn ended(&self) -> CancellationToken {
        self.ended.clone()
    }
}

/// The reader: each round of changes read once and broadcast, until `stop` (or the end
/// of the store's feed, which cancels `stop` so the streams end too).
async fn read(
    store: Arc<dyn TaskStore>,
    seal: SealKey,
    mut events: EventStream,
    updates: broadcast::Sender<Update>,
    stop: CancellationToken,
) {
    let _end_streams = stop.clone().drop_guard();
    loop {
        let more = tokio::select! {
            _ = stop.cancelled() => return,
            more = round(store.as_ref(), &seal, &mut events, &updates) => more,
        };
        if !more {
            return;
        }
    }
}

/// Waits for changes, reads each changed task once and broadcasts it (then a resync when
/// events were missed); `false` once the store's feed is closed.
async fn round(
    store: &dyn TaskStore,
    seal: &SealKey,
    events: &mut EventStream,
    updates: &broadcast::Sender<Update>,
) -> bool {
    let first = events.recv().await;
    let mut keys: Vec<TaskKey> = Vec::new();
    let mut resync = false;
    let mut item = Some(first);
    let mut open = true;
    while let Some(next) = item.take() {
        match next {
            Ok(event) => {
                if !keys.contains(event.key()) {
                    keys.push(event.key().clone());
                }
            }
            Err(EventError::Lagged(_)) => resync = true,
            Err(EventError::Closed) => {
                // What came before is sent; then the reader ends.
                open = false;
                break;
            }
        }
        if keys.len() < BATCH {
            item = events.try_recv();
        }
    }
    for key in keys {
        match store.get(&key.owner, &key.id).await {
            Ok(record) => {
                let json = serde_json::to_string(&TaskSummary::of(&record, seal))
                    .unwrap_or_else(|_| "{}".to_owned());
                // No stream listening is not an error.
                let _ = updates.send(Update::Task(json.into()));
            }
            // Expired or swept since: nothing to show.
            Err(StoreError::NotFound) => {}
            Err(e) => {
                tracing::warn!(error = %e, task_id = %key.id, "console: a changed task could not be read");
                resync = true;
            }
        }
    }
    if resync {
        let _ = updates.send(Update::Resync);
    }
    open
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcp_tasks::{MemoryStore, NewTask};

    use super::*;

    fn hub(per_operator: usize, total: usize, buffer: usize) -> Arc<Hub> {
        let mut config = ConsoleConfig::basic("admin", "pw").expect("valid");
        config.max_streams_per_operator = per_operator;
        config.max_streams = total;
        let mut hub = Hub::new(
            Arc::new(MemoryStore::default()),
            CancellationToken::new(),
            &config,
            SealKey::random(),
        );
        hub.buffer = buffer;
        Arc::new(hub)
    }

    fn reading(hub: &Hub) -> bool {
        hub.state()
            .reader
            .as_ref()
            .is_some_and(|r| !r.stop.is_cancelled())
    }

    #[tokio::test]
    async fn streams_are_limited_per_operator_and_in_all() {
        let hub = hub(2, 3, STREAM_BUFFER);
        let a1 = hub.open("alice").expect("first");
        let _a2 = hub.open("alice").expect("second");
        assert_eq!(hub.open("alice").err(), Some(Full::Operator { max: 2 }));
        let _b1 = hub.open("bob").expect("bob's first");
        assert_eq!(hub.open("carol").err(), Some(Full::Server { max: 3 }));
        assert_eq!(hub.open("alice").err(), Some(Full::Operator { max: 2 }));
        drop(a1);
        let _a3 = hub.open("alice").expect("a freed slot");
        let none = self::hub(0, 0, STREAM_BUFFER);
        assert!(none.open("alice").is_err(), "0 refuses every stream");
        let message = Full::Operator { max: 4 }.to_string();
        assert!(message.contains("4 open"), "{message}");
    }

    #[tokio::test]
    async fn the_reader_runs_while_a_stream_is_open() {
        let hub = hub(4, 32, STREAM_BUFFER);
        assert!(!reading(&hub), "nothing read before a stream opens");
        let first = hub.open("alice").expect("open");
        let stopped = first.ended();
        assert!(reading(&hub));
        let second = hub.open("bob").expect("open");
        drop(first);
        assert!(reading(&hub), "one stream is still open");
        drop(second);
        assert!(
            !reading(&hub) && stopped.is_cancelled(),
            "stopped with the last"
        );
        assert!(hub.state().open.is_empty() && hub.state().total == 0);
        let _again = hub.open("alice").expect("open");
        assert!(reading(&hub), "started again");
    }

    #[tokio::test]
    async fn every_stream_hears_a_change() {
        let hub = hub(4, 32, STREAM_BUFFER);
        let mut first = hub.open("alice").expect("open");
        let mut second = hub.open("alice").expect("open");
        let task = hub
            .store
            .create(NewTask {
                ttl_ms: Some(60_000),
                ..super::super::test_task("bob", Some("slow"))
            })
            .await
            .expect("created");
        for stream in [&mut first, &mut second] {
            let update = tokio::time::timeout(Duration::from_secs(10), stream.next())
                .await
                .expect("in time");
            let Some(Update::Task(json)) = update else {
                panic!("{update:?}")
            };
            let summary: serde_json::Value = serde_json::from_str(&json).expect("JSON");
            assert_eq!(summary["id"], task.id.as_str());
            assert_eq!(summary["owner"], "bob");
        }
    }

    #[tokio::test]
    async fn a_stream_that_lags_is_told_to_resync() {
        let hub = hub(4, 32, 2);
        let mut slow = hub.open("alice").expect("open");
        let updates = hub
            .state()
            .reader
            .as_ref()
            .map(|r| r.updates.clone())
            .expect("a reader");
        for i in 0..5 {
            let _ = updates.send(Update::Task(format!("{{\"n\":{i}}}").into()));
        }
        assert_eq!(slow.next().await, Some(Update::Resync));
        // Then the newest it still holds.
        assert_eq!(slow.next().await, Some(Update::Task("{\"n\":3}".into())));
    }
}
