//! [`AuthEvent`]: what a login is doing, step by step, for a program that tells its user
//! ([`AuthConfig::on_event`](super::AuthConfig::on_event)). Each step is also a
//! `tracing` event at info level (target `mcp_tasks_client::auth`).

use std::sync::Arc;

/// One step of a login, as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthEvent {
    /// The server asked for authorization: finding its authorization server (RFC 9728,
    /// then RFC 8414).
    Discovering {
        /// The MCP server's URL.
        server: String,
    },
    /// The authorization server to log in at, its metadata read.
    Discovered {
        /// Its issuer.
        issuer: String,
    },
    /// The stored login was made at another authorization server (or for another
    /// resource): dropped, a client is registered anew.
    Migrated {
        /// The issuer of the login dropped.
        from: String,
        /// The issuer the server names now.
        to: String,
    },
    /// Trading the stored refresh token for a new access token.
    Refreshing {
        /// The issuer.
        issuer: String,
    },
    /// The refresh worked.
    Refreshed {
        /// Seconds the new access token is valid for, if said.
        expires_in: Option<u64>,
    },
    /// The refresh token was refused (expired, revoked): the stored login is dropped.
    RefreshRefused {
        /// The OAuth error.
        error: String,
    },
    /// The pre-registered client is for another authorization server than the one the
    /// MCP server names: it is not used (its secret is not sent there); the login goes
    /// on with the Client ID Metadata Document or dynamic registration, if offered.
    PreRegisteredNotUsed {
        /// The issuer the MCP server names.
        issuer: String,
        /// The issuers of the pre-registered clients, comma-separated.
        registered_with: String,
    },
    /// Registering this client with the authorization server (RFC 7591).
    Registering {
        /// The registration endpoint.
        endpoint: String,
    },
    /// Registered.
    Registered {
        /// The client id given.
        client_id: String,
    },
    /// The browser step starts: the user is to visit `url` (the [`Authorize`]
    /// step shows or opens it).
    ///
    /// [`Authorize`]: super::Authorize
    Authorizing {
        /// The authorization URL.
        url: String,
        /// The scope asked for.
        scope: Option<String>,
    },
    /// The authorization code was exchanged for tokens.
    TokenReceived {
        /// The scope granted (or asked for, when the server did not say).
        scope: Option<String>,
        /// Whether a refresh token came with it.
        refresh_token: bool,
    },
    /// The login was saved in the token store.
    Saved,
    /// A machine client trusting the first authorization server it meets
    /// ([`IssuerBinding::TrustFirstUse`]) met it: recorded in the token store before
    /// anything is sent there; any other is refused from now on.
    ///
    /// [`IssuerBinding::TrustFirstUse`]: super::IssuerBinding::TrustFirstUse
    IssuerTrusted {
        /// The issuer recorded.
        issuer: String,
        /// The machine client's id.
        client_id: String,
    },
}

/// What [`AuthConfig::on_event`](super::AuthConfig::on_event) calls with each step.
#[derive(Clone)]
pub struct AuthObserver(pub(crate) Arc<dyn Fn(&AuthEvent) + Send + Sync>);

impl std::fmt::Debug for AuthObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthObserver")
    }
}

impl AuthObserver {
    /// Calls `f` with each step.
    pub fn new(f: impl Fn(&AuthEvent) + Send + Sync + 'static) -> AuthObserver {
        AuthObserver(Arc::new(f))
    }
}
