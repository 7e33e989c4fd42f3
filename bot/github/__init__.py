"""GitHub access through githubkit: App auth (JWT, per-job installation tokens), retries, a thin repo adapter."""
