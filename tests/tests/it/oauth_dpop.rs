//! DPoP-bound access tokens at the OAuth resource server (RFC 9449), through
//! `Authenticator::authenticate_request` with tokens of a real issuer started in the
//! test (`cnf.jkt` the proof key's thumbprint) and proofs signed with keys made here:
//! a good proof, a replayed `jti`, a wrong `htu` or `htm`, a stale `iat`, a wrong `ath`,
//! another key, a missing proof for a bound token, the nonce dance, and a server that
//! requires DPoP. A proof made by the client library (`DpopKey`) passes too. A proof
//! whose token is refused is not remembered: it cannot push real proofs out of the
//! replay cache.

use axum::http::{HeaderMap, HeaderValue, Method, Uri, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_tasks_client::auth::DpopKey;
use mcp_tasks_server::auth::{
    Authenticator, DpopPolicy, Identity, OAuthConfig, OAuthResourceServer, Refusal,
};
use mcp_tests::issuer::{TestIssuer, now};
use ring::signature::{self, KeyPair};
use serde_json::{Value, json};
use sha2::Digest;

const RESOURCE: &str = "http://127.0.0.1:9/mcp";

/// A DPoP key of the test: signs proofs with any claims.
struct Prover {
    encoding: EncodingKey,
    jwk: jsonwebtoken::jwk::Jwk,
    jkt: String,
}

impl Prover {
    fn new() -> Prover {
        let rng = ring::rand::SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("P-256 key");
        let pair = signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).expect("key");
        let point = pair.public_key().as_ref();
        let (x, y) = (
            URL_SAFE_NO_PAD.encode(&point[1..33]),
            URL_SAFE_NO_PAD.encode(&point[33..]),
        );
        // RFC 7638: the required members, sorted, no whitespace.
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let jkt = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical.as_bytes()));
        let jwk = serde_json::from_value(json!({ "kty": "EC", "crv": "P-256", "x": x, "y": y }))
            .expect("a JWK");
        Prover {
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk,
            jkt,
        }
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("signed")
    }

    /// A proof for `htm` `htu` and `token`, fresh `jti`, `iat` now, `extra` merged in.
    fn proof(&self, htm: &str, htu: &str, token: &str, extra: Value) -> String {
        let mut claims = json!({
            "jti": uuid(),
            "htm": htm,
            "htu": htu,
            "iat": now(),
            "ath": URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(token.as_bytes())),
        });
        if let (Some(c), Some(e)) = (claims.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        self.sign(&claims)
    }
}

fn uuid() -> String {
    let mut bytes = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).expect("random");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A token of `issuer` for `sub`, bound to `jkt` when given.
fn token(issuer: &TestIssuer, jkt: Option<&str>) -> String {
    let mut claims = issuer.claims("agent-7", RESOURCE, &["mcp"]);
    if let Some(jkt) = jkt {
        claims["cnf"] = json!({ "jkt": jkt });
    }
    issuer.key.sign(&claims)
}

fn server(issuer: &TestIssuer, dpop: DpopPolicy) -> OAuthResourceServer {
    OAuthResourceServer::new(OAuthConfig {
        dpop,
        ..OAuthConfig::new(issuer.issuer.clone(), RESOURCE)
    })
    .expect("valid")
}

fn headers(authorization: &str, proofs: &[&str]) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(authorization).expect("header"),
    );
    for p in proofs {
        h.append("dpop", HeaderValue::from_str(p).expect("header"));
    }
    h
}

async fn call(
    server: &OAuthResourceServer,
    method: Method,
    headers: &HeaderMap,
) -> Result<Option<Identity>, Refusal> {
    let uri: Uri = "/mcp".parse().expect("uri");
    server.authenticate_request(&method, &uri, headers).await
}

/// The refusal's challenge, asserting a 401 with a `DPoP` challenge naming `error`.
fn refused(answer: Result<Option<Identity>, Refusal>, error: &str) -> Refusal {
    let refusal = answer.expect_err("refused");
    assert_eq!(refusal.status, axum::http::StatusCode::UNAUTHORIZED);
    let challenge = refusal.www_authenticate.clone().unwrap_or_default();
    assert!(challenge.starts_with("DPoP "), "{challenge}");
    assert!(
        challenge.contains(&format!("error=\"{error}\"")),
        "{challenge}"
    );
    refusal
}

#[tokio::test]
async fn a_good_proof_passes_once_and_each_wrong_one_is_refused() {
    let issuer = TestIssuer::start().await;
    let rs = server(&issuer, DpopPolicy::default());
    let key = Prover::new();
    let bound = token(&issuer, Some(&key.jkt));
    let auth = format!("DPoP {bound}");

    let good = key.proof("POST", RESOURCE, &bound, json!({}));
    let identity = call(&rs, Method::POST, &headers(&auth, &[&good]))
        .await
        .expect("a good proof passes")
        .expect("an identity");
    assert_eq!(identity.principal, format!("{}#agent-7", issuer.issuer));
    // The same proof again: a replay.
    let again = refused(
        call(&rs, Method::POST, &headers(&auth, &[&good])).await,
        "invalid_dpop_proof",
    );
    assert!(again.message.contains("used before"), "{}", again.message);

    let cases = [
        (
            "htu",
            key.proof("POST", "http://127.0.0.1:9/other", &bound, json!({})),
        ),
        ("htm", key.proof("GET", RESOURCE, &bound, json!({}))),
        (
            "iat",
            key.proof("POST", RESOURCE, &bound, json!({ "iat": now() - 600 })),
        ),
        (
            "iat",
            key.proof("POST", RESOURCE, &bound, json!({ "iat": now() + 600 })),
        ),
        (
            "ath",
            key.proof("POST", RESOURCE, "another-token", json!({})),
        ),
        (
            "bound to",
            Prover::new().proof("POST", RESOURCE, &bound, json!({})),
        ),
    ];
    for (what, proof) in cases {
        let refusal = refused(
            call(&rs, Method::POST, &headers(&auth, &[&proof])).await,
            "invalid_dpop_proof",
        );
        assert!(
            refusal.message.contains(what),
            "{what}: {}",
            refusal.message
        );
    }
    // A query string is not part of htu; the method must match the request's.
    let with_query = key.proof("POST", &format!("{RESOURCE}?x=1"), &bound, json!({}));
    assert!(
        call(&rs, Method::POST, &headers(&auth, &[&with_query]))
            .await
            .is_ok()
    );
    let get = key.proof("GET", RESOURCE, &bound, json!({}));
    assert!(
        call(&rs, Method::GET, &headers(&auth, &[&get]))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_bound_token_without_its_proof_is_refused() {
    let issuer = TestIssuer::start().await;
    let rs = server(&issuer, DpopPolicy::default());
    let key = Prover::new();
    let bound = token(&issuer, Some(&key.jkt));
    // As a bearer token.
    refused(
        call(&rs, Method::POST, &headers(&format!("Bearer {bound}"), &[])).await,
        "invalid_token",
    );
    // With the DPoP scheme and no proof, or two.
    let auth = format!("DPoP {bound}");
    refused(
        call(&rs, Method::POST, &headers(&auth, &[])).await,
        "invalid_dpop_proof",
    );
    let (a, b) = (
        key.proof("POST", RESOURCE, &bound, json!({})),
        key.proof("POST", RESOURCE, &bound, json!({})),
    );
    refused(
        call(&rs, Method::POST, &headers(&auth, &[&a, &b])).await,
        "invalid_dpop_proof",
    );
    // A transport that does not pass the request cannot have a proof checked.
    refused(
        rs.authenticate(&headers(&auth, &[&a])).await,
        "invalid_dpop_proof",
    );
    // A proof not signed by its jwk, or with a private key in it.
    let forged = {
        let mut parts: Vec<String> = a.split('.').map(str::to_owned).collect();
        parts[2] = URL_SAFE_NO_PAD.encode([7u8; 64]);
        parts.join(".")
    };
    refused(
        call(&rs, Method::POST, &headers(&auth, &[&forged])).await,
        "invalid_dpop_proof",
    );
    // An unbound token stays a bearer token, and is no DPoP token.
    let plain = token(&issuer, None);
    assert!(
        call(&rs, Method::POST, &headers(&format!("Bearer {plain}"), &[]))
            .await
            .is_ok()
    );
    let proof = key.proof("POST", RESOURCE, &plain, json!({}));
    refused(
        call(
            &rs,
            Method::POST,
            &headers(&format!("DPoP {plain}"), &[&proof]),
        )
        .await,
        "invalid_token",
    );
}

#[tokio::test]
async fn the_nonce_dance() {
    let issuer = TestIssuer::start().await;
    let rs = server(
        &issuer,
        DpopPolicy {
            require_nonce: true,
            ..DpopPolicy::default()
        },
    );
    let key = Prover::new();
    let bound = token(&issuer, Some(&key.jkt));
    let auth = format!("DPoP {bound}");
    let first = key.proof("POST", RESOURCE, &bound, json!({}));
    let refusal = refused(
        call(&rs, Method::POST, &headers(&auth, &[&first])).await,
        "use_dpop_nonce",
    );
    let nonce = refusal.dpop_nonce.expect("a DPoP-Nonce");
    let wrong = key.proof("POST", RESOURCE, &bound, json!({ "nonce": "made-up" }));
    let again = refused(
        call(&rs, Method::POST, &headers(&auth, &[&wrong])).await,
        "use_dpop_nonce",
    );
    assert_eq!(again.dpop_nonce.as_deref(), Some(nonce.as_str()));
    let with_nonce = key.proof("POST", RESOURCE, &bound, json!({ "nonce": nonce }));
    assert!(
        call(&rs, Method::POST, &headers(&auth, &[&with_nonce]))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_server_requiring_dpop_refuses_bearer_tokens_and_takes_the_clients_proofs() {
    let issuer = TestIssuer::start().await;
    let rs = server(
        &issuer,
        DpopPolicy {
            required: true,
            ..DpopPolicy::default()
        },
    );
    let plain = token(&issuer, None);
    refused(
        call(&rs, Method::POST, &headers(&format!("Bearer {plain}"), &[])).await,
        "invalid_token",
    );
    // No credentials: a DPoP challenge, naming the algorithms.
    let none = rs
        .authenticate_request(
            &Method::POST,
            &"/mcp".parse().expect("uri"),
            &HeaderMap::new(),
        )
        .await;
    let challenge = none.expect_err("401").www_authenticate.unwrap_or_default();
    assert!(
        challenge.starts_with("DPoP algs=\"") && challenge.contains("ES256"),
        "{challenge}"
    );
    // The client library's key and proofs.
    let key = DpopKey::generate().expect("key");
    let bound = token(&issuer, Some(key.thumbprint()));
    let proof = key.proof("POST", RESOURCE, Some(&bound)).expect("proof");
    assert!(
        call(
            &rs,
            Method::POST,
            &headers(&format!("DPoP {bound}"), &[&proof])
        )
        .await
        .is_ok()
    );
}

#[tokio::test]
async fn proofs_with_tokens_refused_do_not_fill_the_replay_cache() {
    let issuer = TestIssuer::start().await;
    // Room for one jti: any proof remembered pushes the previous one out.
    let rs = server(
        &issuer,
        DpopPolicy {
            replay_cache_size: 1,
            ..DpopPolicy::default()
        },
    );
    let key = Prover::new();
    let bound = token(&issuer, Some(&key.jkt));
    let auth = format!("DPoP {bound}");
    let good = key.proof("POST", RESOURCE, &bound, json!({}));
    assert!(
        call(&rs, Method::POST, &headers(&auth, &[&good]))
            .await
            .is_ok()
    );
    // Well-formed proofs, each with a token the server refuses (expired, or bound to
    // another key): refused, and not remembered.
    let mut expired = issuer.claims("agent-7", RESOURCE, &["mcp"]);
    expired["cnf"] = json!({ "jkt": key.jkt });
    expired["exp"] = json!(now() - 600);
    let expired = issuer.key.sign(&expired);
    let other = token(&issuer, Some(&Prover::new().jkt));
    for junk in [expired, other] {
        let proof = key.proof("POST", RESOURCE, &junk, json!({}));
        assert!(
            call(
                &rs,
                Method::POST,
                &headers(&format!("DPoP {junk}"), &[&proof])
            )
            .await
            .is_err()
        );
    }
    // So the good proof is still known: its replay is refused.
    let again = refused(
        call(&rs, Method::POST, &headers(&auth, &[&good])).await,
        "invalid_dpop_proof",
    );
    assert!(again.message.contains("used before"), "{}", again.message);
}
