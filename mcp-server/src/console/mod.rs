//! The operator console: every owner's tasks for the person running the server, never
//! for an MCP peer. Served at `/console` by [`http::router`](crate::http::router) only
//! when [`HttpConfig::console`](crate::http::HttpConfig::console) is set (off by default).
//!
//! Who may use it is [`ConsoleAccess`]: HTTP Basic credentials of its own, or an OAuth
//! scope checked by the server's authenticator. Every `/console` path, the page and the
//! API alike, and even a path that does not exist, first passes the access layer
//! (`access.rs`): the MCP endpoint's `Host`/`Origin` check (against DNS rebinding), no
//! credentials in the URL (an `access_token` query parameter is 400), the credential,
//! and on `POST` the [`CSRF_HEADER`] (a header a cross-origin page cannot send without a
//! preflight that never succeeds). Every response carries a strict
//! `Content-Security-Policy`, `X-Content-Type-Options: nosniff`, `Referrer-Policy:
//! no-referrer` and `Cache-Control: no-store`.
//!
//! The API, JSON in camelCase, errors as `{"error": "message"}`:
//!
//! | path | what |
//! |---|---|
//! | `GET /console/api/tasks` | a page of tasks, newest first, filtered (`status`, `tool`, `owner`, `node`, `createdFrom`, `createdBefore`; `cursor`, `limit` 1 to 500, default 50) |
//! | `GET /console/api/tasks/{id}` | one task in full |
//! | `POST /console/api/tasks/{id}/cancel` | asks the task's worker to stop, as `tasks/cancel` does for its owner; audited with the operator as actor |
//! | `GET /console/api/counts` | tasks by status and by tool |
//! | `GET /console/api/activity` | the last 15 minutes by the minute, and durations by tool |
//! | `GET /console/api/events` | an event stream: `task` (a task changed, on any instance of a shared store), `resync` (events were missed) |
//!
//! A store without the operator's view (a third-party store written before contract rule
//! 22) answers 501 naming the operation; a store out of reach, 503.
//!
//! Modules: `access.rs` (the access layer and the security headers), `api.rs` (the
//! handlers), `views.rs` (a task as the API shows it), `activity.rs` (the charts'
//! numbers), `events.rs` (the event stream), `error.rs` (errors as JSON), `page.rs` (the
//! page: `assets/index.html`, `console.js`, `console.css`, embedded).

mod access;
mod activity;
mod api;
mod error;
mod events;
mod page;
mod views;

use std::sync::Arc;

use axum::Router;
use mcp_tasks::TaskStore;

use crate::http::HttpConfig;

/// Where the console is served.
pub const CONSOLE_PATH: &str = "/console";

/// The header every `POST` to the console must carry, with the value `1`.
pub const CSRF_HEADER: &str = "x-console-csrf";

/// The console's settings: who may use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleConfig {
    /// Who may use the console.
    pub access: ConsoleAccess,
}

/// Who may use the console.
#[derive(Clone, PartialEq, Eq)]
pub enum ConsoleAccess {
    /// HTTP Basic authentication (RFC 7617) with these credentials, read from the
    /// `Authorization` header only and compared in constant time. The operator named in
    /// the audit trail is `user`. Basic credentials travel in clear text: only behind TLS
    /// or on a loopback address. A `user` holding `:` can never log in (RFC 7617).
    Basic {
        /// The user name.
        user: String,
        /// The password.
        password: String,
    },
    /// The server's authenticator ([`HttpConfig::principal`], OAuth) must accept the
    /// caller's bearer token, and its identity must hold this scope. The operator named
    /// in the audit trail is its principal. Without an authenticator nobody gets in.
    Scope(String),
}

impl std::fmt::Debug for ConsoleAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Never the password.
            ConsoleAccess::Basic { user, .. } => f
                .debug_struct("Basic")
                .field("user", user)
                .field("password", &"<redacted>")
                .finish(),
            ConsoleAccess::Scope(scope) => f.debug_tuple("Scope").field(scope).finish(),
        }
    }
}

/// Why console settings were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsoleConfigError {
    /// `USER:PASSWORD` without the colon.
    #[error("expected USER:PASSWORD")]
    NoColon,
    /// An empty user name.
    #[error("the console user name is empty")]
    EmptyUser,
    /// A user name holding `:`, which Basic authentication cannot carry (RFC 7617).
    #[error("the console user name holds a colon")]
    UserWithColon,
    /// An empty password.
    #[error("the console password is empty")]
    EmptyPassword,
    /// An empty scope, or one with a space or another character a scope cannot hold.
    #[error("not an OAuth scope: {0:?}")]
    BadScope(String),
}

impl ConsoleConfig {
    /// Basic authentication with `user` and `password`, both non-empty (a colon in the
    /// user name is refused as an empty password would be: it could never log in).
    pub fn basic(
        user: impl Into<String>,
        password: impl Into<String>,
    ) -> Result<ConsoleConfig, ConsoleConfigError> {
        let (user, password) = (user.into(), password.into());
        if user.is_empty() {
            return Err(ConsoleConfigError::EmptyUser);
        }
        if user.contains(':') {
            return Err(ConsoleConfigError::UserWithColon);
        }
        if password.is_empty() {
            return Err(ConsoleConfigError::EmptyPassword);
        }
        Ok(ConsoleConfig {
            access: ConsoleAccess::Basic { user, password },
        })
    }

    /// Basic authentication from `USER:PASSWORD` (split at the first colon; the password
    /// may hold more), as a command line gives it.
    pub fn parse_basic(pair: &str) -> Result<ConsoleConfig, ConsoleConfigError> {
        let (user, password) = pair.split_once(':').ok_or(ConsoleConfigError::NoColon)?;
        ConsoleConfig::basic(user, password)
    }

    /// OAuth: callers whose token the server's authenticator accepts and that hold
    /// `scope` (RFC 6749 scope-token characters, no space).
    pub fn scope(scope: impl Into<String>) -> Result<ConsoleConfig, ConsoleConfigError> {
        let scope = scope.into();
        let valid = !scope.is_empty()
            && scope
                .bytes()
                .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
        if !valid {
            return Err(ConsoleConfigError::BadScope(scope));
        }
        Ok(ConsoleConfig {
            access: ConsoleAccess::Scope(scope),
        })
    }
}

/// What every console handler shares.
struct Console {
    store: Arc<dyn TaskStore>,
    /// The HTTP settings: `Host`/`Origin` policies, the authenticator, stream lifetime.
    http: HttpConfig,
    access: ConsoleAccess,
    /// The server's shutdown: event streams end with it.
    shutdown: tokio_util::sync::CancellationToken,
}

/// `router` with the console mounted at [`CONSOLE_PATH`]: every path under it (and that
/// path itself) goes to the console's own router, behind its access layer and security
/// headers, whatever the path. Not mounted (an error logged) when the MCP endpoint's own
/// path is under [`CONSOLE_PATH`].
pub(crate) fn mount<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    state: &crate::state::State,
    http: &HttpConfig,
    config: &ConsoleConfig,
) -> Router<S> {
    let under = |p: &str| p == CONSOLE_PATH || p.starts_with(&format!("{CONSOLE_PATH}/"));
    if under(&http.path) {
        tracing::error!(
            path = %http.path,
            "the operator console is not served: the MCP endpoint's path is under {CONSOLE_PATH}"
        );
        return router;
    }
    let console = Arc::new(Console {
        store: state.store_arc(),
        shutdown: state.shutdown_token(),
        http: http.clone(),
        access: config.access.clone(),
    });
    let app = Router::new()
        .merge(api::routes())
        // The page: index.html and its assets, at their full paths.
        .merge(page::routes())
        .fallback(error::not_found)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&console),
            access::guard,
        ))
        .layer(axum::middleware::map_response(access::security_headers))
        .with_state(console)
        .into_service::<axum::body::Body>();
    router
        .route_service(CONSOLE_PATH, app.clone())
        .route_service(&format!("{CONSOLE_PATH}/"), app.clone())
        .route_service(&format!("{CONSOLE_PATH}/{{*rest}}"), app)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_scopes_are_checked_when_made() {
        assert_eq!(
            ConsoleConfig::parse_basic("admin:pa:ss"),
            Ok(ConsoleConfig {
                access: ConsoleAccess::Basic {
                    user: "admin".into(),
                    password: "pa:ss".into()
                }
            })
        );
        assert_eq!(
            ConsoleConfig::parse_basic("admin"),
            Err(ConsoleConfigError::NoColon)
        );
        assert_eq!(
            ConsoleConfig::parse_basic(":pw"),
            Err(ConsoleConfigError::EmptyUser)
        );
        assert_eq!(
            ConsoleConfig::parse_basic("admin:"),
            Err(ConsoleConfigError::EmptyPassword)
        );
        assert_eq!(
            ConsoleConfig::basic("a:b", "c"),
            Err(ConsoleConfigError::UserWithColon)
        );
        assert!(ConsoleConfig::scope("console:admin").is_ok());
        for bad in ["", "two words", "quote\"", "back\\slash"] {
            assert!(ConsoleConfig::scope(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn debug_never_shows_the_password() {
        let config = ConsoleConfig::basic("admin", "hunter2").expect("valid");
        let shown = format!("{config:?}");
        assert!(
            shown.contains("admin") && !shown.contains("hunter2"),
            "{shown}"
        );
        let http = HttpConfig {
            console: Some(config),
            ..HttpConfig::default()
        };
        assert!(!format!("{http:?}").contains("hunter2"));
    }
}
