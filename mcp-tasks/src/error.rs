//! [`StoreError`], whether a failure passes ([`StoreError::is_transient`]), and its one
//! mapping to JSON-RPC errors.

use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;

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
    LimitExceeded {
        /// The limit that refused it.
        limit: Limit,
        /// The limit's value.
        max: u64,
    },
    /// An input request key was used before in this task's life.
    #[error("input request key {key:?} was already used by this task")]
    InputKeyReused {
        /// The key asked again.
        key: String,
    },
    /// The task already finished; this operation only applies to unfinished tasks.
    #[error("task is already {}", status.as_str())]
    Terminal {
        /// The status the task ended in.
        status: TaskStatus,
    },
    /// Another worker holds the task's lease.
    #[error("task is leased by another worker")]
    LeaseHeld,
    /// The caller does not hold the lease it tried to renew or release.
    #[error("lease not held by this worker")]
    LeaseLost,
    /// The task is not waiting for a worker (it has no job, is leased, finished, or its
    /// cancel was requested): what a claim that lost a race meets.
    #[error("task is not waiting for a worker")]
    NotQueued,
    /// A list cursor this store did not issue (or, for an operator listing, issued for
    /// another filter).
    #[error("invalid cursor")]
    InvalidCursor,
    /// A tool's log entry type is not one of its own: it needs a vendor prefix (a `.` or
    /// `/` inside, e.g. `com.example.build.log`), and the spec's prefixes
    /// (`io.modelcontextprotocol`, `mcp.dev/`) are not a tool's ([`log::check_draft`](crate::log::check_draft)).
    #[error("log entry type {kind:?} needs a vendor prefix of its own (e.g. com.example.progress)")]
    InvalidLogType {
        /// The type refused (at most 200 characters of it).
        kind: String,
    },
    /// The store does not implement this operation (a store written before it existed,
    /// e.g. one without the operator's view of rule 22).
    #[error("the task store does not support {operation}")]
    Unsupported {
        /// What it does not support, e.g. `"operator listing"`.
        operation: &'static str,
    },
    /// A create with an idempotency key the owner already used for a task still kept,
    /// with the same fingerprint: nothing was created, and this is that task as it
    /// stands (rule 25). A server answers with that task, as if it had just created it.
    #[error("a task with this idempotency key already exists")]
    AlreadyExists {
        /// The task created first with the key, its current record.
        task: Box<crate::record::TaskRecord>,
    },
    /// A create with an idempotency key the owner already used for a task still kept,
    /// with another fingerprint (other arguments): nothing was created (rule 25).
    #[error("idempotency key reused with different arguments")]
    IdempotencyConflict,
    /// An idempotency key that is empty or longer than 255 bytes
    /// ([`Idempotency::new`](crate::Idempotency::new)).
    #[error("invalid idempotency key: {reason}")]
    InvalidIdempotencyKey {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The backend is unreachable or cannot take this operation *for now*: connection
    /// lost or refused, pool or command timeout, a failover (a read-only replica,
    /// `READONLY`), a serialization failure or deadlock, a busy or full disk. The
    /// operation may or may not have taken effect when the connection broke mid-way;
    /// every write of the contract is safe to retry (a terminal write that already landed
    /// comes back `won: false`, an answer already accepted is ignored).
    #[error("store unavailable: {0}")]
    Unavailable(BackendError),
    /// The backend failed in a way a retry does not fix: a corrupt row, a constraint,
    /// a schema this build does not know, bad configuration...
    #[error("store backend failed: {0}")]
    Backend(BackendError),
}

impl StoreError {
    /// A [`StoreError::Backend`] (permanent) failure described by `e`.
    pub fn backend(e: impl std::fmt::Display) -> StoreError {
        StoreError::Backend(BackendError::new(e.to_string()))
    }

    /// A [`StoreError::Unavailable`] (transient) failure described by `e`.
    pub fn unavailable(e: impl std::fmt::Display) -> StoreError {
        StoreError::Unavailable(BackendError::new(e.to_string()))
    }

    /// The error's kind, one short stable name per variant (`not_found`,
    /// `limit_exceeded`, `input_key_reused`, `terminal`, `lease_held`, `lease_lost`,
    /// `not_queued`, `invalid_cursor`, `invalid_log_type`, `already_exists`,
    /// `idempotency_conflict`, `invalid_idempotency_key`, `unsupported`, `unavailable`,
    /// `backend`): a label
    /// with a bounded set of values, for metrics (`error.type`) and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::NotFound => "not_found",
            StoreError::LimitExceeded { .. } => "limit_exceeded",
            StoreError::InputKeyReused { .. } => "input_key_reused",
            StoreError::Terminal { .. } => "terminal",
            StoreError::LeaseHeld => "lease_held",
            StoreError::LeaseLost => "lease_lost",
            StoreError::NotQueued => "not_queued",
            StoreError::InvalidCursor => "invalid_cursor",
            StoreError::InvalidLogType { .. } => "invalid_log_type",
            StoreError::AlreadyExists { .. } => "already_exists",
            StoreError::IdempotencyConflict => "idempotency_conflict",
            StoreError::InvalidIdempotencyKey { .. } => "invalid_idempotency_key",
            StoreError::Unsupported { .. } => "unsupported",
            StoreError::Unavailable(_) => "unavailable",
            StoreError::Backend(_) => "backend",
        }
    }

    /// True when the failure passes with time (the backend is unreachable, failing
    /// over, busy or full): the operation is worth retrying with a backoff. Every other
    /// error is an answer (not found, a limit, a terminal task...) or a permanent fault.
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Unavailable(_))
    }

    /// Says where a backend failure happened (`... (at HOST:PORT/DB)`); other errors are
    /// returned unchanged.
    #[cfg_attr(not(any(feature = "postgres", feature = "redis")), allow(dead_code))]
    pub(crate) fn at(self, place: &str) -> StoreError {
        match self {
            StoreError::Unavailable(mut e) => {
                e.message = format!("{} (at {place})", e.message);
                StoreError::Unavailable(e)
            }
            StoreError::Backend(mut e) => {
                e.message = format!("{} (at {place})", e.message);
                StoreError::Backend(e)
            }
            other => other,
        }
    }

    /// Prefixes the message of a backend failure with `what` (e.g. the backend's name);
    /// other errors are returned unchanged.
    // Used by the durable backends only.
    #[cfg_attr(not(any(feature = "sqlite", feature = "redis")), allow(dead_code))]
    pub(crate) fn context(self, what: &str) -> StoreError {
        match self {
            StoreError::Unavailable(e) => StoreError::Unavailable(e.context(what)),
            StoreError::Backend(e) => StoreError::Backend(e.context(what)),
            other => other,
        }
    }
}

/// What a backend said when it failed: a message for people, and the backend's own
/// error as the [`source`](std::error::Error::source) when there is one.
#[derive(Debug)]
pub struct BackendError {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl BackendError {
    /// A failure described by `message` alone.
    pub fn new(message: impl Into<String>) -> BackendError {
        BackendError {
            message: message.into(),
            source: None,
        }
    }

    /// A failure described by `message`, caused by the backend's error `source`.
    pub fn with_source(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> BackendError {
        BackendError {
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// The message, without the source.
    pub fn message(&self) -> &str {
        &self.message
    }

    #[cfg_attr(not(any(feature = "sqlite", feature = "redis")), allow(dead_code))]
    fn context(mut self, what: &str) -> BackendError {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A backend's own error turned into a [`StoreError`], each backend deciding whether
/// its errors pass ([`StoreError::Unavailable`]) or stay ([`StoreError::Backend`]).
#[cfg_attr(
    not(any(feature = "sqlite", feature = "postgres", feature = "redis")),
    allow(dead_code)
)]
pub(crate) trait IntoStoreError {
    fn into_store_error(self) -> StoreError;
}

impl IntoStoreError for String {
    fn into_store_error(self) -> StoreError {
        StoreError::Backend(BackendError::new(self))
    }
}

impl IntoStoreError for &str {
    fn into_store_error(self) -> StoreError {
        StoreError::Backend(BackendError::new(self))
    }
}

impl IntoStoreError for serde_json::Error {
    fn into_store_error(self) -> StoreError {
        StoreError::Backend(BackendError::with_source(self.to_string(), self))
    }
}

impl IntoStoreError for getrandom::Error {
    fn into_store_error(self) -> StoreError {
        StoreError::Backend(BackendError::new(format!(
            "no random bits for an id: {self}"
        )))
    }
}

impl IntoStoreError for tokio::time::error::Elapsed {
    fn into_store_error(self) -> StoreError {
        StoreError::Unavailable(BackendError::new(format!(
            "the backend did not answer: {self}"
        )))
    }
}

/// Message of [`StoreError::Unavailable`] on the wire: the details stay in the server's
/// log, the client learns that a retry is safe.
pub const STORE_UNAVAILABLE_MESSAGE: &str =
    "The task store is unavailable right now; retrying the request is safe.";

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
            StoreError::InvalidLogType { .. } | StoreError::InvalidIdempotencyKey { .. } => {
                ErrorObject::new(error_codes::INVALID_PARAMS, e.to_string())
            }
            StoreError::IdempotencyConflict => ErrorObject::new(
                error_codes::INVALID_PARAMS,
                "idempotency key reused with different arguments",
            ),
            // A server answers with the existing task instead; should it reach a client,
            // nothing of the task goes with it.
            StoreError::AlreadyExists { .. } => {
                ErrorObject::new(error_codes::INTERNAL_ERROR, "Internal error")
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
            StoreError::Unavailable(_) => {
                ErrorObject::new(error_codes::INTERNAL_ERROR, STORE_UNAVAILABLE_MESSAGE)
                    .with_data(serde_json::json!({ "retryable": true }))
            }
            StoreError::InputKeyReused { .. }
            | StoreError::LeaseHeld
            | StoreError::NotQueued
            | StoreError::LeaseLost
            | StoreError::Unsupported { .. }
            | StoreError::Backend(_) => {
                ErrorObject::new(error_codes::INTERNAL_ERROR, format!("Internal error: {e}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_is_transient_and_says_a_retry_is_safe() {
        let e = StoreError::unavailable("connection refused");
        assert!(e.is_transient());
        let wire = ErrorObject::from(&e);
        assert_eq!(wire.code, error_codes::INTERNAL_ERROR);
        assert_eq!(wire.message, STORE_UNAVAILABLE_MESSAGE);
        assert!(!StoreError::backend("corrupt row").is_transient());
        assert!(!StoreError::NotFound.is_transient());
    }

    #[test]
    fn kinds_are_short_and_distinct() {
        let errors = [
            StoreError::NotFound,
            StoreError::LeaseHeld,
            StoreError::LeaseLost,
            StoreError::NotQueued,
            StoreError::InvalidCursor,
            StoreError::Unsupported { operation: "x" },
            StoreError::unavailable("down"),
            StoreError::backend("corrupt"),
            StoreError::InputKeyReused { key: "k".into() },
            StoreError::IdempotencyConflict,
            StoreError::InvalidIdempotencyKey { reason: "empty" },
        ];
        let kinds: std::collections::BTreeSet<_> = errors.iter().map(StoreError::kind).collect();
        assert_eq!(kinds.len(), errors.len());
        assert!(
            kinds
                .iter()
                .all(|k| k.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        );
        assert_eq!(StoreError::unavailable("down").kind(), "unavailable");
    }

    #[test]
    fn idempotency_refusals_map_to_invalid_params_and_hide_the_task() {
        let conflict = ErrorObject::from(&StoreError::IdempotencyConflict);
        assert_eq!(conflict.code, error_codes::INVALID_PARAMS);
        assert_eq!(
            conflict.message,
            "idempotency key reused with different arguments"
        );
        let invalid = ErrorObject::from(&StoreError::InvalidIdempotencyKey { reason: "empty" });
        assert_eq!(invalid.code, error_codes::INVALID_PARAMS);
        let id = crate::record::TaskId::from_wire("0".repeat(32));
        let rec = crate::rules::new_record(
            id,
            crate::record::NewTask {
                owner: crate::record::Owner::new("alice"),
                ttl_ms: None,
                poll_interval_ms: None,
                origin: crate::record::Origin {
                    method: "tools/call".into(),
                    tool: Some("secret_tool".into()),
                    revision: crate::record::WireRevision::V2026_07_28,
                },
                status_message: None,
                job: None,
                trace_context: None,
                idempotency: None,
            },
            &crate::Limits::default(),
            0,
        );
        let exists = ErrorObject::from(&StoreError::AlreadyExists {
            task: Box::new(rec),
        });
        assert_eq!(exists.code, error_codes::INTERNAL_ERROR);
        assert!(exists.data.is_none(), "no details");
        assert!(!exists.message.contains("secret_tool"));
        assert!(!exists.message.contains(&"0".repeat(32)));
    }

    #[test]
    fn backend_error_keeps_its_source() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let e = StoreError::Unavailable(BackendError::with_source("lost", io)).context("redis");
        assert_eq!(e.to_string(), "store unavailable: redis: lost");
        let StoreError::Unavailable(inner) = &e else {
            panic!("kind changed")
        };
        let source = std::error::Error::source(inner).expect("source kept");
        assert_eq!(source.to_string(), "reset");
    }
}
