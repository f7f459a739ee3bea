//! Which MCP 2025-11-25 sessions want to hear that a resource changed
//! (`resources/subscribe`), and which sessions this process serves.
//! [`Server::notify_resource_updated`] tells them, and the 2026-07-28 listen streams
//! through their own feed (`features::ResourceFeed`).
//!
//! On a shared store the subscriptions live in each session's record too, and a change
//! seen by any instance is announced through the store (its rule 9): every instance
//! hears it and notifies the sessions whose standalone stream it holds, asking their
//! records whether they are subscribed (a subscription made on another instance is
//! known here only that way). [`SessionSubscriptions::held`] lists those sessions.
//!
//! **Invariant.** Holds sessions weakly: a subscription never keeps a session alive, and
//! a session that ended (dropped or closed) is forgotten the next time its URI changes.
//!
//! [`Server::notify_resource_updated`]: crate::Server::notify_resource_updated

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::McpSession;

/// The resource subscriptions of the sessions this process serves.
#[derive(Debug, Default)]
pub(crate) struct SessionSubscriptions {
    by_uri: Mutex<HashMap<String, Vec<Weak<McpSession>>>>,
    /// Every session this process serves (opened or restored here).
    sessions: Mutex<Vec<Weak<McpSession>>>,
    /// Whether the store's announcements are being listened to (started once).
    listening: std::sync::atomic::AtomicBool,
}

impl SessionSubscriptions {
    /// `session` is served by this process from now on (see [`held`](Self::held)).
    pub(crate) fn hold(&self, session: &Arc<McpSession>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.retain(|s| s.upgrade().is_some_and(|s| !s.is_closed()));
        sessions.push(Arc::downgrade(session));
    }

    /// The live sessions this process serves.
    pub(crate) fn held(&self) -> Vec<Arc<McpSession>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.retain(|s| s.upgrade().is_some_and(|s| !s.is_closed()));
        sessions.iter().filter_map(Weak::upgrade).collect()
    }

    /// Whether `session` subscribed to `uri` through this process.
    pub(crate) fn is_subscribed(&self, uri: &str, session: &McpSession) -> bool {
        let by_uri = self.by_uri.lock().unwrap_or_else(|e| e.into_inner());
        by_uri.get(uri).is_some_and(|sessions| {
            sessions
                .iter()
                .any(|s| s.upgrade().is_some_and(|s| s.id == session.id))
        })
    }

    /// True the first time only: the caller starts listening to the store's
    /// announcements.
    pub(crate) fn start_listening(&self) -> bool {
        !self
            .listening
            .swap(true, std::sync::atomic::Ordering::AcqRel)
    }

    /// `session` wants `notifications/resources/updated` for `uri` (once, however often
    /// it asks).
    pub(crate) fn subscribe(&self, uri: &str, session: &Arc<McpSession>) {
        let mut by_uri = self.by_uri.lock().unwrap_or_else(|e| e.into_inner());
        let sessions = by_uri.entry(uri.to_owned()).or_default();
        sessions.retain(|s| s.strong_count() > 0);
        if !sessions
            .iter()
            .any(|s| s.upgrade().is_some_and(|s| s.id == session.id))
        {
            sessions.push(Arc::downgrade(session));
        }
    }

    /// `session` no longer wants to hear about `uri`.
    pub(crate) fn unsubscribe(&self, uri: &str, session: &McpSession) {
        let mut by_uri = self.by_uri.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sessions) = by_uri.get_mut(uri) {
            sessions.retain(|s| s.upgrade().is_some_and(|s| s.id != session.id));
            if sessions.is_empty() {
                by_uri.remove(uri);
            }
        }
    }

    /// `uri` changed: the live sessions subscribed to it (ended ones are forgotten).
    pub(crate) fn changed(&self, uri: &str) -> Vec<Arc<McpSession>> {
        let mut by_uri = self.by_uri.lock().unwrap_or_else(|e| e.into_inner());
        let Some(sessions) = by_uri.get_mut(uri) else {
            return Vec::new();
        };
        let live: Vec<Arc<McpSession>> = sessions
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|s| !s.is_closed())
            .collect();
        sessions.retain(|s| s.upgrade().is_some_and(|s| !s.is_closed()));
        if sessions.is_empty() {
            by_uri.remove(uri);
        }
        live
    }
}
