//! Who is calling: the [`Authenticator`] the HTTP transport asks for every request, and
//! what it answers, an [`Identity`] (the principal that owns the caller's tasks, and the
//! scopes its credentials grant) or a [`Refusal`].
//!
//! **Invariant.** This is the seam between the transport and the ways of authenticating:
//! it names no authenticator (`bearer.rs`, `oauth/` implement it, never the other way).

use std::collections::BTreeSet;

use axum::http::{HeaderMap, Method, Uri};
use futures::future::BoxFuture;

use super::challenge::{Challenge, Refusal};
use super::resource::ProtectedResource;

/// The owner of tasks created by callers without a principal. Their task ids, 128 random
/// bits, are then the only thing that binds a task to its creator.
pub const ANONYMOUS: &str = "anonymous";

/// The authenticated principal of a request, set by the transport's principal hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(pub String);

/// An authenticated caller: the principal that owns its tasks, and the scopes its
/// credentials grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Owns the caller's tasks and 2025-11-25 sessions. Never [`ANONYMOUS`]
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

    /// Who sent a `method` request to `uri` with these headers: what an authenticator
    /// that checks proofs of possession bound to the request (DPoP, RFC 9449: `htm`,
    /// `htu`) needs. By default, [`authenticate`](Authenticator::authenticate).
    fn authenticate_request<'a>(
        &'a self,
        method: &'a Method,
        uri: &'a Uri,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Identity>, Refusal>> {
        let _ = (method, uri);
        self.authenticate(headers)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_scopes_keep_their_order() {
        let id = Identity::new("a").with_scopes(["read"]);
        let needed = vec!["write".to_owned(), "read".to_owned(), "admin".to_owned()];
        assert_eq!(id.missing(&needed), vec!["write", "admin"]);
    }
}
