//! An MCP client that drives tasks to the end.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use mcp_tasks_client::{ClientConfig, ClientError, DeclineAll, McpClient, Started};
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
//! - [`McpClient::call_tool_as_task`]: a [`TaskHandle`] with the id, status (a
//!   [`TaskStatusView`] in the negotiated revision), wait, [`settle`](TaskHandle::settle)
//!   (wait until a deadline, [`ClientError::Deadline`] past it, the task left running)
//!   and cancel; its input answered by the client's handler or the task's own
//!   ([`TaskHandle::with_handler`]), at most [`ClientConfig::max_input_rounds`] rounds
//!   ([`ClientError::InputRoundsExceeded`]). Dropping it unfinished cancels the task.
//!   A 2025-11-25 server may ask about the task (related-task `_meta`) or report its
//!   status before the `tools/call` response creates it: such a request is held while
//!   the call is in flight and reaches the task's handle once the response names the
//!   task, as if it had come after; only a task still unknown after
//!   [`DriverConfig::unknown_task_hold`] (at most 64 held at once) has its request
//!   answered by the client's handler (logged).
//! - Safe retries (issue 50; our extension): a task-augmented call of a tool the server's
//!   `tools/list` flags as deduplicating keyed calls (`_meta["rs.mcp-tasks/idempotency"]`;
//!   in 2026-07-28 known once [`McpClient::list_tools`] was called) carries an idempotency
//!   key ([`ToolCall::with_idempotency_key`], else a fresh one:
//!   [`ClientConfig::idempotency_keys`]) in `params` and `_meta`. A keyed call is sent
//!   again with its key within [`ClientConfig::retry`] (bounded, jittered back-off) after
//!   a failure that never reached the server (connection refused, a 429 after its
//!   `Retry-After`), and, for a flagged tool, after a lost answer (a cut connection, HTTP
//!   502/503/504 without a JSON-RPC answer, the request timeout: a timed-out attempt of
//!   such a call is not cancelled, the retry finds its task), each retry a
//!   `tracing` INFO event and a [`RetryNotice`] to [`ClientConfig::on_retry`]: the server
//!   makes one task per key. A failed HTTP exchange is typed ([`ClientError::Transport`]
//!   with its kind, status and `Retry-After`).
//! - [`TaskHandle::into_updates`]: the task's [`TaskUpdates`], a `futures::Stream` of
//!   [`TaskUpdate`]s (status changes, input requests, the result) that owns the handle.
//! - [`TaskHandle::events`] (or [`McpClient::task_events`] by id, after a cursor): the
//!   task's events (`tasks/stream`, draft SEP-2694, on a 2026-07-28 server that
//!   advertises task event streams) as [`TaskEvents`], a `futures::Stream` of [`TaskEvent`]s
//!   (`seq`, type, payload, time, node, actor) in order without gaps, resumed by itself
//!   after a dropped connection or a stream the server ended early (`after` = the last
//!   `seq` yielded, bounded backoff), ending once the task ended;
//!   [`ClientError::EventsGone`] (with the earliest event kept) and
//!   [`ClientError::EventStreamsUnsupported`] typed.
//! - [`TaskHandle::detach`]: leaves the task running and hands back its [`TaskRef`]
//!   (endpoint, task id, revision, the call that made it; serde), which another process
//!   follows with [`McpClient::connect_to`] or [`McpClient::resume`]:
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use mcp_tasks_client::{ClientConfig, ClientError, DeclineAll, McpClient, Started, TaskRef};
//!
//! // One process starts the task and saves its reference...
//! async fn start(client: &McpClient) -> Result<Option<String>, ClientError> {
//!     let arguments = serde_json::Map::from_iter([("seconds".into(), 60.into())]);
//!     Ok(match client.call_tool_as_task("slow_compute", arguments).await? {
//!         Started::Task(task) => Some(task.detach().to_json()),
//!         Started::Done(_) => None,
//!     })
//! }
//!
//! // ...another one follows it to the end.
//! async fn finish(saved: &str) -> Result<(), ClientError> {
//!     let task: TaskRef = serde_json::from_str(saved).map_err(|e| ClientError::Reference(e.to_string()))?;
//!     let (_client, handle) =
//!         McpClient::connect_to(&task, Arc::new(DeclineAll), ClientConfig::default()).await?;
//!     println!("{:?}", handle.wait().await?.content);
//!     Ok(())
//! }
//! ```
//!
//! - [`ClientConfig::client_tasks`]: client-hosted tasks (MCP 2025-11-25, the client as
//!   the receiver). Give the client a [`TaskStore`](mcp_tasks::TaskStore) (any backend)
//!   and it declares `capabilities.tasks` at `initialize`; a server's `elicitation/create`
//!   or `sampling/createMessage` with `params.task` (of a kind your handler declares) is
//!   answered at once with the task, your [`ClientHandler`] runs in the background, and
//!   the server follows it with `tasks/get`, `tasks/result`, `tasks/list` and
//!   `tasks/cancel`, each scoped to the connection, and hears `notifications/tasks/status`.
//!   The store's limits hold (the TTL clamped, live tasks bounded):
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use mcp_tasks_client::{ClientConfig, ClientError, DeclineAll, McpClient, Revision};
//! use mcp_tasks::{Limits, MemoryStore};
//!
//! async fn hosting(url: &str) -> Result<McpClient, ClientError> {
//!     let store = Arc::new(MemoryStore::new(Limits::default()));
//!     let config = ClientConfig {
//!         revision: Revision::V2025_11_25,
//!         ..ClientConfig::default()
//!     }
//!     .with_client_tasks(store);
//!     // DeclineAll declares form elicitation: the server may ask it as a task.
//!     McpClient::connect_http(url, Arc::new(DeclineAll), config).await
//! }
//! ```
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
mod events;
mod handler;
mod hosted;
mod reference;
mod retry;
mod session;
pub mod sse;
mod status;
pub mod telemetry;
pub mod transport;
mod updates;
mod v2025;

pub use client::{McpClient, Started};
pub use config::{ClientConfig, DriverConfig, Revision};
pub use driver::{TaskHandle, status_of};
pub use error::{ClientError, rpc_code};
pub use events::{TaskEvent, TaskEvents};
pub use handler::{ClientHandler, DeclineAll};
pub use reference::{Endpoint, TaskRef, ToolCall};
pub use retry::{RetryConfig, RetryHook, RetryNotice};
pub use session::ServerInfo;
pub use status::{TaskStatusView, TaskUpdate};
pub use updates::TaskUpdates;

/// The examples of the workspace README (the task client API) compile.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct WorkspaceReadme;

/// The examples of this crate's README compile.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadme;
