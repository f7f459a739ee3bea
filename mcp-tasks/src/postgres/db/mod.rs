//! The SQL of each operation, on a pooled connection or inside the caller's transaction.
//! Every connection's `search_path` is the store's schema, so names are unqualified.
//!
//! By concept: [`writes`], the batched creates and changes (`create_tasks_v10`,
//! `save_tasks_v10`) and the count shards they take units from; [`reads`], the batched
//! reads, listings, the claim's pick, the counts and the sweep; [`task_log`], the log
//! entries a write sends (as the arrays the write functions take), a tool's appends and
//! the reads of a log. What they share is here.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::schema::pg;
use crate::error::StoreError;

mod reads;
mod task_log;
mod writes;

pub(crate) use reads::{ReadKey, list, live_counts, load_batch, next_queued, sweep, task_count};
pub(crate) use task_log::{Appended, LogRows, append_log, read_log};
pub(crate) use writes::{
    Created, KeyClaim, NewRow, SavedRow, claim_key, create_batch, make_shards, save_batch,
};

/// The `live_counts` scope of the count of all owners: a byte no UTF-8 owner holds.
const TOTAL_SCOPE: &[u8] = b"\xff";

async fn query<C: GenericClient>(
    c: &C,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, StoreError> {
    let st = c.prepare_cached(sql).await.map_err(pg)?;
    c.query(&st, params).await.map_err(pg)
}

async fn execute<C: GenericClient>(
    c: &C,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, StoreError> {
    let st = c.prepare_cached(sql).await.map_err(pg)?;
    c.execute(&st, params).await.map_err(pg)
}

/// A limit as the SQL functions take it (`usize::MAX` and beyond: `i64::MAX`).
fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn revision(r: u64) -> i64 {
    i64::try_from(r).unwrap_or(i64::MAX)
}
