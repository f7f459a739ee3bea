//! The root of the middleware stack: [`MethodsService`] dispatches a request into
//! jsonrpsee's method registry and a notification to the registered notification handlers.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use jsonrpsee::core::middleware::{Batch, Notification, RpcServiceT};
use jsonrpsee::core::server::{MethodCallback, MethodResponse, Methods};
use jsonrpsee::types::{ErrorObject, Params, Request};
use jsonrpsee::{ConnectionId, Extensions};
use serde_json::value::RawValue;

use crate::error_codes;

/// An inbound notification as a handler sees it.
#[derive(Debug)]
pub struct InboundNotification {
    /// The notification's method.
    pub method: String,
    /// The notification's parameters, unparsed.
    pub params: Option<Box<RawValue>>,
    /// The session's extensions (its [`Peer`](super::Peer) among them).
    pub extensions: Extensions,
}

/// A handler for one notification method. Handlers run one at a time, in arrival order,
/// on the connection's read loop: keep them short, and spawn anything that waits on the peer.
pub type NotificationHandler =
    Arc<dyn Fn(InboundNotification) -> BoxFuture<'static, ()> + Send + Sync>;

/// Notification handlers by method name.
#[derive(Clone, Default)]
pub struct NotificationHandlers(HashMap<String, NotificationHandler>);

impl std::fmt::Debug for NotificationHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl NotificationHandlers {
    /// Registers `handler` for `method`, replacing any earlier one.
    pub fn insert<F, Fut>(&mut self, method: impl Into<String>, handler: F)
    where
        F: Fn(InboundNotification) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.0
            .insert(method.into(), Arc::new(move |n| Box::pin(handler(n))));
    }

    fn get(&self, method: &str) -> Option<&NotificationHandler> {
        self.0.get(method)
    }
}

/// The innermost [`RpcServiceT`]: looks the method up and runs it.
#[derive(Clone, Debug)]
pub struct MethodsService {
    methods: Methods,
    notifications: NotificationHandlers,
    max_response_bytes: usize,
}

impl MethodsService {
    /// A service that runs `methods` and `notifications`, replacing by an error any
    /// response longer than `max_response_bytes`.
    pub fn new(
        methods: Methods,
        notifications: NotificationHandlers,
        max_response_bytes: usize,
    ) -> Self {
        MethodsService {
            methods,
            notifications,
            max_response_bytes,
        }
    }
}

impl RpcServiceT for MethodsService {
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(&self, req: Request<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let methods = self.methods.clone();
        let max = self.max_response_bytes;
        async move {
            let Request {
                id,
                method,
                params,
                extensions,
                ..
            } = req;
            let params = Params::new(params.as_ref().map(|p| p.get()));
            match methods.method(&method) {
                Some(MethodCallback::Async(cb)) => {
                    let cb = Arc::clone(cb);
                    cb(
                        id.into_owned(),
                        params.into_owned(),
                        ConnectionId(0),
                        max,
                        extensions,
                    )
                    .await
                }
                Some(MethodCallback::Sync(cb)) => cb(id, params, max, extensions),
                _ => MethodResponse::error(
                    id,
                    ErrorObject::owned(
                        error_codes::METHOD_NOT_FOUND as i32,
                        format!("Method not found: {method}"),
                        None::<()>,
                    ),
                ),
            }
        }
    }

    #[allow(clippy::manual_async_fn)] // the trait's signature: the future must not borrow `self`
    fn batch<'a>(&self, _batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        async move {
            MethodResponse::error(
                jsonrpsee::types::Id::Null,
                ErrorObject::owned(
                    error_codes::INVALID_REQUEST as i32,
                    "JSON-RPC batches are not supported by MCP",
                    None::<()>,
                ),
            )
        }
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        let handler = self.notifications.get(n.method_name()).cloned();
        async move {
            match handler {
                Some(handler) => {
                    let method = n.method_name().to_owned();
                    let params = n.params().as_ref().map(|p| p.clone().into_owned());
                    let extensions = n.extensions().clone();
                    handler(InboundNotification {
                        method,
                        params,
                        extensions,
                    })
                    .await;
                }
                None => tracing::debug!(
                    method = n.method_name(),
                    "no handler for notification; ignored"
                ),
            }
            MethodResponse::notification()
        }
    }
}
