//! How a tool's questions reach the client outside MRTR rounds: directly, as
//! server->client requests on the call's own stream (a synchronous MCP 2025-11-25 call),
//! or as the input requests of its task, answered through the store.

use std::collections::BTreeMap;

use mcp_tasks::{StoreError, TaskKey, TaskStore};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::Peer;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use serde_json::Value;
use tokio::sync::Notify;

use super::promotion::TaskBinding;
use super::{INPUT_RECHECK, ToolContext, ToolError, store_error};
use crate::asking::{ClientHosts, ask_as_task};
use crate::retry::{Backoff, while_transient};

/// One question: its key (when the tool named one), its number in the call, and the
/// request as sent.
pub(super) type Question = (Option<String>, u32, Value);

impl ToolContext {
    /// Asks each question of `calls` through `peer`, in turn, and answers in order.
    pub(super) async fn ask_directly<M: mcp_tasks_protocol::method::Request>(
        &self,
        peer: &Peer,
        calls: Vec<Question>,
    ) -> Result<Vec<Value>, ToolError> {
        // A client that hosts this kind of request as a task (its `initialize` declared
        // `tasks.requests`) is asked as one; the call's cancellation cancels the client's
        // task.
        let hosts = self
            .inner
            .client_capabilities
            .as_ref()
            .and_then(|c| serde_json::to_value(c).ok())
            .map(|c| ClientHosts::of(&c))
            .unwrap_or_default();
        let mut got = Vec::with_capacity(calls.len());
        for (_, _, call) in calls {
            let params = call.get("params").cloned().unwrap_or(Value::Null);
            let raw = serde_json::value::to_raw_value(&params)
                .map_err(|e| ToolError::rpc(error_codes::INTERNAL_ERROR, e.to_string()))?;
            let answer = if hosts.hosts(M::METHOD) {
                let params = match params {
                    Value::Object(params) => params,
                    _ => JsonObject::new(),
                };
                let cancel = &self.inner.cancel;
                match ask_as_task(peer, M::METHOD, params, hosts, cancel, None).await {
                    Err(_) if cancel.is_cancelled() => return Err(ToolError::Cancelled),
                    other => other.map_err(|e| ToolError::Rpc(ErrorObject::from(e)))?,
                }
            } else {
                tokio::select! {
                    _ = self.inner.cancel.cancelled() => return Err(ToolError::Cancelled),
                    r = peer.request_raw(M::METHOD, Some(&raw)) => r.map_err(|e| ToolError::Rpc(ErrorObject::from(e)))?,
                }
            };
            let answer = serde_json::from_str(answer.get())
                .map_err(|e| ToolError::rpc(error_codes::INTERNAL_ERROR, e.to_string()))?;
            got.push(answer);
        }
        Ok(got)
    }

    /// Asks every question of `calls` at once as input requests of `task`, then waits for
    /// each answer in turn.
    pub(super) async fn ask_in_task(
        &self,
        task: &TaskBinding,
        calls: Vec<Question>,
    ) -> Result<Vec<Value>, ToolError> {
        let TaskBinding { store, key, wake } = task;
        let keys: Vec<String> = calls
            .iter()
            // Keys are unique for the task's whole life: a later run asks anew, under its
            // own keys marked with the run.
            .map(|(key, n, _)| match (key, self.inner.attempt) {
                (Some(key), 0 | 1) => key.clone(),
                (Some(key), run) => format!("{key}-r{run}"),
                (None, 0 | 1) => format!("input-{n}"),
                (None, run) => format!("input-r{run}-{n}"),
            })
            .collect();
        let requests: BTreeMap<String, Value> = keys
            .iter()
            .cloned()
            .zip(calls.into_iter().map(|(_, _, call)| call))
            .collect();
        // A retry after a lost reply may find its own keys already there: that attempt
        // landed.
        let mut retried = false;
        let asked = while_transient(&self.inner.cancel, "asking a task's input", || {
            let attempt = store.request_input(&key.owner, &key.id, requests.clone());
            let again = std::mem::replace(&mut retried, true);
            async move {
                match attempt.await {
                    Err(StoreError::InputKeyReused { .. }) if again => Ok(()),
                    other => other.map(drop),
                }
            }
        })
        .await;
        asked.map_err(store_error)?;
        crate::telemetry::task_event!(keys = ?keys, "input requested");
        crate::telemetry::task_event!(status = "input_required", "task status");
        let asked_at = std::time::Instant::now();
        let mut got = Vec::with_capacity(keys.len());
        for input_key in &keys {
            got.push(self.wait_for(store.as_ref(), key, wake, input_key).await?);
        }
        crate::telemetry::task_event!(keys = ?keys, "input answered");
        crate::telemetry::task_event!(status = "working", "task status");
        crate::telemetry::input_waited(asked_at.elapsed());
        Ok(got)
    }

    async fn wait_for(
        &self,
        store: &dyn TaskStore,
        key: &TaskKey,
        wake: &Notify,
        input_key: &str,
    ) -> Result<Value, ToolError> {
        let mut backoff = Backoff::default();
        loop {
            // Register for the wake-up before looking, so an answer arriving in between
            // is not missed.
            let notified = wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // While the store is unavailable, look again after a backoff: the answer
            // waits in the store, and the lease decides how long the tool may wait.
            let unavailable = match store
                .take_input_response(&key.owner, &key.id, input_key)
                .await
            {
                Ok(Some(answer)) => return Ok(answer),
                Ok(None) => false,
                Err(e) if e.is_transient() => {
                    tracing::debug!(error = %e, "store unavailable while waiting for input; looking again");
                    true
                }
                Err(e) => return Err(store_error(e)),
            };
            let pause = async {
                if unavailable {
                    backoff.wait().await;
                } else {
                    backoff = Backoff::default();
                    tokio::time::sleep(INPUT_RECHECK).await;
                }
            };
            tokio::select! {
                _ = self.inner.cancel.cancelled() => return Err(ToolError::Cancelled),
                _ = &mut notified => {}
                _ = pause => {}
            }
        }
    }
}
