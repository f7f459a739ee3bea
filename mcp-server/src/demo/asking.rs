//! Demo tools that ask the client, as a task or synchronously (both optional): in an MCP
//! 2025-11-25 session whose client hosts tasks (`capabilities.tasks.requests`), their
//! question goes out as a task of the client, followed to its answer.
//!
//! | tool | policy | behaviour |
//! |---|---|---|
//! | `ask_name` | optional | asks the user's name (elicitation), then greets it |
//! | `ask_model` | optional | asks the client's model (sampling) `prompt`, then returns its text |

use schemars::JsonSchema;
use serde::Deserialize;

use super::questions::{ask_name, sampled_text, sampling};
use super::{NoArgs, text};
use crate::context::ToolContext;
use crate::tool::{TaskPolicy, ToolDef, ToolDefError};

/// Arguments of `ask_model`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AskModelArgs {
    /// The prompt for the client's model.
    pub prompt: String,
}

/// `ask_name` and `ask_model`.
pub fn tools() -> Result<Vec<ToolDef>, ToolDefError> {
    Ok(vec![
        ToolDef::new(
            "ask_name",
            TaskPolicy::Optional,
            |ctx: ToolContext, _args: NoArgs| async move {
                Ok(text(format!("Hello, {}!", ask_name(&ctx).await?)))
            },
        )?
        .description("Asks your name (elicitation), then greets you."),
        ToolDef::new(
            "ask_model",
            TaskPolicy::Optional,
            |ctx: ToolContext, args: AskModelArgs| async move {
                let answer = ctx.sample(sampling(&args.prompt, 100)?).await?;
                Ok(text(format!("LLM response: {}", sampled_text(&answer))))
            },
        )?
        .description("Asks the client's model (sampling), then returns its answer."),
    ])
}
