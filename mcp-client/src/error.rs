//! [`ClientError`]: every way a call can go wrong, typed.

use mcp_tasks_protocol::engine::{PeerError, TransportFailure};
use mcp_tasks_protocol::jsonrpc::ErrorObject;

/// Why a client call did not produce its result.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error("server error: {0}")]
    Rpc(Box<ErrorObject>),
    /// The task ended `failed`; this is the original request's JSON-RPC error.
    #[error("task {task_id} failed: {error}")]
    TaskFailed {
        /// The task.
        task_id: String,
        /// The error the tool call produced.
        error: Box<ErrorObject>,
    },
    /// The task ended `cancelled`.
    #[error("task {task_id} was cancelled{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    TaskCancelled {
        /// The task.
        task_id: String,
        /// The task's status message, if any.
        message: Option<String>,
    },
    /// The task kept asking for input we had already answered; it was cancelled.
    #[error(
        "task {task_id} is stuck in input_required with nothing new after {polls} polls; cancelled"
    )]
    TaskStuck {
        /// The task.
        task_id: String,
        /// The polls that brought nothing new.
        polls: u32,
    },
    /// The task outlived its TTL (or the client's limit) without finishing.
    #[error("task {task_id} did not finish in time")]
    TaskExpired {
        /// The task.
        task_id: String,
    },
    /// [`settle`](crate::TaskHandle::settle)'s deadline passed before the task ended; the
    /// task goes on (it was not cancelled).
    #[error("task {task_id} had not ended by the deadline{}", last_status.map(|s| format!(" (last seen {})", s.as_str())).unwrap_or_default())]
    Deadline {
        /// The task.
        task_id: String,
        /// Its status when last seen, if it was seen.
        last_status: Option<mcp_tasks_protocol::tasks::TaskStatus>,
    },
    /// The server asked for more rounds of input than allowed
    /// ([`ClientConfig::max_input_rounds`](crate::ClientConfig::max_input_rounds), or the
    /// handle's own bound); a task is cancelled.
    #[error("{} asked for more than {limit} rounds of input{}", task_id.as_deref().map(|t| format!("task {t}")).unwrap_or_else(|| "tools/call".into()), if task_id.is_some() { "; cancelled" } else { "" })]
    InputRoundsExceeded {
        /// The task (`None`: a synchronous call's MRTR rounds).
        task_id: Option<String>,
        /// The bound.
        limit: u32,
    },
    /// The task's events the stream was to resume from are no longer kept by the server
    /// (`events_gone`, draft SEP-2694): read on from `earliest_seq` (a new stream with
    /// `after = earliest_seq - 1`, or without a cursor), knowing that the events
    /// before it are lost.
    #[error(
        "task {task_id}: the events asked for are no longer kept (the earliest kept is {earliest_seq})"
    )]
    EventsGone {
        /// The task.
        task_id: String,
        /// The earliest event the server still keeps.
        earliest_seq: u64,
    },
    /// The server does not serve task event streams (`tasks/stream`): it does not
    /// advertise task event streams (`rs.mcp-tasks/event-streams`), the session speaks
    /// MCP 2025-11-25, or the server answered -32601; the text says which.
    #[error("the server does not serve task event streams: {0}")]
    EventStreamsUnsupported(String),
    /// A [`TaskRef`](crate::TaskRef) that cannot be followed by this client: another
    /// revision than the session's, or no endpoint to connect to.
    #[error("task reference: {0}")]
    Reference(String),
    /// The server answered with something the protocol does not allow.
    #[error("protocol violation by the server: {0}")]
    Protocol(String),
    /// No answer within the configured time.
    #[error("no answer within {0:?}")]
    Timeout(std::time::Duration),
    /// The connection is gone.
    #[error("connection closed")]
    Closed,
    /// Starting or reaching the server failed, or an HTTP exchange did not produce a
    /// JSON-RPC answer (connection refused, an HTTP error status without a JSON-RPC body,
    /// an event stream that ended without the response). The failure reads as its text
    /// (`Deref<Target = str>`, `Display`) and says, typed, how the exchange failed
    /// ([`TransportFailure::kind`]), with the HTTP status and `Retry-After` of a response
    /// that came ([`ClientError::http_status`], [`ClientError::retry_after`]).
    #[error("transport: {0}")]
    Transport(TransportFailure),
    /// The endpoint given is not a URL the client can connect to.
    #[error("{url:?} is not an HTTP endpoint URL: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server wants authorization and logging in failed (or was not possible): the
    /// message says what to do.
    #[error("authorization: {0}")]
    Auth(std::sync::Arc<crate::auth::AuthError>),
}

impl From<PeerError> for ClientError {
    fn from(e: PeerError) -> Self {
        match e {
            PeerError::Rpc(e) => ClientError::Rpc(Box::new(e)),
            PeerError::Closed => ClientError::Closed,
            PeerError::Json(e) => {
                ClientError::Protocol(format!("invalid JSON from the server: {e}"))
            }
            // A failed HTTP exchange, reported by the transport (never read from a frame).
            PeerError::Transport(message) => ClientError::Transport(message.into()),
            PeerError::Exchange(failure) => ClientError::Transport(failure),
        }
    }
}

impl ClientError {
    /// A JSON-RPC error from the server.
    pub fn rpc(e: ErrorObject) -> ClientError {
        ClientError::Rpc(Box::new(e))
    }

    /// True for a server error that says a retry is safe: -32603 with
    /// `data.retryable: true`, what our server answers while its task store is
    /// unavailable. The task goes on meanwhile; a driver polls again.
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Rpc(e) => {
                e.code == mcp_tasks_protocol::error_codes::INTERNAL_ERROR
                    && e.data
                        .as_ref()
                        .and_then(|d| d.get("retryable"))
                        .and_then(serde_json::Value::as_bool)
                        == Some(true)
            }
            _ => false,
        }
    }

    /// The HTTP status of the response behind a [`Transport`](ClientError::Transport)
    /// failure, when one came (a 502 from a balancer, a 429).
    pub fn http_status(&self) -> Option<u16> {
        match self {
            ClientError::Transport(f) => f.status,
            _ => None,
        }
    }

    /// The `Retry-After` of the response behind a [`Transport`](ClientError::Transport)
    /// failure, when it had one.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ClientError::Transport(f) => f.retry_after,
            _ => None,
        }
    }

    /// The authorization failure behind this one, if any.
    pub fn auth_error(&self) -> Option<&crate::auth::AuthError> {
        match self {
            ClientError::Auth(e) => Some(e.as_ref()),
            _ => None,
        }
    }

    /// The JSON-RPC error behind this one, if any.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            ClientError::Rpc(e) | ClientError::TaskFailed { error: e, .. } => Some(e.as_ref()),
            _ => None,
        }
    }
}

/// The JSON-RPC error code behind `e`, if any: for callers matching on codes.
pub fn rpc_code(e: &ClientError) -> Option<i64> {
    e.rpc_error().map(|e| e.code)
}
