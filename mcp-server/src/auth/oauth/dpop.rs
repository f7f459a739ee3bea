//! DPoP proofs (RFC 9449 §4.3, §7): [`DpopVerifier`] checks the `DPoP` header that
//! comes with a DPoP-bound access token — a JWT of `typ` `dpop+jwt`, signed with an
//! asymmetric algorithm of the allowlist by the public key in its `jwk` header (no
//! private part), whose `htm` and `htu` are the request's method and URL, `iat` within
//! [`DpopPolicy::proof_window`], `jti` not seen before (a replay cache bounded in
//! memory), `ath` the token's SHA-256 and, when [`DpopPolicy::require_nonce`], `nonce`
//! one this server issued (rotated every [`DpopPolicy::nonce_lifetime`], the previous
//! one still accepted). It answers the key's RFC 7638 thumbprint, which the caller
//! compares with the token's `cnf.jkt`; only then is the proof's `jti` remembered
//! ([`DpopVerifier::accept`]), so that callers without a valid token cannot fill the
//! replay cache and push the `jti`s of real proofs out of it.
//!
//! **Invariant.** Nothing here fetches anything; the replay cache and the nonces are the
//! only state, both bounded.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::Url;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Proofs longer than this are refused unread.
const MAX_PROOF_BYTES: usize = 8 * 1024;
/// `jti`s longer than this are refused (a proof's `jti` is a short random string).
const MAX_JTI_BYTES: usize = 256;

/// How a resource server treats DPoP (RFC 9449).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpopPolicy {
    /// Every token must be DPoP-bound (`cnf.jkt`) and presented with a proof; a bearer
    /// token is refused. Bound tokens always need a proof, whatever this says.
    pub required: bool,
    /// Proofs must carry a nonce this server issued: a proof without one (or with a
    /// stale one) gets 401 `use_dpop_nonce` with a fresh `DPoP-Nonce`.
    pub require_nonce: bool,
    /// How far a proof's `iat` may be from now, either way.
    pub proof_window: Duration,
    /// How many proofs' `jti` are remembered to refuse replays (the oldest forgotten
    /// first; each is kept for `2 * proof_window`).
    pub replay_cache_size: usize,
    /// How long a nonce is current (the previous one is still accepted as long again).
    pub nonce_lifetime: Duration,
}

impl Default for DpopPolicy {
    fn default() -> Self {
        DpopPolicy {
            required: false,
            require_nonce: false,
            proof_window: Duration::from_secs(60),
            replay_cache_size: 100_000,
            nonce_lifetime: Duration::from_secs(300),
        }
    }
}

/// Why a proof was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DpopError {
    /// No `DPoP` header, or more than one.
    #[error("a DPoP-bound token needs exactly one DPoP proof header")]
    Missing,
    /// Not a well-formed proof JWT (header, `typ`, `jwk`, claims).
    #[error("the DPoP proof is malformed: {0}")]
    Malformed(&'static str),
    /// Its `alg` is not an accepted asymmetric algorithm.
    #[error("the DPoP proof's algorithm is not accepted")]
    Algorithm,
    /// The signature does not verify with its `jwk`.
    #[error("the DPoP proof's signature does not verify")]
    Signature,
    /// `htm` is not the request's method.
    #[error("the DPoP proof is for another method (htm)")]
    Method,
    /// `htu` is not the request's URL.
    #[error("the DPoP proof is for another URL (htu)")]
    Url,
    /// `iat` is outside the window.
    #[error("the DPoP proof is too old or from the future (iat)")]
    Stale,
    /// Its `jti` was seen already.
    #[error("the DPoP proof was used before (jti)")]
    Replayed,
    /// `ath` is not the presented token's hash.
    #[error("the DPoP proof is for another access token (ath)")]
    TokenHash,
    /// The key is not the one the token is bound to (`cnf.jkt`).
    #[error("the DPoP proof's key is not the one the token is bound to")]
    KeyMismatch,
    /// A nonce is required and the proof has none, or a stale one.
    #[error("the resource server requires a DPoP nonce")]
    UseNonce,
}

/// The claims of a proof that are read.
#[derive(Deserialize)]
struct ProofClaims {
    jti: String,
    htm: String,
    htu: String,
    iat: i64,
    #[serde(default)]
    ath: Option<String>,
    #[serde(default)]
    nonce: Option<String>,
}

/// The `jti`s seen, oldest first, each with when it may be forgotten.
#[derive(Default)]
struct Seen {
    order: VecDeque<(Instant, [u8; 32])>,
    set: HashSet<[u8; 32]>,
}

struct Nonces {
    current: String,
    previous: Option<String>,
    since: Instant,
}

fn fresh_nonce() -> String {
    let mut bytes = [0u8; 16];
    // Without randomness the nonce is still unique per rotation (a clock value): it only
    // has to be fresh, not secret.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes = nanos.to_le_bytes();
    }
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `base64url(SHA-256(text))`.
fn sha256_b64(text: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(text))
}

/// The RFC 7638 thumbprint of a public JWK (its required members, sorted, no spaces).
fn thumbprint(jwk: &Jwk) -> Result<String, DpopError> {
    let canonical = match &jwk.algorithm {
        AlgorithmParameters::EllipticCurve(ec) => serde_json::json!({
            "crv": ec.curve, "kty": "EC", "x": ec.x, "y": ec.y,
        }),
        AlgorithmParameters::RSA(rsa) => serde_json::json!({
            "e": rsa.e, "kty": "RSA", "n": rsa.n,
        }),
        AlgorithmParameters::OctetKeyPair(okp) => serde_json::json!({
            "crv": okp.curve, "kty": "OKP", "x": okp.x,
        }),
        AlgorithmParameters::OctetKey(_) => return Err(DpopError::Malformed("symmetric jwk")),
    };
    Ok(sha256_b64(canonical.to_string().as_bytes()))
}

/// `url` as `htu` compares: scheme, host, port and path, without query, fragment or a
/// trailing `/`.
fn htu_form(url: &Url) -> String {
    format!(
        "{}{}",
        url.origin().ascii_serialization(),
        url.path().trim_end_matches('/')
    )
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

/// A proof that passed every check but the replay cache.
#[derive(Debug)]
pub(super) struct CheckedProof {
    /// The RFC 7638 thumbprint of its key.
    pub(super) jkt: String,
    jti: String,
}

/// Checks DPoP proofs for one resource server (see the [module](self) documentation).
pub(super) struct DpopVerifier {
    policy: DpopPolicy,
    algorithms: Vec<Algorithm>,
    seen: Mutex<Seen>,
    nonces: Mutex<Nonces>,
}

impl std::fmt::Debug for DpopVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopVerifier")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl DpopVerifier {
    /// A verifier accepting proofs signed with `algorithms` (asymmetric ones).
    pub(super) fn new(policy: DpopPolicy, algorithms: Vec<Algorithm>) -> DpopVerifier {
        DpopVerifier {
            policy,
            algorithms,
            seen: Mutex::default(),
            nonces: Mutex::new(Nonces {
                current: fresh_nonce(),
                previous: None,
                since: Instant::now(),
            }),
        }
    }

    /// The `algs` of the `DPoP` challenge (RFC 9449 §7.1).
    pub(super) fn algorithms(&self) -> Vec<String> {
        self.algorithms.iter().map(|a| format!("{a:?}")).collect()
    }

    /// The nonce to hand out now (rotated when its lifetime is over).
    pub(super) fn nonce(&self) -> String {
        let mut nonces = self.nonces.lock().unwrap_or_else(|e| e.into_inner());
        if nonces.since.elapsed() >= self.policy.nonce_lifetime {
            let next = fresh_nonce();
            nonces.previous = Some(std::mem::replace(&mut nonces.current, next));
            nonces.since = Instant::now();
        }
        nonces.current.clone()
    }

    fn nonce_valid(&self, nonce: Option<&str>) -> bool {
        let Some(nonce) = nonce else {
            return false;
        };
        // Rotates first if due, so that an old enough nonce is refused.
        let current = self.nonce();
        let nonces = self.nonces.lock().unwrap_or_else(|e| e.into_inner());
        nonce == current || nonces.previous.as_deref() == Some(nonce)
    }

    /// Checks `proof` for a `method` request to `url` presenting `access_token`; answers
    /// it with the key's thumbprint (to compare with the token's `cnf.jkt`), to
    /// [`accept`](Self::accept) once the token is accepted.
    pub(super) fn verify(
        &self,
        proof: &str,
        method: &str,
        url: &Url,
        access_token: &str,
    ) -> Result<CheckedProof, DpopError> {
        if proof.len() > MAX_PROOF_BYTES {
            return Err(DpopError::Malformed("too long"));
        }
        let header =
            jsonwebtoken::decode_header(proof).map_err(|_| DpopError::Malformed("header"))?;
        if header.typ.as_deref() != Some("dpop+jwt") {
            return Err(DpopError::Malformed("typ is not dpop+jwt"));
        }
        if !self.algorithms.contains(&header.alg) {
            return Err(DpopError::Algorithm);
        }
        let jwk = header.jwk.ok_or(DpopError::Malformed("no jwk"))?;
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| DpopError::Malformed("jwk"))?;
        let mut validation = Validation::new(header.alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_aud = false;
        let claims = jsonwebtoken::decode::<ProofClaims>(proof, &key, &validation)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature => DpopError::Signature,
                _ => DpopError::Malformed("claims"),
            })?
            .claims;
        if !claims.htm.eq_ignore_ascii_case(method) {
            return Err(DpopError::Method);
        }
        let htu = Url::parse(&claims.htu).map_err(|_| DpopError::Url)?;
        if htu_form(&htu) != htu_form(url) {
            return Err(DpopError::Url);
        }
        let window = i64::try_from(self.policy.proof_window.as_secs()).unwrap_or(i64::MAX);
        if claims.iat.saturating_sub(unix_now()).abs() > window {
            return Err(DpopError::Stale);
        }
        if claims.ath.as_deref() != Some(sha256_b64(access_token.as_bytes()).as_str()) {
            return Err(DpopError::TokenHash);
        }
        if claims.jti.is_empty() || claims.jti.len() > MAX_JTI_BYTES {
            return Err(DpopError::Malformed("jti"));
        }
        if self.policy.require_nonce && !self.nonce_valid(claims.nonce.as_deref()) {
            return Err(DpopError::UseNonce);
        }
        Ok(CheckedProof {
            jkt: thumbprint(&jwk)?,
            jti: claims.jti,
        })
    }

    /// Remembers a checked proof's `jti`, so that it passes only once: refuses it when
    /// seen before ([`DpopError::Replayed`]).
    pub(super) fn accept(&self, proof: &CheckedProof) -> Result<(), DpopError> {
        self.remember(&proof.jkt, &proof.jti)
    }

    /// Records `jti` (of the key `jkt`); refuses it when seen within its window.
    fn remember(&self, jkt: &str, jti: &str) -> Result<(), DpopError> {
        let key: [u8; 32] = Sha256::digest(format!("{jkt}\n{jti}").as_bytes()).into();
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        // Before making room: a full cache must not forget the very proof replayed.
        if seen.set.contains(&key) {
            return Err(DpopError::Replayed);
        }
        while let Some((until, old)) = seen.order.front().copied() {
            let full = seen.order.len() >= self.policy.replay_cache_size.max(1);
            if until > now && !full {
                break;
            }
            seen.order.pop_front();
            seen.set.remove(&old);
        }
        seen.set.insert(key);
        let until = now
            .checked_add(self.policy.proof_window.saturating_mul(2))
            .unwrap_or(now);
        seen.order.push_back((until, key));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier(size: usize, window: Duration) -> DpopVerifier {
        DpopVerifier::new(
            DpopPolicy {
                replay_cache_size: size,
                proof_window: window,
                ..DpopPolicy::default()
            },
            vec![Algorithm::ES256],
        )
    }

    #[test]
    fn the_replay_cache_refuses_repeats_and_stays_bounded() {
        let v = verifier(3, Duration::from_secs(60));
        assert_eq!(v.remember("k", "a"), Ok(()));
        assert_eq!(v.remember("k", "a"), Err(DpopError::Replayed));
        // Full: still refused, not pushed out to make room for itself.
        let one = verifier(1, Duration::from_secs(60));
        assert_eq!(one.remember("k", "a"), Ok(()));
        assert_eq!(one.remember("k", "a"), Err(DpopError::Replayed));
        // The same jti of another key is another proof.
        assert_eq!(v.remember("other", "a"), Ok(()));
        for jti in ["b", "c", "d", "e"] {
            assert_eq!(v.remember("k", jti), Ok(()));
        }
        let seen = v.seen.lock().expect("lock");
        assert!(seen.order.len() <= 3 && seen.set.len() == seen.order.len());
    }

    #[test]
    fn expired_entries_make_room_first() {
        let v = verifier(10, Duration::ZERO);
        for jti in ["a", "b", "c"] {
            assert_eq!(v.remember("k", jti), Ok(()));
        }
        // A zero window: each entry is already forgotten when the next comes.
        assert_eq!(v.seen.lock().expect("lock").order.len(), 1);
    }

    #[test]
    fn nonces_rotate_and_the_previous_one_still_passes() {
        let v = DpopVerifier::new(
            DpopPolicy {
                nonce_lifetime: Duration::ZERO,
                ..DpopPolicy::default()
            },
            vec![Algorithm::ES256],
        );
        let first = v.nonce();
        let second = v.nonce();
        assert_ne!(first, second);
        assert!(v.nonce_valid(Some(&v.nonce())));
        assert!(!v.nonce_valid(Some("made-up")));
        assert!(!v.nonce_valid(None));
    }

    #[test]
    fn htu_ignores_query_fragment_and_trailing_slash() {
        let a = Url::parse("https://h:8/mcp/?q=1#f").expect("url");
        let b = Url::parse("https://h:8/mcp").expect("url");
        assert_eq!(htu_form(&a), htu_form(&b));
        let c = Url::parse("https://h:9/mcp").expect("url");
        assert_ne!(htu_form(&b), htu_form(&c));
    }
}
