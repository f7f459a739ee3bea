//! What the bench creates in the shared stores, removed when dropped (also when a row
//! fails): a PostgreSQL schema (`psql`, `DROP SCHEMA ... CASCADE`) and the Redis keys
//! under a prefix (`redis-cli --scan`, then `DEL`); and whether a command-line tool the
//! bench needs is installed.

use std::process::{Command, Stdio};

/// Whether `tool` runs (`tool --version`); `Err` says why not, for the skip line.
pub(super) fn installed(tool: &str) -> Result<(), String> {
    match Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("`{tool}` not found ({e})")),
    }
}

/// Runs `sql` on `url` with `psql`, stopping at the first error.
pub(super) fn psql(url: &str, sql: &str) -> Result<(), String> {
    let output = Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
        .output()
        .map_err(|e| format!("cannot run psql: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "psql failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// A PostgreSQL schema of the bench, dropped with everything in it when this is dropped.
pub(super) struct PgSchema {
    url: String,
    pub name: String,
}

impl PgSchema {
    /// Claims schema `name` (`[a-z0-9_]`) on `url`; whoever creates it (the bench or a
    /// server given it as its namespace), it is dropped with this. One left by an earlier
    /// run that was killed goes first.
    pub fn new(url: &str, name: String) -> Result<PgSchema, String> {
        let schema = PgSchema {
            url: url.to_owned(),
            name,
        };
        psql(url, &schema.drop_sql())?;
        Ok(schema)
    }

    fn drop_sql(&self) -> String {
        format!(
            "SET client_min_messages = warning; DROP SCHEMA IF EXISTS {} CASCADE",
            self.name
        )
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Err(e) = psql(&self.url, &self.drop_sql()) {
            eprintln!(
                "bench: could not drop the PostgreSQL schema {}: {e}",
                self.name
            );
        }
    }
}

/// The Redis keys of the bench that match `pattern` (a `SCAN` glob), deleted when this is
/// dropped.
pub(super) struct RedisKeys {
    url: String,
    pattern: String,
}

impl RedisKeys {
    /// Claims the keys matching `pattern` on `url`; any left by an earlier run that was
    /// killed go first.
    pub fn new(url: &str, pattern: String) -> Result<RedisKeys, String> {
        let keys = RedisKeys {
            url: url.to_owned(),
            pattern,
        };
        keys.delete()?;
        Ok(keys)
    }

    /// Deletes every key matching the pattern (500 to a `DEL`); how many.
    fn delete(&self) -> Result<usize, String> {
        let scan = Command::new("redis-cli")
            .args(["-u", &self.url, "--scan", "--pattern", &self.pattern])
            .output()
            .map_err(|e| format!("cannot run redis-cli: {e}"))?;
        if !scan.status.success() {
            return Err(format!(
                "redis-cli --scan failed: {}",
                String::from_utf8_lossy(&scan.stderr).trim()
            ));
        }
        let text = String::from_utf8_lossy(&scan.stdout);
        let keys: Vec<&str> = text.lines().filter(|k| !k.is_empty()).collect();
        for batch in keys.chunks(500) {
            let del = Command::new("redis-cli")
                .args(["-u", &self.url, "DEL"])
                .args(batch)
                .stdout(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run redis-cli: {e}"))?;
            if !del.status.success() {
                return Err(format!(
                    "redis-cli DEL failed: {}",
                    String::from_utf8_lossy(&del.stderr).trim()
                ));
            }
        }
        Ok(keys.len())
    }
}

impl Drop for RedisKeys {
    fn drop(&mut self) {
        if let Err(e) = self.delete() {
            eprintln!(
                "bench: could not delete the Redis keys {}: {e}",
                self.pattern
            );
        }
    }
}
