//! [`ClientHandler`]: what the application answers when the server asks for input —
//! in a synchronous call's MRTR round, in a task's input request, or (2025-11-25) as a
//! server->client request. One handler serves all three; [`answer`] hands it one input
//! request as JSON. How a server->client request reaches a handler is in the children:
//! `routes` (which handler answers it, and each task's bound) and `methods` (the methods a
//! server may call on the client).
//!
//! Invariant: the application sees typed requests only, and every question has a default
//! answer (elicitation declined, sampling refused, roots empty).

use async_trait::async_trait;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::types::{ElicitAction, ElicitResult, ListRootsResult};
use mcp_tasks_protocol::v2026::{
    ClientCapabilities, CreateMessage, CreateMessageRequestParams, CreateMessageResult, Elicit,
    ElicitRequestParams, ElicitationCapability, ListRoots, RootsCapability,
};
use serde_json::Value;

mod methods;
mod routes;

pub(crate) use methods::client_methods;
pub(crate) use routes::{Creating, Routes};

/// Answers the server's questions. Every method has a default: elicitation is declined,
/// sampling refused, roots empty; override what the application supports and say so in
/// [`capabilities`](ClientHandler::capabilities).
#[async_trait]
pub trait ClientHandler: Send + Sync + 'static {
    /// Asks the user (form or URL elicitation).
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        Ok(ElicitResult::new(ElicitAction::Decline))
    }

    /// Asks the application's model.
    async fn sample(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        Err(ErrorObject::new(
            error_codes::METHOD_NOT_FOUND,
            "sampling is not supported by this client",
        ))
    }

    /// The client's roots.
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult::default())
    }

    /// What this client declares on every request (the tasks extension is added by the
    /// client itself). Default: form elicitation and roots.
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                ..Default::default()
            }),
            roots: Some(RootsCapability::default()),
            ..Default::default()
        }
    }
}

/// A handler that declines every elicitation and refuses sampling.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeclineAll;

#[async_trait]
impl ClientHandler for DeclineAll {}

/// Answers one input request (`{method, params}`) through `handler`, as JSON.
pub(crate) async fn answer(
    handler: &dyn ClientHandler,
    request: &Value,
) -> Result<Value, ErrorObject> {
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let bad = |e: serde_json::Error| {
        ErrorObject::new(
            error_codes::INVALID_PARAMS,
            format!("malformed {method} request: {e}"),
        )
    };
    let encode = |v: Result<Value, serde_json::Error>| {
        v.map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
    };
    match method {
        m if m == Elicit::METHOD => {
            let defaults = form_defaults(&params);
            let params = serde_json::from_value(params).map_err(bad)?;
            let mut answer = encode(serde_json::to_value(handler.elicit(params).await?))?;
            apply_defaults(&mut answer, defaults);
            Ok(answer)
        }
        m if m == CreateMessage::METHOD => {
            let params = serde_json::from_value(params).map_err(bad)?;
            encode(serde_json::to_value(handler.sample(params).await?))
        }
        m if m == ListRoots::METHOD => encode(serde_json::to_value(handler.list_roots().await?)),
        other => Err(ErrorObject::new(
            error_codes::METHOD_NOT_FOUND,
            format!("unsupported input request: {other}"),
        )),
    }
}

/// The `default` of each property of a form elicitation's `requestedSchema`, as sent.
fn form_defaults(params: &Value) -> Vec<(String, Value)> {
    params
        .get("requestedSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, schema)| Some((name.clone(), schema.get("default")?.clone())))
        .collect()
}

/// SEP-1034: an accepted form answer gets the schema's default for each field the user
/// left out.
fn apply_defaults(answer: &mut Value, defaults: Vec<(String, Value)>) {
    if defaults.is_empty() || answer.get("action").and_then(Value::as_str) != Some("accept") {
        return;
    }
    let Some(answer) = answer.as_object_mut() else {
        return;
    };
    let content = answer
        .entry("content")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Some(content) = content.as_object_mut() {
        for (name, default) in defaults {
            content.entry(name).or_insert(default);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn defaults_fill_only_missing_fields_of_an_accepted_form() {
        let params = json!({"requestedSchema": {"properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "plain": {"type": "string"}
        }}});
        let mut accepted = json!({"action": "accept", "content": {"name": "Ann"}});
        super::apply_defaults(&mut accepted, super::form_defaults(&params));
        assert_eq!(accepted["content"], json!({"name": "Ann", "age": 30}));
        let mut declined = json!({"action": "decline"});
        super::apply_defaults(&mut declined, super::form_defaults(&params));
        assert_eq!(declined, json!({"action": "decline"}));
    }
}
