//! Roots (`roots/list`): the server asks which directories or files it may work in.
//! In 2026-07-28 it is an input request inside an MRTR exchange.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::meta::Meta;
use crate::method::MethodCall;
use crate::types::ListRootsResult;

/// The params of `roots/list`, which may be left out entirely.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListRootsRequestParams {
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

crate::request!(
    /// `roots/list`: ask the client for its roots.
    ListRoots, "roots/list", optional Option<ListRootsRequestParams> => ListRootsResult
);

/// A roots input request: `{method: "roots/list", params?}`.
pub type ListRootsRequest = MethodCall<ListRoots>;
