//! Client-hosted tasks honour idempotency keys (issue 50) as the server's `tools/call`
//! does: one task per key, a repeat answered with it and nothing run again, a reuse with
//! other params or a malformed key -32602.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use mcp_tasks::{Decorated, MemoryStore, Operation, StoreError, StoreLayer, TaskStore};
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
    // The first run starts (a bounded wait).
    for _ in 0..500 {
        if runs.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the first run started");
    // The repeat's handler: held by `probe`'s clone until it is dropped.
    let probe = Arc::new(());
    let held = Arc::clone(&probe);
    let repeat = {
        let runs = Arc::clone(&runs);
        async move {
            let _held = held;
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(json!({"action": "decline"}))
        }
    };
    let again = hosted
        .start(METHOD, json!({}), keyed, repeat)
        .await
        .expect("the same task");
    assert_eq!(first["task"]["taskId"], again["task"]["taskId"]);
    assert!(first["task"]["taskId"].is_string(), "{first}");
    // The repeat's handler was dropped, not kept to run: it never can.
    assert_eq!(
        Arc::strong_count(&probe),
        1,
        "the repeat's handler was kept"
    );
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

/// A store that keeps no idempotency keys: a create is refused as such a store refuses a
/// keyed one ([`TaskStore::supports_idempotency`] `false`).
#[derive(Debug)]
struct Keyless;

impl StoreLayer for Keyless {
    fn around<'a, T: Send + 'a>(
        &'a self,
        op: Operation,
        call: BoxFuture<'a, Result<T, StoreError>>,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        if op == Operation::Create {
            return Box::pin(async {
                Err(StoreError::Unsupported {
                    operation: "idempotency keys",
                })
            });
        }
        call
    }
}

#[tokio::test]
async fn a_store_without_keys_refuses_a_keyed_start_as_invalid_params() {
    let store: Arc<dyn TaskStore> =
        Arc::new(Decorated::new(Arc::new(MemoryStore::default()), Keyless));
    let declared: ClientCapabilities =
        serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities");
    let hosted = Arc::new(Hosted::new(store, &declared).expect("hosted"));
    let keyed = idempotency_of(METHOD, &elicitation("name?", json!("k1"))).expect("valid");
    let refused = hosted
        .start(METHOD, json!({}), keyed, async {
            Ok(json!({"action": "decline"}))
        })
        .await
        .expect_err("no keys");
    assert_eq!(refused.code, -32602, "{refused:?}");
}

#[test]
fn a_null_params_key_is_no_key_and_a_null_meta_key_is_refused() {
    let null_param = json!({"message": "m", "idempotencyKey": null});
    assert_eq!(idempotency_of(METHOD, &null_param), Ok(None));
    let with_meta =
        json!({"message": "m", "idempotencyKey": null, "_meta": {"idempotencyKey": "k"}});
    assert_eq!(
        idempotency_of(METHOD, &with_meta)
            .expect("valid")
            .map(|k| k.key),
        Some("k".to_owned())
    );
    let null_meta = json!({"message": "m", "_meta": {"idempotencyKey": null}});
    assert_eq!(
        idempotency_of(METHOD, &null_meta).map_err(|e| e.code),
        Err(-32602)
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
