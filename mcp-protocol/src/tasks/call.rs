//! `tools/call` as a caller that declares the tasks extension sees it: the answer is the
//! tool's result, a request for input (MRTR), or a task ([`CallToolReply`]).

use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::messages::CreateTaskResult;
use crate::v2026::{CallToolRequestParams, CallToolResult, InputRequiredResult, ResultType};

/// What `tools/call` answers, chosen by `resultType`: `"complete"` (or absent, from a
/// server of an earlier revision), `"input_required"` or `"task"`. Each variant carries its
/// own `resultType`, so the enum serializes as the variant does.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum CallToolReply {
    /// The tool ran to completion (its failures included, as `isError: true`).
    Complete(CallToolResult),
    /// The server needs client input first; call again with the answers.
    InputRequired(InputRequiredResult),
    /// The call became a task: follow it with `tasks/get`.
    Task(CreateTaskResult),
}

impl CallToolReply {
    /// The `resultType` this reply carries.
    pub fn result_type(&self) -> ResultType {
        match self {
            CallToolReply::Complete(_) => ResultType::Complete,
            CallToolReply::InputRequired(_) => ResultType::InputRequired,
            CallToolReply::Task(_) => ResultType::Task,
        }
    }
}

impl<'de> Deserialize<'de> for CallToolReply {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut v = Value::deserialize(d)?;
        let kind = match v.get("resultType") {
            // A server of an earlier revision: the spec says to read it as complete.
            None => {
                if let Value::Object(map) = &mut v {
                    map.insert("resultType".into(), ResultType::Complete.as_str().into());
                }
                ResultType::Complete.as_str().to_owned()
            }
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "resultType must be a string, not {other}"
                )));
            }
        };
        // Each variant's failure names the type it expected, for error messages.
        let read = |v: Value| -> Result<CallToolReply, String> {
            match kind.as_str() {
                "complete" => serde_json::from_value(v)
                    .map(CallToolReply::Complete)
                    .map_err(|e| format!("malformed CallToolResult: {e}")),
                "input_required" => serde_json::from_value(v)
                    .map(CallToolReply::InputRequired)
                    .map_err(|e| format!("malformed InputRequiredResult: {e}")),
                "task" => serde_json::from_value(v)
                    .map(CallToolReply::Task)
                    .map_err(|e| format!("malformed CreateTaskResult: {e}")),
                other => Err(format!("unknown resultType {other:?} for tools/call")),
            }
        };
        read(v).map_err(D::Error::custom)
    }
}

crate::request!(
    /// `tools/call` from a caller that declares the tasks extension: the server may answer
    /// with a task ([`CallToolReply::Task`]).
    CallToolWithTasks, "tools/call", CallToolRequestParams => CallToolReply
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_each_reply_by_its_result_type() {
        let complete: CallToolReply =
            serde_json::from_value(json!({"resultType": "complete", "content": []}))
                .expect("complete");
        assert_eq!(complete.result_type(), ResultType::Complete);
        let legacy: CallToolReply =
            serde_json::from_value(json!({"content": []})).expect("no resultType");
        assert_eq!(legacy.result_type(), ResultType::Complete);
        let task: CallToolReply = serde_json::from_value(json!({
            "resultType": "task", "taskId": "t1", "status": "working",
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
            "ttlMs": null
        }))
        .expect("task");
        assert_eq!(task.result_type(), ResultType::Task);
        let asked: CallToolReply = serde_json::from_value(json!({
            "resultType": "input_required", "inputRequests": {}
        }))
        .expect("input required");
        assert_eq!(asked.result_type(), ResultType::InputRequired);
        assert!(serde_json::from_value::<CallToolReply>(json!({"resultType": "later"})).is_err());
        // Serialized as the variant, with its own resultType once.
        let out = serde_json::to_value(&task).expect("serialize");
        assert_eq!(out["resultType"], "task");
    }
}
