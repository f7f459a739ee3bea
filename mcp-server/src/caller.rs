//! Who is calling, and what the request declared: the per-request facts every handler
//! needs, put into the request's extensions by the transport (the principal) and by
//! [`RequestMetaLayer`] (the `_meta` of MCP 2026-07-28).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use jsonrpsee::Extensions;
use jsonrpsee::core::middleware::{Batch, Notification, RpcServiceT};
use jsonrpsee::core::server::MethodResponse;
use jsonrpsee::types::{ErrorObjectOwned, Request};
use mcp_tasks::Owner;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::meta::{
    CLIENT_CAPABILITIES, LOG_LEVEL, PROGRESS_TOKEN, PROTOCOL_VERSION, PROTOCOL_VERSION_2026_07_28,
    TASKS_EXTENSION,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::auth::Identity;

/// The authenticated principal of a request, set by the transport's principal hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(pub String);

/// The owner of tasks created by callers without a principal. Their task ids, 128 random
/// bits, are then the only thing that binds a task to its creator.
pub const ANONYMOUS: &str = "anonymous";

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
        let declares_tasks = ext
            .get::<RequestDeclarations>()
            .is_some_and(|d| d.declares_tasks);
        Caller {
            owner,
            declares_tasks,
            identity: ext.get::<Identity>().cloned(),
        }
    }
}

/// The protocol versions this server speaks on the stateless wire.
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION_2026_07_28];

/// Middleware that reads each request's `_meta` (never remembering it across requests):
/// an unsupported `protocolVersion` is answered with -32022 before any handler runs, and
/// what the request declared is put into its extensions as [`RequestDeclarations`].
/// Unknown methods pass through untouched, so they get -32601 whatever their `_meta`.
#[derive(Debug, Clone)]
pub struct RequestMetaLayer {
    methods: Arc<HashSet<String>>,
}

impl RequestMetaLayer {
    /// A layer that reads the `_meta` of requests for `methods` (the server's known
    /// methods); any other method passes through untouched.
    pub fn new(methods: impl IntoIterator<Item = String>) -> Self {
        RequestMetaLayer {
            methods: Arc::new(methods.into_iter().collect()),
        }
    }
}

impl<S> tower::Layer<S> for RequestMetaLayer {
    type Service = RequestMetaService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestMetaService {
            inner,
            methods: Arc::clone(&self.methods),
        }
    }
}

/// The service [`RequestMetaLayer`] wraps around the dispatcher.
#[derive(Debug, Clone)]
pub struct RequestMetaService<S> {
    inner: S,
    methods: Arc<HashSet<String>>,
}

/// The `_meta` of a request's params, borrowed: each member stays unparsed JSON text, so
/// that reading two declarations costs no tree of values.
#[derive(Deserialize)]
struct MetaProbe<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<HashMap<Cow<'a, str>, &'a RawValue>>,
}

/// The `extensions` of a capabilities object, borrowed.
#[derive(Deserialize)]
struct CapabilitiesProbe<'a> {
    #[serde(borrow, default)]
    extensions: Option<HashMap<Cow<'a, str>, &'a RawValue>>,
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

/// The protocol version `params` (a JSON object) names in its `_meta`, supported or not;
/// `None` when it names none (or not as a string).
pub fn named_protocol_version(params: Option<&str>) -> Option<String> {
    let meta = params
        .and_then(|p| serde_json::from_str::<MetaProbe<'_>>(p).ok())
        .and_then(|p| p.meta)?;
    meta.get(PROTOCOL_VERSION)
        .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
}

/// Reads the declarations of `params` (a JSON object, or nothing).
pub fn declarations(params: Option<&str>) -> Result<RequestDeclarations, ErrorObject> {
    let probe = params.and_then(|p| serde_json::from_str::<MetaProbe<'_>>(p).ok());
    let Some(meta) = probe.and_then(|p| p.meta) else {
        return Ok(RequestDeclarations {
            missing: Some("_meta"),
            ..RequestDeclarations::default()
        });
    };
    let missing = [PROTOCOL_VERSION, CLIENT_CAPABILITIES]
        .into_iter()
        .find(|key| !meta.contains_key(*key));
    let protocol_version = match meta.get(PROTOCOL_VERSION) {
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
        .get(CLIENT_CAPABILITIES)
        .is_some_and(|c| raw_capabilities_declare_tasks(c));
    let wants_notifications = meta.contains_key(PROGRESS_TOKEN) || meta.contains_key(LOG_LEVEL);
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
        // A 2025-11-25 session's requests carry no 2026-07-28 `_meta` to check.
        let in_legacy_session = req
            .extensions()
            .get::<crate::v2025::session::SessionSlot>()
            .is_some_and(|slot| slot.get().is_some());
        // A transport that read the declarations already (HTTP, for its header checks)
        // put them into the extensions.
        let known = self.methods.contains(req.method_name())
            && !in_legacy_session
            && req.extensions().get::<RequestDeclarations>().is_none();
        async move {
            if known {
                match declarations(req.params.as_ref().map(|p| p.get())) {
                    Ok(d) => {
                        req.extensions_mut().insert(d);
                    }
                    Err(e) => return MethodResponse::error(req.id(), ErrorObjectOwned::from(e)),
                }
            }
            inner.call(req).await
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
        let d = declarations(Some(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}"#,
        ))
        .expect("valid");
        assert!(d.declares_tasks);
        let none = declarations(Some(
            r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}"#,
        ))
        .expect("valid");
        assert!(!none.declares_tasks);
        assert_eq!(
            declarations(None).expect("no params").missing,
            Some("_meta")
        );
        let old = declarations(Some(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2024-11-05"}}"#,
        ));
        assert_eq!(
            old.expect_err("unsupported").code,
            error_codes::UNSUPPORTED_PROTOCOL_VERSION
        );
    }
}
