//! Who is calling over HTTP: the [`Authenticator`] the transport asks for every request,
//! what it answers ([`Identity`] or a [`Refusal`] carrying its `WWW-Authenticate`
//! challenge), and two authenticators: [`BearerTokens`], a static token table (the demo's
//! `--bearer NAME:TOKEN`), and [`OAuthResourceServer`] (feature `oauth`, on by default),
//! an OAuth 2.1 resource server that validates JWT access tokens against its
//! authorization server's keys, and opaque ones by RFC 7662 introspection when configured
//! (the demo's `--oauth-issuer`).
//!
//! Without an authenticator every HTTP caller is one anonymous principal (task ids then
//! act as bearer tokens); stdio has one principal, the process on the other end, and no
//! scopes: a tool that requires a scope is refused there.
//!
//! Modules: `authenticator.rs` ([`Authenticator`], [`Identity`]), `credentials.rs`
//! ([`bearer_credentials`]), `challenge.rs` ([`Refusal`], [`Challenge`]), `resource.rs`
//! ([`ProtectedResource`]), `bearer.rs` ([`BearerTokens`]), `oauth/` (feature `oauth`, the
//! resource server: `mod.rs` the server, `config.rs` its configuration, `metadata.rs` the
//! authorization server's metadata, `keys.rs` the key cache, `token.rs` JWT validation,
//! `introspect.rs` introspection, `claims.rs` what both make of a token's claims, `dpop.rs`
//! DPoP proofs).
//!
//! This file only names the modules and hands their names on: no module here imports
//! it, so each uses only those beside or below it.
//!
//! **Invariant.** Only `oauth/` uses jsonwebtoken and reqwest, and no other module of the
//! crate imports it (the re-exports here are gated with it): without the `oauth` feature,
//! the rest of the crate, HTTP transport and console included, builds as it is.

// Without `oauth`, the link above to the resource server has nothing to point to.
#![cfg_attr(not(feature = "oauth"), allow(rustdoc::broken_intra_doc_links))]

mod authenticator;
mod bearer;
mod challenge;
mod credentials;
#[cfg(feature = "oauth")]
pub mod oauth;
mod resource;

pub use authenticator::{ANONYMOUS, Authenticator, Identity, Principal};
pub use bearer::BearerTokens;
pub use challenge::{Challenge, Refusal};
pub(crate) use credentials::query_has_token;
pub use credentials::{Credentials, bearer_credentials};
#[cfg(feature = "oauth")]
pub use oauth::{
    DpopError, DpopPolicy, IntrospectionClient, OAuthConfig, OAuthConfigError, OAuthResourceServer,
    TokenError,
};
pub use resource::{PROTECTED_RESOURCE_PATH, ProtectedResource};
