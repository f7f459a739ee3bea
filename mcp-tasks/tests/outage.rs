//! The outage behaviour of the conformance kit on every backend: PostgreSQL and Redis
//! behind a TCP proxy that cuts every connection, SQLite on a file system that fills up.
//! The networked backends are skipped when their server does not answer (unless
//! `MCP_REQUIRE_SERVICES=1`); the SQLite one when this process may not mount a tmpfs
//! (unless `CI=true`).

use std::path::{Path, PathBuf};
use std::process::Command;

use async_trait::async_trait;
use mcp_tasks::conformance::{
    Outage, PostgresFactory, RedisFactory, SqliteFactory, TcpProxy,
    outage_errors_are_transient_and_lose_nothing,
};

fn url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outage() {
    // Checks that the server answers (or skips, or panics under MCP_REQUIRE_SERVICES).
    if PostgresFactory::from_env().is_none() {
        return;
    }
    let url = url(PostgresFactory::URL_ENV, PostgresFactory::DEFAULT_URL);
    let (proxy, proxied) = TcpProxy::in_front_of(&url).await.expect("proxy");
    let factory = PostgresFactory::new(proxied);
    outage_errors_are_transient_and_lose_nothing(&factory, &proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage() {
    if RedisFactory::from_env().is_none() {
        return;
    }
    let url = url(RedisFactory::URL_VAR, RedisFactory::DEFAULT_URL);
    let (proxy, proxied) = TcpProxy::in_front_of(&url).await.expect("proxy");
    let factory = RedisFactory::new(proxied);
    outage_errors_are_transient_and_lose_nothing(&factory, &proxy).await;
}

/// A small tmpfs mounted for one test, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(name: &str, size: &str) -> Option<Tmpfs> {
        let dir = std::env::temp_dir().join(format!("mcp-tasks-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if mounted {
            Some(Tmpfs(dir))
        } else {
            let _ = std::fs::remove_dir(&dir);
            None
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: a test that panicked may still hold files open.
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A full disk: a filler file takes every free byte; the outage ends when it is removed.
struct DiskFull {
    filler: PathBuf,
}

impl DiskFull {
    fn on(dir: &Path) -> DiskFull {
        DiskFull {
            filler: dir.join("filler"),
        }
    }
}

#[async_trait]
impl Outage for DiskFull {
    async fn begin(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(&self.filler).expect("filler");
        let block = vec![0u8; 4096];
        // Writes until the file system refuses (bounded by its size).
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }

    async fn end(&self) {
        std::fs::remove_file(&self.filler).expect("free the space");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_disk_full() {
    let Some(fs) = Tmpfs::mount("full", "4m") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but a tmpfs cannot be mounted for the SQLite disk-full test"
        );
        mcp_tasks::conformance::report_skip(
            "SQLite disk-full outage test: cannot mount a tmpfs (needs root)",
        );
        return;
    };
    let factory = SqliteFactory::new(fs.0.join("kit"));
    outage_errors_are_transient_and_lose_nothing(&factory, &DiskFull::on(&fs.0)).await;
}

/// A database on a file system that turned read-only (remounted after an error, say):
/// opening it fails with an error that says read-only, nothing committed is lost, and
/// once the file system is writable again the store opens and writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_read_only_file_system() {
    use mcp_tasks::{Limits, NewTask, Origin, Owner, SqliteStore, TaskStore, WireRevision};
    let Some(fs) = Tmpfs::mount("ro", "4m") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but a tmpfs cannot be mounted for the SQLite read-only test"
        );
        mcp_tasks::conformance::report_skip(
            "SQLite read-only file system test: cannot mount a tmpfs (needs root)",
        );
        return;
    };
    let path = fs.0.join("ro.sqlite3");
    let owner = Owner::new("alice");
    let task = |owner: &Owner| NewTask {
        trace_context: None,
        owner: owner.clone(),
        ttl_ms: Some(60_000),
        poll_interval_ms: None,
        origin: Origin {
            method: "tools/call".into(),
            tool: None,
            revision: WireRevision::V2026_07_28,
        },
        status_message: None,
        job: None,
        idempotency: None,
    };
    let kept = {
        let store = SqliteStore::open(&path, Limits::default()).expect("open");
        store.create(task(&owner)).await.expect("create")
    };
    let remount = |mode: &str| {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(&fs.0)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remount {mode}");
    };
    remount("ro");
    let refused = SqliteStore::open(&path, Limits::default());
    remount("rw");
    let e = refused.expect_err("opening on a read-only file system");
    assert!(e.to_string().contains("read-only"), "{e}");
    assert!(e.to_string().contains("ro.sqlite3"), "names the file: {e}");

    let store = SqliteStore::open(&path, Limits::default()).expect("open again");
    assert_eq!(store.get(&owner, &kept.id).await.expect("kept").id, kept.id);
    store.create(task(&owner)).await.expect("writable again");
}
