//! The command line of `cargo xtask` (clap): its commands and their options.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "xtask",
    about = "Project automation for the MCP tasks workspace"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Cmd,
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
    /// Write (or with --check, verify) the generated JSON Schemas in schema/.
    Schema {
        /// Fail instead of writing when a file would change.
        #[arg(long)]
        check: bool,
    },
    /// Run the TaskStore conformance kit against a backend.
    Conformance {
        /// `memory`, `sqlite:PATH` (each behaviour gets its own file next to PATH), a
        /// `postgres://` / `postgresql://` URL (each behaviour gets its own schema there), or
        /// `redis://HOST:PORT/` (each behaviour gets its own key prefix `kit:<namespace>`).
        #[arg(long)]
        store: String,
    },
    /// Benchmarks: our server beside rmcp and the loopback limit (mcp-bench, release,
    /// pinned), long-run flatness, durable stores, memory per task, and the criterion
    /// store benchmarks.
    Bench {
        /// Seconds per workload, target and concurrency.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Concurrent clients, comma separated (ratios are given at the largest).
        #[arg(long, value_delimiter = ',', default_value = "1,50")]
        concurrency: Vec<usize>,
        /// Fresh-server runs per row; the median by throughput is reported.
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// Length of the lifecycle run that compares its first and last 10 s (0: none).
        #[arg(long, default_value_t = 60.0)]
        long_seconds: f64,
        /// Also write the results as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write the report into README.md (between the bench:begin/end markers).
        #[arg(long)]
        readme: bool,
        /// Skip the criterion store benchmarks.
        #[arg(long)]
        skip_store: bool,
        /// Run nothing: rewrite the report (and with --readme, README.md) from this
        /// earlier `--json` file; give the options that run used.
        #[arg(long)]
        report_from: Option<PathBuf>,
        /// `demo`: only the demo as shipped, the bench-server rows it is compared with
        /// and the stores' own limits (no criterion, long run, cluster or memory rows).
        #[arg(long, value_parser = ["demo"])]
        only: Option<String>,
    },
    /// Run the fuzz targets (tests/tests/fuzz.rs) for longer than `cargo xtask test` does.
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
    },
    /// The fault tests in their long form: each durability scenario (history-checked) for
    /// `seconds` of load, then the chaos test.
    Chaos {
        /// Seconds of load per durability scenario.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
    },
    /// Clone the repository (its committed HEAD) into an empty temporary folder, with
    /// nothing beside it, and run `cargo xtask test` there outside CI: it must pass, and
    /// skip nothing for want of the official schema files (they ship in `spec/`). It
    /// builds in a folder of its own in the target folder, removed at the end.
    Standalone,
    /// Run every test in the workspace (unit, integration, doc tests).
    Test {
        /// Extra arguments passed to `cargo test` after `--` (e.g. a test name filter).
        #[arg(last = true)]
        rest: Vec<String>,
    },
}
