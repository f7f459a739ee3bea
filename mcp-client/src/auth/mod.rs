//! OAuth 2.1 authorization, as the MCP authorization spec has a client do it.
//!
//! A Streamable HTTP connection made with [`ClientConfig::auth`](crate::ClientConfig)
//! sends the stored bearer token with every request. When the server answers 401, the
//! [`Authorizer`] reads the `WWW-Authenticate` challenge, discovers the server's
//! Protected Resource Metadata (RFC 9728) and checks that it is for this server, finds
//! the authorization server's metadata (RFC 8414, then OpenID discovery, issuer checked),
//! refreshes the token when it can, and otherwise gets a client id (pre-registered with
//! that very issuer, a Client ID Metadata Document, or RFC 7591 registration), runs the authorization code
//! flow with PKCE S256 and the RFC 8707 `resource` through your [`Authorize`] step,
//! checks `state` and the RFC 9207 `iss`, exchanges the code and keeps the tokens in
//! the [`TokenStore`]; then the request is sent again. A 403 `insufficient_scope` asks
//! for the union of the scopes so far and the challenge's, a bounded number of times.
//! Every failure is an [`AuthError`] that says what to do; nothing is stored then.
//! Each step is an [`AuthEvent`], handed to [`AuthConfig::on_event`] for a program that
//! tells its user what it is doing.
//!
//! A program with no person at hand logs in with a [`Grant`] instead
//! ([`AuthConfig::with_grant`]): the client credentials grant (a secret, or a signed
//! client assertion), a workload's JWT (the JWT bearer grant), or enterprise-managed
//! authorization (an ID-JAG from the identity provider, then the JWT bearer grant).
//! [`AuthConfig::with_dpop`] binds the tokens to a [`DpopKey`] (RFC 9449): token and MCP
//! requests carry proofs, and a server's `use_dpop_nonce` is answered with its nonce.
//!
//! What a server can make the client do is bounded:
//! - a pre-registered client ([`AuthConfig::with_pre_registered`]) is bound to the
//!   issuer it was registered with: its id and secret go only to the authorization
//!   server whose metadata has exactly that `issuer`; a server naming another one gets
//!   the Client ID Metadata Document or a dynamically registered client instead, or the
//!   login fails ([`AuthError::PreRegisteredForOtherIssuer`]);
//! - a machine client whose grant sends anything secret ([`Grant::secret_sent`]: a client
//!   secret, a signed client assertion, a workload token, an identity assertion) is
//!   bound to one authorization server ([`IssuerBinding`]): the issuer it is registered
//!   with, or, when chosen explicitly, the first one met (recorded in the token store).
//!   A server naming another gets no request at all
//!   ([`AuthError::MachineClientForOtherIssuer`],
//!   [`AuthError::IssuerChangedSinceFirstUse`]); an unbound client with a secret is
//!   refused before any request ([`AuthError::MachineClientUnbound`]);
//! - a machine client asks only for the scopes it was given ([`MachineClient::scopes`]):
//!   with no person to consent, a 401 or 403 challenge naming any other scope is
//!   refused before any request ([`AuthError::ScopeNotAllowed`]);
//! - authorization servers (the issuer, and the authorization, token and registration
//!   endpoints of its metadata) must be https; plain http is accepted on a loopback
//!   host only (`localhost`, 127.0.0.0/8, `::1`), else [`AuthError::InsecureUrl`];
//! - a challenge's `resource_metadata` URL is requested only when it is https or on
//!   the MCP server's own origin (otherwise only the well-known URLs are tried);
//! - metadata documents, registration and token answers are read up to 1 MiB
//!   ([`MAX_BODY_BYTES`], [`AuthError::ResponseTooLarge`]);
//! - [`LoopbackRedirect`] waits for the redirect carrying the `state` it sent: other
//!   requests to its port get an error page and the wait goes on, within its timeout.
//!
//! The OAuth mechanics (PKCE, the authorization URL, the code exchange and the refresh
//! with client authentication) are the `oauth2` crate's; discovery, registration and
//! the MCP rules are here.

mod browser;
mod challenge;
mod config;
mod discovery;
mod dpop;
mod error;
mod event;
mod flow;
mod machine;
mod manager;
mod registration;
mod secure;
mod store;

pub use browser::{AuthorizationResponse, Authorize, FollowRedirect, LoopbackRedirect};
pub use challenge::Challenge;
pub use config::AuthConfig;
pub use discovery::{
    ResourceMetadata, ServerMetadata, resource_matches, resource_metadata_urls,
    server_metadata_urls,
};
pub use dpop::DpopKey;
pub(crate) use dpop::{DPOP, DPOP_NONCE, USE_DPOP_NONCE};
pub use error::AuthError;
pub use event::{AuthEvent, AuthObserver};
pub use machine::{
    Assertion, ClientAuth, Grant, IdentityProvider, IssuerBinding, MachineClient, SigningKey,
};
pub use manager::{Authorizer, Presentation};
pub use registration::{ClientIdentity, PreRegisteredClient};
pub use secure::MAX_BODY_BYTES;
pub use store::{
    Credentials, FileTokenStore, MemoryTokenStore, RegisteredClient, TokenSet, TokenStore,
};
