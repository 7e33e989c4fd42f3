"""Helpers shared by test folders: a fake GitHub checked against its OpenAPI description, loopback servers."""
