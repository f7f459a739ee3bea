//! What a token's claims make, whichever way it was checked (a JWT's signature in
//! `token.rs`, or introspection in `introspect.rs`): the [`Identity`] of `sub` at the issuer
//! with the scopes of `scope` and `scp`, `aud` read as one audience or several, or the
//! [`TokenError`] why the token is refused.
//!
//! **Invariant.** Both ways of checking a token share these, so that a principal is
//! `"{issuer}#{sub}"` and a refusal is named alike whichever way it came; nothing here
//! fetches anything or knows which way was taken.

use jsonwebtoken::errors::ErrorKind;
use serde::Deserialize;

use crate::auth::authenticator::Identity;

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

/// `cnf` (RFC 7800): the confirmation a token is bound with; `jkt` (RFC 9449 §6) the
/// SHA-256 thumbprint of the DPoP key.
#[derive(Deserialize)]
pub(super) struct Cnf {
    #[serde(default)]
    pub(super) jkt: Option<String>,
}

/// An accepted token: the identity it stands for, and the thumbprint of the DPoP key it
/// is bound to (`cnf.jkt`), if any.
pub(super) type Accepted = (Identity, Option<String>);

/// `scp`: an array of scopes (or, from some servers, a space-separated string).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Scp {
    List(Vec<String>),
    Text(String),
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
