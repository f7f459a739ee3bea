//! [`PostgresStore`]: the shared durable backend, one PostgreSQL schema per deployment.

mod backend;
mod db;
mod listen;
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
#[cfg(feature = "conformance")]
pub(crate) use schema::fnv1a;
use schema::{backend, pg};

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
/// - **Writes.** Each write is one transaction on a pooled connection: `SELECT ... FOR
///   UPDATE` the owner's unexpired row ([`StoreError::NotFound`] otherwise), apply the
///   [`rules`](crate::rules) function, `UPDATE`, `COMMIT`. The row lock serializes every write to a task
///   across all instances, so a terminal transition is *first writer wins* atomically: the
///   first `complete`/`fail`/`cancel` to lock the row moves it, and every later one reads
///   the committed terminal record, where [`rules::finish`](crate::rules::finish) changes nothing (`won: false`).
///   `create` commits before it returns.
/// - **Limits.** `live_counts` (per owner) and `counters` (in total) are updated in the
///   same transactions. Every transaction locks in one order, so none can deadlock: task
///   rows, then owner counter rows (in owner order), then the total row. Sweeps also take
///   a transaction-scoped advisory lock, so two never lock expired rows in different
///   orders.
/// - **Events.** Each write queues `pg_notify` for its events *inside* its transaction;
///   PostgreSQL delivers notifications on commit only, so listeners hear of committed
///   changes only. Payloads are small JSON (kind, owner, id, status, revision, input
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
/// - Every database failure is [`StoreError::Backend`]. Needs a Tokio runtime. Clones
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
    listener: JoinHandle<()>,
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
        let listener = listen::start(
            pg_config(&options, "mcp-tasks listener")?,
            channel.clone(),
            me.clone(),
            events.clone(),
        )
        .await?;
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                pool,
                limits: options.limits,
                clock: options.clock,
                schema: options.schema,
                channel,
                me,
                events,
                listener,
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
    /// Queues `events` as notifications of `tx` (PostgreSQL sends them on commit only).
    async fn notify(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        for event in events {
            db::notify(tx, &self.channel, &listen::payload(event, &self.me)).await?;
        }
        Ok(())
    }

    /// Commits `tx` (whose `events` were queued by [`notify`](Self::notify)), then
    /// publishes them to this handle's feed (the listener skips their echo).
    async fn commit(
        &self,
        tx: deadpool_postgres::Transaction<'_>,
        events: Vec<TaskEvent>,
    ) -> Result<(), StoreError> {
        tx.commit().await.map_err(pg)?;
        for event in events {
            // No subscriber is not an error.
            let _ = self.events.send(FeedItem::Event(event));
        }
        Ok(())
    }
}
