-- Version 3: history events by name, for the CI metrics counted from the jobs' history (aifix_ci_rounds_total).
CREATE INDEX IF NOT EXISTS events_by_name ON events (event);
