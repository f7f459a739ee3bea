//! The `mcp-call` binary's rough edges, run as a user would with stdout and stderr piped
//! (not a terminal): a URL without a scheme said as such, a tool error is a failure exit,
//! no spinner escape codes, a yes/no question asked again, and the `--stdio` server's
//! logs printed whole on their own lines; a 401 without OAuth metadata names `--bearer`,
//! a field is asked by its title, log lines carry no colour codes, and Ctrl-C exits 130.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};

use mcp_tests::programs;
use mcp_tests::server_harness::WAIT;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const MCP_CALL: &str = env!("CARGO_BIN_EXE_mcp-call");

/// The codes the status line is drawn with on a terminal.
const REDRAW: [&str; 2] = ["\r", "\x1b[2K"];

#[derive(Debug)]
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// mcp-call with `args`, no `RUST_LOG`, every stream piped.
fn command(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(MCP_CALL);
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs mcp-call with `args`, `input` on its stdin, until it exits (bounded).
async fn mcp_call(args: &[&str], input: &str) -> Run {
    run(command(args), input).await
}

/// Runs `command`, `input` on its stdin, until it exits (bounded).
async fn run(mut command: tokio::process::Command, input: &str) -> Run {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start mcp-call");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let input = input.to_owned();
    let run = tokio::time::timeout(WAIT, async move {
        let feed = async move {
            let _ = stdin.write_all(input.as_bytes()).await;
            // Dropped here: end of input after the answers.
        };
        let (mut out, mut err) = (String::new(), String::new());
        let ((), _, _) = tokio::join!(
            feed,
            stdout.read_to_string(&mut out),
            stderr.read_to_string(&mut err)
        );
        let status = child.wait().await.expect("mcp-call ran");
        Run {
            status,
            stdout: out,
            stderr: err,
        }
    })
    .await;
    run.expect("mcp-call ends in time")
}

/// The demo on 127.0.0.1:0 with the memory store (killed on drop), and its URL.
async fn start_demo() -> (tokio::process::Child, String) {
    start_demo_with(&[]).await
}

/// [`start_demo`] with more flags.
async fn start_demo_with(flags: &[&str]) -> (tokio::process::Child, String) {
    programs::start_demo(DEMO, flags).await
}

fn token_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mcp-call-cli-{}-{name}.json", std::process::id()))
}

#[tokio::test]
async fn a_url_without_a_scheme_is_named_as_such() {
    let run = mcp_call(
        &["--http", "localhost:8000/mcp", "--bearer", "t", "greet"],
        "",
    )
    .await;
    assert!(!run.status.success(), "{run:?}");
    assert!(run.stderr.contains("no scheme"), "{run:?}");
    assert!(
        run.stderr.contains("http://localhost:8000/mcp"),
        "says what to write: {run:?}"
    );
    assert!(!run.stderr.contains("builder error"), "{run:?}");
}

/// A server that is not there is said to be not there, with what to check, not only the
/// URL reqwest failed on.
#[tokio::test]
async fn a_closed_port_is_named_as_such() {
    // A port that was free a moment ago: nothing listens there now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let run = mcp_call(&["--http", &url, "greet", r#"{"name":"x"}"#], "").await;
    assert!(!run.status.success(), "{run:?}");
    assert!(run.stderr.contains("connection refused"), "{run:?}");
    assert!(
        run.stderr.contains(&format!("127.0.0.1:{port}"))
            && run.stderr.contains("is the server running"),
        "says where and what to check: {run:?}"
    );
}

/// `failing_job` is a task whose result has `isError: true`: its text is shown and the
/// exit status is a failure; the status lines are plain lines, stderr being a pipe.
#[tokio::test]
async fn a_tool_error_fails_the_exit_status_and_says_why() {
    let (_demo, url) = start_demo().await;
    let tokens = token_file("tool-error");
    let tokens = tokens.to_str().expect("UTF-8 temp path");
    let run = mcp_call(
        &[
            "--http",
            &url,
            "--no-browser",
            "--token-file",
            tokens,
            "failing_job",
        ],
        "",
    )
    .await;
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    assert!(
        run.stdout
            .contains("tool error: The job failed: the input could not be processed."),
        "{run:?}"
    );
    assert!(run.stderr.contains(" working"), "a status line: {run:?}");
    for code in REDRAW {
        assert!(!run.stderr.contains(code), "{code:?} in {:?}", run.stderr);
    }

    let run = mcp_call(
        &[
            "--http",
            &url,
            "--no-browser",
            "--token-file",
            tokens,
            "greet",
            r#"{"name":"Ada"}"#,
        ],
        "",
    )
    .await;
    assert!(run.status.success(), "{run:?}");
    assert!(run.stdout.contains("Hello, Ada!"), "{run:?}");
}

/// Under `--stdio`, a yes/no question gets asked again on "maybe" and the answer after it
/// counts; the demo's own log lines come through whole, each on its own line.
#[tokio::test]
async fn stdio_asks_again_and_passes_the_servers_logs_through() {
    let server = format!("{DEMO} --stdio --store memory");
    let run = mcp_call(
        &[
            "--stdio",
            &server,
            "confirm_delete",
            r#"{"filename":"a.txt"}"#,
        ],
        "maybe\ny\n",
    )
    .await;
    assert!(run.status.success(), "{run:?}");
    assert!(run.stdout.contains("Deleted a.txt"), "{run:?}");
    assert_eq!(
        run.stderr.matches("please answer y or n").count(),
        1,
        "{:?}",
        run.stderr
    );
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("INFO") && l.contains("serving MCP on stdio")),
        "the server's log line: {:?}",
        run.stderr
    );
    for code in REDRAW {
        assert!(!run.stderr.contains(code), "{code:?} in {:?}", run.stderr);
    }

    // Three answers it cannot read: taken as no.
    let run = mcp_call(
        &[
            "--stdio",
            &server,
            "confirm_delete",
            r#"{"filename":"b.txt"}"#,
        ],
        "a\nb\nc\ny\n",
    )
    .await;
    assert!(run.status.success(), "{run:?}");
    assert!(run.stdout.contains("Kept b.txt"), "{run:?}");
    assert!(run.stderr.contains("taken as no"), "{run:?}");
}

/// A server with static bearer tokens answers 401 and publishes no OAuth metadata: the
/// error says so and names `--bearer TOKEN`; a token it refuses is named as the cause.
#[tokio::test]
async fn a_401_without_oauth_metadata_names_bearer() {
    let (_demo, url) = start_demo_with(&["--bearer", "alice:s3cret"]).await;
    let tokens = token_file("bearer");
    let tokens = tokens.to_str().expect("UTF-8 temp path");
    let greet = ["greet", r#"{"name":"Ada"}"#];

    let mut args = vec!["--http", &url, "--no-browser", "--token-file", tokens];
    args.extend(greet);
    let run = mcp_call(&args, "").await;
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    assert!(
        run.stderr.contains("protected resource metadata"),
        "{run:?}"
    );
    assert!(run.stderr.contains("--bearer TOKEN"), "the hint: {run:?}");

    let mut args = vec!["--http", &url, "--bearer", "wrong"];
    args.extend(greet);
    let run = mcp_call(&args, "").await;
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    assert!(run.stderr.contains("HTTP 401"), "{run:?}");
    assert!(
        run.stderr
            .contains("The server refused the token given with --bearer"),
        "{run:?}"
    );
    assert!(!run.stderr.contains("--bearer TOKEN"), "{run:?}");

    let mut args = vec!["--http", &url, "--bearer", "s3cret"];
    args.extend(greet);
    let run = mcp_call(&args, "").await;
    assert!(run.status.success(), "{run:?}");
    assert!(run.stdout.contains("Hello, Ada!"), "{run:?}");
}

/// `confirm_delete` asks for its field `confirm`, titled "Delete it?": the prompt shows
/// the title, not the key.
#[tokio::test]
async fn a_field_is_asked_by_its_title() {
    let (_demo, url) = start_demo().await;
    let tokens = token_file("title");
    let tokens = tokens.to_str().expect("UTF-8 temp path");
    let run = mcp_call(
        &[
            "--http",
            &url,
            "--no-browser",
            "--token-file",
            tokens,
            "confirm_delete",
            r#"{"filename":"c.txt"}"#,
        ],
        "y\n",
    )
    .await;
    assert!(run.status.success(), "{run:?}");
    assert!(run.stdout.contains("Deleted c.txt"), "{run:?}");
    assert!(run.stderr.contains("Delete c.txt?"), "the message: {run:?}");
    assert!(run.stderr.contains("  Delete it? [y/n]:"), "{run:?}");
    assert!(!run.stderr.contains("confirm [y/n]"), "{run:?}");
}

/// With `RUST_LOG` set and colours not forbidden (`NO_COLOR` unset), the log lines on a
/// piped stderr carry no ANSI escape codes.
#[tokio::test]
async fn log_lines_carry_no_colour_codes_when_piped() {
    let (_demo, url) = start_demo().await;
    let tokens = token_file("colour");
    let tokens = tokens.to_str().expect("UTF-8 temp path");
    let mut command = command(&[
        "--http",
        &url,
        "--no-browser",
        "--token-file",
        tokens,
        "greet",
        r#"{"name":"Ada"}"#,
    ]);
    command.env_remove("NO_COLOR").env("RUST_LOG", "debug");
    let run = run(command, "").await;
    assert!(run.status.success(), "{run:?}");
    assert!(
        run.stderr.lines().any(|l| l.contains("DEBUG")),
        "log lines: {run:?}"
    );
    assert!(
        !run.stderr.contains('\x1b'),
        "an escape code in {:?}",
        run.stderr
    );
}

/// Ctrl-C (SIGINT) while mcp-call follows a long task: the task is cancelled and the exit
/// status is 130.
#[tokio::test]
async fn ctrl_c_cancels_the_task_and_exits_130() {
    let (_demo, url) = start_demo().await;
    let tokens = token_file("ctrl-c");
    let tokens = tokens.to_str().expect("UTF-8 temp path");
    let mut child = command(&[
        "--http",
        &url,
        "--no-browser",
        "--token-file",
        tokens,
        "slow_compute",
        r#"{"seconds":60}"#,
    ])
    .spawn()
    .expect("start mcp-call");
    let pid = child.id().expect("a running mcp-call").to_string();
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut seen = Vec::new();
    // Waits for the task's status line: mcp-call is following it.
    tokio::time::timeout(WAIT, async {
        while let Some(line) = stderr.next_line().await.expect("stderr") {
            let working = line.contains(" working");
            seen.push(line);
            if working {
                return;
            }
        }
        panic!("mcp-call ended before the task was working: {seen:?}");
    })
    .await
    .expect("the task is working in time");
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("run kill");
    assert!(sent.success());
    let status = tokio::time::timeout(WAIT, async {
        while let Some(line) = stderr.next_line().await.expect("stderr") {
            seen.push(line);
        }
        child.wait().await.expect("mcp-call ran")
    })
    .await
    .expect("mcp-call ends in time after Ctrl-C");
    assert_eq!(status.code(), Some(130), "{seen:?}");
    assert!(seen.iter().any(|l| l.contains("Cancelling")), "{seen:?}");
    assert!(seen.iter().any(|l| l.ends_with(" cancelled")), "{seen:?}");
}
