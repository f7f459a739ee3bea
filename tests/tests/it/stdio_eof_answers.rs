//! `echo REQUESTS | demo --stdio`: requests piped in and stdin closed at once, with no
//! delay. Every request read before the end of input is answered before the server
//! exits (within the shutdown grace); one still running when the grace runs out is
//! cancelled unanswered, and the log says so.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use mcp_tests::legacy::init_params;
use mcp_tests::server_harness::{WAIT, call_params, meta, request};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");

/// How many times each piped script runs: losing answers was a race (about 4 runs in 10).
const RUNS: usize = 20;

/// What a run of a child printed and logged.
struct Ran {
    stdout: String,
    stderr: String,
}

impl Ran {
    /// The JSON-RPC frames on stdout (every line must be one).
    fn frames(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| {
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
            })
            .collect()
    }

    /// The frame answering request `id`; panics (with the run's output) when none does.
    fn answer(&self, id: i64) -> Value {
        self.frames()
            .into_iter()
            .find(|f| f["id"] == json!(id))
            .unwrap_or_else(|| {
                panic!(
                    "no answer to request {id}\nstdout:\n{}\nstderr:\n{}",
                    self.stdout, self.stderr
                )
            })
    }
}

/// Runs `program` with `args` and `env`, writes `lines` to its stdin in one write, closes
/// it at once, and waits (bounded) for the child to exit successfully.
async fn pipe(program: &str, args: &[&str], env: &[(&str, &str)], lines: &[Value]) -> Ran {
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the server");
    let mut input = String::new();
    for line in lines {
        input.push_str(&line.to_string());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text).await;
        text
    });
    let err = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    stdin
        .write_all(input.as_bytes())
        .await
        .expect("write stdin");
    drop(stdin);
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exits in time after its input ends")
        .expect("wait");
    let stdout = tokio::time::timeout(WAIT, out)
        .await
        .expect("stdout closes")
        .expect("stdout reader");
    let stderr = tokio::time::timeout(WAIT, err)
        .await
        .expect("stderr closes")
        .expect("stderr reader");
    assert!(status.success(), "{status:?}\nstderr:\n{stderr}");
    Ran { stdout, stderr }
}

/// The demo binary on stdio with a memory store, fed `lines`.
async fn demo(lines: &[Value]) -> Ran {
    pipe(DEMO, &["--stdio", "--store", "memory"], &[], lines).await
}

#[tokio::test]
async fn piped_2026_07_28_requests_are_all_answered() {
    let script = [
        request(1, "server/discover", json!({ "_meta": meta(false) })),
        request(2, "tools/list", json!({ "_meta": meta(false) })),
        request(
            3,
            "tools/call",
            call_params("greet", json!({ "name": "Ada" }), false),
        ),
    ];
    for run in 0..RUNS {
        let ran = demo(&script).await;
        assert_eq!(
            ran.answer(1)["result"]["resultType"],
            "complete",
            "run {run}"
        );
        assert!(
            ran.answer(2)["result"]["tools"].is_array(),
            "run {run}: {}",
            ran.stdout
        );
        assert_eq!(
            ran.answer(3)["result"]["content"][0]["text"],
            "Hello, Ada!",
            "run {run}"
        );
    }
}

#[tokio::test]
async fn piped_2025_11_25_session_requests_are_all_answered() {
    let script = [
        request(1, "initialize", init_params()),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        request(2, "tools/list", json!({})),
        request(
            3,
            "tools/call",
            json!({ "name": "greet", "arguments": { "name": "Ada" } }),
        ),
    ];
    for run in 0..RUNS {
        let ran = demo(&script).await;
        assert_eq!(
            ran.answer(1)["result"]["protocolVersion"],
            "2025-11-25",
            "run {run}"
        );
        // Requests piped behind `initialize` may run before its session exists (MCP
        // asks a client to wait for the `initialize` answer): each is answered all the
        // same, which is what this test is about.
        for id in [2, 3] {
            let answer = ran.answer(id);
            assert!(
                answer.get("result").is_some() || answer.get("error").is_some(),
                "run {run}: {answer}"
            );
        }
        let ids: BTreeSet<String> = ran
            .frames()
            .iter()
            .filter_map(|f| f.get("id").map(Value::to_string))
            .collect();
        assert_eq!(ids.len(), 3, "one answer each: {}", ran.stdout);
    }
}

/// A request that outlasts the shutdown grace is cancelled unanswered, and logged with its
/// id; the others are answered, and the server exits soon after the grace.
#[tokio::test]
async fn a_request_that_outlasts_the_grace_is_logged_as_dropped() {
    let script = [
        request(
            7,
            "tools/call",
            call_params("slow_compute", json!({ "seconds": 30 }), false),
        ),
        request(
            8,
            "tools/call",
            call_params("greet", json!({ "name": "Bo" }), false),
        ),
    ];
    let began = Instant::now();
    let ran = pipe(
        env!("CARGO_BIN_EXE_demo-stdio"),
        &[],
        &[("SHUTDOWN_GRACE_MS", "300"), ("RUST_LOG", "warn")],
        &script,
    )
    .await;
    assert!(
        began.elapsed() < Duration::from_secs(15),
        "the grace bounds the wait: {:?}",
        began.elapsed()
    );
    assert_eq!(ran.answer(8)["result"]["content"][0]["text"], "Hello, Bo!");
    assert!(
        ran.frames().iter().all(|f| f["id"] != json!(7)),
        "the dropped request got an answer: {}",
        ran.stdout
    );
    let logged = without_colours(&ran.stderr);
    assert!(
        logged.contains("grace ran out") && logged.contains("ids=7"),
        "the dropped request is logged with its id: {logged}"
    );
}

/// `text` without its ANSI colour sequences (`ESC [ ... m`).
fn without_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
