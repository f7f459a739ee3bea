//! [`Expiring`]: a bounded map of values that expire, keyed by a token's SHA-256; the
//! introspection outcomes of `introspect.rs` are kept in two of them.
//!
//! **Invariants.** Never more entries than its capacity (zero: nothing is kept); an
//! expired entry is never returned. A new entry is always kept (unless the capacity is
//! zero): when the map is full, the expired entries go first, then, if none had expired,
//! the one that expires soonest. So a full map never stops caching, and what fills it
//! only ever evicts entries of the same map.

use std::collections::HashMap;
use std::time::Instant;

/// The SHA-256 of a token: entries are keyed by it, never by the token.
pub(super) type TokenHash = [u8; 32];

/// Values that expire, at most `capacity` of them.
pub(super) struct Expiring<V> {
    capacity: usize,
    entries: HashMap<TokenHash, (V, Instant)>,
}

impl<V: Clone> Expiring<V> {
    /// An empty map that keeps at most `capacity` entries (allocated as they come).
    pub(super) fn new(capacity: usize) -> Self {
        Expiring {
            capacity,
            entries: HashMap::new(),
        }
    }

    /// The value kept under `key`, unless it has expired by `now`.
    pub(super) fn get(&self, key: &TokenHash, now: Instant) -> Option<V> {
        self.entries
            .get(key)
            .filter(|(_, until)| *until > now)
            .map(|(value, _)| value.clone())
    }

    /// Keeps `value` under `key` until `until` (nothing when that is not after `now`, or
    /// the capacity is zero), making room first if the map is full.
    pub(super) fn insert(&mut self, key: TokenHash, value: V, until: Instant, now: Instant) {
        if self.capacity == 0 || until <= now {
            self.entries.remove(&key);
            return;
        }
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            self.entries.retain(|_, (_, until)| *until > now);
            if self.entries.len() >= self.capacity {
                let soonest = self
                    .entries
                    .iter()
                    .min_by_key(|(_, (_, until))| *until)
                    .map(|(key, _)| *key);
                if let Some(soonest) = soonest {
                    self.entries.remove(&soonest);
                }
            }
        }
        self.entries.insert(key, (value, until));
    }

    /// Forgets `key`.
    pub(super) fn remove(&mut self, key: &TokenHash) {
        self.entries.remove(key);
    }

    /// How many entries are held, expired ones included.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn key(n: u8) -> TokenHash {
        [n; 32]
    }

    #[test]
    fn expired_entries_are_never_returned() {
        let now = Instant::now();
        let mut map = Expiring::new(4);
        map.insert(key(1), "one", now + Duration::from_secs(10), now);
        assert_eq!(map.get(&key(1), now), Some("one"));
        assert_eq!(map.get(&key(1), now + Duration::from_secs(10)), None);
        assert_eq!(map.get(&key(2), now), None);
        // Already expired: not kept at all, and it replaces what was there.
        map.insert(key(1), "gone", now, now);
        assert_eq!(map.get(&key(1), now), None);
        assert_eq!(map.len(), 0);
    }

    #[test]
    fn a_full_map_drops_the_expired_then_the_soonest_to_expire() {
        let now = Instant::now();
        let secs = |s| now + Duration::from_secs(s);
        let mut map = Expiring::new(3);
        map.insert(key(1), 1, secs(30), now);
        map.insert(key(2), 2, secs(10), now);
        map.insert(key(3), 3, secs(20), now);
        // Full, nothing expired: the one expiring soonest (2) makes room.
        map.insert(key(4), 4, secs(40), now);
        assert_eq!(map.len(), 3);
        assert_eq!(map.get(&key(2), now), None);
        for (k, v) in [(1, 1), (3, 3), (4, 4)] {
            assert_eq!(map.get(&key(k), now), Some(v));
        }
        // Later, 3 has expired: it alone goes.
        let later = secs(25);
        map.insert(key(5), 5, secs(50), later);
        assert_eq!(map.len(), 3);
        assert_eq!(map.get(&key(1), later), Some(1));
        assert_eq!(map.get(&key(4), later), Some(4));
        assert_eq!(map.get(&key(5), later), Some(5));
        // Replacing a kept key evicts nothing.
        map.insert(key(5), 55, secs(60), later);
        assert_eq!(map.get(&key(1), later), Some(1));
        assert_eq!(map.get(&key(5), later), Some(55));
        // Far more inserts than the capacity: bounded, and the newest is always kept.
        for n in 10..100 {
            map.insert(key(n), u32::from(n), secs(100 + u64::from(n)), later);
            assert!(map.len() <= 3);
            assert_eq!(map.get(&key(n), later), Some(u32::from(n)));
        }
    }

    #[test]
    fn zero_capacity_keeps_nothing() {
        let now = Instant::now();
        let mut map = Expiring::new(0);
        map.insert(key(1), (), now + Duration::from_secs(10), now);
        assert_eq!(map.get(&key(1), now), None);
        assert_eq!(map.len(), 0);
    }
}
