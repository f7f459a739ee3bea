//! Resources, resource templates, prompts and completion on the wire, on both revisions:
//! over Streamable HTTP (MCP 2026-07-28 requests and a 2025-11-25 session) and over an
//! in-process connection (the path stdio serves: `Server::serve_connection`, where a
//! 2025-11-25 session's notifications travel on the connection itself). Every result is
//! validated against the official schema of its revision (see `mcp_tests::schema_check`).

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use mcp_tasks_protocol::engine::Connection;
use mcp_tasks_server::FEATURE_PAGE;
use mcp_tasks_server::http::HttpConfig;
use mcp_tests::features_fixture::{
    ASKING_KEY, ASKING_PROMPT, BLOB_BASE64, BLOB_URI, FILLERS, Raw, TEMPLATE, TEXT_URI,
    fixture_server, uris,
};
use mcp_tests::legacy::init_params;
use mcp_tests::schema_check::{Schema, spec_dir};
use mcp_tests::server_harness::{Reply, TestServer, WAIT, build_server, meta, request};
use serde_json::{Value, json};

fn assert_not_found_2026(reply: &Reply, uri: &str, core: &mut Schema) {
    core.check(
        "resources/read (unknown)",
        "JSONRPCErrorResponse",
        &reply.body,
    );
    core.check(
        "resources/read (unknown)",
        "InvalidParamsError",
        reply.error(),
    );
    assert_eq!(reply.error()["data"]["uri"], uri, "{}", reply.text);
}

#[tokio::test]
async fn resources_prompts_and_completion_on_2026_07_28() {
    let Some(spec) = spec_dir("resources_prompts_and_completion_on_2026_07_28") else {
        return;
    };
    let mut core = Schema::load(spec.join("core-2026-07-28/schema.json"));
    let s = TestServer::start_server(fixture_server(), HttpConfig::default()).await;
    let rpc = |method: &'static str, mut params: Value| {
        params["_meta"] = meta(false);
        s.rpc(method, params)
    };

    let discover = rpc("server/discover", json!({})).await;
    let caps = &discover.result()["capabilities"];
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    assert!(
        caps["prompts"].is_object() && caps["completions"].is_object(),
        "{caps}"
    );

    // Two pages, each with cacheScope and ttlMs.
    let first = rpc("resources/list", json!({})).await;
    core.check("resources/list", "ListResourcesResult", first.result());
    let first = first.result();
    assert_eq!(first["cacheScope"], "private");
    assert_eq!(first["ttlMs"], 0);
    assert_eq!(uris(first).len(), FEATURE_PAGE);
    assert_eq!(first["resources"][0]["mimeType"], "text/plain");
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = rpc("resources/list", json!({ "cursor": cursor })).await;
    core.check(
        "resources/list (page 2)",
        "ListResourcesResult",
        second.result(),
    );
    let second = second.result();
    assert_eq!(uris(second).len(), FILLERS + 2 - FEATURE_PAGE);
    assert!(second.get("nextCursor").is_none(), "{second}");
    let mut all = uris(first);
    all.extend(uris(second));
    all.dedup();
    assert_eq!(all.len(), FILLERS + 2, "every resource once");
    let forged = rpc("resources/list", json!({ "cursor": "resources.1" })).await;
    assert_eq!(forged.error_code(), -32602, "{}", forged.text);

    let templates = rpc("resources/templates/list", json!({})).await;
    core.check(
        "resources/templates/list",
        "ListResourceTemplatesResult",
        templates.result(),
    );
    assert_eq!(
        templates.result()["resourceTemplates"][0]["uriTemplate"],
        TEMPLATE
    );

    let text = rpc("resources/read", json!({ "uri": TEXT_URI })).await;
    core.check("resources/read (text)", "ReadResourceResult", text.result());
    let contents = &text.result()["contents"][0];
    assert_eq!(
        (&contents["uri"], &contents["text"], &contents["mimeType"]),
        (
            &json!(TEXT_URI),
            &json!("Hello, resources!"),
            &json!("text/plain")
        )
    );
    assert!(text.result()["ttlMs"].is_u64() && text.result()["cacheScope"].is_string());
    let blob = rpc("resources/read", json!({ "uri": BLOB_URI })).await;
    core.check("resources/read (blob)", "ReadResourceResult", blob.result());
    assert_eq!(blob.result()["contents"][0]["blob"], BLOB_BASE64);
    let user = rpc(
        "resources/read",
        json!({ "uri": "test://users/ada%20l/profile" }),
    )
    .await;
    core.check(
        "resources/read (template)",
        "ReadResourceResult",
        user.result(),
    );
    let body: Value =
        serde_json::from_str(user.result()["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["id"], "ada l", "the variable, percent-decoded");
    assert_eq!(user.result()["contents"][0]["mimeType"], "application/json");

    for uri in [
        "test://nothing-here",
        "test://users/ghost/profile",
        "test://users/a/b/profile",
    ] {
        let missing = rpc("resources/read", json!({ "uri": uri })).await;
        assert_not_found_2026(&missing, uri, &mut core);
    }

    let prompts = rpc("prompts/list", json!({})).await;
    core.check("prompts/list", "ListPromptsResult", prompts.result());
    let listed = &prompts.result()["prompts"];
    assert_eq!(listed[1]["name"], "code_review");
    assert_eq!(
        listed[1]["arguments"],
        json!([
            { "name": "code", "description": "The code to review.", "required": true },
            { "name": "language", "description": "The language it is written in.", "required": false },
        ])
    );
    let got = rpc(
        "prompts/get",
        json!({ "name": "code_review", "arguments": { "code": "fn main() {}", "language": "rust" } }),
    )
    .await;
    core.check("prompts/get", "GetPromptResult", got.result());
    let messages = got.result()["messages"].as_array().unwrap();
    let kinds: Vec<&str> = messages
        .iter()
        .map(|m| m["content"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "image", "audio", "resource"]);
    assert_eq!(
        messages[0]["content"]["text"],
        "Review this rust: fn main() {}"
    );
    assert_eq!(got.result()["description"], "Reviews code");
    let simple = rpc("prompts/get", json!({ "name": "simple_prompt" })).await;
    core.check(
        "prompts/get (no arguments)",
        "GetPromptResult",
        simple.result(),
    );

    let missing = rpc(
        "prompts/get",
        json!({ "name": "code_review", "arguments": {} }),
    )
    .await;
    core.check(
        "prompts/get (missing argument)",
        "InvalidParamsError",
        missing.error(),
    );
    assert!(missing.error_message().contains("code"), "{}", missing.text);
    let unknown = rpc("prompts/get", json!({ "name": "nope" })).await;
    core.check(
        "prompts/get (unknown)",
        "InvalidParamsError",
        unknown.error(),
    );
    assert_eq!(unknown.error_message(), "Unknown prompt: nope");

    let languages = rpc(
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": "code_review" },
                "argument": { "name": "language", "value": "p" } }),
    )
    .await;
    core.check(
        "completion/complete (prompt)",
        "CompleteResult",
        languages.result(),
    );
    let completion = &languages.result()["completion"];
    assert_eq!(completion["values"], json!(["python", "perl"]));
    assert_eq!(
        (&completion["total"], &completion["hasMore"]),
        (&json!(2), &json!(false))
    );
    let ids = rpc(
        "completion/complete",
        json!({ "ref": { "type": "ref/resource", "uri": TEMPLATE },
                "argument": { "name": "id", "value": "al" } }),
    )
    .await;
    core.check(
        "completion/complete (template)",
        "CompleteResult",
        ids.result(),
    );
    assert_eq!(
        ids.result()["completion"]["values"],
        json!(["alice", "albert"])
    );
    let nobody = rpc(
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": "code_review" },
                "argument": { "name": "code", "value": "" } }),
    )
    .await;
    assert_eq!(nobody.result()["completion"]["values"], json!([]));
    s.stop().await;
}

#[tokio::test]
async fn listen_carries_resource_updates_on_2026_07_28() {
    let Some(spec) = spec_dir("listen_carries_resource_updates_on_2026_07_28") else {
        return;
    };
    let mut core = Schema::load(spec.join("core-2026-07-28/schema.json"));
    let s = TestServer::start_server(fixture_server(), HttpConfig::default()).await;
    let listen = request(
        s.id(),
        "subscriptions/listen",
        json!({ "_meta": meta(false),
                "notifications": { "resourceSubscriptions": [TEXT_URI, "test://unknown"] } }),
    );
    let mut stream = s.open_stream(&listen, &[]).await;
    let ack = stream.next_event(WAIT).await.unwrap().json();
    core.check(
        "acknowledged",
        "SubscriptionsAcknowledgedNotification",
        &ack,
    );
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!([TEXT_URI])
    );
    s.server.notify_resource_updated(BLOB_URI).await;
    s.server.notify_resource_updated(TEXT_URI).await;
    let updated = stream.next_event(WAIT).await.unwrap().json();
    core.check("updated", "ResourceUpdatedNotification", &updated);
    assert_eq!(
        updated["params"]["uri"], TEXT_URI,
        "only the URI subscribed to"
    );
    assert!(updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].is_number());
    drop(stream);
    s.stop().await;
}

/// A 2025-11-25 session over HTTP, JSON replies only.
struct Session<'a> {
    s: &'a TestServer,
    id: String,
}

impl Session<'_> {
    async fn open<'a>(s: &'a TestServer, core: &mut Schema) -> Session<'a> {
        let init = s
            .post(
                &request(s.id(), "initialize", init_params()),
                &[("accept", "application/json")],
            )
            .await;
        core.check("initialize", "InitializeResult", init.result());
        let id = init.headers["mcp-session-id"].to_str().unwrap().to_owned();
        Session { s, id }
    }

    async fn rpc(&self, method: &str, params: Value) -> Reply {
        self.s
            .post(
                &request(self.s.id(), method, params),
                &[
                    ("mcp-session-id", self.id.as_str()),
                    ("accept", "application/json"),
                ],
            )
            .await
    }
}

#[tokio::test]
async fn resources_prompts_and_completion_in_a_2025_11_25_session() {
    let Some(spec) = spec_dir("resources_prompts_and_completion_in_a_2025_11_25_session") else {
        return;
    };
    let mut core = Schema::load(spec.join("core-2025-11-25/schema.json"));
    let s = TestServer::start_server(fixture_server(), HttpConfig::default()).await;
    let init = s
        .post(
            &request(s.id(), "initialize", init_params()),
            &[("accept", "application/json")],
        )
        .await;
    let caps = &init.result()["capabilities"];
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    assert!(
        caps["prompts"].is_object() && caps["completions"].is_object(),
        "{caps}"
    );
    let session = Session::open(&s, &mut core).await;

    let first = session.rpc("resources/list", json!({})).await;
    core.check("resources/list", "ListResourcesResult", first.result());
    assert!(first.result().get("ttlMs").is_none(), "{}", first.text);
    let cursor = first.result()["nextCursor"].as_str().unwrap().to_owned();
    let second = session
        .rpc("resources/list", json!({ "cursor": cursor }))
        .await;
    core.check(
        "resources/list (page 2)",
        "ListResourcesResult",
        second.result(),
    );
    assert_eq!(
        uris(first.result()).len() + uris(second.result()).len(),
        FILLERS + 2
    );
    // A cursor is sealed for its owner: another session cannot use it.
    let other = Session::open(&s, &mut core).await;
    let foreign = other
        .rpc("resources/list", json!({ "cursor": cursor }))
        .await;
    assert_eq!(foreign.error_code(), -32602, "{}", foreign.text);

    let templates = session.rpc("resources/templates/list", json!({})).await;
    core.check(
        "resources/templates/list",
        "ListResourceTemplatesResult",
        templates.result(),
    );
    let text = session
        .rpc("resources/read", json!({ "uri": TEXT_URI }))
        .await;
    core.check("resources/read (text)", "ReadResourceResult", text.result());
    assert_eq!(text.result()["contents"][0]["text"], "Hello, resources!");
    let blob = session
        .rpc("resources/read", json!({ "uri": BLOB_URI }))
        .await;
    core.check("resources/read (blob)", "ReadResourceResult", blob.result());
    assert_eq!(blob.result()["contents"][0]["blob"], BLOB_BASE64);
    let user = session
        .rpc(
            "resources/read",
            json!({ "uri": "test://users/42/profile" }),
        )
        .await;
    core.check(
        "resources/read (template)",
        "ReadResourceResult",
        user.result(),
    );
    assert!(
        user.result()["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"42\"")
    );
    let missing = session
        .rpc("resources/read", json!({ "uri": "test://nothing-here" }))
        .await;
    core.check(
        "resources/read (unknown)",
        "JSONRPCErrorResponse",
        &missing.body,
    );
    assert_eq!(
        missing.error(),
        &json!({ "code": -32002, "message": "Resource not found", "data": { "uri": "test://nothing-here" } })
    );

    let prompts = session.rpc("prompts/list", json!({})).await;
    core.check("prompts/list", "ListPromptsResult", prompts.result());
    let got = session
        .rpc(
            "prompts/get",
            json!({ "name": "code_review", "arguments": { "code": "x" } }),
        )
        .await;
    core.check("prompts/get", "GetPromptResult", got.result());
    assert_eq!(
        got.result()["messages"][0]["content"]["text"],
        "Review this unknown: x"
    );
    let no_code = session
        .rpc(
            "prompts/get",
            json!({ "name": "code_review", "arguments": { "language": "rust" } }),
        )
        .await;
    assert_eq!(no_code.error_code(), -32602, "{}", no_code.text);
    let unknown = session.rpc("prompts/get", json!({ "name": "nope" })).await;
    assert_eq!(unknown.error_code(), -32602, "{}", unknown.text);

    let languages = session
        .rpc(
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": "code_review" },
                    "argument": { "name": "language", "value": "R" } }),
        )
        .await;
    core.check(
        "completion/complete (prompt)",
        "CompleteResult",
        languages.result(),
    );
    assert_eq!(languages.result()["completion"]["values"], json!(["rust"]));
    let ids = session
        .rpc(
            "completion/complete",
            json!({ "ref": { "type": "ref/resource", "uri": TEMPLATE },
                    "argument": { "name": "id", "value": "b" } }),
        )
        .await;
    core.check(
        "completion/complete (template)",
        "CompleteResult",
        ids.result(),
    );
    assert_eq!(ids.result()["completion"]["values"], json!(["bob"]));
    let unknown_template = session
        .rpc(
            "completion/complete",
            json!({ "ref": { "type": "ref/resource", "uri": "test://{x}" },
                    "argument": { "name": "x", "value": "" } }),
        )
        .await;
    assert_eq!(
        unknown_template.error_code(),
        -32602,
        "{}",
        unknown_template.text
    );

    // Subscribe, then a change announced by the application reaches the standalone stream.
    let mut stream = s
        .get_stream(&[("mcp-session-id", session.id.as_str())])
        .await;
    let subscribed = session
        .rpc("resources/subscribe", json!({ "uri": TEXT_URI }))
        .await;
    core.check("resources/subscribe", "EmptyResult", subscribed.result());
    let unknown_uri = session
        .rpc(
            "resources/subscribe",
            json!({ "uri": "test://nothing-here" }),
        )
        .await;
    assert_eq!(unknown_uri.error_code(), -32002, "{}", unknown_uri.text);
    s.server.notify_resource_updated(BLOB_URI).await;
    s.server.notify_resource_updated(TEXT_URI).await;
    let updated = stream.next_event(WAIT).await.unwrap().json();
    core.check(
        "notifications/resources/updated",
        "ResourceUpdatedNotification",
        &updated,
    );
    assert_eq!(
        updated["params"]["uri"], TEXT_URI,
        "only the URI subscribed to"
    );
    let unsubscribed = session
        .rpc("resources/unsubscribe", json!({ "uri": TEXT_URI }))
        .await;
    core.check(
        "resources/unsubscribe",
        "EmptyResult",
        unsubscribed.result(),
    );
    s.server.notify_resource_updated(TEXT_URI).await;
    assert!(
        stream
            .event_within(Duration::from_millis(300))
            .await
            .is_none(),
        "nothing after unsubscribing"
    );
    drop(stream);

    // Outside a session, subscribe is not a 2026-07-28 method.
    let outside = s
        .rpc(
            "resources/subscribe",
            json!({ "_meta": meta(false), "uri": TEXT_URI }),
        )
        .await;
    assert_eq!(outside.error_code(), -32601, "{}", outside.text);
    s.stop().await;
}

#[tokio::test]
async fn a_server_without_them_declares_and_serves_none() {
    let s = TestServer::start_server(
        build_server(Vec::new(), Default::default()),
        HttpConfig::default(),
    )
    .await;
    let discover = s
        .rpc("server/discover", json!({ "_meta": meta(false) }))
        .await;
    let caps = &discover.result()["capabilities"];
    for absent in ["resources", "prompts", "completions"] {
        assert!(caps.get(absent).is_none(), "{absent}: {caps}");
    }
    for method in ["resources/list", "prompts/list"] {
        let reply = s.rpc(method, json!({ "_meta": meta(false) })).await;
        assert_eq!(reply.error_code(), -32601, "{method}: {}", reply.text);
    }
    let init = s
        .post(
            &request(s.id(), "initialize", init_params()),
            &[("accept", "application/json")],
        )
        .await;
    let caps = &init.result()["capabilities"];
    for absent in ["resources", "prompts", "completions"] {
        assert!(caps.get(absent).is_none(), "{absent}: {caps}");
    }
    s.stop().await;
}

#[tokio::test]
async fn a_2025_11_25_session_on_a_connection_reads_and_hears_updates() {
    let Some(spec) = spec_dir("a_2025_11_25_session_on_a_connection_reads_and_hears_updates")
    else {
        return;
    };
    let mut core = Schema::load(spec.join("core-2025-11-25/schema.json"));
    let server = fixture_server();
    let (server_end, client_end) = Connection::memory();
    let _served = server.serve_connection(server_end);
    let mut raw = Raw {
        sender: client_end.sender,
        receiver: client_end.receiver,
        next_id: 0,
        notifications: Vec::new(),
    };
    let init = raw.rpc("initialize", init_params()).await;
    core.check("initialize", "InitializeResult", &init["result"]);
    let blob = raw.rpc("resources/read", json!({ "uri": BLOB_URI })).await;
    core.check(
        "resources/read (blob)",
        "ReadResourceResult",
        &blob["result"],
    );
    assert_eq!(blob["result"]["contents"][0]["blob"], BLOB_BASE64);
    let missing = raw
        .rpc("resources/read", json!({ "uri": "test://nope" }))
        .await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    assert_eq!(missing["error"]["data"]["uri"], "test://nope", "{missing}");
    let got = raw
        .rpc("prompts/get", json!({ "name": "simple_prompt" }))
        .await;
    core.check("prompts/get", "GetPromptResult", &got["result"]);

    let subscribed = raw
        .rpc(
            "resources/subscribe",
            json!({ "uri": "test://users/7/profile" }),
        )
        .await;
    core.check("resources/subscribe", "EmptyResult", &subscribed["result"]);
    server
        .notify_resource_updated("test://users/7/profile")
        .await;
    let updated = match raw.notifications.pop() {
        Some(n) => n,
        None => raw.next().await,
    };
    core.check(
        "notifications/resources/updated",
        "ResourceUpdatedNotification",
        &updated,
    );
    assert_eq!(updated["params"]["uri"], "test://users/7/profile");
    server.shutdown().await;
}

/// A prompt that asks the user first answers `input_required` on MCP 2026-07-28; the
/// retry with the answer and the sealed `requestState` expands it; a state that was not
/// issued for this prompt is -32602.
#[tokio::test]
async fn a_prompt_asks_in_rounds_on_2026_07_28() {
    let Some(spec) = spec_dir("a_prompt_asks_in_rounds_on_2026_07_28") else {
        return;
    };
    let mut core = Schema::load(spec.join("core-2026-07-28/schema.json"));
    let s = TestServer::start_server(fixture_server(), HttpConfig::default()).await;
    let rpc = |mut params: Value| {
        params["_meta"] = meta(false);
        s.rpc("prompts/get", params)
    };

    let first = rpc(json!({ "name": ASKING_PROMPT })).await;
    core.check(
        "prompts/get (round 1)",
        "InputRequiredResult",
        first.result(),
    );
    let round = first.result();
    assert_eq!(round["resultType"], "input_required", "{}", first.text);
    let asked = &round["inputRequests"][ASKING_KEY];
    assert_eq!(asked["method"], "elicitation/create", "{}", first.text);
    assert_eq!(asked["params"]["message"], "Which topic?");
    let state = round["requestState"].as_str().unwrap().to_owned();

    let answer = json!({ ASKING_KEY: { "action": "accept", "content": { "topic": "tides" } } });
    let done = rpc(json!({
        "name": ASKING_PROMPT,
        "inputResponses": answer,
        "requestState": state,
    }))
    .await;
    core.check("prompts/get (round 2)", "GetPromptResult", done.result());
    assert_eq!(done.result()["resultType"], "complete", "{}", done.text);
    assert_eq!(
        done.result()["messages"][0]["content"]["text"],
        "Brief me on tides"
    );

    // The answers alone (no state) are enough here: the prompt asks one question.
    let stateless = rpc(json!({ "name": ASKING_PROMPT, "inputResponses": answer })).await;
    assert_eq!(
        stateless.result()["resultType"],
        "complete",
        "{}",
        stateless.text
    );

    // A state that is not one the server sealed, or sealed for another request.
    let forged = rpc(json!({ "name": ASKING_PROMPT, "requestState": "rs1:{}" })).await;
    assert_eq!(forged.error_code(), -32602, "{}", forged.text);
    let elsewhere = s
        .rpc(
            "prompts/get",
            json!({ "name": "simple_prompt", "requestState": state, "_meta": meta(false) }),
        )
        .await;
    assert_eq!(elsewhere.error_code(), -32602, "{}", elsewhere.text);
    // An answer without the content the prompt needs is the prompt's own refusal.
    let declined = rpc(json!({
        "name": ASKING_PROMPT,
        "inputResponses": { ASKING_KEY: { "action": "decline" } },
    }))
    .await;
    assert_eq!(declined.error_code(), -32602, "{}", declined.text);
    s.stop().await;
}

/// In a 2025-11-25 session the same prompt asks the client directly: an
/// `elicitation/create` request arrives on the connection, and its answer expands it.
#[tokio::test]
async fn a_prompt_asks_the_client_in_a_2025_11_25_session() {
    let Some(spec) = spec_dir("a_prompt_asks_the_client_in_a_2025_11_25_session") else {
        return;
    };
    let mut core = Schema::load(spec.join("core-2025-11-25/schema.json"));
    let server = fixture_server();
    let (server_end, client_end) = Connection::memory();
    let _served = server.serve_connection(server_end);
    let mut raw = Raw {
        sender: client_end.sender,
        receiver: client_end.receiver,
        next_id: 0,
        notifications: Vec::new(),
    };
    let init = raw.rpc("initialize", init_params()).await;
    core.check("initialize", "InitializeResult", &init["result"]);
    raw.sender
        .send(request(77, "prompts/get", json!({ "name": ASKING_PROMPT })).to_string())
        .await
        .unwrap();
    let ask = raw.next().await;
    core.check("elicitation/create", "ElicitRequest", &ask);
    assert_eq!(ask["params"]["message"], "Which topic?", "{ask}");
    let answer = json!({
        "jsonrpc": "2.0",
        "id": ask["id"],
        "result": { "action": "accept", "content": { "topic": "tides" } },
    });
    raw.sender.send(answer.to_string()).await.unwrap();
    let got = raw.next().await;
    assert_eq!(got["id"], 77, "{got}");
    core.check("prompts/get", "GetPromptResult", &got["result"]);
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"],
        "Brief me on tides"
    );
    server.shutdown().await;
}
