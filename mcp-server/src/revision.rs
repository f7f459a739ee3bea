//! The revision a request is served in, decided once, at the edge, and the [`Caller`]
//! its handlers see. The revision goes into the request's extensions as a [`Revision`]:
//! the MCP 2025-11-25 session it belongs to, or what its own `_meta` declared (MCP
//! 2026-07-28). The HTTP edge decides it while it
//! checks the routing headers (`http/post.rs`, from one read of the params, a
//! [`ParamsHead`]); for stdio, whose connection is the session, [`RequestMetaLayer`]
//! decides it in front of the dispatcher. Nothing after the edge reads `_meta` or the
//! session slot again to tell the revisions apart: `dispatch.rs` matches the value.
//!
//! **Invariant.** One request, one decision: a layer that finds a `Revision` already in
//! the extensions passes the request on untouched.

use std::collections::HashSet;
use std::sync::Arc;

use jsonrpsee::Extensions;
use jsonrpsee::core::middleware::{Batch, Notification, RpcServiceT};
use jsonrpsee::core::server::MethodResponse;
use jsonrpsee::types::{ErrorObjectOwned, Request};
use mcp_tasks::Owner;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::http::ParamsHead;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::meta::{
    CLIENT_CAPABILITIES, PROTOCOL_VERSION, PROTOCOL_VERSION_2026_07_28, TASKS_EXTENSION,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::auth::{ANONYMOUS, Identity, Principal};
use crate::session::{McpSession, SessionSlot};

/// The revision of one request.
#[derive(Debug, Clone)]
pub(crate) enum Revision {
    /// MCP 2025-11-25 (or an earlier revision with sessions): the session the request
    /// belongs to (`Mcp-Session-Id` over HTTP, the connection over stdio).
    Session(Arc<McpSession>),
    /// No session: what the request's own `_meta` declared. A 2026-07-28 request names
    /// its version there; a request naming none is a 2025-11-25 client's `initialize`,
    /// or one the handler refuses.
    Stateless(RequestDeclarations),
}

impl Revision {
    /// The request's declarations, when it is not in a session.
    pub(crate) fn declarations(ext: &Extensions) -> Option<&RequestDeclarations> {
        match ext.get::<Revision>()? {
            Revision::Stateless(declared) => Some(declared),
            Revision::Session(_) => None,
        }
    }

    /// The session, when the request is in one.
    pub(crate) fn session(ext: &Extensions) -> Option<Arc<McpSession>> {
        match ext.get::<Revision>()? {
            Revision::Session(session) => Some(Arc::clone(session)),
            Revision::Stateless(_) => None,
        }
    }
}

/// The caller as the handlers see it.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The owner of the tasks this request creates and the only one whose tasks it sees.
    pub owner: Owner,
    /// Whether the request declares the tasks extension (so a call may become a task).
    pub declares_tasks: bool,
    /// Who the credentials of this request say the caller is, and the scopes they grant
    /// (`None`: anonymous, a 2025-11-25 session opened without credentials, stdio).
    pub identity: Option<Identity>,
}

impl Caller {
    /// The caller a transport put in the request's extensions (anonymous when none).
    pub fn from_extensions(ext: &Extensions) -> Caller {
        let owner = ext
            .get::<Principal>()
            .map_or_else(|| Owner::new(ANONYMOUS), |p| Owner::new(p.0.clone()));
        let declares_tasks = Revision::declarations(ext).is_some_and(|d| d.declares_tasks);
        Caller {
            owner,
            declares_tasks,
            identity: ext.get::<Identity>().cloned(),
        }
    }
}

/// What one request's `_meta` declared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestDeclarations {
    /// The protocol version the request names.
    pub protocol_version: Option<String>,
    /// Whether `clientCapabilities.extensions` declares `io.modelcontextprotocol/tasks`.
    pub declares_tasks: bool,
    /// The first member every 2026-07-28 request must carry that this one lacks: `_meta`
    /// itself, its protocol version or its client capabilities.
    pub missing: Option<&'static str>,
    /// Whether the request asks for notifications while it runs: its `_meta` carries a
    /// `progressToken` or an `io.modelcontextprotocol/logLevel` (over HTTP such a request
    /// is answered with an event stream when the client accepts one).
    pub wants_notifications: bool,
}

/// The protocol versions this server speaks on the stateless wire.
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION_2026_07_28];

/// Middleware that decides the revision of each request no edge decided (stdio): the
/// session of the connection once `initialize` opened it, else what the request's
/// `_meta` declared (never remembered across requests); an unsupported
/// `protocolVersion` is answered with -32022 before any handler runs. Unknown methods
/// pass through undecided, so they get -32601 whatever their `_meta`.
#[derive(Debug, Clone)]
pub struct RequestMetaLayer {
    methods: Arc<HashSet<String>>,
    /// The tools and prompts a request span may be named after.
    targets: Arc<crate::telemetry::Targets>,
}

impl RequestMetaLayer {
    /// A layer that reads the `_meta` of requests for `methods` (the server's known
    /// methods); any other method passes through untouched.
    pub fn new(methods: impl IntoIterator<Item = String>) -> Self {
        RequestMetaLayer {
            methods: Arc::new(methods.into_iter().collect()),
            targets: Arc::default(),
        }
    }

    /// The same layer, naming request spans after `targets` (the server's tools and
    /// prompts; any other name a request carries is `_OTHER` there).
    pub(crate) fn with_targets(mut self, targets: crate::telemetry::Targets) -> Self {
        self.targets = Arc::new(targets);
        self
    }
}

impl<S> tower::Layer<S> for RequestMetaLayer {
    type Service = RequestMetaService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestMetaService {
            inner,
            methods: Arc::clone(&self.methods),
            targets: Arc::clone(&self.targets),
        }
    }
}

/// The service [`RequestMetaLayer`] wraps around the dispatcher.
#[derive(Debug, Clone)]
pub struct RequestMetaService<S> {
    inner: S,
    methods: Arc<HashSet<String>>,
    targets: Arc<crate::telemetry::Targets>,
}

/// The members of `_meta` the declarations read, borrowed: each stays unparsed JSON text
/// (present even when `null`), so that reading them costs no tree of values. serde needs
/// the keys spelled out here; `the_probe_reads_the_members_the_constants_name` holds them
/// to the constants of `mcp_tasks_protocol::meta`.
#[derive(Deserialize, Default)]
struct MetaProbe<'a> {
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        borrow,
        default,
        deserialize_with = "present"
    )]
    protocol_version: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        borrow,
        default,
        deserialize_with = "present"
    )]
    client_capabilities: Option<&'a RawValue>,
    #[serde(
        rename = "progressToken",
        borrow,
        default,
        deserialize_with = "present"
    )]
    progress_token: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        borrow,
        default,
        deserialize_with = "present"
    )]
    log_level: Option<&'a RawValue>,
}

/// `Some` whenever the member is present, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The `extensions` of a capabilities object, borrowed.
#[derive(Deserialize)]
struct CapabilitiesProbe<'a> {
    #[serde(borrow, default)]
    extensions: Option<std::collections::HashMap<std::borrow::Cow<'a, str>, &'a RawValue>>,
}

/// Whether `capabilities` (JSON text) declares the tasks extension: an object under
/// `extensions`.
fn raw_capabilities_declare_tasks(capabilities: &RawValue) -> bool {
    serde_json::from_str::<CapabilitiesProbe<'_>>(capabilities.get())
        .ok()
        .and_then(|c| c.extensions)
        .and_then(|e| e.get(TASKS_EXTENSION).copied())
        .is_some_and(|v| v.get().starts_with('{'))
}

/// The protocol version a request's `_meta` (JSON text) names, supported or not; `None`
/// when it names none (or not as a string).
pub(crate) fn named_protocol_version(meta: Option<&RawValue>) -> Option<String> {
    let meta = serde_json::from_str::<MetaProbe<'_>>(meta?.get()).ok()?;
    serde_json::from_str::<String>(meta.protocol_version?.get()).ok()
}

/// Reads the declarations of a request's `_meta` (JSON text; `None`: the params have
/// no `_meta`).
pub fn declarations(meta: Option<&RawValue>) -> Result<RequestDeclarations, ErrorObject> {
    // `_meta` that is not an object declares nothing: it is missing.
    let Some(meta) = meta
        .filter(|m| m.get().starts_with('{'))
        .and_then(|m| serde_json::from_str::<MetaProbe<'_>>(m.get()).ok())
    else {
        return Ok(RequestDeclarations {
            missing: Some("_meta"),
            ..RequestDeclarations::default()
        });
    };
    let missing = if meta.protocol_version.is_none() {
        Some(PROTOCOL_VERSION)
    } else if meta.client_capabilities.is_none() {
        Some(CLIENT_CAPABILITIES)
    } else {
        None
    };
    let protocol_version = match meta.protocol_version {
        None => None,
        Some(raw) => match serde_json::from_str::<String>(raw.get()) {
            Ok(v) => Some(v),
            Err(_) => {
                return Err(ErrorObject::new(
                    error_codes::INVALID_PARAMS,
                    format!(
                        "Invalid params: _meta.\"{PROTOCOL_VERSION}\" must be a string, not {}",
                        raw.get()
                    ),
                ));
            }
        },
    };
    if let Some(v) = &protocol_version
        && !SUPPORTED_VERSIONS.contains(&v.as_str())
    {
        return Err(ErrorObject::new(
            error_codes::UNSUPPORTED_PROTOCOL_VERSION,
            format!("Unsupported protocol version: {v}"),
        )
        .with_data(serde_json::json!({ "supported": SUPPORTED_VERSIONS, "requested": v })));
    }
    let declares_tasks = meta
        .client_capabilities
        .is_some_and(raw_capabilities_declare_tasks);
    let wants_notifications = meta.progress_token.is_some() || meta.log_level.is_some();
    Ok(RequestDeclarations {
        protocol_version,
        declares_tasks,
        missing,
        wants_notifications,
    })
}

impl<S> RpcServiceT for RequestMetaService<S>
where
    S: RpcServiceT<MethodResponse = MethodResponse, NotificationResponse = MethodResponse>
        + Clone
        + Send
        + Sync
        + 'static,
{
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = S::BatchResponse;

    fn call<'a>(&self, mut req: Request<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let inner = self.inner.clone();
        // Decided at the edge already (HTTP): passed on untouched.
        let decided = req.extensions().get::<Revision>().is_some();
        // A request of a session (stdio: the connection's, once `initialize` opened it).
        let session = req
            .extensions()
            .get::<SessionSlot>()
            .and_then(|slot| slot.get().cloned());
        let known = self.methods.contains(req.method_name());
        let targets = Arc::clone(&self.targets);
        async move {
            if !decided {
                let revision = match session {
                    Some(session) => Some(Revision::Session(session)),
                    // Unknown methods pass through undecided: -32601 whatever their `_meta`.
                    None if known => {
                        let head = ParamsHead::read(req.params.as_ref().map(|p| p.get()));
                        match declarations(head.meta) {
                            Ok(d) => Some(Revision::Stateless(d)),
                            Err(e) => {
                                return MethodResponse::error(req.id(), ErrorObjectOwned::from(e));
                            }
                        }
                    }
                    None => None,
                };
                if let Some(revision) = revision {
                    req.extensions_mut().insert(revision);
                }
            }
            // The request's span and timing (none unless telemetry is on), once its
            // revision is known.
            let served = match req.extensions().get::<Revision>() {
                Some(Revision::Session(s)) => crate::telemetry::Served {
                    protocol_version: Some(&s.protocol_version),
                    session: Some(&s.tag),
                },
                Some(Revision::Stateless(d)) => crate::telemetry::Served {
                    protocol_version: d.protocol_version.as_deref(),
                    session: None,
                },
                None => crate::telemetry::Served::default(),
            };
            let Some(observer) = crate::telemetry::observe(&req, known, &targets, served) else {
                return inner.call(req).await;
            };
            let response = tracing::Instrument::instrument(inner.call(req), observer.span()).await;
            observer.done(&response);
            response
        }
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = Self::BatchResponse> + Send + 'a {
        self.inner.batch(batch)
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.inner.notification(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_read_version_and_extension() {
        let meta = |params: &'static str| ParamsHead::read(Some(params)).meta;
        let d = declarations(meta(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}"#,
        ))
        .expect("valid");
        assert!(d.declares_tasks);
        let none = declarations(meta(
            r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}"#,
        ))
        .expect("valid");
        assert!(!none.declares_tasks);
        assert_eq!(
            declarations(None).expect("no params").missing,
            Some("_meta")
        );
        let old = declarations(meta(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2024-11-05"}}"#,
        ));
        assert_eq!(
            old.expect_err("unsupported").code,
            error_codes::UNSUPPORTED_PROTOCOL_VERSION
        );
    }

    #[test]
    fn the_probe_reads_the_members_the_constants_name() {
        use mcp_tasks_protocol::meta::{LOG_LEVEL, PROGRESS_TOKEN};
        let text = format!(
            r#"{{"{PROTOCOL_VERSION}":"x","{CLIENT_CAPABILITIES}":{{}},"{PROGRESS_TOKEN}":null,"{LOG_LEVEL}":"debug"}}"#
        );
        let probe: MetaProbe<'_> = serde_json::from_str(&text).expect("an object");
        assert!(probe.protocol_version.is_some());
        assert!(probe.client_capabilities.is_some());
        assert!(probe.progress_token.is_some(), "present though null");
        assert!(probe.log_level.is_some());
    }
}
