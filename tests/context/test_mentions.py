"""Finding paths, frames and names in issue text (pure)."""

from __future__ import annotations

from bot.context.mentions import CODE_LIKE, PROSE, find_mentions


def test_python_java_and_generic_frames_in_order() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/api/views.py", line 12, in get\n'
        '  File "/srv/app/api/models.py", line 40, in save\n'
        "    at com.shop.Cart.total(Cart.java:31)\n"
        "src/lib/parse.ts:88:3 - error\n"
    )
    frames = find_mentions(text).frames
    assert [(f.path, f.line, f.function) for f in frames] == [
        ("/srv/app/api/views.py", 12, "get"),
        ("/srv/app/api/models.py", 40, "save"),
        ("com/shop/Cart.java", 31, "total"),
        ("src/lib/parse.ts", 88, ""),
    ]
    assert [f.depth for f in frames] == [0, 1, 2, 3]


def test_names_are_weighted_by_how_surely_they_are_code() -> None:
    mentions = find_mentions(
        "The printer `ccode` fails on sinc.\n\n```\n>>> ccode(sinc(x))\n```\nAlso HTTPResponse and get_value break."
    )
    assert mentions.names["ccode"] == CODE_LIKE
    assert mentions.names["sinc"] == CODE_LIKE  # inside the code block
    assert mentions.names["HTTPResponse"] == CODE_LIKE
    assert mentions.names["get_value"] == CODE_LIKE
    assert mentions.names["printer"] == PROSE


def test_paths_dotted_names_and_diff_files() -> None:
    mentions = find_mentions(
        "See sympy/printing/ccode.py and django.db.models.query for details.",
        diff="--- a/x/y.go\n+++ b/x/y.go\n",
    )
    assert mentions.paths == ["sympy/printing/ccode.py"]
    assert "django.db.models.query" in mentions.dotted
    assert mentions.diff_paths == ["x/y.go"]
    # Words of a path are not taken for names.
    assert "printing" not in mentions.names


def test_module_names_starting_with_digits_are_names() -> None:
    mentions = find_mentions("Migration auth.0011_update_proxy_permissions fails; 12_000 rows.")
    assert mentions.names["0011_update_proxy_permissions"] == CODE_LIKE
    # A number with an underscore is no name, and no tail of one is taken for a name of its own.
    assert [n for n in mentions.names if n[0] in "_0123456789"] == ["0011_update_proxy_permissions"]
