//! Fixtures shared by the cross-crate tests in `tests/tests/` and by the `stdio-peer`
//! binary that the stdio tests run as a child process.
//!
//! [`fixture_methods`] is a small method set that exercises the engine: echo, a request
//! back to the caller from inside a handler, a handler that waits for cancellation, a
//! handler that panics, and one with strictly typed params.
//!
//! [`server_harness`] runs the demo server over HTTP for the `server_*` wire tests.
//! [`schema_check`] validates results against the official JSON Schemas;
//! [`features_fixture`] is the resources/prompts server of `server_resources_prompts`.
//! [`legacy`] holds what the MCP 2025-11-25 tests (`legacy_*`) share.
//! [`issuer`] is an OAuth authorization server (metadata, JWKS, signed tokens) for the
//! resource-server tests; [`authorization_server`] adds its registration, authorization
//! and token endpoints for the client's login tests.
//! [`browser`] drives a headless Chromium through `chromedriver` (the console test);
//! [`console_page`] is what the console's browser tests do with it.
//! [`ts_sdk`] runs the official TypeScript SDK client's interop script (`ts-sdk/`).
//! [`chaos`] holds the chaos test's clients: API nodes that come and go, refusals counted;
//! [`redis_cluster`] a throwaway three-node Redis Cluster, each node behind a TCP proxy.
//! [`programs`] starts the demo binary and `mcp-call` as children, and connects a client
//! that logs in.
//! [`console`] holds what the console's API tests share: a console-enabled server,
//! console calls with the credential and the CSRF header, owners' tasks, the audit trail.
//! [`task_stream`] opens and reads a task's event stream (`tasks/stream`) on the wire.

#![warn(missing_docs)]

pub mod authorization_server;
pub mod browser;
pub mod chaos;
pub mod console;
pub mod console_page;
pub mod deaf_store;
pub mod features_fixture;
pub mod front;
pub mod history;
pub mod issuer;
pub mod legacy;
pub mod node_harness;
pub mod otlp;
pub mod programs;
pub mod proxy;
pub mod redis_cluster;
pub mod reply_drop_proxy;
pub mod retry_front;
pub mod schema_check;
pub mod server_harness;
pub mod task_stream;
pub mod ts_sdk;

use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::RpcModule;
use mcp_tasks_protocol::engine::{Peer, RequestContext, register};
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::{error_codes, request};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

/// `{"text": ...}`, the params and result of `echo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Text {
    /// The text echoed.
    pub text: String,
}

/// The params of `greet`: a required `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GreetParams {
    /// Who to greet.
    pub name: String,
    /// How many times.
    pub times: u32,
}

/// The params of `storm`: how many `echo` requests to send back to the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StormParams {
    /// How many requests.
    pub count: usize,
}

/// The params of `slow`: how long to wait unless cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SlowParams {
    /// The wait, in milliseconds.
    pub millis: u64,
}

request!(
    /// Returns its params.
    Echo, "echo", Text => Text
);
request!(
    /// Asks the caller for a name with `elicitation/create` and greets it.
    Ask, "ask", Text => Text
);
request!(
    /// Waits `millis`, or until cancelled.
    Slow, "slow", SlowParams => Text
);
request!(
    /// Panics.
    Boom, "boom", Text => Text
);
request!(
    /// Strict params: `name` and `times` required, no others.
    Greet, "greet", GreetParams => Text
);
request!(
    /// Sends `count` concurrent `echo` requests back to the caller; returns how many came back right.
    Storm, "storm", StormParams => StormParams
);

/// The `elicitation/create` request a handler sends back to the caller (params kept raw
/// here: the engine tests are about the round trip, not the MCP types).
pub const ELICIT_METHOD: &str = "elicitation/create";

/// What the fixture records, so tests can see inside the server.
#[derive(Debug, Default)]
pub struct Observed {
    /// Notified when a `slow` handler sees its cancellation.
    pub cancelled: Notify,
}

/// The fixture's methods; `observed` records what handlers saw.
pub fn fixture_methods(observed: Arc<Observed>) -> RpcModule<Arc<Observed>> {
    let mut module = RpcModule::new(observed);
    register::<Echo, _, _, _>(&mut module, |p, _, _| async move { Ok(p) }).expect("fresh module");
    register::<Ask, _, _, _>(&mut module, |p, _, ext| async move {
        let peer = ext.get::<Peer>().cloned().ok_or_else(no_peer)?;
        let params = serde_json::json!({"mode": "form", "message": p.text,
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}});
        let raw = serde_json::value::to_raw_value(&params).map_err(internal)?;
        let answer = peer.request_raw(ELICIT_METHOD, Some(&raw)).await?;
        let answer: serde_json::Value = serde_json::from_str(answer.get()).map_err(internal)?;
        let name = answer["content"]["name"]
            .as_str()
            .unwrap_or("nobody")
            .to_owned();
        Ok(Text {
            text: format!("Hello, {name}!"),
        })
    })
    .expect("fresh module");
    register::<Slow, _, _, _>(
        &mut module,
        |p, observed: Arc<Arc<Observed>>, ext| async move {
            let ctx = RequestContext::from_extensions(&ext)
                .cloned()
                .ok_or_else(no_peer)?;
            // Cancellation drops this future; the guard reports it.
            let mut guard = CancelGuard {
                observed: Arc::clone(&observed),
                ctx,
                finished: false,
            };
            tokio::time::sleep(Duration::from_millis(p.millis)).await;
            guard.finished = true;
            Ok(Text {
                text: "slept".into(),
            })
        },
    )
    .expect("fresh module");
    register::<Boom, _, _, _>(&mut module, |p, _, _| async move {
        if p.text != "never" {
            panic!("boom: {}", p.text);
        }
        Ok(p)
    })
    .expect("fresh module");
    register::<Greet, _, _, _>(&mut module, |p, _, _| async move {
        Ok(Text {
            text: vec![format!("Hello, {}!", p.name); p.times as usize].join(" "),
        })
    })
    .expect("fresh module");
    register::<Storm, _, _, _>(&mut module, |p, _, ext| async move {
        let peer = ext.get::<Peer>().cloned().ok_or_else(no_peer)?;
        let calls = (0..p.count).map(|i| {
            let peer = peer.clone();
            async move {
                let text = format!("storm-{i}");
                matches!(peer.request::<Echo>(&Text { text: text.clone() }).await, Ok(t) if t.text == text)
            }
        });
        let ok = futures::future::join_all(calls).await.into_iter().filter(|ok| *ok).count();
        Ok(StormParams { count: ok })
    })
    .expect("fresh module");
    module
}

/// The client side's answer to `elicitation/create`: accept with the name "Ada".
pub fn elicitation_answer() -> serde_json::Value {
    serde_json::json!({"action": "accept", "content": {"name": "Ada"}})
}

/// Client-side methods: `echo` and an `elicitation/create` that answers [`elicitation_answer`].
pub fn client_methods() -> RpcModule<()> {
    let mut module = RpcModule::new(());
    register::<Echo, _, _, _>(&mut module, |p, _, _| async move { Ok(p) }).expect("fresh module");
    module
        .register_method(ELICIT_METHOD, |_, _, _| {
            Ok::<_, jsonrpsee::types::ErrorObjectOwned>(elicitation_answer())
        })
        .expect("fresh module");
    module
}

/// Reports a `slow` handler dropped before it finished, with its token cancelled.
struct CancelGuard {
    observed: Arc<Observed>,
    ctx: RequestContext,
    finished: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if !self.finished && self.ctx.cancel.is_cancelled() {
            self.observed.cancelled.notify_one();
        }
    }
}

fn no_peer() -> ErrorObject {
    ErrorObject::new(
        error_codes::INTERNAL_ERROR,
        "engine did not provide the request context",
    )
}

fn internal(e: serde_json::Error) -> ErrorObject {
    ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string())
}
