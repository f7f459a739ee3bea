//! The demo server over stdio, as a real child process (`demo-stdio`): discovery, tasks
//! polled to completion, input through tasks/update, a synchronous MRTR round trip,
//! `notifications/cancelled` on a synchronous call, bad input lines; stdout carries
//! nothing but JSON-RPC frames (logs go to stderr).

use std::process::Stdio;
use std::time::{Duration, Instant};

use mcp_tasks_protocol::error_codes;
use mcp_tests::server_harness::{
    POLL_EVERY, TASKS_EXTENSION, WAIT, accept, call_params, meta, request, task_params,
    update_params,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

/// A `demo-stdio` child with its pipes.
struct DemoChild {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: JoinHandle<String>,
    next_id: i64,
}

impl DemoChild {
    fn spawn() -> DemoChild {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_demo-stdio"))
            .env("RUST_LOG", "debug")
            .env("SHUTDOWN_GRACE_MS", "200")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn demo-stdio");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let mut stderr = child.stderr.take().expect("piped stderr");
        // Drain stderr all along, so the child never blocks on a full pipe.
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text).await;
            text
        });
        DemoChild {
            child,
            stdin: Some(stdin),
            stdout,
            stderr,
            next_id: 1,
        }
    }

    async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        tokio::time::timeout(WAIT, write)
            .await
            .expect("written in time")
            .expect("write to the child");
    }

    async fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string()).await;
    }

    /// The next stdout line, which must be a JSON-RPC 2.0 frame.
    async fn next_frame(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.stdout.next_line())
            .await
            .expect("a frame in time")
            .expect("read stdout")
            .expect("stdout still open");
        let frame: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert_eq!(frame["jsonrpc"], "2.0", "{line}");
        frame
    }

    /// Sends a request and returns its response (the next frame, which must carry its id).
    async fn rpc(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&request(id, method, params)).await;
        let frame = self.next_frame().await;
        assert_eq!(frame["id"], id, "{frame}");
        frame
    }

    async fn poll_task(&mut self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let frame = self.rpc("tasks/get", task_params(id, true)).await;
            let result = frame["result"].clone();
            if done(&result) {
                return result;
            }
            assert!(Instant::now() < deadline, "task {id} stuck at {result}");
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Closes stdin; the child must exit successfully. Returns its stderr.
    async fn finish(mut self) -> String {
        drop(self.stdin.take());
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("exits on EOF in time")
            .expect("wait");
        assert!(status.success(), "{status:?}");
        // Anything left on stdout must be frames too.
        while let Some(line) = tokio::time::timeout(WAIT, self.stdout.next_line())
            .await
            .expect("stdout closes")
            .expect("read stdout")
        {
            let frame: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            assert_eq!(frame["jsonrpc"], "2.0", "{line}");
        }
        tokio::time::timeout(WAIT, self.stderr)
            .await
            .expect("stderr closes")
            .expect("stderr reader")
    }
}

#[tokio::test]
async fn discover_over_stdio() {
    let mut c = DemoChild::spawn();
    let reply = c
        .rpc("server/discover", json!({"_meta": meta(false)}))
        .await;
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete", "{reply}");
    assert_eq!(
        result["capabilities"]["extensions"][TASKS_EXTENSION],
        json!({})
    );
    assert!(result["capabilities"].get("tasks").is_none());
    let tools = c.rpc("tools/list", json!({"_meta": meta(false)})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for want in ["greet", "slow_compute", "confirm_delete", "multi_input"] {
        assert!(names.contains(&want), "{names:?}");
    }
    let stderr = c.finish().await;
    assert!(
        stderr.contains("demo server ready"),
        "logs go to stderr: {stderr}"
    );
}

#[tokio::test]
async fn a_task_is_created_and_polled_to_completion_over_stdio() {
    let mut c = DemoChild::spawn();
    let created = c
        .rpc(
            "tools/call",
            call_params("slow_compute", json!({"seconds": 0.2, "label": "io"}), true),
        )
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let done = c.poll_task(&id, |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "io: done after 0.2 s");
    c.finish().await;
}

#[tokio::test]
async fn an_input_required_task_is_answered_with_tasks_update_over_stdio() {
    let mut c = DemoChild::spawn();
    let created = c
        .rpc(
            "tools/call",
            call_params("confirm_delete", json!({"filename": "s.txt"}), true),
        )
        .await;
    let id = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let waiting = c.poll_task(&id, |t| t["status"] == "input_required").await;
    let key = waiting["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("an input request");
    let ack = c
        .rpc(
            "tasks/update",
            update_params(&id, json!({ &key: accept(json!({"confirm": true})) })),
        )
        .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let done = c.poll_task(&id, |t| t["status"] == "completed").await;
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Deleted s.txt")),
        "{done}"
    );
    c.finish().await;
}

#[tokio::test]
async fn a_synchronous_mrtr_round_trip_over_stdio() {
    let mut c = DemoChild::spawn();
    let round1 = c
        .rpc(
            "tools/call",
            call_params("confirm_delete", json!({"filename": "m.txt"}), false),
        )
        .await;
    let r1 = &round1["result"];
    assert_eq!(r1["resultType"], "input_required", "{round1}");
    assert!(r1.get("taskId").is_none(), "{round1}");
    let state = r1["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    let (key, req) = r1["inputRequests"]
        .as_object()
        .and_then(|m| m.iter().next())
        .expect("one input request");
    assert_eq!(req["method"], "elicitation/create");

    let mut params = call_params("confirm_delete", json!({"filename": "m.txt"}), false);
    params["inputResponses"] = json!({ key: accept(json!({"confirm": true})) });
    params["requestState"] = json!(state);
    let round2 = c.rpc("tools/call", params).await;
    let r2 = &round2["result"];
    assert_eq!(r2["resultType"], "complete", "{round2}");
    assert!(r2.get("requestState").is_none(), "{round2}");
    assert!(
        r2["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Deleted m.txt")),
        "{round2}"
    );
    c.finish().await;
}

/// `notifications/cancelled` stops a synchronous call: no response for it ever comes.
/// The call would take 2 s; the check runs past that, so a late response would show.
#[tokio::test]
async fn notifications_cancelled_stops_a_synchronous_call_over_stdio() {
    let mut c = DemoChild::spawn();
    let started = Instant::now();
    c.send(&request(
        100,
        "tools/call",
        call_params("slow_compute", json!({"seconds": 2}), false),
    ))
    .await;
    // Right behind the request: the cancellation must not be lost.
    c.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 100, "reason": "test"}}),
    )
    .await;
    let next = c
        .rpc(
            "tools/call",
            call_params("greet", json!({"name": "Bob"}), false),
        )
        .await;
    assert_eq!(next["result"]["content"][0]["text"], "Hello, Bob!");

    // Past the call's natural end: the next frame must still be the next response.
    let natural_end = Duration::from_millis(2_500);
    if let Some(rest) = natural_end.checked_sub(started.elapsed()) {
        tokio::time::sleep(rest).await;
    }
    let after = c
        .rpc("server/discover", json!({"_meta": meta(false)}))
        .await;
    assert_eq!(after["result"]["resultType"], "complete", "{after}");
    let stderr = c.finish().await;
    assert!(
        stderr.contains("request cancelled; no response sent"),
        "the engine saw the cancellation: {stderr}"
    );
}

#[tokio::test]
async fn bad_input_lines_are_answered_and_the_child_keeps_serving() {
    let mut c = DemoChild::spawn();
    let lines = [
        "{oops".to_owned(),
        r#"{"not":"rpc"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"nope","params":{}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x"}}}"#.to_owned(),
        request(3, "tools/call", call_params("no_such_tool", json!({}), true)).to_string(),
        request(4, "tools/call", call_params("slow_compute", json!({"seconds": "x"}), true)).to_string(),
        request(5, "tasks/get", task_params("no-such-task", true)).to_string(),
        request(6, "tasks/get", task_params("no-such-task", false)).to_string(),
        request(7, "tasks/result", task_params("no-such-task", true)).to_string(),
        r#"{"jsonrpc":"2.0","id":99,"result":{}}"#.to_owned(),
        "".to_owned(),
    ];
    for line in &lines {
        c.send_line(line).await;
    }
    // Nine answers are due (the stray response and the blank line get none), in any order.
    let mut got: Vec<(Value, i64)> = Vec::new();
    while got.len() < 9 {
        let frame = c.next_frame().await;
        let code = frame["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("expected an error: {frame}"));
        got.push((frame["id"].clone(), code));
    }
    let mut expected = vec![
        (Value::Null, error_codes::PARSE_ERROR),
        (Value::Null, error_codes::INVALID_REQUEST),
        (json!(1), error_codes::METHOD_NOT_FOUND),
        (json!(2), error_codes::INVALID_PARAMS),
        (json!(3), error_codes::INVALID_PARAMS),
        (json!(4), error_codes::INVALID_PARAMS),
        (json!(5), error_codes::INVALID_PARAMS),
        (json!(6), error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY),
        (json!(7), error_codes::METHOD_NOT_FOUND),
    ];
    let order = |(id, code): &(Value, i64)| (id.as_i64().unwrap_or(-1), *code);
    expected.sort_by_key(order);
    got.sort_by_key(order);
    assert_eq!(got, expected);

    c.next_id = 50;
    let greet = c
        .rpc(
            "tools/call",
            call_params("greet", json!({"name": "Ann"}), false),
        )
        .await;
    assert_eq!(greet["result"]["content"][0]["text"], "Hello, Ann!");
    let stderr = c.finish().await;
    assert!(!stderr.is_empty(), "debug logs went to stderr");
}

#[tokio::test]
async fn the_child_exits_on_eof_with_a_task_still_running() {
    let mut c = DemoChild::spawn();
    let created = c
        .rpc(
            "tools/call",
            call_params("slow_compute", json!({"seconds": 60}), true),
        )
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let began = Instant::now();
    let stderr = c.finish().await;
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    assert!(stderr.contains("grace period over"), "{stderr}");
}
