"""Branch names ai-fix generates for its work: `ai-fix/<number>-<slug>` or `ai-fix/local-<slug>`.

Pure. The slug is made only of ASCII lowercase letters, digits and single hyphens, so no text
from an issue title can become a git option, a revision expression or a path outside `refs/heads/`.
"""

from __future__ import annotations

import re
import unicodedata

from bot.errors import PolicyViolation

PREFIX = "ai-fix/"
MAX_SLUG = 40
"""Characters kept from the title; branch names stay readable in the GitHub UI."""
FALLBACK_SLUG = "task"
"""Used when the title has no ASCII letter or digit left after slugging."""

_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_BRANCH = re.compile(r"^ai-fix/(?:[1-9][0-9]{0,18}|local)-[a-z0-9]+(?:-[a-z0-9]+)*$")


def slugify(title: str, max_len: int = MAX_SLUG) -> str:
    """Lowercase ASCII words of the title joined by single hyphens, cut at a word boundary when possible."""
    # NFKD splits accented letters into letter + mark, so "Café" keeps its "cafe".
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = _NOT_SLUG.sub("-", ascii_text.lower()).strip("-")
    if len(slug) > max_len:
        cut = slug[:max_len]
        # Prefer ending on a whole word unless that would drop most of the slug.
        boundary = cut.rfind("-")
        slug = cut[:boundary] if boundary >= max_len // 2 else cut
        slug = slug.strip("-")
    return slug or FALLBACK_SLUG


def branch_name(number: int | None, title: str) -> str:
    """`ai-fix/<number>-<slug>` for an issue, `ai-fix/local-<slug>` when there is no issue number."""
    if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number < 1):
        raise PolicyViolation(f"issue number must be a positive integer, got {number!r}")
    head = "local" if number is None else str(number)
    return validate_branch_name(f"{PREFIX}{head}-{slugify(title)}")


def is_ai_fix_branch(name: str) -> bool:
    """True for names `branch_name` can produce; such names always pass `git check-ref-format --branch`."""
    return len(name) <= len(PREFIX) + 20 + MAX_SLUG and _BRANCH.fullmatch(name) is not None


def validate_branch_name(name: str) -> str:
    """Return the name unchanged, or refuse anything ai-fix did not generate itself."""
    if not is_ai_fix_branch(name):
        raise PolicyViolation(
            f"refusing branch {name!r}: ai-fix only works on branches it named itself "
            "(ai-fix/<number>-<slug> or ai-fix/local-<slug>); build the name with branch_name()"
        )
    return name


def free_name(wanted: str, taken: set[str]) -> str:
    """`wanted`, or the first of `wanted-2`, `wanted-3`… not in `taken`."""
    name, n = wanted, 1
    while name in taken:
        n += 1
        name = f"{wanted}-{n}"
    return name
