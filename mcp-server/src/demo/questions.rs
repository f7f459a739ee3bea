//! The questions the demo's tools put to the client, and how they read the answers: an
//! elicitation form ([`form`], [`ask_name`]) read field by field ([`answer_str`],
//! [`answer_bool`]), and a one-message sampling request ([`sampling`]) read as its text
//! ([`sampled_text`]).
//!
//! **Invariant.** Only questions and answers live here, no tool: every file of the demo
//! may use this one, and it uses none of them.

use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::types::{ElicitResult, ElicitValue};
use mcp_tasks_protocol::v2026::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams, ElicitRequestParams,
};
use serde_json::{Value, json};

use crate::context::{ToolContext, ToolError};

/// An elicitation form: `message`, and the JSON Schema of the answer.
pub(super) fn form(message: &str, schema: Value) -> Result<ElicitRequestParams, ToolError> {
    let params = json!({ "mode": "form", "message": message, "requestedSchema": schema });
    serde_json::from_value::<ElicitRequestFormParams>(params)
        .map(ElicitRequestParams::Form)
        .map_err(|e| {
            ToolError::rpc(
                error_codes::INTERNAL_ERROR,
                format!("bad elicitation form: {e}"),
            )
        })
}

/// Asks the user's name (a required string field); "stranger" when none is given.
pub(super) async fn ask_name(ctx: &ToolContext) -> Result<String, ToolError> {
    let question = form(
        "What is your name?",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    )?;
    let answer = ctx.elicit(question).await?;
    Ok(answer_str(&answer, "name").unwrap_or_else(|| "stranger".into()))
}

/// The string the user gave for `field`, if any.
pub(super) fn answer_str(answer: &ElicitResult, field: &str) -> Option<String> {
    match answer.content.as_ref()?.get(field)? {
        ElicitValue::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// Whether the user set `field` to true.
pub(super) fn answer_bool(answer: &ElicitResult, field: &str) -> bool {
    matches!(
        answer.content.as_ref().and_then(|c| c.get(field)),
        Some(ElicitValue::Boolean(true))
    )
}

/// Sampling params written as their wire JSON.
pub(super) fn sampling(
    prompt: &str,
    max_tokens: u32,
) -> Result<CreateMessageRequestParams, ToolError> {
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens,
    });
    serde_json::from_value(params).map_err(|e| {
        ToolError::rpc(
            error_codes::INTERNAL_ERROR,
            format!("bad sampling request: {e}"),
        )
    })
}

/// The text of a sampling answer's content, if it is text.
pub(super) fn sampled_text(answer: &CreateMessageResult) -> String {
    serde_json::to_value(answer)
        .ok()
        .and_then(|v| {
            v.pointer("/content/text")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "(no text)".to_owned())
}
