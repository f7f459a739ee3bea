//! How the client reaches a server: a child process's stdio, Streamable HTTP, or a
//! [`Connection`](mcp_tasks_protocol::engine::Connection) you made (in-process). Each ends
//! as a frame `Connection` for the engine, kept alive by a [`TransportGuard`].
//!
//! - stdio: [`spawn_stdio`], [`from_child`];
//! - Streamable HTTP: [`http`] (a pump turning each outgoing frame into one HTTP exchange),
//!   [`check_http_url`]; what an exchange sends and how it fails: [`HttpState`],
//!   [`ExchangeError`], [`ExchangeFailure`].
//!
//! Invariant: a transport moves frames and nothing else: it never answers a request
//! itself, and a request whose exchange failed is reported on its own channel, never as
//! a frame.

use tokio::process::Child;
use tokio::task::JoinHandle;

mod exchange;
mod stdio;
mod streamable_http;

pub use exchange::{ExchangeError, ExchangeFailure, HttpState};
pub use stdio::{from_child, spawn_stdio};
pub use streamable_http::{HttpTransport, check_http_url, http};

/// What keeps a transport alive; dropping it ends the connection (kills a child process,
/// stops the HTTP pump).
#[derive(Debug)]
pub enum TransportGuard {
    /// A server we started; killed on drop.
    Child(Child),
    /// The task that turns frames into HTTP requests.
    Http(JoinHandle<()>),
    /// Nothing to keep: the caller owns the other end.
    None,
}

impl Drop for TransportGuard {
    fn drop(&mut self) {
        if let TransportGuard::Http(task) = self {
            task.abort();
        }
    }
}
