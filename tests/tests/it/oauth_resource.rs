//! The OAuth 2.1 resource server over HTTP, against a real issuer started in the test
//! (`mcp_tests::issuer`: RFC 8414 metadata, a JWKS, tokens signed with keys made by
//! ring): the protected resource metadata, the challenges of both revisions, every kind
//! of bad token (401 `invalid_token`, nothing created), scopes (403
//! `insufficient_scope`), and who sees whose tasks. The key cache (refetch, rotation,
//! outage) is `oauth_keys.rs`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_tests::issuer::{
    ADMIN_SCOPE, Protected, SigningKey, TestIssuer, now, protect, protect_with,
};
use mcp_tests::legacy::{LEGACY_VERSION, init_params};
use mcp_tests::server_harness::{Reply, TestServer, WAIT, call_params, request, task_params};
use serde_json::{Value, json};
use std::time::Duration;

const SCOPE: &str = "mcp";

/// An issuer and a server requiring [`SCOPE`] of every request.
async fn start() -> (TestIssuer, Protected) {
    let issuer = TestIssuer::start().await;
    let p = protect(&issuer, |c| c.required_scopes = vec![SCOPE.into()]).await;
    (issuer, p)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The `WWW-Authenticate` of a reply ("" without one).
fn challenge(reply: &Reply) -> &str {
    reply
        .headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn metadata_url(p: &Protected) -> String {
    format!("{}/.well-known/oauth-protected-resource/mcp", p.origin)
}

/// A 2025-11-25 `initialize` with `headers`.
async fn initialize(s: &TestServer, headers: &[(&str, &str)]) -> Reply {
    s.post(&request(s.id(), "initialize", init_params()), headers)
        .await
}

/// Opens a 2025-11-25 session as `auth`; returns its id.
async fn open_session(s: &TestServer, auth: &str) -> String {
    let reply = initialize(s, &[("authorization", auth)]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let id = reply
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("Mcp-Session-Id")
        .to_owned();
    let ack = s
        .post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            &[
                ("authorization", auth),
                ("mcp-session-id", &id),
                ("mcp-protocol-version", LEGACY_VERSION),
            ],
        )
        .await;
    assert_eq!(ack.status, 202, "{}", ack.text);
    id
}

/// A request in the 2025-11-25 session `sid` as `auth`.
async fn in_session(s: &TestServer, sid: &str, auth: &str, method: &str, params: Value) -> Reply {
    s.post(
        &request(s.id(), method, params),
        &[
            ("authorization", auth),
            ("mcp-session-id", sid),
            ("mcp-protocol-version", LEGACY_VERSION),
        ],
    )
    .await
}

#[tokio::test]
async fn protected_resource_metadata_is_public() {
    let (issuer, p) = start().await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .expect("client");
    for url in [
        metadata_url(&p),
        format!("{}/.well-known/oauth-protected-resource", p.origin),
    ] {
        let reply = http.get(&url).send().await.expect("GET metadata");
        assert_eq!(reply.status(), 200, "{url}");
        let doc: Value = reply.json().await.expect("JSON");
        assert_eq!(doc["resource"], p.resource, "{doc}");
        assert_eq!(
            doc["authorization_servers"],
            json!([issuer.issuer]),
            "{doc}"
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]), "{doc}");
        // The scope every request needs and the one a tool requires.
        assert_eq!(
            doc["scopes_supported"],
            json!([SCOPE, ADMIN_SCOPE]),
            "{doc}"
        );
    }
    // A server without OAuth publishes none.
    let plain = TestServer::start().await;
    let origin = plain.url.trim_end_matches("/mcp");
    let reply = http
        .get(format!("{origin}/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .expect("GET");
    assert_eq!(reply.status(), 404);
}

#[tokio::test]
async fn no_token_is_401_naming_the_metadata_and_scope_on_both_revisions() {
    let (_issuer, p) = start().await;
    let s = &p.server;
    let expected = format!(
        "Bearer scope=\"{SCOPE}\", resource_metadata=\"{}\"",
        metadata_url(&p)
    );
    let calls = [
        s.call("slow_compute", json!({"seconds": 1}), true).await,
        s.rpc(
            "tools/list",
            json!({"_meta": mcp_tests::server_harness::meta(false)}),
        )
        .await,
        initialize(s, &[]).await,
    ];
    for reply in calls {
        assert_eq!(reply.status, 401, "{}", reply.text);
        assert_eq!(challenge(&reply), expected);
        assert_eq!(reply.body["id"], Value::Null, "{}", reply.text);
        assert!(reply.body["error"].is_object(), "{}", reply.text);
    }
    // No session opened, no task created.
    assert!(
        initialize(s, &[])
            .await
            .headers
            .get("mcp-session-id")
            .is_none()
    );
    assert!(p.store.is_empty());
}

#[tokio::test]
async fn a_valid_token_works_and_the_principal_is_issuer_and_subject() {
    let (issuer, p) = start().await;
    let s = &p.server;
    // An EdDSA key beside the ES256 one, published before the keys are first fetched.
    let ed = SigningKey::ed25519("ed-1");
    issuer.publish(vec![issuer.key.clone(), ed.clone()]);
    let token = bearer(&issuer.token("alice", &p.resource, &[SCOPE, ADMIN_SCOPE]));
    let auth = [("authorization", token.as_str())];
    let reply = s
        .post(
            &request(1, "tools/call", call_params("whoami", json!({}), false)),
            &auth,
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let text = reply.result()["content"][0]["text"].as_str().expect("text");
    let seen: Value = serde_json::from_str(text).expect("JSON");
    assert_eq!(seen["principal"], format!("{}#alice", issuer.issuer));
    assert_eq!(seen["scopes"], json!([ADMIN_SCOPE, SCOPE]));

    // As a task, the tool sees the creator's identity too.
    let reply = s
        .post(
            &request(2, "tools/call", call_params("whoami", json!({}), true)),
            &auth,
        )
        .await;
    let id = reply.result()["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let done = s
        .poll_task_with(&id, &auth, WAIT, |t| t["status"] == "completed")
        .await;
    let text = done["result"]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains(&format!("{}#alice", issuer.issuer)), "{done}");

    // The EdDSA key's tokens are accepted as well.
    let token = bearer(&ed.sign(&issuer.claims("carol", &p.resource, &[SCOPE])));
    let reply = s
        .post(
            &request(
                3,
                "tools/call",
                call_params("greet", json!({"name": "c"}), false),
            ),
            &[("authorization", &token)],
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

/// What the refusal of each case of [`bad_tokens_are_401_invalid_token_and_create_nothing`]
/// says.
fn reason(what: &str) -> &'static str {
    match what {
        "expired" => "the token has expired",
        "not yet valid" => "not valid yet",
        "wrong issuer" => "another issuer",
        "wrong audience" | "another resource, audience array" => "another resource",
        "no audience" => "lacks the \"aud\" claim",
        "no subject" => "lacks the \"sub\" claim",
        "alg none" => "algorithm \"none\" is not accepted",
        "HS256 keyed with the public JWK" | "HS256 keyed with the public key bytes" => {
            "algorithm \"HS256\" is not accepted"
        }
        "unknown kid" | UNKNOWN_KID_REFETCHED => {
            "the token's signing key is not among the authorization server's keys"
        }
        "published kid, other key" | "tampered payload" | "signature cut off" => {
            "signature does not verify"
        }
        // `%` is outside RFC 6750's token characters: the header itself is malformed.
        "not base64" | "Bearer alone" | "Bearer, two words" | "Bearer, a quote" => {
            "malformed Authorization header"
        }
        _ => "not a well-formed JWT",
    }
}

/// The row of [`bad_tokens_are_401_invalid_token_and_create_nothing`] sent after the key
/// refetch interval has passed: its unknown `kid` makes the server fetch the keys again,
/// once.
const UNKNOWN_KID_REFETCHED: &str = "unknown kid, refetch interval passed";

/// The key refetch interval of that test: short, so that a row can wait past it.
const REFETCH_INTERVAL: Duration = Duration::from_secs(1);

/// Every kind of bad token, each refused with 401 `invalid_token` on a task-creating
/// `tools/call` and on a 2025-11-25 `initialize`. After each row: no task in the store,
/// no `Mcp-Session-Id` handed out, and no session held (the server keeps one session at
/// most: a good token still opens one, which is then ended).
#[tokio::test]
async fn bad_tokens_are_401_invalid_token_and_create_nothing() {
    let issuer = TestIssuer::start().await;
    let p = protect_with(
        &issuer,
        |c| {
            c.required_scopes = vec![SCOPE.into()];
            c.jwks_refetch_interval = REFETCH_INTERVAL;
        },
        mcp_tasks_server::http::HttpConfig {
            max_sessions: 1,
            ..mcp_tasks_server::http::HttpConfig::default()
        },
    )
    .await;
    let s = &p.server;
    let claims = |edit: &dyn Fn(&mut Value)| {
        let mut c = issuer.claims("mallory", &p.resource, &[SCOPE]);
        edit(&mut c);
        c
    };
    let good = issuer.token("mallory", &p.resource, &[SCOPE]);
    let parts: Vec<&str> = good.split('.').collect();
    let encode = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let mut tampered_claims = claims(&|_| {});
    tampered_claims["sub"] = "alice".into();
    let hs256 = |secret: &[u8]| {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(issuer.key.kid.clone());
        jsonwebtoken::encode(&header, &claims(&|_| {}), &EncodingKey::from_secret(secret))
            .expect("HS256")
    };
    let jwk_text = issuer.key.jwk().to_string();
    let x = URL_SAFE_NO_PAD
        .decode(issuer.key.jwk()["x"].as_str().expect("x"))
        .expect("x bytes");
    let stranger = SigningKey::es256("not-published");
    let tokens: Vec<(&str, String)> = vec![
        (
            "expired",
            issuer.key.sign(&claims(&|c| {
                c["exp"] = (now() - 3600).into();
                c["iat"] = (now() - 7200).into();
                c["nbf"] = (now() - 7200).into();
            })),
        ),
        (
            "not yet valid",
            issuer
                .key
                .sign(&claims(&|c| c["nbf"] = (now() + 3600).into())),
        ),
        (
            "wrong issuer",
            issuer
                .key
                .sign(&claims(&|c| c["iss"] = "http://127.0.0.1:1".into())),
        ),
        (
            "wrong audience",
            issuer
                .key
                .sign(&claims(&|c| c["aud"] = "http://127.0.0.1:1/mcp".into())),
        ),
        (
            "another resource, audience array",
            issuer.key.sign(&claims(&|c| {
                c["aud"] = json!(["http://other.example/mcp", "api"])
            })),
        ),
        (
            "no audience",
            issuer.key.sign(&claims(&|c| {
                c.as_object_mut().expect("object").remove("aud");
            })),
        ),
        (
            "no subject",
            issuer.key.sign(&claims(&|c| {
                c.as_object_mut().expect("object").remove("sub");
            })),
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                encode(&json!({"alg": "none", "typ": "JWT", "kid": issuer.key.kid})),
                encode(&claims(&|_| {}))
            ),
        ),
        (
            "HS256 keyed with the public JWK",
            hs256(jwk_text.as_bytes()),
        ),
        ("HS256 keyed with the public key bytes", hs256(&x)),
        ("unknown kid", stranger.sign(&claims(&|_| {}))),
        (UNKNOWN_KID_REFETCHED, stranger.sign(&claims(&|_| {}))),
        (
            "published kid, other key",
            SigningKey::es256(&issuer.key.kid).sign(&claims(&|_| {})),
        ),
        (
            "tampered payload",
            format!("{}.{}.{}", parts[0], encode(&tampered_claims), parts[2]),
        ),
        ("signature cut off", format!("{}.{}.", parts[0], parts[1])),
        ("two segments", format!("{}.{}", parts[0], parts[1])),
        ("not base64", "%%%.%%%.%%%".into()),
        ("not a JWT", "opaque-token-0123456789".into()),
        (
            "header not JSON",
            format!(
                "{}.{}.{}",
                URL_SAFE_NO_PAD.encode("nope"),
                parts[1],
                parts[2]
            ),
        ),
    ];
    let mut rows: Vec<(&str, String)> = tokens
        .into_iter()
        .map(|(what, token)| (what, bearer(&token)))
        .collect();
    // Authorization headers that hold no token at all.
    rows.extend([
        ("Bearer alone", "Bearer".to_owned()),
        ("Bearer, two words", "Bearer two words".to_owned()),
        ("Bearer, a quote", "Bearer a\"b".to_owned()),
    ]);
    let good_auth = bearer(&good);
    for (what, auth) in &rows {
        let headers = [("authorization", auth.as_str())];
        if *what == UNKNOWN_KID_REFETCHED {
            tokio::time::sleep(REFETCH_INTERVAL + Duration::from_millis(100)).await;
        }
        let fetches = issuer.jwks_fetches();
        let call = s
            .post(
                &request(
                    s.id(),
                    "tools/call",
                    call_params("slow_compute", json!({"seconds": 30}), true),
                ),
                &headers,
            )
            .await;
        let init = initialize(s, &headers).await;
        if *what == UNKNOWN_KID_REFETCHED {
            // The call fetched the keys again (the interval had passed), the initialize
            // right after it did not.
            assert_eq!(issuer.jwks_fetches(), fetches + 1, "{what}");
        }
        for (kind, reply) in [("tools/call", call), ("initialize", init)] {
            assert_eq!(reply.status, 401, "{what}, {kind}: {}", reply.text);
            // Refused for the reason the case is about, not another.
            assert!(
                reply.error_message().contains(reason(what)),
                "{what}, {kind}: {}",
                reply.text
            );
            let c = challenge(&reply);
            assert!(
                c.starts_with("Bearer error=\"invalid_token\""),
                "{what}, {kind}: {c}"
            );
            assert!(
                c.contains(&format!("resource_metadata=\"{}\"", metadata_url(&p))),
                "{what}, {kind}: {c}"
            );
            assert!(
                reply.headers.get("mcp-session-id").is_none(),
                "{what}, {kind}: a session id was handed out"
            );
        }
        assert!(
            p.store.is_empty(),
            "{what}: a refused request created a task"
        );
        // The one session the server may hold is free: the refused initialize kept none.
        let opened = initialize(s, &[("authorization", &good_auth)]).await;
        assert_eq!(opened.status, 200, "{what}: {}", opened.text);
        let sid = opened
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("{what}: no Mcp-Session-Id for the good token"));
        let ended = delete(
            s,
            &[
                ("authorization", &good_auth),
                ("mcp-session-id", sid),
                ("mcp-protocol-version", LEGACY_VERSION),
            ],
        )
        .await;
        assert_eq!(ended.status, 204, "{what}: {}", ended.text);
    }
    // The good token still works, and creates the one task.
    let reply = s
        .post(
            &request(
                s.id(),
                "tools/call",
                call_params("slow_compute", json!({"seconds": 30}), true),
            ),
            &[("authorization", &good_auth)],
        )
        .await;
    assert_eq!(reply.result()["resultType"], "task", "{}", reply.text);
    assert_eq!(p.store.len(), 1);
}

#[tokio::test]
async fn a_token_in_the_query_string_is_400_invalid_request() {
    let (issuer, p) = start().await;
    let token = issuer.token("alice", &p.resource, &[SCOPE]);
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .expect("client");
    for with_header in [false, true] {
        let mut post = http
            .post(format!("{}?access_token={token}", p.server.url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(
                request(
                    1,
                    "tools/call",
                    call_params("slow_compute", json!({"seconds": 30}), true),
                )
                .to_string(),
            );
        if with_header {
            post = post.header("authorization", bearer(&token));
        }
        let reply = post.send().await.expect("POST");
        assert_eq!(reply.status(), 400);
        let c = reply
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        assert!(c.starts_with("Bearer error=\"invalid_request\""), "{c}");
    }
    assert!(p.store.is_empty());
}

/// A token without a scope every request needs is 403 on both revisions; a tool that
/// requires a scope is refused (403 naming it) before it runs or becomes a task.
#[tokio::test]
async fn missing_scopes_are_403_insufficient_scope() {
    let (issuer, p) = start().await;
    let s = &p.server;
    let unscoped = bearer(&issuer.token("alice", &p.resource, &[]));
    let reply = s
        .post(
            &request(
                1,
                "tools/call",
                call_params("greet", json!({"name": "a"}), false),
            ),
            &[("authorization", &unscoped)],
        )
        .await;
    assert_eq!(reply.status, 403, "{}", reply.text);
    assert_eq!(
        challenge(&reply),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"{SCOPE}\", resource_metadata=\"{}\", error_description=\"the token lacks a scope this server requires\"",
            metadata_url(&p)
        )
    );
    assert_eq!(
        initialize(s, &[("authorization", &unscoped)]).await.status,
        403
    );

    // The tool's scope, on 2026-07-28: synchronous and as a task.
    let user = bearer(&issuer.token("alice", &p.resource, &[SCOPE]));
    for tasks in [false, true] {
        let reply = s
            .post(
                &request(7, "tools/call", call_params("whoami", json!({}), tasks)),
                &[("authorization", &user)],
            )
            .await;
        assert_eq!(reply.status, 403, "{}", reply.text);
        let c = challenge(&reply);
        assert!(
            c.starts_with(&format!(
                "Bearer error=\"insufficient_scope\", scope=\"{SCOPE} {ADMIN_SCOPE}\""
            )),
            "{c}"
        );
        assert_eq!(reply.body["id"], 7, "{}", reply.text);
    }
    // And in a 2025-11-25 session, with and without a task.
    let sid = open_session(s, &user).await;
    for params in [
        json!({"name": "whoami", "arguments": {}}),
        json!({"name": "whoami", "arguments": {}, "task": {"ttl": 60000}}),
    ] {
        let reply = in_session(s, &sid, &user, "tools/call", params).await;
        assert_eq!(reply.status, 403, "{}", reply.text);
        assert!(challenge(&reply).contains(&format!("scope=\"{SCOPE} {ADMIN_SCOPE}\"")));
    }
    // Other tools still work for the same caller.
    let reply = in_session(
        s,
        &sid,
        &user,
        "tools/call",
        json!({"name": "greet", "arguments": {"name": "a"}}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(p.store.is_empty(), "a refused call created a task");

    // With the scope, the 2025-11-25 task runs.
    let admin = bearer(&issuer.token("alice", &p.resource, &[SCOPE, ADMIN_SCOPE]));
    let sid = open_session(s, &admin).await;
    let reply = in_session(
        s,
        &sid,
        &admin,
        "tools/call",
        json!({"name": "whoami", "arguments": {}, "task": {}}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(p.store.len(), 1);
}

/// A 2026-07-28 task method on `id` as `auth` (`None`: no token).
async fn as_who(s: &TestServer, auth: Option<&str>, method: &str, id: &str) -> Reply {
    let mut params = task_params(id, true);
    if method == "tasks/update" {
        params["inputResponses"] = json!({"input-1": {"action": "accept", "content": {}}});
    }
    let headers: Vec<(&str, &str)> = auth.map(|a| vec![("authorization", a)]).unwrap_or_default();
    s.post(&request(9, method, params), &headers).await
}

/// Principal B reaches none of principal A's tasks on any method of either revision.
#[tokio::test]
async fn one_users_tasks_are_invisible_to_another() {
    let (issuer, p) = start().await;
    let s = &p.server;
    let alice = bearer(&issuer.token("alice", &p.resource, &[SCOPE]));
    let bob = bearer(&issuer.token("bob", &p.resource, &[SCOPE]));
    // The same subject at another issuer would be another principal; here: same issuer,
    // other subject.
    let reply = s
        .post(
            &request(
                1,
                "tools/call",
                call_params("slow_compute", json!({"seconds": 30}), true),
            ),
            &[("authorization", &alice)],
        )
        .await;
    let task = reply.result()["taskId"].as_str().expect("task").to_owned();

    let unknown = "0123456789abcdef0123456789abcdef";
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let theirs = as_who(s, Some(&bob), method, &task).await;
        let never = as_who(s, Some(&bob), method, unknown).await;
        assert!(
            theirs.body["error"].is_object(),
            "{method}: {}",
            theirs.text
        );
        assert_eq!(theirs.body["error"], never.body["error"], "{method}");
        assert_eq!(theirs.status, never.status, "{method}");
        // Without a token nobody gets in at all.
        assert_eq!(as_who(s, None, method, &task).await.status, 401, "{method}");
    }
    // Bob's listen stream acknowledges none of alice's tasks.
    let listen = request(
        5,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [task]}, "_meta": mcp_tests::server_harness::meta(true)}),
    );
    let mut stream = s.open_stream(&listen, &[("authorization", &bob)]).await;
    assert_eq!(stream.status, 200);
    let ack = stream
        .next_event(WAIT)
        .await
        .expect("an acknowledgement")
        .json();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([]),
        "{ack}"
    );

    // 2025-11-25: alice's session refuses bob; bob's own session lists nothing of hers.
    let hers = open_session(s, &alice).await;
    let reply = in_session(s, &hers, &bob, "tasks/list", json!({})).await;
    assert_eq!(reply.status, 404, "{}", reply.text);
    let his = open_session(s, &bob).await;
    let list = in_session(s, &his, &bob, "tasks/list", json!({})).await;
    assert_eq!(list.result()["tasks"], json!([]), "{}", list.text);
    let get = in_session(s, &his, &bob, "tasks/get", json!({"taskId": task})).await;
    assert!(get.body["error"].is_object(), "{}", get.text);
    let result = in_session(s, &his, &bob, "tasks/result", json!({"taskId": task})).await;
    assert!(result.text.contains("\"error\""), "{}", result.text);
    assert!(!result.text.contains("\"result\""), "{}", result.text);
    let cancel = in_session(s, &his, &bob, "tasks/cancel", json!({"taskId": task})).await;
    assert!(cancel.body["error"].is_object(), "{}", cancel.text);
    // Alice still sees hers, still working, in both revisions.
    let mine = in_session(s, &hers, &alice, "tasks/list", json!({})).await;
    assert_eq!(
        mine.result()["tasks"][0]["taskId"],
        task.as_str(),
        "{}",
        mine.text
    );
    let got = as_who(s, Some(&alice), "tasks/get", &task).await;
    assert_eq!(got.result()["status"], "working", "{}", got.text);
}

/// Without HTTP there are no credentials: a tool that requires a scope is refused with a
/// JSON-RPC error naming it (the safe choice), synchronously and as a task.
#[tokio::test]
async fn without_credentials_a_scoped_tool_is_refused_on_a_connection() {
    let store = std::sync::Arc::new(mcp_tasks::MemoryStore::default());
    let server = mcp_tasks_server::Server::builder("oauth-tests", "0")
        .store(store.clone())
        .tool(mcp_tests::issuer::whoami())
        .build();
    let (ours, theirs) = mcp_tasks_protocol::engine::Connection::memory();
    let (_peer, _served) = server.serve_connection(theirs);
    let mut receiver = ours.receiver;
    for (id, tasks) in [(1, false), (2, true)] {
        let message = request(id, "tools/call", call_params("whoami", json!({}), tasks));
        ours.sender.send(message.to_string()).await.expect("send");
        let frame = tokio::time::timeout(WAIT, receiver.recv())
            .await
            .expect("an answer in time")
            .expect("connection open")
            .expect("a frame");
        let answer: Value = serde_json::from_str(&frame).expect("JSON");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(
            answer["error"]["data"]["requiredScopes"],
            json!([ADMIN_SCOPE]),
            "{answer}"
        );
    }
    assert!(store.is_empty());
}

/// A `DELETE` of the endpoint with `headers` (ending a 2025-11-25 session).
async fn delete(s: &TestServer, headers: &[(&str, &str)]) -> Reply {
    let mut request = s.client.delete(&s.url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = tokio::time::timeout(WAIT, request.send())
        .await
        .expect("DELETE answered in time")
        .expect("DELETE");
    Reply::read(response).await
}

/// An open 2025-11-25 session named with no token or a bad one: POST, GET and DELETE are
/// 401 with the challenge (`invalid_token` for the bad one), not 404: the caller is
/// checked before any session is looked at. The session is untouched for its owner.
#[tokio::test]
async fn an_open_session_without_a_good_token_is_401_before_it_is_looked_at() {
    let (issuer, p) = start().await;
    let s = &p.server;
    let alice = bearer(&issuer.token("alice", &p.resource, &[SCOPE]));
    let sid = open_session(s, &alice).await;
    let expired = {
        let mut c = issuer.claims("alice", &p.resource, &[SCOPE]);
        c["exp"] = (now() - 3600).into();
        c["iat"] = (now() - 7200).into();
        c["nbf"] = (now() - 7200).into();
        bearer(&issuer.key.sign(&c))
    };
    let no_token = format!(
        "Bearer scope=\"{SCOPE}\", resource_metadata=\"{}\"",
        metadata_url(&p)
    );
    for (what, auth) in [
        ("no token", None),
        ("expired token", Some(expired.as_str())),
    ] {
        let mut headers = vec![
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", LEGACY_VERSION),
        ];
        if let Some(auth) = auth {
            headers.push(("authorization", auth));
        }
        let post = s
            .post(&request(s.id(), "tasks/list", json!({})), &headers)
            .await;
        let get = s.get_stream(&headers).await;
        let get = (get.status, get.headers);
        let del = delete(s, &headers).await;
        for (verb, status, h) in [
            ("POST", post.status, &post.headers),
            ("GET", get.0, &get.1),
            ("DELETE", del.status, &del.headers),
        ] {
            assert_eq!(status, 401, "{what}, {verb}");
            let c = h
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            match auth {
                None => assert_eq!(c, no_token, "{what}, {verb}"),
                Some(_) => {
                    assert!(
                        c.starts_with("Bearer error=\"invalid_token\""),
                        "{what}, {verb}: {c}"
                    );
                    assert!(c.contains(&metadata_url(&p)), "{what}, {verb}: {c}");
                    assert!(c.contains("expired"), "{what}, {verb}: {c}");
                }
            }
        }
        assert!(post.body["error"].is_object(), "{what}: {}", post.text);
    }
    // The session still works for alice: a request, its stream, and its end.
    let list = in_session(s, &sid, &alice, "tasks/list", json!({})).await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.result()["tasks"], json!([]), "{}", list.text);
    let mine = [
        ("authorization", alice.as_str()),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", LEGACY_VERSION),
    ];
    let stream = s.get_stream(&mine).await;
    assert_eq!(stream.status, 200);
    drop(stream);
    assert_eq!(delete(s, &mine).await.status, 204);
    let gone = in_session(s, &sid, &alice, "tasks/list", json!({})).await;
    assert_eq!(gone.status, 404, "{}", gone.text);
}

/// The JSON-RPC answer of a reply, whether sent as JSON or as the last event of an SSE
/// stream, with every occurrence of `id` replaced by `<id>`.
fn answer_without(reply: &Reply, id: &str) -> Value {
    let answer = if reply.body.is_null() {
        mcp_tests::server_harness::sse_events(&reply.text)
            .last()
            .map(|e| e.json())
            .unwrap_or(Value::Null)
    } else {
        reply.body.clone()
    };
    let text = answer.to_string().replace(id, "<id>");
    serde_json::from_str(&text).expect("JSON")
}

/// A `subscriptions/listen` naming `task_ids`.
fn listen(task_ids: &[&str]) -> Value {
    request(
        5,
        "subscriptions/listen",
        json!({
            "notifications": {"taskIds": task_ids},
            "_meta": mcp_tests::server_harness::meta(true),
        }),
    )
}

/// Another principal's task is indistinguishable from one that does not exist: bob's
/// 2025-11-25 tasks/get, tasks/result and tasks/cancel on alice's task answer exactly as
/// for an unknown id (the id aside); an anonymous `subscriptions/listen` is 401; bob's
/// listen stream naming alice's task stays silent while alice's own stream sees it
/// cancelled.
#[tokio::test]
async fn another_principals_task_answers_as_an_unknown_one_and_streams_nothing() {
    let (issuer, p) = start().await;
    let s = &p.server;
    let alice = bearer(&issuer.token("alice", &p.resource, &[SCOPE]));
    let bob = bearer(&issuer.token("bob", &p.resource, &[SCOPE]));
    let reply = s
        .post(
            &request(
                1,
                "tools/call",
                call_params("slow_compute", json!({"seconds": 30}), true),
            ),
            &[("authorization", &alice)],
        )
        .await;
    let task = reply.result()["taskId"].as_str().expect("task").to_owned();
    let unknown = "0123456789abcdef0123456789abcdef";

    let his = open_session(s, &bob).await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let theirs = in_session(s, &his, &bob, method, json!({"taskId": task})).await;
        let never = in_session(s, &his, &bob, method, json!({"taskId": unknown})).await;
        assert_eq!(theirs.status, never.status, "{method}");
        let theirs_answer = answer_without(&theirs, &task);
        let never_answer = answer_without(&never, unknown);
        assert!(
            theirs_answer["error"].is_object(),
            "{method}: {}",
            theirs.text
        );
        // The request ids differ by construction: compare the errors.
        assert_eq!(theirs_answer["error"], never_answer["error"], "{method}");
    }

    // No token, no stream.
    let anonymous = s.open_stream(&listen(&[&task]), &[]).await;
    assert_eq!(anonymous.status, 401);
    assert!(
        anonymous
            .headers
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.contains(&metadata_url(&p))),
        "{:?}",
        anonymous.headers
    );

    let mut hers = s
        .open_stream(&listen(&[&task]), &[("authorization", &alice)])
        .await;
    let mut his_stream = s
        .open_stream(&listen(&[&task]), &[("authorization", &bob)])
        .await;
    assert_eq!(hers.status, 200);
    assert_eq!(his_stream.status, 200);
    for stream in [&mut hers, &mut his_stream] {
        let ack = stream.next_event(WAIT).await.expect("an ack").json();
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
    }
    let cancel = as_who(s, Some(&alice), "tasks/cancel", &task).await;
    assert!(cancel.body["result"].is_object(), "{}", cancel.text);
    // Alice's stream sees the change...
    let seen = tokio::time::timeout(WAIT, async {
        loop {
            let event = hers
                .next_event(WAIT)
                .await
                .expect("alice's stream open")
                .json();
            if event.to_string().contains("cancelled") {
                return event;
            }
        }
    })
    .await
    .expect("alice's stream shows the cancellation");
    assert!(seen.to_string().contains(&task), "{seen}");
    // ...bob's, listening at the same time, gets nothing (a bounded wait).
    let leaked = his_stream.event_within(Duration::from_secs(1)).await;
    assert!(
        leaked.is_none(),
        "bob's stream got {:?}",
        leaked.map(|e| e.json())
    );
}

/// The clock skew allowed on `exp` and `nbf` (the default leeway, 60 s): a token expired
/// 30 s ago or valid only in 30 s passes; 90 s either way it is refused for its reason.
#[tokio::test]
async fn exp_and_nbf_are_checked_with_the_leeway() {
    let (issuer, p) = start().await;
    assert_eq!(p.resource, format!("{}/mcp", p.origin));
    let s = &p.server;
    let token = |exp: i64, nbf: i64| {
        let mut c = issuer.claims("alice", &p.resource, &[SCOPE]);
        c["iat"] = (now() - 120).into();
        c["exp"] = (now() + exp).into();
        c["nbf"] = (now() + nbf).into();
        bearer(&issuer.key.sign(&c))
    };
    let greet = |auth: String| async move {
        s.post(
            &request(
                s.id(),
                "tools/call",
                call_params("greet", json!({"name": "l"}), false),
            ),
            &[("authorization", &auth)],
        )
        .await
    };
    for (what, auth, refused_for) in [
        ("expired 30 s ago", token(-30, -120), None),
        ("valid in 30 s", token(300, 30), None),
        (
            "expired 90 s ago",
            token(-90, -120),
            Some("the token has expired"),
        ),
        (
            "valid in 90 s",
            token(300, 90),
            Some("the token is not valid yet"),
        ),
    ] {
        let reply = greet(auth).await;
        match refused_for {
            None => assert_eq!(reply.status, 200, "{what}: {}", reply.text),
            Some(reason) => {
                assert_eq!(reply.status, 401, "{what}: {}", reply.text);
                assert!(
                    reply.error_message().contains(reason),
                    "{what}: {}",
                    reply.text
                );
                assert!(
                    challenge(&reply).contains("error=\"invalid_token\""),
                    "{what}"
                );
            }
        }
    }
}
