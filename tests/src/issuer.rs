//! A real OAuth authorization server for tests, as far as a resource server sees one: an
//! axum server on `127.0.0.1:0` publishing RFC 8414 metadata (or OpenID discovery) and a
//! JWKS, and signing JWT access tokens with key pairs made in the test by `ring`
//! ([`SigningKey`]: ECDSA P-256 or Ed25519, the JWK built from the public key).
//!
//! The test controls it: which keys are published ([`TestIssuer::publish`]), whether the
//! JWKS answers ([`TestIssuer::set_jwks_down`]), and it counts JWKS fetches. With
//! [`IssuerOptions::introspection_client`] it also issues opaque tokens
//! ([`TestIssuer::opaque_token`]) and answers RFC 7662 introspection for that client
//! (`client_secret_basic`), counting the requests; it counts every request it receives
//! too ([`TestIssuer::requests`]). Extra routes
//! and metadata members ([`IssuerOptions`]) add the endpoints of an authorization server
//! (`crate::authorization_server`, for the OAuth client's tests).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{self, KeyPair};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A signing key pair made in the test, with its public JWK.
#[derive(Clone)]
pub struct SigningKey {
    /// The key id, in the JWK and in the tokens' header.
    pub kid: String,
    /// The signature algorithm (ES256 or EdDSA).
    pub alg: Algorithm,
    encoding: EncodingKey,
    jwk: Value,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A fresh ECDSA P-256 key (ES256).
    pub fn es256(kid: &str) -> SigningKey {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("P-256 key");
        let pair = signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng)
            .expect("P-256 key parses");
        // Uncompressed point: 0x04 || X || Y.
        let point = pair.public_key().as_ref();
        assert_eq!(point.len(), 65, "an uncompressed P-256 point");
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..]),
        });
        SigningKey {
            kid: kid.to_owned(),
            alg: Algorithm::ES256,
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk,
        }
    }

    /// A fresh Ed25519 key (EdDSA).
    pub fn ed25519(kid: &str) -> SigningKey {
        let rng = SystemRandom::new();
        let pkcs8 = signature::Ed25519KeyPair::generate_pkcs8(&rng).expect("Ed25519 key");
        let pair =
            signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("Ed25519 key parses");
        let jwk = json!({
            "kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(pair.public_key().as_ref()),
        });
        SigningKey {
            kid: kid.to_owned(),
            alg: Algorithm::EdDSA,
            encoding: EncodingKey::from_ed_der(pkcs8.as_ref()),
            jwk,
        }
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> &Value {
        &self.jwk
    }

    /// `claims` signed with this key, its `kid` in the header.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("signing")
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// How long an access token of [`access_claims`] is valid, in seconds.
pub const TOKEN_LIFETIME_SECS: i64 = 300;

/// Claims of an access token of `issuer` for `sub` at `audience` granting `scopes`, valid
/// for [`TOKEN_LIFETIME_SECS`] from now.
pub fn access_claims(issuer: &str, sub: &str, audience: &str, scopes: &[&str]) -> Value {
    let now = now();
    json!({
        "iss": issuer,
        "sub": sub,
        "aud": audience,
        "iat": now,
        "nbf": now,
        "exp": now + TOKEN_LIFETIME_SECS,
        "scope": scopes.join(" "),
        "client_id": "mcp-tests",
    })
}

/// Where the issuer publishes its metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Discovery {
    /// RFC 8414: `/.well-known/oauth-authorization-server[/path]`.
    #[default]
    OAuth,
    /// OpenID Connect discovery only: `[/path]/.well-known/openid-configuration`.
    OpenId,
}

/// How a [`TestIssuer`] is set up.
#[derive(Debug, Default)]
pub struct IssuerOptions {
    /// The issuer's path (`/tenant`): its identifier is `http://127.0.0.1:PORT/tenant`.
    pub path: String,
    /// Where its metadata is served: RFC 8414 or OpenID Connect discovery.
    pub discovery: Discovery,
    /// Members added to the metadata document (e.g. `authorization_endpoint`); a member
    /// set to `null` is left out.
    pub extra_metadata: Option<Value>,
    /// The `issuer` the metadata claims, when it should lie.
    pub claimed_issuer: Option<String>,
    /// Routes served besides the metadata and the JWKS (e.g. `/authorize`, `/token`).
    pub extra_routes: Option<Router>,
    /// Serve on this listener (bound to 127.0.0.1 by the caller, who then knows the
    /// origin before the routes are made) instead of a new one on `127.0.0.1:0`.
    pub listener: Option<TcpListener>,
    /// The client (id, secret) allowed to introspect tokens: then `/introspect` is served
    /// and named as `introspection_endpoint` in the metadata.
    pub introspection_client: Option<(String, String)>,
}

/// The introspection endpoint's path (after the issuer's path).
pub const INTROSPECTION_PATH: &str = "/introspect";

struct Shared {
    issuer: String,
    metadata: Value,
    published: Mutex<Vec<SigningKey>>,
    jwks_down: AtomicBool,
    jwks_fetches: AtomicUsize,
    introspection_client: Option<(String, String)>,
    /// Opaque tokens issued, and what introspection says of each.
    opaque: Mutex<HashMap<String, Value>>,
    introspection_down: AtomicBool,
    introspections: AtomicUsize,
    /// Every HTTP request received, whatever its path.
    requests: AtomicUsize,
}

/// The authorization server: metadata, JWKS, and the keys that sign its tokens.
pub struct TestIssuer {
    /// The issuer identifier (`iss`), e.g. `http://127.0.0.1:PORT`.
    pub issuer: String,
    /// The origin it serves on (`http://127.0.0.1:PORT`).
    pub origin: String,
    /// The key tokens are signed with by default, published from the start.
    pub key: SigningKey,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for TestIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestIssuer")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl TestIssuer {
    /// RFC 8414 metadata at the root, one ES256 key `key-1`.
    pub async fn start() -> TestIssuer {
        Self::start_with(IssuerOptions::default()).await
    }

    /// Starts an issuer set up by `options`.
    pub async fn start_with(options: IssuerOptions) -> TestIssuer {
        let listener = match options.listener {
            Some(listener) => listener,
            None => TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind 127.0.0.1:0"),
        };
        let origin = format!("http://{}", listener.local_addr().expect("address"));
        let path = options.path.trim_end_matches('/').to_owned();
        let issuer = format!("{origin}{path}");
        let jwks_path = format!("{path}/jwks");
        let mut metadata = json!({
            "issuer": options.claimed_issuer.clone().unwrap_or_else(|| issuer.clone()),
            "jwks_uri": format!("{origin}{jwks_path}"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        });
        let introspection_path = format!("{path}{INTROSPECTION_PATH}");
        if options.introspection_client.is_some() {
            metadata["introspection_endpoint"] = json!(format!("{origin}{introspection_path}"));
        }
        if let Some(Value::Object(extra)) = options.extra_metadata {
            for (k, v) in extra {
                if v.is_null() {
                    if let Some(m) = metadata.as_object_mut() {
                        m.remove(&k);
                    }
                } else {
                    metadata[k] = v;
                }
            }
        }
        let key = SigningKey::es256("key-1");
        let shared = Arc::new(Shared {
            issuer: issuer.clone(),
            metadata,
            published: Mutex::new(vec![key.clone()]),
            jwks_down: AtomicBool::new(false),
            jwks_fetches: AtomicUsize::new(0),
            introspection_client: options.introspection_client,
            opaque: Mutex::default(),
            introspection_down: AtomicBool::new(false),
            introspections: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
        });
        let metadata_path = match options.discovery {
            Discovery::OAuth => format!("/.well-known/oauth-authorization-server{path}"),
            Discovery::OpenId => format!("{path}/.well-known/openid-configuration"),
        };
        let mut routes = Router::new()
            .route(&metadata_path, get(serve_metadata))
            .route(&jwks_path, get(serve_jwks));
        if shared.introspection_client.is_some() {
            routes = routes.route(&introspection_path, post(serve_introspection));
        }
        let mut router = routes.with_state(Arc::clone(&shared));
        if let Some(extra) = options.extra_routes {
            router = router.merge(extra);
        }
        let counted = Arc::clone(&shared);
        let router = router.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                counted.requests.fetch_add(1, Ordering::SeqCst);
                next.run(request)
            },
        ));
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        TestIssuer {
            issuer,
            origin,
            key,
            shared,
            stop: Some(stop),
        }
    }

    /// Claims of an access token for `sub` at `audience` granting `scopes`, valid for
    /// five minutes from now.
    pub fn claims(&self, sub: &str, audience: &str, scopes: &[&str]) -> Value {
        access_claims(&self.shared.issuer, sub, audience, scopes)
    }

    /// A valid access token (signed with [`key`](Self::key)).
    pub fn token(&self, sub: &str, audience: &str, scopes: &[&str]) -> String {
        self.key.sign(&self.claims(sub, audience, scopes))
    }

    /// Publishes exactly `keys` from now on (rotation: add the new key, later drop the
    /// old one).
    pub fn publish(&self, keys: Vec<SigningKey>) {
        *self
            .shared
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = keys;
    }

    /// The JWKS answers 503 while `down`.
    pub fn set_jwks_down(&self, down: bool) {
        self.shared.jwks_down.store(down, Ordering::SeqCst);
    }

    /// How many times the JWKS was asked for (answered or not).
    pub fn jwks_fetches(&self) -> usize {
        self.shared.jwks_fetches.load(Ordering::SeqCst)
    }

    /// A new opaque access token (random, not a JWT) that introspection describes with
    /// `answer` (e.g. `{"active": true, ...}` from [`introspection_answer`](Self::introspection_answer)).
    pub fn opaque_token(&self, answer: Value) -> String {
        let mut bytes = [0u8; 24];
        ring::rand::SecureRandom::fill(&SystemRandom::new(), &mut bytes).expect("random bytes");
        let token = format!("opaque-{}", URL_SAFE_NO_PAD.encode(bytes));
        self.shared
            .opaque
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token.clone(), answer);
        token
    }

    /// An active answer for `sub` at `audience` granting `scopes`: the claims of
    /// [`claims`](Self::claims) with `active: true`.
    pub fn introspection_answer(&self, sub: &str, audience: &str, scopes: &[&str]) -> Value {
        let mut answer = self.claims(sub, audience, scopes);
        answer["active"] = true.into();
        answer["token_type"] = "Bearer".into();
        answer
    }

    /// The introspection endpoint answers 503 while `down`.
    pub fn set_introspection_down(&self, down: bool) {
        self.shared.introspection_down.store(down, Ordering::SeqCst);
    }

    /// How many introspection requests arrived (answered or not).
    pub fn introspections(&self) -> usize {
        self.shared.introspections.load(Ordering::SeqCst)
    }

    /// How many HTTP requests arrived, whatever their path (metadata, JWKS, and the
    /// routes added: an authorization server's token endpoint...).
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn serve_metadata(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.metadata.clone()).into_response()
}

async fn serve_jwks(State(shared): State<Arc<Shared>>) -> Response {
    shared.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    if shared.jwks_down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let keys: Vec<Value> = shared
        .published
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|k| k.jwk.clone())
        .collect();
    axum::Json(json!({ "keys": keys })).into_response()
}

/// The client id and secret of `client_secret_basic` (RFC 6749 2.3.1: each
/// form-urlencoded, then `id:secret` in base64), if the request has them.
pub fn basic_credentials(headers: &axum::http::HeaderMap) -> Option<(String, String)> {
    let encoded = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let unescape = |v: &str| {
        url::form_urlencoded::parse(format!("v={v}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
    };
    Some((unescape(id)?, unescape(secret)?))
}

/// RFC 7662: the registered client (401 `invalid_client` otherwise) asks about `token`;
/// an opaque token issued here gets its answer, anything else `{"active": false}`.
async fn serve_introspection(
    State(shared): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    shared.introspections.fetch_add(1, Ordering::SeqCst);
    if shared.introspection_down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    if basic_credentials(&headers) != shared.introspection_client {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let Some(token) = form.get("token") else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_request"})),
        )
            .into_response();
    };
    let answer = shared
        .opaque
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(token)
        .cloned()
        .unwrap_or_else(|| json!({"active": false}));
    axum::Json(answer).into_response()
}

/// The origin (`http://127.0.0.1:PORT`) of a port nothing listens on (bound, then closed):
/// an authorization server a request cannot reach, with a network error.
pub fn unreachable_origin() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    format!("http://{}", listener.local_addr().expect("address"))
}

/// Asserts that `reply` is the 503 of a token that cannot be checked because the
/// authorization server's `what` (`"keys are"`, `"introspection endpoint is"`) out of
/// reach, retry in `retry_secs`, and that it says nothing more: none of `hidden` (the
/// authorization server's URLs, the error met) is in its body or headers.
pub fn assert_unavailable(
    reply: &crate::server_harness::Reply,
    what: &str,
    retry_secs: u64,
    hidden: &[&str],
) {
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.text
    );
    assert_eq!(
        reply.error_code(),
        mcp_tasks_protocol::error_codes::INVALID_REQUEST,
        "{}",
        reply.text
    );
    assert_eq!(
        reply.error_message(),
        format!(
            "Service Unavailable: the authorization server's {what} out of reach; retry in {retry_secs} s with the same token"
        ),
        "{}",
        reply.text
    );
    let retry = retry_secs.to_string();
    assert_eq!(
        reply
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some(retry.as_str()),
        "{:?}",
        reply.headers
    );
    assert!(reply.headers.get("www-authenticate").is_none());
    for secret in hidden {
        assert!(
            !reply.text.contains(secret),
            "{secret:?} in the body: {}",
            reply.text
        );
        for (name, value) in &reply.headers {
            let value = String::from_utf8_lossy(value.as_bytes());
            assert!(!value.contains(secret), "{secret:?} in {name}: {value}");
        }
    }
}

/// The scope the [`whoami`] tool requires.
pub const ADMIN_SCOPE: &str = "admin";

/// `whoami`: requires [`ADMIN_SCOPE`], runs as a task when allowed, and answers with the
/// principal and scopes its context sees (`{"principal": ..., "scopes": [...]}` as text).
pub fn whoami() -> mcp_tasks_server::ToolDef {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    mcp_tasks_server::ToolDef::new(
        "whoami",
        mcp_tasks_server::TaskPolicy::Optional,
        |ctx: mcp_tasks_server::ToolContext, _: NoArgs| async move {
            let seen = json!({ "principal": ctx.principal(), "scopes": ctx.scopes() });
            Ok(mcp_tasks_protocol::v2026::CallToolResult::new(vec![
                mcp_tasks_protocol::types::ContentBlock::Text(
                    mcp_tasks_protocol::types::TextContent::new(seen.to_string()),
                ),
            ]))
        },
    )
    .expect("whoami is well-formed")
    .require_scope(ADMIN_SCOPE)
}

/// A server protected by an [`OAuthResourceServer`](mcp_tasks_server::auth::OAuthResourceServer)
/// that trusts one issuer: the demo tools and [`whoami`], a store the test can look into.
#[derive(Debug)]
pub struct Protected {
    /// The server and a client of it.
    pub server: crate::server_harness::TestServer,
    /// Its task store.
    pub store: Arc<mcp_tasks::MemoryStore>,
    /// The resource URL (the tokens' audience): `http://127.0.0.1:PORT/mcp`.
    pub resource: String,
    /// Its origin.
    pub origin: String,
}

/// Serves the demo tools and [`whoami`] on `127.0.0.1:0` behind an OAuth resource server
/// trusting `issuer`, for the server's own `/mcp` URL; `configure` adjusts the settings.
pub async fn protect(
    issuer: &TestIssuer,
    configure: impl FnOnce(&mut mcp_tasks_server::auth::OAuthConfig),
) -> Protected {
    protect_with(
        issuer,
        configure,
        mcp_tasks_server::http::HttpConfig::default(),
    )
    .await
}

/// [`protect`] with these HTTP settings (e.g. `max_sessions`); their `principal` is
/// replaced by the resource server.
pub async fn protect_with(
    issuer: &TestIssuer,
    configure: impl FnOnce(&mut mcp_tasks_server::auth::OAuthConfig),
    http: mcp_tasks_server::http::HttpConfig,
) -> Protected {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let origin = format!("http://{}", listener.local_addr().expect("address"));
    let resource = format!("{origin}/mcp");
    let mut config =
        mcp_tasks_server::auth::OAuthConfig::new(issuer.issuer.clone(), resource.clone());
    configure(&mut config);
    let auth =
        mcp_tasks_server::auth::OAuthResourceServer::new(config).expect("valid OAuth settings");
    let store = Arc::new(mcp_tasks::MemoryStore::default());
    let mut builder = mcp_tasks_server::Server::builder("oauth-tests", "0").store(store.clone());
    for tool in crate::server_harness::demo_tools() {
        builder = builder.tool(tool);
    }
    let server = builder.tool(whoami()).build();
    let http = mcp_tasks_server::http::HttpConfig {
        principal: Some(Arc::new(auth)),
        ..http
    };
    Protected {
        server: crate::server_harness::TestServer::start_server_on(listener, server, http).await,
        store,
        resource,
        origin,
    }
}
