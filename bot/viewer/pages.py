"""Rendering: the Jinja2 templates (data files in `templates/`), their filters, and the headers every page carries.

Autoescaping is on: everything in a trace (the model's words, check output, diffs) is text, never markup.
A page allows only its own inline style and script (a fresh nonce each time) and connections back to itself.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

from jinja2 import ChainableUndefined, Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from bot.viewer.formats import money
from bot.viewer.view import CONTRACT_KEYS, OtherView, RunView, StepView

SECTIONS = ("header", "contract", "plan", "evidence", "chart", "outcome")
"""The page's sections other than the timeline, by macro name; each is `<section id="run-NAME">`."""


def _status_words(status: Any) -> str:
    """A status as words (`handed_off` → handed off); its colour comes from the badge's class, not an emoji."""
    return str(status).replace("_", " ")


def _secs(value: Any) -> str:
    if not isinstance(value, int | float):
        return "–"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def _count(value: Any) -> str:
    return f"{value:,.0f}" if isinstance(value, int | float) else "–"


def _short(value: Any) -> str:
    return str(value or "")[:12]


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _without(value: Any, keys: set[str]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in keys} if isinstance(value, Mapping) else {}


def _when(value: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(value)) if isinstance(value, int | float) else ""


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("bot.viewer", "templates"),
        autoescape=select_autoescape(["html"], default_for_string=True),
        undefined=ChainableUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        status_words=_status_words,
        money=money,
        secs=_secs,
        count=_count,
        short=_short,
        pretty=_pretty,
        without=_without,
        when=_when,
    )
    env.globals["contract_keys"] = CONTRACT_KEYS
    return env


class Pages:
    """The templates, through starlette's Jinja2 integration for whole pages, and directly for live fragments."""

    def __init__(self) -> None:
        self.env = environment()
        self.templates = Jinja2Templates(env=self.env)
        self._parts: Any = self.env.get_template("parts.html").make_module()
        """The macros of parts.html, one per section."""

    def section(self, name: str, view: RunView, meta: Mapping[str, Any]) -> str:
        macro = getattr(self._parts, name)
        return str(macro(view, meta) if name == "header" else macro(view))

    def sections(self, view: RunView, meta: Mapping[str, Any]) -> dict[str, str]:
        """Each section's HTML, keyed by its element id."""
        return {f"run-{name}": self.section(name, view, meta) for name in SECTIONS}

    def item(self, item: StepView | OtherView) -> str:
        return str(self._parts.item(item))

    def page(self, request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> Response:
        nonce = secrets.token_urlsafe(16)
        response = self.templates.TemplateResponse(
            request, name, {**context, "nonce": nonce}, status_code=status_code, headers=page_headers(nonce)
        )
        return response

    def message(self, request: Request, status_code: int, heading: str, message: str, **headers: str) -> Response:
        response = self.page(request, "message.html", {"heading": heading, "message": message}, status_code)
        response.headers.update(headers)
        return response


def page_headers(nonce: str = "") -> dict[str, str]:
    """No caching, no referrer (the link's signature stays out of other sites' logs), nothing loaded from elsewhere."""
    source = f"'nonce-{nonce}'" if nonce else "'none'"
    return {
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
        "X-Robots-Tag": "noindex",
        "Content-Security-Policy": (
            f"default-src 'none'; style-src {source}; script-src {source}; connect-src 'self'; img-src 'self' data:; "
            "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
        ),
    }
