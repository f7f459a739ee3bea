//! [`Server`] and its builder: tools, store and runtime put together, and the endpoint
//! transports serve.
//!
//! **Invariant.** No handler lives here; the methods are `dispatch.rs`'s.

use std::sync::Arc;

use indexmap::IndexMap;
use jsonrpsee::Extensions;
use jsonrpsee::core::middleware::RpcServiceBuilder;
use mcp_tasks::TaskStore;
use mcp_tasks_protocol::engine::{Endpoint, EndpointBuilder};
use mcp_tasks_protocol::types::Implementation;
use tokio_util::sync::CancellationToken;

use crate::cache::{CacheHint, CacheHints, Cacheable};
use crate::dispatch::methods;
use crate::executor::{Executor, Role};
use crate::features::{Catalog, PromptDef, ResourceDef, ResourceTemplateDef};
use crate::node::NodeConfig;
use crate::revision::RequestMetaLayer;
use crate::runtime::{RuntimeConfig, TaskRuntime};
use crate::session::subscriptions::SessionSubscriptions;
use crate::session::{SessionSlot, StandaloneIsRequestPeer};
use crate::state::State;
use crate::tool::ToolDef;
use crate::worker::WorkerConfig;

/// Builds a [`Server`].
#[derive(Debug)]
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: IndexMap<String, ToolDef>,
    catalog: Catalog,
    store: Option<Arc<dyn TaskStore>>,
    runtime: RuntimeConfig,
    role: Role,
    executor: Option<Arc<dyn Executor>>,
    worker: WorkerConfig,
    node: NodeConfig,
    poll_interval_ms: Option<u64>,
    promote_after: Option<std::time::Duration>,
    cursor_key: Option<crate::seal::SealKey>,
    stateless: bool,
    max_inflight_requests: usize,
    max_subscriptions: usize,
    cache_hints: CacheHints,
}

/// The default of [`ServerBuilder::max_subscriptions_per_principal`].
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 16;

impl ServerBuilder {
    /// Requests served at once per session (default 256; see
    /// [`EndpointBuilder::max_inflight_requests`]). Over HTTP the session is per
    /// principal, so this bounds one principal's concurrent POSTs; beyond it a request
    /// is answered at once with -32029 naming the limit.
    pub fn max_inflight_requests(mut self, requests: usize) -> Self {
        self.max_inflight_requests = requests;
        self
    }

    /// `subscriptions/listen` streams one principal may have open at once (default
    /// [`DEFAULT_MAX_SUBSCRIPTIONS`]); one more is refused with -32029 naming the limit
    /// (HTTP 200 with the JSON-RPC error, like any other refused request).
    pub fn max_subscriptions_per_principal(mut self, subscriptions: usize) -> Self {
        self.max_subscriptions = subscriptions;
        self
    }

    /// How clients may cache one kind of MCP 2026-07-28 result (`cacheScope` and `ttlMs`,
    /// SEP-2549); every kind not set is [`CacheHint::NONE`]: private, stale at once.
    /// A public hint is only right for a result that holds nothing caller-specific.
    pub fn cache_hint(mut self, result: Cacheable, hint: CacheHint) -> Self {
        self.cache_hints.set(result, hint);
        self
    }

    /// Serves only MCP 2025-11-25 sessions: no `server/discover`, so clients that try
    /// 2026-07-28 first fall back to `initialize` (for testing such clients, or for
    /// deployments that must not offer the stateless wire).
    pub fn only_2025_11_25(mut self) -> Self {
        self.stateless = false;
        self
    }

    /// The key `tasks/list` cursors are sealed with; every instance behind one load
    /// balancer needs the same (default: random per process).
    pub fn cursor_key(mut self, key: [u8; 32]) -> Self {
        self.cursor_key = Some(crate::seal::SealKey::from_bytes(key));
        self
    }

    /// Adds a tool (a later tool of the same name replaces an earlier one).
    pub fn tool(mut self, tool: ToolDef) -> Self {
        self.tools.insert(tool.name().to_owned(), tool);
        self
    }

    /// Adds a resource (a later one with the same URI replaces an earlier one).
    pub fn resource(mut self, resource: ResourceDef) -> Self {
        self.catalog
            .resources
            .insert(resource.uri().to_owned(), resource);
        self
    }

    /// Adds a resource template (a later one with the same URI template replaces an
    /// earlier one). A URI no static resource has is read by the first template it fits,
    /// in the order they were added.
    pub fn resource_template(mut self, template: ResourceTemplateDef) -> Self {
        let templates = &mut self.catalog.templates;
        match templates
            .iter_mut()
            .find(|t| t.uri_template() == template.uri_template())
        {
            Some(old) => *old = template,
            None => templates.push(template),
        }
        self
    }

    /// Adds a prompt (a later prompt of the same name replaces an earlier one).
    pub fn prompt(mut self, prompt: PromptDef) -> Self {
        self.catalog
            .prompts
            .insert(prompt.name().to_owned(), prompt);
        self
    }

    /// Where tasks are kept (default: a [`mcp_tasks::MemoryStore`]).
    pub fn store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Natural-language guidance returned by `server/discover`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Runtime timing (leases, sweeps, shutdown grace).
    pub fn runtime(mut self, config: RuntimeConfig) -> Self {
        self.runtime = config;
        self
    }

    /// What this node does with tasks (default [`Role::All`]: runs the tasks it creates,
    /// and claims those other nodes queued). [`Role::Api`] queues every task it creates for
    /// the worker nodes; [`Role::Worker`] only claims and runs (serve no MCP requests from
    /// it: nothing it creates would run).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// Where created tasks run, instead of the role's executor ([`InProcess`] for
    /// `all`, [`Queue`] otherwise).
    ///
    /// [`InProcess`]: crate::InProcess
    /// [`Queue`]: crate::Queue
    pub fn executor(mut self, executor: Arc<dyn Executor>) -> Self {
        self.executor = Some(executor);
        self
    }

    /// How this node's worker loop looks for work (roles `worker` and `all`).
    pub fn worker(mut self, config: WorkerConfig) -> Self {
        self.worker = config;
        self
    }

    /// How this node takes part in the store's node registry (its heartbeat interval;
    /// default [`NodeConfig::default`]).
    pub fn node(mut self, config: NodeConfig) -> Self {
        self.node = config;
        self
    }

    /// The poll interval suggested to clients (default: the store's).
    pub fn poll_interval_ms(mut self, ms: u64) -> Self {
        self.poll_interval_ms = Some(ms);
        self
    }

    /// Makes every [`TaskPolicy::Optional`](crate::TaskPolicy::Optional) tool
    /// deadline-promoted, as [`TaskPolicy::After`](crate::TaskPolicy::After)`(deadline)`:
    /// a call that would have become a task at once (the client allows it and the tool's
    /// selector wants one) answers in the request when the tool finishes within
    /// `deadline`, and becomes a task at the deadline otherwise. Default: off, such calls
    /// become tasks at once.
    pub fn promote_after(mut self, deadline: std::time::Duration) -> Self {
        self.promote_after = Some(deadline);
        self
    }

    /// Starts the task runtime and returns the server. Needs a tokio runtime. When
    /// metrics were set up before (feature `otel`, `telemetry::init`), the store is
    /// wrapped to time its operations and its tasks are counted by status.
    pub fn build(self) -> Server {
        let store = crate::telemetry::instrument_store(
            self.store
                .unwrap_or_else(|| Arc::new(mcp_tasks::MemoryStore::default())),
        );
        let runtime = TaskRuntime::start(Arc::clone(&store), self.runtime);
        let drain = Arc::new(crate::node::Drain::default());
        crate::node::start(runtime.clone(), self.role, self.node, Arc::clone(&drain));
        if self.role.claims() {
            crate::worker::start(
                runtime.clone(),
                &self.tools,
                self.worker,
                Arc::clone(&drain),
            );
        }
        let executor = match self.executor {
            Some(executor) => executor,
            // Drained, an `all` node queues what its API creates for the other workers.
            None if self.role == Role::All => Arc::new(crate::node::DrainAware {
                inner: self.role.executor(),
                drain,
            }),
            None => self.role.executor(),
        };
        Server {
            served: Arc::default(),
            state: Arc::new(State {
                info: self.info,
                instructions: self.instructions,
                tools: self.tools,
                catalog: self.catalog,
                resource_feed: Default::default(),
                store,
                runtime,
                executor,
                poll_interval_ms: self.poll_interval_ms,
                promote_after: self.promote_after,
                shutdown: CancellationToken::new(),
                cursor_key: self.cursor_key.unwrap_or_else(crate::seal::SealKey::random),
                stateless: self.stateless,
                max_inflight_requests: self.max_inflight_requests,
                subscriptions: crate::limits::Subscriptions::new(self.max_subscriptions),
                polls: crate::limits::PollMeter::default(),
                cache_hints: self.cache_hints,
            }),
        }
    }
}

/// An MCP server that runs tools as tasks. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Server {
    state: Arc<State>,
    /// Which MCP 2025-11-25 sessions this server serves, and their resource
    /// subscriptions: owned here, beside the revision-neutral [`State`].
    served: Arc<SessionSubscriptions>,
}

/// The endpoint type a [`Server`] serves with (dispatch wrapped in its middleware).
pub type ServerEndpoint = Endpoint<
    <tower::layer::util::Stack<RequestMetaLayer, tower::layer::util::Identity> as tower::Layer<
        mcp_tasks_protocol::engine::MethodsService,
    >>::Service,
>;

impl Server {
    /// A builder for a server called `name` at `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            tools: IndexMap::new(),
            catalog: Catalog::default(),
            store: None,
            runtime: RuntimeConfig::default(),
            role: Role::All,
            executor: None,
            worker: WorkerConfig::default(),
            node: NodeConfig::default(),
            poll_interval_ms: None,
            promote_after: None,
            cursor_key: None,
            stateless: true,
            max_inflight_requests: mcp_tasks_protocol::engine::DEFAULT_MAX_INFLIGHT_REQUESTS,
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
            cache_hints: CacheHints::default(),
        }
    }

    /// Where the server keeps its tasks.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.state.store
    }

    /// The runtime that runs the server's tasks.
    pub fn runtime(&self) -> &TaskRuntime {
        &self.state.runtime
    }

    /// The JSON-RPC endpoint: every method, behind the `_meta` middleware.
    pub fn endpoint(&self) -> Arc<ServerEndpoint> {
        self.endpoint_and_methods().0
    }

    /// The endpoint, and the names of every method it answers (both revisions), from
    /// one registration.
    pub(crate) fn endpoint_and_methods(&self) -> (Arc<ServerEndpoint>, Vec<String>) {
        let module = methods(Arc::clone(&self.state), Arc::clone(&self.served));
        let names: Vec<String> = module.method_names().map(str::to_owned).collect();
        let endpoint = EndpointBuilder::new(module)
            .max_inflight_requests(self.state.max_inflight_requests)
            .middleware(RpcServiceBuilder::new().layer(
                RequestMetaLayer::new(names.clone()).with_targets(crate::telemetry::Targets::new(
                    self.state.tools.keys().cloned(),
                    self.state.catalog.prompts.keys().cloned(),
                )),
            ))
            .build();
        (endpoint, names)
    }

    /// The tools whose input schema mirrors parameters into `Mcp-Param-*` headers, and
    /// those parameters (what the HTTP transport checks against each call's arguments).
    pub(crate) fn param_headers(
        &self,
    ) -> std::collections::HashMap<String, Arc<[mcp_tasks_protocol::http::ParamHeader]>> {
        self.state
            .tools()
            .filter(|t| !t.param_headers.is_empty())
            .map(|t| (t.name.clone(), Arc::clone(&t.param_headers)))
            .collect()
    }

    /// The scopes each tool requires, by tool name (tools requiring none left out).
    /// The state every handler shares (the HTTP transport restores sessions with it).
    pub(crate) fn state(&self) -> Arc<State> {
        Arc::clone(&self.state)
    }

    /// The registry of the MCP 2025-11-25 sessions this server serves.
    pub(crate) fn served_sessions(&self) -> Arc<SessionSubscriptions> {
        Arc::clone(&self.served)
    }

    pub(crate) fn tool_scopes(&self) -> std::collections::HashMap<String, Vec<String>> {
        self.state
            .tools()
            .filter(|t| !t.required_scopes().is_empty())
            .map(|t| (t.name().to_owned(), t.required_scopes().to_vec()))
            .collect()
    }

    /// Serves one connection (stdio, an in-process duplex): MCP 2026-07-28 requests, and
    /// an MCP 2025-11-25 session once the client sends `initialize` (its notifications and
    /// input requests then travel on the connection itself).
    pub fn serve_connection(
        &self,
        conn: mcp_tasks_protocol::engine::Connection,
    ) -> (
        mcp_tasks_protocol::engine::Peer,
        tokio::task::JoinHandle<()>,
    ) {
        self.serve_connection_inner(conn, false)
    }

    /// [`serve_connection`](Self::serve_connection) for stdio: when the input ends, the
    /// requests already read finish (for up to the runtime's shutdown grace) and their
    /// answers are written, instead of being cancelled.
    pub(crate) fn serve_connection_draining(
        &self,
        conn: mcp_tasks_protocol::engine::Connection,
    ) -> (
        mcp_tasks_protocol::engine::Peer,
        tokio::task::JoinHandle<()>,
    ) {
        self.serve_connection_inner(conn, true)
    }

    fn serve_connection_inner(
        &self,
        conn: mcp_tasks_protocol::engine::Connection,
        drain: bool,
    ) -> (
        mcp_tasks_protocol::engine::Peer,
        tokio::task::JoinHandle<()>,
    ) {
        let slot = SessionSlot::default();
        let mut extensions = Extensions::new();
        extensions.insert(slot.clone());
        extensions.insert(StandaloneIsRequestPeer);
        crate::v2025::listen_for_resource_updates(&self.state, &self.served);
        let endpoint = self.endpoint();
        let (peer, served) = if drain {
            let grace = self.state.runtime.config().shutdown_grace;
            endpoint.serve_draining(conn, extensions, grace)
        } else {
            endpoint.serve_with(conn, extensions)
        };
        // When the connection ends, so does its session: its watcher stops and lets go of
        // the connection's sender, so the transport can finish writing and close.
        let task = tokio::spawn(async move {
            let _ = served.await;
            if let Some(session) = slot.get() {
                session.drop_standalone();
                session.close();
            }
        });
        (peer, task)
    }

    /// Announces that the resource at `uri` changed: `notifications/resources/updated`
    /// goes to every MCP 2025-11-25 session subscribed to `uri` (on its standalone
    /// stream; a session without one open misses it), and to every MCP 2026-07-28
    /// `subscriptions/listen` stream whose `resourceSubscriptions` names `uri`. On a
    /// shared store (PostgreSQL, Redis) the change is announced through the store, so it
    /// reaches those sessions and streams on every instance, whichever one saw it.
    pub async fn notify_resource_updated(&self, uri: &str) {
        crate::v2025::notify_resource_updated(&self.state, &self.served, uri).await;
    }

    /// Ends listen streams, stops launching tasks, gives running ones the grace period,
    /// then cancels the rest. Every task ends in a state the store contract allows.
    pub async fn shutdown(&self) {
        self.state.shutdown.cancel();
        self.state.runtime.shutdown().await;
    }

    /// Cancelled when [`shutdown`](Self::shutdown) begins.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.state.shutdown.clone()
    }
}
