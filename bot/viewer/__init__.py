"""The run viewer: one web page per job, rendered on the server from the job's redacted trace, live while it runs."""
