//! [`client_methods`]: the methods a server may call on the client (MCP 2025-11-25
//! servers send input requests as server->client requests), each answered through the
//! handler [`Routes`] picks, plus `ping`; and, when the client hosts tasks, `tasks/*` of
//! those tasks.
//!
//! Invariant: no answer here is the application's own: each comes from a
//! [`ClientHandler`](super::ClientHandler) (through [`answer`]) or from the hosted tasks'
//! store.

use std::sync::Arc;

use jsonrpsee::RpcModule;
use jsonrpsee::types::ErrorObjectOwned;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::v2026::{CreateMessage, Elicit, ListRoots};
use serde_json::Value;

use super::answer;
use super::routes::Routes;
use crate::hosted::Hosted;

/// What the client's methods share: who answers, and the tasks the client hosts.
pub(crate) struct Answering {
    routes: Arc<Routes>,
    hosted: Option<Arc<Hosted>>,
}

/// The methods a server may call on us (MCP 2025-11-25 servers send input requests as
/// server->client requests), answered through the handler [`Routes`] picks, plus `ping`.
/// With `hosted`, a sampling or elicitation request with `params.task` (of a kind the
/// handler declares) becomes a client-hosted task, and `tasks/get`, `tasks/result`,
/// `tasks/list` and `tasks/cancel` are served from its store; without it they are
/// -32601, and `params.task` is ignored (the request is answered as a plain one).
pub(crate) fn client_methods(
    routes: Arc<Routes>,
    hosted: Option<Arc<Hosted>>,
) -> RpcModule<Answering> {
    let hosting = hosted.is_some();
    let mut module = RpcModule::new(Answering { routes, hosted });
    for method in [Elicit::METHOD, CreateMessage::METHOD, ListRoots::METHOD] {
        let registered =
            module.register_async_method(method, move |params, ctx, _ext| async move {
                let mut params: Value = params.parse().unwrap_or(Value::Null);
                let task = params.as_object_mut().and_then(|p| p.remove("task"));
                let handler = ctx
                    .routes
                    .handler_for(method, &params)
                    .await
                    .map_err(ErrorObjectOwned::from)?;
                let request = serde_json::json!({ "method": method, "params": params });
                match (task, &ctx.hosted) {
                    (Some(task), Some(hosted)) if hosted.hosts(method) => {
                        match crate::hosted::idempotency_of(method, &params) {
                            Ok(idempotency) => {
                                let run = async move { answer(handler.as_ref(), &request).await };
                                hosted.start(method, task, idempotency, run).await
                            }
                            Err(e) => Err(e),
                        }
                    }
                    _ => answer(handler.as_ref(), &request).await,
                }
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
    if hosting {
        register_task_methods(&mut module);
    }
    module
}

/// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` of the hosted tasks.
fn register_task_methods(module: &mut RpcModule<Answering>) {
    use mcp_tasks_protocol::v2025::methods::{TASKS_CANCEL, TASKS_GET, TASKS_LIST, TASKS_RESULT};
    for method in [TASKS_GET, TASKS_RESULT, TASKS_LIST, TASKS_CANCEL] {
        let registered =
            module.register_async_method(method, move |params, ctx, _ext| async move {
                let params: Value = params.parse().unwrap_or(Value::Null);
                let Some(hosted) = &ctx.hosted else {
                    return Err(ErrorObjectOwned::from(ErrorObject::new(
                        error_codes::METHOD_NOT_FOUND,
                        format!("{method}: this client hosts no tasks"),
                    )));
                };
                match method {
                    TASKS_GET => hosted.get(&params).await,
                    TASKS_RESULT => hosted.result(&params).await,
                    TASKS_LIST => hosted.list(&params).await,
                    _ => hosted.cancel(&params).await,
                }
                .map_err(ErrorObjectOwned::from)
            });
        if let Err(e) = registered {
            tracing::error!(error = %e, "client method registration failed");
        }
    }
}
