//! The conformance suite's resource, prompt and completion fixtures.
//!
//! | kind | name | content |
//! |---|---|---|
//! | resource | `test://static-text` | fixed text (`text/plain`) |
//! | resource | `test://static-binary` | a 1x1 red PNG (`image/png`) |
//! | resource | `test://watched-resource` | text; the one `resources-subscribe` subscribes to |
//! | template | `test://template/{id}/data` | JSON naming the id |
//! | prompt | `test_simple_prompt` | one user message |
//! | prompt | `test_prompt_with_arguments` `{arg1, arg2}` | both arguments in the text; both completed |
//! | prompt | `test_prompt_with_embedded_resource` `{resourceUri}` | an embedded resource, then text |
//! | prompt | `test_prompt_with_image` | an image, then text |
//! | prompt | `test_input_required_result_prompt` | asks `user_context` (elicitation) first |

use base64::Engine;
use mcp_tasks_protocol::types::{
    ContentBlock, EmbeddedResource, ImageContent, PromptMessage, Role, TextResourceContents,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::fixtures::PNG_BASE64;
use super::questions::{answer_str, form};
use crate::context::ToolContext;
use crate::features::{
    CompletionInput, CompletionValues, FeatureDefError, PromptDef, ResourceData, ResourceDef,
    ResourceTemplateDef,
};
use crate::server::ServerBuilder;

/// The text of `test://static-text`.
pub const STATIC_TEXT: &str = "This is the content of the static text resource.";

#[derive(Deserialize)]
struct TemplateVars {
    id: String,
}

/// The arguments of `test_prompt_with_arguments`.
#[derive(Deserialize, JsonSchema)]
struct TwoArgs {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

/// The arguments of `test_prompt_with_embedded_resource`.
#[derive(Deserialize, JsonSchema)]
struct EmbedArgs {
    /// URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

fn png() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(PNG_BASE64)
        .unwrap_or_default()
}

fn resources(builder: ServerBuilder) -> Result<ServerBuilder, FeatureDefError> {
    let template = ResourceTemplateDef::new(
        "test://template/{id}/data",
        "template_data",
        |_uri, vars: TemplateVars| async move {
            let body = json!({"id": vars.id, "templateTest": true, "data": format!("Data for ID: {}", vars.id)});
            Ok(ResourceData::text(body.to_string()))
        },
    )?
    .description("Data for any id, read through a template")
    .mime_type("application/json")
    .complete("id", |input: CompletionInput| async move {
        CompletionValues::matching(["123", "456", "789"], &input.value)
    })?;
    Ok(builder
        .resource(
            ResourceDef::new("test://static-text", "static_text", || async {
                Ok(ResourceData::text(STATIC_TEXT))
            })
            .description("A static text resource")
            .mime_type("text/plain"),
        )
        .resource(
            ResourceDef::new("test://static-binary", "static_binary", || async {
                Ok(ResourceData::blob(png()))
            })
            .description("A static binary resource (a 1x1 red PNG)")
            .mime_type("image/png"),
        )
        .resource(
            ResourceDef::new("test://watched-resource", "watched_resource", || async {
                Ok(ResourceData::text("Watched resource content"))
            })
            .description("A resource clients may subscribe to")
            .mime_type("text/plain"),
        )
        .resource_template(template))
}

fn prompts(builder: ServerBuilder) -> Result<ServerBuilder, FeatureDefError> {
    let simple = PromptDef::new("test_simple_prompt", |(): ()| async {
        Ok(vec![PromptMessage::new(
            Role::User,
            ContentBlock::text("This is a simple prompt for testing."),
        )])
    })
    .description("A simple prompt without arguments");
    let with_args = PromptDef::new("test_prompt_with_arguments", |args: TwoArgs| async move {
        Ok(vec![PromptMessage::new(
            Role::User,
            ContentBlock::text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                args.arg1, args.arg2
            )),
        )])
    })
    .description("A prompt with two required arguments")
    .complete("arg1", |input: CompletionInput| async move {
        CompletionValues::matching(["test", "testing", "tested", "value"], &input.value)
    })?
    .complete("arg2", |input: CompletionInput| async move {
        CompletionValues::matching(["alpha", "beta", "gamma"], &input.value)
    })?;
    let embedded = PromptDef::new(
        "test_prompt_with_embedded_resource",
        |args: EmbedArgs| async move {
            let mut contents = TextResourceContents::new(
                args.resource_uri,
                "Embedded resource content for testing.",
            );
            contents.mime_type = Some("text/plain".to_owned());
            Ok(vec![
                PromptMessage::new(Role::User, EmbeddedResource::new(contents)),
                PromptMessage::new(
                    Role::User,
                    ContentBlock::text("Please process the embedded resource above."),
                ),
            ])
        },
    )
    .description("A prompt that embeds the resource resourceUri");
    let image = PromptDef::new("test_prompt_with_image", |(): ()| async {
        Ok(vec![
            PromptMessage::new(Role::User, ImageContent::new(PNG_BASE64, "image/png")),
            PromptMessage::new(
                Role::User,
                ContentBlock::text("Please analyze the image above."),
            ),
        ])
    })
    .description("A prompt with an image");
    let asking = PromptDef::with_context(
        "test_input_required_result_prompt",
        |ctx: ToolContext, (): ()| async move {
            let schema = json!({
                "type": "object",
                "properties": {"context": {"type": "string"}},
                "required": ["context"],
            });
            let answer = ctx
                .elicit_keyed(
                    "user_context",
                    form("What context should the prompt use?", schema)?,
                )
                .await?;
            let context = answer_str(&answer, "context").unwrap_or_else(|| "none given".into());
            Ok(vec![PromptMessage::new(
                Role::User,
                ContentBlock::text(format!("Write with this context in mind: {context}")),
            )])
        },
    )
    .description("Asks the user for context (input key user_context) before it expands");
    Ok(builder
        .prompt(simple)
        .prompt(with_args)
        .prompt(embedded)
        .prompt(image)
        .prompt(asking))
}

/// Adds every resource, template and prompt fixture (with their completions) to `builder`.
pub fn catalog(builder: ServerBuilder) -> Result<ServerBuilder, FeatureDefError> {
    prompts(resources(builder)?)
}
