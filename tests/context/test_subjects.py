"""Tests point at the code they test: naming conventions and the ranking signal they give."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.context.base import Query
from bot.context.provider import RepoContext
from bot.context.subjects import is_test_path, subject_stem
from tests.support.repos import make_repo


@pytest.mark.parametrize(
    ("path", "stem"),
    [
        ("tests/migrations/test_writer.py", "writer"),
        ("sympy/core/tests/test_numbers.py", "numbers"),
        ("tests/lookup/tests.py", "lookup"),
        ("pkg/store_test.go", "store"),
        ("src/parse.test.ts", "parse"),
        ("web/__tests__/format.spec.js", "format"),
        ("src/test/java/com/shop/CartTest.java", "Cart"),
        ("tests/conftest.py", None),
        ("tests/tests.py", None),
    ],
)
def test_a_test_file_names_its_subject(path: str, stem: str | None) -> None:
    assert is_test_path(path)
    assert subject_stem(path) == stem


@pytest.mark.parametrize("path", ["django/db/migrations/writer.py", "src/Test.java", "pkg/latest.go", "src/contest.ts"])
def test_source_files_are_not_tests(path: str) -> None:
    assert not is_test_path(path)


def test_an_issue_that_reads_like_a_test_finds_the_code_under_test(tmp_path: Path) -> None:
    """Nothing in the issue names `serializer.py` and its words are not the issue's words; the test
    that matches the issue best is the serializer's own."""
    repo = make_repo(
        tmp_path / "app",
        {
            "app/migrations/serializer.py": (
                "def serializer_factory(value):\n    if isinstance(value, type):\n        return TypeSerializer(value)\n"
                "    return BaseSerializer(value)\n"
            ),
            "app/migrations/writer.py": (
                "from app.migrations.serializer import serializer_factory\n\n"
                "def write_operation(operation):\n    return serializer_factory(operation).serialize()\n"
            ),
            "app/models/fields.py": (
                'class Field:\n    """A field default value is written by its name."""\n\n'
                "    def __init__(self, name, default=None):\n        self.name, self.default = name, default\n"
            ),
            "tests/migrations/test_serializer.py": (
                "from app.migrations.serializer import serializer_factory\n\n"
                "def test_enum_default_is_written_by_name():\n"
                "    class Status(Enum):\n        GOOD = 'good'\n"
                "    assert serializer_factory(Status.GOOD) == 'Status.GOOD'\n\n"
                "def test_nested_enum_class_default():\n"
                "    class Outer:\n        class Inner(Enum):\n            A = 'a'\n"
                "    assert serializer_factory(Outer.Inner.A)\n"
            ),
        },
    )
    context = RepoContext(repo, tmp_path / "cache")
    text = "A nested Enum used as a field default is written with its value, not by name (Status.GOOD)."
    ranked = context.rank(Query(text=text))
    by_path = {context.index.files.paths[r.fid]: r for r in ranked}
    assert by_path["app/migrations/serializer.py"].subject > 0
    assert by_path["app/models/fields.py"].subject == 0
    files = [path for path in by_path if not is_test_path(str(path))]
    assert files[0] == "app/migrations/serializer.py"
