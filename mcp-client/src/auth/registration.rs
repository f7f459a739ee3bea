//! Who the client is at an authorization server: a pre-registered client (used only at
//! the authorization server it was registered with), a Client ID Metadata Document (its
//! HTTPS URL as client id), or a client registered dynamically (RFC 7591); and how it
//! authenticates at the token endpoint.

use serde::Deserialize;

use super::discovery::ServerMetadata;
use super::error::AuthError;
use super::event::AuthEvent;
use super::secure::{read_capped, require_https};
use super::store::RegisteredClient;

/// `client_secret_basic`: HTTP Basic with the client id and secret.
pub const CLIENT_SECRET_BASIC: &str = "client_secret_basic";
/// `client_secret_post`: the client id and secret in the form body.
pub const CLIENT_SECRET_POST: &str = "client_secret_post";
/// `none`: a public client, its id in the form body.
pub const NONE: &str = "none";

/// A client registered beforehand with one authorization server, bound to it: its id
/// and secret are used only where the discovered metadata's `issuer` is exactly
/// `issuer` (the MCP authorization spec's authorization server binding). An MCP server
/// naming another authorization server (a malicious one, or one whose authorization
/// server moved) never receives them: the login falls back to the Client ID Metadata
/// Document or dynamic registration there, or fails with
/// [`AuthError::PreRegisteredForOtherIssuer`].
#[derive(Debug, Clone)]
pub struct PreRegisteredClient {
    /// The issuer identifier of the authorization server the client was registered
    /// with, exactly as its metadata writes `issuer` (compared as a string: a trailing
    /// slash counts).
    pub issuer: String,
    /// The client: id, secret (if confidential), token endpoint method (if fixed).
    pub client: RegisteredClient,
}

/// How the client presents itself, as configured.
#[derive(Debug, Clone)]
pub struct ClientIdentity {
    /// `client_name` in a registration request.
    pub client_name: String,
    /// The HTTPS URL of this client's Client ID Metadata Document, used as its client id
    /// where the authorization server accepts one.
    pub metadata_url: Option<String>,
    /// Clients registered beforehand, each with the authorization server it belongs to
    /// (at most one per issuer; see [`PreRegisteredClient`]).
    pub pre_registered: Vec<PreRegisteredClient>,
}

impl ClientIdentity {
    /// The client pre-registered with `issuer` (compared as a string), if any.
    pub fn pre_registered_for(&self, issuer: &str) -> Option<&RegisteredClient> {
        self.pre_registered
            .iter()
            .find(|p| p.issuer == issuer)
            .map(|p| &p.client)
    }
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
/// one pre-registered with this very issuer, a Client ID Metadata Document when the
/// server supports them and one is configured, dynamic registration when offered (told
/// to `emit`). Clients pre-registered with other issuers are never used here.
pub async fn client_for(
    http: &reqwest::Client,
    metadata: &ServerMetadata,
    identity: &ClientIdentity,
    redirect_uri: &str,
    emit: &(dyn Fn(AuthEvent) + Send + Sync),
) -> Result<RegisteredClient, AuthError> {
    if let Some(client) = identity.pre_registered_for(&metadata.issuer) {
        return Ok(RegisteredClient {
            redirect_uri: Some(redirect_uri.to_owned()),
            ..client.clone()
        });
    }
    let registered_with = (!identity.pre_registered.is_empty()).then(|| {
        identity
            .pre_registered
            .iter()
            .map(|p| p.issuer.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    });
    if let Some(registered_with) = &registered_with {
        tracing::warn!(issuer = %metadata.issuer, %registered_with, "the pre-registered client is for another authorization server: not used");
        emit(AuthEvent::PreRegisteredNotUsed {
            issuer: metadata.issuer.clone(),
            registered_with: registered_with.clone(),
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
        return Err(match registered_with {
            Some(registered_with) => AuthError::PreRegisteredForOtherIssuer {
                issuer: metadata.issuer.clone(),
                registered_with,
            },
            None => AuthError::NoRegistration {
                issuer: metadata.issuer.clone(),
            },
        });
    };
    require_https(endpoint, "registration endpoint")?;
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
    let body = read_capped(response, endpoint).await?;
    if !status.is_success() {
        let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
        return Err(refused(format!("HTTP {}: {text}", status.as_u16())));
    }
    let registered: RegistrationResponse = serde_json::from_slice(&body)
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

    #[tokio::test]
    async fn a_pre_registered_client_is_used_only_at_its_issuer() {
        let identity = ClientIdentity {
            client_name: "t".into(),
            metadata_url: None,
            pre_registered: vec![PreRegisteredClient {
                issuer: "https://as.example.com".into(),
                client: client(Some("s"), None),
            }],
        };
        let http = reqwest::Client::new();
        let events = std::sync::Mutex::new(Vec::new());
        let emit = |e: AuthEvent| events.lock().expect("events").push(e);
        let mut m = metadata(None);
        m.issuer = "https://as.example.com".into();
        let used = client_for(&http, &m, &identity, "http://127.0.0.1:1/cb", &emit)
            .await
            .expect("the pre-registered client");
        assert_eq!(used.client_secret.as_deref(), Some("s"));
        // Another issuer, no registration endpoint, no metadata document: a clear
        // failure, nothing sent.
        m.issuer = "https://other.example.com".into();
        let e = client_for(&http, &m, &identity, "http://127.0.0.1:1/cb", &emit).await;
        assert!(
            matches!(&e, Err(AuthError::PreRegisteredForOtherIssuer { issuer, registered_with })
                if issuer == "https://other.example.com" && registered_with == "https://as.example.com"),
            "{e:?}"
        );
        // A trailing slash is another issuer.
        m.issuer = "https://as.example.com/".into();
        assert!(
            client_for(&http, &m, &identity, "http://127.0.0.1:1/cb", &emit)
                .await
                .is_err()
        );
        assert_eq!(events.lock().expect("events").len(), 2, "each skip is told");
        // With a Client ID Metadata Document the server accepts, that is used instead.
        let identity = ClientIdentity {
            metadata_url: Some("https://app.example.com/client.json".into()),
            ..identity
        };
        m.client_id_metadata_document_supported = Some(true);
        let used = client_for(&http, &m, &identity, "http://127.0.0.1:1/cb", &emit)
            .await
            .expect("the metadata document");
        assert_eq!(used.client_id, "https://app.example.com/client.json");
        assert_eq!(used.client_secret, None);
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
