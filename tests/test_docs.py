"""The documentation keeps up with the code: every `AIFIX_` setting the code reads is on the settings page,
every `.github/ai-fix.yml` key on the repository config page, every `ai-fix` command and option in the docs;
the README stays a front page that links every docs page, no link points at a page or an anchor that does
not exist, and every benchmark says when it ran."""

from __future__ import annotations

import argparse
import re
import typing
from collections.abc import Iterator
from pathlib import Path

from pydantic import AliasChoices, BaseModel

from bot.commands.main import build_parser
from bot.contract.config import RepoConfig
from bot.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 200

VARIABLE = re.compile(r"AIFIX_(?:[A-Z0-9]|<NAME>)(?:[A-Z0-9_]|<NAME>)*")
"""An `AIFIX_` variable as the code and the docs spell it; `<NAME>` is the operator's part of a setup secret's.
A match ending in `_` is a prefix (`AIFIX_SETUP_SECRET_`), documented by any variable that starts with it."""

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+?)(?:\s+#+)?\s*$")
DATE = re.compile(
    r"\b\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|November|December) \d{4}\b"
)


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def read_variables() -> set[str]:
    """The variables the settings object reads: each field's `AIFIX_` name, or its `AIFIX_` aliases."""
    prefix = str(Settings.model_config.get("env_prefix", ""))
    names: set[str] = set()
    for field, info in Settings.model_fields.items():
        alias = info.validation_alias
        if alias is None:
            names.add(prefix + field.upper())
            continue
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        names |= {c for c in choices if isinstance(c, str) and c.startswith(prefix)}
    return names


def spelled_variables(root: Path) -> set[str]:
    """Every `AIFIX_` name written anywhere under `root` (code, templates, data), prefixes included."""
    names: set[str] = set()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            names |= set(VARIABLE.findall(path.read_text(encoding="utf-8")))
    return names


def code_variables() -> set[str]:
    return read_variables() | spelled_variables(ROOT / "bot")


def config_keys(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every key of the repository's config, nested ones as `section.key` (`sandbox.pull`, `checks.run`)."""
    for name, info in model.model_fields.items():
        key = prefix + (info.alias or name)
        yield key
        for inner in [info.annotation, *typing.get_args(info.annotation)]:
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                yield from config_keys(inner, key + ".")


def undocumented(names: set[str], text: str) -> list[str]:
    documented = set(VARIABLE.findall(text))
    return sorted(
        n for n in names if n not in documented and not (n.endswith("_") and any(d.startswith(n) for d in documented))
    )


def outside_fences(markdown: str) -> Iterator[str]:
    """The page's lines with those of fenced code blocks (fences included) blanked."""
    fence = ""
    for line in markdown.splitlines():
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip(fence[0] + " "):
                fence = ""
            yield ""
        elif m:
            fence = m.group(1)
            yield ""
        else:
            yield line


def prose(markdown: str) -> str:
    """The text outside code blocks and code spans: what can hold links."""
    return CODE_SPAN.sub(" ", "\n".join(outside_fences(markdown)))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors the page's headings make; a repeated heading gets `-1`, `-2`, ... as on GitHub."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in outside_fences(markdown):
        h = HEADING.match(line)
        if h:
            base = slug(h.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(markdown: str) -> list[str]:
    return LINK.findall(prose(markdown))


def broken_links(path: Path) -> list[str]:
    """Each relative link of the page whose file, or whose anchor in a Markdown file, does not exist."""
    broken = []
    for target in links(path.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto: ...
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{path.name}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            broken.append(f"{path.name}: {target}: no heading makes #{anchor}")
    return broken


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_setting_the_code_reads_is_on_the_settings_page() -> None:
    code = code_variables()
    assert {"AIFIX_APP_ID", "AIFIX_ANTHROPIC_API_KEY", "AIFIX_SETUP_SECRET_<NAME>_REPOS"} <= code
    missing = undocumented(code, (DOCS / "settings.md").read_text())
    assert missing == [], f"docs/settings.md does not name {missing}: add each to its table of variables"


def test_the_settings_page_names_only_settings_the_code_reads() -> None:
    code = code_variables()
    stale = sorted(set(VARIABLE.findall((DOCS / "settings.md").read_text())) - code)
    assert stale == [], f"docs/settings.md names {stale}, which no code under bot/ reads: remove or rename them"


def test_every_config_key_is_on_the_repository_config_page() -> None:
    keys = list(config_keys(RepoConfig))
    assert {"checks.run_tests", "sandbox.pull", "ci.max_rounds", "approval_timeout_days"} <= set(keys)
    text = (DOCS / "repository-config.md").read_text()
    missing = [k for k in keys if f"`{k.rpartition('.')[2]}`" not in text]
    assert missing == [], f"docs/repository-config.md does not name the .github/ai-fix.yml keys {missing}"


def test_every_command_and_option_is_documented() -> None:
    docs = "\n".join(p.read_text() for p in pages())
    readme = README.read_text()
    commands = subcommands()
    assert {"serve", "worker", "run", "eval"} <= set(commands)
    missing = []
    for name, parser in sorted(commands.items()):
        if not re.search(rf"\bai-fix {name}\b", docs):
            missing.append(f"`ai-fix {name}` in docs/")
        if not re.search(rf"\| `ai-fix {name}` \|", readme):
            missing.append(f"`ai-fix {name}` in the README's command table")
        options = {o for a in parser._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
        for option in sorted(options):
            if not re.search(rf"(?<![\w-]){re.escape(option)}\b", docs):
                missing.append(f"`ai-fix {name} {option}` in docs/")
    assert missing == [], f"not documented: {missing}"


def test_the_readme_is_a_front_page_that_links_every_docs_page() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= MAX_README_LINES, (
        f"README.md has {len(text.splitlines())} lines: keep it a front page of at most {MAX_README_LINES} "
        "and move the detail into a docs/ page"
    )
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(text) if t.startswith("docs/")}
    unlinked = [p.name for p in pages() if p.resolve() not in linked]
    assert pages()
    assert unlinked == [], f"link these docs pages from the README's Documentation list: {unlinked}"


def test_every_relative_link_points_at_a_file_and_anchor_that_exist() -> None:
    broken = [b for path in [README, *pages()] for b in broken_links(path)]
    assert broken == [], f"fix these links (anchors are the headings' GitHub anchors): {broken}"


def test_every_benchmark_section_says_when_it_ran() -> None:
    text = "\n".join(outside_fences((DOCS / "benchmarks.md").read_text()))
    sections = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    assert sections
    undated = [s.splitlines()[0] for s in sections if not DATE.search(s)]
    assert undated == [], f"give each run of these benchmark sections its date (e.g. 2 December 2026): {undated}"


def test_the_checks_find_what_is_missing(tmp_path: Path) -> None:
    assert undocumented({"AIFIX_MODEL", "AIFIX_SETUP_SECRET_", "AIFIX_WORKERS"}, "`AIFIX_MODEL_PRICES`") == [
        "AIFIX_MODEL",
        "AIFIX_SETUP_SECRET_",
        "AIFIX_WORKERS",
    ]
    assert undocumented({"AIFIX_SETUP_SECRET_"}, "`AIFIX_SETUP_SECRET_<NAME>`") == []
    (tmp_path / "other.md").write_text("# Other\n\n## The user's own `toolchain`: bwrap\n\n## Same\n\n## Same\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#the-users-own-toolchain-bwrap) [second](other.md#same-1) [self](#page)\n"
        "# Page\n\n[gone](missing.md) [no anchor](other.md#nowhere) `[in code](missing.md)`\n"
        "```\n[in a fence](missing.md)\n# not a heading\n```\n"
    )
    assert broken_links(page) == [
        "page.md: missing.md: no such file",
        "page.md: other.md#nowhere: no heading makes #nowhere",
    ]
    assert "not-a-heading" not in anchors(page.read_text())
