//! [`Session`]: the per-session state an [`Endpoint`](super::Endpoint) serves: the peer,
//! the extensions every request sees, and the registry of the requests in flight.
//!
//! Invariant: a request is registered when it is read (before its handler is scheduled)
//! and ends only its own entry when its [`Registration`] drops, so a
//! `notifications/cancelled` read right after it finds it, and two requests sharing an id
//! (two clients of one principal over Streamable HTTP) never end each other's entry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jsonrpsee::Extensions;
use tokio_util::sync::CancellationToken;

use super::peer::Peer;
use crate::jsonrpc::RequestId;

/// The per-session state an endpoint serves: the peer, the requests in flight, and the
/// extensions every request of the session sees (e.g. the authenticated principal).
#[derive(Debug, Clone)]
pub struct Session {
    /// The peer of this session: sends requests and notifications to the other side.
    pub peer: Peer,
    /// What every request of the session sees in its extensions.
    pub extensions: Extensions,
    inflight: Arc<Mutex<Inflight>>,
}

/// The requests a session is serving, by id. One id may name several requests at once:
/// over Streamable HTTP a session is a principal, and two clients of one principal both
/// number their requests from 1. Each request therefore has its own token, and ends
/// only its own entry.
#[derive(Debug, Default)]
struct Inflight {
    by_id: HashMap<RequestId, Vec<(u64, CancellationToken)>>,
    count: usize,
    next_serial: u64,
}

/// One request registered in flight (see [`Session::register`]); dropping it (the
/// request was answered, or its future dropped with the connection) ends its entry.
#[derive(Debug)]
pub(super) struct Registration {
    inflight: Arc<Mutex<Inflight>>,
    id: RequestId,
    serial: u64,
    /// Cancelled by `notifications/cancelled` for this request, by the end of the
    /// connection, or by the parent token it was registered with.
    pub(super) cancel: CancellationToken,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut inflight = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entries) = inflight.by_id.get_mut(&self.id) else {
            return;
        };
        let before = entries.len();
        entries.retain(|(serial, _)| *serial != self.serial);
        let removed = before - entries.len();
        if entries.is_empty() {
            inflight.by_id.remove(&self.id);
        }
        inflight.count -= removed;
    }
}

impl Session {
    /// A session serving `peer`, whose requests see `extensions`.
    pub fn new(peer: Peer, extensions: Extensions) -> Session {
        Session {
            peer,
            extensions,
            inflight: Arc::default(),
        }
    }

    /// Cancels every request in flight (the connection is gone).
    pub fn cancel_all(&self) {
        let mut inflight = self.lock_inflight();
        for (_, entries) in inflight.by_id.drain() {
            for (_, token) in entries {
                token.cancel();
            }
        }
        inflight.count = 0;
    }

    /// How many inbound requests are being served.
    pub fn inflight_count(&self) -> usize {
        self.lock_inflight().count
    }

    /// The ids of the inbound requests being served.
    pub(super) fn inflight_ids(&self) -> Vec<RequestId> {
        let inflight = self.lock_inflight();
        let mut ids: Vec<RequestId> = inflight
            .by_id
            .iter()
            .flat_map(|(id, entries)| entries.iter().map(move |_| id.clone()))
            .collect();
        ids.sort_by_key(ToString::to_string);
        ids
    }

    /// The same session (in-flight requests, extensions) answering through `peer`: used
    /// where each inbound request has its own response stream (Streamable HTTP), so that a
    /// `notifications/cancelled` arriving on another stream still finds the request.
    pub fn with_peer(&self, peer: Peer) -> Session {
        Session {
            peer,
            extensions: self.extensions.clone(),
            inflight: Arc::clone(&self.inflight),
        }
    }

    /// Cancels the in-flight request `id`, as `notifications/cancelled` would (every
    /// request of this session with that id). Returns whether one was in flight.
    pub fn cancel(&self, id: &RequestId) -> bool {
        match self.lock_inflight().by_id.get(id) {
            Some(entries) => {
                for (_, token) in entries {
                    token.cancel();
                }
                true
            }
            None => false,
        }
    }

    /// Registers request `id` as in flight, with a token that `parent` (if any) also
    /// cancels. Done when the request is read, so that a cancellation read right after it
    /// is not lost. `None` when `limit` requests are in flight already.
    pub(super) fn register(
        &self,
        id: &RequestId,
        limit: usize,
        parent: Option<&CancellationToken>,
    ) -> Option<Registration> {
        let mut inflight = self.lock_inflight();
        if inflight.count >= limit {
            return None;
        }
        let cancel = parent.map_or_else(CancellationToken::new, CancellationToken::child_token);
        let serial = inflight.next_serial;
        inflight.next_serial += 1;
        inflight.count += 1;
        inflight
            .by_id
            .entry(id.clone())
            .or_default()
            .push((serial, cancel.clone()));
        Some(Registration {
            inflight: Arc::clone(&self.inflight),
            id: id.clone(),
            serial,
            cancel,
        })
    }

    fn lock_inflight(&self) -> std::sync::MutexGuard<'_, Inflight> {
        self.inflight.lock().unwrap_or_else(|e| e.into_inner())
    }
}
