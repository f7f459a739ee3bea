//! `cargo xtask conformance --store URL`: the mcp-tasks conformance kit against a backend.

use mcp_tasks::conformance::{
    MemoryFactory, Outcome, PostgresFactory, RedisFactory, SqliteFactory, StoreFactory, run_all,
};

/// Runs the kit against the backend named by `store` (`memory`, `sqlite:PATH`, a
/// `postgres://` / `postgresql://` URL, or `redis://HOST:PORT/`) and prints one line per
/// behaviour and a closing `N passed, M failed`. On PostgreSQL each behaviour's namespace
/// gets its own schema (`kit_<namespace>`), on Redis its own key prefix
/// (`kit:<namespace>`); both are removed afterwards.
pub fn run(store: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let outcomes = runtime.block_on(async {
        match store
            .split_once(':')
            .map_or((store, ""), |(scheme, rest)| (scheme, rest))
        {
            ("memory", _) => Ok(kit(&MemoryFactory::default()).await),
            ("sqlite", "") => Err("sqlite needs a path: `sqlite:/tmp/x.db`".to_owned()),
            // Each behaviour gets its own database file next to PATH, removed afterwards.
            ("sqlite", path) => Ok(kit(&SqliteFactory::new(path.into())).await),
            ("postgres" | "postgresql", _) => Ok(kit(&PostgresFactory::new(store)).await),
            ("redis" | "rediss", _) => {
                let factory = RedisFactory::connect(store)
                    .map_err(|e| format!("Redis not reachable at {store}: {e}"))?;
                Ok(kit(&factory).await)
            }
            (scheme, _) => Err(format!(
                "unknown store {scheme:?}: expected `memory`, `sqlite:PATH`, `postgres://...` or `redis://HOST:PORT/`"
            )),
        }
    })?;
    let failed = outcomes.iter().filter(|o| o.failure.is_some()).count();
    println!("{} passed, {} failed", outcomes.len() - failed, failed);
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} behaviours failed on {store}"))
    }
}

async fn kit<F: StoreFactory>(factory: &F) -> Vec<Outcome> {
    run_all(factory, |o| match &o.failure {
        None => println!("ok      {}", o.behaviour),
        Some(why) => println!(
            "FAILED  {}: {}",
            o.behaviour,
            why.lines().next().unwrap_or_default()
        ),
    })
    .await
}
