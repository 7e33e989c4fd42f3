-- Version 1 of the job store's tables (SQLite). Written with IF NOT EXISTS: a database made before migrations
-- were versioned already has them, and is marked at version 1 once its `deliveries` got the later columns.
CREATE TABLE IF NOT EXISTS deliveries (
    id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    action TEXT NOT NULL DEFAULT '',
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    payload TEXT NOT NULL,
    received_at REAL NOT NULL,
    work TEXT,
    processed INTEGER NOT NULL DEFAULT 1,
    -- Failed attempts at applying `work`; at MAX_DELIVERY_FAILURES (bot/queue/models.py) the delivery is
    -- quarantined: processed = 1, `error` says why. To try such deliveries again after a fix:
    -- UPDATE deliveries SET failures = 0, processed = 0 WHERE failures >= 3;
    failures INTEGER NOT NULL DEFAULT 0,
    error TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    repo TEXT NOT NULL,
    number INTEGER NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    installation_id INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    available_at REAL NOT NULL,
    lease_owner TEXT,
    lease_expires REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    snapshot TEXT,
    state TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_target ON jobs (repo, number, status);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status, available_at);
CREATE TABLE IF NOT EXISTS triggers (
    id INTEGER PRIMARY KEY,
    job_id INTEGER NOT NULL,
    delivery_id TEXT NOT NULL,
    review_id INTEGER,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS triggers_by_job ON triggers (job_id);
CREATE INDEX IF NOT EXISTS triggers_by_review ON triggers (review_id);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    job_id INTEGER NOT NULL,
    at REAL NOT NULL,
    event TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_job ON events (job_id);
CREATE TABLE IF NOT EXISTS installations (
    id INTEGER PRIMARY KEY,
    account TEXT NOT NULL,
    status TEXT NOT NULL,
    repos TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS health (
    id INTEGER PRIMARY KEY,
    checked_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries (received_at) WHERE processed = 0;
CREATE INDEX IF NOT EXISTS deliveries_failed ON deliveries (received_at) WHERE failures > 0;
