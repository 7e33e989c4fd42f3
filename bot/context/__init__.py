"""Codebase understanding: index, retrieval and rendering into a token budget."""
