//! `ClientConfig::http_headers`: every HTTP request carries them, so a client reaches a
//! server that requires `Authorization: Bearer ...`; without them it is refused; a header
//! HTTP does not allow is refused when connecting.
//!
//! And what the client itself puts on the wire of a 2026-07-28 `tools/call`, seen by a
//! scripted server on 127.0.0.1:0: the `Mcp-Param-*` headers of the arguments a tool's
//! `x-mcp-header` annotations name (encoded as SEP-2243 says), a tool whose annotations
//! are invalid left out of `list_tools`, and an MRTR round's `requestState` sent back
//! unchanged with the answers.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use mcp_tasks_client::{ClientConfig, ClientError, ClientHandler, McpClient, Revision};
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::types::{ElicitResult, ElicitValue};
use mcp_tasks_protocol::v2026::ElicitRequestParams;
use mcp_tasks_server::auth::BearerTokens;
use mcp_tasks_server::http::HttpConfig;
use mcp_tests::server_harness::{TestServer, WAIT};
use serde_json::{Value, json};

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

/// The `requestState` the scripted server hands out: not plain ASCII, with characters a
/// careless client might re-encode.
const REQUEST_STATE: &str = "st/ü+1==?&%2F";

/// What the scripted server saw of each `tools/call`: its headers and params.
#[derive(Debug, Default)]
struct Calls(Mutex<Vec<(HeaderMap, Value)>>);

impl Calls {
    fn all(&self) -> Vec<(HeaderMap, Value)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The tools it lists: `query` (two annotated parameters, one not), `plain` (none), and
/// two whose annotations break SEP-2243's rules.
fn listed_tools() -> Value {
    json!([
        {
            "name": "query",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": { "type": "string", "x-mcp-header": "Region" },
                    "limit": { "type": "integer", "x-mcp-header": "Limit" },
                    "note": { "type": "string" }
                },
                "required": ["region"]
            }
        },
        { "name": "plain", "inputSchema": { "type": "object" } },
        {
            "name": "twice",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "a": { "type": "string", "x-mcp-header": "Same" },
                    "b": { "type": "string", "x-mcp-header": "same" }
                }
            }
        },
        {
            "name": "on_an_object",
            "inputSchema": {
                "type": "object",
                "properties": { "o": { "type": "object", "x-mcp-header": "Obj" } }
            }
        }
    ])
}

/// A 2026-07-28 server scripted for these tests: `tools/call` answers `input_required`
/// (one elicitation, [`REQUEST_STATE`]) until a retry carries a `requestState`.
async fn scripted(State(calls): State<Arc<Calls>>, headers: HeaderMap, body: String) -> Response {
    let Ok(message) = serde_json::from_str::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if message.get("id").is_none() {
        return StatusCode::ACCEPTED.into_response();
    }
    let result = match message["method"].as_str().unwrap_or_default() {
        "server/discover" => json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "scripted", "version": "0" },
        }),
        "tools/list" => json!({ "resultType": "complete", "tools": listed_tools() }),
        "tools/call" => {
            let params = message["params"].clone();
            calls
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((headers, params.clone()));
            if params.get("requestState").is_none() {
                json!({
                    "resultType": "input_required",
                    "inputRequests": { "confirm": {
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": "Go on?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": { "ok": { "type": "boolean" } }
                            }
                        }
                    }},
                    "requestState": REQUEST_STATE,
                })
            } else {
                json!({
                    "resultType": "complete",
                    "content": [{ "type": "text", "text": "done" }],
                })
            }
        }
        _ => json!({ "resultType": "complete" }),
    };
    axum::Json(json!({ "jsonrpc": "2.0", "id": message["id"], "result": result })).into_response()
}

/// Says yes to every form.
#[derive(Debug)]
struct Yes;

#[async_trait]
impl ClientHandler for Yes {
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let mut content = indexmap::IndexMap::new();
        content.insert("ok".to_owned(), ElicitValue::Boolean(true));
        Ok(ElicitResult::accept(content))
    }
}

/// The scripted server on 127.0.0.1:0 and a 2026-07-28 client connected to it.
async fn scripted_session() -> (McpClient, Arc<Calls>, tokio::task::JoinHandle<()>) {
    let calls = Arc::new(Calls::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let app = axum::Router::new()
        .route("/mcp", axum::routing::post(scripted))
        .with_state(Arc::clone(&calls));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let config = ClientConfig {
        revision: Revision::V2026_07_28,
        ..ClientConfig::default()
    };
    let client = tokio::time::timeout(WAIT, McpClient::connect_http(&url, Arc::new(Yes), config))
        .await
        .expect("in time")
        .expect("connects");
    (client, calls, task)
}

/// Calls `tool` with `arguments` (an object); the text of the result's first block.
async fn call_text(client: &McpClient, tool: &str, arguments: Value) -> String {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object: {arguments}")
    };
    let result = tokio::time::timeout(WAIT, client.call_tool(tool, arguments))
        .await
        .expect("in time")
        .expect("the call completes");
    serde_json::to_value(&result.content[0]).expect("json")["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn annotated_arguments_go_in_mcp_param_headers_and_invalid_tools_are_left_out() {
    let (client, calls, task) = scripted_session().await;
    let listed = tokio::time::timeout(WAIT, client.list_tools())
        .await
        .expect("in time")
        .expect("lists");
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["query", "plain"], "the invalid ones are left out");

    let arguments = json!({ "region": "Ümeå", "limit": 42, "note": "not a header" });
    assert_eq!(call_text(&client, "query", arguments).await, "done");
    let seen = calls.all();
    assert_eq!(seen.len(), 2, "the call and its retry");
    for (headers, _) in &seen {
        assert_eq!(header(headers, "mcp-method"), Some("tools/call"));
        assert_eq!(header(headers, "mcp-name"), Some("query"));
        // Not plain ASCII: the Base64 sentinel form of its UTF-8.
        assert_eq!(
            header(headers, "mcp-param-region"),
            Some("=?base64?w5xtZcOl?="),
            "{headers:?}"
        );
        assert_eq!(
            header(headers, "mcp-param-limit"),
            Some("42"),
            "{headers:?}"
        );
        assert!(
            !headers.keys().any(|k| k.as_str().starts_with("mcp-param-")
                && !["mcp-param-region", "mcp-param-limit"].contains(&k.as_str())),
            "only the annotated arguments: {headers:?}"
        );
    }

    // An argument left out has no header.
    call_text(&client, "query", json!({ "region": "eu" })).await;
    let seen = calls.all();
    let (headers, _) = &seen[2];
    assert_eq!(header(headers, "mcp-param-region"), Some("eu"));
    assert_eq!(header(headers, "mcp-param-limit"), None, "{headers:?}");
    task.abort();
}

#[tokio::test]
async fn an_input_round_sends_the_request_state_back_unchanged() {
    let (client, calls, task) = scripted_session().await;
    assert_eq!(call_text(&client, "plain", json!({})).await, "done");
    let seen = calls.all();
    assert_eq!(seen.len(), 2, "the call and one retry");
    let (_, first) = &seen[0];
    assert!(first.get("requestState").is_none(), "{first}");
    assert!(first.get("inputResponses").is_none(), "{first}");
    let (_, retry) = &seen[1];
    assert_eq!(retry["requestState"], REQUEST_STATE, "{retry}");
    assert_eq!(retry["name"], "plain", "{retry}");
    assert_eq!(
        retry["inputResponses"]["confirm"]["action"], "accept",
        "{retry}"
    );
    assert_eq!(
        retry["inputResponses"]["confirm"]["content"]["ok"], true,
        "{retry}"
    );
    task.abort();
}
