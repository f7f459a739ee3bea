//! Resources, prompts and completion: what a server offers besides tools, defined with
//! typed readers and handlers ([`ResourceDef`], [`ResourceTemplateDef`], [`PromptDef`],
//! completion providers attached to a prompt or template), gathered in the [`Catalog`]
//! the builder fills. The revision handlers (`v2026::features`, `v2025::features`) turn
//! what is here into their wire shapes.
//!
//! **Invariant.** Knows no wire revision and holds nothing per request; the catalog is
//! fixed once the server is built, so a page's offset names the same items on every
//! instance with the same catalog.

pub(crate) mod completion;
pub(crate) mod feed;
pub(crate) mod prompts;
pub(crate) mod resources;
mod template;

use indexmap::IndexMap;
use mcp_tasks::Owner;

use crate::errors::ServerError;
use crate::seal::SealKey;
pub use completion::{CompletionInput, CompletionValues, MAX_COMPLETION_VALUES};
pub use prompts::{PromptDef, PromptError};
pub use resources::{ResourceData, ResourceDef, ResourceError, ResourceTemplateDef};

/// How many items one page of `resources/list`, `resources/templates/list` or
/// `prompts/list` holds.
pub const FEATURE_PAGE: usize = 50;

/// Why a resource template or prompt could not be defined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what}: {reason}")]
pub struct FeatureDefError {
    /// What was being defined (e.g. `resource template file:///{x`).
    pub what: String,
    /// What is wrong with it.
    pub reason: String,
}

/// A capability besides tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Feature {
    Resources,
    Prompts,
    Completions,
}

/// Everything the server offers besides tools.
#[derive(Debug, Clone, Default)]
pub(crate) struct Catalog {
    pub(crate) resources: IndexMap<String, ResourceDef>,
    pub(crate) templates: Vec<ResourceTemplateDef>,
    pub(crate) prompts: IndexMap<String, PromptDef>,
}

impl Catalog {
    /// Whether the server declares the `resources` capability.
    pub(crate) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty()
    }

    /// Whether the server declares the `prompts` capability.
    pub(crate) fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    /// Whether the server declares the `completions` capability: some prompt or template
    /// has a completion provider.
    pub(crate) fn has_completions(&self) -> bool {
        self.prompts.values().any(PromptDef::has_completers)
            || self
                .templates
                .iter()
                .any(ResourceTemplateDef::has_completers)
    }

    /// -32601 for a method of `feature` when the server does not offer it.
    pub(crate) fn offers(&self, feature: Feature, method: &str) -> Result<(), ServerError> {
        let (offered, name) = match feature {
            Feature::Resources => (self.has_resources(), "resources"),
            Feature::Prompts => (self.has_prompts(), "prompts"),
            Feature::Completions => (self.has_completions(), "completions"),
        };
        if offered {
            Ok(())
        } else {
            Err(ServerError::NotOffered {
                method: method.to_owned(),
                feature: name,
            })
        }
    }

    /// Whether a static resource has `uri` or a template fits it.
    pub(crate) fn knows(&self, uri: &str) -> bool {
        self.resources.contains_key(uri) || self.templates.iter().any(|t| t.fits(uri))
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<&PromptDef> {
        self.prompts.get(name)
    }

    /// The template whose URI template is `uri_template`.
    pub(crate) fn template(&self, uri_template: &str) -> Option<&ResourceTemplateDef> {
        self.templates
            .iter()
            .find(|t| t.uri_template() == uri_template)
    }
}

/// One page of a list and the sealed cursor of the next.
#[derive(Debug)]
pub(crate) struct Page<T> {
    pub(crate) items: Vec<T>,
    pub(crate) next_cursor: Option<String>,
}

/// The page of `items` at `cursor` (the first page without one), [`FEATURE_PAGE`] long.
/// Cursors are sealed for `owner` and name their list (`kind`): a forged, tampered,
/// foreign or other list's cursor is -32602.
pub(crate) fn page<T>(
    items: Vec<T>,
    kind: &str,
    cursor: Option<&str>,
    key: &SealKey,
    owner: &Owner,
) -> Result<Page<T>, ServerError> {
    let start = match cursor {
        None => 0,
        Some(token) => key
            .open(owner, token)
            .as_deref()
            .and_then(|inner| inner.strip_prefix(kind)?.strip_prefix(".")?.parse().ok())
            .filter(|start| *start <= items.len())
            .ok_or(ServerError::InvalidCursor)?,
    };
    let end = start.saturating_add(FEATURE_PAGE).min(items.len());
    let next_cursor = (end < items.len()).then(|| key.seal(owner, &format!("{kind}.{end}")));
    let items = items.into_iter().skip(start).take(end - start).collect();
    Ok(Page { items, next_cursor })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_sealed_cursors() {
        let key = SealKey::random();
        let alice = Owner::new("alice");
        let items: Vec<usize> = (0..FEATURE_PAGE + 3).collect();
        let first = page(items.clone(), "prompts", None, &key, &alice).expect("first");
        assert_eq!(first.items.len(), FEATURE_PAGE);
        let cursor = first.next_cursor.expect("a second page");
        let second = page(items.clone(), "prompts", Some(&cursor), &key, &alice).expect("second");
        assert_eq!(
            second.items,
            [FEATURE_PAGE, FEATURE_PAGE + 1, FEATURE_PAGE + 2]
        );
        assert!(second.next_cursor.is_none());
        for (kind, owner, token) in [
            ("resources", &alice, cursor.as_str()),
            ("prompts", &Owner::new("bob"), cursor.as_str()),
            ("prompts", &alice, "prompts.1"),
        ] {
            assert!(matches!(
                page(items.clone(), kind, Some(token), &key, owner),
                Err(ServerError::InvalidCursor)
            ));
        }
    }
}
