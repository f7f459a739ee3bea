-- The node registry (contract rule 24): one row per server process (node) sharing the
-- schema, written by its heartbeats; times are the store clock's milliseconds.
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    interval_ms BIGINT NOT NULL,
    drain_requested BOOLEAN NOT NULL DEFAULT false,
    drained BOOLEAN NOT NULL DEFAULT false
);
