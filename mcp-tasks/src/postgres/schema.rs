//! Names derived from the schema, the embedded migrations, and applying them on connect.

use tokio_postgres::Client;

use crate::error::{BackendError, IntoStoreError, StoreError};

/// PostgreSQL's identifier length limit (`NAMEDATALEN - 1`).
const MAX_IDENT: usize = 63;

/// One migration: applied in order, each once, inside the connect transaction.
struct Migration {
    version: i32,
    sql: &'static str,
}

/// Version 1. `record` is the whole [`TaskRecord`](crate::TaskRecord) as JSON text (not
/// `jsonb`: text keeps every byte, key order and `\u0000` escapes exactly); the other
/// columns copy its fields for the indexes. `live` is true while the task is unfinished;
/// `lease_expires_at` is set only for unfinished tasks holding a lease. `live_counts` and
/// `counters` keep the unfinished tasks per owner and in total, updated in the same
/// transactions as `tasks`. Ids use the "C" collation: bytewise order, as the list cursor
/// and the other backends have it. Owners are their UTF-8 bytes (`bytea`), because a
/// principal may contain NUL, which PostgreSQL text refuses.
const V1: &str = r#"
CREATE TABLE tasks (
    id TEXT COLLATE "C" PRIMARY KEY,
    owner BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    live BOOLEAN NOT NULL,
    lease_expires_at BIGINT,
    record TEXT NOT NULL
);
CREATE INDEX tasks_by_owner ON tasks (owner, created_at, id);
CREATE INDEX tasks_by_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX tasks_by_lease ON tasks (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
CREATE TABLE live_counts (
    owner BYTEA PRIMARY KEY,
    live BIGINT NOT NULL
);
CREATE TABLE counters (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO counters (name, value) VALUES ('live_total', 0);
"#;

/// Version 2: `queued_tool` is the tool of a task waiting for a worker
/// ([`TaskRecord::queued_tool`](crate::TaskRecord::queued_tool)), NULL otherwise; claims
/// read the waiting tasks in creation order through `tasks_queued`. Rows of version 1
/// hold no job, so NULL is right for all of them.
const V2: &str = r#"
ALTER TABLE tasks ADD COLUMN queued_tool TEXT;
CREATE INDEX tasks_queued ON tasks (created_at, id) WHERE queued_tool IS NOT NULL;
"#;

/// Version 3: MCP 2025-11-25 session records ([`SessionRecord`](crate::SessionRecord)
/// as JSON text); `last_seen` and `expires_at` (`last_seen + idle_ms`) kept apart so a
/// touch is one `UPDATE` that does not rewrite the record.
const V3: &str = r#"
CREATE TABLE sessions (
    id TEXT COLLATE "C" PRIMARY KEY,
    last_seen BIGINT NOT NULL,
    idle_ms BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
"#;

/// How many rows each live count is spread over (see [`V4`], whose SQL spells it out).
pub(crate) const SHARDS: i32 = 16;

/// Version 4: live counts spread over [`SHARDS`] rows each, and one statement per write.
///
/// Before, every create and every terminal write of the whole deployment updated the one
/// `counters` row (and its owner's `live_counts` row) and held its lock until its commit
/// was flushed: one WAL flush at a time, about 560 task lifecycles a second on a 2-core
/// machine. Now an owner's count, and the total (owner `\xff`, which no UTF-8 owner can
/// be), is kept in up to 16 rows, shard `i` holding at most `max / 16` (plus one for the
/// first `max % 16` shards): a create takes one unit in a shard with room that no other
/// create holds (`FOR UPDATE SKIP LOCKED`), runs again shortly when all are held, and is
/// refused only when every shard is full, that is when the count is at the limit. So the
/// limits stay exact while 16 writers flush at once. The task row names its shards
/// (`owner_slot`, `total_slot`) so its terminal write gives back the same units.
///
/// `revision` copies the record's revision: a write is one `save_task` call that updates
/// the row only if its revision is the one read (compare-and-set), releases the units
/// when the task finishes, and queues the notifications; a create is one `create_task`
/// call. Each runs as a single statement, its own transaction: no lock is held across a
/// round trip to the client.
///
/// Existing live tasks are spread over the shards in creation order, and the counts
/// rebuilt from the rows. Instances of an older build must be stopped first: they write
/// `counters`, which is gone.
const V4: &str = r#"
ALTER TABLE tasks ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN owner_slot SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN total_slot SMALLINT NOT NULL DEFAULT 0;
UPDATE tasks SET revision = (record::json ->> 'revision')::bigint;
UPDATE tasks t SET owner_slot = n.o, total_slot = n.t
  FROM (SELECT id,
               (row_number() OVER (PARTITION BY owner ORDER BY created_at, id) - 1) % 16 AS o,
               (row_number() OVER (ORDER BY created_at, id) - 1) % 16 AS t
          FROM tasks WHERE live) n
 WHERE t.id = n.id;
DROP TABLE live_counts;
DROP TABLE counters;
CREATE TABLE live_counts (
    owner BYTEA NOT NULL,
    shard SMALLINT NOT NULL,
    live BIGINT NOT NULL,
    PRIMARY KEY (owner, shard)
);
INSERT INTO live_counts (owner, shard, live)
  SELECT owner, owner_slot, count(*) FROM tasks WHERE live GROUP BY owner, owner_slot;
INSERT INTO live_counts (owner, shard, live)
  SELECT '\xff'::bytea, total_slot, count(*) FROM tasks WHERE live GROUP BY total_slot;

-- One unit of `p_scope`'s count (an owner, or '\xff' for the total) under `p_max`:
-- the shard it was taken from, or NULL when every shard is full as committed. It never
-- waits for a row another writer holds: when every shard with room is held, SQLSTATE
-- MT003 (busy), and the caller runs the statement again. (Waiting would be exact too,
-- but a locking read whose row fails its re-check keeps the lock, so two writers could
-- each hold a shard the other waits for.) `p_start` spreads writers over the shards.
CREATE FUNCTION take_slot(p_scope BYTEA, p_max BIGINT, p_start INT) RETURNS SMALLINT
LANGUAGE plpgsql AS $$
DECLARE
    taken SMALLINT;
BEGIN
    -- A shard with room that no other writer holds.
    UPDATE live_counts c SET live = c.live + 1
     WHERE (c.owner, c.shard) = (
            SELECT owner, shard FROM live_counts
             WHERE owner = p_scope AND live < p_max / 16 + (shard < p_max % 16)::int
             ORDER BY (shard - p_start + 16) % 16
             LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING c.shard INTO taken;
    IF FOUND THEN RETURN taken; END IF;
    -- A shard with room and no row yet (a concurrent insert of the same row is waited
    -- for, then passed over).
    INSERT INTO live_counts (owner, shard, live)
    SELECT p_scope, g, 1 FROM generate_series(0, 15) g
     WHERE p_max / 16 + (g < p_max % 16)::int > 0
       AND NOT EXISTS (SELECT 1 FROM live_counts WHERE owner = p_scope AND shard = g)
     ORDER BY (g - p_start + 16) % 16
     LIMIT 1
    ON CONFLICT DO NOTHING
    RETURNING shard INTO taken;
    IF FOUND THEN RETURN taken; END IF;
    -- Room in shards other writers hold, or rows that appeared meanwhile: busy.
    IF EXISTS (SELECT 1 FROM live_counts
                WHERE owner = p_scope AND live < p_max / 16 + (shard < p_max % 16)::int)
       OR EXISTS (SELECT 1 FROM generate_series(0, 15) g
                   WHERE p_max / 16 + (g < p_max % 16)::int > 0
                     AND NOT EXISTS (SELECT 1 FROM live_counts
                                      WHERE owner = p_scope AND shard = g)) THEN
        RAISE EXCEPTION 'every live count shard with room is being written'
            USING ERRCODE = 'MT003';
    END IF;
    RETURN NULL;
END
$$;

-- A new task, counted for its owner and in total, its notifications queued. Over a
-- limit: SQLSTATE MT001 (the owner's) or MT002 (the total), nothing stored.
CREATE FUNCTION create_task(
    p_id TEXT, p_owner BYTEA, p_created BIGINT, p_expires BIGINT, p_lease BIGINT,
    p_record TEXT, p_queued TEXT, p_revision BIGINT,
    p_owner_max BIGINT, p_total_max BIGINT, p_start INT,
    p_channel TEXT, p_payloads TEXT[]) RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    o SMALLINT;
    t SMALLINT;
BEGIN
    o := take_slot(p_owner, p_owner_max, p_start);
    IF o IS NULL THEN
        RAISE EXCEPTION 'live tasks per owner at the limit' USING ERRCODE = 'MT001';
    END IF;
    t := take_slot('\xff'::bytea, p_total_max, p_start);
    IF t IS NULL THEN
        RAISE EXCEPTION 'live tasks in total at the limit' USING ERRCODE = 'MT002';
    END IF;
    INSERT INTO tasks (id, owner, created_at, expires_at, live, lease_expires_at, record,
                       queued_tool, revision, owner_slot, total_slot)
    VALUES (p_id, p_owner, p_created, p_expires, TRUE, p_lease, p_record, p_queued,
            p_revision, o, t);
    PERFORM pg_notify(p_channel, payload) FROM unnest(p_payloads) AS payload;
END
$$;

-- Writes a changed task if its revision is still `p_was` (false otherwise: the caller
-- reads it again), gives back its units when `p_release` (it just finished), and
-- queues its notifications.
CREATE FUNCTION save_task(
    p_id TEXT, p_was BIGINT, p_revision BIGINT, p_live BOOLEAN, p_lease BIGINT,
    p_record TEXT, p_queued TEXT, p_release BOOLEAN,
    p_channel TEXT, p_payloads TEXT[]) RETURNS BOOLEAN
LANGUAGE plpgsql AS $$
DECLARE
    o BYTEA;
    os SMALLINT;
    ts SMALLINT;
BEGIN
    UPDATE tasks SET revision = p_revision, live = p_live, lease_expires_at = p_lease,
                     record = p_record, queued_tool = p_queued
     WHERE id = p_id AND revision = p_was
    RETURNING owner, owner_slot, total_slot INTO o, os, ts;
    IF NOT FOUND THEN
        RETURN FALSE;
    END IF;
    IF p_release THEN
        -- The owner's shard, then the total's: the order every write takes them in.
        UPDATE live_counts SET live = greatest(live - 1, 0) WHERE owner = o AND shard = os;
        UPDATE live_counts SET live = greatest(live - 1, 0)
         WHERE owner = '\xff'::bytea AND shard = ts;
    END IF;
    PERFORM pg_notify(p_channel, payload) FROM unnest(p_payloads) AS payload;
    RETURN TRUE;
END
$$;
"#;

/// Version 5: a create is refused also when the scope's committed units already reach
/// the limit. Each shard's share comes from the limit the writer has now; after the limit
/// was lowered (or while instances of a rolling change disagree on it), shards filled
/// under the old limit while others stayed empty would let the empty ones take more: with
/// 2 live tasks in one shard and a new limit of 4, three more creates fit, not two. The
/// sum is a read of at most 16 rows; concurrent creates may each pass it, but no shard
/// ever goes past its share, so an unchanged limit stays exact as before. Version 4's
/// `take_slot` is kept as `take_shard`, behind the check.
const V5: &str = r#"
ALTER FUNCTION take_slot(BYTEA, BIGINT, INT) RENAME TO take_shard;
CREATE FUNCTION take_slot(p_scope BYTEA, p_max BIGINT, p_start INT) RETURNS SMALLINT
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT coalesce(sum(live), 0) FROM live_counts WHERE owner = p_scope) >= p_max THEN
        RETURN NULL;
    END IF;
    RETURN take_shard(p_scope, p_max, p_start);
END
$$;
"#;

/// Version 6: writes in batches. A handle gathers the creates, and the changes, that
/// its callers make at once and sends each group as one statement, one transaction, one
/// commit (group commit; see `batch.rs`): per lifecycle that is about a third of the
/// database's CPU of one statement and one flush per write.
///
/// `take_units` takes many units of one count at once, as many from a shard as its
/// share has room for, under the same rules as `take_slot` (version 5's sum check, then
/// shards with room no other writer holds, never waiting for one). It never inserts a
/// shard row: a transaction holding rows of its own that waits for another's insert of
/// the same row can deadlock with it (seen with two batches inserting one scope's 16
/// rows in the same order), so the caller makes missing rows one per statement, each
/// its own transaction holding nothing else, and runs the batch again. `create_tasks`
/// counts the owners (in byte order), then the total, and stores the tasks that got
/// both units, in one statement; each task's outcome comes back in its place: 0 stored,
/// 1 the owner's limit, 2 the total's, 3 busy (every shard with room is held by another
/// writer: again, shortly), 4 the owner's count and 5 the total's lack shard rows
/// (make them, then again). `save_tasks`
/// is `save_task` for many tasks: it locks their rows in id order first, then gives back
/// the units of the ones that just finished, grouped by shard in (scope, shard) order,
/// so batches waiting for each other's rows always wait in one order. The functions of
/// version 4 stay: claims still write through `save_task`.
const V6: &str = r#"
CREATE FUNCTION take_units(p_scope BYTEA, p_max BIGINT, p_start INT, p_n INT,
                           OUT shards SMALLINT[], OUT busy BOOLEAN, OUT missing BOOLEAN)
LANGUAGE plpgsql AS $$
DECLARE
    need BIGINT;
    s SMALLINT;
    room BIGINT;
BEGIN
    shards := '{}';
    busy := FALSE;
    missing := FALSE;
    need := least(p_n, p_max - (SELECT coalesce(sum(live), 0) FROM live_counts
                                 WHERE owner = p_scope));
    WHILE need > 0 LOOP
        -- A shard with room that no other writer holds (this one's own come again).
        SELECT c.shard, p_max / 16 + (c.shard < p_max % 16)::int - c.live INTO s, room
          FROM live_counts c
         WHERE c.owner = p_scope AND c.live < p_max / 16 + (c.shard < p_max % 16)::int
         ORDER BY (c.shard - p_start + 16) % 16
         LIMIT 1 FOR UPDATE SKIP LOCKED;
        EXIT WHEN NOT FOUND;
        room := least(room, need);
        UPDATE live_counts SET live = live + room WHERE owner = p_scope AND shard = s;
        shards := shards || array_fill(s, ARRAY[room::int]);
        need := need - room;
    END LOOP;
    IF need > 0 THEN
        -- Shards with room but no row yet: the caller makes them (`make_shards`);
        -- room only in shards other writers hold: busy; neither: full.
        missing := EXISTS (SELECT 1 FROM generate_series(0, 15) g
                            WHERE p_max / 16 + (g < p_max % 16)::int > 0
                              AND NOT EXISTS (SELECT 1 FROM live_counts
                                               WHERE owner = p_scope AND shard = g));
        busy := EXISTS (SELECT 1 FROM live_counts
                         WHERE owner = p_scope
                           AND live < p_max / 16 + (shard < p_max % 16)::int);
    END IF;
END
$$;

CREATE FUNCTION create_tasks(
    p_ids TEXT[], p_owners BYTEA[], p_created BIGINT[], p_expires BIGINT[],
    p_leases BIGINT[], p_records TEXT[], p_queued TEXT[], p_revisions BIGINT[],
    p_owner_max BIGINT, p_total_max BIGINT, p_start INT) RETURNS SMALLINT[]
LANGUAGE plpgsql AS $$
DECLARE
    n INT := cardinality(p_ids);
    outcome SMALLINT[] := array_fill(0::SMALLINT, ARRAY[n]);
    oslot SMALLINT[] := array_fill(NULL::SMALLINT, ARRAY[n]);
    tslot SMALLINT[] := array_fill(NULL::SMALLINT, ARRAY[n]);
    o BYTEA;
    mine INT[];
    got RECORD;
    k INT;
    short SMALLINT;
    back BIGINT;
BEGIN
    -- The owners' counts in byte order, then the total: the order every write takes.
    FOR o IN SELECT DISTINCT x FROM unnest(p_owners) x ORDER BY x LOOP
        mine := ARRAY(SELECT i FROM generate_subscripts(p_owners, 1) i
                       WHERE p_owners[i] = o ORDER BY i);
        got := take_units(o, p_owner_max, p_start, cardinality(mine));
        FOR k IN 1 .. cardinality(mine) LOOP
            IF k <= cardinality(got.shards) THEN
                oslot[mine[k]] := got.shards[k];
            ELSE
                outcome[mine[k]] := CASE WHEN got.missing THEN 4 WHEN got.busy THEN 3
                                         ELSE 1 END;
            END IF;
        END LOOP;
    END LOOP;
    mine := ARRAY(SELECT i FROM generate_subscripts(p_ids, 1) i
                   WHERE outcome[i] = 0 ORDER BY i);
    got := take_units('\xff'::bytea, p_total_max, p_start, cardinality(mine));
    short := CASE WHEN got.missing THEN 5 WHEN got.busy THEN 3 ELSE 2 END;
    FOR k IN 1 .. cardinality(mine) LOOP
        IF k <= cardinality(got.shards) THEN
            tslot[mine[k]] := got.shards[k];
        ELSE
            outcome[mine[k]] := short;
            -- Its owner's unit goes back (a shard this transaction already holds).
            UPDATE live_counts SET live = live - 1
             WHERE owner = p_owners[mine[k]] AND shard = oslot[mine[k]];
        END IF;
    END LOOP;
    IF cardinality(got.shards) < cardinality(mine) THEN
        -- Taken one after another, the creates refused for their owner's limit would
        -- have found the units just given back, then no room in the total: as many of
        -- them as their owner got back are refused for the total instead.
        FOR o IN SELECT DISTINCT x FROM unnest(p_owners) x LOOP
            back := (SELECT count(*) FROM generate_subscripts(p_owners, 1) i
                      WHERE p_owners[i] = o AND outcome[i] = short);
            FOR k IN SELECT i FROM generate_subscripts(p_owners, 1) i
                      WHERE p_owners[i] = o AND outcome[i] = 1 ORDER BY i LIMIT back LOOP
                outcome[k] := short;
            END LOOP;
        END LOOP;
    END IF;
    INSERT INTO tasks (id, owner, created_at, expires_at, live, lease_expires_at, record,
                       queued_tool, revision, owner_slot, total_slot)
    SELECT p_ids[i], p_owners[i], p_created[i], p_expires[i], TRUE, p_leases[i],
           p_records[i], p_queued[i], p_revisions[i], oslot[i], tslot[i]
      FROM generate_subscripts(p_ids, 1) i
     WHERE outcome[i] = 0;
    RETURN outcome;
END
$$;

CREATE FUNCTION save_tasks(
    p_ids TEXT[], p_was BIGINT[], p_revisions BIGINT[], p_live BOOLEAN[],
    p_leases BIGINT[], p_records TEXT[], p_queued TEXT[], p_release BOOLEAN[])
    RETURNS BOOLEAN[]
LANGUAGE plpgsql AS $$
DECLARE
    saved BOOLEAN[] := array_fill(FALSE, ARRAY[cardinality(p_ids)]);
    done INT[];
    r RECORD;
BEGIN
    PERFORM 1 FROM tasks WHERE id = ANY(p_ids) ORDER BY id FOR UPDATE;
    WITH u AS (
        SELECT * FROM unnest(p_ids, p_was, p_revisions, p_live, p_leases, p_records,
                             p_queued) WITH ORDINALITY
                      AS u(id, was, revision, live, lease, record, queued, i)),
    w AS (
        UPDATE tasks t SET revision = u.revision, live = u.live,
                           lease_expires_at = u.lease, record = u.record,
                           queued_tool = u.queued
          FROM u
         WHERE t.id = u.id AND t.revision = u.was
        RETURNING u.i)
    SELECT array_agg(w.i::int) INTO done FROM w;
    IF done IS NULL THEN
        RETURN saved;
    END IF;
    FOR k IN 1 .. cardinality(done) LOOP
        saved[done[k]] := TRUE;
    END LOOP;
    FOR r IN
        SELECT scope, shard, count(*) AS n FROM (
            SELECT t.owner AS scope, t.owner_slot AS shard
              FROM tasks t JOIN unnest(done) d(i) ON t.id = p_ids[d.i]
             WHERE p_release[d.i]
            UNION ALL
            SELECT '\xff'::bytea, t.total_slot
              FROM tasks t JOIN unnest(done) d(i) ON t.id = p_ids[d.i]
             WHERE p_release[d.i]) units
         GROUP BY scope, shard ORDER BY scope, shard
    LOOP
        UPDATE live_counts SET live = greatest(live - r.n, 0)
         WHERE owner = r.scope AND shard = r.shard;
    END LOOP;
    RETURN saved;
END
$$;
"#;

/// Version 7: a sweep is one statement (`sweep_expired`), so it holds its locks (the
/// expired task rows, the count shards it gives units back to) for that statement only.
/// It was a transaction of many round trips (the delete, one update per shard, the
/// removal of empty shards), and a batch of changes waiting for one of those shards
/// waited for all of them. The advisory lock that serializes sweeps is taken inside, for
/// the statement's transaction. Task rows other writes hold are passed over (swept next
/// time); shards are given back in (scope, shard) order, as every write takes them; empty
/// shards that no write holds go. The unfinished tasks it removed come back (owners and
/// ids), with the count of all removed.
const V7: &str = r#"
CREATE FUNCTION sweep_expired(p_now BIGINT, p_lock BIGINT,
                              OUT purged BIGINT, OUT owners BYTEA[], OUT ids TEXT[])
LANGUAGE plpgsql AS $$
DECLARE
    oslots SMALLINT[];
    tslots SMALLINT[];
    r RECORD;
BEGIN
    PERFORM pg_advisory_xact_lock(p_lock);
    WITH gone AS (
        DELETE FROM tasks WHERE ctid = ANY(ARRAY(
            SELECT ctid FROM tasks WHERE expires_at <= p_now FOR UPDATE SKIP LOCKED))
        RETURNING tasks.owner, tasks.id, tasks.live, tasks.owner_slot, tasks.total_slot)
    SELECT count(*),
           coalesce(array_agg(g.owner) FILTER (WHERE g.live), '{}'),
           coalesce(array_agg(g.id) FILTER (WHERE g.live), '{}'),
           coalesce(array_agg(g.owner_slot) FILTER (WHERE g.live), '{}'),
           coalesce(array_agg(g.total_slot) FILTER (WHERE g.live), '{}')
      INTO purged, owners, ids, oslots, tslots
      FROM gone g;
    FOR r IN
        SELECT u.scope, u.shard, count(*) AS n FROM (
            SELECT o.scope, o.shard FROM unnest(owners, oslots) AS o(scope, shard)
            UNION ALL
            SELECT '\xff'::bytea, t.shard FROM unnest(tslots) AS t(shard)) u
         GROUP BY u.scope, u.shard ORDER BY u.scope, u.shard
    LOOP
        UPDATE live_counts SET live = greatest(live - r.n, 0)
         WHERE owner = r.scope AND shard = r.shard;
    END LOOP;
    DELETE FROM live_counts WHERE ctid = ANY(ARRAY(
        SELECT ctid FROM live_counts WHERE live <= 0 FOR UPDATE SKIP LOCKED));
END
$$;
"#;

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: V1,
    },
    Migration {
        version: 2,
        sql: V2,
    },
    Migration {
        version: 3,
        sql: V3,
    },
    Migration {
        version: 4,
        sql: V4,
    },
    Migration {
        version: 5,
        sql: V5,
    },
    Migration {
        version: 6,
        sql: V6,
    },
    Migration {
        version: 7,
        sql: V7,
    },
];

/// The newest schema version this build knows.
pub(crate) const SCHEMA_VERSION: i32 = 7;

pub(crate) fn backend(e: impl IntoStoreError) -> StoreError {
    e.into_store_error()
}

/// A database error with the server's message (tokio-postgres shows only "db error").
pub(crate) fn pg(e: tokio_postgres::Error) -> StoreError {
    e.into_store_error()
}

/// SQLSTATE codes that pass: the connection's failures (class 08), the server shutting
/// down or starting (57P01..57P03), too many connections (53300), a serialization failure
/// or deadlock (40001, 40P01), and a read-only transaction (25006, what a write meets on
/// a replica during a failover).
fn transient_state(code: &str) -> bool {
    code.starts_with("08")
        || matches!(
            code,
            "57P01" | "57P02" | "57P03" | "53300" | "40001" | "40P01" | "25006"
        )
}

/// tokio-postgres' failures that pass: a closed connection, an I/O error (refused,
/// reset, timed out), a timeout waiting for the server, or a transient SQLSTATE.
impl IntoStoreError for tokio_postgres::Error {
    fn into_store_error(self) -> StoreError {
        if let Some(db) = self.as_db_error() {
            let code = db.code().code();
            let message = format!("PostgreSQL error {code}: {}", db.message());
            let transient = transient_state(code);
            let e = BackendError::with_source(message, self);
            return if transient {
                StoreError::Unavailable(e)
            } else {
                StoreError::Backend(e)
            };
        }
        let io = std::error::Error::source(&self)
            .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some());
        let mut shown = self.to_string();
        let transient = self.is_closed() || io || shown.starts_with("timeout");
        // tokio-postgres says "error connecting to server" and keeps the cause apart.
        if let Some(cause) = std::error::Error::source(&self) {
            shown = format!("{shown}: {cause}");
        }
        let e = BackendError::with_source(format!("PostgreSQL: {shown}"), self);
        if transient {
            StoreError::Unavailable(e)
        } else {
            StoreError::Backend(e)
        }
    }
}

/// The pool's failures: a wait or connect timeout passes, so does what the database
/// said when it passes; a closed pool does not.
impl IntoStoreError for deadpool_postgres::PoolError {
    fn into_store_error(self) -> StoreError {
        use deadpool_postgres::PoolError;
        match self {
            PoolError::Backend(e) => e.into_store_error(),
            PoolError::Timeout(kind) => StoreError::Unavailable(BackendError::new(format!(
                "PostgreSQL: no connection from the pool ({kind:?} timed out)"
            ))),
            other => StoreError::Backend(BackendError::new(format!("PostgreSQL pool: {other}"))),
        }
    }
}

impl IntoStoreError for deadpool_postgres::BuildError {
    fn into_store_error(self) -> StoreError {
        StoreError::Backend(BackendError::with_source(
            format!("PostgreSQL pool: {self}"),
            self,
        ))
    }
}

/// Checks a schema name: lowercase ASCII letters, digits and `_`, not starting with a
/// digit, at most 63 bytes. Such a name never needs quoting.
pub(crate) fn check_schema(name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_IDENT
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(backend(format!(
            "invalid PostgreSQL schema name {name:?}: use 1 to 63 of [a-z0-9_], not starting \
             with a digit"
        )))
    }
}

/// 64-bit FNV-1a: stable across builds and processes (unlike std's hashers).
pub(crate) fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The `LISTEN`/`NOTIFY` channel of a schema: `{schema}_events`, shortened with a hash
/// when that would pass the identifier limit. Every handle on the schema derives the same.
pub(crate) fn channel(schema: &str) -> String {
    let name = format!("{schema}_events");
    if name.len() <= MAX_IDENT {
        return name;
    }
    let head: String = schema.chars().take(40).collect();
    format!("{head}_{:016x}_ev", fnv1a(schema))
}

/// Brings `schema` to [`SCHEMA_VERSION`] in one transaction under a transaction-scoped
/// advisory lock, so instances starting at once apply each migration exactly once. A
/// schema written by a newer build is refused.
pub(crate) async fn migrate(client: &mut Client, schema: &str) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(pg)?;
    let lock_key = i64::from_ne_bytes(fnv1a(&format!("mcp_tasks.migrate.{schema}")).to_ne_bytes());
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock_key])
        .await
        .map_err(pg)?;
    let exists: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&schema],
        )
        .await
        .map_err(pg)?
        .try_get(0)
        .map_err(pg)?;
    if !exists {
        tx.batch_execute(&format!("CREATE SCHEMA {schema}"))
            .await
            .map_err(|e| backend(format!("cannot create schema {schema}: {e}")))?;
    }
    tx.batch_execute(&format!(
        "SET LOCAL search_path TO {schema};
         CREATE TABLE IF NOT EXISTS schema_version (
             version INTEGER PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(pg)?;
    let current: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM schema_version", &[])
        .await
        .map_err(pg)?
        .try_get(0)
        .map_err(pg)?;
    if current > SCHEMA_VERSION {
        return Err(backend(format!(
            "PostgreSQL schema {schema}: task store schema version {current} is newer than this \
             build of mcp-tasks supports (up to {SCHEMA_VERSION}); upgrade mcp-tasks to use it"
        )));
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        tx.batch_execute(m.sql)
            .await
            .map_err(|e| backend(format!("schema {schema}: migration {}: {e}", m.version)))?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[&m.version],
        )
        .await
        .map_err(pg)?;
    }
    tx.commit().await.map_err(pg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_and_channels() {
        assert!(check_schema("mcp_tasks").is_ok());
        for bad in ["", "1abc", "Abc", "a-b", "a b", "a\"b", &"x".repeat(64)] {
            assert!(check_schema(bad).is_err(), "{bad}");
        }
        assert_eq!(channel("mcp_tasks"), "mcp_tasks_events");
        let long = "k".repeat(63);
        let c = channel(&long);
        assert!(c.len() <= MAX_IDENT, "{c}");
        assert_ne!(c, channel(&"k".repeat(62)));
        assert_eq!(c, channel(&long));
    }

    #[test]
    fn migrations_are_ordered_and_end_at_the_version() {
        let versions: Vec<i32> = MIGRATIONS.iter().map(|m| m.version).collect();
        assert!(versions.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(versions.last(), Some(&SCHEMA_VERSION));
    }
}
