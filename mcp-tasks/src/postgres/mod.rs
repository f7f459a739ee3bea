//! [`PostgresStore`]: the shared durable backend, one PostgreSQL schema per deployment.

mod backend;
mod batch;
mod db;
mod listen;
mod notify;
mod operator;
mod schema;
mod sessions;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_postgres::NoTls;

use crate::clock::{Clock, SystemClock};
use crate::error::StoreError;
use crate::event::{EVENT_BUFFER, FeedItem, TaskEvent};
use crate::limits::Limits;
use crate::record::{Owner, TaskId};
use schema::backend;
#[cfg(feature = "conformance")]
pub(crate) use schema::fnv1a;

/// How to connect a [`PostgresStore`].
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// A libpq-style URL or key/value string, e.g. `postgres://user@host:5432/db`. No TLS.
    pub url: String,
    /// The PostgreSQL schema the tables live in (created if missing): one schema is one
    /// isolated deployment. 1 to 63 of `[a-z0-9_]`, not starting with a digit.
    pub schema: String,
    /// The limits and defaults this handle enforces (every handle of a deployment should
    /// use the same).
    pub limits: Limits,
    /// Where time comes from (rule 17); the database's clock is never read.
    pub clock: Arc<dyn Clock>,
    /// The most pooled connections this handle opens (its listener takes one more).
    pub pool_size: usize,
}

impl PostgresOptions {
    /// The schema every handle uses unless told otherwise.
    pub const DEFAULT_SCHEMA: &'static str = "mcp_tasks";

    /// Options for `url`: schema `mcp_tasks`, default limits, the system clock, 16
    /// pooled connections.
    pub fn new(url: impl Into<String>) -> PostgresOptions {
        PostgresOptions {
            url: url.into(),
            schema: PostgresOptions::DEFAULT_SCHEMA.to_owned(),
            limits: Limits::default(),
            clock: Arc::new(SystemClock),
            pool_size: 16,
        }
    }
}

/// The [`TaskStore`](crate::TaskStore) kept in a PostgreSQL schema, shared by any number of server
/// instances (each with its own handles, pools and listeners).
///
/// - **Writes.** A change reads the owner's unexpired row ([`StoreError::NotFound`]
///   otherwise), applies the [`rules`](crate::rules) function, and writes it back only
///   if the row's revision is still the one read (compare-and-set); one that lost reads
///   again and applies the rule again
///   ([`RERUNS_UPDATES`](crate::backend::Backend::RERUNS_UPDATES)), at most 100 times
///   before [`StoreError::Unavailable`]. So a terminal transition is *first writer wins*
///   atomically across all instances: every later `complete`/`fail`/`cancel` re-reads the
///   committed terminal record, where [`rules::finish`](crate::rules::finish) changes
///   nothing (`won: false`). A create commits before it returns. A claim is one
///   transaction (`FOR UPDATE SKIP LOCKED`). No lock is held across a round trip to the
///   client.
/// - **Group commit.** The reads, creates and changes that a handle's callers make at
///   once go out together: one statement per batch (`create_tasks_v10`,
///   `save_tasks_v10`, one `SELECT` of many rows), each batch its own transaction and
///   commit, one batch of each kind in flight per handle; what arrives meanwhile waits
///   for it and forms the next (`batch.rs`). Each request keeps its own outcome (stored, refused by a limit,
///   lost its compare-and-set); a batch that fails as a whole fails each of its requests.
///   A batch's changes lock their task rows in id order and then the count shards in
///   (scope, shard) order, and creates never wait for a row, so batches cannot deadlock.
/// - **Limits.** The unfinished tasks per owner, and in total, are counted in
///   `live_counts`, each count spread over 16 rows ("shards", each allowed a sixteenth of
///   the limit), updated in the same statement as the task: a create takes a unit in a
///   shard with room that no other write holds (`SKIP LOCKED`), and is refused only when
///   every shard is full as committed, that is at the limit exactly; when the shards with
///   room are all being written it runs again after a short pause. A batch of creates
///   takes as many units from one shard as it has room for; missing shard rows are
///   made one per statement, outside any batch. The task row names its
///   shards, and its terminal write gives the units back. Shards let 16 writers commit at
///   once where one row serialized every create and finish of the deployment behind its
///   commit's flush. Locks are taken in one order (task row, owner shard, total shard), a
///   create never waits for a row another write holds, and sweeps (one statement,
///   `sweep_expired`, serialized by a transaction-scoped advisory lock) pass over locked
///   rows, tasks and shards alike, so none can deadlock, and a sweep holds what it locks
///   for that one statement.
/// - **Task logs** (contract rule 23). Entries live in `task_log` (task id and seq the
///   key, deleted with their task row by `ON DELETE CASCADE`); the task row counts for
///   its log (`log_next`, `log_first`, `log_bytes`). The entries a change of state
///   writes ride in its row of the batch and are inserted by the same statement as the
///   record (`create_tasks_v10`, `save_tasks_v10`), numbered from `log_next` as
///   the compare-and-set moves it: a write that loses writes none. A tool's entries are
///   one statement (`append_log`) whose `UPDATE` of the counters takes the row's lock,
///   so appends and writes from any handle number without gaps; then
///   [`TaskEvent::Logged`]. Retention drops the oldest entries past
///   [`Limits::max_log_entries`] or [`Limits::max_log_bytes`] (never the newest) in the
///   same statement, only for a log whose counters passed them. A read is one statement.
/// - **Events.** Each write's events are sent with `pg_notify` right after its commit,
///   by the handle's notifier: a connection of its own with `synchronous_commit` off
///   that sends the payloads of many writes in one statement (in the write's
///   transaction, `pg_notify` would serialize every notifying commit of the schema
///   behind the previous one's flush; see `notify.rs`). Listeners hear of committed
///   changes only. A writer that dies between its commit and the send loses those
///   notifications; a notifier that could not send (connection lost, or writers outran
///   it) sends a resync once it can. Payloads are small JSON (kind, owner, id, status, revision, input
///   keys, never values; one that would pass the 8000-byte limit becomes a "resync").
///   Every handle runs a listener: a dedicated connection (not from the pool) that
///   `LISTEN`s on the schema's channel and forwards each notification into the handle's
///   feed ([`events`](crate::TaskStore::events), buffer [`EVENT_BUFFER`]). The writing handle
///   publishes its own events right after commit and skips their echo, so its
///   subscribers hear them before the write returns. Operations run as spawned tasks,
///   so a caller that stops waiting cannot split a commit from its publication.
/// - **Reconnect.** When the listener's connection drops (or stops answering its
///   periodic ping), the listener reconnects with backoff (50 ms doubling to 5 s) and
///   re-`LISTEN`s, then sends a resync through the feed: every subscriber receives
///   [`EventError::Lagged`](crate::EventError::Lagged)`(0)` and re-reads the tables, so
///   no waiter hangs on a notification sent while nobody listened.
/// - **Schema.** Versioned migrations are embedded and applied on connect in one
///   transaction under `pg_advisory_xact_lock`, so instances starting together do not
///   race; a schema written by a newer build ([`SCHEMA_VERSION`](Self::SCHEMA_VERSION)) is
///   refused with [`StoreError::Backend`].
/// - A database out of reach (a closed or cut connection, an I/O error, a timeout, the
///   pool's included, a transient SQLSTATE) is [`StoreError::Unavailable`], which callers
///   retry; any other database failure is [`StoreError::Backend`]. Needs a Tokio runtime. Clones
///   share the pool and the listener; the listener stops when the last clone is dropped.
/// - Owners and results are stored as text: a NUL character in an owner cannot be
///   stored (PostgreSQL text refuses it) and fails with [`StoreError::Backend`].
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    limits: Limits,
    clock: Arc<dyn Clock>,
    schema: String,
    channel: String,
    /// This handle's random id, carried by its notifications.
    me: String,
    events: broadcast::Sender<FeedItem>,
    /// The resource URIs announced (session store rule 9), by this handle or, through
    /// the listener, by others.
    resources: broadcast::Sender<String>,
    listener: JoinHandle<()>,
    /// Sends the notifications of this handle's committed writes (`notify.rs`).
    notifier: notify::Notifier,
    /// Creates made through this handle (spreads them over the count shards).
    creates: std::sync::atomic::AtomicU32,
    /// Group commit (`batch.rs`): the creates, the changes and the reads of this
    /// handle's callers, gathered into one statement per batch.
    batches: Batches,
    /// The unfinished records this handle wrote last (`recent.rs`).
    recent: crate::recent::Recent,
}

/// The batchers of one handle, each with its own share of the pool.
struct Batches {
    create: batch::Batcher<db::NewRow, db::Created>,
    save: batch::Batcher<db::SavedRow, bool>,
    read: batch::Batcher<db::ReadKey, Option<crate::record::TaskRecord>>,
}

impl Batches {
    /// One batch of each kind in flight at a time ([`batch::LANES`]), on connections of
    /// the pool; the rest of the pool serves claims, lists, sweeps and sessions.
    fn start(pool: &Pool, limits: &Limits) -> Batches {
        let lanes = batch::LANES;
        let create_limits = limits.clone();
        let save_limits = limits.clone();
        Batches {
            create: batch::Batcher::start(pool.clone(), lanes, move |client, rows| {
                let limits = create_limits.clone();
                async move { db::create_batch(&client, &rows, &limits).await }
            }),
            save: batch::Batcher::start(pool.clone(), lanes, move |client, rows| {
                let limits = save_limits.clone();
                async move {
                    let saved = db::save_batch(&client, &rows, &limits).await?;
                    Ok(saved.into_iter().map(Ok).collect())
                }
            }),
            read: batch::Batcher::start(pool.clone(), lanes, |client, keys| async move {
                let found = db::load_batch(&client, &keys).await?;
                Ok(found.into_iter().map(Ok).collect())
            }),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("schema", &self.inner.schema)
            .field("channel", &self.inner.channel)
            .field("handle", &self.inner.me)
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

/// The connection settings of `options`: `search_path` set to the schema (appended to any
/// `options` of the URL), a connect timeout, and `application_name` if none is given.
/// `host:port/database` of `config`, for messages.
fn target(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("{host}:{port}/{db}")
}

fn pg_config(options: &PostgresOptions, role: &str) -> Result<tokio_postgres::Config, StoreError> {
    let mut config: tokio_postgres::Config = options
        .url
        .parse()
        .map_err(|e| backend(format!("invalid PostgreSQL URL: {e}")))?;
    let search_path = format!("-c search_path={}", options.schema);
    let extra = match config.get_options() {
        Some(given) if !given.is_empty() => format!("{given} {search_path}"),
        _ => search_path,
    };
    config.options(&extra);
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    if config.get_application_name().is_none() {
        config.application_name(role);
    }
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(30));
    Ok(config)
}

impl PostgresStore {
    /// The newest schema version this build creates and reads.
    pub const SCHEMA_VERSION: i32 = schema::SCHEMA_VERSION;

    /// Connects to `url` with schema `mcp_tasks` on the system clock (see
    /// [`PostgresOptions::new`]).
    pub async fn connect(url: &str, limits: Limits) -> Result<PostgresStore, StoreError> {
        PostgresStore::connect_with(PostgresOptions {
            limits,
            ..PostgresOptions::new(url)
        })
        .await
    }

    /// Connects with `options`: migrates the schema, starts the listener, and returns once
    /// the listener is listening.
    pub async fn connect_with(options: PostgresOptions) -> Result<PostgresStore, StoreError> {
        schema::check_schema(&options.schema)?;
        let manager = Manager::from_config(
            pg_config(&options, "mcp-tasks")?,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .timeouts(Timeouts {
                wait: Some(Duration::from_secs(30)),
                create: Some(Duration::from_secs(10)),
                recycle: Some(Duration::from_secs(10)),
            })
            .build()
            .map_err(backend)?;
        {
            // Said with the server and database it tried, and the cause.
            let target = target(&pg_config(&options, "mcp-tasks")?);
            let mut client = pool.get().await.map_err(|e| backend(e).at(&target))?;
            schema::migrate(&mut client, &options.schema)
                .await
                .map_err(|e| e.at(&target))?;
        }
        let channel = schema::channel(&options.schema);
        let me = TaskId::random().map_err(backend)?.to_string();
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let (resources, _) = broadcast::channel(crate::session::RESOURCE_FEED);
        let listener = listen::start(
            pg_config(&options, "mcp-tasks listener")?,
            channel.clone(),
            me.clone(),
            listen::Feeds {
                tasks: events.clone(),
                resources: resources.clone(),
            },
        )
        .await?;
        let notifier = notify::Notifier::start(
            pg_config(&options, "mcp-tasks notifier")?,
            channel.clone(),
            me.clone(),
        )
        .await?;
        // Handles start at different shards.
        let creates = std::sync::atomic::AtomicU32::new(schema::fnv1a(&me) as u32);
        let batches = Batches::start(&pool, &options.limits);
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                pool,
                limits: options.limits,
                clock: options.clock,
                schema: options.schema,
                channel,
                me,
                events,
                resources,
                listener,
                notifier,
                creates,
                batches,
                recent: Default::default(),
            }),
        })
    }

    /// The schema this handle keeps its tables in.
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }

    /// The `LISTEN`/`NOTIFY` channel of the schema (the same on every handle).
    pub fn channel(&self) -> &str {
        &self.inner.channel
    }

    /// How many tasks the schema holds (finished ones included, expired ones until swept).
    pub async fn task_count(&self) -> Result<usize, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        db::task_count(&client).await
    }

    /// The unfinished tasks counted against the limits: `owner`'s, and all owners'.
    pub async fn live_tasks(&self, owner: &Owner) -> Result<(usize, usize), StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        db::live_counts(&client, owner).await
    }

    /// Runs `op` as a task of its own, so it finishes (commit and publication together)
    /// even if the caller stops waiting.
    async fn spawn<R: Send + 'static>(
        &self,
        op: impl Future<Output = Result<R, StoreError>> + Send + 'static,
    ) -> Result<R, StoreError> {
        tokio::spawn(op)
            .await
            .map_err(|e| backend(format!("store operation did not finish: {e}")))?
    }
}

impl Inner {
    /// Publishes committed `events` to this handle's feed, and has the notifier tell
    /// the other handles (the listener skips their echo).
    fn publish(&self, events: Vec<TaskEvent>) {
        let payloads = events
            .iter()
            .map(|event| listen::payload(event, &self.me))
            .collect();
        for event in events {
            // No subscriber is not an error.
            let _ = self.events.send(FeedItem::Event(event));
        }
        self.notifier.send(payloads);
    }

    /// The count shard a create tries first: each handle goes round them in turn.
    fn next_shard(&self) -> i32 {
        let n = self
            .creates
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        i32::try_from(n % schema::SHARDS.unsigned_abs()).unwrap_or(0)
    }
}
