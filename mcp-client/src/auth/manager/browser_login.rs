//! The login of a person: discovery done, the client registered, the browser step and
//! the code exchange, asking for the scope the challenge (or the resource) wants.

use super::super::challenge::Challenge;
use super::super::discovery::{ResourceMetadata, ServerMetadata};
use super::super::error::AuthError;
use super::super::event::AuthEvent;
use super::super::{flow, registration};
use super::{Authorizer, State, union};

impl Authorizer {
    /// The scope a person's login asks for: the challenge's, else the resource's, with
    /// those asked for before, and `offline_access` when configured and supported.
    pub(super) fn login_scope(
        &self,
        state: &State,
        challenge: &Challenge,
        prm: &ResourceMetadata,
        metadata: &ServerMetadata,
    ) -> Option<String> {
        let wanted = challenge.scope.clone().or_else(|| {
            prm.scopes_supported
                .as_ref()
                .filter(|s| !s.is_empty())
                .map(|s| s.join(" "))
        });
        let mut scope = union(state.scope.as_deref(), wanted.as_deref());
        if self.config.offline_access && metadata.supports_scope("offline_access") {
            scope = union(scope.as_deref(), Some("offline_access"));
        }
        scope
    }

    /// The browser step and the code exchange; saves the result.
    pub(super) async fn login(
        &self,
        state: &mut State,
        metadata: &ServerMetadata,
        resource: &str,
        scope: Option<String>,
    ) -> Result<(), AuthError> {
        let Some(authorize) = &self.config.authorize else {
            return Err(AuthError::LoginRequired {
                server: self.server.clone(),
            });
        };
        let redirect_uri = authorize.redirect_uri();
        let client = match &state.credentials {
            Some(c) if c.client.redirect_uri.as_deref() == Some(redirect_uri.as_str()) => {
                c.client.clone()
            }
            _ => {
                let emit = |event| self.emit(event);
                registration::client_for(
                    &self.http,
                    metadata,
                    &self.config.identity,
                    &redirect_uri,
                    &emit,
                )
                .await?
            }
        };
        let pending = flow::authorization_request(
            metadata,
            &client,
            &redirect_uri,
            scope.as_deref(),
            resource,
        )?;
        state.authorizations += 1;
        self.emit(AuthEvent::Authorizing {
            url: pending.url.clone(),
            scope: scope.clone(),
        });
        self.in_browser
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let response = authorize.authorize(&pending.url).await;
        self.in_browser
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let response = response?;
        let code = flow::checked_code(response, &pending.state, metadata)?;
        let tokens = flow::exchange_code(
            &self.token_http(),
            metadata,
            &client,
            pending,
            code,
            resource,
            scope.as_deref(),
        )
        .await?;
        let credentials = self.credentials(metadata, resource, client, tokens);
        self.keep_tokens(state, credentials, scope).await
    }
}
