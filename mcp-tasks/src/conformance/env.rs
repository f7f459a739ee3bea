//! [`Env`] and [`StoreFactory`]: what a behaviour opens its backend with, and how.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;

use crate::{Clock, Limits, ManualClock, StoreError, TaskStore};

/// Everything a behaviour's backend is opened with.
#[derive(Debug, Clone)]
pub struct Env {
    /// Names one isolated backend: handles opened with the same namespace share it (are
    /// nodes of one deployment); different namespaces never see each other's tasks.
    pub namespace: String,
    /// The limits the backend is opened with.
    pub limits: Limits,
    /// Every handle of the namespace reads this clock; behaviours move it.
    pub clock: ManualClock,
}

impl Env {
    /// A fresh namespace with `limits` and a new manual clock.
    pub fn new(behaviour: &str, limits: Limits) -> Env {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let salt = crate::TaskId::random()
            .map(|id| id.as_str()[..8].to_owned())
            .unwrap_or_default();
        Env {
            namespace: format!("{behaviour}_{n}_{salt}"),
            limits,
            clock: ManualClock::default(),
        }
    }

    /// [`Env::clock`] as the [`Clock`] a backend takes.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::new(self.clock.clone())
    }
}

/// Opens handles on a backend under test.
#[async_trait]
pub trait StoreFactory: Send + Sync + 'static {
    /// The backend's store type.
    type Store: TaskStore;

    /// A handle on the backend named by `env.namespace`. The first call for a namespace
    /// starts it empty; later calls with the same namespace open further handles on the
    /// same data (another node).
    async fn open(&self, env: &Env) -> Result<Self::Store, StoreError>;
}
