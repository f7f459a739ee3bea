//! Caching hints of MCP 2026-07-28 results (SEP-2549): `cacheScope` and `ttlMs` on
//! `server/discover`, the four lists and `resources/read`, set per kind of result with
//! [`ServerBuilder::cache_hint`](crate::ServerBuilder::cache_hint).
//!
//! **Invariant.** Every result kind the schema requires the hints on gets them from here;
//! the default for each is [`CacheHint::NONE`] (private, stale at once), which is always
//! correct, so a server that says nothing is never cached wrongly.

use std::time::Duration;

use mcp_tasks_protocol::v2026::CacheScope;

/// The MCP 2026-07-28 results that carry caching hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cacheable {
    /// `server/discover`.
    Discover,
    /// `tools/list`.
    Tools,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    ResourceTemplates,
    /// `prompts/list`.
    Prompts,
    /// `resources/read`.
    ResourceRead,
}

impl Cacheable {
    const COUNT: usize = 6;
}

/// How a client may cache one kind of result: who may reuse it, and for how long it
/// stays fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// `private`: only within the same authorization context; `public`: any client or
    /// shared cache (only right for results that hold nothing caller-specific).
    pub scope: CacheScope,
    /// How long the result stays fresh (`ttlMs`, whole milliseconds; zero: stale at once).
    pub ttl: Duration,
}

impl CacheHint {
    /// Private and stale at once: the default of every result.
    pub const NONE: CacheHint = CacheHint {
        scope: CacheScope::Private,
        ttl: Duration::ZERO,
    };

    /// Reusable within the same authorization context for `ttl`.
    pub fn private(ttl: Duration) -> Self {
        CacheHint {
            scope: CacheScope::Private,
            ttl,
        }
    }

    /// Reusable by anyone, shared caches included, for `ttl`.
    pub fn public(ttl: Duration) -> Self {
        CacheHint {
            scope: CacheScope::Public,
            ttl,
        }
    }

    /// `ttlMs` (saturating: a `Duration` past `u64::MAX` milliseconds is `u64::MAX`).
    pub fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }
}

impl Default for CacheHint {
    fn default() -> Self {
        CacheHint::NONE
    }
}

/// The hint of each [`Cacheable`] result.
#[derive(Debug, Clone, Default)]
pub(crate) struct CacheHints([CacheHint; Cacheable::COUNT]);

impl CacheHints {
    pub(crate) fn set(&mut self, result: Cacheable, hint: CacheHint) {
        self.0[result as usize] = hint;
    }

    /// `(cacheScope, ttlMs)` for `result`, as the wire types hold them.
    pub(crate) fn members(&self, result: Cacheable) -> (Option<CacheScope>, Option<u64>) {
        let hint = self.0[result as usize];
        (Some(hint.scope), Some(hint.ttl_ms()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_keeps_its_own_hint_and_the_rest_stay_none() {
        let mut hints = CacheHints::default();
        hints.set(Cacheable::Tools, CacheHint::public(Duration::from_secs(60)));
        assert_eq!(
            hints.members(Cacheable::Tools),
            (Some(CacheScope::Public), Some(60_000))
        );
        for other in [
            Cacheable::Discover,
            Cacheable::Resources,
            Cacheable::ResourceTemplates,
            Cacheable::Prompts,
            Cacheable::ResourceRead,
        ] {
            assert_eq!(hints.members(other), (Some(CacheScope::Private), Some(0)));
        }
    }

    #[test]
    fn an_enormous_ttl_saturates() {
        assert_eq!(CacheHint::private(Duration::MAX).ttl_ms(), u64::MAX);
    }
}
