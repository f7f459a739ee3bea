//! Payloads round-trip exactly: large results, non-ASCII text, error data.

use mcp_tasks_protocol::jsonrpc::ErrorObject;
use serde_json::json;

use super::env::StoreFactory;
use super::helpers::{alice, another, json_map, new_task, open, roomy};
use crate::{Outcome, Owner, TaskStore};

/// A 1 MiB result comes back byte for byte, on another handle too.
pub async fn one_mib_result_round_trips_exactly<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "one_mib", roomy()).await;
    let other = another(factory, &env).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let text: String = (0..1024 * 1024)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let result = json_map(
        json!({"content": [{"type": "text", "text": text}], "structuredContent": {"n": 1.5, "big": 9_007_199_254_740_991_i64}}),
    );
    store
        .complete(&owner, &task.id, result.clone())
        .await
        .expect("complete");
    assert_eq!(
        other.get(&owner, &task.id).await.expect("get").outcome,
        Some(Outcome::Result(result))
    );
}

/// Non-ASCII text (accents, CJK, emoji, RTL, NUL) survives in every text field.
pub async fn non_ascii_text_round_trips_exactly<F: StoreFactory>(factory: &F) {
    let (store, env) = open(factory, "non_ascii", roomy()).await;
    let other = another(factory, &env).await;
    let text = "Gr\u{fc}\u{df}e \u{4f60}\u{597d} \u{1f600} \u{5e9}\u{5dc}\u{5d5}\u{5dd} nul:\u{0} \"quoted\" \\ back";
    let owner = Owner::new(format!("owner {text}"));
    let task = store.create(new_task(&owner)).await.expect("create");
    store
        .set_status_message(&owner, &task.id, Some(text.to_owned()))
        .await
        .expect("message");
    store
        .request_input(
            &owner,
            &task.id,
            [(format!("key {text}"), json!({"message": text}))].into(),
        )
        .await
        .expect("input");
    let read = other.get(&owner, &task.id).await.expect("get");
    assert_eq!(read.status_message.as_deref(), Some(text));
    assert_eq!(
        read.input_requests.get(&format!("key {text}")),
        Some(&json!({"message": text}))
    );
    store
        .complete(&owner, &task.id, json_map(json!({"text": text})))
        .await
        .expect("complete");
    assert_eq!(
        other.get(&owner, &task.id).await.expect("get").outcome,
        Some(Outcome::Result(json_map(json!({"text": text}))))
    );
}

/// A failed task's error keeps its code, message and structured data.
pub async fn failed_error_data_round_trips<F: StoreFactory>(factory: &F) {
    let (store, _env) = open(factory, "error_data", roomy()).await;
    let owner = alice();
    let task = store.create(new_task(&owner)).await.expect("create");
    let error = ErrorObject::new(-32042, "URL elicitation required")
        .with_data(json!({"elicitations": [{"mode": "url", "url": "https://example.com/\u{e9}", "elicitationId": "e1"}], "nested": {"n": null}}));
    store
        .fail(&owner, &task.id, error.clone())
        .await
        .expect("fail");
    assert_eq!(
        store.get(&owner, &task.id).await.expect("get").outcome,
        Some(Outcome::Error(error))
    );
}
