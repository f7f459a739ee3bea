//! Inside an MCP 2025-11-25 session over Streamable HTTP, a request may name in
//! `MCP-Protocol-Version` any revision the server serves sessions in, not only the one
//! `initialize` agreed on (as the TypeScript and Python SDK servers accept; the official
//! conformance suite's `server-sse-multiple-streams` sends 2025-03-26 inside a 2025-11-25
//! session). A version the server does not know is still HTTP 400.

use mcp_tasks_protocol::error_codes;
use mcp_tests::legacy::init_params;
use mcp_tests::server_harness::{TestServer, request};
use serde_json::{Value, json};

/// Opens a 2025-11-25 session (`initialize`, then `notifications/initialized`); its id.
async fn open_session(s: &TestServer) -> String {
    let reply = s
        .post(
            &request(s.id(), "initialize", init_params()),
            &[("accept", "application/json, text/event-stream")],
        )
        .await;
    assert_eq!(reply.result()["protocolVersion"], "2025-11-25");
    let id = reply.headers["mcp-session-id"]
        .to_str()
        .expect("an ASCII session id")
        .to_owned();
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let ack = s
        .post(
            &initialized,
            &[
                ("mcp-session-id", id.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        )
        .await;
    assert_eq!(ack.status, 202, "{}", ack.text);
    id
}

/// `tools/list` in the session with `version` in `MCP-Protocol-Version`.
async fn list_tools(
    s: &TestServer,
    session: &str,
    version: &str,
) -> mcp_tests::server_harness::Reply {
    s.post(
        &request(s.id(), "tools/list", json!({})),
        &[
            ("mcp-session-id", session),
            ("mcp-protocol-version", version),
            ("accept", "application/json, text/event-stream"),
        ],
    )
    .await
}

#[tokio::test]
async fn a_session_takes_any_revision_it_serves_in_the_version_header() {
    let s = TestServer::start().await;
    let session = open_session(&s).await;
    // The conformance scenario's requests, three times as it sends them.
    for _ in 0..3 {
        let reply = list_tools(&s, &session, "2025-03-26").await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        let tools = reply.result()["tools"].as_array().expect("tools").clone();
        assert!(
            tools.iter().any(|t| t["name"] == "slow_compute"),
            "{}",
            reply.text
        );
    }
    for version in ["2025-11-25", "2025-06-18", "2024-11-05"] {
        let reply = list_tools(&s, &session, version).await;
        assert_eq!(reply.status, 200, "{version}: {}", reply.text);
        assert!(reply.result()["tools"].is_array(), "{}", reply.text);
    }
}

#[tokio::test]
async fn a_session_refuses_a_version_it_does_not_know() {
    let s = TestServer::start().await;
    let session = open_session(&s).await;
    let reply = list_tools(&s, &session, "1999-01-01").await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(
        reply.error_code(),
        error_codes::UNSUPPORTED_PROTOCOL_VERSION,
        "{}",
        reply.text
    );
    assert!(
        reply.error_message().contains("1999-01-01"),
        "{}",
        reply.text
    );
    let supported = &reply.error()["data"]["supported"];
    assert!(
        supported
            .as_array()
            .is_some_and(|v| v.contains(&Value::from("2025-03-26"))),
        "{}",
        reply.text
    );
    // 2026-07-28 has no sessions: naming it with a session id is a mismatch.
    let reply = list_tools(&s, &session, "2026-07-28").await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(
        reply.error_code(),
        error_codes::HEADER_MISMATCH,
        "{}",
        reply.text
    );
    // The session is still usable.
    let reply = list_tools(&s, &session, "2025-11-25").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}
