//! Project automation, run as `cargo xtask <command>`.
//!
//! - `schema [--check]`: writes the JSON Schemas generated from `mcp-tasks-protocol`'s types into
//!   `schema/`; with `--check`, fails if the committed files are stale.
//! - `test`: first says which backend services (PostgreSQL, Redis) answer and so which
//!   backend tests run and which are SKIPPED (under `CI=true` a missing one is an error,
//!   and the tests get `MCP_REQUIRE_SERVICES=1`; see `services.rs`), and starts a
//!   three-node Redis Cluster on free loopback ports for the cluster tests, stopped when
//!   the command ends (`cluster.rs`; skipped without `redis-server`, an error under
//!   `CI=true`); then runs every test
//!   of the workspace (`cargo test: ...`), then the official MCP conformance suite's ten
//!   `tasks-*` scenarios against the demo server (`conformance: N checks passed, M
//!   failed`), then the client requirement sets of 2026-07-28 and 2025-11-25 against
//!   `mcp-tasks-client`'s conformance client (required: a scored scenario that fails fails the
//!   command) and the server requirement sets of both revisions against the conformance
//!   fixture server (`mcp-server/examples/conformance.rs`, required the same way). Every
//!   phase runs whatever an earlier one did; the command names each skip (`NOT
//!   APPLICABLE` for a behaviour a backend does not offer, `SKIPPED` for a missing
//!   service, package or file), prints one line per phase (`xtask: phase NAME: ok` or
//!   `FAILED`), and closes with one line `xtask: N passed, M failed, K skipped` (tests
//!   plus the suite's checks). `MCP_TEST_FAIL_ON_PURPOSE=1` makes one test fail, to see
//!   that.
//! - `bench [--seconds S] [--concurrency 1,50] [--runs N] [--long-seconds S] [--json PATH]
//!   [--readme] [--skip-store] [--only demo]`: our server beside rmcp and the raw loopback
//!   limit, each in a fresh pinned process (see `bench.rs`); beside them the demo as
//!   shipped on each store and the stores' own limits (`pgbench`, `redis-benchmark`); then
//!   the store benchmarks; a Markdown report, optionally JSON and the README's performance
//!   section. `--only demo`: the demo rows, the rows they are compared with and the
//!   store limits only.
//! - `fuzz --seconds N`: the fuzz targets (frames, classification, messages, SSE,
//!   cursors), N seconds each; `test` runs them for 2 seconds each.
//! - `chaos --seconds N`: the durability scenarios (`tests/tests/durability.rs`, every
//!   operation recorded and the history checked), N seconds of load each, then the chaos
//!   test; `test` runs both in their short form.
//! - `conformance --store memory | sqlite:PATH | postgres://... | redis://HOST:PORT/`: runs the `mcp-tasks` conformance kit
//!   against that backend, one line per behaviour, closing with `N passed, M failed`.
//! - `standalone`: clones the committed HEAD into an empty temporary folder and runs
//!   `cargo xtask test` there outside CI, in a target folder of its own (removed at the
//!   end); it must pass, and skip nothing for want of the official schema files (they ship
//!   in `spec/`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Cmd};

mod bench;
mod chaos;
mod cli;
mod cluster;
mod conformance;
mod fuzz;
mod leftovers;
mod schema;
mod services;
mod standalone;
mod suite;
mod summary;
mod testing;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Schema { check } => schema::run(check),
        Cmd::Test { rest } => testing::run(&rest),
        Cmd::Standalone => standalone::standalone(&workspace_root()),
        Cmd::Fuzz { seconds } => fuzz::run(seconds),
        Cmd::Chaos { seconds } => chaos::run(seconds),
        Cmd::Bench {
            seconds,
            concurrency,
            runs,
            long_seconds,
            json,
            readme,
            skip_store,
            report_from,
            only,
        } => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            // Only a run that measures needs to know which services answer.
            let mut services = if report_from.is_some() {
                Vec::new()
            } else {
                services::answering()
            }
            .into_iter();
            let options = bench::Options {
                seconds,
                concurrency,
                runs,
                long_seconds,
                json,
                readme,
                skip_store,
                postgres: services.next().flatten(),
                redis: services.next().flatten(),
                report_from,
                only_demo: only.as_deref() == Some("demo"),
            };
            bench::run(&workspace_root(), &cargo, &options)
        }
        Cmd::Conformance { store } => conformance::run(&store),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    // xtask/ sits in the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}
