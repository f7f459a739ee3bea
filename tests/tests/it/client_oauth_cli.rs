//! What `mcp-call` says while it logs in (issue 15: "says clearly what it is doing and
//! what failed"): the real binary against the demo behind the test authorization
//! server (`ProtectedDemo`, opaque tokens), stderr piped. Each step of a login is one
//! line (discovery, registration, the URL and the redirect awaited, token received,
//! saved to the token file; a refresh; a migration), `--login` says whether a login
//! happened, and a failure is said with what to do.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;

use mcp_tests::authorization_server::{
    AuthorizationServer, AuthorizationServerOptions, Knobs, Prm, ProtectedDemo, visit_as_browser,
};
use mcp_tests::programs;
use mcp_tests::server_harness::WAIT;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

const MCP_CALL: &str = env!("CARGO_BIN_EXE_mcp-call");

async fn authorization_server(knobs: Knobs) -> Arc<AuthorizationServer> {
    Arc::new(
        AuthorizationServer::start(AuthorizationServerOptions::for_protected_demo(knobs)).await,
    )
}

/// A fresh folder for a token file.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-oauth-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[derive(Debug)]
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    /// The authorization URLs it printed, each visited.
    visited: usize,
}

/// Runs `mcp-call --http URL --no-open --token-file DIR/tokens.json ARGS`, playing the
/// browser for each authorization URL of `issuer` it prints. Bounded by [`WAIT`].
async fn mcp_call(url: &str, issuer: &str, token_file: &Path, args: &[&str]) -> Run {
    let mut child = programs::mcp_call(MCP_CALL, url, token_file)
        .args(args)
        .spawn()
        .expect("start mcp-call");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let authorize = format!("{issuer}/authorize?");
    let browser = async {
        let mut lines = BufReader::new(stderr).lines();
        let (mut said, mut visited) = (String::new(), 0);
        while let Ok(Some(line)) = lines.next_line().await {
            said.push_str(&line);
            said.push('\n');
            if line.starts_with("  ") && line.trim().starts_with(&authorize) {
                visit_as_browser(line.trim()).await;
                visited += 1;
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

/// Asserts that `run`'s stderr has each of `lines` (whole lines), in that order.
fn says_in_order(run: &Run, lines: &[&str]) {
    let said: Vec<&str> = run.stderr.lines().collect();
    let mut at = 0;
    for expected in lines {
        match said[at..].iter().position(|l| l == expected) {
            Some(i) => at += i + 1,
            None => panic!("no line {expected:?} (in order) in:\n{}", run.stderr),
        }
    }
}

#[tokio::test]
async fn login_says_each_step_and_whether_it_logged_in() {
    let auth = authorization_server(Knobs::default()).await;
    let demo = ProtectedDemo::start(Arc::clone(&auth), Prm::default()).await;
    let dir = temp_dir("steps");
    let file = dir.join("tokens.json");
    let issuer = auth.issuer_url();
    let url = demo.url.as_str();
    let saved = format!("Saved to {}", file.display());

    let first = mcp_call(url, issuer, &file, &["--login"]).await;
    assert!(first.status.success(), "{first:?}");
    assert_eq!(first.visited, 1, "{first:?}");
    says_in_order(
        &first,
        &[
            &format!("{url} asks for authorization: discovering its authorization server..."),
            &format!("Authorization server: {issuer}"),
            &format!("Registering mcp-call at {issuer}/register..."),
            "Registered as client client-1.",
            "Logging in, asking for scope: mcp:read offline_access",
            "The server asks you to log in. Visit this URL in a browser:",
        ],
    );
    let waiting = first
        .stderr
        .lines()
        .find(|l| l.starts_with("Waiting for the browser's redirect to http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("the redirect awaited not said: {first:?}"));
    assert!(waiting.ends_with("/callback ..."), "{waiting}");
    says_in_order(
        &first,
        &[
            waiting,
            "Token received (scope: mcp:read offline_access, with a refresh token).",
            &saved,
            &format!(
                "Logged in to {url}; the login is kept in {}.",
                file.display()
            ),
        ],
    );

    // Again: the stored token is accepted, and mcp-call says that nothing happened.
    let second = mcp_call(url, issuer, &file, &["--login"]).await;
    assert!(second.status.success(), "{second:?}");
    assert_eq!(second.visited, 0, "{second:?}");
    assert_eq!(
        second.stderr.trim(),
        format!(
            "Already logged in to {url} (the token in {} was accepted); nothing to do.",
            file.display()
        ),
        "{second:?}"
    );

    // The access token expires: refreshed, saved, said.
    auth.expire_access_tokens();
    let third = mcp_call(url, issuer, &file, &["--login"]).await;
    assert!(third.status.success(), "{third:?}");
    assert_eq!(third.visited, 0, "{third:?}");
    says_in_order(
        &third,
        &[
            &format!("{url} asks for authorization: discovering its authorization server..."),
            "Refreshing the access token...",
        ],
    );
    assert!(
        third
            .stderr
            .contains("\nAccess token refreshed (valid for "),
        "{third:?}"
    );
    says_in_order(
        &third,
        &[
            &saved,
            &format!(
                "The stored login for {url} was refreshed; kept in {}. No new login needed.",
                file.display()
            ),
        ],
    );
    assert_eq!(auth.grants(), ["authorization_code", "refresh_token"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_refused_refresh_and_a_migration_are_said() {
    let first_as = authorization_server(Knobs::default()).await;
    let demo = ProtectedDemo::start(Arc::clone(&first_as), Prm::default()).await;
    let dir = temp_dir("migration");
    let file = dir.join("tokens.json");
    let url = demo.url.as_str();
    let run = mcp_call(url, first_as.issuer_url(), &file, &["--login"]).await;
    assert!(run.status.success(), "{run:?}");

    // Both tokens expire: the refresh is refused and said, then a new login.
    first_as.expire_access_tokens();
    first_as.expire_refresh_tokens();
    let run = mcp_call(url, first_as.issuer_url(), &file, &["--login"]).await;
    assert!(run.status.success(), "{run:?}");
    assert_eq!(run.visited, 1, "{run:?}");
    says_in_order(
        &run,
        &[
            "Refreshing the access token...",
            "The stored refresh token was refused (invalid_grant): the login is dropped.",
            "Logging in, asking for scope: mcp:read offline_access",
            &format!(
                "Logged in to {url}; the login is kept in {}.",
                file.display()
            ),
        ],
    );

    // The server moves to another authorization server.
    let second_as = authorization_server(Knobs::default()).await;
    demo.migrate_to(Arc::clone(&second_as));
    let run = mcp_call(url, second_as.issuer_url(), &file, &["--login"]).await;
    assert!(run.status.success(), "{run:?}");
    assert_eq!(run.visited, 1, "{run:?}");
    says_in_order(
        &run,
        &[
            &format!("Authorization server: {}", second_as.issuer_url()),
            &format!(
                "The stored login was made at {}, but the server now uses {}: dropped, registering again.",
                first_as.issuer_url(),
                second_as.issuer_url()
            ),
            &format!(
                "Registering mcp-call at {}/register...",
                second_as.issuer_url()
            ),
            &format!(
                "Logged in to {url}; the login is kept in {}.",
                file.display()
            ),
        ],
    );
    assert!(
        !run.stderr.contains("Refreshing"),
        "no refresh token of the old server is sent to the new one: {run:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_refused_registration_is_said_with_what_to_do() {
    let auth = authorization_server(Knobs {
        registration_error: Some("invalid_client_metadata"),
        ..Knobs::default()
    })
    .await;
    let demo = ProtectedDemo::start(Arc::clone(&auth), Prm::default()).await;
    let dir = temp_dir("registration");
    let file = dir.join("tokens.json");
    let run = mcp_call(&demo.url, auth.issuer_url(), &file, &["--login"]).await;
    assert!(!run.status.success(), "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert_eq!(run.visited, 0, "{run:?}");
    says_in_order(
        &run,
        &[&format!(
            "Registering mcp-call at {}/register...",
            auth.issuer_url()
        )],
    );
    let failure = run
        .stderr
        .lines()
        .find(|l| l.starts_with("mcp-call: authorization: client registration at "))
        .unwrap_or_else(|| panic!("no failure line: {run:?}"));
    assert!(failure.contains("HTTP 400"), "{failure}");
    assert!(failure.contains("invalid_client_metadata"), "{failure}");
    assert!(
        failure.contains("mcp-call --client-id ID [--client-secret SECRET]"),
        "{failure}"
    );
    assert!(!file.exists(), "nothing saved");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_server_that_asks_nothing_is_said_so() {
    // The demo without a bearer check: --login finds nothing to do.
    let s = mcp_tests::server_harness::TestServer::start_http(
        mcp_tasks_server::http::HttpConfig::default(),
    )
    .await;
    let dir = temp_dir("open");
    let file = dir.join("tokens.json");
    let run = mcp_call(&s.url, "http://127.0.0.1:1", &file, &["--login"]).await;
    assert!(run.status.success(), "{run:?}");
    assert_eq!(
        run.stderr.trim(),
        format!("{} did not ask for authorization; nothing to do.", s.url),
        "{run:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
