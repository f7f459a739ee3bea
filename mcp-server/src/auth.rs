//! Who is calling: the [`Authenticator`] the HTTP transport asks for every request, and
//! [`BearerTokens`], a static token table (what the demo's `--bearer NAME:TOKEN` builds).
//!
//! Without an authenticator every HTTP caller is one anonymous principal (task ids then
//! act as bearer tokens); stdio has one principal, the process on the other end.

use std::collections::HashMap;

use axum::http::{HeaderMap, StatusCode, header};

/// Decides the principal of a request from its headers: `Ok(Some(name))`, `Ok(None)` for
/// an anonymous caller, or `Err(status)` to refuse it (401, 403...) before anything runs.
pub trait Authenticator: Send + Sync + 'static {
    fn authenticate(&self, headers: &HeaderMap) -> Result<Option<String>, StatusCode>;
}

impl<F> Authenticator for F
where
    F: Fn(&HeaderMap) -> Result<Option<String>, StatusCode> + Send + Sync + 'static,
{
    fn authenticate(&self, headers: &HeaderMap) -> Result<Option<String>, StatusCode> {
        self(headers)
    }
}

/// `Authorization: Bearer <token>` checked against a fixed table of tokens and the
/// principal each one stands for.
#[derive(Clone)]
pub struct BearerTokens {
    tokens: HashMap<String, String>,
    allow_anonymous: bool,
}

impl std::fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the tokens.
        f.debug_struct("BearerTokens")
            .field("principals", &self.tokens.values().collect::<Vec<_>>())
            .field("allow_anonymous", &self.allow_anonymous)
            .finish()
    }
}

impl BearerTokens {
    /// A table of `(principal, token)` pairs. Requests without a token are refused (401)
    /// unless [`allow_anonymous`](Self::allow_anonymous) is set.
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> BearerTokens {
        BearerTokens {
            tokens: pairs
                .into_iter()
                .map(|(name, token)| (token, name))
                .collect(),
            allow_anonymous: false,
        }
    }

    /// Lets requests without an `Authorization` header through as the anonymous principal.
    pub fn allow_anonymous(mut self, allow: bool) -> Self {
        self.allow_anonymous = allow;
        self
    }

    /// Parses `NAME:TOKEN` (the demo's `--bearer` flag).
    /// A name equal to [`ANONYMOUS`](crate::ANONYMOUS) is refused: it is the owner of
    /// unauthenticated callers' tasks. (A name cannot contain `:`, so it cannot collide
    /// with a 2025-11-25 session's `session:<id>` owner either.)
    pub fn parse_pair(pair: &str) -> Result<(String, String), String> {
        match pair.split_once(':') {
            Some((name, _)) if name == crate::ANONYMOUS => Err(format!(
                "{name:?} is reserved for unauthenticated callers; pick another name"
            )),
            Some((name, token)) if !name.is_empty() && !token.is_empty() => {
                Ok((name.to_owned(), token.to_owned()))
            }
            _ => Err(format!("expected NAME:TOKEN, got {pair:?}")),
        }
    }
}

impl Authenticator for BearerTokens {
    fn authenticate(&self, headers: &HeaderMap) -> Result<Option<String>, StatusCode> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return if self.allow_anonymous {
                Ok(None)
            } else {
                Err(StatusCode::UNAUTHORIZED)
            };
        };
        let value = value.to_str().map_err(|_| StatusCode::UNAUTHORIZED)?;
        let token = value
            .strip_prefix("Bearer ")
            .ok_or(StatusCode::UNAUTHORIZED)?;
        // Every token is compared, so the time taken does not tell which one was close.
        let mut found = None;
        for (known, name) in &self.tokens {
            if constant_time_eq(known.as_bytes(), token.as_bytes()) {
                found = Some(name.clone());
            }
        }
        found.map(Some).ok_or(StatusCode::UNAUTHORIZED)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_auth(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(v).expect("header"),
        );
        h
    }

    #[test]
    fn bearer_table() {
        let auth = BearerTokens::new([("alice".to_owned(), "s3cret".to_owned())]);
        assert_eq!(
            auth.authenticate(&with_auth("Bearer s3cret")),
            Ok(Some("alice".into()))
        );
        assert_eq!(
            auth.authenticate(&with_auth("Bearer wrong")),
            Err(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            auth.authenticate(&with_auth("Basic s3cret")),
            Err(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            auth.authenticate(&HeaderMap::new()),
            Err(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            auth.allow_anonymous(true).authenticate(&HeaderMap::new()),
            Ok(None)
        );
        assert_eq!(
            BearerTokens::parse_pair("bob:t0k"),
            Ok(("bob".into(), "t0k".into()))
        );
        assert!(BearerTokens::parse_pair("bob").is_err());
    }
}
