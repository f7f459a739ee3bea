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
