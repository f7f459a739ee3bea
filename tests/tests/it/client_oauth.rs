//! mcp-tasks-client's OAuth 2.1 login against a real authorization server running in the test
//! (`mcp_tests::authorization_server` on 127.0.0.1:0: metadata, registration, an
//! authorize endpoint that approves at once and redirects with code, state and iss, a
//! token endpoint that checks PKCE S256 and issues refresh tokens) in front of the demo
//! MCP server, whose requests a bearer layer checks against the opaque tokens issued
//! (401 with `resource_metadata`, 403 `insufficient_scope` for `tools/call` without
//! `mcp:write`).
//!
//! Each step is tested, and each bad input (a PRM for another resource, an issuer that
//! does not match, no PKCE S256, a forged state, a wrong `iss`, a token endpoint error,
//! an expired refresh token) is a typed error with no token stored. So is each failure
//! a user meets (no resource metadata, no authorization server named, no metadata at
//! the issuer, registration refused, the user saying no), with a message that says
//! what to do.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_client::auth::{
    AuthConfig, AuthError, FileTokenStore, FollowRedirect, MemoryTokenStore, TokenStore,
};
use mcp_tasks_client::{ClientConfig, ClientError, ClientHandler, McpClient};
use mcp_tests::authorization_server::{
    AuthorizationServer, AuthorizationServerOptions, Knobs, Prm, ProtectedDemo,
};
use mcp_tests::programs;
use mcp_tests::server_harness::WAIT;
use serde_json::{Value, json};

/// The redirect URI the client announces; nothing listens there, the redirect is read.
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// The authorization server (opaque tokens) and the protected demo server, each on
/// 127.0.0.1:0.
struct Fixture {
    auth: Arc<AuthorizationServer>,
    url: String,
    demo: ProtectedDemo,
}

impl Fixture {
    async fn start(knobs: Knobs) -> Fixture {
        Self::start_with(knobs, |_| Prm::default()).await
    }

    /// With the resource server publishing `prm(issuer)`.
    async fn start_with(knobs: Knobs, prm: impl FnOnce(&str) -> Prm) -> Fixture {
        let auth = Arc::new(
            AuthorizationServer::start(AuthorizationServerOptions::for_protected_demo(knobs)).await,
        );
        let prm = prm(auth.issuer_url());
        let demo = ProtectedDemo::start(Arc::clone(&auth), prm).await;
        Fixture {
            auth,
            url: demo.url.clone(),
            demo,
        }
    }

    fn authorizations(&self) -> Vec<String> {
        self.auth.authorizations()
    }

    fn grants(&self) -> Vec<String> {
        self.auth.grants()
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
    programs::connect_with_auth(url, Arc::new(NoInput), auth).await
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
    assert_eq!(stored.issuer, f.auth.issuer_url());
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
    f.auth.expire_access_tokens();
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
    f.auth.expire_access_tokens();
    f.auth.expire_refresh_tokens();
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
    refused_with(knobs, |_| Prm::default()).await
}

/// [`refused`] with the resource server publishing `prm(issuer)`.
async fn refused_with(knobs: Knobs, prm: impl FnOnce(&str) -> Prm) -> (Arc<AuthError>, Fixture) {
    let f = Fixture::start_with(knobs, prm).await;
    let store = Arc::new(MemoryTokenStore::new());
    let e = auth_error(connect(&f.url, auth(store.clone(), true)).await);
    nothing_stored(store.as_ref(), &f.url).await;
    (e, f)
}

#[tokio::test]
async fn a_prm_for_another_resource_is_refused() {
    let (e, f) = refused_with(Knobs::default(), |_| Prm {
        resource: Some("https://evil.example.com/mcp".into()),
        ..Prm::default()
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
impl mcp_tasks_client::auth::Authorize for SlowUser {
    fn redirect_uri(&self) -> String {
        self.0.redirect_uri()
    }

    async fn authorize(
        &self,
        url: &str,
    ) -> Result<mcp_tasks_client::auth::AuthorizationResponse, AuthError> {
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

#[tokio::test]
async fn a_server_without_resource_metadata_says_to_ask_its_operator() {
    let (e, f) = refused_with(Knobs::default(), |_| Prm {
        missing: true,
        ..Prm::default()
    })
    .await;
    assert!(matches!(&*e, AuthError::NoResourceMetadata { .. }), "{e}");
    let said = e.to_string();
    assert!(
        said.contains("/.well-known/oauth-protected-resource/mcp: HTTP 404"),
        "{said}"
    );
    assert!(said.contains("ask the server's operator"), "{said}");
    assert_eq!(f.auth.registrations(), 0);
    assert!(f.authorizations().is_empty());
}

#[tokio::test]
async fn resource_metadata_naming_no_authorization_server_says_to_ask_its_operator() {
    let (e, f) = refused_with(Knobs::default(), |_| Prm {
        authorization_servers: Some(Vec::new()),
        ..Prm::default()
    })
    .await;
    assert!(
        matches!(&*e, AuthError::NoAuthorizationServer { server } if *server == f.url),
        "{e}"
    );
    let said = e.to_string();
    assert!(said.contains("lists no authorization server"), "{said}");
    assert!(said.contains("ask the server's operator"), "{said}");
    assert_eq!(f.auth.registrations(), 0);
}

#[tokio::test]
async fn an_authorization_server_without_metadata_is_named_with_the_urls_tried() {
    // The PRM names an issuer the authorization server is not (a path it has no
    // metadata for).
    let (e, f) = refused_with(Knobs::default(), |issuer| Prm {
        authorization_servers: Some(vec![format!("{issuer}/tenant-gone")]),
        ..Prm::default()
    })
    .await;
    let issuer = format!("{}/tenant-gone", f.auth.issuer_url());
    assert!(
        matches!(&*e, AuthError::NoServerMetadata { issuer: i, .. } if *i == issuer),
        "{e}"
    );
    let said = e.to_string();
    assert!(
        said.contains("/.well-known/oauth-authorization-server/tenant-gone: HTTP 404"),
        "{said}"
    );
    assert!(
        said.contains("check that the authorization server is up"),
        "{said}"
    );
    assert!(said.contains("the server's operator"), "{said}");
    assert_eq!(f.auth.registrations(), 0);
}

#[tokio::test]
async fn a_refused_registration_points_to_a_pre_registered_client() {
    let (e, f) = refused(Knobs {
        registration_error: Some("invalid_client_metadata"),
        ..Knobs::default()
    })
    .await;
    assert!(
        matches!(&*e, AuthError::RegistrationRefused { endpoint, reason }
            if endpoint.ends_with("/register") && reason.contains("invalid_client_metadata")),
        "{e}"
    );
    let said = e.to_string();
    assert!(said.contains("HTTP 400"), "{said}");
    assert!(said.contains("mcp-call --client-id"), "{said}");
    assert!(said.contains("AuthConfig::with_pre_registered"), "{said}");
    assert_eq!(f.auth.registrations(), 1);
    assert!(f.authorizations().is_empty(), "no browser step");
}

#[tokio::test]
async fn a_pre_registered_client_needs_no_registration() {
    // What the refused registration's message points to: the client id given works
    // where registration is refused. The authorization server knows a client only once
    // registered, so register one out of band first.
    let f = Fixture::start(Knobs::default()).await;
    let registered: Value = reqwest::Client::new()
        .post(format!("{}/register", f.auth.issuer_url()))
        .json(&json!({ "redirect_uris": [REDIRECT_URI] }))
        .send()
        .await
        .expect("register")
        .json()
        .await
        .expect("JSON");
    let id = registered["client_id"].as_str().expect("client_id");
    let secret = registered["client_secret"].as_str().map(str::to_owned);
    let store = Arc::new(MemoryTokenStore::new());
    let config = auth(store, true).with_pre_registered(f.auth.issuer_url(), id, secret.clone());
    connect(&f.url, config).await.expect("logs in");
    assert_eq!(f.auth.registrations(), 1, "only the out-of-band one");
    assert_eq!(f.grants(), ["authorization_code"]);
    assert_eq!(
        f.auth.token_credentials(),
        [(id.to_owned(), secret.unwrap_or_default())],
        "the pre-registered client, at the issuer it was registered with"
    );
}

#[tokio::test]
async fn a_user_who_says_no_is_told_to_approve_and_run_again() {
    let (e, f) = refused(Knobs {
        denied: Some("access_denied"),
        ..Knobs::default()
    })
    .await;
    assert!(
        matches!(&*e, AuthError::Denied { error, description }
            if error == "access_denied" && description.as_deref() == Some("the user said no")),
        "{e}"
    );
    let said = e.to_string();
    assert!(said.contains("access_denied (the user said no)"), "{said}");
    assert!(
        said.contains("approve the request in the browser and run again"),
        "{said}"
    );
    assert_eq!(f.authorizations().len(), 1);
    assert!(f.grants().is_empty(), "nothing to exchange");
}

#[tokio::test]
async fn a_login_of_another_authorization_server_is_dropped_and_the_client_registers_again() {
    let f = Fixture::start(Knobs::default()).await;
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());
    connect(&f.url, auth(store.clone(), true))
        .await
        .expect("logs in");
    let before = store.load(&f.url).await.expect("load").expect("stored");
    assert_eq!(before.issuer, f.auth.issuer_url());

    // The server now trusts another authorization server only.
    let moved = Arc::new(
        AuthorizationServer::start(AuthorizationServerOptions::for_protected_demo(
            Knobs::default(),
        ))
        .await,
    );
    f.demo.migrate_to(Arc::clone(&moved));
    let client = connect(&f.url, auth(store.clone(), true))
        .await
        .expect("logs in at the new authorization server");
    assert_eq!(greet(&client).await.expect("greets"), "Hello, Ada!");

    // Registered anew there; the old refresh token was never sent anywhere.
    assert_eq!(moved.registrations(), 1);
    assert_eq!(moved.grants(), ["authorization_code", "authorization_code"]);
    assert_eq!(
        f.grants(),
        ["authorization_code"],
        "nothing more asked of the old one"
    );
    let after = store.load(&f.url).await.expect("load").expect("stored");
    assert_eq!(after.issuer, moved.issuer_url());
    assert!(
        moved
            .issued(&after.tokens.expect("tokens").access_token)
            .is_some(),
        "the stored token is the new server's"
    );
}

#[tokio::test]
async fn a_token_near_its_expiry_is_refreshed_before_the_server_refuses_it() {
    // Tokens announced as valid for 6 s: a refresh is due in their last 3 s.
    let f = Fixture::start(Knobs {
        token_lifetime_secs: Some(6),
        ..Knobs::default()
    })
    .await;
    let store = Arc::new(MemoryTokenStore::new());
    let client = connect(&f.url, auth(store.clone(), true))
        .await
        .expect("logs in");
    assert_eq!(f.grants(), ["authorization_code"]);
    let refused = f.demo.unauthorized();
    tokio::time::sleep(std::time::Duration::from_millis(3500)).await;
    tokio::time::timeout(WAIT, client.list_tools())
        .await
        .expect("in time")
        .expect("lists");
    assert_eq!(f.grants(), ["authorization_code", "refresh_token"]);
    assert_eq!(
        f.demo.unauthorized(),
        refused,
        "refreshed ahead: the server never had to refuse the old token"
    );
    // The new token is fresh: no refresh for the next request.
    tokio::time::timeout(WAIT, client.list_tools())
        .await
        .expect("in time")
        .expect("lists");
    assert_eq!(f.grants().len(), 2);
    let stored = store.load(&f.url).await.expect("load").expect("stored");
    let tokens = stored.tokens.expect("tokens");
    assert!(f.auth.issued(&tokens.access_token).is_some());
}

#[tokio::test]
async fn a_refresh_that_omits_the_scope_keeps_the_scope_granted() {
    let f = Fixture::start(Knobs {
        refresh_omits_scope: true,
        ..Knobs::default()
    })
    .await;
    let store = Arc::new(MemoryTokenStore::new());
    let client = connect(&f.url, auth(store.clone(), true))
        .await
        .expect("logs in");
    f.auth.expire_access_tokens();
    client.list_tools().await.expect("lists after a refresh");
    assert_eq!(f.grants(), ["authorization_code", "refresh_token"]);
    let stored = store.load(&f.url).await.expect("load").expect("stored");
    assert_eq!(
        stored.tokens.expect("tokens").scope.as_deref(),
        Some("mcp:read offline_access"),
        "the refresh answer said no scope: the same as before (RFC 6749 §5.1)"
    );
}

#[tokio::test]
async fn a_scope_never_granted_ends_the_step_ups_and_says_so() {
    // The user may read but never write: tools/call meets insufficient_scope each time.
    let f = Fixture::start(Knobs {
        withheld_scope: Some("mcp:write".into()),
        ..Knobs::default()
    })
    .await;
    let client = connect(&f.url, auth(Arc::new(MemoryTokenStore::new()), true))
        .await
        .expect("logs in for mcp:read");
    let e = auth_error(greet(&client).await);
    assert!(
        matches!(&*e, AuthError::ScopeNeverGranted { attempts: 3, scope: Some(scope) }
            if scope == "mcp:read offline_access mcp:write"),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("your account may lack that permission: ask the server's operator"),
        "{e}"
    );
    // The login, then max_step_ups (2) authorizations asking for the union.
    assert_eq!(f.authorizations().len(), 3);
}
