//! What the tests leave behind in the shared services: the PostgreSQL schemas and the
//! Redis deployments (the `{...}` hash tag every key of a deployment starts with) that
//! exist after `cargo test` and did not before. Every test removes what it made, also
//! when it fails; this phase checks it, names what was left, and removes it so that the
//! next run starts clean.
//!
//! Taken before and after the tests, so that what a developer keeps in the same
//! database (a demo's `mcp_tasks` schema, a benchmark's keys) is never counted nor
//! touched. A service that does not answer is not looked at (the services check says
//! so already).

use std::collections::BTreeSet;
use std::time::Duration;

use crate::services::SERVICES;

/// How long one call to a service may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// What the services held at one moment.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// PostgreSQL schemas (the system's own left out).
    schemas: Option<BTreeSet<String>>,
    /// Redis deployments: the hash tag of keys that have one (`{kit:name}`).
    deployments: Option<BTreeSet<String>>,
}

/// What the services hold now.
pub fn snapshot() -> Snapshot {
    Snapshot {
        schemas: schemas().ok(),
        deployments: deployments().ok(),
    }
}

/// What is new in `after` since `before`, removed; `Ok` with a note when nothing was
/// left, `Err` naming what was (it is gone now all the same).
pub fn check(before: &Snapshot, after: &Snapshot) -> Result<String, String> {
    let new_schemas = new_in(&before.schemas, &after.schemas);
    let new_deployments = new_in(&before.deployments, &after.deployments);
    if new_schemas.is_empty() && new_deployments.is_empty() {
        let looked: Vec<&str> = [
            after.schemas.as_ref().map(|_| "PostgreSQL"),
            after.deployments.as_ref().map(|_| "Redis"),
        ]
        .into_iter()
        .flatten()
        .collect();
        return Ok(if looked.is_empty() {
            "no service to look at".to_owned()
        } else {
            format!("nothing left in {}", looked.join(" or "))
        });
    }
    let mut left = Vec::new();
    for schema in &new_schemas {
        let removed =
            drop_schema(schema).map_or_else(|e| format!(" (not removed: {e})"), |_| String::new());
        left.push(format!("schema {schema}{removed}"));
    }
    for tag in &new_deployments {
        match delete_deployment(tag) {
            Ok(n) => left.push(format!("{n} Redis keys of {tag}")),
            Err(e) => left.push(format!("Redis keys of {tag} (not removed: {e})")),
        }
    }
    Err(format!("the tests left {}", left.join(", ")))
}

fn new_in(before: &Option<BTreeSet<String>>, after: &Option<BTreeSet<String>>) -> Vec<String> {
    match (before, after) {
        (Some(before), Some(after)) => after.difference(before).cloned().collect(),
        _ => Vec::new(),
    }
}

fn url(n: usize) -> String {
    std::env::var(SERVICES[n].env).unwrap_or_else(|_| SERVICES[n].default_url.to_owned())
}

/// Runs `f` with a PostgreSQL client on a runtime of its own.
fn with_postgres<T>(
    f: impl AsyncFnOnce(&tokio_postgres::Client) -> Result<T, tokio_postgres::Error>,
) -> Result<T, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let url = url(0);
        let connect = tokio_postgres::connect(&url, tokio_postgres::NoTls);
        let (client, connection) = tokio::time::timeout(TIMEOUT, connect)
            .await
            .map_err(|_| "PostgreSQL did not answer".to_owned())?
            .map_err(|e| e.to_string())?;
        let driver = tokio::spawn(connection);
        let outcome = tokio::time::timeout(TIMEOUT, f(&client))
            .await
            .map_err(|_| "PostgreSQL did not answer in time".to_owned())?
            .map_err(|e| e.to_string());
        drop(client);
        driver.abort();
        outcome
    })
}

fn schemas() -> Result<BTreeSet<String>, String> {
    with_postgres(async |client| {
        let rows = client
            .query(
                "SELECT nspname FROM pg_namespace
                  WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'",
                &[],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
    })
}

fn drop_schema(schema: &str) -> Result<(), String> {
    let statement = format!(
        "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
        schema.replace('"', "\"\"")
    );
    with_postgres(async move |client| client.batch_execute(&statement).await)
}

fn redis() -> Result<redis::Connection, String> {
    let client = redis::Client::open(url(1)).map_err(|e| e.to_string())?;
    let conn = client
        .get_connection_with_timeout(TIMEOUT)
        .map_err(|e| e.to_string())?;
    conn.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    Ok(conn)
}

/// Every key's hash tag, `{...}` (keys without one are not a deployment's).
fn deployments() -> Result<BTreeSet<String>, String> {
    let mut conn = redis()?;
    let mut tags = BTreeSet::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("{*}*")
            .arg("COUNT")
            .arg(1000)
            .query(&mut conn)
            .map_err(|e| e.to_string())?;
        tags.extend(keys.iter().filter_map(|k| tag_of(k)));
        if next == 0 {
            return Ok(tags);
        }
        cursor = next;
    }
}

fn tag_of(key: &str) -> Option<String> {
    let end = key.find('}')?;
    key.starts_with('{').then(|| key[..=end].to_owned())
}

/// Deletes the keys that start with `tag`; how many.
fn delete_deployment(tag: &str) -> Result<usize, String> {
    let mut conn = redis()?;
    // SCAN patterns treat `[`, `*`, `?` and `\` specially.
    let escaped: String = tag
        .chars()
        .flat_map(|c| match c {
            '[' | ']' | '*' | '?' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    let mut cursor: u64 = 0;
    let mut deleted = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{escaped}*"))
            .arg("COUNT")
            .arg(1000)
            .query(&mut conn)
            .map_err(|e| e.to_string())?;
        if !keys.is_empty() {
            let n: usize = redis::cmd("UNLINK")
                .arg(&keys)
                .query(&mut conn)
                .map_err(|e| e.to_string())?;
            deleted += n;
        }
        if next == 0 {
            return Ok(deleted);
        }
        cursor = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keys_deployment_is_its_hash_tag() {
        assert_eq!(
            tag_of("{kit:scale_3_0d69f712}:t:80f8").as_deref(),
            Some("{kit:scale_3_0d69f712}")
        );
        assert_eq!(tag_of("plain:key"), None);
        assert_eq!(tag_of("x{a}"), None);
    }

    #[test]
    fn only_what_is_new_counts() {
        let set = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>());
        assert_eq!(new_in(&set(&["a", "b"]), &set(&["a", "b", "c"])), vec!["c"]);
        assert!(new_in(&set(&["a"]), &set(&[])).is_empty());
        assert!(
            new_in(&None, &set(&["a"])).is_empty(),
            "not looked at before"
        );
        let same = Snapshot {
            schemas: set(&["public", "mcp_tasks"]),
            deployments: set(&["{mcp-tasks}"]),
        };
        assert!(check(&same, &same).is_ok());
        let none = Snapshot::default();
        assert_eq!(check(&none, &none), Ok("no service to look at".to_owned()));
    }
}
