//! Following a task at the terminal until it ends or Ctrl-C cancels it ([`follow`]): its
//! status line (redrawn with a spinner on a terminal, one plain line per change
//! elsewhere), and the tool's result as printed ([`render`]).
//!
//! Invariant: the status line is not redrawn while a question waits for its answer; a
//! first Ctrl-C cancels the task and waits for its end, a second stops waiting.

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_tasks_client::{ClientError, TaskHandle, TaskStatusView};
use mcp_tasks_protocol::v2026::CallToolResult;

use super::console::{PROMPTING, clear_line, on_terminal};

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
    format!("{prefix}{}", texts.join("\n"))
}

/// The status line of a task: its id, status and status message.
fn status_line(id: &str, task: Option<&TaskStatusView>) -> String {
    match task {
        Some(task) => {
            let message = task
                .status_message()
                .map(|m| format!(" — {m}"))
                .unwrap_or_default();
            format!("{id} {}{message}", task.status().as_str())
        }
        None => format!("{id} starting"),
    }
}

/// Follows `handle` until it ends or Ctrl-C cancels it: on a terminal one status line
/// redrawn with a spinner, elsewhere a plain line for each change. `None` after Ctrl-C:
/// the task was cancelled (or a second Ctrl-C gave up waiting for that).
pub(crate) async fn follow(handle: TaskHandle) -> Option<Result<CallToolResult, ClientError>> {
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
            return Some(r);
        }
        _ = spinner => unreachable!("the spinner never ends"),
    }
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
