//! [`ClientConfig`] and [`DriverConfig`]: the tunables of a client and of the task driver,
//! with the bounds every wait derives from.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks_protocol::types::Implementation;

use crate::auth::AuthConfig;
use crate::retry::{RetryConfig, RetryNotice, jitter};

/// Which revision of MCP a client speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Revision {
    /// `server/discover` (MCP 2026-07-28), falling back to `initialize` (MCP
    /// 2025-11-25) when the server does not know it.
    #[default]
    Negotiate,
    /// MCP 2026-07-28 only.
    V2026_07_28,
    /// MCP 2025-11-25 only: `initialize` at once.
    V2025_11_25,
}

/// Tunables of a client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Who we are, sent in every request's `_meta`.
    pub client_info: Implementation,
    /// How long one request may wait for its answer. A `tools/call` that is sent again
    /// ([`retry`](ClientConfig::retry)) waits this long at each attempt: one call can take
    /// up to `retry.max_attempts` x `request_timeout`, plus the back-off between attempts.
    /// A request that times out is cancelled (`notifications/cancelled`), except an
    /// attempt of a keyed task-creating call of a tool the server deduplicates, which is
    /// retried ([`RetryConfig`](crate::RetryConfig)).
    pub request_timeout: Duration,
    /// How many rounds of input a call may ask: MRTR rounds of `tools/call`, and each
    /// task's rounds (2026-07-28: `tasks/update`s with new answers; 2025-11-25: the
    /// server's input requests about it). Past it: [`ClientError::InputRoundsExceeded`](crate::ClientError::InputRoundsExceeded).
    pub max_input_rounds: u32,
    /// How tasks are driven.
    pub driver: DriverConfig,
    /// Headers every HTTP request carries (e.g. `Authorization: Bearer ...`); not used
    /// over stdio. A name or value HTTP does not allow is refused when connecting.
    pub http_headers: Vec<(String, String)>,
    /// How to log in to an HTTP server that asks for OAuth; `None`: never (a 401 fails
    /// the request).
    pub auth: Option<AuthConfig>,
    /// Which revision to speak.
    pub revision: Revision,
    /// Where the client keeps the tasks it hosts (MCP 2025-11-25): with a store, the
    /// client declares `capabilities.tasks` at `initialize` (`list`, `cancel`, and
    /// `requests.sampling.createMessage` / `requests.elicitation.create` for what the
    /// handler declares), runs a server's task-augmented sampling and elicitation
    /// requests as tasks in it, and answers `tasks/get`, `tasks/result`, `tasks/list`
    /// and `tasks/cancel` from it, scoped to the connection. `None`: no client-hosted
    /// tasks (a request with `params.task` is answered as a plain one).
    pub client_tasks: Option<Arc<dyn TaskStore>>,
    /// Whether a task-augmented `tools/call` (2025-11-25: one that asks for a task;
    /// 2026-07-28: any, in a session whose server offers the tasks extension) of a tool
    /// the server's `tools/list` flags as deduplicating keyed calls
    /// (`_meta["rs.mcp-tasks/idempotency"]`, our extension, rs.mcp-tasks) and without an
    /// idempotency key of its own ([`ToolCall::with_idempotency_key`](crate::ToolCall::with_idempotency_key))
    /// gets a fresh one (a random UUID), sent as `params.idempotencyKey` and
    /// `_meta.idempotencyKey`: the server makes one task per key, so the call can be
    /// retried safely after a lost answer ([`retry`](ClientConfig::retry)). A tool not
    /// flagged (a synchronous one, one whose calls may be answered synchronously, any
    /// tool of a server that does not flag tools) gets no key by default; in a 2026-07-28
    /// session nothing is flagged until [`McpClient::list_tools`](crate::McpClient::list_tools)
    /// has been called. On by default; off, only calls given a key carry one. A key set on
    /// the call is always sent.
    pub idempotency_keys: bool,
    /// How a call with an idempotency key is sent again after a failure (see
    /// [`RetryConfig`]); [`RetryConfig::none`] turns retries off.
    pub retry: RetryConfig,
}

impl ClientConfig {
    /// This configuration, hosting the server's task-augmented requests in `store`
    /// (see [`client_tasks`](ClientConfig::client_tasks)).
    pub fn with_client_tasks(mut self, store: Arc<dyn TaskStore>) -> ClientConfig {
        self.client_tasks = Some(store);
        self
    }

    /// This configuration, telling `hook` of each retry (see [`RetryConfig::on_retry`]).
    pub fn on_retry(mut self, hook: Arc<dyn Fn(&RetryNotice) + Send + Sync>) -> ClientConfig {
        self.retry.on_retry = Some(hook);
        self
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_info: Implementation::new("mcp-tasks-client", env!("CARGO_PKG_VERSION")),
            request_timeout: Duration::from_secs(30),
            max_input_rounds: 16,
            driver: DriverConfig::default(),
            http_headers: Vec::new(),
            auth: None,
            revision: Revision::Negotiate,
            client_tasks: None,
            idempotency_keys: true,
            retry: RetryConfig::default(),
        }
    }
}

/// How tasks are followed.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Poll interval when the server suggests none (`pollIntervalMs`).
    pub default_poll: Duration,
    /// Never poll faster than this (the floor), whatever the server says.
    pub min_poll: Duration,
    /// Never wait longer than this between polls.
    pub max_poll: Duration,
    /// Use pushed updates when the server offers them: `subscriptions/listen`
    /// (2026-07-28), `notifications/tasks/status` (2025-11-25). Off: polls only.
    pub push: bool,
    /// Polls in `input_required` with nothing new before the task counts as stuck.
    pub stuck_after_polls: u32,
    /// The longest a task is followed when it has no TTL.
    pub max_wait: Duration,
    /// How long a server's request naming a task this client does not know yet is held
    /// for it (MCP 2025-11-25: an `elicitation/create`, `sampling/createMessage` or
    /// `roots/list` with the related-task `_meta` may come before the `tools/call`
    /// response that creates the task). Held only while a task-augmented call is in
    /// flight, and handed to the task's handle as soon as that response routes it; a task
    /// still unknown after this is answered by the client's handler. At most a day.
    pub unknown_task_hold: Duration,
    /// How many times in a row a task's event stream ([`TaskEvents`](crate::TaskEvents))
    /// is asked again (`tasks/stream` with `after`) without bringing a new event: after a
    /// dropped connection, a server that ended the stream before the task did, or a
    /// refusal that says to retry. The waits between attempts double from
    /// [`min_poll`](DriverConfig::min_poll) up to [`max_poll`](DriverConfig::max_poll);
    /// past the bound the last error ends the stream.
    pub stream_retries: u32,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            default_poll: Duration::from_secs(1),
            min_poll: Duration::from_millis(100),
            max_poll: Duration::from_secs(10),
            push: true,
            stuck_after_polls: 30,
            max_wait: Duration::from_secs(24 * 60 * 60),
            unknown_task_hold: Duration::from_secs(5),
            stream_retries: 10,
        }
    }
}

impl DriverConfig {
    /// The server's suggested interval (ms; `pollIntervalMs` or 2025-11-25
    /// `pollInterval`), kept within our bounds, with ±20% jitter so many clients do not
    /// poll in lockstep.
    pub(crate) fn poll_interval(&self, suggested_ms: Option<i64>) -> Duration {
        let suggested = suggested_ms
            .and_then(|ms| u64::try_from(ms).ok())
            .map(Duration::from_millis)
            .unwrap_or(self.default_poll);
        let bounded = suggested.clamp(self.min_poll, self.max_poll);
        bounded.mul_f64(jitter())
    }

    /// The wait before the `attempt`th attempt in a row (from 1) to read a stream again:
    /// [`min_poll`](DriverConfig::min_poll) doubled each attempt, at most
    /// [`max_poll`](DriverConfig::max_poll), with ±20% jitter.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let doubled = self
            .min_poll
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        let bounded = doubled
            .min(self.max_poll)
            .max(self.min_poll.min(self.max_poll));
        bounded.mul_f64(jitter())
    }

    /// How long a task with this TTL (ms; `ttlMs` or 2025-11-25 `ttl`, `None` for no
    /// limit) is followed: its TTL, never more than [`max_wait`](DriverConfig::max_wait).
    pub(crate) fn wait_limit(&self, ttl_ms: Option<i64>) -> Duration {
        ttl_ms
            .and_then(|ttl| u64::try_from(ttl).ok())
            .map(Duration::from_millis)
            .unwrap_or(self.max_wait)
            .min(self.max_wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_stay_within_bounds_and_waits_within_max_wait() {
        let config = DriverConfig::default();
        for suggested in [None, Some(-5), Some(1), Some(500), Some(3_600_000)] {
            let p = config.poll_interval(suggested);
            assert!(p >= config.min_poll.mul_f64(0.8), "{suggested:?}: {p:?}");
            assert!(p <= config.max_poll.mul_f64(1.2), "{suggested:?}: {p:?}");
        }
        assert_eq!(config.wait_limit(Some(2_000)), Duration::from_secs(2));
        assert_eq!(config.wait_limit(None), config.max_wait);
        assert_eq!(config.wait_limit(Some(-1)), config.max_wait);
        assert_eq!(config.wait_limit(Some(i64::MAX)), config.max_wait);
    }

    #[test]
    fn default_poll_is_used_when_the_server_suggests_no_usable_interval() {
        let config = DriverConfig {
            default_poll: Duration::from_secs(2),
            ..DriverConfig::default()
        };
        let within =
            |p: Duration, around: Duration| p >= around.mul_f64(0.8) && p <= around.mul_f64(1.2);
        for suggested in [None, Some(-5)] {
            let p = config.poll_interval(suggested);
            assert!(within(p, Duration::from_secs(2)), "{suggested:?}: {p:?}");
        }
        let p = config.poll_interval(Some(500));
        assert!(within(p, Duration::from_millis(500)), "{p:?}");
    }

    #[test]
    fn stream_backoff_doubles_within_the_poll_bounds() {
        let config = DriverConfig::default();
        let within =
            |p: Duration, around: Duration| p >= around.mul_f64(0.8) && p <= around.mul_f64(1.2);
        assert!(within(config.backoff(0), config.min_poll));
        assert!(within(config.backoff(1), config.min_poll));
        assert!(within(config.backoff(2), config.min_poll * 2));
        assert!(within(config.backoff(4), config.min_poll * 8));
        for attempt in [8, 30, u32::MAX] {
            assert!(
                within(config.backoff(attempt), config.max_poll),
                "{attempt}"
            );
        }
    }
}
