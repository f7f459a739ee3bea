//! Discovery: the server's Protected Resource Metadata (RFC 9728) and its authorization
//! server's metadata (RFC 8414, then OpenID Connect discovery), in the order the MCP
//! authorization spec gives, with the resource and issuer checks. What is fetched at
//! all, and how much of it is read, is [`secure`](super::secure)'s rule: a challenge's
//! `resource_metadata` URL only when https or on the server's origin, authorization
//! servers (issuer and endpoints) over https or loopback http, at most 1 MiB a document.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::error::AuthError;
use super::secure::{read_capped, require_https, resource_metadata_url_allowed};

/// RFC 9728 Protected Resource Metadata (the members the client uses).
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceMetadata {
    /// The protected resource's identifier: the MCP server's URL (or a prefix of it).
    pub resource: String,
    /// The issuers of the authorization servers the resource trusts.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes the resource knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 authorization server metadata (the members the client uses).
#[derive(Debug, Clone, Deserialize)]
pub struct ServerMetadata {
    /// The issuer identifier; must equal the one the metadata was fetched for.
    pub issuer: String,
    /// Where the user authorizes (empty when the server has none: one serving only
    /// machine grants).
    #[serde(default)]
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens become access tokens.
    pub token_endpoint: String,
    /// RFC 7591 dynamic client registration, if offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows (`offline_access` among them when it issues refresh
    /// tokens that way).
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; MCP requires `S256`.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint (RFC 8414 default:
    /// `client_secret_basic`).
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// The server accepts an HTTPS URL naming a Client ID Metadata Document as client id.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
}

impl ServerMetadata {
    /// Whether the server lists `scope` in `scopes_supported`.
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }

    /// Checks that the endpoints the client uses are https (or loopback http).
    pub(crate) fn require_https(&self) -> Result<(), AuthError> {
        if !self.authorization_endpoint.is_empty() {
            require_https(&self.authorization_endpoint, "authorization endpoint")?;
        }
        require_https(&self.token_endpoint, "token endpoint")?;
        if let Some(endpoint) = &self.registration_endpoint {
            require_https(endpoint, "registration endpoint")?;
        }
        Ok(())
    }
}

/// `scheme://host[:port]` and the path (without a trailing `/`) of `url`.
fn origin_and_path(url: &str) -> Result<(String, String), AuthError> {
    let parsed = url::Url::parse(url).map_err(|e| AuthError::InvalidUrl {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    if parsed.cannot_be_a_base() || parsed.host_str().is_none() {
        return Err(AuthError::InvalidUrl {
            url: url.to_owned(),
            reason: "not an http(s) URL with a host".into(),
        });
    }
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/').to_owned();
    Ok((origin, path))
}

/// The well-known Protected Resource Metadata URLs of `server`, path-suffixed first,
/// then the root (RFC 9728 §3.1, as the MCP spec orders them).
pub fn resource_metadata_urls(server: &str) -> Result<Vec<String>, AuthError> {
    let (origin, path) = origin_and_path(server)?;
    let root = format!("{origin}/.well-known/oauth-protected-resource");
    Ok(if path.is_empty() {
        vec![root]
    } else {
        vec![format!("{root}{path}"), root]
    })
}

/// The metadata URLs of `issuer`, in the MCP spec's order: with a path, RFC 8414
/// path-inserted, OpenID path-inserted, OpenID path-appended; without, RFC 8414 then
/// OpenID at the root. Never the root when the issuer has a path.
pub fn server_metadata_urls(issuer: &str) -> Result<Vec<String>, AuthError> {
    let (origin, path) = origin_and_path(issuer)?;
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// Whether a Protected Resource Metadata `resource` may stand for `server`: the same
/// origin, and its path the server's path or a parent of it at a segment boundary.
pub fn resource_matches(resource: &str, server: &str) -> bool {
    let (Ok((r_origin, r_path)), Ok((s_origin, s_path))) =
        (origin_and_path(resource), origin_and_path(server))
    else {
        return false;
    };
    r_origin == s_origin
        && (r_path.is_empty()
            || s_path == r_path
            || s_path
                .strip_prefix(&r_path)
                .is_some_and(|rest| rest.starts_with('/')))
}

/// What a GET of a metadata document gave.
enum Fetched<T> {
    Found(T),
    /// Not there (an HTTP error status): try the next URL.
    Absent(String),
}

async fn fetch_json<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
) -> Result<Fetched<T>, AuthError> {
    let fail = |reason: String| AuthError::Fetch {
        url: url.to_owned(),
        reason,
    };
    let response = match http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
    {
        Ok(r) => r,
        // Unreachable: as good as absent, the next URL may answer.
        Err(e) => return Ok(Fetched::Absent(format!("{url}: {e}"))),
    };
    let status = response.status();
    if !status.is_success() {
        return Ok(Fetched::Absent(format!("{url}: HTTP {}", status.as_u16())));
    }
    let body = read_capped(response, url).await?;
    serde_json::from_slice(&body)
        .map(Fetched::Found)
        .map_err(|e| fail(format!("not a metadata document: {e}")))
}

/// Fetches the Protected Resource Metadata of `server`: from the challenge's
/// `resource_metadata` URL first when there is one and it is https or on the server's
/// origin (any other is not requested, and named among the URLs tried), then the
/// well-known URLs; checks that it is for `server`.
pub async fn resource_metadata(
    http: &reqwest::Client,
    server: &str,
    from_challenge: Option<&str>,
) -> Result<ResourceMetadata, AuthError> {
    let mut urls: Vec<String> = Vec::new();
    let mut tried = Vec::new();
    if let Some(url) = from_challenge {
        if resource_metadata_url_allowed(url, server) {
            urls.push(url.to_owned());
        } else {
            tracing::warn!(%url, %server, "ignoring a resource_metadata URL that is neither https nor on the server's origin");
            tried.push(format!(
                "{url}: not requested (the challenge's URL must be https or on the server's origin)"
            ));
        }
    }
    urls.extend(resource_metadata_urls(server)?);
    for url in urls {
        match fetch_json::<ResourceMetadata>(http, &url).await? {
            Fetched::Found(prm) => {
                if !resource_matches(&prm.resource, server) {
                    return Err(AuthError::ResourceMismatch {
                        expected: server.to_owned(),
                        found: prm.resource,
                    });
                }
                tracing::debug!(%url, resource = %prm.resource, "protected resource metadata");
                return Ok(prm);
            }
            Fetched::Absent(why) => tried.push(why),
        }
    }
    Err(AuthError::NoResourceMetadata {
        server: server.to_owned(),
        tried: tried.join("; "),
    })
}

/// Fetches the metadata of the authorization server `issuer`, trying each discovery
/// URL in order; a document whose `issuer` is not exactly `issuer` is refused. The
/// issuer and the endpoints the document names must be https (plain http on a loopback
/// host only): [`AuthError::InsecureUrl`] otherwise, the issuer before any request.
pub async fn server_metadata(
    http: &reqwest::Client,
    issuer: &str,
) -> Result<ServerMetadata, AuthError> {
    require_https(issuer, "authorization server issuer")?;
    let mut tried = Vec::new();
    for url in server_metadata_urls(issuer)? {
        match fetch_json::<ServerMetadata>(http, &url).await? {
            Fetched::Found(metadata) => {
                if metadata.issuer != issuer {
                    return Err(AuthError::IssuerMismatch {
                        expected: issuer.to_owned(),
                        found: metadata.issuer,
                    });
                }
                metadata.require_https()?;
                tracing::debug!(%url, "authorization server metadata");
                return Ok(metadata);
            }
            Fetched::Absent(why) => tried.push(why),
        }
    }
    Err(AuthError::NoServerMetadata {
        issuer: issuer.to_owned(),
        tried: tried.join("; "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_urls_in_the_spec_order() {
        assert_eq!(
            resource_metadata_urls("http://h:1/mcp").unwrap_or_default(),
            [
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            resource_metadata_urls("https://h/").unwrap_or_default(),
            ["https://h/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            server_metadata_urls("http://a:2/tenant1").unwrap_or_default(),
            [
                "http://a:2/.well-known/oauth-authorization-server/tenant1",
                "http://a:2/.well-known/openid-configuration/tenant1",
                "http://a:2/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            server_metadata_urls("http://a:2").unwrap_or_default(),
            [
                "http://a:2/.well-known/oauth-authorization-server",
                "http://a:2/.well-known/openid-configuration"
            ]
        );
        assert!(server_metadata_urls("not a url").is_err());
    }

    #[test]
    fn resource_must_be_the_server_or_a_parent() {
        assert!(resource_matches("http://h:1/mcp", "http://h:1/mcp"));
        assert!(resource_matches("http://h:1", "http://h:1/mcp"));
        assert!(resource_matches("http://h:1/", "http://h:1/mcp"));
        assert!(!resource_matches(
            "https://evil.example.com/mcp",
            "http://h:1/mcp"
        ));
        assert!(!resource_matches("http://h:1/mc", "http://h:1/mcp"));
        assert!(!resource_matches("http://h:2/mcp", "http://h:1/mcp"));
        assert!(!resource_matches("http://h:1/mcp/deeper", "http://h:1/mcp"));
    }
}
