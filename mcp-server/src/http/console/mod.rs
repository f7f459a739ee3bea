//! The operator console: every owner's tasks for the person running the server, never
//! for an MCP peer. Served at `/console` by [`http::router`](crate::http::router) only
//! when [`HttpConfig::console`](crate::http::HttpConfig::console) is set (off by default).
//!
//! Who may use it is [`ConsoleAccess`]: HTTP Basic credentials of its own, or OAuth
//! scopes checked by the server's authenticator, each caller with a [`ConsoleRole`]
//! (a viewer reads; an operator may also cancel and re-run). Every `/console` path, the
//! page and the API alike, and even a path that does not exist, first passes the access
//! layer (`access.rs`): the MCP endpoint's `Host`/`Origin` check (against DNS
//! rebinding), no credentials in the URL (an `access_token` query parameter is 400), the
//! credential and its role, and on `POST` the [`CSRF_HEADER`] (a header a cross-origin
//! page cannot send without a preflight that never succeeds) and the operator role (a
//! viewer's `POST`, to any route, is 403). Every response carries a strict
//! `Content-Security-Policy`, `X-Content-Type-Options: nosniff`, `Referrer-Policy:
//! no-referrer` and `Cache-Control: no-store`.
//!
//! The API, JSON in camelCase, errors as `{"error": "message"}`:
//!
//! | path | what |
//! |---|---|
//! | `GET /console/api/tasks` | a page of tasks, newest first, filtered (`status`, `tool`, `owner`, `node`, `createdFrom`, `createdBefore`, `text`: in the status message, ASCII case ignored, 1 to 200 characters (`filter.rs`); `cursor`, `limit` 1 to 500, default 50) |
//! | `GET /console/api/tasks/{id}` | one task in full; audited with the operator as actor |
//! | `GET /console/api/tasks/{id}/history` | the task's timeline: its log (rule 23) in `seq` order, each entry's type, payload, time, node and actor (`after`, `limit` 1 to 1,000, default 1,000); audited with the operator as actor; 501 for a store without logs (`history.rs`) |
//! | `POST /console/api/tasks/cancel` | bulk cancel: `{"filter": {the list's filter}, "dryRun": bool}`; a dry run answers `{"matched", "max", "overMax"}`, else each matching unfinished task is cancelled as the single cancel does, each audited with the operator as actor: `{"matched", "cancelled", "alreadyTerminal", "failed"}`; 422 past 10,000 matching, nothing cancelled (`bulk.rs`) |
//! | `GET /console/api/me` | the caller: `{"name", "role"}` (`viewer` or `operator`; `me.rs`) |
//! | `POST /console/api/tasks/{id}/cancel` | asks the task's worker to stop, as `tasks/cancel` does for its owner; audited with the operator as actor |
//! | `POST /console/api/tasks/{id}/rerun` | a finished task run again as a new task of the same owner, tool and arguments, `{"taskId"}`; 409 naming why not (unfinished, the tool's [`Rerun`](crate::Rerun) policy, the tool gone); linked both ways (`rerunOf`, `rerunAs` in the task's view); audited with the operator as actor (`rerun.rs`) |
//! | `GET /console/api/nodes` | every API and worker node of the store's node registry (rule 24): `id`, `role`, `startedAt`, `heartbeatAt`, `heartbeatIntervalMs`, `state` (`active`, `draining`, `drained`, `lost`), `drainRequested`, `tasksHeld` and `leases` (the first 100 task ids) (`nodes.rs`) |
//! | `POST /console/api/nodes/{id}/drain` | asks a worker node to drain: it claims no new task, finishes those it holds, then says `drained`; 404 for an unknown node, 409 for an API node; audited with the operator as actor (`nodes.rs`) |
//! | `GET /console/api/counts` | tasks by status and by tool |
//! | `GET /console/api/activity` | the last 15 minutes by the minute (tasks created, tasks finished by status), and time to terminal by tool (p50, p90, p99) |
//! | `GET /console/api/events` | an event stream: `task` (a task changed, on any instance of a shared store), `resync` (events were missed); 429 past [`ConsoleConfig::max_streams_per_operator`] or [`ConsoleConfig::max_streams`] open streams |
//!
//! A store without the operator's view (a third-party store written before contract rule
//! 22) answers 501 naming the operation; a store out of reach, 503.
//!
//! The audit trail (target `mcp_tasks_server::audit`): a task read in full or cancelled,
//! at INFO, with the operator as `actor` and the task's owner as `principal`; a list read
//! or an event stream opened, at DEBUG; every refusal (400, 401, 403, 429, 503), at INFO,
//! with the peer's IP address, the method, the path and a fixed reason, never the
//! credential tried (`trail.rs`).
//!
//! Who may use it, and how many event streams may be open, is set in `../config.rs`
//! ([`ConsoleConfig`]). Modules: `access.rs` (the access layer and the security
//! headers, and the role: a viewer's `POST` is refused there), `api.rs` (the handlers),
//! `filter.rs` (the list's filter parameters, shared with `bulk.rs`, bulk cancel), `me.rs`
//! (the caller and their role), `history.rs` (a task's timeline), `rerun.rs` (a finished task run again, and its links), `views.rs` (a task as the API shows it), `activity.rs` (the charts'
//! numbers), `events.rs` (the event stream), `fanout.rs` (the one store reader all event
//! streams share, and their limits), `trail.rs` (the audit trail), `error.rs` (errors as
//! JSON), `page.rs` (the page: `assets/index.html`, `console.js`, `console.css`,
//! embedded).

mod access;
mod activity;
mod api;
mod bulk;
mod error;
mod events;
mod fanout;
mod filter;
mod history;
mod me;
mod nodes;
mod page;
mod rerun;
mod trail;
mod views;

pub use super::config::{
    ConsoleAccess, ConsoleConfig, ConsoleConfigError, ConsoleRole, ConsoleUser,
};

use std::sync::Arc;

use axum::Router;
use mcp_tasks::TaskStore;

use super::config::HttpConfig;

/// Where the console is served.
pub const CONSOLE_PATH: &str = "/console";

/// The header every `POST` to the console must carry, with the value `1`.
pub const CSRF_HEADER: &str = "x-console-csrf";

/// What every console handler shares.
struct Console {
    store: Arc<dyn TaskStore>,
    /// The HTTP settings: `Host`/`Origin` policies, the authenticator, stream lifetime.
    http: HttpConfig,
    access: ConsoleAccess,
    /// The server's shutdown: event streams end with it.
    shutdown: tokio_util::sync::CancellationToken,
    /// The event streams' shared store reader and their limits.
    streams: Arc<fanout::Hub>,
    /// The server's seal key: how the API and the audit trail show an owner
    /// ([`crate::audit::principal`]).
    seal: crate::seal::SealKey,
    /// The server's tools and executor: what a re-run needs (`rerun.rs`).
    state: Arc<crate::state::State>,
}

/// `router` with the console mounted at [`CONSOLE_PATH`]: every path under it (and that
/// path itself) goes to the console's own router, behind its access layer and security
/// headers, whatever the path. Not mounted (an error logged) when the MCP endpoint's own
/// path is under [`CONSOLE_PATH`].
pub(crate) fn mount<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    state: &Arc<crate::state::State>,
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
    let store = state.store_arc();
    let shutdown = state.shutdown_token();
    let streams = Arc::new(fanout::Hub::new(
        Arc::clone(&store),
        shutdown.clone(),
        config,
        state.cursor_key().clone(),
    ));
    let console = Arc::new(Console {
        store,
        shutdown,
        http: http.clone(),
        access: config.access.clone(),
        streams,
        seal: state.cursor_key().clone(),
        state: Arc::clone(state),
    });
    let app = Router::new()
        .merge(api::routes())
        .merge(bulk::routes())
        .merge(me::routes())
        .merge(rerun::routes())
        .merge(history::routes())
        .merge(nodes::routes())
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

/// A task of `owner` made by `tools/call` of `tool` (2026-07-28, no TTL, job or status
/// message), for the console's unit tests.
#[cfg(test)]
fn test_task(owner: &str, tool: Option<&str>) -> mcp_tasks::NewTask {
    mcp_tasks::NewTask {
        owner: mcp_tasks::Owner::new(owner),
        ttl_ms: None,
        poll_interval_ms: None,
        origin: mcp_tasks::Origin {
            method: "tools/call".into(),
            tool: tool.map(str::to_owned),
            revision: mcp_tasks::WireRevision::V2026_07_28,
        },
        status_message: None,
        job: None,
        trace_context: None,
        idempotency: None,
    }
}
