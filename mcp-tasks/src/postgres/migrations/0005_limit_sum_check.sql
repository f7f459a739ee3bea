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
