//! Input and status outside a request, for MCP 2025-11-25 sessions: a task's input
//! requests asked as server->client requests (on a pending `tasks/result` stream or the
//! session's standalone stream) with the answers written to the store (the watcher that
//! sends `notifications/tasks/status` and asks them on the standalone stream: `watcher.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::{EventError, SessionChange, StoreError, TaskId, TaskKey, TaskRecord};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::{Peer, PeerError};
use mcp_tasks_protocol::jsonrpc::RequestId;
use mcp_tasks_protocol::meta::RELATED_TASK;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::asking::{ClientHosts, ask_as_task};
use crate::retry::while_transient;
use crate::runtime::TaskRuntime;
use crate::session::McpSession;

/// The JSON-RPC id of every input request starts so: `mcp-input:{n}.{node}:{task}:{key}`,
/// `n` unique on the asking instance's connection and `node` a tag of that instance, so
/// that two instances asking the same question (one after the other's claim was given up)
/// do not use one id. Whichever instance the answer reaches knows which task and key it
/// answers (`answer_input`), not only the one that asked.
const INPUT_ID: &str = "mcp-input:";

/// How long a claim to ask a question holds on a shared store without a renewal: when
/// the asking instance dies, another asks it after this.
const CLAIM_LEASE: Duration = Duration::from_secs(15);

/// How long a question on the standalone stream waits for the client to name its task
/// in a request (`tasks/get`, its poll): twice the task's poll interval, within 1-10 s.
/// A client that read the question in the same breath as the `CreateTaskResult` may
/// handle the question first and not know the task yet (the official tasks client
/// library then answers "cancel"); one that polled the task surely knows it.
pub(super) fn known_hold(poll_interval_ms: Option<u64>) -> Duration {
    let twice = Duration::from_millis(poll_interval_ms.unwrap_or(1_000).saturating_mul(2));
    twice.clamp(Duration::from_secs(1), Duration::from_secs(10))
}

/// The id of an input request for `key` of `task`, asked by the instance `node`.
fn input_request_id(n: i64, node: &str, task: &TaskId, key: &str) -> RequestId {
    use std::hash::{Hash, Hasher};
    let mut tag = std::collections::hash_map::DefaultHasher::new();
    node.hash(&mut tag);
    let tag = tag.finish() as u32;
    RequestId::String(format!("{INPUT_ID}{n}.{tag:08x}:{}:{key}", task.as_str()))
}

/// The task and key an input request's id names, if it is one.
fn parse_input_request_id(id: &RequestId) -> Option<(TaskId, String)> {
    let RequestId::String(id) = id else {
        return None;
    };
    let rest = id.strip_prefix(INPUT_ID)?;
    let (n, rest) = rest.split_once(':')?;
    // `{n}.{node}`; `{n}` alone from builds before the node tag.
    let n = n.split_once('.').map_or(n, |(n, _)| n);
    let (task, key) = rest.split_once(':')?;
    (n.parse::<i64>().is_ok() && !task.is_empty())
        .then(|| (TaskId::from_wire(task), key.to_owned()))
}

/// The session record's name for the question `key` of `task`.
fn claim_marker(task: &TaskId, key: &str) -> String {
    format!("{}/{key}", task.as_str())
}

/// The answer to an input request that nobody waits for in this process: on a shared
/// store, another instance asked it (the client's answer reached this one through a load
/// balancer). An answer to an input request of one of `session`'s tasks goes into the
/// store, which wakes the tool and the asker wherever they run. Returns whether the
/// response was such an answer.
///
/// An error response answers nothing: as on one instance, the question is asked again.
/// Its asker is elsewhere and still waits, so its claim in the session's record is given
/// up here on its behalf; the asker sees its claim gone at its next renewal and stops
/// (see [`Asking::ask`]), and the question is asked again.
pub(crate) async fn answer_input(
    store: &Arc<dyn mcp_tasks::TaskStore>,
    session: &McpSession,
    id: &RequestId,
    outcome: Result<Box<serde_json::value::RawValue>, mcp_tasks_protocol::jsonrpc::ErrorObject>,
) -> Result<bool, StoreError> {
    let Some((task, key)) = parse_input_request_id(id) else {
        return Ok(false);
    };
    let Ok(answer) = outcome else {
        // Only a task of this session's owner: another session's question is not this
        // one's to give up (NotFound, refused like an answer to no request).
        store.get(&session.owner, &task).await?;
        tracing::debug!(%id, "an input request asked elsewhere was answered with an error; it is asked again");
        if let Some(sessions) = store.sessions().filter(|s| s.is_shared()) {
            let marker = claim_marker(&task, &key);
            let holder = sessions
                .session(&session.id)
                .await?
                .and_then(|record| record.asking.get(&marker).map(|c| c.by.clone()));
            if let Some(by) = holder {
                let change = SessionChange::ReleaseInput { marker, by };
                sessions.change_session(&session.id, change).await?;
            }
        }
        return Ok(true);
    };
    let Ok(answer) = serde_json::from_str::<Value>(answer.get()) else {
        tracing::warn!(%id, "client answered an input request with invalid JSON");
        return Ok(true);
    };
    let answers: BTreeMap<String, Value> = [(key, answer)].into();
    store.resolve_input(&session.owner, &task, answers).await?;
    Ok(true)
}

/// Asks the client, through `peer`, for every input request of `record` not being asked
/// already; each answer goes into the store, which wakes the tool.
///
/// `gone` is cancelled when the stream `peer` writes to ends (the client dropped its
/// `tasks/result` or its standalone stream). A question still unanswered then is
/// released, so that the next stream asks it again: without this it stayed marked as
/// being asked, and a later `tasks/result` waited without ever asking it.
///
/// On a shared store several instances may hold the session (one the standalone stream,
/// another a `tasks/result`): each question is asked by the one instance that claims it
/// in the session's record (renewed while it waits; released when it ends), and stops
/// being asked when the store shows it answered through another instance.
///
/// An answer that meets an unavailable store is retried until it is written (or `stop`,
/// the server's shutdown): the client gave it once and will not give it again.
pub(super) fn ask_pending(
    runtime: &TaskRuntime,
    session: &Arc<McpSession>,
    record: &TaskRecord,
    peer: &Peer,
    gone: &CancellationToken,
    stop: &CancellationToken,
) {
    for (key, request) in &record.input_requests {
        let marker = (record.id.clone(), key.clone());
        if !session
            .asking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(marker.clone())
        {
            continue;
        }
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut params = match request.get("params") {
            Some(Value::Object(p)) => p.clone(),
            _ => JsonObject::new(),
        };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => JsonObject::new(),
        };
        meta.insert(
            RELATED_TASK.to_owned(),
            serde_json::json!({ "taskId": record.id.as_str() }),
        );
        params.insert("_meta".to_owned(), Value::Object(meta));
        let asking = Asking {
            runtime: runtime.clone(),
            session: Arc::clone(session),
            peer: peer.clone(),
            key: key.clone(),
            owner: record.owner.clone(),
            marker,
            hold: known_hold(record.poll_interval_ms),
        };
        let (gone, stop) = (gone.clone(), stop.clone());
        tokio::spawn(async move { asking.ask(&method, params, gone, stop).await });
    }
}

/// One question of a task being asked of the client.
struct Asking {
    runtime: TaskRuntime,
    session: Arc<McpSession>,
    peer: Peer,
    key: String,
    owner: mcp_tasks::Owner,
    marker: (TaskId, String),
    /// How long to wait for the client to name the task first ([`known_hold`]).
    hold: Duration,
}

impl Asking {
    fn store(&self) -> &Arc<dyn mcp_tasks::TaskStore> {
        self.runtime.store()
    }

    /// The session store, when several instances may ask this session's questions.
    fn shared(&self) -> Option<&dyn mcp_tasks::SessionStore> {
        self.store().sessions().filter(|s| s.is_shared())
    }

    /// Claims the question (shared stores; always granted otherwise); `false` when
    /// another instance asks it, or the claim could not be written.
    async fn claim(&self) -> bool {
        let Some(sessions) = self.shared() else {
            return true;
        };
        let marker = claim_marker(&self.marker.0, &self.key);
        let change = SessionChange::ClaimInput {
            marker: marker.clone(),
            by: self.session.node.clone(),
            lease_ms: u64::try_from(CLAIM_LEASE.as_millis()).unwrap_or(u64::MAX),
        };
        match sessions.change_session(&self.session.id, change).await {
            Ok(Some(record)) => record
                .asking
                .get(&marker)
                .is_some_and(|c| c.by == self.session.node),
            Ok(None) => false,
            Err(e) => {
                tracing::debug!(error = %e, "could not claim an input request; asked later");
                false
            }
        }
    }

    /// Whether this instance still holds its claim (shared stores; always otherwise):
    /// `false` once another instance gave it up on its behalf (the client answered it
    /// with an error there) or it lapsed and another took it. A record it cannot read
    /// says yes (the claim is renewed, or lapses, as before).
    async fn still_claimed(&self) -> bool {
        let Some(sessions) = self.shared() else {
            return true;
        };
        let marker = claim_marker(&self.marker.0, &self.key);
        match sessions.session(&self.session.id).await {
            Ok(Some(record)) => record
                .asking
                .get(&marker)
                .is_some_and(|c| c.by == self.session.node),
            // The session ended: nobody to ask.
            Ok(None) => false,
            Err(_) => true,
        }
    }

    /// Gives the question up in the session's record (shared stores).
    async fn unclaim(&self) {
        let Some(sessions) = self.shared() else {
            return;
        };
        let change = SessionChange::ReleaseInput {
            marker: claim_marker(&self.marker.0, &self.key),
            by: self.session.node.clone(),
        };
        if let Err(e) = sessions.change_session(&self.session.id, change).await {
            tracing::debug!(error = %e, "could not release an input claim; it lapses");
        }
    }

    /// Whether the store no longer waits for this answer (answered through another
    /// instance, or the task ended). A store it cannot read says no.
    async fn settled(&self) -> bool {
        match self.store().get(&self.owner, &self.marker.0).await {
            Ok(record) => record.is_terminal() || !record.input_requests.contains_key(&self.key),
            Err(e) => !e.is_transient(),
        }
    }

    async fn ask(
        self,
        method: &str,
        params: JsonObject,
        gone: CancellationToken,
        stop: CancellationToken,
    ) {
        if !self.may_ask(&gone, &stop).await {
            return;
        }
        let Some(asked) = self.asked(method, params, &gone).await else {
            return;
        };
        self.keep_answer(asked, &stop).await;
    }

    /// Waits until the client shows it knows the task (at once from its `tasks/result`),
    /// then takes the claim to ask. `false`: not this one's to ask (the stream went away,
    /// the server stops, another instance asks it, or it was answered meanwhile).
    async fn may_ask(&self, gone: &CancellationToken, stop: &CancellationToken) -> bool {
        tokio::select! {
            _ = self.session.until_known(&self.marker.0, self.hold) => {}
            _ = gone.cancelled() => {
                release(&self.session, &self.marker);
                return false;
            }
            _ = stop.cancelled() => return false,
        }
        if !self.claim().await {
            // Another instance asks it; this one may ask again later (its stream or its
            // claim gone), without waking anyone now.
            forget(&self.session, &self.marker);
            return false;
        }
        // Another stream (another instance's `tasks/result`, or the standalone stream
        // through another instance) may have asked it and had it answered since this one
        // read the task: its asker writes the answer before it gives up its claim, and an
        // answer that reached a third instance is written there, so the claim just taken
        // shows it. Asking again would show the user the question twice.
        if self.settled().await {
            self.unclaim().await;
            forget(&self.session, &self.marker);
            return false;
        }
        true
    }

    /// Asks, and waits for the client's answer while renewing the claim and watching the
    /// task (answered elsewhere, or ended: the wait is given up). `None`: the stream went
    /// away unanswered, and the question was released to be asked again.
    async fn asked(
        &self,
        method: &str,
        params: JsonObject,
        gone: &CancellationToken,
    ) -> Option<Result<Box<RawValue>, PeerError>> {
        let raw = serde_json::value::to_raw_value(&params).ok();
        let id = input_request_id(
            self.peer.next_id(),
            &self.session.node,
            &self.marker.0,
            &self.key,
        );
        let mut events = self.runtime.watch_tasks([TaskKey {
            owner: self.owner.clone(),
            id: self.marker.0.clone(),
        }]);
        let mut events_open = true;
        // A client that hosts this kind of request as a task is asked as one, and its
        // task followed to the answer; stopping it cancels the client's task.
        let hosts = ClientHosts::of(&self.session.client.0);
        let as_task = hosts.hosts(method);
        let stop_client_task = CancellationToken::new();
        // Gives up the wait: the client's task is cancelled, or the request failed here.
        let give_up = |why: &str| {
            if as_task {
                stop_client_task.cancel();
            } else {
                self.peer.fail(&id, PeerError::Transport(why.to_owned()));
            }
        };
        // The client's task is cancelled on the standalone stream when there is one: this
        // question's stream (a `tasks/result`) ends with the task that asked.
        let standalone = self.session.standalone().map(|s| s.peer);
        let request = async {
            if as_task {
                let via = standalone.as_ref();
                ask_as_task(&self.peer, method, params, hosts, &stop_client_task, via).await
            } else {
                self.peer
                    .request_raw_as(id.clone(), method, raw.as_deref())
                    .await
            }
        };
        let mut request = std::pin::pin!(request);
        let mut renew = tokio::time::interval(CLAIM_LEASE / 3);
        renew.tick().await;
        loop {
            tokio::select! {
                answer = &mut request => return Some(answer),
                _ = gone.cancelled() => {
                    tracing::debug!("the stream of an input request ended unanswered; it will be asked again");
                    self.unclaim().await;
                    release(&self.session, &self.marker);
                    return None;
                }
                _ = renew.tick(), if self.shared().is_some() => {
                    // Claim lost (answered with an error through another instance, or
                    // lapsed and taken): stop waiting here; the question is asked again.
                    if !self.still_claimed().await || !self.claim().await {
                        tracing::debug!("lost the claim on an input request; it is asked again");
                        give_up("the input request's claim was lost");
                    }
                }
                event = events.recv(), if events_open => {
                    let ours = match &event {
                        Ok(e) => e.key().id == self.marker.0,
                        Err(EventError::Lagged(_)) => true,
                        Err(EventError::Closed) => {
                            events_open = false;
                            false
                        }
                    };
                    // Answered through another instance, or the task ended: nobody
                    // waits here any more.
                    if ours && self.settled().await {
                        give_up("answered through another instance");
                    }
                }
            }
        }
    }

    /// Writes the client's answer into the store and gives up the claim; a request not
    /// answered here is released to be asked again.
    async fn keep_answer(&self, asked: Result<Box<RawValue>, PeerError>, stop: &CancellationToken) {
        let answer = match asked {
            Ok(answer) => answer,
            Err(e) => {
                tracing::debug!(error = %e, "input request not answered here; it can be asked again");
                self.unclaim().await;
                release(&self.session, &self.marker);
                return;
            }
        };
        let answer = match serde_json::from_str::<Value>(answer.get()) {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(error = %e, "client answered an input request with invalid JSON");
                return;
            }
        };
        let answers: BTreeMap<String, Value> = [(self.key.clone(), answer)].into();
        let written = while_transient(stop, "writing an input answer", || {
            self.store()
                .resolve_input(&self.owner, &self.marker.0, answers.clone())
        })
        .await;
        match written {
            Ok(_) => {}
            Err(e) if e.is_transient() => {
                tracing::error!(task_id = %self.marker.0, error = %e, "shutting down with an input answer unwritten: the store stayed unavailable");
            }
            Err(e) => {
                tracing::debug!(error = %e, "answer arrived for a task that is gone");
            }
        }
        self.unclaim().await;
    }
}

/// Marks an input request as no longer being asked here, waking nobody.
fn forget(session: &McpSession, marker: &(TaskId, String)) {
    session
        .asking
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(marker);
}

/// Marks an input request as no longer being asked, and wakes pending `tasks/result`s.
fn release(session: &McpSession, marker: &(TaskId, String)) {
    forget(session, marker);
    session.released.notify_waiters();
}
