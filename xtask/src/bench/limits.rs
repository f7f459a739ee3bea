//! The stores' own limit on this machine, measured in the same run as our lifecycles on
//! them: what PostgreSQL and Redis sustain for the statements a minimal task lifecycle
//! needs, with their own benchmark clients (pinned to the load generator's CPU, 50
//! clients). The lifecycle is that of the bench server's `work` task: create it (a
//! 1-KB record), complete it (the record written again), read it once.
//!
//! - PostgreSQL: `pgbench` runs that lifecycle as a script, each statement its own
//!   autocommit transaction (`INSERT ... RETURNING id`, `UPDATE`, `SELECT`), in a scratch
//!   schema created for it and dropped after; one script run is one lifecycle.
//! - Redis: `redis-benchmark` cannot run a script per client, so it measures the commands
//!   one at a time (`HSET` of the record, `HGET` of it, over 10,000 keys under a scratch
//!   prefix deleted after), and a lifecycle takes the time of two `HSET`s and one `HGET`:
//!   limit = 1 / (2 / HSET per second + 1 / HGET per second).
//!
//! A store that does not answer or a tool that is missing is skipped, and said so.

use std::path::Path;

use serde_json::{Value, json};

use super::Bench;
use super::demo::TempDir;
use super::options::Options;
use super::scratch::{PgSchema, RedisKeys, installed, psql};

/// The benchmark clients.
const CLIENTS: usize = 50;

/// The record every write stores: 1 KiB, JSON like ours.
fn record() -> String {
    let pad = 1024 - r#"{"status":"completed","result":""}"#.len();
    format!(r#"{{"status":"completed","result":"{}"}}"#, "x".repeat(pad))
}

/// Each store's limit (`null` when not measured; why in `skipped`).
pub(super) fn measure(bench: &Bench, options: &Options, skipped: &mut Vec<String>) -> Value {
    let mut limits = serde_json::Map::new();
    let stores: [(&str, &str, &Option<String>, Measure); 2] = [
        ("postgres", "PostgreSQL", &options.postgres, postgres),
        ("redis", "Redis", &options.redis, redis),
    ];
    for (key, name, url, measure) in stores {
        let Some(url) = url else {
            skipped.push(format!("the {name} limit: no {name} answers"));
            continue;
        };
        match measure(bench, url, options.seconds) {
            Ok(limit) => {
                eprintln!(
                    "  {name} limit: {:.0} lifecycles/s ({})",
                    limit["lifecycles_per_second"].as_f64().unwrap_or(0.0),
                    limit["how"].as_str().unwrap_or("")
                );
                limits.insert(key.to_owned(), limit);
            }
            Err(why) => skipped.push(format!("the {name} limit: {why}")),
        }
    }
    Value::Object(limits)
}

type Measure = fn(&Bench, &str, f64) -> Result<Value, String>;

/// `pgbench` of the lifecycle script in a scratch schema.
fn postgres(bench: &Bench, url: &str, seconds: f64) -> Result<Value, String> {
    installed("pgbench")?;
    installed("psql")?;
    let schema = PgSchema::new(url, format!("mcp_bench_limit_{}", std::process::id()))?;
    let s = &schema.name;
    // Our table's shape (text record, `C` collation id), as little of it as a lifecycle
    // needs: the key, the owner, the status, the record and its expiry (indexed for the
    // sweep).
    psql(
        url,
        &format!(
            "CREATE SCHEMA {s}; \
             CREATE TABLE {s}.tasks (id TEXT COLLATE \"C\" PRIMARY KEY, owner TEXT NOT NULL, \
             status TEXT NOT NULL, record TEXT NOT NULL, expires TIMESTAMPTZ); \
             CREATE INDEX ON {s}.tasks (expires);"
        ),
    )?;
    let dir = TempDir::new("pg-limit")?;
    let script = dir.0.join("lifecycle.sql");
    std::fs::write(
        &script,
        format!(
            "INSERT INTO {s}.tasks (id, owner, status, record, expires) \
             VALUES (gen_random_uuid()::text, 'bench', 'working', :rec, now() + interval '1 hour') \
             RETURNING id \\gset\n\
             UPDATE {s}.tasks SET status = 'completed', record = :rec WHERE id = :id;\n\
             SELECT record FROM {s}.tasks WHERE id = :id;\n"
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
    let seconds = seconds.ceil().max(1.0) as u64;
    let output = bench
        .pinned(bench.pin.map(|p| p.1), Path::new("pgbench"))
        .args(["-n", "-M", "prepared", "-j", "1"])
        .args(["-c", &CLIENTS.to_string(), "-T", &seconds.to_string()])
        .arg("-f")
        .arg(&script)
        .arg("-D")
        .arg(format!("rec={}", record()))
        .arg(url)
        .output()
        .map_err(|e| format!("cannot run pgbench: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "pgbench failed: {}{}",
            text.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let field = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<f64>().ok())
    };
    let tps = field("tps = ").ok_or_else(|| format!("no tps in pgbench's output: {text}"))?;
    drop(schema);
    Ok(json!({
        "lifecycles_per_second": tps,
        "latency_avg_ms": field("latency average = "),
        "failed": field("number of failed transactions: "),
        "clients": CLIENTS,
        "seconds": seconds,
        "how": format!("pgbench -n -M prepared -c {CLIENTS} -j 1 -T {seconds}: INSERT ... RETURNING id, UPDATE, SELECT, each autocommit, 1-KB record"),
    }))
}

/// `redis-benchmark` of the lifecycle's commands, combined.
fn redis(bench: &Bench, url: &str, seconds: f64) -> Result<Value, String> {
    installed("redis-benchmark")?;
    installed("redis-cli")?;
    let prefix = format!("mcp-bench-limit-{}", std::process::id());
    let keys = RedisKeys::new(url, format!("{prefix}:*"))?;
    let key = format!("{prefix}:t:__rand_int__");
    let record = record();
    let write = ["HSET", &key, "rec", &record, "rev", "1"];
    let read = ["HGET", &key, "rec"];
    // Enough requests for about `seconds` each, from a short first measure.
    let first = redis_benchmark(bench, url, 10_000, &write)?;
    let n = ((first * seconds) as u64).max(10_000);
    let hset = redis_benchmark(bench, url, n, &write)?;
    let hget = redis_benchmark(bench, url, n, &read)?;
    drop(keys);
    let lifecycle = 1.0 / (2.0 / hset + 1.0 / hget);
    Ok(json!({
        "lifecycles_per_second": lifecycle,
        "hset_per_second": hset,
        "hget_per_second": hget,
        "clients": CLIENTS,
        "requests": n,
        "how": format!("redis-benchmark -c {CLIENTS} -P 1 -r 10000 -n {n}: HSET {hset:.0}/s, HGET {hget:.0}/s of a 1-KB record; a lifecycle = 2 HSET + 1 HGET"),
    }))
}

/// Requests per second of `n` runs of `command` over 10,000 keys, 50 clients, no
/// pipelining.
fn redis_benchmark(bench: &Bench, url: &str, n: u64, command: &[&str]) -> Result<f64, String> {
    let output = bench
        .pinned(bench.pin.map(|p| p.1), Path::new("redis-benchmark"))
        .args(["-u", url, "-q", "--csv", "-P", "1", "-r", "10000"])
        .args(["-c", &CLIENTS.to_string(), "-n", &n.to_string()])
        .args(command)
        .output()
        .map_err(|e| format!("cannot run redis-benchmark: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "redis-benchmark {} failed: {}",
            command[0],
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    csv_rps(&text).ok_or_else(|| format!("redis-benchmark {}: no result in {text:?}", command[0]))
}

/// The `rps` of the last line of `redis-benchmark --csv`: `"TEST","RPS",` and six
/// latencies. The test's name is the command line, quotes and commas unescaped, so the
/// fields are counted from the end.
fn csv_rps(text: &str) -> Option<f64> {
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    line.rsplit(',')
        .nth(6)?
        .trim_matches('"')
        .parse()
        .ok()
        .filter(|rps: &f64| *rps > 0.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_record_is_one_kib() {
        assert_eq!(super::record().len(), 1024);
    }

    #[test]
    fn redis_benchmark_csv_is_read_from_the_end() {
        let text = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
                    \"HSET k:__rand_int__ rec {\"a\":\"b,c\"} rev 1\",\"34782.61\",\"0.984\",\"0.168\",\"0.823\",\"2.591\",\"4.663\",\"7.727\"\n";
        assert_eq!(super::csv_rps(text), Some(34782.61));
        assert_eq!(super::csv_rps("\"test\",\"rps\"\n"), None);
    }
}
