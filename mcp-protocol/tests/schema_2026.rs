//! Our 2026-07-28 values against JSON Schema: every official example (after our round
//! trip) and values built in Rust validate against the official definition of their type,
//! and every example also validates against the definition we generate, so our schema is
//! no stricter than the spec's examples.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;

use common::{examples_2026, official_schema_2026, roundtrip_named};
use jsonschema::Validator;
use mcp_tasks_protocol::jsonrpc::RequestId;
use mcp_tasks_protocol::method::{
    MethodCall, TypedNotification, TypedRequest, TypedResultResponse,
};
use mcp_tasks_protocol::schema::{Revision, generate};
use mcp_tasks_protocol::v2026 as m;
use serde::Serialize;
use serde_json::{Value, json};

/// Validators for `#/$defs/<Type>` of one schema document, built on first use.
struct Defs {
    document: Value,
    cache: HashMap<String, Validator>,
}

impl Defs {
    fn new(document: Value) -> Self {
        Defs {
            document,
            cache: HashMap::new(),
        }
    }

    fn has(&self, type_name: &str) -> bool {
        self.document["$defs"].get(type_name).is_some()
    }

    /// Validation errors of `value` against `type_name`, empty when valid.
    fn errors(&mut self, type_name: &str, value: &Value) -> Vec<String> {
        let validator = self.cache.entry(type_name.to_owned()).or_insert_with(|| {
            let mut doc = self.document.clone();
            doc["$ref"] = json!(format!("#/$defs/{type_name}"));
            jsonschema::validator_for(&doc)
                .unwrap_or_else(|e| panic!("schema for {type_name} does not compile: {e}"))
        });
        validator
            .iter_errors(value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }
}

#[test]
fn examples_validate_against_official_and_generated_schemas() {
    if !common::available("examples_validate_against_official_and_generated_schemas") {
        return;
    }
    let mut official = Defs::new(official_schema_2026());
    let mut ours = Defs::new(generate(Revision::Core2026_07_28));
    let mut failures = Vec::new();
    let mut checked = 0;
    for (type_name, file, value) in examples_2026() {
        let Some(Ok(back)) = roundtrip_named(&type_name, &value) else {
            failures.push(format!(
                "{type_name}/{file}: does not round-trip (see examples_2026)"
            ));
            continue;
        };
        for e in official.errors(&type_name, &back) {
            failures.push(format!(
                "{type_name}/{file}: our output fails the official schema: {e}"
            ));
        }
        if !ours.has(&type_name) {
            failures.push(format!(
                "{type_name}: no definition in our generated schema"
            ));
            continue;
        }
        for e in ours.errors(&type_name, &value) {
            failures.push(format!(
                "{type_name}/{file}: the example fails our generated schema: {e}"
            ));
        }
        checked += 1;
    }
    println!("checked {checked} examples against both schemas");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn generated_schema_is_a_valid_json_schema() {
    let ours = generate(Revision::Core2026_07_28);
    if let Err(e) = jsonschema::meta::validate(&ours) {
        panic!("generated schema is not valid JSON Schema: {e}");
    }
    jsonschema::validator_for(&ours).unwrap();
    // Every definition compiles on its own (all its references resolve).
    let mut defs = Defs::new(ours.clone());
    for name in ours["$defs"].as_object().unwrap().keys() {
        defs.errors(name, &json!(null));
    }
}

fn meta() -> m::RequestMeta {
    m::RequestMeta::new(m::ClientCapabilities {
        elicitation: Some(m::ElicitationCapability::default()),
        ..Default::default()
    })
    .with_client_info(m::Implementation::new("test-client", "0.1.0"))
    .with_progress_token("p-1")
}

fn result_meta() -> Option<m::ResultMeta> {
    Some(m::ResultMeta {
        server_info: Some(m::Implementation::new("test-server", "0.1.0")),
        ..Default::default()
    })
}

fn value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

fn text_schema() -> m::RequestedSchema {
    let mut properties = indexmap::IndexMap::new();
    properties.insert(
        "name".to_owned(),
        m::PrimitiveSchemaDefinition::String(m::StringSchema {
            title: Some("Name".into()),
            ..Default::default()
        }),
    );
    properties.insert(
        "color".to_owned(),
        m::PrimitiveSchemaDefinition::TitledSingleSelect(m::TitledSingleSelectEnumSchema {
            one_of: vec![
                m::EnumOption::new("r", "Red"),
                m::EnumOption::new("g", "Green"),
            ],
            ..Default::default()
        }),
    );
    m::RequestedSchema {
        properties,
        required: Some(vec!["name".into()]),
        ..Default::default()
    }
}

/// One or more values per request, result and notification type, built with the
/// constructors, each with the spec name of its type.
fn samples() -> Vec<(&'static str, Value)> {
    let id = RequestId::from("r-1");
    let tool = m::Tool::new(
        "echo",
        m::ToolInputSchema::from_members(
            json!({"properties": {"text": {"type": "string"}}, "required": ["text"]})
                .as_object()
                .unwrap()
                .clone(),
        ),
    );
    let call_result = m::CallToolResult::new(vec![
        m::ContentBlock::text("hi"),
        m::ImageContent::new("AAAA", "image/png").into(),
        m::ResourceLink::new("file:///a.txt", "a").into(),
        m::EmbeddedResource::new(m::TextResourceContents::new("file:///b.txt", "b")).into(),
    ]);
    let sampling = m::CreateMessageRequestParams::new(
        vec![m::SamplingMessage::new(
            m::Role::User,
            m::TextContent::new("2+2?"),
        )],
        100,
    );
    let create_message_result = m::CreateMessageResult::new("model-x", m::TextContent::new("4"));
    let elicit_form = m::ElicitRequestParams::from(m::ElicitRequestFormParams::new(
        "Who are you?",
        text_schema(),
    ));
    let elicit_url = m::ElicitRequestParams::from(m::ElicitRequestURLParams::new(
        "Sign in",
        "https://example.com/login",
    ));
    let elicit_result = m::ElicitResult::accept(indexmap::IndexMap::from([(
        "name".to_owned(),
        m::ElicitValue::String("x".into()),
    )]));
    let input_required = m::InputRequiredResult::new(
        [
            ("ask", m::InputRequest::from(elicit_form.clone())),
            ("sample", m::InputRequest::from(sampling.clone())),
            ("roots", m::InputRequest::ListRoots(MethodCall::new(None))),
        ]
        .into_iter()
        .collect(),
    )
    .with_request_state("opaque");
    let input_responses: m::InputResponses = [
        ("ask", m::InputResponse::Elicit(elicit_result.clone())),
        (
            "sample",
            m::InputResponse::CreateMessage(create_message_result.clone()),
        ),
        (
            "roots",
            m::InputResponse::ListRoots(m::ListRootsResult {
                roots: vec![m::Root::new("file:///w")],
                ..Default::default()
            }),
        ),
    ]
    .into_iter()
    .collect();
    let retried_call = m::CallToolRequestParams {
        input_responses: Some(input_responses.clone()),
        request_state: Some("opaque".into()),
        ..m::CallToolRequestParams::new(
            meta(),
            "echo",
            Some(json!({"text": "x"}).as_object().unwrap().clone()),
        )
    };
    let filter = m::SubscriptionFilter {
        tools_list_changed: Some(true),
        resource_subscriptions: Some(vec!["file:///a.txt".into()]),
        ..Default::default()
    };
    let listen_meta = m::SubscriptionsListenResultMeta::new(RequestId::from(9));
    let complete_params = m::CompleteRequestParams {
        meta: meta(),
        r#ref: m::CompleteReference::Prompt(m::PromptReference::new("greet")),
        argument: m::CompleteArgument {
            name: "lang".into(),
            value: "en".into(),
            ..Default::default()
        },
        context: None,
        extra: Default::default(),
    };
    let notification_meta = Some(m::NotificationMeta {
        subscription_id: Some(RequestId::from(9)),
        ..Default::default()
    });
    let discover = m::DiscoverResult {
        meta: result_meta(),
        instructions: Some("Be nice.".into()),
        ..m::DiscoverResult::new(
            m::ServerCapabilities {
                tools: Some(m::ToolsCapability {
                    list_changed: Some(true),
                    ..Default::default()
                }),
                ..Default::default()
            }
            .with_extension("io.modelcontextprotocol/tasks", Default::default()),
        )
    };
    let prompt_result = m::GetPromptResult::new(vec![m::PromptMessage::new(
        m::Role::User,
        m::TextContent::new("hello"),
    )]);

    vec![
        // Requests.
        (
            "DiscoverRequest",
            value(&TypedRequest::<m::Discover>::new(
                id.clone(),
                m::RequestParams::new(meta()),
            )),
        ),
        (
            "ListToolsRequest",
            value(&m::ListToolsRequest::new(
                1,
                m::PaginatedRequestParams::new(meta(), Some("c".into())),
            )),
        ),
        (
            "ListResourcesRequest",
            value(&m::ListResourcesRequest::new(
                2,
                m::PaginatedRequestParams::new(meta(), None),
            )),
        ),
        (
            "ListResourceTemplatesRequest",
            value(&m::ListResourceTemplatesRequest::new(
                3,
                m::PaginatedRequestParams::new(meta(), None),
            )),
        ),
        (
            "ListPromptsRequest",
            value(&m::ListPromptsRequest::new(
                4,
                m::PaginatedRequestParams::new(meta(), None),
            )),
        ),
        (
            "ReadResourceRequest",
            value(&m::ReadResourceRequest::new(
                5,
                m::ReadResourceRequestParams::new(meta(), "file:///a.txt"),
            )),
        ),
        (
            "GetPromptRequest",
            value(&m::GetPromptRequest::new(
                6,
                m::GetPromptRequestParams::new(meta(), "greet"),
            )),
        ),
        (
            "CallToolRequest",
            value(&m::CallToolRequest::new(7, retried_call.clone())),
        ),
        (
            "CompleteRequest",
            value(&m::CompleteRequest::new(8, complete_params)),
        ),
        (
            "SubscriptionsListenRequest",
            value(&m::SubscriptionsListenRequest::new(
                9,
                m::SubscriptionsListenRequestParams {
                    meta: meta(),
                    notifications: filter.clone(),
                    ..Default::default()
                },
            )),
        ),
        (
            "CreateMessageRequest",
            value(&m::CreateMessageRequest::new(sampling.clone())),
        ),
        ("ListRootsRequest", value(&m::ListRootsRequest::new(None))),
        (
            "ElicitRequest",
            value(&m::ElicitRequest::new(elicit_form.clone())),
        ),
        ("ElicitRequest", value(&m::ElicitRequest::new(elicit_url))),
        (
            "ClientRequest",
            value(&m::ClientRequest::from(m::CallToolRequest::new(
                7,
                retried_call,
            ))),
        ),
        // Results.
        ("DiscoverResult", value(&discover)),
        (
            "ListToolsResult",
            value(&m::ListToolsResult {
                next_cursor: Some("n".into()),
                ..m::ListToolsResult::new(vec![tool.clone()])
            }),
        ),
        (
            "ListResourcesResult",
            value(&m::ListResourcesResult::new(vec![m::Resource::new(
                "file:///a.txt",
                "a",
            )])),
        ),
        (
            "ListResourceTemplatesResult",
            value(&m::ListResourceTemplatesResult::new(vec![
                m::ResourceTemplate::new("file:///{path}", "files"),
            ])),
        ),
        (
            "ReadResourceResult",
            value(&m::ReadResourceResult::new(vec![
                m::TextResourceContents::new("file:///a.txt", "a").into(),
                m::BlobResourceContents::new("file:///b.bin", "AAAA").into(),
            ])),
        ),
        (
            "ListPromptsResult",
            value(&m::ListPromptsResult::new(vec![m::Prompt::new("greet")])),
        ),
        ("GetPromptResult", value(&prompt_result)),
        ("CallToolResult", value(&call_result)),
        ("CallToolResult", value(&m::CallToolResult::error("boom"))),
        (
            "CompleteResult",
            value(&m::CompleteResult::new(vec!["en".into(), "fr".into()])),
        ),
        (
            "SubscriptionsListenResult",
            value(&m::SubscriptionsListenResult::new(listen_meta)),
        ),
        ("CreateMessageResult", value(&create_message_result)),
        (
            "ListRootsResult",
            value(&m::ListRootsResult {
                roots: vec![m::Root::new("file:///w")],
                ..Default::default()
            }),
        ),
        ("ElicitResult", value(&elicit_result)),
        (
            "ElicitResult",
            value(&m::ElicitResult::new(m::ElicitAction::Decline)),
        ),
        ("InputRequiredResult", value(&input_required)),
        ("InputResponses", value(&input_responses)),
        (
            "Result",
            value(&m::Result {
                meta: result_meta(),
                ..Default::default()
            }),
        ),
        (
            "ServerResult",
            value(&m::ServerResult::CallTool(call_result.clone())),
        ),
        (
            "CallToolResultResponse",
            value(&m::CallToolResultResponse::new(7, call_result.into())),
        ),
        (
            "CallToolResultResponse",
            value(&m::CallToolResultResponse::new(
                7,
                input_required.clone().into(),
            )),
        ),
        (
            "GetPromptResultResponse",
            value(&m::GetPromptResultResponse::new(6, prompt_result.into())),
        ),
        (
            "ReadResourceResultResponse",
            value(&m::ReadResourceResultResponse::new(
                5,
                input_required.into(),
            )),
        ),
        (
            "ListToolsResultResponse",
            value(&m::ListToolsResultResponse::new(
                1,
                m::ListToolsResult::new(vec![tool]),
            )),
        ),
        (
            "DiscoverResultResponse",
            value(&TypedResultResponse::<m::Discover>::new(id, discover)),
        ),
        // Notifications.
        (
            "CancelledNotification",
            value(&m::CancelledNotification::new(
                m::CancelledNotificationParams::new(7, Some("user".into())),
            )),
        ),
        (
            "ProgressNotification",
            value(&m::ProgressNotification::new(
                m::ProgressNotificationParams::new("p-1", 0.5, Some(1.0)),
            )),
        ),
        (
            "LoggingMessageNotification",
            value(&m::LoggingMessageNotification::new(
                m::LoggingMessageNotificationParams::new(
                    m::LoggingLevel::Warning,
                    json!({"disk": "full"}),
                ),
            )),
        ),
        (
            "ToolListChangedNotification",
            value(&m::ToolListChangedNotification::new(None)),
        ),
        (
            "PromptListChangedNotification",
            value(&m::PromptListChangedNotification::new(Some(
                m::NotificationParams {
                    meta: notification_meta.clone(),
                    ..Default::default()
                },
            ))),
        ),
        (
            "ResourceListChangedNotification",
            value(&m::ResourceListChangedNotification::new(None)),
        ),
        (
            "ResourceUpdatedNotification",
            value(&m::ResourceUpdatedNotification::new(
                m::ResourceUpdatedNotificationParams {
                    meta: notification_meta.clone(),
                    ..m::ResourceUpdatedNotificationParams::new("file:///a.txt")
                },
            )),
        ),
        (
            "SubscriptionsAcknowledgedNotification",
            value(&TypedNotification::<m::SubscriptionsAcknowledged>::new(
                m::SubscriptionsAcknowledgedNotificationParams {
                    notifications: filter,
                    meta: notification_meta,
                    ..Default::default()
                },
            )),
        ),
        (
            "ServerNotification",
            value(&m::ServerNotification::from(
                m::ToolListChangedNotification::new(None),
            )),
        ),
        (
            "ClientNotification",
            value(&m::ClientNotification::from(m::CancelledNotification::new(
                m::CancelledNotificationParams::new("r", None),
            ))),
        ),
        // Errors.
        ("ParseError", value(&m::ParseError::new("bad json"))),
        (
            "InvalidRequestError",
            value(&m::InvalidRequestError::new("bad request")),
        ),
        (
            "MethodNotFoundError",
            value(&m::MethodNotFoundError::new("no such method")),
        ),
        (
            "InvalidParamsError",
            value(&m::InvalidParamsError {
                data: Some(json!({"field": "name"})),
                ..m::InvalidParamsError::new("bad params")
            }),
        ),
        ("InternalError", value(&m::InternalError::new("oops"))),
        (
            "HeaderMismatchError",
            value(&m::HeaderMismatchError::new(
                Some(RequestId::from(1)),
                m::HeaderMismatchErrorObject {
                    message: "Mcp-Name differs".into(),
                    ..Default::default()
                },
            )),
        ),
        (
            "MissingRequiredClientCapabilityError",
            value(&m::MissingRequiredClientCapabilityError::new(
                Some(RequestId::from(1)),
                m::MissingRequiredClientCapabilityErrorObject {
                    message: "needs sampling".into(),
                    data: m::MissingRequiredClientCapabilityData {
                        required_capabilities: m::ClientCapabilities {
                            sampling: Some(Default::default()),
                            ..Default::default()
                        },
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )),
        ),
        (
            "UnsupportedProtocolVersionError",
            value(&m::UnsupportedProtocolVersionError::new(
                None,
                m::UnsupportedProtocolVersionErrorObject {
                    message: "unsupported".into(),
                    data: m::UnsupportedProtocolVersionData {
                        requested: "1900-01-01".into(),
                        supported: vec!["2026-07-28".into()],
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )),
        ),
    ]
}

#[test]
fn constructed_values_validate_against_official_and_generated_schemas() {
    if !common::available("constructed_values_validate_against_official_and_generated_schemas") {
        return;
    }
    let mut official = Defs::new(official_schema_2026());
    let mut ours = Defs::new(generate(Revision::Core2026_07_28));
    let mut failures = Vec::new();
    let samples = samples();
    for (type_name, value) in &samples {
        for e in official.errors(type_name, value) {
            failures.push(format!(
                "{type_name}: official schema: {e}\n  value: {value}"
            ));
        }
        if !ours.has(type_name) {
            failures.push(format!(
                "{type_name}: no definition in our generated schema"
            ));
            continue;
        }
        for e in ours.errors(type_name, value) {
            failures.push(format!(
                "{type_name}: generated schema: {e}\n  value: {value}"
            ));
        }
    }
    println!("validated {} constructed values", samples.len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn validation_catches_bad_values() {
    if !common::available("validation_catches_bad_values") {
        return;
    }
    let mut official = Defs::new(official_schema_2026());
    let mut ours = Defs::new(generate(Revision::Core2026_07_28));
    let bad = [
        ("CallToolResult", json!({"resultType": "complete"})),
        ("TextContent", json!({"type": "image", "text": "x"})),
        (
            "CallToolRequest",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
        ),
        ("ParseError", json!({"code": -32600, "message": "x"})),
    ];
    for (type_name, value) in bad {
        assert!(
            !official.errors(type_name, &value).is_empty(),
            "official accepted {type_name}: {value}"
        );
        assert!(
            !ours.errors(type_name, &value).is_empty(),
            "ours accepted {type_name}: {value}"
        );
    }
}
