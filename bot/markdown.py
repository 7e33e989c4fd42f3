"""Untrusted Markdown made inert: shown as text and code, never fetching or linking anything foreign.

A hijacked model could try to exfiltrate through an image URL (GitHub fetches it), a link, an
@mention, or a closing keyword that closes another issue on merge. Untrusted text is re-emitted
token by token so that ai-fix, not the text, decides what GitHub renders: code stays code (re-fenced
by us), raw HTML and brackets are escaped (no image or link syntax can form), bare URLs to hosts
other than GitHub, mentions and closing keywords become code spans, shown but not followed.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

GITHUB_HOSTS: tuple[str, ...] = ("github.com", "githubusercontent.com", "github.io", "githubassets.com")
"""Hosts (and their subdomains) a URL in untrusted text may point to and stay clickable."""

_FENCE = re.compile(
    r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)\n(?P<body>.*?)(?:^ {0,3}(?P=fence)[`~]*[ \t]*$\n?|\Z)",
    re.MULTILINE | re.DOTALL,
)
_CODE_SPAN = re.compile(r"(?<!`)(?P<ticks>`+)(?!`)(?P<body>.+?)(?<!`)(?P=ticks)(?!`)", re.DOTALL)
_CLOSES = r"(?i:\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b)\s*:?\s+"
"""A closing keyword as GitHub reads one (`Closes`, `fixed:`), with what may follow it before the issue."""
# Bare URLs and e-mail addresses GitHub autolinks (wherever they start), @mentions, closing keywords.
_RISKY = re.compile(
    r"(?P<url>(?:[a-zA-Z][a-zA-Z0-9+.\-]*://|www\.)[^\s<>`\"]+)"
    # As loose as cmark-gfm, which links `a@.b`, and after `mailto:`/`xmpp:` even `@.b`.
    r"|(?P<email>(?:(?:mailto|xmpp):[\w.+-]*|[\w.+-]+)@[\w.-]*\.[\w.-]*)"
    rf"|(?P<closing>{_CLOSES}(?:[\w.-]+/[\w.-]+)?#\d+)"
    r"|(?P<mention>(?<![\w`/@.])@[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:/[A-Za-z0-9_.-]+)?)"
)
_CLOSING = re.compile(
    rf"(?P<keyword>{_CLOSES})"
    r"(?:(?P<repo>[\w.-]+/[\w.-]+)?#(?P<n>\d+)|(?i:gh-)(?P<gh>\d+)|(?P<url>https?://\S+?/(?:issues|pull)/(?P<u>\d+)))"
)
"""A closing keyword with the issue it closes: `#9`, `owner/repo#9`, `GH-9` or the issue's URL."""
_HTML_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "[": "&#91;", "]": "&#93;", "`": "&#96;"}


def first_line(text: str) -> str:
    """The first line of `text` that is not blank, stripped."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def is_github_url(url: str) -> bool:
    """True for http(s) URLs on GitHub's own hosts; anything else is not followed."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and any(host == h or host.endswith("." + h) for h in GITHUB_HOSTS)


def unlinked(text: str) -> str:
    """Plain text (a pull request's title, a commit message) in which no closing keyword names an issue: `closes #9`
    reads `closes issue 9`, which GitHub acts on nowhere. (Squash-merged, a pull request's title becomes a commit
    on the default branch, and every commit there closes the issues its message closes.)"""

    def named(m: re.Match[str]) -> str:
        if m.group("url"):
            return f"{m.group('keyword')}issue {m.group('u')} ({m.group('url')})"
        where = f"{m.group('repo')} " if m.group("repo") else ""
        return f"{m.group('keyword')}{where}issue {m.group('n') or m.group('gh')}"

    return _CLOSING.sub(named, text)


def code_span(text: str) -> str:
    """`text` as an inline code span whatever backticks it holds (nothing inside is rendered)."""
    text = " ".join(text.splitlines())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest or text.startswith(" ") or text.endswith(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_TERMINAL = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (a hyperlink, a window title) up to BEL or ST
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves)
    r"|\x1b[ -~]?"  # any other escape
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]"  # the other C0 and C1 controls, DEL
)


def terminal_safe(text: str) -> str:
    """Program output without terminal control sequences (ANSI colours, OSC-8 links, BEL, C1 controls):
    what reaches a PR, a comment, the viewer or a prompt is text. A lone carriage return becomes a line break."""
    return _TERMINAL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


INVISIBLE_EXTRA = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Hangul fillers and the braille blank render as nothing but are not format characters."""


def invisible(ch: str) -> bool:
    """Whether a character shows as nothing or moves the text around it: a control (but newline and tab), a format
    character (zero-width, bidi overrides and isolates), a surrogate, a private-use or unassigned one, a filler."""
    return ch not in "\n\t" and (unicodedata.category(ch) in ("Cf", "Cc", "Cs", "Co", "Cn") or ch in INVISIBLE_EXTRA)


def visible(text: str) -> str:
    """Text as a reader sees it: no terminal control sequence (ESC [31m, BEL) and no invisible character."""
    return "".join(ch for ch in terminal_safe(text) if not invisible(ch))


def code_block(text: str, lang: str = "") -> str:
    """A fenced block longer than any backtick run inside, so the text cannot close it early."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    lang = re.sub(r"[^\w+.-]", "", lang)[:20]
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def inert(text: str) -> str:
    """Untrusted Markdown re-emitted so that it can show text and code but fetch or link nothing foreign, and hide
    or reorder nothing (`visible`)."""
    text = visible(text)
    out: list[str] = []
    pos = 0
    for m in _FENCE.finditer(text):
        out.append(_inline(text[pos : m.start()]))
        out.append(code_block(m.group("body"), m.group("info").strip().split(" ")[0]) + "\n")
        pos = m.end()
    out.append(_inline(text[pos:]))
    return "".join(out)


def inert_line(text: str) -> str:
    """Untrusted text for one list item or table cell: a single line, pipes escaped."""
    return inert(" ".join(text.split())).replace("|", "\\|")


def inert_quote(text: str) -> str:
    """Untrusted multi-line text as a blockquote, so nothing in it can reach the text around it."""
    lines = inert(text.strip()).splitlines() or [""]
    return "\n".join(f"> {line}" if line.strip() else ">" for line in lines)


def _inline(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_prose(text[pos : m.start()]))
        out.append(code_span(m.group("body")))
        pos = m.end()
    out.append(_prose(text[pos:]))
    return _join(out)


def _prose(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _RISKY.finditer(text):
        out.append(_escape(text[pos : m.start()]))
        url = m.group("url")
        if url is not None:
            url = url.rstrip(".,;:!?*_~'")
            tail = m.group(0)[len(url) :]
            # A kept link is an explicit autolink: GitHub's autolinker would run on into what follows.
            out.append((f"<{url}>" if is_github_url(url) else code_span(url)) + _escape(tail))
        elif m.group("closing") is not None:
            # Keyword and reference in separate spans: no "fixes #N" text left for any parser to act on.
            keyword, _, ref = m.group(0).rpartition(" ")
            out.append(f"{code_span(keyword.strip())} {code_span(ref)}")
        else:
            out.append(code_span(m.group(0)))
        pos = m.end()
    out.append(_escape(text[pos:]))
    return _join(out)


def _join(parts: list[str]) -> str:
    """Concatenate, keeping a space between two code spans (adjacent backtick runs would merge)."""
    out = ""
    for part in parts:
        out += " " + part if out.endswith("`") and part.startswith("`") else part
    return out


def _escape(text: str) -> str:
    text = "".join(_HTML_ESCAPES.get(ch, ch) for ch in text)
    # A trailing backslash would escape the backtick of the code span that follows it.
    return text[:-1] + "&#92;" if text.endswith("\\") else text
