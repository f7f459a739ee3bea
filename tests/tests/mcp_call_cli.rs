//! The `mcp-call` binary's rough edges, run as a user would with stdout and stderr piped
//! (not a terminal): a URL without a scheme said as such, a tool error is a failure exit,
//! no spinner escape codes, a yes/no question asked again, and the `--stdio` server's
//! logs printed whole on their own lines.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};

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

/// Runs mcp-call with `args`, `input` on its stdin, until it exits (bounded).
async fn mcp_call(args: &[&str], input: &str) -> Run {
    let mut child = tokio::process::Command::new(MCP_CALL)
        .args(args)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
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
    let mut child = tokio::process::Command::new(DEMO)
        .args(["--http", "127.0.0.1:0", "--store", "memory"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the demo");
    let stdout = child.stdout.take().expect("stdout");
    let mut first = String::new();
    let read = tokio::time::timeout(WAIT, BufReader::new(stdout).read_line(&mut first)).await;
    assert!(
        matches!(read, Ok(Ok(n)) if n > 0),
        "no first line: {read:?}"
    );
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_owned();
    (child, url)
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
