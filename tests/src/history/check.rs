//! The offline checker: every promise, checked against a whole [`History`].
//!
//! Per task (the id an acknowledged create returned), from the operations about it:
//!
//! - at most one terminal state, never left: every terminal status read (by `tasks/get`
//!   or in its event log) is the same, the log holds one terminal status entry, and no
//!   read invoked after a terminal read completed sees it unfinished;
//! - a result once read never changes (`result` and `error` of every terminal read);
//! - what one client reads never goes back: status (unfinished, then terminal) and
//!   `lastUpdatedAt`, in the order that client sent its reads;
//! - an at-least-once task (`slow_compute`) completes, unless a cancel was sent or all
//!   its 3 runs started and were lost (its log shows 3 claims: it then fails, as its
//!   delivery says; counted apart in [`Report::ends`]), with a result that is its own, and
//!   its tool started at most its 3 runs;
//! - an at-most-once task's tool (`confirm_delete`) started at most once (claims in its log);
//! - an acknowledged create is never unknown to a later `tasks/get` or `tasks/stream` on
//!   any node;
//! - an answer acknowledged by `tasks/update` is in the log exactly once (unless the task
//!   failed or was cancelled first: the wire acknowledges and ignores an answer to a
//!   question no longer open), never twice, and a completed task's result follows an
//!   answer given (an answer with an unknown outcome may be delivered once or not at all);
//! - a cancel that took effect (its entry in the log) ends the task cancelled: a tool that
//!   completes after it was told to stop is a violation.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::SystemTime;

use serde_json::Value;

use super::{History, Op, OpKind, Outcome, TaskSpec};
use crate::chaos::{Handed, own_result_run};

/// `tasks/get`'s error for a task it does not know.
const UNKNOWN_TASK: i64 = mcp_tasks_protocol::error_codes::INVALID_PARAMS;

/// What promise was broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViolationKind {
    /// Two different terminal states were read, or the log holds two terminal entries.
    SecondTerminalState,
    /// A read after a terminal read saw the task unfinished again.
    LeftTerminalState,
    /// Two terminal reads gave different results.
    ResultChanged,
    /// A client read an older state after a newer one.
    WentBack,
    /// An at-least-once task that nobody cancelled did not complete.
    NotCompleted,
    /// A completed at-least-once task's result is not its own.
    ForeignResult,
    /// A tool ran more times than its delivery allows (twice for an at-most-once tool).
    RanTooOften,
    /// An acknowledged create was unknown to a later read.
    LostCreate,
    /// An acknowledged answer is not in the task's log.
    AnswerLost,
    /// An answer is in the log more than once.
    AnswerTwice,
    /// A completed task's result does not follow the answer given (or no answer was given).
    WrongAnswer,
    /// The task completed after a cancel took effect.
    CancelIgnored,
    /// The task was still unfinished at the end of the history.
    Unfinished,
}

impl ViolationKind {
    /// Its name in reports (snake case).
    pub fn name(self) -> &'static str {
        match self {
            ViolationKind::SecondTerminalState => "second_terminal_state",
            ViolationKind::LeftTerminalState => "left_terminal_state",
            ViolationKind::ResultChanged => "result_changed",
            ViolationKind::WentBack => "went_back",
            ViolationKind::NotCompleted => "not_completed",
            ViolationKind::ForeignResult => "foreign_result",
            ViolationKind::RanTooOften => "ran_too_often",
            ViolationKind::LostCreate => "lost_create",
            ViolationKind::AnswerLost => "answer_lost",
            ViolationKind::AnswerTwice => "answer_twice",
            ViolationKind::WrongAnswer => "wrong_answer",
            ViolationKind::CancelIgnored => "cancel_ignored",
            ViolationKind::Unfinished => "unfinished",
        }
    }
}

/// One broken promise.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// Which.
    pub kind: ViolationKind,
    /// The task.
    pub task: String,
    /// The indexes of the operations that show it.
    pub ops: Vec<usize>,
    /// What was seen.
    pub detail: String,
}

/// What the checker found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Tasks whose create was acknowledged.
    pub tasks: usize,
    /// Operations in the history.
    pub ops: usize,
    /// Operations whose outcome is unknown.
    pub unknown: usize,
    /// Tasks whose whole event log was read.
    pub logs: usize,
    /// Answers acknowledged by `tasks/update`.
    pub answers: usize,
    /// Cancels acknowledged by `tasks/cancel`.
    pub cancels: usize,
    /// How the tasks ended: `completed`, `failed`, `cancelled`, `unfinished`, and
    /// `failed (every run lost)` for an at-least-once task whose every run was lost.
    pub ends: BTreeMap<String, usize>,
    /// Every broken promise.
    pub violations: Vec<Violation>,
}

impl Report {
    /// Whether no promise was broken.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// The kinds of the violations found.
    pub fn kinds(&self) -> BTreeSet<ViolationKind> {
        self.violations.iter().map(|v| v.kind).collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} tasks ({} logs read, {} answers and {} cancels acknowledged), {} operations \
             ({} unknown), ends {:?}, {} violations",
            self.tasks,
            self.logs,
            self.answers,
            self.cancels,
            self.ops,
            self.unknown,
            self.ends,
            self.violations.len()
        )?;
        for v in &self.violations {
            writeln!(
                f,
                "  {} task {} ops {:?}: {}",
                v.kind.name(),
                v.task,
                v.ops,
                v.detail
            )?;
        }
        Ok(())
    }
}

/// Everything known of one task.
struct TaskOps<'h> {
    id: &'h str,
    create: &'h Op,
    spec: &'h TaskSpec,
    /// Every other operation about it, in history order.
    ops: Vec<&'h Op>,
}

impl<'h> TaskOps<'h> {
    /// Acknowledged `tasks/get` reads with their task.
    fn reads(&self) -> impl Iterator<Item = (&'h Op, &'h Value)> + '_ {
        self.ops
            .iter()
            .filter_map(|op| match (&op.kind, &op.outcome) {
                (OpKind::Get { .. }, Outcome::Ok(task)) => Some((*op, task)),
                _ => None,
            })
    }

    /// The last complete event log read, with its operation.
    fn log(&self) -> Option<(&'h Op, &'h [Value])> {
        self.ops
            .iter()
            .rev()
            .find_map(|op| match (&op.kind, &op.outcome) {
                (OpKind::Log { .. }, Outcome::Ok(Value::Array(events))) => {
                    Some((*op, events.as_slice()))
                }
                _ => None,
            })
    }

    fn sent(&self, kind: &str) -> impl Iterator<Item = &'h Op> + '_ {
        let kind = kind.to_owned();
        self.ops
            .iter()
            .copied()
            .filter(move |op| op.kind.name() == kind)
    }
}

/// Checks `history`; see the module's doc for what.
pub fn check(history: &History) -> Report {
    let mut report = Report {
        ops: history.len(),
        unknown: history.iter().filter(|op| op.outcome.is_unknown()).count(),
        ..Report::default()
    };
    let mut tasks: BTreeMap<&str, TaskOps<'_>> = BTreeMap::new();
    for op in history {
        if let (OpKind::Create(spec), Some(id)) = (&op.kind, op.task()) {
            tasks.entry(id).or_insert(TaskOps {
                id,
                create: op,
                spec,
                ops: Vec::new(),
            });
        }
    }
    for op in history {
        if let (Some(id), false) = (op.kind.task(), matches!(op.kind, OpKind::Create(_)))
            && let Some(task) = tasks.get_mut(id)
        {
            task.ops.push(op);
        }
    }
    report.tasks = tasks.len();
    for task in tasks.values() {
        report.logs += usize::from(task.log().is_some());
        let acked = |kind| {
            task.sent(kind)
                .filter(|op| op.outcome.ok().is_some())
                .count()
        };
        report.answers += acked("update");
        report.cancels += acked("cancel");
    }
    for task in tasks.values() {
        let end = check_task(task, &mut report.violations);
        *report.ends.entry(end).or_default() += 1;
    }
    report
}

fn violation(
    kind: ViolationKind,
    task: &TaskOps<'_>,
    ops: Vec<usize>,
    detail: String,
) -> Violation {
    Violation {
        kind,
        task: task.id.to_owned(),
        ops,
        detail,
    }
}

fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

fn status(task: &Value) -> &str {
    task["status"].as_str().unwrap_or("")
}

/// The events of `kind` in `log`, with their `seq`.
fn of_kind<'l>(log: &'l [Value], kind: &'l str) -> impl Iterator<Item = &'l Value> + 'l {
    log.iter().filter(move |e| e["type"].as_str() == Some(kind))
}

/// The terminal status entries of a log: `(seq, status)`.
fn terminal_entries(log: &[Value]) -> Vec<(u64, &str)> {
    of_kind(log, mcp_tasks::log::kinds::STATUS)
        .filter_map(|e| {
            let s = e["payload"]["status"].as_str()?;
            is_terminal(s).then(|| (e["seq"].as_u64().unwrap_or(0), s))
        })
        .collect()
}

/// Checks one task; returns how it ended (its terminal status, or `unfinished`).
fn check_task(task: &TaskOps<'_>, out: &mut Vec<Violation>) -> String {
    use ViolationKind::*;
    let reads: Vec<(&Op, &Value)> = task.reads().collect();
    let terminal: Vec<(&Op, &Value)> = reads
        .iter()
        .copied()
        .filter(|(_, t)| is_terminal(status(t)))
        .collect();
    let log = task.log();

    // One terminal state, never left; its result never changes.
    let end: Option<(&Op, &Value)> = terminal.first().copied();
    for (op, t) in &terminal {
        if let Some((first, f)) = end {
            if status(t) != status(f) {
                out.push(violation(
                    SecondTerminalState,
                    task,
                    vec![first.index, op.index],
                    format!("read {} then {}", status(f), status(t)),
                ));
            } else if t["result"] != f["result"] || t["error"] != f["error"] {
                out.push(violation(
                    ResultChanged,
                    task,
                    vec![first.index, op.index],
                    format!(
                        "result {} then {} (error {} then {})",
                        f["result"], t["result"], f["error"], t["error"]
                    ),
                ));
            }
        }
    }
    if let Some(earliest) = terminal
        .iter()
        .map(|(op, _)| *op)
        .min_by_key(|op| op.completed)
        && let Some((later, t)) = reads
            .iter()
            .find(|(op, t)| !is_terminal(status(t)) && earliest.precedes(op))
    {
        out.push(violation(
            LeftTerminalState,
            task,
            vec![earliest.index, later.index],
            format!("{} read after {}", status(t), status(terminal[0].1)),
        ));
    }
    if let Some((log_op, events)) = log {
        let entries = terminal_entries(events);
        if entries.len() > 1 {
            out.push(violation(
                SecondTerminalState,
                task,
                vec![log_op.index],
                format!("the log holds terminal entries {entries:?}"),
            ));
        }
        if let (Some((_, logged)), Some((read_op, t))) = (entries.first(), end)
            && *logged != status(t)
        {
            out.push(violation(
                SecondTerminalState,
                task,
                vec![read_op.index, log_op.index],
                format!("read {} but the log says {logged}", status(t)),
            ));
        }
    }

    check_monotonic(task, &reads, out);
    // The terminal state read, else the one logged.
    let final_status = end.map(|(_, t)| status(t).to_owned()).or_else(|| {
        log.and_then(|(_, events)| {
            terminal_entries(events)
                .first()
                .map(|(_, s)| (*s).to_owned())
        })
    });
    let runs = log.map(|(op, events)| (op, of_kind(events, mcp_tasks::log::kinds::CLAIM).count()));
    if let Some((log_op, runs)) = runs
        && runs > task.spec.max_runs()
    {
        out.push(violation(
            RanTooOften,
            task,
            vec![task.create.index, log_op.index],
            format!(
                "{runs} runs started, at most {} allowed",
                task.spec.max_runs()
            ),
        ));
    }

    // Lost creates: a read after the acknowledgement that does not know the task.
    for op in &task.ops {
        if let Outcome::Err {
            code: UNKNOWN_TASK,
            message,
        } = &op.outcome
            && matches!(op.kind, OpKind::Get { .. } | OpKind::Log { .. })
            && task.create.precedes(op)
        {
            out.push(violation(
                LostCreate,
                task,
                vec![task.create.index, op.index],
                format!("node {} does not know it: {message}", op.node),
            ));
        }
    }

    let cancels: Vec<&Op> = task.sent("cancel").collect();
    let result_text = end
        .map(|(_, t)| crate::node_harness::result_text(&t["result"]).to_owned())
        .unwrap_or_default();
    match (task.spec, final_status.as_deref()) {
        (_, None) => out.push(violation(
            Unfinished,
            task,
            vec![task.create.index],
            format!("no terminal state read in {} operations", task.ops.len()),
        )),
        (TaskSpec::Compute { label, seconds }, Some("completed")) => {
            let handed = Handed {
                id: task.id.to_owned(),
                label: label.clone(),
                seconds: *seconds,
            };
            if own_result_run(&handed, &result_text).is_none() {
                out.push(violation(
                    ForeignResult,
                    task,
                    vec![task.create.index, end.map_or(0, |(op, _)| op.index)],
                    format!("{label} ({seconds} s) got {result_text:?}"),
                ));
            }
        }
        // Every run it may start was lost (each met a crash or an outage longer than the
        // lease): it fails, as its delivery says. Counted apart in the report's ends.
        (TaskSpec::Compute { .. }, Some("failed"))
            if runs.is_some_and(|(_, runs)| runs >= task.spec.max_runs()) =>
        {
            return "failed (every run lost)".into();
        }
        (TaskSpec::Compute { .. }, Some(other)) if cancels.is_empty() => out.push(violation(
            NotCompleted,
            task,
            vec![task.create.index, end.map_or(0, |(op, _)| op.index)],
            format!(
                "ended {other}: {} {}",
                end.map_or(&Value::Null, |(_, t)| &t["statusMessage"]),
                end.map_or(&Value::Null, |(_, t)| &t["error"])
            ),
        )),
        _ => {}
    }
    if let TaskSpec::Confirm { filename } = task.spec {
        let texts: Vec<&str> = terminal
            .iter()
            .filter(|(_, t)| status(t) == "completed")
            .map(|(_, t)| crate::node_harness::result_text(&t["result"]))
            .collect();
        check_answers(task, filename, &texts, log, out);
    }
    if let (Some((log_op, events)), Some("completed")) = (log, final_status.as_deref()) {
        let cancel_at = of_kind(events, mcp_tasks::log::kinds::CANCEL)
            .filter_map(|e| e["seq"].as_u64())
            .min();
        let ended_at = terminal_entries(events).first().map(|(seq, _)| *seq);
        if let (Some(cancel_at), Some(ended_at)) = (cancel_at, ended_at)
            && cancel_at < ended_at
        {
            let mut ops: Vec<usize> = cancels.iter().map(|op| op.index).collect();
            ops.push(log_op.index);
            out.push(violation(
                CancelIgnored,
                task,
                ops,
                format!("cancel logged at seq {cancel_at}, completed at seq {ended_at}"),
            ));
        }
    }
    final_status.unwrap_or_else(|| "unfinished".into())
}

/// What one client read never goes back: status rank and `lastUpdatedAt`.
fn check_monotonic(task: &TaskOps<'_>, reads: &[(&Op, &Value)], out: &mut Vec<Violation>) {
    let mut by_client: BTreeMap<usize, Vec<(&Op, &Value)>> = BTreeMap::new();
    for (op, t) in reads {
        by_client.entry(op.client).or_default().push((op, t));
    }
    for (client, mut seen) in by_client {
        seen.sort_by_key(|(op, _)| op.invoked);
        for pair in seen.windows(2) {
            let ((a, ta), (b, tb)) = (pair[0], pair[1]);
            let rank = |t: &Value| u8::from(is_terminal(status(t)));
            let went_back = rank(tb) < rank(ta)
                || matches!((updated(ta), updated(tb)), (Some(x), Some(y)) if y < x);
            if went_back {
                out.push(violation(
                    ViolationKind::WentBack,
                    task,
                    vec![a.index, b.index],
                    format!(
                        "client {client} read {} at {} then {} at {}",
                        status(ta),
                        ta["lastUpdatedAt"],
                        status(tb),
                        tb["lastUpdatedAt"]
                    ),
                ));
            }
        }
    }
}

fn updated(task: &Value) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(task["lastUpdatedAt"].as_str()?).ok()
}

/// Answers: each acknowledged one logged once, none twice, every completed result read
/// following one given.
fn check_answers(
    task: &TaskOps<'_>,
    filename: &str,
    results: &[&str],
    log: Option<(&Op, &[Value])>,
    out: &mut Vec<Violation>,
) {
    use ViolationKind::*;
    let updates: Vec<(&Op, &str, bool)> = task
        .ops
        .iter()
        .filter_map(|op| match &op.kind {
            OpKind::Update { key, confirm, .. } => Some((*op, key.as_str(), *confirm)),
            _ => None,
        })
        .collect();
    if let Some((log_op, events)) = log {
        let mut logged: BTreeMap<&str, usize> = BTreeMap::new();
        for e in of_kind(events, mcp_tasks::log::kinds::ANSWER) {
            for key in e["payload"]["keys"].as_array().into_iter().flatten() {
                *logged.entry(key.as_str().unwrap_or("")).or_default() += 1;
            }
        }
        for (key, n) in &logged {
            if *n > 1 {
                out.push(violation(
                    AnswerTwice,
                    task,
                    vec![log_op.index],
                    format!("input {key} answered {n} times in the log"),
                ));
            }
        }
        // The wire ignores (and acknowledges) an answer to a question no longer open: a
        // task that failed or was cancelled first (its run lost while it asked) never
        // gets it. One that completed must have taken it.
        let stopped = terminal_entries(events)
            .first()
            .is_some_and(|(_, s)| *s != "completed");
        for (op, key, _) in &updates {
            if op.outcome.ok().is_some() && !logged.contains_key(key) && !stopped {
                out.push(violation(
                    AnswerLost,
                    task,
                    vec![op.index, log_op.index],
                    format!("the acknowledged answer to {key} is not in the log"),
                ));
            }
        }
    }
    for result_text in results {
        let given: BTreeSet<bool> = updates
            .iter()
            .filter(|(op, _, _)| !matches!(op.outcome, Outcome::Err { .. }))
            .map(|(_, _, confirm)| *confirm)
            .collect();
        let follows = |confirm: bool| {
            if confirm {
                result_text.starts_with(&format!("Deleted {filename} "))
            } else {
                *result_text == format!("Kept {filename}.")
            }
        };
        if !given.iter().any(|c| follows(*c)) {
            let mut ops: Vec<usize> = updates.iter().map(|(op, _, _)| op.index).collect();
            ops.insert(0, task.create.index);
            out.push(violation(
                WrongAnswer,
                task,
                ops,
                format!("answers given {given:?}, result {result_text:?}"),
            ));
        }
    }
}
