//! The load side of the chaos test (`tests/chaos.rs`): [`LoadClients`], clients of API
//! nodes that come and go. A node's URL is replaced when it restarts on a new port; until
//! then requests to it are refused. Every request goes to the next node in turn; a
//! refusal (no connection, a broken one, no JSON-RPC answer, -32603 saying the store is
//! unavailable, -32029) is counted by kind and retried by the caller; any other error is
//! an anomaly (recorded, and retried too). Each client creates `slow_compute` tasks with its
//! own label and duration and records the ids it was handed, so that a task's result can
//! be checked to be its own ([`own_result_run`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use mcp_tasks::STORE_UNAVAILABLE_MESSAGE;
use mcp_tasks_protocol::error_codes;
use serde_json::Value;
use tokio::time::Instant;

use crate::node_harness::slow;
use crate::server_harness::{call_params, request, standard_headers, task_params};

/// One HTTP exchange, at most.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause before a refused request is sent again.
pub const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// How often a task is read while a client waits for its end.
pub const POLL_EVERY: Duration = Duration::from_millis(100);
/// How long a client follows the task it created before it creates the next.
pub const FOLLOW: Duration = Duration::from_secs(10);

/// What a request got.
#[derive(Debug)]
pub enum Reply {
    /// A JSON-RPC result.
    Result(Value),
    /// A JSON-RPC error that is not a refusal (-32603 other than "store unavailable"
    /// among them): its code and the whole body.
    Error(i64, String),
    /// Refused (and counted).
    Refused,
}

/// A task id handed to a client, with the arguments it was created with.
#[derive(Debug, Clone)]
pub struct Handed {
    /// The task id.
    pub id: String,
    /// `slow_compute`'s `label`, unique in the run.
    pub label: String,
    /// `slow_compute`'s `seconds`.
    pub seconds: f64,
}

/// Clients of a deployment's API nodes, and what they met.
#[derive(Debug)]
pub struct LoadClients {
    http: reqwest::Client,
    endpoints: RwLock<Vec<String>>,
    next_node: AtomicUsize,
    next_id: AtomicI64,
    create_requests: AtomicU64,
    refusals: Mutex<BTreeMap<String, u64>>,
    /// Answers that are neither a result nor a refusal, or results of the wrong shape.
    anomalies: Mutex<Vec<String>>,
    handed: Mutex<Vec<Handed>>,
}

impl LoadClients {
    /// Clients of the API nodes at `endpoints` (MCP endpoint URLs).
    pub fn new(endpoints: Vec<String>) -> LoadClients {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(REQUEST_TIMEOUT)
            .pool_max_idle_per_host(16)
            .build()
            .expect("HTTP client");
        LoadClients {
            http,
            endpoints: RwLock::new(endpoints),
            next_node: AtomicUsize::new(0),
            next_id: AtomicI64::new(1),
            create_requests: AtomicU64::new(0),
            refusals: Mutex::default(),
            anomalies: Mutex::default(),
            handed: Mutex::default(),
        }
    }

    /// Node `node` (an index into the endpoints) now answers at `url`.
    pub fn set_endpoint(&self, node: usize, url: String) {
        self.endpoints
            .write()
            .unwrap_or_else(PoisonError::into_inner)[node] = url;
    }

    /// The task ids handed to the clients so far.
    pub fn handed(&self) -> Vec<Handed> {
        lock(&self.handed).clone()
    }

    /// The refusals met so far, by kind.
    pub fn refusals(&self) -> BTreeMap<String, u64> {
        lock(&self.refusals).clone()
    }

    /// What was neither a result nor a refusal, so far.
    pub fn anomalies(&self) -> Vec<String> {
        lock(&self.anomalies).clone()
    }

    /// `tools/call` requests sent, refused ones included.
    pub fn create_requests(&self) -> u64 {
        self.create_requests.load(Ordering::Relaxed)
    }

    /// Records an answer that is neither a result nor a refusal.
    pub fn anomaly(&self, what: String) {
        lock(&self.anomalies).push(what);
    }

    fn refused(&self, kind: String) -> Reply {
        *lock(&self.refusals).entry(kind).or_default() += 1;
        Reply::Refused
    }

    /// Sends `method` to the next API node in turn.
    pub async fn rpc(&self, method: &str, params: Value) -> Reply {
        let url = {
            let urls = self
                .endpoints
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            urls[self.next_node.fetch_add(1, Ordering::Relaxed) % urls.len()].clone()
        };
        let message = request(self.next_id.fetch_add(1, Ordering::Relaxed), method, params);
        let mut post = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (name, value) in standard_headers(&message) {
            post = post.header(name, value);
        }
        let response = match post.body(message.to_string()).send().await {
            Ok(response) => response,
            Err(e) => return self.refused(transport_kind(&e)),
        };
        let status = response.status();
        let text = match response.text().await {
            Ok(text) => text,
            Err(e) => return self.refused(transport_kind(&e)),
        };
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if body["result"].is_object() {
            return Reply::Result(body["result"].clone());
        }
        let message = body["error"]["message"].as_str().unwrap_or_default();
        match body["error"]["code"].as_i64() {
            Some(code @ error_codes::INTERNAL_ERROR) if message == STORE_UNAVAILABLE_MESSAGE => {
                self.refused(format!("JSON-RPC {code} {message:?}"))
            }
            Some(code @ error_codes::LIMIT_EXCEEDED) => {
                self.refused(format!("JSON-RPC {code} {message:?}"))
            }
            Some(code) => Reply::Error(code, text),
            None => self.refused(format!("HTTP {status} without a JSON-RPC answer")),
        }
    }

    /// Creates a `slow_compute` task, retrying refusals (and, recorded, anything else
    /// that is not a task) until `until`.
    async fn create(&self, label: &str, seconds: f64, until: Instant) -> Option<String> {
        while Instant::now() < until {
            self.create_requests.fetch_add(1, Ordering::Relaxed);
            let params = call_params("slow_compute", slow(seconds, label), true);
            match self.rpc("tools/call", params).await {
                Reply::Result(result) => match result["taskId"].as_str() {
                    Some(id) if result["resultType"] == "task" => return Some(id.to_owned()),
                    _ => self.anomaly(format!("tools/call {label}: not a task: {result}")),
                },
                Reply::Error(code, text) => {
                    self.anomaly(format!("tools/call {label}: error {code}: {text}"));
                }
                Reply::Refused => {}
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
        None
    }

    /// Polls `tasks/get` for `id` until it ends or `until`.
    async fn follow(&self, id: &str, until: Instant) {
        while Instant::now() < until {
            match self.rpc("tasks/get", task_params(id, true)).await {
                Reply::Result(task) if is_terminal(&task) => return,
                Reply::Result(_) | Reply::Refused => {}
                Reply::Error(code, text) => {
                    self.anomaly(format!("tasks/get {id}: error {code}: {text}"));
                }
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Client `me`: creates tasks one after the other until `until` (0.05 to 1.5 s each,
    /// labelled `c{me}-{n}`), following each for [`FOLLOW`] at most.
    pub async fn run_client(self: Arc<Self>, me: usize, until: Instant) {
        let mut seed =
            0x9e37_79b9_7f4a_7c15_u64 ^ ((me as u64 + 1) << 32) ^ u64::from(std::process::id());
        let mut n = 0;
        while Instant::now() < until {
            n += 1;
            // In whole milliseconds.
            let seconds = (50 + splitmix(&mut seed) % 1451) as f64 / 1000.0;
            let label = format!("c{me}-{n}");
            let Some(id) = self.create(&label, seconds, until).await else {
                break;
            };
            lock(&self.handed).push(Handed {
                id: id.clone(),
                label,
                seconds,
            });
            self.follow(&id, (Instant::now() + FOLLOW).min(until)).await;
        }
    }
}

/// Whether the task (a `tasks/get` result) is terminal.
pub fn is_terminal(task: &Value) -> bool {
    matches!(
        task["status"].as_str(),
        Some("completed" | "failed" | "cancelled")
    )
}

/// The run (1, 2, 3) whose result `text` is, if it is `handed`'s own: formatted as
/// `slow_compute` does, `{label}: done after {seconds} s`, then ` (attempt N)` from the
/// second run on.
pub fn own_result_run(handed: &Handed, text: &str) -> Option<u32> {
    let rest = text.strip_prefix(&format!(
        "{}: done after {} s",
        handed.label, handed.seconds
    ))?;
    if rest.is_empty() {
        return Some(1);
    }
    let run: u32 = rest
        .strip_prefix(" (attempt ")?
        .strip_suffix(')')?
        .parse()
        .ok()?;
    (2..=3).contains(&run).then_some(run)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn transport_kind(e: &reqwest::Error) -> String {
    if e.is_connect() {
        "connection refused (node down)".into()
    } else if e.is_timeout() {
        format!("no answer in {REQUEST_TIMEOUT:?}")
    } else {
        "connection broken (node killed mid-request)".into()
    }
}

/// SplitMix64: a reproducible spread of durations without a random crate.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_its_own_only_with_its_label_and_seconds() {
        let handed = Handed {
            id: "t".into(),
            label: "c1-2".into(),
            seconds: 0.25,
        };
        assert_eq!(own_result_run(&handed, "c1-2: done after 0.25 s"), Some(1));
        assert_eq!(
            own_result_run(&handed, "c1-2: done after 0.25 s (attempt 3)"),
            Some(3)
        );
        for other in [
            "c1-20: done after 0.25 s",
            "c1-2: done after 0.2 s",
            "c1-2: done after 0.25 s (attempt 4)",
            "c1-2: done after 0.25 s (attempt 1)",
            "c1-2: working for 0.25 s",
        ] {
            assert_eq!(own_result_run(&handed, other), None, "{other}");
        }
    }
}
