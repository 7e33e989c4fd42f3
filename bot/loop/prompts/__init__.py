"""Prompts and tool definitions: data files the loop reads at run time."""
