//! `GET /console/api/activity`: the numbers of the console's charts, over the last
//! [`WINDOW_MINUTES`] minutes (the current minute the last): tasks created in each minute
//! (`created`), tasks that finished in each
//! minute by how they ended (and, among the completed, those whose result is a tool
//! error, `isError: true`: the `error.type` `tool_error` of the task metrics), and how long the finished ones ran, by tool: their time to
//! terminal, `lastUpdatedAt - createdAt` (50th, 90th and 99th percentiles, nearest rank).
//!
//! Made from the tasks *created* in the window, walked newest first with
//! `operator_list`, [`MAX_TASKS`] at most (`truncated` then says so): bounded work
//! whatever the store holds. A finished task counts in the minute of its
//! `lastUpdatedAt`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use mcp_tasks::{Millis, OperatorFilter, Outcome, TaskRecord};
use mcp_tasks_protocol::tasks::TaskStatus;
use serde::Serialize;

use super::Console;
use super::error::ApiError;
use super::views::{MAX_LIMIT, duration_ms};

/// How many minutes the activity covers.
pub(super) const WINDOW_MINUTES: usize = 15;
/// How many tasks one activity request reads at most.
pub(super) const MAX_TASKS: usize = 5_000;

const MINUTE_MS: Millis = 60_000;

/// The activity of the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Activity {
    /// The start of the window's first minute.
    from: Millis,
    /// When the activity was read.
    to: Millis,
    /// One entry per minute, oldest first.
    minutes: Vec<Minute>,
    /// One entry per tool with finished tasks, by name.
    durations: Vec<Durations>,
    /// More tasks were created in the window than were read.
    truncated: bool,
}

/// The tasks created, and those that finished, in one minute.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Minute {
    start: Millis,
    /// Tasks created in the minute (whatever they did since).
    created: u64,
    completed: u64,
    /// Of the `completed`, those whose result says `isError: true`.
    tool_errors: u64,
    failed: u64,
    cancelled: u64,
}

/// How long one tool's finished tasks ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Durations {
    tool: String,
    count: usize,
    p50_ms: i64,
    p90_ms: i64,
    p99_ms: i64,
}

/// The handler.
pub(super) async fn handle(
    State(console): State<Arc<Console>>,
) -> Result<Json<Activity>, ApiError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX))
        .unwrap_or(0);
    let from = window_start(now);
    let filter = OperatorFilter {
        created_from: Some(from),
        ..OperatorFilter::default()
    };
    let mut tasks = Vec::new();
    let mut cursor: Option<String> = None;
    let mut truncated = false;
    loop {
        let limit = MAX_LIMIT.min(MAX_TASKS - tasks.len());
        let page = console
            .store
            .operator_list(&filter, cursor.as_deref(), limit)
            .await?;
        tasks.extend(page.tasks);
        match page.next_cursor {
            None => break,
            Some(_) if tasks.len() >= MAX_TASKS => {
                truncated = true;
                break;
            }
            next => cursor = next,
        }
    }
    Ok(Json(summarize(&tasks, from, now, truncated)))
}

/// The start of the window ending with the minute of `now`.
fn window_start(now: Millis) -> Millis {
    let this_minute = now - now.rem_euclid(MINUTE_MS);
    this_minute - MINUTE_MS * (WINDOW_MINUTES as Millis - 1)
}

/// The activity of `tasks` in the window from `from` to `to`.
fn summarize(tasks: &[TaskRecord], from: Millis, to: Millis, truncated: bool) -> Activity {
    let mut minutes: Vec<Minute> = (0..WINDOW_MINUTES)
        .map(|i| Minute {
            start: from + MINUTE_MS * i as Millis,
            created: 0,
            completed: 0,
            tool_errors: 0,
            failed: 0,
            cancelled: 0,
        })
        .collect();
    let mut runs: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for task in tasks {
        if let Some(index) = minute_of(task.created_at, from, to) {
            minutes[index].created += 1;
        }
        let Some(ran) = duration_ms(task) else {
            continue;
        };
        if let Some(tool) = task.origin.tool.as_deref() {
            runs.entry(tool).or_default().push(ran);
        }
        let Some(index) = minute_of(task.last_updated_at, from, to) else {
            continue;
        };
        let minute = &mut minutes[index];
        match task.status {
            TaskStatus::Completed => {
                minute.completed += 1;
                minute.tool_errors += u64::from(is_tool_error(task));
            }
            TaskStatus::Failed => minute.failed += 1,
            TaskStatus::Cancelled => minute.cancelled += 1,
            TaskStatus::Working | TaskStatus::InputRequired => {}
        }
    }
    let durations = runs
        .into_iter()
        .map(|(tool, mut ran)| {
            ran.sort_unstable();
            Durations {
                tool: tool.to_owned(),
                count: ran.len(),
                p50_ms: percentile(&ran, 50),
                p90_ms: percentile(&ran, 90),
                p99_ms: percentile(&ran, 99),
            }
        })
        .collect();
    Activity {
        from,
        to,
        minutes,
        durations,
        truncated,
    }
}

/// The index of the window's minute (from `from` to `to`) that `at` falls in.
fn minute_of(at: Millis, from: Millis, to: Millis) -> Option<usize> {
    if at < from || at > to {
        return None;
    }
    Some(
        usize::try_from((at - from) / MINUTE_MS)
            .unwrap_or(0)
            .min(WINDOW_MINUTES - 1),
    )
}

/// Whether the task's result is a tool error (`isError: true`).
fn is_tool_error(task: &TaskRecord) -> bool {
    matches!(&task.outcome, Some(Outcome::Result(result))
        if result.get("isError") == Some(&serde_json::Value::Bool(true)))
}

/// The `p`th percentile of `sorted` (not empty), nearest rank.
fn percentile(sorted: &[i64], p: usize) -> i64 {
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use mcp_tasks::TaskId;

    use super::*;

    fn task(
        tool: Option<&str>,
        status: TaskStatus,
        created: Millis,
        updated: Millis,
    ) -> TaskRecord {
        let new = super::super::test_task("alice", tool);
        let mut rec = mcp_tasks::rules::new_record(
            TaskId::from_wire("t"),
            new,
            &mcp_tasks::Limits::default(),
            created,
        );
        rec.status = status;
        rec.last_updated_at = updated;
        rec
    }

    #[test]
    fn finished_tasks_count_in_the_minute_they_ended() {
        let now = 1_000 * MINUTE_MS + 30_000;
        let from = window_start(now);
        assert_eq!(from, 986 * MINUTE_MS);
        let tasks = [
            task(Some("slow"), TaskStatus::Completed, from, from + 1_000),
            task(Some("slow"), TaskStatus::Completed, from, from + 3_000),
            task(
                Some("slow"),
                TaskStatus::Failed,
                from + 100,
                from + MINUTE_MS * 14 + 5,
            ),
            task(
                Some("ask"),
                TaskStatus::Cancelled,
                from + MINUTE_MS,
                from + MINUTE_MS + 10,
            ),
            task(Some("slow"), TaskStatus::Working, from, from + 500),
            task(None, TaskStatus::Completed, from, from + 2 * MINUTE_MS),
        ];
        let mut tasks = tasks.to_vec();
        tasks[1].outcome = Some(Outcome::Result(
            serde_json::json!({"content": [], "isError": true})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ));
        tasks[0].outcome = Some(Outcome::Result(
            serde_json::json!({"content": [], "isError": false})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ));
        let a = summarize(&tasks, from, now, false);
        assert_eq!(a.minutes.len(), WINDOW_MINUTES);
        assert_eq!(a.minutes[0].start, from);
        assert_eq!((a.minutes[0].completed, a.minutes[0].failed), (2, 0));
        assert_eq!(
            a.minutes[0].tool_errors, 1,
            "one of the two completed is a tool error"
        );
        assert_eq!(a.minutes[2].tool_errors, 0);
        assert_eq!(a.minutes[1].cancelled, 1);
        assert_eq!(a.minutes[2].completed, 1);
        assert_eq!(a.minutes[14].failed, 1);
        let total: u64 = a
            .minutes
            .iter()
            .map(|m| m.completed + m.failed + m.cancelled)
            .sum();
        assert_eq!(total, 5);
        let created: Vec<u64> = a.minutes.iter().map(|m| m.created).collect();
        assert_eq!(&created[..3], &[5, 1, 0], "by the minute of createdAt");
        assert_eq!(created.iter().sum::<u64>(), 6, "running tasks count too");
        assert_eq!(a.durations.len(), 2);
        let slow = &a.durations[1];
        assert_eq!((slow.tool.as_str(), slow.count), ("slow", 3));
        assert_eq!(
            (slow.p50_ms, slow.p90_ms, slow.p99_ms),
            (3_000, MINUTE_MS * 14 - 95, MINUTE_MS * 14 - 95)
        );
        assert_eq!(a.durations[0].p50_ms, 10);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let ran: Vec<i64> = (1..=100).collect();
        assert_eq!(
            (
                percentile(&ran, 50),
                percentile(&ran, 90),
                percentile(&ran, 99)
            ),
            (50, 90, 99)
        );
        assert_eq!(percentile(&[7], 99), 7);
        assert_eq!(percentile(&[1, 2], 50), 1);
    }
}
