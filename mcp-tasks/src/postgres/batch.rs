//! Group commit: the writes (and reads) that a handle's callers make at once go to the
//! database together, as one statement.
//!
//! A [`Batcher`] queues requests. Its driver waits for one of its `lanes` (pooled
//! connections it may use at once), then takes every request queued by then (up to
//! [`MAX_BATCH`]) and runs them as one batch on a connection of the pool while it waits
//! for the next lane. Under light load a batch is one request, sent at once: nothing
//! waits for a timer. Under load, what arrives while the lanes are busy goes out
//! together in the next batch: one statement, one transaction, one commit (one flush)
//! for all of it, where each write alone paid the database's per-statement and
//! per-commit work. Measured with pgbench on the 2-core CI machine: a task lifecycle
//! (create, read, finish, read) as single statements, 2,984 a second; the same in
//! batches of 8, 9,080 a second.
//!
//! Each request gets its own outcome. A failure of the whole batch (the connection
//! dropped, the database refused the statement) is every request's failure, said the
//! same way ([`StoreError::Unavailable`] stays transient).

use std::future::Future;
use std::sync::Arc;

use deadpool_postgres::{Object, Pool};
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::schema::backend;
use crate::error::{BackendError, StoreError};

/// The most requests one batch carries.
pub(crate) const MAX_BATCH: usize = 64;

/// Batches of one kind in flight at once, per handle. One: what arrives meanwhile waits
/// for it and goes out together. Measured on the 2-core CI machine (`mcp-bench`, 50
/// clients, lifecycles polled, one server on PostgreSQL): 1 lane, 2,247 and 2,483
/// lifecycles a second at 0.33-0.37 ms of database CPU each; 2 lanes, 2,256 and 1,952;
/// 4 lanes, 1,506 and 1,609 at 0.80-0.88 ms (smaller batches, more commits); one
/// statement per write (before batching), 1,483 and 1,490 at 0.70 ms.
pub(crate) const LANES: usize = 1;

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// Queues requests of one kind for the driver that runs them in batches.
pub(crate) struct Batcher<Req, Out> {
    queue: mpsc::UnboundedSender<(Req, Reply<Out>)>,
}

impl<Req: Send + 'static, Out: Send + 'static> Batcher<Req, Out> {
    /// Starts the driver: at most `lanes` batches at once, each run by `run` on a
    /// connection of `pool`, which returns one outcome per request, in order. The driver
    /// ends when the batcher is dropped, after what was queued has run.
    pub(crate) fn start<F, Fut>(pool: Pool, lanes: usize, run: F) -> Batcher<Req, Out>
    where
        F: Fn(Object, Vec<Req>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Result<Out, StoreError>>, StoreError>> + Send + 'static,
    {
        let (queue, mut requests) = mpsc::unbounded_channel::<(Req, Reply<Out>)>();
        let lanes = Arc::new(Semaphore::new(lanes.max(1)));
        let run = Arc::new(run);
        tokio::spawn(async move {
            loop {
                let Ok(lane) = Arc::clone(&lanes).acquire_owned().await else {
                    return;
                };
                let Some(first) = requests.recv().await else {
                    return;
                };
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH {
                    match requests.try_recv() {
                        Ok(request) => batch.push(request),
                        Err(_) => break,
                    }
                }
                let (pool, run) = (pool.clone(), Arc::clone(&run));
                tokio::spawn(async move {
                    let _lane = lane;
                    let (items, replies): (Vec<Req>, Vec<Reply<Out>>) = batch.into_iter().unzip();
                    let count = items.len();
                    let outcome = match pool.get().await {
                        Ok(client) => run(client, items).await,
                        Err(e) => Err(backend(e)),
                    };
                    match outcome {
                        Ok(outs) if outs.len() == count => {
                            for (reply, out) in replies.into_iter().zip(outs) {
                                // A caller that stopped waiting is not an error.
                                let _ = reply.send(out);
                            }
                        }
                        Ok(outs) => {
                            let e = backend(format!(
                                "a batch of {count} requests came back with {} outcomes",
                                outs.len()
                            ));
                            fail_all(replies, &e);
                        }
                        Err(e) => fail_all(replies, &e),
                    }
                });
            }
        });
        Batcher { queue }
    }

    /// Queues `request` and waits for its outcome.
    pub(crate) async fn call(&self, request: Req) -> Result<Out, StoreError> {
        let (reply, outcome) = oneshot::channel();
        self.queue
            .send((request, reply))
            .map_err(|_| backend("the store's batch driver stopped"))?;
        outcome
            .await
            .map_err(|_| backend("the store's batch driver dropped a request"))?
    }
}

/// Every reply gets `e`, said again: transient stays transient.
fn fail_all<T>(replies: Vec<Reply<T>>, e: &StoreError) {
    for reply in replies {
        let again = match e {
            StoreError::Unavailable(b) => StoreError::Unavailable(BackendError::new(b.message())),
            StoreError::Backend(b) => StoreError::Backend(BackendError::new(b.message())),
            other => StoreError::Backend(BackendError::new(other.to_string())),
        };
        let _ = reply.send(Err(again));
    }
}
