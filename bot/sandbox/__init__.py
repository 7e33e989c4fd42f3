"""Isolated places to run untrusted repository code."""
