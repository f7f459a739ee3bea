//! [`PostgresFactory`]: the kit against [`PostgresStore`](crate::PostgresStore), one
//! schema per namespace.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio_postgres::NoTls;

use super::{Env, StoreFactory};
use crate::{PostgresOptions, PostgresStore, StoreError};

/// [`StoreFactory`] for [`PostgresStore`]: each namespace is its own schema
/// ([`schema_for`](PostgresFactory::schema_for)), dropped and created fresh on the
/// namespace's first open; opening the namespace again connects another store (another
/// pool and listener: another node) on that schema. Dropping the factory drops the
/// schemas it created (best effort, on a thread of its own; never panics).
#[derive(Debug)]
pub struct PostgresFactory {
    url: String,
    created: Mutex<BTreeSet<String>>,
}

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
        static REACHABLE: OnceLock<Result<(), String>> = OnceLock::new();
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
                eprintln!("skipped: PostgreSQL not reachable at {url}");
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

/// A plain connection to `url` (its driver spawned), with a short connect timeout.
async fn plain(url: &str) -> Result<tokio_postgres::Client, String> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| format!("{e}"))?;
    config.connect_timeout(Duration::from_secs(5));
    let (client, connection) = config.connect(NoTls).await.map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

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

#[async_trait]
impl StoreFactory for PostgresFactory {
    type Store = PostgresStore;

    async fn open(&self, env: &Env) -> Result<PostgresStore, StoreError> {
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
        PostgresStore::connect_with(PostgresOptions {
            schema,
            limits: env.limits.clone(),
            clock: env.clock(),
            pool_size: 8,
            ..PostgresOptions::new(self.url.clone())
        })
        .await
    }
}

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
