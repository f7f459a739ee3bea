//! Opening a task store from a URL, as the demo's `--store` and the benchmark server take
//! it: `memory`, `sqlite:PATH`, `postgres://…` / `postgresql://…`, `redis://…` /
//! `rediss://…`. A backend whose feature this crate was built without is refused with an
//! error naming the feature.

#[cfg(feature = "sqlite")]
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use mcp_tasks::{Clock, Limits, MemoryStore, StoreError, SystemClock, TaskStore};

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
    #[error("the {backend} store is not built in: enable the mcp-tasks-server feature `{feature}`")]
    NotBuilt {
        /// The backend named by the URL.
        backend: &'static str,
        /// The mcp-tasks-server feature that builds it in.
        feature: &'static str,
    },
    /// The SQLite path names a directory, not a file.
    #[error("the SQLite path {} is a directory; give a file path (e.g. sqlite:{}/mcp-tasks.db)", .0.display(), .0.display())]
    SqliteIsDirectory(PathBuf),
    /// The SQLite file does not exist and cannot be created there (no such folder, no
    /// write permission, a file system that takes no files such as `/proc`).
    #[error("cannot create the SQLite file {}: {source}", path.display())]
    SqliteCannotCreate {
        /// The file asked for.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
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
    open_with_clock(url, namespace, limits, Arc::new(SystemClock)).await
}

/// [`open`], the store reading time (leases, TTLs, sweeps) from `clock` instead of the
/// system's clock: see [`OffsetClock`].
pub async fn open_with_clock(
    url: &str,
    namespace: Option<&str>,
    limits: Limits,
    clock: Arc<dyn Clock>,
) -> Result<Arc<dyn TaskStore>, OpenStoreError> {
    let (scheme, rest) = url.split_once(':').unwrap_or((url, ""));
    if namespace.is_some() && matches!(scheme, "memory" | "sqlite") {
        return Err(OpenStoreError::NamespaceNotShared(scheme.to_owned()));
    }
    match scheme {
        "memory" if rest.is_empty() => Ok(Arc::new(MemoryStore::with_clock(limits, clock))),
        #[cfg(feature = "sqlite")]
        "sqlite" if !rest.is_empty() => {
            let backend = |source| OpenStoreError::Backend {
                backend: "SQLite",
                source,
            };
            check_sqlite_path(Path::new(rest))?;
            let store =
                mcp_tasks::SqliteStore::open_with_clock(rest, limits, clock).map_err(backend)?;
            let recovered = store
                .recover_unfinished(crate::runtime::worker_lost_error())
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
            options.clock = clock;
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
            let mut options = mcp_tasks::RedisOptions::new(url)
                .limits(limits)
                .clock(clock);
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

/// Refuses a SQLite path that cannot be the database file, saying why: SQLite itself
/// says only "unable to open database file", and a folder that takes no files (`/proc`)
/// looks to it like a missing one. A file that does not exist yet is created and removed
/// again, so the operating system's own reason is the one given.
#[cfg(feature = "sqlite")]
fn check_sqlite_path(path: &Path) -> Result<(), OpenStoreError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(OpenStoreError::SqliteIsDirectory(path.to_path_buf())),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
            {
                Ok(_) => {
                    let _ = std::fs::remove_file(path);
                    Ok(())
                }
                // Made meanwhile by someone else: SQLite opens it.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                // A missing or read-only folder: the store says so itself, naming the
                // folder and the companion files it must also write there.
                Err(e) if folder_refuses(path, &e) => Ok(()),
                Err(source) => Err(OpenStoreError::SqliteCannotCreate {
                    path: path.to_path_buf(),
                    source,
                }),
            }
        }
        // Anything else (a folder on the way we may not search) is SQLite's to say.
        Err(_) => Ok(()),
    }
}

/// Whether creating `path` failed because of its folder as such (it does not exist, or
/// refuses writes), rather than because of the file (a folder such as `/proc` exists but
/// takes no new files, and says "No such file or directory").
#[cfg(feature = "sqlite")]
fn folder_refuses(path: &Path, e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    let folder = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match e.kind() {
        ErrorKind::NotFound => !folder.is_dir(),
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => true,
        _ => false,
    }
}

/// The system's clock moved by a fixed offset: a store opened with it
/// ([`open_with_clock`]) stamps its leases, TTLs and events as a process whose clock is
/// that far off would. A fault-injection aid (the demo's `--clock-offset-ms`, the
/// clock-skew durability tests); the database's own clock is not affected.
#[derive(Debug, Clone, Copy)]
pub struct OffsetClock {
    /// Milliseconds added to the system's time (negative: behind).
    pub offset_ms: i64,
}

impl Clock for OffsetClock {
    fn now_ms(&self) -> mcp_tasks::Millis {
        SystemClock.now_ms().saturating_add(self.offset_ms)
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

    #[test]
    fn an_offset_clock_reads_the_system_clock_moved() {
        for offset_ms in [2000, -2000] {
            let before = SystemClock.now_ms();
            let read = OffsetClock { offset_ms }.now_ms();
            let after = SystemClock.now_ms();
            assert!(
                before + offset_ms <= read && read <= after + offset_ms,
                "{before} {read} {after}"
            );
        }
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

    /// A folder of its own under the system's temporary folder, removed on drop.
    #[cfg(feature = "sqlite")]
    struct Scratch(PathBuf);

    #[cfg(feature = "sqlite")]
    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "mcp-server-store-url-{name}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("a scratch folder");
            Scratch(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    #[cfg(feature = "sqlite")]
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_sqlite_path_that_is_a_directory_says_so() {
        let dir = Scratch::new("directory");
        let url = format!("sqlite:{}", dir.path().display());
        let Err(e) = open(&url, None, Limits::default()).await else {
            panic!("a directory opened as a SQLite store");
        };
        assert!(matches!(e, OpenStoreError::SqliteIsDirectory(_)), "{e:?}");
        let said = e.to_string();
        assert!(
            said.contains(&format!(
                "the SQLite path {} is a directory",
                dir.path().display()
            )),
            "{said}"
        );
        assert!(said.contains("give a file path"), "{said}");
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_sqlite_file_that_cannot_be_created_says_why() {
        // A folder that exists but takes no new files (Linux's /proc).
        if !Path::new("/proc/self").is_dir() {
            return;
        }
        let Err(e) = open("sqlite:/proc/x.db", None, Limits::default()).await else {
            panic!("/proc/x.db opened");
        };
        assert!(
            matches!(e, OpenStoreError::SqliteCannotCreate { .. }),
            "{e:?}"
        );
        let said = e.to_string();
        assert!(
            said.starts_with("cannot create the SQLite file /proc/x.db: "),
            "{said}"
        );
        assert!(
            said.contains("os error"),
            "the OS's reason is given: {said}"
        );
        assert!(!said.contains("does not exist"), "{said}");
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_missing_sqlite_folder_is_named() {
        let dir = Scratch::new("missing-folder");
        let folder = dir.path().join("no-such-folder");
        let url = format!("sqlite:{}", folder.join("x.db").display());
        let Err(e) = open(&url, None, Limits::default()).await else {
            panic!("{url} opened");
        };
        let said = e.to_string();
        assert!(
            said.contains(&format!("the folder {} does not exist", folder.display())),
            "{said}"
        );
        assert!(!folder.exists(), "nothing is left behind");
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_new_sqlite_file_is_created() {
        let dir = Scratch::new("created");
        let path = dir.path().join("tasks.db");
        let url = format!("sqlite:{}", path.display());
        assert!(open(&url, None, Limits::default()).await.is_ok());
        assert!(path.is_file());
    }
}
