//! Who is calling over HTTP: the [`Authenticator`] the transport asks for every request,
//! what it answers ([`Identity`] or a [`Refusal`] carrying its `WWW-Authenticate`
//! challenge), and two authenticators: [`BearerTokens`], a static token table (the demo's
//! `--bearer NAME:TOKEN`), and [`OAuthResourceServer`], an OAuth 2.1 resource server that
//! validates JWT access tokens against its authorization server's keys, and opaque ones
//! by RFC 7662 introspection when configured (the demo's `--oauth-issuer`).
//!
//! Without an authenticator every HTTP caller is one anonymous principal (task ids then
//! act as bearer tokens); stdio has one principal, the process on the other end, and no
//! scopes: a tool that requires a scope is refused there.
//!
//! Modules: `challenge.rs` ([`Refusal`], [`Challenge`]), `bearer.rs` ([`BearerTokens`]),
//! `oauth/` (the resource server: `mod.rs` its configuration and metadata, `metadata.rs`
//! the authorization server's metadata, `keys.rs` the key cache, `token.rs` JWT
//! validation, `introspect.rs` introspection).

mod bearer;
mod challenge;
pub mod oauth;

use std::collections::BTreeSet;

use axum::http::{HeaderMap, header};
use futures::future::BoxFuture;

pub use bearer::BearerTokens;
pub use challenge::{Challenge, Refusal};
pub use oauth::{
    IntrospectionClient, OAuthConfig, OAuthConfigError, OAuthResourceServer, ProtectedResource,
    TokenError,
};

/// An authenticated caller: the principal that owns its tasks, and the scopes its
/// credentials grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Owns the caller's tasks and 2025-11-25 sessions. Never [`ANONYMOUS`](crate::ANONYMOUS)
    /// and never of the form `session:<id>` (both belong to unauthenticated callers).
    pub principal: String,
    /// What the caller may do (OAuth scopes); empty for a static token.
    pub scopes: BTreeSet<String>,
}

impl Identity {
    /// `principal` with no scopes.
    pub fn new(principal: impl Into<String>) -> Identity {
        Identity {
            principal: principal.into(),
            scopes: BTreeSet::new(),
        }
    }

    /// Adds `scopes`.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The scopes of `needed` this identity lacks, in order.
    pub fn missing<'n>(&self, needed: &'n [String]) -> Vec<&'n String> {
        needed
            .iter()
            .filter(|s| !self.scopes.contains(*s))
            .collect()
    }
}

/// Decides who is calling from a request's headers: `Ok(Some(identity))`, `Ok(None)` for
/// an anonymous caller, or a [`Refusal`] (401, 403, 503...) sent before anything runs.
///
/// Asynchronous, since an authenticator may need the network (fetching keys). A plain
/// closure `Fn(&HeaderMap) -> Result<Option<String>, E>` (with `E` a [`Refusal`] or an
/// HTTP status) is an authenticator too; its principals have no scopes.
pub trait Authenticator: Send + Sync + 'static {
    /// Who sent a request with these headers.
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Identity>, Refusal>>;

    /// The RFC 9728 metadata of the protected resource, when there is one: the HTTP
    /// transport then serves it at `/.well-known/oauth-protected-resource` (and its
    /// path-suffixed form) and names it in its challenges.
    fn protected_resource(&self) -> Option<&ProtectedResource> {
        None
    }

    /// The refusal of a caller whose credentials lack some of `needed` (the scopes the
    /// operation requires, all of them): 403 `insufficient_scope`.
    fn insufficient_scope(&self, needed: &[String], description: &str) -> Refusal {
        Refusal::forbidden(
            Challenge::new()
                .resource_metadata(self.protected_resource().map(|p| p.metadata_url.clone()))
                .insufficient_scope(needed, description),
        )
    }
}

impl<F, E> Authenticator for F
where
    F: Fn(&HeaderMap) -> Result<Option<String>, E> + Send + Sync + 'static,
    E: Into<Refusal>,
{
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Identity>, Refusal>> {
        let answer = self(headers)
            .map(|p| p.map(Identity::new))
            .map_err(Into::into);
        Box::pin(std::future::ready(answer))
    }
}

/// What the `Authorization` header holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials<'h> {
    /// No `Authorization` header, or one of another scheme (`Basic ...`).
    None,
    /// `Bearer <token>` (the scheme matched without regard to case).
    Bearer(&'h str),
    /// `Bearer` with no token, a token with characters RFC 6750 does not allow, or a
    /// header value that is not text.
    Malformed,
}

/// Reads `Authorization: Bearer <token>` (RFC 6750, 2.1).
pub fn bearer_credentials(headers: &HeaderMap) -> Credentials<'_> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Credentials::None;
    };
    if values.next().is_some() {
        // Two Authorization headers: which one counts is ambiguous.
        return Credentials::Malformed;
    }
    let Ok(value) = value.to_str() else {
        return Credentials::Malformed;
    };
    let (scheme, rest) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Credentials::None;
    }
    let token = rest.trim();
    // b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
    let body = token.trim_end_matches('=');
    let well_formed = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    if well_formed {
        Credentials::Bearer(token)
    } else {
        Credentials::Malformed
    }
}

/// Whether a request's query string carries an access token (`access_token=`, RFC 6750
/// 2.3), which MCP forbids: tokens travel in the `Authorization` header only.
pub(crate) fn query_has_token(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split('=').next() == Some("access_token"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_auth(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(
                header::AUTHORIZATION,
                HeaderValue::from_str(v).expect("header"),
            );
        }
        h
    }

    #[test]
    fn bearer_credentials_are_read_strictly() {
        assert_eq!(bearer_credentials(&HeaderMap::new()), Credentials::None);
        assert_eq!(
            bearer_credentials(&with_auth(&["Bearer abc.def-_~+/=="])),
            Credentials::Bearer("abc.def-_~+/==")
        );
        assert_eq!(
            bearer_credentials(&with_auth(&["bearer xyz"])),
            Credentials::Bearer("xyz")
        );
        assert_eq!(
            bearer_credentials(&with_auth(&["Basic dXNlcjpwdw=="])),
            Credentials::None
        );
        for bad in [
            "Bearer",
            "Bearer ",
            "Bearer a b",
            "Bearer a\"b",
            "Bearer ===",
        ] {
            assert_eq!(
                bearer_credentials(&with_auth(&[bad])),
                Credentials::Malformed,
                "{bad}"
            );
        }
        assert_eq!(
            bearer_credentials(&with_auth(&["Bearer a", "Bearer b"])),
            Credentials::Malformed
        );
    }

    #[test]
    fn query_tokens_are_noticed() {
        assert!(query_has_token(Some("access_token=abc")));
        assert!(query_has_token(Some("x=1&access_token")));
        assert!(!query_has_token(Some("my_access_token=1")));
        assert!(!query_has_token(None));
    }

    #[test]
    fn missing_scopes_keep_their_order() {
        let id = Identity::new("a").with_scopes(["read"]);
        let needed = vec!["write".to_owned(), "read".to_owned(), "admin".to_owned()];
        assert_eq!(id.missing(&needed), vec!["write", "admin"]);
    }
}
