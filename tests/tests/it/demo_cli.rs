//! The demo server's command line: `--http` takes a host name as well as an IP address,
//! and an address it cannot use is said at once, naming it and the form it expects;
//! `--console` and `--console-scope` are checked, and the console is announced; its
//! credential is read from `MCP_CONSOLE_CREDENTIALS` or `--console-file` too, and a
//! password on the command line is warned about.

use std::process::Stdio;

use mcp_tests::programs;
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
    let first = programs::first_line(&mut demo).await;
    assert!(
        first.contains("http://127.0.0.1:") || first.contains("http://[::1]:"),
        "{first}"
    );
    let _ = demo.start_kill();
}

/// Runs the demo with `args` until it exits (bounded by [`WAIT`]): how it exited.
async fn run_to_exit(args: &[&str]) -> std::process::Output {
    tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(DEMO)
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("exits in time")
    .expect("runs")
}

/// Runs the demo with `args`, which must be a usage error (exit code 2): its stderr.
async fn usage_error(args: &[&str]) -> String {
    let out = run_to_exit(args).await;
    assert_eq!(out.status.code(), Some(2), "{args:?}: a usage error");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn an_address_it_cannot_use_is_said_at_once() {
    let out = run_to_exit(&["--http", "no-such-host.invalid:8000", "--store", "memory"]).await;
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
    let args = [args, &["--http", "127.0.0.1:0"]].concat();
    let out = run_to_exit(&args).await;
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
    let said = usage_error(&[
        "--http",
        "127.0.0.1:0",
        "--store",
        "memory",
        "--bearer",
        "alice:t0k",
        "--oauth-issuer",
        "http://127.0.0.1:1",
    ])
    .await;
    assert!(said.contains("cannot be used with"), "{said}");
}

#[tokio::test]
async fn oauth_issuer_protects_the_demo() {
    let issuer = mcp_tests::issuer::TestIssuer::start().await;
    let oauth = ["--oauth-issuer", &issuer.issuer, "--oauth-scope", "mcp"];
    let (mut demo, url) = programs::start_demo(DEMO, &oauth).await;
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

/// A SQLite store in a folder the demo cannot write to is refused at once, saying the
/// folder is read-only and naming the file. chmod does not bind root: as root the demo
/// runs as `nobody` (setpriv); where that cannot be done the test says it skipped.
#[tokio::test]
async fn a_read_only_sqlite_folder_is_said() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("mcp-demo-ro-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let store = format!("sqlite:{}", dir.join("tasks.db").display());
    // Root writes through 0555: then run the demo as nobody, for whom it holds.
    let as_root = std::fs::write(dir.join("probe"), b"").is_ok();
    let mut command = tokio::process::Command::new(if as_root { "setpriv" } else { DEMO });
    if as_root {
        let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"];
        let can = std::process::Command::new("setpriv")
            .args(nobody)
            .arg("true")
            .status()
            .is_ok_and(|s| s.success());
        if !can {
            let _ = std::fs::remove_dir_all(&dir);
            mcp_tasks::conformance::report_skip(
                "demo read-only SQLite folder: running as root (chmod does not bind) and \
                 setpriv cannot switch to nobody",
            );
            return;
        }
        command.args(nobody).arg(DEMO);
    }
    let out = tokio::time::timeout(
        WAIT,
        command
            .args(["--store", &store, "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("exits in time")
    .expect("runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success(), "started on a read-only folder");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cannot open the SQLite store"), "{said}");
    assert!(said.contains("is read-only for this process"), "{said}");
    assert!(said.contains("tasks.db"), "names the file: {said}");
    assert!(
        said.contains("Permission denied"),
        "the OS's reason: {said}"
    );
}

/// At SIGTERM with a task running, the demo says it waits for it and for how long.
#[tokio::test]
async fn shutdown_says_what_it_waits_for() {
    use tokio::io::AsyncBufReadExt;
    let mut demo = tokio::process::Command::new(DEMO)
        .args(["--http", "127.0.0.1:0", "--store", "memory"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the demo");
    let mut stdout = tokio::io::BufReader::new(demo.stdout.take().expect("stdout"));
    let mut first = String::new();
    let read = tokio::time::timeout(WAIT, stdout.read_line(&mut first)).await;
    assert!(matches!(read, Ok(Ok(n)) if n > 0), "{read:?}");
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_owned();
    let tokens =
        std::env::temp_dir().join(format!("mcp-demo-shutdown-{}.json", std::process::id()));
    let detached = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-call"))
            .args(["--http", &url, "--no-browser", "--token-file"])
            .arg(&tokens)
            .args(["--detach", "slow_compute", r#"{"seconds":60}"#])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("mcp-call ends in time")
    .expect("mcp-call runs");
    assert!(detached.status.success(), "{detached:?}");

    let pid = demo.id().expect("running").to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(sent.success());
    let mut lines = tokio::io::BufReader::new(demo.stderr.take().expect("stderr")).lines();
    let said = tokio::time::timeout(WAIT, async {
        let mut said = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            said.push_str(&line);
            said.push('\n');
            if line.starts_with("demo: shutting down") {
                return (said, Some(line));
            }
        }
        (said, None)
    })
    .await
    .expect("said in time");
    let Some(line) = said.1 else {
        panic!("no shutdown line in {}", said.0)
    };
    assert!(
        line.contains("waiting up to 10 s for 1 running task"),
        "{line}"
    );
    assert!(line.contains("cancelled"), "{line}");
    // The 10 s wait itself is the runtime's (tests/tests/it/server_shutdown.rs); kill now.
    let _ = demo.start_kill();
}

/// `--console` and `--console-scope`: bad values and combinations are usage errors.
#[tokio::test]
async fn console_flags_are_checked() {
    for (args, says) in [
        (&["--console", "admin"][..], "expected USER:PASSWORD"),
        (&["--console", ":pw"], "user name is empty"),
        (&["--console", "admin:"], "password is empty"),
        (&["--console-scope", "console"], "--oauth-issuer"),
        (
            &[
                "--console",
                "a:b",
                "--console-scope",
                "c",
                "--oauth-issuer",
                "http://127.0.0.1:1",
            ],
            "cannot be used with",
        ),
        (&["--console", "a:b", "--role", "worker"], "--role worker"),
        (&["--console", "a:b", "--stdio"], "cannot be used with"),
        (
            &["--console", "a:b", "--console-file", "/nonexistent"],
            "cannot be used with",
        ),
        (
            &["--console-file", "/nonexistent/console-credentials"],
            "cannot read the console credentials file /nonexistent/console-credentials",
        ),
    ] {
        let said = usage_error(&[&["--store", "memory"][..], args].concat()).await;
        assert!(said.contains(says), "{args:?}: {said}");
    }
}

/// The demo started with `args` and `env`, its stderr piped, and the console's URL it
/// announced (`http://127.0.0.1:PORT/console`), after its line saying so, which must
/// name Basic authentication as `admin`.
async fn start_with_console(
    args: &[&str],
    env: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut demo = tokio::process::Command::new(DEMO)
        .args(["--http", "127.0.0.1:0", "--store", "memory"])
        .args(args)
        .env_remove(CONSOLE_ENV)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the demo");
    let mut lines = tokio::io::BufReader::new(demo.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(WAIT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.starts_with("Operator console on ") {
                return Some(line);
            }
        }
        None
    })
    .await
    .expect("announced in time")
    .expect("the console line");
    assert!(
        line.contains("HTTP Basic authentication as admin"),
        "{line}"
    );
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("a URL")
        .to_owned();
    assert!(url.ends_with("/console"), "{url}");
    (demo, url)
}

/// The console at `url` is behind Basic: 401 without a credential and with a wrong
/// password, 200 with `admin` and `password`.
async fn behind_basic(url: &str, password: &str) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .expect("client");
    let counts = format!("{url}/api/counts");
    let refused = client.get(&counts).send().await.expect("reply");
    assert_eq!(refused.status(), 401);
    let wrong = client
        .get(&counts)
        .basic_auth("admin", Some("not-the-password"))
        .send()
        .await
        .expect("reply");
    assert_eq!(wrong.status(), 401);
    let allowed = client
        .get(&counts)
        .basic_auth("admin", Some(password))
        .send()
        .await
        .expect("reply");
    assert_eq!(allowed.status(), 200);
}

/// Kills the demo: what it wrote on stderr (within [`WAIT`]).
async fn stderr_after_kill(mut demo: tokio::process::Child) -> String {
    use tokio::io::AsyncReadExt;
    let _ = demo.start_kill();
    let mut stderr = demo.stderr.take().expect("stderr");
    let mut said = String::new();
    let _ = tokio::time::timeout(WAIT, stderr.read_to_string(&mut said)).await;
    let _ = tokio::time::timeout(WAIT, demo.wait()).await;
    said
}

/// The environment variable of the console's Basic credential.
const CONSOLE_ENV: &str = "MCP_CONSOLE_CREDENTIALS";

/// What the demo says when the password is on the command line.
const COMMAND_LINE_WARNING: &str = "puts the console password on the command line";

/// `--console USER:PASSWORD`: the demo says where the console is, that it is behind
/// Basic, and warns that the password is on the command line.
#[tokio::test]
async fn the_console_is_announced_and_behind_basic() {
    let (demo, url) = start_with_console(&["--console", "admin:pw"], &[]).await;
    behind_basic(&url, "pw").await;
    let said = stderr_after_kill(demo).await;
    assert!(said.contains(COMMAND_LINE_WARNING), "{said}");
    assert!(
        said.contains(CONSOLE_ENV) && said.contains("--console-file"),
        "{said}"
    );
}

/// `MCP_CONSOLE_CREDENTIALS=USER:PASSWORD`: the console is behind Basic with that
/// credential, with no warning; a bad value is a usage error that does not repeat it.
#[tokio::test]
async fn the_console_credential_comes_from_the_environment() {
    let password = "env:pass word";
    let pair = format!("admin:{password}");
    let (demo, url) = start_with_console(&[], &[(CONSOLE_ENV, &pair)]).await;
    behind_basic(&url, password).await;
    let said = stderr_after_kill(demo).await;
    assert!(!said.contains(COMMAND_LINE_WARNING), "{said}");
    assert!(!said.contains(password), "{said}");

    let out = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(DEMO)
            .args(["--http", "127.0.0.1:0", "--store", "memory"])
            .env(CONSOLE_ENV, "no-colon-secret")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("exits in time")
    .expect("runs");
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(CONSOLE_ENV) && said.contains("expected USER:PASSWORD"),
        "{said}"
    );
    assert!(!said.contains("no-colon-secret"), "{said}");
}

/// A file of the test's own, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    /// `text` in a new file readable by its owner only.
    fn new(name: &str, text: &str) -> TempFile {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::temp_dir().join(format!("mcp-demo-{name}-{}", std::process::id()));
        std::fs::write(&path, text).expect("write the file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `--console-file PATH`: the first line of the file, trimmed, is the credential; a file
/// without one is a usage error naming the file, not its content.
#[tokio::test]
async fn the_console_credential_comes_from_a_file() {
    let password = "file:pass";
    let file = TempFile::new("console", &format!("  admin:{password} \n"));
    let (demo, url) = start_with_console(&["--console-file", file.path()], &[]).await;
    behind_basic(&url, password).await;
    let said = stderr_after_kill(demo).await;
    assert!(!said.contains(COMMAND_LINE_WARNING), "{said}");
    assert!(!said.contains(password), "{said}");

    let bad = TempFile::new("console-bad", "no-colon-secret\n");
    let said = usage_error(&["--store", "memory", "--console-file", bad.path()]).await;
    assert!(
        said.contains(bad.path()) && said.contains("expected USER:PASSWORD"),
        "{said}"
    );
    assert!(!said.contains("no-colon-secret"), "{said}");
}
