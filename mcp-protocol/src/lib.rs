//! Typed messages of the Model Context Protocol for the two wire revisions that carry
//! *tasks*, and the JSON-RPC engine both the server and the client run on.
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 envelopes; [`error_codes`]: every code either revision uses.
//! - [`method`]: the [`Request`](method::Request) / [`Notification`](method::Notification)
//!   traits (each method names its `METHOD`, `Params`, `Result`) and typed envelopes.
//! - [`meta`]: `_meta` keys and protocol version strings.
//! - [`types`]: building blocks shared by both revisions (content, resources, tools, ...).
//! - [`v2026`]: MCP 2026-07-28 core; [`tasks`]: its tasks extension (`io.modelcontextprotocol/tasks`).
//! - [`v2025`]: MCP 2025-11-25 core with its tasks (SEP-1686).
//! - `engine` (feature `engine`, on by default): a symmetric JSON-RPC peer over any frame
//!   transport, dispatching through jsonrpsee's `RpcModule` and middleware.
//! - `otel` (feature `otel`): the OpenTelemetry setup (OTLP/HTTP exporters, resource, log
//!   layer) the server's and the client's telemetry share.
//!
//! What this crate does not do: decide when a call becomes a task, store tasks, or speak
//! HTTP. Those live in `mcp-tasks` and `mcp-tasks-server`.
//!
//! ```
//! use mcp_tasks_protocol::jsonrpc::{JsonRpcMessage, RequestId};
//!
//! let frame = r#"{"jsonrpc":"2.0","id":"7","method":"tasks/get","params":{"taskId":"t1"}}"#;
//! let JsonRpcMessage::Request(req) = serde_json::from_str(frame).unwrap() else { panic!() };
//! assert_eq!(req.id, RequestId::String("7".into())); // "7" is not 7
//! assert_eq!(req.method, "tasks/get");
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod error_codes;
pub mod http;
pub mod jsonrpc;
pub mod meta;
pub mod method;
pub mod schema;
pub mod tasks;
pub mod types;
pub mod v2025;
pub mod v2026;

/// A JSON object, as `serde_json` represents it (insertion order kept).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

#[cfg(feature = "engine")]
pub mod engine;
#[cfg(feature = "otel")]
pub mod otel;
