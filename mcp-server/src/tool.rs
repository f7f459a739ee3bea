//! Tools: what a server offers, how each may run (its [`TaskPolicy`]), and the typed
//! handler that does the work.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::http::ParamHeader;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::v2026::CallToolResult;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use mcp_tasks::Delivery;

use crate::context::{ToolContext, ToolError};

/// Whether a tool runs as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskPolicy {
    /// Always answers in the request (`greet`).
    Synchronous,
    /// A task when the caller allows it (2026-07-28: declares the extension; 2025-11-25:
    /// sends `params.task`), and the per-call selector agrees; otherwise synchronous.
    Optional,
    /// Only as a task: a caller that cannot take a task gets an error.
    Required,
    /// Answers in the request when the tool finishes within the deadline; becomes a task
    /// at the deadline otherwise, the tool running on with nothing lost (its status
    /// message, its questions, its cancellation). On MCP 2026-07-28 only for a request that
    /// declares the tasks extension (any other runs synchronously to the end); questions
    /// asked before the deadline end the round with `input_required` as for any
    /// synchronous call. MCP 2025-11-25 lets the client choose: the tool is listed as
    /// `taskSupport: "optional"`, a call with `params.task` gets a task at once (that
    /// revision requires it), one without runs synchronously. The store is written only
    /// when the call is promoted.
    After(Duration),
}

/// Whether the operator's console may re-run a finished task of a tool (a new task for
/// the same owner, with the same arguments): [`ToolDef::rerun`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Rerun {
    /// Any finished task may be re-run.
    Allowed,
    /// No task of the tool may be re-run (e.g. a tool whose effect must not repeat).
    Never,
    /// A finished task may be re-run unless it asked its caller for input (an
    /// elicitation, a sampling request): the answers were the caller's, and a re-run
    /// would put the questions to them again unasked. The default.
    #[default]
    UnlessAsked,
}

/// Decides, per call, whether an `Optional` tool runs as a task (e.g. only when the
/// requested work is long). Called with the validated arguments.
pub type TaskSelector = Arc<dyn Fn(&JsonObject) -> bool + Send + Sync>;

/// Takes the arguments shared: a deadline-promoted call keeps them for the task it may
/// become, and the handler reads them in place then, not from a copy.
type Handler = Arc<
    dyn Fn(ToolContext, Arc<JsonObject>) -> BoxFuture<'static, Result<CallToolResult, ToolError>>
        + Send
        + Sync,
>;
type Preflight = Arc<
    dyn Fn(ToolContext, JsonObject) -> BoxFuture<'static, Result<JsonObject, ToolError>>
        + Send
        + Sync,
>;

/// One tool: its description, input schema, task policy and handler.
#[derive(Clone)]
pub struct ToolDef {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: JsonObject,
    pub(crate) policy: TaskPolicy,
    pub(crate) selector: Option<TaskSelector>,
    pub(crate) preflight: Option<Preflight>,
    /// The parameters the input schema mirrors into `Mcp-Param-*` headers (SEP-2243).
    pub(crate) param_headers: Arc<[ParamHeader]>,
    /// What a lost worker means for its tasks (default: at most once).
    pub(crate) delivery: Delivery,
    /// A deadline-promoted call writes its task record when it starts, not at the deadline.
    pub(crate) record_up_front: bool,
    /// Whether the console may re-run its finished tasks.
    pub(crate) rerun: Rerun,
    /// Scopes a caller's credentials must grant to call it.
    scopes: Vec<String>,
    validator: Arc<jsonschema::Validator>,
    handler: Handler,
}

impl fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.name)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// Why a tool could not be defined.
#[derive(Debug, thiserror::Error)]
#[error("invalid input schema for tool {tool}: {reason}")]
pub struct ToolDefError {
    /// The tool's name.
    pub tool: String,
    /// What is wrong with its input schema.
    pub reason: String,
}

impl ToolDef {
    /// A tool whose arguments are `A`: the input schema is generated from `A` with
    /// schemars, arguments are validated against it before `handler` runs, then
    /// deserialized into `A`.
    pub fn new<A, F, Fut>(
        name: impl Into<String>,
        policy: TaskPolicy,
        handler: F,
    ) -> Result<ToolDef, ToolDefError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        let name = name.into();
        let input_schema = input_schema_for::<A>();
        let validator =
            jsonschema::validator_for(&Value::Object(input_schema.clone())).map_err(|e| {
                ToolDefError {
                    tool: name.clone(),
                    reason: e.to_string(),
                }
            })?;
        let param_headers = checked_param_headers(&name, &input_schema)?;
        let handler = Arc::new(handler);
        let tool_name = name.clone();
        let handler: Handler = Arc::new(move |ctx, args| {
            let handler = Arc::clone(&handler);
            let tool_name = tool_name.clone();
            Box::pin(async move {
                let args = match Arc::try_unwrap(args) {
                    Ok(args) => serde_json::from_value(Value::Object(args)),
                    // Kept by the caller too: read in place (dropped before the handler
                    // runs, so the caller's is then the only one).
                    Err(shared) => A::deserialize(&*shared),
                };
                let args: A = args.map_err(|e| {
                    ToolError::Rpc(ErrorObject::new(
                        error_codes::INVALID_PARAMS,
                        format!("Invalid arguments for tool {tool_name}: {e}"),
                    ))
                })?;
                handler(ctx, args).await
            })
        });
        Ok(ToolDef {
            name,
            title: None,
            description: None,
            input_schema,
            policy,
            selector: None,
            preflight: None,
            param_headers,
            delivery: Delivery::AtMostOnce,
            record_up_front: false,
            rerun: Rerun::UnlessAsked,
            scopes: Vec::new(),
            validator: Arc::new(validator),
            handler,
        })
    }

    /// What happens to a task of this tool whose worker is lost (its node crashed):
    /// [`Delivery::AtMostOnce`] (the default) fails it ("worker lost"), so the tool never
    /// runs twice; [`Delivery::AtLeastOnce`] runs it again on another worker, up to
    /// `max_attempts` runs in all ([`ToolContext::attempt`] says which run it is).
    pub fn delivery(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// Whether the operator's console may re-run a finished task of this tool
    /// (`POST /console/api/tasks/{id}/rerun`): [`Rerun::UnlessAsked`] (the default) unless
    /// the task asked for input, [`Rerun::Allowed`] always, [`Rerun::Never`] never.
    pub fn rerun(mut self, rerun: Rerun) -> Self {
        self.rerun = rerun;
        self
    }

    /// Makes a deadline-promoted call of this tool ([`TaskPolicy::After`], or `Optional`
    /// under `ServerBuilder::promote_after`) durable from its start: its task record is
    /// written when the call starts (leased to this node, the lease kept while the call
    /// runs) instead of at the deadline, so a node lost before the deadline leaves a task
    /// that the sweep recovers by the tool's [`delivery`](Self::delivery) (an at-least-once
    /// tool runs again). A call that answers within the deadline ends its record as the
    /// call ended (completed with the result, failed, or cancelled when the round ended
    /// `input_required`), kept until its TTL like any finished task; no client is told
    /// its id. Costs two store writes per call that answers in time (none without).
    pub fn record_up_front(mut self) -> Self {
        self.record_up_front = true;
        self
    }

    /// Sets the description shown in `tools/list`.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Replaces the generated input schema with `schema` as written (every keyword kept
    /// in `tools/list`, e.g. `$schema`, `$defs`, `allOf`, `if`/`then`/`else`); arguments
    /// are validated against it from now on. The handler's argument type must still
    /// accept what the schema allows. A schema that does not compile, or whose
    /// `x-mcp-header` annotations break SEP-2243's rules, is refused.
    pub fn input_schema(mut self, schema: JsonObject) -> Result<Self, ToolDefError> {
        let validator = jsonschema::validator_for(&Value::Object(schema.clone())).map_err(|e| {
            ToolDefError {
                tool: self.name.clone(),
                reason: e.to_string(),
            }
        })?;
        self.param_headers = checked_param_headers(&self.name, &schema)?;
        self.input_schema = schema;
        self.validator = Arc::new(validator);
        Ok(self)
    }

    /// Sets the human-readable title.
    pub fn title(mut self, text: impl Into<String>) -> Self {
        self.title = Some(text.into());
        self
    }

    /// For an `Optional` tool: decides per call whether it runs as a task.
    pub fn select_task(
        mut self,
        selector: impl Fn(&JsonObject) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.selector = Some(Arc::new(selector));
        self
    }

    /// Input to gather *before* the task is created (MCP 2026-07-28: MRTR rounds on
    /// `tools/call`). `preflight` may call `ctx.elicit(..)` and friends; it is re-run with
    /// the answers until it returns, and what it returns becomes the task's arguments.
    pub fn preflight<F, Fut>(mut self, preflight: F) -> Self
    where
        F: Fn(ToolContext, JsonObject) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<JsonObject, ToolError>> + Send + 'static,
    {
        let preflight = Arc::new(preflight);
        self.preflight = Some(Arc::new(move |ctx, args| {
            let preflight = Arc::clone(&preflight);
            Box::pin(async move { preflight(ctx, args).await })
        }));
        self
    }

    /// Requires `scope` of callers (repeat for more): a call without credentials
    /// granting it is refused before the tool runs or its task exists (over HTTP: 403
    /// `insufficient_scope` naming it; elsewhere a JSON-RPC error, -32600). On stdio
    /// there are no credentials, so such a tool cannot be called there.
    pub fn require_scope(mut self, scope: impl Into<String>) -> Self {
        let scope = scope.into();
        if !self.scopes.contains(&scope) {
            self.scopes.push(scope);
        }
        self
    }

    /// The scopes callers need ([`require_scope`](Self::require_scope)).
    pub fn required_scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The tool's name, as `tools/call` names it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether calls of this tool run as tasks: never, when the client allows, or always.
    pub fn policy(&self) -> TaskPolicy {
        self.policy
    }

    /// Whether the console may re-run its finished tasks ([`rerun`](Self::rerun)).
    pub fn rerun_policy(&self) -> Rerun {
        self.rerun
    }

    /// Checks `args` against the input schema: `-32602` naming the first violations.
    pub fn validate(&self, args: &JsonObject) -> Result<(), ErrorObject> {
        self.check(&Value::Object(args.clone()))
    }

    /// [`validate`](Self::validate) without copying `args` (lent to the validator as a
    /// JSON value and given back, whatever the outcome).
    pub(crate) fn validate_in_place(&self, args: &mut JsonObject) -> Result<(), ErrorObject> {
        let value = Value::Object(std::mem::take(args));
        let checked = self.check(&value);
        if let Value::Object(lent) = value {
            *args = lent;
        }
        checked
    }

    /// Checks `value`; valid arguments (the usual case) cost one pass and no error list.
    fn check(&self, value: &Value) -> Result<(), ErrorObject> {
        if self.validator.is_valid(value) {
            return Ok(());
        }
        let problems: Vec<String> = self
            .validator
            .iter_errors(value)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ErrorObject::new(
                error_codes::INVALID_PARAMS,
                format!(
                    "Invalid arguments for tool {}: {}",
                    self.name,
                    problems.join("; ")
                ),
            ))
        }
    }

    /// Whether an allowed task should be used for this call.
    pub(crate) fn wants_task(&self, args: &JsonObject) -> bool {
        match self.policy {
            TaskPolicy::Synchronous => false,
            TaskPolicy::Required => true,
            TaskPolicy::Optional => self.selector.as_ref().is_none_or(|s| s(args)),
            TaskPolicy::After(_) => true,
        }
    }

    /// Whether every keyed call of this tool from a caller that can take a task is
    /// deduplicated, creating a task or writing its record up front (so a repeat after a
    /// lost answer cannot run the tool twice): what `tools/list` flags with
    /// `_meta["rs.mcp-tasks/idempotency"]`. MCP 2025-11-25 (`in_2025`): a task-augmented
    /// call of a tool whose `taskSupport` is not `forbidden` always makes a task. MCP
    /// 2026-07-28: `Required` and deadline tools (a keyed call writes its record up
    /// front), and `Optional` tools without a selector; not a synchronous tool, nor an
    /// `Optional` one whose selector may answer synchronously.
    pub(crate) fn dedupes_keyed_calls(&self, in_2025: bool) -> bool {
        match self.policy {
            TaskPolicy::Synchronous => false,
            TaskPolicy::Required | TaskPolicy::After(_) => true,
            TaskPolicy::Optional => in_2025 || self.selector.is_none(),
        }
    }

    /// The deadline at which a call of this tool becomes a task, if it does: the tool's
    /// own ([`TaskPolicy::After`]), or for an `Optional` tool that wants a task for these
    /// arguments the server's default (`ServerBuilder::promote_after`), when set.
    pub(crate) fn deadline(
        &self,
        args: &JsonObject,
        default: Option<Duration>,
    ) -> Option<Duration> {
        match self.policy {
            TaskPolicy::After(deadline) => Some(deadline),
            TaskPolicy::Optional if self.wants_task(args) => default,
            TaskPolicy::Optional | TaskPolicy::Synchronous | TaskPolicy::Required => None,
        }
    }

    pub(crate) fn run(
        &self,
        ctx: ToolContext,
        args: JsonObject,
    ) -> BoxFuture<'static, Result<CallToolResult, ToolError>> {
        (self.handler)(ctx, Arc::new(args))
    }

    /// [`run`](Self::run) with arguments the caller keeps too, without copying them.
    pub(crate) fn run_shared(
        &self,
        ctx: ToolContext,
        args: Arc<JsonObject>,
    ) -> BoxFuture<'static, Result<CallToolResult, ToolError>> {
        (self.handler)(ctx, args)
    }

    /// The arguments after the tool's [`preflight`](Self::preflight), or `args` as they
    /// came (not copied) when it has none.
    pub(crate) async fn preflight_args(
        &self,
        ctx: ToolContext,
        args: JsonObject,
    ) -> Result<JsonObject, ToolError> {
        match &self.preflight {
            None => Ok(args),
            Some(preflight) => preflight(ctx, args).await,
        }
    }
}

/// The input schema of a tool taking `A`: an object schema, without `$schema` and `title`.
fn input_schema_for<A: JsonSchema>() -> JsonObject {
    let settings = schemars::generate::SchemaSettings::draft2020_12();
    let schema = settings.into_generator().into_root_schema_for::<A>();
    let mut object = match schema.to_value() {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    };
    object.remove("$schema");
    object.remove("title");
    object
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    object
}

/// The schema's `x-mcp-header` parameters; a tool whose annotations break the rules is
/// refused (a client would drop it from `tools/list`).
fn checked_param_headers(
    name: &str,
    schema: &JsonObject,
) -> Result<Arc<[ParamHeader]>, ToolDefError> {
    mcp_tasks_protocol::http::param_headers(schema)
        .map(Arc::from)
        .map_err(|e| ToolDefError {
            tool: name.to_owned(),
            reason: e.to_string(),
        })
}

/// Marks a listed tool's `_meta` with [`IDEMPOTENT_TOOL`](mcp_tasks_protocol::meta::IDEMPOTENT_TOOL)
/// (`{}`), keeping its other members (see [`ToolDef::dedupes_keyed_calls`]).
pub(crate) fn flag_idempotent(meta: &mut Option<JsonObject>) {
    meta.get_or_insert_with(JsonObject::new).insert(
        mcp_tasks_protocol::meta::IDEMPOTENT_TOOL.to_owned(),
        Value::Object(JsonObject::new()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        n: u32,
    }

    #[test]
    fn arguments_checked_in_place_come_back_whatever_the_outcome() {
        let tool = ToolDef::new(
            "count",
            TaskPolicy::Synchronous,
            |_ctx, _args: Args| async { Ok(CallToolResult::text("ok")) },
        )
        .expect("a valid tool");
        let mut good: JsonObject = serde_json::from_str(r#"{"n":3}"#).expect("json");
        assert!(tool.validate_in_place(&mut good).is_ok());
        assert_eq!(good["n"], 3);
        let mut bad: JsonObject = serde_json::from_str(r#"{"n":"three"}"#).expect("json");
        let refused = tool
            .validate_in_place(&mut bad)
            .expect_err("a string is no u32");
        assert_eq!(refused.code, error_codes::INVALID_PARAMS);
        assert!(refused.message.contains("count"), "{}", refused.message);
        assert_eq!(bad["n"], "three");
        assert_eq!(tool.validate(&bad), Err(refused));
    }
}
