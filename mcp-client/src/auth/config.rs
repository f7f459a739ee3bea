//! [`AuthConfig`]: how a client logs in to servers that ask for OAuth — who it is, the
//! browser step or the machine grant, where logins are kept, DPoP.

use std::sync::Arc;

use super::browser::Authorize;
use super::dpop::DpopKey;
use super::error::AuthError;
use super::event::{AuthEvent, AuthObserver};
use super::machine::Grant;
use super::registration::{ClientIdentity, PreRegisteredClient};
use super::store::TokenStore;

/// How a client logs in to servers that ask for OAuth.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// Who the client is at authorization servers.
    pub identity: ClientIdentity,
    /// The browser step; `None`: never start one (only stored and refreshed tokens are
    /// used, and a server that wants a login fails with [`AuthError::LoginRequired`]).
    pub authorize: Option<Arc<dyn Authorize>>,
    /// Where logins are kept.
    pub store: Arc<dyn TokenStore>,
    /// How many times one connection re-authorizes for more scope (403
    /// `insufficient_scope`) before giving up with [`AuthError::ScopeNeverGranted`].
    pub max_step_ups: u32,
    /// Ask for `offline_access` (a refresh token) when the authorization server lists it.
    pub offline_access: bool,
    /// Told each step of a login as it happens ([`on_event`](AuthConfig::on_event)).
    pub observer: Option<AuthObserver>,
    /// A login without a browser step ([`with_grant`](AuthConfig::with_grant)): when
    /// set, it is the way tokens are obtained (the browser step is not used).
    pub grant: Option<Grant>,
    /// The DPoP key ([`with_dpop`](AuthConfig::with_dpop)): token requests and MCP
    /// requests carry proofs, and DPoP-bound tokens are presented with the `DPoP` scheme.
    pub dpop: Option<Arc<DpopKey>>,
}

impl AuthConfig {
    /// Logins kept in `store`, the client registering as `client_name`, no browser step
    /// yet ([`with_authorize`](AuthConfig::with_authorize)).
    pub fn new(store: Arc<dyn TokenStore>, client_name: impl Into<String>) -> AuthConfig {
        AuthConfig {
            identity: ClientIdentity {
                client_name: client_name.into(),
                metadata_url: None,
                pre_registered: Vec::new(),
            },
            authorize: None,
            store,
            max_step_ups: 2,
            offline_access: true,
            observer: None,
            grant: None,
            dpop: None,
        }
    }

    /// Calls `f` with each step of a login ([`AuthEvent`]): to tell the user what is
    /// going on (discovery, registration, the browser step, a refresh, saving).
    pub fn on_event(mut self, f: impl Fn(&AuthEvent) + Send + Sync + 'static) -> AuthConfig {
        self.observer = Some(AuthObserver::new(f));
        self
    }

    /// The browser step to run when a login is needed.
    pub fn with_authorize(mut self, authorize: Arc<dyn Authorize>) -> AuthConfig {
        self.authorize = Some(authorize);
        self
    }

    /// Logs in with `grant` (client credentials, a workload's JWT, enterprise-managed
    /// authorization) instead of a browser step: a program with no person at hand.
    /// The token is obtained again shortly before it expires or when the server
    /// refuses it; a refused grant is an error, never retried another way.
    ///
    /// A grant that sends anything secret needs a client bound to an issuer
    /// ([`IssuerBinding`](super::IssuerBinding)), else connecting fails before any
    /// request with [`AuthError::MachineClientUnbound`]; the client asks only for the
    /// scopes it was given ([`MachineClient::scopes`](super::MachineClient::scopes)).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use mcp_tasks_client::auth::{
    ///     AuthConfig, ClientAuth, Grant, IssuerBinding, MachineClient, MemoryTokenStore,
    /// };
    ///
    /// let client = MachineClient::new(
    ///     "nightly-job",
    ///     ClientAuth::Secret("s3cret".into()),
    ///     IssuerBinding::Issuer("https://auth.example.com".into()),
    /// )
    /// .with_scopes(["mcp"]);
    /// let config = AuthConfig::new(Arc::new(MemoryTokenStore::new()), "nightly-job")
    ///     .with_grant(Grant::ClientCredentials(client));
    /// assert!(config.grant.is_some());
    /// ```
    pub fn with_grant(mut self, grant: Grant) -> AuthConfig {
        self.grant = Some(grant);
        self
    }

    /// Uses DPoP (RFC 9449) with a new P-256 key, kept by this configuration (and the
    /// connections made with it): tokens are bound to it and every request proves
    /// possession of it.
    pub fn with_dpop(mut self) -> Result<AuthConfig, AuthError> {
        self.dpop = Some(Arc::new(DpopKey::generate()?));
        Ok(self)
    }

    /// The HTTPS URL of this client's Client ID Metadata Document.
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> AuthConfig {
        self.identity.metadata_url = Some(url.into());
        self
    }

    /// A client registered beforehand with the authorization server whose issuer
    /// identifier is `issuer` (exactly as its metadata writes `issuer`).
    ///
    /// The id and secret are used only when the authorization server the MCP server
    /// names has that issuer; with any other one they are never sent (a server could
    /// otherwise name an authorization server of its own and receive them): the login
    /// uses the Client ID Metadata Document or dynamic registration there, or fails with
    /// [`AuthError::PreRegisteredForOtherIssuer`]. Call it again for clients at other
    /// authorization servers; a second client for the same issuer replaces the first.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use mcp_tasks_client::auth::{AuthConfig, MemoryTokenStore};
    ///
    /// let config = AuthConfig::new(Arc::new(MemoryTokenStore::new()), "my-app")
    ///     .with_pre_registered("https://auth.example.com", "my-app-id", Some("s3cret".into()));
    /// assert!(config.identity.pre_registered_for("https://auth.example.com").is_some());
    /// assert!(config.identity.pre_registered_for("https://evil.example.com").is_none());
    /// ```
    pub fn with_pre_registered(
        mut self,
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: Option<String>,
    ) -> AuthConfig {
        let issuer = issuer.into();
        self.identity.pre_registered.retain(|p| p.issuer != issuer);
        self.identity.pre_registered.push(PreRegisteredClient {
            issuer,
            client: super::store::RegisteredClient {
                client_id: client_id.into(),
                client_secret,
                token_endpoint_auth_method: None,
                redirect_uri: None,
            },
        });
        self
    }
}
