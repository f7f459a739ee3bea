//! The backend conformance kit: one public async function per behaviour of the
//! [`TaskStore`] contract, in the manner of `object_store`'s integration module.
//!
//! Each function takes a [`StoreFactory`], opens a fresh backend (and, where the
//! behaviour involves two nodes, a second handle on the same backend), and panics on the
//! first violation. Run them from your backend's tests with [`conformance_tests!`](crate::conformance_tests), or
//! all at once with [`run_all`] (what `cargo xtask conformance --store URL` does).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use mcp_tasks::conformance::{self, MemoryFactory};
//! conformance::durable_create_visible_from_second_handle(&MemoryFactory::default()).await;
//! # }
//! ```
//!
//! [`TaskStore`]: crate::TaskStore

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::FutureExt;

use crate::{
    Clock, Limits, ManualClock, MemoryStore, NewTask, Origin, Owner, StoreError, TaskStore,
    WireRevision,
};

mod events;
mod input;
mod isolation;
mod leases;
mod lifecycle;
mod limits;
mod listing;
pub mod model;
mod outage;
mod payloads;
#[cfg(feature = "postgres")]
mod postgres;
mod terminal;
mod ttl;

pub use events::*;
pub use input::*;
pub use isolation::*;
pub use leases::*;
pub use lifecycle::*;
pub use limits::*;
pub use listing::*;
pub use outage::{Outage, TcpProxy, outage_errors_are_transient_and_lose_nothing};
pub use payloads::*;
#[cfg(feature = "postgres")]
pub use postgres::PostgresFactory;
pub use terminal::*;
pub use ttl::*;

/// Everything a behaviour's backend is opened with.
#[derive(Debug, Clone)]
pub struct Env {
    /// Names one isolated backend: handles opened with the same namespace share it (are
    /// nodes of one deployment); different namespaces never see each other's tasks.
    pub namespace: String,
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

    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::new(self.clock.clone())
    }
}

/// Opens handles on a backend under test.
#[async_trait]
pub trait StoreFactory: Send + Sync + 'static {
    type Store: TaskStore;

    /// A handle on the backend named by `env.namespace`. The first call for a namespace
    /// starts it empty; later calls with the same namespace open further handles on the
    /// same data (another node).
    async fn open(&self, env: &Env) -> Result<Self::Store, StoreError>;
}

/// [`StoreFactory`] for [`MemoryStore`]: handles of one namespace are clones of one store.
#[derive(Debug, Default)]
pub struct MemoryFactory {
    stores: Mutex<HashMap<String, MemoryStore>>,
}

#[async_trait]
impl StoreFactory for MemoryFactory {
    type Store = MemoryStore;

    async fn open(&self, env: &Env) -> Result<MemoryStore, StoreError> {
        let mut stores = self.stores.lock().unwrap_or_else(|e| e.into_inner());
        Ok(stores
            .entry(env.namespace.clone())
            .or_insert_with(|| MemoryStore::with_clock(env.limits.clone(), env.clock()))
            .clone())
    }
}

/// [`StoreFactory`] for [`SqliteStore`](crate::SqliteStore): each namespace is its own
/// database file `{base}-{namespace}.sqlite3`; opening a namespace again opens another
/// handle (connection) on that file. Dropping the factory deletes the files it created
/// (with their `-wal` and `-shm` companions).
#[cfg(feature = "sqlite")]
#[derive(Debug)]
pub struct SqliteFactory {
    base: std::path::PathBuf,
    created: Mutex<std::collections::BTreeSet<std::path::PathBuf>>,
}

#[cfg(feature = "sqlite")]
impl SqliteFactory {
    /// Files are named after `base` (a path prefix, not a directory).
    pub fn new(base: std::path::PathBuf) -> SqliteFactory {
        SqliteFactory {
            base,
            created: Mutex::default(),
        }
    }

    /// Files under [`std::env::temp_dir`], with a prefix unique to this factory.
    pub fn temporary() -> SqliteFactory {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let salt = crate::TaskId::random()
            .map(|id| id.as_str()[..12].to_owned())
            .unwrap_or_default();
        let name = format!("mcp-tasks-kit-{}-{n}-{salt}", std::process::id());
        SqliteFactory::new(std::env::temp_dir().join(name))
    }

    /// The database file of `namespace`.
    pub fn path(&self, namespace: &str) -> std::path::PathBuf {
        let mut name = self.base.clone().into_os_string();
        name.push(format!("-{namespace}.sqlite3"));
        name.into()
    }
}

#[cfg(feature = "sqlite")]
#[async_trait]
impl StoreFactory for SqliteFactory {
    type Store = crate::SqliteStore;

    async fn open(&self, env: &Env) -> Result<crate::SqliteStore, StoreError> {
        let path = self.path(&env.namespace);
        self.created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.clone());
        crate::SqliteStore::open_with_clock(path, env.limits.clone(), env.clock())
    }
}

#[cfg(feature = "sqlite")]
impl Drop for SqliteFactory {
    fn drop(&mut self) {
        let created = std::mem::take(self.created.get_mut().unwrap_or_else(|e| e.into_inner()));
        for path in created {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut file = path.clone().into_os_string();
                file.push(suffix);
                // Best effort: a file that is already gone is fine.
                let _ = std::fs::remove_file(file);
            }
        }
    }
}

/// [`StoreFactory`] for [`RedisStore`](crate::RedisStore): each namespace is its own key
/// prefix `kit:{namespace}` (an isolated deployment); opening a namespace again connects
/// another `RedisStore` (its own connections and pub/sub subscription: another node).
/// Dropping the factory deletes the keys of every prefix it opened (best effort).
#[cfg(feature = "redis")]
#[derive(Debug)]
pub struct RedisFactory {
    url: String,
    created: Mutex<std::collections::BTreeSet<String>>,
}

#[cfg(feature = "redis")]
impl RedisFactory {
    /// The environment variable naming the test server's URL.
    pub const URL_VAR: &'static str = "MCP_TEST_REDIS_URL";
    /// The URL used when [`URL_VAR`](Self::URL_VAR) is unset.
    pub const DEFAULT_URL: &'static str = "redis://127.0.0.1:6379/";

    /// A factory on the server at `url`, without checking that it answers.
    pub fn new(url: impl Into<String>) -> RedisFactory {
        RedisFactory {
            url: url.into(),
            created: Mutex::default(),
        }
    }

    /// A factory on the server at `url`, once it answered `PING` (blocking, 2 s at most).
    pub fn connect(url: impl Into<String>) -> Result<RedisFactory, StoreError> {
        let url = url.into();
        crate::redis::blocking::ping(&url, std::time::Duration::from_secs(2))?;
        Ok(RedisFactory::new(url))
    }

    /// A factory on `$MCP_TEST_REDIS_URL` (default [`DEFAULT_URL`](Self::DEFAULT_URL)), or
    /// `None` after printing `skipped: Redis not reachable at <url>` to stderr when the
    /// server does not answer. With `MCP_REQUIRE_SERVICES=1` an unreachable server panics
    /// instead, so CI cannot skip silently.
    pub fn from_env() -> Option<RedisFactory> {
        let url = std::env::var(Self::URL_VAR).unwrap_or_else(|_| Self::DEFAULT_URL.to_owned());
        match RedisFactory::connect(url.clone()) {
            Ok(factory) => Some(factory),
            Err(e) if std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1") => {
                panic!("MCP_REQUIRE_SERVICES=1 but Redis is not reachable at {url}: {e}")
            }
            Err(_) => {
                eprintln!("skipped: Redis not reachable at {url}");
                None
            }
        }
    }

    /// The key prefix of `namespace`.
    pub fn prefix(namespace: &str) -> String {
        format!("kit:{namespace}")
    }
}

#[cfg(feature = "redis")]
#[async_trait]
impl StoreFactory for RedisFactory {
    type Store = crate::RedisStore;

    async fn open(&self, env: &Env) -> Result<crate::RedisStore, StoreError> {
        let prefix = RedisFactory::prefix(&env.namespace);
        self.created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(prefix.clone());
        crate::RedisStore::connect_with(
            crate::RedisOptions::new(self.url.clone())
                .prefix(prefix)
                .limits(env.limits.clone())
                .clock(env.clock()),
        )
        .await
    }
}

#[cfg(feature = "redis")]
impl Drop for RedisFactory {
    fn drop(&mut self) {
        let created = std::mem::take(self.created.get_mut().unwrap_or_else(|e| e.into_inner()));
        for prefix in created {
            // Best effort: a server that went away keeps the keys (they carry expiries).
            let _ = crate::redis::blocking::delete_prefix(
                &self.url,
                &prefix,
                std::time::Duration::from_secs(5),
            );
        }
    }
}

// ---- helpers shared by the behaviours ----

pub(crate) fn origin() -> Origin {
    Origin {
        method: "tools/call".into(),
        tool: Some("kit_tool".into()),
        revision: WireRevision::V2026_07_28,
    }
}

pub(crate) fn new_task(owner: &Owner) -> NewTask {
    NewTask {
        owner: owner.clone(),
        ttl_ms: None,
        poll_interval_ms: None,
        origin: origin(),
        status_message: None,
    }
}

pub(crate) fn alice() -> Owner {
    Owner::new("alice")
}

pub(crate) fn mallory() -> Owner {
    Owner::new("mallory")
}

/// Limits roomy enough that only the behaviour under test hits one.
pub(crate) fn roomy() -> Limits {
    Limits {
        max_live_tasks_per_owner: 100_000,
        max_live_tasks_total: 1_000_000,
        max_input_requests_per_task: 64,
        max_result_bytes: 8 * 1024 * 1024,
        max_ttl_ms: Some(24 * 60 * 60 * 1000),
        default_ttl_ms: Some(60 * 60 * 1000),
        default_poll_interval_ms: 1_000,
    }
}

/// Opens the first handle of a fresh namespace.
pub(crate) async fn open<F: StoreFactory>(
    factory: &F,
    behaviour: &str,
    limits: Limits,
) -> (F::Store, Env) {
    let env = Env::new(behaviour, limits);
    let store = factory
        .open(&env)
        .await
        .unwrap_or_else(|e| panic!("cannot open the backend: {e}"));
    (store, env)
}

/// Opens another handle (node) on `env`'s backend.
pub(crate) async fn another<F: StoreFactory>(factory: &F, env: &Env) -> F::Store {
    factory
        .open(env)
        .await
        .unwrap_or_else(|e| panic!("cannot open a second handle: {e}"))
}

pub(crate) fn json_map(value: serde_json::Value) -> mcp_protocol::JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

// ---- running the kit ----

/// A behaviour of the kit, type-erased for [`run_all`].
pub type Behaviour<F> = for<'a> fn(&'a F) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

macro_rules! registry {
    ($d:tt; $($name:ident),* $(,)?) => {
        /// Every behaviour of the kit, by name.
        pub fn behaviours<F: StoreFactory>() -> Vec<(&'static str, Behaviour<F>)> {
            vec![$((stringify!($name), (|f: &F| Box::pin($name(f))) as Behaviour<F>)),*]
        }

        /// Declares one `#[tokio::test]` per behaviour of the kit, each calling it with the
        /// factory `$factory` (an expression evaluated per test).
        ///
        /// For a backend behind an external service, `optional:` takes an expression
        /// returning `Option<Factory>`; a test whose expression gives `None` returns at once
        /// (the factory's `from_env` says on stderr that it skipped, or panics when
        /// `MCP_REQUIRE_SERVICES=1`):
        ///
        /// ```ignore
        /// mcp_tasks::conformance_tests!(my_crate::MyFactory::new());
        /// mcp_tasks::conformance_tests!(optional: mcp_tasks::conformance::PostgresFactory::from_env());
        /// mcp_tasks::conformance_tests!(optional: mcp_tasks::conformance::RedisFactory::from_env());
        /// ```
        #[macro_export]
        macro_rules! conformance_tests {
            (optional: $d factory:expr) => {
                $(
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $name() {
                        let Some(factory) = $d factory else {
                            return;
                        };
                        $d crate::conformance::$name(&factory).await;
                    }
                )*
            };
            ($d factory:expr) => {
                $(
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $name() {
                        let factory = $d factory;
                        $d crate::conformance::$name(&factory).await;
                    }
                )*
            };
        }
    };
}

registry!($;
    // lifecycle
    create_returns_working_task,
    durable_create_visible_from_second_handle,
    ids_are_unique_128_bit_hex,
    unknown_id_is_not_found,
    timestamps_come_from_the_clock,
    revision_increases_with_every_change,
    origin_and_poll_interval_round_trip,
    status_message_set_and_cleared,
    // isolation
    other_owner_cannot_read,
    other_owner_cannot_write,
    other_owner_cannot_list,
    // terminal
    complete_stores_result,
    fail_stores_error_and_message,
    cancel_moves_to_cancelled,
    concurrent_terminal_writes_have_one_winner,
    concurrent_terminal_writes_across_handles_have_one_winner,
    nothing_leaves_a_terminal_state,
    request_cancel_raises_flag_once,
    request_cancel_on_terminal_task_is_noop,
    // input
    request_input_makes_task_input_required,
    input_requests_merge,
    partial_resolution_keeps_input_required,
    full_resolution_returns_to_working,
    unknown_and_answered_keys_are_ignored,
    input_key_reuse_is_refused,
    input_response_is_taken_once,
    resolve_on_terminal_task_changes_nothing_and_raises_no_event,
    concurrent_disjoint_resolutions_lose_nothing,
    // events
    events_reach_the_other_handle,
    input_response_event_reaches_the_other_handle,
    cancel_request_event_reaches_the_other_handle,
    terminal_write_raises_one_event,
    // ttl
    ttl_is_defaulted_and_clamped,
    expired_task_reads_as_not_found,
    sweep_purges_expired_and_reports_unfinished,
    sweep_keeps_unexpired_tasks,
    unlimited_ttl_never_expires,
    // leases
    lease_claim_conflicts_with_live_lease,
    lease_renew_and_release_need_the_holder,
    lapsed_lease_is_reported_and_reclaimable,
    create_leased_holds_the_lease_from_the_start,
    // listing
    list_pages_have_no_duplicates_and_no_gaps,
    list_is_stable_under_concurrent_inserts_and_expiry,
    list_rejects_foreign_cursor,
    list_10000_tasks_completely,
    // limits
    live_tasks_per_owner_limit,
    live_tasks_total_limit,
    input_requests_per_task_limit,
    result_bytes_limit,
    // payloads
    one_mib_result_round_trips_exactly,
    non_ascii_text_round_trips_exactly,
    failed_error_data_round_trips,
);

/// How one behaviour went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub behaviour: &'static str,
    /// `None` when it passed; the panic message when it failed.
    pub failure: Option<String>,
}

/// Runs every behaviour against `factory`, one after another, catching failures.
pub async fn run_all<F: StoreFactory>(
    factory: &F,
    mut on_result: impl FnMut(&Outcome),
) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for (name, behaviour) in behaviours::<F>() {
        let result = AssertUnwindSafe(behaviour(factory)).catch_unwind().await;
        let failure = result.err().map(|panic| {
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "panicked".to_owned())
        });
        let outcome = Outcome {
            behaviour: name,
            failure,
        };
        on_result(&outcome);
        outcomes.push(outcome);
    }
    outcomes
}
