//! The demo server's command line: `--http` takes a host name as well as an IP address,
//! and an address it cannot use is said at once, naming it and the form it expects.

use std::process::Stdio;

use mcp_tests::server_harness::WAIT;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");

#[tokio::test]
async fn http_takes_a_host_name() {
    let mut demo = tokio::process::Command::new(DEMO)
        .args(["--http", "localhost:0", "--store", "memory"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the demo");
    let stdout = demo.stdout.take().expect("stdout");
    let mut first = String::new();
    let read = tokio::time::timeout(WAIT, async {
        use tokio::io::AsyncBufReadExt;
        tokio::io::BufReader::new(stdout)
            .read_line(&mut first)
            .await
    })
    .await;
    assert!(
        matches!(read, Ok(Ok(n)) if n > 0),
        "no first line: {read:?}"
    );
    assert!(
        first.contains("http://127.0.0.1:") || first.contains("http://[::1]:"),
        "{first}"
    );
    let _ = demo.start_kill();
}

#[tokio::test]
async fn an_address_it_cannot_use_is_said_at_once() {
    let out = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(DEMO)
            .args(["--http", "no-such-host.invalid:8000", "--store", "memory"])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("exits in time")
    .expect("runs");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("cannot listen on no-such-host.invalid:8000"),
        "{said}"
    );
    assert!(said.contains("HOST:PORT"), "{said}");
}

/// Runs the demo with `args` until it exits; its stderr.
async fn refused(args: &[&str]) -> String {
    let out = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(DEMO)
            .args(args)
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("exits in time")
    .expect("runs");
    assert!(!out.status.success(), "{args:?} started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A store it cannot reach is said with where it looked and why.
#[tokio::test]
async fn an_unreachable_store_is_named_with_its_cause() {
    let said = refused(&["--store", "redis://127.0.0.1:1/"]).await;
    assert!(said.contains("cannot open the Redis store"), "{said}");
    assert!(said.contains("(at 127.0.0.1:1)"), "{said}");
    assert!(said.to_lowercase().contains("refused"), "{said}");

    let said = refused(&["--store", "postgres://postgres@127.0.0.1:1/test"]).await;
    assert!(said.contains("cannot open the PostgreSQL store"), "{said}");
    assert!(said.contains("(at 127.0.0.1:1/test)"), "{said}");
    assert!(said.to_lowercase().contains("refused"), "{said}");
}

/// What the PostgreSQL server answers is passed on, with the database it was asked for.
#[tokio::test]
async fn a_postgres_refusal_says_the_servers_message() {
    if mcp_tasks::conformance::PostgresFactory::from_env().is_none() {
        return;
    }
    let said = refused(&[
        "--store",
        "postgres://no_such_role_here@127.0.0.1:5432/no_such_db",
    ])
    .await;
    assert!(said.contains("no_such_role_here"), "{said}");
    assert!(said.contains("(at 127.0.0.1:5432/no_such_db)"), "{said}");
}

#[tokio::test]
async fn bearer_and_oauth_issuer_cannot_be_combined() {
    let out = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(DEMO)
            .args([
                "--http",
                "127.0.0.1:0",
                "--store",
                "memory",
                "--bearer",
                "alice:t0k",
                "--oauth-issuer",
                "http://127.0.0.1:1",
            ])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("exits in time")
    .expect("runs");
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cannot be used with"), "{said}");
}

/// `--oauth-issuer` against a real issuer: 401 naming the metadata, the metadata naming
/// the demo's own URL as the resource, and a token for that audience with the required
/// scope let in.
#[tokio::test]
async fn oauth_issuer_protects_the_demo() {
    let issuer = mcp_tests::issuer::TestIssuer::start().await;
    let mut demo = tokio::process::Command::new(DEMO)
        .args(["--http", "127.0.0.1:0", "--store", "memory"])
        .args(["--oauth-issuer", &issuer.issuer, "--oauth-scope", "mcp"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the demo");
    let stdout = demo.stdout.take().expect("stdout");
    let mut first = String::new();
    let read = tokio::time::timeout(WAIT, async {
        use tokio::io::AsyncBufReadExt;
        tokio::io::BufReader::new(stdout)
            .read_line(&mut first)
            .await
    })
    .await;
    assert!(
        matches!(read, Ok(Ok(n)) if n > 0),
        "no first line: {read:?}"
    );
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("the URL")
        .to_owned();
    let origin = url.trim_end_matches("/mcp").to_owned();
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .expect("client");
    let call = mcp_tests::server_harness::request(
        1,
        "tools/call",
        mcp_tests::server_harness::call_params("greet", serde_json::json!({"name": "d"}), false),
    );
    let post = |token: Option<String>| {
        let mut post = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(call.to_string());
        for (name, value) in mcp_tests::server_harness::standard_headers(&call) {
            post = post.header(name, value);
        }
        if let Some(t) = token {
            post = post.header("authorization", format!("Bearer {t}"));
        }
        post.send()
    };
    let refused = post(None).await.expect("POST");
    assert_eq!(refused.status(), 401);
    let metadata = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        refused.headers()["www-authenticate"],
        format!("Bearer scope=\"mcp\", resource_metadata=\"{metadata}\"").as_str()
    );
    let doc: serde_json::Value = http
        .get(&metadata)
        .send()
        .await
        .expect("GET metadata")
        .json()
        .await
        .expect("JSON");
    assert_eq!(doc["resource"], url.as_str(), "{doc}");
    assert_eq!(
        doc["authorization_servers"][0],
        issuer.issuer.as_str(),
        "{doc}"
    );
    let ok = post(Some(issuer.token("dora", &url, &["mcp"])))
        .await
        .expect("POST");
    assert_eq!(ok.status(), 200);
    let _ = demo.start_kill();
}
