//! Client and server capabilities of MCP 2025-11-25, exchanged at `initialize`, including
//! `tasks`. Every leaf is an object whose presence means "supported".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// Declares a capability struct whose members are all optional, plus `extra`.
macro_rules! caps_struct {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident : $fty:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $(
                $(#[$fm])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$fty>,
            )*
            /// Members this crate does not know, kept for round trips.
            #[serde(flatten)]
            pub extra: JsonObject,
        }
    };
}

caps_struct!(
    /// What the client supports.
    ClientCapabilities {
        /// Non-standard capabilities, by name.
        experimental: JsonObject,
        /// The client offers `roots/list`.
        roots: RootsCapability,
        /// The client can sample an LLM (`sampling/createMessage`).
        sampling: SamplingCapability,
        /// The client can ask its user for input (`elicitation/create`).
        elicitation: ElicitationCapability,
        /// Which tasks features the client offers as a receiver.
        tasks: ClientTasksCapability,
    }
);

caps_struct!(
    /// The client's `roots` capability.
    RootsCapability {
        /// The client sends `notifications/roots/list_changed`.
        list_changed: bool,
    }
);

caps_struct!(
    /// The client's `sampling` capability.
    SamplingCapability {
        /// The client honours `includeContext` values other than `"none"`.
        context: JsonObject,
        /// The client accepts `tools` and `toolChoice` in sampling requests.
        tools: JsonObject,
    }
);

caps_struct!(
    /// The client's `elicitation` capability; an empty object means form mode only.
    ElicitationCapability {
        /// Form-mode elicitation.
        form: JsonObject,
        /// URL-mode elicitation.
        url: JsonObject,
    }
);

caps_struct!(
    /// The client's `tasks` capability: the task features it offers as a receiver.
    ClientTasksCapability {
        /// The client answers `tasks/list`.
        list: JsonObject,
        /// The client answers `tasks/cancel`.
        cancel: JsonObject,
        /// Which server-to-client requests may be task-augmented (an exhaustive list).
        requests: ClientTaskRequests,
    }
);

caps_struct!(
    /// The server-to-client requests a client accepts as tasks.
    ClientTaskRequests {
        /// `sampling/*` requests.
        sampling: SamplingTaskRequests,
        /// `elicitation/*` requests.
        elicitation: ElicitationTaskRequests,
    }
);

caps_struct!(
    /// Task-augmentable `sampling/*` requests.
    SamplingTaskRequests {
        /// `sampling/createMessage`.
        create_message: JsonObject,
    }
);

caps_struct!(
    /// Task-augmentable `elicitation/*` requests.
    ElicitationTaskRequests {
        /// `elicitation/create`.
        create: JsonObject,
    }
);

caps_struct!(
    /// What the server supports.
    ServerCapabilities {
        /// Non-standard capabilities, by name.
        experimental: JsonObject,
        /// The server sends `notifications/message`.
        logging: JsonObject,
        /// The server answers `completion/complete`.
        completions: JsonObject,
        /// The server offers prompts.
        prompts: PromptsCapability,
        /// The server offers resources.
        resources: ResourcesCapability,
        /// The server offers tools.
        tools: ToolsCapability,
        /// Which tasks features the server offers as a receiver.
        tasks: ServerTasksCapability,
    }
);

caps_struct!(
    /// The server's `prompts` capability.
    PromptsCapability {
        /// The server sends `notifications/prompts/list_changed`.
        list_changed: bool,
    }
);

caps_struct!(
    /// The server's `resources` capability.
    ResourcesCapability {
        /// The server answers `resources/subscribe`.
        subscribe: bool,
        /// The server sends `notifications/resources/list_changed`.
        list_changed: bool,
    }
);

caps_struct!(
    /// The server's `tools` capability.
    ToolsCapability {
        /// The server sends `notifications/tools/list_changed`.
        list_changed: bool,
    }
);

caps_struct!(
    /// The server's `tasks` capability: the task features it offers as a receiver.
    ServerTasksCapability {
        /// The server answers `tasks/list`.
        list: JsonObject,
        /// The server answers `tasks/cancel`.
        cancel: JsonObject,
        /// Which client-to-server requests may be task-augmented (an exhaustive list).
        requests: ServerTaskRequests,
    }
);

caps_struct!(
    /// The client-to-server requests a server accepts as tasks.
    ServerTaskRequests {
        /// `tools/*` requests.
        tools: ToolsTaskRequests,
    }
);

caps_struct!(
    /// Task-augmentable `tools/*` requests.
    ToolsTaskRequests {
        /// `tools/call`.
        call: JsonObject,
    }
);

impl ServerTasksCapability {
    /// `{list: {}, cancel: {}, requests: {tools: {call: {}}}}` (or without `list`).
    pub fn tool_calls(with_list: bool) -> Self {
        ServerTasksCapability {
            list: with_list.then(JsonObject::new),
            cancel: Some(JsonObject::new()),
            requests: Some(ServerTaskRequests {
                tools: Some(ToolsTaskRequests {
                    call: Some(JsonObject::new()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

impl ServerCapabilities {
    /// Whether `tools/call` may be task-augmented (`tasks.requests.tools.call`).
    pub fn supports_task_tool_calls(&self) -> bool {
        self.tasks
            .as_ref()
            .and_then(|t| t.requests.as_ref())
            .and_then(|r| r.tools.as_ref())
            .is_some_and(|t| t.call.is_some())
    }

    /// Whether the server answers `tasks/list`.
    pub fn supports_task_list(&self) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.list.is_some())
    }

    /// Whether the server answers `tasks/cancel`.
    pub fn supports_task_cancel(&self) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.cancel.is_some())
    }
}

impl ClientCapabilities {
    /// Whether `sampling/createMessage` may be task-augmented.
    pub fn supports_task_sampling(&self) -> bool {
        self.task_requests()
            .and_then(|r| r.sampling.as_ref())
            .is_some_and(|s| s.create_message.is_some())
    }

    /// Whether `elicitation/create` may be task-augmented.
    pub fn supports_task_elicitation(&self) -> bool {
        self.task_requests()
            .and_then(|r| r.elicitation.as_ref())
            .is_some_and(|e| e.create.is_some())
    }

    /// Whether the client answers `tasks/list`.
    pub fn supports_task_list(&self) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.list.is_some())
    }

    /// Whether the client answers `tasks/cancel`.
    pub fn supports_task_cancel(&self) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.cancel.is_some())
    }

    fn task_requests(&self) -> Option<&ClientTaskRequests> {
        self.tasks.as_ref()?.requests.as_ref()
    }
}
