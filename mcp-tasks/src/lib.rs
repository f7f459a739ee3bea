//! Durable storage of MCP tasks: the [`TaskStore`] trait with its written contract, its
//! backends, and the conformance kit every backend must pass.
//!
//! - [`TaskStore`]: the contract, rule by rule. [`rules`]: the state machine every backend
//!   applies atomically. [`TaskRecord`]: what is kept per task.
//! - [`Backend`]: what a storage backend implements (a read-modify-write of one record,
//!   insert, reads, sweep, events), with its own contract. Every `Backend` is a
//!   [`TaskStore`]: the operations are written once, on top of it.
//! - [`Decorated`]: the one way to decorate a [`TaskStore`] (metrics, fault injection, test
//!   doubles). A [`StoreLayer`] says only what it changes: a hook around every
//!   [`Operation`], and, when it must, the event feed or the session store; everything
//!   else passes through to the store it wraps.
//! - Backends: [`MemoryStore`] (default), `SqliteStore` (feature `sqlite`: one SQLite
//!   file, durable, shared by processes; its events stay in process), `PostgresStore`
//!   (feature `postgres`: one PostgreSQL schema shared by many server instances, events
//!   across them via `LISTEN`/`NOTIFY`), `RedisStore`
//!   (feature `redis`: many server instances on one Redis, events over pub/sub).
//! - `conformance` (feature `conformance`): one public async function per behaviour of the
//!   contract, each taking a store factory; call them from your backend's tests.
//! - Time comes from a [`Clock`]; [`ManualClock`] makes TTLs and leases testable without
//!   sleeping.
//!
//! This crate depends on `mcp-tasks-protocol` (for the status, result and error types) and on
//! nothing that serves or calls MCP: a server built on another SDK can use it as it is.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), mcp_tasks::StoreError> {
//! use mcp_tasks::{MemoryStore, NewTask, Origin, Owner, TaskStore, WireRevision};
//!
//! let store = MemoryStore::default();
//! let alice = Owner::new("alice");
//! let origin = Origin { method: "tools/call".into(), tool: Some("slow".into()), revision: WireRevision::V2026_07_28 };
//! let task = store
//!     .create(NewTask { owner: alice.clone(), ttl_ms: Some(60_000), poll_interval_ms: None, origin, status_message: None, job: None, trace_context: None, idempotency: None })
//!     .await?;
//! let done = store.complete(&alice, &task.id, serde_json::Map::new()).await?;
//! assert!(done.won);
//! // Another owner cannot see it.
//! assert!(store.get(&Owner::new("mallory"), &task.id).await.is_err());
//! # Ok(()) }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod backend;
mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod cursor;
mod decorate;
mod error;
mod event;
mod limits;
pub mod log;
mod memory;
pub mod node;
mod operations;
mod operator;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "postgres", feature = "redis"))]
mod recent;
mod record;
#[cfg(feature = "redis")]
mod redis;
pub mod rules;
mod session;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;

pub use backend::{Announce, Backend, Events};
pub use clock::{Clock, ManualClock, SystemClock};
pub use decorate::{Decorated, Operation, StoreLayer};
pub use error::{BackendError, STORE_UNAVAILABLE_MESSAGE, StoreError};
pub use event::{EVENT_BUFFER, EventError, EventStream, FeedItem, TaskEvent};
pub use limits::{Limit, Limits};
pub use log::{Actor, LogDraft, LogEntry, LogPage, LogScope, TaskLog};
pub use memory::MemoryStore;
pub use node::{NodeBeat, NodeRecord, NodeState};
pub use operator::{OperatorFilter, OperatorPage, TaskCounts};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
pub use record::{
    Delivery, Idempotency, Job, Lease, Millis, NewTask, Origin, Outcome, Owner, Recovery, Resolved,
    SweepReport, TaskId, TaskKey, TaskPage, TaskRecord, TraceContext, Transition, WireRevision,
};
#[cfg(feature = "redis")]
pub use redis::{RedisOptions, RedisStore};
pub use session::{InputClaim, ResourceUpdates, SessionChange, SessionRecord, SessionStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{Recovered, SqliteStore};
pub use store::TaskStore;
