-- Version 4's `create_task` and `save_task` are deliberately kept, not replaced:
-- `create_tasks` supersedes `create_task` and `save_tasks` supersedes `save_task` as
-- batched copies under new names, so nodes of the previous build keep writing through
-- the old functions during a rolling upgrade (and version 6's claims still call
-- `save_task`).

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
