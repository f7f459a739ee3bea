//! Every method of the server, registered once: each hands its request to the handler of
//! the request's [`Revision`] (`v2025` or `v2026`), which the edge decided
//! (`revision.rs`). Params are parsed into the revision's own type before the handler
//! runs; results are serialized once, straight to the response text.
//!
//! **Invariant.** The only place that matches a request's revision; no handler does, and
//! nothing here decides it again.

use std::sync::Arc;

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{Extensions, RpcModule};
use mcp_tasks_protocol::engine::{parse_params, register};
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::tasks::{CallToolWithTasks, CancelTask, GetTask, UpdateTask};
use mcp_tasks_protocol::v2025;
use mcp_tasks_protocol::v2026::{
    CallTool, Complete, Discover, GetPrompt, ListPrompts, ListResourceTemplates, ListResources,
    ListTools, ReadResource, SubscriptionsListen,
};
use serde::Serialize;

use crate::audit;
use crate::errors::ServerError;
use crate::features::Feature;
use crate::revision::Revision;
use crate::state::State;
use crate::v2025::subscriptions::SessionSubscriptions;
use crate::{v2025 as legacy, v2026 as current};

/// `tasks/result`: MCP 2025-11-25 only.
pub(crate) const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list`: MCP 2025-11-25 only.
pub(crate) const TASKS_LIST: &str = "tasks/list";

/// A result serialized once, straight to the text the response embeds (no `Value` tree).
fn json(value: impl Serialize) -> Result<Box<serde_json::value::RawValue>, ErrorObjectOwned> {
    serde_json::value::to_raw_value(&value).map_err(|e| ServerError::Internal(e.to_string()).into())
}

/// Whether the request's own `_meta` names a 2026-07-28 protocol version.
fn is_2026(ext: &Extensions) -> bool {
    Revision::declarations(ext).is_some_and(|d| d.protocol_version.is_some())
}

/// The 2025-11-25 session of a task method's request, if any; a session of an earlier
/// revision (no tasks there) is -32601.
fn task_session(
    ext: &Extensions,
    method: &str,
) -> Result<Option<Arc<crate::v2025::McpSession>>, ServerError> {
    match Revision::session(ext) {
        Some(session) if !session.has_tasks() => Err(ServerError::MethodNotFound(format!(
            "Method not found: {method} is not part of MCP {} (tasks came in 2025-11-25)",
            session.protocol_version
        ))),
        other => Ok(other),
    }
}

/// -32601 for a method MCP 2026-07-28 removed.
fn removed(method: &str) -> ServerError {
    let hint = match method {
        TASKS_RESULT | TASKS_LIST => " (read results with tasks/get)",
        _ => "",
    };
    ServerError::MethodNotFound(format!(
        "Method not found: {method} is not part of MCP 2026-07-28{hint}"
    ))
}

/// -32601 for a 2025-11-25 subscription method outside a session.
fn subscribe_in_2026(method: &str) -> ServerError {
    ServerError::MethodNotFound(format!(
        "Method not found: {method} is not part of MCP 2026-07-28 (use subscriptions/listen with resourceSubscriptions)"
    ))
}

/// Every method of both wires.
pub(crate) fn methods(state: Arc<State>, served: Arc<SessionSubscriptions>) -> RpcModule<State> {
    let mut module = RpcModule::from_arc(state);
    if let Err(e) = register_all(&mut module, &served) {
        // Every name is registered once; a clash is a bug in this file.
        tracing::error!(error = %e, "method registration failed");
    }
    module
}

fn register_all(
    module: &mut RpcModule<State>,
    served: &Arc<SessionSubscriptions>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    register_tools_and_tasks(module, served)?;
    register_features(module, served)
}

fn register_tools_and_tasks(
    module: &mut RpcModule<State>,
    served: &Arc<SessionSubscriptions>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    register::<Discover, _, _, _>(module, |_params, state, _ext| async move {
        current::discover(&state).map_err(Into::into)
    })?;

    let sessions = Arc::clone(served);
    module.register_async_method(v2025::Initialize::METHOD, move |params, state, ext| {
        let served = Arc::clone(&sessions);
        async move {
            // A request written in MCP 2026-07-28 (its `_meta` names that version) asks for a
            // method that revision removed; a 2025-11-25 client opens its session.
            if is_2026(&ext) {
                return Err(removed(v2025::Initialize::METHOD).into());
            }
            if Revision::session(&ext).is_some() {
                return Err(legacy::already_initialized().into());
            }
            let params = parse_params::<v2025::Initialize>(&params)?;
            json(legacy::initialize(&state, &served, params, &ext).await?)
        }
    })?;

    module.register_async_method(v2025::Ping::METHOD, |_params, _state, ext| async move {
        match Revision::session(&ext) {
            Some(_) => json(mcp_tasks_protocol::v2025::EmptyResult::default()),
            None => Err(removed(v2025::Ping::METHOD).into()),
        }
    })?;

    module.register_async_method(v2025::SetLevel::METHOD, |params, state, ext| async move {
        let Some(session) = Revision::session(&ext) else {
            return Err(removed(v2025::SetLevel::METHOD).into());
        };
        let params = parse_params::<v2025::SetLevel>(&params)?;
        json(legacy::set_level(&state, &session, params).await?)
    })?;

    module.register_async_method(ListTools::METHOD, |_params, state, ext| async move {
        match Revision::session(&ext) {
            Some(session) => json(legacy::tools_list(&state, &session)),
            None => json(current::tools_list(&state)),
        }
    })?;

    module.register_async_method(CallTool::METHOD, |params, state, ext| async move {
        match Revision::session(&ext) {
            Some(session) => {
                let params = parse_params::<v2025::CallTool>(&params)?;
                json(legacy::tools_call(&state, &session, params, &ext).await?)
            }
            None => {
                let params = parse_params::<CallToolWithTasks>(&params)?;
                json(current::tools_call(&state, params, &ext).await?)
            }
        }
    })?;

    module.register_async_method(GetTask::METHOD, |params, state, ext| async move {
        match task_session(&ext, GetTask::METHOD)? {
            Some(session) => {
                let params = parse_params::<v2025::GetTask>(&params)?;
                let outcome = legacy::tasks_get(&state, &session, &params.task_id).await;
                json(audit::audited(
                    state.cursor_key(),
                    "tasks/get",
                    &session.owner,
                    &params.task_id,
                    outcome,
                )?)
            }
            None => {
                let params = parse_params::<GetTask>(&params)?;
                json(current::tasks_get(&state, params, &ext).await?)
            }
        }
    })?;

    register::<UpdateTask, _, _, _>(module, |params, state, ext| async move {
        current::tasks_update(&state, params, &ext)
            .await
            .map_err(Into::into)
    })?;

    module.register_async_method(CancelTask::METHOD, |params, state, ext| async move {
        match task_session(&ext, CancelTask::METHOD)? {
            Some(session) => {
                let params = parse_params::<v2025::CancelTask>(&params)?;
                let outcome = legacy::tasks_cancel(&state, &session, &params.task_id).await;
                json(audit::audited(
                    state.cursor_key(),
                    "tasks/cancel",
                    &session.owner,
                    &params.task_id,
                    outcome,
                )?)
            }
            None => {
                let params = parse_params::<CancelTask>(&params)?;
                json(current::tasks_cancel(&state, params, &ext).await?)
            }
        }
    })?;

    module.register_async_method(TASKS_RESULT, |params, state, ext| async move {
        let Some(session) = task_session(&ext, TASKS_RESULT)? else {
            return Err(removed(TASKS_RESULT).into());
        };
        let params = parse_params::<v2025::GetTaskPayload>(&params)?;
        let outcome = legacy::tasks_result(&state, &session, &params.task_id, &ext).await;
        json(audit::audited(
            state.cursor_key(),
            "tasks/result",
            &session.owner,
            &params.task_id,
            outcome,
        )?)
    })?;

    module.register_async_method(TASKS_LIST, |params, state, ext| async move {
        let Some(session) = task_session(&ext, TASKS_LIST)? else {
            return Err(removed(TASKS_LIST).into());
        };
        let params = parse_params::<v2025::ListTasks>(&params)?;
        let cursor = params.and_then(|p| p.cursor);
        let outcome = legacy::tasks_list(&state, &session, cursor.as_deref()).await;
        json(audit::audited(
            state.cursor_key(),
            "tasks/list",
            &session.owner,
            "*",
            outcome,
        )?)
    })?;

    module.register_async_method(
        SubscriptionsListen::METHOD,
        |params, state, ext: Extensions| async move {
            let params = parse_params::<SubscriptionsListen>(&params)?;
            current::listen(state, params, ext)
                .await
                .map_err(ErrorObjectOwned::from)
        },
    )?;
    Ok(())
}

/// Resources, prompts and completion: -32601 unless the server offers the feature, then
/// the request's revision's handler.
fn register_features(
    module: &mut RpcModule<State>,
    served: &Arc<SessionSubscriptions>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    module.register_async_method(ListResources::METHOD, |params, state, ext| async move {
        state
            .catalog
            .offers(Feature::Resources, ListResources::METHOD)?;
        match Revision::session(&ext) {
            Some(session) => {
                let params = parse_params::<v2025::ListResources>(&params)?;
                json(legacy::features::resources_list(
                    &state,
                    &session,
                    params.as_ref(),
                )?)
            }
            None => {
                let params = parse_params::<ListResources>(&params)?;
                json(current::features::resources_list(&state, &params, &ext)?)
            }
        }
    })?;

    module.register_async_method(
        ListResourceTemplates::METHOD,
        |params, state, ext| async move {
            state
                .catalog
                .offers(Feature::Resources, ListResourceTemplates::METHOD)?;
            match Revision::session(&ext) {
                Some(session) => {
                    let params = parse_params::<v2025::ListResourceTemplates>(&params)?;
                    json(legacy::features::resource_templates_list(
                        &state,
                        &session,
                        params.as_ref(),
                    )?)
                }
                None => {
                    let params = parse_params::<ListResourceTemplates>(&params)?;
                    json(current::features::resource_templates_list(
                        &state, &params, &ext,
                    )?)
                }
            }
        },
    )?;

    module.register_async_method(ReadResource::METHOD, |params, state, ext| async move {
        state
            .catalog
            .offers(Feature::Resources, ReadResource::METHOD)?;
        match Revision::session(&ext) {
            Some(_) => {
                let params = parse_params::<v2025::ReadResource>(&params)?;
                json(legacy::features::resources_read(&state, params).await?)
            }
            None => {
                let params = parse_params::<ReadResource>(&params)?;
                json(current::features::resources_read(&state, params).await?)
            }
        }
    })?;

    let sessions = Arc::clone(served);
    module.register_async_method(v2025::Subscribe::METHOD, move |params, state, ext| {
        let served = Arc::clone(&sessions);
        async move {
            state
                .catalog
                .offers(Feature::Resources, v2025::Subscribe::METHOD)?;
            let Some(session) = Revision::session(&ext) else {
                return Err(subscribe_in_2026(v2025::Subscribe::METHOD).into());
            };
            let params = parse_params::<v2025::Subscribe>(&params)?;
            json(legacy::features::resources_subscribe(&state, &served, &session, params).await?)
        }
    })?;

    let sessions = Arc::clone(served);
    module.register_async_method(v2025::Unsubscribe::METHOD, move |params, state, ext| {
        let served = Arc::clone(&sessions);
        async move {
            state
                .catalog
                .offers(Feature::Resources, v2025::Unsubscribe::METHOD)?;
            let Some(session) = Revision::session(&ext) else {
                return Err(subscribe_in_2026(v2025::Unsubscribe::METHOD).into());
            };
            let params = parse_params::<v2025::Unsubscribe>(&params)?;
            json(legacy::features::resources_unsubscribe(&state, &served, &session, params).await?)
        }
    })?;

    module.register_async_method(ListPrompts::METHOD, |params, state, ext| async move {
        state
            .catalog
            .offers(Feature::Prompts, ListPrompts::METHOD)?;
        match Revision::session(&ext) {
            Some(session) => {
                let params = parse_params::<v2025::ListPrompts>(&params)?;
                json(legacy::features::prompts_list(
                    &state,
                    &session,
                    params.as_ref(),
                )?)
            }
            None => {
                let params = parse_params::<ListPrompts>(&params)?;
                json(current::features::prompts_list(&state, &params, &ext)?)
            }
        }
    })?;

    module.register_async_method(GetPrompt::METHOD, |params, state, ext| async move {
        state.catalog.offers(Feature::Prompts, GetPrompt::METHOD)?;
        match Revision::session(&ext) {
            Some(session) => {
                let params = parse_params::<v2025::GetPrompt>(&params)?;
                json(legacy::features::prompts_get(&state, &session, params, &ext).await?)
            }
            None => {
                let params = parse_params::<GetPrompt>(&params)?;
                json(current::features::prompts_get(&state, params, &ext).await?)
            }
        }
    })?;

    module.register_async_method(Complete::METHOD, |params, state, ext| async move {
        state
            .catalog
            .offers(Feature::Completions, Complete::METHOD)?;
        match Revision::session(&ext) {
            Some(_) => {
                let params = parse_params::<v2025::Complete>(&params)?;
                json(legacy::features::complete(&state, params).await?)
            }
            None => {
                let params = parse_params::<Complete>(&params)?;
                json(current::features::complete(&state, params).await?)
            }
        }
    })?;
    Ok(())
}
