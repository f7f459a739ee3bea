//! MCP 2026-07-28 core: every type of that revision's schema not already in
//! [`crate::types`], with a method type per request and notification
//! ([`CallTool`], [`Cancelled`], ...) and the spec's envelope names as aliases
//! ([`CallToolRequest`], [`CallToolResultResponse`], ...).
//!
//! This revision is stateless: every request carries its protocol version and the
//! client's capabilities in `_meta` ([`RequestMeta`]), servers describe themselves through
//! `server/discover`, and a server that needs client input mid-request answers with an
//! [`InputRequiredResult`] (multi-round-trip requests, see [`mrtr`]).
//!
//! Don't glob-import this module next to code that uses `std`'s `Result`: the spec's base
//! result type is called [`Result`].

// Message enums hold their variants inline: they are built once per message and matched
// on, so boxing the larger variants would cost more in ergonomics than it saves.
#![allow(clippy::large_enum_variant)]

mod base;
mod call;
mod capabilities;
mod completion;
mod discover;
mod elicitation;
mod errors;
mod meta;
pub mod mrtr;
mod notifications;
mod prompts;
mod resources;
mod roots;
mod sampling;
mod subscriptions;
mod tools;
mod unions;

pub use base::*;
pub use call::*;
pub use capabilities::*;
pub use completion::*;
pub use discover::*;
pub use elicitation::*;
pub use errors::*;
pub use meta::*;
pub use mrtr::*;
pub use notifications::*;
pub use prompts::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use subscriptions::*;
pub use tools::*;
pub use unions::*;

/// The building blocks this revision shares with 2025-11-25, re-exported so that
/// `v2026` names every type of the revision.
pub use crate::types::*;

/// Every 2026-07-28 method name, so that no other code spells them.
pub mod methods {
    use crate::method::{Notification, Request};

    /// `server/discover`.
    pub const SERVER_DISCOVER: &str = <super::Discover as Request>::METHOD;
    /// `resources/list`.
    pub const RESOURCES_LIST: &str = <super::ListResources as Request>::METHOD;
    /// `resources/templates/list`.
    pub const RESOURCES_TEMPLATES_LIST: &str = <super::ListResourceTemplates as Request>::METHOD;
    /// `resources/read`.
    pub const RESOURCES_READ: &str = <super::ReadResource as Request>::METHOD;
    /// `subscriptions/listen`.
    pub const SUBSCRIPTIONS_LISTEN: &str = <super::SubscriptionsListen as Request>::METHOD;
    /// `prompts/list`.
    pub const PROMPTS_LIST: &str = <super::ListPrompts as Request>::METHOD;
    /// `prompts/get`.
    pub const PROMPTS_GET: &str = <super::GetPrompt as Request>::METHOD;
    /// `tools/list`.
    pub const TOOLS_LIST: &str = <super::ListTools as Request>::METHOD;
    /// `tools/call`.
    pub const TOOLS_CALL: &str = <super::CallTool as Request>::METHOD;
    /// `completion/complete`.
    pub const COMPLETION_COMPLETE: &str = <super::Complete as Request>::METHOD;
    /// `sampling/createMessage` (an input request).
    pub const SAMPLING_CREATE_MESSAGE: &str = <super::CreateMessage as Request>::METHOD;
    /// `roots/list` (an input request).
    pub const ROOTS_LIST: &str = <super::ListRoots as Request>::METHOD;
    /// `elicitation/create` (an input request).
    pub const ELICITATION_CREATE: &str = <super::Elicit as Request>::METHOD;

    /// `notifications/cancelled`.
    pub const NOTIFICATIONS_CANCELLED: &str = <super::Cancelled as Notification>::METHOD;
    /// `notifications/progress`.
    pub const NOTIFICATIONS_PROGRESS: &str = <super::Progress as Notification>::METHOD;
    /// `notifications/message`.
    pub const NOTIFICATIONS_MESSAGE: &str = <super::LoggingMessage as Notification>::METHOD;
    /// `notifications/resources/list_changed`.
    pub const NOTIFICATIONS_RESOURCES_LIST_CHANGED: &str =
        <super::ResourceListChanged as Notification>::METHOD;
    /// `notifications/resources/updated`.
    pub const NOTIFICATIONS_RESOURCES_UPDATED: &str =
        <super::ResourceUpdated as Notification>::METHOD;
    /// `notifications/prompts/list_changed`.
    pub const NOTIFICATIONS_PROMPTS_LIST_CHANGED: &str =
        <super::PromptListChanged as Notification>::METHOD;
    /// `notifications/tools/list_changed`.
    pub const NOTIFICATIONS_TOOLS_LIST_CHANGED: &str =
        <super::ToolListChanged as Notification>::METHOD;
    /// `notifications/subscriptions/acknowledged`.
    pub const NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
        <super::SubscriptionsAcknowledged as Notification>::METHOD;
}

/// Adds the schema of every top-level 2026-07-28 type to `g`, shared ones included, in the
/// order of the spec's definitions.
pub(crate) fn register_schemas(g: &mut schemars::SchemaGenerator) {
    use crate::types as t;

    macro_rules! register {
        ($($ty:ty),* $(,)?) => {
            $( g.subschema_for::<$ty>(); )*
        };
    }

    register!(
        t::Annotations,
        t::AudioContent,
        t::BaseMetadata,
        t::BlobResourceContents,
        t::BooleanSchema,
        CacheableResult,
        CallToolRequest,
        CallToolRequestParams,
        CallToolResult,
        CallToolResultResponse,
        CancelledNotification,
        CancelledNotificationParams,
        ClientCapabilities,
        ClientNotification,
        ClientRequest,
        CompleteRequest,
        CompleteRequestParams,
        CompleteResult,
        CompleteResultResponse,
        t::ContentBlock,
        CreateMessageRequest,
        CreateMessageRequestParams,
        CreateMessageResult,
        DiscoverRequest,
        DiscoverResult,
        DiscoverResultResponse,
        ElicitRequest,
        ElicitRequestFormParams,
        ElicitRequestParams,
        ElicitRequestURLParams,
        t::ElicitResult,
        t::EmbeddedResource,
        t::EnumSchema,
        crate::jsonrpc::ErrorObject,
        GetPromptRequest,
        GetPromptRequestParams,
        GetPromptResult,
        GetPromptResultResponse,
        HeaderMismatchError,
        t::Icon,
        t::Icons,
        t::ImageContent,
        t::Implementation,
        InputRequest,
        InputRequests,
        InputRequiredResult,
        InputResponse,
        InputResponseRequestParams,
        InputResponses,
        InternalError,
        InvalidParamsError,
        InvalidRequestError,
        JSONRPCErrorResponse,
        // The 2026 result response first, so that it gets the unsuffixed name.
        JSONRPCResultResponse,
        JSONRPCResponse,
        JSONRPCMessage,
        JSONRPCNotification,
        JSONRPCRequest,
        t::LegacyTitledEnumSchema,
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
        t::ListRootsResult,
        ListToolsRequest,
        ListToolsResult,
        ListToolsResultResponse,
        t::LoggingLevel,
        LoggingMessageNotification,
        LoggingMessageNotificationParams,
        MethodNotFoundError,
        MissingRequiredClientCapabilityError,
        t::ModelHint,
        t::ModelPreferences,
        t::MultiSelectEnumSchema,
        NotificationMeta,
        NotificationParams,
        t::NumberSchema,
        PaginatedRequestParams,
        PaginatedResult,
        ParseError,
        t::PrimitiveSchemaDefinition,
        ProgressNotification,
        ProgressNotificationParams,
        t::ProgressToken,
        t::Prompt,
        t::PromptArgument,
        PromptListChangedNotification,
        t::PromptMessage,
        t::PromptReference,
        ReadResourceRequest,
        ReadResourceRequestParams,
        ReadResourceResult,
        ReadResourceResultResponse,
        crate::jsonrpc::RequestId,
        RequestMeta,
        RequestParams,
        t::Resource,
        t::ResourceContents,
        t::ResourceLink,
        ResourceListChangedNotification,
        ResourceRequestParams,
        t::ResourceTemplate,
        t::ResourceTemplateReference,
        ResourceUpdatedNotification,
        ResourceUpdatedNotificationParams,
        Result,
        ResultMeta,
        ResultType,
        t::Role,
        t::Root,
        SamplingMessage,
        SamplingMessageContentBlock,
        ServerCapabilities,
        ServerNotification,
        ServerResult,
        t::SingleSelectEnumSchema,
        t::StringSchema,
        SubscriptionFilter,
        SubscriptionsAcknowledgedNotification,
        SubscriptionsAcknowledgedNotificationParams,
        SubscriptionsListenRequest,
        SubscriptionsListenRequestParams,
        SubscriptionsListenResult,
        SubscriptionsListenResultMeta,
        SubscriptionsListenResultResponse,
        t::TextContent,
        t::TextResourceContents,
        t::TitledMultiSelectEnumSchema,
        t::TitledSingleSelectEnumSchema,
        Tool,
        t::ToolAnnotations,
        t::ToolChoice,
        ToolListChangedNotification,
        ToolResultContent,
        t::ToolUseContent,
        UnsupportedProtocolVersionError,
        t::UntitledMultiSelectEnumSchema,
        t::UntitledSingleSelectEnumSchema,
    );
}
