-- Version 6's `create_tasks` and `save_tasks` are deliberately kept and copied, not
-- replaced: `create_logged_tasks` supersedes `create_tasks` and `save_logged_tasks`
-- supersedes `save_tasks` under new names, so nodes of the previous build keep writing
-- through the old functions (records without log entries) during a rolling upgrade.

-- Written so that it can run again over its own work (a schema taken back to an older
-- version by hand keeps the table and the columns): IF NOT EXISTS, OR REPLACE.
ALTER TABLE tasks
    ADD COLUMN IF NOT EXISTS log_next BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS log_first BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS log_bytes BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS task_log (
    task_id TEXT COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    at BIGINT NOT NULL,
    node TEXT,
    actor TEXT NOT NULL,
    size BIGINT NOT NULL,
    PRIMARY KEY (task_id, seq)
);

-- Retention of one task's log, whose row this transaction holds: drops the oldest
-- entries while more than `p_max_entries` are kept or their sizes pass `p_max_bytes`,
-- never the newest, and moves `log_first` and `log_bytes` with them.
CREATE OR REPLACE FUNCTION trim_log(p_id TEXT, p_max_entries BIGINT, p_max_bytes BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    kept BIGINT;
    bytes BIGINT;
    was BIGINT;
    keep_from BIGINT;
    e RECORD;
BEGIN
    SELECT log_next - log_first, log_bytes, log_first INTO kept, bytes, was
      FROM tasks WHERE id = p_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    keep_from := was;
    FOR e IN SELECT seq, size FROM task_log WHERE task_id = p_id AND seq >= was ORDER BY seq
    LOOP
        EXIT WHEN kept <= 1 OR (kept <= p_max_entries AND bytes <= p_max_bytes);
        kept := kept - 1;
        bytes := bytes - e.size;
        keep_from := e.seq + 1;
    END LOOP;
    IF keep_from > was THEN
        DELETE FROM task_log WHERE task_id = p_id AND seq >= was AND seq < keep_from;
        UPDATE tasks SET log_first = keep_from, log_bytes = bytes WHERE id = p_id;
    END IF;
END
$$;

-- Version 6's `create_tasks`, each new task with the first entries of its log: task `i`
-- appends `p_log_n[i]` entries of `p_log_bytes[i]` bytes at `p_log_at[i]`; entry `k` of
-- the flat arrays belongs to task `p_log_rows[k]` as its entry (and seq) `p_log_offsets[k]`.
CREATE OR REPLACE FUNCTION create_logged_tasks(
    p_ids TEXT[], p_owners BYTEA[], p_created BIGINT[], p_expires BIGINT[],
    p_leases BIGINT[], p_records TEXT[], p_queued TEXT[], p_revisions BIGINT[],
    p_owner_max BIGINT, p_total_max BIGINT, p_start INT,
    p_log_n BIGINT[], p_log_bytes BIGINT[], p_log_at BIGINT[],
    p_log_rows INT[], p_log_offsets BIGINT[], p_log_types TEXT[], p_log_payloads TEXT[],
    p_log_nodes TEXT[], p_log_actors TEXT[], p_log_sizes BIGINT[],
    p_max_entries BIGINT, p_max_bytes BIGINT, p_trim BOOLEAN) RETURNS SMALLINT[]
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
    over TEXT;
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
    -- The tasks and their entries in one statement (the entries' key checks run at its
    -- end, when the rows are there).
    WITH stored AS (
        INSERT INTO tasks (id, owner, created_at, expires_at, live, lease_expires_at,
                           record, queued_tool, revision, owner_slot, total_slot,
                           log_next, log_bytes)
        SELECT p_ids[i], p_owners[i], p_created[i], p_expires[i], TRUE, p_leases[i],
               p_records[i], p_queued[i], p_revisions[i], oslot[i], tslot[i], p_log_n[i],
               p_log_bytes[i]
          FROM generate_subscripts(p_ids, 1) i
         WHERE outcome[i] = 0)
    INSERT INTO task_log (task_id, seq, type, payload, at, node, actor, size)
    SELECT p_ids[e.r], e.o, e.type, e.payload, p_log_at[e.r], e.node, e.actor, e.size
      FROM unnest(p_log_rows, p_log_offsets, p_log_types, p_log_payloads, p_log_nodes,
                  p_log_actors, p_log_sizes) AS e(r, o, type, payload, node, actor, size)
     WHERE outcome[e.r] = 0;
    -- `p_trim`: the caller saw a row whose entries pass a limit (rare: a new log holds
    -- the creation's entry only).
    IF p_trim THEN
        FOR over IN SELECT p_ids[i] FROM generate_subscripts(p_ids, 1) i
                     WHERE outcome[i] = 0
                       AND (p_log_n[i] > p_max_entries OR p_log_bytes[i] > p_max_bytes)
                     ORDER BY 1 LOOP
            PERFORM trim_log(over, p_max_entries, p_max_bytes);
        END LOOP;
    END IF;
    RETURN outcome;
END
$$;

-- Version 6's `save_tasks`, each written task with the entries its write appends
-- (arrays as `create_logged_tasks` takes them): numbered from the row's `log_next` in
-- the same statement as the row's compare-and-set, so a write that loses appends
-- nothing.
CREATE OR REPLACE FUNCTION save_logged_tasks(
    p_ids TEXT[], p_was BIGINT[], p_revisions BIGINT[], p_live BOOLEAN[],
    p_leases BIGINT[], p_records TEXT[], p_queued TEXT[], p_release BOOLEAN[],
    p_log_n BIGINT[], p_log_bytes BIGINT[], p_log_at BIGINT[],
    p_log_rows INT[], p_log_offsets BIGINT[], p_log_types TEXT[], p_log_payloads TEXT[],
    p_log_nodes TEXT[], p_log_actors TEXT[], p_log_sizes BIGINT[],
    p_max_entries BIGINT, p_max_bytes BIGINT)
    RETURNS BOOLEAN[]
LANGUAGE plpgsql AS $$
DECLARE
    saved BOOLEAN[] := array_fill(FALSE, ARRAY[cardinality(p_ids)]);
    done INT[];
    over TEXT[];
    r RECORD;
BEGIN
    PERFORM 1 FROM tasks WHERE id = ANY(p_ids) ORDER BY id FOR UPDATE;
    WITH u AS (
        SELECT * FROM unnest(p_ids, p_was, p_revisions, p_live, p_leases, p_records,
                             p_queued, p_log_n, p_log_bytes) WITH ORDINALITY
                      AS u(id, was, revision, live, lease, record, queued, n, bytes, i)),
    w AS (
        UPDATE tasks t SET revision = u.revision, live = u.live,
                           lease_expires_at = u.lease, record = u.record,
                           queued_tool = u.queued, log_next = t.log_next + u.n,
                           log_bytes = t.log_bytes + u.bytes
          FROM u
         WHERE t.id = u.id AND t.revision = u.was
        RETURNING u.i, t.id, t.log_next - u.n AS base,
                  (t.log_next - t.log_first > p_max_entries
                   OR t.log_bytes > p_max_bytes) AS over),
    l AS (
        INSERT INTO task_log (task_id, seq, type, payload, at, node, actor, size)
        SELECT w.id, w.base + e.o, e.type, e.payload, p_log_at[e.r], e.node, e.actor,
               e.size
          FROM unnest(p_log_rows, p_log_offsets, p_log_types, p_log_payloads,
                      p_log_nodes, p_log_actors, p_log_sizes)
                   AS e(r, o, type, payload, node, actor, size)
          JOIN w ON w.i = e.r)
    SELECT array_agg(w.i::int), array_agg(w.id ORDER BY w.id) FILTER (WHERE w.over)
      INTO done, over FROM w;
    IF done IS NULL THEN
        RETURN saved;
    END IF;
    FOR k IN 1 .. cardinality(done) LOOP
        saved[done[k]] := TRUE;
    END LOOP;
    IF over IS NOT NULL THEN
        FOR k IN 1 .. cardinality(over) LOOP
            PERFORM trim_log(over[k], p_max_entries, p_max_bytes);
        END LOOP;
    END IF;
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

-- A tool's entries appended to the log of `p_owner`'s task unexpired at `p_now` and
-- unfinished: `last` is the seq of the last one. Otherwise nothing is written and
-- `last` is NULL, with `status` the task's (a finished one's) or NULL (no such task).
-- The row's lock numbers the entries: appends and writes of one task take turns.
CREATE OR REPLACE FUNCTION append_log(
    p_id TEXT, p_owner BYTEA, p_now BIGINT, p_bytes BIGINT,
    p_types TEXT[], p_payloads TEXT[], p_nodes TEXT[], p_actors TEXT[], p_sizes BIGINT[],
    p_max_entries BIGINT, p_max_bytes BIGINT,
    OUT last BIGINT, OUT status TEXT)
LANGUAGE plpgsql AS $$
DECLARE
    n INT := cardinality(p_types);
    base BIGINT;
    over BOOLEAN;
BEGIN
    UPDATE tasks t SET log_next = t.log_next + n, log_bytes = t.log_bytes + p_bytes
     WHERE t.id = p_id AND t.owner = p_owner AND t.live
       AND (t.expires_at IS NULL OR t.expires_at > p_now)
    RETURNING t.log_next - n,
              (t.log_next - t.log_first > p_max_entries OR t.log_bytes > p_max_bytes)
         INTO base, over;
    IF NOT FOUND THEN
        SELECT t.status INTO status FROM tasks t
         WHERE t.id = p_id AND t.owner = p_owner
           AND (t.expires_at IS NULL OR t.expires_at > p_now);
        RETURN;
    END IF;
    INSERT INTO task_log (task_id, seq, type, payload, at, node, actor, size)
    SELECT p_id, base + e.o - 1, e.type, e.payload, p_now, e.node, e.actor, e.size
      FROM unnest(p_types, p_payloads, p_nodes, p_actors, p_sizes) WITH ORDINALITY
               AS e(type, payload, node, actor, size, o);
    IF over THEN
        PERFORM trim_log(p_id, p_max_entries, p_max_bytes);
    END IF;
    last := base + n - 1;
END
$$;
