//! An MCP client that drives tasks to the end.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use mcp_client::{ClientConfig, ClientError, DeclineAll, McpClient, Started};
//!
//! async fn slow_compute() -> Result<(), ClientError> {
//!     let url = "http://127.0.0.1:8000/mcp";
//!     let client = McpClient::connect_http(url, Arc::new(DeclineAll), ClientConfig::default())
//!         .await?;
//!     let arguments = serde_json::Map::from_iter([("seconds".into(), 5.into())]);
//!     match client.call_tool_as_task("slow_compute", arguments).await? {
//!         Started::Done(result) => println!("answered at once: {:?}", result.content),
//!         Started::Task(task) => {
//!             let now = task.status().await?;
//!             println!("task {} is {}", task.id(), now.status());
//!             // Polls (or listens) until the task ends; input requests go to the handler.
//!             let result = task.wait().await?;
//!             println!("done: {:?}", result.content);
//!         }
//!     }
//!     Ok(())
//! }
//! ```
//!
//! - [`McpClient`]: connect over stdio ([`McpClient::connect_stdio`]), Streamable HTTP
//!   ([`McpClient::connect_http`]) or a connection you made ([`McpClient::connect`]);
//!   `server/discover` negotiates MCP 2026-07-28, falling back to `initialize`
//!   (MCP 2025-11-25) when the server answers -32601.
//! - [`McpClient::call_tool`]: transparent. MRTR rounds are answered through your
//!   [`ClientHandler`]; a task is followed to its end (push when offered, else polling
//!   within the server's `pollIntervalMs`, with jitter and bounds); input requests are
//!   answered once per key; a task stuck in `input_required` is cancelled with an error.
//! - [`McpClient::call_tool_as_task`] / [`McpClient::resume_task`]: a [`TaskHandle`] with
//!   the id, status (a [`TaskStatusView`] in the negotiated revision), updates, wait and
//!   cancel — resumable by id after a restart.
//!
//! - [`auth`]: OAuth 2.1 as the MCP authorization spec has a client do it; set
//!   [`ClientConfig::auth`] and a Streamable HTTP server that answers 401 gets a login
//!   (discovery, registration, PKCE, refresh, step-up), kept in a [`auth::TokenStore`].
//!
//! Every wait is bounded: requests by [`ClientConfig::request_timeout`], tasks by their
//! TTL (or [`DriverConfig::max_wait`]).

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod auth;
mod client;
mod config;
mod driver;
mod error;
mod handler;
mod session;
pub mod sse;
mod status;
pub mod transport;
mod v2025;

pub use client::{McpClient, Started};
pub use config::{ClientConfig, DriverConfig, Revision};
pub use driver::{TaskHandle, status_of};
pub use error::{ClientError, rpc_code};
pub use handler::{ClientHandler, DeclineAll};
pub use session::ServerInfo;
pub use status::TaskStatusView;
