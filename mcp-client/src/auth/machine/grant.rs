//! The token requests of the machine grants: the client's authentication at the token
//! endpoint, the grant itself, and the RFC 8693 exchange at an identity provider.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use super::super::discovery::ServerMetadata;
use super::super::error::AuthError;
use super::super::registration::{CLIENT_SECRET_BASIC, CLIENT_SECRET_POST};
use super::super::secure::{CappedError, CappedHttp, require_https};
use super::super::store::{TokenSet, now_secs};
use super::{
    ASSERTION_TYPE, Assertion, CLIENT_CREDENTIALS, ClientAuth, Grant, ID_JAG, ID_TOKEN,
    IdentityProvider, IssuerBinding, JWT_BEARER, MachineClient, TOKEN_EXCHANGE, check_binding,
    check_configuration, client_assertion,
};

/// A token endpoint's answer (the members used), success or error.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    token_type: Option<String>,
    expires_in: Option<u64>,
    refresh_token: Option<String>,
    scope: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

fn percent(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// POSTs `form` to `endpoint` with `client`'s authentication (`audience`: the issuer
/// a client assertion is for; `methods`: what the server lists); reads the answer.
async fn token_request(
    http: &CappedHttp,
    endpoint: &str,
    client: &MachineClient,
    audience: &str,
    methods: Option<&[String]>,
    form: Vec<(&'static str, String)>,
) -> Result<TokenAnswer, AuthError> {
    require_https(endpoint, "token endpoint")?;
    // Made again for a DPoP nonce retry: a client assertion is good for one request.
    let build = || {
        let mut form = form.clone();
        let mut request = oauth2::http::Request::builder()
            .method(oauth2::http::Method::POST)
            .uri(endpoint)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json");
        match &client.auth {
            ClientAuth::Secret(secret) => {
                let basic = methods.is_none_or(|m| {
                    m.iter().any(|m| m == CLIENT_SECRET_BASIC)
                        || !m.iter().any(|m| m == CLIENT_SECRET_POST)
                });
                if basic {
                    // RFC 6749 §2.3.1: both form-urlencoded before Basic encoding.
                    let pair = format!("{}:{}", percent(&client.client_id), percent(secret));
                    request =
                        request.header("authorization", format!("Basic {}", STANDARD.encode(pair)));
                } else {
                    form.push(("client_id", client.client_id.clone()));
                    form.push(("client_secret", secret.clone()));
                }
            }
            ClientAuth::PrivateKeyJwt(key) => {
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_assertion_type", ASSERTION_TYPE.into()));
                form.push((
                    "client_assertion",
                    client_assertion(key, &client.client_id, audience)?,
                ));
            }
            ClientAuth::None => form.push(("client_id", client.client_id.clone())),
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        request
            .body(body.into_bytes())
            .map_err(|e| AuthError::TokenRequest(e.to_string()))
    };
    let response = http.send_rebuilt(build).await.map_err(|CappedError(e)| e)?;
    let answer: TokenAnswer = serde_json::from_slice(response.body()).map_err(|e| {
        AuthError::TokenRequest(format!(
            "unreadable answer from {endpoint} (HTTP {}): {e}",
            response.status()
        ))
    })?;
    if let Some(error) = answer.error.clone() {
        return Err(AuthError::TokenRefused {
            error,
            description: answer.error_description,
        });
    }
    if !response.status().is_success() || answer.access_token.is_none() {
        return Err(AuthError::TokenRequest(format!(
            "{endpoint} answered HTTP {} without an access token",
            response.status()
        )));
    }
    Ok(answer)
}

fn token_set(answer: TokenAnswer, scope: Option<&str>) -> TokenSet {
    TokenSet {
        access_token: answer.access_token.unwrap_or_default(),
        token_type: answer.token_type,
        refresh_token: answer.refresh_token,
        expires_at: answer.expires_in.map(|s| now_secs().saturating_add(s)),
        scope: answer.scope.or_else(|| scope.map(str::to_owned)),
        received_at: Some(now_secs()),
    }
}

/// Runs `grant` at `metadata`'s authorization server for `resource` and `scope`.
pub async fn run(
    http: &CappedHttp,
    metadata: &ServerMetadata,
    grant: &Grant,
    resource: &str,
    scope: Option<&str>,
) -> Result<TokenSet, AuthError> {
    let client = grant.client();
    check_configuration(grant)?;
    check_binding(client, &metadata.issuer)?;
    let mut form: Vec<(&'static str, String)> = Vec::new();
    match grant {
        Grant::ClientCredentials(_) => form.push(("grant_type", CLIENT_CREDENTIALS.into())),
        Grant::JwtBearer { assertion, .. } => {
            form.push(("grant_type", JWT_BEARER.into()));
            form.push(("assertion", assertion.read()?));
        }
        Grant::IdentityAssertion { idp, id_token, .. } => {
            let jag = identity_assertion(http, idp, id_token, metadata, resource, scope).await?;
            form.push(("grant_type", JWT_BEARER.into()));
            form.push(("assertion", jag));
        }
    }
    form.push(("resource", resource.to_owned()));
    if let Some(scope) = scope {
        form.push(("scope", scope.to_owned()));
    }
    let answer = token_request(
        http,
        &metadata.token_endpoint,
        client,
        &metadata.issuer,
        metadata.token_endpoint_auth_methods_supported.as_deref(),
        form,
    )
    .await?;
    Ok(token_set(answer, scope))
}

/// The RFC 8693 token exchange at the identity provider: the ID token for an ID-JAG
/// whose audience is the authorization server and whose resource is the MCP server.
async fn identity_assertion(
    http: &CappedHttp,
    idp: &IdentityProvider,
    id_token: &Assertion,
    metadata: &ServerMetadata,
    resource: &str,
    scope: Option<&str>,
) -> Result<String, AuthError> {
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE.to_owned()),
        ("requested_token_type", ID_JAG.to_owned()),
        ("audience", metadata.issuer.clone()),
        ("resource", resource.to_owned()),
        ("subject_token", id_token.read()?),
        ("subject_token_type", ID_TOKEN.to_owned()),
    ];
    if let Some(scope) = scope {
        form.push(("scope", scope.to_owned()));
    }
    // The identity provider's own token endpoint: no DPoP there (the ID-JAG is not a
    // token presented to a resource).
    let plain = CappedHttp {
        http: http.http.clone(),
        dpop: None,
    };
    let audience = match &idp.client.issuer {
        IssuerBinding::Issuer(issuer) => issuer.clone(),
        IssuerBinding::TrustFirstUse | IssuerBinding::Unbound => {
            url::Url::parse(&idp.token_endpoint)
                .map(|u| u.origin().ascii_serialization())
                .unwrap_or_default()
        }
    };
    let answer = token_request(
        &plain,
        &idp.token_endpoint,
        &idp.client,
        &audience,
        None,
        form,
    )
    .await?;
    Ok(answer.access_token.unwrap_or_default())
}
