//! `cargo xtask test`: the npm packages the tests use, the workspace's tests (with the
//! backend services and the Redis Cluster they need), the official conformance suite's
//! phases and the leftovers check, each run whatever an earlier one did; `summary.rs`
//! adds them up.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::summary::{Phase, Totals, skipped_tests, summarize};
use crate::{cluster, leftovers, services, suite, workspace_root};

pub(crate) fn run(rest: &[String]) -> Result<(), String> {
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
