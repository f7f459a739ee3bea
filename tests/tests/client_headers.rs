//! `ClientConfig::http_headers`: every HTTP request carries them, so a client reaches a
//! server that requires `Authorization: Bearer ...`; without them it is refused; a header
//! HTTP does not allow is refused when connecting.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_client::{ClientConfig, ClientError, ClientHandler, McpClient};
use mcp_server::auth::BearerTokens;
use mcp_server::http::HttpConfig;
use mcp_tests::server_harness::{TestServer, WAIT};
use serde_json::json;

#[derive(Debug)]
struct NoInput;

#[async_trait]
impl ClientHandler for NoInput {}

async fn guarded() -> TestServer {
    TestServer::start_http(HttpConfig {
        principal: Some(Arc::new(BearerTokens::new([(
            "alice".to_owned(),
            "s3cret-token".to_owned(),
        )]))),
        ..HttpConfig::default()
    })
    .await
}

fn with_headers(headers: &[(&str, &str)]) -> ClientConfig {
    ClientConfig {
        http_headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..ClientConfig::default()
    }
}

#[tokio::test]
async fn headers_reach_a_server_that_requires_a_token() {
    let s = guarded().await;
    let config = with_headers(&[("Authorization", "Bearer s3cret-token")]);
    let client = tokio::time::timeout(
        WAIT,
        McpClient::connect_http(&s.url, Arc::new(NoInput), config),
    )
    .await
    .expect("in time")
    .expect("connects with the token");
    let args = json!({ "name": "Ada" });
    let serde_json::Value::Object(args) = args else {
        unreachable!()
    };
    let result = client.call_tool("greet", args).await.expect("greet");
    let text = serde_json::to_value(&result.content[0]).expect("json")["text"].clone();
    assert_eq!(text, "Hello, Ada!");
}

#[tokio::test]
async fn without_the_token_the_client_is_refused() {
    let s = guarded().await;
    let refused = tokio::time::timeout(
        WAIT,
        McpClient::connect_http(&s.url, Arc::new(NoInput), ClientConfig::default()),
    )
    .await
    .expect("in time");
    // Said at once (not at the request timeout), with the server's status.
    match refused {
        Err(ClientError::Transport(why)) => assert!(why.contains("401"), "{why}"),
        other => panic!("expected a transport error, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn a_header_http_does_not_allow_is_refused_at_connect() {
    let s = guarded().await;
    let config = with_headers(&[("Authorization", "Bearer bad\nvalue")]);
    match McpClient::connect_http(&s.url, Arc::new(NoInput), config).await {
        Err(ClientError::Transport(why)) => {
            assert!(why.to_lowercase().contains("authorization"), "{why}")
        }
        other => panic!("expected a transport error, got {:?}", other.map(|_| ())),
    }
}
