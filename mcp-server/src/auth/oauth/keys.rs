//! The authorization server's signing keys: its JWKS fetched from the configured URL or
//! the metadata's `jwks_uri` (`metadata.rs`), and [`KeyCache`], which keeps them.
//!
//! **Invariants.** At most one fetch at a time (others wait for it and use its result),
//! and at most one per refetch interval, failed ones included: a flood of tokens with
//! made-up `kid`s costs the authorization server one request per interval. A failed fetch
//! keeps the keys already known, so tokens signed with them still pass. Only asymmetric
//! public keys are kept (`RSA`, `EC` P-256/P-384, `OKP` Ed25519); a symmetric (`oct`) key
//! in a JWKS is ignored.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use reqwest::Url;
use serde::Deserialize;

use super::metadata::{ServerMetadata, get_json};

/// A verification key of the JWKS.
pub(super) struct VerifyKey {
    pub(super) kid: Option<String>,
    /// The JWK's `alg`, when it names one.
    pub(super) alg: Option<Algorithm>,
    pub(super) kind: KeyKind,
    pub(super) key: DecodingKey,
}

impl std::fmt::Debug for VerifyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// What a key can verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyKind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl VerifyKey {
    /// Whether this key may verify a token signed with `alg`.
    pub(super) fn fits(&self, alg: Algorithm) -> bool {
        use Algorithm::*;
        let kind_fits = match self.kind {
            KeyKind::Rsa => matches!(alg, RS256 | RS384 | RS512 | PS256 | PS384 | PS512),
            KeyKind::P256 => alg == ES256,
            KeyKind::P384 => alg == ES384,
            KeyKind::Ed25519 => alg == EdDSA,
        };
        kind_fits && self.alg.is_none_or(|a| a == alg)
    }

    /// The key of `jwk`, when it is a public signing key this server can use.
    fn from_jwk(jwk: &Jwk) -> Option<VerifyKey> {
        if matches!(&jwk.common.public_key_use, Some(u) if *u != PublicKeyUse::Signature) {
            return None;
        }
        let kind = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => KeyKind::Rsa,
            AlgorithmParameters::EllipticCurve(p) => match p.curve {
                EllipticCurve::P256 => KeyKind::P256,
                EllipticCurve::P384 => KeyKind::P384,
                _ => return None,
            },
            AlgorithmParameters::OctetKeyPair(p) => match p.curve {
                EllipticCurve::Ed25519 => KeyKind::Ed25519,
                _ => return None,
            },
            // A shared secret has no place in a public key set.
            AlgorithmParameters::OctetKey(_) => return None,
        };
        let alg = match jwk.common.key_algorithm {
            None => None,
            // A key for an algorithm we cannot use (e.g. an encryption one) is skipped.
            Some(a) => Some(a.to_string().parse::<Algorithm>().ok()?),
        };
        let key = DecodingKey::from_jwk(jwk).ok()?;
        Some(VerifyKey {
            kid: jwk.common.key_id.clone(),
            alg,
            kind,
            key,
        })
    }
}

/// The outcome of looking for the keys of a token.
#[derive(Debug)]
pub(super) enum Lookup {
    /// Keys that may have signed it (one for a known `kid`; every fitting key without).
    Found(Vec<Arc<VerifyKey>>),
    /// The current key set has no such key.
    Unknown,
    /// The keys could not be fetched (and the cached ones do not have it).
    Unavailable(String),
}

/// The JWKS of one issuer, fetched when needed.
#[derive(Debug)]
pub(super) struct KeyCache {
    metadata: Arc<ServerMetadata>,
    configured_jwks: Option<Url>,
    interval: Duration,
    state: Mutex<KeyState>,
    /// Held by the one fetch in progress.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct KeyState {
    keys: Vec<Arc<VerifyKey>>,
    /// Discovered once, kept.
    jwks_uri: Option<Url>,
    last_attempt: Option<Instant>,
    /// Why the last attempt failed, if it did.
    last_error: Option<String>,
}

impl KeyCache {
    pub(super) fn new(
        metadata: Arc<ServerMetadata>,
        configured_jwks: Option<Url>,
        interval: Duration,
    ) -> KeyCache {
        KeyCache {
            metadata,
            configured_jwks,
            interval,
            state: Mutex::default(),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, KeyState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cached(&self, kid: Option<&str>, alg: Algorithm) -> Vec<Arc<VerifyKey>> {
        self.state()
            .keys
            .iter()
            .filter(|k| k.fits(alg))
            .filter(|k| kid.is_none_or(|kid| k.kid.as_deref() == Some(kid)))
            .cloned()
            .collect()
    }

    /// The keys that may have signed a token with this `kid` and `alg`: from the cache,
    /// else after one fetch (unless one happened within the interval).
    pub(super) async fn keys_for(&self, kid: Option<&str>, alg: Algorithm) -> Lookup {
        let found = self.cached(kid, alg);
        if !found.is_empty() {
            return Lookup::Found(found);
        }
        let _fetching = self.fetching.lock().await;
        // A fetch that finished while this one waited may have brought the key.
        let found = self.cached(kid, alg);
        if !found.is_empty() {
            return Lookup::Found(found);
        }
        let recent = {
            let state = self.state();
            match state.last_attempt {
                Some(at) if at.elapsed() < self.interval => Some(state.last_error.clone()),
                _ => None,
            }
        };
        let outcome = match recent {
            Some(last_error) => last_error,
            None => self.refresh().await.err(),
        };
        match outcome {
            Some(reason) => Lookup::Unavailable(reason),
            None => {
                let found = self.cached(kid, alg);
                if found.is_empty() {
                    Lookup::Unknown
                } else {
                    Lookup::Found(found)
                }
            }
        }
    }

    /// Fetches the key set (discovering `jwks_uri` first if needed) and keeps it; on
    /// failure keeps the keys it had. Either way the attempt counts for the interval.
    async fn refresh(&self) -> Result<(), String> {
        let fetched = self.fetch().await;
        let mut state = self.state();
        state.last_attempt = Some(Instant::now());
        match fetched {
            Ok((jwks_uri, keys)) => {
                tracing::info!(jwks_uri = %jwks_uri, keys = keys.len(), "fetched the authorization server's keys");
                state.jwks_uri = Some(jwks_uri);
                state.keys = keys;
                state.last_error = None;
                Ok(())
            }
            Err(reason) => {
                state.last_error = Some(reason.clone());
                Err(reason)
            }
        }
    }

    async fn fetch(&self) -> Result<(Url, Vec<Arc<VerifyKey>>), String> {
        let known = self
            .configured_jwks
            .clone()
            .or_else(|| self.state().jwks_uri.clone());
        let jwks_uri = match known {
            Some(u) => u,
            None => self.metadata.get().await?.jwks_uri()?,
        };
        let body = get_json::<JwkSetDoc>(self.metadata.client(), &jwks_uri).await?;
        // Each key parsed alone: one key of a kind we do not know spoils nothing.
        let keys = body
            .keys
            .into_iter()
            .filter_map(|k| serde_json::from_value::<Jwk>(k).ok())
            .filter_map(|k| VerifyKey::from_jwk(&k))
            .map(Arc::new)
            .collect();
        Ok((jwks_uri, keys))
    }
}

#[derive(Deserialize)]
struct JwkSetDoc {
    keys: Vec<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_signing_keys_are_kept() {
        let jwk = |v: serde_json::Value| serde_json::from_value::<Jwk>(v).expect("jwk");
        // An HMAC secret published in a key set is not a key to verify with.
        assert!(
            VerifyKey::from_jwk(&jwk(
                serde_json::json!({"kty": "oct", "k": "c2VjcmV0", "kid": "s"})
            ))
            .is_none()
        );
        let ec = serde_json::json!({
            "kty": "EC", "crv": "P-256", "kid": "e", "alg": "ES256",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
        });
        let key = VerifyKey::from_jwk(&jwk(ec.clone())).expect("EC key");
        assert!(key.fits(Algorithm::ES256));
        assert!(!key.fits(Algorithm::ES384));
        assert!(!key.fits(Algorithm::HS256));
        let mut enc = ec;
        enc["use"] = "enc".into();
        assert!(VerifyKey::from_jwk(&jwk(enc)).is_none());
    }
}
