//! Riding out a store outage: a backoff between attempts, and the loop that retries a
//! store operation while its failure is transient ([`StoreError::is_transient`]).
//!
//! Every operation retried here is safe to repeat by the store's contract: a terminal
//! write that already landed comes back `won: false`, an answer already accepted is
//! ignored, a lease renewal extends the same lease.

use std::future::Future;
use std::time::Duration;

use mcp_tasks::StoreError;
use tokio_util::sync::CancellationToken;

/// The first wait after a failure.
const FIRST: Duration = Duration::from_millis(50);
/// The longest wait between two attempts.
const CAP: Duration = Duration::from_secs(2);

/// Exponential backoff from 50 ms to 2 s, each wait drawn between half and all of its
/// step (so nodes that lost the store together do not come back in lockstep).
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    step: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { step: FIRST }
    }
}

impl Backoff {
    /// Sleeps for the next wait and lengthens the step.
    pub(crate) async fn wait(&mut self) {
        let mut bits = [0u8; 2];
        // Without random bits the wait is the whole step: still correct, less spread.
        let spread = getrandom::fill(&mut bits)
            .map(|()| f64::from(u16::from_le_bytes(bits)) / f64::from(u16::MAX))
            .unwrap_or(1.0);
        tokio::time::sleep(self.step.mul_f64(0.5 + spread / 2.0)).await;
        self.step = (self.step * 2).min(CAP);
    }
}

/// Runs `op` until it returns anything but a transient failure, waiting a [`Backoff`]
/// between attempts. Gives up with the last failure when `stop` is cancelled. `what`
/// names the operation in the log.
pub(crate) async fn while_transient<T, F, Fut>(
    stop: &CancellationToken,
    what: &str,
    mut op: F,
) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut backoff = Backoff::default();
    let mut failures = 0u32;
    loop {
        match op().await {
            Err(e) if e.is_transient() => {
                failures += 1;
                if failures == 1 {
                    tracing::warn!(error = %e, "{what}: the store is unavailable; retrying until it answers");
                }
                tokio::select! {
                    _ = stop.cancelled() => return Err(e),
                    _ = backoff.wait() => {}
                }
            }
            done => {
                if failures > 0 {
                    tracing::info!(failures, "{what}: the store answered again");
                }
                return done;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn retries_transient_failures_only() {
        let calls = AtomicU32::new(0);
        let stop = CancellationToken::new();
        let got = while_transient(&stop, "test", || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0..=2 => Err(StoreError::unavailable("down")),
                _ => Ok(7),
            }
        })
        .await;
        assert_eq!(got.ok(), Some(7));
        assert_eq!(calls.load(Ordering::SeqCst), 4);

        calls.store(0, Ordering::SeqCst);
        let got: Result<(), _> = while_transient(&stop, "test", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::NotFound)
        })
        .await;
        assert!(matches!(got, Err(StoreError::NotFound)));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_when_stopped() {
        let stop = CancellationToken::new();
        stop.cancel();
        let got: Result<(), _> = while_transient(&stop, "test", || async {
            Err(StoreError::unavailable("down"))
        })
        .await;
        assert!(matches!(got, Err(e) if e.is_transient()));
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_grows_to_its_cap() {
        let mut b = Backoff::default();
        assert_eq!(b.step, FIRST);
        for _ in 0..10 {
            b.wait().await;
        }
        assert_eq!(b.step, CAP);
    }
}
