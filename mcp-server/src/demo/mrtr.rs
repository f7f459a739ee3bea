//! The conformance suite's input-required (MRTR, SEP-2322) tool fixtures: each asks the
//! client under the input keys the suite expects, so that a synchronous MCP 2026-07-28
//! call answers `input_required` until the client retries with the answers (carried, with
//! the answers of earlier rounds, in the sealed `requestState`). In a 2025-11-25 session
//! the same tools ask the client directly.
//!
//! | tool | asks |
//! |---|---|
//! | `test_input_required_result_elicitation` | `user_name` (elicitation), then greets |
//! | `test_input_required_result_sampling` | `capital_question` (sampling) |
//! | `test_input_required_result_list_roots` | `client_roots` (`roots/list`) |
//! | `test_input_required_result_request_state` | `confirm`; answers "state-ok" |
//! | `test_input_required_result_tampered_state` | `confirm` (a forged `requestState` is -32602) |
//! | `test_input_required_result_multiple_inputs` | `user_name`, `greeting`, `client_roots` at once |
//! | `test_input_required_result_multi_round` | `step1`, then in a second round `step2` |
//! | `test_input_required_result_capabilities` | only what the request's capabilities allow |

use mcp_tasks_protocol::v2026::CallToolResult;
use serde_json::{Value, json};

use super::questions::{answer_str, form, sampled_text, sampling};
use super::{NoArgs, text};
use crate::context::{ToolContext, ToolError};
use crate::tool::{TaskPolicy, ToolDef, ToolDefError};

fn name_form(message: &str) -> Result<mcp_tasks_protocol::v2026::ElicitRequestParams, ToolError> {
    form(
        message,
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    )
}

fn confirm_form() -> Result<mcp_tasks_protocol::v2026::ElicitRequestParams, ToolError> {
    form(
        "Please confirm",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    )
}

fn roots_text(roots: &mcp_tasks_protocol::types::ListRootsResult) -> String {
    let uris: Vec<String> = serde_json::to_value(roots)
        .ok()
        .and_then(|v| v.get("roots").and_then(Value::as_array).cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|r| r.get("uri").and_then(Value::as_str).map(str::to_owned))
        .collect();
    format!("Roots: [{}]", uris.join(", "))
}

fn mrtr<F, Fut>(name: &str, description: &str, run: F) -> Result<ToolDef, ToolDefError>
where
    F: Fn(ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
{
    Ok(ToolDef::new(
        name,
        TaskPolicy::Synchronous,
        move |ctx: ToolContext, _args: NoArgs| run(ctx),
    )?
    .description(description))
}

/// Every input-required fixture.
pub fn tools() -> Result<Vec<ToolDef>, ToolDefError> {
    Ok(vec![
        mrtr(
            "test_input_required_result_elicitation",
            "Asks your name (input key user_name), then greets you.",
            |ctx: ToolContext| async move {
                let answer = ctx
                    .elicit_keyed("user_name", name_form("What is your name?")?)
                    .await?;
                Ok(text(format!(
                    "Hello, {}!",
                    answer_str(&answer, "name").unwrap_or_else(|| "stranger".into())
                )))
            },
        )?,
        mrtr(
            "test_input_required_result_sampling",
            "Asks the client's model a question (input key capital_question).",
            |ctx: ToolContext| async move {
                let answer = ctx
                    .sample_keyed(
                        "capital_question",
                        sampling("What is the capital of France?", 100)?,
                    )
                    .await?;
                Ok(text(format!("The model said: {}", sampled_text(&answer))))
            },
        )?,
        mrtr(
            "test_input_required_result_list_roots",
            "Asks the client's roots (input key client_roots).",
            |ctx: ToolContext| async move {
                let roots = ctx.list_roots_keyed("client_roots").await?;
                Ok(text(roots_text(&roots)))
            },
        )?,
        mrtr(
            "test_input_required_result_request_state",
            "Asks for confirmation; the answer comes back through requestState.",
            |ctx: ToolContext| async move {
                let _ = ctx.elicit_keyed("confirm", confirm_form()?).await?;
                Ok(text(
                    "state-ok: the requestState was verified and the confirmation received",
                ))
            },
        )?,
        mrtr(
            "test_input_required_result_tampered_state",
            "Asks for confirmation; a tampered requestState is refused.",
            |ctx: ToolContext| async move {
                let _ = ctx.elicit_keyed("confirm", confirm_form()?).await?;
                Ok(text("state-ok"))
            },
        )?,
        mrtr(
            "test_input_required_result_multiple_inputs",
            "Asks a name, a sampled greeting and the roots at once.",
            |ctx: ToolContext| async move {
                let (name, greeting, roots) = tokio::join!(
                    async {
                        ctx.elicit_keyed("user_name", name_form("What is your name?")?)
                            .await
                    },
                    async {
                        ctx.sample_keyed("greeting", sampling("Generate a greeting", 50)?)
                            .await
                    },
                    ctx.list_roots_keyed("client_roots"),
                );
                let (name, greeting, roots) = (name?, greeting?, roots?);
                Ok(text(format!(
                    "{} {}! {}",
                    sampled_text(&greeting),
                    answer_str(&name, "name").unwrap_or_else(|| "stranger".into()),
                    roots_text(&roots)
                )))
            },
        )?,
        mrtr(
            "test_input_required_result_multi_round",
            "Asks in two rounds: step1 (a name), then step2 (a colour).",
            |ctx: ToolContext| async move {
                let name = ctx
                    .elicit_keyed("step1", name_form("Step 1: What is your name?")?)
                    .await?;
                let colour = ctx.elicit_keyed("step2", form(
                "Step 2: What is your favorite color?",
                json!({"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}),
            )?).await?;
                Ok(text(format!(
                    "{} likes {}",
                    answer_str(&name, "name").unwrap_or_else(|| "?".into()),
                    answer_str(&colour, "color").unwrap_or_else(|| "?".into())
                )))
            },
        )?,
        mrtr(
            "test_input_required_result_capabilities",
            "Asks only what the request's client capabilities allow.",
            |ctx: ToolContext| async move {
                let caps = ctx.client_capabilities().cloned().unwrap_or_default();
                let mut said = Vec::new();
                if caps.elicitation.is_some() {
                    let answer = ctx
                        .elicit_keyed("user_name", name_form("What is your name?")?)
                        .await?;
                    said.push(format!(
                        "name: {}",
                        answer_str(&answer, "name").unwrap_or_default()
                    ));
                }
                if caps.sampling.is_some() {
                    let answer = ctx
                        .sample_keyed(
                            "capital_question",
                            sampling("What is the capital of France?", 100)?,
                        )
                        .await?;
                    said.push(format!("model: {}", sampled_text(&answer)));
                }
                if caps.roots.is_some() {
                    said.push(roots_text(&ctx.list_roots_keyed("client_roots").await?));
                }
                if said.is_empty() {
                    said.push("the client declared no capability to ask with".to_owned());
                }
                Ok(text(said.join("; ")))
            },
        )?,
    ])
}
