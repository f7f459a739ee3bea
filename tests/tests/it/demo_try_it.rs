//! The `curl` command the demo prints at start ("Try it:") works as pasted: its URL,
//! `-H` headers and `-d` body, sent as they are, get a JSON-RPC result. Sent with reqwest,
//! so the test does not need the curl binary.

use std::process::Stdio;

use mcp_tests::server_harness::WAIT;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");

/// A printed command as a shell would split it: words apart on blanks, `'...'` kept whole
/// (without the quotes), a backslash before a line break joining the lines.
fn shell_words(command: &str) -> Vec<String> {
    let command = command.replace("\\\n", " ");
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    for c in command.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            c if c.is_whitespace() && !quoted => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(!quoted, "an unclosed quote in {command}");
    words.extend(word);
    words
}

/// What the printed `curl` sends: URL, headers, body.
struct Curl {
    url: String,
    headers: Vec<(String, String)>,
    body: String,
}

fn parse_curl(command: &str) -> Curl {
    let words = shell_words(command);
    assert_eq!(words.first().map(String::as_str), Some("curl"), "{command}");
    let mut url = None;
    let mut headers = Vec::new();
    let mut body = None;
    let mut rest = words[1..].iter();
    while let Some(word) = rest.next() {
        match word.as_str() {
            "-s" => {}
            "-H" => {
                let header = rest.next().expect("a header after -H");
                let (name, value) = header.split_once(':').expect("NAME: VALUE");
                headers.push((name.trim().to_owned(), value.trim().to_owned()));
            }
            "-d" => body = Some(rest.next().expect("a body after -d").clone()),
            other if other.starts_with("http") => url = Some(other.to_owned()),
            other => panic!("an option this test does not know: {other} in {command}"),
        }
    }
    Curl {
        url: url.expect("a URL"),
        headers,
        body: body.expect("a body"),
    }
}

/// The JSON-RPC message of a reply: the body itself (JSON), or the last `data:` line of
/// an event stream.
fn message_of(content_type: &str, text: &str) -> Value {
    let json = if content_type.starts_with("text/event-stream") {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|d| !d.is_empty())
            .unwrap_or_else(|| panic!("no data in the event stream: {text}"))
            .to_owned()
    } else {
        text.to_owned()
    };
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[tokio::test]
async fn the_printed_curl_command_gets_a_result() {
    let mut demo = tokio::process::Command::new(DEMO)
        .args(["--http", "127.0.0.1:0", "--store", "memory"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the demo");
    let mut lines = BufReader::new(demo.stdout.take().expect("stdout")).lines();
    // The lines after "Try it:", up to the one that does not continue with a backslash.
    let command = tokio::time::timeout(WAIT, async {
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().await.expect("read stdout") {
            if line.trim() == "Try it:" {
                let mut command = String::new();
                while let Some(line) = lines.next_line().await.expect("read stdout") {
                    command.push_str(line.trim());
                    if !line.ends_with('\\') {
                        return command;
                    }
                    command.push('\n');
                }
                panic!("the command ends with a backslash: {command}");
            }
            seen.push(line);
        }
        panic!("no \"Try it:\" line in {seen:?}");
    })
    .await
    .expect("the demo prints its command in time");

    let curl = parse_curl(&command);
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .expect("HTTP client");
    let mut post = client.post(&curl.url).body(curl.body.clone());
    for (name, value) in &curl.headers {
        post = post.header(name, value);
    }
    let response = post.send().await.expect("the demo answers");
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = response.text().await.expect("a body");
    assert!(status.is_success(), "HTTP {status}: {text}\n{command}");
    let reply = message_of(&content_type, &text);
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert_eq!(reply["id"], 1, "{reply}");
    assert!(
        reply["result"].is_object(),
        "a result, not an error: {reply}\n{command}"
    );
    let _ = demo.start_kill();
}
