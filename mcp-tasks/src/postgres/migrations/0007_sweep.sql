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
