//! Resources, prompts and completion in MCP 2025-11-25 sessions: the classic shapes (no
//! `cacheScope`/`ttlMs`), -32002 "Resource not found" with `data.uri`, and
//! `resources/subscribe` / `resources/unsubscribe` with `notifications/resources/updated`
//! on the session's standalone stream.
//!
//! **Invariant.** Only wire shapes and session bookkeeping here; what is offered and
//! read is `features/`'s.

use std::sync::Arc;

use jsonrpsee::Extensions;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::{Peer, RequestContext};
use mcp_tasks_protocol::v2025::{
    CompleteRequestParams, CompleteResult, Completion, CompletionReference, EmptyResult,
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceResult, ResourceRequestParams,
    ResourceUpdated, ResourceUpdatedNotificationParams,
};

use crate::auth::Identity;
use crate::context::{CallScope, ToolContext};
use crate::errors::ServerError;
use crate::features::completion::{self, CompletionInput, Target};
use crate::features::{Page, page, resources};
use crate::report::{self, Report};
use crate::session::McpSession;
use crate::session::subscriptions::SessionSubscriptions;
use crate::state::State;
use mcp_tasks::SessionChange;

fn paged<T>(
    state: &State,
    session: &McpSession,
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
    session: &McpSession,
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
    session: &McpSession,
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

/// The session records of a shared store (PostgreSQL, Redis), where subscriptions are
/// kept so that every instance knows them.
fn shared_sessions(state: &State) -> Option<&dyn mcp_tasks::SessionStore> {
    state.store.sessions().filter(|s| s.is_shared())
}

/// `resources/subscribe`: the session hears of `uri`'s changes until it unsubscribes or
/// ends. A URI no resource has is refused like a read of it.
pub(crate) async fn resources_subscribe(
    state: &State,
    served: &SessionSubscriptions,
    session: &Arc<McpSession>,
    params: ResourceRequestParams,
) -> Result<EmptyResult, ServerError> {
    if !state.catalog.knows(&params.uri) {
        return Err(ServerError::LegacyResourceNotFound(params.uri));
    }
    if let Some(sessions) = shared_sessions(state) {
        let change = SessionChange::Subscribe(params.uri.clone());
        sessions.change_session(&session.id, change).await?;
    }
    served.subscribe(&params.uri, session);
    Ok(EmptyResult::default())
}

/// `resources/unsubscribe` (of a URI not subscribed to: nothing to do).
pub(crate) async fn resources_unsubscribe(
    state: &State,
    served: &SessionSubscriptions,
    session: &McpSession,
    params: ResourceRequestParams,
) -> Result<EmptyResult, ServerError> {
    if let Some(sessions) = shared_sessions(state) {
        let change = SessionChange::Unsubscribe(params.uri.clone());
        sessions.change_session(&session.id, change).await?;
    }
    served.unsubscribe(&params.uri, session);
    Ok(EmptyResult::default())
}

/// The resource `uri` changed, as this instance saw it. On a shared store it is
/// announced through the store, and every instance (this one included, see
/// [`listen_for_resource_updates`]) notifies the sessions whose streams it holds; else
/// it is delivered here at once. An announcement the store refuses is delivered here.
pub(crate) async fn notify_resource_updated(
    state: &Arc<State>,
    served: &Arc<SessionSubscriptions>,
    uri: &str,
) {
    if let Some(sessions) = shared_sessions(state) {
        listen_for_resource_updates(state, served);
        match sessions.announce_resource_updated(uri).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(uri, error = %e, "resource update not announced to other instances")
            }
        }
    }
    deliver_resource_updated(state, served, uri).await;
}

/// On a shared store, starts (once per server) the task that hears the store's resource
/// announcements and delivers each here; it ends with the server.
pub(crate) fn listen_for_resource_updates(state: &Arc<State>, served: &Arc<SessionSubscriptions>) {
    let Some(sessions) = shared_sessions(state) else {
        return;
    };
    if !served.start_listening() {
        return;
    }
    let mut updates = sessions.resource_updates();
    let state = Arc::downgrade(state);
    let served = Arc::downgrade(served);
    let shutdown = state.upgrade().map(|s| s.shutdown_token());
    let Some(shutdown) = shutdown else { return };
    tokio::spawn(async move {
        loop {
            let uri = tokio::select! {
                () = shutdown.cancelled() => return,
                uri = updates.recv() => uri,
            };
            let (Some(state), Some(served)) = (state.upgrade(), served.upgrade()) else {
                return;
            };
            match uri {
                Ok(uri) => deliver_resource_updated(&state, &served, &uri).await,
                Err(mcp_tasks::EventError::Lagged(n)) => {
                    tracing::warn!(missed = n, "resource announcements missed")
                }
                Err(mcp_tasks::EventError::Closed) => return,
            }
        }
    });
}

/// Sends `notifications/resources/updated` for `uri` to every session served here that
/// is subscribed to it and has a standalone stream open, and feeds the 2026-07-28 listen
/// streams. On a shared store a session's record says whether it is subscribed (it may
/// have subscribed through another instance); a session without a record (stdio), or
/// whose record cannot be read now, goes by what this instance knows.
async fn deliver_resource_updated(state: &State, served: &SessionSubscriptions, uri: &str) {
    let subscribed = match shared_sessions(state) {
        None => {
            state.resource_feed.tell(uri);
            served.changed(uri)
        }
        Some(sessions) => {
            state.resource_feed.tell(uri);
            let mut subscribed = Vec::new();
            for session in served.held() {
                if session.standalone_peer().is_none() {
                    continue;
                }
                let wants = match sessions.session(&session.id).await {
                    Ok(Some(record)) => record.subscriptions.contains(uri),
                    Ok(None) => served.is_subscribed(uri, &session),
                    Err(e) => {
                        tracing::debug!(session = %session.tag, error = %e, "session record unreadable; going by this instance's subscriptions");
                        served.is_subscribed(uri, &session)
                    }
                };
                if wants {
                    subscribed.push(session);
                }
            }
            subscribed
        }
    };
    let params = ResourceUpdatedNotificationParams {
        uri: uri.to_owned(),
        meta: None,
        extra: JsonObject::new(),
    };
    for session in subscribed {
        let Some(peer) = session.standalone_peer() else {
            continue;
        };
        if let Err(e) = peer.notify::<ResourceUpdated>(&params).await {
            tracing::debug!(session = %session.tag, error = %e, "resource update not delivered");
        }
    }
}

/// `prompts/list`.
pub(crate) fn prompts_list(
    state: &State,
    session: &McpSession,
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
    session: &McpSession,
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
        client_capabilities: session.declared.clone(),
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
