//! The resource server's view of its authorization server's keys, against a real issuer
//! in the test: discovery (RFC 8414 and OpenID, with an issuer path; a metadata document
//! naming another issuer is refused), fetches made once for concurrent requests, an
//! unknown `kid` fetched again at most once per interval, rotation, and a JWKS endpoint
//! that is down or an authorization server out of reach (503 for what cannot be checked,
//! naming no URL and no error, the server serving everything else).

use std::time::Duration;

use mcp_tests::issuer::{
    Discovery, IssuerOptions, Protected, SigningKey, TestIssuer, assert_unavailable, protect,
    unreachable_origin,
};
use mcp_tests::server_harness::{Reply, call_params, request};
use serde_json::json;

/// Short enough for a test to wait past it.
const INTERVAL: Duration = Duration::from_millis(300);

async fn greet(p: &Protected, token: &str) -> Reply {
    let auth = format!("Bearer {token}");
    p.server
        .post(
            &request(
                p.server.id(),
                "tools/call",
                call_params("greet", json!({"name": "k"}), false),
            ),
            &[("authorization", &auth)],
        )
        .await
}

fn challenge(reply: &Reply) -> String {
    reply
        .headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

#[tokio::test]
async fn concurrent_first_requests_fetch_the_keys_once() {
    let issuer = TestIssuer::start().await;
    let p = protect(&issuer, |_| {}).await;
    let token = issuer.token("alice", &p.resource, &[]);
    let replies = futures::future::join_all((0..8).map(|_| greet(&p, &token))).await;
    for reply in replies {
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    assert_eq!(issuer.jwks_fetches(), 1);
}

#[tokio::test]
async fn an_unknown_kid_is_fetched_again_at_most_once_per_interval() {
    let issuer = TestIssuer::start().await;
    let p = protect(&issuer, |c| c.jwks_refetch_interval = INTERVAL).await;
    assert_eq!(
        greet(&p, &issuer.token("alice", &p.resource, &[]))
            .await
            .status,
        200
    );
    assert_eq!(issuer.jwks_fetches(), 1);
    tokio::time::sleep(INTERVAL + Duration::from_millis(100)).await;
    let stranger = SigningKey::es256("stranger");
    let forged = stranger.sign(&issuer.claims("mallory", &p.resource, &[]));
    let replies = futures::future::join_all((0..6).map(|_| greet(&p, &forged))).await;
    for reply in &replies {
        assert_eq!(reply.status, 401, "{}", reply.text);
        assert!(
            challenge(reply).contains("error=\"invalid_token\""),
            "{}",
            challenge(reply)
        );
    }
    // One fetch for all six, and none more within the interval.
    assert_eq!(issuer.jwks_fetches(), 2);
    assert_eq!(greet(&p, &forged).await.status, 401);
    assert_eq!(issuer.jwks_fetches(), 2);
    // The known key still works without a fetch.
    assert_eq!(
        greet(&p, &issuer.token("alice", &p.resource, &[]))
            .await
            .status,
        200
    );
    assert_eq!(issuer.jwks_fetches(), 2);
}

#[tokio::test]
async fn rotated_keys_are_picked_up_and_dropped_ones_refused() {
    let issuer = TestIssuer::start().await;
    let p = protect(&issuer, |c| c.jwks_refetch_interval = INTERVAL).await;
    let old = issuer.token("alice", &p.resource, &[]);
    assert_eq!(greet(&p, &old).await.status, 200);
    let next = SigningKey::es256("key-2");
    issuer.publish(vec![next.clone()]);
    let new = next.sign(&issuer.claims("alice", &p.resource, &[]));
    // Within the interval the new key is not fetched yet.
    assert_eq!(greet(&p, &new).await.status, 401);
    tokio::time::sleep(INTERVAL + Duration::from_millis(100)).await;
    assert_eq!(
        greet(&p, &new).await.status,
        200,
        "the rotated key is fetched"
    );
    // The old key left the set: its tokens no longer pass.
    let reply = greet(&p, &old).await;
    assert_eq!(reply.status, 401, "{}", reply.text);
}

#[tokio::test]
async fn a_jwks_that_is_down_is_503_for_unknown_keys_only() {
    let issuer = TestIssuer::start().await;
    let p = protect(&issuer, |c| c.jwks_refetch_interval = INTERVAL).await;
    let cached = issuer.token("alice", &p.resource, &[]);
    assert_eq!(greet(&p, &cached).await.status, 200);
    let next = SigningKey::es256("key-2");
    issuer.publish(vec![issuer.key.clone(), next.clone()]);
    issuer.set_jwks_down(true);
    tokio::time::sleep(INTERVAL + Duration::from_millis(100)).await;
    let new = next.sign(&issuer.claims("bob", &p.resource, &[]));
    let reply = greet(&p, &new).await;
    assert_unavailable(
        &reply,
        "keys are",
        1,
        &[&issuer.origin, "/jwks", "HTTP 503"],
    );
    // A token whose key is cached still passes; the server serves on.
    assert_eq!(greet(&p, &cached).await.status, 200);
    // Back up: after the interval the new key is fetched.
    issuer.set_jwks_down(false);
    tokio::time::sleep(INTERVAL + Duration::from_millis(100)).await;
    assert_eq!(greet(&p, &new).await.status, 200);
}

#[tokio::test]
async fn openid_discovery_under_an_issuer_path() {
    let issuer = TestIssuer::start_with(IssuerOptions {
        path: "/realms/test".into(),
        discovery: Discovery::OpenId,
        ..IssuerOptions::default()
    })
    .await;
    assert!(issuer.issuer.ends_with("/realms/test"));
    let p = protect(&issuer, |_| {}).await;
    let reply = greet(&p, &issuer.token("alice", &p.resource, &[])).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_refused() {
    let issuer = TestIssuer::start_with(IssuerOptions {
        claimed_issuer: Some("https://evil.example".into()),
        ..IssuerOptions::default()
    })
    .await;
    let p = protect(&issuer, |_| {}).await;
    let reply = greet(&p, &issuer.token("alice", &p.resource, &[])).await;
    // Why is for the operator's log, not for the caller.
    assert_unavailable(
        &reply,
        "keys are",
        60,
        &["evil.example", &issuer.origin, ".well-known"],
    );
    assert_eq!(issuer.jwks_fetches(), 0, "its keys were never fetched");
}

/// An authorization server that cannot be reached at all: the caller is told the keys are
/// out of reach, not where they were looked for nor the network error.
#[tokio::test]
async fn an_unreachable_authorization_server_is_503_naming_no_url_nor_error() {
    let issuer = TestIssuer::start().await;
    let dead = unreachable_origin();
    let p = protect(&issuer, |c| c.issuer = dead.clone()).await;
    let reply = greet(&p, &issuer.token("alice", &p.resource, &[])).await;
    let port = format!(":{}", dead.rsplit(':').next().expect("a port"));
    assert_unavailable(
        &reply,
        "keys are",
        60,
        &[
            &dead,
            &port,
            ".well-known",
            "error sending request",
            "refused",
            "os error",
        ],
    );
    // Nor with the JWKS named directly.
    let p = protect(&issuer, |c| c.jwks_uri = Some(format!("{dead}/keys.json"))).await;
    let reply = greet(&p, &issuer.token("alice", &p.resource, &[])).await;
    assert_unavailable(
        &reply,
        "keys are",
        60,
        &[
            &dead,
            &port,
            "keys.json",
            "error sending request",
            "refused",
        ],
    );
}

/// The JWKS down from the start (the keys were never fetched): a token is 503 with
/// `Retry-After` and a message saying why and what to do, on 2026-07-28 and on a
/// 2025-11-25 `initialize` alike; what needs no key goes on: the metadata is served, and
/// a request without a token is told (401) where to get one.
#[tokio::test]
async fn a_jwks_down_at_the_first_fetch_is_503_and_the_metadata_is_served() {
    let issuer = TestIssuer::start().await;
    issuer.set_jwks_down(true);
    let p = protect(&issuer, |c| c.jwks_refetch_interval = INTERVAL).await;
    let token = issuer.token("alice", &p.resource, &[]);
    let auth = format!("Bearer {token}");
    let initialize = request(
        p.server.id(),
        "initialize",
        mcp_tests::legacy::init_params(),
    );
    let legacy = p
        .server
        .post(&initialize, &[("authorization", &auth)])
        .await;
    for (what, reply) in [
        ("tools/call", greet(&p, &token).await),
        ("initialize", legacy),
    ] {
        assert!(reply.headers.get("mcp-session-id").is_none(), "{what}");
        // What is out of reach and when to retry; not where, nor what it answered.
        assert_unavailable(
            &reply,
            "keys are",
            1,
            &[&issuer.origin, "/jwks", "HTTP 503"],
        );
    }
    assert!(issuer.jwks_fetches() >= 1);
    assert!(p.store.is_empty());
    // The metadata needs no key.
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(mcp_tests::server_harness::WAIT)
        .build()
        .expect("client");
    let doc: serde_json::Value = http
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            p.origin
        ))
        .send()
        .await
        .expect("GET metadata")
        .json()
        .await
        .expect("JSON");
    assert_eq!(doc["resource"], p.resource, "{doc}");
    // Nor does telling a caller without a token where to get one.
    let anonymous = p.server.call("greet", json!({"name": "k"}), false).await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.text);
    assert!(challenge(&anonymous).contains("resource_metadata="));
    // Back up: the same token passes after the interval.
    issuer.set_jwks_down(false);
    tokio::time::sleep(INTERVAL + Duration::from_millis(100)).await;
    assert_eq!(greet(&p, &token).await.status, 200);
}
