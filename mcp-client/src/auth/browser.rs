//! The browser step: the user (or a headless stand-in) visits the authorization URL and
//! the authorization server redirects back with a code. [`Authorize`] is the pluggable
//! step; [`LoopbackRedirect`] receives the redirect on a loopback port (for CLIs), and
//! [`FollowRedirect`] follows it with a plain HTTP GET (for servers that approve
//! without a user, as the conformance suite's does, and for tests).

use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::error::AuthError;

/// What the authorization server's redirect carried (RFC 6749 §4.1.2, RFC 9207).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AuthorizationResponse {
    /// The authorization code.
    pub code: Option<String>,
    /// The `state` we sent, echoed.
    pub state: Option<String>,
    /// RFC 9207: the issuer that answered.
    pub iss: Option<String>,
    /// An OAuth error instead of a code (`access_denied`...).
    pub error: Option<String>,
    /// Its description.
    pub error_description: Option<String>,
}

impl std::fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationResponse")
            .field("code", &self.code.as_ref().map(|_| "…"))
            .field("iss", &self.iss)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl AuthorizationResponse {
    /// Reads the query of a redirect URL (absolute, or a path with its query).
    pub fn from_redirect_url(redirect: &str) -> Result<AuthorizationResponse, AuthError> {
        let base =
            url::Url::parse("http://127.0.0.1/").map_err(|e| AuthError::Browser(e.to_string()))?;
        let url = base.join(redirect).map_err(|e| AuthError::InvalidUrl {
            url: redirect.to_owned(),
            reason: e.to_string(),
        })?;
        let mut out = AuthorizationResponse::default();
        for (name, value) in url.query_pairs() {
            let slot = match name.as_ref() {
                "code" => &mut out.code,
                "state" => &mut out.state,
                "iss" => &mut out.iss,
                "error" => &mut out.error,
                "error_description" => &mut out.error_description,
                _ => continue,
            };
            slot.get_or_insert_with(|| value.into_owned());
        }
        Ok(out)
    }
}

/// The browser step of the authorization code flow.
#[async_trait]
pub trait Authorize: Send + Sync + std::fmt::Debug {
    /// The redirect URI the authorization server sends the user back to (registered
    /// with the client).
    fn redirect_uri(&self) -> String;

    /// Has the user visit `authorization_url` and returns what the redirect carried.
    async fn authorize(&self, authorization_url: &str) -> Result<AuthorizationResponse, AuthError>;
}

/// Follows the authorization URL with an HTTP GET and reads the redirect's `Location`
/// without following it: for authorization servers that approve without a user (test
/// servers, the conformance suite's).
#[derive(Debug, Clone)]
pub struct FollowRedirect {
    http: reqwest::Client,
    redirect_uri: String,
}

impl FollowRedirect {
    /// Announces `redirect_uri` (nothing listens there: the redirect is read, not
    /// followed).
    pub fn new(redirect_uri: impl Into<String>) -> Result<FollowRedirect, AuthError> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| AuthError::Browser(e.to_string()))?;
        Ok(FollowRedirect {
            http,
            redirect_uri: redirect_uri.into(),
        })
    }
}

#[async_trait]
impl Authorize for FollowRedirect {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    async fn authorize(&self, authorization_url: &str) -> Result<AuthorizationResponse, AuthError> {
        let response = self
            .http
            .get(authorization_url)
            .send()
            .await
            .map_err(|e| AuthError::Browser(format!("GET {authorization_url}: {e}")))?;
        let status = response.status();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .filter(|_| status.is_redirection())
            .ok_or_else(|| {
                AuthError::Browser(format!(
                    "the authorization endpoint answered HTTP {} without a redirect",
                    status.as_u16()
                ))
            })?;
        if !location.starts_with(&self.redirect_uri) {
            return Err(AuthError::Browser(format!(
                "the authorization endpoint redirected to {location}, not to {}",
                self.redirect_uri
            )));
        }
        AuthorizationResponse::from_redirect_url(location)
    }
}

/// Receives the redirect on a loopback port (RFC 8252 §7.3): binds `127.0.0.1:PORT`,
/// hands the authorization URL to `open` (which prints it, starts a browser...), and
/// waits for the browser's `GET /callback?...`, bounded by a timeout.
pub struct LoopbackRedirect {
    listener: tokio::sync::Mutex<TcpListener>,
    port: u16,
    open: Box<dyn Fn(&str) + Send + Sync>,
    timeout: Duration,
}

impl std::fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("port", &self.port)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The path the redirect comes to.
const CALLBACK_PATH: &str = "/callback";
/// The most of a redirect request read.
const MAX_REQUEST: usize = 16 * 1024;

impl LoopbackRedirect {
    /// Binds `127.0.0.1:port` (0: a free port); `open` is called with each
    /// authorization URL. Waits up to 5 minutes for the browser by default.
    pub async fn bind(
        port: u16,
        open: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<LoopbackRedirect, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| AuthError::Browser(format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::Browser(e.to_string()))?
            .port();
        Ok(LoopbackRedirect {
            listener: tokio::sync::Mutex::new(listener),
            port,
            open: Box::new(open),
            timeout: Duration::from_secs(300),
        })
    }

    /// How long to wait for the browser.
    pub fn with_timeout(mut self, timeout: Duration) -> LoopbackRedirect {
        self.timeout = timeout;
        self
    }

    /// Reads one HTTP request's target; answers it with a short page.
    async fn serve_one(stream: &mut tokio::net::TcpStream) -> Option<String> {
        let mut buffer = Vec::new();
        let mut chunk = [0u8; 2048];
        while !buffer.windows(4).any(|w| w == b"\r\n\r\n") && buffer.len() < MAX_REQUEST {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                break;
            }
            buffer.extend_from_slice(&chunk[..n]);
        }
        let head = String::from_utf8_lossy(&buffer);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split_whitespace().next())
            .filter(|t| t.starts_with(CALLBACK_PATH))
            .map(str::to_owned);
        let (status, body) = if target.is_some() {
            (
                "200 OK",
                "Authorization received; you can close this window.",
            )
        } else {
            ("404 Not Found", "Not the authorization callback.")
        };
        let reply = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        target
    }
}

#[async_trait]
impl Authorize for LoopbackRedirect {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    async fn authorize(&self, authorization_url: &str) -> Result<AuthorizationResponse, AuthError> {
        let listener = self.listener.lock().await;
        (self.open)(authorization_url);
        let wait = async {
            loop {
                let (mut stream, _) = listener
                    .accept()
                    .await
                    .map_err(|e| AuthError::Browser(format!("loopback listener: {e}")))?;
                let served =
                    tokio::time::timeout(Duration::from_secs(10), Self::serve_one(&mut stream))
                        .await;
                if let Ok(Some(target)) = served {
                    return AuthorizationResponse::from_redirect_url(&target);
                }
            }
        };
        tokio::time::timeout(self.timeout, wait)
            .await
            .map_err(|_| {
                AuthError::Browser(format!(
                    "no redirect reached {} within {:?}",
                    self.redirect_uri(),
                    self.timeout
                ))
            })?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_redirect() {
        let r = AuthorizationResponse::from_redirect_url(
            "http://localhost:3000/callback?code=abc&state=s%201&iss=http%3A%2F%2Fas",
        )
        .expect("parses");
        assert_eq!(r.code.as_deref(), Some("abc"));
        assert_eq!(r.state.as_deref(), Some("s 1"));
        assert_eq!(r.iss.as_deref(), Some("http://as"));
        let r = AuthorizationResponse::from_redirect_url("/callback?error=access_denied")
            .expect("parses");
        assert_eq!(r.error.as_deref(), Some("access_denied"));
        assert_eq!(r.code, None);
    }

    #[tokio::test]
    async fn loopback_receives_the_redirect() {
        let loopback = LoopbackRedirect::bind(0, |_| {}).await.expect("binds");
        let uri = loopback.redirect_uri();
        let visit = async {
            let http = reqwest::Client::new();
            // A stray request first, then the callback.
            let _ = http
                .get(uri.replace("/callback", "/favicon.ico"))
                .send()
                .await;
            http.get(format!("{uri}?code=c1&state=s1")).send().await
        };
        let (got, _) = tokio::join!(
            tokio::time::timeout(
                Duration::from_secs(10),
                loopback.authorize("http://as/authorize")
            ),
            visit
        );
        let got = got.expect("in time").expect("a response");
        assert_eq!(got.code.as_deref(), Some("c1"));
        assert_eq!(got.state.as_deref(), Some("s1"));
    }
}
