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
//! # Running the kit on your own backend
//!
//! A backend crate's tests need these dependencies (nothing else is assumed):
//!
//! ```toml
//! [dev-dependencies]
//! mcp-tasks = { version = "0.1", features = ["conformance"] }
//! async-trait = "0.1"
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! ```
//!
//! Then one file, e.g. `tests/conformance.rs`, with a [`StoreFactory`] for the backend
//! (handles opened with the same [`Env::namespace`] must share data: they play two nodes)
//! and one line declaring a `#[tokio::test]` per behaviour. Here the backend is
//! [`MemoryStore`](crate::MemoryStore) so that the example compiles; yours goes in its
//! place (any [`Backend`](crate::Backend) is a [`TaskStore`]; a complete third-party
//! backend, a `Mutex<HashMap>`, is `tests/tests/it/third_party_backend.rs` in the repository):
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::Mutex;
//!
//! use mcp_tasks::conformance::{Env, StoreFactory};
//! use mcp_tasks::{MemoryStore, StoreError};
//!
//! /// Opens handles on the backend under test: one store per namespace, shared.
//! #[derive(Default)]
//! struct MyFactory {
//!     stores: Mutex<HashMap<String, MemoryStore>>,
//! }
//!
//! #[async_trait::async_trait]
//! impl StoreFactory for MyFactory {
//!     type Store = MemoryStore;
//!
//!     async fn open(&self, env: &Env) -> Result<MemoryStore, StoreError> {
//!         let mut stores = self.stores.lock().unwrap_or_else(|e| e.into_inner());
//!         Ok(stores
//!             .entry(env.namespace.clone())
//!             // The kit moves time with `env.clock()` and sets `env.limits`.
//!             .or_insert_with(|| MemoryStore::with_clock(env.limits.clone(), env.clock()))
//!             .clone())
//!     }
//! }
//!
//! // One `#[tokio::test]` per behaviour of the kit.
//! mcp_tasks::conformance_tests!(MyFactory::default());
//! # fn main() {}
//! ```
//!
//! [`TaskStore`]: crate::TaskStore

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;

use futures::FutureExt;

mod claims;
mod env;
mod events;
mod factories;
mod helpers;
mod idempotency;
mod input;
mod isolation;
mod leases;
mod lifecycle;
mod limits;
mod listing;
mod log_provenance;
mod logs;
pub mod model;
mod nodes;
mod operator;
mod outage;
mod payloads;
mod sessions;
mod terminal;
mod ttl;

pub use claims::*;
pub use env::{Env, StoreFactory};
pub use events::*;
pub use factories::MemoryFactory;
#[cfg(feature = "postgres")]
pub use factories::PostgresFactory;
#[cfg(feature = "redis")]
pub use factories::RedisFactory;
#[cfg(feature = "sqlite")]
pub use factories::SqliteFactory;
pub use idempotency::*;
pub use input::*;
pub use isolation::*;
pub use leases::*;
pub use lifecycle::*;
pub use limits::*;
pub use listing::*;
pub use log_provenance::*;
pub use logs::*;
pub use nodes::*;
pub use operator::*;
pub use outage::{Outage, TcpProxy, outage_errors_are_transient_and_lose_nothing};
pub use payloads::*;
pub use sessions::*;
pub use terminal::*;
pub use ttl::*;

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
    changes_through_two_handles_build_on_each_other,
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
    terminal_write_ends_the_lease,
    // claims
    queued_tasks_are_claimed_once_across_handles,
    claims_follow_creation_order_per_tool,
    queued_changes_are_announced_as_queued,
    trace_context_travels_with_the_task,
    lapsed_claims_are_requeued_or_failed_by_delivery,
    cancel_of_a_queued_task_never_runs_it,
    // listing
    list_pages_have_no_duplicates_and_no_gaps,
    list_is_stable_under_concurrent_inserts_and_expiry,
    list_rejects_foreign_cursor,
    list_10000_tasks_completely,
    // the operator's view
    operator_list_spans_owners_newest_first,
    operator_list_filters_combine,
    operator_cursor_is_bound_to_its_filter,
    operator_get_reads_the_whole_record,
    operator_counts_by_status_and_tool,
    operator_list_walks_long_indexes,
    operator_list_filters_by_text,
    // task logs
    log_records_every_change_of_state,
    log_appends_from_two_handles_number_without_gaps,
    log_reads_pages_after_a_cursor,
    log_retention_drops_the_oldest_first,
    log_is_owner_scoped_and_goes_with_the_task,
    log_append_refusals_write_nothing,
    log_appends_wake_the_other_handle,
    log_names_node_actor_claims_and_lost_runs,
    log_links_a_rerun_to_its_origin,
    // limits
    live_tasks_per_owner_limit,
    live_tasks_total_limit,
    input_requests_per_task_limit,
    result_bytes_limit,
    // payloads
    one_mib_result_round_trips_exactly,
    non_ascii_text_round_trips_exactly,
    failed_error_data_round_trips,
    // sessions (the SessionStore contract)
    session_open_is_visible_from_second_handle,
    session_expires_when_idle_and_touch_extends_it,
    session_changes_are_kept_across_handles,
    session_end_is_seen_everywhere,
    session_limit_counts_every_handle,
    session_input_claims_have_one_holder,
    session_resource_announcements_reach_every_handle,
    // the node registry
    nodes_register_and_heartbeat_across_handles,
    nodes_drain_is_asked_seen_and_acknowledged,
    nodes_lost_then_forgotten,
    // idempotent create
    idempotent_create_returns_the_first_task,
    idempotency_conflict_on_other_arguments,
    idempotency_keys_are_scoped_by_owner,
    concurrent_idempotent_creates_make_one_task,
    idempotency_key_is_free_after_expiry,
    invalid_idempotency_keys_are_refused,
);

/// How one behaviour went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The behaviour's name (its function's name).
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

/// The environment variable naming the file [`report_skip`] appends to (set by
/// `cargo xtask test`, which counts and names the skips in its summary line).
pub const SKIP_LOG_VAR: &str = "MCP_SKIP_LOG";

/// Says on stderr that `what` was skipped and why, and appends the same line to the file
/// `$MCP_SKIP_LOG` names, if any: a test that skips itself (its service or its files are
/// not there) is then counted and named instead of passing silently.
pub fn report_skip(what: &str) {
    eprintln!("skipped: {what}");
    append_to_skip_log(what);
}

/// How a by-design skip's line starts in the file `$MCP_SKIP_LOG` names
/// ([`report_not_applicable`]), so that a summary counts it apart from the skips for a
/// missing service, package or file.
pub const NOT_APPLICABLE: &str = "not applicable: ";

/// Says on stderr that the behaviour `what` does not apply to the backend under test (an
/// optional capability it does not offer, such as operator counts or session records),
/// and records it in `$MCP_SKIP_LOG` marked as such: skipped by design, not for want of
/// anything on the machine.
pub fn report_not_applicable(what: &str) {
    eprintln!("not applicable: {what}");
    append_to_skip_log(&format!("{NOT_APPLICABLE}{what}"));
}

/// Appends `what` as a line to the file `$MCP_SKIP_LOG` names, if any.
fn append_to_skip_log(what: &str) {
    if let Some(path) = std::env::var_os(SKIP_LOG_VAR) {
        use std::io::Write;
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            // One write of the whole line: appends from parallel tests do not interleave.
            .and_then(|mut f| f.write_all(format!("{what}\n").as_bytes()));
        if let Err(e) = appended {
            eprintln!("cannot record the skip in ${SKIP_LOG_VAR}: {e}");
        }
    }
}
