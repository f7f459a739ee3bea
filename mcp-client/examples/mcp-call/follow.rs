//! Following a task at the terminal until it ends or Ctrl-C cancels it ([`follow`]): its
//! status line (redrawn with a spinner on a terminal, one plain line per change
//! elsewhere), its events above it when they are shown, and the tool's result as printed
//! ([`render`]).
//!
//! Invariant: the status line is not redrawn while a question waits for its answer; a
//! first Ctrl-C cancels the task and waits for its end, a second stops waiting; the
//! events still on their way when the task ended are shown before the result, waited
//! for at most [`EVENTS_DRAIN`].

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_tasks_client::{ClientError, TaskHandle, TaskStatusView};
use mcp_tasks_protocol::v2026::CallToolResult;

use super::console::{PROMPTING, clear_line, on_terminal};

/// How long the events still on their way are waited for once the task ended.
const EVENTS_DRAIN: Duration = Duration::from_secs(5);

/// The task showing the events ([`show_events`](super::events::show_events)), stopped
/// when dropped.
pub(crate) struct Shown(tokio::task::JoinHandle<()>);

impl Shown {
    /// Shows the events `showing` prints, on a task of its own.
    pub(crate) fn start(showing: impl std::future::Future<Output = ()> + Send + 'static) -> Shown {
        Shown(tokio::spawn(showing))
    }

    /// Lets the events of a task that ended come out (bounded), then stops.
    async fn finish(mut self) {
        let _ = tokio::time::timeout(EVENTS_DRAIN, &mut self.0).await;
    }
}

impl Drop for Shown {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A tool's result as mcp-call prints it: its text content, `tool error: ` first when
/// the result is an error.
pub(crate) fn render(result: &CallToolResult) -> String {
    let texts: Vec<String> = result
        .content
        .iter()
        .map(|c| {
            serde_json::to_value(c)
                .ok()
                .and_then(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
                .unwrap_or_else(|| "[non-text content]".into())
        })
        .collect();
    let prefix = if result.is_error == Some(true) {
        "tool error: "
    } else {
        ""
    };
    let text = texts.join("\n");
    format!("{prefix}{}", super::console::visible(&text, true))
}

/// The status line of a task: its id, status and status message.
fn status_line(id: &str, task: Option<&TaskStatusView>) -> String {
    match task {
        Some(task) => {
            let message = task
                .status_message()
                .map(|m| format!(" — {}", super::console::visible(m, false)))
                .unwrap_or_default();
            format!("{id} {}{message}", task.status().as_str())
        }
        None => format!("{id} starting"),
    }
}

/// Follows `handle` until it ends or Ctrl-C cancels it: on a terminal one status line
/// redrawn with a spinner, elsewhere a plain line for each change; the events `shown`
/// prints come above it. `None` after Ctrl-C: the task was cancelled (or a second Ctrl-C
/// gave up waiting for that).
pub(crate) async fn follow(
    handle: TaskHandle,
    shown: Option<Shown>,
) -> Option<Result<CallToolResult, ClientError>> {
    let mut updates = handle.updates();
    let spinner = async {
        let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
        let mut i = 0;
        let mut last = String::new();
        loop {
            if PROMPTING.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(120)).await;
                continue;
            }
            let line = status_line(handle.id(), updates.borrow_and_update().as_ref());
            if on_terminal() {
                eprint!("\r\x1b[2K{} {line}", frames[i % frames.len()]);
            } else if line != last {
                eprintln!("{line}");
            }
            last = line;
            i += 1;
            tokio::time::sleep(Duration::from_millis(120)).await;
        }
    };
    // Ctrl-C first: its handler is installed when it is first polled, which must come
    // before the spinner's first status line (a Ctrl-C after that line is ours).
    tokio::select! {
        biased;
        _ = tokio::signal::ctrl_c() => {}
        r = handle.wait() => {
            eprint!("{}", clear_line());
            if let Some(shown) = shown {
                shown.finish().await;
            }
            return Some(r);
        }
        _ = spinner => unreachable!("the spinner never ends"),
    }
    // The events stop here: what the cancellation says, the lines below say.
    drop(shown);
    eprintln!(
        "{}Cancelling {} (Ctrl-C again to stop waiting)...",
        clear_line(),
        handle.id()
    );
    let cancel = async {
        handle.cancel().await?;
        handle.wait().await
    };
    tokio::select! {
        r = cancel => match r {
            Err(ClientError::TaskCancelled { .. }) => eprintln!("{} cancelled", handle.id()),
            Err(e) => eprintln!("{}: {e}", handle.id()),
            Ok(result) => {
                eprintln!("{} ended before the cancellation reached it", handle.id());
                println!("{}", render(&result));
            }
        },
        _ = tokio::signal::ctrl_c() => {
            eprintln!("{} left to the server (not waiting for its cancellation)", handle.id());
        }
    }
    None
}
