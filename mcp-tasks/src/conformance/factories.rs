//! The store factories of the bundled backends: [`MemoryFactory`], and with their
//! features `SqliteFactory`, `RedisFactory` (a standalone server or a cluster) and
//! `PostgresFactory` (each namespace an isolated deployment: a file, a key prefix, a
//! schema).

use std::collections::HashMap;
use std::sync::Mutex;
#[cfg(feature = "sqlite")]
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;

use super::env::{Env, StoreFactory};
use crate::{MemoryStore, StoreError};

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
/// On a Redis Cluster ([`cluster`](Self::cluster), [`cluster_from_env`](Self::cluster_from_env))
/// the handles connect through the nodes' URLs in turn, so the kit's multi-handle
/// behaviours cross nodes. Dropping the factory deletes the keys of every prefix it
/// opened, on every node (best effort).
#[cfg(feature = "redis")]
#[derive(Debug)]
pub struct RedisFactory {
    /// The URL of the server, or of every node of the cluster.
    nodes: Vec<String>,
    /// Whether the nodes must be a cluster's.
    cluster: bool,
    next: std::sync::atomic::AtomicUsize,
    created: Mutex<std::collections::BTreeSet<String>>,
}

#[cfg(feature = "redis")]
impl RedisFactory {
    /// The environment variable naming the test server's URL.
    pub const URL_VAR: &'static str = "MCP_TEST_REDIS_URL";
    /// The URL used when [`URL_VAR`](Self::URL_VAR) is unset.
    pub const DEFAULT_URL: &'static str = "redis://127.0.0.1:6379/";
    /// The environment variable naming one node of the test cluster
    /// (`redis://127.0.0.1:PORT`).
    pub const CLUSTER_URL_VAR: &'static str = "MCP_TEST_REDIS_CLUSTER_URL";
    /// The environment variable listing the URLs of every node of the test cluster,
    /// comma-separated (`cargo xtask test` starts a three-node cluster and sets both).
    pub const CLUSTER_NODES_VAR: &'static str = "MCP_TEST_REDIS_CLUSTER_NODES";

    /// A factory on the server at `url`, without checking that it answers.
    pub fn new(url: impl Into<String>) -> RedisFactory {
        RedisFactory {
            nodes: vec![url.into()],
            cluster: false,
            next: std::sync::atomic::AtomicUsize::new(0),
            created: Mutex::default(),
        }
    }

    /// A factory on the Redis Cluster whose nodes are at `nodes` (URLs, at least one),
    /// without checking that they answer; each open fails unless it finds a cluster.
    pub fn cluster(nodes: Vec<String>) -> RedisFactory {
        RedisFactory {
            nodes,
            cluster: true,
            next: std::sync::atomic::AtomicUsize::new(0),
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
                super::report_skip(&format!("Redis not reachable at {url}"));
                None
            }
        }
    }

    /// A factory on the cluster whose nodes `$MCP_TEST_REDIS_CLUSTER_NODES` lists (or,
    /// without it, the one node of `$MCP_TEST_REDIS_CLUSTER_URL`), once every node
    /// answered `PING` (2 s at most each); or `None` after printing `skipped: ...` when
    /// neither variable is set or a node does not answer. With `MCP_REQUIRE_SERVICES=1`
    /// that panics instead.
    pub fn cluster_from_env() -> Option<RedisFactory> {
        let nodes: Vec<String> = std::env::var(Self::CLUSTER_NODES_VAR)
            .or_else(|_| std::env::var(Self::CLUSTER_URL_VAR))
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect();
        let why = if nodes.is_empty() {
            Some(format!(
                "Redis Cluster: neither {} nor {} is set (`cargo xtask test` starts a \
                 three-node cluster and sets them)",
                Self::CLUSTER_NODES_VAR,
                Self::CLUSTER_URL_VAR
            ))
        } else {
            nodes.iter().find_map(|url| {
                crate::redis::blocking::ping(url, std::time::Duration::from_secs(2))
                    .err()
                    .map(|e| format!("Redis Cluster node not reachable at {url}: {e}"))
            })
        };
        match why {
            None => Some(RedisFactory::cluster(nodes)),
            Some(why) if std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1") => {
                panic!("MCP_REQUIRE_SERVICES=1 but {why}")
            }
            Some(why) => {
                super::report_skip(&why);
                None
            }
        }
    }

    /// The URL of the server, or of every node of the cluster.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
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
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let url = self
            .nodes
            .get(n % self.nodes.len().max(1))
            .cloned()
            .ok_or_else(|| StoreError::backend("no Redis URL"))?;
        let store = crate::RedisStore::connect_with(
            crate::RedisOptions::new(url.clone())
                .prefix(prefix)
                .limits(env.limits.clone())
                .clock(env.clock()),
        )
        .await?;
        if self.cluster && !store.is_cluster() {
            return Err(StoreError::backend(format!(
                "{url} is not a Redis Cluster node"
            )));
        }
        Ok(store)
    }
}

#[cfg(feature = "redis")]
impl Drop for RedisFactory {
    fn drop(&mut self) {
        let created = std::mem::take(self.created.get_mut().unwrap_or_else(|e| e.into_inner()));
        for prefix in created {
            for node in &self.nodes {
                // Best effort: a server that went away keeps the keys (they carry expiries).
                // A blocking read is interrupted (EINTR) when a signal comes, e.g. the
                // SIGCHLD of a test's child process just killed: again, a few times
                // (deleting a prefix twice is harmless).
                for _ in 0..5 {
                    let deleted = crate::redis::blocking::delete_prefix(
                        node,
                        &prefix,
                        std::time::Duration::from_secs(5),
                    );
                    if deleted.is_ok() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            }
        }
    }
}

#[cfg(feature = "postgres")]
/// [`StoreFactory`] for [`PostgresStore`](crate::PostgresStore): each namespace is its own schema
/// ([`schema_for`](PostgresFactory::schema_for)), dropped and created fresh on the
/// namespace's first open; opening the namespace again connects another store (another
/// pool and listener: another node) on that schema. Dropping the factory drops the
/// schemas it created (best effort, on a thread of its own; never panics).
#[derive(Debug)]
pub struct PostgresFactory {
    url: String,
    created: Mutex<std::collections::BTreeSet<String>>,
}

#[cfg(feature = "postgres")]
impl PostgresFactory {
    /// The environment variable [`from_env`](Self::from_env) reads the URL from.
    pub const URL_ENV: &'static str = "MCP_TEST_POSTGRES_URL";
    /// The URL used when [`URL_ENV`](Self::URL_ENV) is not set.
    pub const DEFAULT_URL: &'static str = "postgres://postgres@127.0.0.1:5432/test";
    /// Set to `1`, makes [`from_env`](Self::from_env) panic instead of skipping.
    pub const REQUIRE_ENV: &'static str = "MCP_REQUIRE_SERVICES";

    /// A factory on the database at `url`.
    pub fn new(url: impl Into<String>) -> PostgresFactory {
        PostgresFactory {
            url: url.into(),
            created: Mutex::default(),
        }
    }

    /// A factory on the database named by `MCP_TEST_POSTGRES_URL` (default
    /// [`DEFAULT_URL`](Self::DEFAULT_URL)), or `None` when it cannot be reached (printing
    /// `skipped: PostgreSQL not reachable at <url>` to stderr). With
    /// `MCP_REQUIRE_SERVICES=1` an unreachable database panics instead. The reachability
    /// check runs once per process.
    pub fn from_env() -> Option<PostgresFactory> {
        static REACHABLE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
        let url = std::env::var(Self::URL_ENV).unwrap_or_else(|_| Self::DEFAULT_URL.to_owned());
        match REACHABLE.get_or_init(|| probe(&url)) {
            Ok(()) => Some(PostgresFactory::new(url)),
            Err(why) => {
                if std::env::var(Self::REQUIRE_ENV).is_ok_and(|v| v == "1") {
                    panic!(
                        "PostgreSQL not reachable at {url} ({why}), and {}=1 requires it",
                        Self::REQUIRE_ENV
                    );
                }
                super::report_skip(&format!("PostgreSQL not reachable at {url}"));
                None
            }
        }
    }

    /// The schema of `namespace`: `kit_` and the namespace lowercased, every character
    /// other than `[a-z0-9_]` made `_`, shortened with a hash past 63 bytes.
    pub fn schema_for(namespace: &str) -> String {
        let clean: String = namespace
            .chars()
            .map(|c| {
                let c = c.to_ascii_lowercase();
                if c.is_ascii_lowercase() || c.is_ascii_digit() {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let name = format!("kit_{clean}");
        if name.len() <= 63 {
            return name;
        }
        let head: String = name.chars().take(46).collect();
        format!("{head}_{:016x}", crate::postgres::fnv1a(namespace))
    }
}

#[cfg(feature = "postgres")]
/// Runs `f` on a fresh single-threaded runtime on a thread of its own: usable from sync
/// code, inside or outside a runtime.
fn on_own_runtime<T: Send + 'static>(
    f: impl FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>> + Send + 'static,
) -> Option<T> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        Some(rt.block_on(f()))
    })
    .join()
    .ok()
    .flatten()
}

#[cfg(feature = "postgres")]
/// A plain connection to `url` (its driver spawned), with a short connect timeout.
async fn plain(url: &str) -> Result<tokio_postgres::Client, String> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| format!("{e}"))?;
    config.connect_timeout(std::time::Duration::from_secs(5));
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

#[cfg(feature = "postgres")]
fn probe(url: &str) -> Result<(), String> {
    let url = url.to_owned();
    on_own_runtime(move || {
        Box::pin(async move {
            let client = plain(&url).await?;
            client
                .simple_query("SELECT 1")
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    })
    .unwrap_or_else(|| Err("probe thread failed".to_owned()))
}

#[cfg(feature = "postgres")]
#[async_trait]
impl StoreFactory for PostgresFactory {
    type Store = crate::PostgresStore;

    async fn open(&self, env: &Env) -> Result<crate::PostgresStore, StoreError> {
        let schema = PostgresFactory::schema_for(&env.namespace);
        let first = self
            .created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(schema.clone());
        if first {
            let client = plain(&self.url).await.map_err(StoreError::backend)?;
            client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .await
                .map_err(StoreError::backend)?;
        }
        crate::PostgresStore::connect_with(crate::PostgresOptions {
            schema,
            limits: env.limits.clone(),
            clock: env.clock(),
            pool_size: 8,
            ..crate::PostgresOptions::new(self.url.clone())
        })
        .await
    }
}

#[cfg(feature = "postgres")]
impl Drop for PostgresFactory {
    fn drop(&mut self) {
        let created = std::mem::take(self.created.get_mut().unwrap_or_else(|e| e.into_inner()));
        if created.is_empty() {
            return;
        }
        let url = self.url.clone();
        // Best effort: a schema left behind is only clutter in a test database.
        let _ = on_own_runtime(move || {
            Box::pin(async move {
                let Ok(client) = plain(&url).await else {
                    return;
                };
                for schema in created {
                    let _ = client
                        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                        .await;
                }
            })
        });
    }
}
