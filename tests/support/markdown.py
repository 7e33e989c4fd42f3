"""GitHub's own Markdown engine, for tests that check what untrusted text renders to."""

from __future__ import annotations

import cmarkgfm
from cmarkgfm.cmark import Options


def render(markdown: str) -> str:
    """HTML as GitHub renders it; UNSAFE keeps raw HTML in the output, so any tag that survived `inert` shows up."""
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
