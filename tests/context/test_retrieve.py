"""Ranking and rendering on a small repository: direct hits, graph proximity, budget, secrets."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.context.base import Query
from bot.context.provider import RepoContext
from bot.context.render import fit, render_slices
from bot.context.terms import count_tokens
from tests.support.repos import make_repo, write


def _files(context: RepoContext, query: Query) -> list[str]:
    return [path for path, _ in context.retrieve(query, 2000).files]


def test_a_traceback_frame_ranks_its_file_first_and_shows_its_lines(shop_repo: Path, tmp_path: Path) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache")
    failure = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/_pytest/python.py", line 194, in pytest_pyfunc_call\n'
        '  File "/home/ci/work/shop/pricing.py", line 6, in apply_discount\n'
        '  File "/usr/lib/python3.11/decimal.py", line 88, in __truediv__\n'
        "ZeroDivisionError: division by zero\n"
    )
    retrieved = context.retrieve(Query(text="Checkout fails for big orders", failure=failure), 2000)
    assert retrieved.files[0][0] == "shop/pricing.py"
    first = retrieved.slices[0]
    assert (first.path, first.start_line <= 6 <= first.end_line) == ("shop/pricing.py", True)
    assert "traceback frame, line 6" in first.reason
    assert first.blob == context.index.files.blobs[context.index.files.ids["shop/pricing.py"]]
    assert first.last_commit_date.startswith("20")
    assert "return subtotal / (count - 10)" in retrieved.rendered


def test_every_repository_frame_of_a_traceback_ranks_above_other_files(shop_repo: Path, tmp_path: Path) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache")
    failure = (
        '  File "/home/ci/work/shop/cart.py", line 15, in total\n'
        '  File "/home/ci/work/shop/pricing.py", line 6, in apply_discount\n'
        "ZeroDivisionError: division by zero\n"
    )
    files = _files(context, Query(text="Checkout fails for big orders", failure=failure))
    assert set(files[:2]) == {"shop/cart.py", "shop/pricing.py"}


def test_a_symbol_named_in_the_issue_ranks_its_definition_first(shop_repo: Path, tmp_path: Path) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache")
    files = _files(context, Query(text="`shipping_cost` ignores the country for Belgium"))
    assert files[0] == "shop/shipping.py"


def test_a_path_named_in_the_issue_ranks_first(shop_repo: Path, tmp_path: Path) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache")
    assert _files(context, Query(text="Typo in web/format.js output"))[0] == "web/format.js"


def test_words_alone_find_the_file_by_its_vocabulary(shop_repo: Path, tmp_path: Path) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache")
    assert _files(context, Query(text="The receipt email body has no order lines"))[0] == "shop/emails.py"


def test_a_quoted_error_message_finds_the_file_that_raises_it(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "app",
        {
            "app/checks.py": "def check_tables(models):\n    return Error('db_table is used by multiple models', id='models.E028')\n",
            "app/tables.py": 'def table_names(models):\n    """Names of the tables of models."""\n    return [m.db_table for m in models]\n',
            "app/registry.py": "def models_by_table(models):\n    return {m.db_table: m for m in models}\n",
        },
    )
    context = RepoContext(repo, tmp_path / "cache")
    assert (
        _files(context, Query(text="Startup fails: (models.E028) db_table is used by multiple models"))[0]
        == "app/checks.py"
    )


def test_a_numbered_module_named_in_the_issue_ranks_first(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "app",
        {
            "auth/migrations/0011_update_proxy_permissions.py": "def forwards(apps, schema_editor):\n    pass\n",
            "db/migrations/executor.py": (
                "def update_proxy_permissions(migration):\n    return migration\n\n"
                "def proxy_update(migration):\n    return update_proxy_permissions(migration)\n\n"
                "def migration_permissions(migration):\n    return proxy_update(migration)\n"
            ),
        },
    )
    context = RepoContext(repo, tmp_path / "cache")
    files = _files(
        context, Query(text="Migration auth.0011_update_proxy_permissions fails when a migration is applied")
    )
    assert files[0] == "auth/migrations/0011_update_proxy_permissions.py"


def test_the_graph_brings_in_what_a_named_file_uses(shop_repo: Path, tmp_path: Path) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache")
    ranked = context.rank(Query(text="Wrong result from Cart"))
    by_path = {context.index.files.paths[r.fid]: r for r in ranked}
    assert by_path["shop/pricing.py"].graph > 0
    assert "shop/shipping.py" not in by_path or by_path["shop/shipping.py"].graph == 0
    files = [context.index.files.paths[r.fid] for r in ranked]
    assert files.index("shop/pricing.py") < files.index("shop/shipping.py") if "shop/shipping.py" in files else True


def test_the_current_diff_counts_as_a_direct_hit(shop_repo: Path, tmp_path: Path) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache")
    diff = "--- a/web/app.js\n+++ b/web/app.js\n@@ -1 +1 @@\n-x\n+y\n"
    ranked = context.rank(Query(text="make it nicer", diff=diff))
    assert context.index.files.paths[ranked[0].fid] == "web/app.js"


@settings(max_examples=40, deadline=None)
@given(budget=st.integers(min_value=0, max_value=3000))
def test_the_rendered_context_never_exceeds_the_budget(shop_context: RepoContext, budget: int) -> None:
    retrieved = shop_context.retrieve(Query(text="Cart total apply_discount shipping receipt format"), budget)
    assert count_tokens(retrieved.rendered) <= budget
    assert retrieved.tokens == count_tokens(retrieved.rendered)
    # Binary search finds the longest fitting prefix: one more slice would not fit.
    everything = shop_context.retrieve(Query(text="Cart total apply_discount shipping receipt format"), 10**6).slices
    if len(retrieved.slices) < len(everything):
        assert count_tokens(render_slices(everything[: len(retrieved.slices) + 1])) > budget


def test_fit_takes_the_longest_prefix_that_fits() -> None:
    items = ["a" * 32] * 10

    def render(chunk: list[str]) -> str:
        return "".join(chunk)

    assert fit(items, render, 40)[0] == 4  # 128 chars = 40 tokens at 3.2 characters per token
    assert fit(items, render, 0) == (0, "")
    assert fit(items, render, 10**6)[0] == 10


def test_secret_files_and_key_values_never_enter_the_context(tmp_path: Path) -> None:
    root = make_repo(
        tmp_path / "app",
        {
            "app/settings.py": 'API_KEY = "sk-live-0123456789abcdef"\nDEBUG = True\n\n\ndef load_settings():\n    return API_KEY\n',
            ".env": "DATABASE_PASSWORD=hunter2hunter2\n",
            "deploy/server.pem": "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n",
            "app/main.py": "from app.settings import load_settings\n\n\ndef main():\n    return load_settings()\n",
        },
    )
    write(root, {".env.local": "TOKEN=abcdefgh12345678\n"})
    context = RepoContext(root, tmp_path / "cache")
    retrieved = context.retrieve(Query(text="load_settings in .env and deploy/server.pem, DATABASE_PASSWORD"), 5000)
    paths = {path for path, _ in retrieved.files} | {s.path for s in retrieved.slices}
    assert paths and not paths & {".env", ".env.local", "deploy/server.pem"}
    assert "sk-live-0123456789abcdef" not in retrieved.rendered
    assert "hunter2" not in retrieved.rendered
    assert "load_settings" in retrieved.rendered
    assert "sk-live-0123456789abcdef" not in context.repo_map(5000)


def test_repo_map_lists_central_files_first_within_budget(shop_repo: Path, tmp_path: Path) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache")
    whole = context.repo_map(10**6)
    assert "shop/cart.py:\n  class Cart (4)\n" in whole
    assert "    " not in whole.replace("\n  ", "\n")  # methods stay inside their class
    small = context.repo_map(30)
    assert 0 < count_tokens(small) <= 30
    assert small.splitlines()[0] == whole.splitlines()[0]
    first_files = [line for line in whole.splitlines() if not line.startswith(" ")]
    assert first_files.index("shop/pricing.py:") < first_files.index("shop/emails.py:")


def test_a_module_named_after_a_function_in_the_issue_is_its_home(tmp_path: Path) -> None:
    """`refine` is a common word here (many files call or define it), yet refine.py, named after the
    function it defines, is where `refine()` lives: its direct hit is a module's, not one definer's
    among seven."""
    users = {
        f"core/part{n}.py": (
            f"from assumptions.refine import refine\n\nclass Part{n}:\n    def refine(self, assumptions):\n"
            "        return refine(self, assumptions)\n"
        )
        for n in range(6)
    }
    repo = make_repo(
        tmp_path / "app", {**users, "assumptions/refine.py": "def refine(expr, assumptions=True):\n    return expr\n"}
    )
    context = RepoContext(repo, tmp_path / "cache")
    ranked = context.rank(Query(text="`refine()` does not simplify the argument of a complex number"))
    by_path = {context.index.files.paths[r.fid]: r for r in ranked}
    assert ranked[0].fid == context.index.files.ids["assumptions/refine.py"]
    assert by_path["assumptions/refine.py"].direct > 5 * by_path["core/part0.py"].direct
