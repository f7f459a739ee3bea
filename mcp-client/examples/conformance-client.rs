//! The client the official conformance suite runs for each client scenario:
//!
//! ```text
//! node .../conformance/dist/index.js client --command "target/debug/examples/conformance-client" --requirements 2026-07-28
//! ```
//!
//! The suite appends the scenario server's URL and sets `MCP_CONFORMANCE_SCENARIO`,
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` and (for some scenarios) `MCP_CONFORMANCE_CONTEXT`.
//! This program only chooses what to do per scenario, as the suite's reference clients
//! do; every behaviour checked (negotiation, `_meta`, headers, MRTR, SSE resumption,
//! elicitation defaults, the whole OAuth flow) is the mcp-client library's.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_client::auth::{AuthConfig, FollowRedirect, MemoryTokenStore};
use mcp_client::{ClientConfig, ClientHandler, McpClient, Revision};
use mcp_protocol::JsonObject;
use mcp_protocol::jsonrpc::ErrorObject;
use mcp_protocol::types::{ElicitAction, ElicitResult, ElicitValue, PrimitiveSchemaDefinition};
use mcp_protocol::v2026::{ElicitRequestParams, Tool};
use serde::Deserialize;
use serde_json::Value;

/// The Client ID Metadata Document URL the suite's CIMD scenarios expect.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// The redirect URI announced; the suite's authorization server redirects there and the
/// redirect is read, not followed.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// `MCP_CONFORMANCE_CONTEXT`: the members the scenarios here use.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Context {
    #[serde(rename = "client_id")]
    client_id: Option<String>,
    #[serde(rename = "client_secret")]
    client_secret: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
}

#[derive(Debug, Deserialize)]
struct ToolCall {
    name: String,
    #[serde(default)]
    arguments: JsonObject,
}

/// Accepts every form elicitation, answering `true` for a boolean field without a
/// default and leaving the rest to the library's defaults (SEP-1034).
#[derive(Debug)]
struct Approve;

#[async_trait]
impl ClientHandler for Approve {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let ElicitRequestParams::Form(form) = params else {
            return Ok(ElicitResult::new(ElicitAction::Decline));
        };
        let mut content = indexmap::IndexMap::new();
        for (name, schema) in &form.requested_schema.properties {
            if let PrimitiveSchemaDefinition::Boolean(b) = schema
                && b.default.is_none()
            {
                content.insert(name.clone(), ElicitValue::Boolean(true));
            }
        }
        Ok(ElicitResult::accept(content))
    }
}

/// Arguments for `tool` from its schema: a value of the right type for each required
/// property.
fn arguments_for(tool: &Tool) -> JsonObject {
    let schema = serde_json::to_value(&tool.input_schema).unwrap_or(Value::Null);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = JsonObject::new();
    for (name, property) in schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if !required.contains(&name.as_str()) {
            continue;
        }
        let value = match property.get("type").and_then(Value::as_str) {
            Some("number" | "integer") => Value::from(1),
            Some("boolean") => Value::Bool(true),
            Some("string") => Value::from("test"),
            _ => Value::Null,
        };
        out.insert(name.clone(), value);
    }
    out
}

fn config(scenario: &str, context: &Context) -> Result<ClientConfig, String> {
    let mut config = ClientConfig {
        revision: match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
            Ok("2026-07-28") => Revision::V2026_07_28,
            Ok(_) => Revision::V2025_11_25,
            Err(_) => Revision::Negotiate,
        },
        request_timeout: Duration::from_secs(20),
        ..ClientConfig::default()
    };
    if scenario.starts_with("auth/") {
        let browser = FollowRedirect::new(REDIRECT_URI).map_err(|e| e.to_string())?;
        let mut auth = AuthConfig::new(Arc::new(MemoryTokenStore::new()), "mcp-client conformance")
            .with_authorize(Arc::new(browser))
            .with_client_metadata_url(CLIENT_METADATA_URL);
        if scenario == "auth/pre-registration" {
            let id = context
                .client_id
                .clone()
                .ok_or("the pre-registration context has no client_id")?;
            auth = auth.with_pre_registered(id, context.client_secret.clone());
        }
        config.auth = Some(auth);
    }
    Ok(config)
}

async fn run(scenario: &str, url: &str, context: &Context) -> Result<(), String> {
    let config = config(scenario, context)?;
    let client = McpClient::connect_http(url, Arc::new(Approve), config)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let tools = client
        .list_tools()
        .await
        .map_err(|e| format!("tools/list: {e}"))?
        .tools;
    let call = |name: String, arguments: JsonObject| {
        let client = client.clone();
        async move {
            let result = client
                .call_tool(&name, arguments)
                .await
                .map_err(|e| format!("tools/call {name}: {e}"))?;
            eprintln!("{name}: {} content block(s)", result.content.len());
            Ok::<(), String>(())
        }
    };
    match scenario {
        "request-metadata" | "json-schema-ref-no-deref" => {}
        "elicitation-sep1034-client-defaults" => {
            call("test_client_elicitation_defaults".into(), JsonObject::new()).await?;
        }
        "sse-retry" => call("test_reconnection".into(), JsonObject::new()).await?,
        s if s.starts_with("auth/") => call("test-tool".into(), JsonObject::new()).await?,
        _ if !context.tool_calls.is_empty() => {
            for c in &context.tool_calls {
                call(c.name.clone(), c.arguments.clone()).await?;
            }
        }
        // tools_call, initialize, the MRTR and header scenarios: every tool listed (the
        // library left out those with invalid header annotations).
        _ => {
            for tool in &tools {
                call(tool.name.clone(), arguments_for(tool)).await?;
            }
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("mcp_client=info")),
        )
        .init();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: MCP_CONFORMANCE_SCENARIO=NAME conformance-client URL");
        return std::process::ExitCode::FAILURE;
    };
    let context: Context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(raw) => match serde_json::from_str(&raw) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("MCP_CONFORMANCE_CONTEXT is not the JSON expected: {e}");
                return std::process::ExitCode::FAILURE;
            }
        },
        Err(_) => Context::default(),
    };
    eprintln!("scenario {scenario:?} against {url}");
    // Within the suite's 30 s limit, so it never has to kill us.
    match tokio::time::timeout(Duration::from_secs(25), run(&scenario, &url, &context)).await {
        Ok(Ok(())) => std::process::ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("conformance-client: {e}");
            std::process::ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("conformance-client: scenario {scenario} took over 25 s");
            std::process::ExitCode::FAILURE
        }
    }
}
