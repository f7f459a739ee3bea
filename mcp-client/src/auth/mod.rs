//! OAuth 2.1 authorization, as the MCP authorization spec has a client do it.
//!
//! A Streamable HTTP connection made with [`ClientConfig::auth`](crate::ClientConfig)
//! sends the stored bearer token with every request. When the server answers 401, the
//! [`Authorizer`] reads the `WWW-Authenticate` challenge, discovers the server's
//! Protected Resource Metadata (RFC 9728) and checks that it is for this server, finds
//! the authorization server's metadata (RFC 8414, then OpenID discovery, issuer checked),
//! refreshes the token when it can, and otherwise gets a client id (pre-registered, a
//! Client ID Metadata Document, or RFC 7591 registration), runs the authorization code
//! flow with PKCE S256 and the RFC 8707 `resource` through your [`Authorize`] step,
//! checks `state` and the RFC 9207 `iss`, exchanges the code and keeps the tokens in
//! the [`TokenStore`]; then the request is sent again. A 403 `insufficient_scope` asks
//! for the union of the scopes so far and the challenge's, a bounded number of times.
//! Every failure is an [`AuthError`] that says what to do; nothing is stored then.
//! Each step is an [`AuthEvent`], handed to [`AuthConfig::on_event`] for a program that
//! tells its user what it is doing.
//!
//! The OAuth mechanics (PKCE, the authorization URL, the code exchange and the refresh
//! with client authentication) are the `oauth2` crate's; discovery, registration and
//! the MCP rules are here.

mod browser;
mod challenge;
mod discovery;
mod error;
mod event;
mod flow;
mod manager;
mod registration;
mod store;

pub use browser::{AuthorizationResponse, Authorize, FollowRedirect, LoopbackRedirect};
pub use challenge::Challenge;
pub use discovery::{
    ResourceMetadata, ServerMetadata, resource_matches, resource_metadata_urls,
    server_metadata_urls,
};
pub use error::AuthError;
pub use event::{AuthEvent, AuthObserver};
pub use manager::{AuthConfig, Authorizer};
pub use registration::ClientIdentity;
pub use store::{
    Credentials, FileTokenStore, MemoryTokenStore, RegisteredClient, TokenSet, TokenStore,
};
