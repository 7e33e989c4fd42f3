"""`ai-fix doctor`: check everything the service needs, in order, and say what to do about each problem.

One line per check (`ok`, `FAIL` with the fix, or `skip` with the reason); exit 0 when none failed, 1
otherwise. `--json` prints the same as one JSON object, for scripts. The checks are in `checkup.py`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from bot.commands.checkup import CHECKS, Checkup, Finding

MARKS = {"ok": "ok  ", "fail": "FAIL", "skip": "skip"}


def line(finding: Finding) -> str:
    fix = f" → {finding.fix}" if finding.status == "fail" and finding.fix else ""
    return f"{MARKS[finding.status]}  {finding.name}: {finding.detail}{fix}"


def doctor_main(args: argparse.Namespace) -> int:
    # Only the findings reach the output; what the parts log on the way (a sandbox's fallback) stays quiet.
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    quiet = bool(args.json)
    checkup = Checkup(
        progress=(lambda _line: None) if quiet else (lambda text: print(f"      {text}", file=sys.stderr))
    )
    for check in CHECKS:
        finding = check(checkup)
        checkup.add(finding)
        if not quiet:
            print(line(finding), flush=True)
    failed = [f for f in checkup.findings if f.status == "fail"]
    if quiet:
        findings = [f.__dict__ for f in checkup.findings]
        print(json.dumps({"ok": not failed, "checks": findings}, indent=2))
    else:
        print(f"{len(failed)} of {len(checkup.findings)} checks failed" if failed else "every check passed")
    return 1 if failed else 0
