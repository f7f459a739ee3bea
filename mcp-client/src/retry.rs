//! Safe retries of a keyed `tools/call` (issue 50): the bounds ([`RetryConfig`]), what a
//! retry tells ([`RetryNotice`]), which failures are worth sending again and after how
//! long, the `Retry-After` header, fresh idempotency keys, and the jitter of every wait.
//!
//! Invariants: only a call that carries an idempotency key is ever sent again; one
//! whose request may have reached the server (its answer lost) only when the server
//! lists the tool as deduplicating keyed calls (`_meta["rs.mcp-tasks/idempotency"]`), so
//! a repeat cannot run the tool twice; imports `error` only.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_tasks_protocol::engine::FailureKind;

use crate::error::ClientError;

/// What is told of each retry (to [`RetryConfig::on_retry`], and as a `tracing` INFO
/// event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The method sent again (`tools/call`).
    pub method: String,
    /// The attempt about to be made (2 for the first retry).
    pub attempt: u32,
    /// The most attempts that will be made ([`RetryConfig::max_attempts`]).
    pub max_attempts: u32,
    /// How long the client waits before it.
    pub wait: Duration,
    /// Why: the failure of the attempt before, as its text says it.
    pub reason: String,
    /// The HTTP status of that failure, when a response came.
    pub status: Option<u16>,
    /// The `Retry-After` that response asked for, when it had one.
    pub retry_after: Option<Duration>,
    /// The idempotency key the call carries (the same on every attempt).
    pub idempotency_key: String,
}

impl std::fmt::Display for RetryNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "retrying {} (attempt {} of {}) in {} ms: {}",
            self.method,
            self.attempt,
            self.max_attempts,
            self.wait.as_millis(),
            self.reason
        )
    }
}

/// A callback told of each retry.
pub type RetryHook = Arc<dyn Fn(&RetryNotice) + Send + Sync>;

/// How a `tools/call` with an idempotency key is sent again, with the same key. A
/// failure that says the request never reached the server (the connection could not be
/// made, an HTTP 429, after its `Retry-After`) is retried for any keyed call. A failure
/// that may have lost the answer of a request the server got (a connection cut before
/// the answer, an HTTP 502, 503 or 504 without a JSON-RPC answer, the client's
/// [`request_timeout`](crate::ClientConfig::request_timeout)) is retried only for a
/// task-augmented call of a tool the server's `tools/list` flags as deduplicating keyed
/// calls (`_meta["rs.mcp-tasks/idempotency"]`): another tool may ignore the key and run
/// again. Such a call's timed-out attempt is not cancelled (no `notifications/cancelled`,
/// which would cancel the task the retry finds): the server goes on with it, also when
/// the attempts are spent (a later call with the same key finds its task); dropping the
/// call itself still cancels the attempt in flight. Any other call that times out is
/// cancelled and not retried. Everything else is sent once. Waits double from
/// [`initial_backoff`](RetryConfig::initial_backoff) up to
/// [`max_backoff`](RetryConfig::max_backoff), with ±20% jitter; a `Retry-After` is
/// honoured up to [`max_retry_after`](RetryConfig::max_retry_after). One call can take up
/// to `max_attempts` x [`ClientConfig::request_timeout`](crate::ClientConfig::request_timeout)
/// plus the waits. See [`ClientConfig::idempotency_keys`](crate::ClientConfig::idempotency_keys)
/// for when a call gets a key.
#[derive(Clone)]
pub struct RetryConfig {
    /// The most attempts of one call, the first included (1: never retried).
    pub max_attempts: u32,
    /// The wait before the first retry.
    pub initial_backoff: Duration,
    /// The longest wait between attempts (a `Retry-After` aside).
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured: a longer one is waited this long.
    pub max_retry_after: Duration,
    /// Told of each retry before its wait.
    pub on_retry: Option<RetryHook>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(30),
            on_retry: None,
        }
    }
}

impl std::fmt::Debug for RetryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryConfig")
            .field("max_attempts", &self.max_attempts)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("max_retry_after", &self.max_retry_after)
            .field("on_retry", &self.on_retry.is_some())
            .finish()
    }
}

impl RetryConfig {
    /// No retries: every call is sent once.
    pub fn none() -> RetryConfig {
        RetryConfig {
            max_attempts: 1,
            ..RetryConfig::default()
        }
    }

    /// The back-off before attempt `attempt + 1` after `attempt` failed (from 1):
    /// [`initial_backoff`](Self::initial_backoff) doubled each attempt, ±20% jitter,
    /// never over [`max_backoff`](Self::max_backoff).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let doubled = self
            .initial_backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        doubled
            .min(self.max_backoff)
            .mul_f64(jitter())
            .min(self.max_backoff)
    }

    /// Whether the failure `error` of attempt `attempt` (from 1) of a keyed call is worth
    /// sending again, and after how long. `lost_replies`: whether a failure after which
    /// the server may have got the request is too (the tool deduplicates keyed calls): a
    /// lost answer or a [`ClientError::Timeout`]. `None` when it is not (a JSON-RPC
    /// answer, a refusal, a lost answer or timeout of a tool that may run twice) or the
    /// attempts are spent.
    pub fn wait_after(
        &self,
        error: &ClientError,
        attempt: u32,
        lost_replies: bool,
    ) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        let backoff = self.backoff(attempt);
        let failure = match error {
            ClientError::Transport(failure) => failure,
            ClientError::Timeout(_) if lost_replies => return Some(backoff),
            _ => return None,
        };
        match failure.kind {
            FailureKind::Unreachable => Some(backoff),
            FailureKind::Interrupted if lost_replies => Some(backoff),
            FailureKind::Status => match failure.status {
                Some(429) => Some(
                    failure
                        .retry_after
                        .map_or(backoff, |asked| asked.min(self.max_retry_after)),
                ),
                Some(502..=504) if lost_replies => {
                    Some(failure.retry_after.map_or(backoff, |asked| {
                        asked.min(self.max_retry_after).max(backoff)
                    }))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// A factor in [0.8, 1.2), so that many clients do not wait in lockstep.
pub(crate) fn jitter() -> f64 {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    0.8 + f64::from(nanos % 400) / 1000.0
}

/// Sends a call with `send` (one attempt each time it is called) and, when it carries
/// the idempotency key `key`, sends it again after a failure [`RetryConfig::wait_after`]
/// says is worth it (`lost_replies`: also after a lost answer), telling each retry (a
/// `tracing` INFO event and the hook). Without a key: one attempt. The last failure is
/// the error once the attempts are spent.
pub(crate) async fn retrying<T, F, Fut>(
    config: &RetryConfig,
    method: &str,
    key: Option<&str>,
    lost_replies: bool,
    mut send: F,
) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ClientError>>,
{
    let Some(key) = key else {
        return send().await;
    };
    let mut attempt = 1;
    loop {
        let error = match send().await {
            Ok(answer) => return Ok(answer),
            Err(e) => e,
        };
        let Some(wait) = config.wait_after(&error, attempt, lost_replies) else {
            return Err(error);
        };
        attempt += 1;
        let notice = RetryNotice {
            method: method.to_owned(),
            attempt,
            max_attempts: config.max_attempts,
            wait,
            reason: error.to_string(),
            status: error.http_status(),
            retry_after: error.retry_after(),
            idempotency_key: key.to_owned(),
        };
        tracing::info!(
            method,
            attempt,
            max_attempts = config.max_attempts,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            reason = %notice.reason,
            idempotency_key = key,
            "retrying a keyed call"
        );
        if let Some(hook) = &config.on_retry {
            hook(&notice);
        }
        tokio::time::sleep(wait).await;
    }
}

/// The wait a `Retry-After` header value asks for, read at `now`: delay-seconds, or an
/// HTTP date (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`) turned into the time left
/// until it (zero once past). `None` for a value that is neither.
pub(crate) fn retry_after(value: Option<&str>, now: SystemTime) -> Option<Duration> {
    let value = value?.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(
            value.parse::<u64>().unwrap_or(u64::MAX),
        ));
    }
    let at = http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An IMF-fixdate (RFC 9110 §5.6.7), the form senders must use.
fn http_date(value: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = value.split_ascii_whitespace().collect();
    let [weekday, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    if !weekday.ends_with(',') {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| m == month)? as i64 + 1;
    let day: i64 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let year: i64 = year.parse().ok().filter(|y| (1970..=9999).contains(y))?;
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    if *h > 23 || *m > 59 || *s > 60 {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A fresh idempotency key: a random (version 4) UUID.
pub(crate) fn new_key() -> String {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 16];
    if ring::rand::SystemRandom::new().fill(&mut b).is_err() {
        // No system randomness: time and a counter still make a key unique per client.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        b[..8].copy_from_slice(&(nanos as u64).to_be_bytes());
        b[8..].copy_from_slice(&(n ^ u64::from(std::process::id())).to_be_bytes());
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks_protocol::engine::TransportFailure;

    fn within(d: Duration, around: Duration) -> bool {
        d >= around.mul_f64(0.8) && d <= around.mul_f64(1.2)
    }

    #[test]
    fn backoff_doubles_from_the_initial_wait_up_to_the_cap() {
        let config = RetryConfig::default();
        assert!(within(config.backoff(1), Duration::from_millis(100)));
        assert!(within(config.backoff(2), Duration::from_millis(200)));
        assert!(within(config.backoff(4), Duration::from_millis(800)));
        for attempt in [7, 30, u32::MAX] {
            let wait = config.backoff(attempt);
            assert!(wait <= config.max_backoff, "{attempt}: {wait:?}");
            assert!(within(wait, config.max_backoff), "{attempt}: {wait:?}");
        }
    }

    #[test]
    fn lost_answers_and_timeouts_are_retried_only_for_deduplicating_tools() {
        let config = RetryConfig::default();
        let status = |code: u16, after: Option<u64>| {
            ClientError::Transport(
                TransportFailure::new(FailureKind::Status, format!("HTTP {code}"))
                    .with_status(code, after.map(Duration::from_secs)),
            )
        };
        let cut = ClientError::Transport(TransportFailure::new(FailureKind::Interrupted, "reset"));
        let refused =
            ClientError::Transport(TransportFailure::new(FailureKind::Unreachable, "refused"));
        let timeout = ClientError::Timeout(Duration::from_secs(1));
        for e in [
            &cut,
            &timeout,
            &status(502, None),
            &status(503, None),
            &status(504, None),
        ] {
            assert!(config.wait_after(e, 1, true).is_some(), "{e}");
            assert!(config.wait_after(e, 1, false).is_none(), "{e}");
            assert!(config.wait_after(e, 5, true).is_none(), "{e}");
        }
        // Never reached the server: retried for any keyed call.
        for lost_replies in [true, false] {
            assert!(config.wait_after(&refused, 1, lost_replies).is_some());
            assert!(
                config
                    .wait_after(&status(429, None), 1, lost_replies)
                    .is_some()
            );
        }
        for e in [
            status(500, None),
            status(401, None),
            ClientError::Transport("text only".into()),
            ClientError::Closed,
            ClientError::rpc(mcp_tasks_protocol::jsonrpc::ErrorObject::new(-32602, "no")),
        ] {
            assert_eq!(config.wait_after(&e, 1, true), None, "{e}");
        }
        // 429: its Retry-After, capped.
        assert_eq!(
            config.wait_after(&status(429, Some(2)), 1, false),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            config.wait_after(&status(429, Some(3600)), 1, false),
            Some(config.max_retry_after)
        );
        assert!(RetryConfig::none().wait_after(&cut, 1, true).is_none());
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // 08:49:37
        assert_eq!(retry_after(Some("1"), now), Some(Duration::from_secs(1)));
        assert_eq!(
            retry_after(Some(" 120 "), now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            retry_after(Some("Sun, 06 Nov 1994 08:49:37 GMT"), now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(Some("Sun, 06 Nov 1994 08:50:07 GMT"), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after(Some("Sat, 05 Nov 1994 08:49:37 GMT"), now),
            Some(Duration::ZERO)
        );
        for bad in [
            None,
            Some(""),
            Some("-1"),
            Some("1.5"),
            Some("soon"),
            Some("Sun, 06 Nov 1994 25:00:00 GMT"),
        ] {
            assert_eq!(retry_after(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn keys_are_fresh_version_4_uuids() {
        let (a, b) = (new_key(), new_key());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
        assert!(matches!(a.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{a}");
    }
}
