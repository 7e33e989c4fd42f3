"""Composition roots: one module per `ai-fix` command.

Only these read the settings and build collaborators (store, GitHub App, sandbox and model
openers, the pipeline); every feature package receives what it uses.
"""
