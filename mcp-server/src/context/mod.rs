//! [`ToolContext`]: what a tool can do besides computing its result: ask the user
//! (`elicit`), ask the client's model (`sample`), read the client's roots (`list_roots`),
//! report status and progress, log, and notice cancellation.
//!
//! The same calls work in both ways a tool runs:
//! - **as a task**: each request becomes an input request of the task (status
//!   `input_required`), answered through `tasks/update`; the tool waits for the answer;
//! - **synchronously** (MCP 2026-07-28): each request ends the current round with an
//!   `input_required` result (MRTR); the client retries with the answers and the tool runs
//!   again from the start, this time receiving them. Tools must therefore ask in the same
//!   order on every run.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::{StoreError, TaskKey, TaskStore};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::Peer;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::method::{MethodCall, Request};
use mcp_tasks_protocol::types::{ElicitResult, ListRootsResult, LoggingLevel};
use mcp_tasks_protocol::v2026::{
    ClientCapabilities, CreateMessage, CreateMessageRequestParams, CreateMessageResult, Elicit,
    ElicitRequestParams, ListRoots,
};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::auth::Identity;
use crate::report::Report;

mod input;
mod promotion;

use crate::retry::while_transient;
pub(crate) use promotion::{Phase, Promotion, TaskBinding};

/// How a tool call ended other than with a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The call fails with this JSON-RPC error (a task ends `failed`). A tool-level
    /// failure the model should see is an `Ok` result with `isError: true` instead.
    #[error("{0}")]
    Rpc(ErrorObject),
    /// The call was cancelled (a task ends `cancelled`).
    #[error("cancelled")]
    Cancelled,
    /// Raised by `elicit`/`sample`/`list_roots` in a synchronous call: this round ends
    /// with an `input_required` result. Return it unchanged (`?` does).
    #[error("client input required")]
    InputRequired,
}

impl From<ErrorObject> for ToolError {
    fn from(e: ErrorObject) -> Self {
        ToolError::Rpc(e)
    }
}

impl ToolError {
    /// A JSON-RPC error with `code` and `message`.
    pub fn rpc(code: i64, message: impl Into<String>) -> ToolError {
        ToolError::Rpc(ErrorObject::new(code, message))
    }

    /// -32021 (`MissingRequiredClientCapability`, HTTP 400): the call needs the client
    /// capability `capability` (e.g. `"sampling"`), which the request did not declare.
    /// `data.requiredCapabilities` names it as a capabilities object (`{"sampling": {}}`).
    pub fn missing_capability(capability: &str) -> ToolError {
        ToolError::Rpc(
            ErrorObject::new(
                error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("Missing required client capability: {capability}"),
            )
            .with_data(serde_json::json!({ "requiredCapabilities": { capability: {} } })),
        )
    }
}

fn store_error(e: StoreError) -> ToolError {
    match e {
        // The task was purged (TTL) or finished meanwhile: nothing left to do.
        StoreError::NotFound | StoreError::Terminal { .. } => ToolError::Cancelled,
        other => ToolError::Rpc(ErrorObject::from(&other)),
    }
}

/// How long an input wait sleeps between store checks when no event arrives (events can
/// be lost by a lagging subscriber; the store is the truth).
const INPUT_RECHECK: Duration = Duration::from_secs(5);

/// The context a tool runs with. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ToolContext {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    mode: Mode,
    cancel: CancellationToken,
    asked: AtomicU32,
    /// Progress and log messages of a synchronous call (empty for a task).
    report: Report,
    /// What the request declared it supports (MCP 2026-07-28; a task's: its creator's).
    client_capabilities: Option<ClientCapabilities>,
    /// The caller's credentials (for a task: as they were when it was created).
    identity: Option<Identity>,
    /// The earlier tasks the request named as related.
    related_tasks: Vec<String>,
    /// Which run of the task this is (1 for the first, and for a synchronous call).
    attempt: u32,
}

/// What a synchronous call's request brought besides its arguments.
#[derive(Clone, Debug, Default)]
pub(crate) struct CallScope {
    /// Where progress and log messages go, and which.
    pub(crate) report: Report,
    /// The capabilities the request declared, when it declares them.
    pub(crate) client_capabilities: Option<ClientCapabilities>,
    /// Who the request's credentials name, and their scopes.
    pub(crate) identity: Option<Identity>,
    /// The earlier tasks it named as related (`io.modelcontextprotocol/relatedTaskIds`),
    /// checked against the caller.
    pub(crate) related_tasks: Vec<String>,
}

/// What a task's run knows of the request that created it (kept in its job).
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskCaller {
    /// The credentials, as they were.
    pub(crate) identity: Option<Identity>,
    /// The client capabilities it declared.
    pub(crate) client_capabilities: Option<ClientCapabilities>,
    /// The earlier tasks it named as related.
    pub(crate) related_tasks: Vec<String>,
    /// Its trace context (the task's runs continue its trace).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) trace_context: Option<mcp_tasks::TraceContext>,
    /// When the task was created (store milliseconds).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) created_at: mcp_tasks::Millis,
}

enum Mode {
    /// A synchronous call: answers from this round's `inputResponses`; unanswered
    /// requests are collected for the `input_required` result. A call that may become a
    /// task at its deadline has a `promotion`: once promoted, it is a task.
    Rounds {
        answers: JsonObject,
        wanted: Mutex<BTreeMap<String, Value>>,
        promotion: Option<Arc<Promotion>>,
    },
    /// A task: input goes through the store.
    Task(TaskBinding),
    /// A synchronous call in an MCP 2025-11-25 session: input requests go to the client
    /// as server->client requests on the call's own stream.
    Direct { peer: Peer },
}

impl std::fmt::Debug for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mode::Rounds { answers, .. } => f
                .debug_struct("Rounds")
                .field("answers", &answers.len())
                .finish(),
            Mode::Task(task) => f.debug_struct("Task").field("key", &task.key).finish(),
            Mode::Direct { .. } => f.debug_struct("Direct").finish_non_exhaustive(),
        }
    }
}

impl ToolContext {
    /// A context for one synchronous round, with the answers the client sent so far.
    pub(crate) fn rounds(
        answers: JsonObject,
        cancel: CancellationToken,
        scope: CallScope,
    ) -> ToolContext {
        ToolContext::round(answers, cancel, scope, None)
    }

    fn round(
        answers: JsonObject,
        cancel: CancellationToken,
        scope: CallScope,
        promotion: Option<Arc<Promotion>>,
    ) -> ToolContext {
        let mode = Mode::Rounds {
            answers,
            wanted: Mutex::default(),
            promotion,
        };
        ToolContext::synchronous(mode, cancel, scope)
    }

    /// A synchronous call's context: `mode` and what the request brought.
    fn synchronous(mode: Mode, cancel: CancellationToken, scope: CallScope) -> ToolContext {
        ToolContext {
            inner: Arc::new(Inner {
                mode,
                cancel,
                asked: AtomicU32::new(0),
                report: scope.report,
                client_capabilities: scope.client_capabilities,
                identity: scope.identity,
                related_tasks: scope.related_tasks,
                attempt: 1,
            }),
        }
    }

    /// A context for a task.
    pub(crate) fn task(
        store: Arc<dyn TaskStore>,
        key: TaskKey,
        wake: Arc<Notify>,
        cancel: CancellationToken,
        caller: TaskCaller,
        attempt: u32,
    ) -> ToolContext {
        ToolContext {
            inner: Arc::new(Inner {
                mode: Mode::Task(TaskBinding { store, key, wake }),
                cancel,
                asked: AtomicU32::new(0),
                report: Report::default(),
                client_capabilities: caller.client_capabilities,
                identity: caller.identity,
                related_tasks: caller.related_tasks,
                attempt: attempt.max(1),
            }),
        }
    }

    /// A context for a synchronous 2025-11-25 call, asking the client directly.
    pub(crate) fn direct(peer: Peer, cancel: CancellationToken, scope: CallScope) -> ToolContext {
        ToolContext::synchronous(Mode::Direct { peer }, cancel, scope)
    }

    /// A context for one synchronous round that may become a task at its deadline
    /// (`promotion` says when it has).
    pub(crate) fn promotable(
        answers: JsonObject,
        cancel: CancellationToken,
        scope: CallScope,
        promotion: Arc<Promotion>,
    ) -> ToolContext {
        ToolContext::round(answers, cancel, scope, Some(promotion))
    }

    /// Whether this call runs as a task (a call promoted at its deadline does from then on).
    pub fn is_task(&self) -> bool {
        self.task_id().is_some()
    }

    /// The task's id, when running as one.
    pub fn task_id(&self) -> Option<&str> {
        match &self.inner.mode {
            Mode::Task(task) => Some(task.key.id.as_str()),
            Mode::Rounds { promotion, .. } => promotion
                .as_ref()
                .and_then(|p| p.task())
                .map(|key| key.id.as_str()),
            Mode::Direct { .. } => None,
        }
    }

    /// Which run of the task this is: 1 for the first (and for a synchronous call); more
    /// when an at-least-once tool's earlier run lost its worker and the task was run again
    /// (see [`ToolDef::delivery`](crate::ToolDef::delivery)). A tool may use it to pick up
    /// where a lost run left off, or to avoid repeating an effect.
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// Cancelled when the caller cancels (`tasks/cancel`, `notifications/cancelled`), the
    /// task's TTL runs out, or the server shuts down. A tool that polls it can stop early.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// The capabilities the client declared on this request (MCP 2026-07-28; for a task,
    /// on the request that created it, wherever the task runs; in a 2025-11-25 session,
    /// what its `initialize` declared); `None` when unknown. A tool that needs one the
    /// client did not declare answers
    /// [`ToolError::missing_capability`].
    pub fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        self.inner.client_capabilities.as_ref()
    }

    /// The earlier tasks the request named as related (the tasks extension draft's
    /// `io.modelcontextprotocol/relatedTaskIds`; for a task, its creating request's):
    /// each one the caller's own and unexpired when the request came, else the request
    /// was refused. Advisory: what a relation means is the tool's to say.
    pub fn related_tasks(&self) -> &[String] {
        &self.inner.related_tasks
    }

    /// The authenticated principal that called (for a task: that created it), e.g.
    /// `"{iss}#{sub}"` for an OAuth access token; `None` for an anonymous caller, a
    /// 2025-11-25 session opened without credentials, and stdio.
    pub fn principal(&self) -> Option<&str> {
        self.inner.identity.as_ref().map(|i| i.principal.as_str())
    }

    /// The scopes the caller's credentials grant (for a task: those of the request that
    /// created it); empty without credentials or with a static token.
    pub fn scopes(&self) -> &BTreeSet<String> {
        static NONE: BTreeSet<String> = BTreeSet::new();
        self.inner.identity.as_ref().map_or(&NONE, |i| &i.scopes)
    }

    /// Whether the caller's credentials grant `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes().contains(scope)
    }

    /// Reports progress to the caller: `notifications/progress` with the request's
    /// `_meta.progressToken`, in a synchronous call whose request carries one (MCP
    /// 2026-07-28: on the request's response stream; 2025-11-25: on the request's stream
    /// in the session). `progress` should grow with each call. Does nothing otherwise,
    /// and **does nothing in a task** (a task reports through [`status`](Self::status)).
    /// A notification that cannot be delivered is dropped: progress is advisory.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if self.is_task() {
            return;
        }
        self.inner.report.progress(progress, total, message).await;
    }

    /// Sends a log message (`notifications/message`) to the caller of a synchronous call:
    /// in a 2025-11-25 session when `level` is at or above the session's level
    /// (`logging/setLevel`; every level before it is set); in MCP 2026-07-28 only when the
    /// request's `_meta` carries `io.modelcontextprotocol/logLevel`, at or above it. Does
    /// nothing in a task. Undeliverable messages are dropped.
    pub async fn log(&self, level: LoggingLevel, data: impl Into<Value>) {
        if self.is_task() {
            return;
        }
        self.inner.report.log(level, None, data.into()).await;
    }

    /// Asks the user for input through the client (`elicitation/create`).
    pub async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ToolError> {
        self.ask::<Elicit>(None, params).await
    }

    /// [`elicit`](Self::elicit) under the input key `key` (the `inputRequests` /
    /// `inputResponses` key of MCP 2026-07-28) instead of a generated one. Keys must be
    /// unique within a call. A task's keys are unique for its whole life, so when an
    /// at-least-once task runs again ([`attempt`](Self::attempt) 2 and on) its keys are
    /// asked as `{key}-r{attempt}`: the client answers the new question, never the lost
    /// run's.
    pub async fn elicit_keyed(
        &self,
        key: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ToolError> {
        self.ask::<Elicit>(Some(key), params).await
    }

    /// [`sample`](Self::sample) under the input key `key` (see
    /// [`elicit_keyed`](Self::elicit_keyed)).
    pub async fn sample_keyed(
        &self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ToolError> {
        self.ask::<CreateMessage>(Some(key), params).await
    }

    /// [`list_roots`](Self::list_roots) under the input key `key` (see
    /// [`elicit_keyed`](Self::elicit_keyed)).
    pub async fn list_roots_keyed(&self, key: &str) -> Result<ListRootsResult, ToolError> {
        self.ask::<ListRoots>(Some(key), None).await
    }

    /// Asks the user several questions at once: in a task they are all outstanding
    /// together (one `tasks/get` shows every one), and the answers come back in order.
    pub async fn elicit_all(
        &self,
        all: Vec<ElicitRequestParams>,
    ) -> Result<Vec<ElicitResult>, ToolError> {
        self.ask_all::<Elicit>(all.into_iter().map(|p| (None, p)).collect())
            .await
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ToolError> {
        self.ask::<CreateMessage>(None, params).await
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<ListRootsResult, ToolError> {
        self.ask::<ListRoots>(None, None).await
    }

    /// Sets the task's status message (the one progress channel tasks have; render
    /// structured progress into the text). Does nothing in a synchronous call.
    /// In a call that may become a task at its deadline, the message is kept until then:
    /// the task starts with it.
    pub async fn status(&self, message: impl Into<String>) -> Result<(), ToolError> {
        let task = match &self.inner.mode {
            Mode::Task(task) => task.clone(),
            Mode::Rounds {
                promotion: Some(promotion),
                ..
            } => {
                let mut phase = promotion.phase().await;
                match &mut *phase {
                    Phase::Call { status } => {
                        *status = Some(message.into());
                        return Ok(());
                    }
                    Phase::Ending => return Ok(()),
                    Phase::Task(task) => task.clone(),
                }
            }
            Mode::Rounds { .. } | Mode::Direct { .. } => return Ok(()),
        };
        let message = message.into();
        let TaskBinding { store, key, .. } = &task;
        while_transient(
            &self.inner.cancel,
            "setting a task's status message",
            || store.set_status_message(&key.owner, &key.id, Some(message.clone())),
        )
        .await
        .map_err(store_error)?;
        crate::telemetry::task_event!(
            status_message = crate::telemetry::bounded(&message),
            "task status message"
        );
        Ok(())
    }

    /// Appends text output of the tool to its task's event log ([`mcp_tasks::log::kinds::TEXT`],
    /// payload `{"text"}`): what `tasks/stream` readers see as it is written (a build
    /// log, a progress tail). Returns the event's `seq`; `None` in a synchronous call or
    /// on a store that keeps no task logs (the text then goes nowhere). A text past the
    /// store's [`max_log_entry_bytes`](mcp_tasks::Limits::max_log_entry_bytes) is refused
    /// with -32602, and nothing is written.
    pub async fn emit_text(&self, text: impl Into<String>) -> Result<Option<u64>, ToolError> {
        self.emit_draft(mcp_tasks::LogDraft::text(text)).await
    }

    /// Appends an event of the tool's own `kind` with `payload` to its task's event log,
    /// as [`emit_text`](Self::emit_text) does. `kind` needs a vendor prefix of the tool's
    /// own (`com.example.build.stage`; unprefixed types and the spec's prefixes are
    /// refused with -32602), and the event is bounded in size like a text.
    pub async fn emit(
        &self,
        kind: impl Into<String>,
        payload: mcp_tasks_protocol::JsonObject,
    ) -> Result<Option<u64>, ToolError> {
        self.emit_draft(mcp_tasks::LogDraft::new(kind, payload))
            .await
    }

    async fn emit_draft(&self, draft: mcp_tasks::LogDraft) -> Result<Option<u64>, ToolError> {
        let task = match &self.inner.mode {
            Mode::Task(task) => task.clone(),
            Mode::Rounds {
                promotion: Some(promotion),
                ..
            } => match &*promotion.phase().await {
                Phase::Task(task) => task.clone(),
                Phase::Call { .. } | Phase::Ending => return Ok(None),
            },
            Mode::Rounds { .. } | Mode::Direct { .. } => return Ok(None),
        };
        let TaskBinding { store, key, .. } = &task;
        if !store.keeps_logs() {
            return Ok(None);
        }
        let seq = while_transient(&self.inner.cancel, "appending to a task's log", || {
            store.append_log(&key.owner, &key.id, vec![draft.clone()])
        })
        .await
        .map_err(|e| match e {
            StoreError::LimitExceeded { .. } | StoreError::InvalidLogType { .. } => {
                ToolError::rpc(error_codes::INVALID_PARAMS, e.to_string())
            }
            other => store_error(other),
        })?;
        Ok(Some(seq))
    }

    /// The input requests this round could not answer (synchronous calls).
    pub(crate) fn wanted(&self) -> BTreeMap<String, Value> {
        match &self.inner.mode {
            Mode::Rounds { wanted, .. } => wanted.lock().map(|w| w.clone()).unwrap_or_default(),
            Mode::Task(_) | Mode::Direct { .. } => BTreeMap::new(),
        }
    }

    async fn ask<M: Request>(
        &self,
        key: Option<&str>,
        params: M::Params,
    ) -> Result<M::Result, ToolError> {
        let mut answers = self
            .ask_all::<M>(vec![(key.map(str::to_owned), params)])
            .await?;
        answers
            .pop()
            .ok_or_else(|| ToolError::rpc(error_codes::INTERNAL_ERROR, "no answer"))
    }

    /// Asks every request of `all` at once (each under its own key, or a generated one);
    /// answers in the same order.
    async fn ask_all<M: Request>(
        &self,
        all: Vec<(Option<String>, M::Params)>,
    ) -> Result<Vec<M::Result>, ToolError> {
        let mut calls = Vec::with_capacity(all.len());
        for (key, params) in all {
            let n = self.inner.asked.fetch_add(1, Ordering::Relaxed) + 1;
            let call = serde_json::to_value(MethodCall::<M>::new(params)).map_err(|e| {
                ToolError::rpc(
                    error_codes::INTERNAL_ERROR,
                    format!("cannot encode {}: {e}", M::METHOD),
                )
            })?;
            calls.push((key, n, call));
        }
        let answers = match &self.inner.mode {
            Mode::Rounds {
                answers,
                wanted,
                promotion,
            } => {
                // A promotable call decides under its phase lock: a task asks the task's
                // way; a call that cannot answer ends the round and is no longer
                // promotable.
                let mut phase = match promotion {
                    Some(promotion) => Some(promotion.phase().await),
                    None => None,
                };
                if let Some(Phase::Task(task)) = phase.as_deref() {
                    let task = task.clone();
                    drop(phase);
                    self.ask_in_task(&task, calls).await?
                } else {
                    let mut got = Vec::with_capacity(calls.len());
                    let mut missing = false;
                    for (key, n, call) in calls {
                        let key = key.unwrap_or_else(|| format!("mrtr-{n}"));
                        match answers.get(&key) {
                            Some(answer) => got.push(answer.clone()),
                            None => {
                                missing = true;
                                if let Ok(mut w) = wanted.lock() {
                                    w.insert(key, call);
                                }
                            }
                        }
                    }
                    if missing {
                        if let Some(phase) = phase.as_deref_mut() {
                            *phase = Phase::Ending;
                        }
                        return Err(ToolError::InputRequired);
                    }
                    got
                }
            }
            Mode::Direct { peer } => self.ask_directly::<M>(peer, calls).await?,
            Mode::Task(task) => self.ask_in_task(task, calls).await?,
        };
        answers
            .into_iter()
            .map(|answer| {
                serde_json::from_value(answer).map_err(|e| {
                    ToolError::rpc(
                        error_codes::INVALID_PARAMS,
                        format!("The answer to {} has the wrong shape: {e}", M::METHOD),
                    )
                })
            })
            .collect()
    }
}
