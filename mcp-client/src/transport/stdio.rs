//! The stdio transport: a server run as a child process, spoken to over its stdin and
//! stdout (newline-delimited JSON-RPC).
//!
//! Invariant: the child's stderr is never read here (inherited, or as the caller set it
//! up); the returned guard owns the child (one [`spawn_stdio`] started is killed when
//! the guard drops).

use std::process::Stdio;

use mcp_tasks_protocol::engine::Connection;
use tokio::process::{Child, Command};

use super::TransportGuard;
use crate::error::ClientError;

/// Starts `program` with `args` and talks to it over its stdin/stdout. Its stderr is
/// inherited (servers log there).
pub fn spawn_stdio(
    program: &str,
    args: &[String],
) -> Result<(Connection, TransportGuard), ClientError> {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ClientError::Transport(format!("cannot start {program}: {e}").into()))?;
    from_child(child)
}

/// Talks to a started `child` over its stdin/stdout (both must be piped); the guard owns
/// the child. Its stderr is left as the caller set it up.
pub fn from_child(mut child: Child) -> Result<(Connection, TransportGuard), ClientError> {
    let stdout = child.stdout.take().ok_or_else(|| {
        ClientError::Transport("the child's stdout is not piped (Stdio::piped())".into())
    })?;
    let stdin = child.stdin.take().ok_or_else(|| {
        ClientError::Transport("the child's stdin is not piped (Stdio::piped())".into())
    })?;
    let (conn, _io) = Connection::from_io(
        stdout,
        stdin,
        mcp_tasks_protocol::engine::DEFAULT_MAX_FRAME_BYTES,
    );
    Ok((conn, TransportGuard::Child(child)))
}
