//! The message unions of MCP 2025-11-25: every request, notification and result each side
//! may send. Requests and notifications are told apart by `method`; results have no
//! discriminator and are matched by shape (prefer reading a result as the type of the
//! method it answers).

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::*;
use crate::JsonObject;
use crate::method::{Notification, Request, TypedNotification, TypedRequest};
use crate::types::{ElicitResult, ListRootsResult};

/// Reads a JSON object, then picks the variant whose method matches its `method` member.
fn method_of<E: serde::de::Error>(map: &JsonObject) -> Result<String, E> {
    match map.get("method") {
        Some(Value::String(m)) => Ok(m.clone()),
        Some(_) => Err(E::custom("`method` is not a string")),
        None => Err(E::missing_field("method")),
    }
}

/// Declares an enum of typed envelopes, one variant per method, dispatching on `method`.
macro_rules! method_union {
    (
        $(#[$m:meta])* $name:ident, $envelope:ident, $trait:ident {
            $($(#[$vm:meta])* $variant:ident($marker:ty),)*
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
        #[serde(untagged)]
        #[allow(clippy::large_enum_variant)] // message-sized; boxing would only add indirection
        pub enum $name {
            $($(#[$vm])* $variant($envelope<$marker>),)*
        }

        impl $name {
            /// The method name of this message.
            pub fn method(&self) -> &'static str {
                match self {
                    $($name::$variant(_) => <$marker as $trait>::METHOD,)*
                }
            }

            /// Whether `method` is one of this union's methods.
            pub fn has_method(method: &str) -> bool {
                [$(<$marker as $trait>::METHOD),*].contains(&method)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::Error as _;
                let map = JsonObject::deserialize(d)?;
                let method = method_of::<D::Error>(&map)?;
                let v = Value::Object(map);
                $(
                    if method == <$marker as $trait>::METHOD {
                        return serde_json::from_value(v)
                            .map($name::$variant)
                            .map_err(|e| D::Error::custom(format_args!("{method}: {e}")));
                    }
                )*
                Err(D::Error::custom(format_args!(
                    concat!("unknown method {:?} for ", stringify!($name)),
                    method
                )))
            }
        }

        $(
            impl From<$envelope<$marker>> for $name {
                fn from(m: $envelope<$marker>) -> Self {
                    $name::$variant(m)
                }
            }
        )*
    };
}

method_union!(
    /// Any request a client may send.
    ClientRequest, TypedRequest, Request {
        /// `initialize`.
        Initialize(Initialize),
        /// `ping`.
        Ping(Ping),
        /// `resources/list`.
        ListResources(ListResources),
        /// `resources/templates/list`.
        ListResourceTemplates(ListResourceTemplates),
        /// `resources/read`.
        ReadResource(ReadResource),
        /// `resources/subscribe`.
        Subscribe(Subscribe),
        /// `resources/unsubscribe`.
        Unsubscribe(Unsubscribe),
        /// `prompts/list`.
        ListPrompts(ListPrompts),
        /// `prompts/get`.
        GetPrompt(GetPrompt),
        /// `tools/list`.
        ListTools(ListTools),
        /// `tools/call`.
        CallTool(CallTool),
        /// `tasks/get`.
        GetTask(GetTask),
        /// `tasks/result`.
        GetTaskPayload(GetTaskPayload),
        /// `tasks/cancel`.
        CancelTask(CancelTask),
        /// `tasks/list`.
        ListTasks(ListTasks),
        /// `logging/setLevel`.
        SetLevel(SetLevel),
        /// `completion/complete`.
        Complete(Complete),
    }
);

method_union!(
    /// Any request a server may send.
    ServerRequest, TypedRequest, Request {
        /// `ping`.
        Ping(Ping),
        /// `tasks/get`.
        GetTask(GetTask),
        /// `tasks/result`.
        GetTaskPayload(GetTaskPayload),
        /// `tasks/cancel`.
        CancelTask(CancelTask),
        /// `tasks/list`.
        ListTasks(ListTasks),
        /// `sampling/createMessage`.
        CreateMessage(CreateMessage),
        /// `roots/list`.
        ListRoots(ListRoots),
        /// `elicitation/create`.
        Elicit(Elicit),
    }
);

method_union!(
    /// Any notification a client may send.
    ClientNotification, TypedNotification, Notification {
        /// `notifications/cancelled`.
        Cancelled(Cancelled),
        /// `notifications/initialized`.
        Initialized(Initialized),
        /// `notifications/progress`.
        Progress(Progress),
        /// `notifications/tasks/status`.
        TaskStatus(TaskStatusChanged),
        /// `notifications/roots/list_changed`.
        RootsListChanged(RootsListChanged),
    }
);

method_union!(
    /// Any notification a server may send.
    ServerNotification, TypedNotification, Notification {
        /// `notifications/cancelled`.
        Cancelled(Cancelled),
        /// `notifications/progress`.
        Progress(Progress),
        /// `notifications/resources/list_changed`.
        ResourceListChanged(ResourceListChanged),
        /// `notifications/resources/updated`.
        ResourceUpdated(ResourceUpdated),
        /// `notifications/prompts/list_changed`.
        PromptListChanged(PromptListChanged),
        /// `notifications/tools/list_changed`.
        ToolListChanged(ToolListChanged),
        /// `notifications/tasks/status`.
        TaskStatus(TaskStatusChanged),
        /// `notifications/message`.
        LoggingMessage(LoggingMessage),
        /// `notifications/elicitation/complete`.
        ElicitationComplete(ElicitationComplete),
    }
);

/// Any result a client may send, matched by shape in this order. `tasks/get` and
/// `tasks/cancel` results share one shape and read as [`ClientResult::GetTask`];
/// `tasks/result` payloads and empty results read as [`ClientResult::Empty`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // message-sized; boxing would only add indirection
pub enum ClientResult {
    /// A task (`tasks/get`, `tasks/cancel`).
    GetTask(GetTaskResult),
    /// A task handle for a task-augmented request.
    CreateTask(CreateTaskResult),
    /// `tasks/list`.
    ListTasks(ListTasksResult),
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// `roots/list`.
    ListRoots(ListRootsResult),
    /// `elicitation/create`.
    Elicit(ElicitResult),
    /// Anything else: an empty result or a `tasks/result` payload.
    Empty(EmptyResult),
}

/// Any result a server may send, matched by shape in this order. `tasks/get` and
/// `tasks/cancel` results share one shape and read as [`ServerResult::GetTask`];
/// `tasks/result` payloads that fit no other shape read as [`ServerResult::Empty`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // message-sized; boxing would only add indirection
pub enum ServerResult {
    /// `initialize`.
    Initialize(InitializeResult),
    /// `resources/list`.
    ListResources(ListResourcesResult),
    /// `resources/templates/list`.
    ListResourceTemplates(ListResourceTemplatesResult),
    /// `resources/read`.
    ReadResource(ReadResourceResult),
    /// `prompts/list`.
    ListPrompts(ListPromptsResult),
    /// `prompts/get`.
    GetPrompt(GetPromptResult),
    /// `tools/list`.
    ListTools(ListToolsResult),
    /// A task (`tasks/get`, `tasks/cancel`).
    GetTask(GetTaskResult),
    /// A task handle for a task-augmented `tools/call`.
    CreateTask(CreateTaskResult),
    /// `tasks/list`.
    ListTasks(ListTasksResult),
    /// `tools/call`.
    CallTool(CallToolResult),
    /// `completion/complete`.
    Complete(CompleteResult),
    /// Anything else: an empty result or a `tasks/result` payload.
    Empty(EmptyResult),
}
