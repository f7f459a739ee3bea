//! Helpers shared by the behaviours: owners, tasks, limits, opening handles.

use super::env::{Env, StoreFactory};
use crate::{Limits, NewTask, Origin, Owner, WireRevision};

pub(crate) fn origin() -> Origin {
    Origin {
        method: "tools/call".into(),
        tool: Some("kit_tool".into()),
        revision: WireRevision::V2026_07_28,
    }
}

pub(crate) fn new_task(owner: &Owner) -> NewTask {
    NewTask {
        trace_context: None,
        owner: owner.clone(),
        ttl_ms: None,
        poll_interval_ms: None,
        origin: origin(),
        status_message: None,
        job: None,
        idempotency: None,
    }
}

pub(crate) fn alice() -> Owner {
    Owner::new("alice")
}

pub(crate) fn mallory() -> Owner {
    Owner::new("mallory")
}

/// Limits roomy enough that only the behaviour under test hits one.
pub(crate) fn roomy() -> Limits {
    Limits {
        max_live_tasks_per_owner: 100_000,
        max_live_tasks_total: 1_000_000,
        max_input_requests_per_task: 64,
        max_result_bytes: 8 * 1024 * 1024,
        max_ttl_ms: Some(24 * 60 * 60 * 1000),
        default_ttl_ms: Some(60 * 60 * 1000),
        default_poll_interval_ms: 1_000,
        max_log_entries: 1_000,
        max_log_bytes: 1024 * 1024,
        max_log_entry_bytes: 64 * 1024,
    }
}

/// Opens the first handle of a fresh namespace.
pub(crate) async fn open<F: StoreFactory>(
    factory: &F,
    behaviour: &str,
    limits: Limits,
) -> (F::Store, Env) {
    let env = Env::new(behaviour, limits);
    let store = factory
        .open(&env)
        .await
        .unwrap_or_else(|e| panic!("cannot open the backend: {e}"));
    (store, env)
}

/// Opens another handle (node) on `env`'s backend.
pub(crate) async fn another<F: StoreFactory>(factory: &F, env: &Env) -> F::Store {
    factory
        .open(env)
        .await
        .unwrap_or_else(|e| panic!("cannot open a second handle: {e}"))
}

pub(crate) fn json_map(value: serde_json::Value) -> mcp_tasks_protocol::JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}
