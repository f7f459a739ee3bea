//! [`BearerTokens`]: a static table of bearer tokens and the principal each stands for
//! (the demo's `--bearer NAME:TOKEN`), for local use. Its principals have no scopes.

use std::collections::HashMap;

use axum::http::HeaderMap;
use futures::future::BoxFuture;

use super::authenticator::{Authenticator, Identity};
use super::challenge::{Challenge, Refusal};
use super::credentials::{Credentials, bearer_credentials};

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
            Some((name, _)) if name == super::ANONYMOUS => Err(format!(
                "{name:?} is reserved for unauthenticated callers; pick another name"
            )),
            Some((name, token)) if !name.is_empty() && !token.is_empty() => {
                Ok((name.to_owned(), token.to_owned()))
            }
            _ => Err(format!("expected NAME:TOKEN, got {pair:?}")),
        }
    }
}

impl BearerTokens {
    fn check(&self, headers: &HeaderMap) -> Result<Option<Identity>, Refusal> {
        let token = match bearer_credentials(headers) {
            Credentials::Bearer(token) => token,
            Credentials::None if self.allow_anonymous => return Ok(None),
            Credentials::None => return Err(Refusal::unauthorized(Challenge::new())),
            Credentials::Malformed => {
                return Err(Refusal::unauthorized(
                    Challenge::new().invalid_token("malformed Authorization header"),
                ));
            }
            // Static tokens are bearer tokens: none is bound to a DPoP key.
            Credentials::Dpop(_) => {
                return Err(Refusal::unauthorized(
                    Challenge::new().invalid_token("this server takes bearer tokens, not DPoP"),
                ));
            }
        };
        // Every token is compared, so the time taken does not tell which one was close.
        let mut found = None;
        for (known, name) in &self.tokens {
            if constant_time_eq(known.as_bytes(), token.as_bytes()) {
                found = Some(name.clone());
            }
        }
        match found {
            Some(name) => Ok(Some(Identity::new(name))),
            None => Err(Refusal::unauthorized(
                Challenge::new().invalid_token("unknown token"),
            )),
        }
    }
}

impl Authenticator for BearerTokens {
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Identity>, Refusal>> {
        Box::pin(std::future::ready(self.check(headers)))
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
    use axum::http::{HeaderValue, header};

    fn with_auth(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(v).expect("header"),
        );
        h
    }

    fn status(r: Result<Option<Identity>, Refusal>) -> Result<Option<String>, u16> {
        r.map(|i| i.map(|i| i.principal))
            .map_err(|refusal| refusal.status.as_u16())
    }

    #[test]
    fn bearer_table() {
        let auth = BearerTokens::new([("alice".to_owned(), "s3cret".to_owned())]);
        assert_eq!(
            status(auth.check(&with_auth("Bearer s3cret"))),
            Ok(Some("alice".into()))
        );
        let wrong = auth.check(&with_auth("Bearer wrong")).expect_err("refused");
        assert_eq!(wrong.status.as_u16(), 401);
        assert!(
            wrong
                .www_authenticate
                .as_deref()
                .is_some_and(|c| c.contains("invalid_token")),
            "{wrong:?}"
        );
        assert_eq!(status(auth.check(&with_auth("Basic s3cret"))), Err(401));
        assert_eq!(status(auth.check(&HeaderMap::new())), Err(401));
        assert_eq!(
            status(auth.allow_anonymous(true).check(&HeaderMap::new())),
            Ok(None)
        );
        assert_eq!(
            BearerTokens::parse_pair("bob:t0k"),
            Ok(("bob".into(), "t0k".into()))
        );
        assert!(BearerTokens::parse_pair("bob").is_err());
    }
}
