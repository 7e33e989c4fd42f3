"""Code under test: test files that match a query point at the files they test (pure).

An issue often reads like a test (a reproduction calling the same functions on the same kind of
objects), so the tests that match it are found more easily than the code at fault. Naming
conventions then lead from a test to its subject: `test_writer.py` and `writer.py`,
`tests/lookup/tests.py` and `lookups.py`, `parse.test.ts` and `parse.ts`, `CartTest.java` and
`Cart.java`.
"""

from __future__ import annotations

from functools import lru_cache

from bot.context.index import Index
from bot.context.terms import singular

TEST_DIRS = frozenset({"tests", "test", "testing", "__tests__"})
MAX_SUBJECTS = 3
"""A test whose name fits more source files than this points at none of them."""


@lru_cache(maxsize=1 << 16)
def is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    stem = name.rsplit(".", 1)[0]
    return (
        any(part in TEST_DIRS for part in parts[:-1])
        or name.startswith("test_")
        or name in ("conftest.py", "tests.py", "test.py")
        or stem.endswith(("_test", "_tests", ".test", ".spec"))
        or (name.endswith(".java") and stem.endswith("Test") and stem != "Test")
    )


def subject_stem(path: str) -> str | None:
    """The file name (without extension) a test file's name says it tests, if it says."""
    parts = path.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    for prefix in ("test_", "tests_"):
        if stem.startswith(prefix):
            return stem[len(prefix) :]
    for suffix in ("_test", "_tests", ".test", ".spec", "Test"):
        if stem.endswith(suffix) and stem != suffix:
            return stem[: -len(suffix)]
    if stem in ("tests", "test") and len(parts) >= 2 and parts[-2] not in TEST_DIRS:
        return parts[-2]
    return None


def _shared_dirs(a: str, b: str) -> int:
    common = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1]):
        if x != y:
            break
        common += 1
    return common


def subjects(index: Index, tests: list[tuple[int, float]]) -> dict[int, float]:
    """Score of each file tested by `tests` ((test file id, how well it matches in [0, 1]), best
    first): the match over the test's rank, shared between the candidates its name fits, the
    nearest by directory first."""
    by_stem = index.by_stem()
    scores: dict[int, float] = {}
    for rank, (test, match) in enumerate(tests, 1):
        test_path = str(index.files.paths[test])
        stem = subject_stem(test_path)
        if stem is None:
            continue
        found = {
            fid
            for name in (stem, singular(stem), stem + "s")
            for fid in by_stem.get(name, [])
            if not is_test_path(str(index.files.paths[fid]))
        }
        if not found or len(found) > MAX_SUBJECTS:
            continue
        shared = {fid: _shared_dirs(test_path, str(index.files.paths[fid])) for fid in found}
        nearest = max(shared.values())
        chosen = [fid for fid, n in shared.items() if n == nearest]
        for fid in chosen:
            scores[fid] = scores.get(fid, 0.0) + match / rank / len(chosen)
    return scores
