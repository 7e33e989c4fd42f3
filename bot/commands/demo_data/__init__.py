"""The demo's sample repository and its recorded session (data files)."""
