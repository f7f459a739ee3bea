//! The console's audit trail, on the [`audit`](crate::audit) target
//! (`mcp_tasks_server::audit`):
//!
//! - a task read in full (`GET /console/api/tasks/{id}`: its arguments, questions,
//!   answers and result), INFO, `op="console: read"`, with the operator as `actor`, the
//!   task's owner as `principal`, its `task_id` and its status (cancel, which answers
//!   with the task in full too, is audited as `op="console: cancel"`);
//! - a list read or an event stream opened, DEBUG, `op="console: list"` or
//!   `op="console: events"`, with the operator as `actor`;
//! - every request the console refuses before it runs (400, 401, 403, 503 of the access
//!   layer, a viewer's state-changing request among them with `reason="read-only
//!   role"`; 429 past the event-stream limits), INFO, `op="console: refused"`, with
//!   `status`, the peer's `remote_ip` (when the server knows it: always under
//!   [`serve`](crate::http::serve)), `method`, `path` (never the query string) and a
//!   fixed `reason`, e.g. `reason="bad credentials"`; for the authenticator's refusals
//!   its message as `detail`.
//!
//! **Invariant.** No credential is ever written: not the `Authorization` header, not a
//! user name or password tried, not the query string (where a credential may have been
//! put by mistake). Text a caller chose (the path, a refused `Host` or `Origin`) is written
//! quoted, its control characters escaped, so it cannot forge a line.
//!
//! A proxy or fail2ban acts on these lines: e.g. a filter on
//! `op="console: refused" status=401 remote_ip=<HOST> .* reason="bad credentials"` bans
//! guessers without banning a browser's first, credential-less request (`reason="no
//! credentials"`). Behind a proxy `remote_ip` is the proxy's: act on the proxy's own log.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use mcp_tasks::TaskRecord;

use crate::audit::TARGET;
use crate::seal::SealKey;

/// The longest path written, in bytes; a longer one is cut (at a character boundary)
/// and ends with `…`.
const MAX_PATH: usize = 256;

/// Why the console refused a request: the fixed `reason` of its audit line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reason {
    /// No credential at all (a browser's first request, before it asks for one).
    NoCredentials,
    /// A credential that is not the console's: a wrong user name or password, another
    /// scheme, a malformed header, a token the authenticator refused.
    BadCredentials,
    /// A token without the console's scope.
    InsufficientScope,
    /// The authenticator could not check the credential now (e.g. its keys are out of
    /// reach).
    CredentialsUnchecked,
    /// A credential (`access_token`) in the URL.
    CredentialsInUrl,
    /// A `Host` or `Origin` the server does not accept (DNS rebinding, a foreign page).
    HostOrOrigin,
    /// A state-changing request without the CSRF header.
    NoCsrfHeader,
    /// A state-changing request of a viewer (a role that may read only).
    ReadOnlyRole,
    /// Past the event-stream limits.
    TooManyStreams,
}

impl Reason {
    /// The `reason` written.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Reason::NoCredentials => "no credentials",
            Reason::BadCredentials => "bad credentials",
            Reason::InsufficientScope => "insufficient scope",
            Reason::CredentialsUnchecked => "credentials not checked",
            Reason::CredentialsInUrl => "credentials in the URL",
            Reason::HostOrOrigin => "host or origin not allowed",
            Reason::NoCsrfHeader => "no CSRF header",
            Reason::ReadOnlyRole => "read-only role",
            Reason::TooManyStreams => "too many event streams",
        }
    }
}

/// Who sent a request, and what it asked for: what a refusal's audit line names. Also an
/// extractor (it never fails).
#[derive(Debug, Clone)]
pub(super) struct Attempt {
    /// The peer's address, when the server put it into the request's extensions.
    remote_ip: Option<IpAddr>,
    method: Method,
    /// The request's path, without its query.
    path: String,
}

impl Attempt {
    /// The attempt of the request whose parts are `parts`.
    pub(super) fn of(parts: &Parts) -> Attempt {
        Attempt::from_pieces(&parts.extensions, &parts.method, parts.uri.path())
    }

    /// The attempt of a request with these extensions, method and path.
    pub(super) fn from_pieces(
        extensions: &axum::http::Extensions,
        method: &Method,
        path: &str,
    ) -> Attempt {
        Attempt {
            remote_ip: extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| addr.ip()),
            method: method.clone(),
            path: cut(path, MAX_PATH),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Attempt {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Attempt, Self::Rejection> {
        Ok(Attempt::of(parts))
    }
}

/// `text`, at most `max` bytes of it (cut at a character boundary, then `…`).
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Records that `operator` read `record` in full (`op`: what they read, e.g. `console:
/// read` for the task, `console: history` for its log; `key`: the server's seal key,
/// which shows the owner as [`crate::audit::principal`] does).
pub(super) fn read(key: &SealKey, op: &'static str, operator: &str, record: &TaskRecord) {
    crate::audit::record_operator(
        key,
        op,
        operator,
        &record.owner,
        record.id.as_str(),
        &Ok(record.status.as_str()),
    );
}

/// Records that `operator` read a page of the task list.
pub(super) fn listed(operator: &str, tasks: usize) {
    tracing::debug!(target: TARGET, actor = %operator, op = "console: list", outcome = "ok", tasks);
}

/// Records a bulk cancel of `operator` (`POST /console/api/tasks/cancel`), at INFO:
/// whether it was a dry run, how many unfinished tasks `matched`, and `done`, the
/// counts of tasks cancelled, already finished and failed (`None`: nothing was
/// cancelled, a dry run or a refusal past the maximum). Each task cancelled is audited
/// on its own line too.
pub(super) fn bulk_cancel(
    operator: &str,
    dry_run: bool,
    matched: usize,
    done: Option<(usize, usize, usize)>,
) {
    let op = "console: bulk cancel";
    match done {
        Some((cancelled, already_terminal, failed)) => tracing::info!(
            target: TARGET, actor = %operator, op, outcome = "ok", dry_run, matched,
            cancelled, already_terminal, failed
        ),
        None if dry_run => {
            tracing::info!(target: TARGET, actor = %operator, op, outcome = "ok", dry_run, matched)
        }
        None => tracing::info!(
            target: TARGET, actor = %operator, op, outcome = "refused", dry_run, matched,
            reason = "too many tasks match"
        ),
    }
}

/// Records that `operator` opened an event stream.
pub(super) fn streamed(operator: &str) {
    tracing::debug!(target: TARGET, actor = %operator, op = "console: events", outcome = "ok");
}

/// Records that the console refused `attempt` with `status` for `reason`; `detail` is
/// the authenticator's message, if any (never a credential).
pub(super) fn refused(attempt: &Attempt, status: StatusCode, reason: Reason, detail: Option<&str>) {
    let Attempt {
        remote_ip,
        method,
        path,
    } = attempt;
    let (status, method, path, reason) = (
        status.as_u16(),
        method.as_str(),
        path.as_str(),
        reason.as_str(),
    );
    tracing::info!(
        target: TARGET,
        op = "console: refused",
        outcome = "refused",
        status,
        remote_ip = remote_ip.map(tracing::field::display),
        method,
        path,
        reason,
        detail
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `emit` writes at INFO (or DEBUG with `debug`).
    fn written(debug: bool, emit: impl FnOnce()) -> String {
        let buffer = crate::test_log::LogBuffer::default();
        let writer = buffer.clone();
        let level = if debug {
            tracing::Level::DEBUG
        } else {
            tracing::Level::INFO
        };
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, emit);
        buffer.text()
    }

    fn attempt(path: &str, remote: Option<&str>) -> Attempt {
        let mut extensions = axum::http::Extensions::new();
        if let Some(addr) = remote {
            let addr: SocketAddr = addr.parse().expect("an address");
            extensions.insert(ConnectInfo(addr));
        }
        Attempt::from_pieces(&extensions, &Method::GET, path)
    }

    #[test]
    fn a_refusal_names_the_peer_the_path_and_the_reason() {
        let line = written(false, || {
            refused(
                &attempt("/console/api/tasks", Some("192.0.2.7:5151")),
                StatusCode::UNAUTHORIZED,
                Reason::BadCredentials,
                None,
            )
        });
        for part in [
            "INFO",
            "mcp_tasks_server::audit",
            "op=\"console: refused\"",
            "status=401",
            "remote_ip=192.0.2.7 ",
            "method=\"GET\"",
            "path=\"/console/api/tasks\"",
            "reason=\"bad credentials\"",
        ] {
            assert!(line.contains(part), "{part} in {line}");
        }
        assert!(!line.contains("5151"), "the IP alone: {line}");
        let unknown = written(false, || {
            refused(
                &attempt("/console", None),
                StatusCode::FORBIDDEN,
                Reason::HostOrOrigin,
                Some("Host not allowed: evil.example"),
            )
        });
        assert!(!unknown.contains("remote_ip"), "{unknown}");
        assert!(
            unknown.contains("detail=\"Host not allowed: evil.example\""),
            "{unknown}"
        );
    }

    #[test]
    fn text_a_caller_chose_cannot_forge_a_line() {
        let line = written(false, || {
            refused(
                &attempt("/console", None),
                StatusCode::FORBIDDEN,
                Reason::HostOrOrigin,
                Some("Host not allowed: x\nINFO forged"),
            )
        });
        assert_eq!(line.lines().count(), 1, "{line}");
        let long = "/console/".to_owned() + &"é".repeat(400);
        let cut_path = attempt(&long, None).path;
        assert!(cut_path.len() <= MAX_PATH + '…'.len_utf8(), "{cut_path}");
        assert!(cut_path.ends_with('…'));
    }

    #[test]
    fn a_bulk_cancel_is_one_line_with_its_counts() {
        let line = written(false, || bulk_cancel("admin", false, 3, Some((2, 1, 0))));
        for part in [
            "op=\"console: bulk cancel\"",
            "actor=admin",
            "dry_run=false",
            "matched=3",
            "cancelled=2",
            "already_terminal=1",
            "failed=0",
        ] {
            assert!(line.contains(part), "{part} in {line}");
        }
        let refused = written(false, || bulk_cancel("admin", false, 10_001, None));
        assert!(
            refused.contains("outcome=\"refused\"") && refused.contains("too many"),
            "{refused}"
        );
        let dry = written(false, || bulk_cancel("admin", true, 7, None));
        assert!(
            dry.contains("dry_run=true") && dry.contains("outcome=\"ok\""),
            "{dry}"
        );
    }

    #[test]
    fn reads_are_info_and_opens_debug() {
        let opened = || {
            listed("admin", 3);
            streamed("admin");
        };
        assert_eq!(written(false, opened), "");
        let debug = written(true, opened);
        assert!(
            debug.contains("op=\"console: list\"") && debug.contains("tasks=3"),
            "{debug}"
        );
        assert!(
            debug.contains("op=\"console: events\"") && debug.contains("actor=admin"),
            "{debug}"
        );
    }
}
