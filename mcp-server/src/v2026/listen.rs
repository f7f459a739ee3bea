//! `subscriptions/listen` on the 2026-07-28 wire: acknowledged tasks pushed as
//! `notifications/tasks` on every change, resynced after a lag or a store failure; and
//! acknowledged resource URIs (`resourceSubscriptions`) pushed as
//! `notifications/resources/updated` when the application announces a change.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use jsonrpsee::Extensions;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::{Peer, RequestContext};
use mcp_tasks_protocol::jsonrpc::{ErrorObject, RequestId};
use mcp_tasks_protocol::tasks::{
    TaskStatusChanged, TaskStatusNotificationParams, TaskSubscriptionNotifications,
};
use mcp_tasks_protocol::v2026::{
    self, NotificationMeta, ResourceUpdated, ResourceUpdatedNotificationParams,
    SubscriptionsAcknowledged, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenResult, SubscriptionsListenResultMeta,
};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::{require_tasks, task_id};
use crate::errors::ServerError;
use crate::revision::Caller;
use crate::runtime::TaskWatch;
use crate::state::State;
use crate::views;

/// `subscriptions/listen` with `taskIds`: acknowledges the tasks the caller may follow,
/// sends each one's current state, then a `notifications/tasks` on every change, until
/// the client goes away or the server shuts down.
pub(crate) async fn listen(
    state: Arc<State>,
    params: v2026::SubscriptionsListenRequestParams,
    ext: Extensions,
) -> Result<SubscriptionsListenResult, ServerError> {
    let caller = Caller::from_extensions(&ext);
    let peer = ext
        .get::<Peer>()
        .cloned()
        .ok_or_else(|| ServerError::Internal("no peer".to_owned()))?;
    let request = RequestContext::from_extensions(&ext)
        .cloned()
        .ok_or_else(|| ServerError::Internal("no request context".to_owned()))?;
    let wanted = TaskSubscriptionNotifications::from_filter(&params.notifications);
    if wanted.is_some() {
        require_tasks(&caller)?;
    }
    let Some(_slot) = state.subscriptions.acquire(&caller.owner) else {
        return Err(ServerError::TooManySubscriptions(
            state.subscriptions.limit(),
        ));
    };
    let wanted = wanted.unwrap_or_default();
    // Watch before reading, so no change between the read and the stream is lost.
    let events = state
        .runtime
        .watch_tasks(wanted.iter().map(|id| mcp_tasks::TaskKey {
            owner: caller.owner.clone(),
            id: task_id(id),
        }));
    let served = existing_tasks(&state, &caller, wanted).await;
    let uris = known_uris(&state, &params);
    let changed_uris = state.resource_feed.subscribe();
    let subscription_id = request.id.clone();
    acknowledge(&peer, &params, &served, &uris, &subscription_id).await?;
    let mut stream = Listening {
        state: &state,
        peer: &peer,
        caller: &caller,
        subscription_id: &subscription_id,
        served: served.into_iter().collect(),
        uris,
        pushed: HashMap::new(),
    };
    stream.run(events, changed_uris, &request.cancel).await?;
    let meta = SubscriptionsListenResultMeta {
        subscription_id,
        server_info: Some(state.info.clone()),
        extra: JsonObject::new(),
    };
    Ok(SubscriptionsListenResult::new(meta))
}

/// The tasks of `wanted` that exist (and are the caller's): those the stream serves.
async fn existing_tasks(state: &State, caller: &Caller, wanted: Vec<String>) -> Vec<String> {
    let mut served = Vec::new();
    for id in wanted {
        if state.store.get(&caller.owner, &task_id(&id)).await.is_ok() {
            served.push(id);
        }
    }
    served
}

/// The resource URIs asked for that this server has (none unless it offers resources).
fn known_uris(state: &State, params: &v2026::SubscriptionsListenRequestParams) -> HashSet<String> {
    params
        .notifications
        .resource_subscriptions
        .iter()
        .flatten()
        .filter(|uri| state.catalog.knows(uri))
        .cloned()
        .collect()
}

/// `notifications/subscriptions/acknowledged`: what the stream serves.
async fn acknowledge(
    peer: &Peer,
    params: &v2026::SubscriptionsListenRequestParams,
    served: &[String],
    uris: &HashSet<String>,
    subscription_id: &RequestId,
) -> Result<(), ErrorObject> {
    let mut ack = v2026::SubscriptionFilter::default();
    TaskSubscriptionNotifications::set_on_filter(&mut ack, served);
    if params.notifications.resource_subscriptions.is_some() {
        ack.resource_subscriptions = Some(uris.iter().cloned().collect());
    }
    let ack = SubscriptionsAcknowledgedNotificationParams {
        notifications: ack,
        meta: Some(notification_meta(subscription_id)),
        extra: JsonObject::new(),
    };
    peer.notify::<SubscriptionsAcknowledged>(&ack)
        .await
        .map_err(ErrorObject::from)
}

/// An acknowledged `subscriptions/listen` stream, pushing until the request or the
/// server ends.
struct Listening<'a> {
    state: &'a State,
    peer: &'a Peer,
    caller: &'a Caller,
    subscription_id: &'a RequestId,
    served: HashSet<String>,
    uris: HashSet<String>,
    /// The revision of each task last pushed: a change heard twice (from its writer and
    /// from the feed, or again in a resync) is pushed once.
    pushed: HashMap<String, u64>,
}

impl Listening<'_> {
    /// Pushes every change of the served tasks and resources until `cancel` or shutdown.
    async fn run(
        &mut self,
        mut events: TaskWatch,
        mut changed_uris: broadcast::Receiver<String>,
        cancel: &CancellationToken,
    ) -> Result<(), ErrorObject> {
        // Set when an event was lost or a record could not be read (the store was
        // unavailable): every served task is pushed again, after a backoff while it fails.
        let mut resync = true;
        let mut backoff = crate::retry::Backoff::default();
        loop {
            if resync {
                resync = !self.push_all().await?;
                if !resync {
                    backoff = crate::retry::Backoff::default();
                }
            }
            let event = tokio::select! {
                _ = self.state.shutdown.cancelled() => break,
                _ = cancel.cancelled() => break,
                e = events.recv() => Some(e),
                _ = backoff.wait(), if resync => None,
                changed = changed_uris.recv(), if !self.uris.is_empty() => {
                    self.push_resources(changed).await?;
                    None
                }
            };
            match event {
                Some(Ok(mcp_tasks::TaskEvent::Changed { key, .. }))
                    if self.served.contains(key.id.as_str()) =>
                {
                    resync |= !self.push_task(key.id.as_str()).await?;
                }
                Some(Ok(_)) | None => {}
                Some(Err(mcp_tasks::EventError::Lagged(_))) => resync = true,
                Some(Err(mcp_tasks::EventError::Closed)) => break,
            }
        }
        Ok(())
    }

    /// Pushes every served task; `false` when some could not be read.
    async fn push_all(&mut self) -> Result<bool, ErrorObject> {
        let mut all = true;
        let served: Vec<String> = self.served.iter().cloned().collect();
        for id in &served {
            all &= self.push_task(id).await?;
        }
        Ok(all)
    }

    /// Tells the client which of its resources changed (all of them after a lag).
    async fn push_resources(
        &self,
        changed: Result<String, broadcast::error::RecvError>,
    ) -> Result<(), ErrorObject> {
        let changed: Vec<&String> = match &changed {
            Ok(uri) => self.uris.get(uri).into_iter().collect(),
            // Missed some: any of them may have changed.
            Err(broadcast::error::RecvError::Lagged(_)) => self.uris.iter().collect(),
            Err(broadcast::error::RecvError::Closed) => Vec::new(),
        };
        for uri in changed {
            push_resource(self.peer, uri, self.subscription_id).await?;
        }
        Ok(())
    }

    /// [`push_task`] of this stream.
    async fn push_task(&mut self, id: &str) -> Result<bool, ErrorObject> {
        push_task(
            self.state,
            self.peer,
            self.caller,
            id,
            self.subscription_id,
            &mut self.pushed,
        )
        .await
    }
}

fn notification_meta(subscription_id: &RequestId) -> NotificationMeta {
    NotificationMeta {
        subscription_id: Some(subscription_id.clone()),
        ..NotificationMeta::default()
    }
}

/// Tells the client that `uri` changed.
async fn push_resource(
    peer: &Peer,
    uri: &str,
    subscription_id: &RequestId,
) -> Result<(), ErrorObject> {
    let mut params = ResourceUpdatedNotificationParams::new(uri);
    params.meta = Some(notification_meta(subscription_id));
    peer.notify::<ResourceUpdated>(&params)
        .await
        .map_err(ErrorObject::from)
}

/// Pushes the task's current state, unless `pushed` says that revision went out already.
/// `false`: the store was unavailable, nothing was sent (push it again later).
async fn push_task(
    state: &State,
    peer: &Peer,
    caller: &Caller,
    id: &str,
    subscription_id: &RequestId,
    pushed: &mut HashMap<String, u64>,
) -> Result<bool, ErrorObject> {
    let record = match state.store.get(&caller.owner, &task_id(id)).await {
        Ok(record) => record,
        Err(e) => return Ok(!e.is_transient()),
    };
    if pushed.get(id) == Some(&record.revision) {
        return Ok(true);
    }
    pushed.insert(id.to_owned(), record.revision);
    let params = TaskStatusNotificationParams {
        task: views::detailed(record),
        meta: Some(notification_meta(subscription_id)),
    };
    peer.notify::<TaskStatusChanged>(&params)
        .await
        .map_err(ErrorObject::from)?;
    Ok(true)
}
