//! `server/discover`: what the server is and supports, asked without a session.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::{CacheScope, RequestParams, ResultType};
use super::capabilities::ServerCapabilities;
use super::meta::ResultMeta;
use crate::JsonObject;
use crate::meta::PROTOCOL_VERSION_2026_07_28;
use crate::method::{TypedRequest, TypedResultResponse};

/// The server's protocol versions, capabilities and instructions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// `"complete"`.
    pub result_type: ResultType,
    /// The protocol versions the server speaks.
    pub supported_versions: Vec<String>,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Who may cache this answer.. Required by the schema; `None` only for input from a peer that
    /// left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// How long this answer stays fresh, in milliseconds.. Required by the schema; `None` only for input from a peer
    /// that left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Result metadata (server info).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl DiscoverResult {
    /// A server speaking 2026-07-28 with `capabilities`, private and not to be cached.
    pub fn new(capabilities: ServerCapabilities) -> Self {
        DiscoverResult {
            supported_versions: vec![PROTOCOL_VERSION_2026_07_28.to_owned()],
            capabilities,
            cache_scope: Some(CacheScope::Private),
            ttl_ms: Some(0),
            ..Default::default()
        }
    }
}

crate::request!(
    /// `server/discover`: ask what the server is and supports.
    Discover, "server/discover", RequestParams => DiscoverResult
);

/// A `server/discover` request.
pub type DiscoverRequest = TypedRequest<Discover>;
/// The response to `server/discover`.
pub type DiscoverResultResponse = TypedResultResponse<Discover>;
