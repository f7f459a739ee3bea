//! Interop with the official TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned in
//! `tests/ts-sdk/package.json`, on the Node.js pinned there): `tests/ts-sdk/interop.mjs`
//! runs the SDK's `Client` with its experimental tasks API against the demo server over
//! Streamable HTTP (in-process, 127.0.0.1:0) and over stdio (the `demo-stdio` child), and
//! every step of its report must pass (`mcp_tests::ts_sdk`).
//!
//! Skipped when `npm ci --prefix tests/ts-sdk` has not run, unless
//! `MCP_REQUIRE_SERVICES=1`.

use mcp_tests::server_harness::TestServer;
use mcp_tests::ts_sdk::Sdk;

#[tokio::test]
async fn typescript_sdk_over_streamable_http() {
    let Some(sdk) = Sdk::find() else { return };
    let s = TestServer::start().await;
    let report = sdk.run(&["--url", &s.url]).await;
    assert_eq!(report["transport"], "streamable-http");
    let init = &report["steps"][0]["details"];
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
    s.stop().await;
}

#[tokio::test]
async fn typescript_sdk_over_stdio() {
    let Some(sdk) = Sdk::find() else { return };
    let report = sdk
        .run(&["--command", env!("CARGO_BIN_EXE_demo-stdio")])
        .await;
    assert_eq!(report["transport"], "stdio");
    let init = &report["steps"][0]["details"];
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
}
