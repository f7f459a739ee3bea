//! Starting the programs the end-to-end tests run as children, the same way in every
//! test: the demo server (or any program that prints its URL on its first line) and
//! `mcp-call` with a token file, and connecting an [`McpClient`] that logs in. The
//! binaries' paths come from the test (`env!("CARGO_BIN_EXE_...")` exists only there).

use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::Arc;

use mcp_tasks_client::auth::AuthConfig;
use mcp_tasks_client::{ClientConfig, ClientError, ClientHandler, McpClient};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::server_harness::WAIT;

/// Starts `program` with `--http 127.0.0.1:0 --store memory` and `args` (killed on drop)
/// and reads the `http://127.0.0.1:PORT/...` URL from its first line; panics (the test
/// fails) when none comes within [`WAIT`].
pub async fn start_demo(program: &str, args: &[&str]) -> (Child, String) {
    let mut child = Command::new(program)
        .args(["--http", "127.0.0.1:0", "--store", "memory"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the demo");
    let first = first_line(&mut child).await;
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_owned();
    (child, url)
}

/// The first line `child` writes to its piped stdout; panics (the test fails) when none
/// comes within [`WAIT`].
pub async fn first_line(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("stdout piped");
    let mut first = String::new();
    let read = tokio::time::timeout(WAIT, BufReader::new(stdout).read_line(&mut first)).await;
    assert!(
        matches!(read, Ok(Ok(n)) if n > 0),
        "no first line: {read:?}"
    );
    first
}

/// `mcp-call` (at `program`) `--http URL --no-open --token-file FILE`, stdin closed,
/// stdout and stderr piped, `RUST_LOG` unset, killed on drop: add the arguments and spawn.
pub fn mcp_call(program: &str, url: &str, token_file: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .args(["--http", url, "--no-open", "--token-file"])
        .arg(token_file)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs `command` to its end within [`WAIT`]; its output.
pub async fn output_in_time(command: &mut Command) -> Output {
    let child = command.spawn().expect("start the program");
    tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("the program ends in time")
        .expect("the program ran")
}

/// Connects to `url` logging in with `auth`, `handler` answering the server's requests;
/// bounded by [`WAIT`].
pub async fn connect_with_auth(
    url: &str,
    handler: Arc<dyn ClientHandler>,
    auth: AuthConfig,
) -> Result<McpClient, ClientError> {
    let config = ClientConfig {
        auth: Some(auth),
        ..ClientConfig::default()
    };
    tokio::time::timeout(WAIT, McpClient::connect_http(url, handler, config))
        .await
        .expect("in time")
}
