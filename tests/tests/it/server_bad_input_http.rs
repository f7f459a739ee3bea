//! Bad input over Streamable HTTP: each is answered clearly (the right status and
//! JSON-RPC code, a message naming the problem) and the server keeps serving.

use mcp_tasks_protocol::error_codes;
use mcp_tasks_server::http::HttpConfig;
use mcp_tests::server_harness::{
    PROTOCOL_VERSION, Reply, TestServer, accept, call_params, meta, request,
};
use serde_json::{Value, json};

/// A good request after the bad one still works.
async fn still_serving(s: &TestServer) {
    let reply = s.call("greet", json!({"name": "Ann"}), false).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.result()["content"][0]["text"], "Hello, Ann!");
}

fn greet() -> Value {
    request(
        7,
        "tools/call",
        call_params("greet", json!({"name": "Ann"}), false),
    )
}

fn assert_rpc_error(reply: &Reply, code: i64, mentions: &str) {
    assert_eq!(reply.error_code(), code, "{}", reply.text);
    assert!(
        reply.error_message().contains(mentions),
        "the message should mention {mentions:?}: {}",
        reply.text
    );
    assert!(
        !reply.status.is_server_error(),
        "bad input is not a server error: {}",
        reply.status
    );
}

#[tokio::test]
async fn malformed_json_is_a_parse_error_with_http_400() {
    let s = TestServer::start().await;
    let reply = s.post_raw("{\"jsonrpc\":\"2.0\",\"id\":1,", &[]).await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(reply.error_code(), error_codes::PARSE_ERROR);
    assert!(reply.body["id"].is_null(), "{}", reply.text);
    let reply = s.post_raw(vec![0xff, 0xfe, b'{'], &[]).await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(reply.error_code(), error_codes::PARSE_ERROR);
    still_serving(&s).await;
}

#[tokio::test]
async fn json_that_is_not_json_rpc_is_an_invalid_request() {
    let s = TestServer::start().await;
    for body in [
        json!({"not": "rpc"}),
        json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": 42}),
        json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]),
        json!("just a string"),
    ] {
        let reply = s.post(&body, &[]).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text);
        assert_eq!(reply.error_code(), error_codes::INVALID_REQUEST, "{body}");
    }
    still_serving(&s).await;
}

#[tokio::test]
async fn tools_call_without_meta_names_the_missing_meta() {
    let s = TestServer::start().await;
    let reply = s
        .rpc(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "Ann"}}),
        )
        .await;
    assert_rpc_error(&reply, error_codes::INVALID_PARAMS, "_meta");
    let reply = s
        .post(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call"}),
            &[],
        )
        .await;
    assert_eq!(
        reply.error_code(),
        error_codes::INVALID_PARAMS,
        "{}",
        reply.text
    );
    still_serving(&s).await;
}

#[tokio::test]
async fn malformed_meta_is_refused() {
    let s = TestServer::start().await;
    let mut params = call_params("greet", json!({"name": "Ann"}), false);
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(20260728);
    let reply = s.rpc("tools/call", params).await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_rpc_error(&reply, error_codes::INVALID_PARAMS, "protocolVersion");

    // The code is right; the message is serde's and names the Rust type rather than
    // the `_meta` member, so only the code is checked here.
    let mut params = call_params("greet", json!({"name": "Ann"}), false);
    params["_meta"] = json!("not an object");
    let reply = s.rpc("tools/call", params).await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_rpc_error(&reply, error_codes::INVALID_PARAMS, "Invalid params");
    still_serving(&s).await;
}

#[tokio::test]
async fn an_unsupported_protocol_version_is_32022_with_http_400() {
    let s = TestServer::start().await;
    let mut params = call_params("greet", json!({"name": "Ann"}), false);
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2024-11-05");
    let reply = s.rpc("tools/call", params).await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(
        reply.error_code(),
        error_codes::UNSUPPORTED_PROTOCOL_VERSION
    );
    assert!(
        reply.error()["data"]["supported"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(PROTOCOL_VERSION))),
        "{}",
        reply.text
    );

    // The same through the header, with a body that names the same version.
    let mut old = greet();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2024-11-05");
    let reply = s
        .post(&old, &[("mcp-protocol-version", "2024-11-05")])
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(
        reply.error_code(),
        error_codes::UNSUPPORTED_PROTOCOL_VERSION
    );
    assert_eq!(reply.body["id"], 7, "{}", reply.text);

    // A header that disagrees with a body naming a good version is a header mismatch
    // first (SEP-2575: -32020 with HTTP 400), whatever the header names.
    let reply = s
        .post(&greet(), &[("mcp-protocol-version", "2024-11-05")])
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(reply.error_code(), error_codes::HEADER_MISMATCH);
    still_serving(&s).await;
}

#[tokio::test]
async fn a_header_that_disagrees_with_the_body_is_32020_with_http_400() {
    let s = TestServer::start().await;
    let body = greet();
    let cases: [(&str, &str); 3] = [
        ("mcp-method", "tools/list"),
        ("mcp-name", "slow_compute"),
        ("mcp-method", "TOOLS/CALL"),
    ];
    for (name, value) in cases {
        let reply = s.post(&body, &[(name, value)]).await;
        assert_eq!(reply.status, 400, "{name}: {}", reply.text);
        assert_eq!(reply.error_code(), error_codes::HEADER_MISMATCH, "{name}");
        assert_eq!(reply.body["id"], 7);
    }
    still_serving(&s).await;
}

/// A 2026-07-28 request without a standard header it must carry (SEP-2243) is refused
/// like a mismatch; 2025-11-25 requests predate them.
#[tokio::test]
async fn a_missing_standard_header_is_32020_with_http_400() {
    let s = TestServer::start().await;
    let version = ("mcp-protocol-version", PROTOCOL_VERSION);
    let method = ("mcp-method", "tools/call");
    let name = ("mcp-name", "greet");
    let cases: [(&[(&str, &str)], &str); 3] = [
        (&[method, name], "MCP-Protocol-Version"),
        (&[version, name], "Mcp-Method"),
        (&[version, method], "Mcp-Name"),
    ];
    for (headers, missing) in cases {
        let reply = s.post_bare(&greet(), headers).await;
        assert_eq!(reply.status, 400, "{missing}: {}", reply.text);
        assert_rpc_error(&reply, error_codes::HEADER_MISMATCH, missing);
    }
    // A method that names nothing needs no Mcp-Name.
    let list = request(8, "tools/list", json!({ "_meta": meta(false) }));
    let reply = s
        .post_bare(&list, &[version, ("mcp-method", "tools/list")])
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    // A 2025-11-25 client's initialize carries none of them.
    let init = request(9, "initialize", mcp_tests::legacy::init_params());
    let reply = s.post_bare(&init, &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    still_serving(&s).await;
}

/// `Mcp-Name` may be Base64-wrapped (a name that is not plain ASCII must be); a wrapper
/// that does not decode is refused.
#[tokio::test]
async fn mcp_name_is_decoded_before_it_is_compared() {
    let s = TestServer::start().await;
    // "greet" in Base64 is Z3JlZXQ=; without its padding it is not valid.
    let reply = s
        .post(&greet(), &[("mcp-name", "=?base64?Z3JlZXQ=?=")])
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    for bad in ["=?base64?Z3JlZXQ?=", "=?base64?!!!?="] {
        let reply = s.post(&greet(), &[("mcp-name", bad)]).await;
        assert_eq!(reply.status, 400, "{bad}: {}", reply.text);
        assert_rpc_error(&reply, error_codes::HEADER_MISMATCH, "Mcp-Name");
    }
    still_serving(&s).await;
}

#[tokio::test]
async fn an_oversized_body_is_413() {
    let s = TestServer::start_http(HttpConfig {
        max_body_bytes: 1024,
        ..HttpConfig::default()
    })
    .await;
    let big = "x".repeat(4096);
    let reply = s
        .post(
            &request(
                1,
                "tools/call",
                call_params("greet", json!({"name": big}), false),
            ),
            &[],
        )
        .await;
    assert_eq!(reply.status, 413, "{}", reply.text);
    still_serving(&s).await;
}

#[tokio::test]
async fn a_wrong_content_type_is_415_and_a_wrong_accept_is_406() {
    let s = TestServer::start().await;
    let body = greet().to_string();
    for ct in ["text/plain", "application/x-www-form-urlencoded", ""] {
        let reply = s.post_raw(body.clone(), &[("content-type", ct)]).await;
        assert_eq!(reply.status, 415, "{ct:?}: {}", reply.text);
    }
    let reply = s
        .post(
            &greet(),
            &[("content-type", "application/json; charset=utf-8")],
        )
        .await;
    assert_eq!(reply.status, 200, "parameters are allowed: {}", reply.text);

    let reply = s.post_raw(body.clone(), &[("accept", "text/html")]).await;
    assert_eq!(reply.status, 406, "{}", reply.text);
    // subscriptions/listen needs SSE: JSON alone is not enough.
    let listen = request(
        9,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": []}, "_meta": meta(true)}),
    );
    let reply = s.post(&listen, &[("accept", "application/json")]).await;
    assert_eq!(reply.status, 406, "{}", reply.text);
    still_serving(&s).await;
}

#[tokio::test]
async fn origins_are_checked() {
    let s = TestServer::start().await;
    let body = greet();
    for bad in [
        "http://evil.example",
        "http://localhost.evil.example",
        "null",
    ] {
        let reply = s.post(&body, &[("origin", bad)]).await;
        assert_eq!(reply.status, 403, "{bad}: {}", reply.text);
    }
    for good in [
        "http://localhost:3000",
        "http://127.0.0.1:8080",
        "http://[::1]",
    ] {
        let reply = s.post(&body, &[("origin", good)]).await;
        assert_eq!(reply.status, 200, "{good}: {}", reply.text);
        assert_eq!(reply.result()["content"][0]["text"], "Hello, Ann!");
    }
    still_serving(&s).await;
}

#[tokio::test]
async fn an_unknown_tool_is_32602_naming_it() {
    let s = TestServer::start().await;
    let reply = s.call("no_such_tool", json!({}), true).await;
    assert_rpc_error(&reply, error_codes::INVALID_PARAMS, "no_such_tool");
    still_serving(&s).await;
}

#[tokio::test]
async fn arguments_violating_the_schema_are_32602_naming_the_violation() {
    let s = TestServer::start().await;
    let reply = s
        .call("slow_compute", json!({"seconds": "ten"}), true)
        .await;
    assert_rpc_error(&reply, error_codes::INVALID_PARAMS, "seconds");
    assert!(
        reply.error_message().contains("number"),
        "the message should say what was expected: {}",
        reply.text
    );
    let reply = s.call("greet", json!({}), false).await;
    assert_rpc_error(&reply, error_codes::INVALID_PARAMS, "name");
    let reply = s.call("confirm_delete", json!({"filename": 3}), true).await;
    assert_rpc_error(&reply, error_codes::INVALID_PARAMS, "filename");
    // Arguments that are not an object at all.
    let mut params = call_params("greet", json!(null), false);
    params["arguments"] = json!([1, 2]);
    let reply = s.rpc("tools/call", params).await;
    assert_eq!(
        reply.error_code(),
        error_codes::INVALID_PARAMS,
        "{}",
        reply.text
    );
    still_serving(&s).await;
}

#[tokio::test]
async fn tasks_update_with_non_object_responses_is_32602() {
    let s = TestServer::start().await;
    let id = s
        .create_task("confirm_delete", json!({"filename": "c.txt"}))
        .await;
    let waiting = s.poll_status(&id, "input_required").await;
    let key = waiting["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("a key");
    for bad in [
        json!({ &key: "yes" }),
        json!({ &key: [1] }),
        json!({ &key: null }),
    ] {
        let reply = s.update_task(&id, bad.clone()).await;
        assert_rpc_error(&reply, error_codes::INVALID_PARAMS, &key);
    }
    for bad in [json!("yes"), json!([]), json!(null)] {
        let reply = s.update_task(&id, bad.clone()).await;
        assert_eq!(
            reply.error_code(),
            error_codes::INVALID_PARAMS,
            "{bad}: {}",
            reply.text
        );
    }
    // The task is still waiting, with the same request.
    let after = s.get_task(&id).await;
    assert_eq!(after.result()["status"], "input_required");
    assert_eq!(after.result()["inputRequests"], waiting["inputRequests"]);
    s.update_task(&id, json!({ &key: accept(json!({"confirm": false})) }))
        .await;
    let done = s.poll_terminal(&id).await;
    assert_eq!(done["result"]["content"][0]["text"], "Kept c.txt.");
    still_serving(&s).await;
}

#[tokio::test]
async fn task_methods_with_a_missing_or_wrongly_typed_task_id_are_32602() {
    let s = TestServer::start().await;
    for method in ["tasks/get", "tasks/cancel"] {
        let reply = s.rpc(method, json!({"_meta": meta(true)})).await;
        assert_rpc_error(&reply, error_codes::INVALID_PARAMS, "taskId");
        // serde's message for a wrong type does not name the member ("invalid type:
        // integer `42`, expected a string"): only the code is checked.
        let reply = s
            .rpc(method, json!({"taskId": 42, "_meta": meta(true)}))
            .await;
        assert_rpc_error(&reply, error_codes::INVALID_PARAMS, "Invalid params");
    }
    still_serving(&s).await;
}

#[tokio::test]
async fn unknown_methods_are_32601() {
    let s = TestServer::start().await;
    let reply = s.rpc("tools/explode", json!({"_meta": meta(true)})).await;
    assert_rpc_error(&reply, error_codes::METHOD_NOT_FOUND, "tools/explode");
    still_serving(&s).await;
}

#[tokio::test]
async fn get_and_delete_on_the_endpoint_are_405() {
    let s = TestServer::start().await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let send = s.client.request(method.clone(), &s.url).send();
        let reply = tokio::time::timeout(mcp_tests::server_harness::WAIT, send)
            .await
            .expect("in time")
            .expect("HTTP");
        assert_eq!(reply.status(), 405, "{method}");
        assert_eq!(
            reply.headers().get("allow").and_then(|v| v.to_str().ok()),
            Some("POST")
        );
    }
    still_serving(&s).await;
}

#[tokio::test]
async fn notifications_get_202_and_stray_responses_400() {
    let s = TestServer::start().await;
    let reply = s
        .post(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12345}}),
            &[],
        )
        .await;
    assert_eq!(reply.status, 202, "{}", reply.text);
    assert!(reply.text.is_empty(), "{}", reply.text);
    // A response answers a request of the session it names: without one it answers
    // nothing, and says so (the server cannot accept it).
    let reply = s
        .post(&json!({"jsonrpc": "2.0", "id": 5, "result": {}}), &[])
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(
        reply.error_code(),
        error_codes::INVALID_REQUEST,
        "{}",
        reply.text
    );
    still_serving(&s).await;
}

/// Every 2026-07-28 request carries `_meta` with its protocol version and client
/// capabilities (SEP-2575): a request without one of them is -32602 with HTTP 400.
#[tokio::test]
async fn a_request_without_its_required_meta_is_http_400() {
    let s = TestServer::start().await;
    let mut no_meta = greet();
    no_meta["params"]
        .as_object_mut()
        .expect("params")
        .remove("_meta");
    let mut no_version = greet();
    no_version["params"]["_meta"]
        .as_object_mut()
        .expect("_meta")
        .remove("io.modelcontextprotocol/protocolVersion");
    let mut no_capabilities = greet();
    no_capabilities["params"]["_meta"]
        .as_object_mut()
        .expect("_meta")
        .remove("io.modelcontextprotocol/clientCapabilities");
    for (what, body) in [
        ("_meta", no_meta),
        ("protocolVersion", no_version),
        ("clientCapabilities", no_capabilities),
    ] {
        let reply = s.post(&body, &[]).await;
        assert_eq!(reply.status, 400, "{what}: {}", reply.text);
        assert_eq!(reply.error_code(), error_codes::INVALID_PARAMS, "{what}");
        assert!(
            reply.error_message().contains(what),
            "{what}: {}",
            reply.text
        );
    }
    still_serving(&s).await;
}

/// On the 2026-07-28 wire a method the server does not have, or one that revision
/// removed (`ping`, a 2026-style `initialize`), is -32601 with HTTP 404 (SEP-2575).
#[tokio::test]
async fn unknown_and_removed_methods_are_http_404() {
    let s = TestServer::start().await;
    for method in ["no/such/method", "ping", "initialize", "logging/setLevel"] {
        let reply = s
            .post(&request(3, method, json!({ "_meta": meta(true) })), &[])
            .await;
        assert_eq!(reply.status, 404, "{method}: {}", reply.text);
        assert_eq!(
            reply.error_code(),
            error_codes::METHOD_NOT_FOUND,
            "{method}"
        );
    }
    still_serving(&s).await;
}

/// Header values are compared without surrounding whitespace (RFC 9110, 5.5).
#[tokio::test]
async fn routing_headers_may_carry_surrounding_whitespace() {
    let s = TestServer::start().await;
    let reply = s
        .post(
            &greet(),
            &[("mcp-name", "  greet "), ("mcp-method", " tools/call")],
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(reply.result()["content"].is_array(), "{}", reply.text);
}
