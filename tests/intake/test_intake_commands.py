import pytest

from bot.intake.commands import Command, parse_command


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
