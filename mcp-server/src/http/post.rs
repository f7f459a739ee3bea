//! The `POST` pipeline: body limits, content negotiation, the session a request belongs
//! to, the routing headers checked against the body, then the engine; the reply as JSON
//! or as an event stream.

use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_tasks_protocol::engine::{InboundRequest, Incoming, ReplyWritten, Session, error_frame};
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::http::ParamsHead;
use mcp_tasks_protocol::jsonrpc::RequestId;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::tasks::StreamTask;
use mcp_tasks_protocol::v2025;
use mcp_tasks_protocol::v2026::SubscriptionsListen;
use serde_json::value::RawValue;

use super::headers::{Versions, check_headers};
use super::reply::{json_reply, sse_reply};
use super::sessions::{SessionLimit, too_many_sessions};
use super::{
    App, Authenticated, MCP_SESSION_ID, OpenSession, accepts, header_str, json_response, rpc_error,
};
use crate::revision::Revision;
use crate::session::{McpSession, SessionSlot};

pub(super) async fn handle_post(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Authenticated>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let body = match read_body(&headers, body, app.config.max_body_bytes).await {
        Ok(body) => body,
        Err(refused) => return *refused,
    };
    let accepts = match negotiate(&headers) {
        Ok(accepts) => accepts,
        Err(refused) => return *refused,
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            error_codes::PARSE_ERROR,
            "Parse error: body is not UTF-8",
        );
    };
    // The 2025-11-25 session the request names (the guard found it), if any.
    let open = parts.extensions.get::<OpenSession>().cloned();
    let session = engine_session(&app, &caller, open.as_ref());
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
            let named = open.as_ref().map(|o| &o.0);
            super::sessions::take_response(&app, named, &session, id, outcome).await
        }
        Ok(Incoming::Request(req)) => {
            serve_request(app, &caller, &headers, open, session, req, accepts).await
        }
    }
}

/// Reads the body: a declared length over `limit` is refused before a byte is read (413).
async fn read_body(
    headers: &HeaderMap,
    body: axum::body::Body,
    limit: usize,
) -> Result<Bytes, Box<Response>> {
    let declared =
        header_str(headers, header::CONTENT_LENGTH).and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(Box::new(too_large(limit)));
    }
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| Box::new(too_large(limit)))
}

/// What the client takes back: JSON, an event stream, or both.
#[derive(Debug, Clone, Copy)]
struct Accepts {
    json: bool,
    sse: bool,
}

/// `Content-Type` (415) and `Accept` (406).
fn negotiate(headers: &HeaderMap) -> Result<Accepts, Box<Response>> {
    let content_type = header_str(headers, header::CONTENT_TYPE).unwrap_or("");
    if !content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/json")
    {
        return Err(Box::new(rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            error_codes::INVALID_REQUEST,
            "Content-Type must be application/json",
        )));
    }
    let (json, sse) = accepts(headers);
    if !json && !sse {
        return Err(Box::new(rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            error_codes::INVALID_REQUEST,
            "Accept must allow application/json or text/event-stream",
        )));
    }
    Ok(Accepts { json, sse })
}

/// The engine session the request runs in: the principal's (its in-flight requests),
/// asking the client through the named 2025-11-25 session's own peer, if any (its
/// questions wait for answers there, out of reach of every other session and caller),
/// and carrying what this request's credentials grant (they may differ between requests
/// of one principal; the tools see it in their context).
fn engine_session(app: &App, caller: &Authenticated, open: Option<&OpenSession>) -> Session {
    let mut session = app.session(caller.principal());
    if let Some(OpenSession(_, _, peer)) = open {
        session = session.with_peer(peer.clone());
    }
    if let Some(identity) = &caller.0 {
        session.extensions.insert(identity.clone());
    }
    session
}

/// What the edge read of one request, once: its revision (when the edge can decide it)
/// and the versions the header check compares.
struct Read {
    /// `None`: a request whose `_meta` the middleware refuses with its own error (an
    /// unsupported version, -32022), or an unknown method.
    revision: Option<Revision>,
    /// Without a revision, the version the body's `_meta` names all the same (one this
    /// server does not speak): a header that disagrees with it is a mismatch before any
    /// unsupported-version check.
    unsupported_version: Option<String>,
}

impl Read {
    /// The versions the headers are checked against, read from the revision.
    fn versions(&self) -> Versions<'_> {
        match &self.revision {
            Some(Revision::Session(named)) => Versions {
                session: Some(&named.protocol_version),
                body: None,
            },
            Some(Revision::Stateless(declared)) => Versions {
                session: None,
                body: declared.protocol_version.as_deref(),
            },
            None => Versions {
                session: None,
                body: self.unsupported_version.as_deref(),
            },
        }
    }
}

/// Reads the revision of `req` from its session or its params' `_meta`. A malformed
/// `_meta` of a 2026-07-28 request is refused here with HTTP 400, like a missing one
/// (see [`require_meta`]).
fn read_revision(
    app: &App,
    req: &InboundRequest,
    head: &ParamsHead<'_>,
    open: Option<&OpenSession>,
) -> Result<Read, Box<Response>> {
    if let Some(OpenSession(named, _, _)) = open {
        return Ok(Read {
            revision: Some(Revision::Session(Arc::clone(named))),
            unsupported_version: None,
        });
    }
    match crate::revision::declarations(head.meta) {
        Ok(declared) => Ok(Read {
            revision: Some(Revision::Stateless(declared)),
            unsupported_version: None,
        }),
        Err(e)
            if e.code == error_codes::INVALID_PARAMS
                && app.methods.contains(&req.method)
                && !OWN_META_RULES.contains(&req.method.as_str()) =>
        {
            Err(Box::new(rpc_error(
                StatusCode::BAD_REQUEST,
                Some(req.id.clone()),
                e.code,
                e.message,
            )))
        }
        Err(_) => Ok(Read {
            revision: None,
            unsupported_version: crate::revision::named_protocol_version(head.meta),
        }),
    }
}

/// Every 2026-07-28 request carries `_meta` with its version and capabilities; one
/// without them is refused with HTTP 400 (a 2025-11-25 client's `initialize` opens a
/// session instead).
fn require_meta(app: &App, req: &InboundRequest, revision: Option<&Revision>) -> Option<Response> {
    let Some(Revision::Stateless(declared)) = revision else {
        return None;
    };
    let missing = declared.missing?;
    if !app.methods.contains(&req.method) || OWN_META_RULES.contains(&req.method.as_str()) {
        return None;
    }
    let what = if missing == "_meta" {
        "_meta is required".to_owned()
    } else {
        format!("_meta.\"{missing}\" is required")
    };
    Some(rpc_error(
        StatusCode::BAD_REQUEST,
        Some(req.id.clone()),
        error_codes::INVALID_PARAMS,
        format!("Invalid params: {what} (MCP 2026-07-28)"),
    ))
}

/// Checks a request against its headers and the caller's rights, decides its revision
/// (from one read of its params), runs it and replies as JSON or as an event stream.
async fn serve_request(
    app: Arc<App>,
    caller: &Authenticated,
    headers: &HeaderMap,
    open: Option<OpenSession>,
    mut session: Session,
    req: InboundRequest,
    accepts: Accepts,
) -> Response {
    let read = {
        let head = ParamsHead::read(req.params.as_deref().map(RawValue::get));
        let read = match read_revision(&app, &req, &head, open.as_ref()) {
            Ok(read) => read,
            Err(refused) => return *refused,
        };
        let routed = head.routed_name(&req.method);
        let versions = read.versions();
        if let Some(refused) = check_headers(
            headers,
            &req,
            versions,
            routed.as_deref(),
            &head,
            &app.param_headers,
        ) {
            return refused;
        }
        // A tool that requires a scope the credentials lack: refused before it runs (or
        // becomes a task), in either revision, with the challenge to step up.
        if req.method == v2025::CallTool::METHOD
            && let Some(tool) = routed.as_deref()
            && let Some(refused) = app.refuse_tool(tool, caller.0.as_ref())
        {
            return super::refusal_response(&refused, Some(req.id));
        }
        read
    };
    if let Some(refused) = require_meta(&app, &req, read.revision.as_ref()) {
        return refused;
    }
    let in_session = matches!(read.revision, Some(Revision::Session(_)));
    let notifies_declared = matches!(
        &read.revision,
        Some(Revision::Stateless(declared)) if declared.wants_notifications
    );
    // The long-lived streams: pushed notifications until the request ends.
    let listen = req.method == SubscriptionsListen::METHOD || req.method == StreamTask::METHOD;
    if listen && !accepts.sse {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            Some(req.id),
            error_codes::INVALID_REQUEST,
            format!(
                "{} replies with an event stream: Accept must allow text/event-stream",
                req.method
            ),
        );
    }
    let opens = open.is_none() && req.method == v2025::Initialize::METHOD;
    if opens && let Err(limit) = app.room_for_a_session(caller.principal().as_deref()) {
        return too_many_sessions(limit, Some(req.id));
    }
    // Where `initialize` puts the session it opens.
    let slot = opens.then(SessionSlot::default);
    if let Some(slot) = &slot {
        session.extensions.insert(slot.clone());
    }
    if let Some(revision) = read.revision {
        session.extensions.insert(revision);
    }
    crate::telemetry::http_edge(&mut session.extensions, headers, caller.0.is_some());
    // A 2025-11-25 task's tool starts once its `CreateTaskResult` has been taken by the
    // connection, so that nothing about the task (a question or status on the standalone
    // stream) reaches the client before it.
    let written = (in_session && req.method == v2025::CallTool::METHOD).then(ReplyWritten::new);
    if let Some(written) = &written {
        session.extensions.insert(written.clone());
    }
    let request_id = req.id.clone();
    // In a 2025-11-25 session the server may ask the client while it answers (elicitation
    // during tools/call or tasks/result): those replies stream. A 2026-07-28 call that
    // asks for progress or log messages gets them on its own response stream.
    let may_ask = in_session
        && (req.method == v2025::CallTool::METHOD || req.method == v2025::GetTaskPayload::METHOD);
    let notifies = !in_session && req.method == v2025::CallTool::METHOD && notifies_declared;
    let streams = listen || !accepts.json || ((may_ask || notifies) && accepts.sse);
    let mut response = match &open {
        // A 2025-11-25 session's streams are resumable (SEP-1699).
        Some(OpenSession(named, replay, _)) if streams && super::resume::resumable(named) => {
            super::resume::post_reply(&app, session, req, Arc::clone(named), replay)
        }
        _ if streams => sse_reply(Arc::clone(&app), session, req, in_session).await,
        _ => json_reply(&app, session, req, in_session).await,
    };
    if let Some(written) = &written {
        response = super::fire_when_sent(response, written);
    }
    match slot.as_ref().and_then(SessionSlot::get) {
        Some(opened) => keep_opened(&app, opened, response, request_id).await,
        None => response,
    }
}

/// `initialize` opened `opened`: the session exists from now on (on a shared store, its
/// record makes it every instance's), and the response names it.
async fn keep_opened(
    app: &App,
    opened: &Arc<McpSession>,
    mut response: Response,
    initialize_id: RequestId,
) -> Response {
    let Ok(value) = HeaderValue::from_str(&opened.id) else {
        return response;
    };
    app.keep_session(opened);
    match app.record_session(opened).await {
        Ok(()) => {}
        Err(mcp_tasks::StoreError::LimitExceeded { .. }) => {
            opened.close();
            let limit = SessionLimit::Total(app.config.max_sessions);
            return too_many_sessions(limit, Some(initialize_id));
        }
        Err(e) => {
            opened.close();
            return super::sessions::store_failed(&e);
        }
    }
    response.headers_mut().insert(MCP_SESSION_ID, value);
    response
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

fn too_large(limit: usize) -> Response {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        error_codes::INVALID_REQUEST,
        format!("Body too large (or unreadable): the limit is {limit} bytes"),
    )
}
