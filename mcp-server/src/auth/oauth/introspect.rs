//! Opaque access tokens checked by RFC 7662 token introspection: the token is POSTed to
//! the authorization server's `introspection_endpoint` (from its metadata), the resource
//! server authenticating as a client with `client_secret_basic`; an `active` answer is
//! then checked as a JWT's claims are (`iss` when present, `aud`, `exp`, `nbf`, `sub`),
//! and [`Introspector`] keeps the outcome for a while.
//!
//! **Invariants.** Outcomes are keyed by the SHA-256 of the token, never the token, and
//! kept in two bounded maps (`expiring.rs`) apart: tokens accepted, at most
//! [`MAX_ACCEPTED`] (10,000) for up to [`OAuthConfig::introspection_cache_max`] (default
//! 60 s) and never past the token's `exp`; and tokens refused (`active: false`, or an
//! answer that fails a check), at most [`OAuthConfig::introspection_refusal_cache_size`]
//! (default 1,000) for up to [`OAuthConfig::introspection_refusal_cache_max`] (default
//! 10 s) and never longer than accepted ones. Made-up tokens therefore only ever evict
//! other refusals: a valid token is cached however many are tried. Concurrent
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

use super::claims::{Accepted, Audience, Cnf, TokenError, identity};
use super::config::{IntrospectionClient, OAuthConfig};
use super::expiring::{Expiring, TokenHash};
use super::metadata::{ServerMetadata, read_json, request_error};

/// The most accepted tokens kept at once; when full, the expired ones make room, else the
/// one expiring soonest. Refusals are kept apart and cannot take this room.
pub(super) const MAX_ACCEPTED: usize = 10_000;

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
    #[serde(default)]
    cnf: Option<Cnf>,
}

/// The outcomes kept: accepted tokens and refused ones, each map bounded on its own.
struct Outcomes {
    accepted: Expiring<Accepted>,
    refused: Expiring<TokenError>,
}

/// One introspection in progress, awaited by every request with its token.
type Flight = Arc<tokio::sync::OnceCell<Result<Accepted, TokenError>>>;

type Flights = Mutex<HashMap<TokenHash, Flight>>;

/// Takes a flight off the map when its holder is done with it (finished or dropped), if
/// it is still the one there.
struct Boarded<'a> {
    flights: &'a Flights,
    key: TokenHash,
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
    outcomes: Mutex<Outcomes>,
    flights: Flights,
}

impl std::fmt::Debug for Introspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Neither the client's secret nor the tokens' hashes.
        f.debug_struct("Introspector").finish_non_exhaustive()
    }
}

impl Introspector {
    /// Introspects as `client`, keeping at most `refusals` refused tokens (and at most
    /// [`MAX_ACCEPTED`] accepted ones).
    pub(super) fn new(
        metadata: Arc<ServerMetadata>,
        client: &IntrospectionClient,
        refusals: usize,
    ) -> Self {
        let pair = format!(
            "{}:{}",
            form_urlencode(&client.client_id),
            form_urlencode(&client.client_secret)
        );
        Introspector {
            metadata,
            authorization: format!("Basic {}", STANDARD.encode(pair)),
            outcomes: Mutex::new(Outcomes {
                accepted: Expiring::new(MAX_ACCEPTED),
                refused: Expiring::new(refusals),
            }),
            flights: Mutex::default(),
        }
    }

    fn outcomes(&self) -> std::sync::MutexGuard<'_, Outcomes> {
        self.outcomes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the authorization server says of `token`: from the cache, else from the
    /// introspection in progress for it, else asked now.
    pub(super) async fn validate(
        &self,
        config: &OAuthConfig,
        token: &str,
    ) -> Result<Accepted, TokenError> {
        let key: TokenHash = Sha256::digest(token.as_bytes()).into();
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

    fn cached(&self, key: &TokenHash) -> Option<Result<Accepted, TokenError>> {
        let now = Instant::now();
        let outcomes = self.outcomes();
        match outcomes.accepted.get(key, now) {
            Some(identity) => Some(Ok(identity)),
            None => outcomes.refused.get(key, now).map(Err),
        }
    }

    /// Asks the endpoint about `token` and keeps the outcome (unless it is a 503).
    async fn introspect(
        &self,
        config: &OAuthConfig,
        token: &str,
        key: TokenHash,
    ) -> Result<Accepted, TokenError> {
        let response = self.ask(token).await?;
        let now = unix_now();
        let outcome = check(config, response.as_ref(), now);
        let exp = response.as_ref().and_then(|r| r.exp);
        self.keep(key, &outcome, lifetime(config, outcome.is_ok(), exp, now));
        outcome
    }

    /// Keeps `outcome` for `lifetime` in the map of its kind (and forgets any outcome of
    /// the other kind for the token).
    fn keep(&self, key: TokenHash, outcome: &Result<Accepted, TokenError>, lifetime: Duration) {
        let now = Instant::now();
        // A lifetime past what an Instant can hold is a misconfiguration: keep nothing.
        let Some(until) = now.checked_add(lifetime) else {
            return;
        };
        let mut outcomes = self.outcomes();
        match outcome {
            Ok(identity) => {
                outcomes.refused.remove(&key);
                outcomes.accepted.insert(key, identity.clone(), until, now);
            }
            Err(refusal) => {
                outcomes.accepted.remove(&key);
                outcomes.refused.insert(key, refusal.clone(), until, now);
            }
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
            .map_err(|e| unavailable(request_error(&endpoint, &e)))?;
        let answer: Response = read_json(&endpoint, response).await.map_err(unavailable)?;
        Ok(answer.active.then_some(answer))
    }
}

/// How long an outcome is kept, at `now` (Unix seconds): an accepted token's
/// (`accepted`) for [`OAuthConfig::introspection_cache_max`] and no longer than its `exp`;
/// a refusal for [`OAuthConfig::introspection_refusal_cache_max`], no longer than an
/// accepted token's maximum.
fn lifetime(config: &OAuthConfig, accepted: bool, exp: Option<i64>, now: i64) -> Duration {
    let max = config.introspection_cache_max;
    match (accepted, exp) {
        (true, Some(exp)) => {
            Duration::from_secs(u64::try_from(exp.saturating_sub(now)).unwrap_or(0)).min(max)
        }
        (true, None) => max,
        (false, _) => config.introspection_refusal_cache_max.min(max),
    }
}

/// The identity an introspection answer (`None`: inactive) stands for, at `now` (Unix
/// seconds), checked as a JWT's claims are.
fn check(
    config: &OAuthConfig,
    answer: Option<&Response>,
    now: i64,
) -> Result<Accepted, TokenError> {
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
    let identity = identity(
        &config.issuer,
        answer.sub.clone(),
        answer.scope.as_deref(),
        None,
    )?;
    Ok((identity, answer.cnf.as_ref().and_then(|c| c.jkt.clone())))
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
    use crate::auth::authenticator::Identity;

    fn config() -> OAuthConfig {
        OAuthConfig::new("https://as.example.com", "https://mcp.example.com/mcp")
    }

    fn answer(v: serde_json::Value) -> Response {
        serde_json::from_value(v).expect("an introspection response")
    }

    fn introspector(refusals: usize) -> Introspector {
        let issuer = reqwest::Url::parse("https://as.example.com").expect("url");
        let metadata = ServerMetadata::new(
            reqwest::Client::new(),
            "https://as.example.com".into(),
            issuer,
            Duration::from_secs(60),
        );
        Introspector::new(
            Arc::new(metadata),
            &IntrospectionClient::new("rs", "secret"),
            refusals,
        )
    }

    #[test]
    fn refusals_never_push_out_or_keep_out_accepted_tokens() {
        let intro = introspector(4);
        let minute = Duration::from_secs(60);
        let alice = Identity::new("https://as.example.com#alice");
        let (valid, later): (TokenHash, TokenHash) = ([0xA0; 32], [0xB0; 32]);
        intro.keep(valid, &Ok((alice.clone(), None)), minute);
        // Far more made-up tokens than refusals are kept.
        for n in 0..100 {
            intro.keep([n; 32], &Err(TokenError::Inactive), minute);
        }
        assert_eq!(intro.cached(&valid), Some(Ok((alice.clone(), None))));
        // A token accepted after the flood is kept as well.
        intro.keep(later, &Ok((alice.clone(), None)), minute);
        assert_eq!(intro.cached(&later), Some(Ok((alice.clone(), None))));
        // The refusals are bounded, the newest kept, the oldest gone.
        assert_eq!(intro.cached(&[99; 32]), Some(Err(TokenError::Inactive)));
        assert_eq!(intro.cached(&[0; 32]), None);
        {
            let outcomes = intro.outcomes();
            assert_eq!(outcomes.refused.len(), 4);
            assert_eq!(outcomes.accepted.len(), 2);
        }
        // A token accepted after a refusal is no longer refused, and the other way round.
        intro.keep([99; 32], &Ok((alice.clone(), None)), minute);
        assert_eq!(intro.cached(&[99; 32]), Some(Ok((alice, None))));
        intro.keep(valid, &Err(TokenError::Expired), minute);
        assert_eq!(intro.cached(&valid), Some(Err(TokenError::Expired)));
        assert_eq!(intro.outcomes().accepted.len(), 2, "[99; 32] and later");
    }

    #[test]
    fn a_refusal_cache_of_zero_keeps_no_refusal() {
        let intro = introspector(0);
        let minute = Duration::from_secs(60);
        intro.keep([1; 32], &Err(TokenError::Inactive), minute);
        assert_eq!(intro.cached(&[1; 32]), None);
        let bob = Identity::new("https://as.example.com#bob");
        intro.keep([2; 32], &Ok((bob.clone(), None)), minute);
        assert_eq!(intro.cached(&[2; 32]), Some(Ok((bob.clone(), None))));
        // A lifetime no Instant can reach is not kept (nor a panic).
        intro.keep([3; 32], &Ok((bob, None)), Duration::MAX);
        assert_eq!(intro.cached(&[3; 32]), None);
    }

    #[test]
    fn refusals_are_kept_shorter_than_accepted_tokens() {
        let c = config();
        let now = 1_000_000;
        let secs = Duration::from_secs;
        assert_eq!(lifetime(&c, true, None, now), secs(60));
        assert_eq!(lifetime(&c, true, Some(now + 5), now), secs(5));
        assert_eq!(lifetime(&c, true, Some(now - 5), now), Duration::ZERO);
        assert_eq!(lifetime(&c, false, Some(now + 500), now), secs(10));
        assert_eq!(lifetime(&c, false, None, now), secs(10));
        // Never longer than an accepted token is kept.
        let short = OAuthConfig {
            introspection_cache_max: secs(3),
            ..config()
        };
        assert_eq!(lifetime(&short, false, None, now), secs(3));
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
        let (id, jkt) = check(&c, Some(&answer(ok.clone())), now).expect("active");
        assert_eq!(jkt, None);
        let mut bound = ok.clone();
        bound["cnf"] = serde_json::json!({ "jkt": "thumb" });
        let (_, jkt) = check(&c, Some(&answer(bound)), now).expect("active");
        assert_eq!(jkt.as_deref(), Some("thumb"));
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
