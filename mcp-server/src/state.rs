//! [`State`]: what every handler of both revisions shares (tools, resources, prompts,
//! store, runtime, limits, keys), built once by the [`ServerBuilder`](crate::ServerBuilder).
//!
//! **Invariant.** Holds nothing per request or per session: everything a later request
//! needs is in the store (2025-11-25 sessions live in `crate::session`, and which of them
//! this process serves in the registry the [`Server`](crate::Server) owns beside this
//! state, `session::subscriptions`). Knows no revision.

use std::sync::Arc;

use indexmap::IndexMap;
use mcp_tasks::TaskStore;
use mcp_tasks_protocol::types::Implementation;
use tokio_util::sync::CancellationToken;

use crate::features::Catalog;
use crate::features::feed::ResourceFeed;
use crate::runtime::TaskRuntime;
use crate::tool::ToolDef;

/// The server's shared state.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) tools: IndexMap<String, ToolDef>,
    /// Resources, resource templates and prompts.
    pub(crate) catalog: Catalog,
    /// Changed resource URIs, for the 2026-07-28 listen streams.
    pub(crate) resource_feed: ResourceFeed,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) runtime: TaskRuntime,
    /// Where created tasks run.
    pub(crate) executor: Arc<dyn crate::executor::Executor>,
    pub(crate) poll_interval_ms: Option<u64>,
    /// The deadline of `Optional` tools' calls (`ServerBuilder::promote_after`).
    pub(crate) promote_after: Option<std::time::Duration>,
    /// Cancelled when the server shuts down: ends listen streams.
    pub(crate) shutdown: CancellationToken,
    /// Seals the cursors handed out by `tasks/list`.
    pub(crate) cursor_key: crate::seal::SealKey,
    /// Whether MCP 2026-07-28 (`server/discover`) is offered.
    pub(crate) stateless: bool,
    pub(crate) max_inflight_requests: usize,
    /// Open `subscriptions/listen` streams per principal.
    pub(crate) subscriptions: crate::limits::Subscriptions,
    /// How fast each caller polls each task.
    pub(crate) polls: crate::limits::PollMeter,
    /// `cacheScope` and `ttlMs` of each kind of 2026-07-28 result.
    pub(crate) cache_hints: crate::cache::CacheHints,
}

impl State {
    pub(crate) fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    pub(crate) fn store_arc(&self) -> Arc<dyn TaskStore> {
        Arc::clone(&self.store)
    }

    pub(crate) fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    pub(crate) fn info(&self) -> &Implementation {
        &self.info
    }

    pub(crate) fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    pub(crate) fn tools(&self) -> impl Iterator<Item = &ToolDef> {
        self.tools.values()
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.tools.get(name)
    }

    pub(crate) fn cursor_key(&self) -> &crate::seal::SealKey {
        &self.cursor_key
    }

    /// `record` with the poll interval this read earns its reader (larger when polled
    /// too fast; see [`crate::limits::PollMeter`]). A finished task is not metered: its
    /// answer is final and reads the same every time.
    pub(crate) fn metered(&self, mut record: mcp_tasks::TaskRecord) -> mcp_tasks::TaskRecord {
        if record.is_terminal() {
            return record;
        }
        record.poll_interval_ms =
            self.polls
                .advise(&record.owner, record.id.as_str(), record.poll_interval_ms);
        record
    }
}
