//! An MCP server that runs tools as tasks.
//!
//! A server with one tool that becomes a task when the client allows it, its tasks kept
//! in SQLite (they survive a restart), served over Streamable HTTP. A tool author needs
//! `mcp-tasks-server`, `serde` (for `Deserialize`) and `tokio`: the protocol types a tool
//! returns, the task stores and schemars are re-exported here.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use std::time::Duration;
//!
//! use mcp_tasks_server::mcp_tasks::{Limits, SqliteStore};
//! use mcp_tasks_server::{
//!     CallToolResult, ContentBlock, Server, TaskPolicy, ToolContext, ToolDef, ToolError, http,
//! };
//!
//! #[derive(serde::Deserialize, mcp_tasks_server::schemars::JsonSchema)]
//! #[schemars(crate = "mcp_tasks_server::schemars")]
//! struct Render {
//!     /// How many pages to render.
//!     pages: u32,
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let render = ToolDef::new("render", TaskPolicy::Optional, |ctx: ToolContext, args: Render| async move {
//!         for page in 1..=args.pages {
//!             ctx.status(format!("page {page} of {}", args.pages)).await?;
//!             // Stop when the client cancels the task (or the server shuts down).
//!             tokio::select! {
//!                 _ = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
//!                 _ = tokio::time::sleep(Duration::from_millis(200)) => {} // one page's work
//!             }
//!         }
//!         Ok(CallToolResult::new(vec![ContentBlock::text(format!("{} pages", args.pages))]))
//!     })?
//!     .description("Renders a document, page by page; a task when the client allows it.");
//!     let store = SqliteStore::open("tasks.db", Limits::default())?;
//!     let server = Server::builder("renderer", "1.0").store(Arc::new(store)).tool(render).build();
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
//!     let stop = async { let _ = tokio::signal::ctrl_c().await; };
//!     http::serve(&server, listener, http::HttpConfig::default(), stop).await?;
//!     server.shutdown().await; // running tasks get a grace period, then end cancelled
//!     Ok(())
//! }
//! ```
//!
//! # Argument schemas: schemars
//!
//! A tool's arguments are a type implementing `serde::Deserialize` and
//! [`schemars::JsonSchema`] **from schemars 1** (the major version this crate is built
//! with, re-exported as [`mcp_tasks_server::schemars`](schemars)). Without a `schemars`
//! dependency of your own, tell the derive where the crate is with
//! `#[schemars(crate = "mcp_tasks_server::schemars")]`; with one, it must be schemars 1.x, or
//! the types will not implement *this* `JsonSchema` and `ToolDef::new` will not accept
//! them. A complete tool, typed arguments and a text or error result, compiled as a test:
//!
//! ```
//! use mcp_tasks_server::{CallToolResult, TaskPolicy, ToolDef};
//!
//! /// Arguments of `divide`.
//! #[derive(serde::Deserialize, mcp_tasks_server::schemars::JsonSchema)]
//! #[schemars(crate = "mcp_tasks_server::schemars")]
//! struct Divide {
//!     /// The dividend.
//!     a: f64,
//!     /// The divisor.
//!     b: f64,
//! }
//!
//! let divide = ToolDef::new("divide", TaskPolicy::Synchronous, |_ctx, args: Divide| async move {
//!     if args.b == 0.0 {
//!         return Ok(CallToolResult::error("cannot divide by zero"));
//!     }
//!     Ok(CallToolResult::text((args.a / args.b).to_string()))
//! })
//! .expect("a valid tool");
//! let schema = mcp_tasks_server::schemars::schema_for!(Divide);
//! assert_eq!(schema.get("required"), Some(&serde_json::json!(["a", "b"])));
//! # drop(divide);
//! ```
//!
//! - [`Server`] / [`ServerBuilder`]: tools, a [`TaskStore`](mcp_tasks::TaskStore), runtime
//!   settings; [`Server::endpoint`] is the JSON-RPC endpoint every transport serves.
//! - [`ToolDef`]: a tool with typed arguments (schema generated with schemars, validated
//!   before the handler runs) and a [`TaskPolicy`].
//! - [`ToolContext`]: `elicit`, `sample`, `list_roots`, `status`, cancellation; the same
//!   calls work in a task (input requests in the store) and in a synchronous call
//!   (MRTR rounds).
//! - [`ResourceDef`] / [`ResourceTemplateDef`]: a resource at one URI, or a family of
//!   them under an RFC 6570 level-1 URI template whose reader gets the variables typed;
//!   readers return [`ResourceData`] (text, or bytes sent base64). [`PromptDef`]: a
//!   prompt whose declared arguments come from its typed argument struct and whose
//!   handler returns the messages. Both take completion providers for `completion/complete`
//!   ([`CompletionInput`] -> [`CompletionValues`]). Lists are paged
//!   ([`FEATURE_PAGE`] items, sealed cursors); [`Server::notify_resource_updated`] tells
//!   subscribers (2025-11-25 `resources/subscribe`, 2026-07-28 `subscriptions/listen`).
//! - [`TaskRuntime`]: runs tasks in the background, with leases, a sweeper and graceful
//!   shutdown.
//! - Transports: [`http`] (Streamable HTTP, axum) and [`stdio`].
//! - [`console`]: the operator console beside the HTTP endpoint (every owner's tasks, for
//!   the person running the server; off by default).
//!
//! The wire is MCP 2026-07-28 with the `io.modelcontextprotocol/tasks` extension, and MCP
//! 2025-11-25 sessions with their tasks; one dispatch picks the revision of each request
//! and hands it to that revision's handlers.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod asking;
pub mod audit;
pub mod auth;
mod cache;
mod call;
mod context;
#[cfg(feature = "demo")]
pub mod demo;
mod dispatch;
mod errors;
pub mod executor;
mod features;
pub mod http;
mod limits;
mod node;
mod report;
mod retry;
mod revision;
mod runtime;
pub mod seal;
mod server;
pub(crate) mod session;
mod state;
pub mod stdio;
pub mod store_url;
pub mod telemetry;
#[cfg(test)]
mod test_log;
mod tool;
mod v2025;
mod v2026;
mod views;
mod worker;

pub use auth::{ANONYMOUS, Principal};
pub use cache::{CacheHint, Cacheable};
pub use context::{ToolContext, ToolError};
pub use executor::{Executor, InProcess, Launch, Queue, Role};
pub use features::{
    CompletionInput, CompletionValues, FEATURE_PAGE, FeatureDefError, MAX_COMPLETION_VALUES,
    PromptDef, PromptError, ResourceData, ResourceDef, ResourceError, ResourceTemplateDef,
};
/// The operator console (served by [`http`]).
pub use http::console;
pub use mcp_tasks::Delivery;
pub use node::NodeConfig;
pub use revision::{Caller, RequestDeclarations, RequestMetaLayer};
pub use runtime::{
    CANCELLED_MESSAGE, LEASE_LAPSED_MESSAGE, ROUND_ENDED_MESSAGE, RuntimeConfig, SHUTDOWN_MESSAGE,
    TaskRuntime, WORKER_LOST_MESSAGE, worker_lost_error,
};
pub use server::{DEFAULT_MAX_SUBSCRIPTIONS, Server, ServerBuilder, ServerEndpoint};
/// What [`ToolContext::cancellation`] hands a tool: cancelled when the client cancels the
/// task or the server shuts down.
pub use tokio_util::sync::CancellationToken;
pub use tool::{Rerun, TaskPolicy, TaskSelector, ToolDef, ToolDefError};
pub use worker::WorkerConfig;

/// The task store crate: [`MemoryStore`](mcp_tasks::MemoryStore), the SQLite, PostgreSQL
/// and Redis stores (with its features), [`Limits`](mcp_tasks::Limits).
pub use mcp_tasks;
/// The protocol crate this one is built on: every wire type of both revisions.
pub use mcp_tasks_protocol;
/// schemars 1, whose `JsonSchema` a tool's argument type implements (derive it with
/// `#[schemars(crate = "mcp_tasks_server::schemars")]` when schemars is not your own
/// dependency).
pub use schemars;

// What a tool returns and what it asks, re-exported from mcp_tasks_protocol so that a tool
// author needs no other crate for them.
pub use mcp_tasks_protocol::JsonObject;
pub use mcp_tasks_protocol::types::{
    AudioContent, ContentBlock, ElicitAction, ElicitResult, ElicitValue, EmbeddedResource,
    ImageContent, ListRootsResult, LoggingLevel, ResourceLink, TextContent,
};
pub use mcp_tasks_protocol::v2026::{
    CacheScope, CallToolResult, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestFormParams, ElicitRequestParams,
};
