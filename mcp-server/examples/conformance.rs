//! The conformance fixture server: every tool, resource, prompt and completion the
//! official conformance suite's server scenarios call by name (`mcp_tasks_server::demo::fixtures`
//! and `demo::catalog`), plus the demo's task tools (`demo::tools`), serving MCP
//! 2026-07-28 and 2025-11-25 on one endpoint.
//!
//! ```text
//! cargo run -p mcp-tasks-server --features demo --example conformance -- --http 127.0.0.1:8000 --store memory
//! cargo run -p mcp-tasks-server --features demo --example conformance -- --stdio
//! ```
//!
//! Over HTTP the first line on stdout names the URL. Run the suite against it:
//!
//! ```text
//! node tests/conformance-suite/node_modules/@modelcontextprotocol/conformance/dist/index.js \
//!     server --url http://127.0.0.1:8000/mcp --requirements 2026-07-28 -o /tmp/out
//! ```
//!
//! `--store memory | sqlite:PATH` (default `memory`; any URL `store_url::open` knows)
//! holds the task tools' tasks.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use mcp_tasks::Limits;
use mcp_tasks_server::http::{HttpConfig, local_url};
use mcp_tasks_server::{Server, demo, store_url};

#[derive(Parser, Debug)]
#[command(name = "conformance", about = "MCP conformance fixture server")]
struct Args {
    /// Serve Streamable HTTP on this address.
    #[arg(long, default_value = "127.0.0.1:8000", conflicts_with = "stdio")]
    http: SocketAddr,
    /// Serve on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
    /// Where the task tools' tasks live: `memory`, `sqlite:PATH`, ...
    #[arg(long, default_value = "memory")]
    store: String,
}

fn fail(what: impl std::fmt::Display) -> ExitCode {
    eprintln!("conformance: {what}");
    ExitCode::FAILURE
}

async fn build(store: &str) -> Result<Server, String> {
    let store = store_url::open(store, None, Limits::default())
        .await
        .map_err(|e| e.to_string())?;
    // The suite's fixtures first: a scenario that calls "the first listed tool" with no
    // arguments finds `test_simple_text`, which needs none.
    let mut tools = demo::fixtures::tools().map_err(|e| e.to_string())?;
    tools.extend(demo::tools().map_err(|e| e.to_string())?);
    let mut builder = Server::builder("mcp-conformance-fixture", env!("CARGO_PKG_VERSION"))
        .store(store)
        .instructions("Conformance fixtures: tools, resources, prompts and completion with the names the official suite calls.");
    for tool in tools {
        builder = builder.tool(tool);
    }
    Ok(demo::catalog::catalog(builder)
        .map_err(|e| e.to_string())?
        .build())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let server = match build(&args.store).await {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    if args.stdio {
        let served = mcp_tasks_server::stdio::serve(&server).await;
        server.shutdown().await;
        return served.map_or_else(fail, |()| ExitCode::SUCCESS);
    }
    let listener = match tokio::net::TcpListener::bind(args.http).await {
        Ok(l) => l,
        Err(e) => return fail(format!("cannot listen on {}: {e}", args.http)),
    };
    let url = local_url(listener.local_addr().unwrap_or(args.http), "/mcp");
    // Errors ignored: whoever reads our stdout may stop reading early.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "MCP conformance fixture server on {url} (store: {})",
        store_url::shown(&args.store)
    );
    let _ = out.flush();
    drop(out);
    let token = server.shutdown_token();
    let stop = async move {
        let _ = tokio::signal::ctrl_c().await;
        token.cancel();
    };
    let served =
        mcp_tasks_server::http::serve(&server, listener, HttpConfig::default(), stop).await;
    server.shutdown().await;
    served.map_or_else(fail, |()| ExitCode::SUCCESS)
}
