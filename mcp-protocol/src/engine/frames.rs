//! JSON-RPC frames as an [`Endpoint`](super::Endpoint) sees them: an inbound frame
//! classified ([`Incoming`]) or refused ([`Rejected`]), and the response frames it sends
//! back ([`Reply`], [`error_frame`]).
//!
//! Invariant: pure functions of the frame's text; no session, no I/O, no handler. MCP has
//! no batches: a JSON array is refused here, before anything reads its elements.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error_codes;
use crate::jsonrpc::{ErrorObject, JsonRpcErrorResponse, RequestId, Version};

/// One classified inbound frame.
#[derive(Debug)]
pub enum Incoming {
    /// A request, to dispatch.
    Request(InboundRequest),
    /// A notification: a method and its parameters, no id.
    Notification {
        /// The notification's method.
        method: String,
        /// The notification's parameters, unparsed.
        params: Option<Box<RawValue>>,
    },
    /// A response to one of our own requests.
    Response {
        /// The id of our request it answers.
        id: RequestId,
        /// Its result, unparsed, or the error it reports.
        outcome: Result<Box<RawValue>, ErrorObject>,
    },
}

/// An inbound request, not yet dispatched.
#[derive(Debug)]
pub struct InboundRequest {
    /// The request's id.
    pub id: RequestId,
    /// The request's method.
    pub method: String,
    /// The request's parameters, unparsed.
    pub params: Option<Box<RawValue>>,
}

/// A frame refused before dispatch, with the error to answer (when it deserves an answer).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The id to answer, when the frame had a readable one.
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: ErrorObject,
    /// False for a malformed *response*: JSON-RPC never answers a response.
    pub reply: bool,
}

impl Rejected {
    fn new(id: Option<RequestId>, code: i64, message: impl Into<String>) -> Box<Self> {
        Box::new(Rejected {
            id,
            error: ErrorObject::new(code, message),
            reply: true,
        })
    }

    fn with_reply(mut self: Box<Self>, reply: bool) -> Box<Self> {
        self.reply = reply;
        self
    }
}

/// Why a JSON array is refused: MCP has no batches (2025-06-18 removed them).
const BATCH_REFUSED: &str = "JSON-RPC batches are not supported: MCP sends one message per request";

/// The members of a frame, read without decoding their values.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// `Some` whenever the member is present, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Reads an id: a string or an integer. Anything else (null, a fraction, an object) is no id.
fn parse_id(raw: &RawValue) -> Option<RequestId> {
    serde_json::from_str::<RequestId>(raw.get()).ok()
}

/// A response frame and, when it is an error, its code (so a transport can choose its
/// status without parsing the frame again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The JSON-RPC response, as sent.
    pub frame: String,
    /// The error's code, when the response is an error.
    pub error_code: Option<i64>,
}

impl Reply {
    /// An error response to `id`.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Reply {
        let error_code = Some(error.code);
        Reply {
            frame: error_frame(id, error),
            error_code,
        }
    }
}

/// The JSON text of an error response.
pub fn error_frame(id: Option<RequestId>, error: ErrorObject) -> String {
    let resp = JsonRpcErrorResponse {
        jsonrpc: Version,
        id,
        error,
    };
    // An error response holds only strings, integers and JSON values: it always serializes.
    serde_json::to_string(&resp).unwrap_or_else(|_| {
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#
            .to_owned()
    })
}

/// Classifies one frame, or says how to refuse it: invalid JSON is `-32700` with id
/// `null`; JSON that is not a JSON-RPC 2.0 message is `-32600`.
pub(super) fn classify(frame: &str) -> Result<Incoming, Box<Rejected>> {
    let probe = probe(frame)?;
    let id = probe.id.and_then(parse_id);
    if probe.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return Err(not_version_2(&probe, id));
    }
    match probe.method {
        Some(method) => classify_call(&probe, method, id),
        None => classify_response(&probe, id),
    }
}

/// Reads the members of a JSON object frame; refuses a batch, text that is not JSON and
/// JSON that is not a message.
fn probe(frame: &str) -> Result<Probe<'_>, Box<Rejected>> {
    // Checked before the probe: serde reads a struct from an array too, so a batch
    // would otherwise be refused for its first element not being "2.0".
    if frame.trim_start().starts_with('[') {
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(frame) {
            Ok(_) => Rejected::new(None, error_codes::INVALID_REQUEST, BATCH_REFUSED),
            Err(e) => Rejected::new(None, error_codes::PARSE_ERROR, format!("Parse error: {e}")),
        });
    }
    serde_json::from_str(frame).map_err(|e| {
        match serde_json::from_str::<serde::de::IgnoredAny>(frame) {
            Ok(_) => Rejected::new(
                None,
                error_codes::INVALID_REQUEST,
                format!("Invalid request: not a JSON-RPC 2.0 message ({e})"),
            ),
            Err(e) => Rejected::new(None, error_codes::PARSE_ERROR, format!("Parse error: {e}")),
        }
    })
}

/// The refusal of a frame whose `jsonrpc` is not `"2.0"`.
fn not_version_2(probe: &Probe<'_>, id: Option<RequestId>) -> Box<Rejected> {
    // Answer anything but a (malformed) response: JSON-RPC never answers a response.
    let reply = probe.method.is_some() || probe.result.is_none() && probe.error.is_none();
    Rejected::new(
        id,
        error_codes::INVALID_REQUEST,
        "Invalid request: `jsonrpc` must be \"2.0\"",
    )
    .with_reply(reply)
}

/// A frame with a `method`: a request when it has an id, a notification when it has none.
fn classify_call(
    probe: &Probe<'_>,
    method: &RawValue,
    id: Option<RequestId>,
) -> Result<Incoming, Box<Rejected>> {
    let Ok(method) = serde_json::from_str::<Cow<'_, str>>(method.get()) else {
        return Err(Rejected::new(
            id,
            error_codes::INVALID_REQUEST,
            "Invalid request: `method` must be a string",
        ));
    };
    let params = probe.params.map(ToOwned::to_owned);
    match probe.id {
        None => Ok(Incoming::Notification {
            method: method.into_owned(),
            params,
        }),
        Some(_) => match id {
            Some(id) => Ok(Incoming::Request(InboundRequest {
                id,
                method: method.into_owned(),
                params,
            })),
            None => Err(Rejected::new(
                None,
                error_codes::INVALID_REQUEST,
                "Invalid request: `id` must be a string or an integer",
            )),
        },
    }
}

/// A frame without a `method`: a response to one of our own requests, with exactly one
/// of `result` and `error`.
fn classify_response(probe: &Probe<'_>, id: Option<RequestId>) -> Result<Incoming, Box<Rejected>> {
    let not_a_message = |reason: &str| {
        Rejected::new(
            None,
            error_codes::INVALID_REQUEST,
            format!("Invalid response: {reason}"),
        )
        .with_reply(false)
    };
    if probe.result.is_none() && probe.error.is_none() {
        return Err(Rejected::new(
            id,
            error_codes::INVALID_REQUEST,
            "Invalid request: need `method`, or exactly one of `result` and `error`",
        ));
    }
    let Some(id) = id else {
        return Err(not_a_message("no usable `id`"));
    };
    match (probe.result, probe.error) {
        (Some(result), None) => Ok(Incoming::Response {
            id,
            outcome: Ok(result.to_owned()),
        }),
        (None, Some(error)) => Ok(Incoming::Response {
            id,
            outcome: Err(peer_error(error)),
        }),
        _ => Err(not_a_message("both `result` and `error`")),
    }
}

/// The error object a peer's error response carries; a malformed one reads as an
/// internal error that says so.
fn peer_error(error: &RawValue) -> ErrorObject {
    serde_json::from_str::<ErrorObject>(error.get()).unwrap_or_else(|e| {
        ErrorObject::new(
            error_codes::INTERNAL_ERROR,
            format!("peer sent a malformed error object: {e}"),
        )
    })
}

/// The error answering an inbound frame longer than `limit` bytes.
pub(super) fn too_large(limit: usize) -> ErrorObject {
    ErrorObject::new(
        error_codes::INVALID_REQUEST,
        format!("Invalid request: frame exceeds the limit of {limit} bytes"),
    )
}

/// The error answering an inbound frame that is not UTF-8 (so it cannot be JSON).
pub(super) fn not_utf8() -> ErrorObject {
    ErrorObject::new(
        error_codes::PARSE_ERROR,
        "Parse error: frame is not valid UTF-8",
    )
}

/// Rewrites the id of a serialized response.
pub(super) fn readdress_response(json: &str, id: RequestId) -> String {
    #[derive(Deserialize)]
    struct Parts<'a> {
        #[serde(borrow)]
        result: Option<&'a RawValue>,
        #[serde(borrow)]
        error: Option<&'a RawValue>,
    }
    #[derive(serde::Serialize)]
    struct Out<'a> {
        jsonrpc: Version,
        id: RequestId,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'a RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a RawValue>,
    }
    match serde_json::from_str::<Parts<'_>>(json) {
        Ok(p) => serde_json::to_string(&Out {
            jsonrpc: Version,
            id: id.clone(),
            result: p.result,
            error: p.error,
        })
        .unwrap_or_else(|_| {
            error_frame(
                Some(id),
                ErrorObject::new(error_codes::INTERNAL_ERROR, "Internal error"),
            )
        }),
        Err(_) => error_frame(
            Some(id),
            ErrorObject::new(error_codes::INTERNAL_ERROR, "Internal error"),
        ),
    }
}
