//! [`McpClient`]: connect, negotiate, call. The top of the crate: the only module that
//! makes task handles from calls; nothing in the crate imports it.

use std::sync::Arc;

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::Connection;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::meta::{
    IDEMPOTENCY_KEY, PROTOCOL_VERSION_2025_11_25, PROTOCOL_VERSION_2026_07_28, RELATED_TASK_IDS,
};
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::tasks::{CallToolReply, CallToolWithTasks};
use mcp_tasks_protocol::v2026::{
    self, CallToolRequestParams, CallToolResult, Discover, ListTools, ListToolsResult, RequestMeta,
    RequestParams,
};
use serde_json::Value;

use crate::auth::Authorizer;
use crate::config::{ClientConfig, Revision};
use crate::driver::TaskHandle;
use crate::error::ClientError;
use crate::events::TaskEvents;
use crate::handler::{ClientHandler, answer};
use crate::reference::{Endpoint, TaskRef, ToolCall, is_2025_family};
use crate::session::{HttpParts, ServerInfo, Session};
use crate::transport::{self, TransportGuard};
use crate::v2025;

/// An MCP client. Cheap to clone; the connection closes when the last clone (and the last
/// [`TaskHandle`] and [`TaskEvents`]) is dropped.
#[derive(Debug, Clone)]
pub struct McpClient {
    session: Arc<Session>,
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
        let endpoint = Endpoint::Stdio {
            program: program.to_owned(),
            args: args.to_vec(),
        };
        McpClient::start(conn, guard, None, handler, config, Some(endpoint)).await
    }

    /// Connects over the stdio of a child process you started, with its stdin and stdout
    /// piped (`Stdio::piped()`); its stderr is yours to inherit, pipe or discard (a
    /// command-line client pipes it to print the server's logs above its status line).
    /// The client owns the child from here: it is killed when the client is dropped.
    pub async fn connect_child(
        child: tokio::process::Child,
        handler: Arc<dyn ClientHandler>,
        config: ClientConfig,
    ) -> Result<McpClient, ClientError> {
        let (conn, guard) = transport::from_child(child)?;
        // The command that started the child is the caller's: task references made on
        // this connection name no endpoint (set `TaskRef::endpoint` to hand them on).
        McpClient::start(conn, guard, None, handler, config, None).await
    }

    /// Connects to a Streamable HTTP endpoint (e.g. `http://127.0.0.1:8000/mcp`).
    pub async fn connect_http(
        url: &str,
        handler: Arc<dyn ClientHandler>,
        config: ClientConfig,
    ) -> Result<McpClient, ClientError> {
        transport::check_http_url(url)?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &config.http_headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|e| {
                ClientError::Transport(format!("invalid HTTP header name {name:?}: {e}").into())
            })?;
            let value = reqwest::header::HeaderValue::from_str(value).map_err(|e| {
                ClientError::Transport(format!("invalid value for HTTP header {name}: {e}").into())
            })?;
            headers.append(name, value);
        }
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .default_headers(headers)
            .build()
            .map_err(|e| ClientError::Transport(e.to_string().into()))?;
        let auth = config
            .auth
            .clone()
            .map(|auth| Authorizer::new(url, auth).map(Arc::new))
            .transpose()
            .map_err(|e| ClientError::Auth(Arc::new(e)))?;
        let transport::HttpTransport {
            connection,
            guard,
            state,
            failures,
        } = transport::http(url, http, auth.clone());
        McpClient::start(
            connection,
            guard,
            Some((state, failures, auth)),
            handler,
            config,
            Some(Endpoint::Http {
                url: url.to_owned(),
            }),
        )
        .await
    }

    /// Connects over a connection you made (e.g. one end of [`Connection::memory`] whose
    /// other end a server serves in the same process).
    pub async fn connect(
        conn: Connection,
        handler: Arc<dyn ClientHandler>,
        config: ClientConfig,
    ) -> Result<McpClient, ClientError> {
        McpClient::start(conn, TransportGuard::None, None, handler, config, None).await
    }

    /// Connects to the endpoint `task` names, in the revision it was made in, and
    /// resumes it (see [`resume`](McpClient::resume)): what another process does with a
    /// [`TaskRef`] it was handed.
    pub async fn connect_to(
        task: &TaskRef,
        handler: Arc<dyn ClientHandler>,
        mut config: ClientConfig,
    ) -> Result<(McpClient, TaskHandle), ClientError> {
        config.revision = if task.is_2025() {
            Revision::V2025_11_25
        } else {
            Revision::V2026_07_28
        };
        let client = match &task.endpoint {
            Some(Endpoint::Http { url }) => McpClient::connect_http(url, handler, config).await?,
            Some(Endpoint::Stdio { program, args }) => {
                McpClient::connect_stdio(program, args, handler, config).await?
            }
            None => {
                return Err(ClientError::Reference(format!(
                    "task {} names no endpoint: connect yourself and resume it",
                    task.task_id
                )));
            }
        };
        let handle = client.resume(task)?;
        Ok((client, handle))
    }

    async fn start(
        conn: Connection,
        guard: TransportGuard,
        http: Option<HttpParts>,
        handler: Arc<dyn ClientHandler>,
        config: ClientConfig,
        endpoint: Option<Endpoint>,
    ) -> Result<McpClient, ClientError> {
        let session = Session::open(conn, guard, http, handler, config, endpoint)?;
        session.set_protocol_version(PROTOCOL_VERSION_2026_07_28);
        let client = McpClient {
            session: Arc::new(session),
        };
        client.negotiate().await?;
        Ok(client)
    }

    /// `server/discover` (MCP 2026-07-28); a server that answers -32601 gets `initialize`
    /// (MCP 2025-11-25) instead, unless the configuration names one revision. A server
    /// that refuses the version (-32022) is asked again once when it lists 2026-07-28
    /// among those it supports, and gets `initialize` when it lists only older ones.
    async fn negotiate(&self) -> Result<(), ClientError> {
        let revision = self.session.config.revision;
        if revision == Revision::V2025_11_25 {
            return v2025::initialize(&self.session).await;
        }
        let mut retried = false;
        loop {
            let discovered = self
                .request::<Discover>(&RequestParams {
                    meta: self.request_meta(),
                    ..Default::default()
                })
                .await;
            return match discovered {
                Ok(result) => {
                    self.session.set_server(ServerInfo::V2026(Box::new(result)));
                    Ok(())
                }
                // No `server/discover`: an MCP 2025-11-25 server. Start a session.
                Err(ClientError::Rpc(e))
                    if e.code == error_codes::METHOD_NOT_FOUND
                        && revision == Revision::Negotiate =>
                {
                    v2025::initialize(&self.session).await
                }
                Err(ClientError::Rpc(e)) if e.code == error_codes::UNSUPPORTED_PROTOCOL_VERSION => {
                    let supported: Vec<String> = e
                        .data
                        .as_ref()
                        .and_then(|d| d.get("supported"))
                        .and_then(|s| serde_json::from_value(s.clone()).ok())
                        .unwrap_or_default();
                    if supported.iter().any(|v| v == PROTOCOL_VERSION_2026_07_28) && !retried {
                        retried = true;
                        continue;
                    }
                    if supported.iter().any(|v| v == PROTOCOL_VERSION_2025_11_25)
                        && revision == Revision::Negotiate
                    {
                        return v2025::initialize(&self.session).await;
                    }
                    Err(ClientError::Rpc(e))
                }
                Err(e) => Err(e),
            };
        }
    }

    /// What the server said about itself.
    pub fn server(&self) -> Option<ServerInfo> {
        self.session.server()
    }

    /// The `_meta` every request carries: protocol version, our capabilities (with the
    /// tasks extension), who we are.
    pub fn request_meta(&self) -> RequestMeta {
        self.session.request_meta()
    }

    /// A typed request with the configured timeout.
    pub async fn request<M: Request>(&self, params: &M::Params) -> Result<M::Result, ClientError> {
        self.session.request::<M>(params).await
    }

    /// The server's tools. In a 2025-11-25 session each tool's `execution` is kept in its
    /// extra members. In a 2026-07-28 session a tool whose `x-mcp-header` annotations
    /// are invalid is left out (and logged), and the others' annotations are remembered:
    /// their calls mirror those arguments in `Mcp-Param-*` headers.
    pub async fn list_tools(&self) -> Result<ListToolsResult, ClientError> {
        if self.session.is_2025() {
            return v2025::tools_as_2026(v2025::list_tools(&self.session).await?);
        }
        let params = v2026::PaginatedRequestParams {
            meta: self.request_meta(),
            ..Default::default()
        };
        let mut listed = self.request::<ListTools>(&params).await?;
        let mut headers = std::collections::HashMap::new();
        listed.tools.retain(|tool| {
            let schema = match serde_json::to_value(&tool.input_schema) {
                Ok(Value::Object(schema)) => schema,
                _ => mcp_tasks_protocol::JsonObject::new(),
            };
            match mcp_tasks_protocol::http::param_headers(&schema) {
                Ok(declared) => {
                    if !declared.is_empty() {
                        headers.insert(tool.name.clone(), declared);
                    }
                    true
                }
                Err(why) => {
                    tracing::warn!(tool = %tool.name, %why, "tool refused: invalid x-mcp-header");
                    false
                }
            }
        });
        self.session.set_tool_headers(headers);
        self.session.set_idempotent_tools(
            listed
                .tools
                .iter()
                .map(|t| (t.name.as_str(), t.meta.as_ref())),
        );
        Ok(listed)
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

    /// Calls a tool and hands back the task, if the server made one. In a 2025-11-25
    /// session the call asks for a task when the tool's `execution.taskSupport` allows it
    /// (the client decides in that revision).
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<Started, ClientError> {
        self.call_as_task(ToolCall::new(name, arguments)).await
    }

    /// [`call_tool_as_task`](Self::call_tool_as_task) of a [`ToolCall`], which may name
    /// earlier tasks it relates to ([`ToolCall::related_to`]: MCP 2026-07-28 only; a
    /// 2025-11-25 session refuses such a call with [`ClientError::Protocol`]) and carry
    /// an idempotency key ([`ToolCall::with_idempotency_key`]).
    ///
    /// A task-augmented call (2025-11-25: one that asks for a task; 2026-07-28: any, when
    /// the server offers the tasks extension) of a tool the server's `tools/list` flags
    /// as deduplicating keyed calls (`_meta["rs.mcp-tasks/idempotency"]`) gets a fresh
    /// key when it has none ([`ClientConfig::idempotency_keys`]), sent as
    /// `params.idempotencyKey` and `_meta.idempotencyKey`; a key set on the call is
    /// always sent. A keyed call is sent again with the same key within
    /// [`ClientConfig::retry`]: after a failure that says the request never reached the
    /// server (connection refused, HTTP 429 after its `Retry-After`) always, after a lost
    /// answer (a connection cut, HTTP 502/503/504, the client's
    /// [`request_timeout`](ClientConfig::request_timeout)) only for a flagged tool, whose
    /// timed-out attempts are not cancelled (the retry finds their task). In a
    /// 2026-07-28 session the flag is known once [`list_tools`](Self::list_tools) has
    /// been called (before that: no default key, no retry of a lost answer); a
    /// 2025-11-25 call lists the tools itself. The handle's
    /// [`operation`](TaskHandle::operation) has the key sent.
    pub async fn call_as_task(&self, mut operation: ToolCall) -> Result<Started, ClientError> {
        let arguments = operation.arguments.clone();
        if self.session.is_2025() {
            if !operation.related_task_ids.is_empty() {
                return Err(ClientError::Protocol(format!(
                    "{RELATED_TASK_IDS} is a 2026-07-28 tasks extension key; this session speaks {}",
                    self.session.protocol_version()
                )));
            }
            let (called, key) = v2025::call_tool(
                &self.session,
                &operation.name,
                arguments,
                operation.idempotency_key.take(),
            )
            .await?;
            operation.idempotency_key = key;
            return Ok(match called {
                v2025::Called::Done(result) => Started::Done(result),
                v2025::Called::Task(task, pushed, creating) => {
                    let handle = TaskHandle::new(
                        Arc::clone(&self.session),
                        task.task_id.clone(),
                        None,
                        Some(operation),
                    )
                    .created_2025(*task, pushed)
                    .owning();
                    // Routed: requests held for another task stop waiting on this call.
                    drop(creating);
                    Started::Task(Box::new(handle))
                }
            });
        }
        let mut meta = self.request_meta();
        if !operation.related_task_ids.is_empty() {
            meta.extra.insert(
                RELATED_TASK_IDS.to_owned(),
                serde_json::json!(operation.related_task_ids),
            );
        }
        // Task-augmented: the server offers the tasks extension, and may answer with a
        // task; deduplicated: its last `tools/list` flags the tool as making one task (or
        // record) per key, so a repeat after a lost answer cannot run the tool twice.
        let deduplicated =
            self.session.supports_tasks() && self.session.idempotent_tool(&operation.name);
        if operation.idempotency_key.is_none()
            && deduplicated
            && self.session.config.idempotency_keys
        {
            operation.idempotency_key = Some(crate::retry::new_key());
        }
        if let Some(key) = &operation.idempotency_key {
            // Also in `_meta`, for servers (and SDKs in between) that drop unknown params.
            meta.extra
                .insert(IDEMPOTENCY_KEY.to_owned(), Value::String(key.clone()));
        }
        let mut params = CallToolRequestParams::new(meta, &operation.name, Some(arguments));
        params.idempotency_key = operation.idempotency_key.clone();
        let key = operation.idempotency_key.clone();
        // A retry finds what a timed-out attempt started: it is not cancelled.
        let kept = key.is_some() && deduplicated;
        let limit = self.session.config.max_input_rounds;
        let mut rounds = 0;
        loop {
            let reply: Value = crate::retry::retrying(
                &self.session.config.retry,
                CallToolWithTasks::METHOD,
                key.as_deref(),
                deduplicated,
                || async {
                    let (session, method) = (&self.session, CallToolWithTasks::METHOD);
                    if kept {
                        session.request_as_uncancelled(method, &params).await
                    } else {
                        session.request_as(method, &params).await
                    }
                },
            )
            .await?;
            let reply: CallToolReply =
                serde_json::from_value(reply).map_err(|e| ClientError::Protocol(e.to_string()))?;
            match reply {
                CallToolReply::Task(created) => {
                    return Ok(Started::Task(Box::new(TaskHandle::new(
                        Arc::clone(&self.session),
                        created.task.task_id.clone(),
                        Some(created.task),
                        Some(operation),
                    ))));
                }
                CallToolReply::InputRequired(needed) => {
                    if rounds >= limit {
                        return Err(ClientError::InputRoundsExceeded {
                            task_id: None,
                            limit,
                        });
                    }
                    rounds += 1;
                    params.input_responses =
                        Some(self.answer_all(needed.input_requests.as_deref()).await?);
                    params.request_state = needed.request_state;
                }
                CallToolReply::Complete(result) => return Ok(Started::Done(Box::new(result))),
            }
        }
    }

    /// Follows a task created elsewhere (another process, before a restart) from its
    /// [`TaskRef`] (from [`TaskHandle::detach`] or [`TaskHandle::reference`]). The task
    /// must be of this session's revision (else [`ClientError::Reference`]); the
    /// reference's endpoint is not checked (the same server may have several URLs;
    /// [`connect_to`](McpClient::connect_to) connects to it). The handle cancels the task
    /// on drop only once [`TaskHandle::wait`] was called: reading its status leaves the
    /// task alone.
    pub fn resume(&self, task: &TaskRef) -> Result<TaskHandle, ClientError> {
        let ours = self.session.protocol_version();
        if task.is_2025() != is_2025_family(&ours) {
            return Err(ClientError::Reference(format!(
                "task {} was made in MCP {}; this session speaks {ours}",
                task.task_id, task.revision
            )));
        }
        Ok(TaskHandle::new(
            Arc::clone(&self.session),
            task.task_id.clone(),
            None,
            task.operation.clone(),
        ))
    }

    /// Follows a task by its id alone (see [`resume`](McpClient::resume), which also
    /// keeps the call that made the task).
    pub fn resume_task(&self, task_id: impl Into<String>) -> TaskHandle {
        TaskHandle::new(Arc::clone(&self.session), task_id.into(), None, None)
    }

    /// The events of task `task_id` after `after` (exclusive; `None`: from the earliest
    /// the server still keeps), as a stream that resumes by itself and ends once the
    /// task ended (see [`TaskEvents`]). Reading them does not follow nor own the task.
    pub fn task_events(&self, task_id: impl Into<String>, after: Option<u64>) -> TaskEvents {
        TaskEvents::new(Arc::clone(&self.session), task_id.into(), after)
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
            let response = answer(self.session.handler(), &request)
                .await
                .map_err(ClientError::rpc)?;
            let response = serde_json::from_value(response)
                .map_err(|e| ClientError::Protocol(e.to_string()))?;
            out.insert(key.clone(), response);
        }
        Ok(out.into_iter().collect())
    }
}
