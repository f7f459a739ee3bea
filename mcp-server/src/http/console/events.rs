//! `GET /console/api/events`: the store's change feed ([`TaskStore::events`]) as an event
//! stream. Each change becomes `event: task` with the task's [`TaskSummary`] read again
//! from the store (events are wake-ups, the record is the truth); changes that arrive
//! together are read once per task. On a shared store the feed carries every instance's
//! changes, so the console of one node sees tasks of all. When events were missed (the
//! subscriber lagged, the backend's feed reconnected, or a read failed) the stream sends
//! `event: resync` with `{}`: the page reloads its list and counts. Keep-alive comments
//! keep it open; it ends after [`HttpConfig::sse_max_lifetime`](crate::http::HttpConfig::sse_max_lifetime)
//! (the page reconnects), so a revoked credential stops it then at the latest, or with
//! the server's shutdown.
//!
//! [`TaskStore::events`]: mcp_tasks::TaskStore::events

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use axum::response::sse::Event;
use futures::StreamExt as _;
use mcp_tasks::{EventError, EventStream, StoreError, TaskKey, TaskStore};

use super::Console;
use super::views::TaskSummary;

/// Changes read together at most: a burst beyond it is read in several rounds.
const BATCH: usize = 256;

/// The handler.
pub(super) async fn handle(State(console): State<Arc<Console>>) -> Response {
    let feed = Feed {
        events: console.store.events(),
        store: Arc::clone(&console.store),
        ready: VecDeque::new(),
    };
    let stream = futures::stream::unfold(feed, |mut feed| async move {
        let event = feed.next().await?;
        Some((Ok::<Event, Infallible>(event), feed))
    })
    .take_until(console.shutdown.clone().cancelled_owned());
    crate::http::gate::sse_for(console.http.sse_max_lifetime, stream)
}

/// The store's feed, turned into console events.
struct Feed {
    events: EventStream,
    store: Arc<dyn TaskStore>,
    ready: VecDeque<Event>,
}

impl Feed {
    /// The next event to send; `None` once the store's feed is closed.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            let first = self.events.recv().await;
            let mut keys: Vec<TaskKey> = Vec::new();
            let mut resync = false;
            let mut item = Some(first);
            while let Some(next) = item.take() {
                match next {
                    Ok(event) => {
                        if !keys.contains(event.key()) {
                            keys.push(event.key().clone());
                        }
                    }
                    Err(EventError::Lagged(_)) => resync = true,
                    Err(EventError::Closed) if keys.is_empty() && !resync => return None,
                    // Closed: what came before is sent; the next `recv` ends the stream.
                    Err(EventError::Closed) => break,
                }
                if keys.len() < BATCH {
                    item = self.events.try_recv();
                }
            }
            for key in keys {
                match self.store.get(&key.owner, &key.id).await {
                    Ok(record) => self.ready.push_back(task_event(&TaskSummary::of(&record))),
                    // Expired or swept since: nothing to show.
                    Err(StoreError::NotFound) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, task_id = %key.id, "console: a changed task could not be read");
                        resync = true;
                    }
                }
            }
            if resync {
                self.ready
                    .push_back(Event::default().event("resync").data("{}"));
            }
        }
    }
}

fn task_event(summary: &TaskSummary) -> Event {
    let data = serde_json::to_string(summary).unwrap_or_else(|_| "{}".to_owned());
    Event::default().event("task").data(data)
}
