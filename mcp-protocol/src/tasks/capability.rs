//! Declaring and detecting the extension: `capabilities.extensions["io.modelcontextprotocol/tasks"]`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::JsonObject;
use crate::meta::TASKS_EXTENSION;

/// The extension's settings under `capabilities.extensions`. It has none yet: an empty
/// object means "supported". Unknown members are kept, though the schema allows none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TasksExtensionCapability {
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TasksExtensionCapability {
    /// The `capabilities.extensions` key of a server that serves task event streams
    /// (`tasks/stream`, draft SEP-2694), with an empty object. The draft allows an
    /// `eventStreams` member in the tasks extension's settings, but the extension's own
    /// schema allows no member there, and the official ext-tasks library refuses a server
    /// whose settings are not `{}`: so our own key, beside the extension's.
    pub const EVENT_STREAMS: &'static str = "rs.mcp-tasks/event-streams";

    /// Adds this extension to server capabilities, and [`EVENT_STREAMS`](Self::EVENT_STREAMS)
    /// beside it: the server serves task event streams.
    pub fn declare_on_server_with_event_streams(
        caps: crate::v2026::ServerCapabilities,
    ) -> crate::v2026::ServerCapabilities {
        let mut caps = Self::declare_on_server(caps);
        caps.extensions
            .get_or_insert_with(Default::default)
            .insert(Self::EVENT_STREAMS.to_owned(), JsonObject::new());
        caps
    }

    /// The `(key, value)` pair to put in a `capabilities.extensions` map:
    /// `("io.modelcontextprotocol/tasks", {})`.
    pub fn entry() -> (String, Value) {
        (TASKS_EXTENSION.to_owned(), Value::Object(JsonObject::new()))
    }

    /// Adds this extension to client capabilities.
    pub fn declare_on_client(
        caps: crate::v2026::ClientCapabilities,
    ) -> crate::v2026::ClientCapabilities {
        caps.with_extension(TASKS_EXTENSION, JsonObject::new())
    }

    /// Adds this extension to server capabilities.
    pub fn declare_on_server(
        mut caps: crate::v2026::ServerCapabilities,
    ) -> crate::v2026::ServerCapabilities {
        caps.extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION.to_owned(), JsonObject::new());
        caps
    }

    /// An `extensions` map that declares only this extension.
    pub fn extensions_map() -> JsonObject {
        let (k, v) = Self::entry();
        let mut map = JsonObject::new();
        map.insert(k, v);
        map
    }
}

/// Whether an `extensions` map (from `ClientCapabilities` or `ServerCapabilities`)
/// declares the tasks extension. Any object value counts as a declaration.
pub fn extensions_declare_tasks(extensions: &JsonObject) -> bool {
    extensions
        .get(TASKS_EXTENSION)
        .is_some_and(Value::is_object)
}

/// Whether typed 2026-07-28 client capabilities declare the tasks extension.
pub fn client_declares_tasks(caps: &crate::v2026::ClientCapabilities) -> bool {
    caps.extension(TASKS_EXTENSION).is_some()
}

/// Whether typed 2026-07-28 server capabilities declare the tasks extension.
pub fn server_declares_tasks(caps: &crate::v2026::ServerCapabilities) -> bool {
    caps.extension(TASKS_EXTENSION).is_some()
}

/// Whether server capabilities say that the server serves task event streams
/// (`tasks/stream`): [`TasksExtensionCapability::EVENT_STREAMS`] among its extensions.
pub fn server_offers_event_streams(caps: &crate::v2026::ServerCapabilities) -> bool {
    caps.extension(TASKS_EXTENSION).is_some()
        && caps
            .extension(TasksExtensionCapability::EVENT_STREAMS)
            .is_some()
}

/// Whether a request's `_meta` declares the tasks extension in its
/// `io.modelcontextprotocol/clientCapabilities` (the only place a 2026-07-28 server may
/// look: capabilities are never remembered across requests).
pub fn request_meta_declares_tasks(meta: &crate::meta::Meta) -> bool {
    meta.get(crate::meta::CLIENT_CAPABILITIES)
        .is_some_and(capabilities_value_declare_tasks)
}

/// Whether a capabilities object in JSON form (e.g. the
/// `io.modelcontextprotocol/clientCapabilities` value of a request's `_meta`) declares
/// the tasks extension under `extensions`.
pub fn capabilities_value_declare_tasks(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(Value::as_object)
        .is_some_and(extensions_declare_tasks)
}

/// The `data` of a -32021 ("missing required client capability") error that asks for
/// this extension: `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`.
pub fn missing_capability_error_data() -> Value {
    json!({ "requiredCapabilities": { "extensions": { TASKS_EXTENSION: {} } } })
}

/// The whole -32021 error object asking the client to declare this extension.
pub fn missing_capability_error() -> crate::jsonrpc::ErrorObject {
    crate::jsonrpc::ErrorObject::new(
        crate::error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
    )
    .with_data(missing_capability_error_data())
}
