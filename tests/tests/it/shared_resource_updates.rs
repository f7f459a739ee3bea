//! Resource subscriptions across instances on a shared store (PostgreSQL, Redis, a Redis
//! Cluster with each handle connected through another node): two servers in this process,
//! each on its own store handle (so their announcements travel through the backend, as
//! between processes), each behind its own HTTP listener.
//!
//! - A 2025-11-25 session opened on A, its standalone stream on A, subscribed through B:
//!   a change B sees reaches the stream on A (the subscription is in the session's record);
//!   a change A sees too; after an unsubscribe through A, a change B sees does not.
//! - A 2026-07-28 `subscriptions/listen` stream on A hears of a change B saw.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks::conformance::StoreFactory;
use mcp_tasks_server::{ResourceData, ResourceDef, Server};
use mcp_tests::legacy::init_params;
use mcp_tests::server_harness::{
    Reply, SseStream, TestServer, WAIT, meta, open_legacy_session, request, two_instances,
};
use serde_json::{Value, json};

const WATCHED: &str = "test://shared/watched";
const OTHER: &str = "test://shared/other";

/// How long a test waits to be sure a notification does not come.
const QUIET: Duration = Duration::from_millis(500);

fn server(store: Arc<dyn TaskStore>) -> Server {
    let mut builder = Server::builder("shared-resources", "0").store(store);
    for uri in [WATCHED, OTHER] {
        builder = builder.resource(ResourceDef::new(uri, uri, || async {
            Ok(ResourceData::text("contents"))
        }));
    }
    builder.build()
}

/// A request of the 2025-11-25 session `id`, sent to `s` (JSON reply).
async fn in_session(s: &TestServer, id: &str, method: &str, params: Value) -> Reply {
    s.post(
        &request(s.id(), method, params),
        &[("mcp-session-id", id), ("accept", "application/json")],
    )
    .await
}

/// The next `notifications/resources/updated` of `stream` within `within`, if any.
async fn next_update(stream: &mut SseStream, within: Duration) -> Option<String> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let event = stream.event_within(left).await?;
        let message = event.json();
        if message["method"] == "notifications/resources/updated" {
            return message["params"]["uri"].as_str().map(str::to_owned);
        }
    }
}

async fn a_session_subscribed_through_one_instance_hears_changes_seen_by_any<F: StoreFactory>(
    factory: &F,
) {
    let (a, b) = two_instances(factory, "shared_resources_2025", server).await;
    let (id, _) = open_legacy_session(&a, init_params()).await;
    let mut stream = a.get_stream(&[("mcp-session-id", id.as_str())]).await;

    // Subscribed through B: B serves the session from its record and writes it there.
    let subscribed = in_session(&b, &id, "resources/subscribe", json!({ "uri": WATCHED })).await;
    assert_eq!(subscribed.result(), &json!({}), "{}", subscribed.text);

    // A change B sees reaches the stream A holds; one of a URI not subscribed to does not.
    b.server.notify_resource_updated(OTHER).await;
    b.server.notify_resource_updated(WATCHED).await;
    assert_eq!(
        next_update(&mut stream, WAIT).await.as_deref(),
        Some(WATCHED)
    );
    // A change A sees itself, too (A knows the subscription from the record only).
    a.server.notify_resource_updated(WATCHED).await;
    assert_eq!(
        next_update(&mut stream, WAIT).await.as_deref(),
        Some(WATCHED)
    );

    // Unsubscribed through A: a change B sees is no longer sent.
    let gone = in_session(&a, &id, "resources/unsubscribe", json!({ "uri": WATCHED })).await;
    assert_eq!(gone.result(), &json!({}), "{}", gone.text);
    b.server.notify_resource_updated(WATCHED).await;
    assert_eq!(next_update(&mut stream, QUIET).await, None);
    drop(stream);
    a.stop().await;
    b.stop().await;
}

async fn a_listen_stream_hears_changes_another_instance_saw<F: StoreFactory>(factory: &F) {
    let (a, b) = two_instances(factory, "shared_resources_2026", server).await;
    let listen = request(
        a.id(),
        "subscriptions/listen",
        json!({ "_meta": meta(false),
                "notifications": { "resourceSubscriptions": [WATCHED] } }),
    );
    let mut stream = a.open_stream(&listen, &[]).await;
    let ack = stream.next_event(WAIT).await.unwrap().json();
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!([WATCHED]),
        "{ack}"
    );
    b.server.notify_resource_updated(OTHER).await;
    b.server.notify_resource_updated(WATCHED).await;
    assert_eq!(
        next_update(&mut stream, WAIT).await.as_deref(),
        Some(WATCHED)
    );
    drop(stream);
    a.stop().await;
    b.stop().await;
}

mcp_tests::shared_store_tests!(
    session_subscriptions_cross_instances =>
        super::a_session_subscribed_through_one_instance_hears_changes_seen_by_any,
    listen_streams_hear_other_instances => super::a_listen_stream_hears_changes_another_instance_saw,
);
