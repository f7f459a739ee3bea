//! A task's event stream (`tasks/stream`, draft SEP-2694) read on the wire: the request,
//! opened on a node's URL, read up to its response, and the events' sequence numbers.
//! Every wait is bounded by [`EVENT_WAIT`].

use std::time::Duration;

use serde_json::{Value, json};

use crate::server_harness::{SseStream, WAIT, meta, request, standard_headers};

/// The upper bound of the wait for a stream's next frame.
pub const EVENT_WAIT: Duration = Duration::from_secs(20);

/// A `tasks/stream` request with `id` for `task_id`, after the cursor `after` if given,
/// declaring the tasks extension.
pub fn stream_request(id: i64, task_id: &str, after: Option<u64>) -> Value {
    let mut params = json!({ "taskId": task_id, "_meta": meta(true) });
    if let Some(after) = after {
        params["after"] = json!(after);
    }
    request(id, "tasks/stream", params)
}

/// Opens `tasks/stream` (id 1) for `task_id` after `after` on the node at `url`, with the
/// standard headers derived from it.
pub async fn open(url: &str, task_id: &str, after: Option<u64>) -> SseStream {
    let message = stream_request(1, task_id, after);
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("HTTP client")
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        // The stream outlives an ordinary request: read it with bounded waits.
        .timeout(Duration::from_secs(3600))
        .body(message.to_string());
    for (name, value) in standard_headers(&message) {
        builder = builder.header(name, value);
    }
    let response = tokio::time::timeout(WAIT, builder.send())
        .await
        .expect("stream opened in time")
        .expect("HTTP request");
    SseStream::from_response(response)
}

/// Every frame of the stream up to the response: the events' params, then the response.
/// Panics on a frame that is neither a `notifications/tasks/event` nor the response.
pub async fn read_to_end(stream: &mut SseStream) -> (Vec<Value>, Value) {
    let mut events = Vec::new();
    loop {
        let frame = stream
            .next_event(EVENT_WAIT)
            .await
            .expect("the stream goes on until its response")
            .json();
        if frame.get("id").is_some() {
            return (events, frame);
        }
        assert_eq!(frame["method"], "notifications/tasks/event", "{frame}");
        events.push(frame["params"].clone());
    }
}

/// The `seq` of each event (panics on an event without one).
pub fn seqs(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect()
}
