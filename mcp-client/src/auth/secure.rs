//! What a login accepts from the network: authorization servers over https only (plain
//! http on a loopback host alone), the `resource_metadata` URL of a challenge only when
//! it is https or on the MCP server's own origin, and answers of at most
//! [`MAX_BODY_BYTES`] (metadata, registration, token responses).

use std::net::IpAddr;

use super::dpop::{DPOP, DPOP_NONCE, DpopKey, USE_DPOP_NONCE};
use super::error::AuthError;

/// The most of a metadata document, registration answer or token answer read: 1 MiB
/// (the server side reads authorization server documents with the same cap).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Whether `url`'s host is a loopback one: `localhost`, 127.0.0.0/8 or `::1`.
fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// Checks that `url` (an authorization server's issuer or one of its endpoints, named
/// `what` in the error) is https, or plain http on a loopback host (the MCP
/// authorization spec requires https of authorization servers; loopback http is for
/// local servers and tests).
pub fn require_https(url: &str, what: &'static str) -> Result<(), AuthError> {
    let insecure = |reason: &str| AuthError::InsecureUrl {
        what,
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let parsed = url::Url::parse(url).map_err(|e| AuthError::InvalidUrl {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    if parsed.host().is_none() {
        return Err(insecure("it has no host"));
    }
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&parsed) => Ok(()),
        "http" => Err(insecure(
            "plain http is accepted only on a loopback host (localhost, 127.0.0.0/8, ::1)",
        )),
        _ => Err(insecure("only https is accepted")),
    }
}

/// Whether the `resource_metadata` URL of a challenge from `server` may be fetched: an
/// https URL, or one on the MCP server's own origin (scheme, host and port). Anything
/// else (plain http elsewhere, another scheme) is not requested at all, so a server
/// cannot make the client send requests to internal addresses over http.
pub fn resource_metadata_url_allowed(metadata_url: &str, server: &str) -> bool {
    let Ok(parsed) = url::Url::parse(metadata_url) else {
        return false;
    };
    if parsed.host().is_none() {
        return false;
    }
    if parsed.scheme() == "https" {
        return true;
    }
    url::Url::parse(server).is_ok_and(|s| s.origin() == parsed.origin())
}

/// Reads `response`'s body, refusing one over [`MAX_BODY_BYTES`] (by its
/// `Content-Length` first, then as it arrives) with [`AuthError::ResponseTooLarge`].
pub async fn read_capped(mut response: reqwest::Response, url: &str) -> Result<Vec<u8>, AuthError> {
    let too_large = || AuthError::ResponseTooLarge {
        url: url.to_owned(),
        limit: MAX_BODY_BYTES,
    };
    if response
        .content_length()
        .is_some_and(|n| n > MAX_BODY_BYTES as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    loop {
        let chunk = response.chunk().await.map_err(|e| AuthError::Fetch {
            url: url.to_owned(),
            reason: format!("reading the body: {e}"),
        })?;
        let Some(chunk) = chunk else {
            return Ok(body);
        };
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
}

/// The HTTP client token requests go through (the `oauth2` crate's and the machine
/// grants'): the login's `reqwest::Client`, with the answer read by [`read_capped`].
/// With a DPoP key, each request carries a fresh proof, and a `400 use_dpop_nonce`
/// answer with a `DPoP-Nonce` is retried once with that nonce (RFC 9449 §8): the same
/// request, or one made again ([`send_rebuilt`](CappedHttp::send_rebuilt), for a fresh
/// client assertion). Its error carries the [`AuthError`] to report.
#[derive(Debug, Clone)]
pub struct CappedHttp {
    /// The client (no redirects followed).
    pub http: reqwest::Client,
    /// The DPoP key proofs are signed with, if the login uses DPoP.
    pub dpop: Option<std::sync::Arc<DpopKey>>,
}

impl<'c> oauth2::AsyncHttpClient<'c> for CappedHttp {
    type Error = CappedError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<oauth2::HttpResponse, CappedError>> + Send>,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        let http = self.clone();
        Box::pin(async move { http.send_rebuilt(move || Ok(request.clone())).await })
    }
}

/// Whether `response` is a token endpoint's `use_dpop_nonce` error.
fn wants_nonce(response: &oauth2::HttpResponse) -> bool {
    response.status() == oauth2::http::StatusCode::BAD_REQUEST
        && serde_json::from_slice::<serde_json::Value>(response.body())
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .as_deref()
            == Some(USE_DPOP_NONCE)
}

impl CappedHttp {
    /// Sends the request `build` makes; with a DPoP key, with a proof, and a
    /// `use_dpop_nonce` answer with a new nonce is retried once with a request `build`
    /// makes again (a client assertion's `jti` is good for one request).
    pub async fn send_rebuilt(
        &self,
        build: impl Fn() -> Result<oauth2::HttpRequest, AuthError> + Send,
    ) -> Result<oauth2::HttpResponse, CappedError> {
        send_with_dpop(self, build).await
    }
}

async fn send_with_dpop(
    http: &CappedHttp,
    build: impl Fn() -> Result<oauth2::HttpRequest, AuthError> + Send,
) -> Result<oauth2::HttpResponse, CappedError> {
    let Some(key) = &http.dpop else {
        return send_capped(http.http.clone(), build().map_err(CappedError)?).await;
    };
    let mut retried = false;
    loop {
        let mut request = build().map_err(CappedError)?;
        let url = request.uri().to_string();
        let proof = key
            .proof(request.method().as_str(), &url, None)
            .map_err(CappedError)?;
        let value = oauth2::http::HeaderValue::from_str(&proof)
            .map_err(|e| CappedError(AuthError::Key(e.to_string())))?;
        request.headers_mut().insert(DPOP, value);
        let response = send_capped(http.http.clone(), request).await?;
        let nonce = response
            .headers()
            .get(DPOP_NONCE)
            .and_then(|v| v.to_str().ok());
        let fresh = nonce.is_some_and(|n| key.remember_nonce(&url, n));
        if !retried && fresh && wants_nonce(&response) {
            retried = true;
            continue;
        }
        return Ok(response);
    }
}

async fn send_capped(
    http: reqwest::Client,
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, CappedError> {
    let url = request.uri().to_string();
    let failed = |e: &dyn std::fmt::Display| CappedError(AuthError::TokenRequest(e.to_string()));
    let request = reqwest::Request::try_from(request).map_err(|e| failed(&e))?;
    let response = http.execute(request).await.map_err(|e| failed(&e))?;
    let mut builder = oauth2::http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        builder = builder.header(name, value);
    }
    let body = read_capped(response, &url).await.map_err(CappedError)?;
    builder.body(body).map_err(|e| failed(&e))
}

/// A token request that failed before an OAuth answer was read.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct CappedError(pub AuthError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_or_loopback_http_only() {
        for ok in [
            "https://as.example.com",
            "https://10.0.0.1/t",
            "http://127.0.0.1:8080",
            "http://127.9.9.9/x",
            "http://localhost:3000/token",
            "http://LOCALHOST",
            "http://[::1]:1/",
        ] {
            assert!(require_https(ok, "issuer").is_ok(), "{ok}");
        }
        for refused in [
            "http://as.example.com",
            "http://10.0.0.1/t",
            "http://169.254.169.254/latest",
            "http://localhost.evil.example.com/",
            "http://[::2]/",
            "http://128.0.0.1/",
            "ftp://127.0.0.1/",
        ] {
            assert!(
                matches!(
                    require_https(refused, "issuer"),
                    Err(AuthError::InsecureUrl { .. })
                ),
                "{refused}"
            );
        }
        assert!(matches!(
            require_https("not a url", "issuer"),
            Err(AuthError::InvalidUrl { .. })
        ));
        let said = require_https("http://as.example.com", "token endpoint")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            said.contains("token endpoint http://as.example.com"),
            "{said}"
        );
        assert!(said.contains("https"), "{said}");
    }

    #[test]
    fn resource_metadata_https_or_same_origin() {
        let server = "http://127.0.0.1:8000/mcp";
        assert!(resource_metadata_url_allowed(
            "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp",
            server
        ));
        assert!(resource_metadata_url_allowed(
            "https://meta.example.com/prm",
            server
        ));
        assert!(!resource_metadata_url_allowed(
            "http://127.0.0.1:8001/prm",
            server
        ));
        assert!(!resource_metadata_url_allowed(
            "http://169.254.169.254/latest/meta-data",
            server
        ));
        assert!(!resource_metadata_url_allowed("file:///etc/passwd", server));
        assert!(!resource_metadata_url_allowed("not a url", server));
    }
}
