//! [`TaskRef`]: a task as a value a program can persist and hand to another process —
//! where the server is, which task, in which revision, started by which call — and that
//! process resumes it with [`McpClient::resume`](crate::McpClient::resume) (same
//! connection kind) or [`McpClient::connect_to`](crate::McpClient::connect_to) (a new
//! connection to the endpoint it names). Imports no module of the crate.

use mcp_tasks_protocol::JsonObject;
use serde::{Deserialize, Serialize};

/// Where a server is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "transport")]
pub enum Endpoint {
    /// A Streamable HTTP endpoint.
    Http {
        /// Its URL, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
    },
    /// A program serving MCP on its stdio. A new process is another server: a task
    /// survives into it only when the server keeps tasks in a shared, durable store.
    Stdio {
        /// The program.
        program: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
    },
}

/// The call that made a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: JsonObject,
    /// Earlier tasks this call relates to, sent as the request's
    /// `io.modelcontextprotocol/relatedTaskIds` (the tasks extension draft; MCP
    /// 2026-07-28). The server checks each is the caller's and hands them to the tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_task_ids: Vec<String>,
    /// The idempotency key the call carries (our extension, rs.mcp-tasks): the server
    /// makes at most one task per key, so the call can be sent again safely. Set by the
    /// caller ([`with_idempotency_key`](Self::with_idempotency_key)) or, for a
    /// task-augmented call, by the client (see
    /// [`ClientConfig::idempotency_keys`](crate::ClientConfig::idempotency_keys)); a
    /// handle's [`operation`](crate::TaskHandle::operation) has the key that was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl ToolCall {
    /// A call of tool `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: JsonObject) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments,
            related_task_ids: Vec::new(),
            idempotency_key: None,
        }
    }

    /// This call with idempotency key `key` (1 to 255 bytes; see
    /// [`idempotency_key`](Self::idempotency_key)). Calls with one key and other
    /// arguments are refused by the server (-32602) while the key's task is kept.
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> ToolCall {
        self.idempotency_key = Some(key.into());
        self
    }

    /// This call relates to the tasks `ids` (see [`related_task_ids`](Self::related_task_ids)).
    pub fn related_to<I, S>(mut self, ids: I) -> ToolCall
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.related_task_ids = ids.into_iter().map(Into::into).collect();
        self
    }
}

/// A task, serializable (serde, camelCase JSON): enough for another process to follow it.
///
/// ```
/// use mcp_tasks_client::{Endpoint, TaskRef};
///
/// let json = r#"{"endpoint":{"transport":"http","url":"http://127.0.0.1:8000/mcp"},
///                "taskId":"7f3c","revision":"2026-07-28",
///                "operation":{"name":"slow_compute","arguments":{"seconds":60}}}"#;
/// let task: TaskRef = serde_json::from_str(json).unwrap();
/// assert_eq!(task.task_id, "7f3c");
/// assert!(matches!(task.endpoint, Some(Endpoint::Http { .. })));
/// assert_eq!(serde_json::from_str::<TaskRef>(&task.to_json()).unwrap(), task);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRef {
    /// Where the server is; `None` for a client made over a connection of your own
    /// ([`McpClient::connect`](crate::McpClient::connect)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Endpoint>,
    /// The id the server gave the task.
    pub task_id: String,
    /// The protocol version the task was made in (`2026-07-28`, `2025-11-25`): a task
    /// lives in one revision's methods, so it is followed in that revision.
    pub revision: String,
    /// The call that made the task; `None` when the handle was resumed by id alone
    /// ([`McpClient::resume_task`](crate::McpClient::resume_task)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<ToolCall>,
}

impl TaskRef {
    /// As compact JSON (what `mcp-call --detach` prints).
    pub fn to_json(&self) -> String {
        // A struct of strings and JSON values always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Whether the revision is MCP 2025-11-25 or one of the earlier ones sharing its
    /// `initialize` lifecycle.
    pub(crate) fn is_2025(&self) -> bool {
        is_2025_family(&self.revision)
    }
}

/// Whether `version` is spoken through `initialize` (2025-11-25 and earlier).
pub(crate) fn is_2025_family(version: &str) -> bool {
    version.as_bytes() < b"2026".as_slice()
}
