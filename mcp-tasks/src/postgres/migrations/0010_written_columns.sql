-- Version 9's `create_logged_tasks` and `save_logged_tasks` (and the writers of versions
-- 6 and 4) are deliberately kept and copied, not replaced: `create_tasks_v10` supersedes
-- `create_logged_tasks` and `save_tasks_v10` supersedes `save_logged_tasks` under new
-- names, so nodes of the previous build keep writing through the old functions during a
-- rolling upgrade (the triggers below give their rows the columns they do not set).

-- Version 8's generated columns become ordinary ones: their stored values stay (DROP
-- EXPRESSION rewrites nothing), and so do the indexes on them. From here on the writer
-- computes them from the record it encodes. Written so that it can run again over its
-- own work: IF EXISTS, IF NOT EXISTS, OR REPLACE.
ALTER TABLE tasks
    ALTER COLUMN status DROP EXPRESSION IF EXISTS,
    ALTER COLUMN tool DROP EXPRESSION IF EXISTS,
    ALTER COLUMN lease_holder DROP EXPRESSION IF EXISTS,
    ADD COLUMN IF NOT EXISTS derived_revision BIGINT;

-- The writers of earlier versions (`create_task`, `save_task`, `create_tasks`,
-- `save_tasks`, `create_logged_tasks`, `save_logged_tasks`, called by instances of an
-- older build still running during a rolling upgrade) do not set the columns: their rows
-- get them from the record here, as version 8 computed them. This version's functions
-- set `derived_revision` to the revision they write, so their inserts (not NULL) and
-- updates (moved) pass the triggers' conditions without a call; an older function's
-- insert leaves it NULL, its update leaves it where it was. (The conditions name
-- `derived_revision` only: a schema taken back by hand may drop the other columns.)
CREATE OR REPLACE FUNCTION derive_task_columns() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    j JSON := replace(NEW.record, E'\\u0000', E'\\u0020')::json;
BEGIN
    NEW.status := j ->> 'status';
    NEW.tool := j -> 'origin' ->> 'tool';
    NEW.lease_holder := j -> 'lease' ->> 'holder';
    NEW.derived_revision := NEW.revision;
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS tasks_derive_inserted ON tasks;
CREATE TRIGGER tasks_derive_inserted BEFORE INSERT ON tasks
    FOR EACH ROW WHEN (NEW.derived_revision IS NULL)
    EXECUTE FUNCTION derive_task_columns();
DROP TRIGGER IF EXISTS tasks_derive_updated ON tasks;
CREATE TRIGGER tasks_derive_updated BEFORE UPDATE OF record ON tasks
    FOR EACH ROW WHEN (NEW.derived_revision IS NOT DISTINCT FROM OLD.derived_revision)
    EXECUTE FUNCTION derive_task_columns();

-- Version 9's `create_logged_tasks`, each new task with its `status`, `tool` and
-- `lease_holder` (`p_status`, `p_tools`, `p_holders`) as the writer computed them.
CREATE OR REPLACE FUNCTION create_tasks_v10(
    p_ids TEXT[], p_owners BYTEA[], p_created BIGINT[], p_expires BIGINT[],
    p_leases BIGINT[], p_records TEXT[], p_queued TEXT[], p_revisions BIGINT[],
    p_status TEXT[], p_tools TEXT[], p_holders TEXT[],
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
                           log_next, log_bytes, status, tool, lease_holder,
                           derived_revision)
        SELECT p_ids[i], p_owners[i], p_created[i], p_expires[i], TRUE, p_leases[i],
               p_records[i], p_queued[i], p_revisions[i], oslot[i], tslot[i], p_log_n[i],
               p_log_bytes[i], p_status[i], p_tools[i], p_holders[i], p_revisions[i]
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

-- Version 9's `save_logged_tasks`, each written task with its `status`, `tool` and
-- `lease_holder` as the writer computed them.
CREATE OR REPLACE FUNCTION save_tasks_v10(
    p_ids TEXT[], p_was BIGINT[], p_revisions BIGINT[], p_live BOOLEAN[],
    p_leases BIGINT[], p_records TEXT[], p_queued TEXT[], p_release BOOLEAN[],
    p_status TEXT[], p_tools TEXT[], p_holders TEXT[],
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
                             p_queued, p_log_n, p_log_bytes, p_status, p_tools,
                             p_holders) WITH ORDINALITY
                      AS u(id, was, revision, live, lease, record, queued, n, bytes,
                           status, tool, holder, i)),
    w AS (
        UPDATE tasks t SET revision = u.revision, live = u.live,
                           lease_expires_at = u.lease, record = u.record,
                           queued_tool = u.queued, log_next = t.log_next + u.n,
                           log_bytes = t.log_bytes + u.bytes, status = u.status,
                           tool = u.tool, lease_holder = u.holder,
                           derived_revision = u.revision
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
