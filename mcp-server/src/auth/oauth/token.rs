//! Access token validation: a JWT's header and algorithm, the signing key, the signature,
//! then the claims (`iss`, `aud`, `exp`, `nbf`, `sub`), into an [`Identity`]; a token that
//! is not a JWT goes to introspection (`introspect.rs`) when it is configured.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;

use super::OAuthConfig;
use super::introspect::Introspector;
use super::keys::{KeyCache, Lookup};
use crate::auth::Identity;

/// Tokens longer than this are refused unread.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Why a token was refused. Each is `invalid_token` (401) except
/// [`KeysUnavailable`](TokenError::KeysUnavailable) and
/// [`IntrospectionUnavailable`](TokenError::IntrospectionUnavailable), which say nothing
/// about the token (503).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not three base64url parts with a JSON header.
    #[error("the token is not a well-formed JWT")]
    Malformed,
    /// A claim has the wrong type or value; the message says which.
    #[error("the token's claims are malformed: {0}")]
    Claims(String),
    /// Signed with an algorithm outside the allowlist (the header's `alg`).
    #[error("algorithm {0:?} is not accepted")]
    Algorithm(String),
    /// Its `kid` names no key of the JWKS, even after a refetch.
    #[error("the token's signing key is not among the authorization server's keys")]
    UnknownKey,
    /// The signature does not verify with the key.
    #[error("the token's signature does not verify")]
    Signature,
    /// `exp` has passed.
    #[error("the token has expired")]
    Expired,
    /// `nbf` is still ahead.
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    /// `iss` is not the configured issuer.
    #[error("the token was issued by another issuer")]
    Issuer,
    /// `aud` does not name this resource.
    #[error("the token is meant for another resource (aud)")]
    Audience,
    /// A required claim (e.g. `sub`) is missing.
    #[error("the token lacks the {0:?} claim")]
    MissingClaim(String),
    /// The JWKS could not be fetched; nothing is known about the token (503).
    #[error("the authorization server's keys are out of reach: {0}")]
    KeysUnavailable(String),
    /// The introspection endpoint answered `active: false` (revoked, expired, unknown).
    #[error("the token is not active (introspection)")]
    Inactive,
    /// The introspection endpoint could not be asked, or did not answer as RFC 7662
    /// says; nothing is known about the token (503).
    #[error("the authorization server's introspection endpoint is out of reach: {0}")]
    IntrospectionUnavailable(String),
}

impl From<jsonwebtoken::errors::Error> for TokenError {
    fn from(e: jsonwebtoken::errors::Error) -> TokenError {
        match e.kind() {
            ErrorKind::InvalidSignature => TokenError::Signature,
            ErrorKind::ExpiredSignature => TokenError::Expired,
            ErrorKind::ImmatureSignature => TokenError::NotYetValid,
            ErrorKind::InvalidIssuer => TokenError::Issuer,
            ErrorKind::InvalidAudience => TokenError::Audience,
            ErrorKind::MissingRequiredClaim(c) => TokenError::MissingClaim(c.clone()),
            ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
                TokenError::Algorithm("(mismatch)".into())
            }
            ErrorKind::Json(e) => TokenError::Claims(e.to_string()),
            _ => TokenError::Malformed,
        }
    }
}

/// The claims read besides those jsonwebtoken checks.
#[derive(Deserialize)]
struct Claims {
    iss: String,
    /// Optional here so that its absence is named as such (jsonwebtoken checks `iss`).
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Scp>,
}

/// `aud`: one audience or several.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    pub(super) fn contains(&self, resource: &str) -> bool {
        match self {
            Audience::One(a) => a == resource,
            Audience::Many(all) => all.iter().any(|a| a == resource),
        }
    }
}

/// `scp`: an array of scopes (or, from some servers, a space-separated string).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Scp {
    List(Vec<String>),
    Text(String),
}

/// The `alg` the token's header names, as written (so that `none` can be named).
fn header_alg(token: &str) -> Result<String, TokenError> {
    #[derive(Deserialize)]
    struct Probe {
        alg: String,
    }
    let header = token.split('.').next().ok_or(TokenError::Malformed)?;
    let bytes = URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| TokenError::Malformed)?;
    serde_json::from_slice::<Probe>(&bytes)
        .map(|p| p.alg)
        .map_err(|_| TokenError::Malformed)
}

/// Whether `token` is meant as a JWT: three parts, the first a JSON object naming `alg`.
/// Whatever else is an opaque token.
fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && header_alg(token).is_ok()
}

/// `token` checked as a JWT, or, when it is not one and `introspector` is there, by
/// introspection.
pub(super) async fn validate(
    config: &OAuthConfig,
    keys: &KeyCache,
    introspector: Option<&Introspector>,
    token: &str,
) -> Result<Identity, TokenError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(TokenError::Malformed);
    }
    match introspector {
        Some(introspector) if !looks_like_jwt(token) => introspector.validate(config, token).await,
        _ => validate_jwt(config, keys, token).await,
    }
}

async fn validate_jwt(
    config: &OAuthConfig,
    keys: &KeyCache,
    token: &str,
) -> Result<Identity, TokenError> {
    if token.split('.').count() != 3 {
        return Err(TokenError::Malformed);
    }
    let named = header_alg(token)?;
    let alg = named
        .parse::<Algorithm>()
        .ok()
        .filter(|a| config.algorithms.contains(a))
        .ok_or(TokenError::Algorithm(named))?;
    let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
    let candidates = match keys.keys_for(header.kid.as_deref(), alg).await {
        Lookup::Found(k) => k,
        Lookup::Unknown => return Err(TokenError::UnknownKey),
        Lookup::Unavailable(reason) => return Err(TokenError::KeysUnavailable(reason)),
    };
    let mut validation = Validation::new(alg);
    validation.leeway = config.leeway.as_secs();
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.set_issuer(&[&config.issuer]);
    validation.set_audience(&[&config.resource]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let mut last = TokenError::Signature;
    for key in candidates {
        match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
            Ok(data) => {
                let c = data.claims;
                return identity(&c.iss, c.sub, c.scope.as_deref(), c.scp);
            }
            // Without a `kid` several keys may fit: try the next.
            Err(e) if matches!(e.kind(), ErrorKind::InvalidSignature) => {
                last = TokenError::Signature;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(last)
}

/// The identity of `sub` at `iss` (checked to be the configured issuer, or the
/// configured issuer itself) granted `scope` (space-separated) and `scp`.
pub(super) fn identity(
    iss: &str,
    sub: Option<String>,
    scope: Option<&str>,
    scp: Option<Scp>,
) -> Result<Identity, TokenError> {
    let sub = match sub {
        None => return Err(TokenError::MissingClaim("sub".into())),
        Some(sub) if sub.is_empty() => return Err(TokenError::Claims("sub is empty".into())),
        Some(sub) => sub,
    };
    let mut scopes: Vec<String> = scope
        .iter()
        .flat_map(|s| s.split(' '))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    match scp {
        Some(Scp::List(list)) => scopes.extend(list),
        Some(Scp::Text(text)) => {
            scopes.extend(text.split(' ').filter(|s| !s.is_empty()).map(str::to_owned))
        }
        None => {}
    }
    // `iss` was checked against the configured issuer, an URL without fragment: the
    // first `#` of the principal ends it.
    Ok(Identity::new(format!("{iss}#{sub}")).with_scopes(scopes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_alg_is_read_as_written() {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        assert_eq!(header_alg(&format!("{header}.e30.")), Ok("none".into()));
        assert_eq!(header_alg("%%%.e30."), Err(TokenError::Malformed));
    }

    #[test]
    fn scopes_come_from_scope_and_scp() {
        let claims: Claims = serde_json::from_value(serde_json::json!({
            "iss": "https://as", "sub": "u1", "scope": "a  b", "scp": ["c"]
        }))
        .expect("claims");
        let id = identity(&claims.iss, claims.sub, claims.scope.as_deref(), claims.scp)
            .expect("identity");
        assert_eq!(id.principal, "https://as#u1");
        assert_eq!(
            id.scopes.iter().map(String::as_str).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        let empty: Claims =
            serde_json::from_value(serde_json::json!({"iss": "https://as", "sub": ""}))
                .expect("claims");
        assert!(identity(&empty.iss, empty.sub, None, None).is_err());
    }
}
