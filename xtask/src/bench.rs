//! `cargo xtask bench`: our server side by side with rmcp and with the physical limit of
//! HTTP on this machine, plus the store benchmarks. Everything it runs is `mcp-bench`
//! (bench/), built in release.
//!
//! For each workload, target and concurrency (and each of `--runs`), a fresh server
//! process is pinned to CPU 0 and the load generator to CPU 1 (`taskset`; unpinned, and
//! said so, where that is impossible). Reported: throughput, latency p50/p90/p99/max,
//! push latency, requests per operation, the server's peak RSS, and for the
//! deadline-promoted tool the split between synchronous answers and promoted tasks
//! (ours only); the median run of each
//! row by throughput. Then: a long lifecycle run (first vs last 10 s) on ours and rmcp,
//! lifecycles on SQLite / PostgreSQL / Redis / a three-node Redis Cluster (the one
//! `MCP_TEST_REDIS_CLUSTER_NODES` names, else one started here with `cluster.rs`, skipped
//! without `redis-server`), memory per finished task, and the criterion
//! store benchmarks (time per operation at 1k vs 1M live tasks). The report is printed
//! as Markdown, optionally written as JSON (`--json`) and into README.md between
//! `<!-- bench:begin -->` and `<!-- bench:end -->` (`--readme`).
//!
//! Beside them, in the same run: the demo as shipped on each store (`demo.rs`), and what
//! PostgreSQL and Redis themselves sustain for a minimal task lifecycle (`limits.rs`).
//! `--only demo` runs only those, with the bench-server rows they are compared with (see
//! [`Options::only_demo`]).
//!
//! This file runs the benchmarks and gathers the report; `render.rs` renders and
//! publishes it (`render_demo.rs`: the demo's section); `options.rs` is what was asked;
//! `scratch.rs` removes what the runs leave in the shared stores.

mod demo;
mod limits;
mod options;
mod render;
mod render_demo;
mod scratch;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

pub use options::Options;
use render::{per_second, publish};

const TARGETS: [&str; 3] = ["ours", "rmcp", "echo"];

/// The workloads, each with the targets it applies to.
const WORKLOADS: [(&str, &[&str]); 7] = [
    ("call", &["ours", "rmcp", "echo"]),
    ("lifecycle-poll", &["ours", "rmcp"]),
    ("lifecycle-push", &["ours"]),
    // The same pushed on an MCP 2025-11-25 session's standalone stream.
    ("lifecycle-push-session", &["ours"]),
    // The limit of `get` is echo's `call`: the same fixed-size exchange.
    ("get", &["ours", "rmcp"]),
    ("update", &["ours", "rmcp"]),
    // A tool taking 0-2x its deadline: synchronous answers vs promoted tasks (rmcp has
    // no deadline promotion).
    ("deadline", &["ours"]),
];

/// The deadline of the `deadline` workload's tool, in ms; each call works 0 to twice this.
const DEADLINE_MS: u64 = 10;

struct Bench {
    binary: PathBuf,
    /// `taskset` CPU lists for the server and the load generator, when pinning works.
    pin: Option<(&'static str, &'static str)>,
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Bench {
    fn command(&self, cpu: Option<&str>) -> Command {
        self.pinned(cpu, &self.binary)
    }

    /// `program`, on `cpu` when given.
    fn pinned(&self, cpu: Option<&str>, program: impl AsRef<OsStr>) -> Command {
        match cpu {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpu]).arg(program);
                c
            }
            None => Command::new(program),
        }
    }

    /// Starts a fresh server; its URL once it listens.
    fn serve(&self, target: &str, extra: &[&str]) -> Result<(Server, String), String> {
        let mut child = self
            .command(self.pin.map(|p| p.0))
            .args(["serve", target])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the {target} server: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let server = Server(child);
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let url = line
            .strip_prefix("listening on ")
            .map(|u| u.trim().to_owned())
            .ok_or_else(|| format!("the {target} server did not start: {line:?}"))?;
        Ok((server, url))
    }

    fn load(
        &self,
        url: &str,
        workload: &str,
        concurrency: usize,
        seconds: f64,
    ) -> Result<Value, String> {
        self.load_with(url, workload, concurrency, seconds, "bench")
    }

    /// [`load`](Self::load) calling `tools`' tools (`bench`, or `demo`: the demo's).
    fn load_with(
        &self,
        url: &str,
        workload: &str,
        concurrency: usize,
        seconds: f64,
        tools: &str,
    ) -> Result<Value, String> {
        let output = self
            .command(self.pin.map(|p| p.1))
            .args([
                "load",
                "--url",
                url,
                "--workload",
                workload,
                "--tools",
                tools,
            ])
            .args(["--concurrency", &concurrency.to_string()])
            .args(["--seconds", &seconds.to_string()])
            .args(if workload == "deadline" {
                vec![
                    "--work-min-ms".to_owned(),
                    "0".to_owned(),
                    "--work-max-ms".to_owned(),
                    (2 * DEADLINE_MS).to_string(),
                ]
            } else {
                Vec::new()
            })
            .output()
            .map_err(|e| format!("cannot run the load generator: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "load generator failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        serde_json::from_slice(&output.stdout).map_err(|e| format!("load generator output: {e}"))
    }

    /// The scale-out row: two worker nodes and two API nodes of ours on one PostgreSQL
    /// schema (`url`), every process pinned with the servers; the load shared out over
    /// the API nodes. `runs` fresh clusters (on a fresh schema each), the median run.
    fn cluster_row(&self, url: &str, seconds: f64, runs: usize) -> Result<Value, String> {
        let mut results = Vec::new();
        for run in 0..runs.max(1) {
            let namespace = format!("mcp_bench_cluster_{}_{run}", std::process::id());
            let node = |role: &str| {
                self.serve(
                    "ours",
                    &["--store", url, "--namespace", &namespace, "--role", role],
                )
            };
            let mut nodes = Vec::new();
            for role in ["worker", "worker", "api", "api"] {
                nodes.push(node(role)?);
            }
            let api: Vec<&str> = nodes[2..].iter().map(|(_, u)| u.as_str()).collect();
            let report = self.load(&api.join(","), "lifecycle-poll", 50, seconds)?;
            drop(nodes);
            results.push(report);
        }
        results.sort_by(|a, b| per_second(a).total_cmp(&per_second(b)));
        let mut median = results.swap_remove(results.len() / 2);
        median["target"] = json!("ours: 2 API + 2 worker nodes, PostgreSQL");
        median["runs"] = json!(runs.max(1));
        eprintln!("  {}", one_line(&median));
        Ok(median)
    }

    /// One row: `runs` fresh servers, the median run by throughput, with peak RSS.
    fn row(
        &self,
        target: &str,
        extra: &[&str],
        workload: &str,
        concurrency: usize,
        seconds: f64,
        runs: usize,
    ) -> Result<Value, String> {
        let mut results = Vec::new();
        for _ in 0..runs.max(1) {
            let (server, url) = self.serve(target, extra)?;
            let mut report = self.load(&url, workload, concurrency, seconds)?;
            report["server_peak_rss_kib"] = json!(peak_rss_kib(server.0.id()));
            drop(server);
            results.push(report);
        }
        results.sort_by(|a, b| per_second(a).total_cmp(&per_second(b)));
        let mut median = results.swap_remove(results.len() / 2);
        median["target"] = json!(target);
        median["workload_key"] = json!(workload);
        median["runs"] = json!(runs.max(1));
        eprintln!("  {}", one_line(&median));
        Ok(median)
    }
}

fn one_line(r: &Value) -> String {
    format!(
        "{:<6} {:<32} c={:<4} {:>9.0}/s  p50 {:>6} µs  p99 {:>6} µs  errors {}{}",
        r["target"].as_str().unwrap_or(""),
        r["workload"].as_str().unwrap_or(""),
        r["concurrency"],
        per_second(r),
        r["p50_us"],
        r["p99_us"],
        r["errors"],
        r["first_error"]
            .as_str()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default()
    )
}

/// A process's peak resident set (VmHWM), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn pinning() -> Option<(&'static str, &'static str)> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let taskset = Command::new("taskset")
        .args(["-c", "0", "true"])
        .status()
        .is_ok_and(|s| s.success());
    (cores >= 2 && taskset).then_some(("0", "1"))
}

fn build(root: &Path, cargo: &str) -> Result<PathBuf, String> {
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["build", "--release", "-p", "mcp-bench"])
        .status()
        .map_err(|e| format!("cannot build mcp-bench: {e}"))?;
    if !status.success() {
        return Err("building mcp-bench failed".into());
    }
    Ok(target_dir(root).join("release/mcp-bench"))
}

/// Cargo's target directory.
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// The criterion store benchmarks; medians in ns by (operation, size).
fn store_benches(root: &Path, cargo: &str) -> Result<Value, String> {
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["bench", "-p", "mcp-tasks", "--bench", "store"])
        .status()
        .map_err(|e| format!("cannot run the store benchmarks: {e}"))?;
    if !status.success() {
        return Err("store benchmarks failed".into());
    }
    let target = target_dir(root);
    let mut out = serde_json::Map::new();
    for op in ["get", "create", "complete", "resolve"] {
        let mut sizes = serde_json::Map::new();
        for n in [1_000, 100_000, 1_000_000] {
            let path = target.join(format!(
                "criterion/store_memory/{op}/{n}/new/estimates.json"
            ));
            if let Some(ns) = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| v["median"]["point_estimate"].as_f64())
            {
                sizes.insert(n.to_string(), json!(ns));
            }
        }
        out.insert(op.to_owned(), Value::Object(sizes));
    }
    Ok(Value::Object(out))
}

/// Runs everything; prints the report.
pub fn run(root: &Path, cargo: &str, options: &Options) -> Result<(), String> {
    if let Some(path) = &options.report_from {
        let text =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let report: Value =
            serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        return publish(root, &report, options);
    }
    let only_demo = options.only_demo;
    let store = if options.skip_store || only_demo {
        None
    } else {
        Some(store_benches(root, cargo)?)
    };
    let bench = Bench {
        binary: build(root, cargo)?,
        pin: pinning(),
    };
    // Built before anything is measured; without it, the demo rows are skipped (said so).
    let demo_binary = demo::build(root, cargo);
    match bench.pin {
        Some((s, l)) => eprintln!("bench: server on CPU {s}, load generator on CPU {l}"),
        None => {
            eprintln!("bench: NOT pinned (fewer than 2 CPUs or no taskset): figures are noisier")
        }
    }
    let rows = bench.workload_rows(options, only_demo)?;
    let long = if only_demo {
        Vec::new()
    } else {
        bench.long_rows(options)?
    };
    let stores = bench.store_rows(options, !only_demo)?;
    let streams = if only_demo {
        Vec::new()
    } else {
        bench.stream_rows(options)?
    };
    // Scale-out: API nodes in front, workers behind, on PostgreSQL.
    let cluster = match (&options.postgres, only_demo) {
        (Some(url), false) => Some(bench.cluster_row(url, options.seconds, options.runs)?),
        _ => None,
    };
    let memory = if only_demo {
        Value::Null
    } else {
        let output = bench
            .command(None)
            .args(["memory", "--tasks", "1000000"])
            .output()
            .map_err(|e| e.to_string())?;
        serde_json::from_slice::<Value>(&output.stdout).map_err(|e| format!("memory run: {e}"))?
    };
    // The demo as shipped, and the stores' own limits.
    let mut skipped = Vec::new();
    let demo = match &demo_binary {
        Ok(binary) => demo::rows(&bench, binary, options, &mut skipped)?,
        Err(why) => {
            skipped.push(format!("the demo rows: {why}"));
            Vec::new()
        }
    };
    let store_limits = limits::measure(&bench, options, &mut skipped);
    for what in &skipped {
        eprintln!("bench: SKIPPED {what}");
    }
    let report = json!({
        "date": date(),
        "commit": commit(root),
        "machine": format!("{} CPUs, {}", std::thread::available_parallelism().map_or(1, |n| n.get()), cpu_model()),
        "pinned": bench.pin.is_some(),
        "seconds": options.seconds,
        "runs": options.runs,
        "rows": rows,
        "long": long,
        "stores": stores,
        "streams": streams,
        "cluster": cluster,
        "memory": memory,
        "store_benches": store,
        "only": only_demo.then_some("demo"),
        "demo": demo,
        "store_limits": store_limits,
        "skipped": skipped,
    });
    publish(root, &report, options)
}

impl Bench {
    /// Every workload on each of its targets, at each concurrency; with `only_demo`, only
    /// the rows the demo rows are compared with, at their clients.
    fn workload_rows(&self, options: &Options, only_demo: bool) -> Result<Vec<Value>, String> {
        let bench = self;
        let mut rows = Vec::new();
        let concurrency = if only_demo {
            vec![demo::CLIENTS]
        } else {
            options.concurrency.clone()
        };
        for (workload, targets) in WORKLOADS {
            for &c in &concurrency {
                for target in TARGETS
                    .iter()
                    .filter(|t| targets.contains(t) && (!only_demo || demo::compared(t, workload)))
                {
                    if workload == "deadline" {
                        let deadline = DEADLINE_MS.to_string();
                        let extra = ["--deadline-ms", deadline.as_str()];
                        let mut row = bench.row(
                            target,
                            &extra,
                            workload,
                            c,
                            options.seconds,
                            options.runs,
                        )?;
                        row["deadline_ms"] = json!(DEADLINE_MS);
                        rows.push(row);
                    } else {
                        rows.push(bench.row(
                            target,
                            &[],
                            workload,
                            c,
                            options.seconds,
                            options.runs,
                        )?);
                    }
                }
            }
        }
        Ok(rows)
    }

    /// Does throughput hold as finished tasks pile up?
    fn long_rows(&self, options: &Options) -> Result<Vec<Value>, String> {
        let bench = self;
        let mut long = Vec::new();
        if options.long_seconds > 0.0 {
            for target in ["ours", "rmcp"] {
                long.push(bench.row(target, &[], "lifecycle-poll", 50, options.long_seconds, 1)?);
            }
        }
        Ok(long)
    }

    /// Our lifecycles on the durable stores (on a Redis Cluster too with `cluster`).
    fn store_rows(&self, options: &Options, cluster: bool) -> Result<Vec<Value>, String> {
        let bench = self;
        let mut stores = Vec::new();
        let sqlite = std::env::temp_dir().join(format!("mcp-bench-{}.db", std::process::id()));
        let sqlite_url = format!("sqlite:{}", sqlite.display());
        let mut backends = vec![("SQLite", sqlite_url.clone(), None)];
        if let Some(url) = &options.postgres {
            backends.push(("PostgreSQL", url.clone(), Some("mcp_bench")));
        }
        if let Some(url) = &options.redis {
            backends.push(("Redis", url.clone(), Some("mcp-bench")));
        }
        // Kept until the rows are measured: a cluster started here stops when dropped.
        let redis_cluster = if cluster { redis_cluster() } else { None };
        if let Some((url, _)) = &redis_cluster {
            backends.push(("Redis Cluster (3 nodes)", url.clone(), Some("mcp-bench")));
        }
        for (name, url, namespace) in backends {
            let mut extra = vec!["--store", url.as_str()];
            if let Some(ns) = namespace {
                extra.extend(["--namespace", ns]);
            }
            let mut row = bench.row(
                "ours",
                &extra,
                "lifecycle-poll",
                50,
                options.seconds,
                options.runs,
            )?;
            row["store"] = json!(name);
            stores.push(row);
            for suffix in ["", "-wal", "-shm", ".lock"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", sqlite.display()));
            }
        }
        drop(redis_cluster);
        Ok(stores)
    }
}

impl Bench {
    /// Task event streams (`tasks/stream`) at 50 clients, each following its own task's
    /// events: on the memory store, PostgreSQL and Redis.
    fn stream_rows(&self, options: &Options) -> Result<Vec<Value>, String> {
        let mut backends = vec![("memory", None, None)];
        if let Some(url) = &options.postgres {
            backends.push(("PostgreSQL", Some(url.as_str()), Some("mcp_bench")));
        }
        if let Some(url) = &options.redis {
            backends.push(("Redis", Some(url.as_str()), Some("mcp-bench")));
        }
        let mut rows = Vec::new();
        for (name, url, namespace) in backends {
            let mut extra = Vec::new();
            if let Some(url) = url {
                extra.extend(["--store", url]);
            }
            if let Some(ns) = namespace {
                extra.extend(["--namespace", ns]);
            }
            let mut row = self.row("ours", &extra, "stream", 50, options.seconds, options.runs)?;
            row["store"] = json!(name);
            rows.push(row);
        }
        Ok(rows)
    }
}

/// The Redis Cluster of the stores table, as the URL our server connects through (the
/// first node's: the store finds the others from it): the cluster that
/// `MCP_TEST_REDIS_CLUSTER_NODES` (or `MCP_TEST_REDIS_CLUSTER_URL`) names, else a
/// throwaway three-node one started now ([`crate::cluster::RedisCluster`], returned with
/// the URL: it stops when dropped). `None`, said on stderr, when neither is possible.
fn redis_cluster() -> Option<(String, Option<crate::cluster::RedisCluster>)> {
    let given = std::env::var(crate::cluster::NODES_ENV)
        .or_else(|_| std::env::var(crate::cluster::URL_ENV))
        .unwrap_or_default();
    if let Some(first) = given.split(',').map(str::trim).find(|n| !n.is_empty()) {
        eprintln!("bench: Redis Cluster {given} (given)");
        return Some((first.to_owned(), None));
    }
    match crate::cluster::RedisCluster::start() {
        Ok(cluster) => {
            eprintln!(
                "bench: Redis Cluster {} (started for the bench)",
                cluster.urls.join(",")
            );
            Some((cluster.urls.first()?.clone(), Some(cluster)))
        }
        Err(why) => {
            eprintln!("bench: no Redis Cluster row: {why}");
            None
        }
    }
}

fn date() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn commit(root: &Path) -> String {
    Command::new("git")
        .current_dir(root)
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
