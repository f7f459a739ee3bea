//! The rest of an OAuth 2.1 authorization server on top of a [`TestIssuer`] (which
//! serves the metadata and the JWKS): dynamic client registration (RFC 7591), an
//! authorization endpoint that approves at once, as a user saying yes would, and
//! redirects to the client's registered redirect URI with `code`, `state` and `iss`
//! (RFC 9207), and a token endpoint that checks the client's secret
//! (`client_secret_post` or `client_secret_basic`) or signed assertion
//! (`private_key_jwt`, RFC 7523), PKCE S256 and the `resource` (RFC 8707), and issues
//! refresh tokens; the client credentials grant gives a registered client a token of its
//! own (`sub` its client id). A token request with a valid DPoP proof (RFC 9449) gets
//! tokens bound to the proof's key (`cnf.jkt`, `token_type` `DPoP`); with
//! [`Knobs::dpop_nonce`] the proof must carry the server's nonce.
//!
//! Access tokens are [`AccessTokens::Opaque`] (`at-N`, which a resource server in the
//! test looks up with [`AuthorizationServer::issued`]) or [`AccessTokens::Jwt`]: signed
//! with the issuer's key, `iss` the issuer, `sub` the approving user, `aud` the resource
//! asked for, `scope` the scope granted, for servers that validate JWTs (the demo with
//! `--oauth-issuer`). [`Knobs`] make it misbehave in the ways a client must refuse or a
//! resource server must catch, or fail the ways a user meets (registration refused, the
//! user saying no). Each registration, authorization request and token grant is
//! recorded.
//!
//! [`ProtectedDemo`] is the demo MCP server as a resource server of one: its bearer
//! check takes the opaque tokens issued, its [`Prm`] can be missing or name other
//! authorization servers, and it can migrate to another authorization server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use tokio::net::TcpListener;

mod proofs;
mod protected_demo;
mod token;

pub use protected_demo::{Prm, ProtectedDemo};

use crate::issuer::{IssuerOptions, SigningKey, TestIssuer};

/// What kind of access tokens the server issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AccessTokens {
    /// `at-N`, meaningful only to [`AuthorizationServer::issued`].
    #[default]
    Opaque,
    /// JWTs signed with the issuer's key.
    Jwt,
}

/// How the server misbehaves, if at all.
#[derive(Debug, Clone, Default)]
pub struct Knobs {
    /// Publish this `issuer` in the metadata instead of the real one.
    pub metadata_issuer: Option<String>,
    /// Leave `code_challenge_methods_supported` out of the metadata.
    pub no_pkce: bool,
    /// Redirect with this `state` instead of the one received.
    pub forged_state: Option<String>,
    /// Redirect with this `iss` instead of the issuer.
    pub wrong_iss: Option<String>,
    /// The token endpoint answers the code exchange with this OAuth error.
    pub token_error: Option<&'static str>,
    /// Access tokens are for this audience instead of the `resource` asked for.
    pub audience: Option<String>,
    /// This scope is never granted, whoever asks.
    pub withheld_scope: Option<String>,
    /// Dynamic registration answers 400 with this RFC 7591 error
    /// (`invalid_client_metadata`...).
    pub registration_error: Option<&'static str>,
    /// The user says no: the authorization endpoint redirects with this OAuth error
    /// (`access_denied`...) instead of a code, with `state` and `iss`.
    pub denied: Option<&'static str>,
    /// A refresh answers without `scope` (RFC 6749 §5.1: the same scope as before).
    pub refresh_omits_scope: bool,
    /// The `expires_in` announced with each access token instead of the issuer's
    /// lifetime. Only announced: the token keeps working, so a test sees whether a
    /// client refreshes ahead of the expiry rather than after a 401.
    pub token_lifetime_secs: Option<u64>,
    /// Leave `registration_endpoint` out of the metadata: no dynamic registration
    /// offered (clients must be registered out of band, `/register` still works).
    pub no_registration: bool,
    /// The authorization endpoint approves any `client_id` and redirect URI, as a
    /// malicious authorization server collecting client credentials would (the token
    /// endpoint still records what it is sent, and refuses unknown clients).
    pub approve_any_client: bool,
    /// DPoP proofs at the token endpoint must carry the server's nonce: a proof without
    /// it gets 400 `use_dpop_nonce` and a `DPoP-Nonce` (RFC 9449 §8).
    pub dpop_nonce: bool,
}

/// How an [`AuthorizationServer`] is set up.
#[derive(Debug, Clone)]
pub struct AuthorizationServerOptions {
    /// Which access tokens it issues: opaque ones or JWTs.
    pub tokens: AccessTokens,
    /// `scopes_supported` of the metadata.
    pub scopes_supported: Vec<String>,
    /// The user who approves every authorization request (the tokens' `sub`).
    pub subject: String,
    /// The misbehaviours switched on.
    pub knobs: Knobs,
}

impl AuthorizationServerOptions {
    /// Opaque tokens, `scopes_supported` the scopes a [`ProtectedDemo`] checks
    /// ([`ProtectedDemo::SCOPES`]) and `offline_access`, with `knobs`.
    pub fn for_protected_demo(knobs: Knobs) -> AuthorizationServerOptions {
        AuthorizationServerOptions {
            scopes_supported: ProtectedDemo::SCOPES
                .iter()
                .chain(&["offline_access"])
                .map(|s| (*s).to_owned())
                .collect(),
            knobs,
            ..AuthorizationServerOptions::default()
        }
    }
}

impl Default for AuthorizationServerOptions {
    fn default() -> Self {
        AuthorizationServerOptions {
            tokens: AccessTokens::Opaque,
            scopes_supported: Vec::new(),
            subject: "alice".to_owned(),
            knobs: Knobs::default(),
        }
    }
}

/// What an access or refresh token was issued for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The scope granted, space-separated.
    pub scope: String,
    /// The resource (RFC 8707) it was asked for.
    pub resource: String,
    /// The thumbprint of the DPoP key it is bound to, if any.
    pub jkt: Option<String>,
}

#[derive(Debug, Clone)]
struct Client {
    secret: String,
    redirect_uris: Vec<String>,
    /// The public JWK of a `private_key_jwt` client (which has no secret).
    key: Option<Value>,
}

#[derive(Debug, Clone)]
struct Code {
    client_id: String,
    challenge: String,
    scope: String,
    resource: String,
}

/// What the server knows and saw.
#[derive(Debug)]
struct Inner {
    options: AuthorizationServerOptions,
    issuer: String,
    /// Set once the issuer is up, for [`AccessTokens::Jwt`].
    key: Option<SigningKey>,
    clients: HashMap<String, Client>,
    codes: HashMap<String, Code>,
    access: HashMap<String, Issued>,
    refresh: HashMap<String, Issued>,
    next: u64,
    authorizations: Vec<String>,
    /// The `client_id` of each authorization request.
    authorization_clients: Vec<String>,
    grants: Vec<String>,
    /// The client id and secret each token request presented (either method).
    token_credentials: Vec<(String, String)>,
    registrations: usize,
    /// The `jti`s of the DPoP proofs and client assertions accepted.
    seen: proofs::Seen,
    /// The nonce DPoP proofs carry with [`Knobs::dpop_nonce`].
    dpop_nonce: String,
    /// Per DPoP proof received at the token endpoint: its key's thumbprint, or `None`
    /// when refused.
    dpop_proofs: Vec<Option<String>>,
}

type Shared = Arc<Mutex<Inner>>;

fn lock(s: &Shared) -> MutexGuard<'_, Inner> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A test authorization server on `127.0.0.1:0`: [`TestIssuer`] plus registration,
/// authorization and token endpoints (`/register`, `/authorize`, `/token`).
#[derive(Debug)]
pub struct AuthorizationServer {
    /// The issuer: its identifier, its key, its JWKS.
    pub issuer: TestIssuer,
    shared: Shared,
}

impl AuthorizationServer {
    /// Starts it on 127.0.0.1, on its own issuer.
    pub async fn start(options: AuthorizationServerOptions) -> AuthorizationServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let mut metadata = json!({
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "registration_endpoint": format!("{base}/register"),
            "token_endpoint_auth_methods_supported":
                ["client_secret_post", "client_secret_basic", "private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": proofs::ALGORITHMS,
            "dpop_signing_alg_values_supported": proofs::ALGORITHMS,
            "authorization_response_iss_parameter_supported": true,
        });
        if !options.scopes_supported.is_empty() {
            metadata["scopes_supported"] = json!(options.scopes_supported);
        }
        if options.knobs.no_pkce {
            metadata["code_challenge_methods_supported"] = Value::Null;
        }
        if options.knobs.no_registration
            && let Some(fields) = metadata.as_object_mut()
        {
            fields.remove("registration_endpoint");
        }
        let claimed_issuer = options.knobs.metadata_issuer.clone();
        let shared: Shared = Arc::new(Mutex::new(Inner {
            options,
            issuer: base.clone(),
            key: None,
            clients: HashMap::new(),
            codes: HashMap::new(),
            access: HashMap::new(),
            refresh: HashMap::new(),
            next: 0,
            authorizations: Vec::new(),
            authorization_clients: Vec::new(),
            grants: Vec::new(),
            token_credentials: Vec::new(),
            registrations: 0,
            seen: proofs::Seen::default(),
            dpop_nonce: format!("nonce-{}", URL_SAFE_NO_PAD.encode(rand_bytes())),
            dpop_proofs: Vec::new(),
        }));
        let routes = Router::new()
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token::token))
            .with_state(Arc::clone(&shared));
        let issuer = TestIssuer::start_with(IssuerOptions {
            extra_metadata: Some(metadata),
            claimed_issuer,
            extra_routes: Some(routes),
            listener: Some(listener),
            ..IssuerOptions::default()
        })
        .await;
        {
            let mut s = lock(&shared);
            s.issuer = issuer.issuer.clone();
            s.key = Some(issuer.key.clone());
        }
        AuthorizationServer { issuer, shared }
    }

    /// The issuer identifier (`http://127.0.0.1:PORT`).
    pub fn issuer_url(&self) -> &str {
        &self.issuer.issuer
    }

    /// The `scope` of each request the authorization endpoint received, in order.
    pub fn authorizations(&self) -> Vec<String> {
        lock(&self.shared).authorizations.clone()
    }

    /// The `client_id` of each request the authorization endpoint received, in order.
    pub fn authorization_clients(&self) -> Vec<String> {
        lock(&self.shared).authorization_clients.clone()
    }

    /// The client id and secret (empty when none, or for a client assertion: the id it
    /// proved, empty when refused) each token request presented, in order, whatever the
    /// request.
    pub fn token_credentials(&self) -> Vec<(String, String)> {
        lock(&self.shared).token_credentials.clone()
    }

    /// Registers a client out of band (as an operator would) with `redirect_uri`;
    /// returns its id and secret.
    pub fn register_client(&self, redirect_uri: &str) -> (String, String) {
        let mut s = lock(&self.shared);
        s.next += 1;
        let (id, secret) = (
            format!("pre-registered-{}", s.next),
            format!("pre-registered-secret-{}", s.next),
        );
        s.clients.insert(
            id.clone(),
            Client {
                secret: secret.clone(),
                redirect_uris: vec![redirect_uri.to_owned()],
                key: None,
            },
        );
        (id, secret)
    }

    /// Registers a machine client out of band that authenticates with assertions
    /// signed by the key of the public `jwk` (`private_key_jwt`); returns its id.
    pub fn register_client_key(&self, jwk: Value) -> String {
        let mut s = lock(&self.shared);
        s.next += 1;
        let id = format!("key-client-{}", s.next);
        s.clients.insert(
            id.clone(),
            Client {
                secret: String::new(),
                redirect_uris: Vec::new(),
                key: Some(jwk),
            },
        );
        id
    }

    /// Per DPoP proof the token endpoint received, in order: the thumbprint of its key
    /// when accepted, `None` when refused (for its nonce too).
    pub fn dpop_proofs(&self) -> Vec<Option<String>> {
        lock(&self.shared).dpop_proofs.clone()
    }

    /// The `grant_type` of each token request, in order.
    pub fn grants(&self) -> Vec<String> {
        lock(&self.shared).grants.clone()
    }

    /// How many clients registered (RFC 7591), refused ones included.
    pub fn registrations(&self) -> usize {
        lock(&self.shared).registrations
    }

    /// What `access_token` was issued for, while it is valid.
    pub fn issued(&self, access_token: &str) -> Option<Issued> {
        lock(&self.shared).access.get(access_token).cloned()
    }

    /// Every access token issued so far stops working (as if expired). JWTs are not
    /// revoked: their holders check them alone.
    pub fn expire_access_tokens(&self) {
        lock(&self.shared).access.clear();
    }

    /// Every refresh token issued so far stops working too.
    pub fn expire_refresh_tokens(&self) {
        lock(&self.shared).refresh.clear();
    }
}

fn oauth_error(status: StatusCode, error: &str) -> Response {
    (
        status,
        axum::Json(json!({ "error": error, "error_description": error })),
    )
        .into_response()
}

async fn register(State(s): State<Shared>, axum::Json(body): axum::Json<Value>) -> Response {
    let redirect_uris: Vec<String> = body["redirect_uris"]
        .as_array()
        .map(|uris| {
            uris.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut s = lock(&s);
    s.registrations += 1;
    if let Some(error) = s.options.knobs.registration_error {
        return oauth_error(StatusCode::BAD_REQUEST, error);
    }
    if redirect_uris.is_empty() {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_redirect_uri");
    }
    s.next += 1;
    let client_id = format!("client-{}", s.next);
    let secret = format!("secret-{}", s.next);
    s.clients.insert(
        client_id.clone(),
        Client {
            secret: secret.clone(),
            redirect_uris: redirect_uris.clone(),
            key: None,
        },
    );
    (
        StatusCode::CREATED,
        axum::Json(json!({
            "client_id": client_id,
            "client_secret": secret,
            "redirect_uris": redirect_uris,
            "token_endpoint_auth_method": "client_secret_post",
        })),
    )
        .into_response()
}

async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut s = lock(&s);
    let param = |n: &str| q.get(n).cloned().unwrap_or_default();
    s.authorizations.push(param("scope"));
    s.authorization_clients.push(param("client_id"));
    let redirect_uri = param("redirect_uri");
    let known_redirect = s
        .clients
        .get(&param("client_id"))
        .is_some_and(|c| c.redirect_uris.contains(&redirect_uri));
    if !(known_redirect || s.options.knobs.approve_any_client)
        || param("response_type") != "code"
        || param("code_challenge_method") != "S256"
        || param("code_challenge").is_empty()
    {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
    }
    let Ok(mut to) = url::Url::parse(&redirect_uri) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
    };
    if let Some(error) = s.options.knobs.denied {
        to.query_pairs_mut()
            .append_pair("error", error)
            .append_pair("error_description", "the user said no")
            .append_pair("state", &param("state"))
            .append_pair("iss", &s.issuer);
        return Redirect::to(to.as_str()).into_response();
    }
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
        .options
        .knobs
        .forged_state
        .clone()
        .unwrap_or_else(|| param("state"));
    let iss = s
        .options
        .knobs
        .wrong_iss
        .clone()
        .unwrap_or_else(|| s.issuer.clone());
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &state)
        .append_pair("iss", &iss);
    Redirect::to(to.as_str()).into_response()
}

/// 16 random bytes.
fn rand_bytes() -> [u8; 16] {
    let mut bytes = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).expect("random");
    bytes
}

/// The user's browser for a CLI that logs in through a loopback redirect (mcp-call):
/// GETs `authorization_url` without following the redirect, checks that it goes to a
/// `127.0.0.1` callback, and GETs that (the CLI's listener), which must answer 200.
pub async fn visit_as_browser(authorization_url: &str) {
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(crate::server_harness::WAIT)
        .build()
        .expect("client");
    let approved = http
        .get(authorization_url)
        .send()
        .await
        .expect("GET the authorization URL");
    assert!(
        approved.status().is_redirection(),
        "the authorization endpoint answered {}",
        approved.status()
    );
    let location = approved.headers()["location"]
        .to_str()
        .expect("an ASCII Location")
        .to_owned();
    assert!(
        location.starts_with("http://127.0.0.1:") && location.contains("/callback?"),
        "redirected to {location}"
    );
    let callback = http
        .get(&location)
        .send()
        .await
        .expect("GET the loopback redirect");
    assert_eq!(callback.status(), 200, "the loopback listener answered");
}
