//! Per-principal limits kept in memory: open `subscriptions/listen` streams, and the
//! poll rate of `tasks/get` (answered with a larger `pollIntervalMs`, never refused).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_tasks::Owner;

/// Counts the open subscriptions of each principal.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    limit: usize,
    open: Arc<Mutex<HashMap<String, usize>>>,
}

/// One open subscription; dropping it frees its place.
#[derive(Debug)]
pub(crate) struct SubscriptionSlot {
    owner: String,
    open: Arc<Mutex<HashMap<String, usize>>>,
}

impl Subscriptions {
    pub(crate) fn new(limit: usize) -> Subscriptions {
        Subscriptions {
            limit,
            open: Arc::default(),
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// A place for one more subscription of `owner`, or `None` at the limit.
    pub(crate) fn acquire(&self, owner: &Owner) -> Option<SubscriptionSlot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(owner.as_str().to_owned()).or_insert(0);
        if *count >= self.limit {
            if *count == 0 {
                open.remove(owner.as_str());
            }
            return None;
        }
        *count += 1;
        Some(SubscriptionSlot {
            owner: owner.as_str().to_owned(),
            open: Arc::clone(&self.open),
        })
    }
}

impl Drop for SubscriptionSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.owner) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.owner);
            }
        }
    }
}

/// Polls of one task allowed within one poll interval before the interval grows.
pub(crate) const POLLS_PER_INTERVAL: u32 = 4;
/// The poll interval assumed when a task suggests none.
const DEFAULT_INTERVAL_MS: u64 = 1_000;
/// The largest interval the back-off suggests.
const MAX_INTERVAL_MS: u64 = 60_000;
/// At most this many (owner, task) pairs are remembered.
const MAX_TRACKED: usize = 10_000;

/// Remembers, per (owner, task), how often `tasks/get` was read in the current window.
/// A caller reading more than [`POLLS_PER_INTERVAL`] times within the task's poll
/// interval is told a doubled interval (per excess window, up to a minute). Bounded:
/// when full, stale entries go first, then everything (the back-off restarts, answers
/// stay correct).
#[derive(Debug, Default)]
pub(crate) struct PollMeter {
    seen: Mutex<HashMap<(String, String), Window>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    polls: u32,
    /// How many times the interval has been doubled for this caller and task.
    backoff: u32,
}

impl PollMeter {
    /// The poll interval to tell `owner` for task `id` whose own interval is
    /// `interval_ms`, counting this read.
    pub(crate) fn advise(&self, owner: &Owner, id: &str, interval_ms: Option<u64>) -> Option<u64> {
        self.advise_at(owner, id, interval_ms, Instant::now())
    }

    fn advise_at(
        &self,
        owner: &Owner,
        id: &str,
        interval_ms: Option<u64>,
        now: Instant,
    ) -> Option<u64> {
        let base = interval_ms.unwrap_or(DEFAULT_INTERVAL_MS).max(1);
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let key = (owner.as_str().to_owned(), id.to_owned());
        if !seen.contains_key(&key) && seen.len() >= MAX_TRACKED {
            let stale = Duration::from_millis(MAX_INTERVAL_MS);
            seen.retain(|_, w| now.saturating_duration_since(w.start) < stale);
            if seen.len() >= MAX_TRACKED {
                seen.clear();
            }
        }
        let window = seen.entry(key).or_insert(Window {
            start: now,
            polls: 0,
            backoff: 0,
        });
        let current = base
            .saturating_mul(1u64 << window.backoff.min(16))
            .min(MAX_INTERVAL_MS.max(base));
        if now.saturating_duration_since(window.start) >= Duration::from_millis(current) {
            // A new window; a caller that kept to the pace earns the back-off back.
            if window.polls <= POLLS_PER_INTERVAL {
                window.backoff = window.backoff.saturating_sub(1);
            }
            window.start = now;
            window.polls = 0;
        }
        window.polls += 1;
        if window.polls > POLLS_PER_INTERVAL {
            window.backoff = (window.backoff + 1).min(16);
            window.polls = 0;
            window.start = now;
        }
        if window.backoff == 0 {
            return interval_ms;
        }
        Some(
            base.saturating_mul(1u64 << window.backoff)
                .min(MAX_INTERVAL_MS.max(base)),
        )
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_are_counted_per_owner_and_freed_on_drop() {
        let subs = Subscriptions::new(2);
        let alice = Owner::new("alice");
        let a1 = subs.acquire(&alice).expect("first");
        let _a2 = subs.acquire(&alice).expect("second");
        assert!(subs.acquire(&alice).is_none(), "third is over the limit");
        assert!(
            subs.acquire(&Owner::new("bob")).is_some(),
            "bob has his own"
        );
        drop(a1);
        assert!(subs.acquire(&alice).is_some(), "a place was freed");
    }

    #[test]
    fn fast_polls_get_a_larger_interval_and_slow_ones_do_not() {
        let meter = PollMeter::default();
        let alice = Owner::new("alice");
        let t0 = Instant::now();
        for i in 0..POLLS_PER_INTERVAL {
            let at = t0 + Duration::from_millis(u64::from(i));
            assert_eq!(meter.advise_at(&alice, "t", Some(100), at), Some(100));
        }
        let at = t0 + Duration::from_millis(10);
        assert_eq!(meter.advise_at(&alice, "t", Some(100), at), Some(200));
        // Another owner and another task are unaffected.
        assert_eq!(
            meter.advise_at(&Owner::new("bob"), "t", Some(100), at),
            Some(100)
        );
        assert_eq!(meter.advise_at(&alice, "u", Some(100), at), Some(100));
        // Keeping to the pace for a while earns the back-off back.
        let mut at = at;
        for _ in 0..3 {
            at += Duration::from_millis(250);
            meter.advise_at(&alice, "t", Some(100), at);
        }
        assert_eq!(meter.advise_at(&alice, "t", Some(100), at), Some(100));
    }

    #[test]
    fn the_meter_stays_bounded() {
        let meter = PollMeter::default();
        let alice = Owner::new("alice");
        let now = Instant::now();
        for i in 0..(MAX_TRACKED + 10) {
            meter.advise_at(&alice, &i.to_string(), Some(100), now);
        }
        assert!(meter.tracked() <= MAX_TRACKED);
    }
}
