//! Client-hosted tasks honour idempotency keys (issue 50) as the server's `tools/call`
//! does: one task per key, a repeat answered with it and nothing run again, a reuse with
//! other params or a malformed key -32602.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_tasks::{MemoryStore, TaskStore};
use mcp_tasks_protocol::v2025::{self, ClientCapabilities};
use serde_json::{Value, json};

use super::{Hosted, idempotency_of};

const METHOD: &str = v2025::methods::ELICITATION_CREATE;

fn elicitation(message: &str, key: Value) -> Value {
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        "idempotencyKey": key.clone(),
        "_meta": {"idempotencyKey": key},
    })
}

#[tokio::test]
async fn a_repeated_key_gets_the_first_task_and_runs_nothing() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
    let declared: ClientCapabilities =
        serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities");
    let hosted = Arc::new(Hosted::new(store, &declared).expect("hosted"));
    let runs = Arc::new(AtomicUsize::new(0));
    let run = |runs: &Arc<AtomicUsize>| {
        let runs = Arc::clone(runs);
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(json!({"action": "decline"}))
        }
    };
    let params = elicitation("name?", json!("k1"));
    let keyed = idempotency_of(METHOD, &params).expect("a valid key");
    assert_eq!(keyed.as_ref().map(|k| k.key.as_str()), Some("k1"));
    let first = hosted
        .start(METHOD, json!({"ttl": 60_000}), keyed.clone(), run(&runs))
        .await
        .expect("created");
    let again = hosted
        .start(METHOD, json!({}), keyed, run(&runs))
        .await
        .expect("the same task");
    assert_eq!(first["task"]["taskId"], again["task"]["taskId"]);
    assert!(first["task"]["taskId"].is_string(), "{first}");
    // The first run ends (bounded); the repeat's was never started.
    for _ in 0..200 {
        if runs.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // The same key, other params: refused.
    let other = idempotency_of(METHOD, &elicitation("other?", json!("k1"))).expect("valid");
    let refused = hosted
        .start(METHOD, json!({}), other, run(&runs))
        .await
        .expect_err("a reuse");
    assert_eq!(refused.code, -32602, "{refused:?}");
    assert!(
        refused.message.contains("different arguments"),
        "{refused:?}"
    );
}

#[test]
fn keys_are_checked_and_the_fingerprint_ignores_meta_task_and_key() {
    for bad in [json!(""), json!(5), json!("x".repeat(256))] {
        let e = idempotency_of(METHOD, &elicitation("m", bad)).expect_err("refused");
        assert_eq!(e.code, -32602);
    }
    let differ = json!({"message": "m", "idempotencyKey": "a", "_meta": {"idempotencyKey": "b"}});
    assert_eq!(
        idempotency_of(METHOD, &differ).map_err(|e| e.code),
        Err(-32602)
    );
    assert_eq!(idempotency_of(METHOD, &json!({"message": "m"})), Ok(None));
    let plain = idempotency_of(METHOD, &json!({"message": "m", "idempotencyKey": "k"}));
    let dressed = idempotency_of(
        METHOD,
        &json!({"message": "m", "idempotencyKey": "k", "task": {"ttl": 5},
                "_meta": {"idempotencyKey": "k", "other": 1}}),
    );
    assert_eq!(plain.expect("valid"), dressed.expect("valid"));
}
