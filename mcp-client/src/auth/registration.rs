//! Who the client is at an authorization server: a pre-registered client, a Client ID
//! Metadata Document (its HTTPS URL as client id), or a client registered dynamically
//! (RFC 7591); and how it authenticates at the token endpoint.

use serde::Deserialize;

use super::discovery::ServerMetadata;
use super::error::AuthError;
use super::event::AuthEvent;
use super::store::RegisteredClient;

/// `client_secret_basic`: HTTP Basic with the client id and secret.
pub const CLIENT_SECRET_BASIC: &str = "client_secret_basic";
/// `client_secret_post`: the client id and secret in the form body.
pub const CLIENT_SECRET_POST: &str = "client_secret_post";
/// `none`: a public client, its id in the form body.
pub const NONE: &str = "none";

/// How the client presents itself, as configured.
#[derive(Debug, Clone)]
pub struct ClientIdentity {
    /// `client_name` in a registration request.
    pub client_name: String,
    /// The HTTPS URL of this client's Client ID Metadata Document, used as its client id
    /// where the authorization server accepts one.
    pub metadata_url: Option<String>,
    /// A client registered beforehand (used with any authorization server).
    pub pre_registered: Option<RegisteredClient>,
}

/// The token endpoint authentication methods a server accepts (RFC 8414's default
/// when it does not say).
fn supported(metadata: &ServerMetadata) -> Vec<&str> {
    match &metadata.token_endpoint_auth_methods_supported {
        Some(list) => list.iter().map(String::as_str).collect(),
        None => vec![CLIENT_SECRET_BASIC],
    }
}

/// The method `client` uses at `metadata`'s token endpoint: the registered one, else
/// one the server accepts for a client with (or without) a secret.
pub fn token_auth_method(client: &RegisteredClient, metadata: &ServerMetadata) -> &'static str {
    let has_secret = client.client_secret.is_some();
    match client.token_endpoint_auth_method.as_deref() {
        Some(CLIENT_SECRET_BASIC) if has_secret => return CLIENT_SECRET_BASIC,
        Some(CLIENT_SECRET_POST) if has_secret => return CLIENT_SECRET_POST,
        Some(NONE) => return NONE,
        _ => {}
    }
    if !has_secret {
        return NONE;
    }
    let methods = supported(metadata);
    if methods.contains(&CLIENT_SECRET_BASIC) {
        CLIENT_SECRET_BASIC
    } else if methods.contains(&CLIENT_SECRET_POST) {
        CLIENT_SECRET_POST
    } else {
        CLIENT_SECRET_BASIC
    }
}

/// The method asked for in a registration: `none` (a public client) when the server
/// takes it, else a secret-based one it takes.
fn requested_method(metadata: &ServerMetadata) -> &'static str {
    let methods = supported(metadata);
    [NONE, CLIENT_SECRET_BASIC, CLIENT_SECRET_POST]
        .into_iter()
        .find(|m| methods.contains(m))
        .unwrap_or(CLIENT_SECRET_BASIC)
}

#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// The client to use at `metadata`'s server, in the spec's order of preference: the
/// pre-registered one, a Client ID Metadata Document when the server supports them and
/// one is configured, dynamic registration when offered (told to `emit`).
pub async fn client_for(
    http: &reqwest::Client,
    metadata: &ServerMetadata,
    identity: &ClientIdentity,
    redirect_uri: &str,
    emit: &(dyn Fn(AuthEvent) + Send + Sync),
) -> Result<RegisteredClient, AuthError> {
    if let Some(client) = &identity.pre_registered {
        return Ok(RegisteredClient {
            redirect_uri: Some(redirect_uri.to_owned()),
            ..client.clone()
        });
    }
    if let Some(url) = &identity.metadata_url
        && metadata.client_id_metadata_document_supported == Some(true)
    {
        return Ok(RegisteredClient {
            client_id: url.clone(),
            client_secret: None,
            token_endpoint_auth_method: Some(NONE.to_owned()),
            redirect_uri: Some(redirect_uri.to_owned()),
        });
    }
    let Some(endpoint) = &metadata.registration_endpoint else {
        return Err(AuthError::NoRegistration {
            issuer: metadata.issuer.clone(),
        });
    };
    let method = requested_method(metadata);
    let body = serde_json::json!({
        "client_name": identity.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native",
    });
    let refused = |reason: String| AuthError::RegistrationRefused {
        endpoint: endpoint.clone(),
        reason,
    };
    emit(AuthEvent::Registering {
        endpoint: endpoint.clone(),
    });
    let response = http
        .post(endpoint)
        .json(&body)
        .send()
        .await
        .map_err(|e| refused(e.to_string()))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| refused(e.to_string()))?;
    if !status.is_success() {
        let text: String = text.chars().take(300).collect();
        return Err(refused(format!("HTTP {}: {text}", status.as_u16())));
    }
    let registered: RegistrationResponse = serde_json::from_str(&text)
        .map_err(|e| refused(format!("unreadable registration response: {e}")))?;
    emit(AuthEvent::Registered {
        client_id: registered.client_id.clone(),
    });
    Ok(RegisteredClient {
        client_id: registered.client_id,
        token_endpoint_auth_method: registered
            .token_endpoint_auth_method
            .or_else(|| Some(method.to_owned())),
        client_secret: registered.client_secret,
        redirect_uri: Some(redirect_uri.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(methods: Option<&[&str]>) -> ServerMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": "http://as",
            "authorization_endpoint": "http://as/a",
            "token_endpoint": "http://as/t",
            "token_endpoint_auth_methods_supported": methods,
        }))
        .expect("metadata")
    }

    fn client(secret: Option<&str>, method: Option<&str>) -> RegisteredClient {
        RegisteredClient {
            client_id: "c".into(),
            client_secret: secret.map(str::to_owned),
            token_endpoint_auth_method: method.map(str::to_owned),
            redirect_uri: None,
        }
    }

    #[test]
    fn token_auth_method_follows_registration_then_metadata() {
        let m = metadata(Some(&[CLIENT_SECRET_POST]));
        assert_eq!(
            token_auth_method(&client(Some("s"), None), &m),
            CLIENT_SECRET_POST
        );
        assert_eq!(
            token_auth_method(&client(Some("s"), Some(CLIENT_SECRET_BASIC)), &m),
            CLIENT_SECRET_BASIC
        );
        assert_eq!(
            token_auth_method(&client(None, Some(CLIENT_SECRET_BASIC)), &m),
            NONE
        );
        assert_eq!(
            token_auth_method(&client(Some("s"), None), &metadata(None)),
            CLIENT_SECRET_BASIC
        );
        assert_eq!(
            requested_method(&metadata(Some(&[CLIENT_SECRET_POST, NONE]))),
            NONE
        );
        assert_eq!(requested_method(&metadata(None)), CLIENT_SECRET_BASIC);
    }
}
