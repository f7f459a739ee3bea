//! Time, injectable: stores read the clock instead of the system time, so TTLs, leases
//! and sweeps are tested without sleeping.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::record::Millis;

/// A source of "now".
pub trait Clock: Send + Sync + Debug + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> Millis;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
    }
}

/// A clock that moves only when told. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: Millis) -> ManualClock {
        ManualClock(Arc::new(AtomicI64::new(start_ms)))
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: u64) {
        self.0
            .fetch_add(i64::try_from(ms).unwrap_or(i64::MAX), Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, now_ms: Millis) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    /// 2026-01-01T00:00:00Z.
    fn default() -> Self {
        ManualClock::new(1_767_225_600_000)
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }
}
