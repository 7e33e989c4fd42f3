"""The model layer: one `Model` protocol and its backends (Anthropic, replay, scripted)."""
