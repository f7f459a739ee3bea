//! `cargo xtask bench`: the store benchmarks (criterion) and an end-to-end load generator
//! against the demo server over Streamable HTTP.
//!
//! Workloads (each for `--seconds`, at each `--concurrency`): synchronous `tools/call`
//! (greet); a task lifecycle (`tools/call` slow_compute creating a task, then `tasks/get`
//! until it completes); `tasks/get` on a live task. Reports throughput, latency
//! p50/p90/p99/max and the server's peak RSS, as a table and as JSON (`--json PATH`).
//!
//! Not yet here (issue 8): the same load against an rmcp server and a raw axum loopback
//! server for ratios, push latency, and pinning server and load to separate cores.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What one workload at one concurrency measured.
#[derive(Debug, Clone)]
pub struct Row {
    pub workload: &'static str,
    pub concurrency: usize,
    pub operations: u64,
    pub errors: u64,
    pub per_second: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub peak_rss_kib: u64,
}

struct Server(Child, u32);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(root: &Path, cargo: &str) -> Result<(Server, String), String> {
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "mcp-server",
            "--example",
            "demo",
        ])
        .status()
        .map_err(|e| format!("cannot build the demo server: {e}"))?;
    if !status.success() {
        return Err("building the demo server failed".into());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let mut child = Command::new(target.join("release/examples/demo"))
        .args(["--http", "127.0.0.1:0", "--store", "memory"])
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the demo server: {e}"))?;
    let pid = child.id();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut reader = BufReader::new(stdout);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .ok_or("no URL printed")?
        .to_owned();
    Ok((Server(child, pid), url))
}

/// The server's peak resident set (VmHWM), in KiB.
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

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    })
}

async fn rpc(
    http: &reqwest::Client,
    url: &str,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let reply = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let value: Value = reply.json().await.map_err(|e| e.to_string())?;
    value
        .get("result")
        .cloned()
        .ok_or_else(|| format!("error reply: {value}"))
}

async fn operation(
    workload: &str,
    http: &reqwest::Client,
    url: &str,
    live_task: &str,
) -> Result<(), String> {
    match workload {
        "tools/call sync" => {
            rpc(
                http,
                url,
                "tools/call",
                json!({"name": "greet", "arguments": {"name": "bench"}, "_meta": meta()}),
            )
            .await?;
        }
        "task lifecycle (poll)" => {
            let created = rpc(
                http,
                url,
                "tools/call",
                json!({"name": "slow_compute", "arguments": {"seconds": 0.001}, "_meta": meta()}),
            )
            .await?;
            let id = created
                .get("taskId")
                .and_then(Value::as_str)
                .ok_or("no taskId")?
                .to_owned();
            for _ in 0..10_000 {
                let task = rpc(
                    http,
                    url,
                    "tasks/get",
                    json!({"taskId": id, "_meta": meta()}),
                )
                .await?;
                if task.get("status").and_then(Value::as_str) == Some("completed") {
                    return Ok(());
                }
            }
            return Err("task did not complete".into());
        }
        _ => {
            rpc(
                http,
                url,
                "tasks/get",
                json!({"taskId": live_task, "_meta": meta()}),
            )
            .await?;
        }
    }
    Ok(())
}

async fn run_workload(
    url: &str,
    workload: &'static str,
    concurrency: usize,
    seconds: f64,
    pid: u32,
) -> Result<Row, String> {
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(concurrency)
        .build()
        .map_err(|e| e.to_string())?;
    // A long-running task for the tasks/get workload.
    let live = rpc(
        &http,
        url,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 3600}, "_meta": meta()}),
    )
    .await?;
    let live_task = live
        .get("taskId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (http, url, stop, live_task) = (
            http.clone(),
            url.to_owned(),
            Arc::clone(&stop),
            live_task.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                match operation(workload, &http, &url, &live_task).await {
                    Ok(()) => latencies.push(t.elapsed().as_micros() as u64),
                    Err(_) => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    let mut errors = 0;
    for w in workers {
        let (l, e) = w.await.map_err(|e| e.to_string())?;
        all.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    let _ = rpc(
        &http,
        url,
        "tasks/cancel",
        json!({"taskId": live_task, "_meta": meta()}),
    )
    .await;
    Ok(Row {
        workload,
        concurrency,
        operations: all.len() as u64,
        errors,
        per_second: all.len() as f64 / elapsed,
        p50_us: pct(0.50),
        p90_us: pct(0.90),
        p99_us: pct(0.99),
        max_us: all.last().copied().unwrap_or(0),
        peak_rss_kib: peak_rss_kib(pid),
    })
}

/// Runs the load generator (and, unless `skip_store`, the criterion store benchmarks).
pub fn run(
    root: &Path,
    cargo: &str,
    seconds: f64,
    concurrency: &[usize],
    json_out: Option<&Path>,
    skip_store: bool,
) -> Result<(), String> {
    if !skip_store {
        let status = Command::new(cargo)
            .current_dir(root)
            .args(["bench", "-p", "mcp-tasks", "--bench", "store"])
            .status()
            .map_err(|e| format!("cannot run the store benchmarks: {e}"))?;
        if !status.success() {
            return Err("store benchmarks failed".into());
        }
    }
    let (server, url) = start_server(root, cargo)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for workload in ["tools/call sync", "task lifecycle (poll)", "tasks/get"] {
        for &c in concurrency {
            let row = runtime.block_on(run_workload(&url, workload, c, seconds, server.1))?;
            println!(
                "{:<24} c={:<4} {:>9.0}/s  p50 {:>6} µs  p90 {:>6} µs  p99 {:>6} µs  max {:>7} µs  errors {}  server peak RSS {} KiB",
                row.workload,
                row.concurrency,
                row.per_second,
                row.p50_us,
                row.p90_us,
                row.p99_us,
                row.max_us,
                row.errors,
                row.peak_rss_kib
            );
            rows.push(row);
        }
    }
    if let Some(path) = json_out {
        let value: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({"workload": r.workload, "concurrency": r.concurrency, "operations": r.operations, "errors": r.errors,
                       "per_second": r.per_second, "p50_us": r.p50_us, "p90_us": r.p90_us, "p99_us": r.p99_us,
                       "max_us": r.max_us, "server_peak_rss_kib": r.peak_rss_kib})
            })
            .collect();
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
