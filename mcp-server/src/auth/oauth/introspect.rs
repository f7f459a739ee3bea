//! Opaque access tokens checked by RFC 7662 token introspection: the token is POSTed to
//! the authorization server's `introspection_endpoint` (from its metadata), the resource
//! server authenticating as a client with `client_secret_basic`; an `active` answer is
//! then checked as a JWT's claims are (`iss` when present, `aud`, `exp`, `nbf`, `sub`),
//! and [`Introspector`] keeps the outcome for a while.
//!
//! **Invariants.** The cache is keyed by the SHA-256 of the token, never the token; an
//! entry lasts until the token's `exp` or [`OAuthConfig::introspection_cache_max`],
//! whichever comes first, and the cache holds at most [`MAX_CACHED`] entries. Concurrent
//! requests with one token share one introspection (a flight, keyed the same way; left
//! by whoever ends or drops last, so a cancelled request leaves nothing behind). An endpoint
//! that cannot be reached (or answers something else than an introspection response) says
//! nothing about the token: 503, never cached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::metadata::{ServerMetadata, read_json};
use super::token::{Audience, TokenError, identity};
use super::{IntrospectionClient, OAuthConfig};
use crate::auth::Identity;

/// The most introspection outcomes kept at once; when full, expired ones are dropped and,
/// if none were, a new outcome is not kept.
pub(super) const MAX_CACHED: usize = 10_000;

/// The members of an introspection response (RFC 7662, 2.2) that are read.
#[derive(Deserialize)]
struct Response {
    active: bool,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    aud: Option<Audience>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    exp: Option<i64>,
    #[serde(default)]
    nbf: Option<i64>,
}

struct Cached {
    outcome: Result<Identity, TokenError>,
    until: Instant,
}

/// One introspection in progress, awaited by every request with its token.
type Flight = Arc<tokio::sync::OnceCell<Result<Identity, TokenError>>>;

type Flights = Mutex<HashMap<[u8; 32], Flight>>;

/// Takes a flight off the map when its holder is done with it (finished or dropped), if
/// it is still the one there.
struct Boarded<'a> {
    flights: &'a Flights,
    key: [u8; 32],
    flight: Flight,
}

impl Drop for Boarded<'_> {
    fn drop(&mut self) {
        let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
        if flights
            .get(&self.key)
            .is_some_and(|f| Arc::ptr_eq(f, &self.flight))
        {
            flights.remove(&self.key);
        }
    }
}

/// Introspects opaque tokens for one resource server, keeping the outcomes briefly.
pub(super) struct Introspector {
    metadata: Arc<ServerMetadata>,
    /// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749, 2.3.1).
    authorization: String,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
    flights: Flights,
}

impl std::fmt::Debug for Introspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Neither the client's secret nor the tokens' hashes.
        f.debug_struct("Introspector").finish_non_exhaustive()
    }
}

impl Introspector {
    pub(super) fn new(metadata: Arc<ServerMetadata>, client: &IntrospectionClient) -> Self {
        let pair = format!(
            "{}:{}",
            form_urlencode(&client.client_id),
            form_urlencode(&client.client_secret)
        );
        Introspector {
            metadata,
            authorization: format!("Basic {}", STANDARD.encode(pair)),
            cache: Mutex::default(),
            flights: Mutex::default(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Cached>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the authorization server says of `token`: from the cache, else from the
    /// introspection in progress for it, else asked now.
    pub(super) async fn validate(
        &self,
        config: &OAuthConfig,
        token: &str,
    ) -> Result<Identity, TokenError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(hit) = self.cached(&key) {
            return hit;
        }
        let flight = {
            let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(flights.entry(key).or_default())
        };
        let boarded = Boarded {
            flights: &self.flights,
            key,
            flight,
        };
        boarded
            .flight
            .get_or_init(|| async {
                // A flight that just landed may have left its outcome.
                match self.cached(&key) {
                    Some(hit) => hit,
                    None => self.introspect(config, token, key).await,
                }
            })
            .await
            .clone()
    }

    fn cached(&self, key: &[u8; 32]) -> Option<Result<Identity, TokenError>> {
        self.cache()
            .get(key)
            .filter(|hit| hit.until > Instant::now())
            .map(|hit| hit.outcome.clone())
    }

    /// Asks the endpoint about `token` and keeps the outcome (unless it is a 503).
    async fn introspect(
        &self,
        config: &OAuthConfig,
        token: &str,
        key: [u8; 32],
    ) -> Result<Identity, TokenError> {
        let response = self.ask(token).await?;
        let now = unix_now();
        let outcome = check(config, response.as_ref(), now);
        let max = config.introspection_cache_max;
        let lifetime = match (&outcome, response.as_ref().and_then(|r| r.exp)) {
            // An active token's outcome lasts no longer than the token.
            (Ok(_), Some(exp)) => {
                Duration::from_secs(u64::try_from(exp.saturating_sub(now)).unwrap_or(0)).min(max)
            }
            _ => max,
        };
        if !lifetime.is_zero() {
            self.keep(key, outcome.clone(), lifetime);
        }
        outcome
    }

    fn keep(&self, key: [u8; 32], outcome: Result<Identity, TokenError>, lifetime: Duration) {
        let now = Instant::now();
        let mut cache = self.cache();
        if cache.len() >= MAX_CACHED {
            cache.retain(|_, c| c.until > now);
        }
        if cache.len() < MAX_CACHED {
            cache.insert(
                key,
                Cached {
                    outcome,
                    until: now + lifetime,
                },
            );
        }
    }

    /// The endpoint's answer: `None` for `active: false` (nothing else of it is read).
    async fn ask(&self, token: &str) -> Result<Option<Response>, TokenError> {
        let unavailable = TokenError::IntrospectionUnavailable;
        let endpoint = self
            .metadata
            .get()
            .await
            .and_then(|m| m.introspection_endpoint())
            .map_err(unavailable)?;
        let body = format!(
            "token={}&token_type_hint=access_token",
            form_urlencode(token)
        );
        let response = self
            .metadata
            .client()
            .post(endpoint.clone())
            .header(reqwest::header::AUTHORIZATION, &self.authorization)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| unavailable(format!("{endpoint}: {e}")))?;
        let answer: Response = read_json(&endpoint, response).await.map_err(unavailable)?;
        Ok(answer.active.then_some(answer))
    }
}

/// The identity an introspection answer (`None`: inactive) stands for, at `now` (Unix
/// seconds), checked as a JWT's claims are.
fn check(
    config: &OAuthConfig,
    answer: Option<&Response>,
    now: i64,
) -> Result<Identity, TokenError> {
    let Some(answer) = answer else {
        return Err(TokenError::Inactive);
    };
    if answer
        .iss
        .as_deref()
        .is_some_and(|iss| iss != config.issuer)
    {
        return Err(TokenError::Issuer);
    }
    match &answer.aud {
        None => return Err(TokenError::MissingClaim("aud".into())),
        Some(aud) if !aud.contains(&config.resource) => return Err(TokenError::Audience),
        Some(_) => {}
    }
    let leeway = i64::try_from(config.leeway.as_secs()).unwrap_or(i64::MAX);
    if answer
        .exp
        .is_some_and(|exp| exp.saturating_add(leeway) < now)
    {
        return Err(TokenError::Expired);
    }
    if answer
        .nbf
        .is_some_and(|nbf| nbf.saturating_sub(leeway) > now)
    {
        return Err(TokenError::NotYetValid);
    }
    // The principal is the configured issuer's, whether or not the answer names it.
    identity(
        &config.issuer,
        answer.sub.clone(),
        answer.scope.as_deref(),
        None,
    )
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_urlencode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> OAuthConfig {
        OAuthConfig::new("https://as.example.com", "https://mcp.example.com/mcp")
    }

    fn answer(v: serde_json::Value) -> Response {
        serde_json::from_value(v).expect("an introspection response")
    }

    #[test]
    fn values_are_form_urlencoded() {
        assert_eq!(form_urlencode("a b:c/%é"), "a+b%3Ac%2F%25%C3%A9");
        assert_eq!(form_urlencode("Az09-._*"), "Az09-._*");
    }

    #[test]
    fn active_answers_are_checked_like_claims() {
        let c = config();
        let now = 1_000_000;
        let ok = serde_json::json!({
            "active": true, "sub": "u1", "aud": ["x", c.resource], "iss": c.issuer,
            "exp": now + 10, "scope": "a b",
        });
        let id = check(&c, Some(&answer(ok.clone())), now).expect("active");
        assert_eq!(id.principal, "https://as.example.com#u1");
        assert_eq!(id.scopes.len(), 2);
        let with = |k: &str, v: serde_json::Value| {
            let mut a = ok.clone();
            a[k] = v;
            check(&c, Some(&answer(a)), now)
        };
        assert_eq!(with("iss", "https://evil".into()), Err(TokenError::Issuer));
        assert_eq!(
            with("aud", "https://other/mcp".into()),
            Err(TokenError::Audience)
        );
        assert_eq!(with("exp", (now - 61).into()), Err(TokenError::Expired));
        assert!(with("exp", (now - 59).into()).is_ok(), "within the leeway");
        assert_eq!(with("nbf", (now + 61).into()), Err(TokenError::NotYetValid));
        assert!(with("sub", "".into()).is_err());
        let mut no_iss = ok;
        no_iss.as_object_mut().expect("object").remove("iss");
        assert!(check(&c, Some(&answer(no_iss)), now).is_ok());
        assert_eq!(check(&c, None, now), Err(TokenError::Inactive));
    }
}
