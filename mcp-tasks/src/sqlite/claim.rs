//! A database file claimed by one process: an exclusive lock on `{file}.lock` beside it,
//! which names its holder. The operating system releases it when the process exits,
//! however it exits (a crash, `SIGKILL`), so a restart after a crash claims the file again.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use crate::error::StoreError;

/// The lock a process holds on one database file; every handle of that file in this
/// process shares it (a second lock on the same file from the same process would conflict
/// with the first).
#[derive(Debug)]
pub(crate) struct Claim {
    /// Holding the file open holds the lock.
    _file: File,
}

type Claims = Mutex<HashMap<PathBuf, Weak<Claim>>>;

/// Claims held by this process, by the database file's canonical path.
static CLAIMS: LazyLock<Claims> = LazyLock::new(Claims::default);

/// The lock file of the database at `db`.
pub(crate) fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Claims the database file at `db` for this process, or says which process holds it.
pub(crate) fn claim(db: &Path) -> Result<Arc<Claim>, StoreError> {
    let key = std::fs::canonicalize(db).unwrap_or_else(|_| db.to_path_buf());
    let mut claims = super::lock(&CLAIMS);
    claims.retain(|_, claim| claim.strong_count() > 0);
    if let Some(claim) = claims.get(&key).and_then(Weak::upgrade) {
        return Ok(claim);
    }
    let path = lock_path(&key);
    let shown = path.display();
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| {
            StoreError::backend(format!("SQLite: cannot open the lock file {shown}: {e}"))
        })?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let holder = if holder.is_empty() {
                "another process".to_owned()
            } else {
                holder.to_owned()
            };
            return Err(StoreError::backend(format!(
                "SQLite: {} is in use by {holder} (it holds {shown}). A second server on one \
                 SQLite file would fail the first one's running tasks at start; stop that \
                 process, or give this one another file. Several servers on one store need \
                 PostgreSQL or Redis.",
                key.display()
            )));
        }
        Err(TryLockError::Error(e)) => {
            return Err(StoreError::backend(format!(
                "SQLite: cannot lock {shown} (the file system may not support locks): {e}"
            )));
        }
    }
    // Ours now: say who holds it, for the next process that tries.
    let holder = format!(
        "process {} (`{}`)",
        std::process::id(),
        std::env::args().collect::<Vec<_>>().join(" "),
    );
    let written = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(holder.as_bytes()))
        .and_then(|()| file.flush());
    if let Err(e) = written {
        tracing::warn!(lock = %shown, error = %e, "cannot record the holder in the lock file");
    }
    let claim = Arc::new(Claim { _file: file });
    claims.insert(key, Arc::downgrade(&claim));
    Ok(claim)
}
