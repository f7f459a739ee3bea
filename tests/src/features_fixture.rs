//! The fixture of `server_resources_prompts`: a server with static resources (text,
//! binary, and enough fillers for two list pages), a URI template with a typed reader
//! and a completed variable, and three prompts (one with arguments and a completed one,
//! one that asks the user for a topic first: [`ASKING_PROMPT`]), plus a raw JSON-RPC
//! client for the in-process connection.

use mcp_tasks_protocol::engine::{FrameReceiver, FrameSender};
use mcp_tasks_protocol::types::{
    AudioContent, ContentBlock, EmbeddedResource, ImageContent, PromptMessage, Role,
    TextResourceContents,
};
use mcp_tasks_server::{
    CompletionInput, CompletionValues, FEATURE_PAGE, PromptDef, PromptError, ResourceData,
    ResourceDef, ResourceError, ResourceTemplateDef, Server, ToolContext,
};
use serde_json::{Value, json};

use crate::server_harness::{WAIT, request};

/// A static text resource.
pub const TEXT_URI: &str = "test://static-text";
/// A static binary resource.
pub const BLOB_URI: &str = "test://static-binary";
/// Its bytes.
pub const BLOB: [u8; 4] = [0, 1, 2, 255];
/// Its bytes in base64.
pub const BLOB_BASE64: &str = "AAEC/w==";
/// The resource template.
pub const TEMPLATE: &str = "test://users/{id}/profile";
/// The prompt that asks the user (elicitation, input key [`ASKING_KEY`]) for a `topic`
/// before it expands into "Brief me on TOPIC".
pub const ASKING_PROMPT: &str = "briefing";
/// The input key it asks under.
pub const ASKING_KEY: &str = "topic_question";
/// Filler resources, so that `resources/list` has a second page.
pub const FILLERS: usize = FEATURE_PAGE + 5;

#[derive(serde::Deserialize)]
struct UserVars {
    id: String,
}

/// The arguments of `code_review`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ReviewArgs {
    /// The code to review.
    code: String,
    /// The language it is written in.
    language: Option<String>,
}

/// The server with every fixture.
pub fn fixture_server() -> Server {
    let mut builder = Server::builder("features-test", "0")
        .resource(
            ResourceDef::new(TEXT_URI, "static_text", || async {
                Ok(ResourceData::text("Hello, resources!"))
            })
            .title("Static text")
            .description("A fixed text resource")
            .mime_type("text/plain"),
        )
        .resource(
            ResourceDef::new(BLOB_URI, "static_binary", || async {
                Ok(ResourceData::blob(BLOB))
            })
            .mime_type("image/png"),
        );
    for i in 0..FILLERS {
        builder = builder.resource(ResourceDef::new(
            format!("test://filler/{i}"),
            format!("filler_{i}"),
            move || async move { Ok(ResourceData::text(format!("filler {i}"))) },
        ));
    }
    let users =
        ResourceTemplateDef::new(TEMPLATE, "user_profile", |uri, vars: UserVars| async move {
            if vars.id == "ghost" {
                return Err(ResourceError::NotFound);
            }
            Ok(ResourceData::text(
                json!({ "uri": uri, "id": vars.id }).to_string(),
            ))
        })
        .expect("a valid template")
        .mime_type("application/json")
        .complete("id", |input: CompletionInput| async move {
            CompletionValues::matching(["alice", "albert", "bob"], &input.value)
        })
        .expect("id is a variable");
    let simple = PromptDef::new("simple_prompt", |(): ()| async {
        Ok(vec![PromptMessage::new(
            Role::User,
            ContentBlock::text("A simple prompt"),
        )])
    })
    .description("No arguments");
    let review = PromptDef::new("code_review", |args: ReviewArgs| async move {
        if args.code.is_empty() {
            return Err(PromptError::InvalidArguments("code is empty".into()));
        }
        let language = args.language.unwrap_or_else(|| "unknown".into());
        Ok(vec![
            PromptMessage::new(
                Role::User,
                ContentBlock::text(format!("Review this {language}: {}", args.code)),
            ),
            PromptMessage::new(Role::User, ImageContent::new(BLOB_BASE64, "image/png")),
            PromptMessage::new(Role::User, AudioContent::new(BLOB_BASE64, "audio/wav")),
            PromptMessage::new(
                Role::Assistant,
                EmbeddedResource::new(TextResourceContents::new(TEXT_URI, "Hello, resources!")),
            ),
        ])
    })
    .title("Code review")
    .description("Reviews code")
    .complete("language", |input: CompletionInput| async move {
        CompletionValues::matching(["python", "perl", "rust"], &input.value)
    })
    .expect("language is an argument");
    let asking = PromptDef::with_context(ASKING_PROMPT, |ctx: ToolContext, (): ()| async move {
        let question = serde_json::from_value(json!({
            "mode": "form",
            "message": "Which topic?",
            "requestedSchema": {
                "type": "object",
                "properties": { "topic": { "type": "string" } },
                "required": ["topic"],
            },
        }))
        .map_err(|e| PromptError::Failed(e.to_string()))?;
        let answer = ctx.elicit_keyed(ASKING_KEY, question).await?;
        let topic = answer
            .content
            .as_ref()
            .and_then(|c| serde_json::to_value(c).ok())
            .and_then(|c| c["topic"].as_str().map(str::to_owned))
            .ok_or_else(|| PromptError::InvalidArguments("no topic given".into()))?;
        Ok(vec![PromptMessage::new(
            Role::User,
            ContentBlock::text(format!("Brief me on {topic}")),
        )])
    })
    .description("Asks for a topic first");
    builder
        .resource_template(users)
        .prompt(simple)
        .prompt(review)
        .prompt(asking)
        .build()
}

/// The URIs a `resources/list` result lists.
pub fn uris(result: &Value) -> Vec<String> {
    result["resources"]
        .as_array()
        .expect("a resources array")
        .iter()
        .map(|r| r["uri"].as_str().expect("a string uri").to_owned())
        .collect()
}

/// The client's end of an in-process connection, speaking raw JSON-RPC frames.
#[derive(Debug)]
pub struct Raw {
    /// Frames to the server.
    pub sender: FrameSender,
    /// Frames from the server.
    pub receiver: FrameReceiver,
    /// The last request id used.
    pub next_id: i64,
    /// Notifications read while waiting for a response.
    pub notifications: Vec<Value>,
}

impl Raw {
    /// Sends a request and returns its response (notifications meanwhile are kept).
    pub async fn rpc(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.sender
            .send(request(id, method, params).to_string())
            .await
            .expect("connection open");
        loop {
            let message = self.next().await;
            if message["id"] == id {
                return message;
            }
            if message.get("method").is_some() && message.get("id").is_none() {
                self.notifications.push(message);
            }
        }
    }

    /// The next message from the server.
    pub async fn next(&mut self) -> Value {
        let frame = tokio::time::timeout(WAIT, self.receiver.recv())
            .await
            .expect("a frame in time")
            .expect("connection open")
            .expect("a well-formed frame");
        serde_json::from_str(&frame).expect("the server sends JSON")
    }
}
