//! The checker on hand-built histories: one that keeps every promise, and one per broken
//! promise, each named in the report.

use serde_json::{Value, json};

use super::{History, Op, OpKind, Outcome, Recorder, TaskSpec, ViolationKind, check};
use mcp_tasks::log::kinds;

/// Builds a history one operation at a time, each after the one before (no overlap).
#[derive(Default)]
struct Builder {
    ops: History,
    clock: u64,
}

impl Builder {
    fn op(&mut self, client: usize, node: usize, kind: OpKind, outcome: Outcome) -> usize {
        let index = self.ops.len();
        self.ops.push(Op {
            index,
            client,
            node,
            kind,
            invoked: self.clock,
            completed: self.clock + 1,
            outcome,
        });
        self.clock += 2;
        index
    }

    fn create(&mut self, client: usize, spec: TaskSpec, id: &str) {
        let ok = Outcome::Ok(json!({"resultType": "task", "taskId": id, "status": "working"}));
        self.op(client, 0, OpKind::Create(spec), ok);
    }

    fn get(&mut self, client: usize, node: usize, id: &str, task: Value) {
        self.op(
            client,
            node,
            OpKind::Get { task: id.into() },
            Outcome::Ok(task),
        );
    }

    fn log(&mut self, id: &str, entries: &[(&str, Value)]) {
        let events: Vec<Value> = entries
            .iter()
            .enumerate()
            .map(|(seq, (kind, payload))| {
                json!({"seq": seq, "taskId": id, "type": kind, "payload": payload})
            })
            .collect();
        self.op(
            9,
            0,
            OpKind::Log { task: id.into() },
            Outcome::Ok(Value::Array(events)),
        );
    }

    fn update(&mut self, id: &str, confirm: bool, outcome: Outcome) {
        let kind = OpKind::Update {
            task: id.into(),
            key: "input-1".into(),
            confirm,
        };
        self.op(1, 0, kind, outcome);
    }
}

fn compute(label: &str, seconds: f64) -> TaskSpec {
    TaskSpec::Compute {
        label: label.into(),
        seconds,
    }
}

fn confirm(filename: &str) -> TaskSpec {
    TaskSpec::Confirm {
        filename: filename.into(),
    }
}

fn state(status: &str, at: &str) -> Value {
    json!({"status": status, "lastUpdatedAt": format!("2026-12-07T10:00:{at}Z")})
}

fn done(status: &str, at: &str, text: &str) -> Value {
    let mut task = state(status, at);
    task["result"] = json!({"resultType": "complete", "content": [{"type": "text", "text": text}]});
    task
}

fn status_entry(status: &str) -> (&'static str, Value) {
    (kinds::STATUS, json!({"status": status}))
}

fn claim(attempt: u32) -> (&'static str, Value) {
    (kinds::CLAIM, json!({"attempt": attempt, "holder": "w"}))
}

fn answer() -> (&'static str, Value) {
    (
        kinds::ANSWER,
        json!({"keys": ["input-1"], "status": "working"}),
    )
}

fn ok() -> Outcome {
    Outcome::Ok(json!({"resultType": "complete"}))
}

/// A compute task `a` that completes with its own result, read on both nodes.
fn computed(h: &mut Builder) {
    h.create(0, compute("a", 1.0), "a");
    h.get(0, 0, "a", state("working", "01.000"));
    h.get(0, 1, "a", done("completed", "02.000", "a: done after 1 s"));
    h.get(9, 0, "a", done("completed", "02.000", "a: done after 1 s"));
    h.log(
        "a",
        &[status_entry("working"), claim(1), status_entry("completed")],
    );
}

/// A confirm task `b` answered yes once.
fn confirmed(h: &mut Builder) {
    h.create(1, confirm("b.txt"), "b");
    h.get(1, 1, "b", state("input_required", "01.000"));
    h.update("b", true, ok());
    let text = "Deleted b.txt (not really: this is a demo).";
    h.get(1, 0, "b", done("completed", "03.000", text));
    h.log(
        "b",
        &[
            status_entry("working"),
            claim(1),
            (kinds::INPUT, json!({"status": "input_required"})),
            answer(),
            status_entry("completed"),
        ],
    );
}

fn kinds_of(history: &History) -> Vec<ViolationKind> {
    check(history).kinds().into_iter().collect()
}

#[test]
fn a_history_that_keeps_every_promise_passes() {
    let mut h = Builder::default();
    computed(&mut h);
    confirmed(&mut h);
    // A cancelled compute task, told to stop while it ran.
    h.create(2, compute("c", 5.0), "c");
    h.op(2, 1, OpKind::Cancel { task: "c".into() }, ok());
    h.get(2, 0, "c", state("cancelled", "01.500"));
    h.log(
        "c",
        &[
            status_entry("working"),
            claim(1),
            (kinds::CANCEL, json!({})),
            status_entry("cancelled"),
        ],
    );
    // Unknown outcomes either way: a create that may not exist, an answer (to `d`) not
    // delivered (the task then failed as worker lost, at most once), a run again after
    // a lost worker.
    h.op(
        3,
        0,
        OpKind::Create(compute("e", 1.0)),
        Outcome::Unknown("broken".into()),
    );
    h.create(3, confirm("d.txt"), "d");
    h.update("d", false, Outcome::Unknown("store unavailable".into()));
    h.get(3, 1, "d", state("failed", "04.000"));
    h.log(
        "d",
        &[status_entry("working"), claim(1), status_entry("failed")],
    );
    h.create(4, compute("f", 0.5), "f");
    h.get(
        4,
        0,
        "f",
        done("completed", "05.000", "f: done after 0.5 s (attempt 2)"),
    );
    h.log(
        "f",
        &[
            status_entry("working"),
            claim(1),
            (kinds::REQUEUE, json!({"attempt": 1})),
            claim(2),
            status_entry("completed"),
        ],
    );
    let report = check(&h.ops);
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.tasks, 5);
    assert_eq!(report.unknown, 2);
    assert_eq!(report.ends.get("completed"), Some(&3), "{report}");
}

#[test]
fn a_changed_result_is_named() {
    let mut h = Builder::default();
    computed(&mut h);
    h.get(
        0,
        0,
        "a",
        done("completed", "02.000", "a: done after 1 s (attempt 2)"),
    );
    let report = check(&h.ops);
    assert_eq!(kinds_of(&h.ops), [ViolationKind::ResultChanged], "{report}");
    let v = &report.violations[0];
    assert_eq!(v.task, "a");
    assert_eq!(v.ops, [2, 5]);
    assert!(
        report.to_string().contains("result_changed task a"),
        "{report}"
    );
}

#[test]
fn a_second_terminal_state_is_named() {
    let mut h = Builder::default();
    computed(&mut h);
    let mut failed = state("failed", "03.000");
    failed["error"] = json!({"code": -32603, "message": "worker lost"});
    h.get(1, 1, "a", failed);
    let report = check(&h.ops);
    assert_eq!(
        kinds_of(&h.ops),
        [ViolationKind::SecondTerminalState],
        "{report}"
    );
    assert!(report.to_string().contains("second_terminal_state task a"));

    // Two terminal entries in the log.
    let mut h = Builder::default();
    computed(&mut h);
    h.log(
        "a",
        &[
            status_entry("working"),
            claim(1),
            status_entry("completed"),
            status_entry("failed"),
        ],
    );
    assert_eq!(kinds_of(&h.ops), [ViolationKind::SecondTerminalState]);
}

#[test]
fn a_tool_run_twice_is_named() {
    let mut h = Builder::default();
    confirmed(&mut h);
    h.log(
        "b",
        &[
            status_entry("working"),
            claim(1),
            answer(),
            claim(2),
            status_entry("completed"),
        ],
    );
    let report = check(&h.ops);
    assert_eq!(kinds_of(&h.ops), [ViolationKind::RanTooOften], "{report}");
    assert!(
        report.to_string().contains("ran_too_often task b"),
        "{report}"
    );
}

#[test]
fn a_lost_acknowledged_create_is_named() {
    let mut h = Builder::default();
    computed(&mut h);
    let unknown = Outcome::Err {
        code: -32602,
        message: "unknown task".into(),
    };
    h.op(9, 1, OpKind::Get { task: "a".into() }, unknown);
    let report = check(&h.ops);
    assert_eq!(kinds_of(&h.ops), [ViolationKind::LostCreate], "{report}");
    assert_eq!(report.violations[0].ops, [0, 5]);
    assert!(report.to_string().contains("node 1 does not know it"));
}

#[test]
fn reads_that_go_back_are_named() {
    let mut h = Builder::default();
    computed(&mut h);
    // Client 0 reads the task unfinished after it read it completed.
    h.get(0, 0, "a", state("working", "01.500"));
    let kinds = kinds_of(&h.ops);
    assert_eq!(
        kinds,
        [ViolationKind::LeftTerminalState, ViolationKind::WentBack]
    );
    // lastUpdatedAt alone going back, for one client.
    let mut h = Builder::default();
    h.create(0, compute("g", 1.0), "g");
    h.get(0, 0, "g", state("working", "02.000"));
    h.get(0, 1, "g", state("working", "01.000"));
    h.get(0, 1, "g", done("completed", "03.000", "g: done after 1 s"));
    assert_eq!(kinds_of(&h.ops), [ViolationKind::WentBack]);
}

#[test]
fn broken_answers_are_named() {
    // Logged twice.
    let mut h = Builder::default();
    confirmed(&mut h);
    h.log(
        "b",
        &[
            status_entry("working"),
            claim(1),
            answer(),
            answer(),
            status_entry("completed"),
        ],
    );
    assert_eq!(kinds_of(&h.ops), [ViolationKind::AnswerTwice]);
    // Acknowledged, never logged.
    let mut h = Builder::default();
    confirmed(&mut h);
    h.log(
        "b",
        &[status_entry("working"), claim(1), status_entry("completed")],
    );
    assert_eq!(kinds_of(&h.ops), [ViolationKind::AnswerLost]);
    // Acknowledged and ignored: the task had failed (its run lost while it asked).
    let mut h = Builder::default();
    h.create(1, confirm("e.txt"), "e");
    h.update("e", true, ok());
    h.get(1, 0, "e", state("failed", "02.000"));
    h.log(
        "e",
        &[status_entry("working"), claim(1), status_entry("failed")],
    );
    assert!(check(&h.ops).is_clean());
    // The tool acted on another answer.
    let mut h = Builder::default();
    confirmed(&mut h);
    h.get(1, 0, "b", done("completed", "03.000", "Kept b.txt."));
    assert_eq!(
        kinds_of(&h.ops),
        [ViolationKind::ResultChanged, ViolationKind::WrongAnswer]
    );
}

#[test]
fn at_least_once_tasks_complete_with_their_own_result() {
    let mut h = Builder::default();
    h.create(0, compute("h", 1.0), "h");
    h.get(0, 0, "h", done("completed", "01.000", "i: done after 1 s"));
    h.create(0, compute("j", 1.0), "j");
    h.get(0, 0, "j", state("failed", "01.000"));
    h.create(0, compute("k", 1.0), "k");
    h.get(0, 0, "k", state("working", "01.000"));
    // Every one of its 3 runs lost: it fails, as its delivery says.
    h.create(0, compute("l", 1.0), "l");
    h.get(0, 0, "l", state("failed", "02.000"));
    h.log(
        "l",
        &[
            status_entry("working"),
            claim(1),
            claim(2),
            claim(3),
            status_entry("failed"),
        ],
    );
    let report = check(&h.ops);
    assert_eq!(
        report.ends.get("failed (every run lost)"),
        Some(&1),
        "{report}"
    );
    assert_eq!(
        kinds_of(&h.ops),
        [
            ViolationKind::NotCompleted,
            ViolationKind::ForeignResult,
            ViolationKind::Unfinished
        ],
        "{report}"
    );
}

#[test]
fn a_tool_that_completes_after_its_cancel_is_named() {
    let mut h = Builder::default();
    h.create(2, compute("c", 5.0), "c");
    h.op(2, 1, OpKind::Cancel { task: "c".into() }, ok());
    h.get(2, 0, "c", done("completed", "06.000", "c: done after 5 s"));
    h.log(
        "c",
        &[
            status_entry("working"),
            claim(1),
            (kinds::CANCEL, json!({})),
            status_entry("completed"),
        ],
    );
    assert_eq!(kinds_of(&h.ops), [ViolationKind::CancelIgnored]);
}

#[test]
fn the_recorder_keeps_every_operation_in_order() {
    let recorder = Recorder::new();
    let invoked = recorder.now();
    let first = recorder.record(3, 1, OpKind::Get { task: "t".into() }, invoked, ok());
    let second = recorder.record(4, 0, OpKind::Cancel { task: "t".into() }, invoked, ok());
    let history = recorder.history();
    assert_eq!((first, second), (0, 1));
    assert_eq!(history.len(), 2);
    assert!(history[0].completed >= history[0].invoked);
    assert_eq!(history[1].client, 4);
    assert_eq!(history[1].task(), Some("t"));
}
