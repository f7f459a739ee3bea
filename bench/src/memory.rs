//! Memory per finished task in the memory store: `tasks` small tasks created and completed
//! (result: one short text block), the process's resident set read before and after.
//! Run in a fresh process so that nothing else grows the heap meanwhile.

use mcp_tasks::{Limits, MemoryStore, NewTask, Origin, Owner, TaskStore, WireRevision};
use serde_json::{Value, json};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

/// Fills a memory store with `tasks` completed tasks; bytes per task and per payload.
pub async fn run(tasks: usize) -> Result<Value, String> {
    let store = MemoryStore::new(Limits {
        max_live_tasks_per_owner: usize::MAX,
        max_live_tasks_total: usize::MAX,
        ..Limits::default()
    });
    let result =
        json!({"content": [{"type": "text", "text": "{\"done_at_us\":1764518400000000}"}]});
    let Value::Object(result) = result else {
        return Err("the result is an object".into());
    };
    let payload_bytes = serde_json::to_vec(&result)
        .map_err(|e| e.to_string())?
        .len();
    let origin = Origin {
        method: "tools/call".into(),
        tool: Some("work".into()),
        revision: WireRevision::V2026_07_28,
    };
    // Owners as a server sees them: a few principals.
    let owners: Vec<Owner> = (0..16)
        .map(|i| Owner::new(format!("principal-{i}")))
        .collect();
    let before = rss_kib();
    for i in 0..tasks {
        let task = store
            .create(NewTask {
                trace_context: None,
                owner: owners[i % owners.len()].clone(),
                ttl_ms: None,
                poll_interval_ms: None,
                origin: origin.clone(),
                status_message: None,
                job: None,
                idempotency: None,
            })
            .await
            .map_err(|e| e.to_string())?;
        store
            .complete(&task.owner, &task.id, result.clone())
            .await
            .map_err(|e| e.to_string())?;
    }
    let after = rss_kib();
    let per_task = (after.saturating_sub(before) * 1024) as f64 / tasks.max(1) as f64;
    Ok(json!({
        "tasks": tasks,
        "payload_bytes": payload_bytes,
        "rss_growth_kib": after.saturating_sub(before),
        "bytes_per_task": per_task,
        "bytes_per_task_beyond_payload": per_task - payload_bytes as f64,
    }))
}
