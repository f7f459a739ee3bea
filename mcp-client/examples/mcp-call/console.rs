//! mcp-call's stderr, which the status line, the questions, the server's log lines and
//! the task's events share: whether it is a terminal, how the status line is erased,
//! and the server's lines and the events held back while a question waits for its
//! answer.
//!
//! Invariant: nothing is written over a question waiting for its answer ([`PROMPTING`]),
//! and no escape code is written when stderr is not a terminal.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set while a question waits for its answer at the terminal: the status line is not
/// redrawn then (it would erase the question), and the server's log lines are held back.
pub(crate) static PROMPTING: AtomicBool = AtomicBool::new(false);

/// Whether stderr is a terminal: only then is the status line redrawn in place.
pub(crate) fn on_terminal() -> bool {
    static TERMINAL: OnceLock<bool> = OnceLock::new();
    *TERMINAL.get_or_init(|| std::io::stderr().is_terminal())
}

/// `text` from the server (a task event, a log line, a status message, a result) as it
/// may reach a terminal: every control character but `keep` (and tab) written as a
/// visible `\u{..}` escape, so no escape sequence of a server's choosing reaches the
/// terminal (colours, titles, cursor moves, a cleared screen).
pub(crate) fn visible(text: &str, keep_newlines: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\t' && !(keep_newlines && c == '\n');
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            shown.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    std::borrow::Cow::Owned(shown)
}

/// What erases the status line before something else is written on stderr: nothing when
/// stderr is not a terminal (no status line is drawn there).
pub(crate) fn clear_line() -> &'static str {
    if on_terminal() { "\r\x1b[2K" } else { "" }
}

/// The server's log lines (`--stdio`) and the task's event lines that arrived while a
/// question waited, in the order they came.
static HELD: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<String>> {
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Prints a line of the server's stderr above the status line (the next tick redraws
/// it), or holds it back while a question waits for its answer.
pub(crate) fn server_log(line: &str) {
    let line = visible(line, false);
    if PROMPTING.load(Ordering::SeqCst) {
        held().push(line.into_owned());
        return;
    }
    print_held();
    eprintln!("{}{line}", clear_line());
}

/// Prints a line of the task's events as [`server_log`] prints the server's lines:
/// above the status line, or held back while a question waits for its answer.
pub(crate) fn task_event(line: &str) {
    server_log(line);
}

/// Prints the log lines held back while a question waited.
pub(crate) fn print_held() {
    let lines = std::mem::take(&mut *held());
    for line in lines {
        eprintln!("{}{line}", clear_line());
    }
}
