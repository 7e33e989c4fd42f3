"""Webhook intake: a sans-I/O core (signature, parsing, commands, trigger rules) and a thin HTTP adapter."""
