//! Tool parameters mirrored into `Mcp-Param-{Name}` headers (SEP-2243, `x-mcp-header`)
//! on MCP 2026-07-28 over Streamable HTTP: the header must be there when the argument
//! is, equal to it once decoded (integers compared as numbers), absent when it is not;
//! every refusal is HTTP 400 with -32020 and the tool never runs. A tool whose
//! annotations break the rules cannot be registered. Other transports ignore them.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::v2026::CallToolResult;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, TaskPolicy, ToolDef};
use mcp_tests::server_harness::{Reply, TestServer, build_server, call_params, request};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize, JsonSchema)]
struct Query {
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    sql: String,
    #[schemars(extend("x-mcp-header" = "Limit"))]
    limit: Option<i64>,
    #[schemars(extend("x-mcp-header" = "Dry-Run"))]
    dry_run: Option<bool>,
}

fn query_tool(runs: Arc<AtomicUsize>) -> ToolDef {
    ToolDef::new(
        "query",
        TaskPolicy::Synchronous,
        move |_ctx, args: Query| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(CallToolResult::text(format!(
                    "{} {} {:?} {:?}",
                    args.region, args.sql, args.limit, args.dry_run
                )))
            }
        },
    )
    .unwrap()
}

async fn start() -> (TestServer, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = build_server(
        vec![query_tool(Arc::clone(&runs))],
        RuntimeConfig::default(),
    );
    (
        TestServer::start_server(server, HttpConfig::default()).await,
        runs,
    )
}

fn query(arguments: Value) -> Value {
    request(1, "tools/call", call_params("query", arguments, false))
}

fn assert_refused(reply: &Reply, mentions: &str) {
    assert_eq!(reply.status, 400, "{mentions}: {}", reply.text);
    assert_eq!(
        reply.error_code(),
        error_codes::HEADER_MISMATCH,
        "{}",
        reply.text
    );
    assert!(
        reply.error_message().contains(mentions),
        "should mention {mentions:?}: {}",
        reply.text
    );
}

#[tokio::test]
async fn matching_headers_are_accepted_in_every_encoding() {
    let (s, runs) = start().await;
    let listed = s
        .rpc(
            "tools/list",
            json!({ "_meta": mcp_tests::server_harness::meta(false) }),
        )
        .await;
    let schema = &listed.result()["tools"][0]["inputSchema"];
    assert_eq!(schema["properties"]["region"]["x-mcp-header"], "Region");

    let body = query(json!({ "region": "us-west1", "sql": "select 1" }));
    let reply = s.post(&body, &[("mcp-param-region", "us-west1")]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    // Names are case-insensitive, surrounding whitespace is not part of the value.
    let reply = s.post(&body, &[("MCP-PARAM-REGION", "  us-west1 ")]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);

    let body = query(json!({ "region": "Hello, 世界", "sql": "x", "limit": 42, "dry_run": true }));
    let reply = s
        .post(
            &body,
            &[
                ("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?="),
                ("mcp-param-limit", "42.0"),
                ("mcp-param-dry-run", "true"),
            ],
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(
        reply.result()["content"][0]["text"],
        "Hello, 世界 x Some(42) Some(true)"
    );
    // A value that merely looks half like the wrapper is literal.
    let body = query(json!({ "region": "=?base64?SGVsbG8=", "sql": "x" }));
    let reply = s
        .post(&body, &[("mcp-param-region", "=?base64?SGVsbG8=")])
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    // null is no value: no header expected.
    let body = query(json!({ "region": "eu", "sql": "x", "limit": null }));
    let reply = s.post(&body, &[("mcp-param-region", "eu")]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(runs.load(Ordering::SeqCst), 5);
    s.stop().await;
}

#[tokio::test]
async fn missing_mismatched_and_malformed_headers_are_refused_before_the_tool_runs() {
    let (s, runs) = start().await;
    let body = query(json!({ "region": "us-west1", "sql": "x", "limit": 5 }));
    let region = ("mcp-param-region", "us-west1");
    let cases: [(&[(&str, &str)], &str); 7] = [
        (&[("mcp-param-limit", "5")], "Mcp-Param-Region"),
        (&[region], "Mcp-Param-Limit"),
        (
            &[("mcp-param-region", "us-east1"), ("mcp-param-limit", "5")],
            "Mcp-Param-Region",
        ),
        (&[region, ("mcp-param-limit", "6")], "Mcp-Param-Limit"),
        (
            &[
                ("mcp-param-region", "=?base64?dXMtd2VzdDE?="),
                ("mcp-param-limit", "5"),
            ],
            "Mcp-Param-Region",
        ),
        (
            &[
                ("mcp-param-region", "=?base64?dXMt!!!?="),
                ("mcp-param-limit", "5"),
            ],
            "Mcp-Param-Region",
        ),
        // A header for a parameter the arguments do not have.
        (
            &[
                region,
                ("mcp-param-limit", "5"),
                ("mcp-param-dry-run", "false"),
            ],
            "Mcp-Param-Dry-Run",
        ),
    ];
    for (headers, mentions) in cases {
        let reply = s.post(&body, headers).await;
        assert_refused(&reply, mentions);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no refused call ran");
    // Headers no tool declares are forwarded by intermediaries and ignored here.
    let reply = s
        .post(
            &body,
            &[region, ("mcp-param-limit", "5"), ("mcp-param-other", "1")],
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    s.stop().await;
}

#[tokio::test]
async fn a_tool_with_broken_annotations_cannot_be_registered() {
    let tool = |schema: Value| {
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        ToolDef::new("t", TaskPolicy::Synchronous, |_ctx, _args: Value| async {
            Ok(CallToolResult::text("x"))
        })
        .unwrap()
        .input_schema(schema)
    };
    for bad in [
        json!({ "type": "object", "properties": { "n": { "type": "number", "x-mcp-header": "N" } } }),
        json!({ "type": "object", "properties": { "a": { "type": "string", "x-mcp-header": "Bad Name" } } }),
        json!({ "type": "object", "properties": {
            "a": { "type": "string", "x-mcp-header": "Same" },
            "b": { "type": "string", "x-mcp-header": "same" } } }),
        json!({ "type": "object", "properties": { "list": { "type": "array",
            "items": { "type": "string", "x-mcp-header": "Item" } } } }),
    ] {
        let refused = tool(bad.clone()).unwrap_err();
        assert!(
            refused.reason.contains("x-mcp-header"),
            "{bad}: {}",
            refused.reason
        );
    }
    assert!(
        tool(json!({ "type": "object", "properties": {
            "a": { "type": "string", "x-mcp-header": "A" } } }))
        .is_ok()
    );
}

#[tokio::test]
async fn a_raw_non_ascii_header_value_is_refused() {
    let (s, runs) = start().await;
    // The body names a region outside ASCII: its header must come Base64-encoded
    // (`=?base64?...?=`); the raw UTF-8 bytes are refused.
    let body = query(json!({ "region": "zürich-1", "sql": "x", "limit": 5 }));
    let raw = s
        .post(
            &body,
            &[("mcp-param-region", "zürich-1"), ("mcp-param-limit", "5")],
        )
        .await;
    assert_refused(&raw, "Mcp-Param-Region");
    let encoded = format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode("zürich-1")
    );
    let ok = s
        .post(
            &body,
            &[
                ("mcp-param-region", encoded.as_str()),
                ("mcp-param-limit", "5"),
            ],
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the encoded call ran");
    s.stop().await;
}
