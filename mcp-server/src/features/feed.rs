//! The feed of changed resource URIs that MCP 2026-07-28 `subscriptions/listen` streams
//! read. [`Server::notify_resource_updated`] writes to it (and tells the 2025-11-25
//! sessions through their own subscriptions).
//!
//! **Invariant.** A slow reader misses URIs (it is told how many) rather than holding
//! memory: the feed keeps at most [`FEED_CAPACITY`] URIs.
//!
//! [`Server::notify_resource_updated`]: crate::Server::notify_resource_updated

use tokio::sync::broadcast;

/// How many changed URIs a slow `subscriptions/listen` stream may fall behind by before
/// it misses some.
pub(crate) const FEED_CAPACITY: usize = 256;

/// Changed resource URIs, as they are announced.
#[derive(Debug)]
pub(crate) struct ResourceFeed(broadcast::Sender<String>);

impl Default for ResourceFeed {
    fn default() -> Self {
        ResourceFeed(broadcast::channel(FEED_CAPACITY).0)
    }
}

impl ResourceFeed {
    /// Tells the listen streams that `uri` changed.
    pub(crate) fn tell(&self, uri: &str) {
        // No receiver is no error: nobody listens right now.
        let _ = self.0.send(uri.to_owned());
    }

    /// The changed URIs from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<String> {
        self.0.subscribe()
    }
}
