//! The demo server: the conformance fixture tools, served over Streamable HTTP (default
//! 127.0.0.1:8000/mcp) or stdio, on the SQLite store at ./mcp-tasks.db by default.
//!
//! ```text
//! cargo run -p mcp-server --example demo
//! cargo run -p mcp-server --example demo -- --http 127.0.0.1:0 --store memory
//! cargo run -p mcp-server --example demo -- --stdio
//! ```

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use clap::Parser;
use mcp_server::http::{HttpConfig, local_url};
use mcp_server::{Server, demo};
use mcp_tasks::{Limits, MemoryStore, TaskStore};

#[derive(Parser, Debug)]
#[command(
    name = "demo",
    about = "MCP tasks demo server (the conformance fixture tools)"
)]
struct Args {
    /// Serve Streamable HTTP on this address.
    #[arg(long, default_value = "127.0.0.1:8000", conflicts_with = "stdio")]
    http: SocketAddr,
    /// Serve on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
    /// Where tasks live: `memory`, `sqlite:PATH`.
    #[arg(long, default_value = "sqlite:./mcp-tasks.db")]
    store: String,
}

fn open_store(url: &str) -> Result<Arc<dyn TaskStore>, String> {
    let limits = Limits::default();
    match url
        .split_once(':')
        .map_or((url, ""), |(scheme, rest)| (scheme, rest))
    {
        ("memory", _) => Ok(Arc::new(MemoryStore::new(limits))),
        ("sqlite", path) if !path.is_empty() => mcp_tasks::SqliteStore::open(path, limits)
            .map(|s| Arc::new(s) as Arc<dyn TaskStore>)
            .map_err(|e| format!("cannot open {path}: {e}")),
        ("postgres" | "postgresql" | "redis", _) => Err(format!(
            "the {url} backend is not built yet; use memory or sqlite:PATH"
        )),
        _ => Err(format!(
            "unknown store {url:?}: expected memory or sqlite:PATH"
        )),
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return ctrl_c.await.unwrap_or_default(),
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let store = match open_store(&args.store) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("demo: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let tools = match demo::tools() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("demo: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut builder = Server::builder("mcp-tasks-demo", env!("CARGO_PKG_VERSION"))
        .store(store)
        .instructions("Demo tools for MCP tasks: slow_compute runs as a task; confirm_delete asks before it acts.");
    for tool in tools {
        builder = builder.tool(tool);
    }
    let server = builder.build();

    if args.stdio {
        tracing::info!(store = %args.store, "serving MCP on stdio");
        let served = mcp_server::stdio::serve(&server).await;
        server.shutdown().await;
        return match served {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("demo: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }

    let listener = match tokio::net::TcpListener::bind(args.http).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("demo: cannot listen on {}: {e}", args.http);
            return std::process::ExitCode::FAILURE;
        }
    };
    let addr = listener.local_addr().unwrap_or(args.http);
    let url = local_url(addr, "/mcp");
    // Errors ignored: whoever reads our stdout may stop reading early.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "MCP tasks demo server on {url} (store: {})",
        args.store
    );
    let _ = writeln!(out, "Try it:");
    let _ = writeln!(
        out,
        "  curl -s {url} -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n    -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"slow_compute\",\"arguments\":{{\"seconds\":5}},\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{\"extensions\":{{\"io.modelcontextprotocol/tasks\":{{}}}}}}}}}}}}'"
    );
    let _ = out.flush();
    drop(out);
    let token = server.shutdown_token();
    let stop = async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        token.cancel();
    };
    let served = mcp_server::http::serve(&server, listener, HttpConfig::default(), stop).await;
    server.shutdown().await;
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
