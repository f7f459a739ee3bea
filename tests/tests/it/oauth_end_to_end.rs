//! The end-to-end login (issues 15 and 16): the real `mcp-call` binary logs in to the
//! real demo binary started with `--oauth-issuer`, through an authorization server in
//! the test (`mcp_tests::authorization_server`: metadata, JWKS, registration, an
//! authorize endpoint that approves at once, a token endpoint issuing JWTs signed by the
//! issuer's key for the resource asked for). The test plays the browser: it reads the
//! authorization URL mcp-call prints, GETs it without following the redirect, then GETs
//! the redirect's `Location`, mcp-call's loopback port.
//!
//! Then: the token file is private and a second run uses it without a new
//! authorization; a token for another audience and a scope never granted are refused by
//! the demo, and mcp-call says so and exits non-zero.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use base64::Engine;
use mcp_tests::authorization_server::{
    AccessTokens, AuthorizationServer, AuthorizationServerOptions, Knobs,
};
use mcp_tests::programs;
use mcp_tests::server_harness::WAIT;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const MCP_CALL: &str = env!("CARGO_BIN_EXE_mcp-call");

/// The scope the demo requires of every request.
const SCOPE: &str = "mcp";

async fn authorization_server(knobs: Knobs) -> AuthorizationServer {
    AuthorizationServer::start(AuthorizationServerOptions {
        tokens: AccessTokens::Jwt,
        scopes_supported: vec![SCOPE.to_owned(), "offline_access".to_owned()],
        subject: "ada".to_owned(),
        knobs,
    })
    .await
}

/// The demo binary behind `issuer`, on 127.0.0.1:0 (killed on drop).
struct Demo {
    url: String,
    _child: tokio::process::Child,
}

async fn start_demo(issuer: &str) -> Demo {
    let (child, url) =
        programs::start_demo(DEMO, &["--oauth-issuer", issuer, "--oauth-scope", SCOPE]).await;
    Demo { url, _child: child }
}

/// A fresh folder for a token file.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// What one mcp-call run did.
#[derive(Debug)]
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    /// The authorization URLs it printed, each visited.
    visited: Vec<String>,
}

/// The browser: GETs the authorization URL without following the redirect, checks it
/// goes to a loopback callback, and GETs that (mcp-call's listener).
async fn play_browser(authorization_url: &str) {
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(WAIT)
        .build()
        .expect("client");
    let approved = http
        .get(authorization_url)
        .send()
        .await
        .expect("GET the authorization URL");
    assert!(
        approved.status().is_redirection(),
        "the authorization endpoint answered {}",
        approved.status()
    );
    let location = approved.headers()["location"]
        .to_str()
        .expect("an ASCII Location")
        .to_owned();
    assert!(
        location.starts_with("http://127.0.0.1:") && location.contains("/callback?"),
        "redirected to {location}"
    );
    let callback = http
        .get(&location)
        .send()
        .await
        .expect("GET the loopback redirect");
    assert_eq!(callback.status(), 200, "the loopback listener answered");
}

/// Runs mcp-call against `demo` with the token file in `dir` and `args` after the usual
/// ones, playing the browser for each authorization URL of `auth` it prints (a line
/// holding only that URL, indented). Bounded by [`WAIT`].
async fn mcp_call(demo: &Demo, auth: &AuthorizationServer, dir: &Path, args: &[&str]) -> Run {
    let token_file = dir.join("tokens.json");
    let mut child = programs::mcp_call(MCP_CALL, &demo.url, &token_file)
        .args(["--redirect-port", "0"])
        .args(args)
        .spawn()
        .expect("start mcp-call");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let authorize = format!("{}/authorize?", auth.issuer_url());
    let browser = async {
        let mut lines = BufReader::new(stderr).lines();
        let mut said = String::new();
        let mut visited = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            said.push_str(&line);
            said.push('\n');
            let shown = line.trim();
            if line.starts_with("  ") && shown.starts_with(&authorize) {
                play_browser(shown).await;
                visited.push(shown.to_owned());
            }
        }
        (said, visited)
    };
    let output = async {
        let mut out = String::new();
        let _ = BufReader::new(stdout).read_to_string(&mut out).await;
        out
    };
    let run = tokio::time::timeout(WAIT, async {
        let ((stderr, visited), stdout) = tokio::join!(browser, output);
        let status = child.wait().await.expect("mcp-call ran");
        Run {
            status,
            stdout,
            stderr,
            visited,
        }
    })
    .await;
    run.expect("mcp-call ends in time")
}

/// The claims of a JWT, unverified (the demo verified them).
fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

/// The token file's only entry (`{"entries": [...]}`).
fn stored(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("tokens.json")).expect("the token file");
    let file: Value = serde_json::from_str(&text).expect("JSON");
    let entries = file["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 1, "{file}");
    entries[0].clone()
}

#[tokio::test]
async fn mcp_call_logs_in_to_the_demo_and_remembers_it() {
    let auth = authorization_server(Knobs::default()).await;
    let demo = start_demo(auth.issuer_url()).await;
    let dir = temp_dir("login");
    let greet = ["greet", r#"{"name":"Ada"}"#];

    let first = mcp_call(&demo, &auth, &dir, &greet).await;
    assert!(first.status.success(), "{first:?}");
    assert_eq!(first.stdout.trim(), "Hello, Ada!", "{first:?}");
    assert_eq!(first.visited.len(), 1, "{first:?}");
    assert_eq!(auth.authorizations(), ["mcp offline_access"]);
    assert_eq!(auth.grants(), ["authorization_code"]);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("tokens.json"))
            .expect("the token file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    }
    let entry = stored(&dir);
    assert_eq!(entry["resource"], demo.url.as_str(), "{entry}");
    assert_eq!(entry["issuer"], auth.issuer_url(), "{entry}");
    let access = entry["tokens"]["access_token"]
        .as_str()
        .expect("an access token");
    let c = claims(access);
    assert_eq!(c["iss"], auth.issuer_url(), "{c}");
    assert_eq!(c["aud"], demo.url.as_str(), "{c}");
    assert_eq!(c["sub"], "ada", "{c}");
    assert_eq!(c["scope"], "mcp offline_access", "{c}");

    // The same command again: the stored token is enough.
    let second = mcp_call(&demo, &auth, &dir, &greet).await;
    assert!(second.status.success(), "{second:?}");
    assert_eq!(second.stdout.trim(), "Hello, Ada!", "{second:?}");
    assert!(second.visited.is_empty(), "{second:?}");
    assert_eq!(auth.authorizations().len(), 1, "no new authorization");
    assert_eq!(auth.grants().len(), 1, "no new token request");
    let _ = std::fs::remove_dir_all(&dir);
}

/// POSTs `initialize` to the demo with `token`; the status and `WWW-Authenticate`.
async fn demo_answers(demo: &Demo, token: &str) -> (u16, String) {
    let init = mcp_tests::server_harness::request(
        1,
        "initialize",
        serde_json::json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "0"},
        }),
    );
    let reply = reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .expect("client")
        .post(&demo.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .body(init.to_string())
        .send()
        .await
        .expect("POST");
    let challenge = reply
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (reply.status().as_u16(), challenge)
}

#[tokio::test]
async fn a_token_for_another_audience_is_refused() {
    let auth = authorization_server(Knobs {
        audience: Some("http://127.0.0.1:1/mcp".to_owned()),
        ..Knobs::default()
    })
    .await;
    let demo = start_demo(auth.issuer_url()).await;
    let dir = temp_dir("audience");
    let run = mcp_call(&demo, &auth, &dir, &["greet", r#"{"name":"Ada"}"#]).await;
    assert!(!run.status.success(), "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert!(
        run.stderr
            .contains("mcp-call: authorization: the server refused the new access token"),
        "{run:?}"
    );
    assert!(
        run.stderr.contains(
            "HTTP 401 after 2 new tokens: invalid_token: the token is meant for another resource (aud)"
        ),
        "{run:?}"
    );
    // One login; the refreshed token was refused as well.
    assert_eq!(run.visited.len(), 1, "{run:?}");
    assert_eq!(auth.grants(), ["authorization_code", "refresh_token"]);
    // The demo's own word on the token mcp-call got.
    let access = stored(&dir)["tokens"]["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned();
    assert_eq!(claims(&access)["aud"], "http://127.0.0.1:1/mcp");
    let (status, challenge) = demo_answers(&demo, &access).await;
    assert_eq!(status, 401);
    assert!(
        challenge.contains(r#"error="invalid_token""#),
        "{challenge}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_scope_never_granted_is_refused() {
    let auth = authorization_server(Knobs {
        withheld_scope: Some(SCOPE.to_owned()),
        ..Knobs::default()
    })
    .await;
    let demo = start_demo(auth.issuer_url()).await;
    let dir = temp_dir("scope");
    let run = mcp_call(&demo, &auth, &dir, &["greet", r#"{"name":"Ada"}"#]).await;
    assert!(!run.status.success(), "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert!(
        run.stderr
            .contains("mcp-call: authorization: the server still refuses with insufficient_scope after 3 authorizations (last asked for: mcp offline_access)"),
        "{run:?}"
    );
    // The login, then two step-ups asking for the scope again.
    assert_eq!(run.visited.len(), 3, "{run:?}");
    assert_eq!(auth.authorizations(), ["mcp offline_access"; 3]);
    let access = stored(&dir)["tokens"]["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned();
    assert_eq!(claims(&access)["scope"], "offline_access");
    let (status, challenge) = demo_answers(&demo, &access).await;
    assert_eq!(status, 403);
    assert!(
        challenge.contains(r#"error="insufficient_scope""#),
        "{challenge}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
