//! Resources, prompts and completion in MCP 2025-11-25 sessions: the classic shapes (no
//! `cacheScope`/`ttlMs`), -32002 "Resource not found" with `data.uri`, and
//! `resources/subscribe` / `resources/unsubscribe` with `notifications/resources/updated`
//! on the session's standalone stream.
//!
//! **Invariant.** Only wire shapes and session bookkeeping here; what is offered and
//! read is `features/`'s.

use std::sync::Arc;

use jsonrpsee::Extensions;
use mcp_protocol::JsonObject;
use mcp_protocol::engine::{Peer, RequestContext};
use mcp_protocol::v2025::{
    CompleteRequestParams, CompleteResult, Completion, CompletionReference, EmptyResult,
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceResult, ResourceRequestParams,
    ResourceUpdated, ResourceUpdatedNotificationParams,
};

use super::session::LegacySession;
use crate::auth::Identity;
use crate::context::{CallScope, ToolContext};
use crate::errors::ServerError;
use crate::features::completion::{self, CompletionInput, Target};
use crate::features::{Page, page, resources};
use crate::report::{self, Report};
use crate::state::State;

fn paged<T>(
    state: &State,
    session: &LegacySession,
    items: Vec<T>,
    kind: &str,
    params: Option<&PaginatedRequestParams>,
) -> Result<Page<T>, ServerError> {
    let cursor = params.and_then(|p| p.cursor.as_deref());
    page(items, kind, cursor, &state.cursor_key, &session.owner)
}

/// `resources/list`.
pub(crate) fn resources_list(
    state: &State,
    session: &LegacySession,
    params: Option<&PaginatedRequestParams>,
) -> Result<ListResourcesResult, ServerError> {
    let all = state
        .catalog
        .resources
        .values()
        .map(|r| r.listing())
        .collect();
    let page = paged(state, session, all, "resources", params)?;
    Ok(ListResourcesResult {
        resources: page.items,
        next_cursor: page.next_cursor,
        meta: None,
        extra: JsonObject::new(),
    })
}

/// `resources/templates/list`.
pub(crate) fn resource_templates_list(
    state: &State,
    session: &LegacySession,
    params: Option<&PaginatedRequestParams>,
) -> Result<ListResourceTemplatesResult, ServerError> {
    let all = state
        .catalog
        .templates
        .iter()
        .map(|t| t.listing())
        .collect();
    let page = paged(state, session, all, "templates", params)?;
    Ok(ListResourceTemplatesResult {
        resource_templates: page.items,
        next_cursor: page.next_cursor,
        meta: None,
        extra: JsonObject::new(),
    })
}

/// `resources/read`: the contents, or -32002 with `data.uri`.
pub(crate) async fn resources_read(
    state: &State,
    params: ResourceRequestParams,
) -> Result<ReadResourceResult, ServerError> {
    let catalog = &state.catalog;
    match resources::read(&catalog.resources, &catalog.templates, &params.uri).await {
        Ok(Some(contents)) => Ok(ReadResourceResult {
            contents,
            meta: None,
            extra: JsonObject::new(),
        }),
        Ok(None) => Err(ServerError::LegacyResourceNotFound(params.uri)),
        Err(message) => Err(ServerError::Internal(message)),
    }
}

/// `resources/subscribe`: the session hears of `uri`'s changes until it unsubscribes or
/// ends. A URI no resource has is refused like a read of it.
pub(crate) fn resources_subscribe(
    state: &State,
    session: &Arc<LegacySession>,
    params: ResourceRequestParams,
) -> Result<EmptyResult, ServerError> {
    if !state.catalog.knows(&params.uri) {
        return Err(ServerError::LegacyResourceNotFound(params.uri));
    }
    state.resource_watch.subscribe(&params.uri, session);
    Ok(EmptyResult::default())
}

/// `resources/unsubscribe` (of a URI not subscribed to: nothing to do).
pub(crate) fn resources_unsubscribe(
    state: &State,
    session: &LegacySession,
    params: ResourceRequestParams,
) -> EmptyResult {
    state.resource_watch.unsubscribe(&params.uri, session);
    EmptyResult::default()
}

/// Sends `notifications/resources/updated` for `uri` to every session subscribed to it
/// that has a standalone stream open (and feeds the 2026-07-28 listen streams).
pub(crate) async fn notify_resource_updated(state: &State, uri: &str) {
    let params = ResourceUpdatedNotificationParams {
        uri: uri.to_owned(),
        meta: None,
        extra: JsonObject::new(),
    };
    for session in state.resource_watch.changed(uri) {
        let Some(peer) = session.standalone_peer() else {
            continue;
        };
        if let Err(e) = peer.notify::<ResourceUpdated>(&params).await {
            tracing::debug!(session = %session.id, error = %e, "resource update not delivered");
        }
    }
}

/// `prompts/list`.
pub(crate) fn prompts_list(
    state: &State,
    session: &LegacySession,
    params: Option<&PaginatedRequestParams>,
) -> Result<ListPromptsResult, ServerError> {
    let all = state
        .catalog
        .prompts
        .values()
        .map(|p| p.listing())
        .collect();
    let page = paged(state, session, all, "prompts", params)?;
    Ok(ListPromptsResult {
        prompts: page.items,
        next_cursor: page.next_cursor,
        meta: None,
        extra: JsonObject::new(),
    })
}

/// `prompts/get`: -32602 for an unknown prompt or a missing required argument. A prompt
/// made with a context asks the client directly, on this request's stream.
pub(crate) async fn prompts_get(
    state: &State,
    session: &LegacySession,
    params: GetPromptRequestParams,
    ext: &Extensions,
) -> Result<GetPromptResult, ServerError> {
    let prompt = state
        .catalog
        .prompt(&params.name)
        .ok_or_else(|| ServerError::UnknownPrompt(params.name.clone()))?;
    let peer = ext
        .get::<Peer>()
        .cloned()
        .ok_or_else(|| ServerError::Internal("no peer".to_owned()))?;
    let cancel = RequestContext::from_extensions(ext)
        .map(|c| c.cancel.clone())
        .unwrap_or_default();
    let scope = CallScope {
        report: Report {
            peer: Some(peer.clone()),
            progress_token: report::progress_token(params.meta.as_ref()),
            log_level: Some(session.log_level()),
        },
        client_capabilities: None,
        identity: ext.get::<Identity>().cloned(),
        related_tasks: Vec::new(),
    };
    let ctx = ToolContext::direct(peer, cancel, scope);
    let (description, messages) = prompt
        .get(ctx, params.arguments.unwrap_or_default())
        .await?
        .ok_or_else(|| ServerError::Internal("The prompt asked for input in rounds".to_owned()))?;
    Ok(GetPromptResult {
        description,
        messages,
        meta: None,
        extra: JsonObject::new(),
    })
}

/// `completion/complete`.
pub(crate) async fn complete(
    state: &State,
    params: CompleteRequestParams,
) -> Result<CompleteResult, ServerError> {
    let target = match &params.r#ref {
        CompletionReference::Prompt(p) => Target::Prompt(&p.name),
        CompletionReference::ResourceTemplate(r) => Target::Template(&r.uri),
    };
    let input = CompletionInput {
        argument: params.argument.name.clone(),
        value: params.argument.value.clone(),
        context: params
            .context
            .as_ref()
            .and_then(|c| c.arguments.clone())
            .unwrap_or_default(),
    };
    let values = completion::complete(&state.catalog, target, input).await?;
    Ok(CompleteResult {
        completion: Completion {
            values: values.values,
            total: values.total.and_then(|t| i64::try_from(t).ok()),
            has_more: Some(values.has_more),
            extra: JsonObject::new(),
        },
        meta: None,
        extra: JsonObject::new(),
    })
}
