"""Untrusted text rendered by cmark-gfm (GitHub's own Markdown engine) after `inert`: nothing fetches or links out."""

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from bot.markdown import inert, inert_line, inert_quote, is_github_url, terminal_safe, unlinked
from tests.support.markdown import render

PIECES = [
    "![x](https://evil.example/a.png)",
    "![x][r]",
    "[r]: https://evil.example/b.png",
    "[a](//evil.example/c)",
    "<img src=https://evil.example/d.png>",
    "<a href='https://evil.example'>x</a>",
    "<https://evil.example/e>",
    "https://evil.example/f",
    "www.evil.example/g",
    "https://github.com/o/r/pull/1",
    "[ok](https://github.com/o/r)",
    "`",
    "``",
    "```",
    "~~~",
    "\\",
    "[",
    "]",
    "(",
    ")",
    "!",
    "<",
    ">",
    "&",
    "\n",
    " ",
    "> ",
    "# ",
    "- ",
    "|",
    "@octocat",
    "a@b.example",
    "mailto:",
    "xmpp:",
    "fixes #3",
    "<!--",
    "-->",
    "<details>",
    "javascript:alert(1)",
    "&#91;",
    "&lt;img src=x&gt;",
]
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.text(alphabet="ab ./:=?@_*~", max_size=6)), max_size=25).map(
    "".join
)


def assert_inert(html: str) -> None:
    assert "<img" not in html
    for href in re.findall(r'<a href="([^"]*)"', html):
        assert is_github_url(href.replace("&amp;", "&")), f"link to {href}"
    tags = set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html))
    harmless = {
        "p",
        "a",
        "code",
        "pre",
        "blockquote",
        "br",
        "ul",
        "ol",
        "li",
        "hr",
        "em",
        "strong",
        "del",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
    assert tags <= harmless | {f"h{i}" for i in range(1, 7)}, tags


@settings(max_examples=500, deadline=None)
@given(TEXT)
@example("mailto:@.a and xmpp:@.b")  # found by this test: cmark-gfm links an empty local part after a scheme
def test_no_image_foreign_link_or_raw_html_survives(text: str) -> None:
    assert_inert(render(inert(text)))
    assert_inert(render(inert_quote(text)))
    assert_inert(render(f"| a |\n|---|\n| {inert_line(text)} |"))


def test_github_links_and_code_still_render() -> None:
    html = render(inert("see https://github.com/o/r/pull/1 and `a < b`"))
    assert '<a href="https://github.com/o/r/pull/1">' in html and "<code>a &lt; b</code>" in html


def test_terminal_control_sequences_are_stripped_from_program_output() -> None:
    log = (
        "\x1b[31mFAILED\x1b[0m tests/test_a.py\r\n"
        "see \x1b]8;;https://evil.example/x\x07the docs\x1b]8;;\x1b\\ now\x07\n"
        "progress 10%\rprogress 100%\n"
        "c1 \x9b31m and \x85 gone; tab\tand ünïcode kept\x00\x7f"
    )
    assert terminal_safe(log) == (
        "FAILED tests/test_a.py\nsee the docs now\nprogress 10%\nprogress 100%\nc1 31m and  gone; tab\tand ünïcode kept"
    )


@given(st.text())
def test_no_control_character_survives(text: str) -> None:
    cleaned = terminal_safe(text)
    assert not [c for c in cleaned if (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F]


def test_titles_and_commit_messages_name_issues_without_closing_them() -> None:
    assert unlinked("closes #9 when saving") == "closes issue 9 when saving"
    assert unlinked("Fixes: #9, fixed octo/app#3") == "Fixes: issue 9, fixed octo/app issue 3"
    assert unlinked("resolve GH-12") == "resolve issue 12"
    assert unlinked("fix https://github.com/o/r/issues/7 now") == "fix issue 7 (https://github.com/o/r/issues/7) now"
    assert unlinked("see #9; prefixes #3; closed\n#4") == "see #9; prefixes #3; closed\nissue 4"
