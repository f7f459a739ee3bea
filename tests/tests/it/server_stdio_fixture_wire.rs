//! The conformance fixture server (`mcp-server/examples/conformance.rs`, built here as
//! `conformance-server`) over stdio, as a real child process, on both revisions:
//! discovery and version negotiation, resources (text, blob, template, unknown URI),
//! resource templates, prompts, completion, progress and logging notifications on the
//! connection before the response, and (2025-11-25) `logging/setLevel` and
//! `resources/subscribe`. Every result is checked against the official schema of its
//! revision when the schemas are there (`mcp_tests::schema_check`); the wire assertions
//! run either way.

use std::collections::VecDeque;
use std::process::Stdio;
use std::time::Duration;

use mcp_tasks_protocol::error_codes;
use mcp_tasks_server::demo::catalog::STATIC_TEXT;
use mcp_tasks_server::demo::fixtures::PNG_BASE64;
use mcp_tests::legacy::{LEGACY_VERSION, init_params};
use mcp_tests::schema_check::{Schema, spec_dir};
use mcp_tests::server_harness::{PROTOCOL_VERSION, WAIT, meta, request};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long a test listens for frames that must not come.
const QUIET: Duration = Duration::from_millis(300);

/// A `conformance-server --stdio` child. Frames that are not the response waited for
/// (notifications, requests) are kept in `inbox`, in order.
struct Fixture {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: i64,
    inbox: VecDeque<Value>,
}

impl Fixture {
    fn spawn() -> Fixture {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_conformance-server"))
            .args(["--stdio", "--store", "memory"])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn conformance-server");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Fixture {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
            inbox: VecDeque::new(),
        }
    }

    async fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let line = format!("{message}\n");
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await
        };
        tokio::time::timeout(WAIT, write)
            .await
            .expect("written in time")
            .expect("write to the child");
    }

    /// The next frame within `within`; `None` when none comes that long.
    async fn frame_within(&mut self, within: Duration) -> Option<Value> {
        let line = tokio::time::timeout(within, self.stdout.next_line())
            .await
            .ok()?
            .expect("read stdout")
            .expect("stdout still open");
        let frame: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert_eq!(frame["jsonrpc"], "2.0", "{line}");
        Some(frame)
    }

    /// Sends a request; returns its response. Other frames meanwhile go to the inbox.
    async fn rpc(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&request(id, method, params)).await;
        loop {
            let frame = self
                .frame_within(WAIT)
                .await
                .unwrap_or_else(|| panic!("no response to {method} within {WAIT:?}"));
            if frame["id"] == id && frame.get("method").is_none() {
                return frame;
            }
            self.inbox.push_back(frame);
        }
    }

    /// [`rpc`](Self::rpc), which must succeed; returns the result.
    async fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params).await;
        assert!(response["result"].is_object(), "{method}: {response}");
        response["result"].clone()
    }

    /// [`rpc`](Self::rpc), which must fail; returns the error.
    async fn error(&mut self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params).await;
        assert!(response["error"].is_object(), "{method}: {response}");
        response["error"].clone()
    }

    /// The inbox's notifications of `method`, taken out of it.
    fn take(&mut self, method: &str) -> Vec<Value> {
        let (taken, kept): (VecDeque<Value>, VecDeque<Value>) =
            self.inbox.drain(..).partition(|m| m["method"] == method);
        self.inbox = kept;
        taken.into()
    }

    /// Asserts nothing else arrives for a while and nothing is left in the inbox.
    async fn assert_quiet(&mut self) {
        if let Some(frame) = self.frame_within(QUIET).await {
            self.inbox.push_back(frame);
        }
        assert!(self.inbox.is_empty(), "unexpected frames: {:?}", self.inbox);
    }

    /// Closes stdin; the child must exit successfully, writing nothing more.
    async fn finish(mut self) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("exits on EOF in time")
            .expect("wait");
        assert!(status.success(), "{status:?}");
        let rest = tokio::time::timeout(WAIT, self.stdout.next_line())
            .await
            .expect("stdout closed in time")
            .expect("read stdout");
        assert_eq!(rest, None, "nothing after the last response");
    }
}

/// Schema checks of one revision, or none when the official schemas are not there.
struct Checks(Option<Schema>);

impl Checks {
    fn load(test: &str, folder: &str) -> Checks {
        Checks(spec_dir(test).map(|dir| Schema::load(dir.join(folder).join("schema.json"))))
    }

    fn check(&mut self, what: &str, type_name: &str, value: &Value) {
        if let Some(schema) = &mut self.0 {
            schema.check(what, type_name, value);
        }
    }
}

/// An MCP 2026-07-28 request's params: `params` with the request `_meta`.
fn with_meta(mut params: Value) -> Value {
    params["_meta"] = meta(false);
    params
}

/// `params` with the request `_meta` plus `extra` members in it.
fn with_meta_and(params: Value, extra: Value) -> Value {
    let mut params = with_meta(params);
    if let (Some(m), Value::Object(extra)) = (params["_meta"].as_object_mut(), extra) {
        m.extend(extra);
    }
    params
}

fn resource_uris(result: &Value) -> Vec<&str> {
    result["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("resources: {result}"))
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect()
}

fn names<'a>(result: &'a Value, list: &str) -> Vec<&'a str> {
    result[list]
        .as_array()
        .unwrap_or_else(|| panic!("{list}: {result}"))
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect()
}

/// The resource, template, prompt and completion reads both revisions share, checked
/// against `checks`; `params` turns bare params into the revision's.
async fn features(f: &mut Fixture, checks: &mut Checks, params: fn(Value) -> Value) {
    let listed = f.result("resources/list", params(json!({}))).await;
    checks.check("resources/list", "ListResourcesResult", &listed);
    let uris = resource_uris(&listed);
    for uri in [
        "test://static-text",
        "test://static-binary",
        "test://watched-resource",
    ] {
        assert!(uris.contains(&uri), "{uri} listed: {listed}");
    }

    let text = f
        .result(
            "resources/read",
            params(json!({"uri": "test://static-text"})),
        )
        .await;
    checks.check("resources/read (text)", "ReadResourceResult", &text);
    assert_eq!(
        text["contents"],
        json!([{"uri": "test://static-text", "mimeType": "text/plain", "text": STATIC_TEXT}]),
        "{text}"
    );
    let blob = f
        .result(
            "resources/read",
            params(json!({"uri": "test://static-binary"})),
        )
        .await;
    checks.check("resources/read (blob)", "ReadResourceResult", &blob);
    assert_eq!(
        blob["contents"],
        json!([{"uri": "test://static-binary", "mimeType": "image/png", "blob": PNG_BASE64}]),
        "{blob}"
    );

    let templates = f
        .result("resources/templates/list", params(json!({})))
        .await;
    checks.check(
        "resources/templates/list",
        "ListResourceTemplatesResult",
        &templates,
    );
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"], "test://template/{id}/data",
        "{templates}"
    );
    let data = f
        .result(
            "resources/read",
            params(json!({"uri": "test://template/42/data"})),
        )
        .await;
    checks.check("resources/read (template)", "ReadResourceResult", &data);
    let body: Value = serde_json::from_str(
        data["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("text contents: {data}")),
    )
    .expect("the template's JSON");
    assert_eq!(body["id"], "42", "{data}");
    assert_eq!(body["templateTest"], true, "{data}");

    let prompts = f.result("prompts/list", params(json!({}))).await;
    checks.check("prompts/list", "ListPromptsResult", &prompts);
    let listed = names(&prompts, "prompts");
    for name in [
        "test_simple_prompt",
        "test_prompt_with_arguments",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
    ] {
        assert!(listed.contains(&name), "{name} listed: {prompts}");
    }
    let got = f
        .result(
            "prompts/get",
            params(json!({"name": "test_prompt_with_arguments",
                "arguments": {"arg1": "one", "arg2": "two"}})),
        )
        .await;
    checks.check("prompts/get", "GetPromptResult", &got);
    assert_eq!(
        got["messages"][0]["content"],
        json!({"type": "text", "text": "Prompt with arguments: arg1='one', arg2='two'"}),
        "{got}"
    );
    let image = f
        .result(
            "prompts/get",
            params(json!({"name": "test_prompt_with_image"})),
        )
        .await;
    checks.check("prompts/get (image)", "GetPromptResult", &image);
    assert_eq!(image["messages"][0]["content"]["type"], "image", "{image}");
    assert_eq!(image["messages"][0]["content"]["data"], PNG_BASE64);
    let missing_arg = f
        .error(
            "prompts/get",
            params(json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "x"}})),
        )
        .await;
    assert_eq!(
        missing_arg["code"],
        error_codes::INVALID_PARAMS,
        "{missing_arg}"
    );

    let completed = f
        .result(
            "completion/complete",
            params(
                json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "te"}}),
            ),
        )
        .await;
    checks.check("completion/complete (prompt)", "CompleteResult", &completed);
    assert_eq!(
        completed["completion"]["values"],
        json!(["test", "testing", "tested"]),
        "{completed}"
    );
    let completed = f
        .result(
            "completion/complete",
            params(
                json!({"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
                "argument": {"name": "id", "value": "4"}}),
            ),
        )
        .await;
    checks.check(
        "completion/complete (template)",
        "CompleteResult",
        &completed,
    );
    assert_eq!(
        completed["completion"]["values"],
        json!(["456"]),
        "{completed}"
    );
}

/// Calls `test_tool_with_progress` with `token`; the three progress notifications come
/// on the connection before the response, which is returned.
async fn progress(f: &mut Fixture, checks: &mut Checks, call: Value, token: &Value) -> Value {
    let response = f.rpc("tools/call", call).await;
    assert!(response["result"].is_object(), "{response}");
    let progress = f.take("notifications/progress");
    let values: Vec<f64> = progress
        .iter()
        .map(|n| {
            checks.check("notifications/progress", "ProgressNotification", n);
            assert_eq!(&n["params"]["progressToken"], token, "{n}");
            assert_eq!(n["params"]["total"], 100.0, "{n}");
            n["params"]["progress"].as_f64().expect("a number")
        })
        .collect();
    assert_eq!(values, [0.0, 50.0, 100.0], "{progress:?}");
    response["result"].clone()
}

#[tokio::test]
async fn the_fixture_over_stdio_on_2026_07_28() {
    let mut checks = Checks::load("the_fixture_over_stdio_on_2026_07_28", "core-2026-07-28");
    let mut f = Fixture::spawn();

    let discover = f.result("server/discover", with_meta(json!({}))).await;
    checks.check("server/discover", "DiscoverResult", &discover);
    assert!(
        discover["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(PROTOCOL_VERSION))),
        "{discover}"
    );
    let caps = &discover["capabilities"];
    for capability in ["tools", "resources", "prompts", "completions"] {
        assert!(caps[capability].is_object(), "{capability}: {discover}");
    }
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-conformance-fixture",
        "{discover}"
    );

    // Version negotiation: a version the server does not speak is -32022 naming what it
    // does; the connection goes on.
    let mut old = with_meta(json!({}));
    old["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2024-11-05");
    let response = f.rpc("tools/list", old).await;
    checks.check(
        "tools/list (unsupported version)",
        "UnsupportedProtocolVersionError",
        &response,
    );
    let refused = &response["error"];
    assert_eq!(
        refused["code"],
        error_codes::UNSUPPORTED_PROTOCOL_VERSION,
        "{refused}"
    );
    assert_eq!(refused["data"]["requested"], "2024-11-05", "{refused}");
    assert!(
        refused["data"]["supported"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(PROTOCOL_VERSION))),
        "{refused}"
    );

    features(&mut f, &mut checks, with_meta).await;

    // SEP-2164: an unknown URI is invalid params naming it.
    let missing = f
        .rpc(
            "resources/read",
            with_meta(json!({"uri": "test://nothing-here"})),
        )
        .await;
    checks.check("resources/read (unknown)", "JSONRPCErrorResponse", &missing);
    checks.check(
        "resources/read (unknown)",
        "InvalidParamsError",
        &missing["error"],
    );
    assert_eq!(
        missing["error"]["code"],
        error_codes::INVALID_PARAMS,
        "{missing}"
    );
    assert_eq!(
        missing["error"]["data"]["uri"], "test://nothing-here",
        "{missing}"
    );

    let call = with_meta_and(
        json!({"name": "test_tool_with_progress", "arguments": {}}),
        json!({"progressToken": "p-1"}),
    );
    let result = progress(&mut f, &mut checks, call, &json!("p-1")).await;
    checks.check("tools/call (progress)", "CallToolResult", &result);
    assert_eq!(result["content"][0]["text"], "Progress test completed");
    // Without a token: no notification.
    let call = with_meta(json!({"name": "test_tool_with_progress", "arguments": {}}));
    f.result("tools/call", call).await;
    f.assert_quiet().await;

    // Logs at the level the request asks for, none without one.
    let logging = json!({"name": "test_logging_tool", "arguments": {}});
    let info = with_meta_and(
        logging.clone(),
        json!({"io.modelcontextprotocol/logLevel": "info"}),
    );
    f.result("tools/call", info).await;
    let logs = f.take("notifications/message");
    assert_eq!(logs.len(), 3, "{logs:?}");
    for log in &logs {
        checks.check("notifications/message", "LoggingMessageNotification", log);
        assert_eq!(log["params"]["level"], "info", "{log}");
    }
    f.result("tools/call", with_meta(logging)).await;
    f.assert_quiet().await;
    f.finish().await;
}

/// A child in a 2025-11-25 session: `initialize` with `init`, then
/// `notifications/initialized`; returns it with the initialize result.
async fn session(init: Value) -> (Fixture, Value) {
    let mut f = Fixture::spawn();
    let result = f.result("initialize", init).await;
    f.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    (f, result)
}

fn bare(params: Value) -> Value {
    params
}

#[tokio::test]
async fn the_fixture_over_stdio_in_a_2025_11_25_session() {
    let mut checks = Checks::load(
        "the_fixture_over_stdio_in_a_2025_11_25_session",
        "core-2025-11-25",
    );
    let (mut f, init) = session(init_params()).await;
    checks.check("initialize", "InitializeResult", &init);
    assert_eq!(init["protocolVersion"], LEGACY_VERSION, "{init}");
    let caps = &init["capabilities"];
    for capability in ["tools", "resources", "prompts", "completions", "logging"] {
        assert!(caps[capability].is_object(), "{capability}: {init}");
    }
    assert_eq!(caps["resources"]["subscribe"], true, "{init}");

    features(&mut f, &mut checks, bare).await;

    // 2025-11-25: an unknown resource is -32002 with the URI.
    let missing = f
        .error("resources/read", json!({"uri": "test://nothing-here"}))
        .await;
    assert_eq!(
        missing["code"],
        error_codes::RESOURCE_NOT_FOUND,
        "{missing}"
    );
    assert_eq!(missing["data"]["uri"], "test://nothing-here", "{missing}");

    let call = json!({"name": "test_tool_with_progress", "arguments": {},
        "_meta": {"progressToken": 7}});
    let result = progress(&mut f, &mut checks, call, &json!(7)).await;
    checks.check("tools/call (progress)", "CallToolResult", &result);

    // logging/setLevel: at info, the tool's three info messages come before its
    // response; at warning, none.
    let logging = json!({"name": "test_tool_with_logging", "arguments": {}});
    let set = f.result("logging/setLevel", json!({"level": "info"})).await;
    checks.check("logging/setLevel", "EmptyResult", &set);
    let result = f.result("tools/call", logging.clone()).await;
    assert_eq!(
        result["content"][0]["text"],
        "Tool with logging executed successfully"
    );
    let logs = f.take("notifications/message");
    let said: Vec<&Value> = logs.iter().map(|l| &l["params"]["data"]).collect();
    assert_eq!(
        said,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ],
        "{logs:?}"
    );
    for log in &logs {
        checks.check("notifications/message", "LoggingMessageNotification", log);
        assert_eq!(log["params"]["level"], "info", "{log}");
    }
    f.result("logging/setLevel", json!({"level": "warning"}))
        .await;
    f.result("tools/call", logging).await;
    f.assert_quiet().await;
    let bad = f.error("logging/setLevel", json!({"level": "loud"})).await;
    assert_eq!(bad["code"], error_codes::INVALID_PARAMS, "{bad}");

    let subscribed = f
        .result(
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    checks.check("resources/subscribe", "EmptyResult", &subscribed);
    let unknown = f
        .error("resources/subscribe", json!({"uri": "test://nothing-here"}))
        .await;
    assert_eq!(
        unknown["code"],
        error_codes::RESOURCE_NOT_FOUND,
        "{unknown}"
    );
    let unsubscribed = f
        .result(
            "resources/unsubscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    checks.check("resources/unsubscribe", "EmptyResult", &unsubscribed);
    f.assert_quiet().await;
    f.finish().await;
}

#[tokio::test]
async fn initialize_over_stdio_negotiates_the_version() {
    // An earlier revision the server speaks is granted as asked, without tasks.
    let mut init = init_params();
    init["protocolVersion"] = json!("2025-06-18");
    let (mut f, result) = session(init).await;
    assert_eq!(result["protocolVersion"], "2025-06-18", "{result}");
    assert!(result["capabilities"].get("tasks").is_none(), "{result}");
    let tools = f.result("tools/list", json!({})).await;
    assert!(
        names(&tools, "tools").contains(&"test_simple_text"),
        "{tools}"
    );
    f.finish().await;

    // A version it does not know: it answers with its latest 2025 revision.
    let mut init = init_params();
    init["protocolVersion"] = json!("2099-01-01");
    let (f, result) = session(init).await;
    assert_eq!(result["protocolVersion"], LEGACY_VERSION, "{result}");
    assert!(result["capabilities"]["tasks"].is_object(), "{result}");
    f.finish().await;
}
