//! A front that loses the replies of task creations, for the safe-retry tests (issue 50):
//! an HTTP server on 127.0.0.1 in front of a [`RoundRobinProxy`] over several server
//! instances. Every request goes on to the balancer as it came (method, path, headers,
//! body) and its response comes back streamed, except for `tools/call` POSTs: their whole
//! response is read first (within [`CALL_TIMEOUT`](crate::front::CALL_TIMEOUT)), and
//! when it created a task (a 2026-07-28 `resultType: "task"`, a 2025-11-25
//! `CreateTaskResult`) and dropping is on, the first reply of each create (the request's
//! idempotency key, else its tool and arguments) never reaches the client: the server did
//! the work, the client cannot know.
//! The drops alternate between the two ways a reply is lost behind a balancer: a
//! `502 Bad Gateway` (the balancer's upstream connection broke) and the client's
//! connection closed without a byte of response. A repeat of a create whose reply was
//! dropped is passed on.
//!
//! The front counts what it saw: the `tools/call` POSTs, those with a key, and for each
//! create the task ids its replies named and whether each was dropped ([`Seen`]). What it
//! shares with the other test fronts is in [`front`](crate::front).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::front::{Serving, ToolCall, ToolCalls, Upstream, lock, read_whole, split_url};
use crate::proxy::{RoundRobinProxy, UPSTREAM_TIMEOUT};

/// How a dropped reply was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    /// Answered `502 Bad Gateway` instead.
    BadGateway,
    /// The client's connection closed without any response.
    Closed,
}

/// One `tools/call` reply that created (or found) a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The task id the reply named.
    pub task_id: String,
    /// How it was lost, if it was dropped.
    pub lost: Option<Lost>,
}

/// What the front saw.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// `tools/call` POSTs (every attempt).
    pub tool_calls: usize,
    /// Of those, the ones with an idempotency key (`params.idempotencyKey` or
    /// `params._meta.idempotencyKey`).
    pub keyed: usize,
    /// Replies dropped as a 502.
    pub bad_gateways: usize,
    /// Replies dropped by closing the connection.
    pub closed: usize,
    /// Each create (by key, else tool and arguments): its task replies in order.
    pub creates: BTreeMap<String, Vec<Reply>>,
}

impl Seen {
    /// Replies dropped, both ways.
    pub fn dropped(&self) -> usize {
        self.bad_gateways + self.closed
    }

    /// `tools/call` POSTs beyond the first of each create whose reply made a task.
    pub fn repeats(&self) -> usize {
        self.creates
            .values()
            .map(|r| r.len().saturating_sub(1))
            .sum()
    }
}

/// The front: its URL, the balancer behind it, and what it saw.
#[derive(Debug)]
pub struct ReplyDropProxy {
    /// `http://127.0.0.1:PORT/mcp` (the instances' path).
    pub url: String,
    /// The round-robin balancer over the instances.
    pub balancer: RoundRobinProxy,
    shared: Arc<Shared>,
    _serving: Serving,
}

#[derive(Debug, Default)]
struct Shared {
    dropping: AtomicBool,
    seen: Mutex<Seen>,
}

impl ReplyDropProxy {
    /// A front on a free 127.0.0.1 port over a new [`RoundRobinProxy`] in front of
    /// `upstreams` (MCP endpoint URLs, all with the same path); dropping is off.
    pub async fn start(upstreams: Vec<String>) -> ReplyDropProxy {
        let balancer = RoundRobinProxy::start(upstreams).await;
        let (origin, path) = split_url(&balancer.url);
        let shared = Arc::<Shared>::default();
        let upstream = Upstream::new(origin, Some(UPSTREAM_TIMEOUT));
        let serving = Serving::start(upstream, Arc::clone(&shared)).await;
        ReplyDropProxy {
            url: format!("http://{}{path}", serving.addr),
            balancer,
            shared,
            _serving: serving,
        }
    }

    /// Turns dropping on or off: on, the first reply of each create that made a task is
    /// lost (alternately a 502 and a closed connection).
    pub fn set_dropping(&self, on: bool) {
        self.shared.dropping.store(on, Ordering::SeqCst);
    }

    /// What the front saw so far.
    pub fn seen(&self) -> Seen {
        lock(&self.shared.seen).clone()
    }
}

/// The identity of a create: its idempotency key, else its tool and arguments.
fn create_identity(params: &Value) -> (String, bool) {
    let key = params["idempotencyKey"]
        .as_str()
        .or_else(|| params["_meta"]["idempotencyKey"].as_str());
    match key {
        Some(key) => (format!("key {key}"), true),
        None => (
            format!("call {} {}", params["name"], params["arguments"]),
            false,
        ),
    }
}

impl ToolCalls for Shared {
    /// The reply read whole, then lost if it is a create's first and dropping is on.
    async fn tool_call(&self, call: ToolCall) -> Result<Response, Response> {
        let (identity, keyed) = create_identity(&call.message["params"]);
        {
            let mut seen = lock(&self.seen);
            seen.tool_calls += 1;
            seen.keyed += usize::from(keyed);
        }
        let reply = read_whole(call.upstream).await?;
        let Some(task_id) = reply.task_id() else {
            return Ok(reply.into_response());
        };
        let lost = {
            let mut seen = lock(&self.seen);
            let first = !seen.creates.contains_key(&identity);
            let lost = (first && self.dropping.load(Ordering::SeqCst)).then(|| {
                if seen.dropped().is_multiple_of(2) {
                    seen.bad_gateways += 1;
                    Lost::BadGateway
                } else {
                    seen.closed += 1;
                    Lost::Closed
                }
            });
            seen.creates
                .entry(identity)
                .or_default()
                .push(Reply { task_id, lost });
            lost
        };
        Ok(match lost {
            Some(Lost::BadGateway) => {
                (StatusCode::BAD_GATEWAY, "upstream connection broke").into_response()
            }
            Some(Lost::Closed) => call.cut.close(),
            None => reply.into_response(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_is_known_by_its_key_else_by_its_call() {
        let keyed = serde_json::json!({"name": "t", "arguments": {"a": 1}, "idempotencyKey": "k1"});
        assert_eq!(create_identity(&keyed), ("key k1".to_owned(), true));
        let in_meta = serde_json::json!({"name": "t", "_meta": {"idempotencyKey": "k2"}});
        assert_eq!(create_identity(&in_meta), ("key k2".to_owned(), true));
        let plain = serde_json::json!({"name": "t", "arguments": {"a": 1}});
        assert_eq!(
            create_identity(&plain),
            ("call \"t\" {\"a\":1}".to_owned(), false)
        );
    }
}
