"""`ai-fix context`: what retrieval would put in the model's context for an issue, and why."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bot.context.base import Query
from bot.context.provider import RepoContext
from bot.contract.build import snapshot_from_markdown
from bot.contract.files import read_issue_file
from bot.errors import ConfigError


def context_main(args: argparse.Namespace) -> int:
    """Print the ranked files as JSON, then the rendered context."""
    text = read_issue_file(args.issue)
    if args.budget <= 0 or args.top <= 0:
        raise ConfigError("--budget and --top must be positive numbers")
    snapshot = snapshot_from_markdown(text, str(Path(args.repo).resolve()))
    context = RepoContext(args.repo)
    try:
        query = Query(text=f"{snapshot.title}\n\n{snapshot.body}")
        ranked, retrieved = context.explain(query, args.budget)
    finally:
        context.close()
    report = {
        "files": [
            {
                "path": context.index.files.paths[r.fid],
                "score": round(r.score, 4),
                "lexical": round(r.lexical, 4),
                "direct": round(r.direct, 4),
                "named": round(r.certain, 4),
                "graph": round(r.graph, 4),
                "tested": round(r.subject, 4),
            }
            for r in ranked[: args.top]
        ],
        "budget": args.budget,
        "tokens": retrieved.tokens,
        "slices": [s.model_dump(exclude={"text"}) for s in retrieved.slices],
    }
    print(json.dumps(report, indent=2))
    print()
    print(retrieved.rendered, end="")
    return 0
