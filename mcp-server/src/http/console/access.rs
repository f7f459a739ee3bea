//! The console's access layer, in front of every `/console` path (the page, the API,
//! paths that do not exist): `Host`/`Origin` (the MCP endpoint's check; the console's own
//! origin, that of the `Host` it is served as, passes too), no access token
//! in the URL, the [`ConsoleAccess`] credential and the [`ConsoleRole`] it gives, then
//! on state-changing requests (every method but `GET`, `HEAD` and `OPTIONS`) the CSRF
//! header and the operator role: a viewer's `POST` is 403 here, whatever its route, so a
//! route added later is covered without a line of its own. Then the security headers
//! every console response carries, refusals included. Every refusal is recorded on the
//! audit trail (`trail.rs`), never with the credential that was tried.
//!
//! **Invariant.** Nothing of the console runs before the caller is known with its role,
//! and nothing that changes state runs for a viewer; credentials are read from the
//! `Authorization` header only, never from the URL.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::error::{ApiError, json_error};
use super::trail::{self, Attempt, Reason};
use super::{CSRF_HEADER, Console, ConsoleAccess, ConsoleRole, ConsoleUser};
use crate::auth::{Challenge, Refusal};

/// The `Content-Security-Policy` of every console response: the page's own scripts,
/// styles and fetches only; no inline code, no framing, no forms, no base URL.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The `WWW-Authenticate` challenge of Basic access (RFC 7617).
pub(crate) const BASIC_CHALLENGE: &str = "Basic realm=\"mcp-tasks console\", charset=\"UTF-8\"";

/// Who is using the console: the Basic user name, or the OAuth principal. Put into the
/// request's extensions by [`guard`], with their [`ConsoleRole`] beside it; the audit
/// trail names it.
#[derive(Debug, Clone)]
pub(super) struct Operator(pub(super) String);

/// The access layer (see the module doc). Every refusal is recorded on the audit trail
/// (`trail.rs`), without the credential.
pub(super) async fn guard(
    State(console): State<Arc<Console>>,
    mut request: Request,
    next: Next,
) -> Response {
    let attempt =
        Attempt::from_pieces(request.extensions(), request.method(), request.uri().path());
    let refuse = |response: Response, reason: Reason, detail: Option<&str>| {
        trail::refused(&attempt, response.status(), reason, detail);
        response
    };
    let headers = request.headers();
    let refused = if same_origin(headers) {
        // The console's own page: its origin is the host it was served from, whatever
        // `allowed_origins` lists for MCP clients (a proxy's public name, say).
        crate::http::gate::host_refusal(&console.http, headers)
    } else {
        crate::http::gate::origin_refusal(&console.http, headers)
    };
    if let Some(message) = refused {
        let response = json_error(StatusCode::FORBIDDEN, &message);
        return refuse(response, Reason::HostOrOrigin, Some(&message));
    }
    if crate::auth::query_has_token(request.uri().query()) {
        let response = json_error(
            StatusCode::BAD_REQUEST,
            "credentials go in the Authorization header, never in the URL",
        );
        return refuse(response, Reason::CredentialsInUrl, None);
    }
    let (operator, role) = match &console.access {
        ConsoleAccess::Basic(users) => match basic_user(request.headers(), users) {
            Ok(user) => user,
            Err(reason) => return refuse(basic_refusal(), reason, None),
        },
        ConsoleAccess::Scope { operator, viewer } => {
            let scopes = Scopes {
                operator,
                viewer: viewer.as_deref(),
            };
            match scoped(
                &console,
                scopes,
                request.method(),
                request.uri(),
                request.headers(),
            )
            .await
            {
                Ok(principal) => principal,
                Err(refusal) => {
                    let reason = refusal_reason(&refusal, request.headers());
                    return refuse(refusal_response(&refusal), reason, Some(&refusal.message));
                }
            }
        }
    };
    if changes_state(request.method()) {
        if !has_csrf_header(request.headers()) {
            let response = ApiError::Forbidden(format!(
                "state-changing console requests need the header {CSRF_HEADER}: 1"
            ))
            .into_response();
            return refuse(response, Reason::NoCsrfHeader, None);
        }
        if !role.may_change_state() {
            let response = read_only_refusal(&console, &operator, role);
            return refuse(response, Reason::ReadOnlyRole, None);
        }
    }
    request.extensions_mut().insert(Operator(operator));
    request.extensions_mut().insert(role);
    next.run(request).await
}

/// The message of a state-changing request refused for the caller's role.
fn read_only_message(operator: &str, role: ConsoleRole) -> String {
    format!(
        "{operator} is a console {role}: a {role} may read only; cancelling, re-running \
         and every other change needs the operator role"
    )
}

/// 403 for a state-changing request of a `role` that may not change state. Under OAuth
/// it is `insufficient_scope` naming the operators' scope (RFC 6750 section 3.1), so a
/// client knows which token to ask for.
fn read_only_refusal(console: &Console, operator: &str, role: ConsoleRole) -> Response {
    let message = read_only_message(operator, role);
    match (&console.access, &console.http.principal) {
        (
            ConsoleAccess::Scope {
                operator: scope, ..
            },
            Some(hook),
        ) => {
            let mut refusal = hook.insufficient_scope(std::slice::from_ref(scope), &message);
            refusal.message = message;
            refusal_response(&refusal)
        }
        _ => ApiError::Forbidden(message).into_response(),
    }
}

/// The security headers, on every console response.
pub(super) async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Whether the request's `Origin` is the host it is sent to (`http(s)://` and `Host`):
/// the console's own page. The `Host` is still checked, so a rebound name is refused.
fn same_origin(headers: &HeaderMap) -> bool {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let (Some(origin), Some(host)) = (header(header::ORIGIN), header(header::HOST)) else {
        return false;
    };
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    authority.is_some_and(|a| a.eq_ignore_ascii_case(host))
}

/// Every method but the safe ones changes state (RFC 9110 9.2.1).
fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

fn has_csrf_header(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(CSRF_HEADER).iter();
    matches!((values.next(), values.next()), (Some(v), None) if v.as_bytes() == b"1")
}

/// The user of `Authorization: Basic ...`, with their role, when its credentials are
/// those of one of `users`; otherwise [`Reason::NoCredentials`] (no `Authorization`
/// header) or [`Reason::BadCredentials`] (wrong ones, another scheme, two headers, bad
/// base64). Both parts are compared in constant time, through their SHA-256 digests,
/// with every user's (no early exit: the time does not tell which name exists).
fn basic_user(headers: &HeaderMap, users: &[ConsoleUser]) -> Result<(String, ConsoleRole), Reason> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = match (values.next(), values.next()) {
        (None, _) => return Err(Reason::NoCredentials),
        (Some(value), None) => value,
        (Some(_), Some(_)) => return Err(Reason::BadCredentials),
    };
    let bad = Reason::BadCredentials;
    let value = value.to_str().map_err(|_| bad)?.trim();
    let (scheme, encoded) = value.split_once(' ').ok_or(bad)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(bad);
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| bad)?;
    let colon = decoded.iter().position(|b| *b == b':').ok_or(bad)?;
    let (given_user, given_password) = (&decoded[..colon], &decoded[colon + 1..]);
    let mut found = None;
    for user in users {
        let same_user = same_secret(given_user, user.user.as_bytes());
        let same_password = same_secret(given_password, user.password.as_bytes());
        if same_user & same_password {
            found = Some((user.user.clone(), user.role));
        }
    }
    found.ok_or(bad)
}

/// `a == b`, in a time that depends on neither: their SHA-256 digests compared whole.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let (a, b) = (Sha256::digest(a), Sha256::digest(b));
    let diff = a
        .iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// 401 with the Basic challenge.
fn basic_refusal() -> Response {
    let mut response = json_error(
        StatusCode::UNAUTHORIZED,
        "the console needs its user name and password (HTTP Basic authentication)",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(BASIC_CHALLENGE),
    );
    response
}

/// The scopes of [`ConsoleAccess::Scope`], borrowed.
#[derive(Debug, Clone, Copy)]
struct Scopes<'a> {
    operator: &'a str,
    viewer: Option<&'a str>,
}

impl Scopes<'_> {
    /// The scope a token needs at least: the viewers', else the operators'.
    fn least(&self) -> &str {
        self.viewer.unwrap_or(self.operator)
    }

    /// The role a token holding `held` gets (`missing` says which of the scopes it
    /// lacks), if any: the operators' scope first.
    fn role(&self, lacks: impl Fn(&str) -> bool) -> Option<ConsoleRole> {
        if !lacks(self.operator) {
            Some(ConsoleRole::Operator)
        } else if self.viewer.is_some_and(|v| !lacks(v)) {
            Some(ConsoleRole::Viewer)
        } else {
            None
        }
    }
}

/// The principal of a caller the server's authenticator accepts, with the role its
/// scopes give; else 401 (no or a bad token, or no authenticator) or 403
/// `insufficient_scope` (neither scope).
async fn scoped(
    console: &Console,
    scopes: Scopes<'_>,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Result<(String, ConsoleRole), Refusal> {
    let Some(hook) = &console.http.principal else {
        let mut refusal = Refusal::unauthorized(Challenge::new());
        refusal.message = "the console requires an OAuth scope, and this server has no \
                           authenticator to check it"
            .into();
        return Err(refusal);
    };
    let identity = hook.authenticate_request(method, uri, headers).await?;
    let least = scopes.least();
    let Some(identity) = identity else {
        let challenge = Challenge::new()
            .resource_metadata(hook.protected_resource().map(|p| p.metadata_url.clone()))
            .scope(&[least.to_owned()]);
        let mut refusal = Refusal::unauthorized(challenge);
        refusal.message = "the console needs an access token".into();
        return Err(refusal);
    };
    let lacks = |scope: &str| !identity.missing(&[scope.to_owned()]).is_empty();
    match scopes.role(lacks) {
        Some(role) => Ok((identity.principal, role)),
        None => {
            let message = match scopes.viewer {
                Some(viewer) => format!(
                    "the console requires scope {viewer} (to read) or {} (to change)",
                    scopes.operator
                ),
                None => format!("the console requires scope {}", scopes.operator),
            };
            Err(hook.insufficient_scope(&[least.to_owned()], &message))
        }
    }
}

/// Why the authenticator (or the scope check) refused, for the audit trail: by the
/// refusal's status, and whether the request carried an `Authorization` header at all.
fn refusal_reason(refusal: &Refusal, headers: &HeaderMap) -> Reason {
    match refusal.status {
        StatusCode::FORBIDDEN => Reason::InsufficientScope,
        StatusCode::SERVICE_UNAVAILABLE => Reason::CredentialsUnchecked,
        StatusCode::UNAUTHORIZED if !headers.contains_key(header::AUTHORIZATION) => {
            Reason::NoCredentials
        }
        _ => Reason::BadCredentials,
    }
}

/// A refusal of the authenticator (or of the scope) as a console response: its status
/// and headers, its message as the JSON error.
fn refusal_response(refusal: &Refusal) -> Response {
    let mut response = json_error(refusal.status, &refusal.message);
    crate::http::gate::refusal_headers(refusal, response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(credentials: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Basic {encoded}")).expect("header"),
        );
        h
    }

    fn users() -> Vec<ConsoleUser> {
        vec![
            ConsoleUser {
                user: "admin".into(),
                password: "pa:ss".into(),
                role: ConsoleRole::Operator,
            },
            ConsoleUser {
                user: "support".into(),
                password: "other".into(),
                role: ConsoleRole::Viewer,
            },
        ]
    }

    #[test]
    fn basic_credentials_must_match_exactly() {
        let users = users();
        let ok = |h: &HeaderMap| basic_user(h, &users[..1]).map(|(user, _)| user);
        assert_eq!(ok(&basic("admin:pa:ss")).as_deref(), Ok("admin"));
        for bad in [
            "admin:pa",
            "admin:pa:ss ",
            "Admin:pa:ss",
            "admin",
            ":pa:ss",
            "",
        ] {
            assert_eq!(ok(&basic(bad)), Err(Reason::BadCredentials), "{bad:?}");
        }
        let mut h = HeaderMap::new();
        assert_eq!(ok(&h), Err(Reason::NoCredentials));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer admin"),
        );
        assert_eq!(ok(&h), Err(Reason::BadCredentials));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic !!!"));
        assert_eq!(ok(&h), Err(Reason::BadCredentials));
        let mut two = basic("admin:pa:ss");
        two.append(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic eA=="),
        );
        assert_eq!(ok(&two), Err(Reason::BadCredentials));
    }

    #[test]
    fn each_basic_user_has_their_role() {
        let users = users();
        let role = |credentials: &str| basic_user(&basic(credentials), &users);
        assert_eq!(
            role("admin:pa:ss"),
            Ok(("admin".to_owned(), ConsoleRole::Operator))
        );
        assert_eq!(
            role("support:other"),
            Ok(("support".to_owned(), ConsoleRole::Viewer))
        );
        // One user's name with another's password is no one.
        assert_eq!(role("support:pa:ss"), Err(Reason::BadCredentials));
        assert_eq!(role("admin:other"), Err(Reason::BadCredentials));
    }

    #[test]
    fn scopes_give_the_strongest_role_held() {
        let both = Scopes {
            operator: "console:write",
            viewer: Some("console:read"),
        };
        let holding = |held: &'static [&'static str]| move |s: &str| !held.contains(&s);
        assert_eq!(
            both.role(holding(&["console:read", "console:write"])),
            Some(ConsoleRole::Operator)
        );
        assert_eq!(
            both.role(holding(&["console:write"])),
            Some(ConsoleRole::Operator)
        );
        assert_eq!(
            both.role(holding(&["console:read"])),
            Some(ConsoleRole::Viewer)
        );
        assert_eq!(both.role(holding(&["mcp"])), None);
        assert_eq!(both.least(), "console:read");
        let operators_only = Scopes {
            operator: "console",
            viewer: None,
        };
        assert_eq!(operators_only.role(holding(&["console:read"])), None);
        assert_eq!(operators_only.least(), "console");
    }

    #[test]
    fn a_viewer_is_told_why() {
        let said = read_only_message("support", ConsoleRole::Viewer);
        assert!(
            said.contains("support is a console viewer") && said.contains("operator role"),
            "{said}"
        );
    }

    #[test]
    fn same_origin_is_the_host_served() {
        let with = |origin: &str, host: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                header::ORIGIN,
                HeaderValue::from_str(origin).expect("origin"),
            );
            h.insert(header::HOST, HeaderValue::from_str(host).expect("host"));
            same_origin(&h)
        };
        assert!(with("https://ops.example.com", "ops.example.com"));
        assert!(with("http://10.0.0.5:8000", "10.0.0.5:8000"));
        assert!(!with("http://10.0.0.5:8001", "10.0.0.5:8000"));
        assert!(!with("https://evil.example", "ops.example.com"));
        assert!(!with("null", "ops.example.com"));
        assert!(!same_origin(&HeaderMap::new()));
    }

    #[test]
    fn csrf_header_is_exactly_one() {
        let mut h = HeaderMap::new();
        assert!(!has_csrf_header(&h));
        h.insert(CSRF_HEADER, HeaderValue::from_static("0"));
        assert!(!has_csrf_header(&h));
        h.insert(CSRF_HEADER, HeaderValue::from_static("1"));
        assert!(has_csrf_header(&h));
        assert!(changes_state(&Method::POST) && changes_state(&Method::DELETE));
        assert!(!changes_state(&Method::GET));
    }
}
