//! Helpers shared by the 2026-07-28 example and schema tests: where the spec lives, the
//! example files, the folder-name-to-type table, and numeric-tolerant JSON equality.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use mcp_tasks_protocol::v2026;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

#[path = "../spec_files/mod.rs"]
mod spec_files;

pub use spec_files::{available, spec_dir};

/// The official 2026-07-28 schema document.
pub fn official_schema_2026() -> Value {
    let path = spec_dir().join("core-2026-07-28/schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Every example as (type name, file name, value), sorted.
pub fn examples_2026() -> Vec<(String, String, Value)> {
    let root = spec_dir().join("core-2026-07-28/examples");
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let type_name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            if file.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let value: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            out.push((
                type_name.clone(),
                file.file_name().unwrap().to_string_lossy().into_owned(),
                value,
            ));
        }
    }
    out
}

/// Deserializes `value` as `T` and serializes it back.
pub fn roundtrip<T: Serialize + DeserializeOwned>(
    value: &Value,
) -> std::result::Result<Value, String> {
    let typed: T =
        serde_json::from_value(value.clone()).map_err(|e| format!("deserialize: {e}"))?;
    serde_json::to_value(&typed).map_err(|e| format!("serialize: {e}"))
}

macro_rules! example_types {
    ($($name:ident),* $(,)?) => {
        /// Every type name with examples that this table maps to a Rust type.
        pub const EXAMPLE_TYPES: &[&str] = &[$(stringify!($name)),*];

        /// Round-trips `value` through the Rust type named `type_name`; `None` when the
        /// name has no mapping.
        pub fn roundtrip_named(type_name: &str, value: &Value) -> Option<std::result::Result<Value, String>> {
            match type_name {
                $(stringify!($name) => Some(roundtrip::<v2026::$name>(value)),)*
                _ => None,
            }
        }
    };
}

example_types!(
    AudioContent,
    BlobResourceContents,
    BooleanSchema,
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    CallToolResultResponse,
    CancelledNotification,
    CancelledNotificationParams,
    ClientCapabilities,
    CompleteRequest,
    CompleteRequestParams,
    CompleteResult,
    CompleteResultResponse,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    DiscoverRequest,
    DiscoverResult,
    DiscoverResultResponse,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmbeddedResource,
    GetPromptRequest,
    GetPromptRequestParams,
    GetPromptResult,
    GetPromptResultResponse,
    HeaderMismatchError,
    ImageContent,
    InputRequests,
    InputRequiredResult,
    InputResponses,
    InternalError,
    InvalidParamsError,
    ListPromptsRequest,
    ListPromptsResult,
    ListPromptsResultResponse,
    ListResourceTemplatesRequest,
    ListResourceTemplatesResult,
    ListResourceTemplatesResultResponse,
    ListResourcesRequest,
    ListResourcesResult,
    ListResourcesResultResponse,
    ListRootsRequest,
    ListRootsResult,
    ListToolsRequest,
    ListToolsResult,
    ListToolsResultResponse,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    MethodNotFoundError,
    MissingRequiredClientCapabilityError,
    ModelPreferences,
    NumberSchema,
    PaginatedRequestParams,
    ParseError,
    ProgressNotification,
    ProgressNotificationParams,
    PromptListChangedNotification,
    ReadResourceRequest,
    ReadResourceResult,
    ReadResourceResultResponse,
    Resource,
    ResourceLink,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    Root,
    SamplingMessage,
    ServerCapabilities,
    StringSchema,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsListenRequest,
    SubscriptionsListenResult,
    SubscriptionsListenResultResponse,
    TextContent,
    TextResourceContents,
    TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema,
    Tool,
    ToolListChangedNotification,
    ToolResultContent,
    ToolUseContent,
    UnsupportedProtocolVersionError,
    UntitledMultiSelectEnumSchema,
    UntitledSingleSelectEnumSchema,
);

/// JSON equality where numbers compare by value (`1 == 1.0`) and objects as maps.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}
