"""`ai-fix init`: write `.github/ai-fix.yml` (with the checks it detects) and the issue form into a repository."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.contract.config import CONFIG_PATH
from bot.contract.detect import detect_checks
from bot.contract.files import WorkTreeFiles
from bot.contract.render import render_config_file, render_issue_form

ISSUE_FORM_PATH = ".github/ISSUE_TEMPLATE/ai-fix.yml"


def init_main(args: argparse.Namespace) -> int:
    """Write `.github/ai-fix.yml` (with the detected checks) and the issue form; never overwrite."""
    root = Path(args.path)
    files = WorkTreeFiles(root)
    checks = detect_checks(files)
    for rel, text in ((CONFIG_PATH, render_config_file(checks)), (ISSUE_FORM_PATH, render_issue_form())):
        target = root / rel
        if target.exists():
            print(f"{rel}: exists, left unchanged (delete it to regenerate)")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"{rel}: written")
    found = ", ".join(f"{c.name} ({c.run})" for c in checks) or "none; add `checks:` by hand"
    print(f"checks detected: {found}")
    print("next: review both files, commit them to the default branch, then label an issue 'ai-fix'", file=sys.stderr)
    return 0
