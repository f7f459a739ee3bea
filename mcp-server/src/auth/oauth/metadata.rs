//! The authorization server's metadata, found from the issuer: RFC 8414
//! (`/.well-known/oauth-authorization-server[/path]`), then OpenID discovery; what the
//! resource server reads of it (`jwks_uri`, `introspection_endpoint`), and
//! [`ServerMetadata`], which keeps it.
//!
//! **Invariants.** A document whose `issuer` is not the configured one is refused (RFC
//! 8414, 3.3). Found once, kept; a failed discovery is tried again at most once per
//! interval, one attempt at a time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Url;
use serde::Deserialize;

/// Metadata, JWKS and introspection documents larger than this are refused.
pub(super) const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// What the resource server uses of the authorization server's metadata.
#[derive(Debug)]
pub(super) struct Discovered {
    /// Where the document was found (named in errors).
    pub(super) source: Url,
    jwks_uri: Option<String>,
    introspection_endpoint: Option<String>,
}

impl Discovered {
    /// `jwks_uri`, or why there is none to use.
    pub(super) fn jwks_uri(&self) -> Result<Url, String> {
        self.endpoint("jwks_uri", self.jwks_uri.as_deref())
    }

    /// `introspection_endpoint` (RFC 7662), or why there is none to use.
    pub(super) fn introspection_endpoint(&self) -> Result<Url, String> {
        self.endpoint(
            "introspection_endpoint",
            self.introspection_endpoint.as_deref(),
        )
    }

    fn endpoint(&self, member: &str, value: Option<&str>) -> Result<Url, String> {
        let source = &self.source;
        let value = value.ok_or_else(|| format!("the metadata at {source} has no {member}"))?;
        Url::parse(value)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| format!("the metadata at {source} has a bad {member}"))
    }
}

/// The metadata of one issuer, discovered when first needed.
#[derive(Debug)]
pub(super) struct ServerMetadata {
    client: reqwest::Client,
    issuer: String,
    issuer_url: Url,
    interval: Duration,
    state: Mutex<State>,
    /// Held by the one discovery in progress.
    discovering: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct State {
    found: Option<Arc<Discovered>>,
    /// When the last discovery failed, and why.
    failed: Option<(Instant, String)>,
}

impl ServerMetadata {
    pub(super) fn new(
        client: reqwest::Client,
        issuer: String,
        issuer_url: Url,
        interval: Duration,
    ) -> ServerMetadata {
        ServerMetadata {
            client,
            issuer,
            issuer_url,
            interval,
            state: Mutex::default(),
            discovering: tokio::sync::Mutex::new(()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The HTTP client requests to the authorization server are made with.
    pub(super) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// The metadata: kept, or discovered now (unless a discovery failed within the
    /// interval: then why it did).
    pub(super) async fn get(&self) -> Result<Arc<Discovered>, String> {
        if let Some(found) = self.state().found.clone() {
            return Ok(found);
        }
        let _discovering = self.discovering.lock().await;
        {
            let state = self.state();
            if let Some(found) = state.found.clone() {
                return Ok(found);
            }
            if let Some((at, reason)) = &state.failed
                && at.elapsed() < self.interval
            {
                return Err(reason.clone());
            }
        }
        let discovered = self.discover().await;
        let mut state = self.state();
        match discovered {
            Ok(found) => {
                let found = Arc::new(found);
                state.found = Some(Arc::clone(&found));
                state.failed = None;
                Ok(found)
            }
            Err(reason) => {
                state.failed = Some((Instant::now(), reason.clone()));
                Err(reason)
            }
        }
    }

    /// The first metadata document that answers: RFC 8414 (path inserted), OpenID
    /// discovery (path inserted, then appended). Its `issuer` must be ours, or it is
    /// refused.
    async fn discover(&self) -> Result<Discovered, String> {
        let mut errors = Vec::new();
        for url in metadata_urls(&self.issuer_url) {
            match get_json::<AsMetadata>(&self.client, &url).await {
                Ok(meta) if meta.issuer != self.issuer => {
                    return Err(format!(
                        "the metadata at {url} names issuer {:?}, not {:?}",
                        meta.issuer, self.issuer
                    ));
                }
                Ok(meta) => {
                    return Ok(Discovered {
                        source: url,
                        jwks_uri: meta.jwks_uri,
                        introspection_endpoint: meta.introspection_endpoint,
                    });
                }
                Err(e) => errors.push(e),
            }
        }
        Err(format!(
            "no authorization server metadata found: {}",
            errors.join("; ")
        ))
    }
}

/// Where an issuer's metadata may be, in the order tried.
pub(super) fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let origin = issuer.origin().ascii_serialization();
    [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
    .iter()
    .filter_map(|u| Url::parse(u).ok())
    .fold(Vec::new(), |mut all, u| {
        if !all.contains(&u) {
            all.push(u);
        }
        all
    })
}

#[derive(Deserialize)]
struct AsMetadata {
    issuer: String,
    jwks_uri: Option<String>,
    introspection_endpoint: Option<String>,
}

/// Reads the JSON body of `response` (at most [`MAX_DOCUMENT_BYTES`]), after checking
/// its status; errors name `url`.
pub(super) async fn read_json<T: serde::de::DeserializeOwned>(
    url: &Url,
    mut response: reqwest::Response,
) -> Result<T, String> {
    if !response.status().is_success() {
        return Err(format!("{url}: HTTP {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| request_error(url, &e))? {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("{url}: larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url}: not the expected JSON: {e}"))
}

/// GETs `url` and reads its JSON body.
pub(super) async fn get_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: &Url,
) -> Result<T, String> {
    let response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| request_error(url, &e))?;
    read_json(url, response).await
}

/// `url` and why a request to it failed, with the error's causes (reqwest's own text
/// leaves out e.g. "Connection refused"). For the log: a caller is never shown it.
pub(super) fn request_error(url: &Url, e: &reqwest::Error) -> String {
    let mut text = format!("{url}: {e}");
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_locations() {
        let urls = |issuer: &str| -> Vec<String> {
            metadata_urls(&Url::parse(issuer).expect("url"))
                .into_iter()
                .map(String::from)
                .collect()
        };
        assert_eq!(
            urls("https://as.example.com"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server",
                "https://as.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            urls("https://as.example.com/tenant1"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://as.example.com/.well-known/openid-configuration/tenant1",
                "https://as.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn endpoints_are_checked_when_used() {
        let d = Discovered {
            source: Url::parse("https://as/.well-known/oauth-authorization-server").expect("url"),
            jwks_uri: Some("ftp://as/jwks".into()),
            introspection_endpoint: None,
        };
        assert!(d.jwks_uri().is_err_and(|e| e.contains("bad jwks_uri")));
        assert!(
            d.introspection_endpoint()
                .is_err_and(|e| e.contains("has no introspection_endpoint"))
        );
    }
}
