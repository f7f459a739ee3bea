//! A JSON-RPC batch (a JSON array) is refused with -32600 saying that MCP has no batches,
//! over Streamable HTTP and over stdio, not with a complaint about its `jsonrpc` member.

use std::process::Stdio;

use mcp_tasks_protocol::error_codes;
use mcp_tests::server_harness::{TestServer, WAIT, meta, request};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SAYS: &str = "JSON-RPC batches are not supported: MCP sends one message per request";

fn batch() -> String {
    json!([
        request(1, "tools/list", json!({ "_meta": meta(false) })),
        request(2, "tools/list", json!({ "_meta": meta(false) })),
    ])
    .to_string()
}

fn assert_refused(frame: &Value) {
    assert_eq!(
        frame["error"]["code"],
        json!(error_codes::INVALID_REQUEST),
        "{frame}"
    );
    assert_eq!(frame["id"], Value::Null, "{frame}");
    let message = frame["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(SAYS), "{frame}");
    assert!(!message.contains("jsonrpc"), "{frame}");
}

#[tokio::test]
async fn a_batch_over_http_is_refused_as_a_batch() {
    let s = TestServer::start().await;
    for body in [batch(), "[]".to_owned()] {
        let reply = s
            .post_raw(
                body.clone(),
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "tools/list"),
                ],
            )
            .await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text);
        assert_refused(&reply.body);
    }
    // A broken array is still a parse error.
    let reply = s.post_raw("[{\"jsonrpc\":", &[]).await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(
        reply.error_code(),
        error_codes::PARSE_ERROR,
        "{}",
        reply.text
    );
}

#[tokio::test]
async fn a_batch_over_stdio_is_refused_as_a_batch() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_demo-server"))
        .args(["--stdio", "--store", "memory"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the demo");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let after = request(3, "tools/list", json!({ "_meta": meta(false) }));
    let input = format!("{}\n{after}\n", batch());
    stdin
        .write_all(input.as_bytes())
        .await
        .expect("write stdin");
    drop(stdin);
    let mut text = String::new();
    tokio::time::timeout(WAIT, stdout.read_to_string(&mut text))
        .await
        .expect("stdout closes in time")
        .expect("read stdout");
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exits in time")
        .expect("wait");
    assert!(status.success(), "{status:?}");
    let frames: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let refused = frames
        .iter()
        .find(|f| f["id"].is_null())
        .unwrap_or_else(|| panic!("no refusal: {text}"));
    assert_refused(refused);
    assert!(
        frames
            .iter()
            .any(|f| f["id"] == json!(3) && f["result"]["tools"].is_array()),
        "the next line is served: {text}"
    );
}
