//! A symmetric JSON-RPC engine: both sides send requests and notifications, and neither
//! knows its transport.
//!
//! - [`Connection`]: a pair of frame channels ([`Connection::memory`] for tests,
//!   [`Connection::stdio`] / [`Connection::from_io`] for newline-delimited streams).
//! - [`Endpoint`]: classifies inbound frames, runs requests through jsonrpsee middleware
//!   ([`jsonrpsee::core::middleware::RpcServiceBuilder`]) into an `RpcModule`, resolves
//!   responses, and cancels a handler on `notifications/cancelled` (no response follows).
//! - [`Peer`]: sends requests and notifications; also a jsonrpsee `ClientT`.
//! - [`register`]: typed handler registration for a [`Request`](crate::method::Request).
//!
//! What stays in your hands: the methods themselves, sessions, and HTTP.
//!
//! Why not jsonrpsee's server and client as they are (0.26, measured): its server has no
//! stdio transport, drops notifications without calling a handler and rejects responses
//! sent by the client; its client cannot answer server->client requests and shuts down
//! on a response with an unknown id. So the engine uses the parts that fit: `RpcModule`
//! and `Methods` (the method registry), `RpcServiceT` middleware, the wire types, and
//! `ClientT` (for `#[rpc(client)]` traits over [`Peer`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use jsonrpsee::RpcModule;
//! use mcp_tasks_protocol::engine::{Connection, EndpointBuilder, register};
//! # #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! # pub struct Text { text: String }
//! mcp_tasks_protocol::request!(Echo, "echo", Text => Text);
//!
//! let mut methods = RpcModule::new(());
//! register::<Echo, _, _, _>(&mut methods, |p, _, _| async move { Ok(p) }).unwrap();
//! let server = EndpointBuilder::new(methods).build();
//! let client = EndpointBuilder::new(RpcModule::new(())).build();
//!
//! let (server_end, client_end) = Connection::memory();
//! let _server = server.serve(server_end);
//! let (peer, _) = client.serve(client_end);
//! let out = peer.request::<Echo>(&Text { text: "hi".into() }).await.unwrap();
//! assert_eq!(out.text, "hi");
//! # }
//! ```

mod client;
mod endpoint;
mod frames;
mod peer;
mod service;
mod session;
mod transport;
mod typed;

pub use endpoint::{
    DEFAULT_MAX_INFLIGHT_REQUESTS, Endpoint, EndpointBuilder, ReplyWritten, RequestContext,
};
pub use frames::{InboundRequest, Incoming, Rejected, Reply, error_frame};
pub use peer::{FailureKind, Peer, PeerError, TransportFailure, decode};
pub use service::{InboundNotification, MethodsService, NotificationHandler, NotificationHandlers};
pub use session::Session;
pub use transport::{
    Closed, Connection, DEFAULT_CHANNEL_CAPACITY, DEFAULT_MAX_FRAME_BYTES, FrameError,
    FrameReceiver, FrameSender, Inbound, IoTasks,
};
pub use typed::{parse_params, register};

/// The notification that cancels an in-flight request (both revisions).
pub(crate) const CANCELLED_METHOD: &str = "notifications/cancelled";
