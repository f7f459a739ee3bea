//! [`SessionStore`] for [`PostgresStore`]: the `sessions` table (migration 3), shared by
//! every instance on the schema. Opens are serialized by a transaction-scoped advisory
//! lock, so the session limit holds across instances; a change locks its row.

use std::sync::Arc;

use async_trait::async_trait;

use super::listen;
use super::schema::{backend, fnv1a, pg};
use super::{Inner, PostgresStore};
use crate::error::StoreError;
use crate::record::Millis;
use crate::session::{
    ResourceUpdates, SessionChange, SessionRecord, SessionStore, too_many_sessions,
};

fn decode(json: &str, last_seen: Millis) -> Result<SessionRecord, StoreError> {
    let mut record: SessionRecord =
        serde_json::from_str(json).map_err(|e| backend(format!("corrupt session record: {e}")))?;
    record.last_seen = last_seen;
    Ok(record)
}

fn idle_ms(record: &SessionRecord) -> i64 {
    i64::try_from(record.idle_timeout_ms).unwrap_or(i64::MAX)
}

impl Inner {
    /// The advisory lock key that serializes session opens on this schema.
    fn sessions_lock(&self) -> i64 {
        i64::from_ne_bytes(fnv1a(&format!("mcp_tasks.sessions.{}", self.schema)).to_ne_bytes())
    }
}

#[async_trait]
impl SessionStore for PostgresStore {
    fn is_shared(&self) -> bool {
        true
    }

    async fn open_session(
        &self,
        mut new: SessionRecord,
        max_sessions: usize,
    ) -> Result<SessionRecord, StoreError> {
        let inner = Arc::clone(&self.inner);
        self.spawn(async move {
            let mut client = inner.pool.get().await.map_err(backend)?;
            let tx = client.transaction().await.map_err(pg)?;
            tx.execute(
                "SELECT pg_advisory_xact_lock($1)",
                &[&inner.sessions_lock()],
            )
            .await
            .map_err(pg)?;
            let now = inner.clock.now_ms();
            tx.execute("DELETE FROM sessions WHERE expires_at <= $1", &[&now])
                .await
                .map_err(pg)?;
            let open: i64 = tx
                .query_one("SELECT count(*) FROM sessions", &[])
                .await
                .map_err(pg)?
                .try_get(0)
                .map_err(pg)?;
            if usize::try_from(open).unwrap_or(usize::MAX) >= max_sessions {
                return Err(too_many_sessions(max_sessions));
            }
            new.created_at = now;
            new.last_seen = now;
            let json = serde_json::to_string(&new).map_err(backend)?;
            tx.execute(
                "INSERT INTO sessions (id, last_seen, idle_ms, expires_at, record)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&new.id, &now, &idle_ms(&new), &new.expires_at(), &json],
            )
            .await
            .map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            Ok(new)
        })
        .await
    }

    async fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let (inner, id) = (Arc::clone(&self.inner), id.to_owned());
        self.spawn(async move {
            let client = inner.pool.get().await.map_err(backend)?;
            let now = inner.clock.now_ms();
            let row = client
                .query_opt(
                    "SELECT record, last_seen FROM sessions WHERE id = $1 AND expires_at > $2",
                    &[&id, &now],
                )
                .await
                .map_err(pg)?;
            row.map(|r| decode(r.get(0), r.get(1))).transpose()
        })
        .await
    }

    async fn touch_session(&self, id: &str) -> Result<bool, StoreError> {
        let (inner, id) = (Arc::clone(&self.inner), id.to_owned());
        self.spawn(async move {
            let client = inner.pool.get().await.map_err(backend)?;
            let now = inner.clock.now_ms();
            let n = client
                .execute(
                    "UPDATE sessions SET last_seen = greatest(last_seen, $2),
                         expires_at = greatest(last_seen, $2) + idle_ms
                     WHERE id = $1 AND expires_at > $2",
                    &[&id, &now],
                )
                .await
                .map_err(pg)?;
            Ok(n > 0)
        })
        .await
    }

    async fn change_session(
        &self,
        id: &str,
        change: SessionChange,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let (inner, id) = (Arc::clone(&self.inner), id.to_owned());
        self.spawn(async move {
            let mut client = inner.pool.get().await.map_err(backend)?;
            let tx = client.transaction().await.map_err(pg)?;
            let now = inner.clock.now_ms();
            let Some(row) = tx
                .query_opt(
                    "SELECT record, last_seen FROM sessions
                     WHERE id = $1 AND expires_at > $2 FOR UPDATE",
                    &[&id, &now],
                )
                .await
                .map_err(pg)?
            else {
                return Ok(None);
            };
            let mut record = decode(row.get(0), row.get(1))?;
            change.apply(&mut record, now);
            let json = serde_json::to_string(&record).map_err(backend)?;
            tx.execute(
                "UPDATE sessions SET record = $2 WHERE id = $1",
                &[&id, &json],
            )
            .await
            .map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            Ok(Some(record))
        })
        .await
    }

    async fn end_session(&self, id: &str) -> Result<bool, StoreError> {
        let (inner, id) = (Arc::clone(&self.inner), id.to_owned());
        self.spawn(async move {
            let client = inner.pool.get().await.map_err(backend)?;
            let now = inner.clock.now_ms();
            let row = client
                .query_opt(
                    "DELETE FROM sessions WHERE id = $1 RETURNING expires_at > $2",
                    &[&id, &now],
                )
                .await
                .map_err(pg)?;
            Ok(row.is_some_and(|r| r.get::<_, bool>(0)))
        })
        .await
    }

    async fn session_count(&self) -> Result<usize, StoreError> {
        let inner = Arc::clone(&self.inner);
        self.spawn(async move {
            let client = inner.pool.get().await.map_err(backend)?;
            let now = inner.clock.now_ms();
            let n: i64 = client
                .query_one(
                    "SELECT count(*) FROM sessions WHERE expires_at > $1",
                    &[&now],
                )
                .await
                .map_err(pg)?
                .try_get(0)
                .map_err(pg)?;
            Ok(usize::try_from(n).unwrap_or(0))
        })
        .await
    }

    async fn announce_resource_updated(&self, uri: &str) -> Result<(), StoreError> {
        // This handle's own feeds first (its listener skips its own notifications).
        let _ = self.inner.resources.send(uri.to_owned());
        match listen::resource_payload(uri, &self.inner.me) {
            Some(payload) => self.inner.notifier.send(vec![payload]),
            None => tracing::warn!(
                uri,
                "resource URI too long for a PostgreSQL notification; announced on this handle only"
            ),
        }
        Ok(())
    }

    fn resource_updates(&self) -> ResourceUpdates {
        ResourceUpdates::new(self.inner.resources.subscribe())
    }
}
