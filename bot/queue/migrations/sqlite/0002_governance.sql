-- Version 2: what governance needs. The dollars a job's model calls cost (summed per installation and UTC
-- day for AIFIX_DAILY_COST_USD), and what a queued job waits behind, as last told on its issue.
ALTER TABLE jobs ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN waiting TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS jobs_by_installation ON jobs (installation_id, updated_at);
