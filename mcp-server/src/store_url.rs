//! Opening a task store from a URL, as the demo's `--store` and the benchmark server take
//! it: `memory`, `sqlite:PATH`, `postgres://…` / `postgresql://…`, `redis://…` /
//! `rediss://…`. A backend whose feature this crate was built without is refused with an
//! error naming the feature.

use std::sync::Arc;

use mcp_tasks::{Limits, MemoryStore, StoreError, TaskStore};

/// Why [`open`] could not give a store.
#[derive(Debug, thiserror::Error)]
pub enum OpenStoreError {
    /// Not one of the URL forms above.
    #[error("unknown store {0:?}: expected memory, sqlite:PATH, postgres://... or redis://...")]
    Unknown(String),
    /// A namespace was given for a store that has none (memory, SQLite).
    #[error("a namespace applies to shared stores (postgres, redis), not to {0}")]
    NamespaceNotShared(String),
    /// The backend is known but this build leaves it out.
    #[error("the {backend} store is not built in: enable the mcp-server feature `{feature}`")]
    NotBuilt {
        /// The backend named by the URL.
        backend: &'static str,
        /// The mcp-server feature that builds it in.
        feature: &'static str,
    },
    /// The backend refused: unreachable, bad credentials, a file that cannot be opened.
    #[error("cannot open the {backend} store: {source}")]
    Backend {
        /// The backend named by the URL.
        backend: &'static str,
        /// What the backend said.
        #[source]
        source: StoreError,
    },
}

/// Opens the store `url` names, with `limits`. `namespace` selects the PostgreSQL schema
/// or the Redis key prefix (instances share tasks exactly when URL and namespace match).
///
/// SQLite serves one node, so opening it recovers every task the file holds unfinished
/// as a lost run (`SqliteStore::recover_unfinished`): the process that ran them is gone;
/// at-least-once tasks run again, the others fail ("worker lost",
/// [`crate::worker_lost_error`]).
pub async fn open(
    url: &str,
    namespace: Option<&str>,
    limits: Limits,
) -> Result<Arc<dyn TaskStore>, OpenStoreError> {
    let (scheme, rest) = url.split_once(':').unwrap_or((url, ""));
    if namespace.is_some() && matches!(scheme, "memory" | "sqlite") {
        return Err(OpenStoreError::NamespaceNotShared(scheme.to_owned()));
    }
    match scheme {
        "memory" if rest.is_empty() => Ok(Arc::new(MemoryStore::new(limits))),
        #[cfg(feature = "sqlite")]
        "sqlite" if !rest.is_empty() => {
            let backend = |source| OpenStoreError::Backend {
                backend: "SQLite",
                source,
            };
            let store = mcp_tasks::SqliteStore::open(rest, limits).map_err(backend)?;
            let recovered = store
                .recover_unfinished(crate::worker_lost_error())
                .await
                .map_err(backend)?;
            if recovered != mcp_tasks::Recovered::default() {
                tracing::warn!(
                    failed = recovered.failed,
                    requeued = recovered.requeued,
                    cancelled = recovered.cancelled,
                    "recovered the tasks a previous server left unfinished (worker lost): \
                     at-least-once ones run again"
                );
            }
            Ok(Arc::new(store))
        }
        #[cfg(not(feature = "sqlite"))]
        "sqlite" => Err(OpenStoreError::NotBuilt {
            backend: "SQLite",
            feature: "sqlite",
        }),
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => {
            let mut options = mcp_tasks::PostgresOptions::new(url);
            options.limits = limits;
            if let Some(schema) = namespace {
                options.schema = schema.to_owned();
            }
            let store = mcp_tasks::PostgresStore::connect_with(options)
                .await
                .map_err(|source| OpenStoreError::Backend {
                    backend: "PostgreSQL",
                    source,
                })?;
            Ok(Arc::new(store))
        }
        #[cfg(not(feature = "postgres"))]
        "postgres" | "postgresql" => Err(OpenStoreError::NotBuilt {
            backend: "PostgreSQL",
            feature: "postgres",
        }),
        #[cfg(feature = "redis")]
        "redis" | "rediss" => {
            let mut options = mcp_tasks::RedisOptions::new(url).limits(limits);
            if let Some(prefix) = namespace {
                options = options.prefix(prefix);
            }
            let store = mcp_tasks::RedisStore::connect_with(options)
                .await
                .map_err(|source| OpenStoreError::Backend {
                    backend: "Redis",
                    source,
                })?;
            Ok(Arc::new(store))
        }
        #[cfg(not(feature = "redis"))]
        "redis" | "rediss" => Err(OpenStoreError::NotBuilt {
            backend: "Redis",
            feature: "redis",
        }),
        _ => Err(OpenStoreError::Unknown(url.to_owned())),
    }
}

/// The store URL as shown in logs: a password in it is replaced by `***`.
pub fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    match authority
        .rsplit_once('@')
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
    {
        Some((user, password)) if !password.is_empty() => {
            let hidden = rest.replacen(&format!("{user}:{password}@"), &format!("{user}:***@"), 1);
            format!("{scheme}://{hidden}")
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(
            shown("postgres://app:secret@db:5432/tasks"),
            "postgres://app:***@db:5432/tasks"
        );
        assert_eq!(shown("redis://127.0.0.1:6379/"), "redis://127.0.0.1:6379/");
        assert_eq!(shown("memory"), "memory");
    }

    #[tokio::test]
    async fn bad_urls_are_typed_errors() {
        let limits = Limits::default;
        assert!(matches!(
            open("mysql://x", None, limits()).await,
            Err(OpenStoreError::Unknown(_))
        ));
        assert!(matches!(
            open("memory", Some("ns"), limits()).await,
            Err(OpenStoreError::NamespaceNotShared(_))
        ));
        assert!(open("memory", None, limits()).await.is_ok());
    }
}
