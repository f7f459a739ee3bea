//! The engine over a real child process on stdio (the `stdio-peer` binary): traffic in
//! both directions, a request from inside a handler, cancellation, and bad input; stdout
//! carries nothing but protocol frames.

use std::process::Stdio;
use std::time::Duration;

use mcp_tasks_protocol::engine::{Connection, EndpointBuilder, Peer, PeerError};
use mcp_tasks_protocol::error_codes;
use mcp_tests::{Ask, Echo, Slow, SlowParams, Storm, StormParams, Text, client_methods};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

const TIMEOUT: Duration = Duration::from_secs(30);
const CHILD_LIMIT: usize = 64 * 1024;

fn spawn_child() -> Child {
    Command::new(env!("CARGO_BIN_EXE_stdio-peer"))
        .env("MAX_FRAME_BYTES", CHILD_LIMIT.to_string())
        .env("RUST_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn stdio-peer")
}

/// A client endpoint talking to a fresh child over its pipes.
fn connect() -> (Peer, Child) {
    let mut child = spawn_child();
    let stdout = child.stdout.take().expect("piped stdout");
    let stdin = child.stdin.take().expect("piped stdin");
    let (conn, _io) = Connection::from_io(stdout, stdin, 1 << 20);
    // The child's storm keeps 1,000 requests in flight here: above the default limit.
    let client = EndpointBuilder::new(client_methods())
        .max_inflight_requests(4096)
        .build();
    let (peer, _) = client.serve(conn);
    (peer, child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_interleaved_requests_in_both_directions_over_stdio() {
    let (peer, _child) = connect();
    const N: usize = 1000;
    let ours = (0..N).map(|i| {
        let peer = peer.clone();
        async move {
            let text = format!("p{i}");
            matches!(peer.request::<Echo>(&Text { text: text.clone() }).await, Ok(t) if t.text == text)
        }
    });
    // The child sends N echo requests back to us while ours are in flight.
    let theirs = peer.request::<Storm>(&StormParams { count: N });
    let (ours, theirs) = tokio::time::timeout(TIMEOUT, async {
        tokio::join!(futures::future::join_all(ours), theirs)
    })
    .await
    .expect("in time");
    assert_eq!(ours.into_iter().filter(|ok| *ok).count(), N);
    assert_eq!(theirs.expect("storm answered").count, N);
}

#[tokio::test]
async fn elicitation_round_trip_over_stdio() {
    let (peer, _child) = connect();
    let out = tokio::time::timeout(
        TIMEOUT,
        peer.request::<Ask>(&Text {
            text: "Name?".into(),
        }),
    )
    .await
    .expect("in time")
    .expect("answered");
    assert_eq!(out.text, "Hello, Ada!");
}

#[tokio::test]
async fn cancellation_over_stdio() {
    let (peer, _child) = connect();
    let slow = peer.request::<Slow>(&SlowParams { millis: 60_000 });
    assert!(
        tokio::time::timeout(Duration::from_millis(200), slow)
            .await
            .is_err()
    );
    assert_eq!(peer.pending_count(), 0);
    let t = tokio::time::timeout(
        TIMEOUT,
        peer.request::<Echo>(&Text {
            text: "still here".into(),
        }),
    )
    .await
    .expect("in time")
    .expect("echo");
    assert_eq!(t.text, "still here");
}

#[tokio::test]
async fn child_exit_fails_pending_requests() {
    let (peer, mut child) = connect();
    let slow = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request::<Slow>(&SlowParams { millis: 60_000 }).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    child.kill().await.expect("kill");
    let out = tokio::time::timeout(TIMEOUT, slow)
        .await
        .expect("in time")
        .expect("join");
    assert!(matches!(out, Err(PeerError::Closed)), "{out:?}");
}

/// Raw lines into the child's stdin; every stdout line must be a JSON-RPC frame.
#[tokio::test]
async fn bad_input_over_stdio_and_stdout_is_only_frames() {
    let mut child = spawn_child();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let big = "y".repeat(CHILD_LIMIT + 10);
    let input = [
        "{oops".to_owned(),
        r#"{"not":"rpc"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"greet","params":{"times":1}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":99,"result":{}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":3,"method":"boom","params":{"text":"x"}}"#.to_owned(),
        json!({"jsonrpc":"2.0","id":4,"method":"echo","params":{"text":big}}).to_string(),
        r#"{"jsonrpc":"2.0","id":5,"method":"echo","params":{"text":"last"}}"#.to_owned(),
    ];
    for line in &input {
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.write_all(b"\n").await.expect("write");
    }
    stdin.flush().await.expect("flush");

    let mut by_id: Vec<(Value, Option<i64>)> = Vec::new();
    let read = async {
        while let Some(line) = lines.next_line().await.expect("read") {
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{v}");
            by_id.push((v["id"].clone(), v["error"]["code"].as_i64()));
            // Seven answers are due (the stray response gets none); they may come in any order.
            if by_id.len() == 7 {
                break;
            }
        }
    };
    tokio::time::timeout(TIMEOUT, read)
        .await
        .expect("all answers in time");
    let codes: Vec<Option<i64>> = by_id.iter().map(|(_, c)| *c).collect();
    let sorted = |mut v: Vec<Option<i64>>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(codes),
        sorted(vec![
            Some(error_codes::PARSE_ERROR),
            Some(error_codes::INVALID_REQUEST),
            Some(error_codes::METHOD_NOT_FOUND),
            Some(error_codes::INVALID_PARAMS),
            Some(error_codes::INTERNAL_ERROR),
            Some(error_codes::INVALID_REQUEST),
            None,
        ]),
        "{by_id:?}"
    );
    drop(stdin);
    let status = tokio::time::timeout(TIMEOUT, child.wait())
        .await
        .expect("exits on EOF")
        .expect("wait");
    assert!(status.success(), "{status:?}");
}
