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
