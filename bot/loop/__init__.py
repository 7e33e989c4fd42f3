"""The execution loop: from a task contract to a verified change or a useful handoff."""
