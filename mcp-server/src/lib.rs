//! An MCP server that runs tools as tasks.
//!
//! A server with one tool that becomes a task when the client allows it, its tasks kept
//! in SQLite (they survive a restart), served over Streamable HTTP:
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use mcp_protocol::types::ContentBlock;
//! use mcp_protocol::v2026::CallToolResult;
//! use mcp_server::{Server, TaskPolicy, ToolContext, ToolDef, http};
//! use mcp_tasks::{Limits, SqliteStore};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Render {
//!     pages: u32,
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let render = ToolDef::new("render", TaskPolicy::Optional, |ctx: ToolContext, args: Render| async move {
//!         for page in 1..=args.pages {
//!             ctx.status(format!("page {page} of {}", args.pages)).await?;
//!         }
//!         Ok(CallToolResult::new(vec![ContentBlock::text(format!("{} pages", args.pages))]))
//!     })?;
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
//!
//! The wire is MCP 2026-07-28 with the `io.modelcontextprotocol/tasks` extension, and MCP
//! 2025-11-25 sessions with their tasks; one dispatch picks the revision of each request
//! and hands it to that revision's handlers.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod audit;
pub mod auth;
mod call;
mod caller;
mod context;
#[cfg(feature = "demo")]
pub mod demo;
mod dispatch;
mod errors;
pub mod executor;
mod features;
pub mod http;
mod limits;
mod report;
mod retry;
mod runtime;
pub mod seal;
mod server;
mod state;
pub mod stdio;
pub mod store_url;
mod tool;
mod v2025;
mod v2026;
mod views;
mod worker;

pub use caller::{ANONYMOUS, Caller, Principal, RequestDeclarations, RequestMetaLayer};
pub use context::{ToolContext, ToolError};
pub use executor::{Executor, InProcess, Launch, Queue, Role};
pub use features::{
    CompletionInput, CompletionValues, FEATURE_PAGE, FeatureDefError, MAX_COMPLETION_VALUES,
    PromptDef, PromptError, ResourceData, ResourceDef, ResourceError, ResourceTemplateDef,
};
pub use mcp_tasks::Delivery;
pub use runtime::{
    CANCELLED_MESSAGE, LEASE_LAPSED_MESSAGE, RuntimeConfig, SHUTDOWN_MESSAGE, TaskRuntime,
    WORKER_LOST_MESSAGE, worker_lost_error,
};
pub use server::{DEFAULT_MAX_SUBSCRIPTIONS, Server, ServerBuilder, ServerEndpoint};
pub use tool::{TaskPolicy, TaskSelector, ToolDef, ToolDefError};
pub use worker::WorkerConfig;
