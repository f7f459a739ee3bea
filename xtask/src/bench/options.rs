//! What `cargo xtask bench` was asked to do: the command line, shared by the running
//! (`bench.rs`) and the report (`render.rs`), which names it in its heading.

use std::path::PathBuf;

/// What `cargo xtask bench` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    pub seconds: f64,
    pub concurrency: Vec<usize>,
    pub runs: usize,
    pub long_seconds: f64,
    pub json: Option<PathBuf>,
    pub readme: bool,
    pub skip_store: bool,
    pub postgres: Option<String>,
    pub redis: Option<String>,
    /// Only rewrite the report (and README) from this earlier `--json` file.
    pub report_from: Option<PathBuf>,
    /// `--only demo`: only the demo rows, the bench-server rows they are compared with
    /// (at the demo rows' 50 clients, ours on the durable stores without the Redis
    /// Cluster) and the stores' own limits; no criterion store benchmarks, long run,
    /// scale-out row or memory figures.
    pub only_demo: bool,
}
