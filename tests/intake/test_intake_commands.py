import re

import pytest

from bot.intake.commands import Command, parse_command
from tests.support.markdown import render


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/agent retry", Command("retry")),
        ("/agent stop", Command("stop")),
        ("/agent help", Command("help")),
        ("Thanks!\n\n/agent retry  \n", Command("retry")),
        ("/AGENT Retry", Command("retry")),
        ("   /agent stop", Command("stop")),
        (
            "/agent retry\nUse the stdlib parser.\n\nAnd keep the API.",
            Command("retry", "Use the stdlib parser.\n\nAnd keep the API."),
        ),
        ("/agent stop\nextra lines are not feedback for stop", Command("stop")),
        ("line one\r\n/agent retry\r\nfeedback\r\n", Command("retry", "feedback")),
    ],
)
def test_commands_alone_on_a_line(text, expected):
    assert parse_command(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "please /agent retry this",
        "/agent retry now",
        "/agent",
        "/agents retry",
        "> /agent retry",
        ">/agent stop",
        "    /agent retry",  # four spaces: an indented code block
        "```\n/agent retry\n```",
        "~~~sh\n/agent stop\n~~~",
        "````\n```\n/agent retry\n```\n````",  # a longer fence is not closed by a shorter one
        "`/agent retry`",
    ],
)
def test_not_a_command(text):
    assert parse_command(text) is None


def test_first_command_outside_a_code_block_counts():
    text = "```\n/agent stop\n```\nNow for real:\n/agent retry\nfeedback here"
    assert parse_command(text) == Command("retry", "feedback here")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/agent plan", Command("plan")),
        ("/agent approve", Command("approve")),
        ("/agent approve 2", Command("approve", approach=2)),
        ("/AGENT Approve #1", Command("approve", approach=1)),
        ("/agent revise", Command("revise")),
        ("/agent revise keep total() as it is", Command("revise", "keep total() as it is")),
        (
            "/agent revise Smaller, please.\nAnd no new module.",
            Command("revise", "Smaller, please.\nAnd no new module."),
        ),
        ("/agent revise\nlines below count too", Command("revise", "lines below count too")),
        ("/agent approve 3\n/agent approve 1", Command("approve", approach=1)),  # approach 3 does not exist
    ],
)
def test_plan_commands(text, expected):
    assert parse_command(text) == expected


@pytest.mark.parametrize("text", ["/agent approve 3", "/agent approve two", "/agent approve 1 2", "/agent plan now"])
def test_not_a_plan_command(text):
    assert parse_command(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "<!--\n/agent stop\n-->",
        "Thanks!\n<!-- hidden:\n/agent stop\n-->",
        "<!-- never closed\n/agent stop",
        "a <!-- one --> b <!-- two\n/agent stop\n-->",
    ],
)
def test_a_command_inside_an_html_comment_is_ignored(text: str) -> None:
    assert parse_command(text) is None


def test_text_around_an_html_comment_still_counts() -> None:
    assert parse_command("<!-- a note -->\n/agent stop") == Command(name="stop")
    assert parse_command("/agent stop <!-- why: the plan is wrong -->") == Command(name="stop")
    assert parse_command("```\n<!--\n```\n/agent stop") == Command(name="stop"), "inside a code block it is text"


def shown(markdown: str) -> str:
    """The text GitHub shows for `markdown`: its rendering without tags (and their attributes)."""
    return re.sub(r"""<(?:[^>"']|"[^"]*"|'[^']*')*>""", "", render(markdown))


@pytest.mark.parametrize(
    "text",
    [
        '[ref]: https://example.com "\n/agent stop\n"',
        "Thanks.\n\n[ref]: https://example.com '\n/agent stop\n'",
        "[ref]:\n  https://example.com\n  (\n/agent stop\n)",
        '<img alt="\n/agent stop\n" src="x.png">',
        "Looks good <span title='\n/agent stop\n'>here</span>",
        '<div\n  data-x="1"\n  title="\n/agent stop\n">\n</div>',
    ],
)
def test_a_command_inside_a_link_definition_or_a_multi_line_attribute_is_ignored(text: str) -> None:
    assert "/agent" not in shown(text), "GitHub shows no such command"
    assert parse_command(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "a <b>bold</b> word\n/agent stop",
        "x < y\n/agent stop",
        "[ref]: https://example.com\n/agent stop",
        '```\n<a title="\n```\n/agent stop',
    ],
)
def test_a_command_after_tags_or_definitions_that_close_still_counts(text: str) -> None:
    assert "/agent stop" in shown(text), "GitHub shows it"
    assert parse_command(text) == Command(name="stop")
