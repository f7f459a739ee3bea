//! What the MCP endpoint and the operator console both check and answer with: the
//! `Host`/`Origin` refusals (DNS rebinding, foreign pages), a refusal's headers, and
//! event streams with keep-alives and a lifetime.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;

use super::config::HttpConfig;
use crate::auth::Refusal;

/// The headers of a refusal: `WWW-Authenticate`, `Retry-After`, `DPoP-Nonce`.
pub(crate) fn refusal_headers(refusal: &Refusal, headers: &mut HeaderMap) {
    if let Some(challenge) = &refusal.www_authenticate
        && let Ok(value) = HeaderValue::from_str(challenge)
    {
        headers.insert(header::WWW_AUTHENTICATE, value);
    }
    if let Some(after) = refusal.retry_after {
        headers.insert(
            header::RETRY_AFTER,
            HeaderValue::from(after.as_secs().max(1)),
        );
    }
    if let Some(nonce) = &refusal.dpop_nonce
        && let Ok(value) = HeaderValue::from_str(nonce)
    {
        headers.insert("dpop-nonce", value);
    }
}

/// An event stream with keep-alives, ended after `lifetime` (`None`: never).
pub(crate) fn sse_for(
    lifetime: Option<Duration>,
    stream: impl Stream<Item = Result<Event, Infallible>> + Send + 'static,
) -> Response {
    use futures::StreamExt;
    let end: futures::future::BoxFuture<'static, ()> = match lifetime {
        Some(lifetime) => Box::pin(tokio::time::sleep(lifetime)),
        None => Box::pin(futures::future::pending()),
    };
    Sse::new(stream.take_until(end))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Why `config` refuses a request's `Host` (DNS rebinding), if it does.
pub(crate) fn host_refusal(config: &HttpConfig, headers: &HeaderMap) -> Option<String> {
    let host = header_str(headers, header::HOST);
    if config.allowed_hosts.allows(host) {
        None
    } else {
        Some(format!("Host not allowed: {}", host.unwrap_or("(none)")))
    }
}

/// Why `config` refuses a request with these headers (DNS rebinding, a foreign page):
/// `Host` not in [`HttpConfig::allowed_hosts`], or `Origin` not in
/// [`HttpConfig::allowed_origins`]. The one check of both, for the MCP endpoint and the
/// console alike (each answers 403 in its own body).
pub(crate) fn origin_refusal(config: &HttpConfig, headers: &HeaderMap) -> Option<String> {
    if let Some(refused) = host_refusal(config, headers) {
        return Some(refused);
    }
    let origin = header_str(headers, header::ORIGIN)?;
    if config.allowed_origins.allows(origin) {
        return None;
    }
    Some(format!("Origin not allowed: {origin}"))
}

/// A header's value, when it is there and readable as text. `name` is a `HeaderName`
/// (e.g. `header::ACCEPT`, looked up as it is) or text (parsed into one first).
pub(crate) fn header_str(
    headers: &HeaderMap,
    name: impl axum::http::header::AsHeaderName,
) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}
