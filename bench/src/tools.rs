//! The tools every benchmarked server offers, with the same behaviour on each:
//!
//! | tool | runs | does |
//! |---|---|---|
//! | `echo` | synchronously | answers `"hello"` |
//! | `work {ms}` | as a task | waits `ms` (not at all for 0), then answers `{"done_at_us": T}`, the wall-clock microsecond it finished (push latency is measured from it) |
//! | `ask` | as a task | asks for a name (one input request), then answers it |
//! | `maybe {ms}` (ours only) | in the request, a task past its deadline | as `work`; the deadline is `mcp-bench serve ours --deadline-ms` (rmcp has no such policy) |
//! | `emit {count, interval_ms}` (ours only) | as a task | emits `count` events `rs.mcp-bench.tick` with `{"at_us": T}`, one every `interval_ms` (emit -> client latency is measured from `T`), then answers as `work` |

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in microseconds since the Unix epoch.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// The text of `work`'s answer: when it finished, in microseconds since the Unix epoch.
pub fn done_now() -> String {
    format!("{{\"done_at_us\":{}}}", now_us())
}

/// The form `ask` sends (an elicitation request's params).
pub fn ask_form() -> serde_json::Value {
    serde_json::json!({
        "mode": "form",
        "message": "Your name?",
        "requestedSchema": {
            "type": "object",
            "properties": { "name": { "type": "string" } },
            "required": ["name"]
        }
    })
}
