//! What the demo server logs by volume (issue 46):
//!
//! - at its default level (`RUST_LOG` unset: `info`) a task writes one line to stderr,
//!   when it ends (`task finished`, with its id, status, tool and duration; `error` when it
//!   did not succeed), at most 200 bytes a task on average, timestamp included; its
//!   creation and its polls write none;
//! - `--audit-log PATH` keeps the whole audit trail in that file, creations included,
//!   while stderr at the default level shows only what is not routine (a cancel).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_tests::node_harness::{Cluster, Logs, Node, slow};
use mcp_tests::server_harness::WAIT;
use serde_json::json;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");

/// `RUST_LOG` set empty: the demo's own default filter applies.
const DEFAULT_FILTER: &str = "";

/// The demo's INFO line at start, after which the tasks' lines are counted.
const STARTED: &str = "task runtime";

/// How many lines of `logs`, from byte `from` on, contain `needle`.
fn count_since(logs: &Logs, from: usize, needle: &str) -> usize {
    logs.text()[from..]
        .lines()
        .filter(|l| l.contains(needle))
        .count()
}

/// Waits (at most [`WAIT`]) until `n` lines of `logs` from byte `from` on contain
/// `needle`; whether they did.
async fn wait_for_lines(logs: &Logs, from: usize, needle: &str, n: usize) -> bool {
    tokio::time::timeout(WAIT, async {
        while count_since(logs, from, needle) < n {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_default_level_a_task_writes_one_short_line() {
    let (node, logs) = Node::start_logged(
        Path::new(DEMO),
        "L",
        &["--store", "memory"],
        &[],
        DEFAULT_FILTER,
    )
    .await;
    assert!(
        logs.wait_for(STARTED, WAIT).await,
        "no start line: {}",
        logs.text()
    );
    let from = logs.text().len();
    let cluster = Cluster::new(vec![node.url.clone()]);
    let mut completed = Vec::new();
    for i in 0..5 {
        let id = cluster
            .create_task(0, "slow_compute", slow(0.001, &format!("v{i}")))
            .await;
        cluster.poll_status(&id, "completed", WAIT).await;
        completed.push(id);
    }
    // A tool error (`isError`): completed, and said so.
    let failing = cluster.create_task(0, "failing_job", json!({})).await;
    cluster.poll_status(&failing, "completed", WAIT).await;
    let tasks = completed.len() + 1;
    assert!(
        wait_for_lines(&logs, from, "task finished", tasks).await,
        "not every task's line: {}",
        logs.text()
    );

    let written = logs.text()[from..].to_owned();
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(
        lines.len(),
        tasks,
        "one line a task, nothing else:\n{written}"
    );
    for id in completed.iter().chain([&failing]) {
        let theirs: Vec<&&str> = lines.iter().filter(|l| l.contains(id.as_str())).collect();
        assert_eq!(theirs.len(), 1, "{id}:\n{written}");
    }
    for line in &lines {
        assert!(
            line.contains(" INFO mcp_tasks_server::task: task finished task_id="),
            "{line}"
        );
        assert!(line.contains(" duration_ms="), "{line}");
    }
    let done = lines
        .iter()
        .find(|l| l.contains(completed[0].as_str()))
        .expect("the first task's line");
    assert!(
        done.contains(" status=completed tool=slow_compute duration_ms=")
            && !done.contains("error"),
        "{done}"
    );
    let failed = lines
        .iter()
        .find(|l| l.contains(failing.as_str()))
        .expect("the failing task's line");
    assert!(
        failed.contains(" status=completed tool=failing_job duration_ms=")
            && failed.ends_with(" error=tool_error"),
        "{failed}"
    );
    // `written` holds every byte of those lines, their newlines included.
    let per_task = written.len() / tasks;
    assert!(per_task <= 200, "{per_task} bytes a task:\n{written}");
    drop(node);
}

/// A file under the temp dir, removed on drop.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Waits (at most [`WAIT`]) until the file at `path` contains every one of `parts`;
/// returns what it holds then.
async fn file_with(path: &Path, parts: &[&str]) -> String {
    let mut text = String::new();
    let found = tokio::time::timeout(WAIT, async {
        loop {
            text = std::fs::read_to_string(path).unwrap_or_default();
            if parts.iter().all(|p| text.contains(p)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        found.is_ok(),
        "the audit file lacks one of {parts:?}:\n{text}"
    );
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_file_keeps_every_creation() {
    let salt = mcp_tasks::TaskId::random().expect("random");
    let file = TempFile(std::env::temp_dir().join(format!(
        "mcp-tests-audit-{}-{}.log",
        std::process::id(),
        &salt.as_str()[..12]
    )));
    let audit_log = file.0.to_str().expect("a UTF-8 temp path");
    let (node, logs) = Node::start_logged(
        Path::new(DEMO),
        "A",
        &["--store", "memory", "--audit-log", audit_log],
        &[],
        DEFAULT_FILTER,
    )
    .await;
    let cluster = Cluster::new(vec![node.url.clone()]);
    let done = cluster
        .create_task(0, "slow_compute", slow(0.001, "audited"))
        .await;
    cluster.poll_status(&done, "completed", WAIT).await;
    let asking = cluster
        .create_task(0, "confirm_delete", json!({ "filename": "audit.txt" }))
        .await;
    cluster.poll_status(&asking, "input_required", WAIT).await;
    let cancelled = cluster.cancel_task(0, &asking).await;
    cancelled.result();

    let create = "op=\"tools/call: create task\" outcome=\"ok\"";
    let cancel = "op=\"tasks/cancel\" outcome=\"ok\"";
    let text = file_with(
        &file.0,
        &[
            &format!("task_id=\"{done}\" {create}"),
            &format!("task_id=\"{asking}\" {create}"),
            &format!("task_id=\"{asking}\" {cancel}"),
        ],
    )
    .await;
    assert!(
        text.lines().all(|l| l.contains("principal=anonymous")),
        "{text}"
    );
    // The polls that succeeded are not the trail's.
    assert!(!text.contains("op=\"tasks/get\""), "{text}");

    // On stderr at the default level: the cancel, not the creations.
    assert!(
        logs.wait_for(cancel, WAIT).await,
        "no cancel on stderr: {}",
        logs.text()
    );
    let stderr = logs.text();
    assert!(!stderr.contains("create task"), "{stderr}");
    drop(node);
}
