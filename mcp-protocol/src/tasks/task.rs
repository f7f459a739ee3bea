//! The task object of the extension: [`Task`] (status only) and [`DetailedTask`]
//! (status plus what that status carries: input requests, a result or an error).

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::InputRequests;
use crate::JsonObject;
use crate::jsonrpc::ErrorObject;

/// Where a task is in its life. Shared by both revisions (2025-11-25 and the extension
/// use the same five values); `v2025::TaskStatus` re-exports this type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The work is running.
    Working,
    /// The work waits for input from the requestor.
    InputRequired,
    /// The work finished and has a result (which may itself report a tool error).
    Completed,
    /// The work ended with an error.
    Failed,
    /// The work was cancelled.
    Cancelled,
}

impl TaskStatus {
    /// Every status, in the order the specification lists them.
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    /// `completed`, `failed` and `cancelled` are terminal: a task never leaves them.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The wire string, e.g. `"input_required"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

crate::const_tag!(
    /// The `status` of a [`WorkingTask`]: always `"working"`.
    WorkingStatus = "working"
);
crate::const_tag!(
    /// The `status` of an [`InputRequiredTask`]: always `"input_required"`.
    InputRequiredStatus = "input_required"
);
crate::const_tag!(
    /// The `status` of a [`CompletedTask`]: always `"completed"`.
    CompletedStatus = "completed"
);
crate::const_tag!(
    /// The `status` of a [`FailedTask`]: always `"failed"`.
    FailedStatus = "failed"
);
crate::const_tag!(
    /// The `status` of a [`CancelledTask`]: always `"cancelled"`.
    CancelledStatus = "cancelled"
);

/// Schema of a required, nullable integer member (`ttl`, `ttlMs`): present on the wire,
/// an integer or `null`. (On input serde still reads a missing member as `None`.)
pub(crate) struct RequiredNullableInt;

impl JsonSchema for RequiredNullableInt {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RequiredNullableInt".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": ["integer", "null"], "format": "int64" })
    }
}

/// A task as the extension reports it, without status-specific data.
///
/// `ttlMs` is required and nullable: `None` (unlimited retention) is written as `null`,
/// never left out. A missing `ttlMs` on input reads as `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The id the server minted for this task.
    pub task_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// Human-readable text about the current status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When the task was created (ISO 8601).
    pub created_at: String,
    /// When the task last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long (ms, from creation) the server keeps the task; `null` means no limit.
    #[schemars(with = "crate::tasks::RequiredNullableInt")]
    pub ttl_ms: Option<i64>,
    /// How often (ms) the client should poll `tasks/get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<i64>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Task {
    /// A task with the given id, status and timestamps; no TTL limit, no message, no poll hint.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
    ) -> Self {
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl_ms: None,
            poll_interval_ms: None,
            extra: JsonObject::new(),
        }
    }
}

/// Declares one status-specific task struct: the common task fields, a status marker and
/// the variant's own members.
macro_rules! detailed_task_struct {
    (
        $(#[$m:meta])* $name:ident, $status:ty, $variant:ident
        $(, $(#[$fm:meta])* $field:ident : $fty:ty)*
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// The id the server minted for this task.
            pub task_id: String,
            /// The status, fixed for this variant.
            pub status: $status,
            /// Human-readable text about the current status.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub status_message: Option<String>,
            /// When the task was created (ISO 8601).
            pub created_at: String,
            /// When the task last changed (ISO 8601).
            pub last_updated_at: String,
            /// How long (ms, from creation) the server keeps the task; `null` means no limit.
            #[schemars(with = "crate::tasks::RequiredNullableInt")]
            pub ttl_ms: Option<i64>,
            /// How often (ms) the client should poll `tasks/get`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub poll_interval_ms: Option<i64>,
            $($(#[$fm])* pub $field: $fty,)*
            /// Members this crate does not know, kept for round trips.
            #[serde(flatten)]
            pub extra: JsonObject,
        }

        impl From<$name> for DetailedTask {
            fn from(t: $name) -> Self {
                DetailedTask::$variant(t)
            }
        }

        impl $name {
            /// The status-free view of this task (variant data dropped).
            pub fn to_task(&self) -> Task {
                Task {
                    task_id: self.task_id.clone(),
                    status: TaskStatus::$variant,
                    status_message: self.status_message.clone(),
                    created_at: self.created_at.clone(),
                    last_updated_at: self.last_updated_at.clone(),
                    ttl_ms: self.ttl_ms,
                    poll_interval_ms: self.poll_interval_ms,
                    extra: self.extra.clone(),
                }
            }
        }
    };
}

detailed_task_struct!(
    /// A task that is running.
    WorkingTask, WorkingStatus, Working
);
detailed_task_struct!(
    /// A task waiting for the client: `inputRequests` lists every outstanding request,
    /// to be answered with `tasks/update`.
    InputRequiredTask, InputRequiredStatus, InputRequired,
    /// The outstanding requests, by key.
    input_requests: InputRequests
);
detailed_task_struct!(
    /// A finished task with the original request's result inlined (for `tools/call`, a
    /// `CallToolResult`, possibly with `isError: true`).
    CompletedTask, CompletedStatus, Completed,
    /// The result of the original request.
    result: JsonObject
);
detailed_task_struct!(
    /// A task whose underlying request ended in a JSON-RPC error.
    FailedTask, FailedStatus, Failed,
    /// The JSON-RPC error the request produced.
    error: ErrorObject
);
detailed_task_struct!(
    /// A task that was cancelled.
    CancelledTask, CancelledStatus, Cancelled
);

/// A task together with the data its status carries, as `tasks/get` and
/// `notifications/tasks` report it. The `status` member selects the variant.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DetailedTask {
    /// `status: "working"`.
    Working(WorkingTask),
    /// `status: "input_required"`, with `inputRequests`.
    InputRequired(InputRequiredTask),
    /// `status: "completed"`, with `result`.
    Completed(CompletedTask),
    /// `status: "failed"`, with `error`.
    Failed(FailedTask),
    /// `status: "cancelled"`.
    Cancelled(CancelledTask),
}

impl<'de> Deserialize<'de> for DetailedTask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let map = JsonObject::deserialize(d)?;
        let status = match map.get("status") {
            Some(v) => TaskStatus::deserialize(v).map_err(D::Error::custom)?,
            None => return Err(D::Error::missing_field("status")),
        };
        let v = Value::Object(map);
        let task = match status {
            TaskStatus::Working => serde_json::from_value(v).map(DetailedTask::Working),
            TaskStatus::InputRequired => serde_json::from_value(v).map(DetailedTask::InputRequired),
            TaskStatus::Completed => serde_json::from_value(v).map(DetailedTask::Completed),
            TaskStatus::Failed => serde_json::from_value(v).map(DetailedTask::Failed),
            TaskStatus::Cancelled => serde_json::from_value(v).map(DetailedTask::Cancelled),
        };
        task.map_err(|e| D::Error::custom(format_args!("{status} task: {e}")))
    }
}

/// Applies `$e` to the variant's inner struct, whatever the variant.
macro_rules! each_variant {
    ($self:expr, $t:ident => $e:expr) => {
        match $self {
            DetailedTask::Working($t) => $e,
            DetailedTask::InputRequired($t) => $e,
            DetailedTask::Completed($t) => $e,
            DetailedTask::Failed($t) => $e,
            DetailedTask::Cancelled($t) => $e,
        }
    };
}

impl DetailedTask {
    /// The task's id.
    pub fn task_id(&self) -> &str {
        each_variant!(self, t => &t.task_id)
    }

    /// The task's status (the variant).
    pub fn status(&self) -> TaskStatus {
        match self {
            DetailedTask::Working(_) => TaskStatus::Working,
            DetailedTask::InputRequired(_) => TaskStatus::InputRequired,
            DetailedTask::Completed(_) => TaskStatus::Completed,
            DetailedTask::Failed(_) => TaskStatus::Failed,
            DetailedTask::Cancelled(_) => TaskStatus::Cancelled,
        }
    }

    /// The status message, if any.
    pub fn status_message(&self) -> Option<&str> {
        each_variant!(self, t => t.status_message.as_deref())
    }

    /// The status-free view of this task (variant data dropped).
    pub fn to_task(&self) -> Task {
        each_variant!(self, t => t.to_task())
    }
}

impl From<&DetailedTask> for Task {
    fn from(t: &DetailedTask) -> Self {
        t.to_task()
    }
}

impl From<DetailedTask> for Task {
    fn from(t: DetailedTask) -> Self {
        t.to_task()
    }
}

impl Task {
    /// Builds the detailed view when this task's status carries no data
    /// (`working` or `cancelled`); `None` for the other statuses, which need
    /// [`Task::input_required`], [`Task::completed`] or [`Task::failed`].
    pub fn to_detailed(&self) -> Option<DetailedTask> {
        match self.status {
            TaskStatus::Working | TaskStatus::Cancelled => self.clone().into_detailed().ok(),
            _ => None,
        }
    }

    /// [`Task::to_detailed`] by value: the task's strings are moved, not copied. A task
    /// whose status carries data (`input_required`, `completed`, `failed`) comes back
    /// unchanged (boxed) as the error, for [`Task::input_required`], [`Task::completed`]
    /// or [`Task::failed`].
    pub fn into_detailed(self) -> Result<DetailedTask, Box<Task>> {
        match self.status {
            TaskStatus::Working => Ok(DetailedTask::Working(WorkingTask {
                task_id: self.task_id,
                status: WorkingStatus,
                status_message: self.status_message,
                created_at: self.created_at,
                last_updated_at: self.last_updated_at,
                ttl_ms: self.ttl_ms,
                poll_interval_ms: self.poll_interval_ms,
                extra: self.extra,
            })),
            TaskStatus::Cancelled => Ok(DetailedTask::Cancelled(CancelledTask {
                task_id: self.task_id,
                status: CancelledStatus,
                status_message: self.status_message,
                created_at: self.created_at,
                last_updated_at: self.last_updated_at,
                ttl_ms: self.ttl_ms,
                poll_interval_ms: self.poll_interval_ms,
                extra: self.extra,
            })),
            _ => Err(Box::new(self)),
        }
    }

    /// This task's common fields as an `input_required` task with the given requests.
    pub fn input_required(self, input_requests: InputRequests) -> DetailedTask {
        DetailedTask::InputRequired(InputRequiredTask {
            task_id: self.task_id,
            status: InputRequiredStatus,
            status_message: self.status_message,
            created_at: self.created_at,
            last_updated_at: self.last_updated_at,
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            input_requests,
            extra: self.extra,
        })
    }

    /// This task's common fields as a `completed` task with the given result.
    pub fn completed(self, result: JsonObject) -> DetailedTask {
        DetailedTask::Completed(CompletedTask {
            task_id: self.task_id,
            status: CompletedStatus,
            status_message: self.status_message,
            created_at: self.created_at,
            last_updated_at: self.last_updated_at,
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            result,
            extra: self.extra,
        })
    }

    /// This task's common fields as a `failed` task with the given error.
    pub fn failed(self, error: ErrorObject) -> DetailedTask {
        DetailedTask::Failed(FailedTask {
            task_id: self.task_id,
            status: FailedStatus,
            status_message: self.status_message,
            created_at: self.created_at,
            last_updated_at: self.last_updated_at,
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            error,
            extra: self.extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn into_detailed_moves_a_working_task_and_hands_back_one_that_needs_data() {
        let mut working = Task::new("t1", TaskStatus::Working, "a", "b");
        working.status_message = Some("busy".to_owned());
        let Ok(detailed) = working.clone().into_detailed() else {
            panic!("a working task has its detailed view");
        };
        assert_eq!(Some(&detailed), working.to_detailed().as_ref());
        assert_eq!(detailed.status(), TaskStatus::Working);
        assert_eq!(detailed.status_message(), Some("busy"));
        assert_eq!(detailed.to_task(), working);

        let cancelled = Task::new("t2", TaskStatus::Cancelled, "a", "b");
        assert_eq!(
            cancelled.clone().into_detailed().ok().map(|d| d.status()),
            Some(TaskStatus::Cancelled)
        );

        let completed = Task::new("t3", TaskStatus::Completed, "a", "b");
        let back = completed.clone().into_detailed().err();
        assert_eq!(back.as_deref(), Some(&completed));
    }
}
