//! [`McpClient`]: connect, negotiate, call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpsee::RpcModule;
use jsonrpsee::types::ErrorObjectOwned;
use mcp_protocol::JsonObject;
use mcp_protocol::engine::{Connection, EndpointBuilder, Peer, PeerError};
use mcp_protocol::error_codes;
use mcp_protocol::jsonrpc::ErrorObject;
use mcp_protocol::meta::{PROTOCOL_VERSION_2026_07_28, TASKS_EXTENSION};
use mcp_protocol::method::Request;
use mcp_protocol::tasks::{self, DetailedTask, TaskStatusNotificationParams};
use mcp_protocol::types::Implementation;
use mcp_protocol::v2026::{
    self, CallTool, CallToolRequestParams, CallToolResult, ClientCapabilities, Discover,
    DiscoverResult, ListTools, ListToolsResult, RequestMeta, RequestParams,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::broadcast;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::driver::{DriverConfig, TaskHandle};
use crate::error::ClientError;
use crate::handler::{ClientHandler, answer};
use crate::transport::{self, ExchangeFailure, HttpState, TransportGuard};

/// Tunables of a client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Who we are, sent in every request's `_meta`.
    pub client_info: Implementation,
    /// How long one request may wait for its answer.
    pub request_timeout: Duration,
    /// How many MRTR rounds a synchronous call may take.
    pub max_input_rounds: u32,
    /// How tasks are driven.
    pub driver: DriverConfig,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_info: Implementation::new("mcp-client", env!("CARGO_PKG_VERSION")),
            request_timeout: Duration::from_secs(30),
            max_input_rounds: 16,
            driver: DriverConfig::default(),
        }
    }
}

/// What the server is, as negotiated.
#[derive(Debug, Clone)]
pub enum ServerInfo {
    /// MCP 2026-07-28 (`server/discover`).
    V2026(Box<DiscoverResult>),
    /// MCP 2025-11-25 (`initialize`), for servers without `server/discover`.
    V2025(Box<mcp_protocol::v2025::InitializeResult>),
}

impl ServerInfo {
    /// Whether the server offers the tasks extension.
    pub fn supports_tasks(&self) -> bool {
        match self {
            ServerInfo::V2026(d) => tasks::server_declares_tasks(&d.capabilities),
            ServerInfo::V2025(i) => i.capabilities.supports_task_tool_calls(),
        }
    }
}

pub(crate) struct Inner {
    pub(crate) peer: Peer,
    pub(crate) handler: Arc<dyn ClientHandler>,
    pub(crate) config: ClientConfig,
    pub(crate) server: Mutex<Option<ServerInfo>>,
    /// `notifications/tasks` pushed by the server, for drivers to pick up.
    pub(crate) pushed: broadcast::Sender<DetailedTask>,
    /// The HTTP headers state, for transports that have one.
    pub(crate) http: Option<Arc<Mutex<HttpState>>>,
    _guard: TransportGuard,
    _forward: Option<AbortOnDrop>,
}

/// A task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// An MCP client. Cheap to clone; the connection closes when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct McpClient {
    pub(crate) inner: Arc<Inner>,
}

/// How `call_tool_as_task` came back.
#[derive(Debug)]
pub enum Started {
    /// The server ran the call synchronously.
    Done(Box<CallToolResult>),
    /// The server made a task.
    Task(Box<TaskHandle>),
}

impl McpClient {
    /// Starts `program` with `args` and connects over its stdio.
    pub async fn connect_stdio(
        program: &str,
        args: &[String],
        handler: Arc<dyn ClientHandler>,
        config: ClientConfig,
    ) -> Result<McpClient, ClientError> {
        let (conn, guard) = transport::spawn_stdio(program, args)?;
        McpClient::start(conn, guard, None, handler, config).await
    }

    /// Connects to a Streamable HTTP endpoint (e.g. `http://127.0.0.1:8000/mcp`).
    pub async fn connect_http(
        url: &str,
        handler: Arc<dyn ClientHandler>,
        config: ClientConfig,
    ) -> Result<McpClient, ClientError> {
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        let transport::HttpTransport {
            connection,
            guard,
            state,
            failures,
        } = transport::http(url, http);
        McpClient::start(connection, guard, Some((state, failures)), handler, config).await
    }

    /// Connects over a connection you made (e.g. one end of [`Connection::memory`] whose
    /// other end a server serves in the same process).
    pub async fn connect(
        conn: Connection,
        handler: Arc<dyn ClientHandler>,
        config: ClientConfig,
    ) -> Result<McpClient, ClientError> {
        McpClient::start(conn, TransportGuard::None, None, handler, config).await
    }

    async fn start(
        conn: Connection,
        guard: TransportGuard,
        http: Option<(Arc<Mutex<HttpState>>, UnboundedReceiver<ExchangeFailure>)>,
        handler: Arc<dyn ClientHandler>,
        config: ClientConfig,
    ) -> Result<McpClient, ClientError> {
        let (pushed, _) = broadcast::channel(256);
        let endpoint = EndpointBuilder::new(client_methods(Arc::clone(&handler)))
            .on_notification(tasks::methods::NOTIFICATIONS_TASKS, {
                let pushed = pushed.clone();
                move |n| {
                    let pushed = pushed.clone();
                    async move {
                        let params = n
                            .params
                            .as_deref()
                            .map(|p| serde_json::from_str::<TaskStatusNotificationParams>(p.get()));
                        match params {
                            Some(Ok(p)) => {
                                let _ = pushed.send(p.task);
                            }
                            _ => tracing::debug!("malformed notifications/tasks; ignored"),
                        }
                    }
                }
            })
            .build();
        let (peer, _session) = endpoint.serve(conn);
        let (http, failures) = http.unzip();
        // Failed HTTP exchanges end their requests with `PeerError::Transport`.
        let forward = failures.map(|mut failures| {
            let peer = peer.clone();
            AbortOnDrop(tokio::spawn(async move {
                while let Some(failure) = failures.recv().await {
                    peer.fail(&failure.id, PeerError::Transport(failure.error.to_string()));
                }
            }))
        });
        let client = McpClient {
            inner: Arc::new(Inner {
                peer,
                handler,
                config,
                server: Mutex::new(None),
                pushed,
                http: http.clone(),
                _guard: guard,
                _forward: forward,
            }),
        };
        if let Some(http) = http {
            http.lock()
                .unwrap_or_else(|e| e.into_inner())
                .protocol_version = Some(PROTOCOL_VERSION_2026_07_28.to_owned());
        }
        client.negotiate().await?;
        Ok(client)
    }

    /// `server/discover` (MCP 2026-07-28); a server that answers -32601 gets `initialize`
    /// (MCP 2025-11-25) instead.
    async fn negotiate(&self) -> Result<(), ClientError> {
        match self
            .request::<Discover>(&RequestParams {
                meta: self.request_meta(),
                ..Default::default()
            })
            .await
        {
            Ok(result) => {
                *self.inner.server.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(ServerInfo::V2026(Box::new(result)));
                Ok(())
            }
            // No `server/discover`: an MCP 2025-11-25 server. Start a session.
            Err(ClientError::Rpc(e)) if e.code == error_codes::METHOD_NOT_FOUND => {
                self.initialize().await
            }
            Err(e) => Err(e),
        }
    }

    /// `initialize` + `notifications/initialized` (MCP 2025-11-25).
    async fn initialize(&self) -> Result<(), ClientError> {
        use mcp_protocol::v2025;
        let caps = serde_json::to_value(self.inner.handler.capabilities())
            .and_then(serde_json::from_value::<v2025::ClientCapabilities>)
            .map_err(|e| ClientError::Protocol(format!("capabilities: {e}")))?;
        let params = v2025::InitializeRequestParams {
            protocol_version: mcp_protocol::meta::PROTOCOL_VERSION_2025_11_25.to_owned(),
            capabilities: caps,
            client_info: self.inner.config.client_info.clone(),
            meta: None,
            extra: JsonObject::new(),
        };
        if let Some(http) = &self.inner.http {
            http.lock()
                .unwrap_or_else(|e| e.into_inner())
                .protocol_version =
                Some(mcp_protocol::meta::PROTOCOL_VERSION_2025_11_25.to_owned());
        }
        let result = self.request::<v2025::Initialize>(&params).await?;
        if result.protocol_version != mcp_protocol::meta::PROTOCOL_VERSION_2025_11_25 {
            return Err(ClientError::Protocol(format!(
                "the server offers protocol {}; this client speaks 2026-07-28 and 2025-11-25",
                result.protocol_version
            )));
        }
        self.inner.peer.notify::<v2025::Initialized>(&None).await?;
        *self.inner.server.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(ServerInfo::V2025(Box::new(result)));
        Ok(())
    }

    /// Whether the session speaks MCP 2025-11-25.
    pub(crate) fn is_2025(&self) -> bool {
        matches!(self.server(), Some(ServerInfo::V2025(_)))
    }

    /// What the server said about itself.
    pub fn server(&self) -> Option<ServerInfo> {
        self.inner
            .server
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The `_meta` every request carries: protocol version, our capabilities (with the
    /// tasks extension), who we are.
    pub fn request_meta(&self) -> RequestMeta {
        let caps: ClientCapabilities = self
            .inner
            .handler
            .capabilities()
            .with_extension(TASKS_EXTENSION, JsonObject::new());
        RequestMeta::new(caps).with_client_info(self.inner.config.client_info.clone())
    }

    /// A typed request with the configured timeout.
    pub async fn request<M: Request>(&self, params: &M::Params) -> Result<M::Result, ClientError> {
        let timeout = self.inner.config.request_timeout;
        match tokio::time::timeout(timeout, self.inner.peer.request::<M>(params)).await {
            Ok(r) => Ok(r?),
            Err(_) => Err(ClientError::Timeout(timeout)),
        }
    }

    /// A request whose result is read as `R` (for results with several shapes).
    pub(crate) async fn request_as<R: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<R, ClientError> {
        let timeout = self.inner.config.request_timeout;
        let raw = serde_json::value::to_raw_value(params)
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        let result =
            match tokio::time::timeout(timeout, self.inner.peer.request_raw(method, Some(&raw)))
                .await
            {
                Ok(r) => r?,
                Err(_) => return Err(ClientError::Timeout(timeout)),
            };
        serde_json::from_str(result.get()).map_err(|e| {
            ClientError::Protocol(format!("{method} answered with an unexpected shape: {e}"))
        })
    }

    /// The server's tools.
    pub async fn list_tools(&self) -> Result<ListToolsResult, ClientError> {
        if self.is_2025() {
            // The 2025-11-25 listing, seen through the 2026-07-28 type (`execution` stays in
            // each tool's extra members).
            let listed: Value = self
                .request_as(ListTools::METHOD, &JsonObject::new())
                .await?;
            let mut listed = match listed {
                Value::Object(o) => o,
                other => {
                    return Err(ClientError::Protocol(format!(
                        "tools/list answered {other}"
                    )));
                }
            };
            listed.insert("resultType".into(), Value::String("complete".into()));
            return serde_json::from_value(Value::Object(listed))
                .map_err(|e| ClientError::Protocol(format!("malformed tools/list result: {e}")));
        }
        let params = v2026::PaginatedRequestParams {
            meta: self.request_meta(),
            ..Default::default()
        };
        self.request::<ListTools>(&params).await
    }

    /// Calls a tool and returns its result, whatever it takes: MRTR rounds are answered
    /// through the handler, and a task is followed to its end (pushed updates when the
    /// server offers them, else polling). A tool error (`isError`) is an `Ok` result; a
    /// failed task is [`ClientError::TaskFailed`], a cancelled one
    /// [`ClientError::TaskCancelled`]. Dropping the future cancels the task.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ClientError> {
        match self.call_tool_as_task(name, arguments).await? {
            Started::Done(result) => Ok(*result),
            Started::Task(handle) => handle.wait().await,
        }
    }

    /// Calls a tool and hands back the task, if the server made one.
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<Started, ClientError> {
        if self.is_2025() {
            return self.call_tool_2025(name, arguments).await;
        }
        let mut params = CallToolRequestParams::new(self.request_meta(), name, Some(arguments));
        for _round in 0..self.inner.config.max_input_rounds {
            let reply: Value = self.request_as(CallTool::METHOD, &params).await?;
            let result_type = reply
                .get("resultType")
                .and_then(Value::as_str)
                .unwrap_or("complete");
            match result_type {
                "task" => {
                    let created: tasks::CreateTaskResult =
                        serde_json::from_value(reply).map_err(|e| {
                            ClientError::Protocol(format!("malformed CreateTaskResult: {e}"))
                        })?;
                    return Ok(Started::Task(Box::new(TaskHandle::new(
                        self.clone(),
                        created.task.task_id.clone(),
                        Some(created.task),
                    ))));
                }
                "input_required" => {
                    let needed: v2026::InputRequiredResult = serde_json::from_value(reply)
                        .map_err(|e| {
                            ClientError::Protocol(format!("malformed InputRequiredResult: {e}"))
                        })?;
                    params.input_responses =
                        Some(self.answer_all(needed.input_requests.as_deref()).await?);
                    params.request_state = needed.request_state;
                }
                _ => {
                    let result: CallToolResult = serde_json::from_value(reply).map_err(|e| {
                        ClientError::Protocol(format!("malformed CallToolResult: {e}"))
                    })?;
                    return Ok(Started::Done(Box::new(result)));
                }
            }
        }
        Err(ClientError::Protocol(format!(
            "tools/call still asked for input after {} rounds",
            self.inner.config.max_input_rounds
        )))
    }

    /// `tools/call` in a 2025-11-25 session: asks for a task when the tool's
    /// `execution.taskSupport` allows it (the client decides in this revision); input the
    /// server needs arrives as requests our handler answers.
    async fn call_tool_2025(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<Started, ClientError> {
        let tools = self.list_tools().await?;
        let support = tools
            .tools
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.extra.get("execution"))
            .and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str)
            .unwrap_or("forbidden")
            .to_owned();
        let as_task = self.server().is_some_and(|s| s.supports_tasks()) && support != "forbidden";
        let mut params = serde_json::json!({ "name": name, "arguments": arguments });
        if as_task {
            params["task"] = serde_json::json!({});
        }
        let reply: Value = self.request_as(CallTool::METHOD, &params).await?;
        if let Some(task) = reply.get("task") {
            let task: mcp_protocol::v2025::Task = serde_json::from_value(task.clone())
                .map_err(|e| ClientError::Protocol(format!("malformed CreateTaskResult: {e}")))?;
            return Ok(Started::Task(Box::new(TaskHandle::new(
                self.clone(),
                task.task_id.clone(),
                None,
            ))));
        }
        Ok(Started::Done(Box::new(crate::driver::call_result_2025(
            reply,
        )?)))
    }

    /// Follows a task created elsewhere (another process, before a restart) by its id.
    /// The handle cancels the task on drop only once [`TaskHandle::wait`] was called:
    /// reading its status leaves the task alone.
    pub fn resume_task(&self, task_id: impl Into<String>) -> TaskHandle {
        TaskHandle::new(self.clone(), task_id.into(), None)
    }

    /// Answers every request of an MRTR round through the handler.
    async fn answer_all(
        &self,
        requests: Option<&std::collections::BTreeMap<String, v2026::InputRequest>>,
    ) -> Result<v2026::InputResponses, ClientError> {
        let mut out = std::collections::BTreeMap::new();
        for (key, request) in requests.into_iter().flatten() {
            let request =
                serde_json::to_value(request).map_err(|e| ClientError::Protocol(e.to_string()))?;
            let response = answer(self.inner.handler.as_ref(), &request)
                .await
                .map_err(ClientError::rpc)?;
            let response = serde_json::from_value(response)
                .map_err(|e| ClientError::Protocol(e.to_string()))?;
            out.insert(key.clone(), response);
        }
        Ok(out.into_iter().collect())
    }

    pub(crate) fn handler(&self) -> &dyn ClientHandler {
        self.inner.handler.as_ref()
    }
}

/// The methods a server may call on us (MCP 2025-11-25 servers send these as requests).
fn client_methods(handler: Arc<dyn ClientHandler>) -> RpcModule<Arc<dyn ClientHandler>> {
    let mut module = RpcModule::new(handler);
    for method in [
        v2026::Elicit::METHOD,
        v2026::CreateMessage::METHOD,
        v2026::ListRoots::METHOD,
    ] {
        let registered =
            module.register_async_method(method, move |params, handler, _ext| async move {
                let params: Value = params.parse().unwrap_or(Value::Null);
                let request = serde_json::json!({ "method": method, "params": params });
                answer(handler.as_ref().as_ref(), &request)
                    .await
                    .map_err(ErrorObjectOwned::from)
            });
        if let Err(e) = registered {
            tracing::error!(error = %e, "client method registration failed");
        }
    }
    if let Err(e) = module.register_method("ping", |_, _, _| {
        Ok::<_, ErrorObjectOwned>(serde_json::json!({}))
    }) {
        tracing::error!(error = %e, "client method registration failed");
    }
    module
}

/// An error object, for callers matching on codes.
pub fn rpc_code(e: &ClientError) -> Option<i64> {
    e.rpc_error().map(|e: &ErrorObject| e.code)
}
