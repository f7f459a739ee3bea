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
//! - `conformance --store memory | sqlite:PATH | postgres://... | redis://HOST:PORT/`: runs the `mcp-tasks` conformance kit
//!   against that backend, one line per behaviour, closing with `N passed, M failed`.
//! - `standalone`: clones the committed HEAD into an empty temporary folder and runs
//!   `cargo xtask test` there outside CI, in a target folder of its own (removed at the
//!   end); it must pass, and skip nothing for want of the official schema files (they ship
//!   in `spec/`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use clap::{Parser, Subcommand};
use mcp_tasks_protocol::schema::{Revision, generate};

mod bench;
mod cluster;
mod conformance;
mod leftovers;
mod services;
mod standalone;
mod suite;

#[derive(Parser)]
#[command(
    name = "xtask",
    about = "Project automation for the MCP tasks workspace"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Schema { check } => schema(check),
        Cmd::Test { rest } => test(&rest),
        Cmd::Standalone => standalone::standalone(&workspace_root()),
        Cmd::Fuzz { seconds } => fuzz(seconds),
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

fn schema(check: bool) -> Result<(), String> {
    let dir = workspace_root().join("schema");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut stale = Vec::new();
    for revision in Revision::ALL {
        let path = dir.join(revision.file_name());
        let mut text =
            serde_json::to_string_pretty(&generate(revision)).map_err(|e| e.to_string())?;
        text.push('\n');
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == text {
            println!("schema/{}: up to date", revision.file_name());
        } else if check {
            stale.push(revision.file_name());
        } else {
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            println!("schema/{}: written", revision.file_name());
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "stale generated schemas: {} (run `cargo xtask schema`)",
            stale.join(", ")
        ))
    }
}

fn fuzz(seconds: f64) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .env("MCP_FUZZ_SECONDS", seconds.to_string())
        .args([
            "test",
            "--release",
            "-p",
            "mcp-tests",
            "--test",
            "fuzz",
            "--",
            "--test-threads=1",
            "--nocapture",
        ])
        .status()
        .map_err(|e| format!("cannot run the fuzz targets: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("a fuzz target failed".into())
    }
}

fn test(rest: &[String]) -> Result<(), String> {
    install_npm_packages()?;
    // Tests that skip themselves (a service, a file, a package missing) append a line
    // here; the summary counts and names them.
    let skip_log = workspace_root().join("target").join("xtask-skipped.txt");
    let _ = std::fs::create_dir_all(workspace_root().join("target"));
    std::fs::write(&skip_log, "")
        .map_err(|e| format!("cannot write {}: {e}", skip_log.display()))?;
    let before = leftovers::snapshot();
    let (tests, ignored) = cargo_test(rest, &skip_log)?;
    // Every phase runs whatever an earlier one did: a failing test must not hide the
    // conformance figures.
    let mut phases = vec![tests];
    phases.extend(conformance_phases(rest));
    phases.push(Phase {
        name: "leftovers".into(),
        passed: 0,
        failed: 0,
        outcome: leftovers::check(&before, &leftovers::snapshot()),
    });
    summarize(&phases, ignored, &skipped_tests(&skip_log))
}

/// The workspace's tests (`cargo test --workspace`, echoed as they run) as a phase, and
/// how many were ignored.
fn cargo_test(rest: &[String], skip_log: &Path) -> Result<(Phase, u64), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root())
        .env("MCP_SKIP_LOG", skip_log)
        .args(["test", "--workspace", "--no-fail-fast"]);
    if !rest.is_empty() {
        cmd.arg("--").args(rest);
    }
    services::prepare(&mut cmd, is_ci())?;
    // Stopped when dropped, once the tests are done however they end.
    let _cluster = cluster::prepare(
        &mut cmd,
        is_ci() || std::env::var(services::REQUIRE_ENV).is_ok_and(|v| v == "1"),
    )?;
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    println!("xtask: running {cmd:?}");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    let stdout = child.stdout.take().ok_or("cargo test has no stdout")?;
    // Echo cargo's output as it comes and add up its per-binary summaries.
    let mut totals = Totals::default();
    use std::io::BufRead;
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.map_err(|e| e.to_string())?;
        println!("{line}");
        totals.add(&line);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    println!(
        "cargo test: {} passed, {} failed, {} ignored ({} test binaries)",
        totals.passed, totals.failed, totals.ignored, totals.binaries
    );
    let outcome = if !status.success() || totals.failed > 0 {
        Err(format!("{} failed ({status})", totals.failed))
    } else if totals.passed == 0 {
        Err("no test ran".to_owned())
    } else {
        Ok(format!("{} ignored", totals.ignored))
    };
    let phase = Phase {
        name: "cargo test".into(),
        passed: totals.passed,
        failed: totals.failed,
        outcome,
    };
    Ok((phase, totals.ignored))
}

/// Names every skip, prints a line per phase and the closing line; an error naming the
/// phases that failed.
fn summarize(phases: &[Phase], ignored: u64, skipped: &[String]) -> Result<(), String> {
    let (by_design, missing): (Vec<_>, Vec<_>) =
        skipped.iter().partition(|s| s.starts_with(BY_DESIGN));
    for what in &by_design {
        println!("xtask: NOT APPLICABLE {}", &what[BY_DESIGN.len()..]);
    }
    for what in &missing {
        println!("xtask: SKIPPED {what}");
    }
    // A closing line per phase, then one for everything.
    for phase in phases {
        match &phase.outcome {
            Ok(note) => println!(
                "xtask: phase {}: ok, {} passed, {} failed ({note})",
                phase.name, phase.passed, phase.failed
            ),
            Err(why) => println!(
                "xtask: phase {}: FAILED, {} passed, {} failed: {why}",
                phase.name, phase.passed, phase.failed
            ),
        }
    }
    let passed: u64 = phases.iter().map(|p| p.passed).sum();
    let failed: u64 = phases
        .iter()
        .map(|p| p.failed.max(u64::from(p.outcome.is_err())))
        .sum();
    println!(
        "xtask: {passed} passed, {failed} failed, {} skipped ({} ignored, {} not applicable by design, {} skipped for want of a service, package or file{})",
        ignored + skipped.len() as u64,
        ignored,
        by_design.len(),
        missing.len(),
        if missing.is_empty() {
            ""
        } else {
            ": see the SKIPPED lines above"
        }
    );
    let failures: Vec<&str> = phases
        .iter()
        .filter(|p| p.outcome.is_err())
        .map(|p| p.name.as_str())
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("phases failed: {}", failures.join(", ")))
    }
}

/// The prefix a by-design skip's line has in the skip log
/// (`mcp_tasks::conformance::report_not_applicable`): a behaviour the backend does not
/// offer, not something missing from the machine.
const BY_DESIGN: &str = mcp_tasks::conformance::NOT_APPLICABLE;

/// One phase of `cargo xtask test` and how it went: its checks passed and failed, and
/// `Ok(note)` or `Err(why)`.
struct Phase {
    name: String,
    passed: u64,
    failed: u64,
    outcome: Result<String, String>,
}

impl Phase {
    fn failed(name: &str, why: String) -> Phase {
        Phase {
            name: name.into(),
            passed: 0,
            failed: 0,
            outcome: Err(why),
        }
    }
}

/// The official conformance suite's phases against our demo, client and fixture server,
/// unless a test filter was given: the `tasks-*` scenarios, then the client and the server
/// requirement sets of both revisions, each run whatever the others did. Without the
/// suite installed they are skipped (said loudly), except under `CI=true`, where that is a
/// failure.
fn conformance_phases(filter: &[String]) -> Vec<Phase> {
    if !filter.is_empty() {
        println!("xtask: official conformance suite not run (a test filter was given)");
        return Vec::new();
    }
    let root = workspace_root();
    let Some(installed) = suite::Suite::find(&root) else {
        let how = "npm ci --prefix tests/conformance-suite";
        if is_ci() {
            let why = format!("not installed (CI=true): run `{how}`");
            return vec![Phase::failed("conformance", why)];
        }
        println!("xtask: SKIPPED the official conformance suite: not installed (run `{how}`)");
        return Vec::new();
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut phases = Vec::new();
    let name = "conformance: tasks scenarios";
    phases.push(match suite::run(&root, &cargo, &installed) {
        Ok(report) => {
            println!(
                "conformance: {} checks passed, {} failed",
                report.passed, report.failed
            );
            Phase {
                name: name.into(),
                passed: report.passed,
                failed: report.failed,
                outcome: if report.scenarios_failed.is_empty() {
                    Ok("every scenario passed".into())
                } else {
                    Err(format!(
                        "scenarios failed: {}",
                        report.scenarios_failed.join(", ")
                    ))
                },
            }
        }
        Err(e) => Phase::failed(name, e),
    });
    // The client leg: both requirement sets' client scenarios against our conformance
    // client. Required: every check of every scenario it runs, scored or not (the
    // extensions' and not-yet-released ones too), must pass (`suite::run_client_requirements`).
    // The server leg: both requirement sets against the conformance fixture server on
    // SQLite; a scored scenario that fails fails the phase.
    for (side, revision) in [
        ("client", "2026-07-28"),
        ("client", "2025-11-25"),
        ("server", "2026-07-28"),
        ("server", "2025-11-25"),
    ] {
        let name = format!("conformance: {side} requirements {revision}");
        let run = if side == "client" {
            suite::run_client_requirements(&root, &cargo, &installed, revision)
        } else {
            suite::run_requirements(&root, &cargo, &installed, revision)
        };
        phases.push(match run {
            Ok(r) if r.scored == 0 => Phase::failed(&name, "no scenario scored".into()),
            Ok(r) => {
                let passing = r.scored - r.scenarios_failed.len();
                println!(
                    "conformance: {side} requirements {}: {passing} of {} scored scenarios pass",
                    r.revision, r.scored
                );
                Phase {
                    name,
                    passed: r.passed,
                    failed: r.scenarios_failed.len() as u64,
                    outcome: if r.scenarios_failed.is_empty() {
                        Ok(format!("{passing} of {} scored scenarios", r.scored))
                    } else {
                        Err(format!(
                            "scenarios failed: {}",
                            r.scenarios_failed.join(", ")
                        ))
                    },
                }
            }
            Err(e) => Phase::failed(&name, e),
        });
    }
    phases
}

/// The distinct skips the tests reported in `log`, in order.
fn skipped_tests(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && seen.insert(l.to_owned()))
        .map(str::to_owned)
        .collect()
}

/// The pinned npm packages the tests use (the official conformance suite, the
/// TypeScript SDK interop and the MCP tasks client library interop), installed with
/// `npm ci` when `npm` is on the PATH and they are missing or older than their lock file.
/// Without `npm` the tests that need them say they are skipped (a failure under
/// `CI=true`).
fn install_npm_packages() -> Result<(), String> {
    let root = workspace_root();
    for dir in ["tests/conformance-suite", "tests/ts-sdk", "tests/ext-tasks"] {
        let folder = root.join(dir);
        let lock = folder.join("package-lock.json");
        let installed = folder.join("node_modules/.package-lock.json");
        let fresh = match (std::fs::metadata(&lock), std::fs::metadata(&installed)) {
            (Ok(l), Ok(i)) => match (l.modified(), i.modified()) {
                (Ok(l), Ok(i)) => i >= l,
                _ => true,
            },
            (Err(_), _) => continue,
            (Ok(_), Err(_)) => false,
        };
        if fresh {
            continue;
        }
        let npm = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefix"])
            .arg(&folder)
            .status();
        match npm {
            Ok(status) if status.success() => println!("xtask: installed {dir} (npm ci)"),
            Ok(status) => return Err(format!("npm ci --prefix {dir} failed ({status})")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                println!(
                    "xtask: npm not found: {dir} not installed; the tests that need it will say so"
                );
            }
            Err(e) => return Err(format!("cannot run npm: {e}")),
        }
    }
    Ok(())
}

/// Whether this runs in CI (`CI=true` or `CI=1`): nothing may be skipped there.
fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Sums of cargo test's `test result: ok. N passed; M failed; K ignored; ...` lines.
#[derive(Default)]
struct Totals {
    passed: u64,
    failed: u64,
    ignored: u64,
    binaries: u64,
}

impl Totals {
    fn add(&mut self, line: &str) {
        let Some(rest) = line.strip_prefix("test result: ") else {
            return;
        };
        self.binaries += 1;
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(what), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match what {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                "ignored" => self.ignored += n,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Totals;

    #[test]
    fn totals_add_up_cargo_summaries() {
        let mut t = Totals::default();
        t.add("test result: ok. 8 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.07s");
        t.add("test result: FAILED. 2 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1s");
        t.add("running 3 tests");
        assert_eq!((t.passed, t.failed, t.ignored, t.binaries), (10, 3, 1, 2));
    }

    /// `MCP_TEST_FAIL_ON_PURPOSE=1 cargo xtask test` makes this test fail, to see that the
    /// command still runs every phase (the official conformance suite included) and
    /// prints each one's figures.
    #[test]
    fn fails_on_purpose_when_asked() {
        assert!(
            std::env::var("MCP_TEST_FAIL_ON_PURPOSE")
                .ok()
                .is_none_or(|v| v != "1"),
            "failing on purpose: MCP_TEST_FAIL_ON_PURPOSE=1"
        );
    }
}
