//! Arbitrary bytes never panic the decoder: neither the frame classifier nor the message
//! types, nor the newline-delimited reader.

use std::sync::Arc;

use mcp_tasks_protocol::engine::{Connection, EndpointBuilder};
use mcp_tasks_protocol::jsonrpc::JsonRpcMessage;
use mcp_tests::{Observed, fixture_methods};
use proptest::prelude::*;

fn json_like() -> impl Strategy<Value = String> {
    // Mostly JSON-ish text, so the fuzzer reaches past the first byte.
    let atoms = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"jsonrpc\"",
        "\"2.0\"",
        "\"id\"",
        "\"method\"",
        "\"params\"",
        "\"result\"",
        "\"error\"",
        "null",
        "1",
        "-1",
        "1.5",
        "\"x\"",
        "true",
        "\\u0000",
        "\"\\ud800\"",
        "1e999",
    ]);
    prop::collection::vec(atoms, 0..40).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn classify_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let endpoint = EndpointBuilder::new(fixture_methods(Arc::new(Observed::default()))).build();
        let text = String::from_utf8_lossy(&bytes);
        let _ = endpoint.classify(&text);
        let _ = serde_json::from_slice::<JsonRpcMessage>(&bytes);
    }

    #[test]
    fn classify_never_panics_on_json_like_text(text in json_like()) {
        let endpoint = EndpointBuilder::new(fixture_methods(Arc::new(Observed::default()))).build();
        let _ = endpoint.classify(&text);
        let _ = serde_json::from_str::<JsonRpcMessage>(&text);
    }
}

/// Raw bytes (invalid UTF-8, NULs, overlong lines) through the stdio reader: the session
/// survives and still answers.
#[tokio::test]
async fn reader_survives_arbitrary_bytes() {
    use tokio::io::{AsyncWriteExt, duplex};
    let (mut client_io, server_io) = duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_io);
    let endpoint = EndpointBuilder::new(fixture_methods(Arc::new(Observed::default()))).build();
    let (conn, _io) = Connection::from_io(server_read, server_write, 1024);
    let _session = endpoint.serve(conn);

    let mut garbage: Vec<u8> = (0..=255u8).collect();
    garbage.extend_from_slice(b"\n\xff\xfe{\"jsonrpc\":\n");
    garbage.extend(std::iter::repeat_n(b'a', 5000));
    garbage.extend_from_slice(b"\n");
    client_io.write_all(&garbage).await.expect("write");
    client_io
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"after\",\"method\":\"echo\",\"params\":{\"text\":\"alive\"}}\n")
        .await
        .expect("write");

    let mut buf = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout_at(
            deadline,
            tokio::io::AsyncReadExt::read(&mut client_io, &mut chunk),
        )
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no answer within 5 s; got {:?}",
                String::from_utf8_lossy(&buf)
            )
        })
        .expect("read");
        assert!(n > 0, "session closed");
        buf.extend_from_slice(&chunk[..n]);
        if String::from_utf8_lossy(&buf).contains("alive") {
            break;
        }
    }
    for line in String::from_utf8_lossy(&buf).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("every output line is JSON");
        assert!(v.get("result").is_some() || v.get("error").is_some(), "{v}");
    }
}
