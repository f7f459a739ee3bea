//! [`ServerError`]: why a request was refused, and its one mapping to a JSON-RPC error.
//!
//! **Invariant.** Handlers return `ServerError`; the wire text and code of each refusal
//! is written here once (store refusals keep their own mapping, in `mcp-tasks`).

use mcp_tasks::StoreError;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::missing_capability_error;

use crate::context::ToolError;

/// Why the server refused a request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServerError {
    /// `tools/call` named a tool this server does not have.
    #[error("Unknown tool: {0}")]
    UnknownTool(String),
    /// The tool requires scopes the caller's credentials do not grant (over HTTP this
    /// is refused with 403 before dispatch; here for stdio, anonymous callers and any
    /// path that reaches the tool otherwise).
    #[error("Insufficient scope: tool {tool} requires scope {}", scopes.join(" "))]
    InsufficientScope { tool: String, scopes: Vec<String> },
    /// `prompts/get` or `completion/complete` named a prompt this server does not have.
    #[error("Unknown prompt: {0}")]
    UnknownPrompt(String),
    /// `prompts/get` without a required argument, or with arguments that do not fit.
    #[error("Invalid arguments for prompt {prompt}: {reason}")]
    InvalidPromptArguments {
        /// The prompt's name.
        prompt: String,
        /// What is wrong.
        reason: String,
    },
    /// `completion/complete` named a resource template this server does not have.
    #[error("Unknown resource template: {0}")]
    UnknownResourceTemplate(String),
    /// MCP 2026-07-28 (SEP-2164): `resources/read` of a URI no resource has; -32602 with
    /// the URI in `data.uri`.
    #[error("Resource not found: {0}")]
    ResourceNotFound(String),
    /// MCP 2025-11-25: `resources/read` of a URI no resource has; -32002 with the URI in
    /// `data.uri`.
    #[error("Resource not found")]
    LegacyResourceNotFound(String),
    /// A list cursor this server did not issue for this caller and list.
    #[error("Invalid cursor")]
    InvalidCursor,
    /// A method of a feature the server does not offer (no resources, no prompts...).
    #[error("Method not found: {method} (this server offers no {feature})")]
    NotOffered {
        /// The method asked for.
        method: String,
        /// The feature it belongs to.
        feature: &'static str,
    },
    /// The request was cancelled while its tool ran.
    #[error("The call was cancelled")]
    CallCancelled,
    /// Shutdown has begun: no new task starts.
    #[error("The server is shutting down")]
    ShuttingDown,
    /// A task method (or a task-only tool) without the tasks extension declared in the
    /// request's `_meta` (2026-07-28).
    #[error("the request does not declare the tasks extension")]
    MissingTasksCapability,
    /// Bad params; the message is sent as it is.
    #[error("{0}")]
    InvalidParams(String),
    /// A request that is not valid here (e.g. a second `initialize`); sent as it is.
    #[error("{0}")]
    InvalidRequest(String),
    /// The method does not exist on this wire; the message is sent as it is.
    #[error("{0}")]
    MethodNotFound(String),
    /// One `subscriptions/listen` stream more than a principal may hold.
    #[error(
        "Too many subscriptions: the limit is {0} open subscriptions/listen and tasks/stream streams per principal"
    )]
    TooManySubscriptions(usize),
    /// The server failed; the message is sent as it is.
    #[error("{0}")]
    Internal(String),
    /// The store refused (not found, a limit, unavailable...).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A JSON-RPC error made elsewhere (a tool's own error, a params parser's), passed
    /// through unchanged.
    #[error("{}", .0.message)]
    Rpc(ErrorObject),
}

impl From<ErrorObject> for ServerError {
    fn from(e: ErrorObject) -> Self {
        ServerError::Rpc(e)
    }
}

impl From<ServerError> for ErrorObject {
    fn from(e: ServerError) -> Self {
        let code = match &e {
            ServerError::UnknownTool(_)
            | ServerError::InvalidParams(_)
            | ServerError::UnknownPrompt(_)
            | ServerError::InvalidPromptArguments { .. }
            | ServerError::UnknownResourceTemplate(_)
            | ServerError::InvalidCursor => error_codes::INVALID_PARAMS,
            ServerError::ResourceNotFound(uri) => {
                return with_uri(error_codes::INVALID_PARAMS, e.to_string(), uri);
            }
            ServerError::LegacyResourceNotFound(uri) => {
                return with_uri(error_codes::RESOURCE_NOT_FOUND, e.to_string(), uri);
            }
            ServerError::InvalidRequest(_) => error_codes::INVALID_REQUEST,
            ServerError::InsufficientScope { scopes, .. } => {
                return ErrorObject::new(error_codes::INVALID_REQUEST, e.to_string())
                    .with_data(serde_json::json!({ "requiredScopes": scopes }));
            }
            ServerError::TooManySubscriptions(_) => error_codes::LIMIT_EXCEEDED,
            ServerError::MethodNotFound(_) | ServerError::NotOffered { .. } => {
                error_codes::METHOD_NOT_FOUND
            }
            ServerError::CallCancelled | ServerError::ShuttingDown | ServerError::Internal(_) => {
                error_codes::INTERNAL_ERROR
            }
            ServerError::MissingTasksCapability => return missing_capability_error(),
            ServerError::Store(store) => return ErrorObject::from(store),
            ServerError::Rpc(rpc) => return rpc.clone(),
        };
        ErrorObject::new(code, e.to_string())
    }
}

/// An error whose `data` names the resource: `{"uri": ...}`.
fn with_uri(code: i64, message: String, uri: &str) -> ErrorObject {
    ErrorObject {
        code,
        message,
        data: Some(serde_json::json!({ "uri": uri })),
    }
}

impl From<ServerError> for jsonrpsee::types::ErrorObjectOwned {
    fn from(e: ServerError) -> Self {
        ErrorObject::from(e).into()
    }
}

/// The error a tool's failure answers a request with (outside a task).
pub(crate) fn call_error(e: ToolError) -> ServerError {
    match e {
        ToolError::Rpc(e) => ServerError::Rpc(e),
        ToolError::Cancelled => ServerError::CallCancelled,
        ToolError::InputRequired => {
            ServerError::Internal("The tool asked for input in rounds".to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_keeps_its_code_and_text() {
        let cases = [
            (
                ServerError::UnknownTool("nope".into()),
                error_codes::INVALID_PARAMS,
                "Unknown tool: nope",
            ),
            (
                ServerError::CallCancelled,
                error_codes::INTERNAL_ERROR,
                "The call was cancelled",
            ),
            (
                ServerError::ShuttingDown,
                error_codes::INTERNAL_ERROR,
                "The server is shutting down",
            ),
        ];
        for (e, code, text) in cases.into_iter().chain([
            (
                ServerError::UnknownPrompt("nope".into()),
                error_codes::INVALID_PARAMS,
                "Unknown prompt: nope",
            ),
            (
                ServerError::InvalidCursor,
                error_codes::INVALID_PARAMS,
                "Invalid cursor",
            ),
        ]) {
            let wire = ErrorObject::from(e);
            assert_eq!((wire.code, wire.message.as_str()), (code, text));
        }
        let store = ErrorObject::from(ServerError::from(StoreError::NotFound));
        assert_eq!(store, ErrorObject::from(&StoreError::NotFound));
        let gone = ErrorObject::from(ServerError::ResourceNotFound("a://b".into()));
        assert_eq!(
            (gone.code, gone.message.as_str(), gone.data),
            (
                error_codes::INVALID_PARAMS,
                "Resource not found: a://b",
                Some(serde_json::json!({ "uri": "a://b" }))
            )
        );
        let legacy = ErrorObject::from(ServerError::LegacyResourceNotFound("a://b".into()));
        assert_eq!(
            (legacy.code, legacy.message.as_str(), legacy.data),
            (
                error_codes::RESOURCE_NOT_FOUND,
                "Resource not found",
                Some(serde_json::json!({ "uri": "a://b" }))
            )
        );
        let missing = ErrorObject::from(ServerError::MissingTasksCapability);
        assert_eq!(missing, missing_capability_error());
    }
}
