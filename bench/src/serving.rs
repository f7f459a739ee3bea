//! What every server of the benchmark does to be found and served: announcing its URL on
//! stdout (the orchestrator reads that line) and serving axum with TCP_NODELAY.

use std::io::Write;

use axum::serve::ListenerExt;

/// Prints the URL a server listens on (the orchestrator reads this line).
pub fn announce(url: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "listening on {url}");
    let _ = out.flush();
}

/// Serves an axum app with TCP_NODELAY on every accepted socket.
pub async fn serve_axum(
    listener: tokio::net::TcpListener,
    app: axum::Router,
) -> Result<(), String> {
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    announce(&format!("http://{addr}/mcp"));
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}
