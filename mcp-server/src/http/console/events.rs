//! `GET /console/api/events`: the store's change feed ([`TaskStore::events`]) as an event
//! stream. Each change becomes `event: task` with the task's [`TaskSummary`] as the store
//! holds it after the change (events are wake-ups, the record is the truth). On a shared
//! store the feed carries every instance's changes, so the console of one node sees tasks
//! of all. When events were missed (this stream fell behind, the store's feed lagged or
//! reconnected, or a read failed) the stream sends `event: resync` with `{}`: the page
//! reloads its list and counts. Keep-alive comments keep it open; it ends after
//! [`HttpConfig::sse_max_lifetime`](crate::http::HttpConfig::sse_max_lifetime) (the page
//! reconnects), so a revoked credential stops it then at the latest, or with the server's
//! shutdown.
//!
//! The streams of a server share one reader of the store (`fanout.rs`): a change is read
//! once, whatever the number of streams. Past [`ConsoleConfig::max_streams_per_operator`]
//! or [`ConsoleConfig::max_streams`] open streams, one more is refused with 429 (and
//! recorded on the audit trail); a stream's slot is freed when it ends.
//!
//! [`TaskStore::events`]: mcp_tasks::TaskStore::events
//! [`TaskSummary`]: super::views::TaskSummary
//! [`ConsoleConfig::max_streams_per_operator`]: super::ConsoleConfig::max_streams_per_operator
//! [`ConsoleConfig::max_streams`]: super::ConsoleConfig::max_streams

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;

use super::Console;
use super::access::Operator;
use super::error::ApiError;
use super::fanout::Update;
use super::trail::{self, Attempt, Reason};

/// The handler.
pub(super) async fn handle(
    State(console): State<Arc<Console>>,
    Extension(Operator(operator)): Extension<Operator>,
    attempt: Attempt,
) -> Response {
    let subscription = match console.streams.open(&operator) {
        Ok(subscription) => subscription,
        Err(full) => {
            let response = ApiError::TooManyStreams(full.to_string()).into_response();
            trail::refused(&attempt, response.status(), Reason::TooManyStreams, None);
            return response;
        }
    };
    trail::streamed(&operator);
    let ended = subscription.ended();
    let stream = futures::stream::unfold(subscription, |mut subscription| async move {
        let event = match subscription.next().await? {
            Update::Task(json) => Event::default().event("task").data(&*json),
            Update::Resync => Event::default().event("resync").data("{}"),
        };
        Some((Ok::<Event, Infallible>(event), subscription))
    })
    .take_until(ended.cancelled_owned())
    .take_until(console.shutdown.clone().cancelled_owned());
    crate::http::gate::sse_for(console.http.sse_max_lifetime, stream)
}
