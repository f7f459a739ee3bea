//! Multi-round requests (MRTR, SEP-2322) of MCP 2026-07-28: a synchronous request whose
//! handler needs client input answers `input_required`, and the client retries with the
//! answers and the sealed `requestState` this module issues.
//!
//! **Invariant.** A `requestState` opens only for the caller it was sealed for and only
//! on the request (method and name) it was issued for; it carries the answers of every
//! earlier round, so the server remembers nothing between rounds.

use mcp_tasks::Owner;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::v2026::{InputRequests, InputRequiredResult, InputResponses};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use jsonrpsee::Extensions;
use mcp_tasks_protocol::engine::{Peer, RequestContext};
use mcp_tasks_protocol::v2026::RequestMeta;
use tokio_util::sync::CancellationToken;

use mcp_tasks_protocol::tasks::CallToolReply;
use mcp_tasks_protocol::v2026::{CallToolResult, ResultType};

use crate::context::{CallScope, ToolContext, ToolError};
use crate::errors::{ServerError, call_error};
use crate::report::Report;
use crate::revision::Caller;
use crate::seal::SealKey;

/// What a sealed `requestState` starts with, so that no other sealed token (a cursor)
/// opens as one.
const ROUND_STATE_PREFIX: &str = "rs1:";

/// The request a round belongs to: `tools/call` of a tool, `prompts/get` of a prompt.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub method: &'a str,
    pub name: &'a str,
}

/// The `requestState` of a synchronous request: the answers gathered so far.
#[derive(Debug, Serialize, Deserialize)]
struct RoundState {
    method: String,
    name: String,
    answers: JsonObject,
}

/// The cancellation token and the call scope of a synchronous 2026-07-28 request: where
/// its progress and logs go, the capabilities and identity it declared (taken from
/// `meta`, not copied: read them in the scope afterwards).
pub(crate) fn request_scope(
    ext: &Extensions,
    meta: &mut RequestMeta,
    caller: &Caller,
) -> (CancellationToken, CallScope) {
    let cancel = RequestContext::from_extensions(ext)
        .map(|c| c.cancel.clone())
        .unwrap_or_default();
    let scope = CallScope {
        report: Report {
            peer: ext.get::<Peer>().cloned(),
            progress_token: meta.progress_token.clone(),
            log_level: meta.log_level,
        },
        client_capabilities: Some(std::mem::take(&mut meta.client_capabilities)),
        identity: caller.identity.clone(),
        related_tasks: Vec::new(),
    };
    (cancel, scope)
}

/// The answers of every round so far: those sealed in `request_state` plus this retry's
/// `input_responses`. A state not issued to this caller for this request is -32602.
pub(crate) fn answers(
    key: &SealKey,
    owner: &Owner,
    target: Target<'_>,
    request_state: Option<&str>,
    input_responses: Option<&InputResponses>,
) -> Result<JsonObject, ServerError> {
    let mut answers = match request_state {
        None => JsonObject::new(),
        Some(state) => match key
            .open(owner, state)
            .as_deref()
            .and_then(|inner| inner.strip_prefix(ROUND_STATE_PREFIX))
            .map(serde_json::from_str::<RoundState>)
        {
            Some(Ok(s)) if s.method == target.method && s.name == target.name => s.answers,
            _ => {
                return Err(ServerError::InvalidParams(format!(
                    "Invalid params: requestState was not issued for this {}",
                    target.method
                )));
            }
        },
    };
    if let Some(responses) = input_responses {
        match serde_json::to_value(responses) {
            Ok(Value::Object(map)) => answers.extend(map),
            _ => {
                return Err(ServerError::InvalidParams(
                    "Invalid params: inputResponses".to_owned(),
                ));
            }
        }
    }
    Ok(answers)
}

/// The `input_required` answer: what the handler asked for in `ctx`, and the answers so
/// far sealed for this caller (they cannot be forged, nor replayed by another caller).
pub(crate) fn input_required(
    key: &SealKey,
    owner: &Owner,
    target: Target<'_>,
    ctx: &ToolContext,
    answers: JsonObject,
) -> Result<InputRequiredResult, ServerError> {
    let requests: InputRequests = ctx
        .wanted()
        .into_iter()
        .map(|(k, v)| serde_json::from_value(v).map(|r| (k, r)))
        .collect::<Result<_, _>>()
        .map_err(|e| ServerError::Internal(format!("cannot encode input requests: {e}")))?;
    let state = serde_json::to_string(&RoundState {
        method: target.method.to_owned(),
        name: target.name.to_owned(),
        answers,
    })
    .map_err(|e| ServerError::Internal(e.to_string()))?;
    let state = key.seal(owner, &format!("{ROUND_STATE_PREFIX}{state}"));
    Ok(InputRequiredResult::new(requests).with_request_state(state))
}

/// The answer of a synchronous `tools/call` round whose tool ended with `result`: the
/// result, `input_required` (what it asked for in `ctx`, with the answers so far), or
/// the error it failed with.
pub(crate) fn call_reply(
    key: &SealKey,
    owner: &Owner,
    target: Target<'_>,
    ctx: &ToolContext,
    answers: JsonObject,
    result: Result<CallToolResult, ToolError>,
) -> Result<CallToolReply, ServerError> {
    match result {
        Ok(mut result) => {
            result.result_type = ResultType::Complete;
            Ok(CallToolReply::Complete(result))
        }
        Err(ToolError::InputRequired) => {
            input_required(key, owner, target, ctx, answers).map(CallToolReply::InputRequired)
        }
        Err(e) => Err(call_error(e)),
    }
}
