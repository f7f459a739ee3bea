//! The signed JWTs the token endpoint checks: DPoP proofs (RFC 9449 §4.3) and
//! `private_key_jwt` client assertions (RFC 7523 §3), each signed with an asymmetric
//! key, each `jti` accepted once.

use std::collections::HashSet;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};
use sha2::Digest;

use crate::issuer::now;

/// How far a proof's `iat` may be from now, either way.
const PROOF_WINDOW_SECS: i64 = 60;
/// The algorithms accepted for proofs and assertions.
pub(super) const ALGORITHMS: [&str; 2] = ["ES256", "EdDSA"];

/// The `jti`s of the proofs and assertions accepted so far, per kind.
#[derive(Debug, Default)]
pub(super) struct Seen {
    proofs: HashSet<String>,
    assertions: HashSet<String>,
}

/// The JSON of the JWT `token`'s segment `index` (0: header, 1: claims).
fn segment(token: &str, index: usize) -> Option<Value> {
    let part = token.split('.').nth(index)?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).ok()?).ok()
}

fn algorithm(header: &Value) -> Result<Algorithm, &'static str> {
    let alg = header["alg"].as_str().unwrap_or_default();
    if !ALGORITHMS.contains(&alg) {
        return Err("algorithm not accepted");
    }
    alg.parse().map_err(|_| "algorithm not accepted")
}

/// `token`'s claims, its signature checked with `jwk` (`exp` when `needs_exp`).
fn verified(token: &str, jwk: &Value, alg: Algorithm, needs_exp: bool) -> Result<Value, String> {
    let jwk: jsonwebtoken::jwk::Jwk =
        serde_json::from_value(jwk.clone()).map_err(|e| format!("jwk: {e}"))?;
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("jwk: {e}"))?;
    let mut validation = Validation::new(alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = needs_exp;
    if needs_exp {
        validation.required_spec_claims.insert("exp".into());
    }
    validation.validate_aud = false;
    jsonwebtoken::decode::<Value>(token, &key, &validation)
        .map(|d| d.claims)
        .map_err(|e| format!("signature or claims: {e}"))
}

/// The RFC 7638 thumbprint of a public JWK (its required members, sorted).
pub(super) fn thumbprint(jwk: &Value) -> Result<String, &'static str> {
    let canonical = match jwk["kty"].as_str() {
        Some("EC") => json!({ "crv": jwk["crv"], "kty": "EC", "x": jwk["x"], "y": jwk["y"] }),
        Some("OKP") => json!({ "crv": jwk["crv"], "kty": "OKP", "x": jwk["x"] }),
        _ => return Err("jwk kty"),
    };
    Ok(URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical.to_string().as_bytes())))
}

/// Why a DPoP proof was refused.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ProofError {
    /// Not a valid proof for this request: `invalid_dpop_proof`.
    Invalid(String),
    /// Valid but without the current nonce: `use_dpop_nonce`.
    UseNonce,
}

impl Seen {
    /// Checks the DPoP `proof` of a POST to `token_endpoint` (with `nonce` when one is
    /// required); answers the key's thumbprint.
    pub(super) fn dpop_proof(
        &mut self,
        proof: &str,
        token_endpoint: &str,
        nonce: Option<&str>,
    ) -> Result<String, ProofError> {
        let invalid = |why: &str| ProofError::Invalid(why.to_owned());
        let header = segment(proof, 0).ok_or_else(|| invalid("header"))?;
        if header["typ"] != "dpop+jwt" {
            return Err(invalid("typ"));
        }
        let alg = algorithm(&header).map_err(invalid)?;
        let jwk = &header["jwk"];
        if !jwk.is_object() || jwk.get("d").is_some() {
            return Err(invalid("jwk"));
        }
        let claims = verified(proof, jwk, alg, false).map_err(|e| invalid(&e))?;
        if claims["htm"] != "POST" {
            return Err(invalid("htm"));
        }
        if claims["htu"].as_str().map(|u| u.trim_end_matches('/')) != Some(token_endpoint) {
            return Err(invalid("htu"));
        }
        let iat = claims["iat"].as_i64().ok_or_else(|| invalid("iat"))?;
        if (iat - now()).abs() > PROOF_WINDOW_SECS {
            return Err(invalid("iat"));
        }
        let jti = claims["jti"].as_str().unwrap_or_default();
        if jti.is_empty() {
            return Err(invalid("jti"));
        }
        if let Some(nonce) = nonce
            && claims["nonce"].as_str() != Some(nonce)
        {
            return Err(ProofError::UseNonce);
        }
        let jkt = thumbprint(jwk).map_err(invalid)?;
        if !self.proofs.insert(format!("{jkt} {jti}")) {
            return Err(invalid("jti used before"));
        }
        Ok(jkt)
    }

    /// Checks a `private_key_jwt` client `assertion` (RFC 7523 §3) against the public
    /// keys of the clients registered with one; answers the client id. `form_client_id`:
    /// the `client_id` of the form, if sent, which must be the assertion's.
    pub(super) fn client_assertion(
        &mut self,
        assertion: &str,
        form_client_id: &str,
        key_of: impl Fn(&str) -> Option<Value>,
        audiences: &[&str],
    ) -> Result<String, String> {
        let header = segment(assertion, 0).ok_or("header")?;
        let unverified = segment(assertion, 1).ok_or("claims")?;
        let client_id = unverified["sub"].as_str().ok_or("sub")?.to_owned();
        let key = key_of(&client_id).ok_or("no key registered for the client")?;
        let claims = verified(assertion, &key, algorithm(&header)?, true)?;
        if claims["iss"] != client_id.as_str() {
            return Err("iss is not the client".into());
        }
        if !form_client_id.is_empty() && form_client_id != client_id {
            return Err("client_id is not the assertion's".into());
        }
        let aud_ok = match &claims["aud"] {
            Value::String(a) => audiences.contains(&a.as_str()),
            Value::Array(all) => all
                .iter()
                .any(|a| a.as_str().is_some_and(|a| audiences.contains(&a))),
            _ => false,
        };
        if !aud_ok {
            return Err("aud".into());
        }
        let jti = claims["jti"].as_str().ok_or("jti")?;
        if !self.assertions.insert(format!("{client_id} {jti}")) {
            return Err("jti used before".into());
        }
        Ok(client_id)
    }
}
