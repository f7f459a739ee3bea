//! Graceful shutdown: running tasks get the grace period, then end `cancelled` with
//! `SHUTDOWN_MESSAGE`; a task finishing within the grace completes normally; no new task
//! starts once shutdown began; listen streams end so the HTTP server can drain.

use std::time::{Duration, Instant};

use mcp_tasks::{Owner, TaskId, TaskRecord};
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::meta::SUBSCRIPTION_ID;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{ANONYMOUS, RuntimeConfig, SHUTDOWN_MESSAGE};
use mcp_tests::server_harness::{TestServer, WAIT, demo_tools, meta, request};
use serde_json::json;

async fn start(grace: Duration) -> TestServer {
    let runtime = RuntimeConfig {
        shutdown_grace: grace,
        ..RuntimeConfig::default()
    };
    TestServer::start_with(demo_tools(), runtime, HttpConfig::default()).await
}

async fn stored(s: &TestServer, id: &str) -> TaskRecord {
    s.server
        .store()
        .get(&Owner::new(ANONYMOUS), &TaskId::from_wire(id))
        .await
        .expect("the task is in the store")
}

async fn shutdown(s: &TestServer) -> Duration {
    let began = Instant::now();
    tokio::time::timeout(WAIT, s.server.shutdown())
        .await
        .expect("shutdown finishes in time");
    began.elapsed()
}

#[tokio::test]
async fn a_task_still_running_after_the_grace_period_ends_cancelled() {
    let s = start(Duration::from_millis(200)).await;
    let id = s.create_task("slow_compute", json!({"seconds": 60})).await;
    assert_eq!(stored(&s, &id).await.status, TaskStatus::Working);
    let took = shutdown(&s).await;
    assert!(
        took >= Duration::from_millis(200),
        "the grace was not given: {took:?}"
    );

    let record = stored(&s, &id).await;
    assert_eq!(record.status, TaskStatus::Cancelled, "{record:?}");
    assert_eq!(record.status_message.as_deref(), Some(SHUTDOWN_MESSAGE));
    assert!(record.outcome.is_none(), "{record:?}");
    // Clients polling still see it, over the wire.
    let got = s.get_task(&id).await;
    assert_eq!(got.result()["status"], "cancelled");
    assert_eq!(got.result()["statusMessage"], SHUTDOWN_MESSAGE);
}

#[tokio::test]
async fn a_task_finishing_within_the_grace_period_completes() {
    let s = start(Duration::from_secs(15)).await;
    let id = s
        .create_task("slow_compute", json!({"seconds": 0.3, "label": "last"}))
        .await;
    let took = shutdown(&s).await;
    assert!(
        took < Duration::from_secs(10),
        "shutdown should end when the last task does, not after the whole grace: {took:?}"
    );
    let record = stored(&s, &id).await;
    assert_eq!(record.status, TaskStatus::Completed, "{record:?}");
    let got = s.get_task(&id).await;
    let text = got.result()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.starts_with("last: done"), "{}", got.text);
}

#[tokio::test]
async fn no_task_starts_once_shutdown_began() {
    let s = start(Duration::from_millis(100)).await;
    shutdown(&s).await;
    let reply = s.call("slow_compute", json!({"seconds": 5}), true).await;
    assert_eq!(
        reply.error_code(),
        error_codes::INTERNAL_ERROR,
        "{}",
        reply.text
    );
    assert!(
        reply.error_message().contains("shutting down"),
        "{}",
        reply.text
    );
    // A synchronous call needs no task and is still answered.
    let greet = s.call("greet", json!({"name": "Ann"}), true).await;
    assert_eq!(greet.result()["content"][0]["text"], "Hello, Ann!");
}

#[tokio::test]
async fn shutdown_ends_listen_streams_and_the_http_server_drains() {
    let mut s = start(Duration::from_millis(100)).await;
    let id = s.create_task("slow_compute", json!({"seconds": 60})).await;
    let listen = request(
        41,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id]}, "_meta": meta(true)}),
    );
    let mut stream = s.open_stream(&listen, &[]).await;
    let ack = stream.next_event(WAIT).await.expect("ack").json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let state = stream.next_event(WAIT).await.expect("state").json();
    assert_eq!(state["params"]["status"], "working");

    // What the demo binary does on a signal: end listen streams, stop accepting.
    s.server.shutdown_token().cancel();
    s.stop_http().await.expect("http::serve ends cleanly");
    // The stream's last frame is the listen request's own result.
    let mut last = None;
    while let Some(event) = stream.next_event(WAIT).await {
        last = Some(event.json());
    }
    let last = last.expect("the listen result before the stream ended");
    assert_eq!(last["id"], 41, "{last}");
    assert_eq!(last["result"]["resultType"], "complete", "{last}");
    assert_eq!(last["result"]["_meta"][SUBSCRIPTION_ID], 41, "{last}");
    shutdown(&s).await;
    assert_eq!(stored(&s, &id).await.status, TaskStatus::Cancelled);
}
