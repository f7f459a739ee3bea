//! DPoP end to end over Streamable HTTP on 127.0.0.1 (RFC 9449): the test
//! authorization server issues DPoP-bound tokens (`cnf.jkt`, `token_type` `DPoP`) to
//! clients that prove their key at its token endpoint, and the MCP server's OAuth
//! resource server checks a proof with each request, both requiring nonces.
//!
//! - The client library (client credentials, a secret, DPoP) gets `use_dpop_nonce` and a
//!   `DPoP-Nonce` at the token endpoint and at the MCP server, retries each once, and
//!   runs a task to its end as the client; the resource server's answers are recorded
//!   by a wrapper around it.
//! - Raw requests: a bound token used as a bearer token gets 401 with a `DPoP`
//!   challenge, a replayed proof is refused, and the `htu` checked is the configured
//!   resource URL's origin with the request's path, whatever listener the request came
//!   through (a server behind a proxy, named by its public URL).
//! - The real `mcp-call` (`--client-id --client-key --dpop`, `private_key_jwt`) runs a
//!   task on the real demo binary (`--oauth-require-dpop --oauth-dpop-nonce`); another
//!   run, with another key, gets a token bound to it; another client's key is refused.

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, Method, Uri};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use futures::future::BoxFuture;
use mcp_tasks::{Owner, TaskId, TaskStore};
use mcp_tasks_client::auth::{
    AuthConfig, ClientAuth, DpopKey, Grant, IssuerBinding, MachineClient,
};
use mcp_tasks_client::auth::{MemoryTokenStore, SigningKey};
use mcp_tasks_client::{ClientConfig, DeclineAll, McpClient, Started};
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_server::auth::{
    Authenticator, Identity, OAuthConfig, OAuthResourceServer, ProtectedResource, Refusal,
};
use mcp_tests::authorization_server::{
    AccessTokens, AuthorizationServer, AuthorizationServerOptions, Knobs,
};
use mcp_tests::issuer::TestIssuer;
use mcp_tests::programs;
use mcp_tests::server_harness::{
    TestServer, WAIT, call_params, demo_tools, request, standard_headers,
};
use ring::signature::{self, KeyPair};
use serde_json::{Value, json};
use tokio::net::TcpListener;

const SCOPE: &str = "mcp";
const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const MCP_CALL: &str = env!("CARGO_BIN_EXE_mcp-call");

/// One answer of the resource server: the scheme the request used, the refusal's
/// status, challenge and `DPoP-Nonce`, or the principal let in.
#[derive(Debug, Clone)]
struct Answer {
    scheme: String,
    refused: Option<(u16, String, Option<String>)>,
    principal: Option<String>,
}

/// The real resource server, its answers recorded.
struct Recorder {
    inner: OAuthResourceServer,
    answers: Mutex<Vec<Answer>>,
}

impl Recorder {
    fn answers(&self) -> Vec<Answer> {
        self.answers.lock().expect("lock").clone()
    }
}

impl Authenticator for Recorder {
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Identity>, Refusal>> {
        self.inner.authenticate(headers)
    }

    fn authenticate_request<'a>(
        &'a self,
        method: &'a Method,
        uri: &'a Uri,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Identity>, Refusal>> {
        Box::pin(async move {
            let answer = self.inner.authenticate_request(method, uri, headers).await;
            let scheme = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split_whitespace().next())
                .unwrap_or_default()
                .to_owned();
            let recorded = match &answer {
                Ok(identity) => Answer {
                    scheme,
                    refused: None,
                    principal: identity.as_ref().map(|i| i.principal.clone()),
                },
                Err(r) => Answer {
                    scheme,
                    refused: Some((
                        r.status.as_u16(),
                        r.www_authenticate.clone().unwrap_or_default(),
                        r.dpop_nonce.clone(),
                    )),
                    principal: None,
                },
            };
            self.answers.lock().expect("lock").push(recorded);
            answer
        })
    }

    fn protected_resource(&self) -> Option<&ProtectedResource> {
        self.inner.protected_resource()
    }

    fn insufficient_scope(&self, needed: &[String], description: &str) -> Refusal {
        self.inner.insufficient_scope(needed, description)
    }
}

/// The demo tools on 127.0.0.1, protected by a resource server trusting `issuer`
/// (`resource`: its URL, by default the listener's), with DPoP required, nonces too.
async fn protected(
    issuer: &str,
    resource: Option<&str>,
) -> (TestServer, Arc<mcp_tasks::MemoryStore>, Arc<Recorder>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let own = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let mut config = OAuthConfig::new(issuer.to_owned(), resource.unwrap_or(&own).to_owned())
        .require_scopes(vec![SCOPE.to_owned()]);
    config.dpop.required = true;
    config.dpop.require_nonce = true;
    let recorder = Arc::new(Recorder {
        inner: OAuthResourceServer::new(config).expect("valid OAuth settings"),
        answers: Mutex::new(Vec::new()),
    });
    let store = Arc::new(mcp_tasks::MemoryStore::default());
    let mut builder = mcp_tasks_server::Server::builder("dpop-tests", "0").store(store.clone());
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    let http = mcp_tasks_server::http::HttpConfig {
        principal: Some(recorder.clone()),
        ..mcp_tasks_server::http::HttpConfig::default()
    };
    let server = TestServer::start_server_on(listener, builder.build(), http).await;
    (server, store, recorder)
}

fn jwt_server(knobs: Knobs) -> AuthorizationServerOptions {
    AuthorizationServerOptions {
        tokens: AccessTokens::Jwt,
        scopes_supported: vec![SCOPE.to_owned()],
        knobs: Knobs {
            dpop_nonce: true,
            ..knobs
        },
        ..AuthorizationServerOptions::default()
    }
}

#[tokio::test]
async fn a_dpop_client_is_given_nonces_retries_once_and_runs_a_task() {
    let auth = AuthorizationServer::start(jwt_server(Knobs::default())).await;
    let (server, store, recorder) = protected(auth.issuer_url(), None).await;
    let (id, secret) = auth.register_client("http://127.0.0.1:1/unused");
    let config = AuthConfig::new(Arc::new(MemoryTokenStore::new()), "nightly-job")
        .with_grant(Grant::ClientCredentials(
            MachineClient::new(
                id.clone(),
                ClientAuth::Secret(secret),
                IssuerBinding::Issuer(auth.issuer_url().to_owned()),
            )
            .with_scopes([SCOPE]),
        ))
        .with_dpop()
        .expect("a DPoP key");
    let jkt = config.dpop.as_ref().expect("a key").thumbprint().to_owned();
    let client = tokio::time::timeout(
        WAIT,
        McpClient::connect_http(
            &server.url,
            Arc::new(DeclineAll),
            ClientConfig {
                auth: Some(config),
                ..ClientConfig::default()
            },
        ),
    )
    .await
    .expect("in time")
    .expect("connects");

    // The token endpoint: refused for its nonce once, then the key proven and bound.
    assert_eq!(auth.dpop_proofs(), [None, Some(jkt.clone())]);
    assert_eq!(auth.grants(), ["client_credentials", "client_credentials"]);

    let handle = match client
        .call_tool_as_task("slow_compute", json_object(json!({ "seconds": 1 })))
        .await
    {
        Ok(Started::Task(handle)) => handle,
        other => panic!("slow_compute is a task: {other:?}"),
    };
    let result = tokio::time::timeout(WAIT, handle.wait())
        .await
        .expect("the task ends in time")
        .expect("the task completes");
    assert!(
        serde_json::to_string(&result)
            .expect("JSON")
            .contains("done after 1 s"),
        "{result:?}"
    );
    // The task is the client's, and completed.
    let principal = format!("{}#{id}", auth.issuer_url());
    let record = store
        .get(&Owner::new(&principal), &TaskId::from_wire(handle.id()))
        .await
        .expect("the client's task");
    assert_eq!(record.status, TaskStatus::Completed);

    // The resource server: 401 without a token, then one use_dpop_nonce refusal with a
    // nonce, the request sent again at once with it, and every later request (the call,
    // the polls) let in with the DPoP scheme as the client.
    let answers = recorder.answers();
    let nonce_refusals: Vec<usize> = answers
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            a.refused
                .as_ref()
                .is_some_and(|(_, c, _)| c.contains("error=\"use_dpop_nonce\""))
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(nonce_refusals.len(), 1, "{answers:#?}");
    let at = nonce_refusals[0];
    let (status, challenge, nonce) = answers[at].refused.clone().expect("refused");
    assert_eq!(status, 401);
    assert!(challenge.starts_with("DPoP "), "{challenge}");
    assert!(nonce.is_some_and(|n| !n.is_empty()), "{answers:#?}");
    assert!(
        answers[..at]
            .iter()
            .all(|a| a.scheme.is_empty() && a.refused.is_some()),
        "{answers:#?}"
    );
    let after = &answers[at + 1..];
    assert!(after.len() >= 3, "{answers:#?}");
    assert!(
        after.iter().all(|a| a.scheme == "DPoP"
            && a.refused.is_none()
            && a.principal.as_deref() == Some(principal.as_str())),
        "{answers:#?}"
    );
}

fn json_object(value: Value) -> mcp_tasks_protocol::JsonObject {
    match value {
        Value::Object(o) => o,
        other => panic!("an object: {other}"),
    }
}

/// A `greet` call to `url` with `authorization` and the DPoP `proof`, if any: the
/// status, the `WWW-Authenticate` challenge, the `DPoP-Nonce`, the body.
async fn greet(
    url: &str,
    authorization: &str,
    proof: Option<&str>,
) -> (u16, String, Option<String>, String) {
    let call = request(
        1,
        "tools/call",
        call_params("greet", json!({ "name": "d" }), false),
    );
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .expect("client");
    let mut post = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", authorization)
        .body(call.to_string());
    for (name, value) in standard_headers(&call) {
        post = post.header(name, value);
    }
    if let Some(proof) = proof {
        post = post.header("dpop", proof);
    }
    let reply = post.send().await.expect("POST");
    let header = |name: &str| {
        reply
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (challenge, nonce) = (
        header("www-authenticate").unwrap_or_default(),
        header("dpop-nonce"),
    );
    let status = reply.status().as_u16();
    let body = reply.text().await.unwrap_or_default();
    (status, challenge, nonce, body)
}

#[tokio::test]
async fn bearer_use_replays_and_the_htu_checked_over_http() {
    let issuer = TestIssuer::start().await;
    // Behind a proxy: the server is named by its public URL, and reached here through
    // its own listener.
    let public = "https://mcp.example.com/mcp";
    let (server, _store, _recorder) = protected(&issuer.issuer, Some(public)).await;
    let key = DpopKey::generate().expect("key");
    let mut claims = issuer.claims("agent-7", public, &[SCOPE]);
    claims["cnf"] = json!({ "jkt": key.thumbprint() });
    let bound = issuer.key.sign(&claims);
    let dpop = format!("DPoP {bound}");

    // A bound token as a bearer token: 401, a DPoP challenge.
    let (status, challenge, _, _) = greet(&server.url, &format!("Bearer {bound}"), None).await;
    assert_eq!(status, 401);
    assert!(challenge.starts_with("DPoP "), "{challenge}");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");

    // No nonce yet: use_dpop_nonce, and the nonce in DPoP-Nonce.
    let first = key.proof("POST", public, Some(&bound)).expect("proof");
    let (status, challenge, nonce, _) = greet(&server.url, &dpop, Some(&first)).await;
    assert_eq!(status, 401);
    assert!(
        challenge.contains("error=\"use_dpop_nonce\""),
        "{challenge}"
    );
    let nonce = nonce.expect("a DPoP-Nonce header");
    key.remember_nonce(public, &nonce);

    // htu: the configured URL's origin and the request's path. The listener's own URL,
    // or another path, is refused.
    let good = key.proof("POST", public, Some(&bound)).expect("proof");
    let (status, challenge, _, body) = greet(&server.url, &dpop, Some(&good)).await;
    assert_eq!(status, 200, "{challenge} {body}");
    key.remember_nonce(&server.url, &nonce);
    key.remember_nonce("https://mcp.example.com/other", &nonce);
    for htu in [server.url.as_str(), "https://mcp.example.com/other"] {
        let proof = key.proof("POST", htu, Some(&bound)).expect("proof");
        let (status, challenge, _, body) = greet(&server.url, &dpop, Some(&proof)).await;
        assert_eq!(status, 401, "{htu}");
        assert!(
            challenge.contains("error=\"invalid_dpop_proof\""),
            "{challenge}"
        );
        assert!(body.contains("htu"), "{htu}: {body}");
    }

    // The good proof again: a replay.
    let (status, challenge, _, body) = greet(&server.url, &dpop, Some(&good)).await;
    assert_eq!(status, 401);
    assert!(
        challenge.starts_with("DPoP ") && challenge.contains("error=\"invalid_dpop_proof\""),
        "{challenge}"
    );
    assert!(body.contains("used before"), "{body}");
}

/// A P-256 private key as PKCS#8 PEM, and its public JWK.
fn client_key() -> (String, Value) {
    let rng = ring::rand::SystemRandom::new();
    let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pkcs8 = signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("P-256 key");
    let pair = signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).expect("key");
    let point = pair.public_key().as_ref();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "alg": "ES256",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..]),
    });
    let b64 = STANDARD.encode(pkcs8.as_ref());
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
        .collect();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        lines.join("\n")
    );
    (pem, jwk)
}

/// The demo binary on 127.0.0.1:0 behind `issuer`, DPoP and nonces required (killed
/// on drop); its URL.
async fn start_demo(issuer: &str) -> (tokio::process::Child, String) {
    let oauth = ["--oauth-issuer", issuer, "--oauth-scope", SCOPE];
    let dpop = ["--oauth-require-dpop", "--oauth-dpop-nonce"];
    programs::start_demo(DEMO, &[&oauth[..], &dpop[..]].concat()).await
}

#[tokio::test]
async fn mcp_call_with_a_client_key_and_dpop_runs_a_task_on_the_demo() {
    let auth = AuthorizationServer::start(jwt_server(Knobs::default())).await;
    let (_demo, url) = start_demo(auth.issuer_url()).await;
    let (pem, jwk) = client_key();
    let id = auth.register_client_key(jwk);
    let dir = std::env::temp_dir().join(format!("mcp-dpop-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let key_file = dir.join("client.pem");
    std::fs::write(&key_file, pem).expect("write the key");
    // The key is checked when read: a file that is no key is said before any request.
    assert!(SigningKey::from_pem_file(&key_file, "ES256").is_ok());

    let mcp_call = async |id: &str, tokens: &str| {
        let mut command = programs::mcp_call(MCP_CALL, &url, &dir.join(tokens));
        command
            .args(["--client-id", id, "--client-key"])
            .arg(&key_file)
            .args([
                "--client-issuer",
                auth.issuer_url(),
                "--client-scope",
                SCOPE,
            ])
            .args(["--dpop", "slow_compute", r#"{"seconds":1}"#]);
        let output = programs::output_in_time(&mut command).await;
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (success, stdout, stderr) = mcp_call(&id, "tokens.json").await;
    assert!(success, "{stdout}\n{stderr}");
    assert!(stdout.contains("done after 1 s"), "{stdout}\n{stderr}");
    // It ran as a task (its status lines), followed until its result came.
    assert!(
        stderr.contains(" working — computation: working for 1 s"),
        "{stderr}"
    );
    // One client credentials grant, authenticated by an assertion (no secret), its DPoP
    // proof refused once for the nonce, then bound; the retry's assertion is a fresh one
    // (the server accepts each assertion's jti once, and checks it before the nonce).
    assert_eq!(
        auth.grants(),
        ["client_credentials", "client_credentials"],
        "{stderr}"
    );
    assert_eq!(
        auth.token_credentials(),
        [(id.clone(), String::new()), (id.clone(), String::new())]
    );
    let proofs = auth.dpop_proofs();
    assert!(
        proofs.len() == 2 && proofs[0].is_none() && proofs[1].is_some(),
        "{proofs:?}"
    );

    // Another run: another key, so the token kept in the token file (bound to the first
    // key) is of no use; a new one is bound to the new key.
    let (success, stdout, stderr) = mcp_call(&id, "tokens.json").await;
    assert!(success, "{stdout}\n{stderr}");
    let proofs = auth.dpop_proofs();
    assert!(
        proofs.len() == 4 && proofs[3].is_some() && proofs[3] != proofs[1],
        "{proofs:?}"
    );

    // The key of another client: its assertion does not verify, nothing runs.
    let other = auth.register_client_key(client_key().1);
    let (success, stdout, stderr) = mcp_call(&other, "other.json").await;
    assert!(!success, "{stdout}\n{stderr}");
    assert!(stderr.contains("invalid_client"), "{stderr}");
    assert!(!stdout.contains("done after"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
