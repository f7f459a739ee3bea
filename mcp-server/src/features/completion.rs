//! Completion providers: suggestions for a prompt argument or a resource-template
//! variable (`completion/complete`), attached to the prompt or template they complete
//! ([`PromptDef::complete`](crate::PromptDef::complete),
//! [`ResourceTemplateDef::complete`](crate::ResourceTemplateDef::complete)).
//!
//! **Invariant.** An answer never holds more than [`MAX_COMPLETION_VALUES`] values (the
//! spec's limit): more are cut, and `hasMore` says so.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::Catalog;
use crate::errors::ServerError;

/// The most values one `completion/complete` answer holds (the spec's limit).
pub const MAX_COMPLETION_VALUES: usize = 100;

/// What a completion provider is asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompletionInput {
    /// The argument (or template variable) being completed.
    pub argument: String,
    /// What has been typed so far.
    pub value: String,
    /// Values of the other arguments already settled, by name.
    pub context: BTreeMap<String, String>,
}

/// A completion provider's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompletionValues {
    /// Suggested values (cut to [`MAX_COMPLETION_VALUES`] on the wire).
    pub values: Vec<String>,
    /// How many suggestions exist in all, if known.
    pub total: Option<u64>,
    /// Whether more suggestions exist than `values` holds.
    pub has_more: bool,
}

impl CompletionValues {
    /// Exactly `values`, nothing more.
    pub fn new(values: Vec<String>) -> CompletionValues {
        CompletionValues {
            values,
            total: None,
            has_more: false,
        }
    }

    /// The `candidates` that start with `prefix` (compared case-insensitively), in their
    /// order, with their count as `total`.
    pub fn matching<I, S>(candidates: I, prefix: &str) -> CompletionValues
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let prefix = prefix.to_lowercase();
        let values: Vec<String> = candidates
            .into_iter()
            .map(Into::into)
            .filter(|c| c.to_lowercase().starts_with(&prefix))
            .collect();
        CompletionValues {
            total: u64::try_from(values.len()).ok(),
            values,
            has_more: false,
        }
    }

    /// Cut to [`MAX_COMPLETION_VALUES`]: what was cut shows as `has_more` and in `total`.
    pub(crate) fn capped(mut self) -> CompletionValues {
        if self.values.len() > MAX_COMPLETION_VALUES {
            let all = u64::try_from(self.values.len()).unwrap_or(u64::MAX);
            self.total = Some(self.total.map_or(all, |t| t.max(all)));
            self.values.truncate(MAX_COMPLETION_VALUES);
            self.has_more = true;
        }
        self
    }
}

type Provider = Arc<dyn Fn(CompletionInput) -> BoxFuture<'static, CompletionValues> + Send + Sync>;

/// One completion provider.
#[derive(Clone)]
pub(crate) struct Completer(Provider);

impl fmt::Debug for Completer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Completer(..)")
    }
}

impl Completer {
    pub(crate) fn new<F, Fut>(provider: F) -> Completer
    where
        F: Fn(CompletionInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CompletionValues> + Send + 'static,
    {
        let provider = Arc::new(provider);
        Completer(Arc::new(move |input| {
            let provider = Arc::clone(&provider);
            Box::pin(async move { provider(input).await })
        }))
    }
}

/// What `completion/complete` names: a prompt, or a resource template by its URI
/// template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target<'a> {
    Prompt(&'a str),
    Template(&'a str),
}

/// The suggestions for `input.argument` of `target`: empty when nobody completes that
/// argument; an unknown prompt or template is -32602.
pub(crate) async fn complete(
    catalog: &Catalog,
    target: Target<'_>,
    input: CompletionInput,
) -> Result<CompletionValues, ServerError> {
    let completer = match target {
        Target::Prompt(name) => catalog
            .prompt(name)
            .ok_or_else(|| ServerError::UnknownPrompt(name.to_owned()))?
            .completer(&input.argument),
        Target::Template(uri) => catalog
            .template(uri)
            .ok_or_else(|| ServerError::UnknownResourceTemplate(uri.to_owned()))?
            .completer(&input.argument),
    };
    Ok(match completer {
        Some(Completer(provider)) => provider(input).await.capped(),
        None => CompletionValues::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_filtered_and_capped() {
        let found = CompletionValues::matching(["Python", "Perl", "Rust"], "p");
        assert_eq!(found.values, ["Python", "Perl"]);
        assert_eq!(found.total, Some(2));
        let many = CompletionValues::new((0..150).map(|i| i.to_string()).collect()).capped();
        assert_eq!(many.values.len(), MAX_COMPLETION_VALUES);
        assert_eq!((many.total, many.has_more), (Some(150), true));
    }
}
