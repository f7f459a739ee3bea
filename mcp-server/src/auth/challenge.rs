//! [`Refusal`]: how an authenticator says no (an HTTP status, the `WWW-Authenticate`
//! challenge, a message), and [`Challenge`], the RFC 6750 `Bearer` challenge (or RFC 9449
//! `DPoP` one) with the RFC 9728 `resource_metadata` parameter.

use std::time::Duration;

use axum::http::StatusCode;

/// A request refused before anything runs: the HTTP status, the `WWW-Authenticate`
/// challenge to send with it (if any), and the message of the JSON-RPC error in the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status of the answer.
    pub status: StatusCode,
    /// The `WWW-Authenticate` header value, if any.
    pub www_authenticate: Option<String>,
    /// `Retry-After` (whole seconds), for 503.
    pub retry_after: Option<Duration>,
    /// The message of the JSON-RPC error in the body.
    pub message: String,
    /// A `DPoP-Nonce` header to send (RFC 9449 §9): the nonce the next proof must carry.
    pub dpop_nonce: Option<String>,
}

impl Refusal {
    /// 401 with `challenge`.
    pub fn unauthorized(challenge: Challenge) -> Refusal {
        Refusal::with_challenge(StatusCode::UNAUTHORIZED, challenge)
    }

    /// 403 with `challenge` (`insufficient_scope`).
    pub fn forbidden(challenge: Challenge) -> Refusal {
        Refusal::with_challenge(StatusCode::FORBIDDEN, challenge)
    }

    /// 400 with `challenge` (`invalid_request`).
    pub fn bad_request(challenge: Challenge) -> Refusal {
        Refusal::with_challenge(StatusCode::BAD_REQUEST, challenge)
    }

    /// 503: the credentials could not be checked now (e.g. the authorization server's
    /// keys are out of reach); the client should retry after `retry_after`, with the
    /// same credentials.
    pub fn unavailable(message: impl Into<String>, retry_after: Duration) -> Refusal {
        Refusal {
            status: StatusCode::SERVICE_UNAVAILABLE,
            www_authenticate: None,
            retry_after: Some(retry_after),
            message: message.into(),
            dpop_nonce: None,
        }
    }

    /// With a `DPoP-Nonce` header.
    pub fn with_dpop_nonce(mut self, nonce: String) -> Refusal {
        self.dpop_nonce = Some(nonce);
        self
    }

    fn with_challenge(status: StatusCode, challenge: Challenge) -> Refusal {
        let reason = status.canonical_reason().unwrap_or("Refused");
        let message = match &challenge.error_description {
            Some(d) => format!("{reason}: {d}"),
            None => reason.to_owned(),
        };
        Refusal {
            status,
            www_authenticate: Some(challenge.header()),
            retry_after: None,
            message,
            dpop_nonce: None,
        }
    }
}

/// A bare status, with no challenge (what closures written for the synchronous hook of
/// earlier versions return).
impl From<StatusCode> for Refusal {
    fn from(status: StatusCode) -> Refusal {
        Refusal {
            status,
            www_authenticate: None,
            retry_after: None,
            message: status.canonical_reason().unwrap_or("Refused").to_owned(),
            dpop_nonce: None,
        }
    }
}

/// An RFC 6750 `Bearer` challenge: `resource_metadata` (RFC 9728), `scope`, `error`,
/// `error_description`. Values are quoted; characters RFC 6750 does not allow in them
/// (`"`, `\`, controls, non-ASCII) are replaced by spaces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// The URL of the protected resource metadata document (RFC 9728).
    pub resource_metadata: Option<String>,
    /// The scopes the request needs, space-separated in the header.
    pub scope: Vec<String>,
    /// The RFC 6750 error code (`invalid_token`, `insufficient_scope`,
    /// `invalid_request`).
    pub error: Option<&'static str>,
    /// A human-readable reason.
    pub error_description: Option<String>,
    /// `Some`: a `DPoP` challenge (RFC 9449 §7.1) with these `algs`, instead of `Bearer`.
    pub dpop_algs: Option<Vec<String>>,
}

impl Challenge {
    /// A challenge with no parameters: `Bearer`.
    pub fn new() -> Challenge {
        Challenge::default()
    }

    /// Names the protected resource metadata document.
    pub fn resource_metadata(mut self, url: Option<String>) -> Self {
        self.resource_metadata = url;
        self
    }

    /// The scopes the resource needs.
    pub fn scope(mut self, scopes: &[String]) -> Self {
        self.scope = scopes.to_vec();
        self
    }

    /// `error="invalid_token"` (expired, revoked, malformed, or not for this resource).
    pub fn invalid_token(mut self, description: impl Into<String>) -> Self {
        self.error = Some("invalid_token");
        self.error_description = Some(description.into());
        self
    }

    /// A `DPoP` challenge naming the proof algorithms accepted (`algs`).
    pub fn dpop(mut self, algs: Vec<String>) -> Self {
        self.dpop_algs = Some(algs);
        self
    }

    /// An RFC 9449 error: `use_dpop_nonce` or `invalid_dpop_proof`.
    pub fn dpop_error(mut self, error: &'static str, description: impl Into<String>) -> Self {
        self.error = Some(error);
        self.error_description = Some(description.into());
        self
    }

    /// `error="invalid_request"` (e.g. a token in the query string).
    pub fn invalid_request(mut self, description: impl Into<String>) -> Self {
        self.error = Some("invalid_request");
        self.error_description = Some(description.into());
        self
    }

    /// `error="insufficient_scope"` naming every scope of `needed`.
    pub fn insufficient_scope(mut self, needed: &[String], description: &str) -> Self {
        self.error = Some("insufficient_scope");
        self.scope = needed.to_vec();
        self.error_description = Some(description.to_owned());
        self
    }

    /// The `WWW-Authenticate` value.
    pub fn header(&self) -> String {
        let mut params = Vec::new();
        if let Some(algs) = &self.dpop_algs {
            params.push(format!("algs=\"{}\"", quoted(&algs.join(" "))));
        }
        if let Some(error) = self.error {
            params.push(format!("error=\"{error}\""));
        }
        if !self.scope.is_empty() {
            params.push(format!("scope=\"{}\"", quoted(&self.scope.join(" "))));
        }
        if let Some(url) = &self.resource_metadata {
            params.push(format!("resource_metadata=\"{}\"", quoted(url)));
        }
        if let Some(d) = &self.error_description {
            params.push(format!("error_description=\"{}\"", quoted(d)));
        }
        let scheme = if self.dpop_algs.is_some() {
            "DPoP"
        } else {
            "Bearer"
        };
        if params.is_empty() {
            scheme.to_owned()
        } else {
            format!("{scheme} {}", params.join(", "))
        }
    }
}

/// `value` with what may not appear in a quoted challenge value replaced by spaces.
fn quoted(value: &str) -> String {
    value
        .chars()
        .map(|c| match c {
            '"' | '\\' => ' ',
            c if c.is_ascii() && !c.is_ascii_control() => c,
            _ => ' ',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_written_as_rfc_6750_says() {
        assert_eq!(Challenge::new().header(), "Bearer");
        let url = Some("http://h/.well-known/oauth-protected-resource/mcp".to_owned());
        assert_eq!(
            Challenge::new()
                .resource_metadata(url.clone())
                .scope(&["a".into(), "b".into()])
                .header(),
            "Bearer scope=\"a b\", resource_metadata=\"http://h/.well-known/oauth-protected-resource/mcp\""
        );
        assert_eq!(
            Challenge::new()
                .resource_metadata(url)
                .invalid_token("bad \"quote\" \\ é")
                .header(),
            "Bearer error=\"invalid_token\", resource_metadata=\"http://h/.well-known/oauth-protected-resource/mcp\", error_description=\"bad  quote     \""
        );
        let refusal = Refusal::forbidden(Challenge::new().insufficient_scope(&["w".into()], "x"));
        assert_eq!(refusal.status, StatusCode::FORBIDDEN);
        assert_eq!(
            refusal.www_authenticate.as_deref(),
            Some("Bearer error=\"insufficient_scope\", scope=\"w\", error_description=\"x\"")
        );
        assert_eq!(refusal.message, "Forbidden: x");
        let dpop = Refusal::unauthorized(
            Challenge::new()
                .dpop(vec!["ES256".into()])
                .dpop_error("use_dpop_nonce", "a nonce"),
        )
        .with_dpop_nonce("n".into());
        assert_eq!(
            dpop.www_authenticate.as_deref(),
            Some("DPoP algs=\"ES256\", error=\"use_dpop_nonce\", error_description=\"a nonce\"")
        );
        assert_eq!(dpop.dpop_nonce.as_deref(), Some("n"));
    }
}
