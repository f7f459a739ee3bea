//! The report's section on the demo as shipped: its rows beside the bench server's, the
//! ratios issue 46 asks for, the stores' own limits, and what was skipped.

use std::fmt::Write as _;

use serde_json::Value;

use super::demo::CLIENTS;
use super::render::{find, per_second, ratio, us};

/// The ratio at or above which our PostgreSQL lifecycles are near enough the store's own
/// limit.
const POSTGRES_TARGET: f64 = 0.7;

/// The demo section; nothing for a report without demo rows, limits or skips (an older
/// one).
pub(super) fn demo_section(md: &mut String, report: &Value) {
    let demo = report["demo"].as_array().cloned().unwrap_or_default();
    let rows = report["rows"].as_array().cloned().unwrap_or_default();
    let stores = report["stores"].as_array().cloned().unwrap_or_default();
    let limits = &report["store_limits"];
    // The bench server's row to compare a demo row with.
    let ours = |store: &str, workload: &str| -> Option<&Value> {
        if store == "memory" {
            find(&rows, "ours", workload, CLIENTS)
        } else {
            stores.iter().find(|r| r["store"] == store)
        }
    };
    if !demo.is_empty() {
        side_by_side(md, &demo, &ours);
        let at = |store: &str, workload: &str| {
            demo.iter()
                .find(|r| r["store"] == store && r["workload_key"] == workload)
        };
        let echo = find(&rows, "echo", "call", CLIENTS);
        let rmcp = find(&rows, "rmcp", "lifecycle-poll", CLIENTS);
        let _ = writeln!(
            md,
            "\nThe demo's ratios at {CLIENTS} clients, and the bench server's (`echo` `call` is the raw loopback limit; the stores' limits are below):\n"
        );
        let _ = writeln!(md, "| measure | demo | bench server (`ours`) |");
        let _ = writeln!(md, "|---|---:|---:|");
        for (label, workload, limit) in [
            ("tasks/get / echo `call`", "get", echo),
            ("tools/call / echo `call`", "call", echo),
            (
                "lifecycle (poll, memory) / rmcp lifecycle (poll)",
                "lifecycle-poll",
                rmcp,
            ),
        ] {
            let _ = writeln!(
                md,
                "| {label} | {} | {} |",
                ratio(at("memory", workload), limit),
                ratio(ours("memory", workload), limit)
            );
        }
        for (store, key) in [("PostgreSQL", "postgres"), ("Redis", "redis")] {
            let demo_row = at(store, "lifecycle-poll");
            let ours_row = ours(store, "lifecycle-poll");
            let rate =
                |r: Option<&Value>| r.map_or("n/a".into(), |r| format!("{:.0}", per_second(r)));
            let _ = writeln!(
                md,
                "| {store} lifecycles/s | {} | {} |",
                rate(demo_row),
                rate(ours_row)
            );
            let limit = limits[key]["lifecycles_per_second"].as_f64();
            let target = if key == "postgres" {
                format!(" (target >= {POSTGRES_TARGET:.1}x)")
            } else {
                String::new()
            };
            let of_limit = |r: Option<&Value>| match (r.map(per_second), limit) {
                (Some(a), Some(l)) if l > 0.0 => format!("{:.2}x", a / l),
                _ => "n/a".into(),
            };
            let _ = writeln!(
                md,
                "| {store} lifecycles / the store's limit{target} | {} | {} |",
                of_limit(demo_row),
                of_limit(ours_row)
            );
        }
    }
    store_limits(md, limits);
    if let Some(skipped) = report["skipped"].as_array().filter(|s| !s.is_empty()) {
        let _ = writeln!(md, "\nNot measured in this run:\n");
        for what in skipped {
            let _ = writeln!(md, "- {}", what.as_str().unwrap_or(""));
        }
    }
}

/// Each demo row beside the bench server's same workload on the same store.
fn side_by_side<'a>(
    md: &mut String,
    demo: &[Value],
    ours: &dyn Fn(&str, &str) -> Option<&'a Value>,
) {
    let _ = writeln!(
        md,
        "\nThe demo as shipped (`cargo build --release -p mcp-tasks-server --example demo`; its defaults: `RUST_LOG` unset, only `--http`, `--store` and a fresh `--namespace` on the shared stores; its own tools: `greet`, `slow_compute` working 1 µs, `confirm_delete` answered) beside the bench server (`mcp-bench serve ours`), {CLIENTS} clients, each pinned like the rows above. Log: what the demo wrote to stderr during the load, per operation.\n"
    );
    let _ = writeln!(
        md,
        "| workload | store | `ours` ops/s | demo ops/s | demo / `ours` | demo p50 | demo p99 | demo req/op | demo errors | demo log lines/op | demo log bytes/op | demo warnings | demo peak RSS |"
    );
    let _ = writeln!(
        md,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in demo {
        let store = r["store"].as_str().unwrap_or("");
        let workload = r["workload_key"].as_str().unwrap_or("");
        let base = ours(store, workload);
        let _ = writeln!(
            md,
            "| {} | {store} | {} | {:.0} | {} | {} | {} | {:.1} | {} | {:.2} | {:.0} | {} | {:.1} MB |",
            r["workload"].as_str().unwrap_or(""),
            base.map_or("n/a".into(), |b| format!("{:.0}", per_second(b))),
            per_second(r),
            ratio(Some(r), base),
            us(&r["p50_us"]),
            us(&r["p99_us"]),
            r["requests_per_operation"].as_f64().unwrap_or(0.0),
            r["errors"],
            r["log_lines_per_op"].as_f64().unwrap_or(0.0),
            r["log_bytes_per_op"].as_f64().unwrap_or(0.0),
            r["log_warnings"],
            r["server_peak_rss_kib"].as_f64().unwrap_or(0.0) / 1024.0,
        );
    }
    let errors: Vec<String> = demo
        .iter()
        .filter_map(|r| {
            let first = r["first_error"]
                .as_str()
                .or(r["first_log_warning"].as_str())?;
            Some(format!(
                "- {} on {}: {first}",
                r["workload"].as_str().unwrap_or(""),
                r["store"].as_str().unwrap_or("")
            ))
        })
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(md, "\nThe demo's first error or warning, per row:\n");
        for e in errors {
            let _ = writeln!(md, "{e}");
        }
    }
}

/// What the stores themselves sustain for a minimal lifecycle.
fn store_limits(md: &mut String, limits: &Value) {
    let Some(limits) = limits.as_object().filter(|l| !l.is_empty()) else {
        return;
    };
    let _ = writeln!(
        md,
        "\nThe stores' own limit on this machine, in the same run: a minimal task lifecycle (create a 1-KB record, complete it, read it once), the store's own benchmark client pinned to the load generator's CPU, {CLIENTS} clients:\n"
    );
    for (name, key) in [("PostgreSQL", "postgres"), ("Redis", "redis")] {
        if let Some(limit) = limits.get(key) {
            let _ = writeln!(
                md,
                "- {name}: {:.0} lifecycles/s (`{}`).",
                limit["lifecycles_per_second"].as_f64().unwrap_or(0.0),
                limit["how"].as_str().unwrap_or("")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_demo_rows_sit_beside_ours_with_their_ratios() {
        let report = json!({
            "rows": [
                {"target": "ours", "workload_key": "call", "concurrency": 50, "per_second": 20000.0},
                {"target": "echo", "workload_key": "call", "concurrency": 50, "per_second": 40000.0},
            ],
            "stores": [{"store": "PostgreSQL", "per_second": 1400.0}],
            "demo": [
                {"target": "demo", "store": "memory", "workload_key": "call", "workload": "tools/call (sync)",
                 "per_second": 10000.0, "log_lines_per_op": 1.0, "log_bytes_per_op": 150.0, "log_warnings": 0},
                {"target": "demo", "store": "PostgreSQL", "workload_key": "lifecycle-poll",
                 "workload": "task lifecycle, poll", "per_second": 1000.0},
            ],
            "store_limits": {"postgres": {"lifecycles_per_second": 2000.0, "how": "pgbench"}},
            "skipped": ["the Redis limit: no Redis answers"],
        });
        let mut md = String::new();
        super::demo_section(&mut md, &report);
        assert!(
            md.contains("| tools/call (sync) | memory | 20000 | 10000 | 0.50x |"),
            "{md}"
        );
        assert!(
            md.contains("| tools/call / echo `call` | 0.25x | 0.50x |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| PostgreSQL lifecycles / the store's limit (target >= 0.7x) | 0.50x | 0.70x |"
            ),
            "{md}"
        );
        assert!(
            md.contains("- PostgreSQL: 2000 lifecycles/s (`pgbench`)."),
            "{md}"
        );
        assert!(md.contains("- the Redis limit: no Redis answers"), "{md}");
        // An older report: nothing.
        let mut none = String::new();
        super::demo_section(&mut none, &json!({}));
        assert_eq!(none, "");
    }
}
