//! The client's task event streams (`TaskHandle::events`, `McpClient::task_events`: draft
//! SEP-2694's `tasks/stream`) against our server, no mocks: `build_log`'s events read in
//! order without gaps to their end, over Streamable HTTP and stdio; a stream whose
//! connection is cut (a TCP proxy in between) or that the server ends before the task
//! (its shutdown) resumed after the last event, nothing lost or repeated; `events_gone`
//! and a server without event streams as typed errors; and `mcp-call` showing the
//! events on stderr (by default, `--no-events`, `--resume`, `--events` on a session
//! without them).
//!
//! Every server binds 127.0.0.1; every wait is bounded by [`WAIT`].

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use mcp_tasks::conformance::TcpProxy;
use mcp_tasks::{Limits, MemoryStore};
use mcp_tasks_client::{
    ClientConfig, ClientError, DeclineAll, DriverConfig, McpClient, Revision, Started, TaskEvent,
    TaskEvents, TaskHandle,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, Server};
use mcp_tests::programs;
use mcp_tests::server_harness::{TestServer, demo_tools};
use serde_json::{Value, json};

/// The bound of one scenario.
const WAIT: Duration = Duration::from_secs(40);

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const DEMO_STDIO: &str = env!("CARGO_BIN_EXE_demo-stdio");
const MCP_CALL: &str = env!("CARGO_BIN_EXE_mcp-call");

/// MCP 2026-07-28, with short waits between attempts (20 ms doubling to 200 ms), and
/// room for a slow machine: 40 attempts in a row without a new event (about 8 s).
fn config() -> ClientConfig {
    ClientConfig {
        request_timeout: Duration::from_secs(10),
        revision: Revision::V2026_07_28,
        driver: DriverConfig {
            default_poll: Duration::from_millis(50),
            min_poll: Duration::from_millis(20),
            max_poll: Duration::from_millis(200),
            stream_retries: 40,
            ..DriverConfig::default()
        },
        ..ClientConfig::default()
    }
}

async fn connect(url: &str) -> McpClient {
    McpClient::connect_http(url, Arc::new(DeclineAll), config())
        .await
        .expect("connect")
}

fn args(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("arguments must be an object, not {other}"),
    }
}

async fn build_log(client: &McpClient, steps: u32, interval_ms: u64) -> TaskHandle {
    let arguments = args(json!({ "steps": steps, "interval_ms": interval_ms }));
    match client.call_tool_as_task("build_log", arguments).await {
        Ok(Started::Task(handle)) => *handle,
        Ok(Started::Done(result)) => panic!("build_log ran synchronously: {result:?}"),
        Err(e) => panic!("build_log: {e}"),
    }
}

/// The lines `build_log` writes.
fn lines(steps: u32) -> Vec<String> {
    (1..=steps)
        .map(|i| format!("[{i}/{steps}] Compiling demo-unit-{i} ... ok"))
        .collect()
}

/// Reads `events` to its end (bounded): the events, and the error it ended with.
async fn read_all(events: &mut TaskEvents) -> (Vec<TaskEvent>, Option<ClientError>) {
    let mut read = Vec::new();
    let outcome = tokio::time::timeout(WAIT, async {
        while let Some(next) = events.next().await {
            match next {
                Ok(event) => read.push(event),
                Err(e) => return Some(e),
            }
        }
        None
    })
    .await
    .expect("the event stream ends in time");
    // Nothing after the end.
    assert!(events.next().await.is_none(), "the stream stays ended");
    (read, outcome)
}

/// Reads `n` events of `events` (bounded).
async fn read_n(events: &mut TaskEvents, n: usize) -> Vec<TaskEvent> {
    let mut read = Vec::new();
    while read.len() < n {
        let next = tokio::time::timeout(WAIT, events.next())
            .await
            .expect("an event in time")
            .expect("the stream goes on");
        read.push(next.expect("an event, not an error"));
    }
    read
}

fn seqs(events: &[TaskEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

fn texts(events: &[TaskEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e.text().map(str::to_owned))
        .collect()
}

/// The whole stream of a `build_log` of `steps` read from its start: every event from
/// 0 without a gap, its lines, and a terminal `completed` last.
fn assert_whole_build(events: &[TaskEvent], steps: u32, task_id: &str) {
    let n = events.len() as u64;
    assert_eq!(
        seqs(events),
        (0..n).collect::<Vec<_>>(),
        "in order, no gap, none twice"
    );
    assert_eq!(texts(events), lines(steps), "every line once, in order");
    assert_eq!(events[0].status(), Some(TaskStatus::Working));
    let last = events.last().expect("events");
    assert_eq!(last.status(), Some(TaskStatus::Completed), "{last:?}");
    for e in events {
        assert_eq!(e.task_id, task_id);
        assert!(e.at.is_some(), "the time is read: {e:?}");
        assert!(e.actor.is_some(), "the actor is read: {e:?}");
        assert_eq!(
            e.meta["io.modelcontextprotocol/related-task"]["taskId"],
            task_id
        );
    }
    let line = events.iter().find(|e| e.text().is_some()).expect("a line");
    assert_eq!(line.actor, Some(mcp_tasks::Actor::Worker), "{line:?}");
}

/// (a) The events of a task as they come, to the end, over Streamable HTTP; then the
/// same events again by task id from a cursor, and from the start.
#[tokio::test]
async fn a_tasks_events_arrive_in_order_without_gaps_and_end() {
    let s = TestServer::start().await;
    let client = connect(&s.url).await;
    let server = client.server().expect("negotiated");
    assert!(server.offers_event_streams(), "{server:?}");
    let task = build_log(&client, 5, 80).await;
    let mut events = task.events();
    let (read, failed) = read_all(&mut events).await;
    assert!(failed.is_none(), "{failed:?}");
    assert_whole_build(&read, 5, task.id());
    assert_eq!(events.resumes(), 0, "nothing broke");
    assert_eq!(events.cursor(), read.last().map(|e| e.seq));
    let result = tokio::time::timeout(WAIT, task.wait())
        .await
        .expect("in time")
        .expect("completed");
    assert_eq!(result.is_error, None);

    // By id, after a cursor: what follows it; without one, everything again.
    let other = connect(&s.url).await;
    let mut tail = other.task_events(task.id(), Some(2));
    let (after_two, failed) = read_all(&mut tail).await;
    assert!(failed.is_none(), "{failed:?}");
    assert_eq!(after_two, read[3..].to_vec());
    let mut again = task.events_after(0);
    let (after_zero, _) = read_all(&mut again).await;
    assert_eq!(after_zero, read[1..].to_vec());
}

/// (a) The same over stdio: the events come as notifications on the child's stdout.
#[tokio::test]
async fn a_tasks_events_arrive_over_stdio() {
    let client = McpClient::connect_stdio(DEMO_STDIO, &[], Arc::new(DeclineAll), config())
        .await
        .expect("connect over stdio");
    let task = build_log(&client, 4, 50).await;
    let (read, failed) = read_all(&mut task.events()).await;
    assert!(failed.is_none(), "{failed:?}");
    assert_whole_build(&read, 4, task.id());
}

/// (b) The connection is cut mid-stream and refused for a while, the reader reading on
/// meanwhile: the client asks again after the last event it yielded, waiting between
/// the refused attempts, and the reader sees every event once.
#[tokio::test]
async fn a_cut_connection_is_resumed_with_nothing_lost_or_repeated() {
    let s = TestServer::start().await;
    let (proxy, proxied) = TcpProxy::in_front_of(&s.url).await.expect("proxy");
    let client = connect(&proxied).await;
    let steps = 20;
    let task = build_log(&client, steps, 100).await;
    let mut events = task.events();
    let (seen, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        let mut read = Vec::new();
        let failed = tokio::time::timeout(WAIT, async {
            while let Some(next) = events.next().await {
                match next {
                    Ok(event) => {
                        let _ = seen.send(event.seq);
                        read.push(event);
                    }
                    Err(e) => return Some(e),
                }
            }
            None
        })
        .await
        .expect("the event stream ends in time");
        (read, failed, events.resumes())
    });
    // The first event, the status message, and 3 lines; then the cut.
    for _ in 0..5 {
        tokio::time::timeout(WAIT, heard.recv())
            .await
            .expect("an event in time")
            .expect("the reader goes on");
    }
    let before = proxy.connections();
    proxy.cut();
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.restore();
    let (read, failed, resumes) = tokio::time::timeout(WAIT, reader)
        .await
        .expect("the reader ends in time")
        .expect("the reader did not panic");
    assert!(failed.is_none(), "{failed:?}");
    assert_whole_build(&read, steps, task.id());
    assert!(
        resumes >= 2,
        "asked again while refused, and once back: {resumes}"
    );
    assert!(proxy.connections() > before, "over a new connection");
    let result = tokio::time::timeout(WAIT, task.wait())
        .await
        .expect("in time")
        .expect("completed");
    assert_eq!(result.is_error, None);
}

/// (b) The server ends the stream before the task ends (it is shutting down, its tasks
/// finishing in the grace period): the client sees the task is not terminal and asks
/// again until it is, nothing lost or repeated.
#[tokio::test]
async fn a_stream_the_server_ends_early_is_asked_again() {
    let s = TestServer::start().await;
    let client = connect(&s.url).await;
    let steps = 12;
    let task = build_log(&client, steps, 120).await;
    let mut events = task.events();
    let mut read = read_n(&mut events, 4).await;
    // Ends every stream at once; the running task has the grace period (10 s) to finish.
    let server = s.server.clone();
    let shutdown = tokio::spawn(async move { server.shutdown().await });
    let (rest, failed) = read_all(&mut events).await;
    assert!(failed.is_none(), "{failed:?}");
    read.extend(rest);
    assert_whole_build(&read, steps, task.id());
    assert!(events.resumes() >= 1, "asked again: {events:?}");
    let _ = tokio::time::timeout(WAIT, shutdown).await;
}

fn server_with_limits(limits: Limits) -> Server {
    let mut builder = Server::builder("mcp-tests", "0")
        .store(Arc::new(MemoryStore::new(limits)))
        .runtime(RuntimeConfig::default());
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    builder.build()
}

/// (c) Events past the server's retention: `events_gone` as a typed error with the
/// earliest event kept, from which the stream reads on.
#[tokio::test]
async fn events_no_longer_kept_are_a_typed_error() {
    let limits = Limits {
        max_log_entries: 3,
        ..Limits::default()
    };
    let s = TestServer::start_server(server_with_limits(limits), HttpConfig::default()).await;
    let client = connect(&s.url).await;
    let task = build_log(&client, 8, 30).await;
    tokio::time::timeout(WAIT, task.wait())
        .await
        .expect("in time")
        .expect("completed");
    // 11 events (created, status message, 8 lines, completed), the last 3 kept: 8..=10.
    let (read, failed) = read_all(&mut task.events_after(1)).await;
    assert!(read.is_empty(), "nothing skipped silently: {read:?}");
    let earliest = match failed {
        Some(ClientError::EventsGone {
            task_id,
            earliest_seq,
        }) => {
            assert_eq!(task_id, task.id());
            earliest_seq
        }
        other => panic!("events_gone expected: {other:?}"),
    };
    assert_eq!(earliest, 8);
    for mut events in [task.events_after(earliest - 1), task.events()] {
        let (read, failed) = read_all(&mut events).await;
        assert!(failed.is_none(), "{failed:?}");
        assert_eq!(seqs(&read), [8, 9, 10]);
        assert_eq!(
            read.last().and_then(TaskEvent::status),
            Some(TaskStatus::Completed)
        );
    }
}

/// (c) A session without event streams (MCP 2025-11-25) is told so, typed, and a task
/// the server does not know is refused as `tasks/get` refuses it.
#[tokio::test]
async fn no_event_streams_and_unknown_tasks_are_typed_errors() {
    let s = TestServer::start().await;
    let config_2025 = ClientConfig {
        revision: Revision::V2025_11_25,
        ..config()
    };
    let old = McpClient::connect_http(&s.url, Arc::new(DeclineAll), config_2025)
        .await
        .expect("connect");
    assert!(!old.server().expect("negotiated").offers_event_streams());
    let (read, failed) = read_all(&mut old.task_events("0".repeat(32), None)).await;
    assert!(read.is_empty());
    assert!(
        matches!(failed, Some(ClientError::EventStreamsUnsupported(_))),
        "{failed:?}"
    );

    let client = connect(&s.url).await;
    let (read, failed) = read_all(&mut client.task_events("0".repeat(32), None)).await;
    assert!(read.is_empty());
    let failed = failed.expect("refused");
    assert_eq!(
        mcp_tasks_client::rpc_code(&failed),
        Some(error_codes::INVALID_PARAMS),
        "{failed:?}"
    );
}

/// mcp-call against the demo with `args` after `--http URL --no-open --token-file FILE`:
/// its exit status, stdout and stderr (bounded).
async fn mcp_call(url: &str, name: &str, args: &[&str]) -> std::process::Output {
    let tokens = std::env::temp_dir().join(format!(
        "mcp-call-events-{}-{name}.json",
        std::process::id()
    ));
    let mut command = programs::mcp_call(MCP_CALL, url, &tokens);
    command.env("NO_COLOR", "1").args(args);
    programs::output_in_time(&mut command).await
}

/// Each of `lines` once in `text`, in order.
fn assert_lines_once_in_order(text: &str, lines: &[String]) {
    let mut from = 0;
    for line in lines {
        assert_eq!(
            text.matches(line.as_str()).count(),
            1,
            "{line:?} once in {text}"
        );
        let at = text[from..]
            .find(line.as_str())
            .unwrap_or_else(|| panic!("{line:?} in order in {text}"));
        from += at + line.len();
    }
}

/// (d) mcp-call shows the task's events on stderr as they come (the demo advertises
/// event streams), not with `--no-events`, and again for `--resume` of a detached task;
/// with `--events` on a session without them it says so and still follows the task.
#[tokio::test]
async fn mcp_call_shows_a_tasks_events_on_stderr() {
    let (_demo, url) = programs::start_demo(DEMO, &[]).await;
    let build = r#"{"steps":4,"interval_ms":100}"#;
    let run = mcp_call(&url, "shown", &["build_log", build]).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "build finished: 4 steps, 0 errors");
    assert_lines_once_in_order(&stderr, &lines(4));
    // Stderr is a pipe: no escape codes, and the store's own entries left to the
    // status lines.
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
    assert!(!stderr.contains("rs.mcp-tasks.status"), "{stderr}");

    let run = mcp_call(&url, "hidden", &["--no-events", "build_log", build]).await;
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(!stderr.contains("Compiling"), "{stderr}");

    let detached = mcp_call(&url, "detach", &["--detach", "build_log", build]).await;
    assert!(detached.status.success(), "{detached:?}");
    let reference = String::from_utf8_lossy(&detached.stdout).trim().to_owned();
    assert!(reference.starts_with('{'), "{reference}");
    let run = mcp_call(&url, "resume", &["--resume", &reference]).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "build finished: 4 steps, 0 errors");
    assert_lines_once_in_order(&stderr, &lines(4));

    // MCP 2025-11-25 (`--client-tasks`) has no event streams: `--events` says so.
    let run = mcp_call(
        &url,
        "old",
        &["--client-tasks", "--events", "build_log", build],
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "build finished: 4 steps, 0 errors");
    assert!(
        stderr.contains("does not serve task event streams"),
        "{stderr}"
    );
}

/// A task's event text, status message and result are data: mcp-call writes the control
/// characters a tool put in them as visible `\u{..}` escapes, so no escape sequence of
/// the server's choosing (a title, a cleared screen, a bell) reaches the terminal.
#[tokio::test]
async fn mcp_call_shows_control_characters_as_escapes() {
    use mcp_tasks_server::{CallToolResult, ContentBlock, TaskPolicy, ToolContext, ToolDef};

    const HOSTILE: &str = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\u{9b}";
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    let tool = ToolDef::new(
        "hostile",
        TaskPolicy::Required,
        |ctx: ToolContext, _args: NoArgs| async move {
            ctx.status(format!("status {HOSTILE}")).await?;
            ctx.emit_text(format!("event {HOSTILE}")).await?;
            // Time for the event to be shown before the result ends the run.
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(CallToolResult::new(vec![ContentBlock::Text(
                mcp_tasks_protocol::types::TextContent::new(format!("result {HOSTILE}\nline 2")),
            )]))
        },
    )
    .expect("tool");
    let s =
        TestServer::start_with(vec![tool], RuntimeConfig::default(), HttpConfig::default()).await;
    let run = mcp_call(&s.url, "hostile", &["hostile", "{}"]).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{stdout}\n{stderr}");
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(
            !text
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{name} carries a raw control character: {text:?}"
        );
    }
    assert!(
        stderr.contains("event \\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{1b}[31mred\\u{9b}"),
        "{stderr}"
    );
    assert!(stdout.starts_with("result \\u{1b}]0;pwned"), "{stdout}");
    assert!(
        stdout.contains("\nline 2"),
        "newlines of a result stay: {stdout:?}"
    );
}
