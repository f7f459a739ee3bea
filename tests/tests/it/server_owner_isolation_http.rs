//! Tasks belong to the principal that created them: with a principal hook reading
//! `Authorization: Bearer <name>`, another caller's task reads exactly like an unknown id
//! (-32602, the same error object) on tasks/get, tasks/update and tasks/cancel, and
//! cannot be followed on a listen stream.

use std::time::Duration;

use mcp_tasks_protocol::error_codes;
use mcp_tasks_server::http::HttpConfig;
use mcp_tests::server_harness::{
    TestServer, WAIT, accept, bearer_principal, meta, request, task_params, update_params,
};
use serde_json::{Value, json};

const ALICE: (&str, &str) = ("authorization", "Bearer alice");
const BOB: (&str, &str) = ("authorization", "Bearer bob");

async fn start() -> TestServer {
    TestServer::start_http(HttpConfig {
        principal: Some(bearer_principal()),
        ..HttpConfig::default()
    })
    .await
}

async fn as_user(s: &TestServer, who: &[(&str, &str)], method: &str, params: Value) -> Value {
    let reply = s.post(&request(1, method, params), who).await;
    assert!(
        reply.body.is_object(),
        "HTTP {}: {}",
        reply.status,
        reply.text
    );
    reply.body
}

async fn create_as(s: &TestServer, who: (&str, &str), tool: &str, args: Value) -> String {
    let body = as_user(
        s,
        &[who],
        "tools/call",
        json!({"name": tool, "arguments": args, "_meta": meta(true)}),
    )
    .await;
    assert_eq!(body["result"]["resultType"], "task", "{body}");
    body["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned()
}

/// The error objects of tasks/get, tasks/update and tasks/cancel on `id`, as `who`.
async fn errors_for(s: &TestServer, who: &[(&str, &str)], id: &str) -> Vec<Value> {
    let mut errors = Vec::new();
    for (method, params) in [
        ("tasks/get", task_params(id, true)),
        (
            "tasks/update",
            update_params(id, json!({"input-1": accept(json!({"confirm": true}))})),
        ),
        ("tasks/cancel", task_params(id, true)),
    ] {
        let body = as_user(s, who, method, params).await;
        assert!(body["error"].is_object(), "{method} as {who:?}: {body}");
        errors.push(body["error"].clone());
    }
    errors
}

#[tokio::test]
async fn another_principals_task_reads_exactly_like_an_unknown_id() {
    let s = start().await;
    let running = create_as(&s, ALICE, "slow_compute", json!({"seconds": 30})).await;
    let waiting = create_as(&s, ALICE, "confirm_delete", json!({"filename": "a"})).await;
    // Wait until alice's confirm_delete really asks, so bob's update could have landed.
    let asked = s
        .poll_task_with(&waiting, &[ALICE], WAIT, |t| {
            t["status"] == "input_required"
        })
        .await;
    assert!(asked["inputRequests"]["input-1"].is_object(), "{asked}");

    let unknown = errors_for(&s, &[BOB], "0123456789abcdef0123456789abcdef").await;
    assert_eq!(unknown[0]["code"], error_codes::INVALID_PARAMS);
    for id in [&running, &waiting] {
        assert_eq!(errors_for(&s, &[BOB], id).await, unknown, "bob on {id}");
        // An anonymous caller (no Authorization) is another principal too.
        assert_eq!(errors_for(&s, &[], id).await, unknown, "anonymous on {id}");
    }

    // Nothing bob did reached alice's tasks.
    let get = as_user(&s, &[ALICE], "tasks/get", task_params(&running, true)).await;
    assert_eq!(get["result"]["status"], "working", "{get}");
    let get = as_user(&s, &[ALICE], "tasks/get", task_params(&waiting, true)).await;
    assert_eq!(get["result"]["status"], "input_required", "{get}");
    assert_eq!(get["result"]["inputRequests"], asked["inputRequests"]);

    // Alice can still cancel hers.
    let ack = as_user(&s, &[ALICE], "tasks/cancel", task_params(&running, true)).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = s
        .poll_task_with(&running, &[ALICE], WAIT, |t| t["status"] == "cancelled")
        .await;
    assert_eq!(done["status"], "cancelled");
}

#[tokio::test]
async fn a_listen_stream_does_not_serve_another_principals_task() {
    let s = start().await;
    let alices = create_as(&s, ALICE, "slow_compute", json!({"seconds": 30})).await;
    let bobs = create_as(&s, BOB, "slow_compute", json!({"seconds": 30})).await;
    let listen = request(
        77,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [alices, bobs]}, "_meta": meta(true)}),
    );
    let mut stream = s.open_stream(&listen, &[BOB]).await;
    assert_eq!(stream.status, 200);
    let ack = stream
        .next_event(Duration::from_secs(10))
        .await
        .expect("an acknowledgement")
        .json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([bobs]),
        "{ack}"
    );
    let first = stream
        .next_event(Duration::from_secs(10))
        .await
        .expect("bob's task state")
        .json();
    assert_eq!(first["params"]["taskId"], bobs.as_str(), "{first}");
}

#[tokio::test]
async fn a_refused_principal_gets_the_hooks_status() {
    let s = start().await;
    let reply = s
        .post(
            &request(1, "server/discover", json!({"_meta": meta(true)})),
            &[("authorization", "Basic YWxpY2U6eA==")],
        )
        .await;
    assert_eq!(reply.status, 401, "{}", reply.text);
}
