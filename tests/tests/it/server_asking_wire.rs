//! A synchronous `tools/call` that asks the client, in an MCP 2025-11-25 session over
//! Streamable HTTP, with the conformance fixture tools: the server's `sampling/createMessage`
//! or `elicitation/create` arrives on the call's own POST SSE stream, the client answers it
//! with a POST (202), and the tool's result follows on the same stream. The requests are
//! checked against the official 2025-11-25 schema (the SEP-1034 defaults and the SEP-1330
//! enum shapes field by field). A tool that needs a capability the client declared uses
//! it; one the client did not declare is -32021 (the session's `initialize` capabilities
//! reach the tool).

use mcp_tasks_protocol::error_codes;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, demo};
use mcp_tests::legacy::LEGACY_VERSION;
use mcp_tests::schema_check::{Schema, spec_dir};
use mcp_tests::server_harness::{SseStream, TestServer, WAIT, open_legacy_session, request};
use serde_json::{Value, json};

/// The fixture tools over HTTP.
async fn fixture_server() -> TestServer {
    let tools = demo::fixtures::tools().expect("fixture tools");
    TestServer::start_with(tools, RuntimeConfig::default(), HttpConfig::default()).await
}

/// One 2025-11-25 session, opened with `capabilities`.
struct Session<'a> {
    s: &'a TestServer,
    id: String,
}

impl<'a> Session<'a> {
    async fn open(s: &'a TestServer, capabilities: Value) -> Session<'a> {
        let params = json!({
            "protocolVersion": LEGACY_VERSION,
            "capabilities": capabilities,
            "clientInfo": {"name": "mcp-tests-asking", "version": "0"},
        });
        let (id, _) = open_legacy_session(s, params).await;
        Session { s, id }
    }

    fn headers(&self) -> [(&str, &str); 2] {
        [
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", LEGACY_VERSION),
        ]
    }

    /// `tools/call` of `name`, its reply read as an event stream: the request id and the
    /// stream.
    async fn call(&self, name: &str, arguments: Value) -> (i64, SseStream) {
        let id = self.s.id();
        let message = request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        );
        let stream = self.s.open_stream(&message, &self.headers()).await;
        assert_eq!(stream.status, 200, "tools/call {name}");
        let kind = stream
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok());
        assert_eq!(kind, Some("text/event-stream"), "tools/call {name}");
        (id, stream)
    }

    /// POSTs the client's answer to the server's request `asked`; the server takes it
    /// with 202.
    async fn answer(&self, asked: &Value, result: Value) {
        let message = json!({"jsonrpc": "2.0", "id": asked["id"], "result": result});
        let reply = self.s.post(&message, &self.headers()).await;
        assert_eq!(reply.status, 202, "{}", reply.text);
    }

    /// Calls `name`, whose first message on its stream must be a `method` request to the
    /// client (checked by [`assert_request`]): the call's id, its stream and the request.
    async fn ask(&self, name: &str, arguments: Value, method: &str) -> (i64, SseStream, Value) {
        let (id, mut stream) = self.call(name, arguments).await;
        let asked = next(&mut stream).await;
        assert_request(&asked, method);
        (id, stream, asked)
    }

    /// Accepts the elicitation `asked` with `content`; the tool (one of the fixtures that
    /// report `Elicitation completed: ...`) must report that content.
    async fn accept(&self, mut stream: SseStream, id: i64, asked: &Value, content: Value) {
        self.answer(asked, json!({"action": "accept", "content": content}))
            .await;
        let result = result_of(&mut stream, id).await;
        let said = text(&result);
        let shown = said
            .strip_prefix("Elicitation completed: action=accept, content=")
            .unwrap_or_else(|| panic!("{said}"));
        let shown: Value = serde_json::from_str(shown).expect("the content as JSON");
        assert_eq!(shown, content, "{said}");
    }
}

/// The next message on `stream`.
async fn next(stream: &mut SseStream) -> Value {
    stream
        .next_event(WAIT)
        .await
        .expect("the stream stays open until the response")
        .json()
}

/// Reads the call's response (id `id`), then checks the stream ends after it; returns
/// the result.
async fn result_of(stream: &mut SseStream, id: i64) -> Value {
    let response = next(stream).await;
    assert_eq!(response["id"], id, "the call's response: {response}");
    assert!(response["result"].is_object(), "{response}");
    assert!(
        stream.next_event(WAIT).await.is_none(),
        "the stream ends after the response"
    );
    response["result"].clone()
}

/// The text of a tool result's only content block.
fn text(result: &Value) -> &str {
    assert_eq!(result["isError"], Value::Null, "not an error: {result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {result}"))
}

fn schema_2025(test: &str) -> Option<Schema> {
    spec_dir(test).map(|dir| Schema::load(dir.join("core-2025-11-25/schema.json")))
}

/// `capabilities` of a client that can sample and answer form elicitations.
fn asking_client() -> Value {
    json!({"sampling": {}, "elicitation": {"form": {}}})
}

/// A server->client request: an id, no related task (a synchronous call), the method.
fn assert_request(asked: &Value, method: &str) {
    assert_eq!(asked["method"], method, "{asked}");
    assert!(
        asked["id"].is_number() || asked["id"].is_string(),
        "{asked}"
    );
    assert!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"].is_null(),
        "a synchronous call's request names no task: {asked}"
    );
}

#[tokio::test]
async fn sampling_is_asked_and_answered_on_the_calls_own_stream() {
    let schema = schema_2025("sampling_is_asked_and_answered_on_the_calls_own_stream");
    let s = fixture_server().await;
    let session = Session::open(&s, asking_client()).await;
    let (id, mut stream, asked) = session
        .ask(
            "test_sampling",
            json!({"prompt": "What is 2+2?"}),
            "sampling/createMessage",
        )
        .await;
    let params = &asked["params"];
    assert_eq!(params["maxTokens"], 100, "{asked}");
    assert_eq!(params["messages"][0]["role"], "user", "{asked}");
    assert_eq!(
        params["messages"][0]["content"],
        json!({"type": "text", "text": "What is 2+2?"}),
        "{asked}"
    );
    let answer = json!({"role": "assistant", "model": "test-model",
        "content": {"type": "text", "text": "4"}, "stopReason": "endTurn"});
    if let Some(mut schema) = schema {
        schema.check("sampling/createMessage", "CreateMessageRequest", &asked);
        schema.check("the test's answer", "CreateMessageResult", &answer);
    }
    session.answer(&asked, answer).await;
    let result = result_of(&mut stream, id).await;
    assert_eq!(text(&result), "LLM response: 4");
}

#[tokio::test]
async fn elicitation_is_asked_and_answered_on_the_calls_own_stream() {
    let schema = schema_2025("elicitation_is_asked_and_answered_on_the_calls_own_stream");
    let s = fixture_server().await;
    let session = Session::open(&s, asking_client()).await;
    let (id, mut stream, asked) = session
        .ask(
            "test_elicitation",
            json!({"message": "Who are you?"}),
            "elicitation/create",
        )
        .await;
    let params = &asked["params"];
    assert_eq!(params["message"], "Who are you?", "{asked}");
    let requested = &params["requestedSchema"];
    assert_eq!(requested["type"], "object", "{asked}");
    assert_eq!(
        requested["required"],
        json!(["username", "email"]),
        "{asked}"
    );
    assert_eq!(requested["properties"]["username"]["type"], "string");
    assert_eq!(requested["properties"]["email"]["type"], "string");
    let answer = json!({"action": "accept",
        "content": {"username": "ada", "email": "ada@example.com"}});
    if let Some(mut schema) = schema {
        schema.check("elicitation/create", "ElicitRequest", &asked);
        schema.check("the test's answer", "ElicitResult", &answer);
    }
    session.answer(&asked, answer).await;
    let result = result_of(&mut stream, id).await;
    let said = text(&result);
    assert!(said.starts_with("User response: action=accept"), "{said}");
    assert!(said.contains("\"username\":\"ada\""), "{said}");
    assert!(said.contains("\"email\":\"ada@example.com\""), "{said}");

    // Declined: the tool reports the action, no content.
    let (id, mut stream, asked) = session
        .ask(
            "test_elicitation",
            json!({"message": "Again?"}),
            "elicitation/create",
        )
        .await;
    session.answer(&asked, json!({"action": "decline"})).await;
    let result = result_of(&mut stream, id).await;
    assert_eq!(
        text(&result),
        "User response: action=decline, content=null",
        "{result}"
    );
}

#[tokio::test]
async fn sep1034_defaults_reach_the_client_and_the_answer_reaches_the_tool() {
    let schema = schema_2025("sep1034_defaults_reach_the_client_and_the_answer_reaches_the_tool");
    let s = fixture_server().await;
    let session = Session::open(&s, asking_client()).await;
    let (id, stream, asked) = session
        .ask(
            "test_elicitation_sep1034_defaults",
            json!({}),
            "elicitation/create",
        )
        .await;
    let properties = &asked["params"]["requestedSchema"]["properties"];
    // Every field carries its default, with its type (numbers compared as numbers: see
    // `an_integer_default_is_sent_as_an_integer` for 30 against 30.0).
    for (field, kind, default) in [
        ("name", "string", json!("John Doe")),
        ("age", "integer", json!(30)),
        ("score", "number", json!(95.5)),
        ("status", "string", json!("active")),
        ("verified", "boolean", json!(true)),
    ] {
        assert_eq!(properties[field]["type"], kind, "{field}: {asked}");
        let sent = &properties[field]["default"];
        match default.as_f64() {
            Some(n) => assert_eq!(sent.as_f64(), Some(n), "{field}: {asked}"),
            None => assert_eq!(sent, &default, "{field}: {asked}"),
        }
    }
    assert_eq!(
        properties["status"]["enum"],
        json!(["active", "inactive", "pending"])
    );
    if let Some(mut schema) = schema {
        schema.check("elicitation/create (SEP-1034)", "ElicitRequest", &asked);
        for (field, def) in [
            ("name", "StringSchema"),
            ("age", "NumberSchema"),
            ("score", "NumberSchema"),
            ("status", "UntitledSingleSelectEnumSchema"),
            ("verified", "BooleanSchema"),
        ] {
            schema.check(field, def, &properties[field]);
        }
    }
    // The client accepts the defaults as shown, changing one.
    let content = json!({"name": "John Doe", "age": 31, "score": 95.5,
        "status": "pending", "verified": true});
    session.accept(stream, id, &asked, content).await;
}

/// The SEP-1034 form's `age` is `{"type": "integer", "default": 30}` as the fixture
/// writes it; the server sends `30.0`, which a client reading the default as an integer
/// (serde's `i64`, for one) refuses.
#[tokio::test]
async fn an_integer_default_is_sent_as_an_integer() {
    let s = fixture_server().await;
    let session = Session::open(&s, asking_client()).await;
    let (_, mut stream) = session
        .call("test_elicitation_sep1034_defaults", json!({}))
        .await;
    let asked = next(&mut stream).await;
    let age = &asked["params"]["requestedSchema"]["properties"]["age"];
    assert_eq!(age["type"], "integer", "{asked}");
    assert_eq!(age["default"], json!(30), "{asked}");
    let read: Result<i64, _> = serde_json::from_value(age["default"].clone());
    assert_eq!(read.ok(), Some(30), "{asked}");
}

#[tokio::test]
async fn sep1330_enum_shapes_reach_the_client_and_the_choices_reach_the_tool() {
    let schema = schema_2025("sep1330_enum_shapes_reach_the_client_and_the_choices_reach_the_tool");
    let s = fixture_server().await;
    let session = Session::open(&s, asking_client()).await;
    let (id, stream, asked) = session
        .ask(
            "test_elicitation_sep1330_enums",
            json!({}),
            "elicitation/create",
        )
        .await;
    let p = &asked["params"]["requestedSchema"]["properties"];
    // Untitled single: a plain enum.
    assert_eq!(p["untitledSingle"]["type"], "string");
    assert_eq!(
        p["untitledSingle"]["enum"],
        json!(["option1", "option2", "option3"])
    );
    // Titled single: oneOf const/title.
    assert_eq!(p["titledSingle"]["type"], "string");
    let titled: Vec<(&Value, &Value)> = p["titledSingle"]["oneOf"]
        .as_array()
        .unwrap_or_else(|| panic!("oneOf: {asked}"))
        .iter()
        .map(|o| (&o["const"], &o["title"]))
        .collect();
    assert_eq!(
        titled,
        [
            (&json!("value1"), &json!("First Option")),
            (&json!("value2"), &json!("Second Option")),
            (&json!("value3"), &json!("Third Option")),
        ]
    );
    // Legacy: enum with enumNames.
    assert_eq!(p["legacyEnum"]["enum"], json!(["opt1", "opt2", "opt3"]));
    assert_eq!(
        p["legacyEnum"]["enumNames"],
        json!(["Option One", "Option Two", "Option Three"])
    );
    // Untitled multi: an array of an enum.
    assert_eq!(p["untitledMulti"]["type"], "array");
    assert_eq!(
        p["untitledMulti"]["items"],
        json!({"type": "string", "enum": ["option1", "option2", "option3"]})
    );
    // Titled multi: an array of anyOf const/title.
    assert_eq!(p["titledMulti"]["type"], "array");
    let options = p["titledMulti"]["items"]["anyOf"]
        .as_array()
        .unwrap_or_else(|| panic!("items.anyOf: {asked}"));
    assert_eq!(options.len(), 3, "{asked}");
    assert!(
        options
            .iter()
            .all(|o| o["const"].is_string() && o["title"].is_string()),
        "{asked}"
    );
    if let Some(mut schema) = schema {
        schema.check("elicitation/create (SEP-1330)", "ElicitRequest", &asked);
        for (field, def) in [
            ("untitledSingle", "UntitledSingleSelectEnumSchema"),
            ("titledSingle", "TitledSingleSelectEnumSchema"),
            ("legacyEnum", "LegacyTitledEnumSchema"),
            ("untitledMulti", "UntitledMultiSelectEnumSchema"),
            ("titledMulti", "TitledMultiSelectEnumSchema"),
        ] {
            schema.check(field, def, &p[field]);
        }
    }
    let content = json!({"untitledSingle": "option2", "titledSingle": "value3",
        "legacyEnum": "opt1", "untitledMulti": ["option1", "option3"],
        "titledMulti": ["value2"]});
    session.accept(stream, id, &asked, content).await;
}

/// A tool's `ToolContext::client_capabilities` in a 2025-11-25 session is what its
/// `initialize` declared, so the fixture refuses to sample for a client that did not
/// declare sampling.
#[tokio::test]
async fn a_tool_needing_an_undeclared_capability_is_32021() {
    let s = fixture_server().await;
    // Elicitation only: no sampling.
    let session = Session::open(&s, json!({"elicitation": {"form": {}}})).await;
    let (id, mut stream) = session.call("test_missing_capability", json!({})).await;
    let response = next(&mut stream).await;
    assert_eq!(
        response["id"], id,
        "no request to the client first: {response}"
    );
    assert_eq!(
        response["error"]["code"],
        error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "{response}"
    );
    assert_eq!(
        response["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "{response}"
    );
}

#[tokio::test]
async fn a_tool_needing_a_declared_capability_uses_it() {
    let s = fixture_server().await;
    let session = Session::open(&s, asking_client()).await;
    let (id, mut stream, asked) = session
        .ask(
            "test_missing_capability",
            json!({}),
            "sampling/createMessage",
        )
        .await;
    session
        .answer(
            &asked,
            json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "hello"}}),
        )
        .await;
    let result = result_of(&mut stream, id).await;
    assert_eq!(text(&result), "Sampled: hello");
}
