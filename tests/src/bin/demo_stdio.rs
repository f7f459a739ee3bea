//! The demo server (the conformance fixture tools) on stdio, with a memory store. Logs go
//! to stderr; stdout carries only protocol frames. Used by `tests/tests/it/server_stdio.rs`.

use std::sync::Arc;

use std::time::Duration;

use mcp_tasks::MemoryStore;
use mcp_tasks_server::{RuntimeConfig, Server, demo};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let tools = match demo::tools() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("demo-stdio: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // Tests close stdin with tasks still running: keep the exit short.
    let grace_ms = std::env::var("SHUTDOWN_GRACE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let mut builder = Server::builder("demo-stdio", env!("CARGO_PKG_VERSION"))
        .store(Arc::new(MemoryStore::default()))
        .runtime(RuntimeConfig {
            shutdown_grace: Duration::from_millis(grace_ms),
            ..RuntimeConfig::default()
        });
    for tool in tools {
        builder = builder.tool(tool);
    }
    let server = builder.build();
    tracing::info!("demo server ready on stdio");
    let served = mcp_tasks_server::stdio::serve(&server).await;
    server.shutdown().await;
    tracing::info!("stdin closed; exiting");
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo-stdio: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
