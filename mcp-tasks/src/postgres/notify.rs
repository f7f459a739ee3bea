//! The notifications of committed writes, sent right after each commit on a connection
//! of their own, in batches.
//!
//! Why not inside the write's transaction: PostgreSQL serializes the commits of every
//! transaction that notifies (the notification queue's lock is held until the commit
//! record is flushed), so in-transaction `pg_notify` made every write of a schema wait
//! for the previous one's disk flush. Measured on the 2-core CI machine with pgbench at
//! 50 clients: an INSERT per transaction commits 6,560 times a second, the same with a
//! `pg_notify` inside 1,039 times. Here the durable write commits with its group, and
//! its payloads follow on a connection with `synchronous_commit` off (notifications are
//! not durable anyway), many in one statement.
//!
//! What it costs: a writer that dies between its commit and the send loses those
//! notifications (other handles see the change when they next read it); a notifier that
//! cannot send (its connection dropped, or writers outran it) tells every listener to
//! re-read (a "resync" payload) once it can send again, so no waiter sleeps through a
//! lost notification.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_postgres::NoTls;

use super::listen;
use super::schema::backend;
use crate::error::StoreError;

/// Payload batches waiting to be sent; beyond it a write's payloads are dropped and a
/// resync is owed.
const QUEUE: usize = 4096;
/// The most payloads one statement sends.
const MAX_BATCH: usize = 512;
/// Reconnection backoff bounds.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

const SEND: &str = "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p";

/// Sends the payloads of one handle's committed writes, in the order they committed.
#[derive(Debug)]
pub(crate) struct Notifier {
    queue: mpsc::Sender<Vec<String>>,
    /// Set when a batch could not be queued: the next send starts with a resync.
    overflowed: Arc<AtomicBool>,
}

impl Notifier {
    /// Connects (failing like the store's other connections when it cannot) and starts
    /// the sender. It ends once the handle is dropped and what was queued is sent.
    pub(crate) async fn start(
        config: tokio_postgres::Config,
        channel: String,
        me: String,
    ) -> Result<Notifier, StoreError> {
        let client = connect(&config).await?;
        let (queue, batches) = mpsc::channel(QUEUE);
        let overflowed = Arc::new(AtomicBool::new(false));
        let sender = Sender {
            config,
            channel,
            me,
            overflowed: Arc::clone(&overflowed),
        };
        tokio::spawn(sender.run(client, batches));
        Ok(Notifier { queue, overflowed })
    }

    /// Queues the payloads of a committed write; never waits.
    pub(crate) fn send(&self, payloads: Vec<String>) {
        if payloads.is_empty() {
            return;
        }
        if self.queue.try_send(payloads).is_err() {
            self.overflowed.store(true, Ordering::Release);
        }
    }
}

/// A connection of the notifier, with its one statement prepared: each batch is then one
/// round trip (a statement given as text is parsed in a round trip of its own first).
struct Connection {
    client: tokio_postgres::Client,
    send: tokio_postgres::Statement,
}

/// A connection whose transactions do not wait for their flush.
async fn connect(config: &tokio_postgres::Config) -> Result<Connection, StoreError> {
    let (client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| backend(format!("notifier cannot connect: {e}")))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "notifier connection ended");
        }
    });
    client
        .batch_execute("SET synchronous_commit TO off")
        .await
        .map_err(|e| backend(format!("notifier cannot set synchronous_commit: {e}")))?;
    let send = client
        .prepare(SEND)
        .await
        .map_err(|e| backend(format!("notifier cannot prepare its statement: {e}")))?;
    Ok(Connection { client, send })
}

struct Sender {
    config: tokio_postgres::Config,
    channel: String,
    me: String,
    overflowed: Arc<AtomicBool>,
}

impl Sender {
    async fn run(self, client: Connection, mut batches: mpsc::Receiver<Vec<String>>) {
        let mut client = Some(client);
        while let Some(mut batch) = batches.recv().await {
            while batch.len() < MAX_BATCH {
                match batches.try_recv() {
                    Ok(more) => batch.extend(more),
                    Err(_) => break,
                }
            }
            if self.overflowed.swap(false, Ordering::AcqRel) {
                tracing::warn!(
                    "task notifications dropped (writers outran the notifier); listeners resync"
                );
                batch.insert(0, listen::resync(&self.me));
            }
            // Sent, or (its connection failed) replaced by a resync sent on a new one.
            let mut resyncing = false;
            loop {
                let live = match client.take() {
                    Some(live) => live,
                    None => match self.reconnect(&batches).await {
                        Some(live) => live,
                        // The handle is gone: nobody is left to tell.
                        None => return,
                    },
                };
                match live
                    .client
                    .execute(&live.send, &[&self.channel, &batch])
                    .await
                {
                    Ok(_) => {
                        client = Some(live);
                        break;
                    }
                    Err(e) if !resyncing => {
                        tracing::warn!(error = %e, dropped = batch.len(), "task notifications not sent; listeners resync once the notifier reconnects");
                        batch = vec![listen::resync(&self.me)];
                        resyncing = true;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "task notification resync not sent; trying again");
                    }
                }
            }
        }
    }

    /// A new connection, trying with backoff until one works, or `None` once the handle
    /// is dropped.
    async fn reconnect(&self, batches: &mpsc::Receiver<Vec<String>>) -> Option<Connection> {
        let mut delay = MIN_BACKOFF;
        loop {
            if batches.is_closed() {
                return None;
            }
            match connect(&self.config).await {
                Ok(client) => return Some(client),
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?delay, "task notifier cannot reconnect");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(MAX_BACKOFF);
                }
            }
        }
    }
}
