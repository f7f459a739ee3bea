//! [`AuthError`]: every way logging in to a server can fail, each saying what to do.

/// Why the client could not get (or keep) an access token for a server. Each message
/// names what went wrong and what the user can do about it.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The server asked for authorization but publishes no Protected Resource Metadata
    /// (RFC 9728) at the URL its challenge named or at the well-known paths.
    #[error(
        "the server {server} asks for authorization but publishes no protected resource metadata (tried {tried}); ask the server's operator to publish it (RFC 9728), naming the authorization server to use"
    )]
    NoResourceMetadata {
        /// The MCP server's URL.
        server: String,
        /// The URLs tried, in order.
        tried: String,
    },
    /// The Protected Resource Metadata names another resource than the server we talk to
    /// (RFC 9728 §3.3): its tokens would be for someone else.
    #[error(
        "the protected resource metadata is for {found}, not for {expected}: refusing to authorize (a misconfigured or malicious server)"
    )]
    ResourceMismatch {
        /// The server URL we connect to.
        expected: String,
        /// The `resource` the metadata names.
        found: String,
    },
    /// The Protected Resource Metadata lists no authorization server.
    #[error(
        "the protected resource metadata of {server} lists no authorization server; ask the server's operator to name one in its authorization_servers"
    )]
    NoAuthorizationServer {
        /// The MCP server's URL.
        server: String,
    },
    /// No authorization server metadata (RFC 8414 or OpenID discovery) was found.
    #[error(
        "no authorization server metadata for {issuer} (tried {tried}); check that the authorization server is up, or tell the server's operator if that is not its issuer"
    )]
    NoServerMetadata {
        /// The issuer.
        issuer: String,
        /// The URLs tried, in order.
        tried: String,
    },
    /// The authorization server metadata names another issuer than the one its
    /// well-known URL was built from (RFC 8414 §3.3): it must not be used.
    #[error(
        "the authorization server metadata fetched for {expected} claims to be issuer {found}: refusing to use it"
    )]
    IssuerMismatch {
        /// The issuer the metadata was fetched for.
        expected: String,
        /// The `issuer` the metadata names.
        found: String,
    },
    /// The authorization server does not advertise PKCE with S256, which MCP requires.
    #[error(
        "the authorization server {issuer} does not advertise PKCE S256 (code_challenge_methods_supported); MCP clients must refuse it"
    )]
    PkceUnsupported {
        /// The issuer.
        issuer: String,
    },
    /// No way to get a client id: no pre-registered client, no client ID metadata
    /// document accepted, and no registration endpoint.
    #[error(
        "the authorization server {issuer} offers no dynamic client registration; register a client there yourself and give its id with that issuer (mcp-call --client-id ID [--client-secret SECRET] --client-issuer {issuer}; in code, AuthConfig::with_pre_registered)"
    )]
    NoRegistration {
        /// The issuer.
        issuer: String,
    },
    /// The pre-registered clients are for other authorization servers than the one the
    /// MCP server names, and that one offers no other way to get a client id: their
    /// secrets are never sent there.
    #[error(
        "the server names the authorization server {issuer}, but the pre-registered client is for {registered_with}; its id and secret are not sent to another authorization server, and {issuer} offers no dynamic client registration. If {issuer} is the right one, register a client there and give it with that issuer (mcp-call --client-id ID [--client-secret SECRET] --client-issuer {issuer}; in code, AuthConfig::with_pre_registered); otherwise the server (or its metadata) is not the one you expect"
    )]
    PreRegisteredForOtherIssuer {
        /// The issuer the MCP server names.
        issuer: String,
        /// The issuers of the pre-registered clients, comma-separated.
        registered_with: String,
    },
    /// Dynamic client registration (RFC 7591) was refused.
    #[error(
        "client registration at {endpoint} was refused: {reason}; register a client with that authorization server yourself and give its id with its issuer (mcp-call --client-id ID [--client-secret SECRET] --client-issuer ISSUER; in code, AuthConfig::with_pre_registered)"
    )]
    RegistrationRefused {
        /// The registration endpoint.
        endpoint: String,
        /// The status and what the server said.
        reason: String,
    },
    /// The authorization server answered the authorization request with an error (the
    /// user denied access, say).
    #[error(
        "authorization was refused: {error}{}; approve the request in the browser and run again (if your account may not use this server, ask its operator for access)",
        description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default()
    )]
    Denied {
        /// The OAuth error code (`access_denied`...).
        error: String,
        /// Its description, if any.
        description: Option<String>,
    },
    /// The authorization response's `state` is not the one we sent: a forged or stale
    /// redirect.
    #[error(
        "the authorization response's state does not match the request's: ignoring it (log in again)"
    )]
    StateMismatch,
    /// The authorization server advertises the `iss` response parameter (RFC 9207) but
    /// the response had none.
    #[error(
        "the authorization response has no iss parameter although {issuer} advertises it: refusing it (a possible mix-up attack)"
    )]
    IssMissing {
        /// The expected issuer.
        issuer: String,
    },
    /// The authorization response's `iss` is not the issuer we asked (RFC 9207, simple
    /// string comparison).
    #[error(
        "the authorization response comes from issuer {found}, not {expected}: refusing it (a possible mix-up attack)"
    )]
    IssMismatch {
        /// The issuer we asked.
        expected: String,
        /// The `iss` the response carried.
        found: String,
    },
    /// The redirect carried neither a code nor an error.
    #[error("the authorization response has no code: {0}")]
    NoCode(String),
    /// The token endpoint answered with an OAuth error.
    #[error("the token endpoint refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    TokenRefused {
        /// The OAuth error code (`invalid_grant`...).
        error: String,
        /// Its description, if any.
        description: Option<String>,
    },
    /// The refresh token was refused (expired or revoked) and no interactive login is
    /// configured.
    #[error(
        "the stored refresh token was refused ({error}); log in again (mcp-call --http URL --login)"
    )]
    RefreshRefused {
        /// The OAuth error code.
        error: String,
    },
    /// The token request failed without an OAuth answer (network, unparsable body).
    #[error("the token request failed: {0}")]
    TokenRequest(String),
    /// The server keeps asking for more scope after `attempts` authorizations.
    #[error(
        "the server still refuses with insufficient_scope after {attempts} authorizations (last asked for: {}); your account may lack that permission: ask the server's operator to grant it",
        scope.as_deref().unwrap_or("no scope")
    )]
    ScopeNeverGranted {
        /// The scope last asked for.
        scope: Option<String>,
        /// Authorizations made.
        attempts: u32,
    },
    /// The server refused a token it had just been given.
    #[error("the server refused the new access token: {0}")]
    TokenRejected(String),
    /// The server asked for authorization but this client has no way to log in (no
    /// authorization step configured).
    #[error(
        "the server {server} requires authorization; log in (mcp-call --http URL --login) or configure an authorization step"
    )]
    LoginRequired {
        /// The MCP server's URL.
        server: String,
    },
    /// Fetching or reading a metadata document failed.
    #[error("cannot read {url}: {reason}")]
    Fetch {
        /// The URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The browser step failed (no redirect came back, the loopback listener failed...).
    #[error("the browser step failed: {0}")]
    Browser(String),
    /// The token store failed.
    #[error("token store: {0}")]
    Store(String),
    /// An authorization server's issuer or endpoint is not https (plain http is
    /// accepted on a loopback host only): the MCP authorization spec requires https, and
    /// over plain http a network attacker could read or replace codes, tokens and secrets.
    #[error(
        "refusing the {what} {url}: {reason}; the MCP authorization spec requires https for authorization servers (ask the server's operator to publish an https one)"
    )]
    InsecureUrl {
        /// What the URL is (`issuer`, `token endpoint`...).
        what: &'static str,
        /// The URL.
        url: String,
        /// Why it is refused.
        reason: String,
    },
    /// A metadata document, registration answer or token answer is larger than the
    /// client reads.
    #[error(
        "the answer from {url} is larger than {limit} bytes: refusing to read it (a misbehaving server)"
    )]
    ResponseTooLarge {
        /// The URL.
        url: String,
        /// The most read, in bytes.
        limit: usize,
    },
    /// A key, client assertion or token file of the configuration is not usable (an
    /// unreadable PEM or workload token file, a signing failure).
    #[error("{0}")]
    Key(String),
    /// The machine client is bound to another authorization server than the one the
    /// MCP server names: its credentials are not sent there.
    #[error(
        "the server names the authorization server {issuer}, but the client credentials are for {bound}: they are not sent to another authorization server (if {issuer} is the right one, configure the client for it)"
    )]
    MachineClientForOtherIssuer {
        /// The issuer the MCP server names.
        issuer: String,
        /// The issuer the client is bound to.
        bound: String,
    },
    /// The machine client would send a secret ([`Grant::secret_sent`]) to whichever
    /// authorization server the MCP server names: it must be bound to an issuer first.
    /// Nothing was sent (this is checked before any request).
    ///
    /// [`Grant::secret_sent`]: super::Grant::secret_sent
    #[error(
        "the machine client {client_id} is not bound to an authorization server, so it would send {sends} to whichever one the MCP server names (a hostile server can name its own and replay it): nothing was sent. Bind it to the issuer it is registered with (mcp-call --client-issuer ISSUER; in code, IssuerBinding::Issuer), or accept the first authorization server met and refuse any other after it (mcp-call --trust-first-issuer; in code, IssuerBinding::TrustFirstUse)"
    )]
    MachineClientUnbound {
        /// The client id.
        client_id: String,
        /// What it would send (`its client secret`, `the workload identity token`...).
        sends: &'static str,
    },
    /// The machine client trusts the first authorization server it met
    /// ([`IssuerBinding::TrustFirstUse`]), recorded with the stored login of this MCP
    /// server, and the server now names another: nothing is sent to that one.
    ///
    /// [`IssuerBinding::TrustFirstUse`]: super::IssuerBinding::TrustFirstUse
    #[error(
        "the server names the authorization server {issuer}, but the machine client was first used with {first} (trusted on first use, recorded in the token store): its credentials are not sent to another authorization server, and nothing was sent to {issuer}. If {issuer} is the right one now, bind the client to it (mcp-call --client-issuer {issuer}) or remove the stored login of this server; otherwise the server (or its metadata) is not the one you expect"
    )]
    IssuerChangedSinceFirstUse {
        /// The issuer the MCP server names now.
        issuer: String,
        /// The issuer the client was first used with.
        first: String,
    },
    /// The server's challenge asks a machine client for scopes it was not given
    /// ([`MachineClient::scopes`]): with no person to consent, it does not ask for them.
    /// No token was requested.
    ///
    /// [`MachineClient::scopes`]: super::MachineClient::scopes
    #[error(
        "the server asks for the scope {scope}, which the machine client may not ask for (it may ask for: {}): no token was requested. If the client should have it, allow it (mcp-call --client-scope \"{scope}\"; in code, MachineClient::with_scopes)",
        allowed.as_deref().unwrap_or("no scope")
    )]
    ScopeNotAllowed {
        /// The scopes asked for that the client may not ask for, space-separated: those
        /// it would need.
        scope: String,
        /// The scopes it may ask for, space-separated; `None` when none.
        allowed: Option<String>,
    },
    /// An URL in the configuration or a metadata document is not usable.
    #[error("invalid URL {url}: {reason}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::AuthError;

    #[test]
    fn scope_never_granted_names_the_scope_plainly() {
        let e = AuthError::ScopeNeverGranted {
            scope: Some("mcp offline_access".into()),
            attempts: 3,
        };
        assert!(
            e.to_string()
                .contains("after 3 authorizations (last asked for: mcp offline_access)"),
            "{e}"
        );
        let e = AuthError::ScopeNeverGranted {
            scope: None,
            attempts: 1,
        };
        assert!(e.to_string().contains("(last asked for: no scope)"), "{e}");
    }

    #[test]
    fn scope_not_allowed_names_the_scopes_needed_and_the_flag() {
        let e = AuthError::ScopeNotAllowed {
            scope: "admin write".into(),
            allowed: Some("read".into()),
        };
        let said = e.to_string();
        assert!(
            said.contains("asks for the scope admin write")
                && said.contains("(it may ask for: read)")
                && said.contains(r#"--client-scope "admin write""#),
            "{said}"
        );
        let e = AuthError::ScopeNotAllowed {
            scope: "admin".into(),
            allowed: None,
        };
        assert!(e.to_string().contains("(it may ask for: no scope)"), "{e}");
    }
}
