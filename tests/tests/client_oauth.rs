//! mcp-client's OAuth 2.1 login against a real authorization server running in the test
//! (axum on 127.0.0.1:0: metadata, registration, an authorize endpoint that approves at
//! once and redirects with code, state and iss, a token endpoint that checks PKCE S256
//! and issues refresh tokens) in front of the demo MCP server, whose requests a bearer
//! layer checks against the tokens issued (401 with `resource_metadata`, 403
//! `insufficient_scope` for `tools/call` without `mcp:write`).
//!
//! Each step is tested, and each bad input (a PRM for another resource, an issuer that
//! does not match, no PKCE S256, a forged state, a wrong `iss`, a token endpoint error,
//! an expired refresh token) is a typed error with no token stored.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine;
use mcp_client::auth::{
    AuthConfig, AuthError, FileTokenStore, FollowRedirect, MemoryTokenStore, TokenStore,
};
use mcp_client::{ClientConfig, ClientError, ClientHandler, McpClient};
use mcp_server::RuntimeConfig;
use mcp_server::http::HttpConfig;
use mcp_tests::server_harness::{WAIT, build_server, demo_tools};
use serde_json::{Value, json};
use sha2::Digest;
use tokio::net::TcpListener;

/// The redirect URI the client announces; nothing listens there, the redirect is read.
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// How the authorization server misbehaves, if at all.
#[derive(Debug, Clone, Default)]
struct Knobs {
    /// Publish this `resource` in the PRM instead of the server's URL.
    prm_resource: Option<String>,
    /// Publish this `issuer` in the metadata instead of the real one.
    metadata_issuer: Option<String>,
    /// Leave `code_challenge_methods_supported` out.
    no_pkce: bool,
    /// Redirect with this `state` instead of the one received.
    forged_state: Option<String>,
    /// Redirect with this `iss` instead of the issuer.
    wrong_iss: Option<String>,
    /// The token endpoint answers the code exchange with this OAuth error.
    token_error: Option<&'static str>,
}

#[derive(Debug, Clone)]
struct Code {
    client_id: String,
    challenge: String,
    scope: String,
    resource: String,
}

#[derive(Debug, Clone)]
struct Issued {
    scope: String,
    resource: String,
}

/// What the authorization server knows and saw.
#[derive(Debug, Default)]
struct AsState {
    knobs: Knobs,
    issuer: String,
    server_url: String,
    clients: HashMap<String, Option<String>>,
    codes: HashMap<String, Code>,
    access: HashMap<String, Issued>,
    refresh: HashMap<String, Issued>,
    next: u64,
    /// `scope` of each authorization request, in order.
    authorizations: Vec<String>,
    /// `grant_type` of each token request, in order.
    grants: Vec<String>,
}

type Shared = Arc<Mutex<AsState>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, AsState> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

fn oauth_error(status: StatusCode, error: &str) -> Response {
    (
        status,
        axum::Json(json!({ "error": error, "error_description": error })),
    )
        .into_response()
}

async fn metadata(State(s): State<Shared>) -> Response {
    let s = lock(&s);
    let base = &s.issuer;
    let mut m = json!({
        "issuer": s.knobs.metadata_issuer.clone().unwrap_or_else(|| base.clone()),
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
        "scopes_supported": ["mcp:read", "mcp:write", "offline_access"],
        "authorization_response_iss_parameter_supported": true,
    });
    if !s.knobs.no_pkce {
        m["code_challenge_methods_supported"] = json!(["S256"]);
    }
    axum::Json(m).into_response()
}

async fn register(State(s): State<Shared>, axum::Json(body): axum::Json<Value>) -> Response {
    let mut s = lock(&s);
    s.next += 1;
    let client_id = format!("client-{}", s.next);
    let secret = format!("secret-{}", s.next);
    s.clients.insert(client_id.clone(), Some(secret.clone()));
    (
        StatusCode::CREATED,
        axum::Json(json!({
            "client_id": client_id,
            "client_secret": secret,
            "redirect_uris": body["redirect_uris"],
            "token_endpoint_auth_method": "client_secret_post",
        })),
    )
        .into_response()
}

async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut s = lock(&s);
    let param = |n: &str| q.get(n).cloned().unwrap_or_default();
    if !s.clients.contains_key(&param("client_id"))
        || param("code_challenge_method") != "S256"
        || param("code_challenge").is_empty()
        || param("redirect_uri") != REDIRECT_URI
    {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
    }
    s.authorizations.push(param("scope"));
    s.next += 1;
    let code = format!("code-{}", s.next);
    s.codes.insert(
        code.clone(),
        Code {
            client_id: param("client_id"),
            challenge: param("code_challenge"),
            scope: param("scope"),
            resource: param("resource"),
        },
    );
    let state = s
        .knobs
        .forged_state
        .clone()
        .unwrap_or_else(|| param("state"));
    let iss = s
        .knobs
        .wrong_iss
        .clone()
        .unwrap_or_else(|| s.issuer.clone());
    let mut to = url::Url::parse(REDIRECT_URI).expect("redirect URI");
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &state)
        .append_pair("iss", &iss);
    Redirect::to(to.as_str()).into_response()
}

fn issue(s: &mut AsState, scope: &str, resource: &str) -> Value {
    s.next += 1;
    let access = format!("at-{}", s.next);
    let refresh = format!("rt-{}", s.next);
    let issued = Issued {
        scope: scope.to_owned(),
        resource: resource.to_owned(),
    };
    s.access.insert(access.clone(), issued.clone());
    s.refresh.insert(refresh.clone(), issued);
    json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": refresh,
        "scope": scope,
    })
}

async fn token(State(s): State<Shared>, body: axum::body::Bytes) -> Response {
    let f: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let mut s = lock(&s);
    let field = |n: &str| f.get(n).cloned().unwrap_or_default();
    s.grants.push(field("grant_type"));
    // client_secret_post, as registered.
    if s.clients.get(&field("client_id")) != Some(&Some(field("client_secret"))) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    match field("grant_type").as_str() {
        "authorization_code" => {
            if let Some(error) = s.knobs.token_error {
                return oauth_error(StatusCode::BAD_REQUEST, error);
            }
            let Some(code) = s.codes.remove(&field("code")) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(field("code_verifier").as_bytes()));
            if computed != code.challenge
                || code.client_id != field("client_id")
                || code.resource != field("resource")
            {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            axum::Json(issue(&mut s, &code.scope, &code.resource)).into_response()
        }
        "refresh_token" => {
            let Some(old) = s.refresh.remove(&field("refresh_token")) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            axum::Json(issue(&mut s, &old.scope, &old.resource)).into_response()
        }
        _ => oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type"),
    }
}

async fn resource_metadata(State(s): State<Shared>) -> Response {
    let s = lock(&s);
    axum::Json(json!({
        "resource": s.knobs.prm_resource.clone().unwrap_or_else(|| s.server_url.clone()),
        "authorization_servers": [s.issuer],
        "scopes_supported": ["mcp:read"],
    }))
    .into_response()
}

/// The resource server's bearer check in front of the MCP endpoint.
async fn bearer(State(s): State<Shared>, request: Request, next: Next) -> Response {
    let (server_url, prm) = {
        let s = lock(&s);
        let base = s.server_url.trim_end_matches("/mcp").to_owned();
        (
            s.server_url.clone(),
            format!("{base}/.well-known/oauth-protected-resource/mcp"),
        )
    };
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
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let issued = token.and_then(|t| lock(&s).access.get(&t).cloned());
    let challenge = |status: StatusCode, extra: &str| {
        let mut headers = HeaderMap::new();
        let value = format!(r#"Bearer resource_metadata="{prm}"{extra}"#);
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(header::WWW_AUTHENTICATE, v);
        }
        (status, headers, "").into_response()
    };
    match issued {
        Some(i) if i.resource == server_url => {
            if i.scope.split(' ').any(|s| s == needs) {
                next.run(request).await
            } else {
                challenge(
                    StatusCode::FORBIDDEN,
                    &format!(r#", error="insufficient_scope", scope="{needs}""#),
                )
            }
        }
        _ => challenge(StatusCode::UNAUTHORIZED, r#", scope="mcp:read""#),
    }
}

/// The authorization server and the protected demo server, each on 127.0.0.1:0.
struct Fixture {
    state: Shared,
    url: String,
    _tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Fixture {
    async fn start(knobs: Knobs) -> Fixture {
        let state: Shared = Arc::default();
        let as_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let rs_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let issuer = format!("http://{}", as_listener.local_addr().expect("addr"));
        let url = format!("http://{}/mcp", rs_listener.local_addr().expect("addr"));
        {
            let mut s = lock(&state);
            s.knobs = knobs;
            s.issuer = issuer;
            s.server_url = url.clone();
        }
        let auth_server = Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(Arc::clone(&state));
        let server = build_server(demo_tools(), RuntimeConfig::default());
        let mcp = mcp_server::http::router(&server, HttpConfig::default())
            .layer(middleware::from_fn_with_state(Arc::clone(&state), bearer));
        let resource_server = Router::new()
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
            )
            .with_state(Arc::clone(&state))
            .merge(mcp);
        let tasks = vec![
            tokio::spawn(async move {
                let _ = axum::serve(as_listener, auth_server).await;
            }),
            tokio::spawn(async move {
                let _ = axum::serve(rs_listener, resource_server).await;
            }),
        ];
        Fixture {
            state,
            url,
            _tasks: tasks,
        }
    }

    fn authorizations(&self) -> Vec<String> {
        lock(&self.state).authorizations.clone()
    }

    fn grants(&self) -> Vec<String> {
        lock(&self.state).grants.clone()
    }

    /// Every access token issued so far stops working (as if expired).
    fn expire_access_tokens(&self) {
        lock(&self.state).access.clear();
    }

    /// Every refresh token issued so far stops working too.
    fn expire_refresh_tokens(&self) {
        lock(&self.state).refresh.clear();
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        for t in &self._tasks {
            t.abort();
        }
    }
}

#[derive(Debug)]
struct NoInput;

#[async_trait]
impl ClientHandler for NoInput {}

fn auth(store: Arc<dyn TokenStore>, browser: bool) -> AuthConfig {
    let config = AuthConfig::new(store, "mcp-tests");
    if browser {
        config.with_authorize(Arc::new(
            FollowRedirect::new(REDIRECT_URI).expect("browser"),
        ))
    } else {
        config
    }
}

async fn connect(url: &str, auth: AuthConfig) -> Result<McpClient, ClientError> {
    let config = ClientConfig {
        auth: Some(auth),
        ..ClientConfig::default()
    };
    tokio::time::timeout(
        WAIT,
        McpClient::connect_http(url, Arc::new(NoInput), config),
    )
    .await
    .expect("in time")
}

fn greet_args() -> serde_json::Map<String, Value> {
    serde_json::Map::from_iter([("name".to_owned(), json!("Ada"))])
}

async fn greet(client: &McpClient) -> Result<String, ClientError> {
    let result = tokio::time::timeout(WAIT, client.call_tool("greet", greet_args()))
        .await
        .expect("in time")?;
    Ok(
        serde_json::to_value(&result.content[0]).expect("json")["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// The login failure behind `result`, which must have failed.
fn auth_error<T>(result: Result<T, ClientError>) -> Arc<AuthError> {
    match result {
        Err(ClientError::Auth(e)) => e,
        Err(other) => panic!("expected an authorization error, got {other}"),
        Ok(_) => panic!("expected an authorization error, got a connection"),
    }
}

async fn nothing_stored(store: &dyn TokenStore, url: &str) {
    let stored = store.load(url).await.expect("store readable");
    assert!(
        stored.as_ref().is_none_or(|c| c.tokens.is_none()),
        "a token was stored: {stored:?}"
    );
}

#[tokio::test]
async fn login_discovers_registers_authorizes_and_calls() {
    let f = Fixture::start(Knobs::default()).await;
    let store = Arc::new(MemoryTokenStore::new());
    let client = connect(&f.url, auth(store.clone(), true))
        .await
        .expect("logs in");
    // The first request asked for the challenge's scope, plus offline_access (listed).
    assert_eq!(f.authorizations(), ["mcp:read offline_access"]);
    // tools/call needs mcp:write: one step-up, asking for the union.
    assert_eq!(greet(&client).await.expect("greets"), "Hello, Ada!");
    assert_eq!(
        f.authorizations(),
        [
            "mcp:read offline_access",
            "mcp:read offline_access mcp:write"
        ]
    );
    let stored = store.load(&f.url).await.expect("load").expect("stored");
    assert_eq!(stored.resource, f.url);
    assert_eq!(stored.issuer, lock(&f.state).issuer);
    let tokens = stored.tokens.expect("tokens");
    assert!(tokens.refresh_token.is_some());
    assert!(
        tokens
            .scope
            .as_deref()
            .is_some_and(|s| s.contains("mcp:write"))
    );
    // Later calls use the token as it is.
    assert_eq!(greet(&client).await.expect("greets"), "Hello, Ada!");
    assert_eq!(f.authorizations().len(), 2);
}

#[tokio::test]
async fn an_expired_access_token_is_refreshed_before_reauthorizing() {
    let f = Fixture::start(Knobs::default()).await;
    let store = Arc::new(MemoryTokenStore::new());
    let client = connect(&f.url, auth(store.clone(), true))
        .await
        .expect("logs in");
    f.expire_access_tokens();
    client.list_tools().await.expect("lists after a refresh");
    assert_eq!(f.authorizations().len(), 1, "no new browser step");
    assert_eq!(f.grants().last().map(String::as_str), Some("refresh_token"));
}

#[tokio::test]
async fn an_expired_refresh_token_is_a_typed_error_and_forgets_the_login() {
    let f = Fixture::start(Knobs::default()).await;
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());
    connect(&f.url, auth(store.clone(), true))
        .await
        .expect("logs in");
    f.expire_access_tokens();
    f.expire_refresh_tokens();
    // A headless client (no browser step) cannot log in again.
    let e = auth_error(connect(&f.url, auth(store.clone(), false)).await);
    assert!(
        matches!(&*e, AuthError::RefreshRefused { error } if error == "invalid_grant"),
        "{e}"
    );
    assert!(e.to_string().contains("log in again"), "{e}");
    nothing_stored(store.as_ref(), &f.url).await;
}

#[tokio::test]
async fn the_token_file_is_private_and_survives_a_restart() {
    let f = Fixture::start(Knobs::default()).await;
    let dir = std::env::temp_dir().join(format!("mcp-oauth-{}-{}", std::process::id(), line!()));
    let path = dir.join("tokens.json");
    let _ = std::fs::remove_dir_all(&dir);
    {
        let store = Arc::new(FileTokenStore::new(&path));
        let client = connect(&f.url, auth(store, true)).await.expect("logs in");
        greet(&client).await.expect("greets");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .expect("token file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    }
    let before = f.authorizations().len();
    // A new client (a restart) without a browser step: the stored token is enough.
    let store = Arc::new(FileTokenStore::new(&path));
    let client = connect(&f.url, auth(store, false))
        .await
        .expect("uses the stored token");
    assert_eq!(greet(&client).await.expect("greets"), "Hello, Ada!");
    assert_eq!(f.authorizations().len(), before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn without_a_browser_step_a_login_is_required() {
    let f = Fixture::start(Knobs::default()).await;
    let store = Arc::new(MemoryTokenStore::new());
    let e = auth_error(connect(&f.url, auth(store.clone(), false)).await);
    assert!(matches!(&*e, AuthError::LoginRequired { .. }), "{e}");
    nothing_stored(store.as_ref(), &f.url).await;
}

/// Connects with a fresh store under `knobs`; the login must fail. Returns the error,
/// having checked that no token was stored.
async fn refused(knobs: Knobs) -> (Arc<AuthError>, Fixture) {
    let f = Fixture::start(knobs).await;
    let store = Arc::new(MemoryTokenStore::new());
    let e = auth_error(connect(&f.url, auth(store.clone(), true)).await);
    nothing_stored(store.as_ref(), &f.url).await;
    (e, f)
}

#[tokio::test]
async fn a_prm_for_another_resource_is_refused() {
    let (e, f) = refused(Knobs {
        prm_resource: Some("https://evil.example.com/mcp".into()),
        ..Knobs::default()
    })
    .await;
    assert!(
        matches!(&*e, AuthError::ResourceMismatch { found, .. } if found == "https://evil.example.com/mcp"),
        "{e}"
    );
    assert!(
        f.authorizations().is_empty(),
        "the authorization server was not used"
    );
}

#[tokio::test]
async fn metadata_of_another_issuer_is_refused() {
    let (e, f) = refused(Knobs {
        metadata_issuer: Some("https://attacker.example.com".into()),
        ..Knobs::default()
    })
    .await;
    assert!(matches!(&*e, AuthError::IssuerMismatch { .. }), "{e}");
    assert!(f.authorizations().is_empty());
}

#[tokio::test]
async fn a_server_without_pkce_s256_is_refused() {
    let (e, f) = refused(Knobs {
        no_pkce: true,
        ..Knobs::default()
    })
    .await;
    assert!(matches!(&*e, AuthError::PkceUnsupported { .. }), "{e}");
    assert!(f.authorizations().is_empty());
}

#[tokio::test]
async fn a_forged_state_is_refused() {
    let (e, f) = refused(Knobs {
        forged_state: Some("not-the-state-sent".into()),
        ..Knobs::default()
    })
    .await;
    assert!(matches!(&*e, AuthError::StateMismatch), "{e}");
    assert!(f.grants().is_empty(), "the code was not exchanged");
}

#[tokio::test]
async fn a_wrong_iss_is_refused() {
    let (e, f) = refused(Knobs {
        wrong_iss: Some("https://evil.example.com".into()),
        ..Knobs::default()
    })
    .await;
    assert!(
        matches!(&*e, AuthError::IssMismatch { found, .. } if found == "https://evil.example.com"),
        "{e}"
    );
    assert!(f.grants().is_empty(), "the code was not exchanged");
}

#[tokio::test]
async fn a_token_endpoint_error_is_typed() {
    let (e, _f) = refused(Knobs {
        token_error: Some("invalid_grant"),
        ..Knobs::default()
    })
    .await;
    assert!(
        matches!(&*e, AuthError::TokenRefused { error, .. } if error == "invalid_grant"),
        "{e}"
    );
}

/// A browser step that takes its time, as a user does.
#[derive(Debug)]
struct SlowUser(FollowRedirect);

#[async_trait]
impl mcp_client::auth::Authorize for SlowUser {
    fn redirect_uri(&self) -> String {
        self.0.redirect_uri()
    }

    async fn authorize(
        &self,
        url: &str,
    ) -> Result<mcp_client::auth::AuthorizationResponse, AuthError> {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        self.0.authorize(url).await
    }
}

#[tokio::test]
async fn the_request_timeout_does_not_count_the_browser_step() {
    let f = Fixture::start(Knobs::default()).await;
    let browser = SlowUser(FollowRedirect::new(REDIRECT_URI).expect("browser"));
    let config = ClientConfig {
        auth: Some(
            AuthConfig::new(Arc::new(MemoryTokenStore::new()), "mcp-tests")
                .with_authorize(Arc::new(browser)),
        ),
        request_timeout: std::time::Duration::from_millis(500),
        ..ClientConfig::default()
    };
    tokio::time::timeout(
        WAIT,
        McpClient::connect_http(&f.url, Arc::new(NoInput), config),
    )
    .await
    .expect("in time")
    .expect("connects after a slow login");
    assert_eq!(f.authorizations().len(), 1);
}
