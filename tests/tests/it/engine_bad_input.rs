//! Bad input never panics the engine or kills the connection: each case gets the right
//! JSON-RPC error (or is dropped, for a stray response) and the next request still works.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_protocol::engine::{Connection, EndpointBuilder, FrameReceiver, FrameSender};
use mcp_tasks_protocol::error_codes;
use mcp_tests::{Observed, fixture_methods};
use serde_json::{Value, json};

const LIMIT: usize = 16 * 1024;

struct Raw {
    tx: FrameSender,
    rx: FrameReceiver,
}

impl Raw {
    fn start() -> Raw {
        let endpoint = EndpointBuilder::new(fixture_methods(Arc::new(Observed::default())))
            .max_frame_bytes(LIMIT)
            .build();
        let (server_end, raw) = Connection::memory();
        let _ = endpoint.serve(server_end);
        Raw {
            tx: raw.sender,
            rx: raw.receiver,
        }
    }

    async fn send(&self, frame: impl Into<String>) {
        self.tx.send(frame.into()).await.expect("server alive");
    }

    async fn next(&mut self) -> Value {
        let frame = tokio::time::timeout(Duration::from_secs(5), self.rx.recv())
            .await
            .expect("a frame within 5 s")
            .expect("connection open")
            .expect("a whole frame");
        serde_json::from_str(&frame).expect("server frames are JSON")
    }

    /// The connection still serves: an echo round trip works.
    async fn assert_healthy(&mut self) {
        self.send(r#"{"jsonrpc":"2.0","id":"health","method":"echo","params":{"text":"ok"}}"#)
            .await;
        let resp = self.next().await;
        assert_eq!(
            resp,
            json!({"jsonrpc":"2.0","id":"health","result":{"text":"ok"}})
        );
    }
}

fn code(resp: &Value) -> i64 {
    resp["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error response: {resp}"))
}

#[tokio::test]
async fn invalid_json_is_parse_error_with_null_id() {
    let mut raw = Raw::start();
    raw.send("{not json").await;
    let resp = raw.next().await;
    assert_eq!(code(&resp), error_codes::PARSE_ERROR);
    assert_eq!(resp["id"], Value::Null);
    assert!(
        resp.as_object().is_some_and(|o| o.contains_key("id")),
        "id member must be present as null"
    );
    raw.assert_healthy().await;
}

#[tokio::test]
async fn json_that_is_not_json_rpc_is_invalid_request() {
    let mut raw = Raw::start();
    for frame in [
        r#"{"hello":"world"}"#,
        r#"42"#,
        r#""tools/call""#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"a"}}]"#,
        r#"{"jsonrpc":"2.0","id":{"nested":true},"method":"echo"}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"echo"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"echo"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
    ] {
        raw.send(frame).await;
        let resp = raw.next().await;
        assert_eq!(
            code(&resp),
            error_codes::INVALID_REQUEST,
            "frame {frame} got {resp}"
        );
    }
    raw.send(r#"{"jsonrpc":"1.0","id":3,"method":"echo","params":{"text":"a"}}"#)
        .await;
    let resp = raw.next().await;
    assert_eq!(code(&resp), error_codes::INVALID_REQUEST);
    assert_eq!(resp["id"], json!(3), "the id is echoed when it can be read");
    raw.assert_healthy().await;
}

#[tokio::test]
async fn unknown_method_is_method_not_found() {
    let mut raw = Raw::start();
    raw.send(r#"{"jsonrpc":"2.0","id":9,"method":"no/such/method","params":{}}"#)
        .await;
    let resp = raw.next().await;
    assert_eq!(code(&resp), error_codes::METHOD_NOT_FOUND);
    assert_eq!(resp["id"], json!(9));
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no/such/method")
    );
    raw.assert_healthy().await;
}

#[tokio::test]
async fn params_that_do_not_parse_are_invalid_params_naming_the_field() {
    let mut raw = Raw::start();
    let cases = [
        (json!({"times": 2}), "name"),
        (json!({"name": "x", "times": "two"}), "invalid type"),
        (json!({"name": "x", "times": 1, "extra": true}), "extra"),
    ];
    for (i, (params, needle)) in cases.into_iter().enumerate() {
        raw.send(json!({"jsonrpc":"2.0","id":i,"method":"greet","params":params}).to_string())
            .await;
        let resp = raw.next().await;
        assert_eq!(code(&resp), error_codes::INVALID_PARAMS, "{resp}");
        let message = resp["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(needle),
            "message {message:?} should name {needle:?}"
        );
    }
    raw.send(r#"{"jsonrpc":"2.0","id":"np","method":"greet"}"#)
        .await;
    let resp = raw.next().await;
    assert_eq!(code(&resp), error_codes::INVALID_PARAMS);
    raw.assert_healthy().await;
}

#[tokio::test]
async fn stray_response_is_dropped_and_connection_stays_healthy() {
    let mut raw = Raw::start();
    raw.send(r#"{"jsonrpc":"2.0","id":424242,"result":{"surprise":true}}"#)
        .await;
    raw.send(r#"{"jsonrpc":"2.0","id":"nobody","error":{"code":-32000,"message":"late"}}"#)
        .await;
    raw.send(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#)
        .await;
    // No reply to any of them: the next frame is the health check's answer.
    raw.assert_healthy().await;
}

#[tokio::test]
async fn panicking_handler_is_internal_error_and_connection_stays_up() {
    let mut raw = Raw::start();
    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":"boom","params":{"text":"now"}}"#)
        .await;
    let resp = raw.next().await;
    assert_eq!(code(&resp), error_codes::INTERNAL_ERROR);
    assert_eq!(resp["id"], json!(5));
    raw.assert_healthy().await;
}

#[tokio::test]
async fn oversized_frame_is_refused_and_connection_stays_intact() {
    let mut raw = Raw::start();
    let big = "x".repeat(LIMIT + 1);
    raw.send(json!({"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":big}}).to_string())
        .await;
    let resp = raw.next().await;
    assert_eq!(code(&resp), error_codes::INVALID_REQUEST);
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("limit")
    );
    raw.assert_healthy().await;
}

#[tokio::test]
async fn string_and_number_ids_stay_distinct() {
    let mut raw = Raw::start();
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"slow","params":{"millis":50}}"#)
        .await;
    raw.send(r#"{"jsonrpc":"2.0","id":"1","method":"echo","params":{"text":"string id"}}"#)
        .await;
    raw.send(r#"{"jsonrpc":"2.0","id":-7,"method":"echo","params":{"text":"negative id"}}"#)
        .await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let resp = raw.next().await;
        seen.push((resp["id"].clone(), resp["result"]["text"].clone()));
    }
    seen.sort_by_key(|(id, _)| id.to_string());
    assert_eq!(
        seen,
        vec![
            (json!("1"), json!("string id")),
            (json!(-7), json!("negative id")),
            (json!(1), json!("slept")),
        ]
    );
}
