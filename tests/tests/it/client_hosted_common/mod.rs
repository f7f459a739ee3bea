//! What the client-hosted task tests share: a handler that answers elicitation and
//! sampling (and holds a question whose message is "hold" until it is dropped), and the
//! capabilities it declares. Each test crate uses part of it.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_client::ClientHandler;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::types::{ElicitResult, ElicitValue};
use mcp_tasks_protocol::v2026::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitationCapability, SamplingCapability,
};
use serde_json::json;
use tokio::sync::Notify;

/// Form elicitation and sampling.
pub fn elicit_and_sample() -> ClientCapabilities {
    ClientCapabilities {
        elicitation: Some(ElicitationCapability {
            form: Some(JsonObject::new()),
            ..Default::default()
        }),
        sampling: Some(SamplingCapability::default()),
        ..Default::default()
    }
}

/// The form answer every test gives: accept, with the name Ada.
pub fn ada() -> ElicitResult {
    let mut content = indexmap::IndexMap::new();
    content.insert("name".to_owned(), ElicitValue::String("Ada".into()));
    ElicitResult::accept(content)
}

/// Sets its flag when dropped unless disarmed: a handler's future stopped unfinished.
pub struct DropFlag(pub Arc<AtomicBool>, pub bool);

impl Drop for DropFlag {
    fn drop(&mut self) {
        if !self.1 {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

/// Waits (within `bound`) until `flag` is set; panics with `what` otherwise.
pub async fn wait_for(flag: &AtomicBool, bound: Duration, what: &str) {
    tokio::time::timeout(bound, async {
        while !flag.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} within {bound:?}"));
}

/// Accepts elicitations with the name Ada and samples "42". A question whose message is
/// "hold" (every question, with `hold_all`) is never answered: `asked` is notified
/// and `dropped` set when its future is dropped.
#[derive(Default)]
pub struct Answers {
    pub hold_all: bool,
    pub asked: Notify,
    pub dropped: Arc<AtomicBool>,
}

#[async_trait]
impl ClientHandler for Answers {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let message = serde_json::to_value(&params).unwrap_or_default()["message"].clone();
        if self.hold_all || message == "hold" {
            let _flag = DropFlag(Arc::clone(&self.dropped), false);
            self.asked.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(ada())
    }

    async fn sample(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": "42"},
            "model": "test-model"
        }))
        .map_err(|e| ErrorObject::new(-32603, e.to_string()))
    }

    fn capabilities(&self) -> ClientCapabilities {
        elicit_and_sample()
    }
}
