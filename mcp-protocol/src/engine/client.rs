//! [`Peer`] as a jsonrpsee client, so `#[rpc(client)]` traits run over our engine.

use jsonrpsee::core::client::{BatchResponse, ClientT, Error};
use jsonrpsee::core::params::BatchRequestBuilder;
use jsonrpsee::core::traits::ToRpcParams;
use jsonrpsee::types::ErrorObjectOwned;
use serde::de::DeserializeOwned;

use super::peer::{Peer, PeerError};

fn to_client_error(e: PeerError) -> Error {
    match e {
        PeerError::Rpc(e) => Error::Call(ErrorObjectOwned::from(e)),
        PeerError::Json(e) => Error::ParseError(e),
        e @ (PeerError::Closed | PeerError::Transport(_) | PeerError::Exchange(_)) => {
            Error::Transport(Box::new(e))
        }
    }
}

impl ClientT for Peer {
    fn notification<Params>(
        &self,
        method: &str,
        params: Params,
    ) -> impl Future<Output = Result<(), Error>> + Send
    where
        Params: ToRpcParams + Send,
    {
        let peer = self.clone();
        let method = method.to_owned();
        let params = params.to_rpc_params();
        async move {
            let params = params?;
            peer.notify_raw(&method, params.as_deref())
                .await
                .map_err(to_client_error)
        }
    }

    fn request<R, Params>(
        &self,
        method: &str,
        params: Params,
    ) -> impl Future<Output = Result<R, Error>> + Send
    where
        R: DeserializeOwned,
        Params: ToRpcParams + Send,
    {
        let peer = self.clone();
        let method = method.to_owned();
        let params = params.to_rpc_params();
        async move {
            let params = params?;
            let raw = peer
                .request_raw(&method, params.as_deref())
                .await
                .map_err(to_client_error)?;
            Ok(serde_json::from_str(raw.get())?)
        }
    }

    async fn batch_request<'a, R>(
        &self,
        _batch: BatchRequestBuilder<'a>,
    ) -> Result<BatchResponse<'a, R>, Error>
    where
        R: DeserializeOwned + std::fmt::Debug + 'a,
    {
        Err(Error::Custom(
            "JSON-RPC batches are not supported by MCP".into(),
        ))
    }
}
