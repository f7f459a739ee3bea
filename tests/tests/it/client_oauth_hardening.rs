//! What an MCP server (or whoever it names) cannot make mcp-tasks-client's OAuth login do
//! (issue 35, findings 2-5), against authorization servers running in the test on
//! 127.0.0.1:
//!
//! - a pre-registered client's secret goes only to the issuer it was registered with:
//!   a server naming another authorization server gets a dynamically registered client
//!   there, or a clear failure, and that server never sees the secret;
//! - authorization servers must be https (plain http on loopback only): a remote
//!   `http://` issuer or endpoint is refused before anything is sent;
//! - metadata and registration answers over 1 MiB are refused, and a challenge's
//!   `resource_metadata` URL that is neither https nor on the server's origin is never
//!   requested;
//! - a stray request to the loopback callback does not end the login.
//!
//! Names under `.invalid` never resolve, so a refused URL could not be reached even if
//! the client tried.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{any, get, post};
use mcp_tasks_client::auth::{
    AuthConfig, AuthError, AuthEvent, Authorize, FollowRedirect, LoopbackRedirect, MAX_BODY_BYTES,
    MemoryTokenStore, TokenStore,
};
use mcp_tasks_client::{ClientError, ClientHandler, McpClient};
use mcp_tests::authorization_server::{
    AuthorizationServer, AuthorizationServerOptions, Knobs, Prm, ProtectedDemo, visit_as_browser,
};
use mcp_tests::programs;
use mcp_tests::server_harness::WAIT;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The redirect URI the client announces; nothing listens there, the redirect is read.
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

#[derive(Debug)]
struct NoInput;

#[async_trait]
impl ClientHandler for NoInput {}

async fn connect(url: &str, auth: AuthConfig) -> Result<McpClient, ClientError> {
    programs::connect_with_auth(url, Arc::new(NoInput), auth).await
}

/// A login with a memory store and a browser step that follows the redirect.
fn follow_redirect(store: Arc<dyn TokenStore>) -> AuthConfig {
    AuthConfig::new(store, "mcp-tests").with_authorize(Arc::new(
        FollowRedirect::new(REDIRECT_URI).expect("browser"),
    ))
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

async fn authorization_server(knobs: Knobs) -> Arc<AuthorizationServer> {
    Arc::new(
        AuthorizationServer::start(AuthorizationServerOptions::for_protected_demo(knobs)).await,
    )
}

// Finding 2: a pre-registered client is bound to its issuer.

#[tokio::test]
async fn a_pre_registered_secret_never_reaches_another_issuer() {
    // The client is registered (out of band) with `home`; the server names `other`,
    // which would take any client id to its token endpoint.
    let home = authorization_server(Knobs::default()).await;
    let (id, secret) = home.register_client(REDIRECT_URI);
    let other = authorization_server(Knobs {
        approve_any_client: true,
        ..Knobs::default()
    })
    .await;
    let demo = ProtectedDemo::start(Arc::clone(&other), Prm::default()).await;

    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());
    let config = follow_redirect(store.clone())
        .with_pre_registered(home.issuer_url(), id.clone(), Some(secret.clone()))
        .on_event(move |e| {
            seen.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(e.clone())
        });
    connect(&demo.url, config)
        .await
        .expect("logs in at the other issuer with a client registered there");

    // Fell back to dynamic registration at `other`, and used that client.
    assert_eq!(other.registrations(), 1);
    assert_eq!(other.grants(), ["authorization_code"]);
    let presented = other.token_credentials();
    assert!(
        presented.iter().all(|(i, s)| *i != id && *s != secret),
        "the pre-registered client reached the other issuer: {presented:?}"
    );
    assert!(!other.authorization_clients().contains(&id));
    assert!(home.grants().is_empty() && home.authorizations().is_empty());
    let told = events.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(
        told.contains(&AuthEvent::PreRegisteredNotUsed {
            issuer: other.issuer_url().to_owned(),
            registered_with: home.issuer_url().to_owned(),
        }),
        "{told:?}"
    );
    let stored = store.load(&demo.url).await.expect("load").expect("stored");
    assert_eq!(stored.issuer, other.issuer_url());
    assert_ne!(stored.client.client_id, id);
}

#[tokio::test]
async fn a_pre_registered_client_of_another_issuer_fails_clearly_without_registration() {
    let home = authorization_server(Knobs::default()).await;
    let (id, secret) = home.register_client(REDIRECT_URI);
    let other = authorization_server(Knobs {
        no_registration: true,
        approve_any_client: true,
        ..Knobs::default()
    })
    .await;
    let demo = ProtectedDemo::start(Arc::clone(&other), Prm::default()).await;
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());
    let config =
        follow_redirect(store.clone()).with_pre_registered(home.issuer_url(), id, Some(secret));
    let e = auth_error(connect(&demo.url, config).await);
    assert!(
        matches!(&*e, AuthError::PreRegisteredForOtherIssuer { issuer, registered_with }
            if issuer == other.issuer_url() && registered_with == home.issuer_url()),
        "{e}"
    );
    let said = e.to_string();
    assert!(
        said.contains("are not sent to another authorization server"),
        "{said}"
    );
    assert!(
        said.contains(&format!("--client-issuer {}", other.issuer_url())),
        "{said}"
    );
    // Nothing at all went to the other issuer's authorization or token endpoints.
    assert!(other.token_credentials().is_empty());
    assert!(other.authorizations().is_empty());
    nothing_stored(store.as_ref(), &demo.url).await;
}

// A stand-in for a misbehaving MCP server (and the authorization server it names) on
// 127.0.0.1, recording the path of every request it receives.

struct Fake {
    base: String,
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Fake {
    /// Serves `routes(base)`, recording each request's path.
    async fn start(routes: impl FnOnce(&str) -> Router) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let record = Arc::clone(&seen);
        let app = routes(&base).layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                record
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(request.uri().path().to_owned());
                next.run(request)
            },
        ));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Fake { base, seen, task }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `/mcp` answering 401 with `resource_metadata` (the well-known URL when `None`).
fn mcp_401(base: &str, resource_metadata: Option<String>) -> Router {
    let url = resource_metadata
        .unwrap_or_else(|| format!("{base}/.well-known/oauth-protected-resource/mcp"));
    let challenge = format!(r#"Bearer resource_metadata="{url}""#);
    Router::new().route(
        "/mcp",
        any(move || {
            let challenge = challenge.clone();
            async move {
                (
                    StatusCode::UNAUTHORIZED,
                    [(header::WWW_AUTHENTICATE, challenge)],
                    "",
                )
            }
        }),
    )
}

/// The resource metadata of `base`'s `/mcp`, naming `issuer`.
fn prm(base: &str, issuer: &str) -> Value {
    json!({ "resource": format!("{base}/mcp"), "authorization_servers": [issuer] })
}

/// Authorization server metadata for issuer `base`, its endpoints there.
fn server_metadata(base: &str) -> Value {
    json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "code_challenge_methods_supported": ["S256"],
    })
}

/// A route answering `body` as JSON.
fn serve_json(router: Router, path: &str, body: Value) -> Router {
    router.route(
        path,
        get(move || {
            let body = body.clone();
            async move { axum::Json(body) }
        }),
    )
}

/// The MCP server at `base` naming `issuer`, its metadata at the well-known URL.
fn naming(base: &str, issuer: &str) -> Router {
    serve_json(
        mcp_401(base, None),
        "/.well-known/oauth-protected-resource/mcp",
        prm(base, issuer),
    )
}

async fn login_error(fake: &Fake) -> Arc<AuthError> {
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());
    let e = auth_error(connect(&fake.url(), follow_redirect(store.clone())).await);
    nothing_stored(store.as_ref(), &fake.url()).await;
    e
}

// Finding 3: https for authorization servers, loopback excepted.

#[tokio::test]
async fn a_plain_http_issuer_off_loopback_is_refused_before_any_request() {
    let fake = Fake::start(|base| naming(base, "http://auth.invalid")).await;
    let e = login_error(&fake).await;
    assert!(
        matches!(&*e, AuthError::InsecureUrl { what, url, .. }
            if *what == "authorization server issuer" && url == "http://auth.invalid"),
        "{e}"
    );
    let said = e.to_string();
    assert!(said.contains("requires https"), "{said}");
    assert!(said.contains("loopback"), "{said}");
}

#[tokio::test]
async fn plain_http_endpoints_off_loopback_are_refused() {
    // The issuer is on loopback (allowed), but its metadata sends the token request to
    // a remote host over plain http.
    let fake = Fake::start(|base| {
        let mut metadata = server_metadata(base);
        metadata["token_endpoint"] = json!("http://auth.invalid/token");
        serve_json(
            naming(base, base),
            "/.well-known/oauth-authorization-server",
            metadata,
        )
    })
    .await;
    let e = login_error(&fake).await;
    assert!(
        matches!(&*e, AuthError::InsecureUrl { what, url, .. }
            if *what == "token endpoint" && url == "http://auth.invalid/token"),
        "{e}"
    );
    // Neither registration nor the browser step happened.
    let seen = fake.seen();
    assert!(
        !seen.iter().any(|p| p == "/register" || p == "/authorize"),
        "{seen:?}"
    );
}

// Finding 4: bounded answers, and no blind request to a challenge's URL.

#[tokio::test]
async fn authorization_server_metadata_over_the_limit_is_refused() {
    let fake = Fake::start(|base| {
        let mut metadata = server_metadata(base);
        metadata["padding"] = json!("x".repeat(MAX_BODY_BYTES + 1));
        serve_json(
            naming(base, base),
            "/.well-known/oauth-authorization-server",
            metadata,
        )
    })
    .await;
    let e = login_error(&fake).await;
    assert!(
        matches!(&*e, AuthError::ResponseTooLarge { url, limit }
            if url.ends_with("/.well-known/oauth-authorization-server") && *limit == MAX_BODY_BYTES),
        "{e}"
    );
    assert!(!fake.seen().iter().any(|p| p == "/register"));
}

#[tokio::test]
async fn a_streamed_registration_answer_over_the_limit_is_refused() {
    // No Content-Length: the body is cut off as it arrives.
    let fake = Fake::start(|base| {
        let chunk = bytes::Bytes::from(vec![b' '; 64 * 1024]);
        let chunks = MAX_BODY_BYTES / chunk.len() + 2;
        serve_json(
            naming(base, base),
            "/.well-known/oauth-authorization-server",
            server_metadata(base),
        )
        .route(
            "/register",
            post(move || {
                let chunk = chunk.clone();
                async move {
                    let stream = futures::stream::iter(
                        std::iter::repeat_n(chunk, chunks).map(Ok::<_, std::io::Error>),
                    );
                    (
                        StatusCode::CREATED,
                        [(header::CONTENT_TYPE, "application/json")],
                        axum::body::Body::from_stream(stream),
                    )
                        .into_response()
                }
            }),
        )
    })
    .await;
    let e = login_error(&fake).await;
    assert!(
        matches!(&*e, AuthError::ResponseTooLarge { url, .. } if url.ends_with("/register")),
        "{e}"
    );
    assert!(!fake.seen().iter().any(|p| p == "/authorize"));
}

#[tokio::test]
async fn a_resource_metadata_url_neither_https_nor_same_origin_is_never_requested() {
    // Another origin (another port) over plain http: a stand-in for an internal address.
    let internal = Fake::start(|base| serve_json(Router::new(), "/prm", prm(base, base))).await;
    let pointed = format!("{}/prm", internal.base);
    let fake = Fake::start(|base| mcp_401(base, Some(pointed.clone()))).await;
    let e = login_error(&fake).await;
    assert!(matches!(&*e, AuthError::NoResourceMetadata { .. }), "{e}");
    let said = e.to_string();
    assert!(
        said.contains(&format!("{pointed}: not requested")),
        "{said}"
    );
    assert!(
        internal.seen().is_empty(),
        "requested: {:?}",
        internal.seen()
    );
    // The well-known URLs of the server itself were tried instead.
    assert!(
        fake.seen()
            .contains(&"/.well-known/oauth-protected-resource/mcp".to_owned())
    );
}

#[tokio::test]
async fn a_resource_metadata_url_on_the_servers_origin_is_followed() {
    // The control for the test above: the same challenge on the server's own origin.
    let fake = Fake::start(|base| {
        serve_json(
            mcp_401(base, Some(format!("{base}/custom-prm"))),
            "/custom-prm",
            prm(base, &format!("{base}/gone")),
        )
    })
    .await;
    let e = login_error(&fake).await;
    assert!(matches!(&*e, AuthError::NoServerMetadata { .. }), "{e}");
    assert!(fake.seen().contains(&"/custom-prm".to_owned()));
}

// Finding 5: a stray callback does not end the login.

#[tokio::test]
async fn a_stray_callback_to_the_loopback_listener_does_not_end_the_login() {
    let auth = authorization_server(Knobs::default()).await;
    let demo = ProtectedDemo::start(Arc::clone(&auth), Prm::default()).await;
    let stray_status: Arc<Mutex<Vec<u16>>> = Arc::default();
    let statuses = Arc::clone(&stray_status);
    let redirect_uri: Arc<std::sync::OnceLock<String>> = Arc::default();
    let uri = Arc::clone(&redirect_uri);
    let loopback = LoopbackRedirect::bind(0, move |url| {
        // Another tab (or program) hits the callback with a made-up state first; then
        // the user's browser comes back with the real redirect.
        let (url, statuses, uri) = (url.to_owned(), Arc::clone(&statuses), Arc::clone(&uri));
        tokio::spawn(async move {
            let callback = uri.get().cloned().unwrap_or_default();
            let http = reqwest::Client::builder()
                .no_proxy()
                .timeout(WAIT)
                .build()
                .expect("client");
            let status = http
                .get(format!("{callback}?code=stolen&state=made-up"))
                .send()
                .await
                .map(|r| r.status().as_u16())
                .unwrap_or_default();
            statuses
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(status);
            visit_as_browser(&url).await;
        });
    })
    .await
    .expect("binds")
    .with_timeout(WAIT);
    let _ = redirect_uri.set(loopback.redirect_uri());
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());
    let config = AuthConfig::new(store.clone(), "mcp-tests").with_authorize(Arc::new(loopback));
    connect(&demo.url, config)
        .await
        .expect("logs in with the real redirect");
    assert_eq!(
        *stray_status.lock().unwrap_or_else(|p| p.into_inner()),
        [400],
        "the stray request got an error page"
    );
    assert_eq!(auth.grants(), ["authorization_code"]);
    assert!(store.load(&demo.url).await.expect("load").is_some());
}
