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
/// waits for the browser's `GET /callback?...` carrying the `state` of that URL,
/// bounded by a timeout. Any other request to the port (another path, or a callback
/// with another `state` or none: a stray tab, another program) is answered with an
/// error page and the wait goes on, so it cannot end the login.
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

    /// Reads one HTTP request's target, when it is a `GET` of the callback path.
    async fn read_callback(stream: &mut tokio::net::TcpStream) -> Option<String> {
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
        head.lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split_whitespace().next())
            .filter(|t| {
                t.strip_prefix(CALLBACK_PATH)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('?'))
            })
            .map(str::to_owned)
    }

    /// Answers the request on `stream` with a short page and closes it.
    async fn reply(stream: &mut tokio::net::TcpStream, status: &str, body: &str) {
        let reply = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
    }

    /// Serves one connection: the redirect of the pending login (its `state` is
    /// `expected_state`, when the authorization URL had one) is returned after a page
    /// saying so; anything else gets an error page and `None`.
    async fn serve_one(
        stream: &mut tokio::net::TcpStream,
        expected_state: Option<&str>,
    ) -> Option<AuthorizationResponse> {
        let Some(target) = Self::read_callback(stream).await else {
            Self::reply(stream, "404 Not Found", "Not the authorization callback.").await;
            return None;
        };
        let response = AuthorizationResponse::from_redirect_url(&target).ok();
        let ours = response.as_ref().is_some_and(|r| {
            expected_state.is_none_or(|expected| r.state.as_deref() == Some(expected))
        });
        if !ours {
            tracing::warn!(
                "a request to the loopback callback without the pending login's state: ignored"
            );
            Self::reply(
                stream,
                "400 Bad Request",
                "This is not the answer to the pending login (its state does not match); the login is still waiting.",
            )
            .await;
            return None;
        }
        Self::reply(
            stream,
            "200 OK",
            "Authorization received; you can close this window.",
        )
        .await;
        response
    }
}

#[async_trait]
impl Authorize for LoopbackRedirect {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    async fn authorize(&self, authorization_url: &str) -> Result<AuthorizationResponse, AuthError> {
        let listener = self.listener.lock().await;
        // The state sent: only the redirect carrying it ends the wait.
        let expected_state = url::Url::parse(authorization_url).ok().and_then(|u| {
            u.query_pairs()
                .find(|(name, _)| name == "state")
                .map(|(_, value)| value.into_owned())
        });
        (self.open)(authorization_url);
        let wait = async {
            loop {
                let (mut stream, _) = listener
                    .accept()
                    .await
                    .map_err(|e| AuthError::Browser(format!("loopback listener: {e}")))?;
                let served = tokio::time::timeout(
                    Duration::from_secs(10),
                    Self::serve_one(&mut stream, expected_state.as_deref()),
                )
                .await;
                if let Ok(Some(response)) = served {
                    return Ok(response);
                }
            }
        };
        tokio::time::timeout(self.timeout, wait)
            .await
            .map_err(|_| {
                AuthError::Browser(format!(
                    "no redirect with the login's state reached {} within {:?}",
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
    async fn loopback_waits_for_the_redirect_with_its_state() {
        let loopback = LoopbackRedirect::bind(0, |_| {}).await.expect("binds");
        let uri = loopback.redirect_uri();
        let visit = async {
            let http = reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client");
            let status = |r: Result<reqwest::Response, reqwest::Error>| {
                r.map(|r| r.status().as_u16()).unwrap_or_default()
            };
            // Stray requests first: another path, a callback with another state, one
            // with none. Each gets an error page; the login goes on.
            let stray = [
                status(
                    http.get(uri.replace("/callback", "/favicon.ico"))
                        .send()
                        .await,
                ),
                status(http.get(format!("{uri}?code=x&state=forged")).send().await),
                status(http.get(format!("{uri}?error=access_denied")).send().await),
                status(http.get(format!("{uri}x?code=x&state=s1")).send().await),
            ];
            let right = status(http.get(format!("{uri}?code=c1&state=s1")).send().await);
            (stray, right)
        };
        let (got, (stray, right)) = tokio::join!(
            tokio::time::timeout(
                Duration::from_secs(10),
                loopback.authorize("http://as/authorize?state=s1&client_id=c")
            ),
            visit
        );
        let got = got.expect("in time").expect("a response");
        assert_eq!(got.code.as_deref(), Some("c1"));
        assert_eq!(got.state.as_deref(), Some("s1"));
        assert_eq!(stray, [404, 400, 400, 404]);
        assert_eq!(right, 200);
    }

    #[tokio::test]
    async fn loopback_gives_up_at_its_timeout_when_only_strays_come() {
        let loopback = LoopbackRedirect::bind(0, |_| {})
            .await
            .expect("binds")
            .with_timeout(Duration::from_secs(2));
        let uri = loopback.redirect_uri();
        let stray = async {
            let http = reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client");
            http.get(format!("{uri}?code=x&state=forged"))
                .send()
                .await
                .map(|r| r.status().as_u16())
                .unwrap_or_default()
        };
        let (got, stray) = tokio::join!(
            tokio::time::timeout(
                Duration::from_secs(10),
                loopback.authorize("http://as/authorize?state=s1")
            ),
            stray
        );
        assert_eq!(stray, 400);
        let got = got.expect("bounded");
        assert!(
            matches!(&got, Err(AuthError::Browser(m)) if m.contains("state")),
            "{got:?}"
        );
    }
}
