//! Prompts: [`PromptDef`], a prompt whose arguments are a typed struct (declared from
//! its JSON Schema: each property an argument, its doc comment the description, the
//! schema's `required` list the required ones) and whose handler returns the messages.
//! A handler made with [`PromptDef::with_context`] may ask the client first, as a
//! synchronous tool does (rounds on 2026-07-28, requests on the session on 2025-11-25).
//!
//! **Invariant.** Knows no wire revision; a missing required argument is refused before
//! the handler runs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use indexmap::IndexMap;
use mcp_tasks_protocol::types::{Prompt, PromptArgument, PromptMessage};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::FeatureDefError;
use super::completion::{Completer, CompletionInput, CompletionValues};
use crate::context::{ToolContext, ToolError};
use crate::errors::ServerError;
use crate::errors::call_error;

/// Why a prompt handler produced no messages.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PromptError {
    /// The arguments make no sense (-32602, with this reason).
    #[error("{0}")]
    InvalidArguments(String),
    /// The handler failed; the message is sent as an internal error (-32603).
    #[error("{0}")]
    Failed(String),
    /// Asking the client ended the request: it needs another round, was cancelled, or
    /// failed with a JSON-RPC error (what `?` on [`ToolContext::elicit`] and its kin gives).
    #[error(transparent)]
    Context(#[from] ToolError),
}

type Handler = Arc<
    dyn Fn(
            ToolContext,
            BTreeMap<String, String>,
        ) -> BoxFuture<'static, Result<Vec<PromptMessage>, PromptError>>
        + Send
        + Sync,
>;

/// One prompt: its description, declared arguments, completion providers and handler.
#[derive(Clone)]
pub struct PromptDef {
    name: String,
    title: Option<String>,
    description: Option<String>,
    arguments: Vec<PromptArgument>,
    completers: IndexMap<String, Completer>,
    handler: Handler,
}

impl fmt::Debug for PromptDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptDef")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl PromptDef {
    /// A prompt whose arguments are `A` (a struct of `String` / `Option<String>` fields:
    /// prompt arguments are strings on the wire; `()` for none). The declared arguments
    /// come from `A`'s JSON Schema; `handler` gets them deserialized into `A`.
    pub fn new<A, F, Fut>(name: impl Into<String>, handler: F) -> PromptDef
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, PromptError>> + Send + 'static,
    {
        PromptDef::with_context(name, move |_ctx: ToolContext, args: A| handler(args))
    }

    /// A prompt whose handler also gets a [`ToolContext`], to ask the client for input
    /// ([`elicit_keyed`](ToolContext::elicit_keyed), [`sample_keyed`](ToolContext::sample_keyed),
    /// [`list_roots_keyed`](ToolContext::list_roots_keyed)) before it answers. On
    /// 2026-07-28 `prompts/get` then answers `input_required` until the client retries
    /// with the answers; on 2025-11-25 the requests go to the client on the session.
    pub fn with_context<A, F, Fut>(name: impl Into<String>, handler: F) -> PromptDef
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, PromptError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        PromptDef {
            name: name.into(),
            title: None,
            description: None,
            arguments: arguments_of::<A>(),
            completers: IndexMap::new(),
            handler: Arc::new(move |ctx, args| {
                let handler = Arc::clone(&handler);
                Box::pin(async move {
                    let empty = args.is_empty();
                    let value = serde_json::to_value(args).unwrap_or(Value::Null);
                    let parsed = serde_json::from_value::<A>(value).or_else(|e| {
                        // A prompt without arguments may take `()`.
                        if empty {
                            serde_json::from_value::<A>(Value::Null).map_err(|_| e)
                        } else {
                            Err(e)
                        }
                    });
                    let args = parsed.map_err(|e| PromptError::InvalidArguments(e.to_string()))?;
                    handler(ctx, args).await
                })
            }),
        }
    }

    /// Sets the human-readable title.
    pub fn title(mut self, text: impl Into<String>) -> Self {
        self.title = Some(text.into());
        self
    }

    /// Sets the description (listed, and returned with the messages).
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Completes the argument `argument` (`completion/complete` with a `ref/prompt`
    /// naming this prompt). A name that is not a declared argument is refused.
    pub fn complete<F, Fut>(mut self, argument: &str, provider: F) -> Result<Self, FeatureDefError>
    where
        F: Fn(CompletionInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CompletionValues> + Send + 'static,
    {
        if !self.arguments.iter().any(|a| a.name == argument) {
            return Err(FeatureDefError {
                what: format!("prompt {}", self.name),
                reason: format!("it has no argument {argument} to complete"),
            });
        }
        self.completers
            .insert(argument.to_owned(), Completer::new(provider));
        Ok(self)
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn completer(&self, argument: &str) -> Option<Completer> {
        self.completers.get(argument).cloned()
    }

    pub(crate) fn has_completers(&self) -> bool {
        !self.completers.is_empty()
    }

    pub(crate) fn listing(&self) -> Prompt {
        let mut listed = Prompt::new(&self.name);
        listed.title = self.title.clone();
        listed.description = self.description.clone();
        if !self.arguments.is_empty() {
            listed.arguments = Some(self.arguments.clone());
        }
        listed
    }

    /// The prompt's description and its messages for `args`, or `None` when the handler
    /// asked the client for input in `ctx` (a 2026-07-28 round): -32602 when a required
    /// argument is missing or the arguments do not fit.
    pub(crate) async fn get(
        &self,
        ctx: ToolContext,
        args: BTreeMap<String, String>,
    ) -> Result<Option<(Option<String>, Vec<PromptMessage>)>, ServerError> {
        let invalid = |reason: String| ServerError::InvalidPromptArguments {
            prompt: self.name.clone(),
            reason,
        };
        if let Some(missing) = self
            .arguments
            .iter()
            .find(|a| a.required == Some(true) && !args.contains_key(&a.name))
        {
            return Err(invalid(format!(
                "missing required argument {}",
                missing.name
            )));
        }
        match (self.handler)(ctx, args).await {
            Ok(messages) => Ok(Some((self.description.clone(), messages))),
            Err(PromptError::InvalidArguments(reason)) => Err(invalid(reason)),
            Err(PromptError::Failed(message)) => Err(ServerError::Internal(message)),
            Err(PromptError::Context(ToolError::InputRequired)) => Ok(None),
            Err(PromptError::Context(e)) => Err(call_error(e)),
        }
    }
}

/// The arguments `A` declares: its schema's properties, in order, with their
/// descriptions, required when the schema says so.
fn arguments_of<A: JsonSchema>() -> Vec<PromptArgument> {
    let settings = schemars::generate::SchemaSettings::draft2020_12();
    let schema = settings.into_generator().into_root_schema_for::<A>();
    let schema = schema.to_value();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut argument = PromptArgument::new(name);
            argument.title = property["title"].as_str().map(str::to_owned);
            argument.description = property["description"].as_str().map(str::to_owned);
            argument.required = Some(required.contains(&name.as_str()));
            argument
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Review {
        /// The code to review.
        code: String,
        /// The language it is written in.
        language: Option<String>,
    }

    #[test]
    fn arguments_come_from_the_schema() {
        let args = arguments_of::<Review>();
        let seen: Vec<_> = args
            .iter()
            .map(|a| (a.name.as_str(), a.description.as_deref(), a.required))
            .collect();
        assert_eq!(
            seen,
            [
                ("code", Some("The code to review."), Some(true)),
                (
                    "language",
                    Some("The language it is written in."),
                    Some(false)
                ),
            ]
        );
        assert!(arguments_of::<()>().is_empty());
    }
}
