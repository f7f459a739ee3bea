//! The routing headers of a POST against its body (SEP-2243): `Mcp-Method`, `Mcp-Name`
//! and `MCP-Protocol-Version` must be there (MCP 2026-07-28) and agree with the body, and
//! a tool's `Mcp-Param-*` headers with its arguments; -32020 with HTTP 400 otherwise, and
//! -32022 for a version not served there.
//!
//! **Invariant.** Compares against what the edge read once (the method, the routed name,
//! the params' [`ParamsHead`]): reads no body of its own.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use mcp_tasks_protocol::engine::{InboundRequest, error_frame};
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::http::{ParamHeader, ParamsHead, decode_header_value, header_matches};
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::v2025;
use mcp_tasks_protocol::v2026;

use super::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, header_str, json_response, rpc_error};
use crate::revision::SUPPORTED_VERSIONS;

/// The versions a request's headers are checked against.
#[derive(Debug, Clone, Copy)]
pub(super) struct Versions<'a> {
    /// The version of the session the request belongs to.
    pub(super) session: Option<&'a str>,
    /// The version the body's `_meta` names.
    pub(super) body: Option<&'a str>,
}

/// `Mcp-Method` / `Mcp-Name` / `MCP-Protocol-Version`, and a 2026-07-28 `tools/call`'s
/// `Mcp-Param-*` headers, must be there and agree with the body (SEP-2243): its method,
/// `routed` (the member `Mcp-Name` repeats) and `head` (its params as read once).
pub(super) fn check_headers(
    headers: &HeaderMap,
    req: &InboundRequest,
    versions: Versions<'_>,
    routed: Option<&str>,
    head: &ParamsHead<'_>,
    param_headers: &HashMap<String, Arc<[ParamHeader]>>,
) -> Option<Response> {
    let header_version = header_str(headers, MCP_PROTOCOL_VERSION).map(str::trim);
    let modern = is_2026_request(req, versions, header_version);
    let refused = modern
        .then(|| missing_routing_header(headers, req, header_version, routed))
        .flatten()
        .or_else(|| routing_mismatch(headers, req, routed))
        .or_else(|| {
            let tool = routed.filter(|_| modern && req.method == v2026::CallTool::METHOD);
            tool.filter(|_| !param_headers.is_empty())
                .and_then(|tool| check_param_headers(headers, tool, head, param_headers))
        });
    if let Some(what) = refused {
        return Some(mismatch(req, what));
    }
    header_version.and_then(|version| version_refusal(req, version, versions))
}

/// HTTP 400 with -32001 (header mismatch) saying `what`.
fn mismatch(req: &InboundRequest, what: String) -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        Some(req.id.clone()),
        error_codes::HEADER_MISMATCH,
        what,
    )
}

/// HTTP 400 with -32022 for a version this server does not serve there, naming those it
/// does.
fn unsupported(req: &InboundRequest, version: &str, supported: &[&str]) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        error_frame(
            Some(req.id.clone()),
            ErrorObject::new(
                error_codes::UNSUPPORTED_PROTOCOL_VERSION,
                format!("Unsupported protocol version: {version}"),
            )
            .with_data(serde_json::json!({ "supported": supported, "requested": version })),
        ),
    )
}

/// Whether the request is written in MCP 2026-07-28: not in a session, not the
/// `initialize` that opens one, and naming (in `_meta` or the header) a version that is
/// not a session's.
fn is_2026_request(
    req: &InboundRequest,
    versions: Versions<'_>,
    header_version: Option<&str>,
) -> bool {
    versions.session.is_none()
        && req.method != v2025::Initialize::METHOD
        && versions
            .body
            .or(header_version)
            .is_some_and(|v| !crate::session::SESSION_VERSIONS.contains(&v))
}

/// A 2026-07-28 request must carry the routing headers (SEP-2243): `Mcp-Method` always,
/// `Mcp-Name` when the body names a tool, prompt, resource or task. (Requests of a
/// 2025-11-25 session, and the `initialize` that opens one, predate them.)
fn missing_routing_header(
    headers: &HeaderMap,
    req: &InboundRequest,
    header_version: Option<&str>,
    routed: Option<&str>,
) -> Option<String> {
    if header_version.is_none() {
        return Some(
            "Header missing: MCP-Protocol-Version is required (MCP 2026-07-28)".to_owned(),
        );
    }
    if header_str(headers, MCP_METHOD).is_none() {
        return Some(format!(
            "Header missing: Mcp-Method is required (MCP 2026-07-28); the body's method is {:?}",
            req.method
        ));
    }
    let body_name = routed.filter(|_| header_str(headers, MCP_NAME).is_none())?;
    Some(format!(
        "Header missing: Mcp-Name is required on {} (MCP 2026-07-28); the body names {body_name:?}",
        req.method
    ))
}

/// `Mcp-Method` or `Mcp-Name` saying other than the body. Header values are compared
/// without surrounding whitespace (RFC 9110, 5.5).
fn routing_mismatch(
    headers: &HeaderMap,
    req: &InboundRequest,
    routed: Option<&str>,
) -> Option<String> {
    if let Some(method) = header_str(headers, MCP_METHOD).map(str::trim)
        && method != req.method
    {
        return Some(format!(
            "Header mismatch: Mcp-Method is {method:?} but the body's method is {:?}",
            req.method
        ));
    }
    let raw = headers.get(MCP_NAME)?;
    let body_name = routed?;
    match decode_header_value(raw.as_bytes()) {
        Ok(name) if name == body_name => None,
        Ok(name) => Some(format!(
            "Header mismatch: Mcp-Name is {name:?} but the body names {body_name:?}"
        )),
        Err(e) => Some(format!("Header invalid: Mcp-Name: {e}")),
    }
}

/// The `MCP-Protocol-Version` header's `version` refused, if it is: unknown, naming a
/// revision without sessions in a session, or disagreeing with the body.
fn version_refusal(
    req: &InboundRequest,
    version: &str,
    versions: Versions<'_>,
) -> Option<Response> {
    let sessions = &crate::session::SESSION_VERSIONS;
    if let Some(negotiated) = versions.session {
        // A session's requests may name any revision this server serves sessions in
        // (as the TypeScript and Python SDK servers accept): the session goes on in the
        // one its `initialize` agreed on. Only an unknown version is refused.
        if version == negotiated || sessions.contains(&version) {
            return None;
        }
        if SUPPORTED_VERSIONS.contains(&version) {
            return Some(mismatch(
                req,
                format!(
                    "Header mismatch: MCP-Protocol-Version is {version:?} but Mcp-Session-Id \
                     names an MCP {negotiated} session ({version} has no sessions)"
                ),
            ));
        }
        return Some(unsupported(req, version, sessions));
    }
    // A header that disagrees with the body is a mismatch, whatever the versions.
    if let Some(body_version) = versions.body
        && body_version != version
    {
        return Some(mismatch(
            req,
            format!(
                "Header mismatch: MCP-Protocol-Version is {version:?} but _meta names {body_version:?}"
            ),
        ));
    }
    // A 2025-11-25 client may name its version on the `initialize` that opens its session.
    if req.method == v2025::Initialize::METHOD && sessions.contains(&version) {
        return None;
    }
    (!SUPPORTED_VERSIONS.contains(&version)).then(|| unsupported(req, version, SUPPORTED_VERSIONS))
}

/// The `Mcp-Param-*` headers of a `tools/call` of `tool` against its arguments: a header
/// for each annotated parameter that has a value, equal to it once decoded, and none for
/// a parameter without one. An unknown tool is left to the handler (-32602), and so are
/// arguments that are not an object.
fn check_param_headers(
    headers: &HeaderMap,
    tool: &str,
    head: &ParamsHead<'_>,
    param_headers: &HashMap<String, Arc<[ParamHeader]>>,
) -> Option<String> {
    let params = param_headers.get(tool)?;
    // Parsed only for a tool with such parameters.
    let arguments: mcp_tasks_protocol::JsonObject = match head.arguments {
        None => Default::default(),
        Some(raw) => serde_json::from_str::<Option<_>>(raw.get())
            .ok()?
            .unwrap_or_default(),
    };
    for param in params.iter() {
        let header = param.header_name();
        let sent = headers.get(header.as_str());
        let shown = format!("Mcp-Param-{}", param.name);
        match (param.text_in(&arguments), sent) {
            (None, None) => {}
            // A value of the wrong type: the arguments' own validation refuses it.
            (Some(Err(())), _) => {}
            (None, Some(_)) => {
                return Some(format!(
                    "Header mismatch: {shown} is sent but the arguments have no {}",
                    param.path.join(".")
                ));
            }
            (Some(Ok(_)), None) => {
                return Some(format!(
                    "Header missing: {shown} is required when the arguments have {}",
                    param.path.join(".")
                ));
            }
            (Some(Ok(body)), Some(raw)) => match decode_header_value(raw.as_bytes()) {
                Err(e) => return Some(format!("Header invalid: {shown}: {e}")),
                Ok(text) if header_matches(param.kind, &text, &body) => {}
                Ok(text) => {
                    return Some(format!(
                        "Header mismatch: {shown} is {text:?} but the arguments have {body:?}"
                    ));
                }
            },
        }
    }
    None
}
