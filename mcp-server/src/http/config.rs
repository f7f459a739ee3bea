//! [`HttpConfig`] and the policies it holds: which hosts and origins may call, who the
//! caller is, body and stream limits, 2025-11-25 session limits and stream resumption,
//! and whether the operator console is served.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::Authenticator;

/// Decides who is calling (see [`crate::auth`]).
pub type PrincipalHook = Arc<dyn Authenticator>;

/// Settings of the HTTP transport.
#[derive(Clone)]
pub struct HttpConfig {
    /// The endpoint's path.
    pub path: String,
    /// Larger bodies are refused with 413.
    pub max_body_bytes: usize,
    /// Browser origins allowed to call; requests with another `Origin` get 403. Requests
    /// without `Origin` (non-browser clients) are allowed. Default: localhost origins only.
    pub allowed_origins: OriginPolicy,
    /// Who is calling; `None` makes every caller anonymous.
    pub principal: Option<PrincipalHook>,
    /// Which `Host` headers are accepted; others get 403 (against DNS rebinding). Default
    /// [`HostPolicy::LoopbackBind`]: localhost names only when bound to a loopback address.
    pub allowed_hosts: HostPolicy,
    /// Event streams (`subscriptions/listen`, the 2025-11-25 standalone stream, streamed
    /// replies) end after this long, whatever their traffic (keep-alives included); the
    /// client reconnects. `None`: no limit. Default: one hour.
    pub sse_max_lifetime: Option<Duration>,
    /// A connection that has not sent a request's complete headers this long after it
    /// opened (or after its previous response) is closed: this is also the idle
    /// timeout of keep-alive connections. Used by [`serve`](super::serve) only. Default: 10 seconds.
    pub header_read_timeout: Duration,
    /// MCP 2025-11-25 sessions open at once; one more `initialize` is refused with -32029
    /// (HTTP 503). A soft cap: concurrent `initialize` calls may pass it by a few. Default
    /// 10,000.
    pub max_sessions: usize,
    /// MCP 2025-11-25 sessions one principal may hold open at once; one more
    /// `initialize` of that principal is refused with -32029 (HTTP 429) while others
    /// still get sessions. Anonymous callers (no authenticator, or one that lets them in)
    /// together count as one principal. On a shared store it counts the sessions this
    /// instance holds (opened here or served here since), not those of other instances.
    /// A soft cap, like `max_sessions`. Default 100.
    pub max_sessions_per_principal: usize,
    /// A 2025-11-25 session unused this long is ended (its id then reads as unknown, 404).
    /// Default: 30 minutes.
    pub session_idle_timeout: Duration,
    /// The `retry` (reconnection delay) of the priming event that starts every event
    /// stream of an MCP 2025-11-25 session (SEP-1699). Default: one second.
    pub sse_retry: Duration,
    /// A 2025-11-25 `tools/call` whose event stream has been without a connection this
    /// long (the client neither stayed nor resumed it with `Last-Event-ID`) is cancelled,
    /// as a client gone for good. A `tasks/result` is cancelled as soon as its stream
    /// drops: its result stays in the store, and its questions are asked on the next
    /// stream. Default: two minutes.
    pub sse_resume_window: Duration,
    /// Events one 2025-11-25 session keeps for replay (`Last-Event-ID`), over all its
    /// streams; the oldest go first. Default: 256.
    pub sse_replay_max_events: usize,
    /// Bytes of event data one 2025-11-25 session keeps for replay (an event larger than
    /// this is kept alone while it is the newest). Default: 64 KiB.
    pub sse_replay_max_bytes: usize,
    /// The operator console at `/console` (its page and its JSON/SSE API over every
    /// owner's tasks), with who may use it; `None` (the default): not served.
    pub console: Option<ConsoleConfig>,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field; the principal hook shows whether it is set.
        let HttpConfig {
            path,
            max_body_bytes,
            allowed_origins,
            principal,
            allowed_hosts,
            sse_max_lifetime,
            header_read_timeout,
            max_sessions,
            max_sessions_per_principal,
            session_idle_timeout,
            sse_retry,
            sse_resume_window,
            sse_replay_max_events,
            sse_replay_max_bytes,
            console,
        } = self;
        f.debug_struct("HttpConfig")
            .field("path", path)
            .field("max_body_bytes", max_body_bytes)
            .field("allowed_origins", allowed_origins)
            .field("principal", &principal.is_some())
            .field("allowed_hosts", allowed_hosts)
            .field("sse_max_lifetime", sse_max_lifetime)
            .field("header_read_timeout", header_read_timeout)
            .field("max_sessions", max_sessions)
            .field("max_sessions_per_principal", max_sessions_per_principal)
            .field("session_idle_timeout", session_idle_timeout)
            .field("sse_retry", sse_retry)
            .field("sse_resume_window", sse_resume_window)
            .field("sse_replay_max_events", sse_replay_max_events)
            .field("sse_replay_max_bytes", sse_replay_max_bytes)
            .field("console", console)
            .finish()
    }
}

/// Which `Origin` headers are accepted.
#[derive(Debug, Clone)]
pub enum OriginPolicy {
    /// `http(s)://localhost`, `127.0.0.1` and `[::1]`, any port.
    Localhost,
    /// Exactly these origins (e.g. `https://app.example.com`).
    List(Vec<String>),
    /// Any origin (only behind a proxy that checks it).
    Any,
}

/// Which `Host` headers are accepted (a browser tricked by DNS rebinding sends the
/// attacker's host name to a server on a loopback address).
#[derive(Debug, Clone, Default)]
pub enum HostPolicy {
    /// [`HostPolicy::Localhost`] when [`serve`](super::serve) is bound to a loopback address,
    /// [`HostPolicy::Any`] otherwise. [`router`](super::router) alone cannot see the bind address and
    /// treats it as [`HostPolicy::Localhost`].
    #[default]
    LoopbackBind,
    /// `localhost`, `127.0.0.1` and `[::1]`, any port.
    Localhost,
    /// Exactly these host names (any port), e.g. `mcp.example.com`.
    List(Vec<String>),
    /// Any `Host` (a public bind, or behind a proxy that checks it).
    Any,
}

impl HostPolicy {
    /// [`HostPolicy::LoopbackBind`] made concrete for a server bound to `addr`.
    pub(super) fn for_bind(self, addr: Option<SocketAddr>) -> HostPolicy {
        match self {
            HostPolicy::LoopbackBind => match addr {
                Some(a) if !a.ip().is_loopback() => HostPolicy::Any,
                _ => HostPolicy::Localhost,
            },
            other => other,
        }
    }

    pub(super) fn allows(&self, host: Option<&str>) -> bool {
        let name = |host: &str| -> String {
            let host = host.trim();
            let name = if let Some(rest) = host.strip_prefix('[') {
                return rest
                    .split_once(']')
                    .map(|(h, _)| format!("[{h}]"))
                    .unwrap_or_default();
            } else {
                host.split(':').next().unwrap_or("")
            };
            name.to_ascii_lowercase()
        };
        match self {
            HostPolicy::Any => true,
            HostPolicy::LoopbackBind | HostPolicy::Localhost => host
                .is_some_and(|h| matches!(name(h).as_str(), "localhost" | "127.0.0.1" | "[::1]")),
            HostPolicy::List(list) => {
                host.is_some_and(|h| list.iter().any(|l| l.eq_ignore_ascii_case(&name(h))))
            }
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".into(),
            max_body_bytes: 4 * 1024 * 1024,
            allowed_origins: OriginPolicy::Localhost,
            principal: None,
            allowed_hosts: HostPolicy::default(),
            sse_max_lifetime: Some(Duration::from_secs(3600)),
            header_read_timeout: Duration::from_secs(10),
            max_sessions: 10_000,
            max_sessions_per_principal: 100,
            session_idle_timeout: Duration::from_secs(30 * 60),
            sse_retry: Duration::from_secs(1),
            sse_resume_window: Duration::from_secs(120),
            sse_replay_max_events: 256,
            sse_replay_max_bytes: 64 * 1024,
            console: None,
        }
    }
}

impl OriginPolicy {
    pub(super) fn allows(&self, origin: &str) -> bool {
        match self {
            OriginPolicy::Any => true,
            OriginPolicy::List(list) => list.iter().any(|o| o.eq_ignore_ascii_case(origin)),
            OriginPolicy::Localhost => {
                let rest = origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"));
                let Some(rest) = rest else { return false };
                let host = if rest.starts_with('[') {
                    rest.split_once(']').map(|(h, _)| &h[1..]).unwrap_or("")
                } else {
                    rest.split(':').next().unwrap_or("")
                };
                matches!(host, "localhost" | "127.0.0.1" | "::1")
            }
        }
    }
}

pub use super::console_config::{
    ConsoleAccess, ConsoleConfig, ConsoleConfigError, ConsoleRole, ConsoleUser,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_origins() {
        let p = OriginPolicy::Localhost;
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8000",
            "http://[::1]:9",
        ] {
            assert!(p.allows(ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
            "file://",
            "http://127.0.0.1.nip.io",
        ] {
            assert!(!p.allows(bad), "{bad}");
        }
    }

    #[test]
    fn debug_shows_every_setting() {
        let shown = format!("{:?}", HttpConfig::default());
        for field in [
            "max_sessions",
            "max_sessions_per_principal",
            "session_idle_timeout",
            "header_read_timeout",
            "sse_retry",
            "sse_resume_window",
            "sse_replay_max_events",
            "sse_replay_max_bytes",
            "console",
        ] {
            assert!(shown.contains(field), "{shown}");
        }
    }
}
