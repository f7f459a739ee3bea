//! The demo as shipped (`mcp-tasks-server --example demo`, release) under the load the
//! bench server gets, in the same run: its defaults (`RUST_LOG` unset, so its default log
//! level; only `--http`, `--store` and, on a shared store, `--namespace` given), its own
//! tools (`mcp-bench load --tools demo`), pinned like the others (demo on the server's
//! CPU, load on the load generator's), at [`CLIENTS`] clients. On the memory store every
//! workload of [`MEMORY_WORKLOADS`]; on SQLite (a file in a temporary directory),
//! PostgreSQL and Redis the poll lifecycle, each run in a fresh schema or key prefix that
//! is removed after it. The demo's stderr goes to a file: the report gives its log lines
//! and bytes per operation, and its warnings.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::options::Options;
use super::render::per_second;
use super::scratch::{PgSchema, RedisKeys, installed};
use super::{Bench, Server, one_line, peak_rss_kib, target_dir};

/// The clients of every demo row (and of the bench-server rows it is compared with).
pub(super) const CLIENTS: usize = 50;

/// The workloads the demo runs on the memory store.
pub(super) const MEMORY_WORKLOADS: [&str; 5] =
    ["call", "get", "lifecycle-poll", "lifecycle-push", "update"];

/// Variables that would change the demo's defaults (log level, OTLP export, console);
/// removed from its environment.
const UNSET: [&str; 6] = [
    "RUST_LOG",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "MCP_CONSOLE_CREDENTIALS",
];

/// Whether the bench-server row of `target` running `workload` is one the demo rows are
/// compared with: ours on the demo's workloads, and the limits of the ratios (echo's
/// `call`, rmcp's poll lifecycle).
pub(super) fn compared(target: &str, workload: &str) -> bool {
    match target {
        "ours" => MEMORY_WORKLOADS.contains(&workload),
        "echo" => workload == "call",
        "rmcp" => workload == "lifecycle-poll",
        _ => false,
    }
}

/// Builds the release demo; its path.
pub(super) fn build(root: &Path, cargo: &str) -> Result<PathBuf, String> {
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--release",
            "-p",
            "mcp-tasks-server",
            "--example",
            "demo",
        ])
        .status()
        .map_err(|e| format!("cannot build the demo: {e}"))?;
    if !status.success() {
        return Err(
            "building the demo (`cargo build --release -p mcp-tasks-server --example demo`) failed"
                .into(),
        );
    }
    Ok(target_dir(root).join("release/examples/demo"))
}

/// A store the demo runs on.
enum Store {
    Memory,
    Sqlite,
    Postgres(String),
    Redis(String),
}

impl Store {
    /// Its name in the report (the bench server's store rows use the same).
    fn name(&self) -> &'static str {
        match self {
            Store::Memory => "memory",
            Store::Sqlite => "SQLite",
            Store::Postgres(_) => "PostgreSQL",
            Store::Redis(_) => "Redis",
        }
    }
}

/// A temporary directory, removed with what is in it when dropped.
pub(super) struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(what: &str) -> Result<TempDir, String> {
        let path = std::env::temp_dir().join(format!("mcp-bench-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every demo row: the memory workloads, then the poll lifecycle on each durable store
/// that answers (a missing store or tool, or a row that failed, is named in `skipped`).
pub(super) fn rows(
    bench: &Bench,
    demo: &Path,
    options: &Options,
    skipped: &mut Vec<String>,
) -> Result<Vec<Value>, String> {
    let mut stores = vec![
        (Store::Memory, MEMORY_WORKLOADS.as_slice()),
        (Store::Sqlite, &["lifecycle-poll"]),
    ];
    match (&options.postgres, installed("psql")) {
        (Some(url), Ok(())) => stores.push((Store::Postgres(url.clone()), &["lifecycle-poll"])),
        (Some(_), Err(why)) => skipped.push(format!(
            "the demo on PostgreSQL: {why} (it drops the run's schema)"
        )),
        (None, _) => skipped.push("the demo on PostgreSQL: no PostgreSQL answers".into()),
    }
    match (&options.redis, installed("redis-cli")) {
        (Some(url), Ok(())) => stores.push((Store::Redis(url.clone()), &["lifecycle-poll"])),
        (Some(_), Err(why)) => skipped.push(format!(
            "the demo on Redis: {why} (it deletes the run's keys)"
        )),
        (None, _) => skipped.push("the demo on Redis: no Redis answers".into()),
    }
    let dir = TempDir::new("demo")?;
    let mut rows = Vec::new();
    for (store, workloads) in &stores {
        for workload in *workloads {
            // A row that fails is said, not the end of a long run.
            match row(bench, demo, &dir.0, store, workload, options) {
                Ok(row) => rows.push(row),
                Err(why) => skipped.push(format!(
                    "the demo's {workload} on {}: failed: {why}",
                    store.name()
                )),
            }
        }
    }
    Ok(rows)
}

/// One demo row: `runs` fresh demos (and fresh namespaces), the median by throughput.
fn row(
    bench: &Bench,
    demo: &Path,
    dir: &Path,
    store: &Store,
    workload: &str,
    options: &Options,
) -> Result<Value, String> {
    let mut results = Vec::new();
    for run in 0..options.runs.max(1) {
        let namespace = format!("mcp_bench_demo_{}_{run}", std::process::id());
        let sqlite = dir.join(format!("{namespace}.db"));
        // What the run leaves in a shared store, removed when dropped (after the demo).
        let (url, schema, keys) = match store {
            Store::Memory => ("memory".to_owned(), None, None),
            Store::Sqlite => (format!("sqlite:{}", sqlite.display()), None, None),
            Store::Postgres(url) => (
                url.clone(),
                Some(PgSchema::new(url, namespace.clone())?),
                None,
            ),
            Store::Redis(url) => (
                url.clone(),
                None,
                Some(RedisKeys::new(url, format!("{{{namespace}}}*"))?),
            ),
        };
        let shared = schema.is_some() || keys.is_some();
        let log = dir.join(format!("{namespace}-{workload}.log"));
        let (server, endpoint) = serve(bench, demo, dir, &url, shared.then_some(&namespace), &log)?;
        let before = file_len(&log);
        let mut report = bench.load_with(&endpoint, workload, CLIENTS, options.seconds, "demo")?;
        let logged = LogTail::read(&log, before)?;
        report["server_peak_rss_kib"] = json!(peak_rss_kib(server.0.id()));
        drop(server);
        drop((schema, keys));
        for suffix in ["", "-wal", "-shm", ".lock"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", sqlite.display()));
        }
        let _ = std::fs::remove_file(&log);
        let ops = report["operations"].as_f64().unwrap_or(0.0).max(1.0);
        report["log_lines_per_op"] = json!(logged.lines as f64 / ops);
        report["log_bytes_per_op"] = json!(logged.bytes as f64 / ops);
        report["log_warnings"] = json!(logged.warnings);
        report["first_log_warning"] = json!(logged.first_warning);
        results.push(report);
    }
    results.sort_by(|a, b| per_second(a).total_cmp(&per_second(b)));
    let mut median = results.swap_remove(results.len() / 2);
    median["target"] = json!("demo");
    median["workload_key"] = json!(workload);
    median["store"] = json!(store.name());
    median["runs"] = json!(options.runs.max(1));
    eprintln!(
        "  {}  [{}; log {:.2} lines, {:.0} B per op; {} warnings]",
        one_line(&median),
        store.name(),
        median["log_lines_per_op"].as_f64().unwrap_or(0.0),
        median["log_bytes_per_op"].as_f64().unwrap_or(0.0),
        median["log_warnings"]
    );
    if let Some(first) = median["first_log_warning"].as_str() {
        eprintln!("    first warning: {first}");
    }
    Ok(median)
}

/// Starts the demo on `store`, its stderr into `log`; its MCP endpoint once it listens.
fn serve(
    bench: &Bench,
    demo: &Path,
    dir: &Path,
    store: &str,
    namespace: Option<&String>,
    log: &Path,
) -> Result<(Server, String), String> {
    let stderr =
        std::fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let mut command = bench.pinned(bench.pin.map(|p| p.0), demo);
    command
        .current_dir(dir)
        .args(["--http", "127.0.0.1:0", "--store", store]);
    if let Some(ns) = namespace {
        command.args(["--namespace", ns]);
    }
    for var in UNSET {
        command.env_remove(var);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("cannot start the demo: {e}"))?;
    let stdout = child.stdout.take().ok_or("the demo has no stdout")?;
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let url = line
        .strip_prefix("MCP tasks demo server on ")
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_owned);
    url.map(|u| (server, u)).ok_or_else(|| {
        let said = std::fs::read_to_string(log).unwrap_or_default();
        format!(
            "the demo did not start on {}: {line:?}; stderr: {}",
            crate::services::redact(store),
            said.trim()
        )
    })
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// What the demo logged after an offset of its log.
struct LogTail {
    lines: u64,
    bytes: u64,
    /// Lines at level WARN or ERROR.
    warnings: u64,
    first_warning: Option<String>,
}

impl LogTail {
    fn read(path: &Path, from: u64) -> Result<LogTail, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let tail = text.get(from as usize..).unwrap_or_default();
        Ok(LogTail::of(&String::from_utf8_lossy(tail)))
    }

    /// `text`'s lines as `tracing`'s format writes them: `TIMESTAMP  LEVEL target: ...`.
    fn of(text: &str) -> LogTail {
        let mut tail = LogTail {
            lines: 0,
            bytes: text.len() as u64,
            warnings: 0,
            first_warning: None,
        };
        for line in text.lines() {
            tail.lines += 1;
            if matches!(line.split_whitespace().nth(1), Some("WARN" | "ERROR")) {
                tail.warnings += 1;
                tail.first_warning
                    .get_or_insert_with(|| line.chars().take(400).collect());
            }
        }
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::LogTail;

    #[test]
    fn log_lines_and_warnings_are_counted() {
        let text = "2026-12-07T06:07:04.700410Z  INFO mcp_tasks_server::audit: op=\"create\"\n\
                    2026-12-07T06:07:04.700411Z  WARN mcp_tasks_server::http: slow\n\
                    2026-12-07T06:07:04.700412Z ERROR mcp_tasks_server::store: down\n";
        let tail = LogTail::of(text);
        assert_eq!(
            (tail.lines, tail.bytes, tail.warnings),
            (3, text.len() as u64, 2)
        );
        assert!(tail.first_warning.is_some_and(|w| w.ends_with("slow")));
    }
}
