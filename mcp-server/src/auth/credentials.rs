//! What a request carries to authenticate with: [`bearer_credentials`] reads its
//! `Authorization: Bearer` (RFC 6750, 2.1) or `DPoP` header into [`Credentials`], and
//! `query_has_token` notices an access token in its query string, which MCP forbids.
//!
//! **Invariant.** Reading only: nothing here decides whether a token is valid.

use axum::http::{HeaderMap, header};

/// What the `Authorization` header holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials<'h> {
    /// No `Authorization` header, or one of another scheme (`Basic ...`).
    None,
    /// `Bearer <token>` (the scheme matched without regard to case).
    Bearer(&'h str),
    /// `DPoP <token>` (RFC 9449 §7.1): a DPoP-bound token, to be checked with the proof
    /// of the `DPoP` header.
    Dpop(&'h str),
    /// `Bearer` with no token, a token with characters RFC 6750 does not allow, or a
    /// header value that is not text.
    Malformed,
}

/// Reads `Authorization: Bearer <token>` (RFC 6750, 2.1) or `DPoP <token>` (RFC 9449
/// §7.1, the same token syntax).
pub fn bearer_credentials(headers: &HeaderMap) -> Credentials<'_> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Credentials::None;
    };
    if values.next().is_some() {
        // Two Authorization headers: which one counts is ambiguous.
        return Credentials::Malformed;
    }
    let Ok(value) = value.to_str() else {
        return Credentials::Malformed;
    };
    let (scheme, rest) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    let dpop = scheme.eq_ignore_ascii_case("dpop");
    if !dpop && !scheme.eq_ignore_ascii_case("bearer") {
        return Credentials::None;
    }
    let token = rest.trim();
    // b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
    let body = token.trim_end_matches('=');
    let well_formed = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    if well_formed && dpop {
        Credentials::Dpop(token)
    } else if well_formed {
        Credentials::Bearer(token)
    } else {
        Credentials::Malformed
    }
}

/// Whether a request's query string carries an access token (`access_token=`, RFC 6750
/// 2.3), which MCP forbids: tokens travel in the `Authorization` header only.
pub(crate) fn query_has_token(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split('=').next() == Some("access_token"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_auth(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(
                header::AUTHORIZATION,
                HeaderValue::from_str(v).expect("header"),
            );
        }
        h
    }

    #[test]
    fn bearer_credentials_are_read_strictly() {
        assert_eq!(bearer_credentials(&HeaderMap::new()), Credentials::None);
        assert_eq!(
            bearer_credentials(&with_auth(&["Bearer abc.def-_~+/=="])),
            Credentials::Bearer("abc.def-_~+/==")
        );
        assert_eq!(
            bearer_credentials(&with_auth(&["bearer xyz"])),
            Credentials::Bearer("xyz")
        );
        assert_eq!(
            bearer_credentials(&with_auth(&["DPoP abc.d"])),
            Credentials::Dpop("abc.d")
        );
        assert_eq!(
            bearer_credentials(&with_auth(&["dpop "])),
            Credentials::Malformed
        );
        assert_eq!(
            bearer_credentials(&with_auth(&["Basic dXNlcjpwdw=="])),
            Credentials::None
        );
        for bad in [
            "Bearer",
            "Bearer ",
            "Bearer a b",
            "Bearer a\"b",
            "Bearer ===",
        ] {
            assert_eq!(
                bearer_credentials(&with_auth(&[bad])),
                Credentials::Malformed,
                "{bad}"
            );
        }
        assert_eq!(
            bearer_credentials(&with_auth(&["Bearer a", "Bearer b"])),
            Credentials::Malformed
        );
    }

    #[test]
    fn query_tokens_are_noticed() {
        assert!(query_has_token(Some("access_token=abc")));
        assert!(query_has_token(Some("x=1&access_token")));
        assert!(!query_has_token(Some("my_access_token=1")));
        assert!(!query_has_token(None));
    }
}
