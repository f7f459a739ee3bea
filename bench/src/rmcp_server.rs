//! rmcp 3.x (crates.io) with the benchmark tools: tasks run by rmcp's own `TaskManager`
//! with its default options (5-minute TTL), served statelessly over Streamable HTTP with
//! JSON replies, as rmcp recommends for request/response tools.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, GetTaskParams, GetTaskResult, InputRequest, ServerCapabilities,
    ServerConfig, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};

use crate::tools;

#[derive(Clone, Default)]
struct Bench {
    tasks: TaskManager,
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t.into())])
}

impl ServerHandler for Bench {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tasks_ok = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        let name = request.name.as_ref();
        if name == "echo" {
            return Ok(CallToolResponse::Complete(text("hello")));
        }
        if !tasks_ok {
            return Err(McpError::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        let task = match name {
            "work" => {
                let ms = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("ms"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                self.tasks.spawn(TaskOptions::default(), move |ctx| {
                    Box::pin(async move {
                        if ms > 0 {
                            tokio::select! {
                                _ = ctx.cancelled() => return Err(TaskExit::Cancelled),
                                _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
                            }
                        }
                        Ok(text(tools::done_now()))
                    })
                })
            }
            "ask" => self.tasks.spawn(TaskOptions::default(), |ctx| {
                Box::pin(async move {
                    let request: InputRequest = serde_json::from_value(
                        json!({"method": "elicitation/create", "params": tools::ask_form()}),
                    )
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                    let answer = ctx.request_input("name", request).await?;
                    let name = answer["content"]["name"].as_str().unwrap_or("nobody");
                    Ok(text(format!("hello {name}")))
                })
            }),
            other => return Err(McpError::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }
}

/// Serves until the process is killed; prints the URL on stdout first.
pub async fn serve(listener: tokio::net::TcpListener) -> Result<(), String> {
    let handler = Bench::default();
    let config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(None)
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let service: StreamableHttpService<Bench, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(handler.clone()), Default::default(), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    crate::serving::serve_axum(listener, app).await
}
