"""The conflict resolver's prompt and tool: data files the rebase job reads at run time."""
