//! The token endpoint: the client authenticated with its secret (`client_secret_post`
//! or `client_secret_basic`) or a signed assertion (`private_key_jwt`); the
//! authorization code (PKCE S256, `resource`), refresh token and client credentials
//! grants; with a DPoP proof (RFC 9449 §5), tokens bound to its key.

use std::collections::HashMap;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::Digest;

use super::proofs::ProofError;
use super::{AccessTokens, Inner, Issued, Shared, lock, oauth_error};
use crate::issuer::{TOKEN_LIFETIME_SECS, access_claims, basic_credentials};

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// What a token request asks for, beyond its grant.
struct Grant<'a> {
    client_id: &'a str,
    subject: &'a str,
    scope: &'a str,
    resource: &'a str,
    /// The DPoP key the tokens are bound to (`cnf.jkt`).
    jkt: Option<&'a str>,
    refreshed: bool,
}

/// An access and a refresh token for the grant's scope (less any withheld scope) at its
/// resource, bound to its DPoP key if any.
fn issue(s: &mut Inner, grant: &Grant<'_>) -> Value {
    let withheld = s.options.knobs.withheld_scope.clone();
    let granted: Vec<&str> = grant
        .scope
        .split_whitespace()
        .filter(|g| withheld.as_deref() != Some(*g))
        .collect();
    let granted = granted.join(" ");
    s.next += 1;
    let access = match (s.options.tokens, &s.key) {
        (AccessTokens::Jwt, Some(key)) => {
            let audience = s
                .options
                .knobs
                .audience
                .as_deref()
                .unwrap_or(grant.resource);
            let scopes: Vec<&str> = granted.split_whitespace().collect();
            let mut claims = access_claims(&s.issuer, grant.subject, audience, &scopes);
            claims["client_id"] = json!(grant.client_id);
            if let Some(jkt) = grant.jkt {
                claims["cnf"] = json!({ "jkt": jkt });
            }
            key.sign(&claims)
        }
        _ => format!("at-{}", s.next),
    };
    let refresh = format!("rt-{}", s.next);
    let issued = Issued {
        scope: granted.clone(),
        resource: grant.resource.to_owned(),
        jkt: grant.jkt.map(str::to_owned),
    };
    s.access.insert(access.clone(), issued.clone());
    s.refresh.insert(refresh.clone(), issued);
    let lifetime = s
        .options
        .knobs
        .token_lifetime_secs
        .map_or(TOKEN_LIFETIME_SECS, |l| {
            i64::try_from(l).unwrap_or(i64::MAX)
        });
    let mut answer = json!({
        "access_token": access,
        "token_type": if grant.jkt.is_some() { "DPoP" } else { "Bearer" },
        "expires_in": lifetime,
        "refresh_token": refresh,
        "scope": granted,
    });
    if grant.refreshed
        && s.options.knobs.refresh_omits_scope
        && let Some(fields) = answer.as_object_mut()
    {
        fields.remove("scope");
    }
    answer
}

/// A token request refused: its status, OAuth error and `DPoP-Nonce`, if any.
struct Refused(StatusCode, &'static str, Option<String>);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let mut response = oauth_error(self.0, self.1);
        if let Some(value) = self.2.and_then(|n| n.parse().ok()) {
            response.headers_mut().insert("dpop-nonce", value);
        }
        response
    }
}

/// The DPoP key the request proved it holds, if it sent a proof; or the refusal
/// (`invalid_dpop_proof`, or `use_dpop_nonce` with a `DPoP-Nonce`).
fn dpop_key(s: &mut Inner, headers: &HeaderMap) -> Result<Option<String>, Refused> {
    let invalid = Refused(StatusCode::BAD_REQUEST, "invalid_dpop_proof", None);
    let mut proofs = headers.get_all("dpop").iter();
    let proof = match (proofs.next(), proofs.next()) {
        (None, _) => return Ok(None),
        (Some(p), None) => p.to_str().unwrap_or_default().to_owned(),
        (Some(_), Some(_)) => return Err(invalid),
    };
    let endpoint = format!("{}/token", s.issuer);
    let nonce = s.options.knobs.dpop_nonce.then(|| s.dpop_nonce.clone());
    let checked = s.seen.dpop_proof(&proof, &endpoint, nonce.as_deref());
    s.dpop_proofs.push(checked.as_ref().ok().cloned());
    match checked {
        Ok(jkt) => Ok(Some(jkt)),
        Err(ProofError::UseNonce) => Err(Refused(
            StatusCode::BAD_REQUEST,
            "use_dpop_nonce",
            Some(s.dpop_nonce.clone()),
        )),
        Err(ProofError::Invalid(why)) => {
            tracing::debug!(why, "DPoP proof refused at the token endpoint");
            Err(invalid)
        }
    }
}

/// The authenticated client's id: by its secret (either method) or its signed assertion.
fn client(
    s: &mut Inner,
    headers: &HeaderMap,
    field: &dyn Fn(&str) -> String,
) -> Result<String, Refused> {
    if !field("client_assertion_type").is_empty() || !field("client_assertion").is_empty() {
        let audiences = [s.issuer.clone(), format!("{}/token", s.issuer)];
        let audiences: Vec<&str> = audiences.iter().map(String::as_str).collect();
        let clients = &s.clients;
        let checked = if field("client_assertion_type") == ASSERTION_TYPE {
            s.seen.client_assertion(
                &field("client_assertion"),
                &field("client_id"),
                |id| clients.get(id).and_then(|c| c.key.clone()),
                &audiences,
            )
        } else {
            Err("client_assertion_type".into())
        };
        s.token_credentials
            .push((checked.clone().unwrap_or_default(), String::new()));
        return checked.map_err(|why| {
            tracing::debug!(why, "client assertion refused");
            Refused(StatusCode::UNAUTHORIZED, "invalid_client", None)
        });
    }
    let (client_id, secret) =
        basic_credentials(headers).unwrap_or_else(|| (field("client_id"), field("client_secret")));
    s.token_credentials
        .push((client_id.clone(), secret.clone()));
    match s.clients.get(&client_id) {
        Some(c) if c.key.is_none() && c.secret == secret => Ok(client_id),
        _ => Err(Refused(StatusCode::UNAUTHORIZED, "invalid_client", None)),
    }
}

pub(super) async fn token(
    axum::extract::State(s): axum::extract::State<Shared>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let f: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let mut s = lock(&s);
    let field = |n: &str| f.get(n).cloned().unwrap_or_default();
    s.grants.push(field("grant_type"));
    // The client first, its assertion's jti then used: a request refused for its DPoP
    // nonce must come again with a fresh assertion.
    let client_id = match client(&mut s, &headers, &field) {
        Ok(id) => id,
        Err(refusal) => return refusal.into_response(),
    };
    let jkt = match dpop_key(&mut s, &headers) {
        Ok(jkt) => jkt,
        Err(refusal) => return refusal.into_response(),
    };
    let subject = s.options.subject.clone();
    let mut grant = Grant {
        client_id: &client_id,
        subject: &subject,
        scope: "",
        resource: "",
        jkt: jkt.as_deref(),
        refreshed: false,
    };
    match field("grant_type").as_str() {
        "authorization_code" => {
            if let Some(error) = s.options.knobs.token_error {
                return oauth_error(StatusCode::BAD_REQUEST, error);
            }
            let Some(code) = s.codes.remove(&field("code")) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            let computed = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(field("code_verifier")));
            if computed != code.challenge
                || code.client_id != client_id
                || code.resource != field("resource")
            {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            grant.scope = &code.scope;
            grant.resource = &code.resource;
            axum::Json(issue(&mut s, &grant)).into_response()
        }
        "refresh_token" => {
            let Some(old) = s.refresh.remove(&field("refresh_token")) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            // A bound refresh token is used with a proof of the same key (RFC 9449 §5).
            if old.jkt.is_some() && old.jkt != jkt {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_dpop_proof");
            }
            grant.scope = &old.scope;
            grant.resource = &old.resource;
            grant.refreshed = true;
            axum::Json(issue(&mut s, &grant)).into_response()
        }
        // A machine client on its own behalf: `sub` is its client id (RFC 9068 §2.2),
        // and no refresh token (RFC 6749 §4.4.3).
        "client_credentials" => {
            let (scope, resource) = (field("scope"), field("resource"));
            grant.subject = &client_id;
            grant.scope = &scope;
            grant.resource = &resource;
            let mut answer = issue(&mut s, &grant);
            if let Some(refresh) = answer
                .as_object_mut()
                .and_then(|a| a.remove("refresh_token"))
                .and_then(|r| r.as_str().map(str::to_owned))
            {
                s.refresh.remove(&refresh);
            }
            axum::Json(answer).into_response()
        }
        _ => oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type"),
    }
}
