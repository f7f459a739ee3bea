//! The node registry (contract rule 24) in memory: one map by id behind a mutex, so each
//! operation is atomic with respect to every other on any clone.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::db::lock;
use crate::error::StoreError;
use crate::node::{NodeBeat, NodeRecord, NodeState};
use crate::record::Millis;

/// Every node's entry, by id.
#[derive(Debug, Default)]
pub(super) struct Nodes(Mutex<BTreeMap<String, NodeRecord>>);

impl Nodes {
    /// Writes `beat` at `now` (backend contract rule 14).
    pub(super) fn beat(&self, beat: &NodeBeat, now: Millis) -> NodeRecord {
        let mut nodes = lock(&self.0);
        let fresh = || NodeRecord {
            id: beat.id.clone(),
            role: beat.role.clone(),
            started_at: now,
            heartbeat_at: now,
            interval_ms: beat.interval_ms.max(1),
            drain_requested: false,
            drained: false,
            state: NodeState::Active,
        };
        let entry = nodes.entry(beat.id.clone()).or_insert_with(fresh);
        if beat.starting || now >= entry.forget_at() {
            *entry = fresh();
        } else {
            entry.role = beat.role.clone();
            entry.heartbeat_at = now;
            entry.interval_ms = beat.interval_ms.max(1);
            entry.drained = beat.drained && entry.drain_requested;
        }
        entry.clone().settled(now)
    }

    /// Raises the drain flag of `id` (backend contract rule 14).
    pub(super) fn drain(&self, id: &str, now: Millis) -> Result<NodeRecord, StoreError> {
        let mut nodes = lock(&self.0);
        match nodes.get_mut(id) {
            Some(entry) if now < entry.forget_at() => {
                entry.drain_requested = true;
                Ok(entry.clone().settled(now))
            }
            _ => Err(StoreError::NotFound),
        }
    }

    /// Removes the forgotten entries and returns the rest, by id.
    pub(super) fn list(&self, now: Millis) -> Vec<NodeRecord> {
        let mut nodes = lock(&self.0);
        nodes.retain(|_, entry| now < entry.forget_at());
        nodes.values().map(|e| e.clone().settled(now)).collect()
    }
}
