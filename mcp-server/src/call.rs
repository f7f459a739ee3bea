//! The `tools/call` core both revisions share: find and check the tool, and start its
//! task (the error a tool's failure answers a request with is `errors::call_error`).
//!
//! Idempotency keys (issue 50; our extension, rs.mcp-tasks, not the spec's): a call that
//! creates a task with `params.idempotencyKey` (or `_meta.idempotencyKey`) creates at most
//! one per owner and key while that task is kept ([`idempotency_key`], [`idempotency`]);
//! the store decides (rule 25), and a repeat gets the task the key names, as it is now,
//! without running anything ([`keyed_refusal`]).
//!
//! **Invariant.** Knows no wire revision's shapes: the revision modules turn what this
//! returns into their own views.

use mcp_tasks::{Idempotency, Job, NewTask, Origin, Owner, StoreError, TaskRecord, WireRevision};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::ReplyWritten;
use mcp_tasks_protocol::meta::{self, IDEMPOTENCY_KEY};
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::v2026::CallTool;
use serde_json::Value;

use crate::audit;
use crate::auth::Identity;
use crate::errors::ServerError;
use crate::executor::Launch;
use crate::state::State;
use crate::tool::ToolDef;

/// The tool `name`, once the caller's credentials grant every scope it requires (none
/// without credentials) and `args` passed its input schema.
pub(crate) fn find_tool<'s>(
    state: &'s State,
    name: &str,
    args: &mut JsonObject,
    identity: Option<&Identity>,
) -> Result<&'s ToolDef, ServerError> {
    let tool = state
        .tool(name)
        .ok_or_else(|| ServerError::UnknownTool(name.to_owned()))?;
    let needed = tool.required_scopes();
    if !needed.is_empty() && !identity.is_some_and(|i| i.missing(needed).is_empty()) {
        return Err(ServerError::InsufficientScope {
            tool: name.to_owned(),
            scopes: needed.to_vec(),
        });
    }
    tool.validate_in_place(args)?;
    Ok(tool)
}

/// Who asked for a task, as its record keeps it for the worker.
pub(crate) struct Requester {
    /// The caller's credentials as they were when the task was created.
    pub(crate) identity: Option<Identity>,
    /// What the request declared (MCP 2026-07-28: its client capabilities).
    pub(crate) declarations: Option<serde_json::Value>,
    /// The earlier tasks it named as related, checked.
    pub(crate) related_tasks: Vec<String>,
    /// Fired once the response announcing the task is written: the tool waits for it
    /// (MCP 2025-11-25, where a task's messages must not precede its `CreateTaskResult`).
    pub(crate) announced: Option<ReplyWritten>,
    /// The call's idempotency key and fingerprint ([`idempotency`]), if it carried one.
    pub(crate) idempotency: Option<Idempotency>,
}

/// The message of -32602 for a key sent again with another tool or other arguments.
pub(crate) const IDEMPOTENCY_CONFLICT: &str = "idempotency key reused with different arguments";

/// The idempotency key of a `tools/call` (our extension, rs.mcp-tasks, not the spec's),
/// from `params.idempotencyKey` (`param`) or `_meta.idempotencyKey` (`meta`), checked:
/// a string of 1 to 255 bytes, the same in both places when both are given; -32602
/// otherwise. `None` when the call carries none.
pub(crate) fn idempotency_key(
    param: Option<String>,
    meta: Option<&JsonObject>,
) -> Result<Option<String>, ServerError> {
    let param = param.map(Value::String);
    meta::idempotency_key(param.as_ref(), meta.and_then(|m| m.get(IDEMPOTENCY_KEY)))
        .map(|key| key.map(str::to_owned))
        .map_err(ServerError::InvalidParams)
}

/// What the store keeps with a keyed task: the key, and a fingerprint of the call (the
/// SHA-256 of the tool's name and its arguments as canonical JSON: object members in
/// byte order of their names, no spaces), so a repeat with other arguments is told.
pub(crate) fn idempotency(
    key: Option<String>,
    tool: &str,
    args: &JsonObject,
) -> Result<Option<Idempotency>, ServerError> {
    let Some(key) = key else {
        return Ok(None);
    };
    let fingerprint = meta::idempotency_fingerprint(tool, args);
    Idempotency::new(key, fingerprint)
        .map(Some)
        .map_err(|e| ServerError::InvalidParams(format!("Invalid params: {e}")))
}

/// Whether the store refused a keyed create because of its key ([`keyed_refusal`]).
pub(crate) fn is_keyed_refusal(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::AlreadyExists { .. }
            | StoreError::IdempotencyConflict
            | StoreError::InvalidIdempotencyKey { .. }
            | StoreError::Unsupported {
                operation: "idempotency keys"
            }
    )
}

/// The store's refusal of a create, for a keyed call: the task the key already names
/// (`Ok`, current as the store read it; nothing was created), or the error to answer
/// with (-32602 for a key reused with other arguments, or a store without keys).
pub(crate) fn keyed_refusal(e: StoreError) -> Result<TaskRecord, ServerError> {
    match e {
        StoreError::AlreadyExists { task } => Ok(*task),
        StoreError::IdempotencyConflict => {
            Err(ServerError::InvalidParams(IDEMPOTENCY_CONFLICT.to_owned()))
        }
        StoreError::InvalidIdempotencyKey { .. } => {
            Err(ServerError::InvalidParams(format!("Invalid params: {e}")))
        }
        StoreError::Unsupported {
            operation: "idempotency keys",
        } => Err(ServerError::InvalidParams(
            "Invalid params: this server's task store does not support idempotency keys".to_owned(),
        )),
        e => Err(mcp_tasks_protocol::jsonrpc::ErrorObject::from(&e).into()),
    }
}

/// What a task's job keeps of its caller besides the arguments.
pub(crate) struct JobOf<'a> {
    pub(crate) identity: Option<&'a Identity>,
    pub(crate) declarations: Option<serde_json::Value>,
    pub(crate) related_tasks: Vec<String>,
}

/// The task to create for a call of `tool` with `args` by `owner` (asked on the
/// `revision` wire, with this TTL if the client asked for one): its record keeps what a
/// worker needs to run it (the job).
pub(crate) fn new_task(
    state: &State,
    owner: &Owner,
    tool: &ToolDef,
    args: JsonObject,
    ttl_ms: Option<u64>,
    revision: WireRevision,
    caller: JobOf<'_>,
) -> NewTask {
    NewTask {
        // The creating call's trace: whoever runs the task continues it.
        trace_context: crate::telemetry::creating_context(),
        owner: owner.clone(),
        ttl_ms,
        poll_interval_ms: state.poll_interval_ms,
        origin: Origin {
            // `tools/call` on both wires.
            method: CallTool::METHOD.to_owned(),
            tool: Some(tool.name().to_owned()),
            revision,
        },
        status_message: None,
        job: Some(Job {
            arguments: args,
            declarations: caller.declarations,
            principal: caller.identity.map(|i| i.principal.clone()),
            scopes: caller
                .identity
                .map(|i| i.scopes.clone())
                .unwrap_or_default(),
            related_tasks: caller.related_tasks,
            delivery: tool.delivery,
            attempts: 0,
            rerun_of: None,
        }),
        idempotency: None,
    }
}

/// Creates a task of `owner` running `tool` with `args` (asked on the `revision` wire,
/// with this TTL if the client asked for one) and hands it to the server's executor
/// (this node runs it, or a worker node claims it). The task is durable when this
/// returns: any node finds it. Its record keeps what a worker needs: the arguments,
/// the `requester`'s declarations and identity and the tool's delivery.
pub(crate) async fn start_task(
    state: &State,
    owner: &Owner,
    tool: &ToolDef,
    args: JsonObject,
    ttl_ms: Option<u64>,
    revision: WireRevision,
    requester: Requester,
) -> Result<TaskRecord, ServerError> {
    let Requester {
        identity,
        declarations,
        related_tasks,
        announced,
        idempotency,
    } = requester;
    if !state.runtime.is_accepting() {
        return Err(ServerError::ShuttingDown);
    }
    let job = JobOf {
        identity: identity.as_ref(),
        declarations,
        related_tasks,
    };
    let mut new = new_task(state, owner, tool, args, ttl_ms, revision, job);
    new.idempotency = idempotency;
    launch_task(state, tool, new, identity, announced).await
}

/// Hands the task `new` (made by [`new_task`]) of `tool` to the server's executor: this
/// node runs it, or a worker node claims it; `identity` is the caller's, whose tool
/// context the run gets. Durable when this returns; audited as created. What
/// [`start_task`] and the console's re-run share.
pub(crate) async fn launch_task(
    state: &State,
    tool: &ToolDef,
    new: NewTask,
    identity: Option<Identity>,
    announced: Option<ReplyWritten>,
) -> Result<TaskRecord, ServerError> {
    if !state.runtime.is_accepting() {
        return Err(ServerError::ShuttingDown);
    }
    let owner = new.owner.clone();
    let launch = Launch {
        runtime: state.runtime.clone(),
        new,
        tool: tool.clone(),
        identity,
        start_after: announced,
    };
    let keyed = launch.new.idempotency.is_some();
    let created = match state.executor.execute(launch).await {
        // A keyed call whose key already names a task: that task, as it is now; nothing
        // was created, nothing runs.
        Err(e) if keyed && is_keyed_refusal(&e) => {
            let existing = keyed_refusal(e)?;
            tracing::debug!(task_id = %existing.id, "idempotency key names an existing task");
            return Ok(existing);
        }
        created => created.map_err(|e| mcp_tasks_protocol::jsonrpc::ErrorObject::from(&e)),
    };
    let id = created
        .as_ref()
        .map(|r| r.id.as_str().to_owned())
        .unwrap_or_default();
    audit::record(
        state.cursor_key(),
        audit::CREATE_TASK,
        &owner,
        &id,
        &created,
    );
    if created.is_ok() {
        crate::telemetry::task_created(tool.name());
    }
    Ok(created?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use mcp_tasks_protocol::meta::IDEMPOTENCY_KEY_MAX_BYTES;

    use super::*;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(obj) => obj,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn a_key_comes_from_params_or_meta_and_both_must_agree() {
        let meta = object(json!({ IDEMPOTENCY_KEY: "k" }));
        assert_eq!(idempotency_key(None, None).expect("accepted"), None);
        assert_eq!(
            idempotency_key(Some("k".into()), None)
                .expect("accepted")
                .as_deref(),
            Some("k")
        );
        assert_eq!(
            idempotency_key(None, Some(&meta))
                .expect("accepted")
                .as_deref(),
            Some("k")
        );
        assert_eq!(
            idempotency_key(Some("k".into()), Some(&meta))
                .expect("accepted")
                .as_deref(),
            Some("k")
        );
        assert!(idempotency_key(Some("other".into()), Some(&meta)).is_err());
    }

    #[test]
    fn bad_keys_are_invalid_params() {
        let long = "k".repeat(IDEMPOTENCY_KEY_MAX_BYTES + 1);
        let utf8 = "é".repeat(128);
        for key in [String::new(), long, utf8] {
            let refused = idempotency_key(Some(key), None).expect_err("refused");
            assert!(
                matches!(refused, ServerError::InvalidParams(_)),
                "{refused}"
            );
        }
        for value in [json!(1), json!(null), json!(["k"]), json!("")] {
            let meta = object(json!({ IDEMPOTENCY_KEY: value }));
            assert!(idempotency_key(None, Some(&meta)).is_err(), "{value}");
        }
        let max = "k".repeat(IDEMPOTENCY_KEY_MAX_BYTES);
        assert!(
            idempotency_key(Some(max), None)
                .expect("accepted")
                .is_some()
        );
    }

    #[test]
    fn the_fingerprint_is_of_the_tool_and_canonical_arguments() {
        let fingerprint = |tool: &str, args: Value| {
            idempotency(Some("k".into()), tool, &object(args))
                .expect("accepted")
                .expect("accepted")
                .fingerprint
        };
        let a = fingerprint("t", json!({ "a": 1, "b": { "y": [1, "x"], "x": null } }));
        let reordered = fingerprint("t", json!({ "b": { "x": null, "y": [1, "x"] }, "a": 1 }));
        assert_eq!(a, reordered);
        assert_eq!(a.len(), 64, "hex SHA-256");
        assert_ne!(
            a,
            fingerprint("u", json!({ "a": 1, "b": { "y": [1, "x"], "x": null } }))
        );
        assert_ne!(
            a,
            fingerprint("t", json!({ "a": 2, "b": { "y": [1, "x"], "x": null } }))
        );
        assert_ne!(
            a,
            fingerprint("t", json!({ "a": 1, "b": { "y": ["x", 1], "x": null } }))
        );
        // The tool's name and the arguments do not run into each other.
        assert_ne!(fingerprint("t{", json!({})), fingerprint("t", json!({})));
        assert!(
            idempotency(None, "t", &JsonObject::new())
                .expect("accepted")
                .is_none()
        );
    }
}
