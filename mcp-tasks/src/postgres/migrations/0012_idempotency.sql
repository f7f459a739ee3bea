-- Idempotency keys (contract rule 25): one row per (owner, key) naming the task created
-- with it, its request's fingerprint and the task's expiry (NULL: never). A keyed create
-- claims its row with `claim_idempotency_key` and stores its task with
-- `create_tasks_v10` in one transaction: the primary key makes a concurrent claim of the
-- same key wait for that transaction, then find its row. A row whose task expired (at
-- the caller's clock) is taken over by the next claim; the trigger removes the rows of
-- deleted tasks (the sweep), so the table holds the keys of stored tasks only. Older
-- builds never read it and create no keyed task. Written so that it can run again.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    owner BYTEA NOT NULL,
    key TEXT NOT NULL,
    task_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    expires_at BIGINT,
    PRIMARY KEY (owner, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_by_task ON idempotency_keys (task_id);

-- Claims (`owner`, `key`) for the new task `p_task`: `claimed` when the row was free
-- (absent, or its task expired at `p_now`) and now names `p_task`; otherwise the task
-- holding it and whether its fingerprint is `p_fingerprint`. A row another transaction
-- is inserting is waited for (READ COMMITTED: its outcome is then seen).
CREATE OR REPLACE FUNCTION claim_idempotency_key(
    p_owner BYTEA, p_key TEXT, p_task TEXT, p_fingerprint TEXT, p_expires BIGINT,
    p_now BIGINT, OUT claimed BOOLEAN, OUT holder TEXT, OUT same BOOLEAN)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO idempotency_keys AS k (owner, key, task_id, fingerprint, expires_at)
    VALUES (p_owner, p_key, p_task, p_fingerprint, p_expires)
    ON CONFLICT (owner, key) DO UPDATE
        SET task_id = EXCLUDED.task_id, fingerprint = EXCLUDED.fingerprint,
            expires_at = EXCLUDED.expires_at
        WHERE k.expires_at IS NOT NULL AND k.expires_at <= p_now;
    IF FOUND THEN
        claimed := TRUE;
        holder := p_task;
        same := TRUE;
        RETURN;
    END IF;
    claimed := FALSE;
    SELECT k.task_id, k.fingerprint = p_fingerprint INTO holder, same
      FROM idempotency_keys k WHERE k.owner = p_owner AND k.key = p_key;
END
$$;

CREATE OR REPLACE FUNCTION idempotency_keys_go_with_their_tasks() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM idempotency_keys k USING gone g WHERE k.task_id = g.id;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS tasks_deleted_free_keys ON tasks;
CREATE TRIGGER tasks_deleted_free_keys AFTER DELETE ON tasks
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION idempotency_keys_go_with_their_tasks();
