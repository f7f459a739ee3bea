//! A fault-injecting HTTP front for the client's retry tests (issue 50): an HTTP server on
//! 127.0.0.1 that passes every request on to one server and streams its response back,
//! except for the `tools/call` POSTs that meet a fault queued with
//! [`RetryFront::fail_next`]: the request reaches the server and its whole answer is read
//! (the server did its work), then the client gets the fault instead — a status without a
//! JSON-RPC answer (502, 503, 504), a 429 with a `Retry-After`, its connection closed
//! without a byte of response, or the answer held a while.
//!
//! The front keeps every `tools/call` it passed on ([`Call`]): its params (to see the
//! idempotency key sent) and the task id the server's answer named, if any, and the other
//! messages POSTed ([`RetryFront::others`]: a `notifications/cancelled`, say). What it
//! shares with the other test fronts is in [`front`](crate::front).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::front::{Serving, ToolCall, ToolCalls, Upstream, lock, read_whole, split_url};

/// What a `tools/call` meets instead of its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// This HTTP status, with a text body (no JSON-RPC answer).
    Status(u16),
    /// HTTP 429 with this `Retry-After` value.
    TooMany(String),
    /// The client's connection closed without any response.
    Close,
    /// The answer itself, held this long (past the client's request timeout, say).
    Delay(Duration),
}

/// A `tools/call` the front passed on.
#[derive(Debug, Clone)]
pub struct Call {
    /// Its JSON-RPC id.
    pub id: Value,
    /// Its params.
    pub params: Value,
    /// The task the server's answer named (a create or a repeat of one), if any.
    pub task_id: Option<String>,
    /// The fault the client met instead of the answer, if any.
    pub fault: Option<Fault>,
}

#[derive(Debug, Default)]
struct Shared {
    faults: Mutex<VecDeque<Fault>>,
    calls: Mutex<Vec<Call>>,
    others: Mutex<Vec<Value>>,
}

/// The front: its URL, the faults to come, the calls seen.
#[derive(Debug)]
pub struct RetryFront {
    /// `http://127.0.0.1:PORT/<the server's path>`.
    pub url: String,
    shared: Arc<Shared>,
    _serving: Serving,
}

impl RetryFront {
    /// A front for the server at `upstream` (`http://127.0.0.1:PORT/mcp`).
    pub async fn start(upstream: &str) -> RetryFront {
        let (origin, path) = split_url(upstream);
        let shared = Arc::<Shared>::default();
        let serving = Serving::start(Upstream::new(origin, None), Arc::clone(&shared)).await;
        RetryFront {
            url: format!("http://{}{path}", serving.addr),
            shared,
            _serving: serving,
        }
    }

    /// The next `tools/call`s meet these faults, one each, in order.
    pub fn fail_next(&self, faults: impl IntoIterator<Item = Fault>) {
        lock(&self.shared.faults).extend(faults);
    }

    /// The `tools/call`s passed on so far.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.shared.calls).clone()
    }

    /// The other JSON-RPC messages POSTed so far (notifications, other requests).
    pub fn others(&self) -> Vec<Value> {
        lock(&self.shared.others).clone()
    }
}

impl ToolCalls for Shared {
    /// The answer read whole, then the next fault, if any, met instead.
    async fn tool_call(&self, call: ToolCall) -> Result<Response, Response> {
        let answer = read_whole(call.upstream).await?;
        let fault = lock(&self.faults).pop_front();
        lock(&self.calls).push(Call {
            id: call.message["id"].clone(),
            params: call.message["params"].clone(),
            task_id: answer.task_id(),
            fault: fault.clone(),
        });
        Ok(match fault {
            Some(Fault::Status(code)) => {
                let code = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY);
                (code, format!("{code} (injected by the test front)")).into_response()
            }
            Some(Fault::TooMany(after)) => (
                StatusCode::TOO_MANY_REQUESTS,
                [(axum::http::header::RETRY_AFTER, after)],
                "slow down (injected by the test front)",
            )
                .into_response(),
            Some(Fault::Close) => call.cut.close(),
            Some(Fault::Delay(held)) => {
                tokio::time::sleep(held).await;
                answer.into_response()
            }
            None => answer.into_response(),
        })
    }

    fn passed(&self, message: &Value) {
        lock(&self.others).push(message.clone());
    }
}
