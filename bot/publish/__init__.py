"""What a user sees of a run: the PR body, check run, progress comment, plan section and thread replies, and the
adapter that sends them to GitHub (redacted, fail-closed)."""
