//! Resources, prompts and completion on the MCP 2026-07-28 wire: list and read results
//! carry `cacheScope` and `ttlMs` (their constructors fill them), and a URI no resource
//! has is -32602 with `data.uri` (SEP-2164).
//!
//! **Invariant.** Only wire shapes here; what is offered and read is `features/`'s.

use jsonrpsee::Extensions;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::v2026::{
    CompleteReference, CompleteRequestParams, CompleteResult, GetPrompt, GetPromptRequestParams,
    GetPromptResult, InputRequiredOr, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResult,
};

use super::rounds;
use crate::cache::Cacheable;
use crate::context::ToolContext;
use crate::errors::ServerError;
use crate::features::completion::{self, CompletionInput, Target};
use crate::features::{page, resources};
use crate::revision::Caller;
use crate::state::State;

/// One page of `items`, its cursor sealed for this caller.
fn paged<T>(
    state: &State,
    items: Vec<T>,
    kind: &str,
    params: &PaginatedRequestParams,
    ext: &Extensions,
) -> Result<crate::features::Page<T>, ServerError> {
    let caller = Caller::from_extensions(ext);
    page(
        items,
        kind,
        params.cursor.as_deref(),
        &state.cursor_key,
        &caller.owner,
    )
}

/// `resources/list`.
pub(crate) fn resources_list(
    state: &State,
    params: &PaginatedRequestParams,
    ext: &Extensions,
) -> Result<ListResourcesResult, ServerError> {
    let all = state
        .catalog
        .resources
        .values()
        .map(|r| r.listing())
        .collect();
    let page = paged(state, all, "resources", params, ext)?;
    let mut result = ListResourcesResult::new(page.items);
    result.next_cursor = page.next_cursor;
    (result.cache_scope, result.ttl_ms) = state.cache_hints.members(Cacheable::Resources);
    Ok(result)
}

/// `resources/templates/list`.
pub(crate) fn resource_templates_list(
    state: &State,
    params: &PaginatedRequestParams,
    ext: &Extensions,
) -> Result<ListResourceTemplatesResult, ServerError> {
    let all = state
        .catalog
        .templates
        .iter()
        .map(|t| t.listing())
        .collect();
    let page = paged(state, all, "templates", params, ext)?;
    let mut result = ListResourceTemplatesResult::new(page.items);
    result.next_cursor = page.next_cursor;
    (result.cache_scope, result.ttl_ms) = state.cache_hints.members(Cacheable::ResourceTemplates);
    Ok(result)
}

/// `resources/read`: the contents, or -32602 with `data.uri` when no resource has the
/// URI (SEP-2164).
pub(crate) async fn resources_read(
    state: &State,
    params: ReadResourceRequestParams,
) -> Result<ReadResourceResult, ServerError> {
    let catalog = &state.catalog;
    match resources::read(&catalog.resources, &catalog.templates, &params.uri).await {
        Ok(Some(contents)) => {
            let mut result = ReadResourceResult::new(contents);
            (result.cache_scope, result.ttl_ms) =
                state.cache_hints.members(Cacheable::ResourceRead);
            Ok(result)
        }
        Ok(None) => Err(ServerError::ResourceNotFound(params.uri)),
        Err(message) => Err(ServerError::Internal(message)),
    }
}

/// `prompts/list`.
pub(crate) fn prompts_list(
    state: &State,
    params: &PaginatedRequestParams,
    ext: &Extensions,
) -> Result<ListPromptsResult, ServerError> {
    let all = state
        .catalog
        .prompts
        .values()
        .map(|p| p.listing())
        .collect();
    let page = paged(state, all, "prompts", params, ext)?;
    let mut result = ListPromptsResult::new(page.items);
    result.next_cursor = page.next_cursor;
    (result.cache_scope, result.ttl_ms) = state.cache_hints.members(Cacheable::Prompts);
    Ok(result)
}

/// `prompts/get`: -32602 for an unknown prompt or a missing required argument;
/// `input_required` while a prompt made with a context asks the client (SEP-2322).
pub(crate) async fn prompts_get(
    state: &State,
    mut params: GetPromptRequestParams,
    ext: &Extensions,
) -> Result<InputRequiredOr<GetPromptResult>, ServerError> {
    let prompt = state
        .catalog
        .prompt(&params.name)
        .ok_or_else(|| ServerError::UnknownPrompt(params.name.clone()))?;
    let caller = Caller::from_extensions(ext);
    let target = rounds::Target {
        method: GetPrompt::METHOD,
        name: prompt.name(),
    };
    let answers = rounds::answers(
        &state.cursor_key,
        &caller.owner,
        target,
        params.request_state.as_deref(),
        params.input_responses.as_ref(),
    )?;
    let (cancel, scope) = rounds::request_scope(ext, &mut params.meta, &caller);
    let ctx = ToolContext::rounds(answers.clone(), cancel, scope);
    match prompt
        .get(ctx.clone(), params.arguments.unwrap_or_default())
        .await?
    {
        Some((description, messages)) => {
            let mut result = GetPromptResult::new(messages);
            result.description = description;
            Ok(InputRequiredOr::Complete(result))
        }
        None => rounds::input_required(&state.cursor_key, &caller.owner, target, &ctx, answers)
            .map(InputRequiredOr::InputRequired),
    }
}

/// `completion/complete`.
pub(crate) async fn complete(
    state: &State,
    params: CompleteRequestParams,
) -> Result<CompleteResult, ServerError> {
    let target = match &params.r#ref {
        CompleteReference::Prompt(p) => Target::Prompt(&p.name),
        CompleteReference::ResourceTemplate(r) => Target::Template(&r.uri),
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
    let mut result = CompleteResult::new(values.values);
    result.completion.total = values.total;
    result.completion.has_more = Some(values.has_more);
    Ok(result)
}
