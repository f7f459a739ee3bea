//! Serves the test fixture's methods on stdio (newline-delimited JSON-RPC). Logs go to
//! stderr; stdout carries only protocol frames. Used by `tests/tests/it/engine_stdio.rs`.

use std::sync::Arc;

use mcp_tasks_protocol::engine::{Connection, EndpointBuilder};
use mcp_tests::{Observed, fixture_methods};

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let max = std::env::var("MAX_FRAME_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64 * 1024);
    // The interleaving test keeps 1,000 requests in flight: above the default limit.
    let endpoint = EndpointBuilder::new(fixture_methods(Arc::new(Observed::default())))
        .max_inflight_requests(4096)
        .max_frame_bytes(max)
        .build();
    let (conn, io) = Connection::stdio(max);
    tracing::info!("stdio peer ready");
    let (peer, session) = endpoint.serve(conn);
    drop(peer);
    // The session ends at EOF on stdin; the writer then drains what is queued and ends
    // once the last sender is gone.
    let _ = session.await;
    let _ = io.writer.await;
    tracing::info!("stdin closed; exiting");
}
