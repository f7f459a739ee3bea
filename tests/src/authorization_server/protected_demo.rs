//! [`ProtectedDemo`]: the demo MCP server as a resource server of an
//! [`AuthorizationServer`], checking the opaque tokens it issued.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use tokio::net::TcpListener;

use super::AuthorizationServer;

/// What a [`ProtectedDemo`] publishes as its Protected Resource Metadata (RFC 9728).
#[derive(Debug, Clone, Default)]
pub struct Prm {
    /// None at all: 404 at the well-known URLs, and no `resource_metadata` in the
    /// challenges.
    pub missing: bool,
    /// This `resource` instead of the server's URL.
    pub resource: Option<String>,
    /// These `authorization_servers` instead of the authorization server's issuer.
    pub authorization_servers: Option<Vec<String>>,
}

/// What the resource server's bearer check needs.
#[derive(Debug)]
struct Resource {
    auth: Mutex<Arc<AuthorizationServer>>,
    /// The MCP endpoint's URL.
    server_url: String,
    prm: Prm,
    /// 401s sent.
    unauthorized: std::sync::atomic::AtomicUsize,
}

impl Resource {
    fn auth(&self) -> Arc<AuthorizationServer> {
        Arc::clone(&self.auth.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The demo MCP server (on 127.0.0.1:0) as a resource server of an
/// [`AuthorizationServer`]: its requests need an opaque token that server issued for
/// this resource (401 with `resource_metadata` and `scope="mcp:read"` otherwise), with
/// `mcp:write` for `tools/call` and `mcp:read` for the rest (403 `insufficient_scope`);
/// its Protected Resource Metadata is at `/.well-known/oauth-protected-resource/mcp`.
#[derive(Debug)]
pub struct ProtectedDemo {
    /// The MCP endpoint (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
    resource: Arc<Resource>,
    task: tokio::task::JoinHandle<()>,
}

impl ProtectedDemo {
    /// The scopes it checks: `mcp:read` for every request, `mcp:write` for `tools/call`.
    pub const SCOPES: [&'static str; 2] = ["mcp:read", "mcp:write"];

    /// Starts it, trusting `auth`, publishing `prm`.
    pub async fn start(auth: Arc<AuthorizationServer>, prm: Prm) -> ProtectedDemo {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
        let resource = Arc::new(Resource {
            auth: Mutex::new(auth),
            server_url: url.clone(),
            prm,
            unauthorized: std::sync::atomic::AtomicUsize::new(0),
        });
        let server = crate::server_harness::build_server(
            crate::server_harness::demo_tools(),
            mcp_tasks_server::RuntimeConfig::default(),
        );
        let mcp =
            mcp_tasks_server::http::router(&server, mcp_tasks_server::http::HttpConfig::default())
                .layer(axum::middleware::from_fn_with_state(
                    Arc::clone(&resource),
                    bearer,
                ));
        let routes = Router::new()
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
            )
            .with_state(Arc::clone(&resource))
            .merge(mcp);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, routes).await;
        });
        ProtectedDemo {
            url,
            resource,
            task,
        }
    }

    /// From now on the server trusts `auth` alone (its metadata names it, and only its
    /// tokens are taken): the authorization server migrated.
    pub fn migrate_to(&self, auth: Arc<AuthorizationServer>) {
        *self.resource.auth.lock().unwrap_or_else(|e| e.into_inner()) = auth;
    }

    /// How many requests were answered 401.
    pub fn unauthorized(&self) -> usize {
        self.resource
            .unauthorized
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for ProtectedDemo {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn resource_metadata(State(r): State<Arc<Resource>>) -> Response {
    if r.prm.missing {
        return StatusCode::NOT_FOUND.into_response();
    }
    let servers = r
        .prm
        .authorization_servers
        .clone()
        .unwrap_or_else(|| vec![r.auth().issuer_url().to_owned()]);
    axum::Json(json!({
        "resource": r.prm.resource.clone().unwrap_or_else(|| r.server_url.clone()),
        "authorization_servers": servers,
        "scopes_supported": ["mcp:read"],
    }))
    .into_response()
}

/// The bearer check in front of the MCP endpoint.
async fn bearer(
    State(r): State<Arc<Resource>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use axum::http::{HeaderMap, HeaderValue, header};
    let base = r.server_url.trim_end_matches("/mcp");
    let needs = if request
        .headers()
        .get("mcp-method")
        .and_then(|v| v.to_str().ok())
        == Some("tools/call")
    {
        "mcp:write"
    } else {
        "mcp:read"
    };
    let issued = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|t| r.auth().issued(t));
    let challenge = |status: StatusCode, extra: &str| {
        let mut headers = HeaderMap::new();
        let value = if r.prm.missing {
            format!("Bearer realm=\"mcp\"{extra}")
        } else {
            format!(
                r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"{extra}"#
            )
        };
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(header::WWW_AUTHENTICATE, v);
        }
        (status, headers, "").into_response()
    };
    match issued {
        Some(i) if i.resource == r.server_url => {
            if i.scope.split(' ').any(|s| s == needs) {
                next.run(request).await
            } else {
                challenge(
                    StatusCode::FORBIDDEN,
                    &format!(r#", error="insufficient_scope", scope="{needs}""#),
                )
            }
        }
        _ => {
            r.unauthorized
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            challenge(StatusCode::UNAUTHORIZED, r#", scope="mcp:read""#)
        }
    }
}
