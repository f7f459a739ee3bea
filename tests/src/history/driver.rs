//! Load on real demo nodes, every operation recorded: [`Driver`] sends each request to one
//! API node through a [`LoadClients`] of that node alone (so the history knows the node;
//! a node's URL is replaced when it restarts), and records its outcome. A refusal (no
//! connection, a broken one, "store unavailable", -32603) is an unknown outcome: the
//! request may or may not have taken effect.
//!
//! Each client, in turn: `slow_compute` tasks (0.05 to 1 s, at least once) followed for a
//! while; every tenth task a 5 s `slow_compute` cancelled after 0.3 s; every fifth a
//! `confirm_delete` answered yes or no with `tasks/update` as soon as it asks. Then
//! [`Driver::settle`] follows every acknowledged task to its end (answering what still
//! asks), reads it on every API node and reads its whole event log (`tasks/stream`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use futures::StreamExt;
use mcp_tasks_protocol::error_codes;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{OpKind, Outcome, Recorder, TaskSpec};
use crate::chaos::{LoadClients, REQUEST_TIMEOUT, Reply, is_terminal};
use crate::node_harness::slow;
use crate::server_harness::{call_params, standard_headers, task_params, update_params};
use crate::task_stream::stream_request;

/// How often a client reads a task it follows.
const POLL: Duration = Duration::from_millis(100);
/// How long a client follows a task before it creates the next, unless
/// [`Driver::follow_for`] says otherwise.
pub const FOLLOW: Duration = Duration::from_secs(2);
/// How many times a write with an unknown outcome is sent again.
const WRITE_TRIES: usize = 3;
/// The client id of [`Driver::settle`]'s reads.
pub const SETTLER: usize = 1000;

/// Records operations of many clients on a deployment's API nodes.
#[derive(Debug)]
pub struct Driver {
    nodes: Vec<LoadClients>,
    urls: RwLock<Vec<String>>,
    recorder: Recorder,
    next_node: AtomicUsize,
    acked: Mutex<Vec<(String, TaskSpec)>>,
    http: reqwest::Client,
    follow: Duration,
}

impl Driver {
    /// A driver of the API nodes at `urls` (MCP endpoints).
    pub fn new(urls: Vec<String>) -> Driver {
        Driver {
            nodes: urls
                .iter()
                .map(|u| LoadClients::new(vec![u.clone()]))
                .collect(),
            urls: RwLock::new(urls),
            recorder: Recorder::new(),
            next_node: AtomicUsize::new(0),
            acked: Mutex::default(),
            http: reqwest::Client::builder()
                .no_proxy()
                .timeout(REQUEST_TIMEOUT)
                .build()
                .expect("HTTP client"),
            follow: FOLLOW,
        }
    }

    /// Clients follow each task for `follow` at most before they create the next (a
    /// short follow: more tasks, fewer reads of each).
    pub fn follow_for(mut self, follow: Duration) -> Driver {
        self.follow = follow;
        self
    }

    /// API node `node` now answers at `url`.
    pub fn set_endpoint(&self, node: usize, url: String) {
        self.nodes[node].set_endpoint(0, url.clone());
        self.urls.write().unwrap_or_else(PoisonError::into_inner)[node] = url;
    }

    /// What was recorded.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Tasks whose create was acknowledged so far.
    pub fn acked(&self) -> usize {
        self.acked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The refusals met on every node, by kind.
    pub fn refusals(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for node in &self.nodes {
            for (kind, n) in node.refusals() {
                *all.entry(kind).or_default() += n;
            }
        }
        all
    }

    fn next(&self) -> usize {
        self.next_node.fetch_add(1, Ordering::Relaxed) % self.nodes.len()
    }

    /// Sends `method` to `node` (the next in turn when `None`) and records it.
    async fn call(
        &self,
        client: usize,
        node: Option<usize>,
        kind: OpKind,
        method: &str,
        params: Value,
    ) -> Outcome {
        let node = node.unwrap_or_else(|| self.next());
        let invoked = self.recorder.now();
        let outcome = match self.nodes[node].rpc(method, params).await {
            Reply::Result(value) => Outcome::Ok(value),
            // A JSON-RPC internal error may come after the write went through.
            Reply::Error(code @ error_codes::INTERNAL_ERROR, text) => {
                Outcome::Unknown(format!("error {code}: {text}"))
            }
            Reply::Error(code, text) => Outcome::Err {
                code,
                message: error_message(&text),
            },
            Reply::Refused => Outcome::Unknown("refused".into()),
        };
        self.recorder
            .record(client, node, kind, invoked, outcome.clone());
        outcome
    }

    async fn get(&self, client: usize, node: Option<usize>, id: &str) -> Option<Value> {
        let kind = OpKind::Get { task: id.into() };
        let outcome = self
            .call(client, node, kind, "tasks/get", task_params(id, true))
            .await;
        outcome.ok().cloned()
    }

    /// Creates a task (sent again while its outcome is unknown, until `until`).
    async fn create(&self, client: usize, spec: TaskSpec, until: Instant) -> Option<String> {
        let (tool, arguments) = match &spec {
            TaskSpec::Compute { label, seconds } => ("slow_compute", slow(*seconds, label)),
            TaskSpec::Confirm { filename } => ("confirm_delete", json!({ "filename": filename })),
        };
        while Instant::now() < until {
            let params = call_params(tool, arguments.clone(), true);
            let kind = OpKind::Create(spec.clone());
            let outcome = self.call(client, None, kind, "tools/call", params).await;
            if let Some(id) = outcome.ok().and_then(|v| v["taskId"].as_str()) {
                self.acked
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((id.to_owned(), spec));
                return Some(id.to_owned());
            }
            tokio::time::sleep(POLL).await;
        }
        None
    }

    /// Reads `id` until it is terminal (or asks, when `until_asked`), or `until`.
    async fn follow(
        &self,
        client: usize,
        id: &str,
        until: Instant,
        until_asked: bool,
    ) -> Option<Value> {
        while Instant::now() < until {
            if let Some(task) = self.get(client, None, id).await
                && (is_terminal(&task) || (until_asked && task["status"] == "input_required"))
            {
                return Some(task);
            }
            tokio::time::sleep(POLL).await;
        }
        None
    }

    /// Answers every open input request of `task` with `confirm` (sent again while the
    /// outcome is unknown).
    async fn answer(&self, client: usize, id: &str, task: &Value, confirm: bool) {
        let keys: Vec<String> = task["inputRequests"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for key in keys {
            for _ in 0..WRITE_TRIES {
                let responses =
                    json!({ &key: { "action": "accept", "content": { "confirm": confirm } } });
                let kind = OpKind::Update {
                    task: id.into(),
                    key: key.clone(),
                    confirm,
                };
                let outcome = self
                    .call(
                        client,
                        None,
                        kind,
                        "tasks/update",
                        update_params(id, responses),
                    )
                    .await;
                if !outcome.is_unknown() {
                    break;
                }
                tokio::time::sleep(POLL).await;
            }
        }
    }

    /// Asks to cancel `id` (sent again while the outcome is unknown).
    async fn cancel(&self, client: usize, id: &str) {
        for _ in 0..WRITE_TRIES {
            let kind = OpKind::Cancel { task: id.into() };
            let params = task_params(id, true);
            if !self
                .call(client, None, kind, "tasks/cancel", params)
                .await
                .is_unknown()
            {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Client `me`: creates tasks one after the other until `until`.
    pub async fn run_client(self: Arc<Self>, me: usize, until: Instant) {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64 ^ ((me as u64 + 1) << 40);
        let mut n = 0u64;
        while Instant::now() < until {
            n += 1;
            let follow_until = |from: Instant| (from + self.follow).min(until);
            match n % 10 {
                2 | 7 => {
                    let filename = format!("c{me}-{n}.txt");
                    let Some(id) = self.create(me, TaskSpec::Confirm { filename }, until).await
                    else {
                        return;
                    };
                    let asked = self
                        .follow(me, &id, follow_until(Instant::now()), true)
                        .await;
                    if let Some(task) = asked.filter(|t| t["status"] == "input_required") {
                        self.answer(me, &id, &task, n % 4 == 2).await;
                        self.follow(me, &id, follow_until(Instant::now()), false)
                            .await;
                    }
                }
                5 => {
                    let spec = TaskSpec::Compute {
                        label: format!("c{me}-{n}"),
                        seconds: 5.0,
                    };
                    let Some(id) = self.create(me, spec, until).await else {
                        return;
                    };
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    self.cancel(me, &id).await;
                    self.follow(me, &id, follow_until(Instant::now()), false)
                        .await;
                }
                _ => {
                    // In whole milliseconds, 0.05 to 1 s.
                    let seconds = (50 + splitmix(&mut seed) % 951) as f64 / 1000.0;
                    let spec = TaskSpec::Compute {
                        label: format!("c{me}-{n}"),
                        seconds,
                    };
                    let Some(id) = self.create(me, spec, until).await else {
                        return;
                    };
                    self.follow(me, &id, follow_until(Instant::now()), false)
                        .await;
                }
            }
        }
    }

    /// After the load: follows every acknowledged task to its end within `within`
    /// (answering yes to what still asks), then reads each on every API node and, once it
    /// ended, reads its event log from the start.
    pub async fn settle(&self, within: Duration) {
        let acked = self
            .acked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let deadline = Instant::now() + within;
        futures::stream::iter(acked.iter())
            .for_each_concurrent(8, |(id, _)| async move {
                let mut ended = false;
                while Instant::now() < deadline {
                    match self.get(SETTLER, None, id).await {
                        Some(task) if is_terminal(&task) => {
                            ended = true;
                            break;
                        }
                        Some(task) if task["status"] == "input_required" => {
                            self.answer(SETTLER, id, &task, true).await;
                        }
                        _ => {}
                    }
                    tokio::time::sleep(POLL).await;
                }
                for node in 0..self.nodes.len() {
                    self.get(SETTLER, Some(node), id).await;
                }
                // An unfinished task's stream would follow it live: its log is read
                // once it ended (the checker reports it unfinished otherwise).
                if ended {
                    self.read_log(SETTLER, self.next(), id).await;
                }
            })
            .await;
    }

    /// Reads `id`'s whole event log with `tasks/stream` on `node` and records it.
    async fn read_log(&self, client: usize, node: usize, id: &str) -> Outcome {
        let url = self.urls.read().unwrap_or_else(PoisonError::into_inner)[node].clone();
        let invoked = self.recorder.now();
        let outcome = self.stream(&url, id).await;
        let kind = OpKind::Log { task: id.into() };
        self.recorder
            .record(client, node, kind, invoked, outcome.clone());
        outcome
    }

    async fn stream(&self, url: &str, id: &str) -> Outcome {
        let message = stream_request(1, id, None);
        let mut post = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(message.to_string());
        for (name, value) in standard_headers(&message) {
            post = post.header(name, value);
        }
        let body = match post.send().await {
            Ok(response) => response.text().await,
            Err(e) => return Outcome::Unknown(e.to_string()),
        };
        let body = match body {
            Ok(body) => body,
            Err(e) => return Outcome::Unknown(e.to_string()),
        };
        let mut events = Vec::new();
        let frames = body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| serde_json::from_str::<Value>(data.trim()).unwrap_or(Value::Null));
        for frame in frames.chain(std::iter::once(
            serde_json::from_str(&body).unwrap_or(Value::Null),
        )) {
            if frame["method"] == "notifications/tasks/event" {
                events.push(frame["params"].clone());
            } else if frame["result"].is_object() {
                return Outcome::Ok(Value::Array(events));
            } else if let Some(code) = frame["error"]["code"].as_i64() {
                let message = frame["error"]["message"].as_str().unwrap_or("").to_owned();
                return match code {
                    error_codes::INTERNAL_ERROR => Outcome::Unknown(message),
                    _ => Outcome::Err { code, message },
                };
            }
        }
        Outcome::Unknown(format!(
            "the stream ended without its response: {body:.200}"
        ))
    }
}

/// The `message` of a JSON-RPC error body (the whole body when it has none).
fn error_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| body.to_owned())
}

/// SplitMix64: reproducible durations without a random crate.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
