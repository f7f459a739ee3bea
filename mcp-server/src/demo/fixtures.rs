//! The official conformance suite's tool fixtures (besides the task tools of
//! [`super::tools`]), with the names, arguments and results its server scenarios expect.
//!
//! | tool | behaviour |
//! |---|---|
//! | `test_simple_text`, `test_image_content`, `test_audio_content`, `test_embedded_resource`, `test_multiple_content_types` | fixed content of each kind |
//! | `test_error_handling` | a result with `isError: true` |
//! | `test_tool_with_progress` | progress 0, 50, 100 of 100, about 50 ms apart |
//! | `test_tool_with_logging`, `test_logging_tool` | three `info` log messages, about 50 ms apart |
//! | `test_sampling` `{prompt}`, `test_elicitation` `{message}` | asks the client, reports the answer |
//! | `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums` | elicitation forms with defaults / every enum kind |
//! | `test_missing_capability` | needs `sampling`: -32021 when the request did not declare it |
//! | `test_streaming_elicitation` | asks for confirmation (an `input_required` result in 2026-07-28) |
//! | `json_schema_2020_12_tool` | a JSON Schema 2020-12 input schema, kept as written |
//! | `test_param_headers` `{region, query, limit?, verbose?}` | mirrors `region`, `limit`, `verbose` into `Mcp-Param-*` headers (SEP-2243) |
//!
//! The `test_input_required_result_*` tools are in `mrtr.rs`.

use std::time::Duration;

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::types::LoggingLevel;
use mcp_tasks_protocol::v2026::CallToolResult;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::questions::{form, sampled_text, sampling};
use super::{NoArgs, text};
use crate::context::{ToolContext, ToolError};
use crate::tool::{TaskPolicy, ToolDef, ToolDefError};

/// A 1x1 red pixel, PNG, in base64.
pub const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// An empty 8 kHz mono WAV file, in base64.
pub const WAV_BASE64: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// A result written as its wire JSON (`resultType` may be left out: it is `complete`).
pub(super) fn result(mut value: Value) -> Result<CallToolResult, ToolError> {
    if let Value::Object(map) = &mut value {
        map.entry("resultType").or_insert_with(|| json!("complete"));
    }
    serde_json::from_value(value).map_err(|e| {
        ToolError::rpc(
            error_codes::INTERNAL_ERROR,
            format!("bad fixture result: {e}"),
        )
    })
}

/// Arguments of `test_sampling`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SamplingArgs {
    /// The prompt to send to the client's model.
    pub prompt: String,
}

/// Arguments of `test_elicitation`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ElicitationArgs {
    /// The message to show the user.
    pub message: String,
}

fn sync(
    name: &str,
    description: &str,
    handler: fn() -> Result<CallToolResult, ToolError>,
) -> Result<ToolDef, ToolDefError> {
    Ok(ToolDef::new(
        name,
        TaskPolicy::Synchronous,
        move |_ctx, _args: NoArgs| async move { handler() },
    )?
    .description(description))
}

async fn three_logs(ctx: ToolContext) -> Result<CallToolResult, ToolError> {
    for (i, message) in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.log(LoggingLevel::Info, message).await;
    }
    Ok(text("Tool with logging executed successfully"))
}

/// The content fixtures: fixed results, an error, progress and logging.
fn content_tools() -> Result<Vec<ToolDef>, ToolDefError> {
    Ok(vec![
        sync("test_simple_text", "Returns simple text.", || {
            Ok(text("This is a simple text response for testing."))
        })?,
        sync(
            "test_image_content",
            "Returns an image (a 1x1 red PNG).",
            || {
                result(
                    json!({"content": [{"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}]}),
                )
            },
        )?,
        sync(
            "test_audio_content",
            "Returns audio (an empty WAV).",
            || {
                result(
                    json!({"content": [{"type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav"}]}),
                )
            },
        )?,
        sync(
            "test_embedded_resource",
            "Returns an embedded resource.",
            || {
                result(json!({"content": [{"type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain",
                "text": "This is an embedded resource content."}}]}))
            },
        )?,
        sync(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
            || {
                result(json!({"content": [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                    "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}]}))
            },
        )?,
        sync(
            "test_error_handling",
            "Always fails (a result with isError).",
            || {
                Ok(CallToolResult::error(
                    "This tool intentionally returns an error for testing",
                ))
            },
        )?,
        ToolDef::new(
            "test_tool_with_progress",
            TaskPolicy::Synchronous,
            |ctx: ToolContext, _args: NoArgs| async move {
                for (i, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.progress(done, Some(100.0), None).await;
                }
                Ok(text("Progress test completed"))
            },
        )?
        .description(
            "Reports progress 0, 50 and 100 of 100 when the request carries a progress token.",
        ),
        ToolDef::new(
            "test_tool_with_logging",
            TaskPolicy::Synchronous,
            |ctx: ToolContext, _args: NoArgs| three_logs(ctx),
        )?
        .description("Sends three info log messages while it runs."),
        ToolDef::new(
            "test_logging_tool",
            TaskPolicy::Synchronous,
            |ctx: ToolContext, _args: NoArgs| three_logs(ctx),
        )?
        .description("Sends three info log messages, to callers that asked for them."),
    ])
}

fn sep1034_schema() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true}}})
}

fn sep1330_schema() -> Value {
    json!({"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [
            {"const": "value1", "title": "First Choice"},
            {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"}]}}}})
}

fn elicited(answer: &mcp_tasks_protocol::types::ElicitResult) -> String {
    let action = serde_json::to_value(answer.action).unwrap_or(Value::Null);
    let content = serde_json::to_value(&answer.content).unwrap_or(Value::Null);
    format!(
        "Elicitation completed: action={}, content={content}",
        action.as_str().unwrap_or("?")
    )
}

fn json_schema_2020_12() -> JsonObject {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"}, "email": {"type": "string"}},
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The fixtures that ask the client (sampling, elicitation), need a capability, or
/// keep a JSON Schema 2020-12 input schema.
fn asking_tools() -> Result<Vec<ToolDef>, ToolDefError> {
    Ok(vec![
        ToolDef::new("test_sampling", TaskPolicy::Synchronous, |ctx: ToolContext, args: SamplingArgs| async move {
            let answer = ctx.sample(sampling(&args.prompt, 100)?).await?;
            Ok(text(format!("LLM response: {}", sampled_text(&answer))))
        })?
        .description("Asks the client's model to answer `prompt`."),
        ToolDef::new("test_elicitation", TaskPolicy::Synchronous, |ctx: ToolContext, args: ElicitationArgs| async move {
            let schema = json!({"type": "object", "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"}},
                "required": ["username", "email"]});
            let answer = ctx.elicit(form(&args.message, schema)?).await?;
            let content = serde_json::to_value(&answer.content).unwrap_or(Value::Null);
            let action = serde_json::to_value(answer.action).unwrap_or(Value::Null);
            Ok(text(format!("User response: action={}, content={content}", action.as_str().unwrap_or("?"))))
        })?
        .description("Asks the user for a name and an email address, showing `message`."),
        ToolDef::new("test_elicitation_sep1034_defaults", TaskPolicy::Synchronous, |ctx: ToolContext, _args: NoArgs| async move {
            let answer = ctx.elicit(form("Please review your profile (defaults filled in)", sep1034_schema())?).await?;
            Ok(text(elicited(&answer)))
        })?
        .description("Elicitation whose fields have default values (SEP-1034)."),
        ToolDef::new("test_elicitation_sep1330_enums", TaskPolicy::Synchronous, |ctx: ToolContext, _args: NoArgs| async move {
            let answer = ctx.elicit(form("Please choose options", sep1330_schema())?).await?;
            Ok(text(elicited(&answer)))
        })?
        .description("Elicitation with every kind of enum field (SEP-1330)."),
        ToolDef::new("test_missing_capability", TaskPolicy::Synchronous, |ctx: ToolContext, _args: NoArgs| async move {
            if ctx.client_capabilities().is_some_and(|c| c.sampling.is_none()) {
                return Err(ToolError::missing_capability("sampling"));
            }
            let answer = ctx.sample(sampling("Say hello", 50)?).await?;
            Ok(text(format!("Sampled: {}", sampled_text(&answer))))
        })?
        .description("Needs the client's sampling capability: -32021 when the request does not declare it."),
        ToolDef::new("test_streaming_elicitation", TaskPolicy::Synchronous, |ctx: ToolContext, _args: NoArgs| async move {
            let schema = json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]});
            let answer = ctx.elicit_keyed("confirmation", form("Continue?", schema)?).await?;
            Ok(text(elicited(&answer)))
        })?
        .description("Asks for confirmation while it runs (an input_required result in MCP 2026-07-28)."),
        ToolDef::new("json_schema_2020_12_tool", TaskPolicy::Synchronous, |_ctx, args: JsonObject| async move {
            Ok(text(format!("Received: {}", Value::Object(args))))
        })?
        .input_schema(json_schema_2020_12())?
        .description("Tool with JSON Schema 2020-12 features"),
    ])
}

/// Arguments of `test_param_headers`: three of them travel in headers too.
#[derive(Debug, Deserialize, JsonSchema)]
struct ParamHeaderArgs {
    /// Where to run (header `Mcp-Param-Region`).
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    /// What to run.
    query: String,
    /// How many rows at most (header `Mcp-Param-Limit`).
    #[schemars(extend("x-mcp-header" = "Limit"))]
    limit: Option<i64>,
    /// Whether to explain (header `Mcp-Param-Verbose`).
    #[schemars(extend("x-mcp-header" = "Verbose"))]
    verbose: Option<bool>,
}

fn param_header_tool() -> Result<ToolDef, ToolDefError> {
    Ok(ToolDef::new(
        "test_param_headers",
        TaskPolicy::Synchronous,
        |_ctx, args: ParamHeaderArgs| async move {
            Ok(text(format!(
                "region={} query={} limit={:?} verbose={:?}",
                args.region, args.query, args.limit, args.verbose
            )))
        },
    )?
    .description(
        "Echoes its arguments; region, limit and verbose are mirrored into Mcp-Param-* headers.",
    ))
}

/// Every conformance fixture tool: content, progress, logging, asking, and the
/// input-required (MRTR) fixtures.
pub fn tools() -> Result<Vec<ToolDef>, ToolDefError> {
    let mut all = content_tools()?;
    all.push(param_header_tool()?);
    all.extend(asking_tools()?);
    all.extend(super::mrtr::tools()?);
    Ok(all)
}
