"""`ai-fix contract`: the task contract of a local issue file, as JSON (a dry run, no GitHub)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.contract.build import build_contract, snapshot_from_markdown
from bot.contract.files import LocalRepoFiles, read_issue_file


def contract_main(args: argparse.Namespace) -> int:
    """Print the contract of a local issue file against the repository's default branch; 0 ready or not."""
    text = read_issue_file(args.issue)
    files = LocalRepoFiles(args.repo)
    contract = build_contract(snapshot_from_markdown(text, str(Path(args.repo).resolve())), files)
    print(contract.model_dump_json(indent=2))
    return 0
