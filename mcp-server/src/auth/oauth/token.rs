//! Access token validation: a JWT's header and algorithm, the signing key, the signature,
//! then the claims (`iss`, `aud`, `exp`, `nbf`, `sub`), into an identity (as
//! `claims.rs` reads them); a token that is not a JWT goes to introspection
//! (`introspect.rs`) when it is configured.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;

use super::claims::{Accepted, Cnf, Scp, TokenError, identity};
use super::config::OAuthConfig;
use super::introspect::Introspector;
use super::keys::{KeyCache, Lookup};

/// Tokens longer than this are refused unread.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

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
    #[serde(default)]
    cnf: Option<Cnf>,
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
) -> Result<Accepted, TokenError> {
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
) -> Result<Accepted, TokenError> {
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
                let jkt = c.cnf.and_then(|c| c.jkt);
                return Ok((identity(&c.iss, c.sub, c.scope.as_deref(), c.scp)?, jkt));
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
