//! Typed registration: a handler for method `M` takes `M::Params` and returns `M::Result`,
//! so it cannot answer with the wrong shape.

use std::sync::Arc;

use jsonrpsee::Extensions;
use jsonrpsee::core::RegisterMethodError;
use jsonrpsee::core::server::RpcModule;
use jsonrpsee::types::{ErrorObjectOwned, Params};

use crate::error_codes;
use crate::jsonrpc::ErrorObject;
use crate::method::Request;

impl From<ErrorObject> for ErrorObjectOwned {
    fn from(e: ErrorObject) -> Self {
        let code = i32::try_from(e.code).unwrap_or(error_codes::INTERNAL_ERROR as i32);
        ErrorObjectOwned::owned(code, e.message, e.data)
    }
}

impl From<ErrorObjectOwned> for ErrorObject {
    fn from(e: ErrorObjectOwned) -> Self {
        let data = e.data().and_then(|d| serde_json::from_str(d.get()).ok());
        ErrorObject {
            code: i64::from(e.code()),
            message: e.message().to_owned(),
            data,
        }
    }
}

/// Decodes the params of method `M`. A failure is `-32602` whose message names the
/// problem, e.g. ``Invalid params: missing field `name` ``.
pub fn parse_params<M: Request>(params: &Params<'_>) -> Result<M::Params, ErrorObject> {
    let text = params.as_str();
    if text.is_none() && M::PARAMS_REQUIRED {
        return Err(ErrorObject::new(
            error_codes::INVALID_PARAMS,
            format!("Invalid params: {} requires params", M::METHOD),
        ));
    }
    serde_json::from_str(text.unwrap_or("null"))
        .map_err(|e| ErrorObject::new(error_codes::INVALID_PARAMS, format!("Invalid params: {e}")))
}

/// Registers an async handler for request method `M` on `module`.
///
/// ```
/// # use mcp_tasks_protocol::engine::register;
/// # use jsonrpsee::RpcModule;
/// # use mcp_tasks_protocol::request;
/// # #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// # pub struct EchoParams { text: String }
/// request!(Echo, "echo", EchoParams => EchoParams);
/// let mut module = RpcModule::new(());
/// register::<Echo, _, _, _>(&mut module, |params, _ctx, _ext| async move { Ok(params) }).unwrap();
/// ```
pub fn register<M, Ctx, F, Fut>(
    module: &mut RpcModule<Ctx>,
    handler: F,
) -> Result<(), RegisterMethodError>
where
    M: Request,
    Ctx: Send + Sync + 'static,
    F: Fn(M::Params, Arc<Ctx>, Extensions) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<M::Result, ErrorObject>> + Send + 'static,
{
    module.register_async_method(M::METHOD, move |params, ctx, ext| {
        let handler = handler.clone();
        async move {
            let params = parse_params::<M>(&params).map_err(ErrorObjectOwned::from)?;
            handler(params, ctx, ext)
                .await
                .map_err(ErrorObjectOwned::from)
        }
    })?;
    Ok(())
}
