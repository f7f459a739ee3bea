//! Our server against an independent client: rmcp 3.11's client (crates.io `rmcp`,
//! feature `client`) over an in-process byte stream, the path stdio serves
//! (`Connection::from_io`). It lists and reads resources, lists prompts and gets them,
//! one of them only after answering the elicitation the prompt asks first.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use mcp_tasks_protocol::engine::Connection;
use mcp_tests::features_fixture::{ASKING_PROMPT, BLOB_BASE64, BLOB_URI, TEXT_URI, fixture_server};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    GetPromptRequestParams, Implementation, ReadResourceRequestParams,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};

/// The bound of the whole conversation.
const BOUND: Duration = Duration::from_secs(30);

/// An rmcp client that answers every elicitation form with `{"topic": "tides"}`.
#[derive(Clone)]
struct Answering;

impl ClientHandler for Answering {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).unwrap();
        assert_eq!(asked["message"], "Which topic?", "{asked}");
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "topic": "tides" })))
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({ "elicitation": { "form": {} } })).unwrap();
        ClientConfig::new(capabilities, Implementation::new("rmcp-interop", "0"))
    }
}

fn as_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

#[tokio::test]
async fn an_rmcp_client_reads_resources_and_gets_prompts() {
    tokio::time::timeout(BOUND, conversation())
        .await
        .expect("the conversation ends in time");
}

async fn conversation() {
    let server = fixture_server();
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let (connection, _io) = Connection::from_io(read, write, 1 << 20);
    let _served = server.serve_connection(connection);
    let client = Answering.serve(theirs).await.expect("rmcp initializes");

    let listed = client.list_all_resources().await.expect("resources/list");
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    assert!(
        uris.contains(&TEXT_URI) && uris.contains(&BLOB_URI),
        "{uris:?}"
    );

    let text = client
        .read_resource(ReadResourceRequestParams::new(TEXT_URI))
        .await
        .expect("resources/read (text)");
    assert_eq!(
        as_json(&text)["contents"][0]["text"],
        "Hello, resources!",
        "{}",
        as_json(&text)
    );
    let blob = client
        .read_resource(ReadResourceRequestParams::new(BLOB_URI))
        .await
        .expect("resources/read (blob)");
    assert_eq!(as_json(&blob)["contents"][0]["blob"], BLOB_BASE64);
    let missing = client
        .read_resource(ReadResourceRequestParams::new("test://nope"))
        .await;
    assert!(missing.is_err(), "an unknown URI is an error: {missing:?}");

    let prompts = client.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"code_review"), "{names:?}");

    let arguments = json!({ "code": "fn main() {}", "language": "rust" });
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let review = client
        .get_prompt(GetPromptRequestParams::new("code_review").with_arguments(arguments))
        .await
        .expect("prompts/get");
    let review = as_json(&review);
    assert_eq!(
        review["messages"][0]["content"]["text"], "Review this rust: fn main() {}",
        "{review}"
    );
    assert_eq!(review["messages"].as_array().unwrap().len(), 4, "{review}");

    // The prompt asks the user first: rmcp answers through its handler.
    let briefing = client
        .get_prompt(GetPromptRequestParams::new(ASKING_PROMPT))
        .await
        .expect("prompts/get after the elicitation");
    assert_eq!(
        as_json(&briefing)["messages"][0]["content"]["text"],
        "Brief me on tides"
    );
    client.cancel().await.expect("rmcp closes");
}
