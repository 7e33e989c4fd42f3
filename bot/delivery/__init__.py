"""Pull-request delivery: what a user sees of a run (PR, check run, progress comment, thread replies)."""
