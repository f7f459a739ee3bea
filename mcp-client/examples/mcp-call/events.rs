//! A task's events shown live on stderr ([`show_events`]), above the status line: a
//! tool's text output as its lines, any other event of the tool as its type and payload;
//! the store's own entries (status, input asked and answered, claims) are left to the
//! status line and the questions.
//!
//! Invariant: an event line is written like the server's log lines (held back while a
//! question waits, never over the status line); the events are read again from the
//! earliest kept at most [`GONE_RESTARTS`] times after `events_gone`.

use futures::StreamExt;
use mcp_tasks_client::{ClientError, McpClient, TaskEvent};

use super::console::{clear_line, task_event};

/// Event types the status line (or a question) already shows.
const SHOWN_ELSEWHERE: [&str; 4] = [
    "rs.mcp-tasks.status",
    "rs.mcp-tasks.input",
    "rs.mcp-tasks.answer",
    "rs.mcp-tasks.claim",
];

/// How many times the events are read on from the earliest kept after `events_gone`.
const GONE_RESTARTS: u32 = 3;

/// The line an event is shown as; `None` for what the status line shows.
pub(crate) fn event_line(event: &TaskEvent) -> Option<String> {
    if let Some(text) = event.text() {
        return Some(text.to_owned());
    }
    if SHOWN_ELSEWHERE.contains(&event.kind.as_str()) {
        return None;
    }
    let payload = serde_json::to_string(&event.payload).unwrap_or_default();
    Some(format!("{} {payload}", event.kind))
}

/// Shows the events of `task_id` as they arrive, until the task ended and its last
/// event was shown. `forced` (`--events`): a server without event streams is said to
/// be one; otherwise (shown because the server advertises them) that stays silent.
pub(crate) async fn show_events(client: McpClient, task_id: String, forced: bool) {
    let mut after = None;
    let mut restarts = 0;
    loop {
        let mut events = client.task_events(task_id.clone(), after);
        let failed = loop {
            match events.next().await {
                Some(Ok(event)) => {
                    if let Some(line) = event_line(&event) {
                        task_event(&line);
                    }
                }
                Some(Err(e)) => break e,
                None => return,
            }
        };
        match failed {
            ClientError::EventsGone { earliest_seq, .. } if restarts < GONE_RESTARTS => {
                restarts += 1;
                task_event(&format!(
                    "(task events before #{earliest_seq} are no longer kept by the server)"
                ));
                after = earliest_seq.checked_sub(1);
            }
            ClientError::EventStreamsUnsupported(_) if !forced => return,
            e => {
                eprintln!("{}mcp-call: task events: {e}", clear_line());
                return;
            }
        }
    }
}
