//! Opaque access tokens checked by RFC 7662 introspection, against the test issuer's
//! introspection endpoint (`mcp_tests::issuer`, `client_secret_basic`): an active token
//! passes as its subject with its scopes; inactive, for another resource, of another
//! issuer or expired, it is 401 `invalid_token`; outcomes are kept (one introspection for
//! two requests) until the configured maximum or the token's `exp`, refusals apart, so
//! that made-up tokens never push a valid one out; an endpoint that is down, unreachable,
//! or refuses the resource server's credentials, is 503, which names neither the
//! endpoint nor the error; JWTs are still checked with the keys, never introspected.

use std::time::Duration;

use mcp_tasks_server::auth::IntrospectionClient;
use mcp_tests::issuer::{
    ADMIN_SCOPE, IssuerOptions, Protected, TestIssuer, assert_unavailable, now, protect,
    unreachable_origin,
};
use mcp_tests::legacy::init_params;
use mcp_tests::server_harness::{Reply, WAIT, call_params, request};
use serde_json::{Value, json};

const SCOPE: &str = "mcp";
const CLIENT_ID: &str = "mcp-resource";
/// With characters that client_secret_basic form-urlencodes.
const CLIENT_SECRET: &str = "s3cr:t/+ %é";

async fn issuer() -> TestIssuer {
    TestIssuer::start_with(IssuerOptions {
        introspection_client: Some((CLIENT_ID.into(), CLIENT_SECRET.into())),
        ..IssuerOptions::default()
    })
    .await
}

/// A server requiring [`SCOPE`], introspecting as `secret`'s client, outcomes kept at
/// most `cache_max`, with `leeway`.
async fn server(
    issuer: &TestIssuer,
    secret: &str,
    cache_max: Duration,
    leeway: Duration,
) -> Protected {
    let secret = secret.to_owned();
    protect(issuer, move |c| {
        c.required_scopes = vec![SCOPE.into()];
        c.introspection = Some(IntrospectionClient::new(CLIENT_ID, secret));
        c.introspection_cache_max = cache_max;
        c.leeway = leeway;
    })
    .await
}

/// [`server`] with the right secret, outcomes kept 60 s, the default leeway.
async fn standard_server(issuer: &TestIssuer) -> Protected {
    server(
        issuer,
        CLIENT_SECRET,
        Duration::from_secs(60),
        Duration::from_secs(60),
    )
    .await
}

async fn call(p: &Protected, tool: &str, token: &str) -> Reply {
    p.server
        .post(
            &request(
                p.server.id(),
                "tools/call",
                call_params(tool, json!({"name": "i"}), false),
            ),
            &[("authorization", &format!("Bearer {token}"))],
        )
        .await
}

fn challenge(reply: &Reply) -> &str {
    reply
        .headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn an_active_opaque_token_passes_as_its_subject_with_its_scopes() {
    let issuer = issuer().await;
    let p = standard_server(&issuer).await;
    let token = issuer.opaque_token(issuer.introspection_answer(
        "olga",
        &p.resource,
        &[SCOPE, ADMIN_SCOPE],
    ));
    let reply = call(&p, "whoami", &token).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let text = reply.result()["content"][0]["text"].as_str().expect("text");
    let seen: Value = serde_json::from_str(text).expect("JSON");
    assert_eq!(seen["principal"], format!("{}#olga", issuer.issuer));
    assert_eq!(seen["scopes"], json!([ADMIN_SCOPE, SCOPE]));
    // Without `iss` in the answer the principal is the configured issuer's all the same.
    let mut answer = issuer.introspection_answer("olga", &p.resource, &[SCOPE]);
    answer.as_object_mut().expect("object").remove("iss");
    let reply = call(&p, "greet", &issuer.opaque_token(answer)).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    // A 2025-11-25 session opens with one too.
    let other = issuer.opaque_token(issuer.introspection_answer("olga", &p.resource, &[SCOPE]));
    let init = p
        .server
        .post(
            &request(p.server.id(), "initialize", init_params()),
            &[("authorization", &format!("Bearer {other}"))],
        )
        .await;
    assert_eq!(init.status, 200, "{}", init.text);
    assert!(init.headers.get("mcp-session-id").is_some());
    // A scope the answer does not grant is 403, as for a JWT.
    let unscoped = issuer.opaque_token(issuer.introspection_answer("olga", &p.resource, &[]));
    assert_eq!(call(&p, "greet", &unscoped).await.status, 403);
    // JWTs are still checked with the keys, not introspected.
    let before = issuer.introspections();
    let jwt = issuer.token("jay", &p.resource, &[SCOPE]);
    assert_eq!(call(&p, "greet", &jwt).await.status, 200);
    assert_eq!(issuer.introspections(), before);
}

#[tokio::test]
async fn inactive_or_foreign_opaque_tokens_are_401_invalid_token() {
    let issuer = issuer().await;
    let p = standard_server(&issuer).await;
    let answer = |edit: &dyn Fn(&mut Value)| {
        let mut a = issuer.introspection_answer("mallory", &p.resource, &[SCOPE]);
        edit(&mut a);
        a
    };
    let rows = [
        (
            "never issued",
            "opaque-made-up-0123456789".to_owned(),
            "the token is not active",
        ),
        (
            "inactive",
            issuer.opaque_token(json!({"active": false})),
            "the token is not active",
        ),
        (
            "wrong audience",
            issuer.opaque_token(answer(&|a| a["aud"] = "http://127.0.0.1:1/mcp".into())),
            "meant for another resource",
        ),
        (
            "no audience",
            issuer.opaque_token(answer(&|a| {
                a.as_object_mut().expect("object").remove("aud");
            })),
            "lacks the \"aud\" claim",
        ),
        (
            "wrong issuer",
            issuer.opaque_token(answer(&|a| a["iss"] = "http://127.0.0.1:1".into())),
            "another issuer",
        ),
        (
            "expired beyond the leeway",
            issuer.opaque_token(answer(&|a| a["exp"] = (now() - 120).into())),
            "the token has expired",
        ),
        (
            "no subject",
            issuer.opaque_token(answer(&|a| {
                a.as_object_mut().expect("object").remove("sub");
            })),
            "lacks the \"sub\" claim",
        ),
    ];
    for (what, token, reason) in &rows {
        let reply = call(&p, "greet", token).await;
        assert_eq!(reply.status, 401, "{what}: {}", reply.text);
        assert!(
            reply.error_message().contains(reason),
            "{what}: {}",
            reply.text
        );
        assert!(
            challenge(&reply).starts_with("Bearer error=\"invalid_token\""),
            "{what}: {}",
            challenge(&reply)
        );
    }
    assert_eq!(issuer.introspections(), rows.len());
    assert!(p.store.is_empty());
}

#[tokio::test]
async fn outcomes_are_kept_until_the_maximum_or_the_tokens_expiry() {
    let issuer = issuer().await;
    let max = Duration::from_secs(1);
    let p = server(&issuer, CLIENT_SECRET, max, Duration::ZERO).await;
    let token = issuer.opaque_token(issuer.introspection_answer("olga", &p.resource, &[SCOPE]));
    assert_eq!(call(&p, "greet", &token).await.status, 200);
    assert_eq!(call(&p, "greet", &token).await.status, 200);
    assert_eq!(
        issuer.introspections(),
        1,
        "the second request used the kept outcome"
    );
    // A refusal is kept as well.
    let made_up = "opaque-made-up-abcdef";
    assert_eq!(call(&p, "greet", made_up).await.status, 401);
    assert_eq!(call(&p, "greet", made_up).await.status, 401);
    assert_eq!(issuer.introspections(), 2);
    // Past the maximum the endpoint is asked again.
    tokio::time::sleep(max + Duration::from_millis(100)).await;
    assert_eq!(call(&p, "greet", &token).await.status, 200);
    assert_eq!(issuer.introspections(), 3);

    // A token expiring before the maximum is kept no longer than its exp.
    let p = server(
        &issuer,
        CLIENT_SECRET,
        Duration::from_secs(60),
        Duration::ZERO,
    )
    .await;
    let mut answer = issuer.introspection_answer("olga", &p.resource, &[SCOPE]);
    answer["exp"] = (now() + 2).into();
    let short = issuer.opaque_token(answer);
    let before = issuer.introspections();
    assert_eq!(call(&p, "greet", &short).await.status, 200);
    assert_eq!(call(&p, "greet", &short).await.status, 200);
    assert_eq!(issuer.introspections(), before + 1);
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let reply = call(&p, "greet", &short).await;
    assert_eq!(reply.status, 401, "{}", reply.text);
    assert!(reply.error_message().contains("expired"), "{}", reply.text);
    assert_eq!(
        issuer.introspections(),
        before + 2,
        "asked again after its exp"
    );
}

#[tokio::test]
async fn an_introspection_endpoint_that_cannot_be_asked_is_503() {
    let issuer = issuer().await;
    let p = standard_server(&issuer).await;
    let token = issuer.opaque_token(issuer.introspection_answer("olga", &p.resource, &[SCOPE]));
    issuer.set_introspection_down(true);
    for _ in 0..2 {
        let reply = call(&p, "greet", &token).await;
        // The default refetch interval, in the header and the message alike; neither the
        // endpoint nor what it answered.
        assert_unavailable(
            &reply,
            "introspection endpoint is",
            60,
            &[&issuer.origin, "/introspect", "HTTP 503"],
        );
    }
    assert_eq!(issuer.introspections(), 2, "a 503 is not kept");
    // The metadata is served meanwhile.
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .expect("client");
    let meta = http
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            p.origin
        ))
        .send()
        .await
        .expect("GET metadata");
    assert_eq!(meta.status(), 200);
    issuer.set_introspection_down(false);
    assert_eq!(call(&p, "greet", &token).await.status, 200);

    // Credentials the authorization server refuses: nothing is known of the token.
    let wrong = server(
        &issuer,
        "not-the-secret",
        Duration::from_secs(60),
        Duration::from_secs(60),
    )
    .await;
    let reply = call(&wrong, "greet", &token).await;
    assert_unavailable(
        &reply,
        "introspection endpoint is",
        60,
        &[&issuer.origin, "/introspect", "HTTP 401", "invalid_client"],
    );
}

/// An authorization server that cannot be reached at all: the caller is told the
/// introspection endpoint is out of reach, not where it is nor the network error.
#[tokio::test]
async fn an_unreachable_authorization_server_is_503_naming_no_url_nor_error() {
    let issuer = issuer().await;
    let dead = unreachable_origin();
    let p = protect(&issuer, |c| {
        c.issuer = dead.clone();
        c.introspection = Some(IntrospectionClient::new(CLIENT_ID, CLIENT_SECRET));
    })
    .await;
    let reply = call(&p, "greet", "opaque-0123456789").await;
    let port = format!(":{}", dead.rsplit(':').next().expect("a port"));
    assert_unavailable(
        &reply,
        "introspection endpoint is",
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
}

/// An authorization server whose metadata names no introspection endpoint: an opaque
/// token cannot be checked (503 saying so), a JWT still passes.
#[tokio::test]
async fn without_an_introspection_endpoint_opaque_tokens_cannot_be_checked() {
    let issuer = TestIssuer::start().await;
    let p = standard_server(&issuer).await;
    let reply = call(&p, "greet", "opaque-0123456789").await;
    assert_unavailable(
        &reply,
        "introspection endpoint is",
        60,
        &[&issuer.origin, "introspection_endpoint", ".well-known"],
    );
    let jwt = issuer.token("jay", &p.resource, &[SCOPE]);
    assert_eq!(call(&p, "greet", &jwt).await.status, 200);
}

/// Requests arriving together with one new token share one introspection.
#[tokio::test]
async fn concurrent_requests_with_one_token_introspect_it_once() {
    let issuer = issuer().await;
    let p = standard_server(&issuer).await;
    let token = issuer.opaque_token(issuer.introspection_answer("olga", &p.resource, &[SCOPE]));
    let replies = futures::future::join_all((0..8).map(|_| call(&p, "greet", &token))).await;
    for reply in &replies {
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    assert_eq!(issuer.introspections(), 1);
    // And so do refusals: eight requests with a token never issued, one introspection.
    let replies =
        futures::future::join_all((0..8).map(|_| call(&p, "greet", "opaque-never-issued-1"))).await;
    for reply in &replies {
        assert_eq!(reply.status, 401, "{}", reply.text);
    }
    assert_eq!(issuer.introspections(), 2);
}

/// Made-up tokens, many more than the refusals kept, neither push a valid token's outcome
/// out nor keep a new one from being kept: each valid token is introspected once however
/// often it is used. Refusals are kept too, the newest of them.
#[tokio::test]
async fn made_up_tokens_never_push_valid_ones_out_of_the_cache() {
    const REFUSALS_KEPT: usize = 4;
    let issuer = issuer().await;
    let p = protect(&issuer, |c| {
        c.required_scopes = vec![SCOPE.into()];
        c.introspection = Some(IntrospectionClient::new(CLIENT_ID, CLIENT_SECRET));
        // Nothing expires while the test runs, however slow the machine.
        c.introspection_cache_max = Duration::from_secs(3600);
        c.introspection_refusal_cache_max = Duration::from_secs(3600);
        c.introspection_refusal_cache_size = REFUSALS_KEPT;
    })
    .await;
    let valid = issuer.opaque_token(issuer.introspection_answer("olga", &p.resource, &[SCOPE]));
    assert_eq!(call(&p, "greet", &valid).await.status, 200);
    assert_eq!(issuer.introspections(), 1);
    let made_up: Vec<String> = (0..REFUSALS_KEPT * 5)
        .map(|n| format!("opaque-made-up-{n:04}"))
        .collect();
    for token in &made_up {
        let reply = call(&p, "greet", token).await;
        assert_eq!(reply.status, 401, "{}", reply.text);
    }
    let flooded = 1 + made_up.len();
    assert_eq!(issuer.introspections(), flooded, "one each");
    // The valid token kept its place.
    for _ in 0..3 {
        assert_eq!(call(&p, "greet", &valid).await.status, 200);
    }
    assert_eq!(issuer.introspections(), flooded, "answered from the cache");
    // A valid token first seen after the flood is kept as well: one introspection for
    // three uses.
    let later = issuer.opaque_token(issuer.introspection_answer("ivan", &p.resource, &[SCOPE]));
    for _ in 0..3 {
        assert_eq!(call(&p, "greet", &later).await.status, 200);
    }
    assert_eq!(issuer.introspections(), flooded + 1);
    // The newest refusals are kept; the oldest made room for them.
    let last = made_up.last().expect("made-up tokens");
    assert_eq!(call(&p, "greet", last).await.status, 401);
    assert_eq!(issuer.introspections(), flooded + 1, "kept");
    assert_eq!(call(&p, "greet", &made_up[0]).await.status, 401);
    assert_eq!(issuer.introspections(), flooded + 2, "asked again");
}
