//! Fuzz targets: arbitrary bytes and JSON-ish text through every decoder a peer reaches —
//! frame reading, JSON-RPC classification, MCP message parsing (both revisions), SSE
//! parsing, and cursor decoding. None may panic; each answers with an error at worst.
//!
//! Each target runs for `MCP_FUZZ_SECONDS` seconds (default 2) of fresh random cases;
//! `cargo xtask fuzz --seconds N` runs them longer.

use std::time::{Duration, Instant};

use mcp_tasks::Owner;
use mcp_tasks_protocol::jsonrpc::JsonRpcMessage;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn budget() -> Duration {
    let secs = std::env::var("MCP_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(secs.max(0.1))
}

/// Runs `test` on fresh random values of `strategy` until the budget is spent; returns how
/// many cases ran.
fn fuzz<S: Strategy>(strategy: S, test: impl Fn(S::Value)) -> u64
where
    S::Value: std::fmt::Debug,
{
    let deadline = Instant::now() + budget();
    let mut cases = 0u64;
    while Instant::now() < deadline {
        let mut runner = TestRunner::new(Config {
            cases: 256,
            failure_persistence: None,
            ..Config::default()
        });
        let outcome = runner.run(&strategy, |value| {
            test(value);
            Ok(())
        });
        if let Err(e) = outcome {
            panic!("fuzz target failed: {e}");
        }
        cases += 256;
    }
    cases
}

fn json_like() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"jsonrpc\"",
        "\"2.0\"",
        "\"id\"",
        "\"method\"",
        "\"params\"",
        "\"result\"",
        "\"error\"",
        "\"tools/call\"",
        "\"tasks/get\"",
        "\"taskId\"",
        "\"status\"",
        "\"working\"",
        "\"completed\"",
        "\"input_required\"",
        "\"inputRequests\"",
        "\"_meta\"",
        "\"resultType\"",
        "\"task\"",
        "\"ttlMs\"",
        "null",
        "1",
        "-1",
        "1.5",
        "1e400",
        "\"x\"",
        "true",
        "\"\\u0000\"",
        "\"\\ud800\"",
    ]);
    prop::collection::vec(atoms, 0..60).prop_map(|parts| parts.concat())
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..1024)
}

#[test]
fn fuzz_message_parsing() {
    let cases = fuzz(
        prop_oneof![
            json_like(),
            bytes().prop_map(|b| String::from_utf8_lossy(&b).into_owned())
        ],
        |text| {
            let _ = serde_json::from_str::<JsonRpcMessage>(&text);
            let _ = serde_json::from_str::<mcp_tasks_protocol::v2026::ClientRequest>(&text);
            let _ = serde_json::from_str::<mcp_tasks_protocol::v2026::ServerResult>(&text);
            let _ = serde_json::from_str::<mcp_tasks_protocol::tasks::DetailedTask>(&text);
            let _ = serde_json::from_str::<mcp_tasks_protocol::tasks::GetTaskResult>(&text);
            let _ = serde_json::from_str::<mcp_tasks_protocol::tasks::CreateTaskResult>(&text);
            let _ = serde_json::from_str::<mcp_tasks_protocol::v2025::ClientRequest>(&text);
            let _ = serde_json::from_str::<mcp_tasks_protocol::v2025::ServerResult>(&text);
            let _ = serde_json::from_str::<mcp_tasks_protocol::v2025::CreateTaskResult>(&text);
        },
    );
    eprintln!("message parsing: {cases} cases");
}

#[test]
fn fuzz_deep_nesting_is_an_error_not_a_crash() {
    // 100,000 levels: serde_json's recursion limit turns it into an error.
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    assert!(serde_json::from_str::<JsonRpcMessage>(&deep).is_err());
    let deep_obj = "{\"a\":".repeat(100_000) + "1" + &"}".repeat(100_000);
    assert!(serde_json::from_str::<mcp_tasks_protocol::v2026::ClientRequest>(&deep_obj).is_err());
}

#[test]
fn fuzz_cursor_decoding() {
    let key = mcp_tasks_server::seal::SealKey::random();
    let owner = Owner::new("fuzz");
    let cases = fuzz(
        prop_oneof![".{0,120}", "c1\\.[0-9a-f]{0,20}\\.[0-9a-fA-F~]{0,100}"],
        |text: String| {
            let _ = mcp_tasks::cursor::decode(&text);
            assert!(
                key.open(&owner, &text).is_none(),
                "an unsealed string must not open: {text:?}"
            );
        },
    );
    eprintln!("cursor decoding: {cases} cases");
}

#[test]
fn fuzz_sse_parsing() {
    let cases = fuzz(
        prop_oneof![
            bytes(),
            prop::collection::vec(
                prop::sample::select(vec![
                    "data: ",
                    "event: message",
                    "\n",
                    "\r\n",
                    "\r",
                    ":",
                    "id: 1",
                    "retry: x",
                    "{\"jsonrpc\":\"2.0\"}",
                    "\u{feff}"
                ]),
                0..40
            )
            .prop_map(|parts| parts.concat().into_bytes()),
        ],
        |input: Vec<u8>| {
            // Any split of the bytes into chunks gives the same events.
            let mut whole = mcp_tasks_client::sse::SseParser::new();
            let expected = whole.feed(&input);
            for size in [1, 2, 3, 7] {
                let mut parser = mcp_tasks_client::sse::SseParser::new();
                let got: Vec<String> = input.chunks(size).flat_map(|c| parser.feed(c)).collect();
                assert_eq!(got, expected, "chunks of {size}");
            }
            for data in expected {
                let _ = serde_json::from_str::<JsonRpcMessage>(&data);
            }
        },
    );
    eprintln!("SSE parsing: {cases} cases");
}

#[test]
fn fuzz_frame_classification() {
    use mcp_tasks_protocol::engine::EndpointBuilder;
    let endpoint = EndpointBuilder::new(jsonrpsee::RpcModule::new(())).build();
    let cases = fuzz(
        prop_oneof![
            json_like(),
            bytes().prop_map(|b| String::from_utf8_lossy(&b).into_owned())
        ],
        |text| {
            let _ = endpoint.classify(&text);
        },
    );
    eprintln!("frame classification: {cases} cases");
}
