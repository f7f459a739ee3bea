//! The RFC 9728 Protected Resource Metadata: [`ProtectedResource`], the document that tells
//! a client which authorization server issues tokens for this MCP server, and where it is
//! published ([`PROTECTED_RESOURCE_PATH`] with the resource's path after it).
//!
//! **Invariant.** The document names the resource and its authorization servers and
//! nothing secret; any authenticator may publish one (the HTTP transport serves it).

use std::collections::BTreeSet;

use serde_json::{Value, json};

/// The path of the RFC 9728 metadata document; the MCP endpoint's own path follows it in
/// the path-suffixed form (`/.well-known/oauth-protected-resource/mcp`).
pub const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";

/// The RFC 9728 Protected Resource Metadata of a resource, and where it is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedResource {
    /// The resource identifier (`resource`).
    pub resource: String,
    /// `authorization_servers`.
    pub authorization_servers: Vec<String>,
    /// `scopes_supported` (without the scopes of tools, which the transport adds).
    pub scopes_supported: Vec<String>,
    /// The URL of the document, named in challenges: the well-known path with the
    /// resource's path after it (`https://host/.well-known/oauth-protected-resource/mcp`).
    pub metadata_url: String,
}

impl ProtectedResource {
    /// The JSON document, with `extra_scopes` (those tools require) added to
    /// `scopes_supported`; `scopes_supported` is left out when there are none.
    pub fn document(&self, extra_scopes: &BTreeSet<String>) -> Value {
        let mut scopes = self.scopes_supported.clone();
        for s in extra_scopes {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !scopes.is_empty() {
            doc["scopes_supported"] = json!(scopes);
        }
        doc
    }
}
