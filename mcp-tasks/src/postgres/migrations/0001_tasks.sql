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
