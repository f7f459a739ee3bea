//! [`Server`]: tools, store and runtime put together, and the method handlers of
//! MCP 2026-07-28 with the tasks extension.

use std::sync::Arc;

use indexmap::IndexMap;
use jsonrpsee::core::middleware::RpcServiceBuilder;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{Extensions, RpcModule};
use mcp_protocol::JsonObject;
use mcp_protocol::engine::{
    Endpoint, EndpointBuilder, Peer, RequestContext, parse_params, register,
};
use mcp_protocol::error_codes;
use mcp_protocol::jsonrpc::{ErrorObject, RequestId};
use mcp_protocol::method::Request;
use mcp_protocol::tasks::{
    self, CancelTask, CancelTaskResult, CreateTaskResult, GetTask, GetTaskResult,
    TaskStatusChanged, TaskStatusNotificationParams, TaskSubscriptionNotifications, UpdateTask,
    UpdateTaskResult, missing_capability_error,
};
use mcp_protocol::types::Implementation;
use mcp_protocol::v2025;
use mcp_protocol::v2026::{
    self, CallTool, CallToolResult, Discover, DiscoverResult, InputRequests, InputRequiredResult,
    ListTools, ListToolsResult, NotificationMeta, ResultMeta, ResultType, ServerCapabilities,
    SubscriptionsAcknowledged, SubscriptionsAcknowledgedNotificationParams, SubscriptionsListen,
    SubscriptionsListenResult, SubscriptionsListenResultMeta, Tool, ToolInputSchema,
};
use mcp_tasks::{NewTask, Origin, StoreError, TaskId, TaskStore, WireRevision};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::audit;
use crate::caller::{Caller, RequestMetaLayer, SUPPORTED_VERSIONS};
use crate::context::{ToolContext, ToolError};
use crate::legacy::{self, session_of};
use crate::runtime::{RuntimeConfig, TaskRuntime};
use crate::tool::{TaskPolicy, ToolDef};
use crate::views;

/// The methods this server answers on the 2026-07-28 wire.
pub(crate) const TASKS_RESULT: &str = "tasks/result";
pub(crate) const TASKS_LIST: &str = "tasks/list";

/// Builds a [`Server`].
#[derive(Debug)]
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: IndexMap<String, ToolDef>,
    store: Option<Arc<dyn TaskStore>>,
    runtime: RuntimeConfig,
    poll_interval_ms: Option<u64>,
    cursor_key: Option<crate::seal::SealKey>,
    stateless: bool,
    max_inflight_requests: usize,
    max_subscriptions: usize,
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

    /// The poll interval suggested to clients (default: the store's).
    pub fn poll_interval_ms(mut self, ms: u64) -> Self {
        self.poll_interval_ms = Some(ms);
        self
    }

    /// Starts the task runtime and returns the server. Needs a tokio runtime.
    pub fn build(self) -> Server {
        let store = self
            .store
            .unwrap_or_else(|| Arc::new(mcp_tasks::MemoryStore::default()));
        let runtime = TaskRuntime::start(Arc::clone(&store), self.runtime);
        Server {
            state: Arc::new(State {
                info: self.info,
                instructions: self.instructions,
                tools: self.tools,
                store,
                runtime,
                poll_interval_ms: self.poll_interval_ms,
                shutdown: CancellationToken::new(),
                cursor_key: self.cursor_key.unwrap_or_else(crate::seal::SealKey::random),
                stateless: self.stateless,
                max_inflight_requests: self.max_inflight_requests,
                subscriptions: crate::limits::Subscriptions::new(self.max_subscriptions),
                polls: crate::limits::PollMeter::default(),
            }),
        }
    }
}

impl State {
    pub(crate) fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    pub(crate) fn store_arc(&self) -> Arc<dyn TaskStore> {
        Arc::clone(&self.store)
    }

    pub(crate) fn runtime(&self) -> &TaskRuntime {
        &self.runtime
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

    pub(crate) fn poll_interval(&self) -> Option<u64> {
        self.poll_interval_ms
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

#[derive(Debug)]
pub(crate) struct State {
    info: Implementation,
    instructions: Option<String>,
    tools: IndexMap<String, ToolDef>,
    store: Arc<dyn TaskStore>,
    runtime: TaskRuntime,
    poll_interval_ms: Option<u64>,
    /// Cancelled when the server shuts down: ends listen streams.
    shutdown: CancellationToken,
    /// Seals the cursors handed out by `tasks/list`.
    cursor_key: crate::seal::SealKey,
    /// Whether MCP 2026-07-28 (`server/discover`) is offered.
    stateless: bool,
    max_inflight_requests: usize,
    /// Open `subscriptions/listen` streams per principal.
    subscriptions: crate::limits::Subscriptions,
    /// How fast each caller polls each task.
    polls: crate::limits::PollMeter,
}

/// An MCP server that runs tools as tasks. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Server {
    state: Arc<State>,
}

/// The endpoint type a [`Server`] serves with (dispatch wrapped in its middleware).
pub type ServerEndpoint = Endpoint<
    <tower::layer::util::Stack<RequestMetaLayer, tower::layer::util::Identity> as tower::Layer<
        mcp_protocol::engine::MethodsService,
    >>::Service,
>;

impl Server {
    /// A builder for a server called `name` at `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            tools: IndexMap::new(),
            store: None,
            runtime: RuntimeConfig::default(),
            poll_interval_ms: None,
            cursor_key: None,
            stateless: true,
            max_inflight_requests: mcp_protocol::engine::DEFAULT_MAX_INFLIGHT_REQUESTS,
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
        }
    }

    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.state.store
    }

    pub fn runtime(&self) -> &TaskRuntime {
        &self.state.runtime
    }

    /// The JSON-RPC endpoint: every method, behind the `_meta` middleware.
    pub fn endpoint(&self) -> Arc<ServerEndpoint> {
        let module = methods(Arc::clone(&self.state));
        let names: Vec<String> = module.method_names().map(str::to_owned).collect();
        EndpointBuilder::new(module)
            .max_inflight_requests(self.state.max_inflight_requests)
            .middleware(RpcServiceBuilder::new().layer(RequestMetaLayer::new(names)))
            .build()
    }

    /// Serves one connection (stdio, an in-process duplex): MCP 2026-07-28 requests, and
    /// an MCP 2025-11-25 session once the client sends `initialize` (its notifications and
    /// input requests then travel on the connection itself).
    pub fn serve_connection(
        &self,
        conn: mcp_protocol::engine::Connection,
    ) -> (mcp_protocol::engine::Peer, tokio::task::JoinHandle<()>) {
        let slot = legacy::SessionSlot::default();
        let mut extensions = Extensions::new();
        extensions.insert(slot.clone());
        extensions.insert(legacy::StandaloneIsRequestPeer);
        let (peer, served) = self.endpoint().serve_with(conn, extensions);
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

fn rpc(e: ErrorObject) -> ErrorObjectOwned {
    ErrorObjectOwned::from(e)
}

/// A result as JSON (for methods whose result shape depends on the revision).
/// A result serialized once, straight to the text the response embeds (no `Value` tree).
fn json(value: impl Serialize) -> Result<Box<serde_json::value::RawValue>, ErrorObjectOwned> {
    serde_json::value::to_raw_value(&value)
        .map_err(|e| rpc(ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string())))
}

/// -32601 for a method MCP 2026-07-28 removed.
fn removed(method: &str) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(
        error_codes::METHOD_NOT_FOUND as i32,
        format!(
            "Method not found: {method} is not part of MCP 2026-07-28 (read results with tasks/get)"
        ),
        None::<()>,
    )
}

fn store_rpc(e: StoreError) -> ErrorObject {
    ErrorObject::from(&e)
}

fn require_tasks(caller: &Caller) -> Result<(), ErrorObject> {
    if caller.declares_tasks {
        Ok(())
    } else {
        Err(missing_capability_error())
    }
}

/// What `tools/call` answers: a result, a request for input, or a task.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
enum CallReply {
    Complete(CallToolResult),
    InputRequired(InputRequiredResult),
    Task(CreateTaskResult),
}

/// The `requestState` of a synchronous call: the answers gathered so far, for this tool.
#[derive(Debug, Serialize, Deserialize)]
struct RoundState {
    tool: String,
    answers: JsonObject,
}

/// What a sealed `requestState` starts with, so that no other sealed token (a cursor)
/// opens as one.
const ROUND_STATE_PREFIX: &str = "rs1:";

fn round_answers(
    key: &crate::seal::SealKey,
    owner: &mcp_tasks::Owner,
    tool: &str,
    params: &v2026::CallToolRequestParams,
) -> Result<JsonObject, ErrorObject> {
    let mut answers = match &params.request_state {
        None => JsonObject::new(),
        Some(state) => match key
            .open(owner, state)
            .as_deref()
            .and_then(|inner| inner.strip_prefix(ROUND_STATE_PREFIX))
            .map(serde_json::from_str::<RoundState>)
        {
            Some(Ok(s)) if s.tool == tool => s.answers,
            _ => {
                return Err(ErrorObject::new(
                    error_codes::INVALID_PARAMS,
                    "Invalid params: requestState was not issued for this call",
                ));
            }
        },
    };
    if let Some(responses) = &params.input_responses {
        match serde_json::to_value(responses) {
            Ok(Value::Object(map)) => answers.extend(map),
            _ => {
                return Err(ErrorObject::new(
                    error_codes::INVALID_PARAMS,
                    "Invalid params: inputResponses",
                ));
            }
        }
    }
    Ok(answers)
}

fn input_required(
    key: &crate::seal::SealKey,
    owner: &mcp_tasks::Owner,
    tool: &str,
    ctx: &ToolContext,
    answers: JsonObject,
) -> Result<CallReply, ErrorObject> {
    let requests: InputRequests = ctx
        .wanted()
        .into_iter()
        .map(|(k, v)| serde_json::from_value(v).map(|r| (k, r)))
        .collect::<Result<_, _>>()
        .map_err(|e| {
            ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                format!("cannot encode input requests: {e}"),
            )
        })?;
    let state = serde_json::to_string(&RoundState {
        tool: tool.to_owned(),
        answers,
    })
    .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))?;
    // Sealed for this caller: the answers cannot be forged, nor replayed by another.
    let state = key.seal(owner, &format!("{ROUND_STATE_PREFIX}{state}"));
    Ok(CallReply::InputRequired(
        InputRequiredResult::new(requests).with_request_state(state),
    ))
}

fn cancelled_call() -> ErrorObject {
    ErrorObject::new(error_codes::INTERNAL_ERROR, "The call was cancelled")
}

async fn call_tool(
    state: Arc<State>,
    params: v2026::CallToolRequestParams,
    ext: Extensions,
) -> Result<CallReply, ErrorObject> {
    let caller = Caller::from_extensions(&ext);
    let tool = state.tools.get(&params.name).ok_or_else(|| {
        ErrorObject::new(
            error_codes::INVALID_PARAMS,
            format!("Unknown tool: {}", params.name),
        )
    })?;
    let args = params.arguments.clone().unwrap_or_default();
    tool.validate(&args)?;
    if tool.policy() == TaskPolicy::Required && !caller.declares_tasks {
        return Err(missing_capability_error());
    }
    let answers = round_answers(&state.cursor_key, &caller.owner, tool.name(), &params)?;
    let cancel = RequestContext::from_extensions(&ext)
        .map(|c| c.cancel.clone())
        .unwrap_or_default();

    if caller.declares_tasks && tool.wants_task(&args) {
        // Input the tool needs before the task exists is gathered in rounds first.
        let ctx = ToolContext::rounds(answers.clone(), cancel.clone());
        let args = match tool.run_preflight(ctx.clone(), args.clone()) {
            None => args,
            Some(preflight) => match preflight.await {
                Ok(args) => args,
                Err(ToolError::InputRequired) => {
                    return input_required(
                        &state.cursor_key,
                        &caller.owner,
                        tool.name(),
                        &ctx,
                        answers,
                    );
                }
                Err(ToolError::Rpc(e)) => return Err(e),
                Err(ToolError::Cancelled) => return Err(cancelled_call()),
            },
        };
        if !state.runtime.is_accepting() {
            return Err(ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                "The server is shutting down",
            ));
        }
        let new = NewTask {
            owner: caller.owner.clone(),
            ttl_ms: None,
            poll_interval_ms: state.poll_interval_ms,
            origin: Origin {
                method: CallTool::METHOD.to_owned(),
                tool: Some(tool.name().to_owned()),
                revision: WireRevision::V2026_07_28,
            },
            status_message: None,
        };
        // Durable (and leased to this node) once `create_and_launch` returns: tasks/get on any node
        // finds the task.
        let created = state
            .runtime
            .create_and_launch(new, tool.clone(), args)
            .await
            .map_err(store_rpc);
        let id = created
            .as_ref()
            .map(|r| r.id.as_str().to_owned())
            .unwrap_or_default();
        audit::record("tools/call: create task", &caller.owner, &id, &created);
        let record = created?;
        return Ok(CallReply::Task(CreateTaskResult::from(views::task(
            &record,
        ))));
    }

    let ctx = ToolContext::rounds(answers.clone(), cancel);
    match tool.run(ctx.clone(), args).await {
        Ok(mut result) => {
            result.result_type = ResultType::Complete;
            Ok(CallReply::Complete(result))
        }
        Err(ToolError::InputRequired) => {
            input_required(&state.cursor_key, &caller.owner, tool.name(), &ctx, answers)
        }
        Err(ToolError::Rpc(e)) => Err(e),
        Err(ToolError::Cancelled) => Err(cancelled_call()),
    }
}

fn tool_listing(tool: &ToolDef) -> Tool {
    let schema: ToolInputSchema =
        serde_json::from_value(Value::Object(tool.input_schema.clone())).unwrap_or_default();
    let mut listed = Tool::new(tool.name(), schema);
    listed.title = tool.title.clone();
    listed.description = tool.description.clone();
    listed
}

fn task_id(id: &str) -> TaskId {
    TaskId::from_wire(id)
}

/// Every method of the 2026-07-28 wire.
fn methods(state: Arc<State>) -> RpcModule<State> {
    let mut module = RpcModule::from_arc(state);
    let registered = (|| -> Result<(), jsonrpsee::core::RegisterMethodError> {
        register::<Discover, _, _, _>(&mut module, |_params, state, _ext| async move {
            if !state.stateless {
                return Err(ErrorObject::new(
                    error_codes::METHOD_NOT_FOUND,
                    "Method not found: this server speaks MCP 2025-11-25 only (initialize)",
                ));
            }
            let capabilities = ServerCapabilities {
                tools: Some(Default::default()),
                ..Default::default()
            };
            let capabilities = tasks::TasksExtensionCapability::declare_on_server(capabilities);
            let mut result = DiscoverResult::new(capabilities);
            result.supported_versions =
                SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect();
            result.instructions = state.instructions.clone();
            result.meta = Some(ResultMeta {
                server_info: Some(state.info.clone()),
                ..Default::default()
            });
            Ok(result)
        })?;

        register::<v2025::Initialize, _, _, _>(&mut module, |params, state, ext| async move {
            legacy::initialize(&state, params, &ext).await
        })?;

        register::<v2025::Ping, _, _, _>(&mut module, |_params, _state, _ext| async move {
            Ok(mcp_protocol::v2025::EmptyResult::default())
        })?;

        module.register_async_method(ListTools::METHOD, |_params, state, ext| async move {
            if session_of(&ext).is_some() {
                return json(legacy::tools_list(&state));
            }
            json(ListToolsResult {
                result_type: ResultType::Complete,
                tools: state.tools.values().map(tool_listing).collect(),
                ..Default::default()
            })
        })?;

        module.register_async_method(CallTool::METHOD, |params, state, ext| async move {
            if let Some(session) = session_of(&ext) {
                let params = parse_params::<v2025::CallTool>(&params).map_err(rpc)?;
                return json(
                    legacy::tools_call(&state, &session, params, &ext)
                        .await
                        .map_err(rpc)?,
                );
            }
            let params = parse_params::<CallTool>(&params).map_err(rpc)?;
            json(call_tool(state, params, ext).await.map_err(rpc)?)
        })?;

        module.register_async_method(GetTask::METHOD, |params, state, ext| async move {
            if let Some(session) = session_of(&ext) {
                let params = parse_params::<v2025::GetTask>(&params).map_err(rpc)?;
                let outcome = legacy::tasks_get(&state, &session, &params.task_id).await;
                audit::record("tasks/get", &session.owner, &params.task_id, &outcome);
                return json(outcome.map_err(rpc)?);
            }
            let params = parse_params::<GetTask>(&params).map_err(rpc)?;
            let caller = Caller::from_extensions(&ext);
            require_tasks(&caller)?;
            let outcome = state
                .store
                .get(&caller.owner, &task_id(&params.task_id))
                .await
                .map_err(store_rpc);
            audit::record("tasks/get", &caller.owner, &params.task_id, &outcome);
            let record = state.metered(outcome.map_err(rpc)?);
            json(GetTaskResult::from(views::detailed(&record)))
        })?;

        register::<UpdateTask, _, _, _>(&mut module, |params, state, ext| async move {
            let caller = Caller::from_extensions(&ext);
            require_tasks(&caller)?;
            if let Some((key, _)) = params.input_responses.iter().find(|(_, v)| !v.is_object()) {
                return Err(ErrorObject::new(
                    error_codes::INVALID_PARAMS,
                    format!("Invalid params: inputResponses.{key} must be an object"),
                ));
            }
            let responses = params.input_responses.into_iter().collect();
            let outcome = state
                .store
                .resolve_input(&caller.owner, &task_id(&params.task_id), responses)
                .await
                .map_err(store_rpc);
            audit::record("tasks/update", &caller.owner, &params.task_id, &outcome);
            outcome?;
            Ok(UpdateTaskResult::default())
        })?;

        module.register_async_method(CancelTask::METHOD, |params, state, ext| async move {
            if let Some(session) = session_of(&ext) {
                let params = parse_params::<v2025::CancelTask>(&params).map_err(rpc)?;
                let outcome = legacy::tasks_cancel(&state, &session, &params.task_id).await;
                audit::record("tasks/cancel", &session.owner, &params.task_id, &outcome);
                return json(outcome.map_err(rpc)?);
            }
            let params = parse_params::<CancelTask>(&params).map_err(rpc)?;
            let caller = Caller::from_extensions(&ext);
            require_tasks(&caller)?;
            let outcome = state
                .store
                .request_cancel(&caller.owner, &task_id(&params.task_id))
                .await
                .map_err(store_rpc);
            audit::record("tasks/cancel", &caller.owner, &params.task_id, &outcome);
            outcome.map_err(rpc)?;
            json(CancelTaskResult::default())
        })?;

        module.register_async_method(TASKS_RESULT, |params, state, ext| async move {
            let Some(session) = session_of(&ext) else {
                return Err(removed(TASKS_RESULT));
            };
            let params = parse_params::<v2025::GetTaskPayload>(&params).map_err(rpc)?;
            let outcome = legacy::tasks_result(&state, &session, &params.task_id, &ext).await;
            audit::record("tasks/result", &session.owner, &params.task_id, &outcome);
            json(outcome.map_err(rpc)?)
        })?;

        module.register_async_method(TASKS_LIST, |params, state, ext| async move {
            let Some(session) = session_of(&ext) else {
                return Err(removed(TASKS_LIST));
            };
            let params = parse_params::<v2025::ListTasks>(&params).map_err(rpc)?;
            let cursor = params.and_then(|p| p.cursor);
            let outcome = legacy::tasks_list(&state, &session, cursor.as_deref()).await;
            audit::record("tasks/list", &session.owner, "*", &outcome);
            json(outcome.map_err(rpc)?)
        })?;

        module.register_async_method(
            SubscriptionsListen::METHOD,
            |params, state, ext| async move {
                let params = parse_params::<SubscriptionsListen>(&params).map_err(rpc)?;
                listen(state, params, ext).await.map_err(rpc)
            },
        )?;
        Ok(())
    })();
    if let Err(e) = registered {
        // Every name above is registered once; a clash is a bug in this file.
        tracing::error!(error = %e, "method registration failed");
    }
    module
}

/// `subscriptions/listen` with `taskIds`: acknowledges the tasks the caller may follow,
/// sends each one's current state, then a `notifications/tasks` on every change, until
/// the client goes away or the server shuts down.
async fn listen(
    state: Arc<State>,
    params: v2026::SubscriptionsListenRequestParams,
    ext: Extensions,
) -> Result<SubscriptionsListenResult, ErrorObject> {
    let caller = Caller::from_extensions(&ext);
    let peer = ext
        .get::<Peer>()
        .cloned()
        .ok_or_else(|| ErrorObject::new(error_codes::INTERNAL_ERROR, "no peer"))?;
    let request = RequestContext::from_extensions(&ext)
        .cloned()
        .ok_or_else(|| ErrorObject::new(error_codes::INTERNAL_ERROR, "no request context"))?;
    let wanted = TaskSubscriptionNotifications::from_filter(&params.notifications);
    if wanted.is_some() {
        require_tasks(&caller)?;
    }
    let Some(_slot) = state.subscriptions.acquire(&caller.owner) else {
        return Err(ErrorObject::new(
            error_codes::LIMIT_EXCEEDED,
            format!(
                "Too many subscriptions: the limit is {} open subscriptions/listen streams per principal",
                state.subscriptions.limit()
            ),
        ));
    };
    let subscription_id = request.id.clone();
    // Subscribe before reading, so no change between the read and the stream is lost.
    let mut events = state.store.events();
    let mut served = Vec::new();
    for id in wanted.unwrap_or_default() {
        if state.store.get(&caller.owner, &task_id(&id)).await.is_ok() {
            served.push(id);
        }
    }
    let mut ack = v2026::SubscriptionFilter::default();
    TaskSubscriptionNotifications::set_on_filter(&mut ack, &served);
    let ack = SubscriptionsAcknowledgedNotificationParams {
        notifications: ack,
        meta: Some(notification_meta(&subscription_id)),
        extra: JsonObject::new(),
    };
    peer.notify::<SubscriptionsAcknowledged>(&ack)
        .await
        .map_err(ErrorObject::from)?;

    let served: std::collections::HashSet<String> = served.into_iter().collect();
    // Set when an event was lost or a record could not be read (the store was
    // unavailable): every served task is pushed again, after a backoff while it fails.
    let mut resync = true;
    let mut backoff = crate::retry::Backoff::default();
    loop {
        if resync {
            resync = false;
            for id in &served {
                resync |= !push_task(&state, &peer, &caller, id, &subscription_id).await?;
            }
            if !resync {
                backoff = crate::retry::Backoff::default();
            }
        }
        let event = tokio::select! {
            _ = state.shutdown.cancelled() => break,
            _ = request.cancel.cancelled() => break,
            e = events.recv() => Some(e),
            _ = backoff.wait(), if resync => None,
        };
        match event {
            Some(Ok(mcp_tasks::TaskEvent::Changed { key, .. }))
                if key.owner == caller.owner && served.contains(key.id.as_str()) =>
            {
                resync |=
                    !push_task(&state, &peer, &caller, key.id.as_str(), &subscription_id).await?;
            }
            Some(Ok(_)) | None => {}
            Some(Err(mcp_tasks::EventError::Lagged(_))) => resync = true,
            Some(Err(mcp_tasks::EventError::Closed)) => break,
        }
    }
    let meta = SubscriptionsListenResultMeta {
        subscription_id,
        server_info: Some(state.info.clone()),
        extra: JsonObject::new(),
    };
    Ok(SubscriptionsListenResult::new(meta))
}

fn notification_meta(subscription_id: &RequestId) -> NotificationMeta {
    NotificationMeta {
        subscription_id: Some(subscription_id.clone()),
        ..NotificationMeta::default()
    }
}

/// Pushes the task's current state. `false`: the store was unavailable, nothing was
/// sent (push it again later).
async fn push_task(
    state: &State,
    peer: &Peer,
    caller: &Caller,
    id: &str,
    subscription_id: &RequestId,
) -> Result<bool, ErrorObject> {
    let record = match state.store.get(&caller.owner, &task_id(id)).await {
        Ok(record) => record,
        Err(e) => return Ok(!e.is_transient()),
    };
    let params = TaskStatusNotificationParams {
        task: views::detailed(&record),
        meta: Some(notification_meta(subscription_id)),
    };
    peer.notify::<TaskStatusChanged>(&params)
        .await
        .map_err(ErrorObject::from)?;
    Ok(true)
}
