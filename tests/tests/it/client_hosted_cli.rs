//! `mcp-call --client-tasks`: the session is MCP 2025-11-25 with client-hosted tasks
//! declared (memory store), and a server's task-based elicitation is answered at the
//! terminal. Against the official TypeScript SDK's server (`tests/ts-sdk/hosted-server.mjs`,
//! which reports whether its elicitation became a task of the client) and our demo tools.

use std::process::{ExitStatus, Stdio};

use mcp_tests::server_harness::{TestServer, WAIT};
use mcp_tests::ts_sdk::Sdk;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MCP_CALL: &str = env!("CARGO_BIN_EXE_mcp-call");

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
    tokio::time::timeout(WAIT, async move {
        let feed = async move {
            let _ = stdin.write_all(input.as_bytes()).await;
        };
        let (mut out, mut err) = (String::new(), String::new());
        let ((), _, _) = tokio::join!(
            feed,
            stdout.read_to_string(&mut out),
            stderr.read_to_string(&mut err)
        );
        Run {
            status: child.wait().await.expect("mcp-call ran"),
            stdout: out,
            stderr: err,
        }
    })
    .await
    .expect("mcp-call ends in time")
}

/// The report `ask_both` printed as its result.
fn report(run: &Run) -> Value {
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no report on stdout: {run:?}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_servers_task_based_elicitation_is_answered_at_the_terminal() {
    let Some(sdk) = Sdk::find() else { return };
    let server = format!(
        "{} {} --stdio",
        sdk.node().display(),
        sdk.script("hosted-server.mjs").display()
    );
    let run = mcp_call(&["--stdio", &server, "--client-tasks", "ask_both"], "Ada\n").await;
    assert!(run.status.success(), "{run:?}");
    let both = report(&run);
    let elicitation = &both["elicitation"];
    assert_eq!(elicitation["created"]["status"], "working", "{both}");
    assert_eq!(elicitation["result"]["action"], "accept", "{both}");
    assert_eq!(elicitation["result"]["content"]["name"], "Ada", "{both}");
    assert!(
        run.stderr.contains("Your name?"),
        "asked at the terminal: {run:?}"
    );

    // Without the flag the client declares no tasks: the SDK refuses to ask it as one.
    let run = mcp_call(&["--stdio", &server, "ask_both"], "Ada\n").await;
    let both = report(&run);
    assert_eq!(both["elicitation"]["created"], Value::Null, "{both}");
    assert!(both["elicitation"]["error"].is_object(), "{both}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_servers_question_is_answered_at_the_terminal_with_client_tasks() {
    let server = TestServer::start().await;
    let run = mcp_call(
        &[
            "--http",
            &server.url,
            "--client-tasks",
            "confirm_delete",
            r#"{"filename":"a.txt"}"#,
        ],
        "y\n",
    )
    .await;
    assert!(run.status.success(), "{run:?}");
    assert!(run.stdout.contains("Deleted a.txt"), "{run:?}");
    server.stop().await;
}
