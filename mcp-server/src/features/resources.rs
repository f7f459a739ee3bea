//! Resources: static ones ([`ResourceDef`], one URI) and families of them
//! ([`ResourceTemplateDef`], an RFC 6570 level-1 URI template whose reader gets the
//! template's variables, typed), each with the reader that produces its contents.
//!
//! **Invariant.** Knows no wire revision: `read` answers contents or "not found", and
//! each revision's handler says "not found" its own way.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use base64::Engine;
use futures::future::BoxFuture;
use indexmap::IndexMap;
use mcp_tasks_protocol::types::{
    BlobResourceContents, Resource, ResourceTemplate, TextOrBlobResourceContents,
    TextResourceContents,
};
use serde::de::DeserializeOwned;

use super::FeatureDefError;
use super::completion::{Completer, CompletionInput, CompletionValues};
use super::template::UriTemplate;

/// What a resource reader produces: text, or bytes (sent base64-encoded as a `blob`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceData {
    /// Text contents.
    Text(String),
    /// Binary contents.
    Blob(Vec<u8>),
}

impl ResourceData {
    /// Text contents.
    pub fn text(text: impl Into<String>) -> ResourceData {
        ResourceData::Text(text.into())
    }

    /// Binary contents.
    pub fn blob(bytes: impl Into<Vec<u8>>) -> ResourceData {
        ResourceData::Blob(bytes.into())
    }

    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> TextOrBlobResourceContents {
        match self {
            ResourceData::Text(text) => {
                let mut contents = TextResourceContents::new(uri, text);
                contents.mime_type = mime_type.map(str::to_owned);
                contents.into()
            }
            ResourceData::Blob(bytes) => {
                let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
                let mut contents = BlobResourceContents::new(uri, blob);
                contents.mime_type = mime_type.map(str::to_owned);
                contents.into()
            }
        }
    }
}

/// Why a reader produced no contents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// There is no such resource (e.g. a template's variables name nothing): the client
    /// gets its revision's resource-not-found error.
    #[error("resource not found")]
    NotFound,
    /// Reading failed; the message is sent as an internal error (-32603).
    #[error("{0}")]
    Failed(String),
}

type Reader =
    Arc<dyn Fn(String, BTreeMap<String, String>) -> BoxFuture<'static, ReadOutcome> + Send + Sync>;
type ReadOutcome = Result<ResourceData, ResourceError>;

/// The description both kinds share.
#[derive(Debug, Clone, Default)]
struct Described {
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
}

/// A resource at one URI, with the reader of its contents.
#[derive(Clone)]
pub struct ResourceDef {
    uri: String,
    about: Described,
    reader: Reader,
}

impl fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceDef")
            .field("uri", &self.uri)
            .field("name", &self.about.name)
            .finish_non_exhaustive()
    }
}

impl ResourceDef {
    /// The resource at `uri` called `name`, read by `reader` on every `resources/read`.
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, reader: F) -> ResourceDef
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceData, ResourceError>> + Send + 'static,
    {
        let reader = Arc::new(reader);
        ResourceDef {
            uri: uri.into(),
            about: Described {
                name: name.into(),
                ..Default::default()
            },
            reader: Arc::new(move |_uri, _vars| {
                let reader = Arc::clone(&reader);
                Box::pin(async move { reader().await })
            }),
        }
    }

    /// Sets the human-readable title.
    pub fn title(mut self, text: impl Into<String>) -> Self {
        self.about.title = Some(text.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.about.description = Some(text.into());
        self
    }

    /// Sets the MIME type (listed, and given with the contents).
    pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
        self.about.mime_type = Some(mime.into());
        self
    }

    /// The resource's URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    pub(crate) fn listing(&self) -> Resource {
        let mut listed = Resource::new(&self.uri, &self.about.name);
        listed.title = self.about.title.clone();
        listed.description = self.about.description.clone();
        listed.mime_type = self.about.mime_type.clone();
        listed
    }
}

/// A family of resources: a level-1 URI template (`file:///logs/{day}.txt`) and a
/// reader that gets the template's variables as a `V`.
#[derive(Clone)]
pub struct ResourceTemplateDef {
    uri_template: String,
    template: UriTemplate,
    about: Described,
    reader: Reader,
    completers: IndexMap<String, Completer>,
}

impl fmt::Debug for ResourceTemplateDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceTemplateDef")
            .field("uri_template", &self.uri_template)
            .field("name", &self.about.name)
            .finish_non_exhaustive()
    }
}

impl ResourceTemplateDef {
    /// The template `uri_template` called `name`. A URI that fits the template is read
    /// by `reader` with the URI and the variables' values (percent-decoded strings)
    /// deserialized into `V`, e.g. a struct with one `String` field per variable; values
    /// that do not deserialize into `V` mean there is no such resource.
    pub fn new<V, F, Fut>(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        reader: F,
    ) -> Result<ResourceTemplateDef, FeatureDefError>
    where
        V: DeserializeOwned + Send + 'static,
        F: Fn(String, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceData, ResourceError>> + Send + 'static,
    {
        let uri_template = uri_template.into();
        let template = UriTemplate::parse(&uri_template).map_err(|reason| FeatureDefError {
            what: format!("resource template {uri_template}"),
            reason,
        })?;
        let reader = Arc::new(reader);
        Ok(ResourceTemplateDef {
            uri_template,
            template,
            about: Described {
                name: name.into(),
                ..Default::default()
            },
            reader: Arc::new(move |uri, vars| {
                let reader = Arc::clone(&reader);
                Box::pin(async move {
                    let vars = serde_json::to_value(vars)
                        .and_then(serde_json::from_value::<V>)
                        .map_err(|_| ResourceError::NotFound)?;
                    reader(uri, vars).await
                })
            }),
            completers: IndexMap::new(),
        })
    }

    /// Sets the human-readable title.
    pub fn title(mut self, text: impl Into<String>) -> Self {
        self.about.title = Some(text.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.about.description = Some(text.into());
        self
    }

    /// Sets the MIME type every matching resource has.
    pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
        self.about.mime_type = Some(mime.into());
        self
    }

    /// Completes the template variable `variable` (`completion/complete` with a
    /// `ref/resource` naming this template). A name that is not one of the template's
    /// variables is refused.
    pub fn complete<F, Fut>(mut self, variable: &str, provider: F) -> Result<Self, FeatureDefError>
    where
        F: Fn(CompletionInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CompletionValues> + Send + 'static,
    {
        if !self.template.variables().any(|v| v == variable) {
            return Err(FeatureDefError {
                what: format!("resource template {}", self.uri_template),
                reason: format!("it has no variable {{{variable}}} to complete"),
            });
        }
        self.completers
            .insert(variable.to_owned(), Completer::new(provider));
        Ok(self)
    }

    /// The URI template.
    pub fn uri_template(&self) -> &str {
        &self.uri_template
    }

    pub(crate) fn completer(&self, variable: &str) -> Option<Completer> {
        self.completers.get(variable).cloned()
    }

    /// Whether `uri` is an expansion of this template.
    pub(crate) fn fits(&self, uri: &str) -> bool {
        self.template.matches(uri).is_some()
    }

    pub(crate) fn has_completers(&self) -> bool {
        !self.completers.is_empty()
    }

    pub(crate) fn listing(&self) -> ResourceTemplate {
        let mut listed = ResourceTemplate::new(&self.uri_template, &self.about.name);
        listed.title = self.about.title.clone();
        listed.description = self.about.description.clone();
        listed.mime_type = self.about.mime_type.clone();
        listed
    }
}

/// The contents at `uri`: a static resource of that URI first, else the first template
/// it fits. `Ok(None)`: no resource has that URI (or its reader said
/// [`ResourceError::NotFound`]). `Err`: the reader failed, with its message.
pub(crate) async fn read(
    resources: &IndexMap<String, ResourceDef>,
    templates: &[ResourceTemplateDef],
    uri: &str,
) -> Result<Option<Vec<TextOrBlobResourceContents>>, String> {
    let (reader, mime, vars) = if let Some(def) = resources.get(uri) {
        (&def.reader, &def.about.mime_type, BTreeMap::new())
    } else {
        let Some((def, vars)) = templates
            .iter()
            .find_map(|t| t.template.matches(uri).map(|vars| (t, vars)))
        else {
            return Ok(None);
        };
        (&def.reader, &def.about.mime_type, vars)
    };
    match reader(uri.to_owned(), vars).await {
        Ok(data) => Ok(Some(vec![data.into_contents(uri, mime.as_deref())])),
        Err(ResourceError::NotFound) => Ok(None),
        Err(ResourceError::Failed(message)) => Err(message),
    }
}
