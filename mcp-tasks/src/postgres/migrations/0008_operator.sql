-- PostgreSQL's JSON functions refuse the escape \u0000 (a NUL in a text of the record):
-- it is read as \u0020 here (the same length of escape, so the JSON stays valid).
ALTER TABLE tasks
    ADD COLUMN status TEXT GENERATED ALWAYS AS
        (replace(record, E'\\u0000', E'\\u0020')::json ->> 'status') STORED,
    ADD COLUMN tool TEXT GENERATED ALWAYS AS
        (replace(record, E'\\u0000', E'\\u0020')::json -> 'origin' ->> 'tool') STORED,
    ADD COLUMN lease_holder TEXT GENERATED ALWAYS AS
        (replace(record, E'\\u0000', E'\\u0020')::json -> 'lease' ->> 'holder') STORED;
CREATE INDEX tasks_by_created ON tasks (created_at, id);
CREATE INDEX tasks_by_status ON tasks (status, created_at, id);
CREATE INDEX tasks_by_tool ON tasks (tool, created_at, id) WHERE tool IS NOT NULL;
CREATE INDEX tasks_by_holder ON tasks (lease_holder, created_at, id)
    WHERE lease_holder IS NOT NULL;
