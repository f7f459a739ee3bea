//! The server over stdio: newline-delimited JSON-RPC on stdin/stdout. Logs must go to
//! stderr.

use mcp_tasks_protocol::engine::{Connection, DEFAULT_MAX_FRAME_BYTES};

use crate::server::Server;

/// Serves `server` on this process's stdin and stdout until stdin closes. The requests
/// read by then are answered before it returns: each may run for up to the runtime's
/// shutdown grace ([`RuntimeConfig::shutdown_grace`](crate::RuntimeConfig)); those still
/// running then are cancelled unanswered, and logged (so `echo REQUEST | server` gets
/// its answer).
pub async fn serve(server: &Server) -> std::io::Result<()> {
    let (conn, io) = Connection::stdio(DEFAULT_MAX_FRAME_BYTES);
    let (peer, session) = server.serve_connection_draining(conn);
    drop(peer);
    session.await.map_err(std::io::Error::other)?;
    // Drain what is queued for stdout.
    let _ = io.writer.await;
    Ok(())
}
