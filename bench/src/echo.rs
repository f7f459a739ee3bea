//! The physical limit: an axum server that reads each POST body and answers one fixed
//! JSON-RPC reply, the size of a small `tools/call` result. Nothing is parsed.

use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;

const REPLY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}"#;

async fn reply(_body: Bytes) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], REPLY)
}

/// Serves until the process is killed; prints the URL on stdout first.
pub async fn serve(listener: tokio::net::TcpListener) -> Result<(), String> {
    let app = axum::Router::new().route("/mcp", axum::routing::post(reply));
    crate::serving::serve_axum(listener, app).await
}
