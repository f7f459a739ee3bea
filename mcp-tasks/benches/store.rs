//! Store operations at different numbers of live tasks: create, get, complete, resolve,
//! on the memory store (1k, 100k, 1M) and on SQLite (1k, 10k; every write is an fsync).
//!
//! `cargo bench -p mcp-tasks --bench store` (or `cargo xtask bench`). Each size is filled
//! once; the tasks an iteration creates have a 1 ms TTL and are swept away, untimed,
//! after each batch, so the store stays at its size.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mcp_tasks::{
    Limits, ManualClock, MemoryStore, NewTask, Origin, Owner, TaskId, TaskStore, WireRevision,
};
use serde_json::json;

const OWNERS: usize = 10_000;

fn limits() -> Limits {
    Limits {
        max_live_tasks_per_owner: usize::MAX,
        max_live_tasks_total: usize::MAX,
        max_ttl_ms: None,
        default_ttl_ms: None,
        ..Limits::default()
    }
}

fn new_task(i: usize, ttl_ms: Option<u64>) -> NewTask {
    NewTask {
        trace_context: None,
        owner: Owner::new(format!("owner-{}", i % OWNERS)),
        ttl_ms,
        poll_interval_ms: None,
        origin: Origin {
            method: "tools/call".into(),
            tool: Some("bench".into()),
            revision: WireRevision::V2026_07_28,
        },
        status_message: None,
        job: None,
        idempotency: None,
    }
}

struct Filled<S> {
    store: S,
    clock: ManualClock,
    ids: Vec<(Owner, TaskId)>,
}

async fn fill<S: TaskStore>(store: S, clock: ManualClock, n: usize) -> Filled<S> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let t = store.create(new_task(i, None)).await.expect("create");
        ids.push((t.owner, t.id));
    }
    Filled { store, clock, ids }
}

/// Creates `n` short-lived tasks (untimed helper for complete/resolve).
async fn scratch<S: TaskStore>(f: &Filled<S>, n: u64, with_input: bool) -> Vec<(Owner, TaskId)> {
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        let t = f.store.create(new_task(i, Some(1))).await.expect("create");
        if with_input {
            f.store
                .request_input(
                    &t.owner,
                    &t.id,
                    [("k".to_owned(), json!({"method": "roots/list"}))].into(),
                )
                .await
                .expect("input");
        }
        out.push((t.owner, t.id));
    }
    out
}

/// Removes everything the iterations created (untimed).
async fn clean<S: TaskStore>(f: &Filled<S>) {
    f.clock.advance(2);
    f.store.sweep().await.expect("sweep");
}

fn bench_store<S: TaskStore>(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    name: &str,
    filled: &Filled<S>,
) {
    let n = filled.ids.len();
    let mut group = c.benchmark_group(format!("store/{name}"));
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));

    group.bench_function(BenchmarkId::new("get", n), |b| {
        let mut i = 0usize;
        b.to_async(rt).iter(|| {
            i = (i + 7919) % n;
            let (owner, id) = &filled.ids[i];
            async move { filled.store.get(owner, id).await.expect("get") }
        })
    });

    group.bench_function(BenchmarkId::new("create", n), |b| {
        b.to_async(rt).iter_custom(|iters| async move {
            let start = Instant::now();
            for i in 0..iters as usize {
                filled
                    .store
                    .create(new_task(i, Some(1)))
                    .await
                    .expect("create");
            }
            let elapsed = start.elapsed();
            clean(filled).await;
            elapsed
        })
    });

    group.bench_function(BenchmarkId::new("complete", n), |b| {
        b.to_async(rt).iter_custom(|iters| async move {
            let tasks = scratch(filled, iters, false).await;
            let result = json!({"content": [{"type": "text", "text": "done"}], "isError": false});
            let result = result.as_object().cloned().unwrap_or_default();
            let start = Instant::now();
            for (owner, id) in &tasks {
                filled
                    .store
                    .complete(owner, id, result.clone())
                    .await
                    .expect("complete");
            }
            let elapsed = start.elapsed();
            clean(filled).await;
            elapsed
        })
    });

    group.bench_function(BenchmarkId::new("resolve", n), |b| {
        b.to_async(rt).iter_custom(|iters| async move {
            let tasks = scratch(filled, iters, true).await;
            let answer: BTreeMap<String, serde_json::Value> =
                [("k".to_owned(), json!({"roots": []}))].into();
            let start = Instant::now();
            for (owner, id) in &tasks {
                filled
                    .store
                    .resolve_input(owner, id, answer.clone())
                    .await
                    .expect("resolve");
            }
            let elapsed = start.elapsed();
            clean(filled).await;
            elapsed
        })
    });
    group.finish();
}

fn memory(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let sizes: Vec<usize> = match std::env::var("STORE_BENCH_SIZES") {
        Ok(s) => s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        Err(_) => vec![1_000, 100_000, 1_000_000],
    };
    for n in sizes {
        let clock = ManualClock::default();
        let store = MemoryStore::with_clock(limits(), Arc::new(clock.clone()));
        let filled = rt.block_on(fill(store, clock, n));
        bench_store(c, &rt, "memory", &filled);
    }
}

fn sqlite(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let sizes: Vec<usize> = match std::env::var("SQLITE_BENCH_SIZES") {
        Ok(s) => s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        Err(_) => vec![1_000, 10_000],
    };
    let dir = std::env::temp_dir().join(format!("mcp-tasks-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for n in sizes {
        let clock = ManualClock::default();
        let path = dir.join(format!("store-{n}.sqlite3"));
        let store =
            mcp_tasks::SqliteStore::open_with_clock(&path, limits(), Arc::new(clock.clone()))
                .expect("open");
        let filled = rt.block_on(fill(store, clock, n));
        bench_store(c, &rt, "sqlite", &filled);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, memory, sqlite);
criterion_main!(benches);
