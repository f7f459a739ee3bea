//! [`StoreError`], and its one mapping to JSON-RPC errors.

use mcp_protocol::error_codes;
use mcp_protocol::jsonrpc::ErrorObject;
use mcp_protocol::tasks::TaskStatus;

use crate::limits::Limit;

/// Why a store operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No such task for this owner: never created, another owner's, expired or purged.
    /// Deliberately indistinguishable, so ids of other owners cannot be probed.
    #[error("task not found")]
    NotFound,
    /// A limit of the store refused the operation.
    #[error("limit exceeded: {limit} (at most {max})")]
    LimitExceeded { limit: Limit, max: u64 },
    /// An input request key was used before in this task's life.
    #[error("input request key {key:?} was already used by this task")]
    InputKeyReused { key: String },
    /// The task already finished; this operation only applies to unfinished tasks.
    #[error("task is already {}", status.as_str())]
    Terminal { status: TaskStatus },
    /// Another worker holds the task's lease.
    #[error("task is leased by another worker")]
    LeaseHeld,
    /// The caller does not hold the lease it tried to renew or release.
    #[error("lease not held by this worker")]
    LeaseLost,
    /// A list cursor this store did not issue.
    #[error("invalid cursor")]
    InvalidCursor,
    /// The backend failed (I/O, connection, corrupt row...).
    #[error("store backend failed: {0}")]
    Backend(String),
}

impl StoreError {
    pub fn backend(e: impl std::fmt::Display) -> StoreError {
        StoreError::Backend(e.to_string())
    }
}

/// The JSON-RPC error a server answers with when a store operation is refused.
impl From<&StoreError> for ErrorObject {
    fn from(e: &StoreError) -> Self {
        match e {
            StoreError::NotFound => ErrorObject::new(
                error_codes::INVALID_PARAMS,
                "Failed to retrieve task: Task not found",
            ),
            StoreError::InvalidCursor => {
                ErrorObject::new(error_codes::INVALID_PARAMS, "Invalid cursor")
            }
            StoreError::Terminal { status } => ErrorObject::new(
                error_codes::INVALID_PARAMS,
                format!("Task is already in terminal status '{}'", status.as_str()),
            ),
            StoreError::LimitExceeded { limit, max } => ErrorObject::new(
                error_codes::INVALID_REQUEST,
                format!("Limit exceeded: {limit} (at most {max})"),
            )
            .with_data(serde_json::json!({ "limit": limit.to_string(), "max": max })),
            StoreError::InputKeyReused { .. }
            | StoreError::LeaseHeld
            | StoreError::LeaseLost
            | StoreError::Backend(_) => {
                ErrorObject::new(error_codes::INTERNAL_ERROR, format!("Internal error: {e}"))
            }
        }
    }
}
