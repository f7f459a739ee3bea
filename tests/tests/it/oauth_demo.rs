//! The demo binary's OAuth flags against an issuer in the test (`mcp_tests::issuer`):
//! `--oauth-resource` sets the audience tokens must name and the metadata's `resource`
//! (a token for the demo's own URL is then refused); `--oauth-introspection-client-id` /
//! `-secret` let opaque tokens in through the issuer's introspection endpoint.

use mcp_tests::issuer::{IssuerOptions, TestIssuer};
use mcp_tests::programs;
use mcp_tests::server_harness::{WAIT, call_params, request, standard_headers};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");

/// The demo binary on 127.0.0.1:0 with a memory store and `args` (killed on drop).
struct Demo {
    /// Its MCP endpoint, as it printed it.
    url: String,
    /// Its origin.
    origin: String,
    http: reqwest::Client,
    _child: tokio::process::Child,
}

impl Demo {
    async fn start(args: &[&str]) -> Demo {
        let (child, url) = programs::start_demo(DEMO, args).await;
        let origin = url.trim_end_matches("/mcp").to_owned();
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(WAIT)
            .build()
            .expect("client");
        Demo {
            url,
            origin,
            http,
            _child: child,
        }
    }

    /// A synchronous `greet` call with `token`: the status, `WWW-Authenticate` and body.
    async fn greet(&self, token: &str) -> (u16, String, Value) {
        let call = request(
            1,
            "tools/call",
            call_params("greet", json!({"name": "d"}), false),
        );
        let mut post = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {token}"))
            .body(call.to_string());
        for (name, value) in standard_headers(&call) {
            post = post.header(name, value);
        }
        let reply = post.send().await.expect("POST");
        let status = reply.status().as_u16();
        let challenge = reply
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = reply.json().await.unwrap_or(Value::Null);
        (status, challenge, body)
    }

    /// The protected resource metadata document.
    async fn metadata(&self) -> Value {
        let url = format!("{}/.well-known/oauth-protected-resource/mcp", self.origin);
        let reply = self.http.get(&url).send().await.expect("GET metadata");
        assert_eq!(reply.status(), 200, "{url}");
        reply.json().await.expect("JSON")
    }
}

/// With `--oauth-resource`, tokens must name that resource, not the demo's own URL, and
/// the metadata says so.
#[tokio::test]
async fn oauth_resource_sets_the_audience_and_the_metadata() {
    let issuer = TestIssuer::start().await;
    let resource = "https://mcp.example.test/mcp";
    let demo = Demo::start(&[
        "--oauth-issuer",
        &issuer.issuer,
        "--oauth-resource",
        resource,
    ])
    .await;
    let doc = demo.metadata().await;
    assert_eq!(doc["resource"], resource, "{doc}");
    assert_eq!(
        doc["authorization_servers"],
        json!([issuer.issuer]),
        "{doc}"
    );

    let (status, _, body) = demo.greet(&issuer.token("dora", resource, &[])).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"].is_object(), "{body}");

    // A token for the URL the demo would have used without the flag is not for it.
    let (status, challenge, body) = demo.greet(&issuer.token("dora", &demo.url, &[])).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{challenge}"
    );
    assert!(challenge.contains("another resource"), "{challenge}");
    // The challenge names the metadata by the resource's URL.
    assert!(
        challenge.contains(
            "resource_metadata=\"https://mcp.example.test/.well-known/oauth-protected-resource/mcp\""
        ),
        "{challenge}"
    );
}

/// With the introspection client flags, an opaque token the issuer says is active for
/// the demo passes; one it does not know is 401 `invalid_token`.
#[tokio::test]
async fn introspection_client_flags_let_opaque_tokens_in() {
    let (id, secret) = ("demo-resource", "demo-secret");
    let issuer = TestIssuer::start_with(IssuerOptions {
        introspection_client: Some((id.into(), secret.into())),
        ..IssuerOptions::default()
    })
    .await;
    let demo = Demo::start(&[
        "--oauth-issuer",
        &issuer.issuer,
        "--oauth-introspection-client-id",
        id,
        "--oauth-introspection-client-secret",
        secret,
    ])
    .await;
    let token = issuer.opaque_token(issuer.introspection_answer("olga", &demo.url, &[]));
    let (status, _, body) = demo.greet(&token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(issuer.introspections(), 1);
    let (status, challenge, body) = demo.greet("opaque-never-issued").await;
    assert_eq!(status, 401, "{body}");
    assert!(challenge.contains("invalid_token"), "{challenge}");
    assert!(challenge.contains("not active"), "{challenge}");
}
