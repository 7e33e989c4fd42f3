"""The GitHub job: snapshot → contract (posted on the issue) → the loop → the pull request, resumable after a crash."""
