"""The durable job queue: the store, workers that lease jobs, and the pipeline interface jobs run through."""
