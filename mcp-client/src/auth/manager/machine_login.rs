//! The machine logins of an [`Authorizer`](super::Authorizer): the issuer its client is
//! bound to (or trusts on first use) checked before any request, and a token got with
//! its [`Grant`].

use super::super::challenge::Challenge;
use super::super::discovery::{ResourceMetadata, ServerMetadata};
use super::super::error::AuthError;
use super::super::event::AuthEvent;
use super::super::machine::{self, Grant, IssuerBinding};
use super::super::store::{Credentials, RegisteredClient, TokenSet};
use super::{Authorizer, State, machine_client, union};

impl Authorizer {
    /// Checks, before any request to it, that the machine client of `grant` may send
    /// its credentials to `issuer`: its bound issuer, or for
    /// [`IssuerBinding::TrustFirstUse`] the one recorded with the stored login.
    pub(super) fn check_machine_issuer(
        &self,
        state: &State,
        grant: &Grant,
        issuer: &str,
    ) -> Result<(), AuthError> {
        let client = grant.client();
        machine::check_binding(client, issuer)?;
        if client.issuer == IssuerBinding::TrustFirstUse
            && let Some(first) = state.credentials.as_ref().map(|c| &c.issuer)
            && first != issuer
        {
            return Err(AuthError::IssuerChangedSinceFirstUse {
                issuer: issuer.to_owned(),
                first: first.clone(),
            });
        }
        Ok(())
    }

    /// For a machine client trusting its first issuer that has none recorded yet:
    /// records `metadata`'s issuer in the store (a login without tokens) before
    /// anything is sent there.
    pub(super) async fn trust_first_issuer(
        &self,
        state: &mut State,
        grant: &Grant,
        metadata: &ServerMetadata,
        resource: &str,
    ) -> Result<(), AuthError> {
        let client = grant.client();
        if client.issuer != IssuerBinding::TrustFirstUse || state.credentials.is_some() {
            return Ok(());
        }
        let record = Credentials {
            server: self.server.clone(),
            resource: resource.to_owned(),
            issuer: metadata.issuer.clone(),
            client: machine_client(grant),
            tokens: None,
        };
        self.config.store.save(&record).await?;
        self.emit(AuthEvent::IssuerTrusted {
            issuer: metadata.issuer.clone(),
            client_id: client.client_id.clone(),
        });
        state.credentials = Some(record);
        Ok(())
    }

    /// Gets a token with the machine `grant` and saves it.
    pub(super) async fn machine_login(
        &self,
        state: &mut State,
        metadata: &ServerMetadata,
        grant: &Grant,
        resource: &str,
        scope: Option<String>,
    ) -> Result<(), AuthError> {
        state.authorizations += 1;
        let tokens = machine::run(
            &self.token_http(),
            metadata,
            grant,
            resource,
            scope.as_deref(),
        )
        .await?;
        let credentials = self.credentials(metadata, resource, machine_client(grant), tokens);
        self.keep_tokens(state, credentials, scope).await
    }

    /// The credentials of `tokens` for `resource`, issued by `metadata`'s server to
    /// `client`.
    pub(super) fn credentials(
        &self,
        metadata: &ServerMetadata,
        resource: &str,
        client: RegisteredClient,
        tokens: TokenSet,
    ) -> Credentials {
        Credentials {
            server: self.server.clone(),
            resource: resource.to_owned(),
            issuer: metadata.issuer.clone(),
            client,
            tokens: Some(tokens),
        }
    }

    /// A machine client's login: trusts the issuer on first use (when so bound), then asks
    /// for the scope it wants and may ask for.
    pub(super) async fn machine_reauthorize(
        &self,
        state: &mut State,
        grant: &Grant,
        challenge: &Challenge,
        prm: &ResourceMetadata,
        metadata: &ServerMetadata,
    ) -> Result<(), AuthError> {
        self.trust_first_issuer(state, grant, metadata, &prm.resource)
            .await?;
        // The challenge's scope (checked by `reauthorize`), else the resource's scopes the
        // client may ask for; with those asked for before that it may ask for.
        let client = grant.client();
        let wanted = challenge.scope.clone().or_else(|| {
            prm.scopes_supported
                .as_ref()
                .and_then(|s| client.allowed_part(&s.join(" ")))
        });
        let before = state.scope.as_deref().and_then(|s| client.allowed_part(s));
        let scope = union(before.as_deref(), wanted.as_deref());
        self.machine_login(state, metadata, grant, &prm.resource, scope)
            .await
    }
}
