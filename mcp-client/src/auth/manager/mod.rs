//! [`Authorizer`]: the login of one connection. It hands the transport the bearer token
//! to send, and when the server answers 401 (or 403 `insufficient_scope`) it runs the
//! spec's steps — discovery, client registration, the browser step, the code exchange,
//! or a refresh first when one can do — and keeps the result in the token store.
//! A machine login ([`Grant`]) goes to its bound authorization server only, and asks
//! only for the scopes its client was given: both checked before any request.

mod browser_login;
mod machine_login;

use tokio::sync::Mutex;

use super::challenge::Challenge;
use super::config::AuthConfig;
use super::discovery::{self, ResourceMetadata, ServerMetadata};
use super::error::AuthError;
use super::event::AuthEvent;
use super::flow;
use super::machine::{self, Grant};
use super::secure::CappedHttp;
use super::store::{Credentials, RegisteredClient, TokenSet};

#[derive(Debug, Default)]
struct State {
    loaded: bool,
    credentials: Option<Credentials>,
    /// The scope asked for so far (re-authorizations ask for the union).
    scope: Option<String>,
    step_ups: u32,
    authorizations: u32,
    /// A refresh ahead of the expiry failed: not tried again on this connection (the
    /// server's 401 decides).
    ahead_failed: bool,
}

/// The login of one connection to the MCP server `server`.
#[derive(Debug)]
pub struct Authorizer {
    server: String,
    config: AuthConfig,
    http: reqwest::Client,
    state: Mutex<State>,
    /// Set while the browser step runs (the user may take minutes).
    in_browser: std::sync::atomic::AtomicBool,
}

/// `a` and `b` as one space-separated scope, each scope once, `a`'s first.
fn union(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for s in a.into_iter().chain(b).flat_map(str::split_whitespace) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

impl Authorizer {
    /// The login for `server` (the MCP endpoint's URL). A machine grant that would send
    /// a secret to whichever authorization server the MCP server names is refused here,
    /// before any request ([`AuthError::MachineClientUnbound`]).
    pub fn new(server: impl Into<String>, config: AuthConfig) -> Result<Authorizer, AuthError> {
        if let Some(grant) = &config.grant {
            machine::check_configuration(grant)?;
        }
        // Metadata, registration and token requests never follow redirects.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| AuthError::TokenRequest(e.to_string()))?;
        Ok(Authorizer {
            server: server.into(),
            config,
            http,
            state: Mutex::new(State::default()),
            in_browser: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The MCP server this login is for.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The client token requests go through (with the DPoP key, if any).
    fn token_http(&self) -> CappedHttp {
        CappedHttp {
            http: self.http.clone(),
            dpop: self.config.dpop.clone(),
        }
    }

    /// What to send with a `method` request to `url`: the `Authorization` value and,
    /// for a DPoP-bound token, the proof (with `ath`, and the server's nonce once it
    /// gave one). `None` while there is no token. See [`bearer`](Authorizer::bearer)
    /// for when the token is renewed first.
    pub async fn presentation(
        &self,
        method: &str,
        url: &str,
    ) -> Result<Option<Presentation>, AuthError> {
        let Some(token) = self.bearer().await? else {
            return Ok(None);
        };
        let dpop_bound = self
            .state
            .lock()
            .await
            .credentials
            .as_ref()
            .is_some_and(|c| {
                c.tokens
                    .as_ref()
                    .is_some_and(|t| t.access_token == token && t.is_dpop())
            });
        Ok(Some(match &self.config.dpop {
            Some(key) if dpop_bound => Presentation {
                authorization: format!("DPoP {token}"),
                dpop: Some(key.proof(method, url, Some(&token))?),
                token,
            },
            _ => Presentation {
                authorization: format!("Bearer {token}"),
                dpop: None,
                token,
            },
        }))
    }

    /// The server of `url` answered with a `DPoP-Nonce`: kept for the next proofs.
    /// Returns whether it is new (a request refused with `use_dpop_nonce` is worth
    /// sending again then).
    pub fn dpop_nonce(&self, url: &str, nonce: &str) -> bool {
        self.config
            .dpop
            .as_ref()
            .is_some_and(|key| key.remember_nonce(url, nonce))
    }

    /// Logs `event` and tells the observer.
    fn emit(&self, event: AuthEvent) {
        tracing::info!(?event, "login step");
        if let Some(observer) = &self.config.observer {
            (observer.0)(&event);
        }
    }

    async fn loaded<'a>(&self, state: &'a mut State) -> Result<&'a mut State, AuthError> {
        if !state.loaded {
            state.credentials = self.config.store.load(&self.server).await?;
            // A login of another machine client is not this one's.
            if let Some(grant) = &self.config.grant
                && state
                    .credentials
                    .as_ref()
                    .is_some_and(|c| c.client.client_id != grant.client().client_id)
            {
                state.credentials = None;
            }
            state.scope = state
                .credentials
                .as_ref()
                .and_then(|c| c.tokens.as_ref())
                .and_then(|t| t.scope.clone());
            state.loaded = true;
        }
        Ok(state)
    }

    /// The access token to send, if there is one (read from the store the first time).
    /// A token in the last part of its lifetime ([`TokenSet::refresh_due`]) is refreshed
    /// first, so that the request does not meet a 401; when that refresh fails, the
    /// token is sent as it is and the server's answer decides.
    pub async fn bearer(&self) -> Result<Option<String>, AuthError> {
        let mut guard = self.state.lock().await;
        let state = self.loaded(&mut guard).await?;
        if let Some(grant) = &self.config.grant {
            if !state.ahead_failed
                && let Some(credentials) = state.credentials.clone()
                && credentials
                    .tokens
                    .as_ref()
                    .is_some_and(TokenSet::renewal_due)
                && let Err(e) = self.renew_ahead(state, grant, &credentials).await
            {
                tracing::info!(error = %e, "renewing ahead of the expiry failed; the token is sent as it is");
                state.ahead_failed = true;
            }
            return Ok(current(state).map(str::to_owned));
        }
        if !state.ahead_failed
            && let Some(credentials) = state.credentials.clone()
            && credentials
                .tokens
                .as_ref()
                .is_some_and(TokenSet::refresh_due)
            && let Err(e) = self.refresh_ahead(state, &credentials).await
        {
            tracing::info!(error = %e, "refreshing ahead of the expiry failed; the token is sent as it is");
            state.ahead_failed = true;
        }
        Ok(current(state).map(str::to_owned))
    }

    /// Refreshes `credentials` before their access token expires (no challenge to go
    /// by: the authorization server is the one they were issued by).
    async fn refresh_ahead(
        &self,
        state: &mut State,
        credentials: &Credentials,
    ) -> Result<(), AuthError> {
        let Some(tokens) = &credentials.tokens else {
            return Ok(());
        };
        let Some(refresh_token) = &tokens.refresh_token else {
            return Ok(());
        };
        let metadata = discovery::server_metadata(&self.http, &credentials.issuer).await?;
        self.emit(AuthEvent::Refreshing {
            issuer: credentials.issuer.clone(),
        });
        let refreshed = flow::refresh(
            &self.token_http(),
            &metadata,
            &credentials.client,
            refresh_token,
            &credentials.resource,
            tokens.scope.as_deref(),
        )
        .await?;
        self.keep_refreshed(state, credentials, refreshed).await
    }

    /// Runs the machine grant again before the token expires, at the authorization
    /// server that issued it (if the client may still go there), for the scopes
    /// granted that the client may ask for.
    async fn renew_ahead(
        &self,
        state: &mut State,
        grant: &Grant,
        credentials: &Credentials,
    ) -> Result<(), AuthError> {
        machine::check_binding(grant.client(), &credentials.issuer)?;
        let metadata = discovery::server_metadata(&self.http, &credentials.issuer).await?;
        let scope = credentials
            .tokens
            .as_ref()
            .and_then(|t| t.scope.as_deref())
            .and_then(|s| grant.client().allowed_part(s));
        self.machine_login(state, &metadata, grant, &credentials.resource, scope)
            .await
    }

    /// Saves the tokens a login got (for `scope`) and uses them from now on.
    async fn keep_tokens(
        &self,
        state: &mut State,
        credentials: Credentials,
        scope: Option<String>,
    ) -> Result<(), AuthError> {
        if let Some(tokens) = &credentials.tokens {
            self.emit(AuthEvent::TokenReceived {
                scope: tokens.scope.clone(),
                refresh_token: tokens.refresh_token.is_some(),
            });
        }
        self.config.store.save(&credentials).await?;
        self.emit(AuthEvent::Saved);
        state.credentials = Some(credentials);
        state.scope = scope;
        state.ahead_failed = false;
        Ok(())
    }

    /// Saves the tokens a refresh of `credentials` gave and uses them from now on.
    async fn keep_refreshed(
        &self,
        state: &mut State,
        credentials: &Credentials,
        tokens: TokenSet,
    ) -> Result<(), AuthError> {
        self.emit(AuthEvent::Refreshed {
            expires_in: tokens
                .expires_at
                .map(|at| at.saturating_sub(super::store::now_secs())),
        });
        let credentials = Credentials {
            tokens: Some(tokens),
            ..credentials.clone()
        };
        self.config.store.save(&credentials).await?;
        self.emit(AuthEvent::Saved);
        state.credentials = Some(credentials);
        Ok(())
    }

    /// Whether the browser step is running: requests waiting on it are not timed out
    /// meanwhile (the step bounds its own wait).
    pub fn in_browser_step(&self) -> bool {
        self.in_browser.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many authorizations (browser steps) this connection made.
    pub async fn authorizations(&self) -> u32 {
        self.state.lock().await.authorizations
    }

    /// A request carrying a token went through: step-ups start counting afresh.
    pub async fn succeeded(&self) {
        self.state.lock().await.step_ups = 0;
    }

    /// The server answered 401 to a request that carried `sent`: refresh, or log in.
    /// Does nothing when the token changed meanwhile (another request logged in).
    pub async fn unauthorized(
        &self,
        challenge: &Challenge,
        sent: Option<&str>,
    ) -> Result<(), AuthError> {
        let mut guard = self.state.lock().await;
        let state = self.loaded(&mut guard).await?;
        if current(state) != sent {
            return Ok(());
        }
        self.reauthorize(state, challenge, true).await
    }

    /// The server answered 403 `insufficient_scope` to a request that carried `sent`:
    /// log in again for the union of the scope asked so far and the challenge's, at most
    /// `max_step_ups` times in a row.
    pub async fn insufficient_scope(
        &self,
        challenge: &Challenge,
        sent: Option<&str>,
    ) -> Result<(), AuthError> {
        let mut guard = self.state.lock().await;
        let state = self.loaded(&mut guard).await?;
        if current(state) != sent {
            return Ok(());
        }
        if state.step_ups >= self.config.max_step_ups {
            return Err(AuthError::ScopeNeverGranted {
                scope: union(state.scope.as_deref(), challenge.scope.as_deref()),
                attempts: state.authorizations,
            });
        }
        state.step_ups += 1;
        self.reauthorize(state, challenge, false).await
    }

    /// Logs in again after a 401 or 403: finds the authorization server, then runs the
    /// machine grant, or a refresh (with `refresh_first`, when one can do) or else the
    /// browser step.
    async fn reauthorize(
        &self,
        state: &mut State,
        challenge: &Challenge,
        refresh_first: bool,
    ) -> Result<(), AuthError> {
        // No person consents for a machine client: it asks for its own scopes only.
        if let Some(grant) = &self.config.grant
            && let Some(scope) = challenge.scope.as_deref()
            && let Some(needed) = grant.client().not_allowed(scope)
        {
            return Err(AuthError::ScopeNotAllowed {
                scope: needed,
                allowed: grant.client().scope_list(),
            });
        }
        let (prm, issuer, metadata) = self.discover(state, challenge).await?;
        self.forget_other_server(state, &issuer, &prm.resource)
            .await?;
        if let Some(grant) = &self.config.grant {
            return self
                .machine_reauthorize(state, grant, challenge, &prm, &metadata)
                .await;
        }
        let scope = self.login_scope(state, challenge, &prm, &metadata);
        if refresh_first
            && self
                .refreshed(state, &issuer, &metadata, &prm.resource)
                .await?
        {
            return Ok(());
        }
        self.login(state, &metadata, &prm.resource, scope).await
    }

    /// The resource's metadata (from the challenge's address first), its authorization
    /// server and that server's metadata; refuses an issuer a machine grant is not bound
    /// to, and, for a person's login, a server without PKCE (`S256`).
    async fn discover(
        &self,
        state: &State,
        challenge: &Challenge,
    ) -> Result<(ResourceMetadata, String, ServerMetadata), AuthError> {
        self.emit(AuthEvent::Discovering {
            server: self.server.clone(),
        });
        let prm = discovery::resource_metadata(
            &self.http,
            &self.server,
            challenge.resource_metadata.as_deref(),
        )
        .await?;
        let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
            AuthError::NoAuthorizationServer {
                server: self.server.clone(),
            }
        })?;
        if let Some(grant) = &self.config.grant {
            self.check_machine_issuer(state, grant, &issuer)?;
        }
        let metadata = discovery::server_metadata(&self.http, &issuer).await?;
        if self.config.grant.is_none()
            && !metadata
                .code_challenge_methods_supported
                .as_ref()
                .is_some_and(|m| m.iter().any(|m| m == "S256"))
        {
            return Err(AuthError::PkceUnsupported { issuer });
        }
        self.emit(AuthEvent::Discovered {
            issuer: issuer.clone(),
        });
        Ok((prm, issuer, metadata))
    }

    /// Forgets the credentials kept for another authorization server or resource than
    /// `issuer` and `resource`.
    async fn forget_other_server(
        &self,
        state: &mut State,
        issuer: &str,
        resource: &str,
    ) -> Result<(), AuthError> {
        // Credentials of another authorization server or resource are never presented
        // here (the server migrated, say): forget them.
        if let Some(old) = &state.credentials
            && (old.issuer != issuer || old.resource != resource)
        {
            self.emit(AuthEvent::Migrated {
                from: old.issuer.clone(),
                to: issuer.to_owned(),
            });
            self.config.store.remove(&old.server, &old.resource).await?;
            state.credentials = None;
            state.scope = None;
        }
        Ok(())
    }

    /// Refreshes the kept tokens, when there is a refresh token; true when that did (the
    /// new tokens kept). A refused refresh forgets the credentials, and is an error
    /// without a browser step to fall back on.
    async fn refreshed(
        &self,
        state: &mut State,
        issuer: &str,
        metadata: &ServerMetadata,
        resource: &str,
    ) -> Result<bool, AuthError> {
        let Some(credentials) = &state.credentials else {
            return Ok(false);
        };
        let Some(refresh_token) = credentials
            .tokens
            .as_ref()
            .and_then(|t| t.refresh_token.clone())
        else {
            return Ok(false);
        };
        self.emit(AuthEvent::Refreshing {
            issuer: issuer.to_owned(),
        });
        let scope = credentials.tokens.as_ref().and_then(|t| t.scope.as_deref());
        match flow::refresh(
            &self.token_http(),
            metadata,
            &credentials.client,
            &refresh_token,
            resource,
            scope,
        )
        .await
        {
            Ok(tokens) => {
                let credentials = credentials.clone();
                self.keep_refreshed(state, &credentials, tokens).await?;
                Ok(true)
            }
            Err(AuthError::TokenRefused { error, .. }) => {
                self.emit(AuthEvent::RefreshRefused {
                    error: error.clone(),
                });
                self.config
                    .store
                    .remove(&credentials.server, &credentials.resource)
                    .await?;
                state.credentials = None;
                if self.config.authorize.is_none() {
                    return Err(AuthError::RefreshRefused { error });
                }
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}

/// What a request carries to present the access token.
#[derive(Clone)]
pub struct Presentation {
    /// The access token.
    pub token: String,
    /// The `Authorization` header's value (`Bearer TOKEN` or `DPoP TOKEN`).
    pub authorization: String,
    /// The `DPoP` header's value, for a DPoP-bound token.
    pub dpop: Option<String>,
}

impl std::fmt::Debug for Presentation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Presentation")
            .field("dpop", &self.dpop.is_some())
            .finish_non_exhaustive()
    }
}

/// The machine client of `grant` as the token store keeps it (no secret: that stays in
/// the configuration).
fn machine_client(grant: &Grant) -> RegisteredClient {
    RegisteredClient {
        client_id: grant.client().client_id.clone(),
        client_secret: None,
        token_endpoint_auth_method: None,
        redirect_uri: None,
    }
}

fn current(state: &State) -> Option<&str> {
    state
        .credentials
        .as_ref()
        .and_then(|c| c.tokens.as_ref())
        .map(|t| t.access_token.as_str())
}

#[cfg(test)]
mod tests {
    #[test]
    fn scopes_union_keeps_order_and_drops_repeats() {
        assert_eq!(
            super::union(Some("a b"), Some("b c")).as_deref(),
            Some("a b c")
        );
        assert_eq!(super::union(None, Some("x")).as_deref(), Some("x"));
        assert_eq!(super::union(None, None), None);
        assert_eq!(super::union(Some(" "), None), None);
    }
}
