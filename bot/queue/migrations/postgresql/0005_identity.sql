-- Version 5: one random id for this database, made with it: signed run-viewer links name it, so a link made for
-- one database's job opens nothing once another database (a new one, a restore of another) serves that number.
CREATE TABLE IF NOT EXISTS store_identity (id INTEGER PRIMARY KEY CHECK (id = 1), value TEXT NOT NULL);
INSERT INTO store_identity (id, value) VALUES (1, replace(gen_random_uuid()::text, '-', '')) ON CONFLICT (id) DO NOTHING;
