//! The `POST` pipeline: body limits, content negotiation, the session a request belongs
//! to, the routing headers checked against the body, then the engine; the reply as JSON
//! or as an event stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use mcp_tasks_protocol::engine::{
    FrameReceiver, FrameSender, InboundRequest, Incoming, ReplyWritten, Session, error_frame,
};
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::http::{ParamHeader, decode_header_value, header_matches};
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::v2025;
use mcp_tasks_protocol::v2026::{self, SubscriptionsListen};
use serde::Deserialize;

use super::sessions::{SessionLimit, too_many_sessions};
use super::{
    App, Authenticated, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, OpenSession,
    accepts, header_str, json_response, message_event, rpc_error, sse, status_for, status_of,
};
use crate::caller::SUPPORTED_VERSIONS;
use crate::v2025::SessionSlot;

pub(super) async fn handle_post(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Authenticated>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    // A declared length over the limit is refused before a byte of the body is read.
    let limit = app.config.max_body_bytes;
    let declared = header_str(&headers, header::CONTENT_LENGTH.as_str())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return too_large(limit);
    }
    let body: Bytes = match axum::body::to_bytes(body, limit).await {
        Ok(body) => body,
        Err(_) => return too_large(limit),
    };
    let content_type = header_str(&headers, header::CONTENT_TYPE.as_str()).unwrap_or("");
    if !content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/json")
    {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            error_codes::INVALID_REQUEST,
            "Content-Type must be application/json",
        );
    }
    let (accepts_json, accepts_sse) = accepts(&headers);
    if !accepts_json && !accepts_sse {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            error_codes::INVALID_REQUEST,
            "Accept must allow application/json or text/event-stream",
        );
    }
    // A 2025-11-25 request names its session (the guard found it); any other request gets
    // an empty slot that `initialize` may fill.
    let named = parts.extensions.get::<OpenSession>().cloned();
    let session_header = named.is_some();
    let (slot, replay, own_peer) = match named {
        Some(OpenSession(session, replay, peer)) => {
            (SessionSlot::with(session), Some(replay), Some(peer))
        }
        None => (SessionSlot::default(), None, None),
    };
    let legacy = slot.get().is_some();
    let Ok(text) = std::str::from_utf8(&body) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            error_codes::PARSE_ERROR,
            "Parse error: body is not UTF-8",
        );
    };
    let mut session = app.session(caller.principal());
    // A 2025-11-25 session asks its client through its own peer: its questions wait
    // for answers there, out of reach of every other session (and caller).
    if let Some(peer) = own_peer {
        session = session.with_peer(peer);
    }
    session.extensions.insert(slot.clone());
    // What this request's credentials grant (they may differ between requests of one
    // principal): the tools see it in their context.
    if let Some(identity) = &caller.0 {
        session.extensions.insert(identity.clone());
    }
    match app.endpoint.classify(text) {
        Err(rejected) => json_response(
            StatusCode::BAD_REQUEST,
            error_frame(rejected.id.clone(), rejected.error.clone()),
        ),
        Ok(Incoming::Notification { method, params }) => {
            app.endpoint
                .handle_notification(&session, method, params)
                .await;
            StatusCode::ACCEPTED.into_response()
        }
        Ok(Incoming::Response { id, outcome }) => {
            super::sessions::take_response(&app, slot.get(), &session, id, outcome).await
        }
        Ok(Incoming::Request(req)) => {
            // The request's `_meta` declarations, read once: for the header check here and
            // for the handlers (`RequestMetaLayer` does not read them again). A malformed
            // `_meta` of a 2026-07-28 request is refused here with HTTP 400, like a missing
            // one; any other refusal (an unsupported version) is left to the layer, which
            // answers it with its own error and status.
            let declared = if legacy {
                None
            } else {
                match crate::caller::declarations(req.params.as_deref().map(|p| p.get())) {
                    Ok(declared) => Some(declared),
                    Err(e)
                        if e.code == error_codes::INVALID_PARAMS
                            && app.methods.contains(&req.method)
                            && !OWN_META_RULES.contains(&req.method.as_str()) =>
                    {
                        return rpc_error(StatusCode::BAD_REQUEST, Some(req.id), e.code, e.message);
                    }
                    Err(_) => None,
                }
            };
            // The version the body names, even one this server does not speak: a header
            // that disagrees with it is a mismatch before any unsupported-version check.
            let body_version = match &declared {
                Some(d) => d.protocol_version.clone(),
                None if !legacy => {
                    crate::caller::named_protocol_version(req.params.as_deref().map(|p| p.get()))
                }
                None => None,
            };
            let session_version = slot.get().map(|s| s.protocol_version.clone());
            if let Some(refused) = check_headers(
                &headers,
                &req,
                session_version.as_deref(),
                body_version.as_deref(),
                &app.param_headers,
            ) {
                return refused;
            }
            // A tool that requires a scope the credentials lack: refused before it runs
            // (or becomes a task), in either revision, with the challenge to step up.
            if req.method == v2025::CallTool::METHOD
                && let Some(tool) = routed_name(&req)
                && let Some(refused) = app.refuse_tool(&tool, caller.0.as_ref())
            {
                return super::refusal_response(&refused, Some(req.id));
            }
            // Every 2026-07-28 request carries `_meta` with its version and capabilities; a
            // request without them is refused here, with HTTP 400 (a 2025-11-25 client's
            // `initialize` opens a session instead).
            if let Some(missing) = declared.as_ref().and_then(|d| d.missing)
                && app.methods.contains(&req.method)
                && !OWN_META_RULES.contains(&req.method.as_str())
            {
                let what = if missing == "_meta" {
                    "_meta is required".to_owned()
                } else {
                    format!("_meta.\"{missing}\" is required")
                };
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    Some(req.id),
                    error_codes::INVALID_PARAMS,
                    format!("Invalid params: {what} (MCP 2026-07-28)"),
                );
            }
            let notifies_declared = declared.as_ref().is_some_and(|d| d.wants_notifications);
            if let Some(declared) = declared {
                session.extensions.insert(declared);
            }
            let listen = req.method == SubscriptionsListen::METHOD;
            if listen && !accepts_sse {
                return rpc_error(
                    StatusCode::NOT_ACCEPTABLE,
                    Some(req.id),
                    error_codes::INVALID_REQUEST,
                    "subscriptions/listen replies with an event stream: Accept must allow text/event-stream",
                );
            }
            if !session_header
                && req.method == v2025::Initialize::METHOD
                && let Err(limit) = app.room_for_a_session(caller.principal().as_deref())
            {
                return too_many_sessions(limit, Some(req.id));
            }
            // A 2025-11-25 task's tool starts once its `CreateTaskResult` has been taken
            // by the connection, so that nothing about the task (a question or status on
            // the standalone stream) reaches the client before it.
            let announces = legacy && req.method == v2025::CallTool::METHOD;
            let written = announces.then(ReplyWritten::new);
            if let Some(written) = &written {
                session.extensions.insert(written.clone());
            }
            let initialize_id = Some(req.id.clone());
            // In a 2025-11-25 session the server may ask the client while it answers
            // (elicitation during tools/call or tasks/result): those replies stream.
            let may_ask = legacy
                && (req.method == v2025::CallTool::METHOD
                    || req.method == v2025::GetTaskPayload::METHOD);
            // A 2026-07-28 call that asks for progress or log messages gets them on its
            // own response stream.
            let notifies = !legacy && req.method == v2025::CallTool::METHOD && notifies_declared;
            let streams = listen || !accepts_json || ((may_ask || notifies) && accepts_sse);
            // A 2025-11-25 session's streams are resumable (SEP-1699).
            let resumable = slot
                .get()
                .filter(|s| super::resume::resumable(s))
                .cloned()
                .zip(replay.as_ref());
            let mut response = if let (true, Some((legacy, replay))) = (streams, resumable) {
                super::resume::post_reply(&app, session, req, legacy, replay)
            } else if streams {
                sse_reply(Arc::clone(&app), session, req, legacy).await
            } else {
                json_reply(&app, &session, req, legacy).await
            };
            if let Some(written) = &written {
                response = super::fire_when_sent(response, written);
            }
            // `initialize` filled the slot: the session exists from now on.
            if !session_header
                && let Some(opened) = slot.get()
                && let Ok(value) = HeaderValue::from_str(&opened.id)
            {
                app.keep_session(opened);
                // On a shared store the record makes the session every instance's.
                match app.record_session(opened).await {
                    Ok(()) => {}
                    Err(mcp_tasks::StoreError::LimitExceeded { .. }) => {
                        opened.close();
                        let limit = SessionLimit::Total(app.config.max_sessions);
                        return too_many_sessions(limit, initialize_id);
                    }
                    Err(e) => {
                        opened.close();
                        return super::sessions::store_failed(&e);
                    }
                }
                response.headers_mut().insert(MCP_SESSION_ID, value);
            }
            response
        }
    }
}

/// Methods that keep their own rule for a request without `_meta`: MCP 2025-11-25 ones
/// (a session's, or `initialize` opening one), which carry none, and the tasks
/// extension's, which answer it -32021 (the extension is not declared).
const OWN_META_RULES: &[&str] = {
    use mcp_tasks_protocol::tasks::methods as ext;
    use mcp_tasks_protocol::v2025::methods as v2025m;
    &[
        v2025m::INITIALIZE,
        v2025m::PING,
        v2025m::LOGGING_SET_LEVEL,
        v2025m::RESOURCES_SUBSCRIBE,
        v2025m::RESOURCES_UNSUBSCRIBE,
        v2025m::TASKS_RESULT,
        v2025m::TASKS_LIST,
        ext::TASKS_GET,
        ext::TASKS_UPDATE,
        ext::TASKS_CANCEL,
    ]
};

/// `Mcp-Method` / `Mcp-Name` / `MCP-Protocol-Version`, and a 2026-07-28 `tools/call`'s
/// `Mcp-Param-*` headers, must be there and agree with the body (SEP-2243).
fn check_headers(
    headers: &HeaderMap,
    req: &InboundRequest,
    session_version: Option<&str>,
    body_version: Option<&str>,
    param_headers: &HashMap<String, Arc<[ParamHeader]>>,
) -> Option<Response> {
    let mismatch = |what: String| {
        Some(rpc_error(
            StatusCode::BAD_REQUEST,
            Some(req.id.clone()),
            error_codes::HEADER_MISMATCH,
            what,
        ))
    };
    // HTTP 400 with -32022 for a version this server does not serve there, naming those
    // it does.
    let unsupported = |version: &str, supported: &[&str]| {
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
    };
    // A 2026-07-28 request must carry the routing headers (SEP-2243): `Mcp-Method`
    // always, `Mcp-Name` when the body names a tool, prompt, resource or task. Requests
    // of a 2025-11-25 session, and the `initialize` that opens one, predate them.
    let header_version = header_str(headers, MCP_PROTOCOL_VERSION).map(str::trim);
    let modern = session_version.is_none()
        && req.method != v2025::Initialize::METHOD
        && body_version
            .or(header_version)
            .is_some_and(|v| !crate::v2025::SESSION_VERSIONS.contains(&v));
    if modern {
        if header_version.is_none() {
            return mismatch(
                "Header missing: MCP-Protocol-Version is required (MCP 2026-07-28)".to_owned(),
            );
        }
        if header_str(headers, MCP_METHOD).is_none() {
            return mismatch(format!(
                "Header missing: Mcp-Method is required (MCP 2026-07-28); the body's method is {:?}",
                req.method
            ));
        }
        if header_str(headers, MCP_NAME).is_none()
            && let Some(body_name) = routed_name(req)
        {
            return mismatch(format!(
                "Header missing: Mcp-Name is required on {} (MCP 2026-07-28); the body names {body_name:?}",
                req.method
            ));
        }
    }
    // Header values are compared without surrounding whitespace (RFC 9110, 5.5).
    if let Some(method) = header_str(headers, MCP_METHOD).map(str::trim)
        && method != req.method
    {
        return mismatch(format!(
            "Header mismatch: Mcp-Method is {method:?} but the body's method is {:?}",
            req.method
        ));
    }
    if let Some(raw) = headers.get(MCP_NAME)
        && let Some(body_name) = routed_name(req)
    {
        match decode_header_value(raw.as_bytes()) {
            Ok(name) if name == body_name => {}
            Ok(name) => {
                return mismatch(format!(
                    "Header mismatch: Mcp-Name is {name:?} but the body names {body_name:?}"
                ));
            }
            Err(e) => return mismatch(format!("Header invalid: Mcp-Name: {e}")),
        }
    }
    if modern
        && req.method == v2026::CallTool::METHOD
        && !param_headers.is_empty()
        && let Some(refused) = check_param_headers(headers, req, param_headers)
    {
        return mismatch(refused);
    }
    if let Some(version) = header_version {
        if let Some(negotiated) = session_version {
            // A session's requests may name any revision this server serves sessions in
            // (as the TypeScript and Python SDK servers accept): the session goes on in
            // the one its `initialize` agreed on. Only an unknown version is refused.
            if version == negotiated || crate::v2025::SESSION_VERSIONS.contains(&version) {
                return None;
            }
            if SUPPORTED_VERSIONS.contains(&version) {
                return mismatch(format!(
                    "Header mismatch: MCP-Protocol-Version is {version:?} but Mcp-Session-Id \
                     names an MCP {negotiated} session ({version} has no sessions)"
                ));
            }
            return Some(unsupported(version, &crate::v2025::SESSION_VERSIONS));
        }
        // A header that disagrees with the body is a mismatch, whatever the versions.
        if let Some(body_version) = body_version
            && body_version != version
        {
            return mismatch(format!(
                "Header mismatch: MCP-Protocol-Version is {version:?} but _meta names {body_version:?}"
            ));
        }
        // A 2025-11-25 client may name its version on the `initialize` that opens its
        // session.
        if req.method == v2025::Initialize::METHOD
            && crate::v2025::SESSION_VERSIONS.contains(&version)
        {
            return None;
        }
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Some(unsupported(version, SUPPORTED_VERSIONS));
        }
    }
    None
}

/// The `Mcp-Param-*` headers of a `tools/call` against its arguments: a header for each
/// annotated parameter that has a value, equal to it once decoded, and none for a
/// parameter without one. An unknown tool is left to the handler (-32602).
fn check_param_headers(
    headers: &HeaderMap,
    req: &InboundRequest,
    param_headers: &HashMap<String, Arc<[ParamHeader]>>,
) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Call {
        name: String,
        #[serde(default)]
        arguments: Option<mcp_tasks_protocol::JsonObject>,
    }
    let call: Call = serde_json::from_str(req.params.as_deref()?.get()).ok()?;
    let params = param_headers.get(&call.name)?;
    let arguments = call.arguments.unwrap_or_default();
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

async fn json_reply(app: &App, session: &Session, req: InboundRequest, legacy: bool) -> Response {
    // A JSON reply carries nothing but the response: the handler's peer is closed, so a
    // notification is dropped and a request to the client fails at once (a question of
    // a task is then asked on the session's standalone stream, not lost on this one).
    let (tx, rx) = FrameSender::channel(1);
    drop(rx);
    let session = session.with_peer(session.peer.with_sender(tx));
    match app.endpoint.handle_request(&session, req).await {
        Some(reply) => json_response(status_for(reply.error_code, legacy), reply.frame),
        // Cancelled by the client: nobody waits for an answer.
        None => StatusCode::ACCEPTED.into_response(),
    }
}

/// Cancels the request when the client drops the stream before its response was sent:
/// that request only, through its own token (another request of the same principal may
/// carry the same id).
struct CancelOnDrop {
    stop: tokio_util::sync::CancellationToken,
    /// Cleared once the handler has finished: nothing is left to cancel.
    armed: bool,
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.stop.cancel();
        }
    }
}

/// Whether `frame` is a response (to the request a stream serves) rather than a
/// notification or request sent on the way.
fn is_response(frame: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        method: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Probe>(frame).is_ok_and(|p| p.method.is_none())
}

/// Answers `req` with an event stream: every frame the handler sends, then its response;
/// the stream ends after the response.
///
/// The reply is committed when the first frame is ready. A request refused before its
/// stream began (e.g. -32021 for `subscriptions/listen` with `taskIds` from a caller
/// that does not declare the tasks extension, -32022) is answered like a JSON reply
/// instead, so that it travels with the HTTP status MCP requires (400).
async fn sse_reply(app: Arc<App>, session: Session, req: InboundRequest, legacy: bool) -> Response {
    let (tx, mut rx) = FrameSender::channel(64);
    // Holds the session without the stream's sender: the stream ends once the handler
    // (and with it every sender) is gone.
    let stop = tokio_util::sync::CancellationToken::new();
    let mut guard = CancelOnDrop {
        stop: stop.clone(),
        armed: true,
    };
    let session = session.with_peer(session.peer.with_sender(tx.clone()));
    let handler = Arc::clone(&app);
    tokio::spawn(async move {
        if let Some(reply) = handler
            .endpoint
            .handle_request_until(&session, req, &stop)
            .await
        {
            let _ = tx.send(reply.frame).await;
        }
    });
    let first = match rx.recv().await {
        Some(Ok(frame)) => frame,
        // Cancelled by the client: nobody waits for an answer.
        _ => {
            guard.disarm();
            return StatusCode::ACCEPTED.into_response();
        }
    };
    if is_response(&first) {
        guard.disarm();
        let status = status_of(&first, legacy);
        if status != StatusCode::OK {
            return json_response(status, first);
        }
    }
    sse(&app, frames(first, rx, guard))
}

fn frames(
    first: String,
    rx: FrameReceiver,
    guard: CancelOnDrop,
) -> impl Stream<Item = Result<Event, Infallible>> {
    use futures::StreamExt;
    let rest = futures::stream::unfold((rx, guard), |(mut rx, mut guard)| async move {
        match rx.recv().await {
            Some(Ok(frame)) => Some((Ok(message_event(frame)), (rx, guard))),
            _ => {
                // Every sender is gone: the handler finished and its response went out.
                guard.disarm();
                None
            }
        }
    });
    futures::stream::once(async move { Ok(message_event(first)) }).chain(rest)
}

fn too_large(limit: usize) -> Response {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        error_codes::INVALID_REQUEST,
        format!("Body too large (or unreadable): the limit is {limit} bytes"),
    )
}

/// The member of `params` that `Mcp-Name` must repeat, for the methods that have one.
fn routed_name(req: &InboundRequest) -> Option<String> {
    mcp_tasks_protocol::http::routed_name(&req.method, req.params.as_deref().map(|p| p.get()))
}
