//! An MCP server that runs tools as tasks.
//!
//! - [`Server`] / [`ServerBuilder`]: tools, a [`TaskStore`](mcp_tasks::TaskStore), runtime
//!   settings; [`Server::endpoint`] is the JSON-RPC endpoint every transport serves.
//! - [`ToolDef`]: a tool with typed arguments (schema generated with schemars, validated
//!   before the handler runs) and a [`TaskPolicy`].
//! - [`ToolContext`]: `elicit`, `sample`, `list_roots`, `status`, cancellation; the same
//!   calls work in a task (input requests in the store) and in a synchronous call
//!   (MRTR rounds).
//! - [`TaskRuntime`]: runs tasks in the background, with leases, a sweeper and graceful
//!   shutdown.
//! - Transports: [`http`] (Streamable HTTP, axum) and [`stdio`].
//!
//! The wire is MCP 2026-07-28 with the `io.modelcontextprotocol/tasks` extension, and MCP
//! 2025-11-25 sessions with their tasks ([`legacy`]).

pub mod audit;
pub mod auth;
mod call;
mod caller;
mod context;
pub mod demo;
mod dispatch;
mod errors;
pub mod http;
mod limits;
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

pub use caller::{ANONYMOUS, Caller, Principal, RequestDeclarations, RequestMetaLayer};
pub use context::{ToolContext, ToolError};
pub use runtime::{
    CANCELLED_MESSAGE, LEASE_LAPSED_MESSAGE, RuntimeConfig, SHUTDOWN_MESSAGE, TaskRuntime,
    WORKER_LOST_MESSAGE, worker_lost_error,
};
pub use server::{DEFAULT_MAX_SUBSCRIPTIONS, Server, ServerBuilder, ServerEndpoint};
pub use tool::{TaskPolicy, TaskSelector, ToolDef, ToolDefError};
