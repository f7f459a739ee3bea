//! The demo server's tools: exactly the fixtures of the official conformance suite's
//! `tasks-*` scenarios, with the task policies they expect.
//!
//! | tool | policy | behaviour |
//! |---|---|---|
//! | `greet` | synchronous | "Hello, {name}!" |
//! | `slow_compute` | optional (a task when `seconds > 0`); at least once, 3 runs | sleeps `seconds` (a progress event each whole second), then reports |
//! | `build_log` | required | writes `steps` lines of text output as task events (`tasks/stream`), one every `interval_ms`, then reports |
//! | `failing_job` | required | after about 1 s, a result with `isError: true` |
//! | `protocol_error_job` | optional | fails with a JSON-RPC error |
//! | `confirm_delete` | optional | asks for confirmation (elicitation), then answers |
//! | `multi_input` | optional | asks two questions at once |
//! | `test_tool_with_task` | required | asks a name in an MRTR round, then greets it in a task |
//!
//! The other fixtures of the suite's server scenarios, for the conformance fixture server
//! (`examples/conformance.rs`): [`fixtures::tools`] (content, progress, logging, asking,
//! and the input-required fixtures of `mrtr.rs`) and [`catalog::catalog`] (resources,
//! templates, prompts, completion). [`asking::tools`]: `ask_name` and `ask_model`, which
//! ask the client (as a task of the client when it hosts them). The questions all of them
//! put to the client, and the reading of the answers, are in `questions.rs`.

pub mod asking;
pub mod catalog;
pub mod fixtures;
mod mrtr;
mod questions;

use std::time::Duration;

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::types::{ContentBlock, ElicitAction, TextContent};
use mcp_tasks_protocol::v2026::CallToolResult;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::context::{ToolContext, ToolError};
use crate::tool::{TaskPolicy, ToolDef, ToolDefError};
use mcp_tasks::Delivery;
use questions::{answer_bool, answer_str, ask_name, form};

/// The JSON object `value` is (an empty one for anything else).
fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// A tool result of one text block.
pub(crate) fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::new(vec![ContentBlock::Text(TextContent::new(t))])
}

/// Arguments of `greet`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GreetArgs {
    /// Who to greet.
    pub name: String,
}

/// Arguments of `slow_compute`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SlowComputeArgs {
    /// How long the computation takes, in seconds.
    pub seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    pub label: Option<String>,
}

/// Arguments of `build_log`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BuildLogArgs {
    /// How many lines of output to write (at most 10,000; 8 when absent).
    #[serde(default)]
    pub steps: Option<u32>,
    /// Milliseconds between two lines (at most 10,000; 250 when absent).
    #[serde(default)]
    pub interval_ms: Option<u64>,
}

/// The type of `slow_compute`'s progress events: `{"done", "total", "label"}` (seconds).
pub const PROGRESS_EVENT: &str = "rs.mcp-tasks.demo.progress";

/// Arguments of `maybe_slow`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MaybeSlowArgs {
    /// How long the work takes, in seconds.
    pub seconds: f64,
}

/// How long `maybe_slow` answers in its request before it becomes a task.
pub const MAYBE_SLOW_DEADLINE: Duration = Duration::from_secs(2);

/// Arguments of `confirm_delete`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConfirmDeleteArgs {
    /// The file to delete (nothing is deleted: this is a demo).
    pub filename: String,
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoArgs {}

/// Arguments of `test_tool_with_task` once its MRTR round has run.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NamedArgs {
    /// Filled in by the MRTR round.
    #[serde(default)]
    pub user_name: Option<String>,
}

/// Every demo tool.
pub fn tools() -> Result<Vec<ToolDef>, ToolDefError> {
    Ok(vec![
        ToolDef::new("greet", TaskPolicy::Synchronous, |_ctx, args: GreetArgs| async move {
            Ok(text(format!("Hello, {}!", args.name)))
        })?
        .description("Greets someone, at once."),
        ToolDef::new("slow_compute", TaskPolicy::Optional, |ctx: ToolContext, args: SlowComputeArgs| async move {
            let seconds = args.seconds.clamp(0.0, 3600.0);
            let label = args.label.unwrap_or_else(|| "computation".into());
            // A run after the first (its worker was lost) says which it is.
            let run = match ctx.attempt() {
                1 => String::new(),
                n => format!(" (attempt {n})"),
            };
            let _ = ctx.status(format!("{label}: working for {seconds} s{run}")).await;
            // A progress event after each whole second (none for a run under a second).
            let mut done = 0.0;
            while done < seconds {
                let step = (seconds - done).min(1.0);
                tokio::select! {
                    _ = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
                    _ = tokio::time::sleep(Duration::from_secs_f64(step)) => {}
                }
                done += step;
                if step == 1.0 {
                    let progress = json!({ "done": done, "total": seconds, "label": label });
                    ctx.emit(PROGRESS_EVENT, object(progress)).await?;
                }
            }
            Ok(text(format!("{label}: done after {seconds} s{run}")))
        })?
        .description("Sleeps `seconds`, then reports. Runs as a task when the client allows and seconds > 0; delivered at least once (a run whose worker is lost runs again elsewhere, 3 runs at most).")
        .delivery(Delivery::AtLeastOnce { max_attempts: 3 })
        .select_task(|args| args.get("seconds").and_then(Value::as_f64).is_some_and(|s| s > 0.0)),
        ToolDef::new("build_log", TaskPolicy::Required, |ctx: ToolContext, args: BuildLogArgs| async move {
            let steps = args.steps.unwrap_or(8).min(10_000);
            let interval = Duration::from_millis(args.interval_ms.unwrap_or(250).min(10_000));
            let _ = ctx.status(format!("building: {steps} steps")).await;
            for step in 1..=steps {
                tokio::select! {
                    _ = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
                    _ = tokio::time::sleep(interval) => {}
                }
                ctx.emit_text(format!("[{step}/{steps}] Compiling demo-unit-{step} ... ok")).await?;
            }
            Ok(text(format!("build finished: {steps} steps, 0 errors")))
        })?
        .description("Always a task: writes `steps` lines of build output as task events (read them live with tasks/stream), one every `interval_ms`, then reports."),
        ToolDef::new("maybe_slow", TaskPolicy::After(MAYBE_SLOW_DEADLINE), |ctx: ToolContext, args: MaybeSlowArgs| async move {
            let seconds = args.seconds.clamp(0.0, 3600.0);
            let _ = ctx.status(format!("working for {seconds} s")).await;
            tokio::select! {
                _ = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
                _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {}
            }
            let how = if ctx.is_task() { "as a task" } else { "in the request" };
            Ok(text(format!("done after {seconds} s, answered {how}")))
        })?
        .description("Works for `seconds`. Answers in the request when that takes at most 2 s; a client that declared tasks gets a task at 2 s otherwise (the work goes on as that task). Without tasks it answers in the request, however long it takes."),
        ToolDef::new("failing_job", TaskPolicy::Required, |_ctx, _args: NoArgs| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(CallToolResult::error("The job failed: the input could not be processed."))
        })?
        .description("Always a task; ends with a tool error (isError) after about a second."),
        ToolDef::new("protocol_error_job", TaskPolicy::Optional, |_ctx, _args: NoArgs| async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Err(ToolError::rpc(error_codes::INTERNAL_ERROR, "The job hit a protocol-level error"))
        })?
        .description("Ends with a JSON-RPC error (the task fails)."),
        ToolDef::new("confirm_delete", TaskPolicy::Optional, |ctx: ToolContext, args: ConfirmDeleteArgs| async move {
            let question = form(
                &format!("Delete {}?", args.filename),
                json!({"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Delete it?"}}, "required": ["confirm"]}),
            )?;
            let answer = ctx.elicit(question).await?;
            if answer.action == ElicitAction::Accept && answer_bool(&answer, "confirm") {
                Ok(text(format!("Deleted {} (not really: this is a demo).", args.filename)))
            } else {
                Ok(text(format!("Kept {}.", args.filename)))
            }
        })?
        .description("Asks for confirmation before deleting a file."),
        ToolDef::new("multi_input", TaskPolicy::Optional, |ctx: ToolContext, _args: NoArgs| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}});
            let answers = ctx.elicit_all(vec![form("First question", schema.clone())?, form("Second question", schema)?]).await?;
            let names: Vec<String> = answers.iter().map(|a| answer_str(a, "name").unwrap_or_else(|| "-".into())).collect();
            Ok(text(format!("Answers: {}", names.join(", "))))
        })?
        .description("Asks two questions at once."),
        ToolDef::new("test_tool_with_task", TaskPolicy::Required, |ctx: ToolContext, args: NamedArgs| async move {
            let _ = ctx.status("greeting").await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(text(format!("Hello, {}! (from a task)", args.user_name.unwrap_or_else(|| "stranger".into()))))
        })?
        .description("Asks your name before the task starts (MRTR), then greets you from a task.")
        .preflight(|ctx: ToolContext, mut args: JsonObject| async move {
            let name = ask_name(&ctx).await?;
            args.insert("user_name".into(), Value::String(name));
            Ok(args)
        }),
    ])
}
