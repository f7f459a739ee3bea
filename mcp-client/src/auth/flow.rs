//! The OAuth 2.1 mechanics, on the `oauth2` crate: the authorization request with PKCE
//! S256, `state` and the RFC 8707 `resource`; the checks of the authorization response
//! (`state`, RFC 9207 `iss`); the code exchange and the refresh, with the client
//! authentication the token endpoint takes. The endpoints must be https (or loopback
//! http) and token answers are read up to 1 MiB ([`secure`](super::secure)).

use oauth2::basic::{BasicClient, BasicErrorResponse, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet,
    EndpointSet, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError,
    Scope, TokenResponse, TokenUrl,
};

use super::browser::AuthorizationResponse;
use super::discovery::ServerMetadata;
use super::error::AuthError;
use super::registration::{CLIENT_SECRET_BASIC, NONE, token_auth_method};
use super::secure::{CappedError, CappedHttp};
use super::store::{RegisteredClient, TokenSet, now_secs};

/// An `oauth2` client with its authorization and token endpoints set.
type Configured =
    BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

fn invalid(url: &str, e: impl std::fmt::Display) -> AuthError {
    AuthError::InvalidUrl {
        url: url.to_owned(),
        reason: e.to_string(),
    }
}

/// The `oauth2` client for `client` at `metadata`'s server (whose endpoints must be
/// https or loopback http: nothing is sent to the others).
fn oauth_client(
    metadata: &ServerMetadata,
    client: &RegisteredClient,
    redirect_uri: Option<&str>,
) -> Result<Configured, AuthError> {
    metadata.require_https()?;
    let method = token_auth_method(client, metadata);
    let mut oauth = BasicClient::new(ClientId::new(client.client_id.clone()))
        .set_auth_uri(
            AuthUrl::new(metadata.authorization_endpoint.clone())
                .map_err(|e| invalid(&metadata.authorization_endpoint, e))?,
        )
        .set_token_uri(
            TokenUrl::new(metadata.token_endpoint.clone())
                .map_err(|e| invalid(&metadata.token_endpoint, e))?,
        )
        .set_auth_type(if method == CLIENT_SECRET_BASIC {
            AuthType::BasicAuth
        } else {
            AuthType::RequestBody
        });
    // `none`: no secret, the client id goes in the body.
    if method != NONE
        && let Some(secret) = &client.client_secret
    {
        oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
    }
    if let Some(uri) = redirect_uri {
        oauth =
            oauth.set_redirect_uri(RedirectUrl::new(uri.to_owned()).map_err(|e| invalid(uri, e))?);
    }
    Ok(oauth)
}

/// An authorization request, with what its response is checked against.
#[derive(Debug)]
pub struct Pending {
    /// Where the user goes.
    pub url: String,
    /// The `state` sent.
    pub state: String,
    /// The PKCE verifier of the challenge sent.
    pub verifier: PkceCodeVerifier,
    /// The redirect URI sent.
    pub redirect_uri: String,
}

/// Builds the authorization URL: code flow, PKCE S256, a random `state`, the scope (if
/// any) and the `resource`.
pub fn authorization_request(
    metadata: &ServerMetadata,
    client: &RegisteredClient,
    redirect_uri: &str,
    scope: Option<&str>,
    resource: &str,
) -> Result<Pending, AuthError> {
    let oauth = oauth_client(metadata, client, Some(redirect_uri))?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = oauth
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_extra_param("resource", resource);
    for s in scope.into_iter().flat_map(str::split_whitespace) {
        request = request.add_scope(Scope::new(s.to_owned()));
    }
    let (url, state) = request.url();
    Ok(Pending {
        url: url.to_string(),
        state: state.secret().clone(),
        verifier,
        redirect_uri: redirect_uri.to_owned(),
    })
}

/// The code of `response`, once its `state` and `iss` pass: the state must be ours;
/// `iss`, required when the server advertises it and compared whenever present, must
/// be the issuer as a plain string (no URL normalization).
pub fn checked_code(
    response: AuthorizationResponse,
    expected_state: &str,
    metadata: &ServerMetadata,
) -> Result<String, AuthError> {
    match &response.iss {
        Some(iss) if *iss != metadata.issuer => {
            return Err(AuthError::IssMismatch {
                expected: metadata.issuer.clone(),
                found: iss.clone(),
            });
        }
        None if metadata.authorization_response_iss_parameter_supported == Some(true) => {
            return Err(AuthError::IssMissing {
                issuer: metadata.issuer.clone(),
            });
        }
        _ => {}
    }
    if response.state.as_deref() != Some(expected_state) {
        return Err(AuthError::StateMismatch);
    }
    if let Some(error) = response.error {
        return Err(AuthError::Denied {
            error,
            description: response.error_description,
        });
    }
    response
        .code
        .ok_or_else(|| AuthError::NoCode("the redirect carried neither code nor error".into()))
}

type TokenError = RequestTokenError<CappedError, BasicErrorResponse>;

fn token_error(e: TokenError) -> AuthError {
    match e {
        RequestTokenError::ServerResponse(r) => AuthError::TokenRefused {
            error: r.error().to_string(),
            description: r.error_description().cloned(),
        },
        RequestTokenError::Request(CappedError(e)) => e,
        RequestTokenError::Parse(e, body) => AuthError::TokenRequest(format!(
            "unreadable token response ({e}): {}",
            String::from_utf8_lossy(&body)
                .chars()
                .take(200)
                .collect::<String>()
        )),
        RequestTokenError::Other(e) => AuthError::TokenRequest(e),
    }
}

fn token_set(
    r: &BasicTokenResponse,
    asked_scope: Option<&str>,
    old_refresh: Option<&str>,
) -> TokenSet {
    let granted = r
        .scopes()
        .map(|s| s.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "));
    TokenSet {
        access_token: r.access_token().secret().clone(),
        token_type: Some(r.token_type().as_ref().to_owned()),
        // A refresh that returns no new refresh token keeps the old one (RFC 6749 §6).
        refresh_token: r
            .refresh_token()
            .map(|t| t.secret().clone())
            .or_else(|| old_refresh.map(str::to_owned)),
        expires_at: r
            .expires_in()
            .map(|d| now_secs().saturating_add(d.as_secs())),
        scope: granted.or_else(|| asked_scope.map(str::to_owned)),
        received_at: Some(now_secs()),
    }
}

/// Exchanges `code` (with the PKCE verifier of `pending` and the `resource`) for tokens.
pub async fn exchange_code(
    http: &CappedHttp,
    metadata: &ServerMetadata,
    client: &RegisteredClient,
    pending: Pending,
    code: String,
    resource: &str,
    scope: Option<&str>,
) -> Result<TokenSet, AuthError> {
    let oauth = oauth_client(metadata, client, Some(&pending.redirect_uri))?;
    let response = oauth
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(pending.verifier)
        .add_extra_param("resource", resource)
        .request_async(http)
        .await
        .map_err(token_error)?;
    Ok(token_set(&response, scope, None))
}

/// Trades `refresh_token` for new tokens (with the `resource`); `scope`, the scope
/// granted before, stands when the answer names none (RFC 6749 §5.1: unchanged).
pub async fn refresh(
    http: &CappedHttp,
    metadata: &ServerMetadata,
    client: &RegisteredClient,
    refresh_token: &str,
    resource: &str,
    scope: Option<&str>,
) -> Result<TokenSet, AuthError> {
    let oauth = oauth_client(metadata, client, None)?;
    let token = RefreshToken::new(refresh_token.to_owned());
    let response = oauth
        .exchange_refresh_token(&token)
        .add_extra_param("resource", resource)
        .request_async(http)
        .await
        .map_err(token_error)?;
    Ok(token_set(&response, scope, Some(refresh_token)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(iss_supported: Option<bool>) -> ServerMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": "https://as:1",
            "authorization_endpoint": "https://as:1/authorize",
            "token_endpoint": "https://as:1/token",
            "authorization_response_iss_parameter_supported": iss_supported,
        }))
        .expect("metadata")
    }

    fn response(state: &str, iss: Option<&str>) -> AuthorizationResponse {
        AuthorizationResponse {
            code: Some("c".into()),
            state: Some(state.into()),
            iss: iss.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn iss_and_state_are_compared_as_strings() {
        let m = metadata(Some(true));
        assert_eq!(
            checked_code(response("s", Some("https://as:1")), "s", &m).ok(),
            Some("c".into())
        );
        assert!(matches!(
            checked_code(response("s", Some("https://as:1/")), "s", &m),
            Err(AuthError::IssMismatch { .. })
        ));
        assert!(matches!(
            checked_code(response("s", None), "s", &m),
            Err(AuthError::IssMissing { .. })
        ));
        assert!(matches!(
            checked_code(response("t", Some("https://as:1")), "s", &m),
            Err(AuthError::StateMismatch)
        ));
        let m = metadata(None);
        assert!(checked_code(response("s", None), "s", &m).is_ok());
        assert!(matches!(
            checked_code(response("s", Some("https://evil.example.com")), "s", &m),
            Err(AuthError::IssMismatch { .. })
        ));
    }

    #[test]
    fn nothing_goes_to_a_plain_http_endpoint_off_loopback() {
        let client = RegisteredClient {
            client_id: "cid".into(),
            client_secret: Some("secret".into()),
            token_endpoint_auth_method: None,
            redirect_uri: None,
        };
        let mut m = metadata(None);
        m.token_endpoint = "http://as.example.com/token".into();
        assert!(matches!(
            authorization_request(&m, &client, "http://127.0.0.1:9/cb", None, "https://h/mcp"),
            Err(AuthError::InsecureUrl {
                what: "token endpoint",
                ..
            })
        ));
        m.token_endpoint = "http://127.0.0.1:8/token".into();
        assert!(
            authorization_request(&m, &client, "http://127.0.0.1:9/cb", None, "https://h/mcp")
                .is_ok()
        );
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_scope_and_resource() {
        let m = metadata(None);
        let client = RegisteredClient {
            client_id: "cid".into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            redirect_uri: None,
        };
        let p = authorization_request(
            &m,
            &client,
            "http://127.0.0.1:9/cb",
            Some("a b"),
            "http://h/mcp",
        )
        .expect("request");
        let url = url::Url::parse(&p.url).expect("url");
        let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(
            q.get("code_challenge_method").map(String::as_str),
            Some("S256")
        );
        assert_eq!(q.get("scope").map(String::as_str), Some("a b"));
        assert_eq!(q.get("resource").map(String::as_str), Some("http://h/mcp"));
        assert_eq!(q.get("state"), Some(&p.state));
        assert_eq!(q.get("response_type").map(String::as_str), Some("code"));
    }
}
