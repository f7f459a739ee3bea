//! The client the official conformance suite runs for each client scenario:
//!
//! ```text
//! node .../conformance/dist/index.js client --command "target/debug/examples/conformance-client" --requirements 2026-07-28
//! ```
//!
//! The suite appends the scenario server's URL and sets `MCP_CONFORMANCE_SCENARIO`,
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` and (for some scenarios) `MCP_CONFORMANCE_CONTEXT`.
//! This program only chooses what to do per scenario, by name, as the suite's reference
//! clients do ([`plan`]: one arm for each client scenario of both requirement sets,
//! scored or not; a name it does not know is an error, exit 1); every behaviour checked (negotiation, `_meta`, headers, MRTR, SSE resumption,
//! elicitation defaults, the whole OAuth flow, the machine grants, DPoP) is the
//! mcp-tasks-client library's.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_client::auth::{
    Assertion, AuthConfig, ClientAuth, FollowRedirect, Grant, IdentityProvider, IssuerBinding,
    MachineClient, MemoryTokenStore, SigningKey,
};
use mcp_tasks_client::{ClientConfig, ClientHandler, McpClient, Revision};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::types::{
    ElicitAction, ElicitResult, ElicitValue, PrimitiveSchemaDefinition,
};
use mcp_tasks_protocol::v2026::{ElicitRequestParams, Tool};
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
    /// The issuer the pre-registered client belongs to (the scenario's authorization
    /// server): the client is used there only.
    issuer: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    /// `auth/client-credentials-jwt`: the client's private key (PKCS#8 PEM) and its
    /// algorithm.
    #[serde(rename = "private_key_pem")]
    private_key_pem: Option<String>,
    #[serde(rename = "signing_algorithm")]
    signing_algorithm: Option<String>,
    /// `auth/enterprise-managed-authorization`: the client at the identity provider,
    /// the user's ID token and where it is exchanged.
    #[serde(rename = "idp_client_id")]
    idp_client_id: Option<String>,
    #[serde(rename = "idp_id_token")]
    idp_id_token: Option<String>,
    #[serde(rename = "idp_token_endpoint")]
    idp_token_endpoint: Option<String>,
    /// `auth/wif-jwt-bearer`: the workload's identity token.
    #[serde(rename = "valid_jwt")]
    valid_jwt: Option<String>,
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

/// What the program does in a scenario, once connected (every plan lists the tools
/// first, as a client would).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Nothing more: what is checked is the connection itself (negotiation, `_meta`,
    /// the listing).
    Connect,
    /// Call every tool listed, with arguments from its schema (the library leaves out a
    /// tool whose header annotations are invalid).
    EveryTool,
    /// Call the tools `MCP_CONFORMANCE_CONTEXT` lists, with its arguments.
    ContextCalls,
    /// Call this tool, without arguments.
    Call(&'static str),
    /// Log in with OAuth (the whole flow is the library's), then call `test-tool`.
    Auth,
    /// As [`Plan::Auth`], with DPoP-bound tokens.
    AuthDpop,
    /// Log in with a machine grant (no browser step), then call `test-tool`.
    Machine(Machine),
    /// Echo the `inputSchema` of `json_schema_2020_12_tool`, as listed, to
    /// `json_schema_echo`: what the library kept of it.
    EchoSchema,
}

/// The machine grants of the authorization extensions' scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Machine {
    /// Client credentials, `private_key_jwt`.
    ClientKey,
    /// Client credentials, a client secret.
    ClientSecret,
    /// ID token → ID-JAG at the identity provider → JWT bearer grant.
    Enterprise,
    /// JWT bearer grant with a workload token file.
    Workload,
}

/// The plan of each client scenario of the 2026-07-28 and 2025-11-25 requirement sets,
/// scored or not; `None` for a name this program does not know.
fn plan(scenario: &str) -> Option<Plan> {
    Some(match scenario {
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => Plan::Connect,
        "tools_call"
        | "sep-2322-client-request-state"
        | "http-standard-headers"
        | "http-invalid-tool-headers" => Plan::EveryTool,
        "http-custom-headers" => Plan::ContextCalls,
        "elicitation-sep1034-client-defaults" => Plan::Call("test_client_elicitation_defaults"),
        "sse-retry" => Plan::Call("test_reconnection"),
        "json-schema-2020-12-preservation" => Plan::EchoSchema,
        "auth/metadata-default"
        | "auth/metadata-var1"
        | "auth/metadata-var2"
        | "auth/metadata-var3"
        | "auth/basic-cimd"
        | "auth/scope-from-www-authenticate"
        | "auth/scope-from-scopes-supported"
        | "auth/scope-omitted-when-undefined"
        | "auth/scope-step-up"
        | "auth/scope-retry-limit"
        | "auth/token-endpoint-auth-basic"
        | "auth/token-endpoint-auth-post"
        | "auth/token-endpoint-auth-none"
        | "auth/pre-registration"
        | "auth/resource-mismatch"
        | "auth/offline-access-scope"
        | "auth/offline-access-not-supported"
        | "auth/authorization-server-migration"
        | "auth/iss-supported"
        | "auth/iss-not-advertised"
        | "auth/iss-supported-missing"
        | "auth/iss-wrong-issuer"
        | "auth/iss-unexpected"
        | "auth/iss-normalized"
        | "auth/metadata-issuer-mismatch" => Plan::Auth,
        "auth/client-credentials-jwt" => Plan::Machine(Machine::ClientKey),
        "auth/client-credentials-basic" => Plan::Machine(Machine::ClientSecret),
        "auth/enterprise-managed-authorization" => Plan::Machine(Machine::Enterprise),
        "auth/wif-jwt-bearer" => Plan::Machine(Machine::Workload),
        "auth/dpop" | "auth/dpop-nonce" => Plan::AuthDpop,
        _ => return None,
    })
}

/// The grant of a machine scenario, from `MCP_CONFORMANCE_CONTEXT` (`workload_file`:
/// where the workload token is written for the library to read). The context names no
/// issuer (the suite's authorization server listens on a port chosen per run), so the
/// client trusts the first one the scenario's server names
/// ([`IssuerBinding::TrustFirstUse`], kept in memory for the run): a program whose
/// client is registered with a known issuer binds it with [`IssuerBinding::Issuer`].
fn grant(
    machine: Machine,
    context: &Context,
    workload_file: &std::path::Path,
) -> Result<Grant, String> {
    let need = |v: &Option<String>, what: &str| {
        v.clone()
            .ok_or_else(|| format!("MCP_CONFORMANCE_CONTEXT has no {what}"))
    };
    let client_id = need(&context.client_id, "client_id")?;
    let secret_client = || -> Result<MachineClient, String> {
        Ok(MachineClient::new(
            client_id.clone(),
            ClientAuth::Secret(need(&context.client_secret, "client_secret")?),
            IssuerBinding::TrustFirstUse,
        ))
    };
    Ok(match machine {
        Machine::ClientKey => {
            let pem = need(&context.private_key_pem, "private_key_pem")?;
            let algorithm = context.signing_algorithm.as_deref().unwrap_or("ES256");
            let key = SigningKey::from_pem(pem.as_bytes(), algorithm).map_err(|e| e.to_string())?;
            Grant::ClientCredentials(MachineClient::new(
                client_id,
                ClientAuth::PrivateKeyJwt(Arc::new(key)),
                IssuerBinding::TrustFirstUse,
            ))
        }
        Machine::ClientSecret => Grant::ClientCredentials(secret_client()?),
        Machine::Enterprise => Grant::IdentityAssertion {
            client: secret_client()?,
            idp: IdentityProvider {
                token_endpoint: need(&context.idp_token_endpoint, "idp_token_endpoint")?,
                // Its token endpoint is the context's, not named by the server.
                client: MachineClient::new(
                    need(&context.idp_client_id, "idp_client_id")?,
                    ClientAuth::None,
                    IssuerBinding::Unbound,
                ),
            },
            id_token: Assertion::Value(need(&context.idp_id_token, "idp_id_token")?),
        },
        Machine::Workload => {
            let token = need(&context.valid_jwt, "valid_jwt")?;
            std::fs::write(workload_file, token)
                .map_err(|e| format!("cannot write {}: {e}", workload_file.display()))?;
            Grant::JwtBearer {
                client: MachineClient::new(
                    client_id,
                    ClientAuth::None,
                    IssuerBinding::TrustFirstUse,
                ),
                assertion: Assertion::File(workload_file.to_owned()),
            }
        }
    })
}

fn config(
    scenario: &str,
    plan: Plan,
    context: &Context,
    workload_file: &std::path::Path,
) -> Result<ClientConfig, String> {
    let mut config = ClientConfig {
        revision: match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
            Ok("2026-07-28") => Revision::V2026_07_28,
            Ok(_) => Revision::V2025_11_25,
            Err(_) => Revision::Negotiate,
        },
        request_timeout: Duration::from_secs(20),
        ..ClientConfig::default()
    };
    if let Plan::Machine(machine) = plan {
        let store = Arc::new(MemoryTokenStore::new());
        config.auth = Some(
            AuthConfig::new(store, "mcp-tasks-client conformance").with_grant(grant(
                machine,
                context,
                workload_file,
            )?),
        );
    }
    if matches!(plan, Plan::Auth | Plan::AuthDpop) {
        let browser = FollowRedirect::new(REDIRECT_URI).map_err(|e| e.to_string())?;
        let mut auth = AuthConfig::new(
            Arc::new(MemoryTokenStore::new()),
            "mcp-tasks-client conformance",
        )
        .with_authorize(Arc::new(browser))
        .with_client_metadata_url(CLIENT_METADATA_URL);
        if scenario == "auth/pre-registration" {
            let id = context
                .client_id
                .clone()
                .ok_or("the pre-registration context has no client_id")?;
            let issuer = context
                .issuer
                .clone()
                .ok_or("the pre-registration context has no issuer to bind the client to")?;
            auth = auth.with_pre_registered(issuer, id, context.client_secret.clone());
        }
        if plan == Plan::AuthDpop {
            auth = auth.with_dpop().map_err(|e| e.to_string())?;
        }
        config.auth = Some(auth);
    }
    Ok(config)
}

async fn run(scenario: &str, plan: Plan, url: &str, context: &Context) -> Result<(), String> {
    let workload_file =
        std::env::temp_dir().join(format!("conformance-workload-{}.jwt", std::process::id()));
    let config = config(scenario, plan, context, &workload_file);
    let result = match config {
        Ok(config) => session(plan, url, context, config).await,
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_file(&workload_file);
    result
}

async fn session(
    plan: Plan,
    url: &str,
    context: &Context,
    config: ClientConfig,
) -> Result<(), String> {
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
    match plan {
        Plan::Connect => {}
        Plan::Call(tool) => call(tool.into(), JsonObject::new()).await?,
        Plan::Auth | Plan::AuthDpop | Plan::Machine(_) => {
            call("test-tool".into(), JsonObject::new()).await?
        }
        Plan::ContextCalls => {
            if context.tool_calls.is_empty() {
                return Err("MCP_CONFORMANCE_CONTEXT lists no toolCalls".into());
            }
            for c in &context.tool_calls {
                call(c.name.clone(), c.arguments.clone()).await?;
            }
        }
        Plan::EveryTool => {
            for tool in &tools {
                call(tool.name.clone(), arguments_for(tool)).await?;
            }
        }
        Plan::EchoSchema => {
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .ok_or("no json_schema_2020_12_tool listed")?;
            let schema = serde_json::to_value(&focal.input_schema)
                .map_err(|e| format!("the listed inputSchema: {e}"))?;
            let arguments = JsonObject::from_iter([("schema".to_owned(), schema)]);
            call("json_schema_echo".into(), arguments).await?;
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
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("mcp_tasks_client=info")),
        )
        .init();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: MCP_CONFORMANCE_SCENARIO=NAME conformance-client URL");
        return std::process::ExitCode::FAILURE;
    };
    let Some(plan) = plan(&scenario) else {
        eprintln!(
            "conformance-client: unknown scenario {scenario:?} (MCP_CONFORMANCE_SCENARIO): add an arm for it in plan()"
        );
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
    match tokio::time::timeout(
        Duration::from_secs(25),
        run(&scenario, plan, &url, &context),
    )
    .await
    {
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

#[cfg(test)]
mod tests {
    /// The client scenarios of the installed suite's requirement set `revision`
    /// (`requirements/REVISION.yaml`): the `client:` list and the `not_scored` entries of
    /// the client leg. `None` when the suite is not installed.
    fn client_scenarios(revision: &str) -> Option<Vec<String>> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../tests/conformance-suite/node_modules/@modelcontextprotocol/conformance/requirements/{revision}.yaml"
        ));
        let text = std::fs::read_to_string(path).ok()?;
        let mut out = Vec::new();
        let mut section = "";
        let mut pending: Option<String> = None;
        for line in text.lines() {
            if !line.starts_with(' ') && !line.starts_with('#') && line.ends_with(':') {
                section = line.trim_end_matches(':');
                continue;
            }
            let item = line.trim();
            match section {
                "client" => {
                    if let Some(name) = item.strip_prefix("- ") {
                        out.push(name.trim().to_owned());
                    }
                }
                "not_scored" => {
                    if let Some(name) = item.strip_prefix("- scenario: ") {
                        pending = Some(name.trim().to_owned());
                    } else if item == "leg: client"
                        && let Some(name) = pending.take()
                    {
                        out.push(name);
                    }
                }
                _ => {}
            }
        }
        Some(out)
    }

    #[test]
    fn every_client_scenario_of_both_sets_has_an_arm() {
        for revision in ["2026-07-28", "2025-11-25"] {
            let Some(scenarios) = client_scenarios(revision) else {
                eprintln!("the conformance suite is not installed: skipped");
                return;
            };
            assert!(scenarios.len() > 15, "{revision}: read {scenarios:?}");
            let unknown: Vec<&String> = scenarios
                .iter()
                .filter(|s| super::plan(s).is_none())
                .collect();
            assert!(unknown.is_empty(), "{revision}: no arm for {unknown:?}");
        }
        assert_eq!(super::plan("auth/not-a-scenario"), None);
        assert_eq!(super::plan(""), None);
    }
}
