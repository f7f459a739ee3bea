ALTER TABLE tasks ADD COLUMN queued_tool TEXT;
CREATE INDEX tasks_queued ON tasks (created_at, id) WHERE queued_tool IS NOT NULL;
