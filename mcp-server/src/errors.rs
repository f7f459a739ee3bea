//! [`ServerError`]: why a request was refused, and its one mapping to a JSON-RPC error.
//!
//! **Invariant.** Handlers return `ServerError`; the wire text and code of each refusal
//! is written here once (store refusals keep their own mapping, in `mcp-tasks`).

use mcp_protocol::error_codes;
use mcp_protocol::jsonrpc::ErrorObject;
use mcp_protocol::tasks::missing_capability_error;
use mcp_tasks::StoreError;

/// Why the server refused a request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServerError {
    /// `tools/call` named a tool this server does not have.
    #[error("Unknown tool: {0}")]
    UnknownTool(String),
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
        "Too many subscriptions: the limit is {0} open subscriptions/listen streams per principal"
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
            ServerError::UnknownTool(_) | ServerError::InvalidParams(_) => {
                error_codes::INVALID_PARAMS
            }
            ServerError::InvalidRequest(_) => error_codes::INVALID_REQUEST,
            ServerError::TooManySubscriptions(_) => error_codes::LIMIT_EXCEEDED,
            ServerError::MethodNotFound(_) => error_codes::METHOD_NOT_FOUND,
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

impl From<ServerError> for jsonrpsee::types::ErrorObjectOwned {
    fn from(e: ServerError) -> Self {
        ErrorObject::from(e).into()
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
        for (e, code, text) in cases {
            let wire = ErrorObject::from(e);
            assert_eq!((wire.code, wire.message.as_str()), (code, text));
        }
        let store = ErrorObject::from(ServerError::from(StoreError::NotFound));
        assert_eq!(store, ErrorObject::from(&StoreError::NotFound));
        let missing = ErrorObject::from(ServerError::MissingTasksCapability);
        assert_eq!(missing, missing_capability_error());
    }
}
