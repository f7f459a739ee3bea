//! `mcp-bench`: what `cargo xtask bench` runs, one role per process so that each can be
//! pinned to its own core.
//!
//! ```text
//! mcp-bench serve ours [--store URL] [--deadline-ms D]   our server (mcp-tasks-server)
//! mcp-bench serve rmcp                                   rmcp 3.x with the same tools
//! mcp-bench serve echo                                   axum answering one fixed body
//! mcp-bench load --url URL --workload W --concurrency C --seconds S [--tools bench|demo]
//!                [--work-min-ms A --work-max-ms B]       (the deadline workload's work)
//! mcp-bench memory --tasks N                             memory store bytes per finished task
//! ```
//!
//! Servers print `listening on URL` on stdout, then serve until killed. `load` and
//! `memory` print one JSON object.

mod echo;
mod load;
mod memory;
mod ours;
mod rmcp_server;
mod serving;
mod tools;

use std::net::SocketAddr;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "mcp-bench",
    about = "MCP tasks benchmark servers and load generator"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Target {
    Ours,
    Rmcp,
    Echo,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve one of the benchmarked servers.
    Serve {
        target: Target,
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: SocketAddr,
        /// Our server's store: memory, sqlite:PATH, postgres://..., redis://...
        #[arg(long, default_value = "memory")]
        store: String,
        /// The PostgreSQL schema or Redis key prefix inside a shared store.
        #[arg(long)]
        namespace: Option<String>,
        /// Concurrent clients to make room for (in-flight and subscription limits).
        #[arg(long, default_value_t = 256)]
        clients: usize,
        /// Our server's role: `all` (runs its tasks), `api` (queues them), `worker`
        /// (claims and runs queued tasks; its HTTP endpoint is not used).
        #[arg(long, default_value = "all")]
        role: mcp_tasks_server::Role,
        /// Our server's deadline for `maybe`, in ms: a call that takes longer becomes a
        /// task at that instant.
        #[arg(long, default_value_t = ours::DEFAULT_DEADLINE_MS)]
        deadline_ms: u64,
        /// `maybe` writes each call's task record when the call starts, not at the
        /// deadline (`ToolDef::record_up_front`).
        #[arg(long)]
        record_up_front: bool,
    },
    /// Drive a server with one workload.
    Load {
        /// The server's MCP endpoint; several (comma-separated) share the clients out
        /// round-robin.
        #[arg(long, required = true, value_delimiter = ',')]
        url: Vec<String>,
        #[arg(long, value_enum)]
        workload: load::Workload,
        /// Whose tools to call: `bench` (`mcp-bench serve`) or `demo` (the demo server).
        #[arg(long, value_enum, default_value = "bench")]
        tools: load::Tools,
        #[arg(long, default_value_t = 50)]
        concurrency: usize,
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Working tasks the `get` workload reads among.
        #[arg(long, default_value_t = 1000)]
        live_tasks: usize,
        /// How long the push workload's task works, in ms (long enough to subscribe).
        #[arg(long, default_value_t = 5)]
        push_ms: u64,
        /// The `deadline` workload's work per call, in ms, drawn uniformly from
        /// `MIN..=MAX` (default: 0 to twice `maybe`'s default deadline).
        #[arg(long, default_value_t = 0)]
        work_min_ms: u64,
        #[arg(long, default_value_t = 2 * ours::DEFAULT_DEADLINE_MS)]
        work_max_ms: u64,
    },
    /// Measure the memory store's bytes per finished task.
    Memory {
        #[arg(long, default_value_t = 1_000_000)]
        tasks: usize,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // One worker per core this process may use (the orchestrator pins each role to one).
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcp-bench: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        match cli.command {
            Command::Serve {
                target,
                addr,
                store,
                namespace,
                clients,
                role,
                deadline_ms,
                record_up_front,
            } => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
                match target {
                    Target::Ours => {
                        let deadline = std::time::Duration::from_millis(deadline_ms);
                        ours::serve(
                            listener,
                            &store,
                            namespace.as_deref(),
                            clients,
                            role,
                            deadline,
                            record_up_front,
                        )
                        .await
                    }
                    Target::Rmcp => rmcp_server::serve(listener).await,
                    Target::Echo => echo::serve(listener).await,
                }
            }
            Command::Load {
                url,
                workload,
                tools,
                concurrency,
                seconds,
                live_tasks,
                push_ms,
                work_min_ms,
                work_max_ms,
            } => {
                if work_min_ms > work_max_ms {
                    return Err(format!(
                        "--work-min-ms {work_min_ms} is above --work-max-ms {work_max_ms}"
                    ));
                }
                let report = load::run(load::Plan {
                    urls: url,
                    tools,
                    workload,
                    concurrency,
                    seconds,
                    live_tasks,
                    push_ms,
                    work_ms: (work_min_ms, work_max_ms),
                })
                .await?;
                println!("{report}");
                Ok(())
            }
            Command::Memory { tasks } => {
                println!("{}", memory::run(tasks).await?);
                Ok(())
            }
        }
    });
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
