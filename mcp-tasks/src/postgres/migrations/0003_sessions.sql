CREATE TABLE sessions (
    id TEXT COLLATE "C" PRIMARY KEY,
    last_seen BIGINT NOT NULL,
    idle_ms BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
